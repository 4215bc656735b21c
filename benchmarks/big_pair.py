"""A real KG's biggest pairs: sampled with the summaries against sorted by
the first question that expands them.

A synthetic graph (``synth.py``) gets one pair the size of a real KG's
biggest, as Freebase's (male, gender) with millions of edges: ``--giant``
new entities, each with a ``giant.member.of`` edge to one named
entity. It is loaded once (the load prints how long sampling its biggest
pairs took, ``sample_big``); then, in alternating rounds, each in a fresh
process on a copy of its own (with ``--neo4j URI``: an empty Neo4j
database, loaded once, each round clearing the samples it holds and, for
``kept``, having the server sort the pairs past SORT_MAX again first):

- ``kept``: the store as the load left it (the giant pair's sample kept);
- ``sorted``: the same with every sample dropped (what tog did before: the
  first question sorts the pair inside the store);

and prints, cold, the KG ms of expanding the pair (N = 3), the rows the
largest query returned, the KG ms of a question about the pair's entity
(offline backbone, N = D = 3), and peak RSS.

With ``--sparql SPEC`` (a Virtuoso started by ``launcher/virtuoso-server``,
which loads the graph into a graph of its own once), each round asks the
question twice and then expands the pair twice in one process, with what
the process keeps (``Memo``: the server sorts the pair once) and without
it (``memo=False``: it sorts it for every page of every question).

    python benchmarks/big_pair.py --base 1000000 --giant 1000000 --rounds 3
    python benchmarks/big_pair.py --sparql sparql+http://127.0.0.1:18890/sparql --rounds 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

NS = "http://rdf.freebase.com/ns/"
MEMBER_OF = f"{NS}giant.member.of"  # synthetic, like the rest of the graph
GIANT = f"{NS}m.giant"


def source_file(base: int, giant: int, workdir: Path) -> Path:
    """The synthetic graph of ``base`` triples with the giant pair added."""
    from synth import generate

    source = workdir / f"synth-{base}-{giant}.nt"
    if not source.exists():
        print(f"generating {source} ...", flush=True)
        generate(base, source)
        with source.open("a", encoding="utf-8") as fh:
            fh.write(f'<{GIANT}> <{NS}type.object.name> "Giant Hub"@en .\n')
            for i in range(giant):
                fh.write(f"<{NS}m.member{i}> <{MEMBER_OF}> <{GIANT}> .\n")
    return source


def build(base: int, giant: int, workdir: Path, neo4j: str | None) -> str:
    """The store loaded once (an empty Neo4j database with ``--neo4j``); its spec."""
    from engine.store import open_store
    from loaders.load import load_file

    if neo4j is not None:
        with open_store(neo4j, create=True) as s:
            if s.kg.has_entity(GIANT):
                return neo4j
            if s.kg.stats()["edges"]:
                sys.exit(f"{neo4j}: --neo4j needs an empty database (or one this benchmark loaded)")
        spec = neo4j
    else:
        store = workdir / f"store-{base}-{giant}"
        if (store / "done").exists():
            return str(store)
        shutil.rmtree(store, ignore_errors=True)
        spec = str(store)
    source = source_file(base, giant, workdir)
    started, cpu = time.perf_counter(), time.process_time()
    with open_store(spec, create=True) as s:
        report = load_file(s.need_sink(), source)
        state = report.summary or {}
    print(f"loaded {report.triples:,} triples in {time.perf_counter() - started:.1f} s "
          f"({time.process_time() - cpu:.1f} s CPU in this process); {state.get('big_pairs_made', 0)} pairs past "
          f"{state.get('sort_max', 0):,} edges sampled in {state.get('big_pairs_seconds', 0):.2f} s of that", flush=True)
    if neo4j is None:
        (Path(spec) / "done").write_text("")
    return spec


def child(store: str, mode: str) -> None:
    from engine.graph import Relation
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig
    from engine.store import open_store
    from kg_scale import peak_rss

    s = open_store(store)
    kg = s.kg
    rows: list[int] = []
    if hasattr(kg, "session"):  # Neo4j: the samples of earlier rounds go; the load's are made again ("kept")
        kg.session.run_batched("summaries_clear")
        if mode == "kept":
            kg.sample_big()
            kg.made["crowded_pairs"] = 0
        for method in ("run", "run_text"):
            def counted(*args, _plain=getattr(kg.session, method), **params):
                got = _plain(*args, **params)
                rows.append(len(got))
                return got

            setattr(kg.session, method, counted)
    else:
        kg.ready()  # (nothing to build: the load did; outside the figures either way)
        kg.summaries.clear(keep_big=(mode == "kept"))
        plain = kg._select

        def counted_select(text, params=()):
            got = plain(text, params)
            rows.append(len(got))
            return got

        kg._select = counted_select
    s0 = kg.meter.seconds
    r = ask(s, "who is a member of [Giant Hub]", get_pruner("hybrid"), get_reasoner("offline"), SearchConfig(),
            record=False)
    ask_ms = 1000 * (kg.meter.seconds - s0)
    ask_rows, sorted_ = max(rows), kg.made["crowded_pairs"]
    if hasattr(kg, "session"):  # and once more the pair alone, its sample dropped again
        if mode == "sorted":
            kg.session.run_batched("summaries_clear")
    else:
        kg.summaries.clear(keep_big=(mode == "kept"))
    rows.clear()
    s0 = kg.meter.seconds
    found = kg.expand([(GIANT, Relation(MEMBER_OF, "in"))], limit=3)
    expand_ms = 1000 * (kg.meter.seconds - s0)
    print(json.dumps({"expand_ms": expand_ms, "found": [c.node.id for c in found], "most_rows": max(rows),
                      "ask_ms": ask_ms, "ask_rows": ask_rows, "answers": len(r.result.answer.names),
                      "sorted": sorted_, "rss": peak_rss()}))


def run_child(*args: str) -> dict:
    """This script in a new process with ``args``: the figures it prints."""
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def sparql_graph(base: int, giant: int, workdir: Path, endpoint: str) -> str:
    """The graph loaded into the endpoint once (``launcher/virtuoso-server
    load``); the store spec that reads it."""
    from engine.store import open_store

    graph = f"http://tog.bench/big-{base}-{giant}"
    spec = f"{endpoint}?default-graph-uri={graph}"
    with open_store(spec) as s:
        if s.kg.has_entity(GIANT):
            return spec
    source = source_file(base, giant, workdir)
    started = time.perf_counter()
    subprocess.run([str(HERE.parent / "launcher" / "virtuoso-server"), "load", str(source), graph], check=True)
    print(f"loaded {source} into <{graph}> in {time.perf_counter() - started:.1f} s", flush=True)
    return spec


def sparql_child(spec: str, mode: str) -> None:
    """The question twice, then the pair alone twice, in one process."""
    from engine.graph import Relation
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig
    from engine.store import open_store

    s = open_store(spec)
    kg = s.kg
    if mode == "forgetful":
        kg.listings.size = kg.pages.size = 0
    got: dict[str, list] = {"ask_ms": [], "ask_requests": [], "expand_ms": [], "found": []}
    for _ in range(2):
        s0, n0 = kg.meter.seconds, kg.meter.lookups
        r = ask(s, "who is a member of [Giant Hub]", get_pruner("hybrid"), get_reasoner("offline"), SearchConfig(),
                [f"<{GIANT}>"], record=False)
        got["ask_ms"].append(1000 * (kg.meter.seconds - s0))
        got["ask_requests"].append(kg.meter.lookups - n0)
        got["answers"] = len(r.result.answer.names)
    # the pair as the search follows it: its relation as listed, with its degree (its first page is its window)
    member_of = next(r for r in kg.relations([GIANT])[GIANT] if r == Relation(MEMBER_OF, "in"))
    for _ in range(2):
        s0 = kg.meter.seconds
        found = kg.expand([(GIANT, member_of)], limit=3)
        got["expand_ms"].append(1000 * (kg.meter.seconds - s0))
        got["found"].append([c.node.id for c in found])
    s.close()
    print(json.dumps(got))


def sparql_rounds(args: argparse.Namespace) -> None:
    spec = sparql_graph(args.base, args.giant, args.workdir, args.sparql)
    results: dict[str, list[dict]] = {"memo": [], "forgetful": []}
    for i in range(args.rounds):
        for mode in ("memo", "forgetful") if i % 2 == 0 else ("forgetful", "memo"):
            got = run_child("--sparql-child", spec, mode)
            results[mode].append(got)
            print(f"  round {i + 1} {mode:9s}: question {got['ask_ms'][0]:8.1f} ms KG then {got['ask_ms'][1]:8.1f} ms "
                  f"({got['ask_requests'][0]} then {got['ask_requests'][1]} requests, {got['answers']} answers); "
                  f"the pair alone {got['expand_ms'][0]:8.1f} then {got['expand_ms'][1]:8.1f} ms", flush=True)
    found = {json.dumps(f) for rs in results.values() for r in rs for f in r["found"]}
    assert len(found) == 1, "the samples differ"
    med = {m: {f"{k}{j}": statistics.median(r[k][j] for r in results[m]) for k in ("ask_ms", "expand_ms")
               for j in (0, 1)} for m in results}
    kept, forgetful = med["memo"], med["forgetful"]
    print(f"SPARQL endpoint: {args.giant:,}-edge pair in a {args.base:,}-triple graph, medians of {args.rounds} "
          f"rounds: the question asked again in the same process {kept['ask_ms1']:.1f} ms KG with what the process "
          f"keeps vs {forgetful['ask_ms1']:.1f} ms without ({forgetful['ask_ms1'] / max(kept['ask_ms1'], 0.01):.0f}x; "
          f"first time {kept['ask_ms0']:.1f} vs {forgetful['ask_ms0']:.1f} ms); the pair alone again "
          f"{kept['expand_ms1']:.1f} vs {forgetful['expand_ms1']:.1f} ms; the same sample every time")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=int, default=1_000_000, help="Triples of the synthetic graph.")
    ap.add_argument("--giant", type=int, default=1_000_000, help="Edges of the giant pair.")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tog-bench-big"))
    ap.add_argument("--neo4j", metavar="URI", help="Measure an empty Neo4j database instead (NEO4J_USER and "
                    "NEO4J_PASSWORD as tog reads them); each round clears its samples.")
    ap.add_argument("--sparql", metavar="ENDPOINT", help="Measure a SPARQL endpoint instead "
                    "(sparql+http://HOST:PORT/sparql of a Virtuoso run by launcher/virtuoso-server).")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--sparql-child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.sparql_child:
        sparql_child(*args.sparql_child)
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.sparql:
        sparql_rounds(args)
        return
    store = build(args.base, args.giant, args.workdir, args.neo4j)
    results: dict[str, list[dict]] = {"kept": [], "sorted": []}
    for i in range(args.rounds):
        for mode in ("kept", "sorted") if i % 2 == 0 else ("sorted", "kept"):
            copy = store
            if args.neo4j is None:
                copy = str(args.workdir / f"copy-{mode}")
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(store, copy)
            got = run_child("--child", copy, mode)
            results[mode].append(got)
            print(f"  round {i + 1} {mode:6s}: question {got['ask_ms']:8.1f} ms KG ({got['answers']} answers, "
                  f"largest read {got['ask_rows']:,} rows, {got['sorted']} pairs sorted); then the pair alone "
                  f"{got['expand_ms']:8.1f} ms; peak RSS {got['rss'] / 2**20:,.0f} MiB", flush=True)
    assert results["kept"][0]["found"] == results["sorted"][0]["found"], "the two samples differ"
    kept, sorted_ = ({k: statistics.median(r[k] for r in results[m]) for k in ("expand_ms", "ask_ms")}
                     for m in ("kept", "sorted"))
    print(f"{'Neo4j: ' if args.neo4j else ''}{args.giant:,}-edge pair in a {args.base:,}-triple graph, medians of {args.rounds} rounds: a cold "
          f"question about it {kept['ask_ms']:.1f} ms KG with the pair's sample kept vs {sorted_['ask_ms']:.1f} ms "
          f"sorted at question time ({sorted_['ask_ms'] / kept['ask_ms']:.0f}x); the pair alone "
          f"{kept['expand_ms']:.1f} vs {sorted_['expand_ms']:.1f} ms; the same sample either way")


if __name__ == "__main__":
    main()
