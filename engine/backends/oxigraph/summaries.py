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


class Summaries:
    """The summary tables, on the store's SQLite connection (shared with the
    name index; a lock keeps threads of ``tog eval --concurrency`` apart)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.lock = threading.Lock()
        with self.lock:
            db.executescript(SCHEMA)
            db.commit()

    # -- hubs -------------------------------------------------------------------
    def hubs(self, entities: Sequence[str]) -> dict[tuple[str, str], dict[str, int]]:
        """{(entity, direction): {relation: degree}} for the summarised ones."""
        out: dict[tuple[str, str], dict[str, int]] = {}
        with self.lock:
            for part in _parts(list(dict.fromkeys(entities))):
                marks = ",".join("?" * len(part))
                for e, d in self.db.execute(f"SELECT entity, direction FROM hubs WHERE entity IN ({marks})", part):
                    out[(e, d)] = {}
                for e, d, r, n in self.db.execute(
                        f"SELECT entity, direction, relation, degree FROM hub_relations WHERE entity IN ({marks})",
                        part):
                    if (e, d) in out:
                        out[(e, d)][r] = n
        return out

    def set_hub(self, entity: str, direction: str, degrees: dict[str, int]) -> None:
        with self.lock:
            self.db.execute("DELETE FROM hub_relations WHERE entity = ? AND direction = ?", (entity, direction))
            self.db.executemany("INSERT INTO hub_relations VALUES (?, ?, ?, ?)",
                                [(entity, direction, r, n) for r, n in degrees.items() if n > 0])
            self.db.execute("INSERT OR REPLACE INTO hubs VALUES (?, ?, ?)", (entity, direction, sum(degrees.values())))
            self.db.commit()

    def is_hub(self, entity: str, direction: str) -> bool:
        with self.lock:
            return self.db.execute("SELECT 1 FROM hubs WHERE entity = ? AND direction = ?",
                                   (entity, direction)).fetchone() is not None

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

    # -- crowded pairs ----------------------------------------------------------
    def samples(self, keys: Iterable[Key]) -> dict[Key, tuple[int, list[str]]]:
        """{key: (degree, neighbours in sample order)} for the pairs kept."""
        out: dict[Key, tuple[int, list[str]]] = {}
        with self.lock:
            for e, r, d in dict.fromkeys(keys):
                row = self.db.execute("SELECT degree, sample FROM pair_samples WHERE entity = ? AND relation = ? "
                                      "AND direction = ?", (e, r, d)).fetchone()
                if row is not None:
                    out[(e, r, d)] = (row[0], json.loads(row[1]))
        return out

    def set_sample(self, key: Key, degree: int, sample: Sequence[str]) -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO pair_samples VALUES (?, ?, ?, ?, ?)",
                            (*key, degree, json.dumps(list(sample))))
            self.db.commit()

    def drop_sample(self, key: Key) -> None:
        with self.lock:
            self.db.execute("DELETE FROM pair_samples WHERE entity = ? AND relation = ? AND direction = ?", key)
            self.db.commit()

    # -- the look-ahead's schema --------------------------------------------------
    def follows(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
        out: dict[tuple[str, str], list[tuple[str, str]]] = {}
        with self.lock:
            for r, d in dict.fromkeys(keys):
                row = self.db.execute("SELECT follows FROM schema_follows WHERE relation = ? AND direction = ?",
                                      (r, d)).fetchone()
                if row is not None:
                    out[(r, d)] = [(x[0], x[1]) for x in json.loads(row[0])]
        return out

    def set_follows(self, found: dict[tuple[str, str], list[tuple[str, str]]]) -> None:
        with self.lock:
            self.db.executemany("INSERT OR REPLACE INTO schema_follows VALUES (?, ?, ?)",
                                [(r, d, json.dumps(v)) for (r, d), v in found.items()])
            self.db.commit()

    # -- the whole -------------------------------------------------------------------
    def clear(self) -> None:
        """Forget everything (a load changed the KG); remade as questions need it."""
        with self.lock:
            for table in ("hubs", "hub_relations", "pair_samples", "schema_follows"):
                self.db.execute(f"DELETE FROM {table}")  # noqa: S608 (fixed names)
            self.db.commit()

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
