"""The Neo4j backend's read role: the ``KnowledgeGraph`` over the data model
of ``engine/backends/neo4j/__init__.py``, one round trip per beam step."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from engine.backends.common import Found, chunks, informative, label_relations, look_through, select_candidates
from engine.backends.neo4j.session import Neo4jSession
from engine.graph import (
    DEFAULT_POLICY,
    Candidate,
    KnowledgeGraph,
    Meter,
    Node,
    Relation,
    RelationPolicy,
    is_literal,
    literal_value,
    local_name,
)

BATCH = 2000  # rows per read statement


def _node(row) -> Node | None:
    """The Node of an expand row (None for an unnamed entity)."""
    if row["literal"]:
        return Node(row["x"], row["value"], True, row["datatype"])
    return Node(row["x"], row["name"]) if row["name"] is not None else None


class Neo4jKG(KnowledgeGraph):
    """``KnowledgeGraph`` over a Neo4j database."""

    def __init__(self, session: Neo4jSession, policy: RelationPolicy = DEFAULT_POLICY) -> None:
        self.session = session
        self.policy = policy
        self.meter = Meter()
        self.schema = Neo4jSchema(self)
        self._relation_labels: dict[str, str | None] = {}

    def _run(self, name: str, **params) -> list:
        return self.session.run(name, meter=self.meter, **params)

    def relations(self, entities: Sequence[str]) -> dict[str, list[Relation]]:
        out: dict[str, list[Relation]] = {e: [] for e in entities}
        iris = [e for e in dict.fromkeys(entities) if not is_literal(e)]
        names = set(self.session.name_predicates)
        for part in chunks(iris, BATCH):
            for row in self._run("relations", ids=list(part)):
                pred = row["p"]
                if self.policy.allows(pred) and pred not in names:
                    out[row["e"]].append(Relation(pred, row["dir"]))
        for rels in out.values():
            rels.sort(key=lambda r: (r.id, r.direction))
        label_relations(self, out, self._relation_labels)
        return out

    def expand(self, requests: Sequence[tuple[str, Relation]], limit: int = 100, *,
               over: int = 0, size: int = 5) -> list[Candidate]:
        found: Found = defaultdict(dict)
        for direction in ("out", "in"):
            pairs = [[e, r.id] for e, r in dict.fromkeys(requests) if r.direction == direction and not is_literal(e)]
            for part in chunks(pairs, BATCH):
                for row in self._run(f"expand_{direction}", pairs=list(part)):
                    key = (row["e"], Relation(row["p"], direction))
                    found[key][row["x"]] = _node(row)
        return select_candidates(
            requests, found, limit,
            lambda unnamed, lim: look_through(self, unnamed, lim, self._expand_named),
            over=over, size=size)

    def _expand_named(self, requests: list[tuple[str, Relation]], limit: int) -> dict[str, list[Candidate]]:
        by_source: dict[str, list[Candidate]] = defaultdict(list)
        pairs = [[e, r.id] for e, r in requests]
        for part in chunks(pairs, BATCH):
            rows = {}
            for row in self._run("expand_out", pairs=list(part)):
                rows[(row["e"], row["p"], row["x"])] = _node(row)
            for (e, p, _), node in sorted(rows.items()):
                if node is not None and len(by_source[e]) < limit:
                    by_source[e].append(Candidate(e, Relation(p, "out"), node))
        return by_source

    def labels(self, ids: Sequence[str]) -> dict[str, str]:
        out = {i: literal_value(i) for i in ids if is_literal(i)}
        iris = [i for i in dict.fromkeys(ids) if not is_literal(i)]
        for part in chunks(iris, BATCH):
            for row in self._run("labels", ids=list(part)):
                out[row["id"]] = row["name"]
        return out

    def topic_labels(self, ids: Sequence[str]) -> dict[str, str]:
        return self.labels(ids)

    def search_entities(self, keys: Sequence[str]) -> dict[str, list[Node]]:
        wanted = list(dict.fromkeys(k for k in keys if k))
        found: dict[str, list[str]] = {}
        for part in chunks(wanted, BATCH):
            for row in self._run("names_lookup", keys=list(part)):
                found[row["key"]] = sorted(row["entities"])
        names = self.labels([e for ents in found.values() for e in ents])
        return {k: [Node(e, names.get(e, local_name(e))) for e in v] for k, v in found.items()}

    def has_entity(self, entity: str) -> bool:
        return bool(self._run("has_entity", id=entity)[0]["found"])

    def stats(self) -> dict:
        row = self._run("stats")[0]
        return {"edges": row["edges"], "entities": row["entities"], "values": row["values"], "names": row["names"]}


class Neo4jSchema:
    """Which relations follow which, from a sample of a relation's tails
    (``schema_*.cypher``); cached per store."""

    def __init__(self, kg: Neo4jKG) -> None:
        self.kg = kg
        self._cache: dict[Relation, list[Relation]] = {}

    def after(self, relations: Sequence[Relation]) -> dict[Relation, list[Relation]]:
        kg = self.kg
        for relation in dict.fromkeys(relations):
            if relation not in self._cache:
                rows = kg._run(f"schema_{relation.direction}", relation=relation.id)
                self._cache[relation] = informative((Relation(r["q"], r["dir"]) for r in rows), kg.policy,
                                                    kg.session.name_predicates)
        return {r: self._cache[r] for r in relations}
