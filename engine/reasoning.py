"""Reasoners: the judge (is the beam enough to answer?) and the answerer.

The offline reasoner needs no LLM.  Its judge asks whether the relations one
hop further could still explain words of the question that the kept paths do
not explain yet: if no extended path would explain more of the question than
the best kept path does now, going deeper cannot make the paths fit the
question better, so the reward is 1 and the search stops; otherwise the
reward drops by the share of the question that the best next hop would add.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from engine.errors import UnknownComponentError
from engine.graph import Relation
from engine.paths import Path
from engine.text import focus_terms, strip_mentions, terms


@dataclass(slots=True)
class Answer:
    """Answer names, best first, and the ids of the path nodes behind them."""

    names: list[str]
    ids: list[str] = field(default_factory=list)
    path_ids: list[str] = field(default_factory=list)
    from_kg: bool = True
    reason: str = ""


class Reasoner(Protocol):
    name: str

    def judge(self, question: str, topics: Sequence[str], paths: Sequence[Path],
              next_relations: Mapping[str, Sequence[Relation]]) -> float:
        """Reward in [0, 1]: how sufficient the kept ``paths`` are.
        ``next_relations`` maps a path id to the relations around its tail."""

    def answer(self, question: str, topics: Sequence[str], kept: Sequence[Path],
               candidates: Sequence[Path]) -> Answer:
        """The answer from the kept paths (``candidates``: every path scored at
        the last depth, kept or not, best first)."""


def question_terms(question: str, topics: Sequence[str]) -> frozenset[str]:
    return frozenset(terms(strip_mentions(question, list(topics))))


def relation_terms(texts: Sequence[str]) -> frozenset[str]:
    out: set[str] = set()
    for t in texts:
        out.update(terms(t))
    return frozenset(out)


def fits_focus(path: Path, focus: frozenset[str]) -> bool:
    """False only when the question asks for a kind of thing ("which
    languages") and the KG says the path's tail is something else."""
    if not focus:
        return True
    role = path.answer_role()
    return role is None or focus <= frozenset(terms(role))


class OfflineReasoner:
    """Judge by question coverage with one hop of look-ahead and by the kind
    of thing asked for; answer with the tails of the best relation chain."""

    name = "offline"

    def __init__(self, **_: object) -> None:
        pass

    def judge(self, question, topics, paths, next_relations) -> float:
        q = question_terms(question, topics)
        if not q or not paths:
            return 1.0
        covered = [relation_terms(p.relation_texts()) & q for p in paths]
        best = max(len(c) for c in covered)
        gain = 0
        for p, have in zip(paths, covered):
            for rel in next_relations.get(p.id, ()):
                gain = max(gain, len(have | (frozenset(terms(rel.text)) & q)) - best)
        gain = gain / len(q)
        reward = 1.0 - gain
        focus = focus_terms(question)
        if not any(fits_focus(p, focus) for p in paths):
            reward = min(reward, 0.5)  # the tails are not what the question asks for
        return round(reward, 6)

    def answer(self, question, topics, kept, candidates) -> Answer:
        pool = [p for p in candidates if p.tail.id not in topics]
        if not pool:
            return Answer([], from_kg=False, reason="no path from the topic entities reached an answer")
        focus = focus_terms(question)
        fitting = [p for p in pool if fits_focus(p, focus)] or pool
        best = max(fitting, key=lambda p: p.score)
        chain = best.chain
        kept_ids = {p.id for p in kept}
        ranked = sorted(pool, key=lambda p: (p.chain != chain, p.id not in kept_ids, -p.score))
        names: list[str] = []
        ids: list[str] = []
        support: list[str] = []
        for p in ranked:
            if p.chain != chain and names:
                break
            if p.tail.id not in ids:
                ids.append(p.tail.id)
                names.append(p.tail.name)
            if p.id in kept_ids or len(support) < 3:
                support.append(p.id)
        return Answer(names, ids, support, True, f"tails of the best relation chain ({best.verbalise(False)})")


REASONERS: dict[str, Callable[..., Reasoner]] = {"offline": OfflineReasoner}


def get_reasoner(name: str, **options: object) -> Reasoner:
    """The reasoner registered under ``name``; :class:`UnknownComponentError` otherwise."""
    try:
        factory = REASONERS[name]
    except KeyError:
        raise UnknownComponentError(
            f"unknown reasoner {name!r}; available: {', '.join(sorted(REASONERS))}") from None
    return factory(**options)
