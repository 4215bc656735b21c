"""What the embedded store keeps about its hubs, so that no question reads
all of a hub's edges.

- ``hubs`` / ``hub_relations``: for an entity with more than ``HUB_EDGES``
  edges in one direction, the relations it has in that direction and
  their exact degrees (QLever's "patterns", with counts). Made by every
  load once it is complete: a load into an empty store samples the lines
  it writes (:class:`HubTally`) and counts only the entities the sample
  names (:func:`build`); a load into a store whose summaries were fresh
  notes every entity it writes an edge of (:class:`Touched`) and counts
  only those (:func:`update`); any other counts every edge, in two native
  passes per direction. Kept exact by corrections;
- ``pair_samples``: for an (entity, relation, direction) with more
  neighbours than a search looks at, its degree and its first
  ``SAMPLE_KEEP`` neighbours in the sample order every backend uses
  (``backends.common.sample_key``), sorted by the store inside the query
  the first time the pair is expanded, and kept (a load that notes what
  it writes merges the new neighbours of a kept pair into its sample).
  A hub's pair of more than ``SORT_MAX`` edges is sampled with the
  summaries instead (:func:`sample_big`), so no question sorts one;
- ``schema_follows``: which relations follow a relation (the offline
  judge's look-ahead), from a bounded sample of its tails, made in batches
  when first needed, and kept;
- ``relation_totals``: every relation's number of facts (``tog info``,
  ``tog relations``), counted in one pass the first time they are asked
  for after a load, then kept.

They live in ``index.sqlite`` beside the name index, with their state in
``summary_state``: ``fresh`` once a load's build has run, ``stale`` from
the moment a load starts writing until its build (a killed load leaves it
stale; the resumed load's end builds again).

A correction adds what it changes to the hubs' degrees and the relations'
totals (``count_step``) before the KG changes, in one transaction with a
mark of its step (``correction_steps``), so no hub's pair or relation is
counted again: finishing an interrupted correction finds the mark and
adds nothing twice. One interrupted before its mark (or by a tog older
than it) is finished by counting again what it touched (``recount``, and
the pairs' degrees). Its samples are updated in place (idempotent).
"""

from __future__ import annotations

import json
import math
import random
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from engine.backends import common

if TYPE_CHECKING:
    from engine.backends.oxigraph.database import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS hubs (entity TEXT NOT NULL, direction TEXT NOT NULL, edges INTEGER NOT NULL,
    PRIMARY KEY (entity, direction)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hub_relations (entity TEXT NOT NULL, direction TEXT NOT NULL, relation TEXT NOT NULL,
    degree INTEGER NOT NULL, PRIMARY KEY (entity, direction, relation)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pair_samples (entity TEXT NOT NULL, relation TEXT NOT NULL, direction TEXT NOT NULL,
    degree INTEGER NOT NULL, sample TEXT NOT NULL, PRIMARY KEY (entity, relation, direction)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS schema_follows (relation TEXT NOT NULL, direction TEXT NOT NULL, follows TEXT NOT NULL,
    PRIMARY KEY (relation, direction)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS summary_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS relation_totals (relation TEXT PRIMARY KEY, facts INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS relation_recount (relation TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS correction_steps (step TEXT PRIMARY KEY) WITHOUT ROWID;
"""
HUB_EDGES = 1000    # more edges than this in one direction: a hub, summarised
SAMPLE_KEEP = common.SAMPLE_KEEP  # neighbours kept per crowded pair, in sample order
Key = tuple[str, str, str]  # (entity, relation, direction)
# a hub's edges, summed again from its relations' degrees (parameters: entity, direction)
HUB_EDGES_SUMMED = ("UPDATE hubs SET edges = (SELECT COALESCE(SUM(degree), 0) FROM hub_relations WHERE entity = ?1 "
                    "AND direction = ?2) WHERE entity = ?1 AND direction = ?2")
Directions = ("out", "in")

SAMPLE_RATE = 10     # a load into an empty store tallies one line in this many (HubTally)
CANDIDATE = 50       # sampled edges that make an entity worth counting: half of what 1,001 edges give
TALLY_BUCKET = 1_000_000  # sampled lines per round of the tally's pruning (lossy counting)
GAPS = 1 << 16       # the tally's random gaps between sampled lines, used in turn
TOUCHED_MAX = 500_000  # entities a direction that a load into a summarised store notes; past it, count every edge
FACTS_MAX = 100_000  # edges of sampled pairs such a load notes to merge into their samples; past it, those go
PAIR_COST = 150      # a query's own cost, in edges read (0.1 ms against 0.7 µs an edge, measured)
SORT_MAX = common.SORT_MAX  # a hub's pair past it is sampled with the summaries (sample_big)

MEMORY_MAX = 200_000  # entries each in-memory view holds before it starts over


class Summaries:
    """The summary tables, on a SQLite connection of their own (a lock keeps
    threads of ``tog eval --concurrency`` apart), with an in-memory view of
    what was read or written: every change goes through this object, which
    the roles of one store share, so the view stays exact. ``persist``
    false (a read-only view beside the process that writes the store): the
    tables are read, and what this process makes is kept in memory only."""

    def __init__(self, db: sqlite3.Connection, *, persist: bool = True) -> None:
        self.db = db
        self.persist = persist
        self.lock = threading.Lock()
        self._hubs: dict[tuple[str, str], dict[str, int] | None] = {}  # None: not a summarised hub
        self._samples: dict[Key, tuple[int, list[str]] | None] = {}
        self._follows: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._state: dict | None = None
        # a read-only view's own count of the relations' facts (it cannot keep it)
        self._totals: dict[str, int] | None = None
        if persist:
            with self.lock:
                db.executescript(SCHEMA)
                db.commit()

    def _tables(self, table: str = "summary_state") -> bool:
        """Whether the tables exist (a read-only view of a store made before them has none)."""
        if self.persist:
            return True
        row = self.db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        return row is not None

    def _forget(self) -> None:
        self._hubs.clear()
        self._samples.clear()
        self._follows.clear()
        self._state = None
        self._totals = None

    def _room(self, view: dict) -> None:
        if len(view) > MEMORY_MAX:
            view.clear()

    def _write(self, statements: Iterable[tuple[str, Sequence | Iterable[Sequence]]], many: bool = False) -> None:
        if not self.persist:
            return
        for sql, args in statements:
            if many:
                self.db.executemany(sql, args)
            else:
                self.db.execute(sql, args)  # type: ignore[arg-type]
        self.db.commit()

    # -- the state ----------------------------------------------------------------
    def state(self) -> dict:
        """How the hub summaries stand: ``{"state": "fresh" | "stale" |
        "missing", ...}`` with, once built, when and how (``built``, ``how``,
        ``seconds``, ``hubs``, ``edges``)."""
        with self.lock:
            if self._state is None:
                row = self.db.execute("SELECT value FROM summary_state WHERE key = 'hubs'").fetchone() \
                    if self._tables() else None
                self._state = json.loads(row[0]) if row else {"state": "missing"}
            return dict(self._state)

    def fresh(self) -> bool:
        return self.state().get("state") == "fresh"

    def mark_stale(self, why: str) -> None:
        """A load starts writing: the summaries no longer say what the KG
        holds (nor do the relations' totals, counted again when next asked for)."""
        state = {**self.state(), "state": "stale", "why": why}
        with self.lock:
            self._write([("INSERT OR REPLACE INTO summary_state VALUES ('hubs', ?)", (json.dumps(state),)),
                         ("DELETE FROM summary_state WHERE key = 'totals'", ())])
            self._state = state
            self._totals = None

    def reread(self) -> None:
        """Forget the in-memory view (another process may have changed the tables)."""
        with self.lock:
            self._forget()

    # -- hubs -------------------------------------------------------------------
    def hubs(self, entities: Sequence[str]) -> dict[tuple[str, str], dict[str, int]]:
        """{(entity, direction): {relation: degree}} for the summarised ones."""
        out: dict[tuple[str, str], dict[str, int]] = {}
        with self.lock:
            view = self._hubs
            todo = [e for e in dict.fromkeys(entities) if (e, "out") not in view]
            self._room(view)
            tables = self._tables() if todo else False
            for part in _parts(todo):
                marks = ",".join("?" * len(part))
                for e in part:
                    view[(e, "out")] = view[(e, "in")] = None
                if not tables:
                    continue
                for e, d in self.db.execute(f"SELECT entity, direction FROM hubs WHERE entity IN ({marks})", part):
                    view[(e, d)] = {}
                for e, d, r, n in self.db.execute(
                        f"SELECT entity, direction, relation, degree FROM hub_relations WHERE entity IN ({marks})",
                        part):
                    found = view.get((e, d))
                    if found is not None:
                        found[r] = n
            for e in entities:
                for d in Directions:
                    got = view.get((e, d))
                    if got is not None:
                        out[(e, d)] = got
        return out

    def set_hub(self, entity: str, direction: str, degrees: dict[str, int]) -> None:
        with self.lock:
            self._write([
                ("DELETE FROM hub_relations WHERE entity = ? AND direction = ?", (entity, direction)),
                ("INSERT OR REPLACE INTO hubs VALUES (?, ?, ?)", (entity, direction, sum(degrees.values())))])
            self._write([("INSERT INTO hub_relations VALUES (?, ?, ?, ?)",
                          [(entity, direction, r, n) for r, n in degrees.items() if n > 0])], many=True)
            if self.persist:
                self._unview(entity)
            else:  # kept in the view only: fill the entity's both directions
                other = "in" if direction == "out" else "out"
                self._hubs.setdefault((entity, other), None)
                self._hubs[(entity, direction)] = {r: n for r, n in degrees.items() if n > 0}

    def _unview(self, entity: str) -> None:
        """``entity``'s hub summary is read from the tables again (they changed)."""
        self._hubs.pop((entity, "out"), None)
        self._hubs.pop((entity, "in"), None)

    def hub_entities(self) -> dict[str, list[str]]:
        """{direction: every summarised hub}."""
        with self.lock:
            out: dict[str, list[str]] = {d: [] for d in Directions}
            if self._tables():
                for e, d in self.db.execute("SELECT entity, direction FROM hubs"):
                    out[d].append(e)
            return out

    def set_degree(self, entity: str, direction: str, relation: str, degree: int) -> None:
        """A summarised hub's degree for one relation (0 drops it)."""
        with self.lock:
            change: tuple[str, tuple]
            if degree > 0:
                change = ("INSERT OR REPLACE INTO hub_relations VALUES (?, ?, ?, ?)",
                          (entity, direction, relation, degree))
            else:
                change = ("DELETE FROM hub_relations WHERE entity = ? AND direction = ? AND relation = ?",
                          (entity, direction, relation))
            self._write([change, (HUB_EDGES_SUMMED, (entity, direction))])
            found = self._hubs.get((entity, direction))
            if not self.persist and found is not None:
                if degree > 0:
                    found[relation] = degree
                else:
                    found.pop(relation, None)
            elif self.persist:
                self._unview(entity)

    def replace_hubs(self, found: dict[tuple[str, str], dict[str, int]], state: dict) -> None:
        """A build's result: every hub's summary, replacing what was kept, and
        the state that says how it was made (one transaction). Every sample
        and the schema go too: what a load that did not finish, or one that
        did not follow what it touched, left of them may be out of date."""
        with self.lock:
            if self.persist:
                db = self.db
                for table in ("hubs", "hub_relations", "pair_samples", "schema_follows"):
                    db.execute(f"DELETE FROM {table}")  # noqa: S608
                db.executemany("INSERT INTO hubs VALUES (?, ?, ?)",
                               [(e, d, sum(rels.values())) for (e, d), rels in found.items()])
                db.executemany("INSERT INTO hub_relations VALUES (?, ?, ?, ?)",
                               [(e, d, r, n) for (e, d), rels in found.items() for r, n in rels.items()])
                db.execute("INSERT OR REPLACE INTO summary_state VALUES ('hubs', ?)", (json.dumps(state),))
                db.commit()
                self._forget()
            else:
                self._forget()
                for (e, d), rels in found.items():
                    self._hubs[(e, d)] = dict(rels)
            self._state = dict(state)

    def update_hubs(self, changed: dict[tuple[str, str], dict[str, int]], state: dict,
                    touched: Iterable[tuple[str, str | None, str]] = (),
                    merged: dict[Key, tuple[int, list[str]]] | None = None, spared: Iterable[Key] = ()) -> dict:
        """Part of a build's result: the summaries of the hubs in ``changed``
        replaced (relations of no edge left out; one no longer past
        HUB_EDGES, which corrections may have made, dropped), the others
        kept, and the state (its totals counted from the tables) written in
        the same transaction, with the samples of a load: those ``merged``
        replaced, the others of the pairs it ``touched`` ((entity, relation,
        direction), a relation of None for all of them) dropped unless
        ``spared`` (it wrote none of their edges), and the schema dropped (a
        question may have made them while the load wrote). Returns that state."""
        if not self.persist:
            raise RuntimeError("a read-only view of a store does not load it")
        counted = {key: {r: n for r, n in rels.items() if n > 0} for key, rels in changed.items()}
        changed = {key: rels for key, rels in counted.items() if sum(rels.values()) > HUB_EDGES}
        with self.lock:
            db = self.db
            merged, spared = merged or {}, set(spared)
            db.executemany("DELETE FROM pair_samples WHERE entity = ? AND relation = ? AND direction = ?",
                           [k for k in _touched_samples(db, touched) if k not in spared and k not in merged])
            db.executemany("INSERT OR REPLACE INTO pair_samples VALUES (?, ?, ?, ?, ?)",
                           [(*k, n, json.dumps(sample)) for k, (n, sample) in merged.items()])
            db.execute("DELETE FROM schema_follows")
            db.executemany("DELETE FROM hub_relations WHERE entity = ? AND direction = ?", list(counted))
            db.executemany("DELETE FROM hubs WHERE entity = ? AND direction = ?", list(counted))
            db.executemany("INSERT INTO hubs VALUES (?, ?, ?)",
                           [(e, d, sum(rels.values())) for (e, d), rels in changed.items()])
            db.executemany("INSERT INTO hub_relations VALUES (?, ?, ?, ?)",
                           [(e, d, r, n) for (e, d), rels in changed.items() for r, n in rels.items()])
            totals = {d: (n, edges) for d, n, edges in
                      db.execute("SELECT direction, COUNT(*), COALESCE(SUM(edges), 0) FROM hubs GROUP BY direction")}
            state = {**state, "hubs": {d: totals.get(d, (0, 0))[0] for d in Directions},
                     "edges": sum(edges for _, edges in totals.values())}
            db.execute("INSERT OR REPLACE INTO summary_state VALUES ('hubs', ?)", (json.dumps(state),))
            db.commit()
            self._forget()
            self._state = dict(state)
        return state

    # -- crowded pairs ----------------------------------------------------------
    def samples(self, keys: Iterable[Key]) -> dict[Key, tuple[int, list[str]]]:
        """{key: (degree, neighbours in sample order)} for the pairs kept."""
        out: dict[Key, tuple[int, list[str]]] = {}
        with self.lock:
            view = self._samples
            self._room(view)
            tables = None
            for key in dict.fromkeys(keys):
                if key not in view:
                    tables = self._tables() if tables is None else tables
                    row = self.db.execute("SELECT degree, sample FROM pair_samples WHERE entity = ? AND relation = ? "
                                          "AND direction = ?", key).fetchone() if tables else None
                    view[key] = (row[0], json.loads(row[1])) if row is not None else None
                got = view[key]
                if got is not None:
                    out[key] = got
        return out

    def sample_keys(self) -> list[Key]:
        """Every crowded pair kept."""
        with self.lock:
            return [tuple(k) for k in self.db.execute("SELECT entity, relation, direction FROM pair_samples")] \
                if self._tables() else []

    def set_sample(self, key: Key, degree: int, sample: Sequence[str]) -> None:
        with self.lock:
            self._write([("INSERT OR REPLACE INTO pair_samples VALUES (?, ?, ?, ?, ?)",
                          (*key, degree, json.dumps(list(sample))))])
            self._samples[key] = (degree, list(sample))

    def big_pairs_due(self) -> bool:
        """Whether some hub pairs past SORT_MAX may lack a sample: the
        summaries were made by a tog that sampled none at load, or only
        those past a higher threshold (``sample_big`` makes them)."""
        state = self.state()
        return "big_pairs" not in state or state.get("sort_max", math.inf) > SORT_MAX

    def unsampled(self) -> list[tuple[Key, int]]:
        """The hubs' pairs past SORT_MAX edges that have no sample kept, with their degrees."""
        with self.lock:
            return [((e, r, d), n) for e, r, d, n in self.db.execute(
                "SELECT h.entity, h.relation, h.direction, h.degree FROM hub_relations h WHERE h.degree > ? "
                "AND NOT EXISTS (SELECT 1 FROM pair_samples s WHERE s.entity = h.entity "
                "AND s.relation = h.relation AND s.direction = h.direction)", (SORT_MAX,))]

    def set_big_samples(self, made: dict[Key, tuple[int, list[str]]], seconds: float) -> dict:
        """The samples :func:`sample_big` made, with the state saying so
        (``big_pairs``: how many the store keeps), in one transaction."""
        with self.lock:
            db = self.db
            if self.persist:
                db.executemany("INSERT OR REPLACE INTO pair_samples VALUES (?, ?, ?, ?, ?)",
                               [(*k, n, json.dumps(sample)) for k, (n, sample) in made.items()])
                kept = db.execute("SELECT COUNT(*) FROM pair_samples WHERE degree > ?", (SORT_MAX,)).fetchone()[0]
            else:
                kept = len(made)
            row = db.execute("SELECT value FROM summary_state WHERE key = 'hubs'").fetchone() if self._tables() else None
            state = {**(json.loads(row[0]) if row else {}), "big_pairs": kept, "big_pairs_made": len(made),
                     "big_pairs_seconds": round(seconds, 2), "sort_max": SORT_MAX}
            if self.persist:
                db.execute("INSERT OR REPLACE INTO summary_state VALUES ('hubs', ?)", (json.dumps(state),))
                db.commit()
            self._samples.update(made)
            self._state = dict(state)
            return state

    # -- the look-ahead's schema --------------------------------------------------
    def follows(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
        out: dict[tuple[str, str], list[tuple[str, str]]] = {}
        with self.lock:
            view = self._follows
            self._room(view)
            tables = None
            for r, d in dict.fromkeys(keys):
                if (r, d) not in view:
                    tables = self._tables() if tables is None else tables
                    row = self.db.execute("SELECT follows FROM schema_follows WHERE relation = ? AND direction = ?",
                                          (r, d)).fetchone() if tables else None
                    if row is None:
                        continue
                    view[(r, d)] = [(x[0], x[1]) for x in json.loads(row[0])]
                out[(r, d)] = view[(r, d)]
        return out

    def set_follows(self, found: dict[tuple[str, str], list[tuple[str, str]]]) -> None:
        with self.lock:
            self._write([("INSERT OR REPLACE INTO schema_follows VALUES (?, ?, ?)",
                          [(r, d, json.dumps(v)) for (r, d), v in found.items()])], many=True)
            self._follows.update(found)

    # -- the relations' totals ------------------------------------------------------
    def totals(self) -> tuple[dict[str, int], list[str]] | None:
        """The facts of every relation as kept, and the relations a correction
        changed since (to be counted again); None when nothing is kept (a
        load came since, or the store's totals were never counted)."""
        with self.lock:
            if self._totals is not None:  # a read-only view's own count
                return dict(self._totals), []
            if not (self._tables() and self._tables("relation_totals")) or self.db.execute(
                    "SELECT 1 FROM summary_state WHERE key = 'totals'").fetchone() is None:
                return None
            counts = dict(self.db.execute("SELECT relation, facts FROM relation_totals"))
            return counts, [r for (r,) in self.db.execute("SELECT relation FROM relation_recount")]

    def set_totals(self, counts: dict[str, int], *, recounted: Sequence[str] | None = None,
                   seconds: float = 0.0) -> None:
        """Keep ``counts``, every relation's facts: all counted now
        (``recounted`` None), or only those of ``recounted`` (the others as
        kept; one absent from ``counts`` has no fact left)."""
        with self.lock:
            if not self.persist:
                self._totals = {r: n for r, n in counts.items() if n > 0}
                return
            db = self.db
            if recounted is None:
                from engine.graph import utc_now

                state = {"state": "fresh", "counted": utc_now(), "seconds": round(seconds, 2)}
                db.execute("DELETE FROM relation_totals")
                db.execute("DELETE FROM relation_recount")
                db.execute("INSERT OR REPLACE INTO summary_state VALUES ('totals', ?)", (json.dumps(state),))
                rows = [(r, n) for r, n in counts.items() if n > 0]
            else:
                db.executemany("DELETE FROM relation_totals WHERE relation = ?", [(r,) for r in recounted])
                db.executemany("DELETE FROM relation_recount WHERE relation = ?", [(r,) for r in recounted])
                rows = [(r, counts[r]) for r in dict.fromkeys(recounted) if counts.get(r, 0) > 0]
            db.executemany("INSERT INTO relation_totals VALUES (?, ?)", rows)
            db.commit()  # one transaction: the totals and what they say they are

    def recount(self, relations: Iterable[str]) -> None:
        """The kept totals of ``relations`` are counted again when next asked
        for (a correction interrupted before its step was counted changed
        them by what it cannot tell)."""
        with self.lock:
            self._write([("INSERT OR IGNORE INTO relation_recount VALUES (?)",
                          [(r,) for r in dict.fromkeys(relations)])], many=True)
            self._totals = None

    # -- a correction's step ------------------------------------------------------
    def counted(self, step: str) -> bool:
        """Whether ``count_step`` has run for ``step``."""
        with self.lock:
            return self.db.execute("SELECT 1 FROM correction_steps WHERE step = ?", (step,)).fetchone() is not None

    def count_step(self, step: str, changes: Iterable[tuple[str, str, str | None, int]]) -> None:
        """What a correction's step is about to change, (subject, relation,
        object or None for a literal, +1 or -1) a fact, added to the degrees of the
        hubs at its ends and to the relations' totals (when kept), with the
        step's mark, in one transaction: the hubs' pairs and the relations
        are not counted again, and a step finished twice adds once."""
        changes = list(changes)
        hub_rows = common.end_changes(changes)
        totals: dict[str, int] = {}
        for _, r, _, n in changes:
            totals[r] = totals.get(r, 0) + n
        ends = sorted({(e, d) for e, d, _ in hub_rows})
        with self.lock:
            db = self.db
            try:
                db.execute("INSERT INTO correction_steps VALUES (?)", (step,))
                db.executemany(
                    "INSERT INTO hub_relations SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM hubs WHERE "
                    "entity = ?1 AND direction = ?2) "
                    "ON CONFLICT (entity, direction, relation) DO UPDATE SET degree = degree + excluded.degree",
                    [(e, d, r, n) for (e, d, r), n in hub_rows.items() if n])
                db.executemany("DELETE FROM hub_relations WHERE entity = ? AND direction = ? AND degree <= 0", ends)
                db.executemany(HUB_EDGES_SUMMED, ends)
                if db.execute("SELECT 1 FROM summary_state WHERE key = 'totals'").fetchone() is not None:
                    db.executemany("INSERT INTO relation_totals VALUES (?, ?) "
                                   "ON CONFLICT (relation) DO UPDATE SET facts = facts + excluded.facts",
                                   [(r, n) for r, n in totals.items() if n])
                    db.executemany("DELETE FROM relation_totals WHERE relation = ? AND facts <= 0",
                                   [(r,) for r in totals])
                db.commit()
            except BaseException:
                db.rollback()
                raise
            for e, _ in ends:
                self._unview(e)

    def step_done(self, step: str) -> None:
        """A correction's step is recorded as finished: its mark goes."""
        with self.lock:
            self._write([("DELETE FROM correction_steps WHERE step = ?", (step,))])

    # -- the whole -------------------------------------------------------------------
    def clear(self, samples: bool = True, *, keep_big: bool = False) -> None:
        """Forget the schema and (``samples``) every sample: a load may change
        any pair, unless it follows what it touches (then its build drops
        those, ``update_hubs``); the hub summaries stay until the load's
        build replaces them, marked stale meanwhile (``mark_stale``).
        ``keep_big``: the samples of pairs past SORT_MAX, which the summaries
        made, stay (what questions made goes: a benchmark's cold start)."""
        statements: list[tuple[str, Sequence]] = [("DELETE FROM schema_follows", ())]
        if samples:
            statements.append(("DELETE FROM pair_samples WHERE degree <= ?", (SORT_MAX,)) if keep_big
                              else ("DELETE FROM pair_samples", ()))
        with self.lock:
            self._write(statements)
            self._forget()

    def hub_figures(self) -> dict | None:
        """The summarised entities past HUB_EDGES edges in a direction, by
        direction, and their edges, as the kept counts say now (corrections
        move them; the state keeps what the build found); None without tables."""
        with self.lock:
            if not self._tables():
                return None
            rows = self.db.execute("SELECT direction, COUNT(*), COALESCE(SUM(edges), 0) FROM hubs WHERE edges > ? "
                                   "GROUP BY direction", (HUB_EDGES,)).fetchall()
        return {"hubs": {"out": 0, "in": 0, **{d: n for d, n, _ in rows}}, "edges": sum(e for _, _, e in rows)}

    def counts(self) -> dict[str, int]:
        with self.lock:
            if not self._tables():
                return {"hubs": 0, "crowded_pairs": 0, "schema_relations": 0}
            return {
                "hubs": self.db.execute("SELECT COUNT(*) FROM hubs").fetchone()[0],
                "crowded_pairs": self.db.execute("SELECT COUNT(*) FROM pair_samples").fetchone()[0],
                "schema_relations": self.db.execute("SELECT COUNT(*) FROM schema_follows").fetchone()[0],
            }


def _touched_samples(db: sqlite3.Connection, touched: Iterable[tuple[str, str | None, str]]) -> list[Key]:
    """The keys of the kept samples among ``touched`` (a relation of None:
    every relation of that entity and direction). The samples are few
    beside what a load may touch: their keys are read and matched here."""
    whole: set[tuple[str, str]] = set()
    some: set[Key] = set()
    for entity, relation, direction in touched:
        if relation is None:
            whole.add((entity, direction))
        else:
            some.add((entity, relation, direction))
    if not whole and not some:
        return []
    return [(e, r, d) for e, r, d in db.execute("SELECT entity, relation, direction FROM pair_samples")
            if (e, d) in whole or (e, r, d) in some]


def _parts(items: list[str], size: int = 500) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


class HubTally:
    """Which entities may be hubs, from a random sample of the triples a
    load writes into an empty store: each line is taken with probability
    1 / SAMPLE_RATE (seeded, so a load is repeatable), and the subjects
    and IRI objects of those taken are counted. An entity with more than
    HUB_EDGES edges in a direction is sampled about 100 times there; it
    is a candidate from CANDIDATE (the chance that a hub of 1,001 edges
    falls short is about 3e-9; the price of a miss is that hub's
    summary made when a question first meets it). Every candidate is then
    counted exactly (:func:`build`), so a false one costs a small count.

    The counts are pruned as in Manku and Motwani's lossy counting, so
    memory stays bounded on any file: every TALLY_BUCKET sampled lines,
    the entities seen too rarely to be hubs are dropped, and what an entity
    may have lost that way is kept beside it and counted in its favour."""

    def __init__(self, seed: int = 0) -> None:
        rng = random.Random(seed)
        # lines from one taken line to the next: geometric, so each line is
        # taken with probability 1 / SAMPLE_RATE (a table, used in turn)
        per = math.log(1.0 - 1.0 / SAMPLE_RATE)
        self.gaps = [1 + int(math.log(1.0 - rng.random()) / per) for _ in range(GAPS)]
        self.next_gap = 0
        self.skip = self._gap()  # lines to pass, this one included, before the next one taken
        self.lock = threading.Lock()
        self.counts: dict[str, dict[bytes, int]] = {"out": {}, "in": {}}
        self.lost: dict[str, dict[bytes, int]] = {"out": {}, "in": {}}
        self.taken = 0
        self.bucket = 0  # rounds of pruning so far

    def _gap(self) -> int:
        gap = self.gaps[self.next_gap]
        self.next_gap = (self.next_gap + 1) % GAPS
        return gap

    def lines(self, data: bytes) -> None:
        """N-Triples text (whole lines) that the load writes."""
        with self.lock:
            lines = data.split(b"\n")
            if not lines[-1]:
                lines.pop()  # what follows the last newline
            picks = []
            i, n, gaps, g = self.skip - 1, len(lines), self.gaps, self.next_gap
            while i < n:
                picks.append(lines[i])
                i += gaps[g]
                g = (g + 1) % GAPS
            self.skip, self.next_gap = i - n + 1, g
            add, triple = self._add, Touched.TRIPLE.match
            for line in picks:
                m = triple(line)
                if m is None:
                    continue  # blank, a comment, or not a triple (the load skips it)
                s, _, o = m.groups()
                if b"\\" in line:  # escapes in IRIs: one entity however a line spells it
                    s, o = _canonical(s), _canonical(o)
                if s[:1] == b"<":
                    add("out", s)
                if o:
                    add("in", o)
            self._taken(len(picks))

    def quads(self, quads: Iterable) -> Iterator:
        """Quads the load writes, passed on as they are (and tallied)."""
        import pyoxigraph as ox

        for q in quads:
            self.skip -= 1
            if not self.skip:
                with self.lock:
                    if isinstance(q.subject, ox.NamedNode):
                        self._add("out", _token(q.subject))
                    if isinstance(q.object, ox.NamedNode):
                        self._add("in", _token(q.object))
                    self.skip = self._gap()
                    self._taken(1)
            yield q

    def _add(self, direction: str, key: bytes) -> None:
        counts = self.counts[direction]
        seen = counts.get(key)
        counts[key] = 1 if seen is None else seen + 1
        if seen is None and self.bucket:
            self.lost[direction][key] = self.bucket

    def _taken(self, more: int) -> None:
        """Count lines taken; past each TALLY_BUCKET, a round of pruning: an
        entity whose count and possible loss are at most the rounds so far
        goes (what it had is then at most that many, which its next entry's
        loss says)."""
        self.taken += more
        while self.taken >= (self.bucket + 1) * TALLY_BUCKET:
            self.bucket += 1
            for direction in Directions:
                counts, lost = self.counts[direction], self.lost[direction]
                for key in [k for k, n in counts.items() if n + lost.get(k, 0) <= self.bucket]:
                    del counts[key]
                    lost.pop(key, None)

    def candidates(self) -> dict[str, list[str]]:
        """{direction: IRIs that may have more than HUB_EDGES edges that way}."""
        import pyoxigraph as ox

        with self.lock:
            return {d: [_iri(k, ox) for k, n in self.counts[d].items() if n + self.lost[d].get(k, 0) >= CANDIDATE]
                    for d in Directions}


def _iri(token: bytes, ox) -> str:
    """An IRI's value from its N-Triples form (``<...>``, escapes read)."""
    if b"\\" not in token:
        return token[1:-1].decode("utf-8", "replace")
    try:
        return next(iter(ox.parse(token + b" <urn:p> <urn:o> .", ox.RdfFormat.N_TRIPLES))).subject.value
    except (SyntaxError, StopIteration):
        return token[1:-1].decode("utf-8", "replace")


class Touched:
    """What a load writes when the store it loads into already holds
    triples and summaries that say what they are: every entity it writes
    an edge of, and for the hubs among them (``hubs``: {direction: IRIs})
    the relations of those edges. A load only adds edges, so only these
    entities can have become hubs and only these relations of the hubs
    can have changed (:func:`update`). Past TOUCHED_MAX entities in a
    direction, at a blank node as a subject, or at a line it cannot read
    as a triple (a malformed one, which the load skips), it stops noting
    (``over``) and the build counts every edge instead. A line it notes
    that the load then refuses costs a count that finds nothing."""

    # subject, predicate, IRI object: terms by their shape (N-Triples needs no blank between them)
    TRIPLE = re.compile(rb'^[ \t]*(<[^>\n]*>|_:[^\s<"]+)[ \t]*(<[^>\n]*>)[ \t]*(<[^>\n]*>)?', re.M)
    NO_TRIPLE = re.compile(rb"^[ \t]*(?:#|\r?$)", re.M)  # a blank or comment line (and the end after the last)

    def __init__(self, hubs: dict[str, list[str]], sampled: Iterable[Key] = ()) -> None:
        self.lock = threading.Lock()
        self.hubs = {d: {b"<" + e.encode() + b">" for e in hubs.get(d, ())} for d in Directions}
        self.keys: dict[str, set[bytes]] = {"out": set(), "in": set()}
        self.pairs: dict[str, set[tuple[bytes, bytes]]] = {"out": set(), "in": set()}
        self.over = False
        # the crowded pairs kept when the load began, and the edges it writes of them
        # (whole lines, or quads), so that their samples are merged rather than made again
        self.sampled: frozenset[Key] = frozenset(sampled)
        self.sampled_pairs: dict[str, set[tuple[bytes, bytes]]] = {"out": set(), "in": set()}
        for e, r, d in self.sampled:
            self.sampled_pairs[d].add((b"<" + e.encode() + b">", b"<" + r.encode() + b">"))
        self.sample_lines: list[bytes] = []
        self.sample_quads: list = []
        self.samples_over = False

    def lines(self, data: bytes) -> None:
        """N-Triples text (whole lines) that the load writes."""
        if self.over:
            return
        found = self.TRIPLE.findall(data)
        if len(found) < data.count(b"\n") + 1 - len(self.NO_TRIPLE.findall(data)) or \
                (b"\r" in data and re.search(rb"\r(?!\n)", data)):
            with self.lock:  # a line this reading missed (or a lone CR ends lines): count every edge
                self._give_up()
            return
        if b"\\" in data:  # escapes in IRIs: as the store reads them, so that hubs are known by their keys
            found = [(_canonical(s), _canonical(p), _canonical(o)) for s, p, o in found]
        hubs_out, hubs_in = self.hubs["out"], self.hubs["in"]
        with self.lock:
            if any(s[:2] == b"_:" for s, _, _ in found):
                self._give_up()
                return
            self.keys["out"].update(s for s, _, _ in found if s[:1] == b"<")
            self.keys["in"].update(o for _, _, o in found if o)
            self.pairs["out"].update((s, p) for s, p, _ in found if s in hubs_out)
            self.pairs["in"].update((o, p) for _, p, o in found if o in hubs_in)
            so, si = self.sampled_pairs["out"], self.sampled_pairs["in"]
            if (so or si) and not self.samples_over and (
                    any((s, p) in so for s, p, _ in found) or any((o, p) in si for _, p, o in found if o)):
                self._sample_lines(data)
            self._room()

    def _sample_lines(self, data: bytes) -> None:
        """Keep the lines of ``data`` that are edges of a kept crowded pair."""
        so, si = self.sampled_pairs["out"], self.sampled_pairs["in"]
        for m in self.TRIPLE.finditer(data):
            s, p, o = m.groups()
            if b"\\" in m.group(0):
                s, p, o = _canonical(s), _canonical(p), _canonical(o)
            if (s, p) in so or (o and (o, p) in si):
                end = data.find(b"\n", m.start())
                self.sample_lines.append(data[m.start():end if end >= 0 else len(data)])
        self._sample_room()

    def _sample_room(self) -> None:
        if len(self.sample_lines) + len(self.sample_quads) > FACTS_MAX:
            self.samples_over = True
            self.sample_lines.clear()
            self.sample_quads.clear()

    def quads(self, quads: Iterable) -> Iterator:
        """Quads the load writes, passed on as they are (and noted)."""
        import pyoxigraph as ox

        out, into = self.keys["out"], self.keys["in"]
        hubs_out, hubs_in = self.hubs["out"], self.hubs["in"]
        for i, q in enumerate(quads):
            if not self.over:
                if not isinstance(q.subject, ox.NamedNode):
                    with self.lock:
                        self._give_up()
                else:
                    s, p = _token(q.subject), _token(q.predicate)
                    out.add(s)
                    if s in hubs_out:
                        self.pairs["out"].add((s, p))
                    o = _token(q.object) if isinstance(q.object, ox.NamedNode) else None
                    if o is not None:
                        into.add(o)
                        if o in hubs_in:
                            self.pairs["in"].add((o, p))
                    if ((s, p) in self.sampled_pairs["out"] or (o, p) in self.sampled_pairs["in"]) \
                            and not self.samples_over:
                        self.sample_quads.append(q)
                        self._sample_room()
                    if i % 4096 == 0:
                        with self.lock:
                            self._room()
            yield q

    def _room(self) -> None:
        if max(map(len, self.keys.values())) > TOUCHED_MAX:
            self._give_up()

    def _give_up(self) -> None:
        self.over = True
        for d in Directions:
            self.keys[d].clear()
            self.pairs[d].clear()
        self.sample_lines.clear()
        self.sample_quads.clear()

    def sample_edges(self) -> dict[Key, set[str]] | None:
        """{key of a pair kept when the load began: the neighbours (ids) the
        load wrote edges to}, from the quads noted and the lines, read by
        the store's own parser (a line it refused, the load skipped), or
        None past FACTS_MAX."""
        import pyoxigraph as ox

        with self.lock:
            if self.samples_over or self.over:
                return None
            quads = list(self.sample_quads)
            for line in self.sample_lines:
                try:
                    quads.extend(ox.parse(line, ox.RdfFormat.N_TRIPLES))
                except SyntaxError:
                    continue  # the load skipped it
        found: dict[Key, set[str]] = {}
        for q in quads:
            s, p, o = q.subject, q.predicate, q.object
            if isinstance(o, ox.BlankNode) or not isinstance(s, ox.NamedNode):
                continue
            if (key := (s.value, p.value, "out")) in self.sampled:
                found.setdefault(key, set()).add(str(o) if isinstance(o, ox.Literal) else o.value)
            if isinstance(o, ox.NamedNode) and (key := (o.value, p.value, "in")) in self.sampled:
                found.setdefault(key, set()).add(s.value)
        return found

    def touched(self) -> tuple[dict[str, list[str]], dict[tuple[str, str], list[str]]] | None:
        """({direction: IRIs the load wrote an edge of}, {(hub, direction):
        the relations of those edges}), or None past the bounds."""
        import pyoxigraph as ox

        with self.lock:
            self._room()
            if self.over:
                return None
            relations: dict[tuple[str, str], list[str]] = {}
            for d in Directions:
                for e, p in sorted(self.pairs[d]):
                    relations.setdefault((_iri(e, ox), d), []).append(_iri(p, ox))
            return {d: sorted(_iri(k, ox) for k in self.keys[d]) for d in Directions}, relations


def _token(node) -> bytes:
    """A pyoxigraph NamedNode as the key a line's IRI token gives (``_canonical``)."""
    return b"<" + node.value.encode() + b">"


def _canonical(token: bytes) -> bytes:
    """An IRI token with its escapes read (``<\\u00E9>`` is ``<é>``); anything else as it is."""
    if token[:1] != b"<" or b"\\" not in token:
        return token
    import pyoxigraph as ox

    return b"<" + _iri(token, ox).encode() + b">"


def build(db: Database, *, how: str = "at load", progress: bool = False,
          candidates: dict[str, list[str]] | None = None) -> dict:
    """Summarise every hub of the KG: first the entities with more than
    ``HUB_EDGES`` edges in a direction, counted by the store in one pass
    per direction (or, given ``candidates`` from a load's :class:`HubTally`,
    only those), then each hub's relations and their degrees (one native
    count over its edges; a candidate that turns out to have at most
    HUB_EDGES is dropped, which its count tells). pyoxigraph lets go of the interpreter while it
    evaluates, so the work is shared by a thread per direction. What was
    kept is replaced in one transaction, and the state says when and
    ``how`` (``at load``, ``on first use``); then the biggest pairs are
    sampled (:func:`sample_big`). Returns that state."""
    import pyoxigraph as ox

    from engine.graph import utc_now
    from engine.queries import render, sparql_term

    started = time.perf_counter()
    found: dict[tuple[str, str], dict[str, int]] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        # a pass over the KG per direction (unless a load sampled it), then a count per hub
        bar = tqdm(total=0 if candidates is not None else 2, unit="query", desc="summarising hubs", dynamic_ncols=True, leave=False)
    ticks = threading.Lock()

    def tick(more: int = 0, done: int = 1) -> None:
        if bar is not None:
            with ticks:
                bar.total += more
                bar.update(done)

    def run(direction: str) -> None:
        if candidates is None:
            hubs = [row["e"].value for row in db.query(render(f"hubs_{direction}", limit=HUB_EDGES))]
        else:
            hubs = candidates[direction]
        tick(len(hubs), int(candidates is None))
        for hub in hubs:
            degrees = _degrees(db, sparql_term(ox.NamedNode(hub)), direction)
            if candidates is None or sum(degrees.values()) > HUB_EDGES:  # a candidate may be none (then a small read)
                found[(hub, direction)] = degrees
            tick()

    _each_direction(run, bar)
    state = {"state": "fresh", "built": utc_now(), "how": how, "seconds": round(time.perf_counter() - started, 2),
             "hubs": {d: sum(1 for (_, dd) in found if dd == d) for d in Directions},
             "edges": sum(sum(rels.values()) for rels in found.values()), "threshold": HUB_EDGES,
             "found": "counted" if candidates is None else "sampled",
             "candidates": None if candidates is None else sum(map(len, candidates.values()))}
    db.summaries.replace_hubs(found, state)
    return sample_big(db, progress=progress)


def update(db: Database, touched: dict[str, list[str]], relations: dict[tuple[str, str], list[str]], *,
           how: str = "at load", progress: bool = False, sampled: Iterable[Key] = (),
           sample_edges: dict[Key, set[str]] | None = None) -> dict:
    """The hub summaries after a load into a store whose summaries were
    fresh, from what it touched (a :class:`Touched`): a load only adds
    edges, so every other hub stays as it was. A touched hub has the
    relations the load wrote edges of counted again, each on its own, or
    all of them in one grouped count when that reads less (PAIR_COST) or
    the load did not say which; the other touched entities, which had at most
    HUB_EDGES edges before, are counted in batches, and each one past
    HUB_EDGES is grouped. A thread per direction, as in :func:`build`.
    The crowded pairs' samples the load cannot have changed are kept; of
    those ``sampled`` when it began, the ones it wrote edges of
    (``sample_edges``, :meth:`Touched.sample_edges`) get those neighbours
    merged in, the sample order kept (without them, they go); the biggest
    pairs left without one are sampled (:func:`sample_big`). Returns the
    state, which says so (``found: updated``, ``samples_merged``)."""
    import pyoxigraph as ox

    from engine.graph import utc_now
    from engine.queries import render, sparql_term, sparql_values

    started = time.perf_counter()
    was = db.summaries.hubs(sorted({e for es in touched.values() for e in es}))
    changed: dict[tuple[str, str], dict[str, int]] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=sum(map(len, touched.values())), unit="entity", desc="updating hub summaries",
                   dynamic_ncols=True, leave=False)
    ticks = threading.Lock()

    def tick(done: int) -> None:
        if bar is not None:
            with ticks:
                bar.update(done)

    def nodes(iris: Iterable[str]) -> list:
        out = []
        for iri in iris:
            try:
                out.append(ox.NamedNode(iri))
            except ValueError:
                continue  # noted from a line the store refused
        return out

    def run(direction: str) -> None:
        grown: list[str] = []
        others = [e for e in touched[direction] if (e, direction) not in was]
        for part in _parts(others, 1000):
            rows = db.query(render(f"grown_{direction}", limit=HUB_EDGES,
                                   entities=sparql_values([n] for n in nodes(part))))
            grown += [row["e"].value for row in rows]
            tick(len(part))
        new = set(grown)
        for hub in [e for e in touched[direction] if (e, direction) in was] + grown:
            if hub not in new:
                tick(1)
            (node,) = nodes([hub]) or (None,)
            if node is None:
                continue
            term = sparql_term(node)
            old = was.get((hub, direction), {})
            some = relations.get((hub, direction)) if hub not in new else None
            if some is not None and PAIR_COST * len(some) + sum(old.get(r, 0) for r in some) < sum(old.values()):
                # a few of its relations: each counted (an index range of its own)
                changed[(hub, direction)] = {**old, **{
                    r.value: int(db.query(render(f"pair_edges_{direction}", e=term, p=sparql_term(r)))[0]["n"].value)
                    for r in nodes(some)}}
            else:  # a new hub, most of one's edges, or the load did not say which relations: all of them
                changed[(hub, direction)] = _degrees(db, term, direction)

    _each_direction(run, bar)
    state = {"state": "fresh", "built": utc_now(), "how": how, "seconds": round(time.perf_counter() - started, 2),
             "threshold": HUB_EDGES, "found": "updated", "touched": len({e for es in touched.values() for e in es}),
             "recounted": len(changed)}
    # the samples the load may have changed: a hub's of the relations it wrote, any other entity's all
    every: list[str | None] = [None]
    samples = [(e, r, d) for d in Directions for e in touched[d]
               for r in ((relations.get((e, d)) or every) if (e, d) in was else every)]
    merged: dict[Key, tuple[int, list[str]]] = {}
    if sample_edges is not None:
        kept = db.summaries.samples(sample_edges)
        merged = {key: _merged(db, key, kept[key], new, changed.get((key[0], key[2]), {}).get(key[1]))
                  for key, new in sample_edges.items() if key in kept}
    state["samples_merged"] = len(merged)
    db.summaries.update_hubs(changed, state, samples, merged, sampled if sample_edges is not None else ())
    return sample_big(db, progress=progress)


def _merged(db: Database, key: Key, kept: tuple[int, list[str]], new: set[str],
            degree: int | None) -> tuple[int, list[str]]:
    """A kept sample with the neighbours a load wrote edges to merged in
    (``merged_sample``), with the pair's degree: ``degree`` when the update
    has just counted it (a hub's pair), else counted now."""
    import pyoxigraph as ox

    from engine.backends.common import merged_sample
    from engine.queries import render, sparql_term

    entity, relation, direction = key
    if degree is None:
        rows = db.query(render(f"degree_{direction}", e=sparql_term(ox.NamedNode(entity)),
                               p=sparql_term(ox.NamedNode(relation))))
        degree = int(rows[0]["n"].value)
    before, old = kept
    return degree, merged_sample(old, before, new, SAMPLE_KEEP)


def sample_big(db: Database, *, progress: bool = False) -> dict:
    """Sample every hub pair past SORT_MAX edges that has no sample kept
    (after a build, all of them; after a load's update, those it added or
    whose samples it dropped; in a store summarised by an older tog, all):
    its neighbours streamed once in the store's order, the first
    SAMPLE_KEEP in the sample order kept in a heap (blank nodes, which have
    no place in it, left out as the store's sort leaves them), with the
    degree its summary counted. Saved with the state in one transaction
    (a kill before it leaves the state without ``big_pairs``: the next
    question makes them first). Returns the state."""
    import heapq

    import pyoxigraph as ox

    from engine.queries import render, sparql_term

    started = time.perf_counter()
    todo = db.summaries.unsampled()
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=sum(n for _, n in todo), unit="edge", unit_scale=True, desc="sampling the biggest pairs",
                   dynamic_ncols=True, leave=False)
    made: dict[Key, tuple[int, list[str]]] = {}
    try:
        for (entity, relation, direction), degree in todo:
            rows = db.stream(render(f"pair_neighbours_{direction}", e=sparql_term(ox.NamedNode(entity)),
                                    p=sparql_term(ox.NamedNode(relation))))
            first = heapq.nsmallest(SAMPLE_KEEP, _sample_keyed(rows))
            made[(entity, relation, direction)] = (degree, [x for _, x in first])
            if bar is not None:
                bar.update(degree)
    finally:
        if bar is not None:
            bar.close()
    return db.summaries.set_big_samples(made, time.perf_counter() - started)


def _sample_keyed(rows) -> Iterator[tuple[bytes, str]]:
    """(SHA-1 digest, node id) of each neighbour in one-column ``rows``: the
    order of ``backends.common.sample_key`` (a digest sorts as its hex
    does), a third cheaper a row than calling it; blank nodes left out."""
    import hashlib

    import pyoxigraph as ox

    sha1, named, literal = hashlib.sha1, ox.NamedNode, ox.Literal
    for (x,) in rows:
        if isinstance(x, named):
            v = x.value
            yield sha1(v.encode()).digest(), v
        elif isinstance(x, literal):
            yield sha1(x.value.encode()).digest(), str(x)


def _degrees(db: Database, term: str, direction: str) -> dict[str, int]:
    """Every relation of one entity (SPARQL text) in a direction, with its degree."""
    from engine.queries import render

    return {row["p"].value: int(row["n"].value) for row in db.query(render(f"degrees_{direction}", e=term))}


def _each_direction(run, bar) -> None:
    """``run(direction)`` in a thread per direction (pyoxigraph lets go of
    the interpreter while it evaluates); the first failure is raised here,
    once both are done and the progress bar is closed."""
    failures: list[BaseException] = []

    def guarded(direction: str) -> None:
        try:
            run(direction)
        except BaseException as e:  # handed to the caller below
            failures.append(e)

    workers = [threading.Thread(target=guarded, args=(d,), name=f"tog-hubs-{d}", daemon=True) for d in Directions]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if bar is not None:
        bar.close()
    if failures:
        raise failures[0]
