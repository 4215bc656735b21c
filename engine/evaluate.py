"""Evaluate on a question file: resumable, one JSON line per question.

Input formats:
- MetaQA lines: ``question with [topic]<TAB>ans1|ans2`` (a third tab-separated
  column, when present, is the question type);
- JSONL: ``{"id", "question", "answers": [..], "topic_entities": [..], "type"}``.

Metrics: Hits@1 under ToG's lenient match (normalised equality or substring
either way) and under strict match (normalised equality), answer-set F1,
a breakdown by type, KG time and KG lookups per question.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import LLMError, StoreError, TogError
from engine.graph import KnowledgeGraph, name_key
from engine.text import printable

if TYPE_CHECKING:
    from engine.runs import AskResult
    from engine.store import Store


@dataclass(slots=True)
class Question:
    id: str
    question: str
    answers: list[str]
    topics: list[str] = field(default_factory=list)
    type: str | None = None
    topic_names: dict[str, str] = field(default_factory=dict)  # topic IRI -> name (ToG's files)


def read_questions(path: str | Path, types: str | Path | None = None) -> Iterator[Question]:
    """Questions of a MetaQA-style or JSONL file (gzip/bz2 allowed).

    ``types``: an optional file with one question type per line, in the same
    order (MetaQA's ``qa_*_qtype.txt``).  Raises :class:`TogError` when the
    file cannot be read; bad lines raise with their line number, and so does
    an id given to two questions (a resume would answer only one of them).
    """
    seen: dict[str, int] = {}
    for n, q in enumerate(_questions(path, types), start=1):
        if q.id in seen:
            raise TogError(f"{path}: questions {seen[q.id]:,} and {n:,} have the same id {printable(q.id)!r}; "
                           "give each its own")
        seen[q.id] = n
        yield q


def _questions(path: str | Path, types: str | Path | None = None) -> Iterator[Question]:
    from loaders.base import open_binary

    path = Path(path)
    if not path.is_file():
        raise TogError(f"no such question file: {path}")
    type_list = None
    try:
        if types is not None:
            with open_binary(Path(types)) as fh:
                type_list = [t.decode("utf-8").strip() for t in fh.read().splitlines()]
        with open_binary(path) as fh:
            raw = fh.read().decode("utf-8")
    except UnicodeDecodeError as e:
        raise TogError(f"{types if type_list is None and types else path}: not UTF-8 text ({e.reason})") from e
    except (OSError, EOFError) as e:
        raise TogError(f"cannot read {path}: {e}") from e
    stem = path.name.split(".")[0]
    if raw.lstrip().startswith("["):  # a JSON array: ToG's question files
        yield from _tog_questions(path, raw, stem)
        return
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        qtype = type_list[n - 1] if type_list and n - 1 < len(type_list) else None
        if line.lstrip().startswith("{"):
            try:
                obj = json.loads(line)
                question = str(obj["question"])
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise TogError(f"{path}:{n}: not a question record ({e})") from e
            answers = obj.get("answers", obj.get("answer", []))
            if answers is None:
                answers = []
            elif isinstance(answers, (str, int, float)):
                answers = [answers]
            elif not isinstance(answers, list):
                raise TogError(f"{path}:{n}: 'answers' must be a list of names")
            topics = obj.get("topic_entities") or obj.get("topics") or []
            if not isinstance(topics, list):
                topics = [topics]
            yield Question(str(obj.get("id", _line_id(stem, n, question))), question, [str(a) for a in answers],
                           [str(t) for t in topics], obj.get("type", qtype))
            continue
        parts = line.split("\t")
        if len(parts) < 2:
            raise TogError(f"{path}:{n}: expected 'question<TAB>answer|answer'")
        yield Question(_line_id(stem, n, parts[0].strip()), parts[0].strip(), [a for a in parts[1].split("|") if a],
                       [], parts[2].strip() if len(parts) > 2 and parts[2].strip() else qtype)


FREEBASE_NS = "http://rdf.freebase.com/ns/"
WIKIDATA_ENTITY = "http://www.wikidata.org/entity/"


def _tog_questions(path: Path, raw: str, stem: str) -> Iterator[Question]:
    """Records of ToG's question files (cwq, WebQSP, WebQuestions, SimpleQA,
    GrailQA, QALD-10): the question, the gold answers as names whatever their
    shape, and the topic entities as Freebase / Wikidata IRIs (see
    :func:`topics_for`, which falls back to their names)."""
    try:
        records = json.loads(raw)
    except json.JSONDecodeError as e:
        raise TogError(f"{path}: not a JSON array of questions ({e})") from e
    for n, r in enumerate(records, start=1):
        if not isinstance(r, dict):
            raise TogError(f"{path}: record {n} is not an object")
        question = r.get("question") or r.get("RawQuestion") or r.get("ProcessedQuestion")
        if not isinstance(question, str) or not question.strip():
            raise TogError(f"{path}: record {n} has no question")
        topics: dict[str, str] = {}
        for key, base in (("topic_entity", FREEBASE_NS), ("qid_topic_entity", WIKIDATA_ENTITY)):
            found = r.get(key) or {}
            if not isinstance(found, dict):
                raise TogError(f"{path}: record {n}: {key!r} must map ids to names")
            for ident, name in found.items():
                topics[base + str(ident)] = str(name)
        qid = r.get("ID") or r.get("QuestionId") or r.get("qid") or r.get("id") or _line_id(stem, n, question)
        qtype = r.get("compositionality_type") or r.get("level") or None
        yield Question(str(qid), question.strip(), _gold(r), list(topics), qtype, topics)


def _gold(r: dict) -> list[str]:
    """Gold answers as names: a string, a list of strings, {id: name},
    GrailQA's [{entity_name, answer_argument}], WebQSP's Parses[].Answers[]."""
    found: list[str] = []

    def add(item) -> None:
        if isinstance(item, dict):
            name = (item.get("entity_name") or item.get("EntityName") or item.get("answer_argument")
                    or item.get("AnswerArgument"))
            if name is None and item and all(isinstance(v, str) for v in item.values()):
                found.extend(item.values())  # {qid: name}
            elif name is not None:
                found.append(str(name))
        elif isinstance(item, list):
            for x in item:
                add(x)
        elif item is not None and str(item).strip():
            found.append(str(item).strip())

    add(r.get("answers", r.get("answer")))
    for parse in r.get("Parses") or []:
        if isinstance(parse, dict):
            add(parse.get("Answers"))
    return list(dict.fromkeys(found))


def topics_for(kg: KnowledgeGraph, q: Question) -> list[str]:
    """A question's topics for this store: the topic IRIs the KG holds (a
    Freebase KG knows the mids, a Wikidata one the qids); when it holds none,
    the topics' names, linked through the name index."""
    if not q.topic_names:
        return list(q.topics)
    held = [t for t in q.topics if kg.has_entity(t)]
    return held or list(dict.fromkeys(q.topic_names[t] for t in q.topics))


def result_row(r: AskResult) -> dict:
    """What the results file keeps of an answered question (the scores are added by ``evaluate``)."""
    s = r.result.stats
    row = {"prediction": r.result.answer.names, "from_kg": r.result.answer.from_kg, "run": r.run_id,
           "paths": [p.verbalise() for p in r.result.supporting], "depth": s["depth"],
           "kg_lookups": s["kg_lookups"], "kg_seconds": s["kg_seconds"], "seconds": s["seconds"]}
    row.update({k: v for k, v in s.items() if k.startswith(("llm_", "tokens_")) or k == "cost"})
    return row


def summary_path(out: Path) -> Path:
    """Where the summary of a results file is kept: ``OUT.summary.json``."""
    return out.with_name(out.name + ".summary.json")


def identity_path(out: Path) -> Path:
    """Where a results file's identity is kept: ``OUT.identity.json``."""
    return out.with_name(out.name + ".identity.json")


def _flat(d: object, prefix: str = "") -> dict[str, object]:
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, object] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def identity_changes(before: dict, now: dict) -> str:
    """What differs between two identities of a resumable run, in short:
    ``key: old -> new`` for the first three, and how many more."""
    old, new = _flat(before), _flat(now)
    changed = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    shown = "; ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed[:3])
    return shown + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")


def check_identity(out: Path, identity: dict, restart: bool = False) -> None:
    """Refuse to add to ``out`` answers made otherwise than the ones in it
    (other settings, another question file, another store); ``restart``
    drops the old results first. The identity is kept beside the results."""
    if out.is_dir():
        raise TogError(f"--out {out} is a directory; give a file name")
    out.parent.mkdir(parents=True, exist_ok=True)
    kept = identity_path(out)
    if restart:
        for f in (out, summary_path(out), kept):
            f.unlink(missing_ok=True)
    if out.exists() and out.stat().st_size:
        _own_rows(out)
        try:
            before = json.loads(kept.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            before = None
        if not isinstance(before, dict):
            raise TogError(f"{out} holds answers without a readable record of how they were made ({kept.name}); "
                           "--restart to start over, or another --out")
        before = _same_store(before, identity)
        if before != identity:
            raise TogError(f"{out} holds answers made otherwise ({identity_changes(before, identity)}); resume "
                           "with the same settings, or --restart to start over, or another --out")
    kept.write_text(json.dumps(identity, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _own_rows(out: Path) -> None:
    """TogError unless every whole line of ``out`` is an answer ``tog eval``
    wrote (a torn line is answered again)."""
    with out.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not (isinstance(row, dict) and "id" in row and "hit_lenient" in row):
                raise TogError(f"{out} line {n} is not an answer of tog eval: give another --out (or --restart to "
                               "replace the file)")


def _same_store(before: dict, now: dict) -> dict:
    """``before`` with its store spelled as in ``now`` when both name the same
    local folder (a relative path from here, or a path with ``..``)."""
    a, b = before.get("store"), now.get("store")
    if isinstance(a, str) and isinstance(b, str) and a != b and "://" not in a + b \
            and Path(a).expanduser().resolve() == Path(b).expanduser().resolve():
        return {**before, "store": b}
    return before


def file_fingerprint(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def write_report(store: Store, report: Path, out: Path, summary: dict, ids: set[str]) -> int:
    """An HTML report of the results in ``out`` (the questions ``ids``) and
    one picture per recorded run in ``REPORT_runs/``; how many pictures."""
    from engine import pictures
    from engine.errors import UnknownRunError
    from engine.feedback import corrected_paths
    from engine.runs import name_relations

    rows = [r for r in (json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip())
            if r.get("id") in ids]
    folder = report.with_name(report.stem + "_runs")
    links = {}
    for r in rows:
        run_id = r.get("run")
        if not run_id or store.runs is None:
            continue
        try:
            tree = store.runs.get(run_id)
        except UnknownRunError:
            continue  # pruned since
        folder.mkdir(parents=True, exist_ok=True)
        tree = name_relations(store.kg, tree)
        page = pictures.html_page(tree, corrected_paths(store, tree), gold=list(r.get("answers", [])),
                                  hit=bool(r.get("hit_lenient")))
        (folder / f"{run_id}.html").write_text(page, encoding="utf-8")
        links[run_id] = f"{folder.name}/{run_id}.html"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(pictures.report_page(f"tog eval {out.name}", summary, rows, links), encoding="utf-8")
    return len(links)


def _line_id(stem: str, n: int, question: str) -> str:
    """An id for a question without one: file stem, line and a hash of the
    text, so two files named alike (1-hop/qa_dev.txt, 2-hop/qa_dev.txt)
    never share ids in one results file."""
    digest = hashlib.sha1(question.encode("utf-8")).hexdigest()[:6]
    return f"{stem}-{n}-{digest}"


def _loose(text: str) -> str:
    return name_key(text).replace(" ", "")


def lenient_match(prediction: str, answers: list[str]) -> bool:
    """ToG's match: equal after normalising, or one contains the other."""
    p = _loose(prediction)
    if not p:
        return False
    for a in answers:
        g = _loose(a)
        if g and (p == g or p in g or g in p):
            return True
    return False


def strict_match(prediction: str, answers: list[str]) -> bool:
    """Equal after case folding, accent and punctuation normalisation."""
    p = name_key(prediction)
    return bool(p) and any(p == name_key(a) for a in answers)


def set_f1(predictions: list[str], answers: list[str]) -> float:
    pred = {name_key(p) for p in predictions if name_key(p)}
    gold = {name_key(a) for a in answers if name_key(a)}
    if not pred or not gold:
        return 0.0
    tp = len(pred & gold)
    if not tp:
        return 0.0
    precision, recall = tp / len(pred), tp / len(gold)
    return 2 * precision * recall / (precision + recall)


def drop_torn_tail(out: Path) -> None:
    """Cut a last line that a kill left without its newline; that question
    is simply answered (or searched) again."""
    if not out.exists() or out.stat().st_size == 0:
        return
    with out.open("rb+") as fh:
        fh.seek(-1, 2)
        if fh.read(1) == b"\n":
            return
        fh.seek(0)
        data = fh.read()
        fh.truncate(data.rfind(b"\n") + 1)


def done_ids(out: Path) -> set[str]:
    """Ids already in a results file (a torn last line is ignored)."""
    ids = set()
    if out.exists():
        for line in out.read_text(encoding="utf-8").splitlines():
            try:
                ids.add(json.loads(line)["id"])
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
    return ids


def evaluate(
    questions: list[Question],
    answer_one: Callable[[Question], dict],
    out: Path,
    progress: bool = False,
    concurrency: int = 1,
    settings: dict | None = None,
) -> dict:
    """Answer every question not yet in ``out``, appending one line each as
    it finishes (``concurrency`` questions at a time); return the summary
    over the whole file, also written to ``summary_path(out)``. A killed
    evaluation resumes where it stopped."""
    if out.is_dir():
        raise TogError(f"--out {out} is a directory; give a file name")
    out.parent.mkdir(parents=True, exist_ok=True)
    drop_torn_tail(out)
    seen = done_ids(out)
    todo = [q for q in questions if q.id not in seen]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(questions), initial=len(questions) - len(todo), unit="q", dynamic_ncols=True)
    hits = done = 0
    with out.open("a", encoding="utf-8") as fh:
        for record in _answers(todo, answer_one, concurrency):
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            fh.flush()
            hits += record["hit_lenient"]
            done += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(f"hits@1 {hits / done:.3f}", refresh=False)
    if bar is not None:
        bar.close()
    summary = summarise(out, {q.id for q in questions})
    if settings is not None:
        summary["settings"] = settings
    summary_path(out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def _answers(todo: list[Question], answer_one: Callable[[Question], dict], concurrency: int) -> Iterator[dict]:
    """Scored result records, in the order they finish."""
    if concurrency <= 1:
        for q in todo:
            yield _scored(q, answer_one)
        return
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    pending = iter(todo)
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="tog-eval") as pool:
        running = set()
        try:
            for q in pending:  # at most `concurrency` submitted: a kill loses only those in flight
                running.add(pool.submit(_scored, q, answer_one))
                if len(running) >= concurrency:
                    break
            while running:
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for f in finished:
                    yield f.result()
                    nxt = next(pending, None)
                    if nxt is not None:
                        running.add(pool.submit(_scored, nxt, answer_one))
        except BaseException:
            for f in running:
                f.cancel()
            raise


def _scored(q: Question, answer_one: Callable[[Question], dict]) -> dict:
    started = time.perf_counter()
    record: dict[str, object] = {"id": q.id, "question": q.question, "answers": q.answers, "type": q.type}
    try:
        got = answer_one(q)
    except (LLMError, StoreError):
        raise  # the model or the store is unusable: stop here; a re-run resumes with this question
    except TogError as e:
        got = {"prediction": [], "error": str(e), **e.llm_usage}
    preds = got.get("prediction", [])
    record.update(got)
    record["hit_lenient"] = bool(preds) and lenient_match(preds[0], q.answers)
    record["hit_strict"] = bool(preds) and strict_match(preds[0], q.answers)
    record["f1"] = round(set_f1(preds, q.answers), 6)
    record.setdefault("seconds", round(time.perf_counter() - started, 6))
    return record


def summarise(out: Path, ids: set[str] | None = None) -> dict:
    """Totals over the results file (only ``ids`` when given)."""
    rows = []
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if ids is None or r.get("id") in ids:
            rows.append(r)
    n = len(rows)

    def block(rs: list[dict]) -> dict:
        k = len(rs) or 1
        return {
            "questions": len(rs),
            "hits@1": round(sum(r["hit_lenient"] for r in rs) / k, 4),
            "hits@1_strict": round(sum(r["hit_strict"] for r in rs) / k, 4),
            "f1": round(sum(r["f1"] for r in rs) / k, 4),
        }

    summary = block(rows)
    summary["errors"] = sum(1 for r in rows if r.get("error"))
    summary["kg_ms_per_question"] = round(1000 * sum(r.get("kg_seconds", 0.0) for r in rows) / (n or 1), 3)
    summary["kg_lookups_per_question"] = round(sum(r.get("kg_lookups", 0) for r in rows) / (n or 1), 3)
    summary["ms_per_question"] = round(1000 * sum(r.get("seconds", 0.0) for r in rows) / (n or 1), 3)
    if any("llm_calls" in r for r in rows):
        costs = [r.get("cost") for r in rows if "llm_calls" in r]
        summary["llm"] = {
            "calls": sum(r.get("llm_calls", 0) for r in rows),
            "calls_per_question": round(sum(r.get("llm_calls", 0) for r in rows) / (n or 1), 3),
            "calls_max": max((r.get("llm_calls", 0) for r in rows), default=0),
            "cache_hits": sum(r.get("llm_cache_hits", 0) for r in rows),
            "tokens_in": sum(r.get("tokens_in", 0) for r in rows),
            "tokens_out": sum(r.get("tokens_out", 0) for r in rows),
            "cost": None if any(c is None for c in costs) else round(sum(costs), 8),
            "retries": sum(r.get("llm_retries", 0) for r in rows),
            "repairs": sum(r.get("llm_repairs", 0) for r in rows),
            "fallbacks": sum(r.get("llm_fallbacks", 0) for r in rows),
            "questions_with_fallbacks": sum(1 for r in rows if r.get("llm_fallbacks")),
            "splits": sum(r.get("llm_splits", 0) for r in rows),
        }
    by_type: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("type"):
            by_type[str(r["type"])].append(r)
    if by_type:
        summary["by_type"] = {t: block(rs) for t, rs in sorted(by_type.items())}
    return summary


def read_results(out: Path) -> dict[str, dict]:
    """A results file's rows by question id (a torn or foreign line is skipped)."""
    if not out.is_file():
        raise TogError(f"no such results file: {out}")
    rows: dict[str, dict] = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(r, dict) and "id" in r and "hit_lenient" in r:
            rows[str(r["id"])] = r
    return rows


def compare(a: Path, b: Path) -> dict:
    """Two evaluations over the questions both answered: Hits@1 of each,
    overall and per type, and the questions that one got right and the
    other not."""
    ra, rb = read_results(a), read_results(b)
    common = [i for i in ra if i in rb]
    if not common:
        raise TogError(f"{a} and {b} share no question ids: nothing to compare")

    def hits(rows: dict[str, dict], ids: list[str]) -> float:
        return round(sum(bool(rows[i]["hit_lenient"]) for i in ids) / len(ids), 4) if ids else 0.0

    types: dict[str, list[str]] = defaultdict(list)
    for i in common:
        types[str(ra[i].get("type") or rb[i].get("type") or "")].append(i)
    gained = [i for i in common if rb[i]["hit_lenient"] and not ra[i]["hit_lenient"]]
    lost = [i for i in common if ra[i]["hit_lenient"] and not rb[i]["hit_lenient"]]
    return {
        "questions": len(common), "only_a": len(ra) - len(common), "only_b": len(rb) - len(common),
        "hits@1": {"a": hits(ra, common), "b": hits(rb, common)},
        "by_type": {t: {"questions": len(ids), "a": hits(ra, ids), "b": hits(rb, ids)}
                    for t, ids in sorted(types.items()) if t},
        "gained": [{"id": i, "question": rb[i].get("question", ""), "a": ra[i].get("prediction", [])[:3],
                    "b": rb[i].get("prediction", [])[:3], "answers": rb[i].get("answers", [])[:3]} for i in gained],
        "lost": [{"id": i, "question": ra[i].get("question", ""), "a": ra[i].get("prediction", [])[:3],
                  "b": rb[i].get("prediction", [])[:3], "answers": ra[i].get("answers", [])[:3]} for i in lost],
    }
