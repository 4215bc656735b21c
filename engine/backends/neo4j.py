"""The Neo4j backend: the knowledge graph and the reasoning runs in a Neo4j 5
database, through the official driver.

Data model (DESIGN.md):
- ``(:Entity {id, name})`` per IRI; one relationship type per KG relation (the
  relation's IRI); literals as ``(:Value {id, value, datatype, lang})`` whose
  id is the literal's N-Triples form.  Names (``rdfs:label`` and the other
  name predicates) become the ``name`` property (the best one: English
  first) and ``(:TogName {key, entity, source})`` rows of the linking index.
- Runs: ``(:TogRun)-[:ROOT]->(:TogPath)``, ``(:TogPath)-[:PARENT]->(:TogPath)``,
  ``(:TogPath)-[:AT]->(:Entity|Value)``; path nodes also carry a ``Kept`` or
  ``Pruned`` label for Browser's style sheet.

Every statement is a file under ``cypher/``.  Values, relationship types
included, travel as parameters (Cypher 5's dynamic types ``$(...)``): no
data ever becomes query text.  The schema is set up by ordered migrations
(``cypher/migrations/``), each recorded as a ``(:TogMigration)`` node.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections import defaultdict, deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pyoxigraph as ox

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
from engine.backends.oxigraph import literal_from_id
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
from engine.queries import cypher

SCHEMES = ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")
BATCH = 2000          # rows per read statement
WRITE_BATCH = 20_000  # rows per write statement when loading
WRITERS = 2  # chunk transactions in flight while loading
KNOWN_NODES = 2_000_000  # node ids a load remembers (then it starts over)
HASH_MASK = (1 << 64) - 1


def is_neo4j_uri(spec: str) -> bool:
    return "://" in spec and spec.split("://", 1)[0].lower() in SCHEMES


def migrations() -> list[str]:
    """Names of the schema migrations, in the order they apply."""
    folder = resources.files("cypher").joinpath("migrations")
    return sorted(p.name[:-len(".cypher")] for p in folder.iterdir() if p.name.endswith(".cypher"))


def literal_parts(term: ox.Literal) -> list:
    """[id, value, datatype, language] of a literal, as stored on a Value node."""
    return [str(term), term.value, term.datatype.value if term.datatype else None, term.language]


def split_quads(quads: Iterable[ox.Quad], name_predicates: Sequence[str]):
    """Sort parsed triples into what the Neo4j data model writes:
    (entity ids, [entity, name, rank] rows, {value id: Value row},
    [(subject, relation, entity)] edges, [(subject, relation, value id)] edges).
    A name's rank is lower for a preferred language, then predicate."""
    order = {p: i for i, p in enumerate(name_predicates)}
    entities: set[str] = set()
    name_rows, value_rows, edges, value_edges = [], {}, [], []
    for q in quads:
        s, p, o = q.subject, q.predicate.value, q.object
        if not isinstance(s, ox.NamedNode):
            continue  # blank subjects are skolemised by the loader; anything else is not RDF 1.1
        entities.add(s.value)
        if isinstance(o, ox.Literal):
            if p in order:
                name_rows.append([s.value, o.value, lang_rank(o.language) * 100 + order[p]])
                continue
            parts = literal_parts(o)
            value_rows[parts[0]] = parts
            value_edges.append((s.value, p, parts[0]))
        elif isinstance(o, ox.NamedNode):
            entities.add(o.value)
            edges.append((s.value, p, o.value))
    return entities, name_rows, value_rows, edges, value_edges


class PendingWrites:
    """The loader's side shared by the Neo4j writers: parsed triples and name
    keys wait in memory until the next checkpoint writes them."""

    _pending: list[ox.Quad]
    _pending_names: list[tuple[str, str, str]]

    def bulk_load_ntriples(self, data: bytes, fmt: ox.RdfFormat = ox.RdfFormat.N_TRIPLES) -> None:
        """Parse N-Triples bytes (``SyntaxError`` on a bad line, and nothing
        kept) and queue the triples for the next checkpoint."""
        self._pending.extend(list(ox.parse(data, fmt)))  # all or nothing

    def index_names(self, pairs: Iterable[tuple[str, str]], source: str) -> int:
        rows = [(k, e, source) for e, k in pairs if k]
        self._pending_names.extend(rows)
        return len(rows)

    def discard_names(self) -> None:
        self._pending.clear()
        self._pending_names.clear()


class Neo4jGraph(ThreadMeter, PendingWrites):
    """``KnowledgeGraph`` over a Neo4j 5 server.

    ``uri`` is ``neo4j://``, ``bolt://`` (or their ``+s`` forms), optionally
    with ``user:password@``; otherwise ``user``/``password`` are used.
    """

    capabilities = frozenset({"runs", "schema", "corrections"})
    chunk_bytes = 16 << 20  # loader: bytes of lines written (and checkpointed) per transaction

    def __init__(
        self,
        uri: str,
        *,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        policy: RelationPolicy = DEFAULT_POLICY,
        connect_timeout: float = 10.0,
        retry_seconds: float | None = None,
    ) -> None:
        import logging

        import neo4j
        from neo4j import exceptions as nx

        driver_log = logging.getLogger("neo4j")
        if driver_log.level == logging.NOTSET and not driver_log.handlers:
            # Unless the application configured it: the driver's retries of
            # transient errors (a deadlock between two chunk transactions of a
            # load, say) are not the user's concern; failures still raise.
            driver_log.setLevel(logging.ERROR)
        parts = urlsplit(uri)
        if parts.username:  # credentials in the URI win over the environment's
            user, password = parts.username, parts.password or ""
            parts = parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else ""))
        self.uri = urlunsplit(parts)  # without credentials: safe to print
        self.database = database or None
        self.policy = policy
        self.lookups = 0
        self.seconds = 0.0
        self._nx = nx
        self._schema: dict[Relation, list[Relation]] = {}
        self._relation_labels: dict[str, str | None] = {}
        self._name_predicates: tuple[str, ...] | None = None
        self._pending: list[ox.Quad] = []
        self._pending_names: list[tuple[str, str, str]] = []
        self._fresh = False
        self._seen = self._seen_keys = None  # hashes of what this load wrote (fresh loads only)
        self._writers: ThreadPoolExecutor | None = None  # chunk transactions of a load
        self._inflight: deque[Future] = deque()
        self._from: dict[str, int] = {}  # source -> lines of its last checkpoint handed over
        self._node_ids: dict[str, int] = {}  # entity -> node id, from this load's committed chunks
        try:
            self.driver = neo4j.GraphDatabase.driver(
                self.uri, auth=(user or "neo4j", password or ""),
                connection_timeout=connect_timeout,
                max_transaction_retry_time=retry_seconds if retry_seconds is not None else _retry_seconds(),
                connection_acquisition_timeout=connect_timeout, notifications_min_severity="OFF")
            self.driver.verify_connectivity()
        except nx.AuthError:
            raise StoreError(f"Neo4j at {self.uri} refused the credentials of user {user or 'neo4j'!r} "
                             "(set NEO4J_USER / NEO4J_PASSWORD)") from None
        except (nx.ServiceUnavailable, nx.SessionExpired, OSError) as e:
            raise StoreError(f"cannot reach Neo4j at {self.uri}: {_reason(e)} "
                             "(is the server running? `launcher/neo4j-server start` starts one)") from None
        except (ValueError, nx.ConfigurationError) as e:
            raise StoreError(f"not a usable Neo4j address {self.uri!r}: {e}") from None
        self._migrate()
        self.database_id = self._run("database_id", count=False)[0]["id"]
        self._mark_unfinished_failures()

    # -- plumbing -----------------------------------------------------------
    def _errors(self, e: Exception) -> StoreError:
        nx = self._nx
        if isinstance(e, (nx.ServiceUnavailable, nx.SessionExpired, OSError)):
            return StoreError(f"lost the connection to Neo4j at {self.uri}: {_reason(e)}")
        if isinstance(e, nx.Neo4jError):
            return StoreError(f"Neo4j at {self.uri} failed: {e.message or e}")
        return StoreError(f"Neo4j at {self.uri} failed: {e}")

    def _run(self, name: str, *, write: bool = False, count: bool = True, **params) -> list:
        """One statement in its own transaction (retried by the driver on
        transient errors); returns the records."""
        import neo4j

        started = time.perf_counter()
        try:
            records, _, _ = self.driver.execute_query(
                cypher(name), params, database_=self.database,
                routing_=neo4j.RoutingControl.WRITE if write else neo4j.RoutingControl.READ)
            return records
        except (self._nx.DriverError, self._nx.Neo4jError, OSError) as e:
            raise self._errors(e) from e
        finally:
            if count and not write:
                self.lookups += 1
                self.seconds += time.perf_counter() - started

    def _write_tx(self, work) -> None:
        """``work(tx)`` in one write transaction, retried on transient errors."""
        try:
            with self.driver.session(database=self.database) as session:
                session.execute_write(work)
        except (self._nx.DriverError, self._nx.Neo4jError, OSError) as e:
            raise self._errors(e) from e

    def _migrate(self) -> None:
        applied = {r["id"] for r in self._run("migrations_applied", write=True)}
        for name in migrations():
            if name not in applied:
                self._run(f"migrations/{name}", write=True)
                self._run("migration_record", write=True, id=name, applied=_now())

    def close(self) -> None:
        self.driver.close()

    def __enter__(self) -> Neo4jGraph:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- settings -------------------------------------------------------------
    def _setting(self, key: str, default):
        rows = self._run("setting_get", count=False, key=key)
        return json.loads(rows[0]["value"]) if rows else default

    @property
    def name_predicates(self) -> tuple[str, ...]:
        if self._name_predicates is None:
            self._name_predicates = tuple(self._setting("name_predicates", [])) or DEFAULT_NAME_PREDICATES
        return self._name_predicates

    def set_name_predicates(self, predicates: Sequence[str]) -> None:
        merged = list(dict.fromkeys([*self._setting("name_predicates", []), *predicates]))
        self._run("setting_set", write=True, key="name_predicates", value=json.dumps(merged))
        self._name_predicates = None

    # -- KnowledgeGraph -------------------------------------------------------
    def relations(self, entities: Sequence[str]) -> dict[str, list[Relation]]:
        out: dict[str, list[Relation]] = {e: [] for e in entities}
        iris = [e for e in dict.fromkeys(entities) if not e.startswith('"')]
        names = set(self.name_predicates)
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
            pairs = [[e, r.id] for e, r in dict.fromkeys(requests)
                     if r.direction == direction and not e.startswith('"')]
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

    def relation_schema(self, relation: Relation) -> list[Relation]:
        if relation not in self._schema:
            rows = self._run(f"schema_{relation.direction}", relation=relation.id)
            names = set(self.name_predicates)
            found = {Relation(r["q"], r["dir"]) for r in rows}
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
            for row in self._run("labels", ids=list(part)):
                out[row["id"]] = row["name"]
        return out

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
        return {"edges": row["edges"], "entities": row["entities"], "values": row["values"],
                "names": row["names"], "runs": row["runs"]}

    # -- loading --------------------------------------------------------------
    # The loader hands over parsed triples (``bulk_load_ntriples`` /
    # ``bulk_extend``) and name keys (``index_names``); they are written at
    # the next ``set_checkpoint``, in one transaction with a record of the
    # lines they came from.  ``WRITERS`` such transactions run at once (the
    # server's commit work is single-threaded per transaction), so they may
    # commit out of order: each writes a ``TogLoadPart`` for its lines, and
    # ``checkpoint`` resumes after the parts that follow the last checkpoint
    # without a gap.  A killed load thus resumes after its last committed
    # prefix; chunks past a gap are written again, which adds nothing.
    def checkpoint(self, source: str) -> dict:
        row = self._run("load_checkpoint_get", source=source)[0]
        done = _strip(row["checkpoint"] or {})
        parts = {p["from"]: p for p in row["parts"]}
        if parts:  # join the parts after the checkpoint; drop the rest (written again)
            at = done.get("lines", 0)
            while at in parts:
                part = _strip(parts.pop(at))
                done.update(part)
                at = part.get("lines", at)
            self._run("load_checkpoint_set", write=True, source=source, values=done)
        self._from[source] = done.get("lines", 0)
        return done

    def forget_load(self, source: str) -> None:
        self._run("load_forget", write=True, source=source)
        self._from[source] = 0

    def begin_bulk(self) -> None:
        # A load into a database with no KG yet may CREATE its edges and name
        # keys (checking for repeats within the load in memory), which is many
        # times faster than MERGE on hubs; otherwise every edge is MERGEd.
        self._fresh = self._run("kg_entities")[0]["n"] == 0
        self._seen = _HashSet() if self._fresh else None
        # Name keys have no unique constraint, so two chunks in flight could
        # both MERGE one: each key goes to one chunk, whatever the database.
        self._seen_keys = _HashSet()
        self._writers = ThreadPoolExecutor(WRITERS, thread_name_prefix="tog-neo4j-load")

    def end_bulk(self, commit: bool = True) -> None:
        self._pending.clear()
        self._pending_names.clear()
        if self._writers is not None:
            # Chunks still in flight belong to a load that failed: let them
            # finish (each commits with its part, or not at all) and keep
            # that failure as the one reported.
            for future in self._inflight:
                future.exception()
            self._inflight.clear()
            self._writers.shutdown()
            self._writers = None
        self._fresh = False
        self._seen = self._seen_keys = None
        self._node_ids = {}

    def bulk_extend(self, quads: Iterable[ox.Quad]) -> None:
        self._pending.extend(quads)
        if len(self._pending) >= 8 * WRITE_BATCH:  # stream formats: write as we go
            self._flush(None)

    def set_checkpoint(self, source: str, **values) -> None:
        self._flush((source, values))

    def _flush(self, checkpoint: tuple[str, dict] | None) -> None:
        quads, self._pending = self._pending, []
        names, self._pending_names = self._pending_names, []
        chunk = self._chunk_writer(quads, names)
        last = checkpoint is not None and checkpoint[1].get("complete")
        if checkpoint is not None and not last:
            source, values = checkpoint
            start, self._from[source] = self._from.get(source, 0), values.get("lines", 0)

        def work(tx) -> None:
            chunk.write(tx)
            if last:
                tx.run(cypher("load_checkpoint_set"), source=checkpoint[0], values=checkpoint[1]).consume()
            elif checkpoint is not None:
                tx.run(cypher("load_part_add"), source=source, values=values, **{"from": start}).consume()

        def commit() -> None:
            self._write_tx(work)
            chunk.committed()

        if self._writers is None or last:  # the final checkpoint follows every part
            self._wait(0)
            commit()
        else:
            self._wait(WRITERS - 1)
            self._inflight.append(self._writers.submit(commit))

    def _wait(self, left: int) -> None:
        """Wait until at most ``left`` chunk transactions are in flight;
        raises the first failure."""
        while len(self._inflight) > left:
            done, _ = wait(self._inflight, return_when=FIRST_COMPLETED)
            for future in done:
                self._inflight.remove(future)
                future.result()

    def _chunk_writer(self, quads: list[ox.Quad], names: list[tuple[str, str, str]]) -> _Chunk:
        """What writes ``quads`` and ``names`` in a transaction.

        Repeats are filtered here, in the caller's thread and chunk order; the
        statements run in the writer's transaction: nodes first, whose ids
        then address the edges.  Entities whose node an earlier, committed
        chunk of this load returned are not looked up again, unless this
        chunk names them."""
        entities, name_rows, value_rows, edges, value_edges = split_quads(quads, self.name_predicates)
        best: dict[str, list] = {}
        for row in name_rows:  # the chunk's best name per entity (the first of equals)
            if row[0] not in best or row[2] < best[row[0]][2]:
                best[row[0]] = row
        cache = self._node_ids
        known = {e: cache[e] for e in entities if e in cache and e not in best}
        entity_rows = [best.get(e) or [e, None, None] for e in sorted(entities) if e not in known]
        edges += value_edges
        keys = [(k, e) for k, e, _ in names]
        if self._seen_keys is not None:
            keys = self._seen_keys.new(keys)
            self._seen_keys.commit()  # the next chunk's filter must know these, written or in flight
        if self._seen is not None:  # fresh load: drop repeats, CREATE the rest
            edges = self._seen.new(edges)
            self._seen.commit()
        return _Chunk(entity_rows, sorted(value_rows.values()), edges, keys, names[0][2] if names else "",
                      "create" if self._seen is not None else "merge", known, cache)

    # -- runs -----------------------------------------------------------------
    def start_run(self, run: RunInfo) -> None:
        self._run("run_start", write=True, id=run.id, question=run.question, started=run.started,
                  status=run.status, method=run.method, config=json.dumps(run.config, sort_keys=True))

    def record_step(self, run_id: str, paths: Sequence[PathRecord]) -> None:
        rows = [{
            "id": p.id, "depth": p.depth, "entity": p.entity, "name": p.name, "parent": p.parent,
            "relation": p.relation, "direction": (p.direction or "out") if p.relation else None,
            "via": " ".join(p.via) if p.via else None,
            "score": float(p.score) if p.score is not None else None,
            "kept": bool(p.kept), "literal": bool(p.literal),
        } for p in paths]
        # parents first: a path's PARENT link needs its parent's node
        rows.sort(key=lambda r: r["depth"])
        self._run("run_step", write=True, run=run_id, paths=rows)

    def finish_run(self, run: RunInfo) -> None:
        try:
            self._run("run_finish", write=True, id=run.id, status=run.status, answer=json.dumps(run.answer),
                      stats=json.dumps(run.stats, sort_keys=True), finished=run.finished)
        except StoreError as e:
            if run.status == "failed":  # the connection is gone: mark it failed on the next connect
                _failure_journal().add(self.database_id, run.id, run.finished, str(e))
            raise

    def _mark_unfinished_failures(self) -> None:
        journal = _failure_journal()
        for entry in journal.entries(self.database_id):
            self._run("run_fail_unfinished", write=True, id=entry["run"], finished=entry["finished"],
                      error=entry["error"])
        journal.remove(self.database_id)

    def runs(self) -> list[RunInfo]:
        return [_run_info(r["run"]) for r in self._run("runs_list")]

    def run(self, run_id: str) -> RunTree:
        rows = self._run("run_get", id=run_id)
        if not rows:
            raise UnknownRunError(f"no run {run_id!r} in this store (see `tog runs list`)")
        info = _run_info(rows[0]["run"], full=True)
        paths = []
        for row in self._run("run_paths", id=run_id):
            p = row["path"]
            paths.append(PathRecord(
                id=p["path"], depth=int(p["depth"]), entity=p["entity"], name=p["name"],
                parent=row["parent"], relation=p.get("relation"), direction=p.get("direction"),
                via=tuple(p["via"].split()) if p.get("via") else (),
                score=p.get("score"), kept=bool(p["kept"]), literal=bool(p["literal"]),
            ))
        paths.sort(key=lambda p: (p.depth, natural(p.id)))
        return RunTree(info, paths)

    def add_feedback(self, run_id: str, entry: dict) -> None:
        rows = self._run("run_feedback", write=True, run=run_id, entry=json.dumps(entry, sort_keys=True))
        if not rows or not rows[0]["found"]:
            raise UnknownRunError(f"no run {run_id!r} in this store (see `tog runs list`)")

    # -- corrections ----------------------------------------------------------
    # A correction's fact changes and its (:TogCorrection) record are written
    # in one transaction; added relationships carry its id (tog_correction).
    def has_fact(self, fact: Fact) -> bool:
        s, r, o = fact
        rows = self._run("fact_exists", s=s, r=r, o=o, literal=o.startswith('"'))
        return bool(rows and rows[0]["found"])

    def _change(self, tx, correction_id: str | None, remove: Sequence[Fact], add: Sequence[Fact]) -> None:
        for s, r, o in remove:
            tx.run(cypher("fact_remove"), s=s, r=r, o=o).consume()
        for s, r, o in add:
            if o.startswith('"'):
                _, value, datatype, lang = literal_parts(literal_from_id(o))
                tx.run(cypher("fact_add_value"), s=s, r=r, o=o, value=value, datatype=datatype, lang=lang,
                       correction=correction_id).consume()
            else:
                tx.run(cypher("fact_add_entity"), s=s, r=r, o=o, correction=correction_id).consume()

    def _save(self, tx, c: Correction) -> None:
        subjects = sorted({f[0] for f in c.removed + c.added + c.kept})
        tx.run(cypher("correction_save"), id=c.id, created=c.created, reason=c.reason, run=c.run, status=c.status,
               reverted=c.reverted, record=c.to_json(), subjects=subjects).consume()

    def apply_correction(self, c: Correction) -> Correction:
        c.kept = [f for f in c.added if self.has_fact(f)]
        c.added = [f for f in c.added if f not in c.kept]
        c.status = "active"

        def work(tx) -> None:
            self._change(tx, c.id, c.removed, c.added)
            self._save(tx, c)

        self._write_tx(work)
        return c

    def corrections(self) -> list[Correction]:
        return [Correction.from_json(r["record"]) for r in self._run("corrections_list", count=False)]

    def revert_correction(self, c: Correction, when: str) -> Correction:
        c.status, c.reverted = "reverted", when

        def work(tx) -> None:
            self._change(tx, None, c.added, c.removed)  # restored facts carry no correction mark
            self._save(tx, c)

        self._write_tx(work)
        return c

    def prune_runs(self, older_than: str) -> int:
        limit = dt.datetime.fromisoformat(older_than)
        dropped = 0
        for run in self.runs():
            if dt.datetime.fromisoformat(run.started) < limit:
                self._run("run_delete", write=True, id=run.id)
                dropped += 1
        return dropped


def _node(row) -> Node | None:
    """The Node of an expand row (None for an unnamed entity)."""
    if row["literal"]:
        return Node(row["x"], row["value"], True, row["datatype"])
    return Node(row["x"], row["name"]) if row["name"] is not None else None


def _run_info(r: dict, full: bool = False) -> RunInfo:
    return RunInfo(
        id=r["id"], question=r["question"], started=r["started"], status=r["status"], method=r["method"],
        config=json.loads(r["config"]) if full and r.get("config") else {},
        answer=json.loads(r["answer"]) if r.get("answer") else [],
        stats=json.loads(r["stats"]) if full and r.get("stats") else {},
        finished=r.get("finished"),
        feedback=sorted((json.loads(f) for f in r.get("feedback") or []), key=lambda f: f.get("at", "")),
    )


def _retry_seconds() -> float:
    """How long transient errors are retried (with backoff): TOG_NEO4J_RETRY_SECONDS, default 15."""
    import os

    try:
        return max(0.0, float(os.environ.get("TOG_NEO4J_RETRY_SECONDS", "15")))
    except ValueError:
        return 15.0


def _reason(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class _FailureJournal:
    """Runs that failed while Neo4j was unreachable, as JSON lines in a local
    file (``$TOG_STATE_DIR``, default ``~/.local/state/tog``), keyed by the
    database's id; the next connection to that database marks them failed."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> list[dict]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a torn last line from a crash: nothing to mark
        return out

    def add(self, database: str, run_id: str, finished: str | None, error: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"database": database, "run": run_id, "finished": finished or _now(),
                                    "error": error}) + "\n")
        except OSError:
            pass  # nowhere to remember it: the run stays "running", never "done"

    def entries(self, database: str) -> list[dict]:
        return [e for e in self._read() if e.get("database") == database and e.get("run")]

    def remove(self, database: str) -> None:
        entries = self._read()
        rest = [e for e in entries if e.get("database") != database]
        if len(rest) == len(entries):
            return
        try:
            if rest:
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text("".join(json.dumps(e) + "\n" for e in rest), encoding="utf-8")
                os.replace(tmp, self.path)
            else:
                self.path.unlink()
        except OSError:
            pass


def _failure_journal() -> _FailureJournal:
    root = os.environ.get("TOG_STATE_DIR") or Path.home() / ".local" / "state" / "tog"
    return _FailureJournal(Path(root) / "neo4j-failed-runs.jsonl")


class _Chunk:
    """One chunk of a load, ready to write: node rows, edges by node id, name keys."""

    def __init__(self, entities, values, edges, keys, source, kind, known: dict[str, int],
                 cache: dict[str, int]) -> None:
        self.entities, self.values, self.edges, self.keys = entities, values, edges, keys
        self.source, self.kind = source, kind
        self.known, self.cache = known, cache  # ids this chunk uses / the load's cache
        self.nodes: dict[str, int] = {}

    def write(self, tx) -> None:
        nodes: dict[str, int] = {}
        for statement, rows in (("load_entities", self.entities), ("load_values", self.values)):
            for part in chunks(rows, WRITE_BATCH):
                ids = tx.run(cypher(statement), rows=part).single()["ids"]
                nodes.update((part[i][0], n) for i, n in ids)
        ids = {**self.known, **nodes}
        rows = [(ids[s], p, ids[o]) for s, p, o in self.edges]
        for part in chunks(rows, WRITE_BATCH):
            tx.run(cypher(f"load_edges_{self.kind}"), rows=part).consume()
        statement = "load_name_keys_create" if self.kind == "create" else "load_name_keys"
        for part in chunks(self.keys, WRITE_BATCH):
            tx.run(cypher(statement), rows=part, source=self.source).consume()
        self.nodes = nodes  # of the attempt that commits (the driver may retry)

    def committed(self) -> None:
        """Later chunks may address this chunk's nodes by id."""
        if len(self.cache) + len(self.nodes) > KNOWN_NODES:
            self.cache.clear()
        self.cache.update(self.nodes)


def _strip(checkpoint: dict) -> dict:
    """A checkpoint's values without the keys that address it."""
    return {k: v for k, v in checkpoint.items() if k not in ("source", "from")}


class _HashSet:
    """64-bit hashes of the rows a fresh load has handed to its writers, to
    skip repeats without asking the database: sorted numpy arrays, 8 bytes a
    row.  ``new`` stages a chunk's hashes; ``commit`` adds them as a run of
    their own, and runs merge when the newer is at least half the older, so
    a load of n rows sorts O(n log n) in all rather than all rows per chunk."""

    def __init__(self) -> None:
        import numpy as np

        self.np = np
        self.runs: list = []
        self.staged: list = []

    def new(self, rows: list[tuple]) -> list[tuple]:
        np = self.np
        if not rows:
            return []
        hashes = np.fromiter((hash(t) & HASH_MASK for t in rows), dtype=np.uint64, count=len(rows))
        _, first = np.unique(hashes, return_index=True)
        first.sort()
        fresh = np.ones(len(first), dtype=bool)
        for run in self.runs:
            at = np.searchsorted(run, hashes[first])
            at[at == len(run)] = 0
            fresh &= run[at] != hashes[first]
        keep = first[fresh]
        self.staged.append(hashes[keep])
        return [rows[i] for i in keep]

    def commit(self) -> None:
        np = self.np
        run = np.unique(np.concatenate(self.staged)) if self.staged else []
        self.staged = []
        if not len(run):
            return
        self.runs.append(run)
        while len(self.runs) > 1 and 2 * len(self.runs[-1]) >= len(self.runs[-2]):
            newer, older = self.runs.pop(), self.runs.pop()
            # two sorted runs: the stable sort (timsort) merges them in linear time
            self.runs.append(np.sort(np.concatenate((older, newer)), kind="stable"))


def browser_commands(run_id: str) -> str:
    """What to paste into Neo4j Browser to draw a run: the parameter, then
    the saved query (``cypher/run_browser.cypher``)."""
    return f":param run => {json.dumps(run_id)}\n\n{cypher('run_browser').strip()}\n"
