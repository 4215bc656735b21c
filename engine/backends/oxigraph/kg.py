"""The embedded store's read role: the ``KnowledgeGraph`` over pyoxigraph.

Every read at question time is bounded, whatever the hubs (see
``summaries.py``):

- relations: a hub's relations and degrees come from its summary, built by
  the load; every other entity has at most ``HUB_EDGES`` edges per
  direction, which are read, a batch of entities in one join (a store
  whose summaries are missing or out of date builds them once, first; a
  read-only view of one reads each entity in a branch of its own with a
  limit, which shows a hub the summaries lack);
- expand: each pair's neighbours are read up to the candidate window,
  without names; a pair past it is crowded, and its neighbours come from
  its kept sample (a hub's pair past ``SORT_MAX`` edges: made with the
  summaries; any other: sorted by the store inside the query the first
  time, then kept); names are then asked for the candidates in the window only;
- the schema of the offline judge's look-ahead: a bounded sample of each
  relation's tails (read from its first edges), the relations around
  them, made in batches when first needed and kept per relation.

Every statement lives in ``sparql/*.rq``; terms enter query text only
through :func:`engine.queries.sparql_term` / ``sparql_values``.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import pyoxigraph as ox

from engine.backends.common import (
    SCHEMA_EDGES,
    SCHEMA_MADE,
    Found,
    chunks,
    crowd_cap,
    expand_request,
    informative,
    label_relations,
    look_through,
    nothing_behind,
    ranked_shown,
    sample_key,
    sample_moved,
    sample_refills,
    sample_serves,
    select_candidates,
    shown_rank,
)
from engine.backends.oxigraph.database import Database
from engine.backends.oxigraph.summaries import (
    HUB_EDGES,
    SAMPLE_KEEP,
    SAMPLE_RATE,
    SORT_MAX,
    Key,
    build,
    sample_big,
)
from engine.backends.sparql_reads import (
    BATCH,
    RANK,
    UNION_BATCH,
    SparqlReads,
    iri_rows,
    iri_term,
    name_row,
    node_id,
    values,
)
from engine.graph import (
    CANDIDATE_WINDOW,
    DEFAULT_POLICY,
    Candidate,
    Direction,
    Node,
    Relation,
    RelationPolicy,
    is_literal,
    literal_term,
    literal_value,
    local_name,
)
from engine.queries import render, sparql, sparql_union

LISTED_BATCH = 256  # (entity, direction) pairs per listing of entities that are no hubs
FILL_BATCH = 100_000  # names a step when a store made before the shown-name table fills it
log = logging.getLogger("tog")


class OxigraphKG(SparqlReads):
    """``KnowledgeGraph`` over the default graph of an embedded store."""

    def __init__(self, db: Database, policy: RelationPolicy = DEFAULT_POLICY) -> None:
        super().__init__(policy)
        self.db = db
        self.summaries = db.summaries
        self.schema = SampledSchema(self)
        self.made = {"hubs": 0, "crowded_pairs": 0}  # summaries this process had to make
        self._checked: object = None  # the generation whose hub summaries were found fresh (or built)
        self._checking = threading.Lock()
        self._shown: object = None  # the load generation whose shown-name table was found complete
        self._shown_noted = False

    @property
    def name_predicates(self) -> tuple[str, ...]:
        return self.db.name_predicates

    def _select(self, text: str, params: Sequence[tuple[str, str]] = (), columns: tuple[str, ...] | None = None
                ) -> list:
        """Every query's way to the store. With ``columns``, rows read by place
        (``Database.query``: the reads whose rows are many)."""
        return self.db.query(text, self.meter, columns)

    def _generation(self) -> object:
        return self.db.generation

    # -- relations ---------------------------------------------------------------
    def relations(self, entities: Sequence[str]) -> dict[str, list[Relation]]:
        iris = [e for e in dict.fromkeys(entities) if not is_literal(e)]
        degrees = self.degrees(iris)
        names = self.name_predicates
        out: dict[str, list[Relation]] = {e: [] for e in entities}
        for e in iris:
            found = [Relation(p, d, degree=n) for d in ("out", "in") for p, n in degrees.get((e, d), {}).items()]
            out[e] = informative(found, self.policy, names)
        label_relations(self, out, self._relation_labels)
        return out

    def degrees(self, iris: Sequence[str], *, sample: int | None = None
                ) -> dict[tuple[str, Direction], dict[str, int]]:
        """{(entity, direction): {relation: degree}}: hubs from their summaries,
        the others from their edges (at most HUB_EDGES per direction: more
        is a hub the summaries lack, summarised now). With ``sample``, what
        the first ``sample`` edges per direction show of an entity that is
        not a summarised hub (a sample: nothing is summarised)."""
        self.ready()
        with self.meter.timing(lookups=0):  # a local table, not a round trip
            hubs = self.summaries.hubs(iris)
        out: dict[tuple[str, Direction], dict[str, int]] = {k: v for k, v in hubs.items()}  # type: ignore[misc]
        todo: list[tuple[str, Direction]] = [(e, d) for e in iris for d in ("out", "in") if (e, d) not in hubs]
        listed = sample is None and self.summaries.fresh()
        read = self._listed(todo) if listed else self._bounded(todo, sample or HUB_EDGES + 1)
        for key, got in read.items():
            if sample is None and sum(got.values()) > HUB_EDGES:  # a hub the summaries lack
                if listed:  # read whole: summarised from that read
                    self.summaries.set_hub(*key, got)
                else:
                    got = self._summarise(*key)
                self.made["hubs"] += 1
            out[key] = got
        return out

    def _listed(self, keys: Sequence[tuple[str, Direction]]) -> dict[tuple[str, Direction], dict[str, int]]:
        """The relations and degrees of (entity, direction) pairs that fresh
        summaries say are no hubs (at most HUB_EDGES edges each), in one
        join per batch (relations_listed.rq)."""
        out: dict[tuple[str, Direction], dict[str, int]] = {key: {} for key in keys}
        for part in chunks(keys, LISTED_BATCH):
            rows = self._select(render("relations_listed", **{
                d: iri_rows(e for e, dd in part if dd == d) for d in ("out", "in")}), columns=("e", "d", "p", "n"))
            for e, d, p, n in rows:
                out[(e.value, d.value)][p.value] = int(n.value)
        return out

    def _summarise(self, entity: str, direction: Direction) -> dict[str, int]:
        """A hub the summaries lack (a store whose summaries are out of date,
        or an entity a correction made a hub): its relations and degrees, by
        one native count over its edges; kept."""
        rows = self._select(render(f"degrees_{direction}", e=iri_term(entity)))
        degrees = {r["p"].value: int(r["n"].value) for r in rows}
        self.summaries.set_hub(entity, direction, degrees)
        return degrees

    def ready(self) -> None:
        """Make sure the hub summaries say what the KG holds, once per load
        generation: a store made by an older tog, or one a load did not
        finish, builds them now (a progress bar on a terminal). A read-only
        view cannot: it summarises the hubs it meets, in memory, and says so."""
        generation = self.db.generation
        if self._checked == generation:
            return
        with self._checking:  # questions answered in parallel wait for one build
            if self._checked != generation:
                self._ready()
                self._checked = generation

    def _ready(self) -> None:
        summaries = self.summaries
        if not summaries.fresh():
            summaries.reread()  # another process (a load) may have finished meanwhile
        if not summaries.fresh():
            state = summaries.state()["state"]
            why = "a load into it did not finish" if state == "stale" else "it was made by an older tog"
            if self.db.read_only:
                log.info(f"note: the hub summaries of {self.db.name} are out of date ({why}); this process, which "
                         "only reads the store, reads each hub it meets once; the first question asked once the "
                         "process writing the store ends builds them")
            elif self.db.empty():
                build(self.db, how="on first use")
            else:
                log.info(f"building the hub summaries of {self.db.name} once ({why}) ...")
                state_now = build(self.db, how="on first use", progress=sys.stderr.isatty())
                log.info(f"hub summaries: {sum(state_now['hubs'].values()):,} hubs in {state_now['seconds']:.1f} s")
        elif summaries.big_pairs_due() and not self.db.read_only:
            # summarised by a tog that let questions sort every crowded pair, or the pairs up to a higher
            # threshold: the pairs past SORT_MAX that lack a sample are sampled once, now
            log.info(f"sampling the biggest pairs of {self.db.name} once (a load stopped before it sampled them, or "
                     "an older tog made its summaries) ...")
            state_now = sample_big(self.db, progress=sys.stderr.isatty())
            log.info(f"{state_now['big_pairs_made']:,} pairs sampled in {state_now['big_pairs_seconds']:.1f} s")

    # -- expand ------------------------------------------------------------------
    def expand(self, requests: Sequence[tuple[str, Relation]], limit: int = 100, *,
               over: int = 0, size: int = 5, through: bool = True) -> list[Candidate]:
        pairs, limit = expand_request(requests, limit)
        window = CANDIDATE_WINDOW * limit
        ordered, degree, known = self.neighbours(pairs, window)
        windows: dict[tuple[str, Relation], list[str]] = {}
        caps: dict[tuple[str, Relation], int] = {}
        found: Found = {pair: {} for pair in pairs}
        for pair in pairs:
            caps[pair] = crowd_cap(degree[pair], limit, over, size)
            windows[pair] = ordered[pair][: CANDIDATE_WINDOW * caps[pair]]
            if pair in known:  # read whole, with names
                found[pair] = {x: self._node(x, known[pair]) for x in windows[pair]}
        pairs = [pair for pair in pairs if pair not in known]
        # names for as many of each window as its cap asks (unnamed nodes are
        # looked through, so a pair may need a few more), a round at a time
        asked = {pair: 0 for pair in pairs}
        want = {pair: caps[pair] for pair in pairs}
        while want:
            batch = {pair: windows[pair][asked[pair]: asked[pair] + n] for pair, n in want.items()}
            names = self.labels([x for xs in batch.values() for x in xs if not is_literal(x)])
            for pair, xs in batch.items():
                asked[pair] += len(xs)
                for xid in xs:
                    found[pair][xid] = self._node(xid, names)
            want = {}
            for pair in batch:
                named = sum(1 for node in found[pair].values() if node is not None)
                if named < caps[pair] and asked[pair] < len(windows[pair]):
                    want[pair] = caps[pair] - named
        return select_candidates(
            requests, found, limit,
            (lambda unnamed, lim: look_through(self, unnamed, lim)) if through else nothing_behind,
            over=over, size=size, counts=degree)

    @staticmethod
    def _node(xid: str, names: dict[str, str]) -> Node | None:
        """The Node of a neighbour known by its id (None for an unnamed entity)."""
        if is_literal(xid):
            term = literal_term(xid)
            return Node(xid, term.value, True, term.datatype.value if term.datatype else None)
        return Node(xid, names[xid]) if xid in names else None

    def neighbours(self, pairs: Sequence[tuple[str, Relation]], window: int
                   ) -> tuple[dict[tuple[str, Relation], list[str]], dict[tuple[str, Relation], int],
                              dict[tuple[str, Relation], dict[str, str]]]:
        """Each pair's first ``window`` neighbours (at least) in the sample
        order, its degree, and for the pairs read whole (at most window + 1
        rows) their neighbours' names; crowded pairs come from their kept
        sample (made now, once), without names. A pair whose relation
        carries a degree past the window is known to be crowded: it is not
        read through the window first."""
        key = {pair: (pair[0], pair[1].id, pair[1].direction) for pair in pairs}
        self.ready()  # a load that did not finish may have left samples out of date: its build drops them
        with self.meter.timing(lookups=0):
            kept = self.summaries.samples(key.values())
        ordered: dict[tuple[str, Relation], list[str]] = {}
        degree: dict[tuple[str, Relation], int] = {}
        known: dict[tuple[str, Relation], dict[str, str]] = {}
        todo = []
        for pair in pairs:
            sample = kept.get(key[pair])
            if sample is not None and sample_serves(sample[0], len(sample[1]), window):
                degree[pair], ordered[pair] = sample
            elif (pair[1].degree or 0) > window:  # crowded, as its listing said: sorted now, no window read first
                degree[pair], ordered[pair] = self._sample(key[pair], max(window, SAMPLE_KEEP))
            else:
                todo.append(pair)
        for part in chunks(todo, UNION_BATCH):
            branches = sparql_union(
                render(f"neighbours_bounded_{r.direction}", e=iri_term(e), p=iri_term(r.id), limit=window + 1,
                       k=k).strip()
                for k, (e, r) in enumerate(part))
            found: dict[int, dict[str, None]] = defaultdict(dict)
            blanks: dict[int, set[str]] = defaultdict(set)
            for place, x in self._select(render("neighbours_bounded", branches=branches), columns=("k", "x")):
                k = int(place.value)
                if isinstance(x, ox.BlankNode):  # no place in the sample order (tog's loads rename them; other writers may not)
                    blanks[k].add(x.value)
                    continue
                found[k][node_id(x)] = None
            whole = []
            for k, pair in enumerate(part):
                xs = list(found.get(k, {}))
                if len(xs) + len(blanks.get(k, ())) > window:  # the window filled: more may follow, blank or not
                    degree[pair], ordered[pair] = self._sample(key[pair], max(window, SAMPLE_KEEP))
                else:
                    degree[pair], ordered[pair] = len(xs), sorted(xs, key=sample_key)
                    whole.append(pair)
            names = self.labels([x for pair in whole for x in ordered[pair] if not is_literal(x)])
            for pair in whole:
                known[pair] = {x: names[x] for x in ordered[pair] if x in names}
        return ordered, degree, known

    def _sample(self, key: Key, keep: int) -> tuple[int, list[str]]:
        """A crowded pair's degree and first ``keep`` neighbours in the sample
        order, sorted by the store (only they come back); kept. A hub's pair
        takes its degree from the hub's summary (counting it would read the
        pair whole once more); any other entity's is counted (a bounded read:
        it has at most HUB_EDGES edges that way)."""
        entity, relation, direction = key
        e, p = iri_term(entity), iri_term(relation)
        rows = self._select(render(f"sample_{direction}", e=e, p=p, limit=keep), columns=("x",))
        sample = sorted((node_id(x) for x, in rows), key=sample_key)
        summarised = self.summaries.hubs([entity]).get((entity, direction), {}).get(relation)
        degree = summarised if summarised is not None else self.pair_degree(entity, relation, direction)
        self.summaries.set_sample(key, degree, sample)
        self.made["crowded_pairs"] += 1
        return degree, sample

    # -- names ----------------------------------------------------------------------
    def labels(self, ids: Sequence[str]) -> dict[str, str]:
        """Shown names from the store's table of them (one index seek a node,
        however many languages name it); a node without an English or untagged
        name is read from the KG (its names in other languages), as is every
        node of a store made before the table, until it is filled."""
        out = {i: literal_value(i) for i in ids if is_literal(i)}
        iris = [i for i in dict.fromkeys(ids) if not is_literal(i)]
        if iris and self._shown_ready():
            with self.meter.timing():
                found = self.db.index.shown(iris)
            if found is not None:
                out.update(found)
                rest = [i for i in iris if i not in found]  # (none of them has an English or untagged name)
                return {**out, **(self._names(rest, shown=False) if rest else {})}
        if iris:
            out.update(super().labels(iris))
        return out

    def _shown_ready(self) -> bool:
        """Whether the shown-name table is complete; a store made before it
        has it filled now, once (a read-only view reads the KG until then)."""
        generation = self.db.generation
        if self._shown == generation:  # (a load may give a new name predicate: asked again after one)
            return True
        index = self.db.index
        if not index.shown_complete():
            if self.db.read_only:
                if not self._shown_noted:
                    self._shown_noted = True
                    log.info(f"note: {self.db.name} keeps no shown names yet (made by an older tog, or given a new "
                             "name predicate); this view reads each node's names from the KG until a process that may "
                             "write it makes them")
                return False
            with self._checking:
                if not index.shown_complete():
                    self._fill_shown()
        self._shown = generation
        return True

    def _fill_shown(self) -> None:
        """Fill the shown-name table from the KG's English and untagged names (a
        store made before it, or one given a new name predicate): one pass over
        each name predicate's triples, read by the store natively (a SPARQL pass
        with the language filter took 2.7x as long: 17.8 s for 1M names),
        written FILL_BATCH at a time; a bar on a terminal."""
        log.info(f"making the shown names of {self.db.name} once (it was made by an older tog, or given "
                 "a new name predicate) ...")
        started = time.perf_counter()
        bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            bar = tqdm(unit="name", unit_scale=True, desc="shown names", dynamic_ncols=True, leave=False)
        count = 0

        def parts() -> Iterable[list[tuple[str, int, str]]]:
            nonlocal count
            rows: list[tuple[str, int, str]] = []
            for place, predicate in enumerate(self.name_predicates):
                for q in self.db.store.quads_for_pattern(None, ox.NamedNode(predicate), None, ox.DefaultGraph()):
                    name = q.object
                    if isinstance(name, ox.Literal) and isinstance(q.subject, ox.NamedNode) \
                            and (rank := shown_rank(name.language, place)) is not None:
                        rows.append((q.subject.value, rank, name.value))
                        if len(rows) == FILL_BATCH:
                            count += len(rows)
                            if bar is not None:
                                bar.update(len(rows))
                            yield rows
                            rows = []
            count += len(rows)
            yield rows

        try:
            self.db.index.fill_shown(parts(), lambda: f"once, on first use ({count:,} names read in "
                                                      f"{time.perf_counter() - started:.1f} s)")
        finally:
            if bar is not None:
                bar.close()
        log.info(f"shown names: {count:,} in {time.perf_counter() - started:.1f} s")

    def reshow(self, entities: Iterable[str]) -> None:
        """Bring the shown names of ``entities`` up to date with the KG (after
        a correction changed their names): their names are read (a bounded
        read, theirs only) and their table rows replaced. Idempotent."""
        entities = list(dict.fromkeys(entities))
        if not entities or not self.db.index.shown_complete():
            return  # (a table not filled yet is filled from the KG as it will be)
        order = {p: i for i, p in enumerate(self.name_predicates)}
        rows = []
        for part in chunks(entities, BATCH):
            text = render("labels", entities=iri_rows(part), names=values(self._name_terms()), only=self.only(True),
                          rank=RANK)
            for r in self._select(text):  # (the lowest name of each predicate and language rank: enough)
                if (named := name_row(r)) is not None \
                        and (rank := ranked_shown(named[1], order.get(named[0].value, 99))) is not None:
                    rows.append((r["e"].value, rank, named[2].value))
        self.db.index.reshow(entities, rows, "kg")

    # -- the rest ------------------------------------------------------------------
    def search_entities(self, keys: Sequence[str], forms: Mapping[str, Sequence[str]] | None = None
                        ) -> dict[str, list[Node]]:
        # the name index holds every name by its key: ``forms`` adds nothing
        started = time.perf_counter()
        found = self.db.index.lookup(list(dict.fromkeys(k for k in keys if k)))
        self.meter.add(time.perf_counter() - started)
        names = self.labels([e for ents in found.values() for e in ents])
        return {k: [Node(e, names.get(e, local_name(e))) for e in v] for k, v in found.items()}

    def has_entity(self, entity: str) -> bool:
        try:
            node = ox.NamedNode(entity)
        except ValueError:
            return False
        with self.meter.timing():
            store = self.db.store
            for _ in store.quads_for_pattern(node, None, None, ox.DefaultGraph()):
                return True
            for _ in store.quads_for_pattern(None, None, node, ox.DefaultGraph()):
                return True
        return False

    def relation_counts(self) -> list[tuple[str, int]]:
        """Every relation with its number of facts, most first: kept (see
        ``summaries.py``), so only the first call after a load reads every
        fact, and one after a correction reads the facts of the relations it
        changed."""
        kept = self.summaries.totals()
        if kept is None:
            started = time.perf_counter()
            counts = {row["p"].value: int(row["n"].value) for row in self._select(sparql("relation_counts"))}
            self.summaries.set_totals(counts, seconds=time.perf_counter() - started)
        else:
            counts, recount = kept
            if recount:
                for part in chunks(recount, LISTED_BATCH):
                    for r in part:
                        counts.pop(r, None)
                    counts.update((row["p"].value, int(row["n"].value)) for row in self._select(
                        render("relation_counts_of", relations=iri_rows(part))))
                self.summaries.set_totals(counts, recounted=recount)
        return sorted(counts.items(), key=lambda x: (-x[1], x[0]))

    def stats(self) -> dict:
        triples = sum(n for _, n in self.relation_counts())
        made = self.summaries.counts()
        return {"triples": triples, "names": self.db.index.count(), "shown names": self.db.index.shown_how(),
                "hubs summarised": made["hubs"], "crowded pairs sampled": made["crowded_pairs"],
                "relations with a look-ahead schema": made["schema_relations"],
                "summaries": summary_text(self._state_now(), writer=not self.db.read_only)}

    def _state_now(self) -> dict:
        """The summaries' state, with the hubs and their edges as the kept
        counts say now (corrections move them after the build)."""
        state = self.summaries.state()
        now = self.summaries.hub_figures() if state.get("state") in ("fresh", "stale") else None
        return {**state, **now} if now is not None else state

    def pair_degree(self, entity: str, relation: str, direction: str) -> int:
        rows = self._select(render(f"degree_{direction}", e=iri_term(entity), p=iri_term(relation)))
        return int(rows[0]["n"].value) if rows else 0

    def refresh(self, facts: Iterable[tuple[str, str, str]], *, counted: bool = False) -> None:
        """Bring the summaries of the pairs ``facts`` touch up to date with the
        KG (after a correction changed them). Idempotent: it reads the KG as
        it is, so running it twice changes nothing. ``counted``: the hubs'
        degrees already say what the KG holds (the correction added its
        changes to them), so no hub's pair is counted again. Each pair is
        brought up to date once, for all the facts about it."""
        summaries = self.summaries
        moved: dict[Key, list[str]] = defaultdict(list)  # a pair's neighbours that came or went, in order
        degrees: dict[Key, int] = {}
        for s, r, o in facts:
            ends: list[tuple[str, Direction, str]] = [(s, "out", o)]
            if not is_literal(o):
                ends.append((o, "in", s))
            for entity, direction, neighbour in ends:
                key = (entity, r, direction)
                if key not in moved:
                    hub = summaries.hubs([entity]).get((entity, direction))
                    if hub is not None and counted:
                        degrees[key] = hub.get(r, 0)
                    elif hub is not None:
                        degrees[key] = self.pair_degree(entity, r, direction)
                        summaries.set_degree(entity, direction, r, degrees[key])
                    elif sum(self._bounded([(entity, direction)], HUB_EDGES + 1)[(entity, direction)].values()) \
                            > HUB_EDGES:
                        self._summarise(entity, direction)  # the correction made it a hub
                moved[key].append(neighbour)
        kept = summaries.samples(moved)
        for pair, neighbours in moved.items():
            if pair not in kept:
                continue
            entity, r, way = pair
            n = degrees[pair] if pair in degrees else self.pair_degree(entity, r, way)
            before, sample = kept[pair]
            sample = sample_moved(sample, before, [(x, self._holds(entity, r, way, x)) for x in neighbours])
            if sample_refills(n, len(sample)):  # (a sort of the pair, as the load made it)
                self._sample(pair, SAMPLE_KEEP)
            else:
                summaries.set_sample(pair, n, sample)

    def _holds(self, entity: str, relation: str, direction: str, neighbour: str) -> bool:
        a = ox.NamedNode(entity)
        b = literal_term(neighbour) if is_literal(neighbour) else ox.NamedNode(neighbour)
        s, o = (a, b) if direction == "out" else (b, a)
        if not isinstance(s, ox.NamedNode):
            return False
        return next(iter(self.db.store.quads_for_pattern(s, ox.NamedNode(relation), o, ox.DefaultGraph())),
                    None) is not None


def summary_text(state: dict, writer: bool = True) -> str:
    """What ``tog info`` says of how the summaries were made (``writer``:
    by a process that may write the store, which builds what is missing)."""
    big = (f"{state['big_pairs']:,} pairs of more than {state.get('sort_max', SORT_MAX):,} edges sampled with the "
           f"summaries, the others " if "big_pairs" in state else "")
    rest = (f"crowded pairs: the first {SAMPLE_KEEP} neighbours in sample order, {big}sorted by the store when "
            f"first expanded, then kept; look-ahead schema: {SCHEMA_MADE}, made when first needed, then kept")
    when = "on the next question" if writer else "by the first question once the process writing the store ends"
    if state.get("state") == "missing":
        return f"hubs: none built yet (built {when}); {rest}"
    built = (f"hubs (more than {state.get('threshold', HUB_EDGES):,} edges in a direction): "
             f"{state.get('hubs', {}).get('out', 0):,} out, {state.get('hubs', {}).get('in', 0):,} in, "
             f"{state.get('edges', 0):,} edges, built {state.get('how', '?')} {state.get('built', '?')} in "
             f"{state.get('seconds', 0):.1f} s")
    if state.get("found") == "sampled":
        built += (f" (found among {state.get('candidates', 0):,} candidates from a 1-in-{SAMPLE_RATE} sample of the "
                  f"load's lines)")
    elif state.get("found") == "counted":
        built += " (found by counting every edge)"
    elif state.get("found") == "updated":
        built += (f" (updated for the {state.get('touched', 0):,} entities the last load wrote edges of: "
                  f"{state.get('recounted', 0):,} hub summaries counted again, "
                  f"{state.get('samples_merged', 0):,} crowded-pair samples merged)")
    if state.get("state") == "stale":
        built = f"hubs: out of date ({state.get('why', 'a load started')}; rebuilt at the load's end or {when}); " \
                f"before that, {built}"
    return f"{built}; {rest}"


class SampledSchema:
    """Which relations follow which: the relations around a bounded sample
    of the nodes a relation leads to (``SparqlReads._follows``: the first
    SCHEMA_TAILS in sample order of those its first SCHEMA_READ edges
    reach; SCHEMA_EDGES edges of each), asked for a whole batch of
    relations at once (a query
    per UNION_BATCH relations, one for the tails' relations) and kept per
    relation."""

    def __init__(self, kg: OxigraphKG) -> None:
        self.kg = kg
        self._made: dict[tuple[str, str], tuple[list | None, list[Relation]]] = {}  # relations made of a kept list

    def after(self, relations: Sequence[Relation]) -> dict[Relation, list[Relation]]:
        kg = self.kg
        keys = {(r.id, r.direction): r for r in relations}
        kg.ready()
        with kg.meter.timing(lookups=0):
            kept = kg.summaries.follows(keys)
        todo = [k for k in keys if k not in kept]
        made: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for part in chunks(todo, UNION_BATCH):
            # a tail that is a hub shows all its relations (its summary), any other its first edges
            follows = kg._follows(part, lambda tails: kg.degrees(tails, sample=SCHEMA_EDGES))
            made.update({key: [(r.id, r.direction) for r in rels] for key, rels in follows.items()})
        if made:
            kg.summaries.set_follows(made)
        kept.update(made)
        out = {}
        for key, rel in keys.items():
            pairs = kept[key]
            made_from, got = self._made.get(key, (None, []))
            if made_from is not pairs:  # the kept list is the same object until the summaries change
                if len(self._made) > 100_000:
                    self._made.clear()
                got = [Relation(r, d) for r, d in pairs]  # type: ignore[arg-type]
                self._made[key] = (pairs, got)
            out[rel] = got
        return out
