"""The outer loop: feedback on answers and corrections of the knowledge graph.

``tog feedback`` rates a run. ``tog correct`` takes facts out of the KG and
puts facts in, recording a :class:`engine.graph.Correction` with its
provenance (when, why, the run that prompted it, what was there before);
``revert`` undoes one exactly. The next search reads the corrected KG, and a
run's trace marks the facts that came from a correction.

Facts are written ``subject|relation|object``. Subject and object are names
or IRIs (``<...>`` or with a scheme) of entities in the KG; an object may be a
literal in N-Triples form (``"1994"``, ``"1994"^^<http://...#gYear>``,
``"Paris"@en``). A relation is an IRI, or the name of a relation the subject
already has (``directed_by``, ``directed by``), or one the removed fact had.
Nothing in a fact becomes query text: it is resolved to IRIs and passed on.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from collections.abc import Sequence

from engine.errors import TogError, UnknownEntityError
from engine.graph import (
    Correction,
    Fact,
    KnowledgeGraph,
    RunTree,
    is_literal,
    literal_term,
    local_name,
    relation_text,
    stored_fact,
    stored_id,
    utc_now,
)
from engine.linking import resolve
from engine.store import CorrectionLog, Store

RATINGS = ("good", "bad")
_IRI = re.compile(r"^<?[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"]+>?$")


class CorrectionError(TogError):
    """A correction or feedback that cannot be applied (nothing is changed)."""


def _iri(text: str) -> str | None:
    text = text.strip()
    if _IRI.match(text):
        iri = text[1:-1] if text.startswith("<") else text
        try:
            import pyoxigraph as ox

            ox.NamedNode(iri)
        except ValueError as e:
            raise CorrectionError(f"{text!r} is not a valid IRI ({e})") from None
        return iri
    return None


def _entities(kg: KnowledgeGraph, text: str, what: str, made: dict[str, str] | None = None) -> list[str]:
    """The entity ids ``text`` may mean (an IRI, or every entity of that name;
    ``made``: the new entities of this correction, by name and by IRI)."""
    if made and text.strip() in made:
        return [made[text.strip()]]
    iri = _iri(text)
    if iri is not None:
        if not kg.has_entity(iri):
            raise CorrectionError(f"{what} {text!r} is not in the KG")
        return [iri]
    try:
        ids = [n.id for n in resolve(kg, [text])]
    except UnknownEntityError:
        raise CorrectionError(f"{what} {text!r}: no entity with that name in the KG") from None
    if len(ids) > 1:  # names that differ only in case or accents: an exact spelling wins
        labels = kg.labels(ids)
        exact = [i for i in ids if labels.get(i) == text.strip()]
        ids = exact or ids
    return ids


def _one(ids: list[str], text: str, what: str) -> str:
    if len(ids) > 1:
        raise CorrectionError(f"{what} {text!r} names {len(ids)} entities ({', '.join(ids[:5])}); give the IRI")
    return ids[0]


def _plain(words: str) -> str:
    return " ".join(words.replace("_", " ").split()).casefold()


def _name_predicate(text: str, names: Sequence[str]) -> str | None:
    """The name predicate ``text`` means (its IRI, or its local name:
    ``label``, ``name``; the first of the store's if several), or None."""
    iri = _iri(text)
    if iri is not None:
        return iri if iri in names else None
    want = _plain(text)
    return next((p for p in names if want in (_plain(local_name(p)), _plain(relation_text(p)))), None)


def _relation(kg: KnowledgeGraph, text: str, subject: str, known: Sequence[str], names: Sequence[str] = ()) -> str:
    iri = _iri(text)
    if iri is not None:
        return iri
    want = _plain(text)
    shown = {r.id: r.text for r in kg.relations([subject]).get(subject, []) if r.direction == "out"}
    matches = [rid for rid in dict.fromkeys([*known, *shown])  # its local name, or the name tog shows it by
               if want in (_plain(local_name(rid)), _plain(shown.get(rid) or relation_text(rid)))]
    if not matches and (name := _name_predicate(text, names)) is not None:
        return name  # (listings leave name predicates out: a name is no relation to follow)
    if len(matches) > 1:
        raise CorrectionError(f"relation {text!r} names {len(matches)} relations of the subject "
                              f"({', '.join(matches[:5])}); give its IRI")
    if not matches:
        raise CorrectionError(f"relation {text!r}: the subject has no relation of that name; give its IRI")
    return matches[0]


def _objects(kg: KnowledgeGraph, text: str, made: dict[str, str] | None = None) -> list[str]:
    text = text.strip()
    if is_literal(text):
        try:
            return [stored_id(text)]
        except (SyntaxError, ValueError, StopIteration):
            raise CorrectionError(f"object {text!r} is not an N-Triples literal") from None
    return _entities(kg, text, "object", made)


def new_entity(kg: KnowledgeGraph, text: str) -> tuple[str, str]:
    """``NAME`` or ``<IRI> NAME`` -> (IRI, name) of an entity to make. A bare
    name gets the IRI a delimited load gives it (``urn:tog:e:NAME``, quoted),
    so a later load that names it too meets the same node."""
    from loaders.triples import entity_iri

    text = text.strip()
    iri = None
    if text.startswith("<") and ">" in text:
        iri, text = _iri(text[:text.index(">") + 1]), text[text.index(">") + 1:].strip()
    if not text:
        raise CorrectionError("a new entity needs a name: --new NAME or --new '<IRI> NAME'")
    if iri is None:
        try:
            taken = [n.id for n in resolve(kg, [text])]
        except UnknownEntityError:
            taken = []
        if taken:
            raise CorrectionError(f"{text!r} already names {', '.join(f'<{t}>' for t in taken[:3])}: use it, or give "
                                  f"the new entity its own IRI (--new '<IRI> {text}')")
        iri = entity_iri(text)
    if kg.has_entity(iri):
        raise CorrectionError(f"<{iri}> is in the KG already; name an existing entity in the facts instead")
    return iri, text


def parse_fact(kg: KnowledgeGraph, log: CorrectionLog, text: str, known_relations: Sequence[str] = (),
               existing: bool = False, made: dict[str, str] | None = None, names: Sequence[str] = ()) -> Fact:
    """``subject|relation|object`` -> (subject IRI, relation IRI, object id).

    A name that several entities share is narrowed to the exact spelling,
    and for a fact that must exist (``existing``) to the entities it holds
    for (``log`` tells which facts hold). The object of a name predicate
    (``names``: the store's) is a name, quoted or not."""
    parts = text.split("|", 2)  # (an object may hold a |: a name, a literal)
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise CorrectionError(f"{text!r} is not a fact; write it as SUBJECT|RELATION|OBJECT")
    subjects = _entities(kg, parts[0], "subject", made)
    naming = not is_literal(parts[2].strip()) and _names_object(kg, parts[1], subjects[0], known_relations, names)
    objects = [stored_id(str(plain_literal(parts[2].strip())))] if naming else _objects(kg, parts[2], made)
    if existing and (len(subjects) > 1 or len(objects) > 1):
        def holds(s: str, o: str) -> bool:
            try:
                return log.has_fact((s, _relation(kg, parts[1], s, known_relations, names), o))
            except CorrectionError:  # this subject has no such relation
                return False

        held = [(s, o) for s in subjects for o in objects if holds(s, o)]
        if len(held) == 1:
            subjects, objects = [held[0][0]], [held[0][1]]
    subject = _one(subjects, parts[0], "subject")
    if made and subject in made.values():  # a new entity has no relations yet: the name is the relation's
        known_relations = [*known_relations, *_relation_names(kg, parts[1])]
    relation, obj = _relation(kg, parts[1], subject, known_relations, names), _one(objects, parts[2], "object")
    if relation in names and is_literal(obj) and not literal_term(obj).value.strip():
        raise CorrectionError(f"{text!r}: a name cannot be empty")
    return subject, relation, obj


def _names_object(kg: KnowledgeGraph, text: str, subject: str, known: Sequence[str], names: Sequence[str]) -> bool:
    """Whether relation ``text`` of ``subject`` is a name predicate (not a
    relation of the subject that happens to be called ``name``)."""
    if _name_predicate(text, names) is None:
        return False
    try:
        return _relation(kg, text, subject, known, names) in names
    except CorrectionError:
        return False


def plain_literal(text: str):
    """``text`` as a plain literal (pyoxigraph's: ``str`` of it is its N-Triples form)."""
    import pyoxigraph as ox

    return ox.Literal(text)


def _relation_names(kg: KnowledgeGraph, text: str) -> list[str]:
    """Relations of the KG whose name is ``text`` (for a subject with none yet)."""
    want = _plain(text)
    return [r for r, _ in kg.relation_counts() if _plain(local_name(r)) == want]


def loads_finished(store: Store) -> None:
    """CorrectionError when a load into ``store`` has not finished. Its re-run
    writes the lines past its checkpoint again, and the store may already hold
    some of their facts: a correction (or a revert) that took one out would be
    undone, unseen. A load whose last checkpoint says complete (stopped while
    it summarised), one that stopped by itself at a checkpoint (past its
    bad lines' limit), and one whose file has changed or gone since (no
    re-run can go on with it: a re-run is a new load) block nothing."""
    if store.sink is None:
        return
    left = [c for c in store.sink.loads() if not c.complete and not c.exact]
    if not left:
        return
    import shlex

    from engine.text import printable
    from loaders.base import position, resumable

    if store.unfinished_load is not None and store.unfinished_load() == "running":
        raise CorrectionError(f"a load into {store.name} is running: correct once it ends, since a resumed run of it "
                              "writes its later lines again and could undo the change; nothing was changed "
                              "(--despite-load changes it now)")
    left = [c for c in left if resumable(c.path, c.source)]
    if not left:
        return
    c = left[0]
    path = printable(c.path) if c.path else "a file"
    more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
    again = f"tog load {shlex.quote(path)} --store {shlex.quote(store.name)}" if c.path else "tog load"
    raise CorrectionError(f"a load of {path}{more} stopped at {position(c.path or '', c.lines)} before its end "
                          "(killed, or failed): "
                          f"finish it first ({again}, with the options it had), since its re-run writes the lines "
                          "past that again and would undo the change; nothing was changed "
                          "(--despite-load changes it now)")


def correct(store: Store, remove: Sequence[str], add: Sequence[str], reason: str,
            run: str | None = None, new: Sequence[str] = (), *, despite_load: bool = False) -> Correction:
    """Apply one correction; every fact is checked before anything changes.
    ``new``: entities to make (``NAME`` or ``<IRI> NAME``), which the facts may name.
    Refused while a load has not finished (``loads_finished``), unless ``despite_load``."""
    log = store.need_corrections()
    kg = store.kg
    if not reason or not reason.strip():
        raise CorrectionError("say why: --reason TEXT")
    if not remove and not add and not new:
        raise CorrectionError("nothing to correct: give --remove, --add and/or --new")
    if not despite_load:
        loads_finished(store)
    named = [new_entity(kg, text) for text in new]
    if len({e for e, _ in named}) < len(named):
        raise CorrectionError("the same new entity is given twice")
    made = {**{n: e for e, n in named}, **{f"<{e}>": e for e, _ in named}, **{e: e for e, _ in named}}
    if run is not None:
        store.need_runs().get(run)  # UnknownRunError for a run that is not here
    names = store.sink.name_predicates if store.sink is not None else ()
    removed = [parse_fact(kg, log, f, existing=True, names=names) for f in remove]
    for fact, text in zip(removed, remove):
        if not log.has_fact(fact):
            raise CorrectionError(f"{text!r} is not a fact in the KG; nothing was changed")
    added = [parse_fact(kg, log, f, [r for _, r, _ in removed], made=made, names=names) for f in add]
    if set(removed) & set(added):
        raise CorrectionError("the same fact is removed and added")
    too_long(store, added, add)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    c = Correction(id=f"c{stamp}-{secrets.token_hex(2)}", created=utc_now(), reason=reason.strip(), run=run,
                   removed=list(dict.fromkeys(removed)), added=list(dict.fromkeys(added)), named=named)
    return log.apply(c)


def too_long(store: Store, facts: Sequence[Fact], texts: Sequence[str]) -> None:
    """CorrectionError for a fact with an IRI or literal longer than the store
    can keep (Neo4j indexes ids of at most 8,000 bytes; a load skips such a
    statement as a bad line)."""
    limit = store.sink.max_term_bytes if store.sink is not None else None
    for (s, _, o), text in zip(facts, texts):
        longest = max(len(s.encode("utf-8")), len(o.encode("utf-8")))
        if limit and longest > limit:
            raise CorrectionError(f"{text[:60]!r}...: a term of {longest:,} bytes; {store.name} keeps at most "
                                  f"{limit:,}; nothing was changed")


def taken_out_again(store: Store) -> list[tuple[Fact, str]]:
    """Facts that an active correction took out, and no later one put in,
    which the KG holds again (a load wrote them back), each with that
    correction's id, in the order of the corrections."""
    if store.corrections is None:
        return []
    out: dict[Fact, str] = {}
    for c in store.corrections.list():
        if c.status != "active":
            continue
        for f in c.removed:
            out[stored_fact(f)] = c.id
        for f in (*c.added, *c.kept):
            out.pop(stored_fact(f), None)
    held = store.corrections.held(list(out)) if out else set()
    return [(f, cid) for f, cid in out.items() if f in held]


def find(store: Store, correction_id: str) -> Correction:
    for c in store.need_corrections().list():
        if c.id == correction_id:
            return c
    raise CorrectionError(f"no correction {correction_id!r} (see `tog corrections list`)")


def revert(store: Store, correction_id: str, *, despite_load: bool = False) -> Correction:
    """Undo a correction exactly: its added facts go, its removed facts return.
    Refused while a load has not finished (``loads_finished``), unless ``despite_load``."""
    c = find(store, correction_id)
    log = store.need_corrections()
    if c.status == "reverted":
        raise CorrectionError(f"correction {correction_id} was reverted already ({c.reverted})")
    if not despite_load:
        loads_finished(store)
    # a later correction that changed nothing (every fact it added was there) never blocks
    made = {e for e, _ in c.named}
    later = [o for o in log.list() if o.status == "active" and o.created > c.created and (o.removed or o.added)
             and (set(o.removed) & set(c.added) or set(o.added) & set(c.removed) or set(o.kept) & set(c.added)
                  or any(x in made for f in o.added for x in (f[0], f[2])))]
    if later:
        raise CorrectionError(f"correction {later[0].id} changed the same facts later; revert it first")
    return log.revert(c, utc_now())


def add_feedback(store: Store, run_id: str, rating: str, comment: str | None = None,
                 answers: Sequence[str] = ()) -> dict:
    """Keep a rating with a run; ``answers`` name the right answer (what
    ``tog learn --from-feedback`` learns from, with good runs' own answers)."""
    if rating not in RATINGS:
        raise CorrectionError(f"rating must be one of {', '.join(RATINGS)}")
    entry: dict = {"at": utc_now(), "rating": rating}
    if comment:
        entry["comment"] = comment
    names = [a.strip() for a in answers if a.strip()]
    if names:
        entry["answers"] = names
    store.need_runs().feedback(run_id, entry)
    return entry


def corrected_paths(store: Store, tree: RunTree) -> dict[str, str]:
    """{path id: correction id} for the run's hops over a fact that a
    correction had added when the run was made; ``ID, since reverted`` when
    it was reverted afterwards (provenance stays with the run)."""
    if store.corrections is None:
        return {}
    started = tree.info.started
    added: dict[Fact, str] = {}
    for c in store.corrections.list():
        if c.created > started or c.status not in ("active", "reverted"):
            continue  # made after the run: the run never read its facts
        if c.status == "reverted" and (c.reverted or "") <= started:
            continue  # undone before the run
        mark = c.id if c.status == "active" else f"{c.id}, since reverted"
        for f in c.added:
            added[f] = mark
    if not added:
        return {}
    by_id = {p.id: p for p in tree.paths}
    out = {}
    for p in tree.paths:
        parent = by_id.get(p.parent) if p.parent else None
        if parent is None or p.relation is None:
            continue
        fact = (parent.entity, p.relation, p.entity) if p.direction != "in" else (p.entity, p.relation, parent.entity)
        if fact in added:
            out[p.id] = added[fact]
    return out


def read_patch(path) -> tuple[list[str], list[str], list[str]]:
    """(facts to remove, facts to add, entities to make) of a patch file:
    ``+ S|R|O``, ``- S|R|O`` or ``new NAME`` (``new <IRI> NAME``) per line,
    ``#`` comments and blank lines ignored."""
    from pathlib import Path

    removed: list[str] = []
    added: list[str] = []
    new: list[str] = []
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # (a byte-order mark, as editors on Windows write, goes)
    except (OSError, UnicodeDecodeError) as e:
        raise CorrectionError(f"cannot read the patch file {path}: {getattr(e, 'strerror', None) or e}") from None
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.split(None, 1)[0] == "new" and line[3:].strip():
            new.append(line[3:].strip())
            continue
        if line[0] not in "+-" or not line[1:].strip():
            raise CorrectionError(f"{path}:{n}: expected '+ S|R|O', '- S|R|O' or 'new NAME'; nothing was changed")
        (added if line[0] == "+" else removed).append(line[1:].strip())
    if not removed and not added and not new:
        raise CorrectionError(f"{path}: no facts in it ('+ S|R|O', '- S|R|O' or 'new NAME' per line)")
    return removed, added, new


def ntriples(fact: Fact) -> str:
    """One fact as an N-Triples line."""
    s, r, o = fact
    obj = str(literal_term(o)) if is_literal(o) else f"<{o}>"
    return f"<{s}> <{r}> {obj} ."
