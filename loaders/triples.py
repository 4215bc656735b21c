"""Delimited triple files: ``head|relation|tail`` (MetaQA), TSV, CSV.

Each node's text is its name; entities get IRIs ``urn:tog:e:<quoted text>``
and relations ``urn:tog:r:<quoted text>``, so the same text always maps to the
same node and loading a file twice adds nothing.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Mapping
from urllib.parse import quote

from engine.backends.common import name_rank
from engine.graph import ENTITY_NS, RDFS_LABEL, RELATION_NS
from loaders.rdf import named_rows

LABEL = f"<{RDFS_LABEL}>"


_ALWAYS_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")
_QUOTE = {c: f"%{c:02X}" for c in range(128) if c not in _ALWAYS_SAFE}


def _quote(text: str) -> str:
    """``urllib.parse.quote(text, safe="")``, by one table lookup per
    character for ASCII text (most node texts)."""
    return text.translate(_QUOTE) if text.isascii() else quote(text, safe="")


def entity_iri(text: str) -> str:
    return ENTITY_NS + _quote(text)


def relation_iri(text: str) -> str:
    return RELATION_NS + _quote(text)


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


# The column names of a first line that is a header, compared as letters and
# digits only, case folded, a Neo4j type in parentheses dropped: a CSV
# export's ``subject,predicate,object``, ``head\trelation\ttail``, an edge
# list's ``source,relation,target``, Neo4j's ``:START_ID(Entity),:TYPE,:END_ID``
# (tog export-neo4j's edges.csv). All three must come from one of these, in
# order (Neo4j's in any order; single letters only all three: ``s p o``).
_RELATION_COLUMN = {"predicate", "pred", "relation", "rel", "relationship", "relationtype", "property", "type",
                    "relationid", "predicateid", "predicateuri", "relationuri", "relationname"}
HEADER_COLUMNS = (
    ({"subject", "subj", "sub", "subjectid", "subjectlabel", "subjecturi", "subjectname"}, _RELATION_COLUMN,
     {"object", "obj", "objectid", "objectlabel", "objecturi", "objectname", "value"}),
    ({"head", "headentity", "headid", "headname"}, _RELATION_COLUMN, {"tail", "tailentity", "tailid", "tailname"}),
    ({"source", "src", "from", "sourceid", "fromid", "node1", "entity1", "id1", "e1", "arg1"}, _RELATION_COLUMN,
     {"target", "tgt", "dst", "to", "targetid", "toid", "node2", "entity2", "id2", "e2", "arg2"}),
    ({"s"}, {"p"}, {"o"}),
    ({"h"}, {"r"}, {"t"}),
)
_NEO4J_COLUMNS = {"startid", "type", "endid"}  # (its importer takes them in any order)
_COLUMN_TYPE = re.compile(r"\([^()]*\)$")


def is_header(fields: list[str]) -> bool:
    """Whether a first line's three fields name the columns (``HEADER_COLUMNS``)."""
    words = ["".join(c for c in _COLUMN_TYPE.sub("", f.strip()).casefold() if c.isalnum()) for f in fields]
    return set(words) == _NEO4J_COLUMNS or any(all(w in names for w, names in zip(words, family))
                                               for family in HEADER_COLUMNS)


SEEN_MAX = 2_000_000  # node texts a load remembers as already named (then it starts over)


class Converter:
    """Turns the raw lines of one load into N-Triples, across its chunks.

    A node's IRI is made once per text, and its name (an ``rdfs:label``
    triple and a row for the linking index) only the first time the load
    meets it: a name said on many lines is written once."""

    def __init__(self, fmt: str, delimiter: str | None, max_term_bytes: int | None = None,
                 name_predicates: Mapping[str, int] | None = None,
                 on_header: Callable[[int, str], None] | None = None) -> None:
        self.fmt = fmt
        # the rank of the names it writes (rdfs:label, untagged), or -1 when the store does not take them as names
        place = (name_predicates or {RDFS_LABEL: 0}).get(RDFS_LABEL)
        self.label_rank = -1 if place is None else name_rank(None, place)
        self.max_iri = max_term_bytes or 0  # IRIs are ASCII: characters are bytes
        self.delim = delimiter or ("\t" if fmt == "tsv" else "," if fmt == "csv" else "|")
        self.on_header = on_header  # told the line and column names of a first line that is a header (skipped)
        self.header_due: bool | None = None  # whether the next line of data is the file's first (set by the first call)
        self.iris: dict[str, str] = {}  # node text -> IRI, for the texts named in this load
        self.relations: dict[str, str] = {}

    def __call__(self, lines: list[bytes], first: int):
        """``(data, names, triples, bad)``: N-Triples bytes, the names
        (``rdf.Named``) of the new nodes only, the number of triples in the
        data (one per good line, one per name label), and (line number,
        reason) of each bad line."""
        delim, csv_format = self.delim, self.fmt == "csv"
        if self.header_due is None:
            self.header_due = first == 1  # (a converter that starts past the file's start looks for none)
        iris, relations = self.iris, self.relations
        if len(iris) > SEEN_MAX:
            iris.clear()  # memory stays bounded; names met again are written again (adding nothing)
        out: list[str] = []
        new: list[tuple[str, str]] = []  # (IRI, text) named in this chunk
        bad: list[tuple[int, str]] = []
        try:  # the whole chunk at once; line by line only when some line is not UTF-8
            whole = b"".join(lines).decode("utf-8")
            texts = whole.split("\n")
            if len(texts) > len(lines):
                texts.pop()  # after the last newline
            nul = "\x00" in whole
        except UnicodeDecodeError:
            texts = []
            for offset, raw in enumerate(lines):
                try:
                    texts.append(raw.decode("utf-8"))
                except UnicodeDecodeError as e:
                    texts.append("")
                    bad.append((first + offset, f"not UTF-8 ({e.reason} at byte {e.start})"))
            nul = True
        if first == 1 and texts and texts[0].startswith("\ufeff"):
            texts[0] = texts[0][1:]  # a byte-order mark is not part of the first entity's name
        # a character quotes to at most 12 (four UTF-8 bytes as %XX): only a long line's fields are measured
        long_line = (self.max_iri - len(ENTITY_NS)) // 12 if self.max_iri else None
        count = 0
        append = out.append
        for offset, text in enumerate(texts):
            if nul and "\x00" in text:
                bad.append((first + offset, "a NUL byte in the line"))
                continue
            if csv_format:
                text = text.rstrip("\r\n")
                if not text.strip() or text.startswith("#"):
                    continue
                fields = next(csv.reader([text], delimiter=delim))
            else:
                if not text or text[0] == "#":
                    continue
                fields = text.split(delim)
            if len(fields) != 3:
                if not text.isspace():  # (a blank line is skipped)
                    bad.append((first + offset, f"expected 3 fields separated by {delim!r}, found {len(fields)}"))
                continue
            if self.header_due:  # the file's first line of data (after blank and comment lines)
                self.header_due = False
                if is_header(fields):
                    if self.on_header is not None:
                        self.on_header(first + offset, ", ".join(f.strip() for f in fields))
                    continue
            head, rel, tail = fields[0].strip(), fields[1].strip(), fields[2].strip()
            if not (head and rel and tail):
                if not text.isspace():
                    bad.append((first + offset, "empty field"))
                continue
            if long_line is not None and len(text) > long_line:
                longest = max((entity_iri(head), entity_iri(tail), relation_iri(rel)), key=len)
                if len(longest) > self.max_iri:
                    bad.append((first + offset, f"a field's IRI is {len(longest):,} bytes long; this store "
                                                f"keeps at most {self.max_iri:,}"))
                    continue
            h = iris.get(head)
            if h is None:
                h = iris[head] = entity_iri(head)
                new.append((h, head))
            t = iris.get(tail)
            if t is None:
                t = iris[tail] = entity_iri(tail)
                new.append((t, tail))
            r = relations.get(rel)
            if r is None:
                r = relations[rel] = relation_iri(rel)
            append(f"<{h}> <{r}> <{t}> .\n")
            count += 1
        bad.sort()
        out.extend(f"<{iri}> {LABEL} {_literal(label)} .\n" for iri, label in new)
        named = named_rows([iri for iri, _ in new], [label for _, label in new], [(True, self.label_rank)] * len(new))
        return "".join(out).encode("utf-8"), named, count + len(new), bad


def convert(lines: list[bytes], first: int, fmt: str, delimiter: str | None):
    """``Converter(fmt, delimiter)(lines, first)``: one chunk on its own."""
    return Converter(fmt, delimiter)(lines, first)
