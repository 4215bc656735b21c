"""Reasoning by model-based planning with tree search (``--method plan``).

The framework's Algorithm 2 inside its adapted inner loop (Algorithm 3). At
each real step the KG lists the relations around the kept paths' ends: those
are the actions it offers. Then, for ``lookahead`` levels:

- the **Actor** proposes ``proposals`` actions (a relation to follow from a
  path: at the first level one the KG offered, deeper one the Model foresaw);
- the **Model**, a simulated knowledge base, predicts the state each would
  lead to: which relations would lead on from there;
- the **Critic** scores the trajectories and keeps the best ``width``.

The first action of the best trajectory is then carried out on the real KG
(one bounded expansion; when the Critic scores every trajectory 0, it can
tell nothing, and the Actor's first ``width`` actions are carried out
together, as ToG keeps ``width`` relations); its new paths are scored as
ToG scores entities.
When the best trajectory's second step is a KG relation, the plan needs
tails that offer it: among the best ``PLAN_CANDIDATES`` new paths, those
whose tail has that relation go first (one relation listing, which the judge
and the next step reuse). The best ``width`` become the beam, and the
judge's reward decides whether to stop (``threshold``) or plan the next step
(at most ``max_steps``).

Offline, the roles are the engine's own parts: the relation scorer is the
Actor, the store's relation schema (which relations follow which) the Model,
the question model's chain utility the Critic. With an LLM they are prompts
(``engine/prompts/actor.txt``, ``model.txt``, ``critic.txt``) through the same
client (structured replies, call budget, cache), each call counted by its
role; a reply that cannot be read leaves that role's decision to its offline
counterpart. A real step costs at most ``lookahead * (1 + proposals + 1)``
role calls.

**Enough-NewInfo.** The roles read a context (B_k): the memory's paths as of
its last refresh. It is rebuilt from the memory (D_t, every path kept so far,
the latest first) only when enough has changed: the kept paths' answer set
moved by a Jaccard distance of more than ``refresh_at``, or the judge's reward by more than that. Each refresh is
recorded in the run (``stats["context_refreshes"]``).

Simulated steps never reach the KG: the Model reads the schema (or asks the
LLM), and the lookahead is kept in the run's stats (``stats["lookahead"]``,
marked simulated; ``tog runs show --simulated``), never as path nodes of
the run (Neo4j draws its deepest level beside them as ``TogSimulated`` run
nodes, never KG facts).
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote

from engine.graph import KnowledgeGraph, Node, Relation
from engine.paths import Path
from engine.pruning import Choice, Pruner
from engine.reasoning import Reasoner

if TYPE_CHECKING:
    from engine.descriptions import Descriptions
    from engine.search import Recorder, SearchConfig, SearchResult

SIMULATED = "urn:tog:simulated:"  # relations the Model foresaw by name only (not KG relations)
MAX_FORESEEN = 8  # relations a Model's predicted state keeps
PLAN_CANDIDATES = 50  # new paths checked for the plan's next step (one relation listing)
UNFINISHED = 0.8  # the offline Critic's discount for a trajectory that does not end in the kind asked for


@dataclass(slots=True)
class Trajectory:
    """A real path, the action taken from it and the simulated steps after:
    ``steps[0]`` is always a relation the KG offered at the path's end (the
    action follows it from every kept path that offers it)."""

    path: Path
    steps: tuple[Relation, ...]
    ahead: list[Relation] = field(default_factory=list)  # the Model's predicted next relations
    score: float = 0.0

    @property
    def first(self) -> Relation:
        return self.steps[0]

    def chain(self) -> tuple[Relation, ...]:
        return tuple(self.path.relations()) + self.steps

    def text(self) -> str:
        head = self.path.verbalise()
        real = f"{head} -> {_step(self.steps[0])}"
        return real + "".join(f" => {_step(r)}" for r in self.steps[1:])


def _step(rel: Relation) -> str:
    return rel.text + (" (of)" if rel.direction == "in" else "")


def foreseen(text: str) -> Relation:
    """A relation the Model names that the KG was not asked about."""
    name = " ".join(text.split())[:80]
    return Relation(SIMULATED + quote(name, safe=""), "out", label=name)


# -- the offline roles -------------------------------------------------------

class OfflineActor:
    """Proposes the actions the relation scorer ranks best (no LLM)."""

    uses_llm = False

    def __init__(self, pruner: Pruner) -> None:
        self.pruner = pruner

    def propose(self, question: str, context: str, options: Sequence[tuple[Trajectory | Path, Relation]],
                n: int) -> list[int]:
        if not options:
            return []
        choices = [Choice(_path_of(owner), _option_text(owner, rel), rel) for owner, rel in options]
        scores = self.pruner.score_relations(question, choices)
        return sorted(range(len(options)), key=lambda i: -scores[i])[:n]


class SchemaModel:
    """Predicts what a step leads to from the store's relation schema (which
    relations follow which, from a bounded sample): no KG lookups per step."""

    uses_llm = False

    def __init__(self, kg: KnowledgeGraph) -> None:
        self.schema = kg.schema

    def predict(self, question: str, context: str, trajectories: Sequence[Trajectory]) -> list[list[Relation]]:
        if self.schema is None:
            return [[] for _ in trajectories]
        real = list(dict.fromkeys(t.steps[-1] for t in trajectories if not t.steps[-1].id.startswith(SIMULATED)))
        after = self.schema.after(real) if real else {}
        return [list(after.get(t.steps[-1], ()))[:MAX_FORESEEN] for t in trajectories]


class OfflineCritic:
    """Scores a trajectory by how much of the question its whole relation
    chain explains (the offline judge's question model), learned chains first
    when the store keeps them."""

    uses_llm = False

    def __init__(self, descriptions: Descriptions | None = None, soft_match: bool = False) -> None:
        self.learned = descriptions.model if descriptions is not None else None
        self.soft = soft_match

    def evaluate(self, question: str, context: str, topics: Sequence[Node],
                 trajectories: Sequence[Trajectory]) -> list[float]:
        from engine.alignment import QuestionModel

        model = QuestionModel.of(question, [t.name for t in topics], self.soft)
        view = self.learned.view(question, [t.name for t in topics]) if self.learned is not None else None
        out = []
        for t in trajectories:
            chain = t.chain()
            score = model.score(chain)  # words explained, the kind asked for at the end, in order, nothing idle
            if model.focus and not model.kind_reached(chain[-1]):
                score *= UNFINISHED  # it does not end in the kind of thing asked for: a walk still on its way
            if view:
                from engine.learning import relation_keys

                keys = relation_keys(chain)
                score = 0.5 * score + 0.5 * min(1.0, view.whole(keys) + view.longer(keys, 0))
            out.append(round(min(1.0, max(0.0, score)), 6))
        return out


def _path_of(owner: Trajectory | Path) -> Path:
    return owner.path if isinstance(owner, Trajectory) else owner


def _option_text(owner: Trajectory | Path, rel: Relation) -> str:
    if isinstance(owner, Trajectory):
        return f"{owner.text()} => {_step(rel)}"
    return f"{owner.verbalise(with_entities=False)} -> {_step(rel)}"


# -- the loop ----------------------------------------------------------------

@dataclass(slots=True)
class Context:
    """B_k: what the roles read, rebuilt from the memory only on enough new information."""

    text: str
    answers: frozenset[str]
    reward: float
    refreshes: list[dict] = field(default_factory=list)

    def update(self, step: int, kept: Sequence[Path], memory: Sequence[Path], reward: float, at: float) -> bool:
        """Rebuild the context from the memory (its latest paths first) when
        the kept paths' answers or the reward moved by more than ``at``."""
        answers = frozenset(p.tail.id for p in kept)
        union = answers | self.answers
        moved = 1 - len(answers & self.answers) / len(union) if union else 0.0
        jump = abs(reward - self.reward)
        if moved <= at and jump <= at:
            return False
        why = "; ".join(x for x in (f"answer set moved {moved:.2f}" if moved > at else "",
                                    f"reward {self.reward:.2f} -> {reward:.2f}" if jump > at else "") if x)
        self.text = summary(list(reversed(memory)))
        self.answers, self.reward = answers, reward
        self.refreshes.append({"step": step, "why": why, "paths": len(memory)})
        return True


def summary(kept: Sequence[Path], limit: int = 12) -> str:
    return "\n".join(p.verbalise() for p in kept[:limit]) or "(nothing yet)"


def plan_search(kg: KnowledgeGraph, question: str, topics: Sequence[Node], pruner: Pruner, reasoner: Reasoner,
                config: SearchConfig, recorder: Recorder, descriptions: Descriptions | None = None,
                roles: tuple | None = None) -> SearchResult:
    """``--method plan`` from ``topics``; ``roles`` (actor, model, critic) default to the offline ones."""
    from engine.graph import LazyMapping
    from engine.search import CallPlan, SearchResult, _around, _relations_of, follow

    actor, model, critic = roles or default_roles(kg, pruner, descriptions)
    plan = CallPlan(config, pruner, reasoner)
    rng = random.Random(f"{config.seed}:{question}")
    lookups0, seconds0 = kg.meter.lookups, kg.meter.seconds
    started = time.perf_counter()
    counter = itertools.count()
    steps = config.max_steps or config.depth
    beam = [Path(f"p{next(counter)}", t) for t in topics]
    recorder.record(beam, {p.id for p in beam})
    everything: dict[str, Path] = {p.id: p for p in beam}
    memory: list[Path] = list(beam)  # D_t: every path kept so far
    context = Context(summary(beam), frozenset(p.tail.id for p in beam), 0.0)
    rewards: list[float] = []
    lookahead: list[dict] = []
    candidates: list[Path] = []
    reached = 0
    schema = kg.schema.after if kg.schema is not None else None
    ahead: LazyMapping[list[Relation]] | None = None  # the relations around the beam, once the judge (or this loop) lists them

    for step in range(1, steps + 1):
        # the actions the KG offers: one round trip (or none: the judge's look at them is reused)
        around = ahead if ahead is not None else _relations_of(kg, beam, descriptions)
        # an action is a relation, followed from every kept path whose end offers it (shown with the best one)
        offering: dict[Relation, list[Path]] = {}
        for p in beam:
            for rel in around.get(p.id, ()):
                offering.setdefault(rel, []).append(p)
        offered = [(paths[0], rel) for rel, paths in offering.items()]
        if not offered:
            break
        plan.before(step, "relations")
        levels = min(config.lookahead, steps - step + 1)  # no plan longer than the steps left
        ranked_first, tree = _look_ahead(question, topics, context.text, offered, actor, model, critic, config,
                                         levels)
        lookahead.append({"step": step, "simulated": True, "offered": len(offered), "levels": tree,
                          "chosen": [t.text() for t in ranked_first[:1]]})
        new: list[Path] = []
        planned: Relation | None = None
        # ranked_first holds one trajectory per action, best first. When the Critic can tell nothing
        # (the best scores 0), the Actor's first W actions are carried out together, as ToG keeps W
        # relations; otherwise one action
        if ranked_first and ranked_first[0].score <= 0.0:
            groups = [ranked_first[:config.width]] + [[t] for t in ranked_first[config.width:]]
        else:
            groups = [[t] for t in ranked_first]
        for group in groups:  # the first action of the best trajectory; the next one if it leads nowhere
            pairs = [(p, t.first) for t in group for p in offering.get(t.first, [t.path])]
            for grown in follow(kg, pairs, config, descriptions, counter):
                for q in grown:
                    q.relation_score = group[0].score
                    new.append(q)
            if new:
                best = group[0]
                lookahead[-1]["taken"] = " | ".join(t.text().split(" => ")[0] for t in group)
                if len(best.steps) > 1 and not best.steps[1].id.startswith(SIMULATED):
                    planned = best.steps[1]  # what the plan does next, when it is a relation of the KG
                break
        if not new:
            break
        if config.method == "plan" and pruner.uses_llm:
            plan.before(step, "entities")
        escores = pruner.score_entities(question, [Choice(q, q.verbalise()) for q in new])
        for q, s in zip(new, escores):
            q.score = (q.relation_score + s) / 2
        ranked = sorted(new, key=lambda q: (-q.score, rng.random()))
        known = None
        if planned is not None and step < steps:
            # the plan's next step needs tails that offer it: among the best candidates those
            # that do go first (one listing, which the judge and the next step then reuse)
            head = [q for q in ranked[:PLAN_CANDIDATES] if not q.tail.literal]
            known = kg.relations(list(dict.fromkeys(q.tail.id for q in head)))
            offers = {q.id for q in head if planned in known.get(q.tail.id, ())}
            if offers:
                ranked = sorted(ranked, key=lambda q: q.id not in offers)
            lookahead[-1]["planned_next"] = {"relation": _step(planned), "offered_by": len(offers),
                                             "candidates": len(head)}
        beam = ranked[:config.width]
        recorder.record(ranked, {q.id for q in beam})
        everything.update((q.id, q) for q in new)
        memory += beam
        candidates, reached = ranked, step
        plan.before(step, "judge")
        ahead = _around(kg, beam, descriptions, known) if step < steps else None  # listed when first read
        reward = reasoner.judge(question, topics, beam, ahead if ahead is not None else {}, steps - step, schema)
        rewards.append(reward)
        context.update(step, beam, memory, reward, config.refresh_at)
        if reward >= config.threshold:
            break

    plan.before(steps, "answer")
    answer = reasoner.answer(question, topics, beam if reached else [], candidates)
    supporting = [everything[i] for i in answer.path_ids if i in everything]
    stats = {
        "depth": reached, "rewards": rewards,
        "kg_lookups": kg.meter.lookups - lookups0, "kg_seconds": round(kg.meter.seconds - seconds0, 6),
        "seconds": round(time.perf_counter() - started, 6), "paths_scored": len(everything) - len(topics),
        "lookahead": lookahead, "context_refreshes": context.refreshes, "memory": len(memory),
    }
    return SearchResult(answer, beam if reached else [], supporting, reached, rewards, stats)


def _look_ahead(question: str, topics: Sequence[Node], context: str, offered: Sequence[tuple[Path, Relation]],
                actor, model, critic, config: SearchConfig, levels: int) -> tuple[list[Trajectory], list[list[dict]]]:
    """The trajectories ranked by the Critic (best first; the first steps of
    the best are what the KG carries out) and, per level, what was simulated."""
    frontier: list[Trajectory] = []
    tree: list[list[dict]] = []
    best_of_first: dict[Relation, Trajectory] = {}
    for level in range(levels):
        if level == 0:
            options: list[tuple[Trajectory | Path, Relation]] = list(offered)
        else:
            options = [(t, rel) for t in frontier for rel in t.ahead]
        if not options:
            break
        picked = actor.propose(question, context, options, config.proposals)
        grown = []
        for i in picked:
            owner, rel = options[i]
            grown.append(Trajectory(owner, (rel,)) if isinstance(owner, Path)
                         else Trajectory(owner.path, owner.steps + (rel,)))
        if not grown:
            break
        for t, ahead in zip(grown, model.predict(question, context, grown)):
            t.ahead = [r for r in ahead if r not in t.chain()]  # never the same relation the same way twice
        for t, s in zip(grown, critic.evaluate(question, context, topics, grown)):
            t.score = s
        grown.sort(key=lambda t: -t.score)
        frontier = grown[:config.width]
        tree.append([{"trajectory": t.text(), "score": t.score, "foreseen": [_step(r) for r in t.ahead[:4]],
                      "from": t.path.id, "steps": [_step(r) for r in t.steps]} for t in grown])
        for t in grown:  # a first action is worth its best trajectory
            if t.first not in best_of_first or t.score > best_of_first[t.first].score:
                best_of_first[t.first] = t
    ranked = sorted(best_of_first.values(), key=lambda t: -t.score)
    # the first actions the Actor never proposed still follow, in the KG's order, should all others lead nowhere
    ranked += [Trajectory(p, (rel,)) for p, rel in offered if rel not in best_of_first]
    return ranked, tree


def default_roles(kg: KnowledgeGraph, pruner: Pruner, descriptions: Descriptions | None = None,
                  soft_match: bool = False) -> tuple:
    """The offline Actor, Model and Critic."""
    return OfflineActor(pruner), SchemaModel(kg), OfflineCritic(descriptions, soft_match)


def roles(kg: KnowledgeGraph, pruner: Pruner, descriptions: Descriptions | None = None) -> tuple:
    """Actor, Model and Critic: by the LLM when the pruner is the LLM (each
    with its offline counterpart to fall back on), else the offline ones."""
    offline = default_roles(kg, getattr(pruner, "offline", pruner), descriptions)
    client = getattr(pruner, "client", None)
    if not pruner.uses_llm or client is None:
        return default_roles(kg, pruner, descriptions)
    from engine.agent import LLMActor, LLMCritic, LLMModel

    return LLMActor(client, offline[0]), LLMModel(client, offline[1]), LLMCritic(client, offline[2])
