#!/usr/bin/env python3
"""Regenerate the MetaQA quick-start sample (kb.txt, questions.txt, questions.jsonl).

Usage:  python make_sample.py [METAQA_DIR] [--out OUT_DIR]

METAQA_DIR defaults to /work/shared/data/metaqa and must contain kb.txt.gz and
{1,2,3}-hop/qa_dev.txt.gz + qa_dev_qtype.txt.gz (the original MetaQA release files,
gzipped). OUT_DIR defaults to the directory of this script.

Selection rule (deterministic, seed SEED):
  * For every hop count there is a fixed list of 7 question types (QTYPES below).
  * A dev question of that type is a candidate when
      - following its relation path from the topic entity over the FULL KB gives
        exactly the gold answer set (this drops questions whose answers were split
        on commas in the source and 1-hop questions about merged same-title movies),
      - it has 1..MAX_ANSWERS answers and its topic entity has KB degree <= MAX_DEGREE,
      - the triples it needs (see below) number at most MAX_COST[hops],
      - its topic entity is not the topic of an already chosen question.
  * One candidate per question type is drawn with random.Random(SEED), types in
    the listed order, hops 1, 2, 3.
  * Triples kept per question:
      - the path closure: for every node reached at step i, ALL triples of the
        step's relation in the step's direction (so the path over the sample gives
        exactly the same answers as over the full KB);
      - context: ALL triples touching every path node (topic, intermediate nodes,
        answers) whose KB degree is <= MAX_DEGREE, so that a reasoner also sees
        distracting relations. High-degree value nodes (years, genres, languages,
        popular tags, prolific people) only get their path triples.
  * kb.txt is the sorted, de-duplicated union of the kept KB lines (verbatim).

Finally every question is re-answered over the SAMPLE along its qtype path and
compared with the gold answers; any mismatch aborts with an error.

Python 3.11, standard library only.
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from collections import defaultdict
from pathlib import Path

SEED = 20240601
MAX_ANSWERS = 8
MAX_DEGREE = 120
MAX_COST = {1: 250, 2: 500, 3: 800}
MIN_TRIPLES, MAX_TRIPLES = 1000, 5000

QTYPES = {
    1: [
        "movie_to_director",
        "writer_to_movie",
        "actor_to_movie",
        "movie_to_genre",
        "movie_to_language",
        "movie_to_year",
        "movie_to_tags",
    ],
    2: [
        "movie_to_director_to_movie",
        "movie_to_actor_to_movie",
        "writer_to_movie_to_genre",
        "actor_to_movie_to_language",
        "director_to_movie_to_year",
        "actor_to_movie_to_writer",
        "writer_to_movie_to_director",
    ],
    3: [
        "movie_to_actor_to_movie_to_director",
        "movie_to_director_to_movie_to_actor",
        "movie_to_writer_to_movie_to_genre",
        "movie_to_actor_to_movie_to_language",
        "movie_to_director_to_movie_to_year",
        "movie_to_actor_to_movie_to_writer",
        "movie_to_writer_to_movie_to_language",
    ],
}

# qtype word -> KB relation. Every KB triple has a movie as head, so a step
# "movie_to_X" follows REL[X] forwards (head -> tail) and "X_to_movie" follows
# REL[X] backwards (tail -> head).
REL = {
    "actor": "starred_actors",
    "director": "directed_by",
    "writer": "written_by",
    "genre": "has_genre",
    "language": "in_language",
    "year": "release_year",
    "tags": "has_tags",
    "tag": "has_tags",
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
}

TOPIC_RE = re.compile(r"\[([^\]]+)\]")


def path_steps(qtype: str) -> list[tuple[str, bool]]:
    """qtype -> [(relation, forward?)]."""
    parts = qtype.split("_to_")
    steps = []
    for a, b in zip(parts, parts[1:]):
        if a == "movie":
            steps.append((REL[b], True))
        elif b == "movie":
            steps.append((REL[a], False))
        else:
            raise ValueError(f"unsupported qtype {qtype}")
    return steps


class KB:
    def __init__(self, lines):
        self.fwd = defaultdict(lambda: defaultdict(set))  # rel -> head -> {line}
        self.bwd = defaultdict(lambda: defaultdict(set))  # rel -> tail -> {line}
        self.touch = defaultdict(set)  # entity -> {line}
        self.parts = {}
        for line in lines:
            h, r, t = line.split("|")
            self.parts[line] = (h, r, t)
            self.fwd[r][h].add(line)
            self.bwd[r][t].add(line)
            self.touch[h].add(line)
            self.touch[t].add(line)

    def degree(self, e: str) -> int:
        return len(self.touch.get(e, ()))

    def follow(self, topic: str, qtype: str):
        """Follow the qtype path from topic. Returns (answers, path_nodes, closure_lines).

        MetaQA semantics: the topic entity is never revisited or returned."""
        frontier = {topic}
        nodes = {topic}
        closure = set()
        for rel, forward in path_steps(qtype):
            index = self.fwd[rel] if forward else self.bwd[rel]
            nxt = set()
            for n in frontier:
                for line in index.get(n, ()):
                    closure.add(line)
                    h, _, t = self.parts[line]
                    nxt.add(t if forward else h)
            frontier = nxt - {topic}
            nodes |= frontier
        return frontier, nodes, closure


def read_gz_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def parse_question(line: str):
    text, ans = line.split("\t")
    topics = TOPIC_RE.findall(text)
    return text, ans.split("|"), topics


def main(argv=None) -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("metaqa_dir", nargs="?", default="/work/shared/data/metaqa")
    ap.add_argument("--out", default=str(here))
    args = ap.parse_args(argv)
    src, out = Path(args.metaqa_dir), Path(args.out)
    if not (src / "kb.txt.gz").exists():
        print(f"MetaQA data not found at {src} (need kb.txt.gz)", file=sys.stderr)
        return 2

    full = KB(read_gz_lines(src / "kb.txt.gz"))
    rng = random.Random(SEED)
    chosen = []  # dicts
    keep: set[str] = set()
    used_topics: set[str] = set()

    for hops in (1, 2, 3):
        qs = read_gz_lines(src / f"{hops}-hop" / "qa_dev.txt.gz")
        ts = read_gz_lines(src / f"{hops}-hop" / "qa_dev_qtype.txt.gz")
        assert len(qs) == len(ts), (hops, len(qs), len(ts))
        by_type = defaultdict(list)
        for lineno, (q, t) in enumerate(zip(qs, ts), start=1):
            by_type[t].append((lineno, q))
        for qtype in QTYPES[hops]:
            assert len(path_steps(qtype)) == hops, qtype
            cands = []
            for lineno, q in by_type[qtype]:
                text, gold, topics = parse_question(q)
                if len(topics) != 1:
                    continue
                topic = topics[0]
                if topic in used_topics or topic in gold:
                    continue
                if not 1 <= len(gold) <= MAX_ANSWERS or len(set(gold)) != len(gold):
                    continue
                if not 0 < full.degree(topic) <= MAX_DEGREE:
                    continue
                answers, nodes, closure = full.follow(topic, qtype)
                if answers != set(gold):
                    continue
                need = set(closure)
                for n in nodes:
                    if full.degree(n) <= MAX_DEGREE:
                        need |= full.touch[n]
                if len(need) > MAX_COST[hops]:
                    continue
                cands.append((lineno, q, text, gold, topic, need))
            if not cands:
                raise SystemExit(f"no candidate for {qtype}")
            lineno, q, text, gold, topic, need = rng.choice(cands)
            used_topics.add(topic)
            keep |= need
            chosen.append({
                "id": f"{hops}hop-{lineno}",
                "question": text,
                "answers": gold,
                "topic_entities": [topic],
                "type": qtype,
                "hops": hops,
                "_line": q,
            })

    kb_lines = sorted(keep)
    if not MIN_TRIPLES <= len(kb_lines) <= MAX_TRIPLES:
        raise SystemExit(f"sample has {len(kb_lines)} triples, outside "
                         f"[{MIN_TRIPLES}, {MAX_TRIPLES}]: adjust MAX_COST/MAX_DEGREE")

    # ---- verification over the SAMPLE --------------------------------------
    sample = KB(kb_lines)
    full_set = set(full.parts)
    assert all(line in full_set for line in kb_lines), "sample line not in KB"
    assert len(set(kb_lines)) == len(kb_lines)
    failures = []
    for q in chosen:
        topic = q["topic_entities"][0]
        got, _, _ = sample.follow(topic, q["type"])
        if got != set(q["answers"]):
            failures.append((q["id"], sorted(got), sorted(q["answers"])))
    if failures:
        for f in failures:
            print("MISMATCH", *f, file=sys.stderr)
        raise SystemExit(f"{len(failures)} question(s) not answerable in the sample")

    # ---- write ---------------------------------------------------------------
    out.mkdir(parents=True, exist_ok=True)
    (out / "kb.txt").write_text("".join(l + "\n" for l in kb_lines), encoding="utf-8")
    (out / "questions.txt").write_text(
        "".join(q["_line"] + "\n" for q in chosen), encoding="utf-8")
    with open(out / "questions.jsonl", "w", encoding="utf-8") as f:
        for q in chosen:
            rec = {k: v for k, v in q.items() if not k.startswith("_")}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    entities = {e for line in kb_lines for e in (sample.parts[line][0], sample.parts[line][2])}
    rels = defaultdict(int)
    for line in kb_lines:
        rels[sample.parts[line][1]] += 1
    per_hop = defaultdict(int)
    for q in chosen:
        per_hop[q["hops"]] += 1
    print(f"triples: {len(kb_lines)}  entities: {len(entities)}  relations: {len(rels)}")
    print("  " + ", ".join(f"{r}={n}" for r, n in sorted(rels.items())))
    print("questions: " + ", ".join(f"{h}-hop={per_hop[h]}" for h in (1, 2, 3)))
    for q in chosen:
        print(f"  {q['id']:<12} {q['type']:<40} {q['topic_entities'][0]} -> {len(q['answers'])} answer(s)")
    print(f"verified: all {len(chosen)} questions give exactly the gold answers over the sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())
