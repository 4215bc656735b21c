"""The embedded store's read role: the ``KnowledgeGraph`` over pyoxigraph.

Every statement lives in ``sparql/*.rq``; batches enter through
:func:`engine.queries.sparql_values` only, single values as pyoxigraph
``substitutions``.  Unnamed nodes (Freebase CVTs) are looked through.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence

import pyoxigraph as ox

from engine.backends.common import Found, chunks, informative, look_through, select_candidates
from engine.backends.oxigraph.database import Database
from engine.backends.sparql_reads import BATCH, SparqlReads, node_id, values
from engine.graph import DEFAULT_POLICY, Candidate, Node, Relation, RelationPolicy, is_literal, local_name
from engine.queries import render, sparql


class OxigraphKG(SparqlReads):
    """``KnowledgeGraph`` over the default graph of an embedded store."""

    def __init__(self, db: Database, policy: RelationPolicy = DEFAULT_POLICY) -> None:
        super().__init__(policy)
        self.db = db
        self.schema = SampledSchema(self)

    @property
    def name_predicates(self) -> tuple[str, ...]:
        return self.db.name_predicates

    def _select(self, text: str, params: Sequence[tuple[str, str]] = ()) -> list:
        return self.db.query(text, self.meter)

    def expand(self, requests: Sequence[tuple[str, Relation]], limit: int = 100, *,
               over: int = 0, size: int = 5) -> list[Candidate]:
        names = self._name_terms()
        found: dict[tuple[str, Relation], dict[str, list]] = defaultdict(dict)
        for direction in ("out", "in"):
            pairs = [(ox.NamedNode(e), ox.NamedNode(r.id)) for e, r in requests
                     if r.direction == direction and not is_literal(e)]
            for part in chunks(pairs, BATCH):
                text = render(f"expand_{direction}", pairs=values(part), names=values(names))
                for row in self._select(text):
                    key = (row["e"].value, Relation(row["p"].value, direction))
                    x = row["x"]
                    xid = node_id(x)
                    slot = found[key].setdefault(xid, [x, []])
                    np = row["np"]
                    if np is not None:
                        slot[1].append((xid, np.value, row["name"]))
        # xid -> Node (None when unnamed) per request, then the shared selection
        nodes: Found = {}
        for key, seen in found.items():
            nodes[key] = {}
            for xid, (term, name_rows) in seen.items():
                if isinstance(term, ox.Literal):
                    dtype = term.datatype.value if term.datatype else None
                    nodes[key][xid] = Node(xid, term.value, True, dtype)
                elif not isinstance(term, ox.BlankNode):
                    name = self._pick_names(name_rows).get(xid)
                    nodes[key][xid] = Node(xid, name) if name is not None else None
        return select_candidates(
            requests, nodes, limit,
            lambda unnamed, lim: look_through(self, unnamed, lim, self._expand_named),
            over=over, size=size)

    def search_entities(self, keys: Sequence[str]) -> dict[str, list[Node]]:
        started = time.perf_counter()
        found = self.db.index.lookup(list(dict.fromkeys(k for k in keys if k)))
        self.meter.add(time.perf_counter() - started)
        names = self.labels([e for ents in found.values() for e in ents])
        return {k: [Node(e, names.get(e, local_name(e))) for e in v] for k, v in found.items()}

    def has_entity(self, entity: str) -> bool:
        try:
            node = ox.NamedNode(entity)
        except ValueError:
            return False
        with self.meter.timing():
            store = self.db.store
            for _ in store.quads_for_pattern(node, None, None, ox.DefaultGraph()):
                return True
            for _ in store.quads_for_pattern(None, None, node, ox.DefaultGraph()):
                return True
        return False

    def stats(self) -> dict:
        triples = self._select(sparql("count"))[0]["n"].value
        return {"triples": int(triples), "names": self.db.index.count()}


class SampledSchema:
    """Which relations follow which, from a sample of the nodes a relation
    leads to (``schema_*.rq``); cached per store."""

    def __init__(self, kg: OxigraphKG) -> None:
        self.kg = kg
        self._cache: dict[Relation, list[Relation]] = {}

    def after(self, relation: Relation) -> list[Relation]:
        if relation not in self._cache:
            kg = self.kg
            rows = kg.db.query(sparql(f"schema_{relation.direction}"), kg.meter,
                               substitutions={ox.Variable("p"): ox.NamedNode(relation.id)})
            self._cache[relation] = informative((Relation(r["q"].value, r["dir"].value) for r in rows),
                                                kg.policy, kg.name_predicates)
        return self._cache[relation]
