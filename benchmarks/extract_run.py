"""Shared by the extraction benchmarks: generate a dump once, run `tog extract`
in a child process (so its peak RSS is its own), print the figures."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ensure_dump(dump: Path, generate: Callable[[Path], None]) -> None:
    if not dump.exists():
        t = time.perf_counter()
        generate(dump)
        print(f"generated {dump} ({dump.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - t:.0f} s")


def run_extract(source: str, dump: Path, seeds: Sequence[str], hops: int, out: Path, lines: int, unit: str) -> None:
    """`tog extract SOURCE` around ``seeds``; prints wall time, lines/s over all passes, peak RSS."""
    cmd = [sys.executable, "-m", "engine.cli", "extract", source, str(dump), "--hops", str(hops),
           "--out", str(out), "--no-progress"] + [a for s in seeds for a in ("--seed", s)]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=HERE.parent, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(done.stdout + done.stderr)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    passes = hops + 2
    print(done.stdout.strip())
    print(f"dump {dump.stat().st_size / 1e9:.2f} GB, {lines:,} {unit}; {passes} passes in {seconds:.0f} s: "
          f"{passes * lines / seconds:,.0f} {unit}/s; peak RSS {rss:,.0f} MiB")
