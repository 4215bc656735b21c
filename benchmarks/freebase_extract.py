"""Freebase subset extraction on a generated dump: lines/s per pass and peak RSS.

Generates (once, under --workdir) a seeded Freebase-format dump of --lines
lines (tab-separated full IRIs like freebase-rdf-latest: names, typed
literals, noise relations, CVTs, hubs), then runs `tog extract freebase` in a
child process with --hops around --seeds random mids, and prints its wall
time, dump lines per second (over all passes) and peak RSS.

    python benchmarks/freebase_extract.py --lines 22000000 --hops 2    # ~2.4 GB
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from extract_run import ensure_dump, run_extract

NS = "http://rdf.freebase.com/ns/"
RELATIONS = [f"film.film.{r}" for r in ("directed_by", "written_by", "starring", "genre", "language", "country")] + \
    [f"people.person.{r}" for r in ("place_of_birth", "nationality", "profession", "spouse_s", "children")] + \
    [f"music.artist.{r}" for r in ("genre", "label", "origin")] + ["location.location.containedby"]
NOISE = ["type.object.type", "common.topic.description", "freebase.valuenotation.has_value", "common.topic.alias"]


def generate(path: Path, lines: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    entities = max(1000, lines // 12)
    hubs = [f"m.0h{i:04d}" for i in range(200)]
    with open(path, "w", encoding="utf-8") as fh:
        buf, n = [], 0
        while n < lines:
            e = f"m.0{rng.randrange(entities):x}"
            block = [f"<{NS}{e}>\t<{NS}type.object.name>\t\"Entity {e}\"@en\t.",
                     f"<{NS}{e}>\t<{NS}type.object.name>\t\"Entité {e}\"@fr\t.",
                     f"<{NS}{e}>\t<{NS}{rng.choice(NOISE)}>\t\"noise for {e}\"@en\t."]
            for _ in range(rng.randrange(4, 10)):
                target = rng.choice(hubs) if rng.random() < 0.2 else f"m.0{rng.randrange(entities):x}"
                block.append(f"<{NS}{e}>\t<{NS}{rng.choice(RELATIONS)}>\t<{NS}{target}>\t.")
            if rng.random() < 0.1:
                cvt = f"m.0c{rng.randrange(entities):x}"
                block.append(f"<{NS}{e}>\t<{NS}film.film.starring>\t<{NS}{cvt}>\t.")
                block.append(f"<{NS}{cvt}>\t<{NS}film.performance.actor>\t<{NS}m.0{rng.randrange(entities):x}>\t.")
            block.append(f"<{NS}{e}>\t<{NS}film.film.initial_release_date>\t"
                         f"\"{rng.randrange(1900, 2020)}\"^^<http://www.w3.org/2001/XMLSchema#gYear>\t.")
            buf.extend(block)
            n += len(block)
            if len(buf) >= 100_000:
                fh.write("\n".join(buf) + "\n")
                buf = []
        if buf:
            fh.write("\n".join(buf) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=22_000_000)
    ap.add_argument("--hops", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tog-bench-freebase"))
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    dump = args.workdir / f"dump-{args.lines}.nt"
    ensure_dump(dump, lambda path: generate(path, args.lines))
    rng = random.Random(1)
    entities = max(1000, args.lines // 12)
    seeds = [f"m.0{rng.randrange(entities):x}" for _ in range(args.seeds)]
    run_extract("freebase", dump, seeds, args.hops, args.workdir / "subset.nt", args.lines, "dump lines")

if __name__ == "__main__":
    main()
