"""The embedded store's side tables in SQLite: the entity-name index used for
linking, the names nodes are shown by, load checkpoints and settings.

Why not in Oxigraph: one key quad per name costs the bulk loader as much as
the name itself (at 10M triples with 1M names, +6.8 s on a 36 s load),
while SQLite takes the same rows in about 1.3 s.  Names of a load segment
and that segment's checkpoint are written in one SQLite transaction, so a
killed load never leaves names without their checkpoint or the reverse.

Shown names: a node of a multilingual dump may have hundreds of names (a
country's labels), of which one is shown.  Reading them all each time a
node is shown reads hundreds of rows a node; ``shown`` keeps, by load
batch, each node's best English or untagged name (``common.name_rank``),
and a node's shown name is its lowest row: one index seek.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from engine.graph import NAME_MATCHES

SCHEMA = """
CREATE TABLE IF NOT EXISTS names (key TEXT NOT NULL, entity TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS loads (
    source TEXT PRIMARY KEY, path TEXT, lines INTEGER NOT NULL DEFAULT 0,
    triples INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0,
    complete INTEGER NOT NULL DEFAULT 0, names INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS shown (entity TEXT NOT NULL, rank INTEGER NOT NULL, name TEXT NOT NULL,
    source TEXT NOT NULL);
"""
KEY_INDEX = "CREATE INDEX IF NOT EXISTS names_key ON names(key)"
SHOWN_INDEX = "CREATE INDEX IF NOT EXISTS shown_entity ON shown(entity, rank, name)"
# each node's lowest row (its first entry in the index), in one statement
SHOWN = """SELECT j.value, (SELECT name FROM shown WHERE entity = j.value ORDER BY rank, name LIMIT 1)
    FROM json_each(?) j"""
SHOWN_COMPLETE = "shown_complete"  # the setting that says ``shown`` holds every node's shown name
LOOKUP_BATCH = 500
# each key's first entities by the key's index (a DISTINCT with a LIMIT stops there), in one statement
LOOKUP = """SELECT k.value, (SELECT json_group_array(entity) FROM
    (SELECT DISTINCT entity FROM names WHERE key = k.value LIMIT ?)) FROM json_each(?) k"""
NAMES_COUNTED = "names_counted"  # the setting that keeps ``count``'s answer


class NameIndex:
    """Normalised name -> entity IRIs, plus checkpoints and settings."""

    _loads_columns = "path, lines, triples, skipped, complete, names, exact"  # as ``_checkpoint`` reads them

    def __init__(self, path: Path | None, read_only: bool = False) -> None:
        # the loader may queue names from its indexing thread; never two at once
        self.read_only = read_only
        if read_only and path is not None:  # beside a writer (WAL: it sees what the writer committed)
            self.db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False,
                                      timeout=60)
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(loads)")}
            for name in ("names", "exact"):  # (a store an older tog writes, without the writer's new columns)
                if name not in columns:
                    self._loads_columns = self._loads_columns.replace(name, "0")
            return
        self.db = sqlite3.connect(str(path) if path is not None else ":memory:", check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        self.db.executescript(SCHEMA)
        if "names" not in tables:  # a new store: every name it gets is shown through the table
            self.set(SHOWN_COMPLETE, "by the loads, as they index names")
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(loads)")}
        if "names" not in columns:  # a store made before loads counted names
            self.db.execute("ALTER TABLE loads ADD COLUMN names INTEGER NOT NULL DEFAULT 0")
        if "exact" not in columns:  # a store made before loads said where they stopped by themselves
            self.db.execute("ALTER TABLE loads ADD COLUMN exact INTEGER NOT NULL DEFAULT 0")
        self.db.execute(KEY_INDEX)
        self.db.execute(SHOWN_INDEX)
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    # -- names ---------------------------------------------------------------
    def begin_bulk(self) -> None:
        """Drop the key index while a load writes many rows; ``end_bulk``
        (or the next open) builds it again."""
        self.db.execute("DROP INDEX IF EXISTS names_key")
        self.db.execute("DROP INDEX IF EXISTS shown_entity")
        self.db.commit()

    def end_bulk(self, commit: bool = True) -> None:
        """Build the key index again; ``commit=False`` leaves it (and the rows
        queued) to be committed with the next checkpoint."""
        self.db.execute(KEY_INDEX)
        self.db.execute(SHOWN_INDEX)
        if commit:
            self.db.commit()

    def add(self, pairs: Iterable[tuple[str, str]], source: str) -> int:
        """Queue (entity, key) rows; they are committed with the next checkpoint."""
        rows = [(k, e, source) for e, k in pairs if k]
        if rows:
            self.db.executemany("INSERT INTO names(key, entity, source) VALUES (?, ?, ?)", rows)
            self._count_changes()
        return len(rows)

    def _count_changes(self) -> None:
        """The kept count of names goes with the rows that change it (same transaction)."""
        self.db.execute("DELETE FROM settings WHERE key = ?", (NAMES_COUNTED,))

    def replace_source(self, source: str, pairs: Iterable[tuple[str, str]]) -> None:
        """The (entity, key) rows of ``source`` become ``pairs``, committed at once."""
        self.db.execute("DELETE FROM names WHERE source = ?", (source,))
        self._count_changes()
        self.add(pairs, source)
        self.db.commit()

    def relink(self, keep: Iterable[tuple[str, str]], drop: Iterable[tuple[str, str]], source: str) -> None:
        """(entity, key) rows: each of ``keep`` is in the index once (added,
        tagged ``source``, where missing), each of ``drop`` in no source;
        committed at once. Each row is found by its key, so a name thousands
        share reads those thousands' rows (a correction's few names only)."""
        for e, k in drop:
            self.db.execute("DELETE FROM names WHERE key = ? AND entity = ?", (k, e))
        for e, k in keep:
            self.db.execute("INSERT INTO names(key, entity, source) SELECT ?, ?, ? WHERE NOT EXISTS "
                            "(SELECT 1 FROM names WHERE key = ? AND entity = ?)", (k, e, source, k, e))
        self._count_changes()
        self.db.commit()

    def forget(self, source: str) -> None:
        """Remove what a load of ``source`` wrote (before loading it again)."""
        self.db.execute("DELETE FROM names WHERE source = ?", (source,))
        # (its shown-name rows stay: the KG keeps the triples a load wrote, and a row more of a name changes nothing)
        self._count_changes()
        self.db.execute("DELETE FROM loads WHERE source = ?", (source,))
        self.db.commit()

    def lookup(self, keys: Sequence[str], most: int = NAME_MATCHES + 1) -> dict[str, list[str]]:
        """The entities each key names (those with any), sorted; at most
        ``most`` a key, so a name thousands share costs ``most`` rows."""
        found: dict[str, list[str]] = {}
        for i in range(0, len(keys), LOOKUP_BATCH):
            part = json.dumps(list(keys[i:i + LOOKUP_BATCH]))
            for key, entities in self.db.execute(LOOKUP, (most, part)):
                if entities != "[]":
                    found[key] = sorted(json.loads(entities))
        return found

    def show(self, rows: Iterable[tuple[str, int, str]], source: str) -> None:
        """Queue (entity, rank, name) rows of shown names, the best of each
        entity only; they are committed with the next checkpoint."""
        best: dict[str, tuple[int, str]] = {}
        for e, rank, name in rows:
            if e not in best or (rank, name) < best[e]:
                best[e] = (rank, name)
        if best:
            self.db.executemany("INSERT INTO shown(entity, rank, name, source) VALUES (?, ?, ?, ?)",
                                [(e, rank, name, source) for e, (rank, name) in best.items()])

    def reshow(self, entities: Sequence[str], rows: Iterable[tuple[str, int, str]], source: str) -> None:
        """``entities``' shown rows, every source's, become ``rows`` (read
        from the KG as it is now), committed at once."""
        self.db.executemany("DELETE FROM shown WHERE entity = ?", [(e,) for e in dict.fromkeys(entities)])
        self.show(rows, source)
        self.db.commit()

    def shown(self, ids: Sequence[str]) -> dict[str, str] | None:
        """The shown name of each id the table has one for: one index seek an
        id. None in a read-only view while a load has the index down (a scan
        an id): the caller reads the names from the KG meanwhile."""
        if self.read_only and self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'shown_entity'").fetchone() is None:
            return None
        found: dict[str, str] = {}
        for i in range(0, len(ids), LOOKUP_BATCH):
            for entity, name in self.db.execute(SHOWN, (json.dumps(list(ids[i:i + LOOKUP_BATCH])),)):
                if name is not None:
                    found[entity] = name
        return found

    def shown_complete(self) -> bool:
        """Whether the table holds every node's shown name: false in a
        store made before it, until ``OxigraphKG`` fills it once."""
        return bool(self.get(SHOWN_COMPLETE, False))

    def shown_how(self) -> str:
        """How the table was made (``tog info``)."""
        return self.get(SHOWN_COMPLETE) or ("not made yet (a store made by an older tog, or given a new name "
                                            "predicate: its next question makes it)")

    def shown_incomplete(self) -> None:
        """The table lacks some names the KG has (a name predicate was added):
        it is filled again from the KG on first use."""
        self.db.execute("DELETE FROM settings WHERE key = ?", (SHOWN_COMPLETE,))
        self.db.commit()

    def fill_shown(self, parts: Iterable[list[tuple[str, int, str]]], how: Callable[[], str]) -> None:
        """Fill the table from the KG (``parts``: every English or untagged
        name, a batch at a time, each committed so that other writers wait
        little); marked complete, saying ``how()``, once all are in. A fill
        cut short leaves the table incomplete, to be filled again."""
        self.db.execute("DELETE FROM shown")
        self.db.execute("DROP INDEX IF EXISTS shown_entity")  # built once after the rows: 3x quicker than row by row
        self.db.commit()
        for rows in parts:
            self.show(rows, "kg")
            self.db.commit()
        self.db.execute(SHOWN_INDEX)
        self.set(SHOWN_COMPLETE, how())  # (committed with the index)

    def count(self) -> int:
        """Distinct (name, entity) rows: counted once, then kept until names change."""
        kept = self.get(NAMES_COUNTED)
        if kept is not None:
            return int(kept)
        n = self.db.execute("SELECT COUNT(*) FROM (SELECT DISTINCT key, entity FROM names)").fetchone()[0]
        if not self.read_only and not self.db.in_transaction:  # (never inside a load's open transaction)
            self.set(NAMES_COUNTED, n)
        return n

    # -- checkpoints -----------------------------------------------------------
    def checkpoint(self, source: str) -> dict:
        row = self.db.execute(
            f"SELECT {self._loads_columns} FROM loads WHERE source = ?", (source,)).fetchone()
        return _checkpoint(row) if row is not None else {}

    def checkpoints(self) -> list[dict]:
        """Every source's checkpoint, by path."""
        rows = self.db.execute(f"SELECT {self._loads_columns}, source FROM loads ORDER BY path, source")
        return [{**_checkpoint(r), "source": r[-1]} for r in rows]

    def set_checkpoint(self, source: str, *, path: str, lines: int, triples: int, skipped: int,
                       names: int = 0, complete: bool = False, exact: bool = False) -> None:
        """Record progress and commit it together with the names queued since."""
        self.db.execute(
            "INSERT INTO loads(source, path, lines, triples, skipped, complete, names, exact) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(source) DO UPDATE SET path=excluded.path, lines=excluded.lines, "
            "triples=excluded.triples, skipped=excluded.skipped, complete=excluded.complete, names=excluded.names, "
            "exact=excluded.exact",
            (source, path, lines, triples, skipped, int(complete), names, int(exact)))
        self.db.commit()

    def rollback(self) -> None:
        self.db.rollback()

    # -- settings --------------------------------------------------------------
    def get(self, key: str, default=None):
        row = self.db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set(self, key: str, value) -> None:
        self.db.execute("INSERT INTO settings(key, value) VALUES (?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, json.dumps(value)))
        self.db.commit()


def _checkpoint(row: tuple) -> dict:
    """A ``loads`` row (path, lines, triples, skipped, complete, names,
    exact) as ``LoadCheckpoint.to_dict`` gives it."""
    return {"path": row[0], "lines": row[1], "triples": row[2], "skipped": row[3], "complete": bool(row[4]),
            "names": row[5], "exact": bool(row[6])}
