"""ToG and ToG-R: beam search over the knowledge graph.

Each depth: list the relations around the beam's tails (one KG round trip),
let the pruner keep the best ``width`` relations per path, follow them (one
round trip), let the pruner score the new paths (ToG) or sample entities at
random per relation chain (ToG-R), keep the best ``width`` paths, record every
candidate as a path node of the run, then ask the reasoner's judge for a
reward and stop once it reaches ``threshold`` or the depth reaches ``depth``.

The judge is offered the relations around the kept paths' tails (a look
ahead), but they are listed only when it reads them or the search goes on:
a judge that stops the search without looking (the LLM's, or the offline
one when the kept paths already explain the whole question) costs no round
trip, as in ToG, which lists relations only at the start of a depth.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.errors import TogError
from engine.graph import CANDIDATE_WINDOW, MAX_CANDIDATES, KnowledgeGraph, LazyMapping, Node, PathRecord, Relation
from engine.paths import Hop, Path, topic_groups
from engine.pruning import Choice, Pruner
from engine.reasoning import Answer, Reasoner, Schema

if TYPE_CHECKING:
    from engine.descriptions import Descriptions
    from engine.store import RunLog

# plan: lookahead planning with actor, model and critic (engine/planner.py); kg-llm-once: retrieve
# the neighbourhood once, then answer in one step (engine/paradigms.py)
METHODS = ("tog", "tog-r", "plan", "kg-llm-once")
BASELINES = ("io", "cot")  # the LLM alone, no knowledge graph (engine/runs.py)
# (lowest, highest) value of each numeric knob; None: no bound. sample_over: an endpoint tells a crowded
# pair by a first page of that many neighbours, which stays within the largest window
LIMITS: dict[str, tuple[float | None, float | None]] = {
    "width": (1, 50), "depth": (1, 10), "threshold": (0.0, 1.0), "max_candidates": (1, MAX_CANDIDATES),
    "sample_over": (0, CANDIDATE_WINDOW * MAX_CANDIDATES), "sample_size": (1, None),
    "lookahead": (1, 5), "proposals": (1, 10), "max_steps": (0, 10), "refresh_at": (0.0, 1.0)}


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Knobs of one search; validated when built."""

    width: int = 3
    depth: int = 3
    method: str = "tog"
    threshold: float = 0.9
    max_candidates: int = 100
    sample_over: int = 0
    sample_size: int = 5
    seed: int = 0
    lookahead: int = 3  # plan: simulated levels per real step (U)
    proposals: int = 5  # plan: actions the Actor proposes per level (N)
    max_steps: int = 0  # plan: real steps at most (T; 0: the depth)
    refresh_at: float = 0.34  # plan: Enough-NewInfo, the change that rebuilds the roles' context

    def __post_init__(self) -> None:
        if self.method not in METHODS + BASELINES:
            raise TogError(f"unknown method {self.method!r}; use one of {', '.join(METHODS + BASELINES)}")
        for name, (lo, hi) in LIMITS.items():
            value = getattr(self, name)
            if (lo is not None and value < lo) or (hi is not None and value > hi):
                bounds = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
                raise TogError(f"{name} must be {bounds}, not {value}")


class Recorder:
    """Writes a search's path nodes to the run log as the search goes."""

    def __init__(self, runs: RunLog | None, run_id: str | None) -> None:
        self.runs = runs if run_id else None
        self.run_id = run_id or ""

    def record(self, paths: Sequence[Path], kept: set[str]) -> None:
        if self.runs is None or not paths:
            return
        records = []
        for p in paths:
            hop = p.hops[-1] if p.hops else None
            records.append(PathRecord(
                id=p.id, depth=p.depth, entity=p.tail.id, name=p.tail.name, parent=p.parent,
                relation=hop.relation.id if hop else None,
                direction=hop.relation.direction if hop else None,
                via=tuple(r.id for r in hop.via) if hop else (),
                score=round(p.score, 6) if hop else None, kept=p.id in kept,
                literal=p.tail.literal, relation_name=hop.relation_text if hop else None,
            ))
        self.runs.record_step(self.run_id, records)


@dataclass(slots=True)
class SearchResult:
    answer: Answer
    kept: list[Path]
    supporting: list[Path]
    depth: int
    rewards: list[float] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


class CallPlan:
    """The chat calls a search makes at most, phase by phase: relations and
    entities when the pruner is an LLM (entities for ToG only), the judge
    when the reasoner is (not after the last depth), one answer. Tells the
    question's call budget what is still ahead before each phase."""

    def __init__(self, config: SearchConfig, pruner: Pruner, reasoner: Reasoner) -> None:
        self.depth = config.depth
        self.relations = int(pruner.uses_llm)
        if config.method == "plan":  # a real step's lookahead: Actor, Model per proposal, Critic per level
            self.depth = config.max_steps or config.depth
            self.relations = config.lookahead * (config.proposals + 2) if pruner.uses_llm else 0
        once = config.method == "kg-llm-once"  # one answer call, nothing in the loop
        self.entities = int(pruner.uses_llm and config.method in ("tog", "plan"))
        self.judge = int(reasoner.uses_llm)
        if once:
            self.relations = self.entities = self.judge = 0
        self.answer = int(reasoner.uses_llm)

    def per_depth(self, d: int) -> int:
        return self.relations + self.entities + (self.judge if d < self.depth else 0)

    def total(self) -> int:
        return sum(self.per_depth(d) for d in range(1, self.depth + 1)) + self.answer

    def limit(self) -> int:
        """The question's budget: the plan and one spare call (topic entities
        found by the LLM, or a repair)."""
        return self.total() + 1

    def before(self, d: int, phase: str) -> None:
        """Before ``phase`` ("relations", "entities", "judge", "answer") of depth ``d``."""
        from engine.llm import plan_calls

        later = sum(self.per_depth(k) for k in range(d + 1, self.depth + 1)) + self.answer
        this = {"relations": self.entities + (self.judge if d < self.depth else 0),
                "entities": self.judge if d < self.depth else 0, "judge": 0, "answer": -later}[phase]
        plan_calls(this + later)


def search(
    kg: KnowledgeGraph,
    question: str,
    topics: Sequence[Node],
    pruner: Pruner,
    reasoner: Reasoner,
    config: SearchConfig = SearchConfig(),
    recorder: Recorder | None = None,
    descriptions: Descriptions | None = None,
) -> SearchResult:
    """Run ToG / ToG-R for ``question`` from ``topics``.

    ``descriptions`` (a user's relation description file) are put on every
    relation the KG offers, for the pruner and the judge to read."""
    recorder = recorder or Recorder(None, None)
    if config.method == "plan":
        from engine.planner import plan_search, roles

        return plan_search(kg, question, topics, pruner, reasoner, config, recorder, descriptions,
                           roles(kg, pruner, descriptions))
    if config.method == "kg-llm-once":
        from engine.paradigms import retrieve_once

        return retrieve_once(kg, question, topics, pruner, reasoner, config, recorder, descriptions)
    plan = CallPlan(config, pruner, reasoner)
    rng = random.Random(f"{config.seed}:{question}")
    lookups0, seconds0 = kg.meter.lookups, kg.meter.seconds
    started = time.perf_counter()
    counter = itertools.count()

    beam = [Path(f"p{next(counter)}", t) for t in topics]
    groups = topic_groups(topics)
    recorder.record(beam, {p.id for p in beam})
    everything: dict[str, Path] = {p.id: p for p in beam}
    candidates: list[Path] = []
    rewards: list[float] = []
    reached = 0
    meeting: list[Path] = []
    around: Mapping[str, list[Relation]] = _relations_of(kg, beam, descriptions)
    schema: Schema | None = kg.schema.after if kg.schema is not None else None
    if schema is not None and descriptions is not None:
        plain_schema, notes = schema, descriptions
        schema = lambda rels: {r: notes.describe_all(v) for r, v in plain_schema(rels).items()}  # noqa: E731

    for depth in range(1, config.depth + 1):
        # 1. relation pruning, one call for the whole beam
        choices = [Choice(p, _relation_text(p, rel), rel) for p in beam for rel in around.get(p.id, ())]
        rels = [rel for p in beam for rel in around.get(p.id, ())]
        if not choices:
            break
        plan.before(depth, "relations")
        scores = pruner.score_relations(question, choices)
        chosen: dict[str, list[tuple[Relation, float]]] = defaultdict(list)
        order = sorted(range(len(choices)), key=lambda i: (-scores[i], rng.random()))
        for i in order:
            pid = choices[i].path.id
            if len(chosen[pid]) < config.width:
                chosen[pid].append((rels[i], scores[i]))
        # 2. follow the chosen relations, one round trip
        steps = [(p, rel, rscore) for p in beam for rel, rscore in chosen.get(p.id, ())]
        new: list[Path] = []
        for (_, _, rscore), grown in zip(steps, follow(kg, [(p, rel) for p, rel, _ in steps], config, descriptions,
                                                       counter)):
            for q in grown:
                q.relation_score = rscore
                new.append(q)
        if not new:
            break
        # 3. entity pruning (ToG) or sampling (ToG-R); the tails that have the step the question
        # needs next score a little more (a model cannot see which tails go on; the KG can, for one
        # listing, which the next depth reuses), and a model is shown them first in each group
        listed: dict[str, list[Relation]] = {}
        goes_on: set[str] = set()
        looked = depth >= config.depth  # the last depth: nothing follows
        if config.method == "tog":
            if pruner.uses_llm and not looked:
                looked = True
                for q in new:
                    q.score = q.relation_score
                listed, goes_on = _continuable(kg, question, topics, new, descriptions, config.width)
                group = {key: i for i, key in enumerate(dict.fromkeys((q.parent, q.hops[-1].relation) for q in new))}
                new.sort(key=lambda q: (group[(q.parent, q.hops[-1].relation)], q.id not in goes_on))
            plan.before(depth, "entities")
            escores = pruner.score_entities(question, [Choice(q, q.verbalise()) for q in new])
            for q, s in zip(new, escores):
                q.score = (q.relation_score + s) / 2
        else:
            for q in new:
                q.score = q.relation_score
        if not looked:
            listed, goes_on = _continuable(kg, question, topics, new, descriptions, config.width)
        for q in new:
            if q.id in goes_on:
                q.score = min(1.0, q.score + CONTINUE_BONUS)
        ranked = sorted(new, key=lambda q: (-q.score, rng.random()))
        beam = _keep(ranked, config.width, groups)
        kept = {q.id for q in beam}
        recorder.record(ranked, kept)
        everything.update((q.id, q) for q in new)
        candidates = ranked
        reached = depth
        meeting = _meeting(ranked, groups, config.width) if len(set(groups.values())) > 1 else []
        if meeting:  # what every topic's paths reach answers first
            candidates = meeting + [q for q in ranked if q.id not in {m.id for m in meeting}]
        # 4. judge: are the kept paths enough?  (After the last depth the
        # search stops anyway: no relations to list for a judge's look-ahead.)
        around = _around(kg, beam, descriptions, listed) if depth < config.depth else {}
        plan.before(depth, "judge")
        judged = beam + [m for m in meeting if m.id not in kept]
        reward = reasoner.judge(question, topics, judged, around, config.depth - depth, schema)
        rewards.append(reward)
        if reward >= config.threshold:
            break

    plan.before(config.depth, "answer")
    # the answer sees the kept paths and, for several topics, the paths where they meet
    shown = beam + [m for m in meeting if m.id not in {q.id for q in beam}] if reached else []
    answer = reasoner.answer(question, topics, shown, candidates)
    supporting = [everything[i] for i in answer.path_ids if i in everything]
    stats = {
        "depth": reached,
        "rewards": rewards,
        "kg_lookups": kg.meter.lookups - lookups0,
        "kg_seconds": round(kg.meter.seconds - seconds0, 6),
        "seconds": round(time.perf_counter() - started, 6),
        "paths_scored": len(everything) - len(topics),
    }
    return SearchResult(answer, beam if reached else [], supporting, reached, rewards, stats)


def follow(kg: KnowledgeGraph, steps: Sequence[tuple[Path, Relation]], config: SearchConfig,
           descriptions: Descriptions | None, counter: Iterator[int]) -> list[list[Path]]:
    """Each (path, relation) step followed, in one bounded expansion (the
    search's sampling limits): per step, the longer paths, never straight back
    along the edge just taken."""
    requests = list(dict.fromkeys((p.tail.id, rel) for p, rel in steps))
    if not requests:
        return [[] for _ in steps]
    found = kg.expand(requests, limit=config.max_candidates, over=config.sample_over, size=config.sample_size)
    if descriptions is not None:
        found = descriptions.describe_candidates(found)
    by_request: dict[tuple[str, Relation], list] = defaultdict(list)
    for c in found:
        by_request[(c.source, c.relation)].append(c)
    return [[p.extend(f"p{next(counter)}", Hop(rel, c.node, c.via)) for c in by_request.get((p.tail.id, rel), ())
             if not p.walks_back(rel, c.node.id)] for p, rel in steps]


CONTINUE_BONUS = 0.05  # for a path whose tail has the step the question needs next
CONTINUE_LOOKED_AT = 10  # candidates per kept place whose tails are looked at for it


def _continuable(kg: KnowledgeGraph, question: str, topics: Sequence[Node], new: Sequence[Path],
                 descriptions: Descriptions | None, width: int) -> tuple[dict[str, list[Relation]], set[str]]:
    """Among the best candidates, those whose tail has the relation the
    question needs next (they score a little more, so that the beam does not keep
    books without a publisher when the question asks for publishers): with
    learned chains, the step the likeliest learned chain through the path
    takes next; else, while the kind of thing asked for ("which publisher")
    is not reached, a relation that ends in that kind.  One batched,
    bounded relation listing of at most ``CONTINUE_LOOKED_AT * width`` tails,
    returned so that the next depth does not list the kept ones again, with
    the ids of the paths that go on."""
    from engine.learning import relation_keys

    top = sorted(new, key=lambda q: -q.score)[: CONTINUE_LOOKED_AT * width]
    wanted: dict[str, Callable[[Relation], bool]] = {}
    view = descriptions.model.view(question, [t.name for t in topics]) \
        if descriptions is not None and descriptions.model is not None else None
    if view:
        for q in top:
            keys = relation_keys(q.relations())
            nxt = max(((p, c[len(keys)]) for c, p in view.probs.items()
                       if len(c) > len(keys) and c[:len(keys)] == keys), default=None)
            if nxt is not None and nxt[0] > view.whole(keys):
                wanted[q.id] = _is_step(nxt[1])
    else:
        from engine.alignment import QuestionModel

        model = QuestionModel.of(question, [t.name for t in topics])
        if not model.focus:
            return {}, set()
        for q in top:
            if q.hops and not model.kind_reached(q.relations()[-1]):
                wanted[q.id] = model.kind_reached
    tails = list(dict.fromkeys(q.tail.id for q in top if q.id in wanted and not q.tail.literal))
    if not tails:
        return {}, set()
    around = kg.relations(tails)
    return around, {q.id for q in top if q.id in wanted and any(wanted[q.id](r) for r in around.get(q.tail.id, ()))}


def _is_step(key: str) -> Callable[[Relation], bool]:
    from engine.learning import step_key

    return lambda r: step_key((r.id, r.direction)) == key


def _keep(ranked: Sequence[Path], width: int, groups: Mapping[str, int]) -> list[Path]:
    """The beam: the best ``width`` paths, or the best ``width`` of each
    topic when the question has several (ToG's beam per topic)."""
    if len(set(groups.values())) <= 1:
        return list(ranked[:width])
    taken: dict[int, int] = defaultdict(int)
    out = []
    for q in ranked:
        g = groups.get(q.topic.id, -1)
        if taken[g] < width:
            taken[g] += 1
            out.append(q)
    return out


def _meeting(paths: Iterable[Path], groups: Mapping[str, int], width: int) -> list[Path]:
    """Paths to the entities that every topic's paths of this depth reach
    (kept or not), best first: per such entity, each topic's best path to
    it; at most ``width`` entities.  (Only this depth's: when the judge went
    deeper, what the topics shared one step before was not the answer.)"""
    best: dict[str, dict[int, Path]] = defaultdict(dict)
    for p in paths:
        if not p.hops or p.tail.id in groups:
            continue
        g = groups.get(p.topic.id, -1)
        held = best[p.tail.id].get(g)
        if held is None or p.score > held.score:
            best[p.tail.id][g] = p
    wanted = len(set(groups.values()))
    met = [(sum(p.score for p in by.values()), e, by) for e, by in best.items() if len(by) == wanted]
    met.sort(key=lambda x: (-x[0], x[1]))
    return [p for _, _, by in met[:width] for _, p in sorted(by.items())]


def _relation_text(p: Path, rel: Relation) -> str:
    head = p.verbalise(with_entities=False)
    return f"{head} -> {rel.text}{' (of)' if rel.direction == 'in' else ''}"


def _around(kg: KnowledgeGraph, beam: Sequence[Path], descriptions: Descriptions | None,
            known: Mapping[str, list[Relation]] | None = None) -> LazyMapping[list[Relation]]:
    """``_relations_of`` the beam, listed on first use (``known``: tails listed already)."""
    return LazyMapping(lambda: _relations_of(kg, beam, descriptions, known))


def _relations_of(kg: KnowledgeGraph, beam: Sequence[Path], descriptions: Descriptions | None = None,
                  known: Mapping[str, list[Relation]] | None = None) -> dict[str, list[Relation]]:
    tails = list(dict.fromkeys(p.tail.id for p in beam if not p.tail.literal))
    if not tails:
        return {}
    known = known or {}
    missing = [t for t in tails if t not in known]
    rels = {**{t: known[t] for t in tails if t in known}, **(kg.relations(missing) if missing else {})}
    if descriptions is not None:
        rels = {e: descriptions.describe_all(found) for e, found in rels.items()}
    return {p.id: rels.get(p.tail.id, []) for p in beam if not p.tail.literal}
