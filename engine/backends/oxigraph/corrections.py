"""The embedded store's correction log.

Each correction is one JSON record in the graph ``<urn:tog:corrections>``.
It is written (``applying``) before the KG changes and marked ``active``
after, so a crash in between is finished by :meth:`recover` when the store
is next opened (the changes are set operations: applying them twice
changes nothing).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyoxigraph as ox

from engine.backends.oxigraph.database import Database
from engine.backends.oxigraph.runs import _text, vocab
from engine.graph import RDFS_LABEL, Correction, Fact, is_literal, literal_term, name_keys

CORRECTION_PREFIX = "urn:tog:correction:"
CORRECTIONS = ox.NamedNode("urn:tog:corrections")
_STAGE = {"applying": 0, "active": 1, "reverting": 2, "reverted": 3}


def fact_quad(fact: Fact) -> ox.Quad:
    s, r, o = fact
    obj = literal_term(o) if is_literal(o) else ox.NamedNode(o)
    return ox.Quad(ox.NamedNode(s), ox.NamedNode(r), obj, ox.DefaultGraph())


class OxigraphCorrections:
    """``CorrectionLog`` of an embedded store."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def has_fact(self, fact: Fact) -> bool:
        q = fact_quad(fact)
        found = self.db.store.quads_for_pattern(q.subject, q.predicate, q.object, q.graph_name)
        return next(iter(found), None) is not None

    def _save(self, c: Correction) -> None:
        """The new record goes in before the old one goes out, so a crash in
        between leaves two records, of which readers take the furthest."""
        node = ox.NamedNode(CORRECTION_PREFIX + c.id)
        record = ox.Literal(c.to_json())
        store = self.db.store
        store.add(ox.Quad(node, vocab("record"), record, CORRECTIONS))
        for q in list(store.quads_for_pattern(node, vocab("record"), None, CORRECTIONS)):
            if q.object != record:
                store.remove(q)

    def _change(self, remove: Sequence[Fact], add: Sequence[Fact]) -> None:
        """The facts go and come, and the summaries of the pairs they touch
        follow (both idempotent: a change finished twice is the same); the
        totals of their relations are marked to be counted again first."""
        self.db.summaries.recount(r for _, r, _ in [*remove, *add])
        for fact in remove:
            self.db.store.remove(fact_quad(fact))
        self.db.store.extend([fact_quad(f) for f in add])
        from engine.backends.oxigraph.kg import OxigraphKG

        kg = OxigraphKG(self.db)
        kg.refresh([*remove, *add])
        names = set(self.db.name_predicates)
        kg.reshow(s for s, r, _ in [*remove, *add] if r in names)  # a name fact: the shown name follows

    def _name(self, c: Correction, on: bool) -> None:
        """The entities ``c`` made get (or lose) their name and its linking
        keys (the index rows are tagged with the correction: idempotent)."""
        if not c.named:
            return
        label = ox.NamedNode(RDFS_LABEL)
        self.db.summaries.recount([RDFS_LABEL])
        quads = [ox.Quad(ox.NamedNode(e), label, ox.Literal(n), ox.DefaultGraph()) for e, n in c.named]
        if on:
            self.db.store.extend(quads)
        else:
            for q in quads:
                self.db.store.remove(q)
        keys = name_keys([n for _, n in c.named])
        self.db.index.replace_source(f"correction:{c.id}", [(e, k) for (e, _), k in zip(c.named, keys)] if on else [])
        from engine.backends.oxigraph.kg import OxigraphKG

        # a load may have named the same IRI since (a bare name gets a delimited load's IRI): read it again
        OxigraphKG(self.db).reshow(e for e, _ in c.named)

    def apply(self, c: Correction) -> Correction:
        self.db.writable()
        c.kept = [f for f in c.added if self.has_fact(f)]
        c.added = [f for f in c.added if f not in c.kept]
        c.status = "applying"
        self._save(c)
        self._name(c, True)
        self._change(c.removed, c.added)
        c.status = "active"
        self._save(c)
        self.db.flush()
        return c

    def _records(self) -> list[Correction]:
        latest: dict[str, Correction] = {}
        for q in self.db.store.quads_for_pattern(None, vocab("record"), None, CORRECTIONS):
            c = Correction.from_json(_text(q.object))
            if c.id not in latest or _STAGE.get(c.status, 0) > _STAGE.get(latest[c.id].status, 0):
                latest[c.id] = c
        return sorted(latest.values(), key=lambda c: (c.created, c.id))

    def recover(self) -> None:
        """Finish a correction (or revert) that a crash interrupted (the
        writer does that; a read-only view reads the records as they are)."""
        if self.db.read_only:
            return
        for c in self._records():
            if c.status == "applying":
                self._name(c, True)
                self._change(c.removed, c.added)
                c.status = "active"
                self._save(c)
            elif c.status == "reverting":
                self._change(c.added, c.removed)
                self._name(c, False)
                c.status = "reverted"
                self._save(c)

    def pending(self) -> bool:
        """Whether any correction record exists (a cheap check before ``recover``)."""
        return next(iter(self.db.store.quads_for_pattern(None, None, None, CORRECTIONS)), None) is not None

    def list(self) -> list[Correction]:
        self.recover()
        return self._records()

    def revert(self, c: Correction, when: str) -> Correction:
        self.db.writable()
        c.status, c.reverted = "reverting", when
        self._save(c)
        self._change(c.added, c.removed)
        self._name(c, False)
        c.status = "reverted"
        self._save(c)
        self.db.flush()
        return c
