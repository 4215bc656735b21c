"""The embedded store's files, shared by its roles.

A store is a directory:
- ``kg/``: the Oxigraph database.  The knowledge graph is its default graph;
  each reasoning run is a named graph ``<urn:tog:run:ID>`` of path nodes,
  corrections are records in ``<urn:tog:corrections>``;
- ``index.sqlite``: the entity-name index for linking, load checkpoints,
  settings (see ``name_index.py`` for why these are not in Oxigraph) and
  the summaries of hubs (``summaries.py``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

import pyoxigraph as ox

from engine.backends.oxigraph.name_index import NameIndex
from engine.backends.oxigraph.summaries import Summaries
from engine.errors import StoreBusyError, StoreError
from engine.graph import DEFAULT_NAME_PREDICATES, Meter

_FLUSH_LOCK = threading.Lock()  # see Database.flush
FLUSH_EVERY = 5.0  # seconds between the flushes of Database.flush_soon


def _drop_stale_views(views: Path) -> None:
    """Remove the snapshots (``Database._view``) of readers that are gone (a
    kill skips their close): their hard links would keep old files on disk."""
    import os
    import shutil

    if not views.is_dir():
        return
    for view in views.iterdir():
        pid = view.name.split("-", 1)[0]
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(view, ignore_errors=True)
        except (ValueError, PermissionError):
            continue


class Database:
    """The Oxigraph database and the SQLite side tables of one store
    directory (``path=None``: both in memory)."""

    def __init__(self, path: Path | None, *, create: bool = False, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only and path is not None
        if path is not None:
            kg_dir = path / "kg"
            if not kg_dir.exists():
                if not create:
                    raise StoreError(f"no store at {path}: create one with `tog load FILE --store {path}`")
                if path.exists() and (not path.is_dir() or any(path.iterdir())):
                    raise StoreError(f"{path} exists and is not a tog store; pick a new directory")
                try:
                    kg_dir.mkdir(parents=True)
                except OSError as e:
                    raise StoreError(f"cannot create a store at {path}: {e.strerror or e}") from e
        try:
            if path is None:
                self.store = ox.Store()
            elif self.read_only:  # a snapshot as of now, beside the process that writes
                self.store = self._view(path / "kg")
            else:
                self.store = ox.Store(str(path / "kg"))
                _drop_stale_views(path / "views")
        except OSError as e:
            if "lock" in str(e).lower():
                raise StoreBusyError(f"the store at {path} is in use by another process (an embedded store "
                                     "opens for writing in one process at a time; what only reads works "
                                     "beside it: runs list/show, info, entity, relations, ask and eval with "
                                     "--no-record)") from e
            raise StoreError(f"cannot open the store at {path}: {e}") from e
        self.index = NameIndex(path / "index.sqlite" if path is not None else None, read_only=self.read_only)
        # the summaries have a connection of their own: a load's names wait
        # uncommitted on the index's connection until its next checkpoint. A
        # read-only view reads the store's summaries and keeps what it makes
        # in memory.
        if path is None:
            summary_db = sqlite3.connect(":memory:", check_same_thread=False)
        elif self.read_only:
            summary_db = sqlite3.connect(f"{(path / 'index.sqlite').resolve().as_uri()}?mode=ro", uri=True,
                                         check_same_thread=False, timeout=60)
        else:
            summary_db = sqlite3.connect(str(path / "index.sqlite"), check_same_thread=False, timeout=60)
        self.summaries = Summaries(summary_db, persist=not self.read_only)
        self._name_predicates: tuple[str, ...] | None = None
        self.generation = 0  # one more after each load: what was asked of the KG once is asked again
        self._flushed = time.monotonic()

    _view_dir: Path | None = None

    def _view(self, kg: Path) -> ox.Store:
        """A read-only Oxigraph store over a snapshot of ``kg`` that the
        writing process cannot pull files from under: its immutable table
        files hard-linked, the small files that change (the manifest, the
        write-ahead log) copied, as RocksDB's own checkpoints do. The writer
        may delete a file between the listing and the link: then again."""
        import os
        import shutil
        import tempfile

        views = kg.parent / "views"
        views.mkdir(exist_ok=True)
        last: Exception | None = None
        for _ in range(8):
            view = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=views))
            try:
                for f in sorted(kg.iterdir(), key=lambda f: f.suffix != ".sst"):  # tables first, then the manifest
                    if f.name == "LOCK" or not f.is_file():
                        continue
                    if f.suffix in (".sst", ".blob"):
                        os.link(f, view / f.name)
                    else:
                        shutil.copyfile(f, view / f.name)
                store = ox.Store.read_only(str(view))
                self._view_dir = view
                return store
            except (OSError, RuntimeError) as e:  # a file went (compaction) or a manifest was cut mid-write
                last = e
                shutil.rmtree(view, ignore_errors=True)
                time.sleep(0.05)
        raise StoreError(f"cannot read {self.path} beside the process writing it ({last}); try again")

    @property
    def name(self) -> str:
        return str(self.path) if self.path is not None else "the in-memory store"

    def query(self, text: str, meter: Meter | None = None, columns: tuple[str, ...] | None = None,
              **kwargs) -> list:
        """A SPARQL query's solutions, counted on ``meter`` when given. With
        ``columns`` (its variables in their order, checked), they are to be
        read by place (``for e, p in ...``): reading a value by its
        variable's name costs about 0.5 µs, five times reading it by place,
        and the reads around hubs return hundreds of thousands of rows."""
        started = time.perf_counter()
        try:
            solutions = cast(ox.QuerySolutions, self.store.query(text, **kwargs))  # our queries are SELECTs
            if columns is not None and (got := tuple(v.value for v in solutions.variables)) != columns:
                raise RuntimeError(f"a query's columns are {got}, not {columns}")
            return list(solutions)
        finally:
            if meter is not None:
                meter.add(time.perf_counter() - started)

    def stream(self, text: str) -> Iterator[ox.QuerySolution]:
        """A SELECT's solutions one at a time, for a read too big to hold
        (the summaries' own; questions' reads are bounded and use ``query``)."""
        return iter(cast(ox.QuerySolutions, self.store.query(text)))

    def empty(self) -> bool:
        """Whether the KG holds no triple (read from the index's start, not counted)."""
        return next(iter(self.store.quads_for_pattern(None, None, None, ox.DefaultGraph())), None) is None

    def writable(self) -> None:
        """Raise :class:`StoreBusyError` in a read-only view (before any write)."""
        if self.read_only:
            raise StoreBusyError(f"the store at {self.path} is in use by another process, so this command only "
                                 "reads it and cannot write (ask with --no-record, or wait until it is done)")

    def flush(self) -> None:
        """``Store.flush`` one thread at a time: two RocksDB flushes racing on
        one database can hang forever (facebook/rocksdb#12094), which
        ``tog eval --concurrency`` did here once, in ``finish_run``."""
        if self.read_only:
            return
        with _FLUSH_LOCK:
            self.store.flush()
            self._flushed = time.monotonic()

    def flush_soon(self) -> None:
        """``flush`` unless the last one is less than ``FLUSH_EVERY`` seconds
        old (a run's end: one a question in an eval).  Every write is in
        RocksDB's write-ahead log at once, so a killed process loses none and
        a read-only view reads it; a flush only writes the table files a
        machine crash cannot take, for 20-30 ms, and ``close`` flushes."""
        if time.monotonic() - self._flushed >= FLUSH_EVERY:
            self.flush()

    # -- settings ---------------------------------------------------------------
    @property
    def name_predicates(self) -> tuple[str, ...]:
        """The predicates whose literals name entities (what loads were given)."""
        if self._name_predicates is None:
            self._name_predicates = tuple(self.index.get("name_predicates", [])) or DEFAULT_NAME_PREDICATES
        return self._name_predicates

    def add_name_predicates(self, predicates: Sequence[str]) -> None:
        """Remember more predicates that carry names (added to what is there)."""
        before = self.index.get("name_predicates", [])
        merged = list(dict.fromkeys([*before, *predicates]))
        if len(merged) > len(before) and not self.empty():
            self.index.shown_incomplete()  # triples already here under a new one have no shown-name rows
        self.index.set("name_predicates", merged)
        self._name_predicates = None

    @property
    def name_languages(self) -> tuple[str, ...]:
        """The languages of the names loads indexed for linking (``--name-lang``;
        a store whose loads did not say: the default, English and untagged)."""
        return tuple(self.index.get("name_languages", [])) or ("en", "")

    def add_name_languages(self, languages: Sequence[str]) -> None:
        before = self.index.get("name_languages", [])
        merged = list(dict.fromkeys([*before, *languages]))
        if merged != before:
            self.index.set("name_languages", merged)

    def close(self) -> None:
        try:
            self.flush()
        except OSError:
            pass
        self.index.close()
        self.summaries.db.close()
        del self.store
        if self._view_dir is not None:
            import shutil

            shutil.rmtree(self._view_dir, ignore_errors=True)
            self._view_dir = None
