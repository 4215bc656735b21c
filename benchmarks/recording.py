"""What recording runs costs on the embedded store: the same questions
asked with the run recorded (every scored candidate a path node, as
``tog ask`` and ``tog eval`` do by default) and with ``--no-record``, in one
process, alternating rounds.

The graph is ``synth.py``'s seeded Freebase-style graph (``--size`` triples,
loaded once under ``--workdir`` by ``kg_scale.build``); the questions are
``kg_scale``'s seeded walks, half from the biggest hubs, half from ordinary
entities (each candidate a search scores is a path node of its run). After a
pass that is not counted (what a question's first asking samples and caches),
each round asks every question once unrecorded and once recorded (offline
backbone, N = D = 3) and prints wall and CPU seconds of both; a recorded pass
ends with a flush, as a store's close does (RocksDB compacts what it wrote in
the background, during the next pass, whichever engine wrote it). The end
prints the medians, their ratio (recorded / not) and what a recorded question
adds to the store's files. ``--engine DIR`` imports the engine from another
checkout, to put an older commit's figures beside these (the same store, the
same questions).
``--earlier-runs N`` measures on a copy of the store that already holds N
runs, as a store does after weeks of evals (``--keep-runs`` is 14 days).

    python benchmarks/recording.py --size 1000000 --questions 80 --rounds 3 --earlier-runs 2000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def size_of(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def with_runs(store: Path, copy: Path, questions: list[dict], n: int) -> Path:
    """A copy of ``store`` holding ``n`` recorded runs (made once)."""
    import shutil

    from engine.config import Settings
    from engine.store import open_store

    if (copy / "runs-made").exists():
        return copy
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(store, copy)
    print(f"recording {n:,} runs into {copy} once ...", flush=True)
    with open_store(copy) as s, Settings().open() as engine:
        for i in range(n):
            q = questions[i % len(questions)]
            engine.ask(s, q["question"], q["topics"])
    (copy / "runs-made").write_text(f"{n}\n", encoding="utf-8")
    return copy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="Triples of the synthetic graph.")
    ap.add_argument("--questions", type=int, default=80)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "tog-bench-scale")
    ap.add_argument("--engine", type=Path, help="A checkout to import the engine from (default: this one).")
    ap.add_argument("--earlier-runs", type=int, default=0, metavar="N",
                    help="Measure on a copy of the store that holds N runs already (what weeks of evals keep; "
                         "made once under --workdir and reused, with the questions asked in turn).")
    args = ap.parse_args()
    sys.path[:0] = [str(args.engine or HERE.parent), str(HERE)]
    from kg_scale import build, synth_questions

    from engine.config import Settings
    from engine.store import open_store

    args.workdir.mkdir(parents=True, exist_ok=True)
    store = build("synth", args.size, args.workdir)
    qfile = args.workdir / f"recording-{args.size}-{args.questions}-{args.seed}.json"
    if not qfile.exists():
        qfile.write_text(json.dumps(synth_questions(store, args.questions, args.seed)), encoding="utf-8")
    questions = json.loads(qfile.read_text(encoding="utf-8"))
    if args.earlier_runs:
        store = with_runs(store, args.workdir / f"store-synth-{args.size}-runs-{args.earlier_runs}", questions,
                          args.earlier_runs)
    print(f"{len(questions)} questions on the {args.size:,}-triple graph ({store.name}), engine from "
          f"{(args.engine or HERE.parent).resolve()}", flush=True)
    figures: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    grown: list[float] = []
    made: list[str | None] = []
    scored: list[int] = []
    s = open_store(store)
    try:
        warm = Settings(record=False).open()
        for q in questions:  # a pass not counted: what the first asking of a question samples and caches
            warm.ask(s, q["question"], q["topics"])
        for rnd in range(1, args.rounds + 1):
            for record in (False, True):
                engine = Settings(record=record).open()
                before = size_of(store / "kg") if record else 0
                wall, cpu = time.perf_counter(), time.process_time()
                for q in questions:
                    asked = engine.ask(s, q["question"], q["topics"])
                    made.append(asked.run_id)
                    scored.append(asked.result.stats.get("paths_scored", 0))
                if record:  # a flush, as the store's close does (a run's end flushes at most every 5 s)
                    s.runs.db.flush()
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                figures[record].append((wall, cpu))
                if record:
                    grown.append((size_of(store / "kg") - before) / len(questions))
                print(f"round {rnd}, {'recorded' if record else '--no-record'}: {wall:.2f} s wall, "
                      f"{cpu:.2f} s CPU (the store's own threads included)", flush=True)
    finally:
        s.runs.delete([r for r in made if r])  # (the store stays as the other benchmarks expect it)
        s.close()

    def median(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 2]

    rec, plain = (median([w for w, _ in figures[k]]) for k in (True, False))
    rec_cpu, plain_cpu = (median([c for _, c in figures[k]]) for k in (True, False))
    print(f"median wall: recorded {rec:.2f} s, --no-record {plain:.2f} s, ratio {rec / plain:.2f}; "
          f"CPU {rec_cpu:.2f} s against {plain_cpu:.2f} s, ratio {rec_cpu / plain_cpu:.2f}")
    print(f"the store's files grew {median(grown) / 2**20:.2f} MiB a recorded question (median of the rounds; "
          f"`tog runs prune` removes runs); {sum(scored) / max(len(scored), 1):.0f} paths scored a question, "
          f"{max(scored, default=0):,} at most")


if __name__ == "__main__":
    main()
