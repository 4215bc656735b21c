"""Pruners: score candidate paths so the beam keeps the best ``width``.

A pruner sees whole verbalised paths, not single relations: "Tom Hanks ->
starred actors (of) -> Big -> directed by" tells far more about a question
than "directed by" alone.  Two calls per beam step, each for the whole beam:
``score_relations`` (paths ending in a relation not yet followed) and
``score_entities`` (paths ending in a candidate entity).

Registered by name (``get_pruner``); the LLM and embedding pruners live in
``engine/agent.py``, which is imported only when one of them is made.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.errors import deferred, lookup
from engine.graph import Relation
from engine.paths import Path
from engine.text import terms


@dataclass(frozen=True, slots=True)
class Choice:
    """One candidate shown to a pruner.

    Relation pruning: ``path`` is a beam path and ``relation`` the relation
    that would extend it.  Entity pruning: ``path`` is the extended path
    (its last hop holds the candidate entity) and ``relation`` is None.
    ``text`` is the verbalised candidate.
    """

    path: Path
    text: str
    relation: Relation | None = None

    @property
    def chain(self) -> list[Relation]:
        rels = self.path.relations()
        return rels + [self.relation] if self.relation is not None else rels


class Pruner(Protocol):
    name: str

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        """One score per choice, higher is better, in [0, 1]."""

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        """One score per choice, higher is better, in [0, 1]."""


def _normalise(scores: Sequence[float]) -> list[float]:
    """Scores scaled into [0, 1] by the best one (negatives count as 0)."""
    top = max(scores, default=0.0)
    return [max(s, 0.0) / top if top > 0 else 0.0 for s in scores]


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
        # a compound question word also asks for its head: screenwriter -> writer
        query = [v for w in query for v in ([w] if w in vocab else
                 [v for v in vocab if len(v) >= 4 and len(w) > len(v) and w.endswith(v)])]
        if not query:
            return [0.0] * len(texts)
        return _normalise([float(s) for s in index.get_scores(query)])

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, [c.text for c in choices])

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, [c.text for c in choices])


class HybridPruner:
    """Alignment of the relation chain with the question (coverage, kind of
    answer, sharing, order; see ``engine/alignment.py``), with BM25 over the
    whole verbalised path to tell apart candidates the chain cannot."""

    name = "hybrid"
    BM25_WEIGHT = 0.2

    def __init__(self, **options: object) -> None:
        self.bm25 = BM25Pruner(**options)

    def _scores(self, question: str, choices: Sequence[Choice]) -> list[float]:
        from engine.alignment import QuestionModel

        if not choices:
            return []
        names = sorted({c.path.topic.name for c in choices})
        model = QuestionModel.of(question, names)
        lexical = self.bm25._scores(question, [c.text for c in choices])
        return [(1 - self.BM25_WEIGHT) * model.score(c.chain) + self.BM25_WEIGHT * b
                for c, b in zip(choices, lexical)]

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, choices)

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, choices)


class RandomPruner:
    """Uniform random scores from a seeded generator (a baseline, and ToG-R's
    entity sampling)."""

    name = "random"

    def __init__(self, seed: int = 0, **_: object) -> None:
        self.seed = seed

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        # seeded per question and candidate set, so a result does not depend
        # on which questions ran before it in the same process
        rng = random.Random(f"{self.seed}:{question}:{len(choices)}:{choices[0].text if choices else ''}")
        return [rng.random() for _ in choices]

    score_entities = score_relations


PRUNERS: dict[str, Callable[..., Pruner]] = {
    "llm": deferred("engine.agent", "LLMPruner"),
    "hybrid": HybridPruner,
    "bm25": BM25Pruner,
    "embedding": deferred("engine.agent", "EmbeddingPruner"),
    "random": RandomPruner,
}


def get_pruner(name: str, **options: object) -> Pruner:
    """The pruner registered under ``name``.

    Raises :class:`UnknownComponentError` for a name nobody registered.
    """
    return lookup(PRUNERS, "pruner", name)(**options)
