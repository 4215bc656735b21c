"""Wikidata subset extraction on a generated JSON dump: lines/s and peak RSS.

Generates (once, under --workdir) a seeded dump in the shape of
``latest-all.json`` (a JSON array, one entity a line, labels in two
languages, aliases, descriptions, claims with ranks, qualifiers and
references, external ids), then runs `tog extract wikidata` in a child
process around --seeds random items and prints wall time, dump lines per
second over all passes, and peak RSS.

    python benchmarks/wikidata_extract.py --entities 600000 --hops 2    # ~2.3 GB
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from extract_run import ensure_dump, run_extract

PROPS = [f"P{n}" for n in (19, 20, 27, 31, 50, 57, 58, 106, 108, 136, 161, 166, 495, 569, 570, 1082)]


def generate(path: Path, entities: int, seed: int = 11) -> None:
    rng = random.Random(seed)

    def snak(prop: str, target: str) -> dict:
        return {"mainsnak": {"snaktype": "value", "property": prop, "datatype": "wikibase-item",
                             "datavalue": {"type": "wikibase-entityid",
                                           "value": {"entity-type": "item", "id": target,
                                                     "numeric-id": int(target[1:])}}},
                "type": "statement", "id": f"{target}$x", "rank": rng.choice(["normal"] * 8 + ["preferred"]),
                "qualifiers": {"P580": [{"snaktype": "value", "property": "P580", "datavalue": {
                    "type": "time", "value": {"time": "+2001-01-01T00:00:00Z"}}}]},
                "references": [{"hash": "abc", "snaks": {"P248": []}}]}

    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[\n")
        for i in range(1, entities + 1):
            claims: dict[str, list] = {}
            for _ in range(rng.randrange(3, 12)):
                prop = rng.choice(PROPS)
                target = f"Q{rng.randrange(1, 200) if rng.random() < 0.2 else rng.randrange(1, entities + 1)}"
                claims.setdefault(prop, []).append(snak(prop, target))
            claims["P214"] = [{"mainsnak": {"snaktype": "value", "property": "P214", "datatype": "external-id",
                                            "datavalue": {"type": "string", "value": str(rng.random())}},
                               "rank": "normal"}]
            entity = {"type": "item", "id": f"Q{i}",
                      "labels": {"en": {"language": "en", "value": f"Entity {i}"},
                                 "fr": {"language": "fr", "value": f"Entité {i}"}},
                      "descriptions": {"en": {"language": "en", "value": f"thing number {i}"}},
                      "aliases": {"en": [{"language": "en", "value": f"E{i}"}]}, "claims": claims}
            fh.write(json.dumps(entity, ensure_ascii=False) + (",\n" if i < entities else "\n"))
        fh.write("]\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=600_000)
    ap.add_argument("--hops", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tog-bench-wikidata"))
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    dump = args.workdir / f"dump-{args.entities}.json"
    ensure_dump(dump, lambda path: generate(path, args.entities))
    rng = random.Random(1)
    seeds = [f"Q{rng.randrange(1, args.entities + 1)}" for _ in range(args.seeds)]
    run_extract("wikidata", dump, seeds, args.hops, args.workdir / "subset.nt", args.entities, "entity lines")

if __name__ == "__main__":
    main()
