"""The embedded backend: a pyoxigraph store on disk (or in memory).

A store is a directory:
- ``kg/``: the Oxigraph database.  The knowledge graph is its default graph;
  each reasoning run is a named graph ``<urn:tog:run:ID>`` of path nodes;
- ``index.sqlite``: the entity-name index for linking, load checkpoints and
  settings (see ``name_index.py`` for why these are not in Oxigraph).

Every statement lives in ``sparql/*.rq``; batches enter through
:func:`engine.queries.sparql_values` only.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import pyoxigraph as ox

from engine.errors import StoreError, UnknownRunError
from engine.graph import (
    DEFAULT_NAME_PREDICATES,
    DEFAULT_POLICY,
    Candidate,
    Correction,
    Fact,
    Node,
    PathRecord,
    Relation,
    RelationPolicy,
    RunInfo,
    RunTree,
    local_name,
)
from engine.backends.common import (
    Found,
    ThreadMeter,
    chunks,
    label_relations,
    lang_rank,
    look_through,
    natural,
    select_candidates,
)
from engine.backends.name_index import NameIndex
from engine.queries import render, sparql

VOCAB = "urn:tog:vocab:"
RUN_PREFIX = "urn:tog:run:"
CORRECTION_PREFIX = "urn:tog:correction:"
CORRECTIONS = ox.NamedNode("urn:tog:corrections")
XSD = "http://www.w3.org/2001/XMLSchema#"


def _v(name: str) -> ox.NamedNode:
    return ox.NamedNode(VOCAB + name)


RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
BATCH = 400  # VALUES rows per query: keeps query texts small and plans simple


def _lang_rank(term: ox.Literal | ox.NamedNode | None) -> int:
    """Lower is better: English, then no language, then anything else."""
    if not isinstance(term, ox.Literal):
        return 9
    return lang_rank(term.language)


def literal_id(term: ox.Literal) -> str:
    """The id of a literal node: its N-Triples form."""
    return str(term)


def literal_from_id(text: str) -> ox.Literal:
    quad = next(iter(ox.parse(f"<urn:x> <urn:x> {text} .", ox.RdfFormat.N_TRIPLES)))
    return quad.object


def _term(node_id: str, literal: bool) -> ox.NamedNode | ox.Literal:
    return literal_from_id(node_id) if literal else ox.NamedNode(node_id)


_FLUSH_LOCK = threading.Lock()  # see OxigraphGraph._flush_store


class OxigraphGraph(ThreadMeter):
    """``KnowledgeGraph`` over pyoxigraph.  ``path=None`` gives an in-memory store."""

    capabilities = frozenset({"runs", "bulk_load", "named_graphs", "schema", "corrections"})

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        create: bool = False,
        policy: RelationPolicy = DEFAULT_POLICY,
    ) -> None:
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            kg_dir = self.path / "kg"
            if not kg_dir.exists():
                if not create:
                    raise StoreError(f"no store at {self.path}: create one with `tog load FILE --store {self.path}`")
                if self.path.exists() and (not self.path.is_dir() or any(self.path.iterdir())):
                    raise StoreError(f"{self.path} exists and is not a tog store; pick a new directory")
                try:
                    kg_dir.mkdir(parents=True)
                except OSError as e:
                    raise StoreError(f"cannot create a store at {self.path}: {e.strerror or e}") from e
        try:
            self.store = ox.Store(str(self.path / "kg")) if self.path is not None else ox.Store()
        except OSError as e:
            if "lock" in str(e).lower():
                raise StoreError(f"the store at {self.path} is in use by another process "
                                 "(an embedded store opens in one process at a time)") from e
            raise StoreError(f"cannot open the store at {self.path}: {e}") from e
        self.index = NameIndex(self.path / "index.sqlite" if self.path is not None else None)
        self.policy = policy
        self.lookups = 0
        self.seconds = 0.0
        self._name_predicates: tuple[str, ...] | None = None
        self._schema: dict[Relation, list[Relation]] = {}
        self._relation_labels: dict[str, str | None] = {}
        if next(iter(self.store.quads_for_pattern(None, None, None, CORRECTIONS)), None) is not None:
            self.corrections()  # finishes a correction a crash interrupted, before anything reads the KG

    # -- plumbing ---------------------------------------------------------
    def _flush_store(self) -> None:
        """``Store.flush`` one thread at a time: two RocksDB flushes racing on
        one database can hang forever (facebook/rocksdb#12094), which
        ``tog eval --concurrency`` did here once, in ``finish_run``."""
        with _FLUSH_LOCK:
            self.store.flush()

    def _query(self, text: str, **kwargs):
        started = time.perf_counter()
        try:
            return list(self.store.query(text, **kwargs))
        finally:
            self.lookups += 1
            self.seconds += time.perf_counter() - started

    def _kg_query(self, text: str):
        """A read of the knowledge graph (the SPARQL-endpoint backend sends these away)."""
        return self._query(text)


    def close(self) -> None:
        try:
            self._flush_store()
        except OSError:
            pass
        self.index.close()
        del self.store

    def __enter__(self) -> OxigraphGraph:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- settings ---------------------------------------------------------
    @property
    def name_predicates(self) -> tuple[str, ...]:
        if self._name_predicates is None:
            self._name_predicates = tuple(self.index.get("name_predicates", [])) or DEFAULT_NAME_PREDICATES
        return self._name_predicates

    def set_name_predicates(self, predicates: Sequence[str]) -> None:
        """Remember which predicates carry names (added to what is there)."""
        merged = list(dict.fromkeys([*self.index.get("name_predicates", []), *predicates]))
        self.index.set("name_predicates", merged)
        self._name_predicates = None

    def _name_terms(self) -> list[tuple[ox.NamedNode]]:
        return [(ox.NamedNode(p),) for p in self.name_predicates]

    def _pick_names(self, rows: Iterable[tuple[str, str | None, object]]) -> dict[str, str]:
        """Best name per id from (id, name predicate, literal) rows."""
        order = {p: i for i, p in enumerate(self.name_predicates)}
        best: dict[str, tuple[tuple[int, int], str]] = {}
        for key, pred, lit in rows:
            if not isinstance(lit, ox.Literal) or pred is None:
                continue
            rank = (_lang_rank(lit), order.get(pred, 99))
            if key not in best or rank < best[key][0]:
                best[key] = (rank, lit.value)
        return {k: v[1] for k, v in best.items()}

    # -- KnowledgeGraph ---------------------------------------------------
    def relations(self, entities: Sequence[str]) -> dict[str, list[Relation]]:
        iris = [e for e in entities if not e.startswith('"')]
        rows = [row for part in chunks(iris, BATCH)
                for row in self._kg_query(render("relations", entities=_rows(part)))]
        return self._relations_from(rows, entities)

    def _relations_from(self, rows: Iterable, entities: Sequence[str]) -> dict[str, list[Relation]]:
        """The informative relations in (?e ?po ?pi) rows (``relations.rq``),
        sorted and named."""
        out: dict[str, list[Relation]] = {e: [] for e in entities}
        names = set(self.name_predicates)
        for row in rows:
            head = row["po"]
            pred, direction = (head.value, "out") if head is not None else (row["pi"].value, "in")
            if self.policy.allows(pred) and pred not in names:
                out[row["e"].value].append(Relation(pred, direction))
        for rels in out.values():
            rels.sort(key=lambda r: (r.id, r.direction))
        label_relations(self, out, self._relation_labels)
        return out

    def expand(self, requests: Sequence[tuple[str, Relation]], limit: int = 100, *,
               over: int = 0, size: int = 5) -> list[Candidate]:
        names = self._name_terms()
        found: dict[tuple[str, Relation], dict[str, list]] = defaultdict(dict)
        for direction in ("out", "in"):
            pairs = [(ox.NamedNode(e), ox.NamedNode(r.id)) for e, r in requests
                     if r.direction == direction and not e.startswith('"')]
            for part in chunks(pairs, BATCH):
                text = render(f"expand_{direction}", pairs=_sparql_rows(part), names=_sparql_rows(names))
                for row in self._kg_query(text):
                    key = (row["e"].value, Relation(row["p"].value, direction))
                    x = row["x"]
                    xid = literal_id(x) if isinstance(x, ox.Literal) else x.value
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

    def _expand_named(self, requests: list[tuple[str, Relation]], limit: int) -> dict[str, list[Candidate]]:
        """The named out-neighbours of each (entity, relation), at most
        ``limit`` per entity (``look_through``)."""
        by_source: dict[str, list[Candidate]] = defaultdict(list)
        for part in chunks(requests, BATCH):
            rows: dict[tuple[str, str, str], list] = {}
            for row in self._expand_named_rows(part):
                x = row["x"]
                xid = literal_id(x) if isinstance(x, ox.Literal) else x.value
                key = (row["e"].value, row["p"].value, xid)
                slot = rows.setdefault(key, [x, []])
                if row["np"] is not None:
                    slot[1].append((xid, row["np"].value, row["name"]))
            for (e, p, xid), (term, name_rows) in sorted(rows.items()):
                if isinstance(term, ox.Literal):
                    node = Node(xid, term.value, True, term.datatype.value if term.datatype else None)
                else:
                    name = self._pick_names(name_rows).get(xid)
                    if name is None:
                        continue
                    node = Node(xid, name)
                if len(by_source[e]) < limit:
                    by_source[e].append(Candidate(e, Relation(p, "out"), node))
        return by_source

    def _expand_named_rows(self, requests: list[tuple[str, Relation]]):
        """``expand_out.rq`` rows (?e ?p ?x ?np ?name) for these pairs."""
        pairs = [(ox.NamedNode(e), ox.NamedNode(r.id)) for e, r in requests]
        return self._kg_query(render("expand_out", pairs=_sparql_rows(pairs), names=_sparql_rows(self._name_terms())))

    def relation_schema(self, relation: Relation) -> list[Relation]:
        """Relations found around a sample of the nodes that ``relation``
        leads to: what a path can do one hop after it.  Cached per store."""
        if relation not in self._schema:
            rows = self._query(sparql(f"schema_{relation.direction}"),
                               substitutions={ox.Variable("p"): ox.NamedNode(relation.id)})
            found = {Relation(r["q"].value, r["dir"].value) for r in rows}
            names = set(self.name_predicates)
            self._schema[relation] = sorted((r for r in found if self.policy.allows(r.id) and r.id not in names),
                                            key=lambda r: (r.id, r.direction))
        return self._schema[relation]

    def labels(self, ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        iris = [i for i in dict.fromkeys(ids) if not i.startswith('"')]
        for i in ids:
            if i.startswith('"'):
                out[i] = literal_from_id(i).value
        for part in chunks(iris, BATCH):
            text = render("labels", entities=_rows(part), names=_sparql_rows(self._name_terms()))
            rows = [(r["e"].value, r["np"].value, r["name"]) for r in self._kg_query(text)]
            out.update(self._pick_names(rows))
        return out

    def search_entities(self, keys: Sequence[str]) -> dict[str, list[Node]]:
        started = time.perf_counter()
        found = self.index.lookup(list(dict.fromkeys(k for k in keys if k)))
        self.lookups += 1
        self.seconds += time.perf_counter() - started
        names = self.labels([e for ents in found.values() for e in ents])
        return {k: [Node(e, names.get(e, local_name(e))) for e in v] for k, v in found.items()}

    def has_entity(self, entity: str) -> bool:
        try:
            node = ox.NamedNode(entity)
        except ValueError:
            return False
        self.lookups += 1
        for _ in self.store.quads_for_pattern(node, None, None, ox.DefaultGraph()):
            return True
        for _ in self.store.quads_for_pattern(None, None, node, ox.DefaultGraph()):
            return True
        return False

    def stats(self) -> dict:
        triples = self._kg_query(sparql("count"))[0]["n"].value
        return {"triples": int(triples), "names": self.index.count(), "runs": len(self.runs())}

    # -- writing (used by loaders) -----------------------------------------
    def bulk_load_ntriples(self, data: bytes, fmt: ox.RdfFormat = ox.RdfFormat.N_TRIPLES) -> None:
        """Load N-Triples bytes straight through Oxigraph's bulk loader.
        Raises ``SyntaxError`` (and writes nothing) when a line is malformed."""
        self.store.bulk_load(data, fmt)

    def bulk_load_file(self, path: Path) -> None:
        """Load a plain N-Triples file by Oxigraph's own reader (it parses on
        every core). Raises ``SyntaxError`` (and writes nothing) on a bad line."""
        self.store.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES)

    def bulk_extend(self, quads: Iterable[ox.Quad]) -> None:
        self.store.bulk_extend(quads)

    def index_names(self, pairs: Iterable[tuple[str, str]], source: str) -> int:
        """Queue (entity IRI, normalised name) pairs for the linking index;
        they are committed with the next checkpoint."""
        return self.index.add(pairs, source)

    def discard_names(self) -> None:
        """Forget the names queued since the last checkpoint (a failed segment)."""
        self.index.rollback()

    def begin_bulk(self) -> None:
        self.index.begin_bulk()

    def end_bulk(self, commit: bool = True) -> None:
        self.index.end_bulk(commit)

    def forget_load(self, source: str) -> None:
        self.index.forget(source)

    def checkpoint(self, source: str) -> dict:
        return self.index.checkpoint(source)

    def set_checkpoint(self, source: str, **values) -> None:
        """Make the data written so far durable, then record the checkpoint
        (and the names queued with it) in one transaction."""
        self._flush_store()
        self.index.set_checkpoint(source, **values)

    # -- runs ---------------------------------------------------------------
    def start_run(self, run: RunInfo) -> None:
        g = ox.NamedNode(RUN_PREFIX + run.id)
        r = g
        quads = [
            ox.Quad(r, RDF_TYPE, _v("Run"), g),
            ox.Quad(r, _v("question"), ox.Literal(run.question), g),
            ox.Quad(r, _v("started"), ox.Literal(run.started, datatype=ox.NamedNode(XSD + "dateTime")), g),
            ox.Quad(r, _v("status"), ox.Literal(run.status), g),
            ox.Quad(r, _v("method"), ox.Literal(run.method), g),
            ox.Quad(r, _v("config"), ox.Literal(json.dumps(run.config, sort_keys=True)), g),
        ]
        self.store.extend(quads)

    def record_step(self, run_id: str, paths: Sequence[PathRecord]) -> None:
        g = ox.NamedNode(RUN_PREFIX + run_id)
        quads = []
        for p in paths:
            node = ox.NamedNode(f"{RUN_PREFIX}{run_id}/{p.id}")
            quads += [
                ox.Quad(node, RDF_TYPE, _v("Path"), g),
                ox.Quad(node, _v("depth"), ox.Literal(p.depth), g),
                ox.Quad(node, _v("at"), _term(p.entity, p.literal), g),
                ox.Quad(node, _v("name"), ox.Literal(p.name), g),
                ox.Quad(node, _v("kept"), ox.Literal(p.kept), g),
                ox.Quad(node, _v("literal"), ox.Literal(p.literal), g),
            ]
            if p.parent is None:
                quads.append(ox.Quad(g, _v("root"), node, g))
            else:
                quads.append(ox.Quad(node, _v("parent"), ox.NamedNode(f"{RUN_PREFIX}{run_id}/{p.parent}"), g))
            if p.relation is not None:
                quads.append(ox.Quad(node, _v("relation"), ox.NamedNode(p.relation), g))
                quads.append(ox.Quad(node, _v("direction"), ox.Literal(p.direction or "out"), g))
            if p.via:
                quads.append(ox.Quad(node, _v("via"), ox.Literal(" ".join(p.via)), g))
            if p.score is not None:
                quads.append(ox.Quad(node, _v("score"), ox.Literal(float(p.score)), g))
        # kept flags may change between steps (a path kept at depth 1 can be
        # dropped later): replace the old values of the nodes we rewrite.
        for p in paths:
            node = ox.NamedNode(f"{RUN_PREFIX}{run_id}/{p.id}")
            for q in list(self.store.quads_for_pattern(node, _v("kept"), None, g)):
                self.store.remove(q)
        self.store.extend(quads)

    def finish_run(self, run: RunInfo) -> None:
        g = ox.NamedNode(RUN_PREFIX + run.id)
        for pred in ("status", "answer", "stats", "finished"):
            for q in list(self.store.quads_for_pattern(g, _v(pred), None, g)):
                self.store.remove(q)
        quads = [
            ox.Quad(g, _v("status"), ox.Literal(run.status), g),
            ox.Quad(g, _v("answer"), ox.Literal(json.dumps(run.answer)), g),
            ox.Quad(g, _v("stats"), ox.Literal(json.dumps(run.stats, sort_keys=True)), g),
        ]
        if run.finished:
            quads.append(ox.Quad(g, _v("finished"), ox.Literal(run.finished, datatype=ox.NamedNode(XSD + "dateTime")), g))
        self.store.extend(quads)
        self._flush_store()

    def runs(self) -> list[RunInfo]:
        out = []
        for row in self._query(sparql("runs")):
            out.append(RunInfo(
                id=row["g"].value[len(RUN_PREFIX):],
                question=row["question"].value,
                started=row["started"].value,
                status=row["status"].value,
                method=row["method"].value,
                answer=json.loads(row["answer"].value) if row["answer"] is not None else [],
                finished=row["finished"].value if row["finished"] is not None else None,
            ))
        return out

    def run(self, run_id: str) -> RunTree:
        try:
            g = ox.NamedNode(RUN_PREFIX + run_id)
        except ValueError:
            raise UnknownRunError(f"no run {run_id!r} in this store (see `tog runs list`)") from None
        rows = self._query(sparql("run_header"), substitutions={ox.Variable("g"): g})
        if not rows:
            raise UnknownRunError(f"no run {run_id!r} in this store (see `tog runs list`)")
        h = rows[0]
        info = RunInfo(
            id=run_id,
            question=h["question"].value,
            started=h["started"].value,
            status=h["status"].value,
            method=h["method"].value,
            config=json.loads(h["config"].value),
            answer=json.loads(h["answer"].value) if h["answer"] is not None else [],
            stats=json.loads(h["stats"].value) if h["stats"] is not None else {},
            finished=h["finished"].value if h["finished"] is not None else None,
            feedback=sorted((json.loads(q.object.value) for q in self.store.quads_for_pattern(g, _v("feedback"), None, g)),
                            key=lambda f: f.get("at", "")),
        )
        prefix = f"{RUN_PREFIX}{run_id}/"
        paths = []
        for row in self._query(sparql("run_paths"), substitutions={ox.Variable("g"): g}):
            at = row["at"]
            literal = row["literal"].value == "true"
            paths.append(PathRecord(
                id=row["path"].value[len(prefix):],
                depth=int(row["depth"].value),
                entity=literal_id(at) if literal else at.value,
                name=row["name"].value,
                parent=row["parent"].value[len(prefix):] if row["parent"] is not None else None,
                relation=row["relation"].value if row["relation"] is not None else None,
                direction=row["direction"].value if row["direction"] is not None else None,
                via=tuple(row["via"].value.split()) if row["via"] is not None else (),
                score=float(row["score"].value) if row["score"] is not None else None,
                kept=row["kept"].value == "true",
                literal=literal,
            ))
        paths.sort(key=lambda p: (p.depth, natural(p.id)))
        return RunTree(info, paths)

    def add_feedback(self, run_id: str, entry: dict) -> None:
        self.run(run_id)  # UnknownRunError for a run that is not here
        g = ox.NamedNode(RUN_PREFIX + run_id)
        self.store.add(ox.Quad(g, _v("feedback"), ox.Literal(json.dumps(entry, sort_keys=True)), g))
        self._flush_store()

    # -- corrections ----------------------------------------------------------
    # Each correction is one JSON record in the graph urn:tog:corrections.  It
    # is written ("applying") before the KG changes and marked "active" after,
    # so a crash in between is finished on the next access (the changes are
    # set operations: applying them twice changes nothing).
    def _fact_quad(self, fact: Fact) -> ox.Quad:
        s, r, o = fact
        obj = literal_from_id(o) if o.startswith('"') else ox.NamedNode(o)
        return ox.Quad(ox.NamedNode(s), ox.NamedNode(r), obj, ox.DefaultGraph())

    def has_fact(self, fact: Fact) -> bool:
        q = self._fact_quad(fact)
        return next(iter(self.store.quads_for_pattern(q.subject, q.predicate, q.object, q.graph_name)), None) is not None

    def _save_correction(self, c: Correction) -> None:
        """The new record goes in before the old one goes out, so a crash in
        between leaves two records, of which readers take the furthest."""
        node = ox.NamedNode(CORRECTION_PREFIX + c.id)
        record = ox.Literal(c.to_json())
        self.store.add(ox.Quad(node, _v("record"), record, CORRECTIONS))
        for q in list(self.store.quads_for_pattern(node, _v("record"), None, CORRECTIONS)):
            if q.object != record:
                self.store.remove(q)

    def _change(self, remove: Sequence[Fact], add: Sequence[Fact]) -> None:
        for fact in remove:
            self.store.remove(self._fact_quad(fact))
        self.store.extend([self._fact_quad(f) for f in add])

    def apply_correction(self, c: Correction) -> Correction:
        c.kept = [f for f in c.added if self.has_fact(f)]
        c.added = [f for f in c.added if f not in c.kept]
        c.status = "applying"
        self._save_correction(c)
        self._change(c.removed, c.added)
        c.status = "active"
        self._save_correction(c)
        self._flush_store()
        return c

    def corrections(self) -> list[Correction]:
        stage = {"applying": 0, "active": 1, "reverting": 2, "reverted": 3}
        latest: dict[str, Correction] = {}
        for q in self.store.quads_for_pattern(None, _v("record"), None, CORRECTIONS):
            c = Correction.from_json(q.object.value)
            if c.id not in latest or stage.get(c.status, 0) > stage.get(latest[c.id].status, 0):
                latest[c.id] = c
        out = list(latest.values())
        for c in out:
            if c.status == "applying":  # interrupted: finish it
                self._change(c.removed, c.added)
                c.status = "active"
                self._save_correction(c)
            elif c.status == "reverting":
                self._change(c.added, c.removed)
                c.status = "reverted"
                self._save_correction(c)
        return sorted(out, key=lambda c: (c.created, c.id))

    def revert_correction(self, c: Correction, when: str) -> Correction:
        c.status, c.reverted = "reverting", when
        self._save_correction(c)
        self._change(c.added, c.removed)
        c.status = "reverted"
        self._save_correction(c)
        self._flush_store()
        return c

    def prune_runs(self, older_than: str) -> int:
        """Drop every run started before ``older_than`` (ISO 8601 timestamp)."""
        import datetime as dt

        limit = dt.datetime.fromisoformat(older_than)
        dropped = 0
        for run in self.runs():
            if dt.datetime.fromisoformat(run.started) < limit:
                self.store.remove_graph(ox.NamedNode(RUN_PREFIX + run.id))
                dropped += 1
        self._flush_store()
        return dropped


def _rows(iris: Iterable[str]) -> str:
    from engine.queries import sparql_values

    return sparql_values((ox.NamedNode(i),) for i in iris)


def _sparql_rows(rows: Iterable[Sequence[object]]) -> str:
    from engine.queries import sparql_values

    return sparql_values(rows)
