"""Shared by the QA benchmarks: common options, answering with `tog eval`'s
machinery, and the per-set figures line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def add_search_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--method", choices=["tog", "tog-r", "plan"], default="tog")
    ap.add_argument("--lookahead", type=int, default=3, help="--method plan: simulated steps per real step.")
    ap.add_argument("--proposals", type=int, default=5, help="--method plan: actions proposed per level.")
    ap.add_argument("--pruner", choices=["hybrid", "bm25", "random"], default="hybrid")
    ap.add_argument("--width", type=int, default=3)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--threshold", type=float, default=0.9)
    ap.add_argument("--record", action="store_true", help="Keep every run in the store (slower).")
    ap.add_argument("--soft-match", action="store_true",
                    help="Match question words to relation words by wordllama similarity too.")
    ap.add_argument("--descriptions", type=Path, default=None,
                    help="Relation description file (TOML, see engine/descriptions.py).")


def answerer(kg, args):
    """``answer_one(question)`` for ``engine.evaluate.evaluate``, with the settings line."""
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig

    config = SearchConfig(width=args.width, depth=args.depth, method=args.method, seed=args.seed,
                          threshold=args.threshold, lookahead=args.lookahead, proposals=args.proposals)
    descriptions = None
    if args.descriptions:
        from engine.descriptions import Descriptions

        descriptions = Descriptions.load(args.descriptions)
    pruner = get_pruner(args.pruner, seed=args.seed, descriptions=descriptions, soft_match=args.soft_match)
    reasoner = get_reasoner("offline", descriptions=descriptions, soft_match=args.soft_match)

    def answer_one(q):
        r = ask(kg, q.question, pruner, reasoner, config, q.topics, record=args.record, descriptions=descriptions)
        s = r.result.stats
        return {"prediction": r.result.answer.names, "depth": s["depth"], "kg_lookups": s["kg_lookups"],
                "kg_seconds": s["kg_seconds"], "seconds": s["seconds"]}

    plan = f", lookahead {args.lookahead}, proposals {args.proposals}" if args.method == "plan" else ""
    print(f"method {args.method}{plan}, pruner {args.pruner}, width {args.width}, depth {args.depth}, "
          f"threshold {args.threshold}, seed {args.seed}" + (", soft match" if args.soft_match else "")
          + (f", {descriptions.summary()} from {args.descriptions}" if descriptions else ""))
    return answer_one


def run_set(name: str, questions, answer_one, out: Path) -> dict:
    """Answer ``questions`` (fresh results in ``out``) and print the figures."""
    from engine.evaluate import evaluate

    out.unlink(missing_ok=True)
    s = evaluate(questions, answer_one, out)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    depths = [r.get("depth", 0) for r in rows]
    share = {d: round(depths.count(d) / len(depths), 3) for d in sorted(set(depths))}
    ms = sorted(1000 * r["seconds"] for r in rows)
    median = ms[len(ms) // 2] if ms else 0.0
    print(f"{name}: {s['questions']} questions, hits@1 {s['hits@1']:.3f} (strict {s['hits@1_strict']:.3f}), "
          f"F1 {s['f1']:.3f}, {s['ms_per_question']:.1f} ms/question (median {median:.1f}), "
          f"KG {s['kg_ms_per_question']:.2f} ms and {s['kg_lookups_per_question']:.1f} lookups/question, "
          f"errors {s['errors']}, depth share {share}", flush=True)
    return s
