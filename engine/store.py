"""A store is four roles, composed: ``open_store(spec) -> Store``.

- ``kg`` (:class:`engine.graph.KnowledgeGraph`): reads, for the search;
- ``runs`` (:class:`RunLog`): reasoning runs as path nodes, with feedback;
- ``corrections`` (:class:`CorrectionLog`): changes to the KG with provenance;
- ``sink`` (:class:`BulkSink`): what loaders write through.

A role a backend lacks is ``None`` (a SPARQL endpoint takes no loads and no
corrections); the command that needs it gets one clear error from
``Store.need_*``.  Nothing in the engine asks a backend what it is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from engine.errors import StoreError
from engine.graph import Correction, Fact, KnowledgeGraph, PathRecord, RunInfo, RunTree

if TYPE_CHECKING:
    import pyoxigraph as ox


@runtime_checkable
class RunLog(Protocol):
    """Reasoning runs: a header and the path nodes of every beam step."""

    def start(self, run: RunInfo) -> None:
        """Record a new run (status ``running``)."""
        ...

    def record_step(self, run_id: str, paths: Sequence[PathRecord]) -> None:
        """Add a beam step's path nodes; a node written again takes its new kept mark."""
        ...

    def finish(self, run: RunInfo) -> None:
        """Record the run's status, answer, stats and end time."""
        ...

    def list(self) -> list[RunInfo]:
        """Every run's header with its config and feedback (no stats), oldest first."""
        ...

    def get(self, run_id: str) -> RunTree:
        """A whole run; :class:`engine.errors.UnknownRunError` when there is none."""
        ...

    def delete(self, run_ids: Sequence[str]) -> int:
        """Delete these runs (their headers and path nodes, nothing of the KG); how many went."""
        ...

    def feedback(self, run_id: str, entry: dict) -> None:
        """Keep a rating (``{"at", "rating", "comment"}``) with a run."""
        ...

    def learned(self) -> str | None:
        """The learned description file kept by ``tog learn --into-store`` (its TOML text), if any."""
        ...

    def keep_learned(self, text: str | None) -> None:
        """Keep a learned description file for every later question (None forgets it)."""
        ...


@runtime_checkable
class CorrectionLog(Protocol):
    """Corrections of the KG, each with its provenance, undone exactly by ``revert``."""

    def has_fact(self, fact: Fact) -> bool:
        ...

    def held(self, facts: Sequence[Fact]) -> set[Fact]:
        """Those of ``facts`` that are in the KG (a few statements for many)."""
        ...

    def apply(self, correction: Correction) -> Correction:
        """Make the change (removed facts go, added ones come) and record it, together."""
        ...

    def revert(self, correction: Correction, when: str) -> Correction:
        """Undo it: its added facts go, its removed facts return."""
        ...

    def list(self) -> list[Correction]:
        """Every correction, oldest first."""
        ...


@dataclass
class LoadCheckpoint:
    """How far the load of one source got; ``complete`` once it is all in.
    ``exact``: the load stopped at this checkpoint by itself (past its bad
    lines' limit), so the store holds nothing of the lines after it; a load
    killed, or failed while it wrote, may have written some of them."""

    path: str = ""
    lines: int = 0
    triples: int = 0
    skipped: int = 0
    names: int = 0
    complete: bool = False
    exact: bool = False
    source: str = ""  # the source's id (``loaders.base.source_id``), where ``BulkSink.loads`` tells it

    def to_dict(self) -> dict:
        return {"path": self.path, "lines": self.lines, "triples": self.triples, "skipped": self.skipped,
                "names": self.names, "complete": self.complete, "exact": self.exact}

    @classmethod
    def from_dict(cls, d: dict | None) -> LoadCheckpoint:
        d = d or {}
        return cls(str(d.get("path") or ""), int(d.get("lines") or 0), int(d.get("triples") or 0),
                   int(d.get("skipped") or 0), int(d.get("names") or 0), bool(d.get("complete")),
                   bool(d.get("exact")), str(d.get("source") or ""))


class ByteStream(Protocol):
    """What a native loader pulls N-Triples from: anything with ``read``."""

    def read(self, size: int = -1, /) -> bytes:
        ...


class NativeLoader(Protocol):
    """An engine's own bulk reader of N-Triples (Oxigraph's: it parses on
    every core), which loaders use for whole segments and whole files."""

    def load_stream(self, stream: ByteStream) -> None:
        """N-Triples pulled from ``stream`` in one call; ``SyntaxError`` (and
        nothing written) on a malformed line."""
        ...

    def load_path(self, path: Path) -> None:
        """A plain N-Triples file read by the engine itself; ``SyntaxError``
        (and nothing written) on a malformed line."""
        ...

    def names_done(self) -> None:
        """Every name of the load is queued: the name index may be built now
        (called from the loader's naming thread, before the commit)."""
        ...

    def seen(self, data: bytes) -> None:
        """N-Triples text (whole lines) that the loader hands over, or is about
        to, through ``load_stream`` or ``load_path``: the engine may look at what
        it writes (the embedded store samples it to find its hubs)."""
        ...


@runtime_checkable
class BulkSink(Protocol):
    """What a loader writes through.  Writes wait until ``commit``, which
    makes them durable together with the checkpoint and the names queued
    since; ``discard`` forgets what was queued after the last commit.
    Writes are set inserts: writing a piece twice adds nothing."""

    @property
    def chunk_bytes(self) -> int:
        """Bytes of lines a loader hands over per commit."""
        ...

    @property
    def native(self) -> NativeLoader | None:
        """The engine's own N-Triples reader, when it has one."""
        ...

    @property
    def max_term_bytes(self) -> int | None:
        """The longest IRI or literal (UTF-8 bytes) the store can keep, when it
        has a limit (Neo4j cannot index longer ids); a statement with a longer
        one is a bad line."""
        ...

    def resume(self, source: str, name_predicates: Sequence[str], *, force: bool = False,
               languages: Sequence[str] = ()) -> LoadCheckpoint:
        """Start (or resume) loading ``source``: remember the name
        predicates (and the languages of the names it indexes, for a store
        whose corrections need them), forget an earlier load of it when
        ``force``, and return its checkpoint."""
        ...

    def started(self, source: str, checkpoint: LoadCheckpoint) -> None:
        """A load of ``source`` goes on from ``checkpoint``: recorded as not
        finished (not complete, not exact) before anything is written, so a
        load stopped before its first checkpoint is known as one."""
        ...

    def begin(self) -> None:
        """A load starts (a sink may drop indexes or start writer threads)."""
        ...

    @property
    def replays(self) -> bool:
        """Whether this load, resumed, wants the triples of the lines before
        its checkpoint (``replay``), read again before it goes on."""
        ...

    def replay(self, quads: Iterable[ox.Quad]) -> None:
        """Triples of lines an earlier run of this load wrote (``replays``)."""
        ...

    def write(self, quads: Iterable[ox.Quad]) -> None:
        """Parsed triples (graph names are ignored)."""
        ...

    def write_ntriples(self, data: bytes) -> None:
        """N-Triples text; ``SyntaxError`` (and nothing kept) on a malformed line."""
        ...

    def names(self, pairs: Iterable[tuple[str, str]], source: str) -> int:
        """Queue (entity IRI, name key) pairs for the linking index; how many."""
        ...

    def show(self, rows: Iterable[tuple[str, int, str]], source: str) -> None:
        """Queue (entity IRI, rank, name) rows of English and untagged names,
        for a store that keeps each node's shown name apart (``common.name_rank``)."""
        ...

    def commit(self, source: str, checkpoint: LoadCheckpoint) -> None:
        """Make what was written durable and record the checkpoint."""
        ...

    def discard(self) -> None:
        """Forget what was written or queued since the last commit."""
        ...

    def end(self) -> None:
        """The load is over (finished or failed)."""
        ...

    def summarise(self, progress: bool = False) -> dict | None:
        """After the loads of a command: build what the store keeps so that no
        question reads a hub whole (the embedded store's hub summaries), if
        a load left it out of date. Returns how it was built (``seconds``,
        ``hubs``, ...), or None when there was nothing to build."""
        ...

    def loads(self) -> list[LoadCheckpoint]:
        """Every source loaded or partly loaded, with its checkpoint, by path."""
        ...

    @property
    def name_predicates(self) -> tuple[str, ...]:
        """The predicates whose literals name entities (what the loads were given)."""
        ...


@dataclass(frozen=True, slots=True)
class BrowserStyle:
    """A graph browser's style sheet: for Neo4j Browser, grass as JSON (its
    ``:style`` and its file drop read JSON as well as grass text).
    ``relations`` rules caption KG relationship types; ``skipped`` types no
    selector can name."""

    rules: dict[str, dict[str, str]]
    relations: int
    skipped: int

    def text(self) -> str:
        return _json_visible(json.dumps(self.rules, ensure_ascii=False, indent=1)) + "\n"

    def line(self) -> str:
        """The sheet on one line, as ``:style`` takes it typed or pasted."""
        return _json_visible(json.dumps(self.rules, ensure_ascii=False, separators=(",", ":")))


def _json_visible(text: str) -> str:
    """JSON text with every control or format character (which can only be
    inside its strings) written as a ``\\uXXXX`` escape: nothing raw reaches a
    terminal or a file, and JSON readers get the same strings."""
    import unicodedata

    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c != "\n" else c
                   for c in text)


class RunBrowser(Protocol):
    """A graph browser that draws runs (Neo4j Browser)."""

    def commands(self, tree: RunTree) -> str:
        """What to paste into the browser to draw the run."""
        ...

    def style(self) -> BrowserStyle:
        """The browser's style sheet for this store (runs and KG relations)."""
        ...


@runtime_checkable
class ServerWarmth(Protocol):
    """Whether a KG server was warmed up (``tog warm``) since it last started."""

    def cold_since(self) -> str | None:
        """When the server last started, if no warm-up followed (None: warmed, or it cannot tell)."""
        ...

    def warmed(self) -> None:
        """Keep that a warm-up followed the server's last start."""
        ...


class MissingRoleError(StoreError):
    """The store lacks the role a command needs (loads on a read-only endpoint, say)."""


@dataclass
class Store:
    """One opened store: its roles and what closes it.  ``name`` is safe to
    print (no credentials); ``absent`` may say, per role (``sink``, ``runs``,
    ``corrections``), why the store lacks it."""

    name: str
    kg: KnowledgeGraph
    runs: RunLog | None = None
    corrections: CorrectionLog | None = None
    sink: BulkSink | None = None
    browser: RunBrowser | None = None
    warmth: ServerWarmth | None = None  # a server's: whether it was warmed up since it started
    # a server's: None, or how a load into it that began has not finished: "running", or "stopped"
    # (the embedded store builds what such a load left undone in its first question instead: OxigraphKG.ready)
    unfinished_load: Callable[[], str | None] | None = None
    absent: dict[str, str] = field(default_factory=dict)
    closers: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def need_sink(self) -> BulkSink:
        if self.sink is None:
            raise MissingRoleError(self.absent.get("sink") or f"{self.name} takes no loads")
        return self.sink

    def need_runs(self) -> RunLog:
        if self.runs is None:
            raise MissingRoleError(self.absent.get("runs") or f"{self.name} keeps no runs")
        return self.runs

    def need_corrections(self) -> CorrectionLog:
        if self.corrections is None:
            raise MissingRoleError(self.absent.get("corrections") or f"{self.name} cannot record corrections")
        return self.corrections

    def need_browser(self) -> RunBrowser:
        if self.browser is None:
            raise MissingRoleError(f"{self.name} has no graph browser to draw runs in; Neo4j stores do "
                                   "(`tog runs show --format html` draws a run from any store)")
        return self.browser

    def stats(self) -> dict:
        """What ``tog info`` shows: the KG's counts, its relations, the loads
        and the settings they were given, the corrections and the runs kept."""
        out = dict(self.kg.stats())
        out["relations"] = len(self.kg.relation_counts())
        if self.sink is not None:
            from loaders.base import position, resumable

            out["name predicates"] = list(self.sink.name_predicates)
            out["loads"] = [f"{c.path}: {c.triples:,} triples read, {c.names:,} names, {c.skipped:,} lines skipped, "
                            + ("complete" if c.complete
                               else f"stopped after {position(c.path, c.lines)} (a re-run resumes)"
                               if resumable(c.path, c.source)
                               else f"stopped after {position(c.path, c.lines)} (the file has changed or gone since: "
                                    "a load of it now is a new one)")
                            for c in self.sink.loads()]
        if self.corrections is not None:
            kinds = {"active": 0, "reverted": 0, "no-op": 0}
            for c in self.corrections.list():
                kind = ("no-op" if not (c.added or c.removed or c.named) else
                        "reverted" if c.status == "reverted" else "active")
                kinds[kind] += 1
            out["corrections"] = ", ".join(f"{n:,} {k}" for k, n in kinds.items())
        if self.runs is not None:
            out["runs"] = len(self.runs.list())
        return out

    def close(self) -> None:
        while self.closers:
            self.closers.pop()()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(spec: str | Path, *, create: bool = False, read_only: bool = False) -> Store:
    """The store named by a ``--store`` value: a Neo4j server for
    ``neo4j://`` / ``bolt://`` URIs (credentials from the URI or
    NEO4J_USER / NEO4J_PASSWORD, database from NEO4J_DATABASE), a remote
    SPARQL endpoint for ``sparql+http(s)://`` URLs, else the embedded
    Oxigraph store in the directory ``spec`` (made when ``create``;
    ``read_only``: a view beside the process that writes it)."""
    from engine.backends import NEO4J_SCHEMES, SPARQL_SCHEMES

    spec = str(spec)
    scheme = spec.split("://", 1)[0].lower() if "://" in spec else ""
    if scheme in NEO4J_SCHEMES:  # each backend is imported only when used
        from engine.backends.neo4j import open_neo4j

        return open_neo4j(spec, user=os.environ.get("NEO4J_USER"), password=os.environ.get("NEO4J_PASSWORD"),
                          database=os.environ.get("NEO4J_DATABASE"))
    if scheme in SPARQL_SCHEMES:
        from engine.backends.sparql import open_sparql

        return open_sparql(spec, read_only=read_only)
    if scheme:
        from engine.text import without_userinfo

        raise StoreError(f"unknown store {without_userinfo(spec)!r}: use a directory, neo4j://HOST:PORT, "
                         "bolt://HOST:PORT or sparql+http://HOST:PORT/sparql")
    from engine.backends.oxigraph import open_embedded

    return open_embedded(Path(spec), create=create, read_only=read_only)
