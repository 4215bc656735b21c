"""PathQuestion accuracy without an LLM: Hits@1, F1, ms and KG lookups per question.

PQ-2H questions run on ``2H-kb.txt``, PQ-3H on ``3H-kb.txt`` (each loaded once
into its own store under ``--workdir``).  The topic entity is the first
entity of the question's gold path, as KGQA benchmarks give it; the answer
is never looked at.  Data: ``../shared/data/pathquestion`` by default
(Zhou et al., COLING 2018; evaluation use only, see its README).

    python benchmarks/pathquestion.py            # all 1,908 + 5,198 questions
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from qa import add_search_options, answerer, run_set

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "pathquestion"


def answers_of(field: str) -> list[str]:
    """``name(a/b/)`` -> [a, b], splitting at the '(' whose list holds the name
    before it (names may contain parentheses)."""
    at = field.find("(")
    while at >= 0:
        inside = [a for a in field[at + 1:].rstrip(")").split("/") if a]
        if field[:at] in inside:
            return inside
        at = field.find("(", at + 1)
    return [field]


def read(path: Path, name: str, limit: int | None):
    from engine.evaluate import Question

    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        question, answer, gold_path = line.split("\t")[:3]
        topic = gold_path.split("#", 1)[0]
        out.append(Question(f"{name}-{n}", question, answers_of(answer), [topic], name))
    return out[:limit] if limit else out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--limit", type=int, default=None, help="First N questions of each set (default: all).")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tog-bench-pq"))
    add_search_options(ap)
    args = ap.parse_args()
    if not (args.data / "PQ-2H.txt").exists():
        sys.exit(f"PathQuestion data not found at {args.data}; pass --data DIR")

    from engine.store import open_store
    from loaders.load import load_file

    for hops in ("2H", "3H"):
        kg = open_store(args.workdir / f"store-{hops}", create=True)
        report = load_file(kg.need_sink(), args.data / f"{hops}-kb.txt", fmt="tsv")
        print(f"{hops} KB: {report.triples:,} triples")
        qs = read(args.data / f"PQ-{hops}.txt", f"PQ-{hops}", args.limit)
        run_set(f"PQ-{hops}", qs, answerer(kg, args), args.workdir / f"results-{args.method}-{hops}.jsonl")
        kg.close()


if __name__ == "__main__":
    main()
