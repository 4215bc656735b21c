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
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import pyoxigraph as ox

from engine.backends.oxigraph.name_index import NameIndex
from engine.backends.oxigraph.summaries import Summaries
from engine.errors import StoreError
from engine.graph import DEFAULT_NAME_PREDICATES, Meter

_FLUSH_LOCK = threading.Lock()  # see Database.flush


class Database:
    """The Oxigraph database and the SQLite side tables of one store
    directory (``path=None``: both in memory)."""

    def __init__(self, path: Path | None, *, create: bool = False) -> None:
        self.path = path
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
            self.store = ox.Store(str(path / "kg")) if path is not None else ox.Store()
        except OSError as e:
            if "lock" in str(e).lower():
                raise StoreError(f"the store at {path} is in use by another process "
                                 "(an embedded store opens in one process at a time)") from e
            raise StoreError(f"cannot open the store at {path}: {e}") from e
        self.index = NameIndex(path / "index.sqlite" if path is not None else None)
        # the summaries have a connection of their own: a load's names wait
        # uncommitted on the index's connection until its next checkpoint
        summary_db = sqlite3.connect(str(path / "index.sqlite") if path is not None else ":memory:",
                                     check_same_thread=False, timeout=60)
        self.summaries = Summaries(summary_db)
        self._name_predicates: tuple[str, ...] | None = None
        self.generation = 0  # one more after each load: what was asked of the KG once is asked again

    @property
    def name(self) -> str:
        return str(self.path) if self.path is not None else "the in-memory store"

    def query(self, text: str, meter: Meter | None = None, **kwargs) -> list:
        """A SPARQL query's solutions, counted on ``meter`` when given."""
        started = time.perf_counter()
        try:
            return list(cast(ox.QuerySolutions, self.store.query(text, **kwargs)))  # our queries are SELECTs
        finally:
            if meter is not None:
                meter.add(time.perf_counter() - started)

    def flush(self) -> None:
        """``Store.flush`` one thread at a time: two RocksDB flushes racing on
        one database can hang forever (facebook/rocksdb#12094), which
        ``tog eval --concurrency`` did here once, in ``finish_run``."""
        with _FLUSH_LOCK:
            self.store.flush()

    # -- settings ---------------------------------------------------------------
    @property
    def name_predicates(self) -> tuple[str, ...]:
        """The predicates whose literals name entities (what loads were given)."""
        if self._name_predicates is None:
            self._name_predicates = tuple(self.index.get("name_predicates", [])) or DEFAULT_NAME_PREDICATES
        return self._name_predicates

    def add_name_predicates(self, predicates: Sequence[str]) -> None:
        """Remember more predicates that carry names (added to what is there)."""
        merged = list(dict.fromkeys([*self.index.get("name_predicates", []), *predicates]))
        self.index.set("name_predicates", merged)
        self._name_predicates = None

    def close(self) -> None:
        try:
            self.flush()
        except OSError:
            pass
        self.index.close()
        self.summaries.db.close()
        del self.store
