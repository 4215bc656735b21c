"""Pruners: score candidate paths so the beam keeps the best ``width``.

A pruner sees whole verbalised paths, not single relations: "Tom Hanks ->
starred actors (of) -> Big -> directed by" tells far more about a question
than "directed by" alone.  Two calls per beam step, each for the whole beam:
``score_relations`` (paths ending in a relation not yet followed) and
``score_entities`` (paths ending in a candidate entity).

Registered by name (``get_pruner``); the LLM pruner joins the registry in
``engine/llm.py``'s issue.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.errors import UnknownComponentError
from engine.paths import Path
from engine.text import terms


@dataclass(frozen=True, slots=True)
class Choice:
    """One candidate shown to a pruner: ``path`` extended by one relation
    (``path.hops[-1]`` is that relation's hop when ``entity`` is set)."""

    path: Path
    text: str


class Pruner(Protocol):
    name: str

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        """One score per choice, higher is better, in [0, 1]."""

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        """One score per choice, higher is better, in [0, 1]."""


def _normalise(scores: Sequence[float]) -> list[float]:
    top = max(scores, default=0.0)
    return [s / top if top > 0 else 0.0 for s in scores]


class BM25Pruner:
    """BM25 (bm25s) between the question and each verbalised path.

    The candidates of one call are the corpus, so a word every candidate
    shares (the topic's name, the relation that all of them came through)
    weighs little and the words that tell candidates apart weigh most.
    """

    name = "bm25"

    def __init__(self, **_: object) -> None:
        import bm25s  # imported here: it pulls numpy and scipy

        self._bm25s = bm25s

    def _scores(self, question: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        query = list(terms(question))
        corpus = [list(terms(t)) or ["_"] for t in texts]
        if not query:
            return [0.0] * len(texts)
        index = self._bm25s.BM25()
        index.index(corpus, show_progress=False)
        vocab = {w for doc in corpus for w in doc}
        query = [w for w in query if w in vocab]
        if not query:
            return [0.0] * len(texts)
        return _normalise([float(s) for s in index.get_scores(query)])

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, [c.text for c in choices])

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, [c.text for c in choices])


class RandomPruner:
    """Uniform random scores from a seeded generator (a baseline, and ToG-R's
    entity sampling)."""

    name = "random"

    def __init__(self, seed: int = 0, **_: object) -> None:
        self.rng = random.Random(seed)

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return [self.rng.random() for _ in choices]

    score_entities = score_relations


PRUNERS: dict[str, Callable[..., Pruner]] = {
    "bm25": BM25Pruner,
    "random": RandomPruner,
}


def get_pruner(name: str, **options: object) -> Pruner:
    """The pruner registered under ``name``.

    Raises :class:`UnknownComponentError` for a name nobody registered.
    """
    try:
        factory = PRUNERS[name]
    except KeyError:
        raise UnknownComponentError(
            f"unknown pruner {name!r}; available: {', '.join(sorted(PRUNERS))}") from None
    return factory(**options)
