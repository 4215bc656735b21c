"""The ``KnowledgeGraph`` read protocol and the small records that cross it.

A backend answers a whole beam step in one round trip: ``relations`` takes
every frontier entity at once and ``expand`` every chosen (entity, relation)
pair at once.  The protocol is reads only; what else a store does (keep
runs, record corrections, take loads) are separate roles composed in
``engine/store.py``.  The engine never checks a backend's class.

Node ids are IRIs, or literals in their N-Triples form (``"1994"^^<...>``):
:func:`is_literal` tells them apart and :func:`literal_term` reads one.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import pyoxigraph as ox

    from engine.descriptions import Note

Direction = Literal["out", "in"]
V = TypeVar("V")

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
FREEBASE_NS = "http://rdf.freebase.com/ns/"
DEFAULT_NAME_PREDICATES: tuple[str, ...] = (
    RDFS_LABEL,
    FREEBASE_NS + "type.object.name",
    "http://schema.org/name",
    "https://schema.org/name",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://www.w3.org/2004/02/skos/core#altLabel",  # aliases (Wikidata): linked, shown only without a label
)
# Entities and relations of delimited files (MetaQA, TSV) get IRIs in these
# namespaces; the text after the prefix is the node or relation text, quoted.
ENTITY_NS = "urn:tog:e:"
RELATION_NS = "urn:tog:r:"


@dataclass(frozen=True, slots=True)
class Relation:
    """A KG relation seen from one entity: ``out`` when the entity is the
    subject of the triple, ``in`` when it is the object."""

    id: str
    direction: Direction = "out"
    label: str | None = field(default=None, compare=False, hash=False)  # the KG's own name for it
    note: Note | None = field(default=None, compare=False, hash=False)  # a user's description (engine/descriptions.py)
    degree: int | None = field(default=None, compare=False, hash=False)  # edges from the entity, when the KG told

    @property
    def text(self) -> str:
        return self.label or relation_text(self.id)

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the relation goes by in this direction: the shown text,
        then a description's other names (each one a separate phrase)."""
        if self.note is None:
            return (self.text,)
        return (self.text, *self.note.names(self.direction))


@dataclass(frozen=True, slots=True)
class Node:
    """An entity (IRI) or a literal value; ``name`` is what people read."""

    id: str
    name: str
    literal: bool = False
    datatype: str | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """One edge found by ``expand``: ``source --relation--> node``.

    ``via`` holds the extra hops when the direct neighbour was an unnamed
    compound node (a Freebase CVT) that the backend looked through.
    """

    source: str
    relation: Relation
    node: Node
    via: tuple[Relation, ...] = ()


@dataclass(slots=True)
class PathRecord:
    """One path node of a reasoning run, as stored in the graph."""

    id: str
    depth: int
    entity: str
    name: str
    parent: str | None = None
    relation: str | None = None
    direction: Direction | None = None
    via: tuple[str, ...] = ()
    score: float | None = None
    kept: bool = True
    literal: bool = False
    relation_name: str | None = field(default=None, compare=False)  # the KG's name for it, for pictures


@dataclass(slots=True)
class RunInfo:
    """A reasoning run's header (what ``tog runs list`` shows)."""

    id: str
    question: str
    started: str
    status: str = "running"
    method: str = "tog"
    config: dict = field(default_factory=dict)
    answer: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    finished: str | None = None
    feedback: list[dict] = field(default_factory=list)  # {"at", "rating", "comment"}, oldest first


Fact = tuple[str, str, str]  # (subject IRI, relation IRI, object IRI or literal in N-Triples form)


@dataclass(slots=True)
class Correction:
    """A change to the KG with its provenance.

    ``removed``: facts taken out (each was there); ``added``: facts put in
    that were not there before (an added fact that already existed is
    listed in ``kept`` instead), so reverting is an exact undo.
    ``named``: (IRI, name) of the entities the correction made (each named
    and indexed for linking; a revert takes them out again).
    ``status``: ``applying`` (written, not yet applied: finished on the
    next access), ``active`` or ``reverted``."""

    id: str
    created: str
    reason: str
    run: str | None = None
    removed: list[Fact] = field(default_factory=list)
    added: list[Fact] = field(default_factory=list)
    kept: list[Fact] = field(default_factory=list)
    status: str = "applying"
    reverted: str | None = None
    named: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> str:
        import json

        return json.dumps({"id": self.id, "created": self.created, "reason": self.reason, "run": self.run,
                           "removed": self.removed, "added": self.added, "kept": self.kept,
                           "status": self.status, "reverted": self.reverted, "named": self.named},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Correction:
        import json

        d = json.loads(text)
        facts = {k: [tuple(f) for f in d.get(k, [])] for k in ("removed", "added", "kept")}
        return cls(d["id"], d["created"], d["reason"], d.get("run"), facts["removed"], facts["added"],
                   facts["kept"], d.get("status", "active"), d.get("reverted"),
                   [(e, n) for e, n in d.get("named", [])])


@dataclass(slots=True)
class RunTree:
    """A whole run: the header and every path node recorded for it."""

    info: RunInfo
    paths: list[PathRecord]
    relation_names: dict[str, str] = field(default_factory=dict)  # the KG's names for relations, when it has them

    def relation(self, iri: str) -> str:
        return self.relation_names.get(iri) or relation_text(iri)


class Meter:
    """KG work counted per thread: ``lookups`` (round trips) and ``seconds``,
    so questions answered in parallel (``tog eval --concurrency``) each see
    their own."""

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def lookups(self) -> int:
        return getattr(self._local, "lookups", 0)

    @property
    def seconds(self) -> float:
        return getattr(self._local, "seconds", 0.0)

    def add(self, seconds: float, lookups: int = 1) -> None:
        self._local.lookups = self.lookups + lookups
        self._local.seconds = self.seconds + seconds

    @contextmanager
    def timing(self, lookups: int = 1) -> Iterator[None]:
        """Count the block as ``lookups`` round trips and time it."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(time.perf_counter() - started, lookups)


class LazyMapping(Mapping[str, V]):
    """The mapping ``make()`` returns, made when first read: for what a
    caller hands on but the callee may never look at (the relations around
    a beam for a judge that stops, a question's written names for a store
    with a name index)."""

    def __init__(self, make: Callable[[], dict[str, V]]) -> None:
        self._make = make
        self._found: dict[str, V] | None = None

    def _all(self) -> dict[str, V]:
        if self._found is None:
            self._found = self._make()
        return self._found

    def __getitem__(self, key: str) -> V:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


class RelationSchema(Protocol):
    """Which relations can follow which: what the offline judge looks ahead over."""

    def after(self, relations: Sequence[Relation]) -> dict[Relation, list[Relation]]:
        """For each relation, the relations seen one hop after it (around a
        sample of its tails); one batch, a bounded number of round trips."""
        ...


@runtime_checkable
class KnowledgeGraph(Protocol):
    """What the search reads from a store: the read role of ``engine.store.Store``.

    ``meter`` counts the round trips and the time spent in them; ``schema``
    is None for a backend that cannot tell which relations follow which.
    Methods take every item of a beam step at once."""

    meter: Meter
    schema: RelationSchema | None

    def relations(self, entities: Sequence[str]) -> dict[str, list[Relation]]:
        """Informative relations around each entity, both directions (an
        entity the KG lacks, or a literal, maps to an empty list)."""
        ...

    def expand(
        self, requests: Sequence[tuple[str, Relation]], limit: int = 100, *, over: int = 0, size: int = 5,
        through: bool = True,
    ) -> list[Candidate]:
        """Neighbours of each (entity, relation) pair, at most ``limit`` each
        (a limit past MAX_CANDIDATES is taken as it, whoever asks), in the
        sample order shared by every backend; with ``over`` set, only
        ``size`` of a pair's that has ``over`` or more (ToG's sampling of
        crowded relations, see ``backends.common.crowd_cap``). An unnamed
        neighbour (a Freebase CVT) is looked through to the named ones behind
        it; with ``through`` false (that look itself) it is left out."""
        ...

    def labels(self, ids: Sequence[str]) -> dict[str, str]:
        """Display names for node ids (English preferred; a literal's value)."""
        ...

    def topic_labels(self, ids: Sequence[str]) -> dict[str, str]:
        """``labels`` of the topic entities of a question; a backend may
        fetch the relations around them in the same round trip."""
        ...

    def search_entities(self, keys: Sequence[str], forms: Mapping[str, Sequence[str]] | None = None
                        ) -> dict[str, list[Node]]:
        """Entities whose normalised name equals each key (see ``name_key``),
        sorted: all of them, or NAME_MATCHES + 1 for a name more share (a
        bounded read: a name hub is not read whole). ``forms``: by key, the
        names as the user wrote them (``linking.written``), for a backend
        that matches exact names only (an endpoint); a backend with a name
        index looks up the keys alone."""
        ...

    def has_entity(self, entity: str) -> bool:
        """Whether the IRI is the subject or object of any KG triple."""
        ...

    def stats(self) -> dict:
        """Counts of what the KG holds."""
        ...

    def relation_counts(self) -> list[tuple[str, int]]:
        """Every relation the KG uses with its number of facts, most first
        (names and other reserved predicates included; ``tog relations``)."""
        ...

    def named_entities(self, most: int, skip: int = 0) -> list[str]:
        """Up to ``most`` entities that have a name, found past the first
        ``skip`` names (a bounded read of ``skip + most`` names or so; from
        the first names when fewer lie past ``skip``): where ``tog warm``
        starts its questions."""
        ...


# ---------------------------------------------------------------------------
# Node ids, the candidate window and time stamps, shared by every module.

def is_literal(node_id: str) -> bool:
    """A literal's id is its N-Triples form, which starts with a quote; an IRI never does."""
    return node_id.startswith('"')


def literal_term(node_id: str) -> ox.Literal:
    """The pyoxigraph literal of a literal id (``"1994"^^<...#gYear>``).
    Raises ``SyntaxError`` or ``ValueError`` for text that is not one."""
    import pyoxigraph as ox

    quad = next(iter(ox.parse(f"<urn:x> <urn:x> {node_id} .", ox.RdfFormat.N_TRIPLES)))
    if not isinstance(quad.object, ox.Literal):
        raise ValueError(f"not a literal: {node_id!r}")
    return quad.object


def literal_value(node_id: str) -> str:
    """The lexical form of a literal id."""
    return literal_term(node_id).value


XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def stored_literal(term: ox.Literal) -> ox.Literal:
    """A literal as the stores give it back: a value of a datatype they know
    is kept in its canonical form ("042"^^xsd:integer is read as "42",
    "1.50"^^xsd:decimal as "1.5"). Oxigraph and Virtuoso do this as they
    store a triple; Neo4j's loads and every correction write values in this
    form, and names are taken from a file in it, so that every backend
    answers and shows the same text."""
    if term.language or term.datatype.value == XSD_STRING:
        return term
    import pyoxigraph as ox

    return ox.Literal(_canonical(term.value, term.datatype.value), datatype=term.datatype)


@lru_cache(maxsize=1 << 16)  # (years and small counts come back line after line)
def _canonical(value: str, datatype: str) -> str:
    import pyoxigraph as ox

    store = ox.Store()  # in memory: Oxigraph's own encoding, about 5 µs
    node = ox.NamedNode("urn:tog:x")
    store.add(ox.Quad(node, node, ox.Literal(value, datatype=ox.NamedNode(datatype))))
    return next(iter(store)).object.value


def stored_id(node_id: str) -> str:
    """A literal id (``"1.50"^^<...#decimal>``) as the stores keep it
    (``stored_literal``); Neo4j matches values by this text."""
    return str(stored_literal(literal_term(node_id)))


def stored_fact(fact: Fact) -> Fact:
    """``fact`` with a literal object in the form the stores keep it (a
    correction record an older tog made may hold one as written)."""
    s, r, o = fact
    return (s, r, stored_id(o)) if is_literal(o) else fact


def stored_text(term: ox.Literal) -> str:
    """``stored_literal``'s text: a name as the KG gives it back."""
    return stored_literal(term).value


# Backends look at CANDIDATE_WINDOW times the candidates a pair may offer,
# in the sample order, before unnamed nodes are looked through: every
# backend must use the same window for answers to agree.
CANDIDATE_WINDOW = 4

# A pair offers at most MAX_CANDIDATES candidates, so that its window fits the
# CANDIDATE_WINDOW * MAX_CANDIDATES neighbours a crowded pair keeps (SAMPLE_KEEP
# of the stores): a larger window would have a question sort a hub's pair whole.
MAX_CANDIDATES = 1024

# A name is looked up for at most NAME_MATCHES entities: one that more share
# (thousands of articles titled "Editorial", a common personal name) is too
# common to stand for one thing, and its entities are read no further. A
# backend returns NAME_MATCHES + 1 of them to say so (which ones is its own
# choice), else all, so the same name finds the same entities everywhere.
NAME_MATCHES = 100
MAX_NAME_KEY = 1000  # characters of a name's linking key; longer names are shown, not indexed


def utc_now() -> str:
    """UTC now in ISO 8601 with microseconds and a ``Z`` (runs started in one
    second stay ordered; the text sorts as the time does)."""
    return utc_text(dt.datetime.now(dt.timezone.utc))


def utc_text(moment: dt.datetime) -> str:
    """A UTC moment as ``utc_now`` writes it: always six digits of a second's
    fraction, so that texts sort as the times do (``isoformat`` drops them
    when they are all zero, and "…:24Z" sorts after "…:24.5Z")."""
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


# ---------------------------------------------------------------------------
# Naming helpers shared by loaders, backends and linking.

_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_NON_WORD = re.compile(r"[^\w\n]+")
_SPACES = re.compile(r" {2,}")
_EDGES = re.compile(r"(?m)^ | $")


def name_keys(texts: Sequence[str]) -> list[str]:
    """``name_key`` of many names at once (one pass of each expression over
    all of them; names never contain a raw newline)."""
    if not texts:
        return []
    big = "\n".join(t.replace("\n", " ") for t in texts) if any("\n" in t for t in texts) else "\n".join(texts)
    if not big.isascii():
        big = _COMBINING.sub("", unicodedata.normalize("NFKD", big))
    keys = _EDGES.sub("", _SPACES.sub(" ", _NON_WORD.sub(" ", big.casefold()))).split("\n")
    if "" in keys:  # a name of punctuation only ("$", "!!!") keeps its characters
        keys = [k or " ".join(t.casefold().split()) for k, t in zip(keys, texts)]
    return keys


def linking_keys(named: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(entity, key) rows the linking index holds for (entity, name) pairs:
    none for a relation's label, nor for a name longer than anyone types."""
    keys = name_keys([n for _, n in named])
    return [(e, k) for (e, _), k in zip(named, keys) if k and len(k) <= MAX_NAME_KEY and not names_a_relation(e)]


def name_key(text: str) -> str:
    """The normalised form under which names are indexed and looked up:
    accents removed, case folded, punctuation turned into single spaces (a
    name of punctuation only is kept as it is, case folded)."""
    return name_keys([text])[0]


_RELATION_IRI = re.compile(r"^(?:urn:tog:r:|http://www\.wikidata\.org/prop/|http://www\.wikidata\.org/entity/P[0-9]+$)")


def names_a_relation(iri: str) -> bool:
    """Is this IRI a relation's (ours, a Wikidata property's)?  Its label
    names a relation, never an entity to link a question to."""
    return bool(_RELATION_IRI.match(iri))


@lru_cache(maxsize=1 << 16)  # the same relations come back at every step of every question
def local_name(iri: str) -> str:
    """The readable tail of an IRI: after ``#``, the last ``/`` or our URN prefixes."""
    for prefix in (ENTITY_NS, RELATION_NS):
        if iri.startswith(prefix):
            from urllib.parse import unquote

            return unquote(iri[len(prefix):])
    cut = max(iri.rfind("#"), iri.rfind("/"))
    return iri[cut + 1:] if cut >= 0 else iri


@lru_cache(maxsize=1 << 16)
def relation_text(iri: str) -> str:
    """Words for a relation: ``film.film.directed_by`` -> ``film directed by``.

    Freebase ids repeat their type (``domain.type.property``); the property
    with its type is what carries meaning, so the domain is dropped when it
    repeats the type's first word.
    """
    name = local_name(iri)
    parts = [p for p in name.split(".") if p]
    if len(parts) == 3 and parts[1].split("_")[0] == parts[0]:
        parts = parts[1:]
    words = " ".join(parts).replace("_", " ").replace("-", " ")
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", words)  # camelCase
    return " ".join(words.lower().split())


@lru_cache(maxsize=1 << 16)
def relation_roles(iri: str) -> tuple[str | None, str]:
    """Words for what the subject and the object of a relation are.

    Freebase ids say both: ``film.film.directed_by`` has a ``film`` as its
    subject and a ``directed by`` (a director) as its object.  Other
    relations name only their object (``in_language`` -> a language); the
    subject's role is then unknown (None).
    """
    parts = [p for p in local_name(iri).split(".") if p]
    if len(parts) >= 3:
        return parts[-2].replace("_", " "), parts[-1].replace("_", " ")
    return None, relation_text(iri)


def tail_role(relation: Relation) -> str | None:
    """Words for what is reached through ``relation`` from its source: the
    object's role for an ``out`` edge, the subject's for an ``in`` edge (a
    description's ``tail`` / ``head`` when it gives one)."""
    if relation.note is not None and relation.note.reaches(relation.direction):
        return relation.note.reaches(relation.direction)
    subject, obj = relation_roles(relation.id)
    return obj if relation.direction == "out" else subject


@dataclass(frozen=True, slots=True)
class RelationPolicy:
    """Which relations carry no meaning for reasoning and are never offered."""

    exclude_prefixes: tuple[str, ...] = ()
    exclude: frozenset[str] = frozenset()

    def allows(self, relation: str) -> bool:
        return relation not in self.exclude and not relation.startswith(self.exclude_prefixes)


DEFAULT_POLICY = RelationPolicy(
    exclude_prefixes=(
        FREEBASE_NS + "type.object.",
        FREEBASE_NS + "common.",
        FREEBASE_NS + "freebase.",
        FREEBASE_NS + "type.type.",
        FREEBASE_NS + "kg.",
        FREEBASE_NS + "base.type_ontology.",
        "http://www.w3.org/2002/07/owl#sameAs",
        "http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
        "http://www.w3.org/2004/02/skos/core#",
        "http://schema.org/description",
        "http://wikiba.se/ontology#",
    ),
    exclude=frozenset(DEFAULT_NAME_PREDICATES),
)

