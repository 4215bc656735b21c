"""Reasoners: the judge (is the beam enough to answer?) and the answerer.

The offline reasoner needs no LLM.  It measures how well a path explains the
question: the question's content words that the path's relations account for,
plus whether the path ends in the kind of thing asked for ("which
languages").  Its judge then looks ahead over the graph's schema (the
relations around the beam's tails, then the relations that usually follow
those) within the depth that is left: when no longer path could explain more
than the best kept path already does, going deeper cannot help, the reward is
1 and the search stops; otherwise the reward drops by the share of the
question that going deeper could still explain.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from engine.alignment import QuestionModel
from engine.errors import deferred, lookup
from engine.graph import Node, Relation
from engine.paths import Path, topic_groups

if TYPE_CHECKING:
    from engine.descriptions import Descriptions

MAX_OUTLOOK = 40    # relations tried per step of the look-ahead
OUTLOOK_BEAM = 10   # chains the look-ahead takes on past its second step (the best so far)


@dataclass(slots=True)
class Answer:
    """Answer names, best first, and the ids of the path nodes behind them."""

    names: list[str]
    ids: list[str] = field(default_factory=list)
    path_ids: list[str] = field(default_factory=list)
    from_kg: bool = True
    reason: str = ""


# For a batch of relations, those that can follow each (``RelationSchema.after``).
Schema = Callable[[Sequence[Relation]], Mapping[Relation, Sequence[Relation]]]


class Reasoner(Protocol):
    name: str
    uses_llm: bool  # makes chat calls (they count against a question's call budget)

    def judge(self, question: str, topics: Sequence[Node], paths: Sequence[Path],
              next_relations: Mapping[str, Sequence[Relation]], remaining: int = 0,
              schema: Schema | None = None) -> float:
        """Reward in [0, 1]: how sufficient the kept ``paths`` are.

        ``next_relations`` maps a path id to the relations around its tail,
        ``remaining`` is how many hops the search may still take and
        ``schema`` (when the backend has one) tells which relations follow
        each of a batch of relations.  A judge may ignore all three."""

    def answer(self, question: str, topics: Sequence[Node], kept: Sequence[Path],
               candidates: Sequence[Path]) -> Answer:
        """The answer from the kept paths (``candidates``: every path scored at
        the last depth, kept or not, best first)."""


class OfflineReasoner:
    """Judge by how much of the question the kept paths explain and how much
    more a longer path could (looking ahead over the graph's schema within
    the depth left); answer with the tails of the best relation chain."""

    name = "offline"
    uses_llm = False
    LEARNED_FLOOR = 0.05  # below this mass of learned chains on the kept paths, judge without them

    def __init__(self, descriptions: Descriptions | None = None, soft_match: bool = False, **_: object) -> None:
        self.learned = descriptions.model if descriptions is not None else None
        self.soft = soft_match

    def _view(self, question: str, topics: Sequence[Node]):
        if self.learned is None:
            return None
        view = self.learned.view(question, [t.name for t in topics])
        return view or None

    def judge(self, question, topics, paths, next_relations, remaining=0, schema=None) -> float:
        if not paths or remaining <= 0:
            return 1.0
        view = self._view(question, topics)
        if view is not None:
            # learned: stop when a kept path is a whole chain likelier than
            # any chain a kept path could still grow into within the depth left
            from engine.learning import relation_keys

            keys = [relation_keys(p.relations()) for p in paths]
            whole = max(view.whole(k) for k in keys)
            longer = max(view.longer(k, remaining) for k in keys)
            if whole + longer >= self.LEARNED_FLOOR:
                return round(whole / (whole + longer), 6)
        model = QuestionModel.of(question, [t.name for t in topics], self.soft)
        now = max(model.utility(p.relations()) for p in paths)
        if now >= model.size:
            return 1.0  # nothing left to explain (a utility never exceeds the size): no need to look ahead
        first: dict[str, list[Relation]] = {p.id: list(next_relations.get(p.id, ())) for p in paths}
        if schema is not None and model.focus and not any(p.hops and model.kind_reached(p.relations()[-1])
                                                          for p in paths):
            # the kind asked for is not reached yet, and the kept tails may
            # lack the relation to it that others of their kind have (books
            # without a publisher): the schema says what usually follows
            lasts = list(dict.fromkeys(p.relations()[-1] for p in paths if p.hops))
            after = schema(lasts)
            for p in paths:
                if p.hops:
                    listed = set(first[p.id])
                    first[p.id] += [r for r in after.get(p.relations()[-1], ()) if r not in listed]
        follows: dict[Relation, Sequence[Relation]] = {}

        def learn(relations: Sequence[Relation]) -> None:
            """What each of ``relations`` may take next, those not known yet in one batch."""
            new = [r for r in dict.fromkeys(relations) if r not in follows]
            if new and schema is not None:
                found = schema(new)
                follows.update((r, found.get(r, ())) for r in new)

        def outlook(chain: tuple[Relation, ...], options: Sequence[Relation], budget: int) -> float:
            """Best utility reachable by taking 1..budget more hops: every chain
            of one and two more (MAX_OUTLOOK options a step: a hub's tail may
            offer hundreds), and past that only the OUTLOOK_BEAM best of a
            step's chains go on (every chain would be MAX_OUTLOOK ** budget of
            them: at depth 5, minutes and gigabytes a question)."""
            best, level = 0.0, [chain]
            for step in range(budget):
                grown: list[tuple[float, tuple[Relation, ...]]] = []
                for c in level:
                    for rel in (options if c is chain else follows[c[-1]])[:MAX_OUTLOOK]:
                        longer = c + (rel,)
                        grown.append((model.utility(longer), longer))
                best = max([best, *(u for u, _ in grown)])
                if step + 1 == budget or schema is None:
                    break
                ahead = grown if step == 0 else sorted(grown, key=lambda x: -x[0])[:OUTLOOK_BEAM]
                learn([c[-1] for _, c in ahead])
                level = [c for _, c in ahead if follows[c[-1]]]
            return best

        if remaining > 1:  # the first step's options of every path, in one batch
            learn([r for p in paths for r in first[p.id][:MAX_OUTLOOK]])
        later = max(outlook(tuple(p.relations()), first[p.id], remaining) for p in paths)
        gain = later - now
        if gain <= 0 or model.size <= 0:
            return 1.0
        return round(max(0.0, 1.0 - gain / model.size), 6)

    def answer(self, question, topics, kept, candidates) -> Answer:
        topic_ids = {t.id for t in topics}
        # a path may end back at a topic ("X's wife's husband" is X), but a
        # question rarely asks for its own topic: it answers only when the
        # best chain reaches nothing else
        pool = [p for p in candidates if p.hops]
        if not pool:
            return Answer([], from_kg=False, reason="no path from the topic entities reached an answer")
        met = _met(topics, pool)
        if met:
            both: list[Path] = [p for p in pool if p.tail.id in met]
            firsts: dict[str, Path] = {}
            for p in both:
                firsts.setdefault(p.tail.id, p)
            return Answer([p.tail.name for p in firsts.values()], list(firsts), [p.id for p in both], True,
                          "reached from every topic of the question")
        model = QuestionModel.of(question, [t.name for t in topics], self.soft)
        fitting = [p for p in pool if model.kind_fits(p.relations()[-1] if p.hops else None)] or pool
        best = max(fitting, key=lambda p: p.score)
        view = self._view(question, topics)
        if view is not None:  # learned: the likeliest whole chain, when any candidate is one
            from engine.learning import relation_keys

            likely = max(pool, key=lambda p: (view.whole(relation_keys(p.relations())), p.score))
            if view.whole(relation_keys(likely.relations())) > 0:
                best = likely
        chain = best.chain
        kept_ids = {p.id for p in kept}
        ranked = sorted(pool, key=lambda p: (p.chain != chain, p.tail.id in topic_ids, p.id not in kept_ids, -p.score))
        names: list[str] = []
        ids: list[str] = []
        support: list[str] = []
        for p in ranked:
            if p.chain != chain and names:
                break
            if p.tail.id in topic_ids and names:
                continue
            if p.tail.id not in ids:  # every answer is backed by the first path that reached it
                ids.append(p.tail.id)
                names.append(p.tail.name)
                support.append(p.id)
        return Answer(names, ids, support, True, f"tails of the best relation chain ({best.verbalise(False)})")


def _met(topics: Sequence[Node], paths: Sequence[Path]) -> set[str]:
    """Tails that the paths of every topic of the question reach (several
    topics only: entities that share a name are one topic)."""
    groups = topic_groups(topics)
    if len(set(groups.values())) < 2:
        return set()
    reached: dict[int, set[str]] = defaultdict(set)
    for p in paths:
        if p.hops and p.tail.id not in groups:
            reached[groups.get(p.topic.id, -1)].add(p.tail.id)
    if len(reached) < len(set(groups.values())):
        return set()
    return set.intersection(*reached.values())


REASONERS: dict[str, Callable[..., Reasoner]] = {
    "llm": deferred("engine.agent", "LLMReasoner"),  # imported when made
    "offline": OfflineReasoner,
}


def get_reasoner(name: str, **options: object) -> Reasoner:
    """The reasoner registered under ``name``; :class:`UnknownComponentError` otherwise."""
    return lookup(REASONERS, "reasoner", name)(**options)
