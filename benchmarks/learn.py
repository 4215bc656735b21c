"""Learning from question–answer pairs (``tog learn``), measured on data it did not learn from.

MetaQA: each hop's dev set is split in halves (seeded); the engine learns on
the first halves of all three hops together (one log of questions, as a
user would have) and answers ``--per-hop`` questions of each second half,
once with the learned file and once zero-shot.  PathQuestion: PQ-2H and
PQ-3H are each split 80/20 (seeded) and learned on their own KGs, without
the hand-written description file.  Prints Hits@1 side by side, the
learning time and the peak RSS.  ``--sets synth`` measures what learning
costs on the synthetic graphs of ``kg_scale.py`` (power-law hubs): seeded
walks of 2-3 hops from topics half among the biggest hubs, each answered
by the neighbours its last hop reached (up to 20), learned from in one
run; prints the time a question, the time in the KG's two reads, the
chains found and the peak RSS; ``--neo4j`` learns the same on Neo4j and
says whether the learned file is the same.  ``--sets journal`` measures
what keeping the search as it goes (``tog learn --out``'s OUT.partial)
costs, on MetaQA 2-hop questions.

    python benchmarks/learn.py --per-hop 1000
    python benchmarks/learn.py --sets synth --sizes 1000000 10000000
    python benchmarks/learn.py --sets synth --sizes 10000000 --neo4j bolt://127.0.0.1:7687
    python benchmarks/learn.py --sets journal --journal-questions 5000
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import sys
import time
from pathlib import Path

from qa import add_search_options, answerer, run_set

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"


def metaqa_store(args):
    """The MetaQA KB's store in the workdir (loaded, or its load resumed), or
    None when the data is not there (said)."""
    from engine.store import open_store
    from loaders.load import load_file

    data = args.data / "metaqa"
    if not (data / "kb.txt.gz").exists():
        print(f"MetaQA data not found at {data}; skipped")
        return None
    store = open_store(args.workdir / "metaqa-store", create=True)
    load_file(store.need_sink(), data / "kb.txt.gz", fmt="delimited")
    return store


def metaqa(args) -> None:
    from engine.evaluate import Question
    from engine.learning import learn, split

    store = metaqa_store(args)
    if store is None:
        return
    data = args.data / "metaqa"
    train, test = [], {}
    for hop in (1, 2, 3):
        with gzip.open(data / f"{hop}-hop" / "qa_dev.txt.gz", "rt", encoding="utf-8") as fh:
            lines = [line.split("\t") for line in fh.read().splitlines() if line.strip()]
        qs = [Question(f"{hop}hop-{i + 1}", q, a.split("|"), [], f"{hop}-hop") for i, (q, a, *_) in enumerate(lines)]
        learn_part, rest = split(qs, 0.5, args.seed + hop)
        if args.learn_per_hop and args.learn_per_hop < len(learn_part):  # a seeded sample (the files are sorted by type)
            learn_part = split(learn_part, args.learn_per_hop / len(learn_part), args.seed)[0]
        train += learn_part
        test[hop] = split(rest, min(1.0, args.per_hop / len(rest)), args.seed)[0] if args.per_hop else rest
    out = args.workdir / "metaqa-learned.toml"
    started = time.perf_counter()
    report = learn(store.kg, train, out, depth=args.depth, source="MetaQA dev, first halves", progress=True)
    print(f"MetaQA: learned from {report.questions:,} questions ({report.used:,} with a chain, mean F1 "
          f"{report.f1}) in {time.perf_counter() - started:.1f} s: {report.chains} chains; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB", flush=True)
    for label, descriptions in (("learned", out), ("zero-shot", None)):
        args.descriptions = descriptions
        answer_one = answerer(store, args)
        for hop in (1, 2, 3):
            run_set(f"MetaQA {hop}-hop {label}", test[hop], answer_one, args.workdir / f"metaqa-{label}-{hop}.jsonl")
    store.close()


def pathquestion(args) -> None:
    from pathquestion import read

    from engine.learning import learn, split
    from engine.store import open_store
    from loaders.load import load_file

    data = args.data / "pathquestion"
    if not (data / "PQ-2H.txt").exists():
        print(f"PathQuestion data not found at {data}; skipped")
        return
    for name, kb in (("PQ-2H", "2H-kb.txt"), ("PQ-3H", "3H-kb.txt")):
        store = open_store(args.workdir / f"{name}-store", create=True)
        load_file(store.need_sink(), data / kb, fmt="delimited", delimiter="\t")
        train, test = split(read(data / f"{name}.txt", name, None), 0.8, args.seed)
        out = args.workdir / f"{name}-learned.toml"
        started = time.perf_counter()
        report = learn(store.kg, train, out, depth=args.depth, source=f"{name}, 80%", progress=False)
        print(f"{name}: learned from {report.questions:,} questions ({report.used:,} with a chain) in "
              f"{time.perf_counter() - started:.1f} s: {report.chains} chains", flush=True)
        for label, descriptions in (("learned", out), ("zero-shot", None)):
            args.descriptions = descriptions
            run_set(f"{name} {label}", test, answerer(store, args), args.workdir / f"{name}-{label}.jsonl")
        store.close()


def journal(args) -> None:
    """What keeping the search in a journal (``tog learn --out``'s OUT.partial)
    costs: the first ``--journal-questions`` MetaQA 2-hop dev questions
    searched without it and with it, alternating, then read back from it."""
    import tempfile

    from engine.evaluate import read_questions
    from engine.learning import Journal, examples_from

    store = metaqa_store(args)
    if store is None:
        return
    qs = list(read_questions(args.data / "metaqa" / "2-hop" / "qa_dev.txt.gz"))[:args.journal_questions]
    path = Path(tempfile.mkdtemp()) / "learned.toml.partial"
    for _ in range(max(1, args.rounds)):
        for side in ("without", "with"):
            path.unlink(missing_ok=True)
            kept = Journal(path, {"depth": args.depth}) if side == "with" else None
            started = time.perf_counter()
            examples = examples_from(store.kg, qs, args.depth, journal=kept)
            took = time.perf_counter() - started
            if kept is not None:
                kept.close()
            print(f"{len(qs):,} questions searched {side} a journal in {took:.2f} s ({len(examples):,} examples"
                  + (f"; {path.stat().st_size / 1e6:.1f} MB kept)" if kept is not None else ")"), flush=True)
    started = time.perf_counter()
    kept = Journal(path, {"depth": args.depth})
    again = examples_from(store.kg, qs, args.depth, journal=kept)
    kept.close(done=True)
    same = [e.labels for e in again] == [e.labels for e in examples] and len(again) == len(examples)
    print(f"read back from it in {time.perf_counter() - started:.2f} s, the same examples: {same}")
    store.close()


def synth_walks(kg, n: int, seed: int) -> list:
    """``n`` walk questions with their answers (see the module's text)."""
    import random

    from kg_scale import walk, walk_question

    from engine.evaluate import Question

    rng = random.Random(seed)
    total = kg.stats()["names"]
    out: list[Question] = []
    tries = 0
    while len(out) < n and tries < 50 * n:  # (a graph whose walks keep dying out gives fewer)
        tries += 1
        topic, words, found = walk(kg, rng, len(out) % 2 == 0, (2, 3), total)
        if len(words) >= 2 and found:
            out.append(Question(f"walk-{len(out) + 1}", walk_question(kg, topic, words),
                                sorted({c.node.name for c in found}), [f"<{topic}>"]))
    return out


def _learned(label: str, kg, questions: list, args) -> str:
    """Learn from ``questions`` on ``kg``, print what it cost, return the learned text."""
    from engine import learning

    spent = {"relations": 0.0, "expand": 0.0}
    plain = {name: getattr(kg, name) for name in spent}

    def timed(name):
        def read(*a, **k):
            started = time.perf_counter()
            try:
                return plain[name](*a, **k)
            finally:
                spent[name] += time.perf_counter() - started
        return read

    for name in spent:
        setattr(kg, name, timed(name))
    started = time.perf_counter()
    try:
        report = learning.learn(kg, questions, None, depth=args.depth, source="synthetic walks")
    finally:
        for name in spent:
            delattr(kg, name)  # back to the class's methods
    seconds = time.perf_counter() - started
    print(f"{label}: learned from {report.questions} walk questions in {seconds:.1f} s "
          f"({seconds / max(report.questions, 1):.2f} s a question; listing relations {spent['relations']:.1f} s, "
          f"expanding {spent['expand']:.1f} s), {report.used} with a chain, mean F1 {report.f1}, "
          f"{report.chains} chains; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB",
          flush=True)
    return report.text


def synth(args) -> None:
    """What ``tog learn`` costs on a graph with hubs (see the module's text);
    with ``--neo4j``, on that database too, and whether it learns the same."""
    from kg_scale import NEO4J_CLEAR, build, neo4j_build

    from engine.backends.common import SORT_MAX
    from engine.store import open_store

    if args.neo4j and len(args.sizes) != 1:
        sys.exit("--neo4j takes one graph: give one size")
    for size in args.sizes:
        path = build(f"synth-{size}", size, args.scale_workdir)
        with open_store(path) as s:
            questions = synth_walks(s.kg, args.walks, args.seed)
            s.kg.summaries.clear(keep_big=True)  # the walks sampled some pairs: learning starts with what a load left
            text = _learned(f"synth-{size}", s.kg, questions, args)
        if args.neo4j:
            neo4j_build(args.neo4j, args.scale_workdir / f"synth-{size}.nt")
            with open_store(args.neo4j) as s:
                s.kg.session.run_text(NEO4J_CLEAR, write=True, keep_over=SORT_MAX)  # what earlier runs sampled
                same = _learned(f"synth-{size} on Neo4j", s.kg, questions, args) == text
            print(f"synth-{size}: the learned file on Neo4j is {'the same' if same else 'NOT the same'} as on the "
                  "embedded store", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--per-hop", type=int, default=1000, help="MetaQA questions answered per hop (0: all).")
    ap.add_argument("--learn-per-hop", type=int, default=0, help="MetaQA questions learned from per hop (0: all).")
    ap.add_argument("--sets", nargs="+", choices=["metaqa", "pathquestion", "synth", "journal"],
                    default=["metaqa", "pathquestion"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000],
                    help="--sets synth: the synthetic graphs' sizes (their stores shared with kg_scale.py).")
    ap.add_argument("--walks", type=int, default=20, help="--sets synth: walk questions learned from per graph.")
    ap.add_argument("--journal-questions", type=int, default=5000,
                    help="--sets journal: MetaQA 2-hop questions searched with and without a journal.")
    ap.add_argument("--rounds", type=int, default=2, help="--sets journal: rounds, each without then with.")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tog-bench-learn"))
    ap.add_argument("--scale-workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "tog-bench-scale",
                    help="--sets synth: where kg_scale.py keeps the graphs and their stores.")
    ap.add_argument("--neo4j", metavar="URI",
                    help="--sets synth: learn on this Neo4j database as well (one graph; NEO4J_USER and "
                         "NEO4J_PASSWORD from the environment): an empty database, or one holding it.")
    add_search_options(ap)
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    if "metaqa" in args.sets:
        metaqa(args)
    if "pathquestion" in args.sets:
        pathquestion(args)
    if "synth" in args.sets:
        synth(args)
    if "journal" in args.sets:
        journal(args)


if __name__ == "__main__":
    sys.exit(main())
