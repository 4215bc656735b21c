"""The Neo4j backend's correction log.

A correction's fact changes and its ``(:TogCorrection)`` record are written
in one transaction; added relationships carry its id (``tog_correction``)
and the record links ``ABOUT`` the entities it changed.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyoxigraph as ox

from engine.backends.common import name_rank, sample_hash
from engine.backends.neo4j.kg import refresh_summaries
from engine.backends.neo4j.session import Neo4jSession
from engine.backends.neo4j.sink import SOLE_LOAD, WRITER_KEYS, literal_parts
from engine.graph import RDFS_LABEL, Correction, Fact, is_literal, linking_keys, literal_term, name_keys, stored_fact
from engine.queries import cypher, cypher_name, render_cypher


HELD_BATCH = 1000  # facts a statement of ``held``


def stored(facts: Sequence[Fact]) -> list[Fact]:
    """``facts`` with their values in the form Neo4j keeps them (``stored_fact``)."""
    return [stored_fact(f) for f in facts]


class Neo4jCorrections:
    """``CorrectionLog`` in a Neo4j database."""

    def __init__(self, session: Neo4jSession) -> None:
        self.session = session

    def has_fact(self, fact: Fact) -> bool:
        ((s, r, o),) = stored([fact])
        if self._naming(r, o):
            return self._has_name(s, r, o)
        rows = self.session.run_text(render_cypher("fact_exists", type=cypher_name(r)), s=s, o=o, literal=is_literal(o))
        return bool(rows and rows[0]["found"])

    def _has_name(self, s: str, r: str, o: str) -> bool:
        """A name fact holds when a correction put it in (its edge), when it
        is the shown name (or the loaded one a correction's displaced), or
        when a load made its key, unless it is another spelling of the shown
        name: that one is held as it is shown (as on the embedded store,
        which holds every name as written)."""
        name = literal_term(o).value
        key = name_keys([name])[0]
        rows = self.session.run_text(render_cypher("name_held", type=cypher_name(r)), s=s, o=o, name=name, key=key)
        if not rows:
            return False
        shown = rows[0]["shown"]
        if rows[0]["edge"] or name in (shown, rows[0]["before"]):
            return True
        return bool(rows[0]["loaded"]) and (shown is None or name_keys([shown])[0] != key)

    def _naming(self, relation: str, o: str) -> bool:
        """Is this a name fact (a name predicate's literal)? A load keeps
        those as the entity's shown name and linking keys, not as edges."""
        return is_literal(o) and relation in self.session.name_predicates

    def held(self, facts: Sequence[Fact]) -> set[Fact]:
        found: set[Fact] = {f for f in facts if self._naming(f[1], f[2]) and self.has_fact(f)}
        by_type: dict[str, list[dict]] = {}
        for i, (s, r, o) in enumerate(stored(facts)):
            if self._naming(r, o):
                continue
            by_type.setdefault(r, []).append({"i": i, "s": s, "o": o, "literal": is_literal(o)})
        for r, rows in by_type.items():
            text = render_cypher("facts_held", type=cypher_name(r))
            for at in range(0, len(rows), HELD_BATCH):
                found.update(facts[row["i"]] for row in self.session.run_text(text, facts=rows[at:at + HELD_BATCH]))
        return found

    def _change(self, tx, c: Correction, remove: Sequence[Fact], add: Sequence[Fact],
                mark: bool = True) -> list[tuple[str, str, str | None, int]]:
        """Take ``remove`` out and put ``add`` in (marked with ``c`` when
        ``mark``); the facts that really went (-1) or came (+1), by the
        server's own counters, as ``end_changes`` takes them (a literal
        object as None). A name fact also changes the entity's linking keys
        and shown name (``_unname``, ``_rename``)."""
        correction_id = c.id if mark else None
        changed: list[tuple[str, str, str | None, int]] = []
        for s, r, o in remove:
            text = render_cypher("fact_remove", type=cypher_name(r))  # (the type in the text: see fact_exists)
            summary = tx.run(text, s=s, o=o, literal=is_literal(o)).consume()
            changed += [(s, r, None if is_literal(o) else o, -1)] * summary.counters.relationships_deleted
            if self._naming(r, o):
                self._unname(tx, s, literal_term(o).value)
        for s, r, o in add:
            if is_literal(o):
                _, value, datatype, lang, o_sk = literal_parts(literal_term(o))
                summary = tx.run(render_cypher("fact_add_value", type=cypher_name(r)), s=s, o=o, value=value,
                                 datatype=datatype, lang=lang, correction=correction_id, s_sk=sample_hash(s),
                                 o_sk=o_sk).consume()
            else:
                summary = tx.run(render_cypher("fact_add_entity", type=cypher_name(r)), s=s, o=o,
                                 correction=correction_id, s_sk=sample_hash(s), o_sk=sample_hash(o)).consume()
            changed += [(s, r, None if is_literal(o) else o, 1)] * summary.counters.relationships_created
            if self._naming(r, o):
                self._rename(tx, s, r, literal_term(o), f"correction:{c.id}")
        return changed

    def _rank(self, relation: str, lang: str | None) -> int:
        return name_rank(lang, self.session.name_predicates.index(relation))

    def _unranked(self) -> int:
        """The rank of a shown name that has none (an entity an older tog's
        correction made): an untagged label's, as ``--new`` gives it."""
        return self._rank(RDFS_LABEL, None) if RDFS_LABEL in self.session.name_predicates else 0

    def _names(self, tx, entity: str) -> tuple[dict, list[tuple[int, str]]]:
        """``names_of``'s row, and the (rank, text) of each name edge."""
        predicates = self.session.name_predicates
        types = "|".join(cypher_name(p) for p in predicates)
        rows = tx.run(render_cypher("names_of", types=types), s=entity).data()
        row = rows[0] if rows else {"shown": None, "rank": None, "before": None, "before_rank": None, "names": []}
        return row, sorted((self._rank(r, lang), value) for r, value, lang in row["names"] if r in predicates)

    def _rename(self, tx, entity: str, relation: str, name: ox.Literal, source: str) -> None:
        """A name put in (beside its edge): linked by its key, and shown when
        it ranks before the shown name, which is kept aside when no
        correction put it in (a load's: Neo4j keeps no other copy of it)."""
        keys = [[k, e] for e, k in linking_keys([(entity, name.value)])]
        if keys:
            tx.run(cypher("load_name_keys"), rows=keys, source=source).consume()
        row, edges = self._names(tx, entity)
        rank, shown, before = self._rank(relation, name.language), row["shown"], (row["before"], row["before_rank"])
        shown_rank = row["rank"] if row["rank"] is not None else self._unranked()
        if shown is not None and (shown_rank, shown) <= (rank, name.value):
            return
        if shown is not None and before[0] is None and shown not in {v for _, v in edges}:
            before = (shown, shown_rank)
        tx.run(cypher("name_set"), s=entity, name=name.value, rank=rank, before=before[0], before_rank=before[1],
               keys=[]).consume()

    def _unname(self, tx, entity: str, text: str) -> None:
        """A name taken out: its key goes unless another name of the entity
        has it, and the entity is shown by its best other name when it was
        shown by this one: of those corrections put in, and the load's shown
        name that one displaced (Neo4j keeps a load's other names as keys only)."""
        row, edges = self._names(tx, entity)
        before = (row["before"], row["before_rank"]) if row["before"] not in (None, text) else (None, None)
        kept = {k for _, k in linking_keys([(entity, v) for _, v in edges])}
        if before[0] is not None:
            kept |= {k for _, k in linking_keys([(entity, before[0])])}
        gone = [k for _, k in linking_keys([(entity, text)]) if k not in kept]
        shown, rank = row["shown"], row["rank"]
        if shown == text:
            aside = [(before[1] if before[1] is not None else self._unranked(), before[0])] if before[0] else []
            choices = sorted([*edges, *aside])
            rank, shown = choices[0] if choices else (None, None)
        tx.run(cypher("name_set"), s=entity, name=shown, rank=rank, before=before[0], before_rank=before[1],
               keys=gone).consume()

    def _name(self, tx, c: Correction, on: bool) -> None:
        """The entities ``c`` made: made and named (as by an ``rdfs:label``)
        with their linking keys, or taken out again."""
        keys = dict(linking_keys(c.named))  # (none for a name longer than anyone types)
        rank = self._unranked()
        for e, name in c.named:
            tx.run(cypher("entity_named" if on else "entity_unnamed"), id=e, name=name, key=keys.get(e), rank=rank,
                   source=f"correction:{c.id}", sk=sample_hash(e)).consume()

    @staticmethod
    def _save(tx, c: Correction) -> None:
        subjects = sorted({f[0] for f in c.removed + c.added + c.kept})
        tx.run(cypher("correction_save"), id=c.id, created=c.created, reason=c.reason, run=c.run, status=c.status,
               reverted=c.reverted, record=c.to_json(), subjects=subjects).consume()

    def apply(self, c: Correction) -> Correction:
        c.kept = [f for f in c.added if self.has_fact(f)]
        c.added = [f for f in c.added if f not in c.kept]
        c.status = "active"
        self.session.name_predicates  # (read before the transaction: ``_change`` asks)

        def work(tx) -> None:
            _not_sole(tx)
            self._name(tx, c, True)
            changed = self._change(tx, c, c.removed, c.added)
            refresh_summaries(tx, self.session, c.removed, c.added, changed)
            self._save(tx, c)

        self.session.write_tx(work)
        self.session.changed()
        return c

    def list(self) -> list[Correction]:
        return [Correction.from_json(r["record"]) for r in self.session.run("corrections_list")]

    def revert(self, c: Correction, when: str) -> Correction:
        c.status, c.reverted = "reverted", when

        added, removed = stored(c.added), stored(c.removed)
        self.session.name_predicates  # (read before the transaction: ``_change`` asks)

        def work(tx) -> None:
            _not_sole(tx)
            changed = self._change(tx, c, added, removed, mark=False)  # restored facts carry no correction mark
            self._name(tx, c, False)
            refresh_summaries(tx, self.session, added, removed, changed)
            self._save(tx, c)

        self.session.write_tx(work)
        self.session.changed()
        return c


def _not_sole(tx) -> None:
    """A correction writes edges: no load is their only writer any more. It
    waits for a load transaction that creates edges in flight (it takes the
    writers' locks first); the load's later ones, and the re-run of a killed
    load, merge every edge (``Neo4jSink._decide_writes``)."""
    tx.run(cypher("load_writers_lock"), keys=list(WRITER_KEYS)).consume()
    tx.run(cypher("setting_set"), key=SOLE_LOAD, value="null").consume()
