"""Seeded synthetic Freebase-style N-Triples generator.

The graph has a power-law degree distribution (a few hubs with 10k+ edges),
about 500 predicates named like Freebase ones, and an English
``type.object.name`` for every entity, so it exercises the same code paths as
a real Freebase subset.

    python benchmarks/synth.py --triples 1000000 --out /tmp/synth-1m.nt
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

NS = "http://rdf.freebase.com/ns/"
NAME = f"<{NS}type.object.name>"
DOMAINS = ["film", "music", "people", "location", "sports", "book", "tv",
           "organization", "education", "business"]
WORDS = ["red", "river", "stone", "north", "silver", "night", "king", "paper",
         "garden", "iron", "blue", "west", "city", "moon", "glass", "winter",
         "falcon", "harbor", "oak", "ember", "lake", "crown", "echo", "field"]


def predicates(rng: random.Random, count: int = 500) -> list[str]:
    """Freebase-like predicate IRIs: domain.type.property."""
    out = set()
    while len(out) < count:
        dom = rng.choice(DOMAINS)
        out.add(f"<{NS}{dom}.{rng.choice(WORDS)}_{dom}.{rng.choice(WORDS)}_{rng.randrange(40)}>")
    return sorted(out)


def generate(triples: int, out: Path, seed: int = 7) -> dict[str, int]:
    """Write about ``triples`` lines to ``out``; return counts."""
    rng = random.Random(seed)
    preds = predicates(rng)
    n_entities = max(triples // 10, 100)
    written = 0
    with out.open("w", encoding="utf-8") as fh:
        for i in range(n_entities):
            name = " ".join(rng.choice(WORDS) for _ in range(2)).title()
            fh.write(f"<{NS}m.{i:x}> {NAME} \"{name} {i}\"@en .\n")
            written += 1
        written += _edges(rng, fh, triples - written, n_entities, preds)
    return {"lines": written, "entities": n_entities, "predicates": len(preds)}


def generate_more(lines: int, base: int, out: Path, seed: int = 8) -> dict[str, int]:
    """Write ``lines`` more edges for the graph ``generate(base, ...)``
    wrote with its default seed: its entities and predicates, the same
    power law (a second load into the same store)."""
    preds = predicates(random.Random(7))
    n_entities = max(base // 10, 100)
    with out.open("w", encoding="utf-8") as fh:
        written = _edges(random.Random(seed), fh, lines, n_entities, preds)
    return {"lines": written, "entities": n_entities, "predicates": len(preds)}


def _edges(rng: random.Random, fh, edges: int, n_entities: int, preds: list[str]) -> int:
    """Write ``edges`` edge lines among ``n_entities`` entities; return how many."""
    # Zipf-like weights: entity rank r gets weight 1/r^1.1, so the top ranks
    # become hubs with tens of thousands of edges.
    weights = [1.0 / (r ** 1.1) for r in range(1, n_entities + 1)]
    cum = []
    acc = 0.0
    for w in weights:
        acc += w
        cum.append(acc)
    pred_weights = [1.0 / (r ** 0.8) for r in range(1, len(preds) + 1)]
    written = 0
    batch = 100_000
    while edges > 0:
        k = min(batch, edges)
        heads = rng.choices(range(n_entities), cum_weights=cum, k=k)
        tails = rng.choices(range(n_entities), cum_weights=cum, k=k)
        rels = rng.choices(preds, weights=pred_weights, k=k)
        lines = []
        for h, r, t in zip(heads, rels, tails):
            if rng.random() < 0.05:
                lines.append(f"<{NS}m.{h:x}> {r} \"{rng.randrange(1800, 2030)}\""
                             "^^<http://www.w3.org/2001/XMLSchema#gYear> .\n")
            else:
                lines.append(f"<{NS}m.{h:x}> {r} <{NS}m.{t:x}> .\n")
        fh.writelines(lines)
        written += k
        edges -= k
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triples", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    print(generate(args.triples, args.out, args.seed))


if __name__ == "__main__":
    main()
