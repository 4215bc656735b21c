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
import random
import sys
import time
from pathlib import Path

from qa import add_search_options, answerer, run_set

HERE = Path(__file__).resolve().parent
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
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tog-bench-metaqa"))
    ap.add_argument("--hops", default="1,2,3", help="Which hop sets, comma-separated.")
    add_search_options(ap)
    args = ap.parse_args()
    if not (args.data / "kb.txt.gz").exists():
        sys.exit(f"MetaQA data not found at {args.data}; pass --data DIR")

    from engine.evaluate import Question
    from engine.store import open_store
    from loaders.load import load_file

    args.workdir.mkdir(parents=True, exist_ok=True)
    kg = open_store(args.workdir / "store", create=True)
    started = time.perf_counter()
    report = load_file(kg.need_sink(), args.data / "kb.txt.gz", fmt="delimited")
    print(f"KB: {report.triples:,} triples ({'already loaded' if report.already_complete else f'{time.perf_counter() - started:.1f} s'})")
    answer_one = answerer(kg, args)
    print(f"{args.per_hop} dev questions per hop")
    for hop in (int(h) for h in args.hops.split(",")):
        qs = [Question(d["id"], d["question"], d["answers"], [], d["type"])
              for d in sample(args.data, hop, args.per_hop, args.seed)]
        run_set(f"{hop}-hop", qs, answer_one, args.workdir / f"results-{args.method}-{hop}hop.jsonl")
    kg.close()


if __name__ == "__main__":
    main()
