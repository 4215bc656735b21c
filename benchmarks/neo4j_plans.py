"""A long run on Neo4j: KG time per question and the statement texts the
server had to plan.

Neo4j plans each new statement text once (10-40 ms) and keeps the plan
while it runs. The engine's texts are few, except that a statement
following a relationship type names it (so that Neo4j reads only that
type's edges of a dense node): on a KG with hundreds of types a long run
keeps meeting texts the server has not planned yet. ``kg_scale.py``'s 20
questions do not show it; this asks a few hundred.

The questions are ``kg_scale.py``'s (seeded walks from topics half among
the biggest hubs, half among ordinary entities), generated from the
embedded store ``kg_scale.py --sizes SIZE`` built, and asked of the Neo4j
database that holds the same graph (``kg_scale.py --neo4j URI`` loads it):
offline backbone, N = D = 3, one client process, twice: the first pass
as the server's plan cache stands (restart the server before it for the
figure after a restart), the second with every text planned. Printed per
window of questions: KG ms mean, median and max, the distinct statement
texts the pass has sent so far, and the plans they make: Neo4j keys a
cached plan by the text and each parameter's type, a string's length and
a list's size bucketed (0, 1, up to 10, up to 100, ...), so one text may
be planned more than once. In the first pass after a restart these are
the plans the server had to make; its cache holds 1,000 a database
unless ``server.memory.query_cache.per_db_cache_num_entries`` says otherwise.

    .venv/bin/python benchmarks/neo4j_plans.py --neo4j bolt://127.0.0.1:7688 --questions 300

NEO4J_USER and NEO4J_PASSWORD come from the environment.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def size_bucket(n: int) -> int:
    """Neo4j 5's bucket for a string's length or a list's size (its
    ``SizeBucket``): 0 and 1 exactly, else the next power of ten."""
    return n if n < 2 else 10 ** math.ceil(math.log10(n))


def plan_key(text: str, params: dict) -> tuple:
    """What Neo4j keys a cached plan by: the text and each parameter's
    type, a string's or a list's size bucket included."""
    def kind(v):
        if isinstance(v, str):
            return ("str", size_bucket(len(v)))
        if isinstance(v, (list, tuple)):
            return ("list", size_bucket(len(v)))
        return (type(v).__name__,)
    return (text, tuple(sorted((k, kind(v)) for k, v in params.items() if k not in ("write", "meter"))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--neo4j", required=True, metavar="URI", help="The database that holds the graph.")
    ap.add_argument("--size", type=int, default=10_000_000, help="The synthetic graph (kg_scale.py --sizes).")
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--window", type=int, default=50, help="Questions per printed line.")
    ap.add_argument("--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "tog-bench-scale")
    args = ap.parse_args()

    import kg_scale

    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig
    from engine.store import open_store

    store = args.workdir / f"store-synth-{args.size}"
    if not store.exists():
        sys.exit(f"no {store}: build it first (benchmarks/kg_scale.py --sizes {args.size} --neo4j {args.neo4j})")
    qfile = args.workdir / f"questions-synth-{args.size}-{args.seed}-{args.questions}.json"
    if not qfile.exists():
        qfile.write_text(json.dumps(kg_scale.synth_questions(store, args.questions, args.seed)), encoding="utf-8")
    questions = json.loads(qfile.read_text(encoding="utf-8"))

    s = open_store(args.neo4j)
    kg = s.kg
    session = kg.session  # type: ignore[attr-defined]  # a Neo4j store's
    if not kg.stats().get("edges"):
        sys.exit(f"{args.neo4j} holds no KG: load it first (benchmarks/kg_scale.py --sizes {args.size} "
                 f"--no-metaqa --neo4j {args.neo4j})")
    texts: set[str] = set()
    plans: set[tuple] = set()
    plain = session.run_text

    def counted(text: str, *a, **kw):
        texts.add(text)
        plans.add(plan_key(text, kw))
        return plain(text, *a, **kw)

    session.run_text = counted
    pruner, reasoner = get_pruner("hybrid"), get_reasoner("offline")
    answers: dict[str, list] = {}
    for pass_ in ("first", "again"):
        texts.clear()
        plans.clear()
        every: list[float] = []
        started = time.perf_counter()
        print(f"-- {pass_} pass ({'as the server plan cache stands' if pass_ == 'first' else 'every text planned'})")
        for i, item in enumerate(questions, 1):
            s0 = kg.meter.seconds
            r = ask(s, item["question"], pruner, reasoner, SearchConfig(), item["topics"], record=False)
            every.append(1000 * (kg.meter.seconds - s0))
            answers.setdefault(pass_, []).append(sorted(r.result.answer.ids))
            if i % args.window == 0 or i == len(questions):
                part = every[-((i - 1) % args.window + 1):]
                print(f"questions {i - len(part) + 1:4d}-{i:<4d} KG ms mean {statistics.mean(part):7.1f}  median "
                      f"{statistics.median(part):7.1f}  max {max(part):7.0f}   texts sent so far {len(texts):5d}, "
                      f"plans {len(plans):5d}",
                      flush=True)
        print(f"all {len(every)}: KG ms mean {statistics.mean(every):.1f}, median {statistics.median(every):.1f}, "
              f"max {max(every):.0f}; {len(texts)} statement texts, {len(plans)} plans; "
              f"{time.perf_counter() - started:.0f} s in all")
    same = sum(a == b for a, b in zip(answers["first"], answers["again"]))
    print(f"same answers in both passes: {same}/{len(questions)}")


if __name__ == "__main__":
    main()
