"""The embedded store's run log: each reasoning run is a named graph
``<urn:tog:run:ID>`` of path nodes (``tog:Path``) beside the KG.  The
SPARQL-endpoint backend keeps its runs in one of these, in a local store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pyoxigraph as ox

from engine.backends.common import natural
from engine.backends.oxigraph.database import Database
from engine.errors import StoreError, UnknownRunError
from engine.graph import PathRecord, RunInfo, RunTree, literal_term
from engine.queries import sparql

VOCAB = "urn:tog:vocab:"
RUN_PREFIX = "urn:tog:run:"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


def vocab(name: str) -> ox.NamedNode:
    return ox.NamedNode(VOCAB + name)


STEP_PATHS = 2_000  # path nodes a transaction (see OxigraphRunLog.record_step)
# a path node's predicates (made once: a question around a hub writes 1,800 path nodes)
PATH, DEPTH, AT, NAME, KEPT, LITERAL, ROOT, PARENT, RELATION, DIRECTION, VIA, SCORE = (vocab(n) for n in (
    "Path", "depth", "at", "name", "kept", "literal", "root", "parent", "relation", "direction", "via", "score"))


def _term(node_id: str, literal: bool) -> ox.NamedNode | ox.Literal:
    return literal_term(node_id) if literal else ox.NamedNode(node_id)


def _text(term: object) -> str:
    """The lexical form of a literal object (what the run log writes)."""
    return term.value if isinstance(term, ox.Literal) else str(term)


@contextmanager
def _writing(run_id: str, db: Database) -> Iterator[None]:
    """A run's write that the disk refuses (full, gone) as one line."""
    try:
        yield
    except OSError as e:
        raise StoreError(f"cannot write run {run_id} to {db.name}: {e.strerror or e}") from e


def _no_run(run_id: str) -> UnknownRunError:
    return UnknownRunError(f"no run {run_id!r} in this store (see `tog runs list`)")


class OxigraphRunLog:
    """``RunLog`` in the named graphs of an embedded store."""

    def __init__(self, db: Database) -> None:
        self.db = db
        # the path ids each run this process is writing has written: a search
        # writes new paths at each step, so only these can have kept flags to replace
        self._written: dict[str, set[str]] = {}

    def _graph(self, run_id: str) -> ox.NamedNode:
        try:
            return ox.NamedNode(RUN_PREFIX + run_id)
        except ValueError:
            raise _no_run(run_id) from None

    def start(self, run: RunInfo) -> None:
        self.db.writable()
        g = self._graph(run.id)
        with _writing(run.id, self.db):
            self.db.store.extend([
                ox.Quad(g, RDF_TYPE, vocab("Run"), g),
                ox.Quad(g, vocab("question"), ox.Literal(run.question), g),
                ox.Quad(g, vocab("started"), ox.Literal(run.started, datatype=ox.NamedNode(XSD + "dateTime")), g),
                ox.Quad(g, vocab("status"), ox.Literal(run.status), g),
                ox.Quad(g, vocab("method"), ox.Literal(run.method), g),
                ox.Quad(g, vocab("config"), ox.Literal(json.dumps(run.config, sort_keys=True)), g),
            ])
        self._written[run.id] = set()

    def record_step(self, run_id: str, paths: Sequence[PathRecord]) -> None:
        """Write a step's path nodes, ``STEP_PATHS`` at a time: a question of
        47,166 paths (``-n 10 -d 6 --max-candidates 1024`` around a hub) peaked
        at 793 MB with each step one transaction (0.5M quads), 674 MB so."""
        self.db.writable()
        g = self._graph(run_id)
        written = self._written.get(run_id)
        with _writing(run_id, self.db):
            for i in range(0, len(paths), STEP_PATHS):
                self._write_paths(run_id, g, paths[i:i + STEP_PATHS], written)

    def _write_paths(self, run_id: str, g: ox.NamedNode, paths: Sequence[PathRecord],
                     written: set[str] | None) -> None:
        store = self.db.store
        quads = []
        for p in paths:
            node = ox.NamedNode(f"{RUN_PREFIX}{run_id}/{p.id}")
            quads += [
                ox.Quad(node, RDF_TYPE, PATH, g),
                ox.Quad(node, DEPTH, ox.Literal(p.depth), g),
                ox.Quad(node, AT, _term(p.entity, p.literal), g),
                ox.Quad(node, NAME, ox.Literal(p.name), g),
                ox.Quad(node, KEPT, ox.Literal(p.kept), g),
                ox.Quad(node, LITERAL, ox.Literal(p.literal), g),
            ]
            if p.parent is None:
                quads.append(ox.Quad(g, ROOT, node, g))
            else:
                quads.append(ox.Quad(node, PARENT, ox.NamedNode(f"{RUN_PREFIX}{run_id}/{p.parent}"), g))
            if p.relation is not None:
                quads.append(ox.Quad(node, RELATION, ox.NamedNode(p.relation), g))
                quads.append(ox.Quad(node, DIRECTION, ox.Literal(p.direction or "out"), g))
            if p.via:
                quads.append(ox.Quad(node, VIA, ox.Literal(" ".join(p.via)), g))
            if p.score is not None:
                quads.append(ox.Quad(node, SCORE, ox.Literal(float(p.score)), g))
            # kept flags may change between steps (a path kept at depth 1 can be
            # dropped later): replace the old values of the nodes we rewrite.
            if written is None or p.id in written:  # (a run another opening started: look)
                for q in list(store.quads_for_pattern(node, KEPT, None, g)):
                    store.remove(q)
        store.extend(quads)
        if written is not None:
            written.update(p.id for p in paths)

    def finish(self, run: RunInfo) -> None:
        self.db.writable()
        self._written.pop(run.id, None)
        g = self._graph(run.id)
        store = self.db.store
        quads = [
            ox.Quad(g, vocab("status"), ox.Literal(run.status), g),
            ox.Quad(g, vocab("answer"), ox.Literal(json.dumps(run.answer)), g),
            ox.Quad(g, vocab("stats"), ox.Literal(json.dumps(run.stats, sort_keys=True)), g),
        ]
        if run.finished:
            quads.append(ox.Quad(g, vocab("finished"),
                                 ox.Literal(run.finished, datatype=ox.NamedNode(XSD + "dateTime")), g))
        with _writing(run.id, self.db):
            for pred in ("status", "answer", "stats", "finished"):
                for q in list(store.quads_for_pattern(g, vocab(pred), None, g)):
                    store.remove(q)
            store.extend(quads)
            self.db.flush_soon()  # (each write is in RocksDB's log already: see Database.flush_soon)

    def fail_interrupted(self) -> int:
        """Mark the runs still ``running`` as ``failed``: called when the store
        is opened for writing, which no other process can hold at the same time,
        so a run left running was cut off (a kill, a crash). Returns how many."""
        from engine.graph import utc_now

        store = self.db.store
        stale = 0
        for q in list(store.quads_for_pattern(None, vocab("status"), ox.Literal("running"), None)):
            g = q.graph_name
            if not isinstance(g, ox.NamedNode) or q.subject != g:
                continue
            store.remove(q)
            store.extend([
                ox.Quad(g, vocab("status"), ox.Literal("failed"), g),
                ox.Quad(g, vocab("finished"), ox.Literal(utc_now(), datatype=ox.NamedNode(XSD + "dateTime")), g),
            ])
            stale += 1
        if stale:
            self.db.flush()
        return stale

    def list(self) -> list[RunInfo]:
        feedback: dict[str, list[dict]] = {}
        for q in self.db.store.quads_for_pattern(None, vocab("feedback"), None, None):
            if isinstance(q.graph_name, ox.NamedNode):  # feedback lives in its run's graph
                feedback.setdefault(q.graph_name.value, []).append(json.loads(_text(q.object)))
        out = []
        for row in self.db.query(sparql("runs")):
            out.append(RunInfo(
                id=row["g"].value[len(RUN_PREFIX):],
                question=row["question"].value,
                started=row["started"].value,
                status=row["status"].value,
                method=row["method"].value,
                answer=json.loads(row["answer"].value) if row["answer"] is not None else [],
                finished=row["finished"].value if row["finished"] is not None else None,
                config=json.loads(row["config"].value) if row["config"] is not None else {},
                feedback=sorted(feedback.get(row["g"].value, []), key=lambda f: f.get("at", "")),
            ))
        return out

    def get(self, run_id: str) -> RunTree:
        g = self._graph(run_id)
        rows = self.db.query(sparql("run_header"), substitutions={ox.Variable("g"): g})
        if not rows:
            raise _no_run(run_id)
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
            feedback=sorted((json.loads(_text(q.object))
                             for q in self.db.store.quads_for_pattern(g, vocab("feedback"), None, g)),
                            key=lambda f: f.get("at", "")),
        )
        prefix = f"{RUN_PREFIX}{run_id}/"
        paths = []
        for row in self.db.query(sparql("run_paths"), substitutions={ox.Variable("g"): g}):
            at = row["at"]
            literal = row["literal"].value == "true"
            paths.append(PathRecord(
                id=row["path"].value[len(prefix):],
                depth=int(row["depth"].value),
                entity=str(at) if literal else at.value,
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

    def feedback(self, run_id: str, entry: dict) -> None:
        self.db.writable()
        g = self._graph(run_id)
        if not self.db.query(sparql("run_header"), substitutions={ox.Variable("g"): g}):
            raise _no_run(run_id)  # (its header only: a run's paths may be tens of thousands)
        self.db.store.add(ox.Quad(g, vocab("feedback"), ox.Literal(json.dumps(entry, sort_keys=True)), g))
        self.db.flush()

    def learned(self) -> str | None:
        return self.db.index.get("learned", None)

    def keep_learned(self, text: str | None) -> None:
        self.db.writable()
        self.db.index.set("learned", text)

    def delete(self, run_ids: Sequence[str]) -> int:
        self.db.writable()
        known = {r.id for r in self.list()}
        dropped = 0
        for run_id in run_ids:
            if run_id in known:
                self.db.store.remove_graph(self._graph(run_id))
                dropped += 1
        self.db.flush()
        return dropped
