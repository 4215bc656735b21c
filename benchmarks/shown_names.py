"""Shown names when nodes are named in many languages (a multilingual dump:
Wikidata's countries have labels in about 300).

A pair of ``--neighbours`` nodes, each named in English and ``--languages``
- 1 other languages, in an embedded store. In the same run, alternating
rounds, it shows the neighbours three ways and prints rows read and time for
each: from the store's shown-name table (how the embedded store shows a
node); by reading from the KG the names a node may be shown by
(``sparql/shown_only.rq``: its English and untagged ones, in a KG with names
in other languages); and by reading every name of each node (how both
showed them before, and how a node without an English or untagged name is
read). It also times one ``expand`` of
the pair, and filling the table of a store made before it (``--fill``).
With ``--sparql ENDPOINT`` (a Virtuoso run by ``launcher/virtuoso-server``)
the same graph goes into a named graph there, and the endpoint's two ways
and its expansion are timed too.

    .venv/bin/python benchmarks/shown_names.py [--neighbours 400] [--languages 300] [--rounds 5]
        [--sparql sparql+http://127.0.0.1:18890/sparql]
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

EX = "http://example.org/multilingual/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


def write_graph(path: Path, neighbours: int, languages: int) -> int:
    """The pair's triples; each neighbour named in English and languages - 1
    private-use tags (qaa, qab, ...); returns the number of triples."""
    tags = [f"q{a}{b}" for a in "abcdefghijklmnopqrst" for b in "abcdefghijklmnopqrstuvwxyz"][: languages - 1]
    n = 0
    with path.open("w", encoding="utf-8") as out:
        out.write(f'<{EX}hub> <{LABEL}> "Quillon Harbour"@en .\n')
        for i in range(neighbours):
            out.write(f"<{EX}hub> <{EX}borders> <{EX}n{i}> .\n")
            out.write(f'<{EX}n{i}> <{LABEL}> "Neighbour {i}"@en .\n')
            out.writelines(f'<{EX}n{i}> <{LABEL}> "Nachbar {i} {t}"@{t} .\n' for t in tags)
            n += 2 + len(tags)
    return n + 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--neighbours", type=int, default=400)
    ap.add_argument("--languages", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--fill", action=argparse.BooleanOptionalAction, default=True,
                    help="Also time filling the table of a store made before it.")
    ap.add_argument("--sparql", metavar="ENDPOINT", help="Also on a Virtuoso run by launcher/virtuoso-server "
                    "(sparql+http://127.0.0.1:18890/sparql): the graph is loaded into a named graph there, then dropped.")
    args = ap.parse_args()
    if not 1 <= args.languages <= 521:
        sys.exit("--languages: 1 to 521")
    work = Path(tempfile.mkdtemp(prefix="tog-shown-"))
    try:
        measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def every_name(kg, ids: list[str]) -> dict[str, str]:
    """Every name of each node read, the rule applied here (how the stores
    showed a node before the table and ``shown_only.rq``)."""
    from engine.backends.sparql_reads import iri_rows, values

    text = (f"SELECT ?e ?np ?name WHERE {{ VALUES (?e) {{ {iri_rows(ids)} }} "
            f"OPTIONAL {{ VALUES (?np) {{ {values(kg._name_terms())} }} ?e ?np ?name . }} }}")
    return kg._pick_names((r["e"].value, r["np"].value, r["name"]) for r in kg._select(text) if r["np"] is not None)


def compare(label: str, kg, ways: dict[str, Callable[[], object]], rounds: int) -> None:
    """Time ``ways`` in alternating rounds, with the rows the KG sent for each."""
    rows = [0]
    plain = kg._select
    kg._select = lambda text, params=(): (out := plain(text, params), rows.__setitem__(0, rows[0] + len(out)))[0]
    for way in ways.values():
        way()  # warm
    times: dict[str, list[float]] = {w: [] for w in ways}
    read: dict[str, int] = {}
    answers: dict[str, object] = {}
    for _ in range(rounds):
        for name, way in ways.items():
            rows[0] = 0
            started = time.perf_counter()
            answers[name] = way()
            times[name].append(time.perf_counter() - started)
            read[name] = rows[0]
    shown = [answers[name] for name in ways if not name.startswith("expand")]
    assert all(a == shown[0] for a in shown), "the ways show different names"
    print(label)
    for name in ways:
        print(f"  {name}: median {statistics.median(times[name]) * 1000:.1f} ms, {read[name]:,} rows from the KG")
    first, last = [n for n in ways if not n.startswith("expand")][0], "every name of each node (before)"
    ratio = statistics.median(times[last]) / statistics.median(times[first])
    print(f"  {first}: {ratio:.0f}x faster than reading every name, the same names")
    kg._select = plain


def measure(args: argparse.Namespace, work: Path) -> None:
    from engine.backends.sparql_reads import SparqlReads
    from engine.graph import Relation
    from engine.store import open_store
    from loaders.load import load_file

    triples = write_graph(work / "g.nt", args.neighbours, args.languages)
    with open_store(work / "store", create=True) as s:
        load_file(s.need_sink(), work / "g.nt")
    print(f"{triples:,} triples: {args.neighbours} neighbours, each named in {args.languages} languages")
    store = open_store(work / "store")
    kg = store.kg
    ids = [f"{EX}n{i}" for i in range(args.neighbours)]
    pair = [(f"{EX}hub", Relation(f"{EX}borders", "out"))]
    compare("embedded store", kg, {
        "the shown-name table (one index seek a node in index.sqlite)": lambda: kg.labels(ids),
        "the names a node may be shown by, from the KG (shown_only.rq)": lambda: SparqlReads.labels(kg, ids),
        "every name of each node (before)": lambda: every_name(kg, ids),
        "expand of the pair, limit 100": lambda: kg.expand(pair)}, args.rounds)
    store.close()
    if args.sparql:
        from engine.backends.sparql import SparqlGraph

        graph = f"http://tog.bench/shown-{uuid.uuid4().hex[:8]}"
        launcher = str(HERE.parent / "launcher" / "virtuoso-server")
        subprocess.run([launcher, "load", str(work / "g.nt"), graph], check=True, stdout=subprocess.DEVNULL)
        remote = SparqlGraph(f"{args.sparql}?default-graph-uri={graph}", memo=False)
        try:
            compare("SPARQL endpoint", remote, {
                "the names a node may be shown by (shown_only.rq)": lambda: remote.labels(ids),
                "every name of each node (before)": lambda: every_name(remote, ids),
                "expand of the pair, limit 100": lambda: remote.expand(pair)}, args.rounds)
        finally:
            remote.close()
            subprocess.run([launcher, "drop", graph], check=False, stdout=subprocess.DEVNULL)
    if args.fill:
        with sqlite3.connect(work / "store" / "index.sqlite") as db:  # as a store made before the table
            db.execute("DROP TABLE shown")
            db.execute("DELETE FROM settings WHERE key = 'shown_complete'")
        store = open_store(work / "store")
        started, cpu = time.perf_counter(), time.process_time()
        store.kg.labels(ids[:1])
        print(f"  filling the table of a store made before it: {time.perf_counter() - started:.2f} s "
              f"({time.process_time() - cpu:.2f} s CPU); {store.kg.stats()['shown names']}")
        store.close()


if __name__ == "__main__":
    main()
