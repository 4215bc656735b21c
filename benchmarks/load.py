"""Load throughput: ``tog load`` against raw ``pyoxigraph.Store.bulk_load``.

For each size, a seeded synthetic Freebase-style N-Triples file (see
``synth.py``) is loaded into a fresh store twice by each side, alternating
(raw, tog, raw, tog), each in its own process so peak RSS is its own.
Prints triples/s, CPU seconds (user + system, all threads; and each
Python thread's: the one that calls the bulk loader, tog's name scanner,
its hub counters; the store's own threads are the rest), peak RSS and
store size, and tog's rate and CPU as a share of raw's, with the part of
tog's that built the hub summaries after the bulk load (of which the
threads that count, the rest being RocksDB compacting in the same process
meanwhile; and the ratio without it), and both sides' CPU once the
store's background compaction is done (each reopens the store until it
is idle: a raw load that exits at once leaves that work to whoever opens
the store next);
``--breakdown`` adds a tog load that indexes no names (a name predicate that
does not occur), which shows what the entity-name index costs;
``--delimited`` adds a tog load of the same graph written as a delimited
file (``head|relation|tail``, nodes by their IRI's tail), against the same
raw anchor. ``--append LINES`` then loads LINES more edges of the same
graph (``synth.generate_more``) into copies of a tog store that holds it,
alternating: the hub summaries updated from the entities the second load
touched, against counting every edge as before (its anchor).

    python benchmarks/load.py --sizes 1000000 10000000
    python benchmarks/load.py --sizes 10000000 --rounds 1 --append 1000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def child(kind: str, file: str, store: str) -> None:
    """Run one load in this process and print its figures as JSON."""
    if kind.startswith("append-"):  # into a copy of a loaded store
        if kind == "append-counted":  # the anchor: what a second load's build cost before it followed what it touched
            from engine.backends.oxigraph import summaries

            summaries.TOUCHED_MAX = -1
        kind = "tog"
    else:
        shutil.rmtree(store, ignore_errors=True)
    started = time.perf_counter()
    summary: dict[str, float] = {}
    threads = _thread_cpu()
    if kind == "raw":
        import pyoxigraph as ox

        s = ox.Store(store)
        s.bulk_load(path=file, format=ox.RdfFormat.N_TRIPLES)
        s.flush()
        del s
    else:
        from engine.backends.oxigraph.sink import OxigraphSink
        from engine.cli import cli

        plain = OxigraphSink.summarise

        def timed(self, progress=False):  # the hub summaries' own share of the load
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                return plain(self, progress)
            finally:
                summary.update(cpu=time.process_time() - cpu, seconds=time.perf_counter() - wall)

        OxigraphSink.summarise = timed
        from engine.backends.oxigraph import summaries

        each = summaries._each_direction
        counting: list[float] = []  # the CPU of the threads that count (the rest of the window is RocksDB)

        def counted(run, bar):
            def timed_run(direction):
                started = time.thread_time()
                try:
                    run(direction)
                finally:
                    counting.append(time.thread_time() - started)

            each(timed_run, bar)
            summary["counting_cpu"] = sum(counting)

        summaries._each_direction = counted
        extra = ["--name-predicate", "urn:tog:no-names"] if kind == "tog-no-names" else []
        cli.main(["load", file, "--store", store, "--no-progress", *extra], prog_name="tog", standalone_mode=False)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    size = sum(f.stat().st_size for f in Path(store).rglob("*") if f.is_file())
    print(json.dumps({"kind": kind, "seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime,
                      "peak_rss": usage.ru_maxrss * 1024, "store_bytes": size,
                      "summary_cpu": summary.get("cpu", 0.0), "summary_seconds": summary.get("seconds", 0.0),
                      "counting_cpu": summary.get("counting_cpu", 0.0),
                      "threads_cpu": {"main": time.thread_time(), **threads},
                      "settled_cpu": settle(store, kind)}))


def _thread_cpu() -> dict[str, float]:
    """The CPU of each Python thread this process runs, by name, filled in
    as they end (the store's own threads are not Python threads: they are
    the process's CPU less these and the main thread's)."""
    import threading

    cpu: dict[str, float] = {}
    run = threading.Thread.run

    def timed(self) -> None:
        try:
            run(self)
        finally:
            name = "tog-hubs" if self.name.startswith("tog-hubs-") else self.name  # both directions
            cpu[name] = cpu.get(name, 0.0) + time.thread_time()

    threading.Thread.run = timed  # type: ignore[method-assign]
    return cpu


def settle(store: str, kind: str) -> float:
    """This process's CPU once the store's background compaction is done.
    RocksDB compacts what a bulk load wrote in threads of whichever process
    has the store open next: a load that returns at once leaves it to the
    first question, one that goes on working (tog's summaries) pays part of
    it itself. Both sides reopen the store and wait until it is idle (CPU
    flat for 3 s, at most 5 minutes), so their totals compare the same work."""
    import pyoxigraph as ox

    def cpu() -> float:
        u = resource.getrusage(resource.RUSAGE_SELF)
        return u.ru_utime + u.ru_stime

    s = ox.Store(store + ("/kg" if kind != "raw" else ""))
    deadline, last, flat = time.monotonic() + 300, cpu(), 0
    while time.monotonic() < deadline and flat < 3:
        time.sleep(1)
        now = cpu()
        flat = flat + 1 if now - last < 0.02 else 0
        last = now
    del s
    return cpu()


def write_delimited(nt: Path, out: Path) -> None:
    """The synthetic graph as ``head|relation|tail`` lines (IRI tails; literal
    objects by their lexical form; name triples left out: a node's text is its name)."""
    import re

    line = re.compile(r'^<[^>]*/([^/>]*)> <[^>]*/([^/>]*)> (?:<[^>]*/([^/>]*)>|"([^"]*)"[^ ]*) \.$')
    with nt.open(encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        for text in src:
            m = line.match(text.rstrip("\n"))
            if m and m.group(2) != "type.object.name":
                dst.write(f"{m.group(1)}|{m.group(2)}|{m.group(3) or m.group(4)}\n")


def measure(kind: str, file: Path, store: Path, base: Path | None = None) -> dict:
    shutil.rmtree(store, ignore_errors=True)
    if base is not None:
        shutil.copytree(base, store)
    os.sync()  # let the previous run's writes reach the disk before timing this one
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(file), str(store)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "tog-bench-load")
    ap.add_argument("--rounds", type=int, default=2, help="Loads per side (alternating).")
    ap.add_argument("--breakdown", action="store_true",
                    help="Also load without indexing names, to show what the name index costs.")
    ap.add_argument("--delimited", action="store_true",
                    help="Also load the graph written as a delimited file (head|relation|tail).")
    ap.add_argument("--append", type=int, nargs="+", default=[], metavar="LINES",
                    help="Then load this many more lines into a copy of the loaded store: summaries updated "
                         "against counted.")
    ap.add_argument("--child", nargs=3, metavar=("KIND", "FILE", "STORE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    from synth import generate

    args.workdir.mkdir(parents=True, exist_ok=True)
    for size in args.sizes:
        file = args.workdir / f"synth-{size}.nt"
        if not file.exists():
            print(f"generating {file} ...", flush=True)
            generate(size, file)
        kinds = ["raw", "tog"] + (["tog-no-names"] if args.breakdown else []) + (["tog-delimited"] if args.delimited else [])
        delimited = args.workdir / f"synth-{size}.txt"
        if args.delimited and not delimited.exists():
            print(f"writing {delimited} ...", flush=True)
            write_delimited(file, delimited)
        runs: dict[str, list[dict]] = {k: [] for k in kinds}
        for _ in range(args.rounds):
            for kind in kinds:
                r = measure("tog" if kind == "tog-delimited" else kind, delimited if kind == "tog-delimited" else file,
                            args.workdir / f"store-{kind}")
                runs[kind].append(r)
                built = f", hub summaries {r['summary_seconds']:.1f} s / {r['summary_cpu']:.1f} s CPU of it " \
                        f"(counting threads {r['counting_cpu']:.1f} s)" \
                    if r.get("summary_seconds") else ""
                threads = ", ".join(f"{k} {v:.2f}" for k, v in r["threads_cpu"].items())
                print(f"  {size:>11,} {kind}: {size / r['seconds']:>10,.0f} triples/s "
                      f"({r['seconds']:.1f} s, {r['cpu']:.1f} s CPU{built}, {r['settled_cpu']:.1f} s CPU settled, "
                      f"threads' CPU s: {threads}, "
                      f"peak RSS {r['peak_rss'] / 2**20:,.0f} MiB, "
                      f"store {r['store_bytes'] / 2**20:,.0f} MiB)", flush=True)
        raw = statistics.median(size / r["seconds"] for r in runs["raw"])
        tog = statistics.median(size / r["seconds"] for r in runs["tog"])
        rss = max(r["peak_rss"] for r in runs["tog"])
        raw_cpu = statistics.median(r["cpu"] for r in runs["raw"])
        tog_cpu = statistics.median(r["cpu"] for r in runs["tog"])
        raw_settled = statistics.median(r["settled_cpu"] for r in runs["raw"])
        tog_settled = statistics.median(r["settled_cpu"] for r in runs["tog"])
        built_cpu = statistics.median(r["summary_cpu"] for r in runs["tog"])
        built_wall = statistics.median(r["summary_seconds"] for r in runs["tog"])
        counting = statistics.median(r["counting_cpu"] for r in runs["tog"])
        print(f"{size:,} triples: tog load {tog:,.0f}/s, raw bulk_load {raw:,.0f}/s, "
              f"ratio {tog / raw:.2f}; CPU {tog_cpu:.1f} s against {raw_cpu:.1f} s (CPU ratio {raw_cpu / tog_cpu:.2f}); "
              f"of tog's, the hub summaries {built_cpu:.1f} s CPU ({built_wall:.1f} s; the threads that count "
              f"{counting:.1f} s, the rest RocksDB compacting meanwhile): without them CPU ratio "
              f"{raw_cpu / (tog_cpu - built_cpu):.2f}; tog peak RSS {rss / 2**20:,.0f} MiB", flush=True)
        print(f"{size:,} triples, CPU once the store's compaction is done too (both reopened until idle): "
              f"tog {tog_settled:.1f} s against raw {raw_settled:.1f} s (CPU ratio {raw_settled / tog_settled:.2f})",
              flush=True)
        if args.breakdown:
            bare = statistics.median(size / r["seconds"] for r in runs["tog-no-names"])
            print(f"{size:,} triples: tog load without the name index {bare:,.0f}/s, ratio {bare / raw:.2f}",
                  flush=True)
        if args.delimited:
            rate = statistics.median(size / r["seconds"] for r in runs["tog-delimited"])
            print(f"{size:,} lines delimited: tog load {rate:,.0f} lines/s, ratio {rate / raw:.2f} of raw N-Triples",
                  flush=True)
        if args.append:
            append(args, size)
        for kind in kinds:
            shutil.rmtree(args.workdir / f"store-{kind}", ignore_errors=True)


def append(args, size: int) -> None:
    """A second load into a store that holds the graph: its hub summaries
    updated from the entities it touched, against counted from every edge."""
    from synth import generate_more

    base = args.workdir / "store-tog"
    if not (base / "kg").exists():
        measure("tog", args.workdir / f"synth-{size}.nt", base)
    for lines in args.append:
        more = args.workdir / f"more-{size}-{lines}.nt"
        if not more.exists():
            generate_more(lines, size, more)
        runs: dict[str, list[dict]] = {"append-updated": [], "append-counted": []}
        for _ in range(args.rounds):
            for kind in runs:
                r = measure(kind, more, args.workdir / f"store-{kind}", base=base)
                runs[kind].append(r)
                print(f"  {size:>11,} + {lines:,} {kind}: {r['seconds']:.1f} s, {r['cpu']:.1f} s CPU, "
                      f"hub summaries {r['summary_seconds']:.2f} s / {r['summary_cpu']:.2f} s CPU of it", flush=True)
        cpu = {k: statistics.median(r["summary_cpu"] for r in v) for k, v in runs.items()}
        wall = {k: statistics.median(r["summary_seconds"] for r in v) for k, v in runs.items()}
        total = {k: statistics.median(r["cpu"] for r in v) for k, v in runs.items()}
        print(f"{size:,} triples + {lines:,} more lines: hub summaries updated {cpu['append-updated']:.2f} s CPU "
              f"({wall['append-updated']:.2f} s) against counted {cpu['append-counted']:.2f} s CPU "
              f"({wall['append-counted']:.2f} s), {cpu['append-counted'] / max(cpu['append-updated'], 1e-3):.1f}x "
              f"less CPU; the whole load {total['append-updated']:.1f} s CPU against {total['append-counted']:.1f} s",
              flush=True)
        for kind in runs:
            shutil.rmtree(args.workdir / f"store-{kind}", ignore_errors=True)


if __name__ == "__main__":
    main()
