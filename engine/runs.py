"""Asking a question as a recorded run, and showing runs afterwards."""

from __future__ import annotations

import datetime as dt
import secrets
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from engine.errors import QuestionError, StoreError, TogError, UnknownEntityError
from engine.graph import KnowledgeGraph, Node, RunInfo, RunTree, utc_now, utc_text
from engine.linking import TOPIC_HINT, link, resolve
from engine.pruning import Pruner
from engine.reasoning import Answer, Reasoner
from engine.search import BASELINES, Recorder, SearchConfig, SearchResult, search

if TYPE_CHECKING:
    from engine.store import Store


def new_run_id() -> str:
    """Sortable by time, unique enough: ``20261129T213501-3fa2``."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


@dataclass(slots=True)
class AskResult:
    run_id: str | None
    question: str
    topics: list[Node]
    result: SearchResult

    def to_json(self) -> dict:
        r = self.result
        return {
            "run": self.run_id,
            "question": self.question,
            "topics": [asdict(t) for t in self.topics],
            "answer": r.answer.names,
            "answer_ids": r.answer.ids,
            "from_kg": r.answer.from_kg,
            "fallbacks": r.stats.get("llm_fallbacks", 0),
            "reason": r.answer.reason,
            "paths": list(dict.fromkeys(p.verbalise() for p in r.supporting)),
            "depth": r.depth,
            "rewards": r.rewards,
            "stats": r.stats,
        }


def ask(
    store: Store,
    question: str,
    pruner: Pruner,
    reasoner: Reasoner,
    config: SearchConfig = SearchConfig(),
    topics: Sequence[str] = (),
    record: bool = True,
    extra_config: dict | None = None,
    llm=None,
    descriptions=None,
) -> AskResult:
    """Link, search in ``store.kg`` and (when ``record`` and the store keeps
    runs) keep the run in ``store.runs``.

    ``llm`` (an ``engine.llm.LLMClient``) finds topic entities the name index
    cannot, answers alone for the ``io`` / ``cot`` baselines, and has its
    usage (calls, tokens, cost) added to the run's stats.  ``descriptions``
    (``engine.descriptions.Descriptions``) describe the KG's relations. The run is marked
    ``failed`` when the search raises; the error goes on.
    """
    from engine.llm import Usage

    usage = Usage()
    try:
        return _ask(store, question, pruner, reasoner, config, topics, record, extra_config, llm, usage,
                    descriptions)
    except TogError as e:
        if llm is not None:  # what the question cost before it failed is not lost
            e.llm_usage = usage.to_dict()
        raise


def _ask(store, question, pruner, reasoner, config, topics, record, extra_config, llm, usage,
         descriptions) -> AskResult:
    from engine.llm import CallBudget, budgeting, tracking
    from engine.search import CallPlan

    kg = store.kg
    runs = store.runs if record else None
    limit = 2 if config.method in BASELINES else CallPlan(config, pruner, reasoner).limit()
    with tracking(usage), budgeting(CallBudget(limit)) as budget:
        if config.method in BASELINES:
            if not question or not question.strip():
                raise QuestionError("the question is empty")
            nodes = []
        else:
            nodes = _topics(kg, question, topics, llm)
        run_id = new_run_id() if runs is not None else None
        info = None
        if runs is not None and run_id:
            info = RunInfo(
                id=run_id, question=question, started=utc_now(), method=config.method,
                config={**asdict(config), "pruner": pruner.name, "reasoner": reasoner.name, **(extra_config or {})},
            )
            runs.start(info)
        try:
            if config.method in BASELINES:
                result = _baseline(llm, config.method, question)
            else:
                result = search(kg, question, nodes, pruner, reasoner, config, Recorder(runs, run_id), descriptions)
        except BaseException:
            if runs is not None and info is not None:
                info.status = "failed"
                info.finished = utc_now()
                if llm is not None:
                    info.stats = usage.to_dict()
                try:
                    runs.finish(info)
                except StoreError:
                    pass  # the store is gone (a dropped connection): marked failed on the next connect
            raise
    if llm is not None:
        result.stats.update(usage.to_dict())
        result.stats["llm_budget"] = budget.limit
    result.stats["answer_paths"] = list(result.answer.path_ids)  # the path nodes the answer cites
    if runs is not None and info is not None:
        info.status = "done"
        info.answer = result.answer.names
        info.stats = result.stats
        info.finished = utc_now()
        runs.finish(info)
    return AskResult(run_id, question, nodes, result)


def _topics(kg: KnowledgeGraph, question: str, topics: Sequence[str], llm) -> list[Node]:
    """Linked topic entities; when the name index finds none in the question,
    the LLM names them and the index resolves those names."""
    try:
        return link(kg, question, topics)
    except QuestionError:
        if llm is None or topics or not question.strip():
            raise
    from engine.agent import extract_topics

    nodes: list[Node] = []
    for name in extract_topics(llm, question):
        try:
            nodes.extend(resolve(kg, [name]))
        except UnknownEntityError:
            continue  # a name the KG does not hold
    if not nodes:
        raise QuestionError("neither the name index nor the LLM found an entity of the store in the question; "
                            + TOPIC_HINT)
    return list({n.id: n for n in nodes}.values())


def _baseline(llm, method: str, question: str) -> SearchResult:
    from engine.agent import baseline_answer

    if llm is None:
        raise QuestionError(f"--method {method} asks the LLM alone: name a model (--model or TOG_MODEL)")
    started = time.perf_counter()
    names = baseline_answer(llm, method, question)
    answer = Answer(names, from_kg=False, reason=f"{method.upper()} prompting, without the knowledge graph")
    return SearchResult(answer, [], [], 0, [], {"depth": 0, "rewards": [], "kg_lookups": 0, "kg_seconds": 0.0,
                                                "seconds": round(time.perf_counter() - started, 6),
                                                "paths_scored": 0})


def parse_age(text: str) -> dt.timedelta:
    """``30d``, ``12h``, ``45m``, ``90s``, ``2w`` -> timedelta."""
    units = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    text = text.strip().lower()
    if len(text) < 2 or text[-1] not in units or not text[:-1].isdigit():
        raise ValueError(f"{text!r} is not an age like 30d, 12h, 45m, 90s or 2w")
    return dt.timedelta(**{units[text[-1]]: int(text[:-1])})


def cutoff(age: str) -> str:
    try:
        moment = dt.datetime.now(dt.timezone.utc) - parse_age(age)
    except OverflowError:
        raise ValueError(f"{age!r} reaches back before year 1") from None
    return utc_text(moment)


def since_ok(started: str, start: str) -> bool:
    """Did a run that started at ``started`` start at or after ``start``?
    As moments, not strings: stores write ``Z`` or ``+00:00``, with or
    without fractions of a second. An unreadable time is kept (shown)."""
    try:
        return _moment(started) >= _moment(start)
    except ValueError:
        return True


def _moment(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text.strip())
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def prune(runs, older_than: str) -> int:
    """Delete the runs (``RunLog``) started before ``older_than`` (ISO 8601); how many went."""
    return runs.delete([r.id for r in runs.list() if not since_ok(r.started, older_than)])


KEEP_FOREVER = "forever"


def expired(store: Store, now: dt.datetime | None = None) -> list[str]:
    """The runs past the retention they were recorded with (``config["keep"]``,
    set by ``tog eval --keep-runs``): never a rated run, nor one a correction
    was made for (both are what ``tog learn --from-feedback`` learns from)."""
    runs = store.need_runs()
    now = now or dt.datetime.now(dt.timezone.utc)
    cited = {c.run for c in store.corrections.list()} if store.corrections is not None else set()
    out = []
    for r in runs.list():
        keep = r.config.get("keep")
        if not keep or keep == KEEP_FOREVER or r.feedback or r.id in cited:
            continue
        try:
            if dt.datetime.fromisoformat(r.started) + parse_age(keep) < now:
                out.append(r.id)
        except (ValueError, OverflowError):
            continue  # a retention this version cannot read: kept
    return out


def _first(names: list[str], shown: int = 10) -> str:
    if not names:
        return "(none)"
    more = f" … and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def render_tree(tree: RunTree, show_pruned: bool = True, max_children: int = 12,
                corrected: dict[str, str] | None = None) -> str:
    """A run as an indented tree: depth, relation, entity, score, kept or
    pruned, the paths the answer cites (``*``) and hops over a fact that a
    correction added (``corrected: ID``)."""
    from engine.text import printable as safe

    info = tree.info
    corrected = corrected or {}
    cited = set(info.stats.get("answer_paths", []))
    lines = [
        f"run {info.id}  [{info.status}]  {info.method}  started {info.started}",
        f"question: {safe(info.question)}",
        f"answer: {safe(_first(info.answer))}",
    ]
    for f in info.feedback:
        lines.append(f"feedback: {f['rating']} ({f['at']})" + (f": {safe(f['comment'])}" if f.get("comment") else ""))
    if info.stats.get("llm_fallbacks"):
        n = info.stats["llm_fallbacks"]
        lines.append(f"warning: {n} model repl{'y' if n == 1 else 'ies'} could not be read; the offline "
                     "scorer, judge or answer stood in")
    model = info.config.get("llm") if isinstance(info.config.get("llm"), dict) else None
    if model and model.get("model"):
        lines.append(f"model: {model['model']}" + (f" at {model['host']}" if model.get("host") else "")
                     + f", structured {model.get('structured')}, prompts {model.get('prompts')}")
    if info.stats:
        lines.append("stats: " + ", ".join(f"{k}={v}" for k, v in info.stats.items()
                                           if k not in ("answer_paths", "lookahead", "context_refreshes")))
    if info.stats.get("lookahead"):
        lines.append(f"planned: {len(info.stats['lookahead'])} steps looked ahead, context rebuilt "
                     f"{len(info.stats.get('context_refreshes') or [])} times (`runs show --simulated` prints them)")
    children: dict[str | None, list] = defaultdict(list)
    for p in tree.paths:
        children[p.parent].append(p)
    for kids in children.values():
        kids.sort(key=lambda p: (not p.kept, -(p.score or 0.0), p.name))

    def walk(pid: str | None, prefix: str) -> None:
        kids = children.get(pid, [])
        shown = [k for k in kids if show_pruned or k.kept]
        hidden = len(kids) - len(shown)
        extra = 0
        if len(shown) > max_children:
            extra = len(shown) - max_children
            shown = shown[:max_children]
        for i, p in enumerate(shown):
            last = i == len(shown) - 1 and not hidden and not extra
            branch = "└─ " if last else "├─ "
            if p.relation is None:
                lines.append(f"{prefix}{branch}{safe(p.name)}  (topic)")
            else:
                rel = tree.relation(p.relation) + (" (of)" if p.direction == "in" else "")
                if p.via:
                    rel += " / " + " / ".join(tree.relation(v) for v in p.via)
                mark = "kept" if p.kept else "pruned"
                score = f"{p.score:.3f}" if p.score is not None else "-"
                notes = (" *answer" if p.id in cited else "") + (
                    f"  [corrected: {corrected[p.id]}]" if p.id in corrected else "")
                lines.append(f"{prefix}{branch}d{p.depth} --{safe(rel)}--> {safe(p.name)}  score={score} {mark}{notes}")
            walk(p.id, prefix + ("   " if last else "│  "))
        if extra or hidden:
            parts = []
            if extra:
                parts.append(f"{extra} more")
            if hidden:
                parts.append(f"{hidden} pruned hidden")
            lines.append(f"{prefix}└─ … {', '.join(parts)}")

    walk(None, "")
    return "\n".join(lines)


def render_lookahead(tree: RunTree) -> str:
    """A planned run's lookahead (``stats["lookahead"]``), as text: per real
    step, each simulated level's trajectories with the Critic's score."""
    from engine.text import printable

    steps = tree.info.stats.get("lookahead") or []
    if not steps:
        return "simulated (never read from the KG): nothing (not a planned run)"
    lines = ["simulated (never read from the KG): `=>` marks a step the Model foresaw"]
    for step in steps:
        lines.append(f"  step {step['step']}: {step['offered']} actions offered; carried out: "
                     f"{printable(step.get('taken') or '(nothing led anywhere)')}")
        for n, level in enumerate(step["levels"], start=1):
            lines.append(f"    level {n}:")
            for t in level:
                ahead = f"   (foreseen next: {printable(', '.join(t['foreseen']))})" if t.get("foreseen") else ""
                lines.append(f"      {t['score']:.2f}  {printable(t['trajectory'])}{ahead}")
    for r in tree.info.stats.get("context_refreshes") or []:
        lines.append(f"  context rebuilt after step {r['step']}: {printable(r['why'])}")
    return "\n".join(lines)


def last_run_id(runs, run_id: str) -> str:
    """``last`` -> the newest run's id; any other id as it is."""
    from engine.errors import UnknownRunError

    if run_id != "last":
        return run_id
    items = runs.list()
    if not items:
        raise UnknownRunError("no runs in this store yet; ask a question first")
    return items[-1].id


def name_relations(kg: KnowledgeGraph, tree: RunTree) -> RunTree:
    """Fill ``tree.relation_names`` with the names the KG has for the run's relations."""
    iris = sorted({p.relation for p in tree.paths if p.relation} | {v for p in tree.paths for v in p.via})
    if iris:
        tree.relation_names = {k: v for k, v in kg.labels(iris).items() if v}
    return tree
