"""Delimited triple files: ``head|relation|tail`` (MetaQA), TSV, CSV.

Each node's text is its name; entities get IRIs ``urn:tog:e:<quoted text>``
and relations ``urn:tog:r:<quoted text>``, so the same text always maps to the
same node and loading a file twice adds nothing.
"""

from __future__ import annotations

import csv
from urllib.parse import quote

from engine.graph import ENTITY_NS, RDFS_LABEL, RELATION_NS, name_key

LABEL = f"<{RDFS_LABEL}>"


def entity_iri(text: str) -> str:
    return ENTITY_NS + quote(text, safe="")


def relation_iri(text: str) -> str:
    return RELATION_NS + quote(text, safe="")


def _literal(text: str) -> str:
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"')
               .replace("\n", "\\n").replace("\r", "\\r"))
    return f'"{escaped}"'


def file_delimiter(path, fmt: str) -> str:
    """The field separator of a delimited file: tab for TSV, comma for CSV,
    otherwise tab or | as the first line that is not blank or a comment has."""
    if fmt == "tsv":
        return "\t"
    if fmt == "csv":
        return ","
    from loaders.base import open_binary

    with open_binary(path) as fh:
        for _, raw in zip(range(1000), fh):
            line = raw.strip()
            if line and not line.startswith(b"#"):
                return "\t" if line.count(b"\t") >= 2 else "|"
    return "|"


def convert(lines: list[bytes], first: int, fmt: str, delimiter: str | None):
    """Turn raw lines into N-Triples bytes.

    Returns ``(data, names, triples, bad)`` where ``names`` are (IRI, key)
    pairs for the linking index and ``bad`` lists (line number, reason).
    """
    delim = delimiter or ("\t" if fmt == "tsv" else "," if fmt == "csv" else "|")
    out: list[str] = []
    names: dict[str, str] = {}
    bad: list[tuple[int, str]] = []
    triples = 0
    for offset, raw in enumerate(lines):
        lineno = first + offset
        try:
            text = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as e:
            bad.append((lineno, f"not UTF-8 ({e.reason} at byte {e.start})"))
            continue
        if not text.strip() or text.startswith("#"):
            continue
        if fmt == "csv":
            fields = next(csv.reader([text], delimiter=delim))
        else:
            fields = text.split(delim)
        fields = [f.strip() for f in fields]
        if len(fields) != 3:
            bad.append((lineno, f"expected 3 fields separated by {delim!r}, found {len(fields)}"))
            continue
        if not all(fields):
            bad.append((lineno, "empty field"))
            continue
        head, rel, tail = fields
        h, t = entity_iri(head), entity_iri(tail)
        out.append(f"<{h}> <{relation_iri(rel)}> <{t}> .\n")
        triples += 1
        for iri, label in ((h, head), (t, tail)):
            if iri not in names:
                names[iri] = label
                out.append(f"<{iri}> {LABEL} {_literal(label)} .\n")
    data = "".join(out).encode("utf-8")
    return data, [(iri, name_key(label)) for iri, label in names.items()], triples, bad
