"""How well a relation chain explains a question, without an LLM.

A question is reduced to its content words (stemmed, topic mention removed),
the kind of thing it asks for ("which languages" -> language), whether it
speaks of sharing ("share", "same", "co-wrote", "also": a path that goes out
through a relation and back through the same one), and where the topic is
mentioned.  A relation chain then scores by:

- coverage: question words that its relations account for (a compound such
  as "screenwriter" counts for "writer");
- kind: whether the last relation says its tail is the kind asked for (or
  says nothing about it);
- sharing: whether it returns through the relation it came by, when the
  question speaks of sharing;
- order: relations nearer the topic mention come first in the chain, the one
  nearest the question word comes last (English puts the hop next to the
  entity it starts from).

Nothing here knows any dataset's templates; it reads relation names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from engine.graph import Relation, tail_role
from engine.text import STOPWORDS, focus_terms, stem, strip_mentions, terms, words

SHARE_MARK = "\x00share"
SHARE_WORDS = frozenset({"share", "shares", "shared", "sharing", "same", "also", "together", "fellow"})
_CO = re.compile(r"\bco-?(?=[a-z]{3,})", re.I)
KIND_WEIGHT = 0.5


def _matches(qterm: str, rterm: str) -> bool:
    return qterm == rterm or (len(rterm) >= 4 and len(qterm) > len(rterm) and qterm.endswith(rterm))


@lru_cache(maxsize=4096)
def _relation_terms(text: str) -> frozenset[str]:
    return frozenset(terms(text))


SHARE_WINDOW = 1  # content words on either side of a sharing word that say what is shared


@dataclass(frozen=True)
class QuestionModel:
    terms: frozenset[str]
    positions: dict
    focus: frozenset[str]
    shares: bool
    topic_at: int
    shared: frozenset[str] = frozenset()

    @classmethod
    def of(cls, question: str, topic_names: Sequence[str]) -> QuestionModel:
        from engine.text import mention_position

        body = strip_mentions(question, list(topic_names))
        # what is shared: the words next to "share"/"same"/"also", or the verb of "co-wrote"
        marked = _CO.sub(" \x01", body).replace("\x01", "share ")
        content = [w for w in words(marked) if len(w) > 1 and (w in SHARE_WORDS or w not in STOPWORDS)]
        shared: set[str] = set()
        for i, w in enumerate(content):
            if w in SHARE_WORDS:
                near = content[max(0, i - SHARE_WINDOW):i] + content[i + 1:i + 1 + SHARE_WINDOW]
                shared.update(stem(x) for x in near if x not in SHARE_WORDS)
        shares = bool(shared)
        body = _CO.sub(" ", body)
        positions: dict[str, int] = {}
        full = words(question)
        for i, w in enumerate(full):
            if len(w) > 1 and w not in STOPWORDS:
                positions.setdefault(stem(w), i)
        content = frozenset(t for t in terms(body) if t not in {stem(w) for w in SHARE_WORDS})
        return cls(content, positions, focus_terms(question), shares,
                   mention_position(question, list(topic_names)), frozenset(shared))

    # -- pieces -------------------------------------------------------------
    def covered_by(self, relation: Relation) -> frozenset[str]:
        rts = _relation_terms(relation.text)
        return frozenset(q for q in self.terms if any(_matches(q, r) for r in rts))

    def kind_fits(self, relation: Relation | None) -> bool:
        if not self.focus or relation is None:
            return True
        role = tail_role(relation)
        if role is None:
            return True
        rts = _relation_terms(role)
        return any(_matches(f, r) for f in self.focus for r in rts)

    def returns(self, chain: Sequence[Relation]) -> bool:
        """Does the chain go out through the shared relation and straight back?"""
        for a, b in zip(chain, chain[1:]):
            if a.id == b.id and a.direction != b.direction:
                rts = _relation_terms(a.text)
                if any(_matches(q, r) for q in self.shared for r in rts):
                    return True
        return False

    # -- scores -------------------------------------------------------------
    def explained(self, chain: Sequence[Relation]) -> frozenset[str]:
        got: set[str] = set()
        for rel in chain:
            got |= self.covered_by(rel)
        if self.shares and self.returns(chain):
            got.add(SHARE_MARK)
        return frozenset(got)

    @property
    def size(self) -> float:
        return len(self.terms) + (1 if self.shares else 0) + (KIND_WEIGHT if self.focus else 0.0)

    def utility(self, chain: Sequence[Relation]) -> float:
        """Question words explained, plus a share for the right kind of tail."""
        if not chain:
            return 0.0
        return len(self.explained(chain)) + (KIND_WEIGHT if self.focus and self.kind_fits(chain[-1]) else 0.0)

    def order(self, chain: Sequence[Relation]) -> float:
        """1.0 when the matched relations appear in the question in the
        order of the chain, moving away from the topic mention; lower when
        not; 1.0 when fewer than two relations match."""
        distances = []
        for rel in chain:
            pos = [self.positions[q] for q in self.covered_by(rel) if q in self.positions]
            if pos:
                distances.append(min(abs(p - self.topic_at) for p in pos))
        pairs = [(a, b) for i, a in enumerate(distances) for b in distances[i + 1:]]
        if not pairs:
            return 1.0
        return sum(1 for a, b in pairs if a <= b) / len(pairs)

    def score(self, chain: Sequence[Relation]) -> float:
        """In [0, 1]: utility over the most the question could ask, with order as a tie-breaker."""
        if self.size <= 0:
            return 0.0
        return (self.utility(chain) + 0.25 * self.order(chain)) / (self.size + 0.25)
