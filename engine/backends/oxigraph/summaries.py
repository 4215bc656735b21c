"""What the embedded store keeps about its hubs, so that no question reads
all of a hub's edges more than once in the store's life.

- ``hubs`` / ``hub_relations``: for an entity with more than ``HUB_EDGES``
  edges in one direction, the relations it has in that direction and
  their exact degrees (QLever's "patterns", with counts);
- ``pair_samples``: for an (entity, relation, direction) with more
  neighbours than a search looks at, its degree and its first
  ``SAMPLE_KEEP`` neighbours in the sample order every backend uses
  (``backends.common.sample_key``);
- ``schema_follows``: which relations follow a relation (the offline
  judge's look-ahead), from a bounded sample of its tails.

They live in ``index.sqlite`` beside the name index. Each is made the
first time it is needed (or by the load, for the hubs it finds) and kept;
a load clears them all (it may have added edges anywhere), and a
correction updates the entries of the pairs it touches before it is
marked done (the updates are idempotent, so finishing an interrupted
correction finishes them too).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence

SCHEMA = """
CREATE TABLE IF NOT EXISTS hubs (entity TEXT NOT NULL, direction TEXT NOT NULL, edges INTEGER NOT NULL,
    PRIMARY KEY (entity, direction)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hub_relations (entity TEXT NOT NULL, direction TEXT NOT NULL, relation TEXT NOT NULL,
    degree INTEGER NOT NULL, PRIMARY KEY (entity, direction, relation)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pair_samples (entity TEXT NOT NULL, relation TEXT NOT NULL, direction TEXT NOT NULL,
    degree INTEGER NOT NULL, sample TEXT NOT NULL, PRIMARY KEY (entity, relation, direction)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS schema_follows (relation TEXT NOT NULL, direction TEXT NOT NULL, follows TEXT NOT NULL,
    PRIMARY KEY (relation, direction)) WITHOUT ROWID;
"""
HUB_EDGES = 1000    # more edges than this in one direction: a hub, summarised
SAMPLE_KEEP = 4096  # neighbours kept per crowded pair, in sample order
Key = tuple[str, str, str]  # (entity, relation, direction)


MEMORY_MAX = 200_000  # entries each in-memory view holds before it starts over


class Summaries:
    """The summary tables, on a SQLite connection of their own (a lock keeps
    threads of ``tog eval --concurrency`` apart), with an in-memory view of
    what was read or written: every change goes through this object, which
    the roles of one store share, so the view stays exact."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.lock = threading.Lock()
        self._hubs: dict[tuple[str, str], dict[str, int] | None] = {}  # None: not a summarised hub
        self._samples: dict[Key, tuple[int, list[str]] | None] = {}
        self._follows: dict[tuple[str, str], list[tuple[str, str]]] = {}
        with self.lock:
            db.executescript(SCHEMA)
            db.commit()

    def _forget(self) -> None:
        self._hubs.clear()
        self._samples.clear()
        self._follows.clear()

    def _room(self, view: dict) -> None:
        if len(view) > MEMORY_MAX:
            view.clear()

    # -- hubs -------------------------------------------------------------------
    def hubs(self, entities: Sequence[str]) -> dict[tuple[str, str], dict[str, int]]:
        """{(entity, direction): {relation: degree}} for the summarised ones."""
        out: dict[tuple[str, str], dict[str, int]] = {}
        with self.lock:
            view = self._hubs
            todo = [e for e in dict.fromkeys(entities) if (e, "out") not in view]
            self._room(view)
            for part in _parts(todo):
                marks = ",".join("?" * len(part))
                for e in part:
                    view[(e, "out")] = view[(e, "in")] = None
                for e, d in self.db.execute(f"SELECT entity, direction FROM hubs WHERE entity IN ({marks})", part):
                    view[(e, d)] = {}
                for e, d, r, n in self.db.execute(
                        f"SELECT entity, direction, relation, degree FROM hub_relations WHERE entity IN ({marks})",
                        part):
                    found = view.get((e, d))
                    if found is not None:
                        found[r] = n
            for e in entities:
                for d in ("out", "in"):
                    got = view.get((e, d))
                    if got is not None:
                        out[(e, d)] = got
        return out

    def set_hub(self, entity: str, direction: str, degrees: dict[str, int]) -> None:
        with self.lock:
            self.db.execute("DELETE FROM hub_relations WHERE entity = ? AND direction = ?", (entity, direction))
            self.db.executemany("INSERT INTO hub_relations VALUES (?, ?, ?, ?)",
                                [(entity, direction, r, n) for r, n in degrees.items() if n > 0])
            self.db.execute("INSERT OR REPLACE INTO hubs VALUES (?, ?, ?)", (entity, direction, sum(degrees.values())))
            self.db.commit()
            self._hubs.pop((entity, "out"), None)
            self._hubs.pop((entity, "in"), None)

    def is_hub(self, entity: str, direction: str) -> bool:
        return (entity, direction) in self.hubs([entity])

    def set_degree(self, entity: str, direction: str, relation: str, degree: int) -> None:
        """A summarised hub's degree for one relation (0 drops it)."""
        with self.lock:
            if degree > 0:
                self.db.execute("INSERT OR REPLACE INTO hub_relations VALUES (?, ?, ?, ?)",
                                (entity, direction, relation, degree))
            else:
                self.db.execute("DELETE FROM hub_relations WHERE entity = ? AND direction = ? AND relation = ?",
                                (entity, direction, relation))
            self.db.execute("UPDATE hubs SET edges = (SELECT COALESCE(SUM(degree), 0) FROM hub_relations "
                            "WHERE entity = ? AND direction = ?) WHERE entity = ? AND direction = ?",
                            (entity, direction, entity, direction))
            self.db.commit()
            self._hubs.pop((entity, "out"), None)
            self._hubs.pop((entity, "in"), None)

    # -- crowded pairs ----------------------------------------------------------
    def samples(self, keys: Iterable[Key]) -> dict[Key, tuple[int, list[str]]]:
        """{key: (degree, neighbours in sample order)} for the pairs kept."""
        out: dict[Key, tuple[int, list[str]]] = {}
        with self.lock:
            view = self._samples
            self._room(view)
            for key in dict.fromkeys(keys):
                if key not in view:
                    row = self.db.execute("SELECT degree, sample FROM pair_samples WHERE entity = ? AND relation = ? "
                                          "AND direction = ?", key).fetchone()
                    view[key] = (row[0], json.loads(row[1])) if row is not None else None
                got = view[key]
                if got is not None:
                    out[key] = got
        return out

    def set_sample(self, key: Key, degree: int, sample: Sequence[str]) -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO pair_samples VALUES (?, ?, ?, ?, ?)",
                            (*key, degree, json.dumps(list(sample))))
            self.db.commit()
            self._samples[key] = (degree, list(sample))

    def drop_sample(self, key: Key) -> None:
        with self.lock:
            self.db.execute("DELETE FROM pair_samples WHERE entity = ? AND relation = ? AND direction = ?", key)
            self.db.commit()
            self._samples[key] = None

    # -- the look-ahead's schema --------------------------------------------------
    def follows(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
        out: dict[tuple[str, str], list[tuple[str, str]]] = {}
        with self.lock:
            view = self._follows
            self._room(view)
            for r, d in dict.fromkeys(keys):
                if (r, d) not in view:
                    row = self.db.execute("SELECT follows FROM schema_follows WHERE relation = ? AND direction = ?",
                                          (r, d)).fetchone()
                    if row is None:
                        continue
                    view[(r, d)] = [(x[0], x[1]) for x in json.loads(row[0])]
                out[(r, d)] = view[(r, d)]
        return out

    def set_follows(self, found: dict[tuple[str, str], list[tuple[str, str]]]) -> None:
        with self.lock:
            self.db.executemany("INSERT OR REPLACE INTO schema_follows VALUES (?, ?, ?)",
                                [(r, d, json.dumps(v)) for (r, d), v in found.items()])
            self.db.commit()
            self._follows.update(found)

    # -- the whole -------------------------------------------------------------------
    def clear(self) -> None:
        """Forget everything (a load changed the KG); remade as questions need it."""
        with self.lock:
            for table in ("hubs", "hub_relations", "pair_samples", "schema_follows"):
                self.db.execute(f"DELETE FROM {table}")  # noqa: S608 (fixed names)
            self.db.commit()
            self._forget()

    def counts(self) -> dict[str, int]:
        with self.lock:
            return {
                "hubs": self.db.execute("SELECT COUNT(*) FROM hubs").fetchone()[0],
                "crowded_pairs": self.db.execute("SELECT COUNT(*) FROM pair_samples").fetchone()[0],
                "schema_relations": self.db.execute("SELECT COUNT(*) FROM schema_follows").fetchone()[0],
            }


def _parts(items: list[str], size: int = 500) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]
