"""KG reads written in SPARQL (``sparql/*.rq``), shared by the embedded
Oxigraph store and a remote SPARQL endpoint.

:class:`SparqlReads` holds what both answer the same way: the relations
around entities, names, and the named neighbours behind an unnamed node.
A subclass says how a query travels (``_select``) and which predicates
carry names; batches enter query text only through
:func:`engine.queries.sparql_values`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyoxigraph as ox

from engine.backends.common import chunks, label_relations, lang_rank
from engine.graph import (
    DEFAULT_POLICY,
    Direction,
    KnowledgeGraph,
    Meter,
    Relation,
    RelationPolicy,
    RelationSchema,
    is_literal,
    literal_value,
)
from engine.queries import render, sparql, sparql_values

BATCH = 400  # VALUES rows per query: keeps query texts small and plans simple


def lang_rank_of(term: object) -> int:
    """Lower is better: English, then no language, then anything else (9: not a literal)."""
    return lang_rank(term.language) if isinstance(term, ox.Literal) else 9


def node_id(term: ox.NamedNode | ox.Literal | ox.BlankNode) -> str:
    """The id of a term: an IRI, or a literal's N-Triples form."""
    return str(term) if isinstance(term, ox.Literal) else term.value


def values(rows: Iterable[Sequence[object]]) -> str:
    return sparql_values(rows)


def iri_rows(iris: Iterable[str]) -> str:
    """A VALUES body of one IRI per row."""
    return sparql_values((ox.NamedNode(i),) for i in iris)


class SparqlReads(KnowledgeGraph):
    """The reads of the ``KnowledgeGraph`` protocol that are the same SPARQL
    on every engine that answers SPARQL."""

    schema: RelationSchema | None = None

    def __init__(self, policy: RelationPolicy = DEFAULT_POLICY) -> None:
        self.policy = policy
        self.meter = Meter()
        self._relation_labels: dict[str, str | None] = {}
        self._used_names: tuple[object, list[tuple[ox.NamedNode]]] | None = None

    # -- what a subclass provides ---------------------------------------------
    @property
    def name_predicates(self) -> tuple[str, ...]:
        raise NotImplementedError

    def _select(self, text: str, params: Sequence[tuple[str, str]] = ()) -> list:
        """Rows of a SELECT (variable -> term, None when unbound), counted on ``meter``."""
        raise NotImplementedError

    def _generation(self) -> object:
        """What changes when the KG may use other name predicates (a load)."""
        return None

    # -- names ----------------------------------------------------------------
    def _name_terms(self) -> list[tuple[ox.NamedNode]]:
        """The name predicates the KG uses (asked once, again after a load):
        every name lookup is cheaper without the others."""
        generation = (self._generation(), self.name_predicates)
        if self._used_names is None or self._used_names[0] != generation:
            terms = [(ox.NamedNode(p),) for p in self.name_predicates]
            used = {r["np"].value for r in self._select(render("name_predicates", names=values(terms)))}
            self._used_names = (generation, [t for t in terms if t[0].value in used] or terms)
        return self._used_names[1]

    def _pick_names(self, rows: Iterable[tuple[str, str | None, object]]) -> dict[str, str]:
        """Best name per id from (id, name predicate, literal) rows: English
        first, then the order of the name predicates."""
        order = {p: i for i, p in enumerate(self.name_predicates)}
        best: dict[str, tuple[tuple[int, int], str]] = {}
        for key, pred, lit in rows:
            if not isinstance(lit, ox.Literal) or pred is None:
                continue
            rank = (lang_rank_of(lit), order.get(pred, 99))
            if key not in best or rank < best[key][0]:
                best[key] = (rank, lit.value)
        return {k: v[1] for k, v in best.items()}

    def labels(self, ids: Sequence[str]) -> dict[str, str]:
        out = {i: literal_value(i) for i in ids if is_literal(i)}
        iris = [i for i in dict.fromkeys(ids) if not is_literal(i)]
        for part in chunks(iris, BATCH):
            text = render("labels", entities=iri_rows(part), names=values(self._name_terms()))
            out.update(self._pick_names((r["e"].value, r["np"].value, r["name"]) for r in self._select(text)
                                        if r["np"] is not None))
        return out

    def topic_labels(self, ids: Sequence[str]) -> dict[str, str]:
        return self.labels(ids)

    def relation_counts(self) -> list[tuple[str, int]]:
        return [(r["p"].value, int(r["n"].value)) for r in self._select(sparql("relation_counts"))]

    # -- relations ------------------------------------------------------------
    def relations(self, entities: Sequence[str]) -> dict[str, list[Relation]]:
        iris = [e for e in dict.fromkeys(entities) if not is_literal(e)]
        rows = []
        for part in chunks(iris, BATCH):  # a request per direction (relations_out.rq)
            rows += [{"e": r["e"], "po": r["po"], "pi": None, "n": r["n"]}
                     for r in self._select(render("relations_out", entities=iri_rows(part)))]
            rows += [{"e": r["e"], "po": None, "pi": r["pi"], "n": r["n"]}
                     for r in self._select(render("relations_in", entities=iri_rows(part)))]
        return self._relations_from(rows, entities)

    def _relations_from(self, rows: Iterable, entities: Sequence[str]) -> dict[str, list[Relation]]:
        """The informative relations in (?e ?po ?pi ?n) rows
        (``relations_out.rq``, ``relations_in.rq``), with their degrees,
        sorted and named."""
        out: dict[str, list[Relation]] = {e: [] for e in entities}
        names = set(self.name_predicates)
        for row in rows:
            head = row["po"]
            direction: Direction = "out" if head is not None else "in"
            pred = head.value if head is not None else row["pi"].value
            if self.policy.allows(pred) and pred not in names:
                n = row["n"]
                out[row["e"].value].append(Relation(pred, direction, degree=int(n.value) if n is not None else None))
        for rels in out.values():
            rels.sort(key=lambda r: (r.id, r.direction))
        label_relations(self, out, self._relation_labels)
        return out

