"""LLM⊕KG: retrieve once, then answer in one step (``--method kg-llm-once``).

The framework's third paradigm, beside KG-only (the offline backbone),
LLM-only (``io``, ``cot``) and LLM⊗KG (``tog``, ``tog-r``, ``plan``): the
topic's neighbourhood up to ``depth`` hops is read from the KG without the
LLM in the loop, verbalised as numbered paths, and the reasoner answers from
them in one step (with ``--model``: one LLM call that cites the paths it used;
offline: the offline reasoner's answer over the same paths).

The retrieval is hub-safe and bounded: every hop is one batched relation
listing and one batched expansion with the search's sampling limits
(``max_candidates`` per pair). The cheap scorer (the pruner, or the hybrid
scorer when the pruner is the LLM) ranks the (path, relation) steps, and the
best are followed, at most ``STEPS`` of them, until they would bring ``READ``
paths (the listing's degrees tell how many each brings), so an entity with a
thousand relations costs what one with thirty does. The same scorer orders
what was found, at most ``FRONTIER`` paths go on to the next hop, and the
paths shown stop at ``TOKENS`` tokens of text (about four characters a token).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from engine.graph import KnowledgeGraph, Node, Relation
from engine.paths import Path
from engine.pruning import Choice, HybridPruner, Pruner
from engine.reasoning import Reasoner

if TYPE_CHECKING:
    from engine.descriptions import Descriptions
    from engine.search import Recorder, SearchConfig, SearchResult

TOKENS = 3000  # the retrieved paths shown to the answer, at most (about 4 characters a token)
FRONTIER = 30  # paths extended per hop, best first
READ = 3000  # paths a hop's followed steps may bring, at most (plus the last step's)
STEPS = 100  # (path, relation) steps followed a hop, at most


def retrieve_once(kg: KnowledgeGraph, question: str, topics: Sequence[Node], pruner: Pruner, reasoner: Reasoner,
                  config: SearchConfig, recorder: Recorder, descriptions: Descriptions | None = None
                  ) -> SearchResult:
    from engine.search import SearchResult, _relations_of, follow

    lookups0, seconds0 = kg.meter.lookups, kg.meter.seconds
    started = time.perf_counter()
    # no LLM in the retrieval: an LLM pruner leaves the ranking to the hybrid scorer
    scorer = HybridPruner(descriptions) if pruner.uses_llm else pruner
    counter = itertools.count()
    frontier = [Path(f"p{next(counter)}", t) for t in topics]
    recorder.record(frontier, {p.id for p in frontier})
    found: list[Path] = []
    reached = 0
    for depth in range(1, config.depth + 1):
        steps = _best_steps(question, frontier, _relations_of(kg, frontier, descriptions), scorer, config)
        if not steps:
            break
        new = [q for grown in follow(kg, steps, config, descriptions, counter) for q in grown]
        if not new:
            break
        scores = scorer.score_relations(question, [Choice(q, q.verbalise(with_entities=False), q.hops[-1].relation)
                                                   for q in new])
        for q, s in zip(new, scores):
            q.score = s
        new.sort(key=lambda q: -q.score)
        found += new
        reached = depth
        frontier = new[:FRONTIER]
    shown = _within_tokens(sorted(found, key=lambda q: -q.score), TOKENS)
    by_id = {q.id: q for q in found}
    # the run keeps what was shown and the paths it grew from (not every path read)
    needed: dict[str, Path] = {}
    for q in shown:
        at: Path | None = q
        while at is not None and at.hops and at.id not in needed:
            needed[at.id] = at
            at = by_id.get(at.parent or "")
    recorder.record(sorted(needed.values(), key=lambda q: q.depth), {q.id for q in shown})
    answer = reasoner.answer(question, topics, shown, shown)
    stats = {"depth": reached, "rewards": [], "kg_lookups": kg.meter.lookups - lookups0,
             "kg_seconds": round(kg.meter.seconds - seconds0, 6), "seconds": round(time.perf_counter() - started, 6),
             "paths_scored": len(found), "retrieved": len(found), "shown": len(shown)}
    return SearchResult(answer, shown, [by_id[i] for i in answer.path_ids if i in by_id], reached, [], stats)


def _best_steps(question: str, frontier: Sequence[Path], around: Mapping[str, list[Relation]], scorer: Pruner,
                config: SearchConfig) -> list[tuple[Path, Relation]]:
    """The (path, relation) steps worth following, best first, at most
    ``STEPS``, until they would bring ``READ`` paths: a step brings its pair's
    degree (when the listing gave it) within the expansion's limits. Ties
    keep the frontier's order, then the relation's id, the same on every
    backend."""
    from engine.search import _relation_text

    steps = [(p, rel) for p in frontier for rel in around.get(p.id, ())]
    if not steps:
        return []
    scores = scorer.score_relations(question, [Choice(p, _relation_text(p, rel), rel) for p, rel in steps])
    place = {p.id: i for i, p in enumerate(frontier)}
    order = sorted(range(len(steps)), key=lambda i: (-scores[i], place[steps[i][0].id], steps[i][1].id,
                                                     steps[i][1].direction))
    chosen: list[tuple[Path, Relation]] = []
    brought = 0
    for i in order:
        if brought >= READ or len(chosen) >= STEPS:
            break
        chosen.append(steps[i])
        brought += _brings(steps[i][1], config)
    return chosen


def _brings(rel: Relation, config: SearchConfig) -> int:
    """Paths one step along ``rel`` brings at most (as the expansion limits them)."""
    from engine.backends.common import crowd_cap

    limit = config.max_candidates
    degree = rel.degree if rel.degree is not None else limit
    return min(degree, crowd_cap(degree, limit, config.sample_over, config.sample_size))


def _within_tokens(paths: Sequence[Path], tokens: int) -> list[Path]:
    out, used = [], 0
    for p in paths:
        cost = len(p.verbalise()) // 4 + 2
        if used + cost > tokens:
            break
        out.append(p)
        used += cost
    return out
