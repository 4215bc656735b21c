"""How well a relation chain explains a question, without an LLM.

A question is reduced to its content words, each occurrence counted
(stemmed, topic mention removed: "X's dad's dad" asks for two hops), the kind
of thing it asks for ("which languages" -> language), whether it speaks of
sharing ("share", "same", "co-wrote", "also": a path that goes out through a
relation and back through the same one), and where the topic is mentioned.
A relation chain then scores by:

- coverage: the question's words that its relations account for.  Each
  relation accounts for one phrase: the words of its name ("place of birth"),
  or of one other name a relation description gives it ("other half";
  ``engine/descriptions.py``), at most one occurrence of each word, so a
  question that says "husband" and "darling" needs two hops to be explained;
  a compound such as "screenwriter" counts for "writer";
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
from dataclasses import dataclass, field
from functools import lru_cache

from engine.graph import Relation, tail_role
from engine.text import STOPWORDS, focus_terms, stem, strip_mentions, terms, words

SHARE_WORDS = frozenset({"share", "shares", "shared", "sharing", "same", "also", "together", "fellow"})
# "co-" makes a verb or a noun shared ("co-wrote", "co-stars"); written solid only in a few common words
# ("costarred", "cowrote"): never the start of "country", "coached", "composer"
_CO = re.compile(r"\bco-(?=[a-z]{3,})|\bco(?=(?:star|wr[io]|direct|produc|author|found)[a-z]*\b)", re.I)
KIND_WEIGHT = 0.5
SOFT_THRESHOLD = 0.5  # word similarity (wordllama) at which a question word counts as a relation's word
IDLE_WEIGHT = 0.5  # what a relation that explains nothing costs, in question words
# questions whose models (and the memo of every chain each scored) are kept: the search, pruner and
# reasoner of a question share one, and an eval's few questions at once (--concurrency) theirs; kept
# for 1,024 questions, the memos grew an eval by about 4 MB a question, to 4 GB
MODELS_KEPT = 16


def _matches(qterm: str, rterm: str) -> bool:
    return qterm == rterm or (len(rterm) >= 4 and len(qterm) > len(rterm) and qterm.endswith(rterm))


def _similar(word: str, relation_word: str) -> bool:
    from engine.embeddings import word_similarity

    return word_similarity(word, relation_word) >= SOFT_THRESHOLD


def _key(relation: Relation) -> tuple:
    """What a relation's part in a chain depends on: its id, direction and names."""
    return (relation.id, relation.direction, relation.names)


@lru_cache(maxsize=4096)
def _relation_words(text: str) -> tuple[str, ...]:
    """The content words of a relation's name as written (for similarity)."""
    return tuple(w for w in words(text) if len(w) > 1 and w not in STOPWORDS)


@lru_cache(maxsize=4096)
def _relation_terms(text: str) -> frozenset[str]:
    return frozenset(terms(text))


SHARE_WINDOW = 1  # content words on either side of a sharing word that say what is shared
RELATIVE = frozenset({"that", "who", "which", "whom", "whose"})
TOPIC = "togtopicmention"  # stands for the topic mention while the question is read


@dataclass(frozen=True)
class QuestionModel:
    occurrences: tuple[tuple[str, int], ...]  # (stem, reading rank) of every content word
    focus: frozenset[str]
    shares: bool
    topic_at: int
    shared: frozenset[str] = frozenset()
    soft: bool = False  # also match words by embedding similarity (engine/embeddings.py)
    surface: tuple[tuple[str, str], ...] = ()  # (stem, word as written) of the content words, for ``soft``
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, question: str, topic_names: Sequence[str], soft: bool = False) -> QuestionModel:
        return _model(question, tuple(topic_names), soft)

    @property
    def terms(self) -> frozenset[str]:
        return frozenset(t for t, _ in self.occurrences)

    # -- pieces -------------------------------------------------------------
    def _phrases(self, relation: Relation, key: tuple | None = None) -> tuple[tuple[str, ...], ...]:
        """Per name of the relation, the question's terms that name matches
        (``key``: the relation's ``_key``, when the caller has it)."""
        key = key or _key(relation)
        found = self._memo.get(key)
        if found is None:
            question_terms = self.terms
            if self.soft:
                written: dict[str, list[str]] = {}
                for t, w in self.surface:
                    written.setdefault(t, []).append(w)
                found = tuple(tuple(sorted(q for q in question_terms if any(
                    _matches(q, stem(r)) or any(_similar(w, r) for w in written.get(q, [q])) for r in _relation_words(n))))
                    for n in relation.names)
            else:
                found = tuple(tuple(sorted(q for q in question_terms if any(_matches(q, r) for r in _relation_terms(n))))
                              for n in relation.names)
            self._memo[key] = found
        return found

    def claims(self, chain: Sequence[Relation]) -> list[list[int]]:
        """Per relation of the chain, the occurrences (indexes) it explains:
        the phrase that explains most of what earlier relations left, one
        occurrence per word, the one read first (``_reading_ranks``) first."""
        return [list(c) for c in self._claimed(chain, tuple(map(_key, chain)))[0]]

    def _claimed(self, chain: Sequence[Relation], keys: tuple) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
        """``claims`` of the chain (``keys``: its relations' ``_key``) and the
        occurrences left free after it, made from those of the chain less its
        last relation (the chains a search scores share their beginnings)."""
        found = self._memo.get(("claimed", keys))
        if found is None:
            if len(chain) > 1:
                before, free = self._claimed(chain[:-1], keys[:-1])
            else:
                before, free = (), tuple(sorted(range(len(self.occurrences)), key=lambda i: self.occurrences[i][1]))
            best: list[int] = []
            if chain:
                for phrase in self._phrases(chain[-1], keys[-1]):
                    got = []
                    for term in phrase:
                        i = next((i for i in free if self.occurrences[i][0] == term), None)
                        if i is not None:
                            got.append(i)
                    if len(got) > len(best):
                        best = got
                before += (tuple(best),)
            found = self._memo[("claimed", keys)] = (before, tuple(i for i in free if i not in best))
        return found

    def kind_fits(self, relation: Relation | None) -> bool:
        if not self.focus or relation is None:
            return True
        key = ("kind", relation.id, relation.direction, relation.note)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._kind_fits(relation)
        return found

    def _kind_fits(self, relation: Relation) -> bool:
        role = tail_role(relation)
        if role is None:
            return True
        texts = [role]
        if relation.note is not None and relation.note.reaches(relation.direction) is None:
            texts += relation.note.names(relation.direction)  # "nationality", also called "nation"
        return any(_matches(f, r) for f in self.focus for t in texts for r in _relation_terms(t))

    def kind_reached(self, relation: Relation) -> bool:
        """Does the relation say it ends in the kind asked for?  (``kind_fits``
        without the benefit of the doubt for a relation that says nothing.)"""
        return bool(self.focus) and tail_role(relation) is not None and self.kind_fits(relation)

    def returns(self, chain: Sequence[Relation]) -> bool:
        """Does the chain go out through the shared relation and straight back?"""
        for a, b in zip(chain, chain[1:]):
            if a.id == b.id and a.direction != b.direction:
                if any(_matches(q, r) for q in self.shared for n in a.names for r in _relation_terms(n)):
                    return True
        return False

    # -- scores -------------------------------------------------------------
    def explained(self, chain: Sequence[Relation]) -> int:
        """How many of the question's word occurrences (and its sharing) the chain explains."""
        return self._explained(chain, self._claimed(chain, tuple(map(_key, chain)))[0])

    def _explained(self, chain: Sequence[Relation], claimed: Sequence[Sequence[int]]) -> int:
        return sum(map(len, claimed)) + (1 if self.shares and self.returns(chain) else 0)

    @property
    def size(self) -> float:
        return len(self.occurrences) + (1 if self.shares else 0) + (KIND_WEIGHT if self.focus else 0.0)

    def utility(self, chain: Sequence[Relation]) -> float:
        """Question words explained, plus a share for the right kind of tail."""
        return self._utility(chain, tuple(map(_key, chain)))

    def _utility(self, chain: Sequence[Relation], keys: tuple) -> float:
        if not chain:
            return 0.0
        found = self._memo.get(("utility", keys))
        if found is None:
            found = self._explained(chain, self._claimed(chain, keys)[0])
            found = self._memo[("utility", keys)] = found + (KIND_WEIGHT if self.focus and self.kind_fits(chain[-1])
                                                             else 0.0)
        return found

    def order(self, chain: Sequence[Relation]) -> float:
        """1.0 when the explained words appear in the question in the order
        of the chain, moving away from the topic mention; lower when not;
        1.0 when fewer than two relations explain any."""
        return self._order(self._claimed(chain, tuple(map(_key, chain)))[0])

    def _order(self, claimed: Sequence[Sequence[int]]) -> float:
        distances = [min(self.occurrences[i][1] for i in c) for c in claimed if c]
        pairs = [(a, b) for i, a in enumerate(distances) for b in distances[i + 1:]]
        if not pairs:
            return 1.0
        return sum(1 for a, b in pairs if a <= b) / len(pairs)

    def idle(self, chain: Sequence[Relation]) -> int:
        """Relations of the chain that explain no word of the question (a
        return through a shared relation explains the sharing)."""
        return self._idle(chain, self._claimed(chain, tuple(map(_key, chain)))[0])

    def _idle(self, chain: Sequence[Relation], claimed: Sequence[Sequence[int]]) -> int:
        idle = sum(1 for c in claimed if not c)
        if idle and self.shares and self.returns(chain):
            idle -= 1
        return idle

    def score(self, chain: Sequence[Relation]) -> float:
        """In [0, 1]: utility over the most the question could ask, less a
        share for each relation that explains nothing, with order as a
        tie-breaker."""
        if self.size <= 0:
            return 0.0
        keys = tuple(map(_key, chain))
        claimed = self._claimed(chain, keys)[0]
        raw = self._utility(chain, keys) - IDLE_WEIGHT * self._idle(chain, claimed) + 0.25 * self._order(claimed)
        return max(0.0, raw) / (self.size + 0.25)


@lru_cache(maxsize=MODELS_KEPT)
def _model(question: str, topic_names: tuple[str, ...], soft: bool = False) -> QuestionModel:
    body = strip_mentions(question, list(topic_names), placeholder=f" {TOPIC} ")
    # what is shared: the words next to "share"/"same"/"also", or the verb of "co-wrote"
    marked = _CO.sub(" \x01", body).replace("\x01", "share ")
    content = [w for w in words(marked) if len(w) > 1 and w != TOPIC and (w in SHARE_WORDS or w not in STOPWORDS)]
    shared: set[str] = set()
    for i, w in enumerate(content):
        if w in SHARE_WORDS:
            near = content[max(0, i - SHARE_WINDOW):i] + content[i + 1:i + 1 + SHARE_WINDOW]
            shared.update(stem(x) for x in near if x not in SHARE_WORDS)
    share_stems = {stem(w) for w in SHARE_WORDS}
    body_words = words(_CO.sub(" ", body))
    topic_at = body_words.index(TOPIC) if TOPIC in body_words else 0
    ranks = _reading_ranks(body_words, topic_at)
    seen: dict[str, int] = {}
    found = []
    for i, w in enumerate(body_words):
        if len(w) < 2 or w == TOPIC or w in STOPWORDS or stem(w) in share_stems:
            continue
        t = stem(w)
        j = seen.get(t)
        seen[t] = i
        if j is not None and not _again(body_words[j + 1:i]):
            continue  # "the director that directed X": one mention, said twice
        found.append((t, ranks[i]))
    occurrences = tuple(found)
    focus = focus_terms(body)
    if stem(TOPIC) in focus:  # "what is the <topic>'s wife": the question names no kind
        focus = frozenset()
    surface = tuple((stem(w), w) for w in body_words if len(w) > 1 and w != TOPIC and w not in STOPWORDS) if soft else ()
    return QuestionModel(occurrences, focus, bool(shared), topic_at, frozenset(shared), soft, surface)


def _again(between: list[str]) -> bool:
    """Is a word said again after ``between`` a second mention?  Yes across
    the topic ("the daughter of the father of X's daughter") or when only
    small words stand between ("X's dad's dad", "the son of the son of X"),
    but not across a relative
    pronoun ("the director that directed X") nor across other content words
    ("who wrote the screenplay of the films written by X": one writing)."""
    if TOPIC in between:
        return True
    return not RELATIVE & set(between) and all(w in STOPWORDS or w == "s" or len(w) < 2 for w in between)


def _reading_ranks(body: list[str], topic_at: int) -> list[int]:
    """The order in which a question's words step away from its topic.

    A possessive chain right after the topic comes first, in its order
    ("T's wife's father": wife, then father); every other word ranks by its
    distance from the topic, after the whole chain ("the birthplace of T's
    wife": wife, then birthplace)."""
    ranks = [0] * len(body)
    after = len(body) + 1
    step, i = 0, topic_at + 1
    chain: dict[int, int] = {}
    while i < len(body) and body[i] == "s":  # "'s" reads as the word "s"
        i += 1
        while i < len(body) and body[i] != "s":
            chain[i] = step
            i += 1
        step += 1
    for i in range(len(body)):
        ranks[i] = chain[i] if i in chain else after + abs(i - topic_at)
    return ranks
