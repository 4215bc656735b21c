"""The embedded store's correction log.

Each correction is one JSON record in the graph ``<urn:tog:corrections>``.
It is written (``applying``) before the KG changes and marked ``active``
after, so a crash in between is finished by :meth:`recover` when the store
is next opened (the changes are set operations: applying them twice
changes nothing; the summaries' counts are added once, see ``_step``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyoxigraph as ox

from engine.backends.oxigraph.database import Database
from engine.backends.oxigraph.runs import _text, vocab
from engine.graph import RDFS_LABEL, Correction, Fact, is_literal, linking_keys, literal_term, name_keys

CORRECTION_PREFIX = "urn:tog:correction:"
CORRECTIONS = ox.NamedNode("urn:tog:corrections")
_STAGE = {"applying": 0, "active": 1, "reverting": 2, "reverted": 3}


def fact_quad(fact: Fact) -> ox.Quad:
    s, r, o = fact
    obj = literal_term(o) if is_literal(o) else ox.NamedNode(o)
    return ox.Quad(ox.NamedNode(s), ox.NamedNode(r), obj, ox.DefaultGraph())


def _name_quads(c: Correction) -> list[ox.Quad]:
    """The name facts of the entities ``c`` made."""
    label = ox.NamedNode(RDFS_LABEL)
    return [ox.Quad(ox.NamedNode(e), label, ox.Literal(n), ox.DefaultGraph()) for e, n in c.named]


def _step_id(c: Correction, undo: bool) -> str:
    return f"{c.id}:{'revert' if undo else 'apply'}"


class OxigraphCorrections:
    """``CorrectionLog`` of an embedded store."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def has_fact(self, fact: Fact) -> bool:
        return self._holds(fact_quad(fact))

    def held(self, facts: Sequence[Fact]) -> set[Fact]:
        return {f for f in facts if self.has_fact(f)}

    def _holds(self, q: ox.Quad) -> bool:
        return next(iter(self.db.store.quads_for_pattern(q.subject, q.predicate, q.object, q.graph_name)), None) \
            is not None

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

    def _step(self, c: Correction, undo: bool, *, recovering: bool = False) -> None:
        """Apply ``c`` (or, ``undo``, revert it) to the KG and its summaries.
        What it changes is first added to the hubs' degrees and the
        relations' totals, with a mark of the step, in one transaction
        (``Summaries.count_step``); then the facts and names go and come (set
        operations) and the samples follow (idempotent), so finishing the
        step again is the same. An interrupted step without its mark (a
        crash before it, or a tog older than it) cannot tell what it already
        changed: what it touches is counted again instead."""
        step = _step_id(c, undo)
        remove, add = (c.added, c.removed) if undo else (c.removed, c.added)
        names = _name_quads(c)
        gone = [*map(fact_quad, remove), *(names if undo else [])]
        come = [*map(fact_quad, add), *([] if undo else names)]
        summaries = self.db.summaries
        counted = not recovering or summaries.counted(step)
        if not recovering:
            summaries.count_step(step, self._changes(gone, come))
        elif not counted:
            summaries.recount([q.predicate.value for q in [*gone, *come]])
        if not undo:
            self._name(c, True)
        self._change(remove, add, counted)
        if undo:
            self._name(c, False)
        self._relink(c, [*remove, *add], undo)

    def _changes(self, gone: Sequence[ox.Quad], come: Sequence[ox.Quad]) -> list[tuple[str, str, str | None, int]]:
        """(subject, relation, object or None for a literal, +1 or -1) for each
        fact that taking ``gone`` out and putting ``come`` in changes."""
        out: list[tuple[str, str, str | None, int]] = []
        put = set(come)
        for q in dict.fromkeys([*gone, *come]):
            s, o = q.subject, q.object
            if isinstance(s, ox.NamedNode) and (q in put) != self._holds(q):  # (a fact's subject is an IRI)
                out.append((s.value, q.predicate.value, o.value if isinstance(o, ox.NamedNode) else None,
                            1 if q in put else -1))
        return out

    def _change(self, remove: Sequence[Fact], add: Sequence[Fact], counted: bool) -> None:
        """The facts go and come, and the samples of the pairs they touch
        follow (idempotent: a change finished twice is the same), with the
        degrees of the hubs' pairs as ``count_step`` left them (``counted``)
        or counted again."""
        for fact in remove:
            self.db.store.remove(fact_quad(fact))
        self.db.store.extend([fact_quad(f) for f in add])
        from engine.backends.oxigraph.kg import OxigraphKG

        kg = OxigraphKG(self.db)
        kg.refresh([*remove, *add], counted=counted)
        names = set(self.db.name_predicates)
        kg.reshow(s for s, r, _ in [*remove, *add] if r in names)  # a name fact: the shown name follows

    def _name(self, c: Correction, on: bool) -> None:
        """The entities ``c`` made get (or lose) their name and its linking
        keys (the index rows are tagged with the correction: idempotent)."""
        if not c.named:
            return
        quads = _name_quads(c)
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

    def _relink(self, c: Correction, facts: Sequence[Fact], undo: bool) -> None:
        """The linking keys of the names ``c`` touches (its name facts, its
        new entities' names) follow the KG as it is now: a key is in the
        index while its entity has a name of that key that is linked (one in
        a language loads index, or one a correction put in, in any), and in
        no source (a load's neither) once it has none. Read from the KG and
        the records, so a step finished twice is the same."""
        predicates = set(self.db.name_predicates)
        touched = [(s, literal_term(o).value) for s, r, o in facts if r in predicates and is_literal(o)]
        rows = list(dict.fromkeys(linking_keys([*touched, *c.named])))
        if not rows:
            return
        others = [x for x in self._records() if x.status == "active" and x.id != c.id]
        put = {(s, literal_term(o).value) for x in [*others, *([] if undo else [c])]
               for s, r, o in x.added if r in predicates and is_literal(o)}
        from loaders.rdf import wanted_lang  # (what a load indexes)

        langs = self.db.name_languages
        linked = [(e, n.value) for e in dict.fromkeys(e for e, _ in rows) for n in self._names(e)
                  if wanted_lang(n, langs) or (e, n.value) in put]
        held = set(linking_keys(linked))
        self.db.index.relink([r for r in rows if r in held], [r for r in rows if r not in held], f"correction:{c.id}")

    def _names(self, entity: str) -> list[ox.Literal]:
        """Every name ``entity`` has in the KG (its own few rows: read by subject and predicate)."""
        node, store = ox.NamedNode(entity), self.db.store
        return [q.object for p in self.db.name_predicates
                for q in store.quads_for_pattern(node, ox.NamedNode(p), None, ox.DefaultGraph())
                if isinstance(q.object, ox.Literal)]

    def _begin(self, c: Correction, status: str) -> None:
        """``c`` recorded as ``status`` (applying, reverting), on disk before
        its step adds to the summaries: a record lost to a crash would leave
        them added to for a change that never happened."""
        c.status = status
        self._save(c)
        self.db.flush()

    def _finish(self, c: Correction, status: str, undo: bool) -> None:
        """``c`` recorded as ``status``. Its step's mark goes first: a crash
        in between leaves a record to finish with no mark, which counts what
        it touched again (a mark left behind would outlive its record)."""
        self.db.summaries.step_done(_step_id(c, undo))
        c.status = status
        self._save(c)

    def apply(self, c: Correction) -> Correction:
        self.db.writable()
        c.kept = [f for f in c.added if self.has_fact(f)]
        c.added = [f for f in c.added if f not in c.kept]
        self._begin(c, "applying")
        self._step(c, False)
        self._finish(c, "active", False)
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
            if c.status in ("applying", "reverting"):
                undo = c.status == "reverting"
                self._step(c, undo, recovering=True)
                self._finish(c, "reverted" if undo else "active", undo)

    def pending(self) -> bool:
        """Whether any correction record exists (a cheap check before ``recover``)."""
        return next(iter(self.db.store.quads_for_pattern(None, None, None, CORRECTIONS)), None) is not None

    def list(self) -> list[Correction]:
        self.recover()
        return self._records()

    def revert(self, c: Correction, when: str) -> Correction:
        self.db.writable()
        c.reverted = when
        self._begin(c, "reverting")
        self._step(c, True)
        self._finish(c, "reverted", True)
        self.db.flush()
        return c
