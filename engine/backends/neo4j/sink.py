"""What loaders write through into Neo4j (and, with ``csv_export.py``, into
the CSV files of its offline importer).

The loader hands over parsed triples and name keys; they are written at the
next ``commit`` as a chunk: in transactions small enough for the server's
memory (``TX_MEMORY``), the last with a record of the lines they came from.
``WRITERS`` chunks are written at once (the server's commit work is
single-threaded per transaction), so they may commit out of order: each
writes a ``TogLoadPart`` for its lines, and ``resume`` continues after the
parts that follow the last checkpoint without a gap.  A killed load thus
resumes after its last committed prefix; chunks past a gap, or whose last
transaction never committed, are written again, which adds nothing: a load
that creates its edges (into a database without any, as their only writer)
also writes, with each chunk's first transaction, a ``TogLoadReach`` of its
last line, and its re-run merges the lines up to the furthest before it
creates again. Whether a load is the edges' only writer rests on the list of
loads running (``_Running``), where a killed load is told from a running one
by a lock its open transaction holds.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections import ChainMap, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from functools import partial
from queue import SimpleQueue
from typing import Any

import pyoxigraph as ox

from engine.backends.common import chunks, merged_sample, name_rank, sample_hash, term_too_long
from engine.backends.neo4j.session import Neo4jSession
from engine.errors import StoreError
from engine.graph import stored_literal, stored_text
from engine.queries import cypher, cypher_name, render_cypher
from engine.store import LoadCheckpoint

log = logging.getLogger("tog")

WRITE_BATCH = 20_000  # rows per write statement when loading
WRITERS = 2  # chunk transactions in flight while loading
# What a load's transaction may hold of the server's memory while it runs,
# by the estimate below: a chunk past it is written in several transactions
# (its checkpoint with the last). Committing takes more: a transaction of
# 100 MB of edges of a 10M-triple graph peaked at 1.1 GB while it closed
# (SHOW TRANSACTIONS), where the limit of all transactions at once
# (dbms.memory.transaction.total.max, 70% of the heap) is 1.34 GiB with the
# launcher's 2 GiB heap; a 16 MB chunk in one transaction was refused at 10M.
# A server that refuses one anyway has the budget halved.
TX_MEMORY = 48 << 20
# Edges between hubs take five to ten times the estimate when they commit
# (24,000 edges of a 100k-triple synthetic graph needed more than 128 MB). A
# server that caps one transaction's memory (db.memory.transaction.max) gets
# transactions of a sixteenth of its cap: against 128 MB, a 1M-triple load
# with 48 MB had nine refused (26.4-36.0 s), with 8 MB none (23.2-28.1 s).
# Without a cap, 48 MB: 8 MB took 351.0 s for 10M triples, against 304.6.
CAP_SHARE = 16
# Bytes of transaction state per row, by statement: Neo4j 5.26's own
# estimate (estimatedUsedHeapMemory) for 20,000 rows of each, rounded up;
# load_name_keys also holds its rows to group them (PROFILE: 10.3 MB for
# 40,000). A chunk of 16 MB of name lines is 160k new entities and name
# keys: about 640 MB.
ROW_MEMORY = {"load_entities": 2600, "load_values": 2600, "load_edges_create": 1300, "load_edges_merge": 1300,
              "load_name_keys_create": 1400, "load_name_keys": 1700}
# what a server says when a transaction would pass its memory limits (of all
# transactions at once; of one)
MEMORY_REFUSALS = {"Neo.TransientError.General.MemoryPoolOutOfMemoryError",
                   "Neo.ClientError.General.TransactionOutOfMemoryError"}
# what a server says to the one of two transactions waiting for each other's locks that it rolls back
DEADLOCK = "Neo.TransientError.Transaction.DeadlockDetected"
LOAD_REFUSALS = MEMORY_REFUSALS | {DEADLOCK}  # what a load's transaction hands back at once (``_write_chunk``)
KNOWN_NODES = 2_000_000  # node ids a load remembers (then it starts over)
HASH_MASK = (1 << 64) - 1
CHUNK_BYTES = 16 << 20  # bytes of lines written (and checkpointed) per chunk, in transactions of TX_MEMORY
# Neo4j's range indexes (the unique ids of entities and values) refuse keys over
# about 8 KB ("Property value is too large to index"): longer terms are bad lines.
MAX_TERM_BYTES = 8000
KEEP_MAX = 100_000  # kept crowded-pair samples a load follows (past that it forgets them all)
NOTED_MAX = 100_000  # neighbours of kept pairs a load notes (past that it forgets their samples)
APPLY_SAMPLES = 25  # kept samples a load's end merges (or drops) a transaction: up to SAMPLE_KEEP ids each
TOUCHED_MAX = 500_000  # entities a load follows for its biggest pairs (past that, the whole KG's are looked at)
PENDING = "samples_pending"  # setting: a load began and has not ended (its end merges or forgets the samples)
# setting: the source whose load created every KG edge (a load into a database without
# edges), until it completes or another load or a correction writes edges; its re-run
# after a kill creates edges too (``Neo4jSink._decide_writes``)
SOLE_LOAD = "sole_load"
REACH_ALL = 1 << 62  # the reach of a chunk whose lines are not known (a stream format's): all of them
# settings whose nodes are the locks of a load's writers (``Neo4jSink._decide_writes``)
WRITER_KEYS = tuple(f"load_writer_{n}" for n in range(WRITERS))
# How long a load waits for the lock of another load listed as running before
# it counts that load as running (``running_loads``): a killed load's lock is
# free at once, and a running load's never is, so the wait only has to outlast
# a busy server's taking of a free lock.
PROBE_SECONDS = 1.0
# what a server says to a transaction that waited for a lock past its timeout
LOCK_WAITED = {"Neo.ClientError.Transaction.LockClientStopped",
               "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
               "Neo.ClientError.Transaction.TransactionTimedOut"}


def literal_parts(term: ox.Literal) -> list:
    """[id, value, datatype, language, sample key] of a literal, as stored on
    a Value node: in the form the other stores give it back (``stored_literal``)."""
    term = stored_literal(term)
    return [str(term), term.value, term.datatype.value if term.datatype else None, term.language,
            sample_hash(str(term))]


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
                name_rows.append([s.value, stored_text(o), name_rank(o.language, order[p])])
                continue
            parts = literal_parts(o)
            value_rows[parts[0]] = parts
            value_edges.append((s.value, p, parts[0]))
        elif isinstance(o, ox.NamedNode):
            entities.add(o.value)
            edges.append((s.value, p, o.value))
    return entities, name_rows, value_rows, edges, value_edges


def edges_statement(statement: str, rows: Sequence[tuple[str, str, str]],
                    ids: Mapping[str, int]) -> tuple[str, list[tuple]]:
    """The text and parameter rows (by node id) of a load step that writes
    ``rows`` of edges. A merge's rows are of one relation, which its text
    names (load_edges_merge.cypher), so they carry none."""
    if statement == "load_edges_merge":
        return render_cypher(statement, type=cypher_name(rows[0][1])), [(ids[s], ids[o]) for s, _, o in rows]
    return cypher(statement), [(ids[s], p, ids[o]) for s, p, o in rows]


def load_budget(session: Neo4jSession) -> int:
    """The memory a load's transaction may take by ROW_MEMORY: TX_MEMORY, or
    a CAP_SHARE-th of the server's cap on one transaction if that is less."""
    try:
        rows = session.run("tx_memory_cap")
    except StoreError:  # not allowed to read the settings
        return TX_MEMORY
    cap = byte_size(rows[0]["value"]) if rows else 0
    return min(TX_MEMORY, cap // CAP_SHARE) if cap else TX_MEMORY


def byte_size(value: str) -> int:
    """Bytes of a Neo4j memory setting's value ("0B", "128.00MiB", "2g"); 0 if unreadable."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kmgt]?)(?:i?b)?\s*", value.lower())
    if m is None:
        return 0
    try:
        return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " "))
    except ValueError:
        return 0


class PendingWrites:
    """The loader's side shared by the Neo4j writers: parsed triples and name
    keys wait in memory until the next checkpoint writes them."""

    _pending: list[ox.Quad]
    _pending_names: list[tuple[str, str, str]]

    @property
    def name_predicates(self) -> tuple[str, ...]:
        raise NotImplementedError

    native = None  # no engine-side bulk reader: triples are parsed here
    max_term_bytes = MAX_TERM_BYTES
    replays = False

    def replay(self, quads: Iterable[ox.Quad]) -> None:
        """Nothing to note (``Neo4jSink.replay``)."""

    def write_ntriples(self, data: bytes) -> None:
        """Parse N-Triples bytes (``SyntaxError`` on a bad line or a term too
        long to index, and nothing kept) and queue the triples for the next commit."""
        quads = list(ox.parse(data, ox.RdfFormat.N_TRIPLES))  # all or nothing
        names = self.name_predicates
        if len(data) > MAX_TERM_BYTES and any(term_too_long(q, MAX_TERM_BYTES, names) for q in quads):
            raise SyntaxError("a term too long for Neo4j to index")  # the loader retries line by line
        self._pending.extend(quads)

    def names(self, pairs: Iterable[tuple[str, str]], source: str) -> int:
        rows = [(k, e, source) for e, k in pairs if k]
        self._pending_names.extend(rows)
        return len(rows)

    def show(self, rows: Iterable[tuple[str, int, str]], source: str) -> None:
        """Nothing to queue: a node's shown name is a property, the best of its
        name triples (all of them, as they are written: ``split_quads``)."""

    def discard(self) -> None:
        self._pending.clear()
        self._pending_names.clear()


class Neo4jSink(PendingWrites):
    """``BulkSink`` of a Neo4j database."""

    chunk_bytes = CHUNK_BYTES

    def __init__(self, session: Neo4jSession) -> None:
        self.session = session
        self._pending: list[ox.Quad] = []
        self._pending_names: list[tuple[str, str, str]] = []
        self._fresh = False  # the load CREATEs its name keys too (a database without entities)
        self._creates = False  # the load CREATEs its edges (``_decide_writes``)
        self._switching = threading.Lock()  # a writer that finds it may no longer create
        self._failed = False  # the load failed (``discard``): ``end`` keeps that error, not its own
        self._empty = False  # the database had no entities when the load began
        self._mark = "null"  # the load's sole-writer mark (``SOLE_LOAD``)
        self._pending_before = False  # a load had begun and not ended when this one began
        self._running: _Running | None = None  # this load's entry among the loads running
        self._slots: SimpleQueue[str] = SimpleQueue()  # the writers' locks not held (WRITER_KEYS)
        for key in WRITER_KEYS:
            self._slots.put(key)
        self._seen: _HashSet | None = None  # hashes of the edges this load wrote (fresh loads only)
        self._seen_keys: _HashSet | None = None  # ... and of its name keys
        self._writers: ThreadPoolExecutor | None = None  # chunk transactions of a load
        self._inflight: deque[Future] = deque()
        self._from: dict[str, int] = {}  # source -> lines of its last checkpoint handed over
        self._source = ""  # the source being loaded (``resume``)
        self._merge_below = 0  # a re-run of a load that created edges merges the lines before this
        self.replays = False  # ... and wants the triples before its checkpoint (``replay``)
        self._node_ids: dict[str, int] = {}  # entity -> node id, from this load's committed chunks
        self._notes: _SampleNotes | None = None  # what the load wrote of the pairs of kept samples
        self.samples_merged = 0  # samples the loads since the last ``summarise`` merged their edges into
        # entities the loads since the last ``summarise`` wrote edges of (None: too many to
        # follow, a fresh database, or the biggest pairs were not all sampled before: all of them)
        self._touched: set[str] | None = set()
        self._began = False  # whether a load began since the last ``summarise`` (a finished file's does not)
        self._gate = _Gate()  # the writers' transactions, side by side or one alone
        self.tx_memory = 0  # a load's transaction budget (``load_budget``); halved when the server refuses one

    def resume(self, source: str, name_predicates: Sequence[str], *, force: bool = False,
               languages: Sequence[str] = ()) -> LoadCheckpoint:
        self.session.add_name_predicates(name_predicates)
        self._source = source
        if force:
            self.session.run("load_forget", write=True, source=source)
            self.session.run("load_sole_end", write=True, source=source, key=SOLE_LOAD, value=json.dumps(source))
            self._from[source] = 0
        return LoadCheckpoint.from_dict(self._checkpoint(source))

    def started(self, source: str, checkpoint: LoadCheckpoint) -> None:
        # (``resume`` joined the parts that follow on; those that do not are written again)
        self.session.run("load_checkpoint_set", write=True, source=source, values=checkpoint.to_dict())

    def _checkpoint(self, source: str) -> dict:
        row = self.session.run("load_checkpoint_get", source=source)[0]
        done = _joined(row["checkpoint"], row["parts"])
        if row["parts"]:
            self.session.run("load_checkpoint_set", write=True, source=source, values=done)
        self._from[source] = done.get("lines", 0)
        return done

    def loads(self) -> list[LoadCheckpoint]:
        return [LoadCheckpoint.from_dict({**_joined(r["checkpoint"], r["parts"]), "source": r["source"]})
                for r in self.session.run("loads_list")]

    @property
    def name_predicates(self) -> tuple[str, ...]:
        return self.session.name_predicates

    def begin(self) -> None:
        from engine.backends.neo4j.kg import BIG_PAIRS, load_end_state

        try:
            self._decide_writes()
            self._notes = self._follow_samples()
            if self._empty or load_end_state(self.session) != "made":
                self._touched = None  # the load's end looks at the whole KG, not only at what it touched
            self.session.run("setting_set", write=True, key=BIG_PAIRS, value=json.dumps("pending"))
            self._began = True
            if not self.tx_memory:
                self.tx_memory = load_budget(self.session)
        except BaseException:  # (a load that did not begin has no end)
            self._release_running()
            raise
        # Name keys have no unique constraint, so two chunks in flight could
        # both MERGE one: each key goes to one chunk, whatever the database.
        self._seen_keys = _HashSet()
        self._writers = ThreadPoolExecutor(WRITERS, thread_name_prefix="tog-neo4j-load")

    def _decide_writes(self) -> None:
        """Whether this load CREATEs its edges (checking for repeats within
        the load in memory), which is many times faster than MERGE on hubs,
        or MERGEs every edge: decided in one transaction that holds every
        writer's lock (``load_writers_lock``), so that no load transaction
        that creates edges is in flight meanwhile.

        A load creates when the KG has no edge (a new database, or one that
        holds only names) and no other load is running (``_Running``: a load
        killed outright is not). It then marks itself the edges' only writer
        (``SOLE_LOAD``). The re-run of a killed load that still holds the
        mark creates too, when no other load runs: it is handed the triples
        of the lines before its checkpoint (``replay``) to drop their
        repeats, MERGEs up to the furthest line a transaction of the killed
        run wrote, and CREATEs after. Any other load MERGEs, and clears a mark
        it finds: a load that holds it then merges from its next transaction
        on (``_write_chunk``)."""
        mine = self._mark = json.dumps(self._source or None)
        got: dict[str, Any] = {}
        running = self._running = _Running(self.session)
        running.hold(self._source)
        running_loads(self.session, running.token)  # (the entries of killed loads go)

        def decide(tx) -> None:
            tx.run(cypher("load_writers_lock"), keys=list(WRITER_KEYS)).consume()
            entities = tx.run(cypher("kg_entities")).single()["n"]
            edges = tx.run(cypher("kg_edges")).single()["n"] if entities else 0
            mark, pending = (_setting(tx, key) for key in (SOLE_LOAD, PENDING))
            # (one that began since the probe is running, or was killed a moment ago: either way, merge)
            others = bool(tx.run(cypher("load_runs_other"), token=running.token).data())
            own = mark == mine and mine != "null"
            if edges == 0 and not others:  # (a mark found is a killed load's, which wrote no edge)
                how, reach = "create", 0
                tx.run(cypher("load_sole_begin"), key=SOLE_LOAD, value=mine).consume()
            elif own and not others:
                how, reach = "resume", tx.run(cypher("load_reach_get"), source=self._source).single()["lines"]
            else:
                how, reach = "merge", 0
                if mark not in (None, "null"):  # another source's load wrote edges: from now on, two writers
                    tx.run(cypher("setting_set"), key=SOLE_LOAD, value="null").consume()
            tx.run(cypher("setting_set"), key=PENDING, value="true").consume()
            got.update(entities=entities, edges=edges, how=how, reach=reach, pending=pending == "true")

        self.session.write_tx(decide)
        self._empty = got["entities"] == 0
        self._creates = got["how"] != "merge"
        self._fresh = self._empty and self._creates  # its name keys are new too
        self._seen = _HashSet() if self._creates else None
        self._merge_below, self.replays = got["reach"], got["how"] == "resume"
        self._pending_before = got["pending"]
        if got["how"] == "merge" and not got["edges"]:
            log.info("another load into this database is running: this load merges every edge rather than "
                     "create them, which is slower")

    def end(self) -> None:
        self._pending.clear()
        self._pending_names.clear()
        self.session.changed()
        if self._writers is not None:
            # Chunks still in flight belong to a load that failed: let them
            # finish (each commits with its part, or not at all) and keep
            # that failure as the one reported.
            for future in self._inflight:
                future.exception()
            self._inflight.clear()
            self._writers.shutdown()
            self._writers = None
        self._fresh = self._creates = self.replays = False
        self._seen = self._seen_keys = None
        self._node_ids = {}
        notes, self._notes = self._notes, None
        failed, self._failed = self._failed, False
        try:
            if notes is None:  # the samples the load did not follow, and those questions made meanwhile
                self.session.run_batched("summaries_clear")
                self.session.run("setting_set", write=True, key=PENDING, value="false")
            else:
                notes.apply(self.session)
                self.session.run_batched("schema_clear")  # (what questions made of a half-loaded KG)
                self.samples_merged += notes.merged
        except StoreError:
            # A load that failed reports its own error (its re-run clears them); a
            # load that did not fails here, and ``BIG_PAIRS`` stays pending, so
            # the first question makes what the end of a stopped load would.
            if not failed:
                raise
        finally:
            self._release_running()

    def discard(self) -> None:
        super().discard()
        self._failed = True  # (``end`` follows: its errors are not the load's)

    def _release_running(self) -> None:
        running, self._running = self._running, None
        if running is not None:
            running.release()

    def _follow_samples(self) -> _SampleNotes | None:
        """The look-ahead schema is forgotten (it is remade when needed); the
        kept crowded-pair samples are followed, to be merged with what the
        load writes when it ends (``_SampleNotes``), unless there are more
        than KEEP_MAX or a load that began before never ended: then the
        load's end forgets them and samples every big pair again. Either way
        they stay until then: questions meanwhile read them as they were
        rather than have the server sort a hub's pair. ``PENDING`` says a
        load began and has not ended, so the next load does not follow
        samples that may not match the KG."""
        session = self.session
        session.run_batched("schema_clear")
        kept = session.run("summaries_count")[0]["samples"]
        followed = bool(kept) and kept <= KEEP_MAX and not self._pending_before  # (set now: ``_decide_writes``)
        if not followed:
            if kept:  # the big pairs of hubs the load does not touch lose theirs too: its end samples them all
                self._touched = None
            return None
        return _SampleNotes({row["key"] for row in session.run("samples_kept")})

    def summarise(self, progress: bool = False) -> dict | None:
        """Little to build: a hub's relations and degrees come from Neo4j's
        own degree store, samples and the schema are made when first needed,
        except the samples of pairs past SORT_MAX edges, which the server
        sorts now (around the entities the loads wrote edges of, or all).
        Says how many of those were made and how many kept samples the loads
        since the last call merged their edges into (None if neither)."""
        from engine.backends.neo4j.kg import SORT_MAX, Neo4jKG

        merged, self.samples_merged = self.samples_merged, 0
        touched, self._touched = self._touched, set()
        began, self._began = self._began, False
        if not began:
            # every file was loaded before, so nothing is new; but a load that stopped in its end
            # left that end's work, which this one does as a question would (unless a load runs)
            kg = Neo4jKG(self.session)
            started, before = time.perf_counter(), kg.made["crowded_pairs"]
            kg.load_end_made(progress=progress)
            made = kg.made["crowded_pairs"] - before
            return {"big_pairs_made": made, "big_pairs_seconds": round(time.perf_counter() - started, 1),
                    "sort_max": SORT_MAX} if made else None
        big = Neo4jKG(self.session).sample_big(None if touched is None else sorted(touched), progress=progress)
        out = {**big, "samples_merged": merged} if merged or big["big_pairs_made"] else {}
        return out or None

    def write(self, quads: Iterable[ox.Quad]) -> None:
        """Quads wait for the next ``commit``, which writes them with its
        checkpoint (every loader commits each batch it writes: a chunk
        written apart from its checkpoint, on the other writer, could commit
        after it, or never, and a re-run would skip it)."""
        self._pending.extend(quads)

    def replay(self, quads: Iterable[ox.Quad]) -> None:
        """Triples of the lines before the checkpoint of a load that ``replays``:
        their edges are noted as written, so that a repeat later in the file is
        not created again."""
        assert self._seen is not None
        _, _, _, edges, value_edges = split_quads(quads, self.session.name_predicates)
        self._seen.new(edges + value_edges)
        self._seen.commit()

    def commit(self, source: str, checkpoint: LoadCheckpoint) -> None:
        self._flush((source, checkpoint.to_dict()))

    def _flush(self, checkpoint: tuple[str, dict] | None) -> None:
        quads, self._pending = self._pending, []
        names, self._pending_names = self._pending_names, []
        source, values = checkpoint if checkpoint is not None else ("", {})
        last = checkpoint is not None and bool(values.get("complete"))
        start = self._from.get(source or self._source, 0)  # (without a checkpoint: the chunk's so far)
        # the lines a killed run may have written are merged (``begin``)
        chunk = self._chunk_writer(quads, names, merge=start < self._merge_below)
        if checkpoint is not None and not last:
            self._from[source] = values.get("lines", 0)
        # (the last chunk's re-run has no line after it: it merges all it writes)
        reach = values.get("lines", REACH_ALL) if checkpoint is not None and not last else REACH_ALL

        def reached(tx) -> None:  # with the chunk's first transaction to commit, when the load creates edges
            tx.run(cypher("load_reach"), source=self._source, lines=reach).consume()

        def record(tx) -> None:  # with the chunk's last transaction
            if last:
                tx.run(cypher("load_checkpoint_set"), source=source, values=values).consume()
                tx.run(cypher("load_sole_end"), source=source, key=SOLE_LOAD, value=json.dumps(source)).consume()
            elif checkpoint is not None:
                tx.run(cypher("load_part_add"), source=source, values=values, **{"from": start}).consume()

        def commit() -> None:
            self._write_chunk(chunk, record, reached if self._seen is not None else None)
            chunk.committed()
            if last and self._notes is not None:
                self._notes.complete = True

        if self._writers is None or last:  # the final checkpoint follows every part
            self._wait(0)
            commit()
        else:
            self._wait(WRITERS - 1)
            self._inflight.append(self._writers.submit(commit))

    def _write_chunk(self, chunk: _Chunk, record: Callable[[Any], None],
                     first: Callable[[Any], None] | None = None) -> None:
        """``chunk`` in transactions of at most ``tx_memory`` (by ROW_MEMORY),
        ``record`` in the last, ``first`` in each until one has committed. A
        transaction the server refuses for lack of memory is split in two and
        each written on its own, and the budget is halved for the rest of the
        load. A transaction the server rolled back in a deadlock with the
        load's other writer is written again alone: two writers on the same
        hubs can deadlock again and again (a resumed 1M-triple load, merging,
        failed that way after the driver's 15 s of retries). Whatever
        committed of a chunk whose last transaction never did is written
        again by the re-run (which MERGEs those lines: it adds nothing twice).

        A transaction that creates edges or name keys first takes a writer's
        lock and checks that the load is still their only writer
        (``_decide_writes``); if another load or a correction has begun
        since, it and every later one MERGE instead."""
        todo = _transactions(chunk.steps(), self.tx_memory)
        alone = False
        while todo:
            steps = todo.pop(0)

            def work(tx, steps=steps, last=not todo, slot="") -> None:
                if slot:
                    mark = tx.run(cypher("load_writer_check"), slot=slot, key=SOLE_LOAD).single()["value"]
                    if mark != self._mark:
                        raise _NotSole(mark)
                if first is not None and not chunk.began:
                    first(tx)
                chunk.write(tx, steps)
                if last:
                    record(tx)

            try:
                with self._gate.alone() if alone else self._gate.shared():
                    slot = self._slots.get() if chunk.creates() else ""
                    try:
                        # (written alone, a deadlock with something else is the driver's to retry)
                        self.session.write_tx(partial(work, slot=slot),
                                              refusals=MEMORY_REFUSALS if alone else LOAD_REFUSALS)
                    except StoreError as e:  # refused on commit, or a deadlock's victim
                        if e.code in MEMORY_REFUSALS:
                            raise _Refused(str(e).split(" failed: ", 1)[-1]) from None
                        if e.code == DEADLOCK:
                            raise _Deadlocked from None
                        raise
                    finally:
                        if slot:
                            self._slots.put(slot)
                chunk.done()
                alone = False
            except _NotSole as e:
                if e.args[0] not in (None, "null"):  # another load took this one for killed, and creates
                    self.session.run("load_writers_share", write=True, keys=list(WRITER_KEYS), key=SOLE_LOAD)
                with self._switching:  # (both writers may meet the mark: one says so)
                    told, self._creates, self._fresh = self._creates, False, False
                if told:  # (the chunks already cut switch as this one does)
                    log.info("another load or a correction began writing edges: this load merges its edges "
                             "from here on")
                chunk.kind, chunk.new_keys = "merge", False
                todo = _transactions(_merging([step for tx in [steps, *todo] for step in tx]), self.tx_memory)
            except _Deadlocked:
                log.info("a load transaction deadlocked with the load's other writer: writing it again alone")
                todo.insert(0, steps)
                alone = True
            except _Refused as e:
                cost = _memory(steps)
                if sum(len(rows) for _, rows in steps) <= 1:
                    raise StoreError(f"Neo4j at {self.session.uri} refused a load transaction of one row for lack "
                                     f"of memory ({e}); give the server more heap (server.memory.heap.max_size) or "
                                     "a higher dbms.memory.transaction.total.max / db.memory.transaction.max") from None
                self.tx_memory = max(1, min(self.tx_memory, cost // 2))  # (one sized before a refusal halves no more)
                log.info(f"Neo4j refused a load transaction of about {cost >> 20} MiB for lack of memory: "
                         f"writing in transactions of {self.tx_memory >> 20} MiB or less")
                todo[:0] = _transactions(steps, max(1, cost // 2))

    def _wait(self, left: int) -> None:
        """Wait until at most ``left`` chunk transactions are in flight;
        raises the first failure."""
        while len(self._inflight) > left:
            done, _ = wait(self._inflight, return_when=FIRST_COMPLETED)
            for future in done:
                self._inflight.remove(future)
                future.result()

    def _chunk_writer(self, quads: list[ox.Quad], names: list[tuple[str, str, str]], *, merge: bool = False) -> _Chunk:
        """What writes ``quads`` and ``names`` (``_write_chunk``); its edges are
        MERGEd if ``merge`` or the load does not create edges.

        Repeats are filtered here, in the caller's thread and chunk order; the
        statements run in the writer's transactions: nodes first, whose ids
        then address the edges.  Entities whose node an earlier, committed
        chunk of this load returned are not looked up again, unless this
        chunk names them."""
        entities, name_rows, value_rows, edges, value_edges = split_quads(quads, self.session.name_predicates)
        best: dict[str, list] = {}
        for row in name_rows:  # the chunk's best name per entity (of equal ranks, the lower text)
            if row[0] not in best or (row[2], row[1]) < (best[row[0]][2], best[row[0]][1]):
                best[row[0]] = row
        cache = self._node_ids
        known = {e: cache[e] for e in entities if e in cache and e not in best}
        entity_rows = [[*(best.get(e) or (e, None, None)), sample_hash(e)] for e in sorted(entities) if e not in known]
        edges += value_edges
        keys = [(k, e) for k, e, _ in names]
        if self._seen_keys is not None:
            keys = self._seen_keys.new(keys)
            self._seen_keys.commit()  # the next chunk's filter must know these, written or in flight
        if self._seen is not None:  # a load that creates edges: drop repeats, CREATE the rest
            edges = self._seen.new(edges)
            self._seen.commit()
        chunk = _Chunk(entity_rows, sorted(value_rows.values()), edges, keys, names[0][2] if names else "",
                       "create" if self._creates and not merge else "merge", known, cache,
                       new_keys=self._fresh)
        if self._notes is not None:
            chunk.noted = (self._notes, self._notes.chunk(edges))
        if self._touched is not None:
            self._touched.update(entities)
            if len(self._touched) > TOUCHED_MAX:
                self._touched = None
        return chunk


class _Chunk:
    """One chunk of a load, ready to write: node rows, edges by node id, name keys."""

    def __init__(self, entities, values, edges, keys, source, kind, known: dict[str, int],
                 cache: dict[str, int], *, new_keys: bool = False) -> None:
        self.entities, self.values, self.edges, self.keys = entities, values, edges, keys
        self.source, self.kind = source, kind  # kind: whether its edges are CREATEd or MERGEd
        self.new_keys = new_keys  # its name keys are known to be new (CREATEd)
        self.known, self.cache = known, cache  # ids this chunk uses / the load's cache
        self.nodes: dict[str, int] = {}  # the ids of the nodes it wrote, once committed
        self.attempt: dict[str, int] = {}  # ... and of the transaction being written
        self.noted: tuple[_SampleNotes, dict[str, list[str]]] | None = None  # its edges of kept pairs
        self.began = False  # one of its transactions committed

    def steps(self) -> list[Step]:
        """What the chunk writes, as (statement, rows) in order: its nodes,
        whose ids then address the edges, then the name keys."""
        keys = "load_name_keys_create" if self.new_keys else "load_name_keys"
        return ([("load_entities", part) for part in chunks(self.entities, WRITE_BATCH)]
                + [("load_values", part) for part in chunks(self.values, WRITE_BATCH)]
                + _edge_steps(self.kind, self.edges)
                + [(keys, part) for part in chunks(self.keys, WRITE_BATCH)])

    def creates(self) -> bool:
        """Whether it CREATEs edges or name keys."""
        return self.kind == "create" or self.new_keys

    def write(self, tx, steps: Sequence[Step]) -> None:
        """Some of ``steps()`` in the transaction ``tx`` (the driver may run
        it again): the nodes it writes are known to later ones once it commits."""
        from neo4j.exceptions import Neo4jError

        nodes: dict[str, int] = {}
        ids = ChainMap(nodes, self.nodes, self.known)
        try:
            for statement, rows in steps:
                if statement in ("load_entities", "load_values"):
                    got = tx.run(cypher(statement), rows=rows).single()["ids"]
                    nodes.update((rows[i][0], n) for i, n in got)
                elif statement.startswith("load_edges"):
                    text, params = edges_statement(statement, rows, ids)
                    tx.run(text, rows=params).consume()
                else:
                    tx.run(cypher(statement), rows=rows, source=self.source).consume()
        except Neo4jError as e:
            if e.code in MEMORY_REFUSALS:
                raise _Refused(e.message or str(e)) from None  # not retried as it is: split (``_write_chunk``)
            raise
        self.attempt = nodes

    def done(self) -> None:
        """One of its transactions committed."""
        self.began = True
        self.nodes.update(self.attempt)
        self.attempt = {}

    def committed(self) -> None:
        """Later chunks may address this chunk's nodes by id."""
        if len(self.cache) + len(self.nodes) > KNOWN_NODES:
            self.cache.clear()
        self.cache.update(self.nodes)
        if self.noted is not None:
            notes, found = self.noted
            notes.committed(found)


Step = tuple[str, Sequence]  # (statement, rows) of a load chunk


def _edge_steps(kind: str, edges: Sequence[tuple[str, str, str]]) -> list[Step]:
    """The steps that CREATE (``kind`` "create") or MERGE ``edges``."""
    if kind == "create":
        return [("load_edges_create", part) for part in chunks(edges, WRITE_BATCH)]
    by_type: dict[str, list] = defaultdict(list)  # a MERGE per relation: its type named in its text
    for edge in edges:
        by_type[edge[1]].append(edge)
    return [("load_edges_merge", part) for rows in by_type.values() for part in chunks(rows, WRITE_BATCH)]


def _merging(steps: Sequence[Step]) -> list[Step]:
    """``steps`` with their edges and name keys MERGEd rather than CREATEd
    (in their place: after the nodes they address)."""
    out: list[Step] = []
    edges: list[tuple[str, str, str]] = []
    at = None
    for statement, rows in steps:
        if statement == "load_edges_create":
            at = len(out) if at is None else at
            edges.extend(rows)
        else:
            out.append(("load_name_keys" if statement == "load_name_keys_create" else statement, rows))
    if at is not None:
        out[at:at] = _edge_steps("merge", edges)
    return out


def running_loads(session: Neo4jSession, but: str = "") -> int:
    """How many loads (but the one whose token is ``but``) are running.
    Each listed is asked for its lock, for up to PROBE_SECONDS: the entry
    of a load whose lock is free (it was killed) goes."""
    running = 0
    for row in session.run("load_runs_other", token=but):
        try:
            with session.driver.session(database=session.database) as probe, \
                    probe.begin_transaction(timeout=PROBE_SECONDS) as tx:
                tx.run(cypher("load_run_end"), token=row["token"]).consume()
                tx.commit()
        except session.nx.Neo4jError as e:
            if e.code not in LOCK_WAITED:
                raise session.error(e) from e
            running += 1
        except (session.nx.DriverError, OSError) as e:
            raise session.error(e) from e
    return running


class _Running:
    """A load's entry among the loads running (a ``TogLoadRun`` node),
    write-locked by a transaction the load holds open until its end. The
    server rolls that transaction back when the load's connection closes,
    as it does when its process is killed: a load that can take another's
    lock knows that one was killed, not running, with no clock or lease to
    renew. A load whose own hold is lost (a dropped connection, a server's
    transaction timeout) may be taken for killed by a load that begins:
    that one may then create edges, and the first load's next creating
    transaction finds its mark and makes both merge (``_write_chunk``)."""

    def __init__(self, session: Neo4jSession) -> None:
        self.session = session
        self.token = uuid.uuid4().hex
        self._held: tuple[Any, Any] | None = None  # (driver session, open transaction)

    def hold(self, source: str) -> None:
        session = self.session
        session.run("load_run_begin", write=True, token=self.token, source=source)
        held = None
        try:
            held = session.driver.session(database=session.database)
            self._held = (held, held.begin_transaction())
            self._held[1].run(cypher("load_run_hold"), token=self.token).consume()
        except (session.nx.DriverError, session.nx.Neo4jError, OSError) as e:
            if self._held is None and held is not None:  # (no transaction began: the session alone goes)
                held.close()
            self.release()
            raise session.error(e) from e

    def release(self) -> None:
        """The load ended: its hold and its entry go (if the connection is
        gone, the entry stays, unlocked, until another load asks for its lock: ``running_loads``)."""
        held, self._held = self._held, None
        try:
            if held is not None:
                held[1].close()  # (rolled back)
                held[0].close()
            self.session.run("load_run_end", write=True, token=self.token)
        except (StoreError, self.session.nx.DriverError, self.session.nx.Neo4jError, OSError):
            pass


class _Refused(Exception):
    """The server refused a load transaction for lack of memory."""


class _NotSole(Exception):
    """A load that created edges is no longer their only writer."""


class _Deadlocked(Exception):
    """The server rolled back a load transaction in a deadlock."""


class _Gate:
    """The load's writers' transactions run side by side (``shared``), except
    one written ``alone``, which waits for those running to end and holds
    back new ones until it ends."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.running = 0
        self.solo = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self.cond:
            self.cond.wait_for(lambda: not self.solo)
            self.running += 1
        try:
            yield
        finally:
            with self.cond:
                self.running -= 1
                self.cond.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        with self.cond:
            self.cond.wait_for(lambda: not self.solo)
            self.solo = True
            self.cond.wait_for(lambda: not self.running)
        try:
            yield
        finally:
            with self.cond:
                self.solo = False
                self.cond.notify_all()


def _memory(steps: Sequence[Step]) -> int:
    """The server's memory for ``steps`` in one transaction, by ROW_MEMORY."""
    return sum(ROW_MEMORY[statement] * len(rows) for statement, rows in steps)


def _transactions(steps: Sequence[Step], budget: int) -> list[list[Step]]:
    """``steps`` in order, in transactions of at most ``budget`` bytes by
    ROW_MEMORY, each filled before the next begins (a step split where it
    must; at least one row a transaction); no steps: one empty transaction
    (for the checkpoint)."""
    groups: list[list[Step]] = [[]]
    used = 0
    for statement, rows in steps:
        per_row, at = ROW_MEMORY[statement], 0
        while at < len(rows):
            room = (budget - used) // per_row
            if room < 1 and groups[-1]:
                groups.append([])
                used = 0
                continue
            part = rows[at:at + max(1, room)]
            groups[-1].append((statement, list(part)))
            used += per_row * len(part)
            at += len(part)
    return groups


class _SampleNotes:
    """What a load into a database with kept crowded-pair samples writes of
    their pairs: each kept pair's new neighbours, from the chunks that
    committed. When the load ends they are merged into the samples
    (``merged_sample``), a few a transaction (``apply``), after the samples
    questions made meanwhile are forgotten; the last records that the load
    is done with them (``PENDING``). A load that did not complete, or noted more than
    NOTED_MAX neighbours, forgets the samples of every kept pair it tried
    to write to instead."""

    def __init__(self, kept: set[str]) -> None:
        self.kept = kept  # sample ids (engine.backends.neo4j.kg.sample_id)
        self.tried: set[str] = set()  # kept pairs a chunk wrote to, committed or not
        self.noted: dict[str, set[str]] | None = {}
        self.count = 0
        self.complete = False  # its last checkpoint committed
        self.merged = 0
        self.lock = threading.Lock()  # chunks commit in the writers' threads

    def chunk(self, edges: Sequence[tuple[str, str, str]]) -> dict[str, list[str]]:
        """The kept pairs a chunk's ``edges`` (ids) write to, with their neighbours."""
        kept, found = self.kept, defaultdict(list)
        for s, p, o in edges:
            for key, neighbour in ((f"{s}\n{p}\nout", o), (f"{o}\n{p}\nin", s)):
                if key in kept:
                    found[key].append(neighbour)
        self.tried.update(found)
        return found

    def committed(self, found: dict[str, list[str]]) -> None:
        with self.lock:
            if self.noted is None:
                return
            self.count += sum(map(len, found.values()))
            if self.count > NOTED_MAX:
                self.noted = None
                return
            for key, neighbours in found.items():
                self.noted.setdefault(key, set()).update(neighbours)

    def apply(self, session: Neo4jSession) -> None:
        """When the load ends: the samples questions made meanwhile go (in
        small transactions), then the kept samples are merged, or dropped,
        ``APPLY_SAMPLES`` a transaction (each retried whole; a merge done
        twice is the same): a sample holds up to SAMPLE_KEEP ids, and a
        capped server refuses one transaction that rewrites hundreds.
        ``PENDING`` is cleared with the last, so an end cut short is a load
        that did not end: the next load forgets every sample, and until then
        the first question samples every big pair again (``BIG_PAIRS`` stays
        pending)."""
        from engine.backends.neo4j.kg import SAMPLE_KEEP

        session.run_batched("samples_drop_new", keep=sorted(self.kept))
        merging = self.complete and self.noted is not None
        written = [0]

        def write(keys: list[str], last: bool, tx) -> None:
            written[0] = 0
            if not merging:
                tx.run(cypher("sample_drop"), keys=keys).consume()
            else:
                assert self.noted is not None
                for row in tx.run(cypher("samples_get"), keys=keys).data():
                    entity, relation, direction = row["key"].split("\n")
                    counts = tx.run(render_cypher("pair_degree", type=cypher_name(relation)), e=entity).single()
                    sample = merged_sample(list(row["sample"]), row["degree"], self.noted[row["key"]], SAMPLE_KEEP)
                    tx.run(cypher("sample_save"), key=row["key"], degree=int(counts[direction]),
                           sample=sample).consume()
                    written[0] += 1
            if last:
                tx.run(cypher("setting_set"), key=PENDING, value="false").consume()

        keys = sorted(self.noted) if merging and self.noted is not None else sorted(self.tried)
        parts = list(chunks(keys, APPLY_SAMPLES)) or [[]]
        merged = 0
        for i, part in enumerate(parts):
            session.write_tx(partial(write, list(part), i == len(parts) - 1), refusals=MEMORY_REFUSALS)
            merged += written[0] if merging else 0
        self.merged = merged


def _setting(tx, key: str) -> str | None:
    """A setting's stored text (JSON) read in the transaction ``tx``; None if unset."""
    row = tx.run(cypher("setting_get"), key=key).single()
    return row["value"] if row else None


def _joined(checkpoint: dict | None, parts: list[dict]) -> dict:
    """A source's checkpoint with the parts written after it joined on in line
    order (a part that does not follow on is dropped: it is written again)."""
    done = _strip(checkpoint or {})
    by_start = {p["from"]: p for p in parts}
    at = done.get("lines", 0)
    while at in by_start:
        part = _strip(by_start.pop(at))
        done.update(part)
        at = part.get("lines", at)
    return done


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
