"""RDF sources: N-Triples and N-Quads line by line, Turtle / TriG / N3 /
RDF-XML / JSON-LD through pyoxigraph's streaming parsers, anything else that
rdflib reads (TriX, HexTuples) through rdflib.

Names for the linking index come from the name predicates (rdfs:label,
Freebase ``type.object.name``, schema:name, skos:prefLabel by default) in the
languages asked for (English and untagged by default).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

import pyoxigraph as ox

from engine.graph import name_key

OX_FORMATS = {
    "nt": ox.RdfFormat.N_TRIPLES,
    "nq": ox.RdfFormat.N_QUADS,
    "turtle": ox.RdfFormat.TURTLE,
    "trig": ox.RdfFormat.TRIG,
    "n3": ox.RdfFormat.N3,
    "xml": ox.RdfFormat.RDF_XML,
    "json-ld": ox.RdfFormat.JSON_LD,
}
_LINE = re.compile(r"line (\d+)")


def error_line(message: str) -> int | None:
    m = _LINE.search(message)
    return int(m.group(1)) if m else None


def wanted_lang(lit: ox.Literal, langs: Sequence[str]) -> bool:
    lang = (lit.language or "").lower()
    return any(lang == w or (w and lang.startswith(w + "-")) for w in langs)


def name_pairs(quads: Iterable[ox.Quad], predicates: frozenset[str], langs: Sequence[str]) -> list[tuple[str, str]]:
    """(entity IRI, normalised name) for every name quad in a wanted language."""
    out = []
    for q in quads:
        if q.predicate.value in predicates and isinstance(q.object, ox.Literal) \
                and isinstance(q.subject, ox.NamedNode) and wanted_lang(q.object, langs):
            key = name_key(q.object.value)
            if key:
                out.append((q.subject.value, key))
    return out


def parse_with_errors(data, fmt: ox.RdfFormat, first_line: int = 1) -> Iterator[ox.Quad | tuple[int, str]]:
    """Quads of ``data``; a bad statement yields (line, reason) and parsing goes on."""
    it = ox.parse(data, fmt)
    while True:
        try:
            yield next(it)
        except StopIteration:
            return
        except SyntaxError as e:
            msg = str(e)
            line = error_line(msg)
            yield ((first_line + line - 1) if line else first_line, msg.split(" (line")[0])


def default_graph(q: ox.Quad) -> ox.Quad:
    return q if isinstance(q.graph_name, ox.DefaultGraph) else ox.Quad(q.subject, q.predicate, q.object)


def name_lines(data: bytes, markers: Sequence[bytes]) -> bytes:
    """The lines of ``data`` that contain one of ``markers`` (found with
    ``bytes.find``, so a chunk without names costs almost nothing)."""
    spans = []
    for marker in markers:
        pos = data.find(marker)
        while pos != -1:
            start = data.rfind(b"\n", 0, pos) + 1
            end = data.find(b"\n", pos)
            end = len(data) if end == -1 else end + 1
            spans.append((start, end))
            pos = data.find(marker, end)
    spans.sort()
    out = []
    last = -1
    for start, end in spans:
        if start > last:
            out.append(data[start:end])
            last = start
    return b"".join(out)


_NAME_LINE = re.compile(
    rb'<([^<>"{}|^`\\\s]*)>[ \t]+<([^<>\s]*)>[ \t]+"((?:[^"\\\n]|\\.)*)"(?:@([A-Za-z0-9-]+)|\^\^<[^>]*>)?[ \t]*\.')


def fast_name_pairs(data: bytes, predicates: frozenset[str], langs: Sequence[str]) -> list[tuple[str, str]]:
    """(entity IRI, normalised name) from N-Triples name lines, by regular
    expression; a line with escapes goes through the real parser."""
    out = []
    wanted = {p.encode() for p in predicates}
    for m in _NAME_LINE.finditer(data):
        subject, predicate, text, lang = m.groups()
        if predicate not in wanted:
            continue
        if b"\\" in text:
            out.extend(name_pairs(ox.parse(m.group(0) + b"\n", ox.RdfFormat.N_TRIPLES), predicates, langs))
            continue
        tag = (lang or b"").decode("ascii").lower()
        if not any(tag == w or (w and tag.startswith(w + "-")) for w in langs):
            continue
        key = name_key(text.decode("utf-8", "replace"))
        if key:
            out.append((subject.decode("utf-8", "replace"), key))
    return out
