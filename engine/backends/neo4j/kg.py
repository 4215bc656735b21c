"""The Neo4j backend's read role: the ``KnowledgeGraph`` over the data model
of ``engine/backends/neo4j/__init__.py``, a round trip per beam step (an
expansion: per relationship type followed), and bounded whatever the hubs.
A statement that follows a type names it in its text (``cypher_name``):
Neo4j 5.26 follows a type given as a parameter by reading every edge of
the node, all 449,022 of a hub's in-edges for a pair of 297.

- relations: an entity's degree per direction comes from Neo4j's degree
  store; up to ``HUB_EDGES`` its edges are listed, past that its relations
  are counted per type (types named in the text: ``hub_relations.cypher``),
  each count from the degree store, and kept in a ``(:TogHub)`` node (a
  count per type costs about 2 µs, a thousand of them a hub): a load
  counts its dense entities when it ends, a question any other hub. Kept
  counts are used only while the hub's degree each way (from the degree
  store) is what they add up to, so that any change of its degree (a load,
  running or not, or a raw write) has them counted again; a correction
  adds the edges it changed to them and moves the hub's correction counter
  in its transaction (counts a question read before it and kept after it
  do not match the counter, and are counted again). (A raw write that
  swaps edges and keeps the degrees goes unseen.);
- expand: each pair's neighbours are read lazily up to the candidate
  window with their names (not a pair whose relation's degree says it
  is crowded: it goes to its sample directly); a crowded pair's first ``SAMPLE_KEEP``
  neighbours in the sample order are sorted by the server by their sample
  key (``sk``) once and kept in a ``(:TogSample)`` node, which corrections
  update in their own transaction and a load when it ends (``sink.py``);
  a pair past ``SORT_MAX`` edges is sorted when a load ends, not by a
  question (:meth:`Neo4jKG.sample_big`): one a load that has not finished
  grew is read by its first window in the database's order until then;
- the look-ahead schema: a bounded sample of each relation's tails, the
  relations around them (what a tail's first edges show, a hub's as its
  kept counts name them, unchecked: ``hubs_types``; as on the embedded
  store), kept in ``(:TogSchema)`` nodes.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence

from engine.backends.common import (
    SAMPLE_KEEP,
    SCHEMA_EDGES,
    SCHEMA_MADE,
    SCHEMA_READ,
    SORT_MAX,
    Found,
    chunks,
    chunks_within,
    crowd_cap,
    end_changes,
    expand_request,
    informative,
    label_relations,
    look_ahead_tails,
    look_through,
    nothing_behind,
    past_or_first,
    sample_key,
    sample_moved,
    sample_refills,
    sample_serves,
    select_candidates,
)
from engine.backends.neo4j.session import Neo4jSession
from engine.graph import (
    CANDIDATE_WINDOW,
    DEFAULT_POLICY,
    NAME_MATCHES,
    Candidate,
    Direction,
    Fact,
    KnowledgeGraph,
    Meter,
    Node,
    Relation,
    RelationPolicy,
    is_literal,
    literal_term,
    literal_value,
    local_name,
)
from engine.queries import cypher, cypher_name, render_cypher

BATCH = 2000  # rows per read statement
SAMPLES_AT_ONCE = 25  # kept samples a correction reads a statement: up to SAMPLE_KEEP ids each
# Characters of kept summaries (hubs' relationship types, schemas) one transaction
# writes: a capped server counts two bytes or more a character (2,000 hubs of 500
# types of 70 characters would be 140 MB).
SAVE_CHARS = 2_000_000
HUB_EDGES = 1000  # edges in one direction past which an entity's relations are counted per type
TYPES_PER_COUNT = 100  # relationship types counted per hub statement (the texts repeat: planned once)
# setting: SORT_MAX once a load (or a first question) sampled every pair past it; "pending" while
# a load runs (a load that did not end leaves it so: the next one samples the whole KG's)
BIG_PAIRS = "big_pairs_sampled"
# setting: HUB_EDGES once every hub's relation counts were kept (a load's end keeps them; a database
# without it, made by an older tog, has them counted before its first question uses them)
HUBS_COUNTED = "hubs_counted"
# a hub's KG degree each way, as the kept counts and the counts made now both check it
KG_DEGREE = cypher("kg_degree").strip()
HUBS_GET = render_cypher("hubs_get", degree=KG_DEGREE)
log = logging.getLogger("tog")
Key = tuple[str, str, str]  # (entity, relation, direction)


def hub_relations_text(types: Sequence[str]) -> str:
    """The statement that counts each of ``types`` each way around each of a
    batch of hubs, with their KG degree (``hub_relations.cypher``)."""
    return render_cypher(
        "hub_relations", degree=KG_DEGREE,
        out_counts=", ".join(render_cypher("hub_count_out", type=cypher_name(t)).strip() for t in types),
        in_counts=", ".join(render_cypher("hub_count_in", type=cypher_name(t)).strip() for t in types))


def load_unfinished(session: Neo4jSession) -> bool:
    """Whether a load began and has not finished: it runs, or it stopped
    before its end (killed, or failed on a bad file) and no question has yet
    made what its end makes (``Neo4jKG.load_end_made``), so that the
    samples of the pairs it grew wait (one statement)."""
    return _unfinished_state(session.setting(BIG_PAIRS, None))


def _unfinished_state(state: object) -> bool:
    """Whether ``BIG_PAIRS`` says a load has not finished: "pending", or
    "finishing:<token>" while a question makes what a stopped load's end
    would have made."""
    return isinstance(state, str) and (state == "pending" or state.startswith("finishing:"))


def unfinished_load(session: Neo4jSession) -> str | None:
    """None, or how a load that began has not finished: "running", or
    "stopped" before its end (killed, or failed), when no load that lists
    itself as running holds its lock (``sink.running_loads``)."""
    from engine.backends.neo4j.sink import running_loads

    if not load_unfinished(session):
        return None
    return "running" if running_loads(session) else "stopped"


def load_end_state(session: Neo4jSession) -> str:
    """Whether the database has what a load's end makes (``sample_big``:
    its biggest pairs sampled past SORT_MAX, every hub counted): "made";
    "pending" while a load runs, or after one that did not end; "missing"
    in a database an older tog made or one imported offline, or sampled to
    a higher threshold than today's."""
    state = session.setting(BIG_PAIRS, None)
    if _unfinished_state(state):
        return "pending"
    if not isinstance(state, int) or state > SORT_MAX or session.setting(HUBS_COUNTED, None) != HUB_EDGES:
        return "missing"
    return "made"


def one_plan(pairs: list[list]) -> list[list]:
    """``pairs`` padded so that a text has one plan whether it is sent one
    pair or a few. Neo4j keys a cached plan by the text and by each list
    parameter's size, bucketed (exactly 0 or 1, else up to the next power
    of ten): an expansion text, one per relationship type and direction,
    was planned once for a single pair and again for two to ten. The pad
    is a pair with no entity, which matches nothing."""
    return pairs + [[None, -1]] if len(pairs) == 1 else pairs


def _node(row) -> Node | None:
    """The Node of an expand row (None for an unnamed entity)."""
    if row["literal"]:
        return Node(row["x"], row["value"], True, row["datatype"])
    return Node(row["x"], row["name"]) if row["name"] is not None else None


def _id_node(x: str, names: dict[str, str]) -> Node | None:
    """The Node of a neighbour known by its id (None for an unnamed entity)."""
    if is_literal(x):
        term = literal_term(x)
        return Node(x, term.value, True, term.datatype.value if term.datatype else None)
    return Node(x, names[x]) if x in names else None


def sample_id(key: Key) -> str:
    """The key of a ``(:TogSample)`` node."""
    return "\n".join(key)


class Neo4jKG(KnowledgeGraph):
    """``KnowledgeGraph`` over a Neo4j database."""

    def __init__(self, session: Neo4jSession, policy: RelationPolicy = DEFAULT_POLICY) -> None:
        self.session = session
        self.policy = policy
        self.meter = Meter()
        self.schema = Neo4jSchema(self)
        self._relation_labels: dict[str, str | None] = {}
        # crowded pairs sampled (sorted by the server, kept), hubs counted, big pairs read unsorted
        # while a load has not finished
        self.made = {"crowded_pairs": 0, "hubs": 0, "unsorted_pairs": 0}
        self._checked = False  # whether what a load's end makes was looked for (once per object)

    def _run(self, name: str, **params) -> list:
        return self.session.run(name, meter=self.meter, **params)

    def _run_text(self, text: str, **params) -> list:
        return self.session.run_text(text, meter=self.meter, **params)

    # -- relations ---------------------------------------------------------------
    def relations(self, entities: Sequence[str]) -> dict[str, list[Relation]]:
        out: dict[str, list[Relation]] = {e: [] for e in entities}
        iris = [e for e in dict.fromkeys(entities) if not is_literal(e)]
        names = self.session.name_predicates
        for e, found in self.degrees(iris).items():
            out[e] = informative(found, self.policy, names)
        label_relations(self, out, self._relation_labels)
        return out

    def degrees(self, iris: Sequence[str], *, sample: int | None = None) -> dict[str, list[Relation]]:
        """The relations around each entity with their degrees (any, before
        the policy). With ``sample``, what the first ``sample`` edges per
        direction show of an entity that is not a hub, and a hub's relations
        as its kept counts name them, without their degrees (``_hub_types``;
        a hub's relations are all of its types either way, as on the
        embedded store)."""
        found: dict[str, list[Relation]] = {e: [] for e in iris}
        hubs: list[str] = []
        for part in chunks(iris, BATCH):
            for row in self._run("relations", ids=list(part), hub=HUB_EDGES, edges=sample or HUB_EDGES):
                if row["hub"]:
                    hubs.append(row["e"])
                elif row["p"] is not None:
                    found[row["e"]].append(Relation(row["p"], row["dir"], degree=row["n"]))
        if hubs:
            for e, rels in (self._hub_types(hubs) if sample else self._hub_relations(hubs)).items():
                found[e].extend(r for r in rels if self.policy.allows(r.id))
        return found

    def _hub_types(self, hubs: Sequence[str]) -> dict[str, list[Relation]]:
        """Every relation around each hub, without degrees, for the
        look-ahead schema: as its kept counts name them (``hubs_types``),
        unchecked, which costs a fifth of ``hubs_get``'s check of the hub's
        degree; a hub with none kept is counted (``_hub_relations``). The
        schema is a sample that a load's end clears, and corrections keep
        the counts up to date in their transaction; a raw write that gives
        a hub a new type goes unseen here until the hub is listed."""
        self.load_end_made()
        out: dict[str, list[Relation]] = {}
        for part in chunks(hubs, BATCH):
            for row in self._run("hubs_types", ids=list(part)):
                out[row["e"]] = [Relation(t, d) for t, d in zip(row["types"], row["dirs"])]
        todo = [h for h in hubs if h not in out]
        return {**out, **(self._hub_relations(todo) if todo else {})}

    def _hub_relations(self, hubs: Sequence[str]) -> dict[str, list[Relation]]:
        """Every relation around each hub with its degree: kept ones
        (``(:TogHub)``) that still add up to the hub's degree each way and
        whose correction counter is the hub's, or counted per type from the
        degree store now (and kept if they add up). A load's edges change
        the degrees (the load counts its dense entities again when it ends:
        ``sample_big``); a correction adds the edges it changed to them and
        moves the hub's correction counter in its transaction
        (``refresh_hubs``), so that counts read before it are not kept."""
        self.load_end_made()
        out: dict[str, list[Relation]] = {}
        for part in chunks(hubs, BATCH):
            for row in self._run_text(HUBS_GET, ids=list(part)):
                out[row["e"]] = [Relation(t, d, degree=n) for t, d, n in zip(row["types"], row["dirs"], row["n"])]
        todo = [h for h in hubs if h not in out]
        counted, whole = self._count_hubs(todo)
        if len(whole) < len(todo):  # counts short of a degree: perhaps a type another process added
            self.session.changed()
            again, whole_again = self._count_hubs([h for h in todo if h not in whole])
            counted.update(again)
            whole.update(whole_again)
        rows = [[e, [r.id for r in rels], [r.direction for r in rels], [r.degree for r in rels], *whole[e]]
                for e, rels in counted.items() if e in whole]
        for batch in chunks_within(rows, BATCH, SAVE_CHARS, lambda row: len(str(row[1]))):  # (its types)
            self.session.run("hubs_save", write=True, rows=list(batch))
        self.made["hubs"] += len(rows)
        return {**out, **counted}

    def _count_hubs(self, hubs: Sequence[str]) -> tuple[dict[str, list[Relation]], dict[str, tuple[int, int, int]]]:
        """Each hub's relations, counted per type from the degree store
        (``TYPES_PER_COUNT`` types a statement); and, for the hubs whose
        counts add up to their KG degree each way, that degree and their
        correction counter as the first statement read them (``hubs_save``)."""
        counted: dict[str, list[Relation]] = {h: [] for h in hubs}
        first: dict[str, tuple[int, int, int]] = {}  # hub -> (degree out, degree in, correction counter)
        for group in chunks(self.session.relationship_types() if hubs else [], TYPES_PER_COUNT):
            text = hub_relations_text(group)
            for part in chunks(hubs, BATCH):
                for row in self._run_text(text, ids=list(part)):
                    first.setdefault(row["e"], (row["out"], row["in"], row["edits"]))
                    for t, n_out, n_in in zip(group, row["outs"], row["ins"]):
                        if n_out:
                            counted[row["e"]].append(Relation(t, "out", degree=n_out))
                        if n_in:
                            counted[row["e"]].append(Relation(t, "in", degree=n_in))
        whole = {h: first[h] for h, rels in counted.items() if h in first and first[h][:2] == (
            sum(r.degree or 0 for r in rels if r.direction == "out"),
            sum(r.degree or 0 for r in rels if r.direction == "in"))}
        return counted, whole

    # -- expand ------------------------------------------------------------------
    def expand(self, requests: Sequence[tuple[str, Relation]], limit: int = 100, *,
               over: int = 0, size: int = 5, through: bool = True) -> list[Candidate]:
        pairs, limit = expand_request(requests, limit)
        window = CANDIDATE_WINDOW * limit
        rows: dict[tuple[str, Relation], dict[str, Node | None]] = {pair: {} for pair in pairs}
        known = [pair for pair in pairs if (pair[1].degree or 0) > window]  # crowded, as its listing said
        read = [pair for pair in pairs if (pair[1].degree or 0) <= window]  # through the window
        by_type: dict[tuple[str, str], list[tuple[str, Relation]]] = defaultdict(list)
        for pair in read:
            by_type[(pair[1].id, pair[1].direction)].append(pair)
        parts, statements = [], []
        for (relation, direction), group in by_type.items():  # a statement per type: named in its text
            text = render_cypher(f"expand_{direction}", type=cypher_name(relation))
            for part in chunks(group, BATCH):
                parts.append(part)
                statements.append((text, {"pairs": one_plan([[e, k] for k, (e, _) in enumerate(part)]),
                                          "n": window + 1}))
        for part, got in zip(parts, self.session.run_many(statements, meter=self.meter)):
            for row in got:
                rows[part[row["k"]]][row["x"]] = _node(row)
        degree = {pair: len(rows[pair]) for pair in read}
        crowded = known + [pair for pair in read if degree[pair] > window]
        if crowded:
            samples = self._samples(crowded, window)
            ids = {pair: samples[pair][1][: CANDIDATE_WINDOW * crowd_cap(samples[pair][0], limit, over, size)]
                   for pair in crowded}
            names = self.labels([x for xs in ids.values() for x in xs if not is_literal(x)])
            for pair in crowded:
                degree[pair] = samples[pair][0]
                rows[pair] = {x: _id_node(x, names) for x in ids[pair]}
        found: Found = {pair: {x: rows[pair][x] for x in sorted(rows[pair], key=sample_key)} for pair in pairs}
        return select_candidates(
            requests, found, limit,
            (lambda unnamed, lim: look_through(self, unnamed, lim)) if through else nothing_behind,
            over=over, size=size, counts=degree)

    def _samples(self, pairs: Sequence[tuple[str, Relation]], window: int
                 ) -> dict[tuple[str, Relation], tuple[int, list[str]]]:
        """Each crowded pair's degree and first neighbours in sample order:
        kept ones, or sorted by the server now (and kept). While a load has
        not finished (:func:`load_unfinished`), a pair past SORT_MAX edges
        without a sample (the load grew it) is not sorted: its first
        ``window`` neighbours in the database's order stand in for the
        sample, kept by nobody, until the load's end samples it."""
        self.load_end_made()
        keys = {pair: (pair[0], pair[1].id, pair[1].direction) for pair in pairs}
        kept = {row["key"]: (row["degree"], list(row["sample"]))
                for row in self._run("samples_get", keys=[sample_id(k) for k in keys.values()])}
        out = {}
        unfinished: bool | None = None  # asked once, if a pair needs it
        for pair, key in keys.items():
            got = kept.get(sample_id(key))
            if got is None or not sample_serves(got[0], len(got[1]), window):
                degree = self.pair_degree(*key)
                if degree > SORT_MAX and unfinished is None:
                    unfinished = load_unfinished(self.session)
                if degree > SORT_MAX and unfinished:
                    got = degree, self._first(key, window)
                else:
                    got = self._sample(key, max(window, SAMPLE_KEEP), degree)
            out[pair] = got
        return out

    def _first(self, key: Key, n: int) -> list[str]:
        """A pair's first ``n`` neighbours in the database's order (a bounded
        read), in the sample order among themselves."""
        entity, relation, direction = key
        text = render_cypher(f"expand_{direction}", type=cypher_name(relation))
        self.made["unsorted_pairs"] += 1
        return sorted((row["x"] for row in self._run_text(text, pairs=one_plan([[entity, 0]]), n=n)), key=sample_key)

    def load_end_made(self, progress: bool | None = None) -> None:
        """Once per object, before the first hub listing or crowded pair
        (or at the end of a load that found every file loaded before):
        a database without what a load's end makes (``sample_big``: the
        samples of the biggest pairs, the hubs' relation counts), made by an
        older tog or imported offline, or left so by a load that stopped
        before its end, gets it now, in one go, rather than a hub at a time
        inside whichever questions list them first."""
        if self._checked:
            return
        from engine.backends.neo4j.sink import running_loads

        self._checked = True
        state = load_end_state(self.session)
        if state == "pending" and not running_loads(self.session):  # (stopped before its end)
            self._finish_stopped_load(progress)
        elif state == "missing":  # (pending: the running load's end makes them)
            log.info("sampling the biggest pairs and counting the hubs of the Neo4j database once (it was made "
                     "by an older tog or imported offline) ...")
            log.info(self._sample_all(progress=progress))

    def _sample_all(self, record: bool = True, progress: bool | None = None) -> str:
        """``sample_big`` over the whole KG (a bar with ``progress``, by
        default on a terminal); what it made, in words."""
        hubs = self.made["hubs"]
        made = self.sample_big(record=record, progress=sys.stderr.isatty() if progress is None else progress)
        return (f"{made['big_pairs_made']:,} pairs sampled, {self.made['hubs'] - hubs:,} hubs counted "
                f"in {made['big_pairs_seconds']:,} s")

    def _finish_stopped_load(self, progress: bool | None = None) -> None:
        """What the end of a load that stopped before it (killed, or failed)
        would have made, made once by the first question that needs it, as
        the embedded store's first question does: the samples it left may
        miss its edges, so all go, and every big pair is sampled again.

        A load that begins meanwhile takes ``BIG_PAIRS`` back to "pending"
        (and finds ``PENDING`` still set, so its end samples every big pair
        again): the question then records nothing, and leaves it to that
        load's end. A question that stopped half-way leaves "finishing", which
        the next one takes over."""
        from engine.backends.neo4j.sink import PENDING

        session = self.session
        mine = json.dumps(f"finishing:{uuid.uuid4().hex}")
        was = session.run("setting_get", key=BIG_PAIRS)
        if not was or not session.run("setting_swap", write=True, key=BIG_PAIRS, was=was[0]["value"],
                                      value=mine)[0]["n"]:
            return  # (a load began, or another question got there first)
        log.info("a load into the Neo4j database stopped before its end (killed, or failed; running it again "
                 "loads the rest): sampling its biggest pairs and counting its hubs once, as its end would have ...")
        session.run_batched("summaries_clear")
        said = self._sample_all(record=False, progress=progress)
        recorded: list[bool] = []

        def record(tx) -> None:
            recorded.clear()  # (the driver may run this again)
            if tx.run(cypher("setting_swap"), key=BIG_PAIRS, was=mine, value=json.dumps(SORT_MAX)).single()["n"]:
                tx.run(cypher("setting_set"), key=HUBS_COUNTED, value=json.dumps(HUB_EDGES)).consume()
                tx.run(cypher("setting_set"), key=PENDING, value="false").consume()
                recorded.append(True)

        session.write_tx(record)
        log.info(said + ("" if recorded else "; a load began meanwhile: its end samples them again"))

    def _sample(self, key: Key, keep: int, degree: int | None = None) -> tuple[int, list[str]]:
        """A pair's degree (counted now unless given) and its first ``keep``
        neighbours in sample order, sorted by the server; kept."""
        entity, relation, direction = key
        text = render_cypher(f"sample_{direction}", type=cypher_name(relation), then=cypher("sample_return"))
        sample = [r["x"] for r in self._run_text(text, e=entity, keep=keep)]
        if degree is None:
            degree = self.pair_degree(entity, relation, direction)
        self.session.run("sample_save", write=True, key=sample_id(key), degree=degree, sample=sample)
        self.made["crowded_pairs"] += 1
        return degree, sample

    def sample_big(self, entities: Sequence[str] | None = None, *, record: bool = True,
                   progress: bool = False) -> dict:
        """Sample every pair past SORT_MAX edges around ``entities`` (a load's;
        None: the whole KG) that has no kept sample, so that no question
        sorts one: the server sorts it now, as a question would, and it is
        kept. Dense entities are found from the degree store, their pairs'
        degrees per type (as ``relations`` counts a hub's, and kept). Records that the
        database's biggest pairs are sampled (``BIG_PAIRS``) and its hubs
        counted (``HUBS_COUNTED``; a load counts only the entities it touched
        when every other hub's counts were kept before), unless not
        ``record``. With ``progress``, a bar over the pairs' edges. Returns
        ``big_pairs_made`` and ``big_pairs_seconds``."""
        started = time.perf_counter()
        self._checked = True  # (this is what a load's end makes: its counting of hubs need not look for it)
        if entities is None:
            dense = [r["id"] for r in self.session.run("dense_entities", min=min(SORT_MAX, HUB_EDGES))]
        else:
            dense = [r["id"] for part in chunks(list(entities), BATCH)
                     for r in self.session.run("dense_among", ids=list(part), min=min(SORT_MAX, HUB_EDGES))]
        keys = {(e, r.id, r.direction): r.degree or 0 for e, rels in self.degrees(dense).items() for r in rels
                if (r.degree or 0) > SORT_MAX}
        kept = {row["key"] for part in chunks(list(keys), BATCH)
                for row in self.session.run("samples_get", keys=[sample_id(k) for k in part])}
        todo = {key: degree for key, degree in keys.items() if sample_id(key) not in kept}
        bar = None
        if progress and todo:
            from tqdm import tqdm

            bar = tqdm(total=sum(todo.values()), unit="edge", unit_scale=True, desc="sampling the biggest pairs",
                       dynamic_ncols=True, leave=False)
        try:
            for key, degree in todo.items():  # (sorted and kept by the server: the sample does not travel)
                entity, relation, direction = key
                text = render_cypher(f"sample_{direction}", type=cypher_name(relation), then=cypher("sample_kept_here"))
                self.session.run_text(text, write=True, e=entity, keep=SAMPLE_KEEP, key=sample_id(key), degree=degree)
                self.made["crowded_pairs"] += 1
                if bar is not None:
                    bar.update(degree)
        finally:
            if bar is not None:
                bar.close()
        made = len(todo)
        if record:
            self.session.run("setting_set", write=True, key=BIG_PAIRS, value=json.dumps(SORT_MAX))
            self.session.run("setting_set", write=True, key=HUBS_COUNTED, value=json.dumps(HUB_EDGES))
        return {"big_pairs_made": made, "big_pairs_seconds": round(time.perf_counter() - started, 2),
                "sort_max": SORT_MAX}

    def pair_degree(self, entity: str, relation: str, direction: str) -> int:
        rows = self._run_text(render_cypher("pair_degree", type=cypher_name(relation)), e=entity)
        return int(rows[0][direction]) if rows else 0

    # -- the rest ------------------------------------------------------------------
    def labels(self, ids: Sequence[str]) -> dict[str, str]:
        out = {i: literal_value(i) for i in ids if is_literal(i)}
        iris = [i for i in dict.fromkeys(ids) if not is_literal(i)]
        for part in chunks(iris, BATCH):
            for row in self._run("labels", ids=list(part)):
                out[row["id"]] = row["name"]
        return out

    def topic_labels(self, ids: Sequence[str]) -> dict[str, str]:
        return self.labels(ids)

    def search_entities(self, keys: Sequence[str], forms: Mapping[str, Sequence[str]] | None = None
                        ) -> dict[str, list[Node]]:
        # the name index holds every name by its key: ``forms`` adds nothing
        wanted = list(dict.fromkeys(k for k in keys if k))
        found: dict[str, list[Node]] = {}
        for part in chunks(wanted, BATCH):
            for row in self._run("names_lookup", keys=list(part), most=NAME_MATCHES + 1):
                if row["entities"]:
                    found[row["key"]] = [Node(e, name if name is not None else local_name(e))
                                         for e, name in sorted(row["entities"], key=lambda x: x[0])]
        return found

    def relation_counts(self) -> list[tuple[str, int]]:
        return sorted(self._type_counts(self.session.relationship_types()).items(), key=lambda x: (-x[1], x[0]))

    def _type_counts(self, types: Sequence[str]) -> dict[str, int]:
        """The facts of each relationship type, from Neo4j's count store."""
        counts: dict[str, int] = {}
        for group in chunks(list(types), TYPES_PER_COUNT):
            text = render_cypher("relation_counts", counts=", ".join(
                render_cypher("relation_count_each", type=cypher_name(t)).strip() for t in group))
            counts.update(zip(group, map(int, self._run_text(text)[0]["counts"])))
        return counts

    def named_entities(self, most: int, skip: int = 0) -> list[str]:
        return past_or_first(lambda start: [r["id"] for r in self._run("named_entities", skip=start, most=most)],
                             most, skip)

    def has_entity(self, entity: str) -> bool:
        return bool(self._run("has_entity", id=entity)[0]["found"])

    def stats(self) -> dict:
        row = self._run("stats")[0]
        kept = self.session.run("summaries_count")[0]
        state = self.session.setting(BIG_PAIRS, None)
        how = unfinished_load(self.session) if _unfinished_state(state) else None
        big = ("all made" if state == SORT_MAX else "a load is running: its end makes them" if how == "running"
               else "a load stopped before its end: the first question that needs them makes them" if how
               else "none made yet: the first crowded expansion makes them")
        return {"edges": row["edges"], "entities": row["entities"], "values": row["values"], "names": row["names"],
                "crowded pairs sampled": kept["samples"], "relations with a look-ahead schema": kept["schema"],
                "hubs summarised": kept["hubs"],
                "summaries": f"hubs (more than {HUB_EDGES} edges in a direction) counted per relation from "
                             f"Neo4j's degrees when a load ends or when first needed, then kept while their "
                             f"degrees hold (a correction adds its changes to them); samples of crowded pairs "
                             f"(the first {SAMPLE_KEEP} neighbours in sample order) and the schema "
                             f"({SCHEMA_MADE}) made when first needed, "
                             f"except the samples of pairs past {SORT_MAX:,} edges, made by the load ({big}); a "
                             f"load merges the edges it writes into the samples and forgets the schema"}


def refresh_summaries(tx, session: Neo4jSession, gone: Sequence[Fact], came: Sequence[Fact],
                      changed: Sequence[tuple[str, str, str | None, int]]) -> None:
    """Inside a correction's transaction, after it took the facts ``gone``
    out and put ``came`` in: bring the kept samples of the pairs they touch
    up to date, and add the facts that really ``changed`` (``end_changes``)
    to the kept relation counts of the hubs at their ends (``refresh_hubs``)."""
    from engine.queries import cypher

    facts, there_now = [*gone, *came], set(came)
    refresh_hubs(tx, facts, changed)
    moved: dict[str, list[tuple[str, bool]]] = defaultdict(list)  # a pair's neighbours that came or went, in order
    pairs: dict[str, tuple[str, str, Direction]] = {}
    for s, r, o in facts:
        ends: list[tuple[str, Direction, str]] = [(s, "out", o)]
        if not is_literal(o):
            ends.append((o, "in", s))
        for entity, direction, neighbour in ends:
            key = sample_id((entity, r, direction))
            pairs[key] = (entity, r, direction)
            moved[key].append((neighbour, (s, r, o) in there_now))
    for part in chunks(list(moved), SAMPLES_AT_ONCE):
        for row in tx.run(cypher("samples_get"), keys=part):
            key = row["key"]
            entity, r, direction = pairs[key]
            sample = sample_moved(row["sample"], row["degree"], moved[key])
            counts = tx.run(render_cypher("pair_degree", type=cypher_name(r)), e=entity).single()
            n = int(counts[direction]) if counts is not None else 0
            if sample_refills(n, len(sample)):  # sorted again by the server, as a load's end samples it
                text = render_cypher(f"sample_{direction}", type=cypher_name(r), then=cypher("sample_kept_here"))
                tx.run(text, e=entity, keep=SAMPLE_KEEP, key=key, degree=n).consume()
            else:
                tx.run(cypher("sample_save"), key=key, degree=n, sample=sample).consume()


def refresh_hubs(tx, facts: Sequence[Fact], changed: Sequence[tuple[str, str, str | None, int]]) -> None:
    """Inside a correction's transaction, after its facts changed: move the
    correction counter of every entity ``facts`` touch (``hubs_touch``), and
    add each change to the kept counts of a hub at its ends, when they were
    current; counts that were not, or that the change would take below
    zero, are dropped, and the next listing counts them again. Counts that
    did not add up to the hub's degrees before still do not after (both
    move by the same edges), so ``hubs_get`` keeps refusing them."""
    from engine.queries import cypher

    touched = sorted({x for s, _, o in facts for x in (s, o) if not is_literal(x)})
    steps: dict[str, dict[tuple[str, Direction], int]] = defaultdict(dict)
    for (entity, direction, relation), delta in end_changes(changed).items():
        steps[entity][(relation, direction)] = delta
    rows, drop = [], []
    for row in tx.run(cypher("hubs_touch"), ids=touched):  # once each, one statement
        moved = steps.get(row["e"], {})
        counts = dict(zip(zip(row["types"], row["dirs"]), row["n"]))
        for pair, delta in moved.items():
            counts[pair] = counts.get(pair, 0) + delta
        if not row["current"] or min(counts.values(), default=0) < 0:
            drop.append(row["e"])
            continue
        kept = [(t, d, n) for (t, d), n in counts.items() if n]
        out, in_ = (row[way] + sum(n for (_, d), n in moved.items() if d == way) for way in ("out", "in"))
        rows.append([row["e"], [t for t, _, _ in kept], [d for _, d, _ in kept], [n for _, _, n in kept],
                     out, in_, row["edits"]])
    if rows:
        tx.run(cypher("hubs_save"), rows=rows).consume()
    if drop:
        tx.run(cypher("hubs_drop"), ids=drop).consume()


# Relations whose look-ahead tails one statement reads (a UNION ALL of a branch each).
# Neo4j plans a new text in about 18 ms for one type alone, 11 ms a branch in a
# UNION of 40, 13 ms in one of 120 (measured on the 10M-triple graph of
# benchmarks/kg_scale.py); each text is sent once per store, so no plan is reused.
UNION_TYPES = 40


class Neo4jSchema:
    """Which relations follow which: the relations around a bounded sample
    of the nodes each relation leads to (``common.look_ahead_tails``: read
    from the type's index, a statement per ``UNION_TYPES`` relations,
    ``schema_tails.cypher``; which types are small, from the count store),
    listed for a batch of relations at once, kept in ``(:TogSchema)``
    nodes."""

    def __init__(self, kg: Neo4jKG) -> None:
        self.kg = kg

    def after(self, relations: Sequence[Relation]) -> dict[Relation, list[Relation]]:
        kg = self.kg
        keys = {f"{r.id}\n{r.direction}": r for r in relations}
        kept = {row["key"]: json.loads(row["follows"]) for row in kg._run("schema_get", keys=list(keys))}
        todo = [k for k in keys if k not in kept]
        for part in chunks(todo, 200):
            tails = look_ahead_tails([keys[k] for k in part], self._reach, self._small)
            around = kg.degrees(sorted({n for ns in tails.values() for n in ns}), sample=SCHEMA_EDGES)
            made = {}
            for i, k in enumerate(part):
                found = [r for n in tails.get(i, []) for r in around.get(n, [])]
                made[k] = [[r.id, r.direction] for r in informative(found, kg.policy, kg.session.name_predicates)]
            rows = [[k, json.dumps(v)] for k, v in made.items()]
            for batch in chunks_within(rows, len(rows), SAVE_CHARS, lambda row: len(row[1])):  # (each may name all)
                kg.session.run("schema_save", write=True, rows=list(batch))
            kept.update(made)
        return {r: [Relation(x[0], x[1]) for x in kept[k]] for k, r in keys.items()}

    def _reach(self, part: Sequence[Relation], most: int) -> dict[int, list[str]]:
        """At most ``most`` of the distinct entities the first SCHEMA_READ
        edges of each relation reach, by its place in ``part``: a statement
        per UNION_TYPES relations, each type named in the text (read from
        its index)."""
        tails: dict[int, list[str]] = defaultdict(list)
        for group in chunks(list(enumerate(part)), UNION_TYPES):
            branches = [render_cypher(f"schema_tails_{r.direction}", type=cypher_name(r.id), i=i) for i, r in group]
            text = render_cypher("schema_tails", branches="\nUNION ALL\n".join(b.strip() for b in branches))
            for row in self.kg._run_text(text, tails=most, read=SCHEMA_READ):
                tails[row["i"]].append(row["n"])
        return tails

    def _small(self, part: Sequence[Relation]) -> list[Relation]:
        """Those of ``part`` whose type has at most SCHEMA_READ edges (the count store)."""
        counts = self.kg._type_counts(sorted({r.id for r in part}))
        return [r for r in part if counts.get(r.id, 0) <= SCHEMA_READ]
