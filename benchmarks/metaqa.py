"""MetaQA dev accuracy without an LLM: Hits@1 per hop, ms and KG lookups per question.

Loads the full MetaQA KB (``kb.txt.gz``) into a store under ``--workdir`` (once;
later runs find it loaded), draws a seeded sample of ``--per-hop`` dev
questions per hop, answers them with ``tog eval``'s machinery and prints the
figures per hop.  Data: ``../shared/data/metaqa`` by default (CC BY 3.0, see
its README); the script stops with a clear message when it is absent.

    python benchmarks/metaqa.py --per-hop 1000
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "metaqa"


def sample(data: Path, hop: int, k: int, seed: int) -> list[dict]:
    with gzip.open(data / f"{hop}-hop" / "qa_dev.txt.gz", "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    with gzip.open(data / f"{hop}-hop" / "qa_dev_qtype.txt.gz", "rt", encoding="utf-8") as fh:
        types = fh.read().splitlines()
    rng = random.Random(f"{seed}:{hop}")
    picked = sorted(rng.sample(range(len(lines)), min(k, len(lines))))
    out = []
    for i in picked:
        question, answers = lines[i].split("\t")[:2]
        out.append({"id": f"{hop}hop-{i + 1}", "question": question, "answers": answers.split("|"),
                    "type": f"{hop}-hop"})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--per-hop", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tog-bench-metaqa"))
    ap.add_argument("--method", choices=["tog", "tog-r"], default="tog")
    ap.add_argument("--pruner", choices=["hybrid", "bm25", "random"], default="hybrid")
    ap.add_argument("--width", type=int, default=3)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--threshold", type=float, default=0.9)
    ap.add_argument("--record", action="store_true", help="Keep every run in the store (slower).")
    args = ap.parse_args()
    if not (args.data / "kb.txt.gz").exists():
        sys.exit(f"MetaQA data not found at {args.data}; pass --data DIR")

    from engine.backends.oxigraph import OxigraphGraph
    from engine.evaluate import Question, evaluate
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig
    from loaders.load import load_file

    args.workdir.mkdir(parents=True, exist_ok=True)
    kg = OxigraphGraph(args.workdir / "store", create=True)
    started = time.perf_counter()
    report = load_file(kg, args.data / "kb.txt.gz", fmt="delimited")
    print(f"KB: {report.triples:,} triples ({'already loaded' if report.already_complete else f'{time.perf_counter() - started:.1f} s'})")
    config = SearchConfig(width=args.width, depth=args.depth, method=args.method, seed=args.seed,
                          threshold=args.threshold)
    pruner, reasoner = get_pruner(args.pruner, seed=args.seed), get_reasoner("offline")

    def answer_one(q):
        r = ask(kg, q.question, pruner, reasoner, config, q.topics, record=args.record)
        s = r.result.stats
        return {"prediction": r.result.answer.names, "depth": s["depth"], "kg_lookups": s["kg_lookups"],
                "kg_seconds": s["kg_seconds"], "seconds": s["seconds"]}

    print(f"method {args.method}, pruner {args.pruner}, width {args.width}, depth {args.depth}, "
          f"threshold {args.threshold}, seed {args.seed}, "
          f"{args.per_hop} dev questions per hop")
    for hop in (1, 2, 3):
        qs = [Question(d["id"], d["question"], d["answers"], [], d["type"])
              for d in sample(args.data, hop, args.per_hop, args.seed)]
        out = args.workdir / f"results-{args.method}-{hop}hop.jsonl"
        out.unlink(missing_ok=True)
        s = evaluate(qs, answer_one, out)
        depths = [json.loads(line).get("depth", 0) for line in out.read_text().splitlines()]
        share = {d: round(depths.count(d) / len(depths), 3) for d in sorted(set(depths))}
        print(f"{hop}-hop: hits@1 {s['hits@1']:.3f} (strict {s['hits@1_strict']:.3f}), F1 {s['f1']:.3f}, "
              f"{s['ms_per_question']:.1f} ms/question, KG {s['kg_ms_per_question']:.2f} ms and "
              f"{s['kg_lookups_per_question']:.1f} lookups/question, errors {s['errors']}, depth share {share}",
              flush=True)
    kg.close()


if __name__ == "__main__":
    main()
