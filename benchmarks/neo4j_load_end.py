"""What a Neo4j load's end makes, timed against another commit's code.

A load's end (and, after a load that stopped before it, the first question
that needs them) samples every pair past SORT_MAX edges and counts every
hub per type (``Neo4jKG.sample_big``). On the database the running server
holds (load it first, e.g. ``tog load synth-10000000.nt --store ...``), this
drops the kept samples and hub counts, then makes them again with this
checkout's code and with the code of ``--against`` (a git ref, checked out
in a scratch worktree), alternating, each in a new process. It prints wall
seconds, the client's CPU seconds, and what was made, side by side.

    python benchmarks/neo4j_load_end.py --against HEAD~1 --rounds 2

Needs NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD. The database's samples and
hub counts are made again by each run, nothing else is changed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = """
import json, os, time
from engine.store import open_store
from engine.backends.neo4j.kg import Neo4jKG
store = open_store(os.environ["NEO4J_URI"])
session = store.kg.session
session.run_batched("summaries_clear")
session.run_text("MATCH (h:TogHub) DELETE h", write=True)
kg = Neo4jKG(session)
wall, cpu = time.perf_counter(), time.process_time()
made = kg.sample_big()
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "pairs": made["big_pairs_made"], "hubs": kg.made["hubs"]}))
"""


def run(code: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=code, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the run in {code} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the git ref whose code is the anchor")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for key in ("NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD"):
        if key not in os.environ:
            raise SystemExit(f"{key} is not set (`eval $(launcher/neo4j-server env)` sets them)")
    with tempfile.TemporaryDirectory(prefix="tog-load-end-") as scratch:
        anchor = Path(scratch) / "anchor"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(anchor), args.against],
                       check=True)
        try:
            sides = {"this checkout": REPO, args.against: anchor}
            got: dict[str, list[dict]] = {name: [] for name in sides}
            for n in range(args.rounds):
                for name, code in sides.items():
                    got[name].append(run(code))
                    r = got[name][-1]
                    print(f"round {n + 1}, {name}: {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU in the client, "
                          f"{r['pairs']:,} pairs sampled, {r['hubs']:,} hubs counted", flush=True)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(anchor)], check=False)
    mine, theirs = got["this checkout"], got[args.against]
    for what in ("wall", "cpu"):
        a, b = statistics.median(r[what] for r in mine), statistics.median(r[what] for r in theirs)
        print(f"median {what}: {a:.1f} s against {b:.1f} s ({b / a:.1f}x)")


if __name__ == "__main__":
    main()
