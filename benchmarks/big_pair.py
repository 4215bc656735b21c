"""A real KG's biggest pairs: sampled with the summaries against sorted by
the first question that expands them.

A synthetic graph (``synth.py``) gets one pair the size of a real KG's
biggest, as Freebase's (male, gender) with millions of edges: ``--giant``
new entities, each with a ``people.person.gender`` edge to one named
entity. It is loaded once (the load prints how long sampling its biggest
pairs took, ``sample_big``); then, in alternating rounds, each in a fresh
process on a copy of its own:

- ``kept``: the store as the load left it (the giant pair's sample kept);
- ``sorted``: the same with every sample dropped (what tog did before: the
  first question sorts the pair inside the store);

and prints, cold, the KG ms of expanding the pair (N = 3), the rows the
largest query returned, the KG ms of a question about the pair's entity
(offline backbone, N = D = 3), and peak RSS.

    python benchmarks/big_pair.py --base 1000000 --giant 1000000 --rounds 3
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
GENDER = f"{NS}people.person.gender"
GIANT = f"{NS}m.giant"


def build(base: int, giant: int, workdir: Path) -> Path:
    from engine.store import open_store
    from loaders.load import load_file
    from synth import generate

    store = workdir / f"store-{base}-{giant}"
    if (store / "done").exists():
        return store
    shutil.rmtree(store, ignore_errors=True)
    source = workdir / f"synth-{base}-{giant}.nt"
    print(f"generating {source} ...", flush=True)
    generate(base, source)
    with source.open("a", encoding="utf-8") as fh:
        fh.write(f'<{GIANT}> <{NS}type.object.name> "Giant Gender"@en .\n')
        for i in range(giant):
            fh.write(f"<{NS}m.person{i}> <{GENDER}> <{GIANT}> .\n")
    started, cpu = time.perf_counter(), time.process_time()
    with open_store(store, create=True) as s:
        report = load_file(s.need_sink(), source)
        state = s.kg.summaries.state()
    print(f"loaded {report.triples:,} triples in {time.perf_counter() - started:.1f} s "
          f"({time.process_time() - cpu:.1f} s CPU); hub summaries {state['seconds']:.1f} s, then "
          f"{state['big_pairs']} pairs past {state['sort_max']:,} edges sampled in {state['big_pairs_seconds']:.2f} s",
          flush=True)
    (store / "done").write_text("")
    source.unlink()
    return store


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
    kg.ready()  # (nothing to build: the load did; outside the figures either way)
    kg.summaries.clear(keep_big=(mode == "kept"))
    rows: list[int] = []
    plain = kg._select

    def counted(text, params=()):
        got = plain(text, params)
        rows.append(len(got))
        return got

    kg._select = counted
    s0 = kg.meter.seconds
    r = ask(s, "who has the gender [Giant Gender]", get_pruner("hybrid"), get_reasoner("offline"), SearchConfig(),
            record=False)
    ask_ms = 1000 * (kg.meter.seconds - s0)
    ask_rows, sorted_ = max(rows), kg.made["crowded_pairs"]
    kg.summaries.clear(keep_big=(mode == "kept"))  # and once more the pair alone, its sample dropped again
    rows.clear()
    s0 = kg.meter.seconds
    found = kg.expand([(GIANT, Relation(GENDER, "in"))], limit=3)
    expand_ms = 1000 * (kg.meter.seconds - s0)
    print(json.dumps({"expand_ms": expand_ms, "found": [c.node.id for c in found], "most_rows": max(rows),
                      "ask_ms": ask_ms, "ask_rows": ask_rows, "answers": len(r.result.answer.names),
                      "sorted": sorted_, "rss": peak_rss()}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=int, default=1_000_000, help="Triples of the synthetic graph.")
    ap.add_argument("--giant", type=int, default=1_000_000, help="Edges of the giant pair.")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tog-bench-big"))
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    store = build(args.base, args.giant, args.workdir)
    results: dict[str, list[dict]] = {"kept": [], "sorted": []}
    for i in range(args.rounds):
        for mode in ("kept", "sorted") if i % 2 == 0 else ("sorted", "kept"):
            copy = args.workdir / f"copy-{mode}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(store, copy)
            out = subprocess.run([sys.executable, __file__, "--child", str(copy), mode], capture_output=True,
                                 text=True, check=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            results[mode].append(got)
            print(f"  round {i + 1} {mode:6s}: question {got['ask_ms']:8.1f} ms KG ({got['answers']} answers, "
                  f"largest read {got['ask_rows']:,} rows, {got['sorted']} pairs sorted); then the pair alone "
                  f"{got['expand_ms']:8.1f} ms; peak RSS {got['rss'] / 2**20:,.0f} MiB", flush=True)
    assert results["kept"][0]["found"] == results["sorted"][0]["found"], "the two samples differ"
    kept, sorted_ = ({k: statistics.median(r[k] for r in results[m]) for k in ("expand_ms", "ask_ms")}
                     for m in ("kept", "sorted"))
    print(f"{args.giant:,}-edge pair in a {args.base:,}-triple graph, medians of {args.rounds} rounds: a cold "
          f"question about it {kept['ask_ms']:.1f} ms KG with the pair's sample kept vs {sorted_['ask_ms']:.1f} ms "
          f"sorted at question time ({sorted_['ask_ms'] / kept['ask_ms']:.0f}x); the pair alone "
          f"{kept['expand_ms']:.1f} vs {sorted_['expand_ms']:.1f} ms; the same sample either way")


if __name__ == "__main__":
    main()
