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

import math
import random
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from engine.errors import deferred, lookup
from engine.graph import Relation
from engine.paths import Path
from engine.text import terms

if TYPE_CHECKING:
    from engine.descriptions import Descriptions


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
    uses_llm: bool  # makes chat calls (they count against a question's call budget)

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        """One score per choice, higher is better, in [0, 1]."""

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        """One score per choice, higher is better, in [0, 1]."""


def _normalise(scores: Sequence[float]) -> list[float]:
    """Scores scaled into [0, 1] by the best one (negatives count as 0)."""
    top = max(scores, default=0.0)
    return [max(s, 0.0) / top if top > 0 else 0.0 for s in scores]


K1, B = 1.5, 0.75  # BM25's usual constants (Lucene's, and bm25s's defaults)
_F32 = struct.Struct("f")


def _f32(x: float) -> float:
    """``x`` rounded to single precision."""
    return _F32.unpack(_F32.pack(x))[0]


def bm25(query: Sequence[str], docs: Sequence[Sequence[str]]) -> list[float]:
    """BM25 (Lucene's variant) of each document of ``docs`` for ``query``
    (lists of terms), the documents being the whole corpus: idf is
    ln(1 + (N - df + 0.5) / (df + 0.5)), a term's weight in a document
    tf / (tf + K1 * (1 - B + B * length / average length)); a query term said
    twice counts twice. Weights and sums are rounded to single precision
    where the bm25s package (which this replaces) keeps them, so that ties
    fall the same way."""
    n = len(docs)
    if not n:
        return []
    wanted = set(query)  # only the query's terms weigh: the others are not counted at all
    counts = [{t: d.count(t) for t in wanted.intersection(d)} for d in docs]
    df: Counter[str] = Counter(t for c in counts for t in c)
    avg = sum(len(d) for d in docs) / n
    idf = {t: _f32(math.log(1 + (n - f + 0.5) / (f + 0.5))) for t, f in df.items()}
    out = []
    for d, c in zip(docs, counts):
        if not c:
            out.append(0.0)
            continue
        norm = K1 * ((1 - B) + B * len(d) / avg)
        weight = {t: _f32(idf[t] * (tf / (norm + tf))) for t, tf in c.items()}
        score = 0.0
        for t in query:
            if t in weight:
                score = _f32(score + weight[t])
        out.append(score)
    return out


class BM25Pruner:
    """BM25 between the question and each verbalised path.

    The candidates of one call are the corpus, so a word every candidate
    shares (the topic's name, the relation that all of them came through)
    weighs little and the words that tell candidates apart weigh most.
    """

    name = "bm25"
    uses_llm = False

    def __init__(self, **_: object) -> None:
        pass

    def _scores(self, question: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        query = list(terms(question))
        corpus = [list(terms(t)) or ["_"] for t in texts]
        if not query:
            return [0.0] * len(texts)
        vocab = {w for doc in corpus for w in doc}
        # a compound question word also asks for its head: screenwriter -> writer
        query = [v for w in query for v in ([w] if w in vocab else
                 [v for v in sorted(vocab) if len(v) >= 4 and len(w) > len(v) and w.endswith(v)])]
        if not query:
            return [0.0] * len(texts)
        return _normalise(bm25(query, corpus))

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, [c.text for c in choices])

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, [c.text for c in choices])


class HybridPruner:
    """Alignment of the relation chain with the question (coverage, kind of
    answer, sharing, order; see ``engine/alignment.py``), with BM25 over the
    whole verbalised path to tell apart candidates the chain cannot.

    With learned chains (``descriptions.model``, from ``tog learn``) a path
    scores mostly by the probability of the learned chains it begins: the
    zero-shot score only breaks ties and carries questions the model knows
    no word of."""

    name = "hybrid"
    uses_llm = False
    BM25_WEIGHT = 0.2
    LEARNED_WEIGHT = 0.8

    def __init__(self, descriptions: Descriptions | None = None, soft_match: bool = False,
                 **options: object) -> None:
        self.bm25 = BM25Pruner(**options)
        self.learned = descriptions.model if descriptions is not None else None
        self.soft = soft_match

    def _scores(self, question: str, choices: Sequence[Choice]) -> list[float]:
        from engine.alignment import QuestionModel

        if not choices:
            return []
        names = sorted({c.path.topic.name for c in choices})
        model = QuestionModel.of(question, names, self.soft)
        lexical = self.bm25._scores(question, [c.text for c in choices])
        scores = [(1 - self.BM25_WEIGHT) * model.score(c.chain) + self.BM25_WEIGHT * b
                  for c, b in zip(choices, lexical)]
        view = self.learned.view(question, names) if self.learned is not None else None
        if view:
            from engine.learning import relation_keys

            w = self.LEARNED_WEIGHT
            scores = [w * view.prefix(relation_keys(c.chain)) + (1 - w) * s for c, s in zip(choices, scores)]
        return scores

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, choices)

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, choices)


class RandomPruner:
    """Uniform random scores from a seeded generator (a baseline, and ToG-R's
    entity sampling)."""

    name = "random"
    uses_llm = False

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
