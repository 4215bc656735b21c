"""Learning from question–answer pairs: which wordings ask for which relation chains.

Weak supervision, no gold paths: for each question, walk the KG from its
topic entities (up to ``depth`` hops, every read bounded as in the search)
and find the relation chains whose tails are the given answers (best
answer-set F1; the shortest such chains when several tie).  Those chains
are the question's labels.  A softmax regression then learns, from the
question's words (stemmed, the topic mention replaced by ``@``; single
words, pairs and triples), a weight per (word feature, chain).

At question time :class:`ChainModel` gives a probability to every learned
chain; the offline pruner scores a path by the probability mass of the
learned chains it is a prefix of, the judge stops when a kept path is a
whole chain more likely than any longer one it could still become, and the
answer comes from the most likely whole chain.  A question whose words the
model never saw (or where no learned chain starts at its topic) falls back
to the zero-shot scorers.

The model is written into the relation description file format
(``engine/descriptions.py``): ``[learned]`` says where it came from,
``[[chains]]`` holds each chain with its weights and a few of the questions
that taught it, and ``[relations]`` gets the words most tied to each
one-hop chain as other names.  It is TOML a person can read and edit.
"""

from __future__ import annotations

import gc
import json
import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

from engine.errors import TogError
from engine.graph import (
    Candidate,
    KnowledgeGraph,
    Node,
    Relation,
    is_literal,
    local_name,
    name_key,
)
from engine.text import STOPWORDS, stem, strip_mentions, words

Step = tuple[str, str]  # (relation IRI, "out" | "in")
Chain = tuple[Step, ...]

FORMAT_VERSION = 1
EXPAND_LIMIT = 100     # neighbours read per (entity, relation) while finding chains, as the search reads
FRONTIER = 12          # entities followed further per chain prefix
REQUESTS_PER_STEP = 4000  # (entity, relation) pairs expanded per depth and question, at most
LIST_MOST = 1000       # a last depth of more entities is not listed whole (see find_chains)
MIN_F1 = 0.1           # a chain must explain the answers at least this well to teach anything
MIN_FEATURE_COUNT = 2  # word features seen in fewer training questions are dropped ...
SMALL_SET = 100        # ... unless there are fewer questions than this
TOPIC_TOKEN = "@"
_PLACEHOLDER = "togtopicmention"


# -- steps and chains as text ------------------------------------------------------------

@lru_cache(maxsize=65536)  # the pruner asks for every candidate's chain
def step_key(step: Step) -> str:
    """``author`` for an out edge, ``^author`` read backwards (SPARQL's inverse path)."""
    rel, direction = step
    return ("^" if direction == "in" else "") + local_name(rel)


def chain_key(chain: Sequence[Step]) -> tuple[str, ...]:
    return tuple(step_key(s) for s in chain)


def relation_keys(relations: Sequence[Relation]) -> tuple[str, ...]:
    return tuple(step_key((r.id, r.direction)) for r in relations)


# -- question features -------------------------------------------------------------------

@lru_cache(maxsize=8192)
def _features(question: str, topic_names: tuple[str, ...]) -> tuple[str, ...]:
    body = strip_mentions(question, list(topic_names), placeholder=f" {_PLACEHOLDER} ")
    toks = [TOPIC_TOKEN if w == _PLACEHOLDER else stem(w) for w in words(body)]
    feats = set(toks)
    feats.update(f"{a} {b}" for a, b in zip(toks, toks[1:]))
    feats.update(f"{a} {b} {c}" for a, b, c in zip(toks, toks[1:], toks[2:]))
    if toks:
        feats.add(f"<q> {toks[0]}")
    feats.discard(TOPIC_TOKEN)
    return tuple(sorted(feats))


def features(question: str, topic_names: Sequence[str]) -> tuple[str, ...]:
    """The word features of a question: stems, their pairs and triples, the
    first word, with the topic mentions replaced by ``@``."""
    return _features(question, tuple(topic_names))


def pattern(question: str, topic_names: Sequence[str]) -> str:
    """The question as a pattern: lower case, the topic as ``@``."""
    body = strip_mentions(question, list(topic_names), placeholder=f" {_PLACEHOLDER} ")
    return " ".join(TOPIC_TOKEN if w == _PLACEHOLDER else w for w in words(body))


# -- the model ---------------------------------------------------------------------------

@dataclass
class LearnedChain:
    steps: tuple[str, ...]          # step keys, e.g. ("^author", "publisher")
    bias: float = 0.0
    weights: dict[str, float] = field(default_factory=dict)
    questions: float = 0.0          # training questions it labelled (a tie counts as a share)
    examples: tuple[str, ...] = ()  # patterns of questions that taught it


class ChainModel:
    """Probabilities of the learned chains for a question: per chain, its
    bias and word weights plus those of its step slots (``_slots``)."""

    def __init__(self, chains: Sequence[LearnedChain], slots: dict[str, dict[str, float]] | None = None,
                 info: dict | None = None) -> None:
        self.chains = list(chains)
        self.slots = dict(slots or {})
        self.info = dict(info or {})
        self.known = frozenset(f for c in self.chains for f in c.weights) | frozenset(
            f for w in self.slots.values() for f in w if f != "<bias>")
        self._slots_of = [_slots(c.steps) for c in self.chains]
        self._memo: dict[tuple, dict[tuple[str, ...], float]] = {}
        self._views: dict[tuple, ChainView] = {}

    def __len__(self) -> int:
        return len(self.chains)

    def probabilities(self, question: str, topic_names: Sequence[str]) -> dict[tuple[str, ...], float]:
        """chain steps -> probability; empty when the question has no word the model knows."""
        key = (question, tuple(topic_names))
        found = self._memo.get(key)
        if found is None:
            feats = [f for f in features(question, topic_names) if f in self.known]
            if not feats or not self.chains:
                found = {}
            else:
                slot = {k: w.get("<bias>", 0.0) + sum(w.get(f, 0.0) for f in feats) for k, w in self.slots.items()}
                logits = [c.bias + sum(c.weights.get(f, 0.0) for f in feats)
                          + sum(slot.get(k, 0.0) for k in ks) for c, ks in zip(self.chains, self._slots_of)]
                top = max(logits)
                exp = [math.exp(x - top) for x in logits]
                total = sum(exp)
                found = {c.steps: e / total for c, e in zip(self.chains, exp)}
            if len(self._memo) > 4096:
                self._memo.clear()
            self._memo[key] = found
        return found

    def view(self, question: str, topic_names: Sequence[str]) -> ChainView:
        """The question's probabilities with their prefix sums, kept for the
        calls of one search (pruner, judge and answer ask again)."""
        key = (question, tuple(topic_names))
        found = self._views.get(key)
        if found is None:
            if len(self._views) > 256:
                self._views.clear()
            found = self._views[key] = ChainView(self.probabilities(question, topic_names))
        return found


class ChainView:
    """One question's chain probabilities, with prefix sums."""

    def __init__(self, probs: dict[tuple[str, ...], float]) -> None:
        self.probs = probs
        self._prefix: dict[tuple[str, ...], float] = {}

    def __bool__(self) -> bool:
        return bool(self.probs)

    def whole(self, steps: tuple[str, ...]) -> float:
        return self.probs.get(steps, 0.0)

    def prefix(self, steps: tuple[str, ...], within: int | None = None) -> float:
        """Mass of the chains that start with ``steps`` (and are at most ``within`` steps longer)."""
        key = steps + (str(within),)
        found = self._prefix.get(key)
        if found is None:
            n = len(steps)
            found = sum(p for c, p in self.probs.items()
                        if c[:n] == steps and (within is None or len(c) - n <= within))
            self._prefix[key] = found
        return found

    def longer(self, steps: tuple[str, ...], within: int) -> float:
        """The likeliest chain that extends ``steps`` by 1..``within`` steps."""
        n = len(steps)
        return max((p for c, p in self.probs.items() if len(c) > n and c[:n] == steps and len(c) - n <= within),
                   default=0.0)


# -- finding the chains behind a question's answers --------------------------------------

class ReadCache:
    """Relations and neighbours read from the KG, kept for later questions
    (questions share hubs and topics); bounded by the relations and
    neighbours it holds, not by the entities and pairs (a pair holds up to
    ``EXPAND_LIMIT`` neighbours)."""

    MAX_HELD = 4_000_000

    def __init__(self, kg: KnowledgeGraph) -> None:
        self.kg = kg
        self.rels: dict[str, list[Relation]] = {}
        self.tails: dict[tuple[str, Relation], list[tuple[Candidate, str]]] = {}
        self.held = 0  # relations and neighbours in the two maps

    def _trim(self) -> None:
        if self.held > self.MAX_HELD:
            self.rels.clear()
            self.tails.clear()
            self.held = 0

    def relations(self, ids: Sequence[str]) -> dict[str, list[Relation]]:
        self._trim()  # first: what the answer takes from the cache stays in it
        missing = [i for i in dict.fromkeys(ids) if i not in self.rels]
        if missing:
            found = self.kg.relations(missing)
            for i in missing:
                self.rels[i] = found.get(i, [])
                self.held += 1 + len(self.rels[i])
        return {i: self.rels[i] for i in ids}

    def expand(self, pairs: Sequence[tuple[str, Relation]]) -> dict[tuple[str, Relation], list[tuple[Candidate, str]]]:
        self._trim()
        missing = [p for p in dict.fromkeys(pairs) if p not in self.tails]
        if missing:
            got: dict[tuple[str, Relation], list[tuple[Candidate, str]]] = {p: [] for p in missing}
            for c in self.kg.expand(missing, limit=EXPAND_LIMIT):
                key = (c.source, c.relation)
                if key in got:
                    got[key].append((c, name_key(c.node.name)))
            self.tails.update(got)
            self.held += sum(1 + len(v) for v in got.values())
        return {p: self.tails[p] for p in pairs}


@dataclass
class Found:
    """The chains that best lead from a topic to a question's answers."""

    chains: list[Chain]
    f1: float


class AnswerSide:
    """What a question's answers tell the last step of its chains, read once
    for all its topics: the steps that can end at an answer (``steps``,
    from the answers' relations) and, read only when a last depth is wide
    (``leaves``), the entities each step reaches an answer from."""

    def __init__(self, cache: ReadCache, ids: Sequence[str], every: bool) -> None:
        self.cache, self.every = cache, every
        around = cache.relations(list(ids))
        self.pairs = [(a, r) for a in ids for r in around.get(a, [])]
        self.steps = {(r.id, _flip(r.direction)) for _, r in self.pairs}
        self._leaves: dict[str, set[Step]] | None = None
        self._open = True

    def leaves(self) -> dict[str, set[Step]]:
        """{entity: the steps it is known to reach an answer by}. An answer's
        relation of at most ``EXPAND_LIMIT`` edges is read whole from the
        answer (names only, nothing looked through); its step is known when
        every edge came back named, for every answer that has it. The other
        steps are open: which entities take them only a listing shows."""
        if self._leaves is not None:
            return self._leaves
        small = [(a, r) for a, r in self.pairs if r.degree is not None and r.degree <= EXPAND_LIMIT]
        if not self.every or len(small) > REQUESTS_PER_STEP:
            small = []  # some answer entities are left out, or too many reads: every step open
        got: dict[tuple[str, Relation], list[str]] = {pair: [] for pair in small}
        for c in self.cache.kg.expand(small, limit=EXPAND_LIMIT, through=False) if small else ():
            if not c.via and (c.source, c.relation) in got:
                got[(c.source, c.relation)].append(c.node.id)
        open_steps = {(r.id, _flip(r.direction)) for a, r in self.pairs
                      if (a, r) not in got or len(got[(a, r)]) != r.degree}
        leaves: dict[str, set[Step]] = defaultdict(set)
        for (a, r), xs in got.items():
            step = (r.id, _flip(r.direction))
            if step not in open_steps:
                for x in xs:
                    leaves[x].add(step)
        self._leaves = dict(leaves)
        self._open = bool(open_steps)
        return self._leaves

    def closed(self) -> bool:
        """Whether every step is known (``leaves``; read now if not yet)."""
        self.leaves()
        return not self._open


def answer_side(cache: ReadCache, answers: set[str]) -> AnswerSide | None:
    """The answers' side of a question; ``None`` when an answer has no
    entity named like it (a literal, say): then the last step is not
    restricted."""
    ids, every = _answer_ids(cache.kg, answers)
    return AnswerSide(cache, ids, every) if ids else None


def find_chains(cache: ReadCache, topic: str, answers: set[str], depth: int,
                side: AnswerSide | None = None) -> Found:
    """Relation chains of 1..``depth`` steps from ``topic`` whose tails best
    match ``answers`` (name keys), by F1 of the reached names; every chain
    that ties (``train`` picks among them).  ``side`` (``answer_side``)
    restricts the last step to steps that can end at an answer.  A last
    depth of more than ``LIST_MOST`` entities (around a hub, thousands, most
    leading nowhere) is not listed when the answers' side knows every step
    (``AnswerSide.closed``): a chain prefix takes a step only if one of its
    entities reaches an answer by it.  The two ways reach the same chains,
    short of thinning: a last step that passes an unnamed node (a CVT) ends
    at an answer with an unnamed neighbour, which leaves a step open."""
    # per chain prefix, the entities it reached and the one each came from
    # (a chain never takes back the edge it just took, as the search does not)
    frontier: dict[Chain, dict[str, str | None]] = {(): {topic: None}}
    scored: dict[Chain, float] = {}
    for d in range(1, depth + 1):
        final = d == depth
        ids = list(dict.fromkeys(e for es in frontier.values() for e in es))
        if final and side is not None and len(ids) > LIST_MOST and side.closed():
            groups = _last_groups(frontier, side)
        else:
            rels = cache.relations(ids)
            if final and side is not None:
                rels = {e: [r for r in rs if (r.id, r.direction) in side.steps] for e, rs in rels.items()}
            groups = [(chain, e, rels.get(e, [])) for chain, es in frontier.items() for e in es]
        # every (chain prefix, entity, relation) there is, at most REQUESTS_PER_STEP of them
        wanted = _thin(groups, REQUESTS_PER_STEP)
        tails = cache.expand([(e, rel) for _, e, rel in wanted])
        reached: dict[Chain, set[str]] = defaultdict(set)
        nxt: dict[Chain, dict[str, str | None]] = defaultdict(dict)
        for chain, e, rel in wanted:
            back = frontier[chain][e] if chain and chain[-1] == (rel.id, _flip(rel.direction)) else None
            for cand, key in tails[(e, rel)]:
                node = cand.node
                if back is not None and node.id == back and not cand.via:
                    continue
                longer = chain + ((rel.id, rel.direction),) + tuple((v.id, v.direction) for v in cand.via)
                reached[longer].add(key)
                if not final and not node.literal and len(nxt[longer]) < FRONTIER:
                    nxt[longer].setdefault(node.id, e)
        for chain, keys in reached.items():
            hits = len(keys & answers)
            if hits:
                precision, recall = hits / len(keys), hits / len(answers)
                scored[chain] = 2 * precision * recall / (precision + recall)
        frontier = {c: es for c, es in nxt.items() if es}
        if not frontier:
            break
    if not scored:
        return Found([], 0.0)
    best = max(scored.values())
    if best < MIN_F1:
        return Found([], best)
    return Found(sorted(c for c, f in scored.items() if f >= best - 1e-9), best)


def _last_groups(frontier: dict[Chain, dict[str, str | None]], side: AnswerSide
                 ) -> list[tuple[Chain, str, list[Relation]]]:
    """The last depth's (chain prefix, entity, relations) when the answers'
    side knows every step: each prefix takes the steps its entities reach an
    answer by, asked of all its entities (the chain's precision counts them
    all, and an entity without the step reads nothing)."""
    leaves = side.leaves()
    relation = {s: Relation(s[0], s[1]) for s in side.steps}  # type: ignore[arg-type]
    groups: list[tuple[Chain, str, list[Relation]]] = []
    for chain, es in frontier.items():
        taken = [relation[s] for s in sorted({s for e in es for s in leaves.get(e, ())})]
        groups.extend((chain, e, taken) for e in es)  # one list a prefix: a hub's prefixes are thousands
    return groups


def _flip(direction: str) -> str:
    return "in" if direction == "out" else "out"


def _thin(groups: list[tuple[Chain, str, list[Relation]]], n: int) -> list[tuple[Chain, str, Relation]]:
    """The (chain, entity, relation) items that ``groups`` hold (each a chain,
    an entity and its relations), or ``n`` of them spread evenly when there
    are more (deterministic). A hub's neighbours times their relations make
    millions: they are counted, and only the ``n`` are made."""
    total = sum(len(rels) for _, _, rels in groups)
    if total <= n:
        return [(chain, e, rel) for chain, e, rels in groups for rel in rels]
    step = total / n
    out: list[tuple[Chain, str, Relation]] = []
    g, base = 0, 0  # the group the next item is in, and the items before it
    for i in range(n):
        at = int(i * step)
        while at >= base + len(groups[g][2]):
            base += len(groups[g][2])
            g += 1
        chain, e, rels = groups[g]
        out.append((chain, e, rels[at - base]))
    return out


# -- training ----------------------------------------------------------------------------

@dataclass
class Example:
    features: tuple[str, ...]
    labels: dict[Chain, float]  # chains the wording asks for (a tie: several)
    pattern: str
    avoid: dict[Chain, float] = field(default_factory=dict)  # chains it does not ask for (a run rated bad)


def _slots(chain: Sequence[str]) -> list[str]:
    """The step slots a chain's score shares with other chains: each step
    at its position, and its last step as the last."""
    return [f"{k + 1}:{step}" for k, step in enumerate(chain)] + [f"last:{chain[-1]}"]


class _Fit:
    """A softmax regression over chains whose logit for a question is
    ``bias[c] + x·W[:, c] + sum over the chain's slots of x·T[:, slot]``:
    chain weights learn wordings of a whole chain, slot weights the wordings
    of one step wherever it stands, so that a chain seen rarely still scores
    by its steps.  Full-batch Adam; deterministic."""

    def __init__(self, groups: list[tuple[tuple[int, ...], dict[int, float]]], vocab_size: int,
                 chains: list[tuple[str, ...]]) -> None:
        import numpy as np

        self.np = np
        slots = sorted({s for c in chains for s in _slots(c)})
        self.slots = slots
        sindex = {s: i for i, s in enumerate(slots)}
        G, C, S = len(groups), len(chains), len(slots)
        self.A = np.zeros((S, C))
        for j, c in enumerate(chains):
            for s in _slots(c):
                self.A[sindex[s], j] += 1.0
        self.Y = np.zeros((G, C))  # what each wording asks for
        self.N = np.zeros((G, C))  # what it was rated bad for
        rows: list[int] = []
        cols: list[int] = []
        for g, (feats, labels) in enumerate(groups):
            for ci, w in labels.items():
                if w >= 0:
                    self.Y[g, ci] = w
                else:
                    self.N[g, ci] = -w
            rows.extend([g] * len(feats))
            cols.extend(feats)
        self.weight = self.Y.sum(axis=1, keepdims=True)
        self.total = float(self.weight.sum() + self.N.sum())
        self.negatives = bool(self.N.any())
        self.f = np.asarray(cols, dtype=np.int64)          # ordered by group (every group has a feature)
        self.group_starts = np.flatnonzero(np.r_[True, np.diff(np.asarray(rows)) != 0])
        order = np.argsort(self.f, kind="stable")
        self.rows_by_f = np.asarray(rows, dtype=np.int64)[order]
        f_sorted = self.f[order]
        self.f_starts = np.flatnonzero(np.r_[True, f_sorted[1:] != f_sorted[:-1]])
        self.f_ids = f_sorted[self.f_starts]
        self.W = np.zeros((vocab_size, C), dtype=np.float32)
        self.T = np.zeros((vocab_size, S), dtype=np.float32)
        self.b = np.zeros(C, dtype=np.float32)
        self.A = self.A.astype(np.float32)
        self.Y = self.Y.astype(np.float32)
        self.N = self.N.astype(np.float32)
        self.weight = self.weight.astype(np.float32)

    def probabilities(self):
        np = self.np
        logits = np.add.reduceat(self.W[self.f], self.group_starts, axis=0)
        logits += np.add.reduceat(self.T[self.f], self.group_starts, axis=0) @ self.A
        logits += self.b
        logits -= logits.max(axis=1, keepdims=True)
        P = np.exp(logits)
        return P / P.sum(axis=1, keepdims=True)

    def run(self, epochs: int, l2: float, progress: Callable[[int], None] | None = None) -> None:
        np = self.np
        params = [self.W, self.T, self.b]
        moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
        lr, beta1, beta2, eps = 0.1, 0.9, 0.999, 1e-7
        for t in range(1, epochs + 1):
            P = self.probabilities()
            D = (P * self.weight - self.Y) / self.total
            if self.negatives:  # -log(1 - p) for a chain rated bad: its gradient by the logits
                Q = self.N * P / np.maximum(1 - P, 1e-6)
                D += (Q - P * Q.sum(axis=1, keepdims=True)) / self.total
            gW = np.zeros_like(self.W)
            gW[self.f_ids] = np.add.reduceat(D[self.rows_by_f], self.f_starts, axis=0)
            gT = np.zeros_like(self.T)
            gT[self.f_ids] = np.add.reduceat((D @ self.A.T)[self.rows_by_f], self.f_starts, axis=0)
            grads = [gW + l2 * self.W, gT + l2 * self.T, D.sum(axis=0)]
            for p, g, (m, v) in zip(params, grads, moments):
                m *= beta1
                m += (1 - beta1) * g
                v *= beta2
                v += (1 - beta2) * g * g
                p -= lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)
            if progress is not None:
                progress(t)


def train(examples: Sequence[Example], epochs: int = 80, l2: float = 1e-4,
          progress: Callable[[int], None] | None = None) -> tuple[list[LearnedChain], dict[str, dict[str, float]]]:
    """Learned chains and step-slot weights from ``examples``.

    A question whose answers several chains reach equally well (an author
    who also illustrated the book; a round trip that ends where a shorter
    chain does) first counts a share for each; after one fit every such
    question is given the one chain the model finds likeliest for its
    wording (hard EM), and the model is fitted again: spurious chains that
    only happen to reach the answers lose to the chain the wording asks for
    elsewhere."""
    if not examples:
        return [], {}
    counts = Counter(f for e in examples for f in set(e.features))
    least = MIN_FEATURE_COUNT if len(examples) >= SMALL_SET else 1  # a few rated runs: every word counts
    vocab = ["<all>"] + sorted(f for f, n in counts.items() if n >= least)
    index = {f: i for i, f in enumerate(vocab)}
    chains = sorted({chain_key(c) for e in examples for c in e.labels})
    if not chains:
        return [], {}
    cindex = {c: i for i, c in enumerate(chains)}
    keyed = [(tuple(sorted({0} | {index[f] for f in e.features if f in index})),
              {cindex[chain_key(c)]: w for c, w in e.labels.items()}) for e in examples]
    avoid = [{cindex[chain_key(c)]: w for c, w in e.avoid.items() if chain_key(c) in cindex} for e in examples]

    def grouped(labels_of: list[dict[int, float]]) -> list[tuple[tuple[int, ...], dict[int, float]]]:
        groups: dict[tuple[int, ...], dict[int, float]] = {}
        for (feats, _), labels, bad in zip(keyed, labels_of, avoid):
            into = groups.setdefault(feats, defaultdict(float))
            share = sum(labels.values())
            for c, w in labels.items():
                into[c] += w / share
            for c, w in bad.items():
                into[c] -= w  # a negative weight: a chain the wording was rated bad for
        return [(k, dict(groups[k])) for k in sorted(groups)]

    soft = [labels for _, labels in keyed]
    fit = _Fit(grouped(soft), len(vocab), chains)
    fit.run(epochs // 2, l2, progress)
    if any(len(labels) > 1 for labels in soft):
        P = fit.probabilities()
        row = {k: g for g, (k, _) in enumerate(grouped(soft))}
        hard: list[dict[int, float]] = []
        for feats, labels in keyed:
            probs = P[row[feats]]
            hard.append({max(labels, key=lambda c: (probs[c], -c)): 1.0} if labels else {})
        used = sorted({c for labels in hard for c in labels})
        remap = {c: i for i, c in enumerate(used)}
        chains = [chains[c] for c in used]
        keyed = [(feats, {remap[c]: w for c, w in labels.items()}) for (feats, _), labels in zip(keyed, hard)]
        avoid = [{remap[c]: w for c, w in bad.items() if c in remap} for bad in avoid]
        fit = _Fit(grouped([labels for _, labels in keyed]), len(vocab), chains)
        fit.run(epochs, l2, (lambda t: progress(epochs // 2 + t)) if progress is not None else None)
    np = fit.np
    labelled: dict[int, float] = defaultdict(float)
    examples_of: dict[int, Counter] = defaultdict(Counter)
    for (_, labels), e in zip(keyed, examples):
        for ci, w in labels.items():
            labelled[ci] += w
            examples_of[ci][e.pattern] += 1

    def kept(column) -> dict[str, float]:
        return dict(sorted((vocab[i], round(float(column[i]), 3)) for i in np.flatnonzero(np.abs(column) >= 0.05)))

    # the words a chain's questions share are kept even where the fit gave
    # them no weight (one chain alone has nothing to tell apart): they tell a
    # later question that the model knows its wording
    typical: dict[int, Counter] = defaultdict(Counter)
    for (_, labels), e in zip(keyed, examples):
        for ci in labels:
            typical[ci].update(set(e.features))
    learned = []
    for j, steps in enumerate(chains):
        weights = {k: v for k, v in kept(fit.W[:, j]).items() if k != "<all>"}
        for feat, n in typical[j].items():
            if feat in index and n >= 0.3 * labelled[j] and abs(weights.get(feat, 0.0)) < 0.05:
                weights[feat] = 0.05
        learned.append(LearnedChain(steps, round(float(fit.b[j] + fit.W[0, j]), 3), dict(sorted(weights.items())),
                                    round(labelled[j], 2),
                                    tuple(p for p, _ in sorted(examples_of[j].items(),
                                                               key=lambda kv: (-kv[1], kv[0]))[:3])))
    slot_weights: dict[str, dict[str, float]] = {}
    for i, slot in enumerate(fit.slots):
        sw = kept(fit.T[:, i])
        bias = sw.pop("<all>", 0.0)
        if sw or bias:
            slot_weights[slot] = {"<bias>": bias, **sw} if bias else sw
    return learned, slot_weights


# -- reading the questions ---------------------------------------------------------------

@dataclass
class LearnReport:
    questions: int = 0
    used: int = 0          # taught at least one chain
    no_topic: int = 0      # no topic entity found in the store
    no_chain: int = 0      # no chain within the depth reached the answers
    no_answers: int = 0
    chains: int = 0
    seconds: float = 0.0
    f1: float = 0.0        # mean F1 of the chains found, over the questions used
    text: str = field(default="", repr=False)  # the learned file


def examples_from(kg: KnowledgeGraph, questions: Iterable, depth: int = 3,
                  progress: Callable[[], None] | None = None,
                  report: LearnReport | None = None, journal: Journal | None = None) -> list[Example]:
    """One training example per question whose answers a chain reaches.

    ``questions``: ``engine.evaluate.Question`` values (their topics, else
    the topics linked from the text).  Unknown topics and unreachable
    answers are counted in ``report``, never raised.  ``journal``: what
    each question gave is written there as it is found, and a question it
    already holds is taken from it, not searched again."""
    report = report if report is not None else LearnReport()
    cache = ReadCache(kg)
    out: list[Example] = []
    f1_sum = 0.0
    with _no_full_collections() as question_done:
        for q in questions:
            got = journal.get(q) if journal is not None else None
            if got is None:
                got = _example(kg, cache, q, depth)
                question_done()
                if journal is not None:
                    journal.add(q, got)
            outcome, f1, example = got
            report.questions += 1
            setattr(report, outcome, getattr(report, outcome) + 1)
            f1_sum += f1
            if example is not None:
                out.append(example)
            if progress is not None:
                progress()
    report.f1 = round(f1_sum / report.used, 4) if report.used else 0.0
    report.chains = len({c for e in out for c in e.labels})
    return out


Searched = tuple[str, float, "Example | None"]  # a question's outcome (a LearnReport count), its F1, its example
OUTCOMES = ("used", "no_topic", "no_chain", "no_answers")


class JournalError(TogError):
    """A journal that cannot be written where it was asked for."""


class Journal:
    """What the chain search found for each question of a ``tog learn``,
    one JSON line a question as it is found, so that a run stopped (killed,
    interrupted, its store gone) goes on where it stopped: the same
    questions are not searched again, and the learned file is the one an
    unbroken run writes.  Its first line is the run's ``identity``; a
    journal of another (other depth, store or KG state) is refused, so as
    not to mix searches.  A line cut short by a kill is dropped, and one
    that cannot be read is passed over: their questions are searched again."""

    def __init__(self, path, identity: dict, restart: bool = False) -> None:
        from pathlib import Path

        self.path = Path(path)
        self.kept: dict[str, Searched] = {}
        try:
            self._open(identity, restart)
        except OSError as e:
            raise JournalError(f"{self.path}: cannot keep the search there ({e.strerror or type(e).__name__})"
                               ) from None

    def _open(self, identity: dict, restart: bool) -> None:
        from engine.evaluate import drop_torn_tail, identity_changes

        if restart:
            self.path.unlink(missing_ok=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab+") as fh:  # (made when missing)
            fh.seek(0)
            if not b'{"tog_learn_journal"'.startswith(fh.read(20)):  # (a head cut short is a new journal)
                raise TogError(f"{self.path} is not a journal of tog learn; remove it or give --restart")
        drop_torn_tail(self.path)  # a line a kill cut short: its question is searched again
        lines = self.path.read_bytes().splitlines()
        if lines:
            try:
                first = json.loads(lines[0])["tog_learn_journal"]
            except (ValueError, KeyError, TypeError):
                raise TogError(f"{self.path} is not a journal of tog learn; remove it or give --restart") from None
            if first != identity:
                raise TogError(f"{self.path} holds a search made otherwise ({identity_changes(first, identity)}); "
                               "run with the same settings, or --restart to search every question again")
        for line in lines[1:]:
            try:
                key, outcome, f1, ex = json.loads(line)
                example = None if ex is None else Example(
                    tuple(map(str, ex[0])), {tuple((str(r), str(d)) for r, d in c): float(w) for c, w in ex[1]},
                    str(ex[2]))
                if outcome in OUTCOMES:
                    self.kept[str(key)] = (outcome, float(f1), example)
            except (ValueError, TypeError, IndexError):
                continue  # (not a line of ours: its question is searched again)
        self._fh = open(self.path, "ab")
        if not lines:
            head = json.dumps({"tog_learn_journal": identity}, sort_keys=True, ensure_ascii=False)
            self._fh.write(head.encode("utf-8") + b"\n")
            self._fh.flush()

    @staticmethod
    def key(q) -> str:
        """A question by what its search reads of it (an ``engine.evaluate.Question``)."""
        import hashlib

        what = [q.question, sorted(q.answers), list(q.topics), sorted(q.topic_names.items())]
        return hashlib.sha256(json.dumps(what, ensure_ascii=False).encode("utf-8")).hexdigest()[:24]

    def get(self, q) -> Searched | None:
        return self.kept.get(self.key(q))

    def add(self, q, got: Searched) -> None:
        outcome, f1, example = got
        ex = None if example is None else [list(example.features), [[list(c), w] for c, w in example.labels.items()],
                                           example.pattern]
        key = self.key(q)
        self.kept[key] = got
        try:
            self._fh.write(json.dumps([key, outcome, f1, ex], ensure_ascii=False).encode("utf-8") + b"\n")
            self._fh.flush()
        except OSError as e:
            raise JournalError(f"{self.path}: cannot keep the search there ({e.strerror or type(e).__name__}); "
                               "what was kept before stays") from None

    def close(self, done: bool = False) -> None:
        """Close; ``done``: what the run found is where it goes, and the
        journal is removed."""
        self._fh.close()
        if done:
            self.path.unlink(missing_ok=True)


@contextmanager
def _no_full_collections() -> Iterator[Callable[[], None]]:
    """Python's cyclic garbage collector without its full collections for a
    while. Finding chains fills the read cache with millions of objects, and
    each full collection walked them all again: a fifth of ``tog learn``'s
    time at 1M triples. Young collections go on, so cycles made and dropped
    meanwhile (a database driver's) are still freed; the cache's objects,
    which hold none, are freed by refcount.

    Yields what to call after each question: a full collection of the
    objects made since the last call only (what outlived the young
    collections, as a driver's cycles may), then those kept set aside
    (``gc.freeze``) until the end. That is skipped when the process had
    objects set aside already: they are not ours to take back."""
    before = gc.get_threshold()
    ours = gc.get_freeze_count() == 0

    def question_done() -> None:
        if ours:
            gc.collect()
            gc.freeze()

    gc.set_threshold(before[0], before[1], 1 << 30)
    try:
        yield question_done
    finally:
        if ours:
            gc.unfreeze()
        gc.set_threshold(*before)


def _example(kg: KnowledgeGraph, cache: ReadCache, q, depth: int) -> Searched:
    """What ``q`` gives: its outcome (the ``LearnReport`` count it adds to),
    the F1 of its best chains, and its training example when a chain reaches
    its answers."""
    from engine.evaluate import topics_for
    from engine.linking import link

    answers = {k for k in (name_key(a) for a in q.answers) if k}
    if not answers:
        return "no_answers", 0.0, None
    try:
        topics: list[Node] = link(kg, q.question, topics_for(kg, q))
    except TogError:
        return "no_topic", 0.0, None
    names = [t.name for t in topics]
    side = answer_side(cache, answers)
    best, labels = 0.0, dict[Chain, float]()
    for t in topics:  # a name several entities share: the best chains of any of them
        if t.literal or is_literal(t.id):
            continue
        found = find_chains(cache, t.id, answers, depth, side)
        if not found.chains or found.f1 < best - 1e-9:
            continue
        if found.f1 > best + 1e-9:
            best, labels = found.f1, {}
        labels.update((c, 1.0) for c in found.chains)
    if not labels:
        return "no_chain", 0.0, None
    return "used", best, Example(features(q.question, names), labels, pattern(q.question, names))


def _answer_ids(kg: KnowledgeGraph, answers: set[str], most: int = 20) -> tuple[list[str], bool]:
    """Entities named like the answers (some of them: the last step's
    relations come from these), and whether they are every entity named like
    every answer."""
    keys = sorted(answers)[:most]
    found = kg.search_entities(keys)
    if len({k for k in keys if found.get(k)}) < len(keys):
        return [], False  # an answer the name index does not hold (a literal, say): do not restrict
    ids = [n.id for k in keys for n in found[k][:3]]
    every = len(answers) <= most and all(len(found[k]) <= 3 for k in keys)
    return list(dict.fromkeys(ids)), every


# -- the learned file --------------------------------------------------------------------

def fingerprint(path) -> str:
    from engine.evaluate import file_fingerprint

    return file_fingerprint(path)


def aliases_of(chains: Sequence[LearnedChain], most: int = 6) -> dict[str, dict[str, list[str]]]:
    """Per relation, the content words most tied to its one-step chains: the
    other names it learned, out and backwards."""
    out: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for c in chains:
        if len(c.steps) != 1:
            continue
        step = c.steps[0]
        name, field_ = (step[1:], "inverse") if step.startswith("^") else (step, "aliases")
        best = sorted(((w, f) for f, w in c.weights.items()
                       if w > 0.5 and " " not in f and f not in STOPWORDS and not f.startswith("<")
                       and len(f) > 2), key=lambda x: (-x[0], x[1]))[:most]
        if best:
            out[name][field_] = [f for _, f in best]
    return dict(out)


def _toml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _toml_key(text: str) -> str:
    import re

    return text if re.fullmatch(r"[A-Za-z0-9_-]+", text) else _toml_str(text)


def learned_text(chains: Sequence[LearnedChain], slots: dict[str, dict[str, float]], info: dict,
                 exemplars: Sequence[Exemplar] = ()) -> str:
    """The learned model as TOML in the relation description format."""
    lines = ["# Learned by `tog learn`: which question wordings ask for which relation chains.",
             "# Chains read step by step; ^name is the relation read backwards. Weights are per word",
             "# feature of a question (stems, pairs and triples; @ is the topic). A chain's score is its",
             "# bias and weights plus those of its [steps]: \"2:^author\" is ^author as the second step,",
             "# \"last:publisher\" publisher as the last. Edit freely.", "",
             "[learned]"]
    for k, v in info.items():
        lines.append(f"{_toml_key(k)} = {json.dumps(v, ensure_ascii=False)}")
    aliases = aliases_of(chains)
    if aliases:
        lines += ["", "[relations]"]
        for name in sorted(aliases):
            parts = [f"{f} = [{', '.join(_toml_str(a) for a in names)}]"
                     for f, names in sorted(aliases[name].items())]
            if "inverse" in aliases[name] and "aliases" not in aliases[name]:
                parts.insert(0, "aliases = []")
            lines.append(f"{_toml_key(name)} = {{ {', '.join(parts)} }}")
    for name in sorted(slots):
        lines += ["", f"[steps.{_toml_str(name)}]"]
        lines += [f"{_toml_str(f)} = {w}" for f, w in slots[name].items()]
    for c in chains:
        lines += ["", "[[chains]]",
                  f"steps = [{', '.join(_toml_str(s) for s in c.steps)}]",
                  f"questions = {c.questions}",
                  f"examples = [{', '.join(_toml_str(e) for e in c.examples)}]",
                  f"bias = {c.bias}",
                  "[chains.weights]"]
        lines += [f"{_toml_str(f)} = {w}" for f, w in c.weights.items()]
    for e in exemplars:
        lines += ["", "[[exemplars]]  # a run rated good: a worked example for the LLM's answer prompt",
                  f"question = {_toml_str(e.question)}",
                  f"topics = [{', '.join(_toml_str(t) for t in e.topics)}]",
                  f"paths = [{', '.join(_toml_str(p) for p in e.paths)}]",
                  f"answer = [{', '.join(_toml_str(a) for a in e.answer)}]"]
    return "\n".join(lines) + "\n"


def read_steps(entries: object, where: str) -> dict[str, dict[str, float]]:
    """``[steps]`` of a description file: slot -> word weights."""
    from engine.descriptions import DescriptionError

    if not isinstance(entries, dict) or not all(
            isinstance(w, dict) and all(isinstance(v, (int, float)) for v in w.values()) for w in entries.values()):
        raise DescriptionError(f"{where}: [steps] must hold tables of word weights (numbers)")
    return {str(k): {str(f): float(v) for f, v in w.items()} for k, w in entries.items()}


def read_chains(entries: object, where: str) -> list[LearnedChain]:
    """``[[chains]]`` of a description file; raises ``DescriptionError`` naming what is wrong."""
    from engine.descriptions import DescriptionError

    if not isinstance(entries, list):
        raise DescriptionError(f"{where}: 'chains' must be an array of tables ([[chains]])")
    out = []
    for n, e in enumerate(entries, start=1):
        if not isinstance(e, dict):
            raise DescriptionError(f"{where}: chain {n} is not a table")
        steps = e.get("steps")
        if not isinstance(steps, list) or not steps or not all(isinstance(s, str) and s.strip("^") for s in steps):
            raise DescriptionError(f"{where}: chain {n} needs steps = [\"relation\", \"^relation\", ...]")
        weights = e.get("weights", {})
        if not isinstance(weights, dict) or not all(isinstance(v, (int, float)) for v in weights.values()):
            raise DescriptionError(f"{where}: the weights of chain {n} must be numbers")
        bias = e.get("bias", 0.0)
        if not isinstance(bias, (int, float)):
            raise DescriptionError(f"{where}: the bias of chain {n} must be a number")
        unknown = sorted(set(e) - {"steps", "weights", "bias", "questions", "examples"})
        if unknown:
            raise DescriptionError(f"{where}: chain {n} has unknown field(s) {', '.join(unknown)}")
        out.append(LearnedChain(tuple(steps), float(bias), {str(k): float(v) for k, v in weights.items()},
                                float(e.get("questions", 0.0)), tuple(e.get("examples", ()))))
    return out


@dataclass(frozen=True)
class Exemplar:
    """A worked example for the LLM's answer prompt, from a run rated good:
    the question, the paths its answer cited (in the prompts' notation) and the answer."""

    question: str
    paths: tuple[str, ...]
    answer: tuple[str, ...]
    topics: tuple[str, ...] = ()

    def size(self) -> int:
        return len(self.question) + sum(len(p) + 4 for p in self.paths) + sum(len(a) + 3 for a in self.answer)


MAX_EXEMPLARS = 40  # kept in a learned file, the best-rated and most recent first


def _cited(tree) -> list[list]:
    """Per path the run's answer cited, its path records from the topic on."""
    by_id = {p.id: p for p in tree.paths}
    out = []
    for pid in tree.info.stats.get("answer_paths", []):
        chain, node = [], by_id.get(pid)
        while node is not None:
            chain.append(node)
            node = by_id.get(node.parent) if node.parent is not None else None
        if len(chain) > 1 and chain[-1].parent is None:
            out.append(chain[::-1])
    return out


def _exemplar(kg: KnowledgeGraph, tree) -> Exemplar | None:
    """A run rated good as a worked example, in the prompts' notation."""
    from engine.agent import step
    from engine.runs import name_relations

    cited = _cited(tree)[:6]
    if not cited:
        return None
    name_relations(kg, tree)
    def hop(p) -> str:
        return f"{step(Relation(p.relation or '', p.direction or 'out'), tree.relation(p.relation or ''))} {p.name}"

    shown = tuple(" ".join([chain[0].name, *map(hop, chain[1:])]) for chain in cited)
    info = tree.info
    return Exemplar(info.question, shown, tuple(info.answer[:5]), tuple(p.name for p in tree.paths if p.depth == 0))


def choose_exemplars(exemplars: Sequence[Exemplar], question: str, topic_names: Sequence[str],
                     most: int = 2, budget: int = 1200) -> list[Exemplar]:
    """The exemplars whose wording is nearest the question's (Jaccard over
    word features, topics as ``@``), at most ``most`` and ``budget``
    characters; the nearest last (next to the question)."""
    mine = set(features(question, topic_names))
    if not mine:
        return []
    scored = []
    for e in exemplars:
        theirs = set(features(e.question, e.topics))
        union = mine | theirs
        overlap = len(mine & theirs) / len(union) if union else 0.0
        if overlap > 0 and e.question != question:
            scored.append((overlap, e))
    scored.sort(key=lambda x: (-x[0], x[1].question))
    chosen: list[Exemplar] = []
    used = 0
    for _, e in scored:
        if len(chosen) >= most or used + e.size() > budget:
            break
        chosen.append(e)
        used += e.size()
    return chosen[::-1]


def read_exemplars(entries: object, where: str) -> list[Exemplar]:
    from engine.descriptions import DescriptionError

    if not isinstance(entries, list):
        raise DescriptionError(f"{where}: 'exemplars' must be an array of tables ([[exemplars]])")
    out = []
    for n, e in enumerate(entries, start=1):
        if not (isinstance(e, dict) and isinstance(e.get("question"), str)
                and all(isinstance(e.get(k, []), list) for k in ("paths", "answer", "topics"))):
            raise DescriptionError(f"{where}: exemplar {n} needs question = \"...\", paths = [...], answer = [...]")
        out.append(Exemplar(e["question"], tuple(map(str, e.get("paths", []))), tuple(map(str, e.get("answer", []))),
                            tuple(map(str, e.get("topics", [])))))
    return out


@dataclass
class Feedback:
    """What the outer loop teaches: question–answer pairs (their chains are
    still to be found), chains that rated-bad runs took, and counts."""

    questions: list = field(default_factory=list)
    avoid: list[Example] = field(default_factory=list)
    exemplars: list[Exemplar] = field(default_factory=list)  # good runs, the newest first
    counts: dict[str, int] = field(default_factory=lambda: {"good": 0, "named": 0, "bad": 0, "corrected": 0})


def from_feedback(store) -> Feedback:
    """The store's rated runs and the corrections made for runs.

    The latest rating of a run decides: a named right answer (``tog
    feedback --answer``) is a pair to learn from, else a good run's own
    answer; a run rated bad without a named answer teaches that its wording
    does not ask for the chain its answer came by.  An active correction
    made for a run (``tog correct --run``) that added facts makes a pair of
    the run's question and what the facts added (the end that is not a
    topic of the run).  Runs rated good are also the worked examples of the
    LLM's answer prompt (the newest ``MAX_EXEMPLARS``)."""
    from engine.evaluate import Question

    runs = store.need_runs()
    out = Feedback()
    trees = {}
    for header in runs.list():
        if header.status != "done":
            continue
        tree = runs.get(header.id)  # the header of a list may leave the ratings out
        trees[header.id] = tree
        info = tree.info
        if not info.feedback:
            continue
        last = info.feedback[-1]
        topics = [p.entity for p in tree.paths if p.depth == 0]
        answers = list(last.get("answers") or [])
        if answers:
            out.counts["named"] += 1
        elif last.get("rating") == "good" and info.answer:
            out.counts["good"] += 1
            answers = list(info.answer)
            example = _exemplar(store.kg, tree)
            if example is not None:
                out.exemplars.insert(0, example)
        else:
            out.counts["bad"] += 1
            chains = _chains_cited(tree)
            if chains:
                names = [p.name for p in tree.paths if p.depth == 0]
                out.avoid.append(Example(features(info.question, names), {}, pattern(info.question, names),
                                         {c: 1.0 for c in chains}))
            continue
        out.questions.append(Question(f"run-{info.id}", info.question, answers, topics))
    del out.exemplars[MAX_EXEMPLARS:]
    if store.corrections is not None:
        for c in store.corrections.list():
            tree = trees.get(c.run) if c.run else None
            if tree is None or c.status != "active" or not c.added:
                continue
            roots = {p.entity for p in tree.paths if p.depth == 0}
            ends = [o if subject in roots or o not in roots else subject for subject, _, o in c.added]
            names = [n for n in store.kg.labels(ends).values() if n]
            if names:
                out.counts["corrected"] += 1
                out.questions.append(Question(f"correction-{c.id}", tree.info.question, names, sorted(roots)))
    return out


def _chains_cited(tree) -> list[Chain]:
    """The relation chains of the paths a run's answer cited."""
    found: dict[Chain, None] = {}
    for chain in _cited(tree):
        steps: list[Step] = []
        for p in chain[1:]:
            steps += [(p.relation or "", p.direction or "out"), *((v, "out") for v in p.via)]
        found[tuple(steps)] = None
    return list(found)


def split(items: Sequence, share: float, seed: int) -> tuple[list, list]:
    """A seeded split: (``share`` of the items, the rest), each in the input order."""
    rng = random.Random(seed)
    picked = set(rng.sample(range(len(items)), round(len(items) * share)))
    return ([x for i, x in enumerate(items) if i in picked], [x for i, x in enumerate(items) if i not in picked])


def learn(kg: KnowledgeGraph, questions: Sequence, out, depth: int = 3, source: str = "",
          progress: bool | None = None, epochs: int = 80,
          keep: Callable[[LearnReport], bool] | None = None, exemplars: Sequence[Exemplar] = (),
          avoid: Sequence[Example] = (), journal: Journal | None = None) -> LearnReport:
    """Find the chains behind ``questions``' answers, train, and write the
    learned file to ``out`` when given (unless ``keep`` says the report is
    not worth a file); the text is also ``report.text``.  ``avoid``:
    examples of chains wordings do not ask for (``from_feedback``).
    ``journal``: where the search is kept as it goes (see ``Journal``;
    its opener closes it, and removes it once what was learned is where it
    goes).

    Deterministic for a given store and question list."""
    import time

    started = time.perf_counter()
    report = LearnReport()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(questions), unit="q", desc="finding chains", dynamic_ncols=True)
    try:
        examples = examples_from(kg, questions, depth, progress=bar.update if bar is not None else None,
                                 report=report, journal=journal)
    finally:
        if bar is not None:
            bar.close()
    chains, slots = train([*examples, *avoid], epochs=epochs)
    report.chains = len(chains)
    report.seconds = round(time.perf_counter() - started, 3)
    info = {"version": FORMAT_VERSION, "source": source, "questions": report.questions, "used": report.used,
            "no_topic": report.no_topic, "no_chain": report.no_chain, "depth": depth,
            "mean_f1": report.f1}
    report.text = learned_text(chains, slots, info, exemplars)
    if out is not None and (keep is None or keep(report)):
        from pathlib import Path

        Path(out).write_text(report.text, encoding="utf-8")
    return report
