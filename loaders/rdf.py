"""RDF sources: N-Triples and N-Quads line by line, Turtle / TriG / N3 /
RDF-XML / JSON-LD through pyoxigraph's streaming parsers, anything else that
rdflib reads (TriX, HexTuples) through rdflib.

Names for the linking index come from the name predicates (rdfs:label,
Freebase ``type.object.name``, schema:name, skos:prefLabel by default) in the
languages asked for (English and untagged by default).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pyoxigraph as ox

from engine.backends.common import shown_rank
from engine.graph import name_keys, stored_text

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


@dataclass(slots=True)
class Named:
    """The names a piece of a load states: (entity IRI, normalised name)
    pairs for the linking index, in the languages asked for; and (entity
    IRI, rank, name) rows of the English and untagged names, among which a
    store shows a node (``engine.backends.common.name_rank``)."""

    keys: list[tuple[str, str]] = field(default_factory=list)
    shown: list[tuple[str, int, str]] = field(default_factory=list)


def named_rows(entities: list[str], texts: list[str], marks: list[tuple[bool, int]]) -> Named:
    """``Named`` of parallel lists: each name's entity, text and (indexed?, rank or -1 when not shown)."""
    out = Named()
    keys, shown = out.keys, out.shown
    for e, text, key, (indexed, rank) in zip(entities, texts, name_keys(texts), marks):
        if indexed and key:
            keys.append((e, key))
        if rank >= 0:
            shown.append((e, rank, text))
    return out


def shown_base(lang: str | None) -> int:
    """A name's rank without its predicate's place (``shown_rank``), or -1 for a language not shown."""
    rank = shown_rank(lang, 0)
    return -1 if rank is None else rank


def name_pairs(quads: Iterable[ox.Quad], predicates: Mapping[str, int], langs: Sequence[str]) -> Named:
    """The names of the name quads (``predicates``: each name predicate's place)."""
    entities, texts, marks = [], [], []
    for q in quads:
        place = predicates.get(q.predicate.value)
        if place is not None and isinstance(q.object, ox.Literal) and isinstance(q.subject, ox.NamedNode):
            indexed, base = wanted_lang(q.object, langs), shown_base(q.object.language)
            if indexed or base >= 0:
                entities.append(q.subject.value)
                texts.append(stored_text(q.object))
                marks.append((indexed, base + place if base >= 0 else -1))
    return named_rows(entities, texts, marks)


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
    return _with_iris(q, lambda label: ox.NamedNode(f"urn:tog:b:{sid}:{label}"))


def _with_iris(q: ox.Quad, iri: Callable[[str], ox.NamedNode]) -> ox.Quad:
    """``q`` in the default graph, each blank node replaced by ``iri`` of its id."""
    s, o = q.subject, q.object
    if isinstance(s, ox.BlankNode):
        s = iri(s.value)
    if isinstance(o, ox.BlankNode):
        o = iri(o.value)
    return ox.Quad(s, q.predicate, o)


class MadeUpBlanks:
    """Stable IRIs for the blank nodes a parser makes up. Turtle's ``[]`` and
    ``( )``, RDF/XML's nested descriptions and JSON-LD's nested objects have
    no label, and pyoxigraph names each with a random id, another at every
    parse: a file loaded again (a re-run after a stop, ``--force``) would
    write them twice. Such an id (hex, as pyoxigraph makes them) is
    numbered in the order the parse first meets it, which is the same at
    every parse of the same file: ``urn:tog:a:SOURCE:N``. A labelled blank
    node keeps ``urn:tog:b:SOURCE:LABEL`` (``skolem_quad``). The numbers
    are kept for the whole parse (a label that looks made up may come back
    anywhere): about 110 bytes a made-up node."""

    _MADE = re.compile(r"[0-9a-f]{16,32}\Z")

    def __init__(self, sid: str) -> None:
        self.sid = sid
        self.seen: dict[int, int] = {}

    def quad(self, q: ox.Quad) -> ox.Quad:
        """``q`` in the default graph, its blank nodes as stable IRIs."""
        return _with_iris(q, self._iri)

    def _iri(self, value: str) -> ox.NamedNode:
        if self._MADE.match(value):
            n = self.seen.setdefault(int(value, 16), len(self.seen))
            return ox.NamedNode(f"urn:tog:a:{self.sid}:{n}")
        return ox.NamedNode(f"urn:tog:b:{self.sid}:{value}")


class NameScanner:
    """Finds name statements in blocks of N-Triples text without parsing
    every line, in two steps that can run apart: ``lines`` locates the name
    predicates with one regular expression (about 2 ms per MB), ``parse``
    reads those lines with a second one (a line with escapes goes through
    the real parser) and normalises the names in bulk."""

    # a name line without a backslash (lines with escapes go through the real parser)
    # (a typed name goes through the real parser too, unless it is a string: its text is
    # made canonical, as the store keeps it; ``stored_text``)
    _PLAIN = re.compile(rb'^<([^<>"\s]*)>[ \t]+<([^<>\s]*)>[ \t]+"([^"\n]*)"'
                        rb'(?:@([A-Za-z0-9-]+)|\^\^<http://www\.w3\.org/2001/XMLSchema#string>|(?!\^))', re.M)

    def __init__(self, predicates: Mapping[str, int], langs: Sequence[str]) -> None:
        self.predicates, self.langs = predicates, tuple(langs)
        self.wanted = {p.encode(): place for p, place in predicates.items()}
        alternatives = b"|".join(re.escape(p.encode()) for p in sorted(predicates))
        self.find = re.compile(rb">[ \t]+<(?:" + alternatives + rb')>[ \t]+"')
        # a block without any predicate's last characters has no name: one
        # substring test per distinct ending is cheaper than the expression
        self.endings = sorted({p.encode()[-4:] + b">" for p in predicates})
        self._accepted: dict[bytes, tuple[bool, int]] = {}  # language tag -> (indexed?, shown_base)

    def _lang(self, lang: bytes | None) -> tuple[bool, int]:
        tag = (lang or b"").decode("ascii").lower()  # (None from a line matched on its own: no tag)
        langs = self.langs
        indexed = ("" in langs) if not tag else any(tag == w or (w and tag.startswith(w + "-")) for w in langs)
        return indexed, shown_base(tag)

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

    def parse(self, lines: list[bytes]) -> Named:
        """The names of name lines (``Named``)."""
        if not lines:
            return Named()
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
        subjects, texts, marks = [], [], []
        accepted = self._accepted
        wanted = self.wanted
        for subject, predicate, text, lang in rows:
            ok = accepted.get(lang)
            if ok is None:
                ok = accepted[lang] = self._lang(lang)
            place = wanted.get(predicate)
            if place is not None and (ok[0] or ok[1] >= 0):
                subjects.append(subject)
                texts.append(text)
                marks.append((ok[0], ok[1] + place if ok[1] >= 0 else -1))
        out = named_rows(b"\n".join(subjects).decode("utf-8", "replace").split("\n"),
                         b"\n".join(texts).decode("utf-8", "replace").split("\n"), marks) if subjects else Named()
        for line in slow:
            try:
                more = name_pairs(ox.parse(line + b"\n", ox.RdfFormat.N_TRIPLES), self.predicates, self.langs)
            except SyntaxError:
                continue  # not a statement: the bulk loader reports the bad line
            out.keys.extend(more.keys)
            out.shown.extend(more.shown)
        return out

    def pairs(self, data: bytes) -> Named:
        return self.parse(self.lines(data))
