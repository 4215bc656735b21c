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

from engine.graph import name_key, name_keys

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


def skolem_quad(q: ox.Quad, sid: str) -> ox.Quad:
    """The quad in the default graph with its blank nodes as stable IRIs
    (see ``loaders.load.skolemise``)."""
    s, o = q.subject, q.object
    if isinstance(s, ox.BlankNode):
        s = ox.NamedNode(f"urn:tog:b:{sid}:{s.value}")
    if isinstance(o, ox.BlankNode):
        o = ox.NamedNode(f"urn:tog:b:{sid}:{o.value}")
    return ox.Quad(s, q.predicate, o)


class NameScanner:
    """Finds name statements in blocks of N-Triples text without parsing
    every line, in two steps that can run apart: ``lines`` locates the name
    predicates with one regular expression (about 2 ms per MB), ``parse``
    reads those lines with a second one (a line with escapes goes through
    the real parser) and normalises the names in bulk."""

    # a name line without a backslash (lines with escapes go through the real parser)
    _PLAIN = re.compile(rb'^<([^<>"\s]*)>[ \t]+<([^<>\s]*)>[ \t]+"([^"\n]*)"(?:@([A-Za-z0-9-]+))?', re.M)

    def __init__(self, predicates: frozenset[str], langs: Sequence[str]) -> None:
        self.predicates, self.langs = predicates, tuple(langs)
        self.wanted = {p.encode() for p in predicates}
        alternatives = b"|".join(re.escape(p.encode()) for p in sorted(predicates))
        self.find = re.compile(rb">[ \t]+<(?:" + alternatives + rb')>[ \t]+"')
        # a block without any predicate's last characters has no name: one
        # substring test per distinct ending is cheaper than the expression
        self.endings = sorted({p.encode()[-4:] + b">" for p in predicates})
        self._accepted: dict[bytes, bool] = {}  # language tag -> indexed?

    def _wanted_lang(self, lang: bytes) -> bool:
        if not lang:
            return "" in self.langs
        tag = lang.decode("ascii").lower()
        return any(tag == w or (w and tag.startswith(w + "-")) for w in self.langs)

    def lines(self, data: bytes) -> list[bytes]:
        """The lines of ``data`` that may state a name."""
        if not any(e in data for e in self.endings):
            return []
        out = []
        for m in self.find.finditer(data):
            start = data.rfind(b"\n", 0, m.start()) + 1
            end = data.find(b"\n", m.end())
            out.append(data[start:end if end >= 0 else len(data)])
        return out

    def parse(self, lines: list[bytes]) -> list[tuple[str, str]]:
        """(entity IRI, normalised name) of name lines in a wanted language."""
        if not lines:
            return []
        plain = [line for line in lines if b"\\" not in line]
        slow = [line for line in lines if b"\\" in line] if len(plain) < len(lines) else []
        rows = self._PLAIN.findall(b"\n".join(plain))
        if len(rows) != len(plain):
            # some line is not in the simple shape (a blank-node subject, a
            # comment...): match line by line and let the real parser read the rest
            rows = []
            for line in plain:
                m = self._PLAIN.match(line)
                if m is None:
                    slow.append(line)
                else:
                    rows.append(m.groups())
        subjects, texts = [], []
        accepted = self._accepted
        wanted = self.wanted
        for subject, predicate, text, lang in rows:
            ok = accepted.get(lang)
            if ok is None:
                ok = accepted[lang] = self._wanted_lang(lang)
            if ok and predicate in wanted:
                subjects.append(subject)
                texts.append(text)
        out = list(zip(b"\n".join(subjects).decode("utf-8", "replace").split("\n"),
                       name_keys(b"\n".join(texts).decode("utf-8", "replace").split("\n")))) if subjects else []
        out = [(e, k) for e, k in out if k]
        for line in slow:
            try:
                out.extend(name_pairs(ox.parse(line + b"\n", ox.RdfFormat.N_TRIPLES), self.predicates, self.langs))
            except SyntaxError:
                pass  # not a statement: the bulk loader reports the bad line
        return out

    def pairs(self, data: bytes) -> list[tuple[str, str]]:
        return self.parse(self.lines(data))
