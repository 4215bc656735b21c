"""Offline bulk import into Neo4j: triple files -> CSV files for
``neo4j-admin database import full``.

The online loader (``tog load --store neo4j://...``) writes through Cypher
transactions.  For a new, empty database the import tool of the same Neo4j
artifacts is far faster: it writes the store files directly, with the
server stopped.  :class:`Neo4jCsvExport` takes the place of a backend for
``loaders.load.load_file`` (same parsing, bad-line counting and names) and
writes the nodes and relationships of the Neo4j data model (see
``engine/backends/neo4j/__init__.py``) as CSV files, plus ``import.args``, the import
tool's arguments.  ``launcher/neo4j-server import DIR`` runs the tool.

The database that results is the one an online load builds: entities with
their best name, values, the linking index, and a completed load checkpoint
per file (so ``tog load`` of the same file afterwards has nothing to do).
The schema (constraints, indexes) is created by the migrations when the
engine first connects.

Entity names and name keys are held in memory until the end (about 150
bytes an entity); relationships stream to disk.  An export that was killed
is started again from the beginning.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import pyoxigraph as ox

from engine.backends.common import sample_hash
from engine.backends.neo4j.session import SAMPLE_KEY_KIND, SAMPLE_KEYS
from engine.backends.neo4j.sink import PendingWrites, _HashSet, split_quads
from engine.errors import StoreError
from engine.graph import DEFAULT_NAME_PREDICATES
from engine.store import LoadCheckpoint

ARGS_FILE = "import.args"
FILES = {  # file -> (import option, header)
    "entities.csv": ("--nodes=Entity", "id:ID(Entity),name,name_rank:int,sk"),
    "values.csv": ("--nodes=Value", "id:ID(Value),value,datatype,lang,sk"),
    "names.csv": ("--nodes=TogName", "key,entity,source"),
    "loads.csv": ("--nodes=TogLoad", "source,path,lines:long,triples:long,skipped:long,names:long,complete:boolean"),
    "settings.csv": ("--nodes=TogSetting", "key,value"),
    "edges.csv": ("--relationships", ":START_ID(Entity),:TYPE,:END_ID(Entity)"),
    "value-edges.csv": ("--relationships", ":START_ID(Entity),:TYPE,:END_ID(Value)"),
}


def _field(value) -> str:
    """One CSV field: strings quoted (quotes doubled), None left empty (no property)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace('"', '""') + '"'


def _line(*values) -> str:
    return ",".join(map(_field, values)) + "\n"


class Neo4jCsvExport(PendingWrites):
    """``BulkSink`` that writes the CSV files of an offline Neo4j import into ``folder``."""

    chunk_bytes = 16 << 20

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create {self.folder}: {e.strerror or e}") from None
        if (self.folder / ARGS_FILE).exists() or any(self.folder.iterdir()):
            raise StoreError(f"{self.folder} is not empty; export into a new folder")
        self._predicates: list[str] = []
        self._entities: dict[str, tuple[int, str] | None] = {}
        self._values: dict[str, list] = {}
        self._name_keys: dict[tuple[str, str], str] = {}
        self._loads: dict[str, LoadCheckpoint] = {}
        self._pending: list[ox.Quad] = []
        self._pending_names: list[tuple[str, str, str]] = []
        self._seen = _HashSet()
        self._edges = open(self.folder / "edges.csv", "w", encoding="utf-8", newline="")
        self._value_edges = open(self.folder / "value-edges.csv", "w", encoding="utf-8", newline="")
        self._edges.write(FILES["edges.csv"][1] + "\n")
        self._value_edges.write(FILES["value-edges.csv"][1] + "\n")
        self.relationships = 0

    # -- the loader's side (see engine.store.BulkSink) -------------------------
    @property
    def name_predicates(self) -> tuple[str, ...]:
        return tuple(self._predicates) or DEFAULT_NAME_PREDICATES

    def resume(self, source: str, name_predicates: Sequence[str], *, force: bool = False,
               languages: Sequence[str] = ()) -> LoadCheckpoint:
        self._predicates = list(dict.fromkeys([*self._predicates, *name_predicates]))
        if force:
            self._loads.pop(source, None)
        return self._loads.get(source, LoadCheckpoint())

    def begin(self) -> None:
        pass

    def end(self) -> None:
        self._pending.clear()
        self._pending_names.clear()

    def summarise(self, progress: bool = False) -> dict | None:
        return None  # the database the import makes needs nothing more (see Neo4jSink.summarise)

    def write(self, quads: Iterable[ox.Quad]) -> None:
        self._pending.extend(quads)
        if len(self._pending) >= 200_000:
            self._flush()

    def started(self, source: str, checkpoint: LoadCheckpoint) -> None:
        pass  # (a killed export starts over)

    def commit(self, source: str, checkpoint: LoadCheckpoint) -> None:
        self._flush()
        self._loads[source] = replace(checkpoint)

    def _flush(self) -> None:
        quads, self._pending = self._pending, []
        names, self._pending_names = self._pending_names, []
        entities, name_rows, value_rows, edges, value_edges = split_quads(quads, self.name_predicates)
        known = self._entities
        for e in entities:
            known.setdefault(e, None)
        for entity, name, rank in name_rows:
            best = known.get(entity)
            if best is None or (rank, name) < best:
                known[entity] = (rank, name)
        self._values.update(value_rows)
        for key, entity, source in names:
            self._name_keys.setdefault((key, entity), source)
        for s, p, o in self._seen.new(edges):
            self._edges.write(_line(s, p, o))
            self.relationships += 1
        for s, p, o in self._seen.new(value_edges):
            self._value_edges.write(_line(s, p, o))
            self.relationships += 1
        self._seen.commit()

    # -- finishing ------------------------------------------------------------
    def close(self) -> dict:
        """Write the node files and ``import.args``; returns counts."""
        self._edges.close()
        self._value_edges.close()
        with open(self.folder / "entities.csv", "w", encoding="utf-8", newline="") as f:
            f.write(FILES["entities.csv"][1] + "\n")
            for entity, best in self._entities.items():
                f.write(_line(entity, *(best[::-1] if best else (None, None)), sample_hash(entity)))
        with open(self.folder / "values.csv", "w", encoding="utf-8", newline="") as f:
            f.write(FILES["values.csv"][1] + "\n")
            for row in self._values.values():
                f.write(_line(*row))
        with open(self.folder / "names.csv", "w", encoding="utf-8", newline="") as f:
            f.write(FILES["names.csv"][1] + "\n")
            for (key, entity), source in self._name_keys.items():
                f.write(_line(key, entity, source))
        with open(self.folder / "loads.csv", "w", encoding="utf-8", newline="") as f:
            f.write(FILES["loads.csv"][1] + "\n")
            for source, v in self._loads.items():
                f.write(_line(source, v.path, v.lines, v.triples, v.skipped, v.names, v.complete))
        with open(self.folder / "settings.csv", "w", encoding="utf-8", newline="") as f:
            f.write(FILES["settings.csv"][1] + "\n")
            f.write(_line("name_predicates", json.dumps(list(self.name_predicates))))
            f.write(_line(SAMPLE_KEYS, json.dumps(SAMPLE_KEY_KIND)))
        args = [f"{option}={name}" for name, (option, _) in FILES.items()]
        (self.folder / ARGS_FILE).write_text("\n".join(args) + "\n", encoding="utf-8")
        return {"entities": len(self._entities), "values": len(self._values),
                "relationships": self.relationships, "name_keys": len(self._name_keys)}

    def abort(self) -> None:
        self._edges.close()
        self._value_edges.close()
