"""Neo4j against the embedded store: load rate and KG time per question.

1. Loads the seeded synthetic Freebase-style file (``synth.py``) with the
   same loader into an emptied Neo4j database and into a fresh embedded
   store, printing triples/s for both (the embedded figure is the reference).
   Then the offline path for a new database: ``tog export-neo4j`` (CSV)
   plus ``launcher/neo4j-server import`` into a scratch server home,
   timed end to end (the running server is not touched).
2. Loads the MetaQA sample into both and asks its questions on each,
   printing KG milliseconds and KG lookups per question, and whether the
   answers agree.

``--resume FRACTION`` measures a killed load's re-run instead: the file
is loaded into the emptied database until its checkpoints pass FRACTION
of its lines, the load is stopped there (as a kill would), and the re-run
is timed, alternating with the same re-run made to merge every edge, as
before a re-run of a load that created the KG's edges created too (its
anchor: the mark that lets it create is cleared first).

Needs a running server (``launcher/neo4j-server start``) and NEO4J_URI /
NEO4J_USER / NEO4J_PASSWORD.  The Neo4j database is emptied first.

    python benchmarks/neo4j_load.py --size 1000000 --passes 5
    python benchmarks/neo4j_load.py --size 1000000 --passes 2 --resume 0.3

A server's first load after it started runs slower (its JIT compiler is
still at work); every pass is printed, and the median is the figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def clear(uri: str, user: str, password: str) -> None:
    """Empty the database, in transactions of 1,000 deletions: against a
    128 MB cap on one transaction (NEO4J_TX_MEMORY=128m), the first 5,000
    edges of the 10M-triple graph were refused at commit, and so were 5,000
    of its nodes."""
    import neo4j

    with neo4j.GraphDatabase.driver(uri, auth=(user, password)) as driver, driver.session() as s:
        s.run("MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 1000 ROWS").consume()
        s.run("MATCH (n) CALL (n) { DELETE n } IN TRANSACTIONS OF 1000 ROWS").consume()


def load_rate(spec: str, file: Path) -> tuple[float, int, dict]:
    """(triples/s, triples, the store's counts afterwards) of one load."""
    from engine.store import open_store
    from loaders.load import load_file

    with open_store(spec, create=True) as kg:
        started = time.perf_counter()
        report = load_file(kg.need_sink(), file)
        seconds = time.perf_counter() - started
        counts = kg.kg.stats()
    return report.triples / seconds, report.triples, counts


class _Stop(BaseException):
    """The load is stopped, as a kill would stop it."""


def resumed_rate(spec: str, file: Path, fraction: float, merge: bool) -> tuple[float, int, int]:
    """(triples/s, triples, lines before its checkpoint) of the re-run of a
    load into the emptied database stopped once its checkpoints passed
    ``fraction`` of the file's lines; ``merge``: the re-run merges every edge."""
    from engine.backends.neo4j.sink import SOLE_LOAD, Neo4jSink
    from engine.store import open_store
    from loaders.load import load_file

    with file.open("rb") as fh:
        lines = sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 24), b""))
    commit = Neo4jSink.commit

    def stopping(self, source, checkpoint):
        if checkpoint.lines >= fraction * lines and not checkpoint.complete:
            raise _Stop
        commit(self, source, checkpoint)

    with open_store(spec, create=True) as kg:
        Neo4jSink.commit = stopping  # type: ignore[method-assign]
        try:
            load_file(kg.need_sink(), file)
        except _Stop:
            pass
        finally:
            Neo4jSink.commit = commit  # type: ignore[method-assign]
    with open_store(spec) as kg:
        if merge:
            kg.kg.session.run("setting_set", write=True, key=SOLE_LOAD, value="null")
        started = time.perf_counter()
        report = load_file(kg.need_sink(), file)
        seconds = time.perf_counter() - started
    triples = report.triples - report.resumed_triples
    return triples / seconds, triples, report.resumed_from


def offline_rate(file: Path, workdir: Path) -> tuple[float, float, float]:
    """(triples/s end to end, export seconds, import seconds) of the offline path."""
    import subprocess

    from engine.backends.neo4j.csv_export import Neo4jCsvExport
    from loaders.load import load_file

    out, home = workdir / "csv", workdir / "import-home"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    started = time.perf_counter()
    export = Neo4jCsvExport(out)
    report = load_file(export, file)
    export.close()
    exported = time.perf_counter()
    env = dict(os.environ, TOG_NEO4J_HOME=str(home))
    subprocess.run([str(HERE.parent / "launcher" / "neo4j-server"), "import", str(out)], env=env, check=True,
                   capture_output=True)
    done = time.perf_counter()
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    return report.triples / (done - started), exported - started, done - exported


def questions_on(spec: str, kb: Path, questions) -> list[tuple[list[str], float, int]]:
    from engine.store import open_store
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig
    from loaders.load import load_file

    out = []
    with open_store(spec, create=True) as kg:
        load_file(kg.need_sink(), kb)
        for q in questions:
            r = ask(kg, q.question, get_pruner("hybrid"), get_reasoner("offline"), SearchConfig(), q.topics,
                    record=False)
            out.append((r.result.answer.names, r.result.stats["kg_seconds"], r.result.stats["kg_lookups"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="synthetic triples")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "tog-bench")
    ap.add_argument("--passes", type=int, default=3,
                    help="loads into the emptied Neo4j database (the first also warms the server's JIT)")
    ap.add_argument("--resume", type=float, metavar="FRACTION",
                    help="time the re-run of a load stopped past FRACTION of the file's lines instead")
    args = ap.parse_args()
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        sys.exit("set NEO4J_URI, NEO4J_USER and NEO4J_PASSWORD (launcher/neo4j-server env prints them)")
    user, password = os.environ.get("NEO4J_USER", "neo4j"), os.environ.get("NEO4J_PASSWORD", "")
    from engine.evaluate import read_questions
    from synth import generate

    args.workdir.mkdir(parents=True, exist_ok=True)
    file = args.workdir / f"synth-{args.size}.nt"
    if not file.exists():
        generate(args.size, file)
    if args.resume is not None:
        got: dict[str, list[float]] = {"creating": [], "merging": []}
        for n in range(1, args.passes + 1):
            for how in got:
                clear(uri, user, password)
                rate, triples, before = resumed_rate(uri, file, args.resume, merge=how == "merging")
                got[how].append(rate)
                print(f"re-run of a load of {file.name} stopped after {before:,} lines, {how}, pass {n}: "
                      f"{rate:,.0f} triples/s ({triples:,} triples)")
        new, old = (statistics.median(got[how]) for how in ("creating", "merging"))
        print(f"re-run of a stopped load: creating past what the stopped run wrote {new:,.0f} triples/s, "
              f"merging every edge (before) {old:,.0f} triples/s (medians); ratio {new / old:.1f}x")
        return
    store = args.workdir / "embedded"
    shutil.rmtree(store, ignore_errors=True)
    rates = []
    for n in range(1, args.passes + 1):
        clear(uri, user, password)
        rate, triples, counts = load_rate(uri, file)
        rates.append(rate)
        print(f"load {file.name} into Neo4j, pass {n}: {rate:,.0f} triples/s ({triples:,} triples; "
              f"{counts['entities']:,} entities, {counts['edges']:,} edges, {counts['names']:,} name keys)")
    emb_rate, emb_triples, _ = load_rate(str(store), file)
    neo_rate = statistics.median(rates)
    print(f"load {file.name}: Neo4j median {neo_rate:,.0f} triples/s over {len(rates)} passes "
          f"(min {min(rates):,.0f}, max {max(rates):,.0f}); embedded {emb_rate:,.0f} triples/s ({emb_triples:,}); "
          f"Neo4j/embedded {neo_rate / emb_rate:.2f}")
    off_rate, export_s, import_s = offline_rate(file, args.workdir)
    print(f"offline import into a new Neo4j database: {off_rate:,.0f} triples/s "
          f"(export-neo4j {export_s:.1f} s + neo4j-admin import {import_s:.1f} s)")

    kb = HERE.parent / "examples" / "metaqa" / "kb.txt"
    questions = list(read_questions(HERE.parent / "examples" / "metaqa" / "questions.txt"))
    clear(uri, user, password)
    shutil.rmtree(store, ignore_errors=True)
    results = {"Neo4j": questions_on(uri, kb, questions), "embedded": questions_on(str(store), kb, questions)}
    for name, rows in results.items():
        ms = [1000 * s for _, s, _ in rows]
        print(f"{name}: {len(rows)} questions, KG time median {statistics.median(ms):.1f} ms, "
              f"mean {statistics.fmean(ms):.1f} ms, {statistics.fmean(n for _, _, n in rows):.1f} KG lookups/question")
    same = sum(a[0] == b[0] for a, b in zip(results["Neo4j"], results["embedded"]))
    print(f"same answers on both backends: {same}/{len(questions)}")


if __name__ == "__main__":
    main()
