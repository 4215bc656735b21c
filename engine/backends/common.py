"""What every backend shares, so that they give the same answers: which
neighbours of a hub are kept, how unnamed nodes are looked through, which
name wins."""

from __future__ import annotations

import hashlib
import heapq
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TypeVar

import pyoxigraph as ox

from engine.graph import (
    CANDIDATE_WINDOW,
    MAX_CANDIDATES,
    Candidate,
    Direction,
    KnowledgeGraph,
    Node,
    Relation,
    RelationPolicy,
    is_literal,
    literal_value,
    local_name,
)

T = TypeVar("T")

# A neighbour found by ``expand`` before selection: a Node, or None for an
# entity that has no name (a Freebase CVT), to be looked through.
Found = dict[tuple[str, Relation], dict[str, Node | None]]


def lang_rank(lang: str | None) -> int:
    """Lower is better: English, then no language, then anything else."""
    lang = (lang or "").lower()
    if lang == "en":
        return 0
    if lang.startswith("en-"):
        return 1
    if not lang:
        return 2
    return 3


# Names in these languages (lang_rank below SHOWN_RANK: English, en-*, untagged) are the ones the
# embedded store keeps a node's shown name among; a node with none is read (see OxigraphKG.labels)
SHOWN_RANK = 3


def name_rank(lang: str | None, order: int) -> int:
    """A name's rank among a node's names, lower shown first: its language's
    ``lang_rank``, then its predicate's place among the name predicates. Of
    equal ranks, the lower text (code point order) is shown, on every backend."""
    return lang_rank(lang) * 100 + order


def shown_rank(lang: str | None, order: int) -> int | None:
    """``name_rank`` of a name the embedded store keeps to show a node by
    (English or untagged: SHOWN_RANK); None for a name in another language."""
    return ranked_shown(lang_rank(lang), order)


def ranked_shown(rank: int, order: int) -> int | None:
    """``shown_rank`` of a name whose language's ``lang_rank`` is ``rank``."""
    return rank * 100 + order if rank < SHOWN_RANK else None


# A crowded pair with more edges than this is sampled by the load (with the summaries), never
# by the first question that expands it: a store sorts about 8 µs an edge inside a query
# (a 1M-edge pair, a real KG's (male, gender), 10-12 s on the embedded store). It is the hub
# threshold (HUB_EDGES), so such a pair is always a summarised hub's, and a question sorts
# at most 1,000 edges (under 10 ms).
SORT_MAX = 1_000


def sample_serves(degree: int, held: int, window: int) -> bool:
    """Whether a crowded pair's kept sample (``held`` of its ``degree``
    neighbours) answers a question's ``window``: it holds the window, or the
    pair is past SORT_MAX, which no question sorts (a correction that took
    out one of its kept neighbours leaves it one short: a sort to refill it
    would read the pair whole; one that leaves it under SAMPLE_FLOOR sorts
    it again, ``sample_refills``)."""
    return held >= min(degree, window) or degree > SORT_MAX


# The neighbours a store keeps of a crowded pair, in the sample order: the largest
# candidate window (4,096), so that a question reads a crowded pair from what was kept.
SAMPLE_KEEP = CANDIDATE_WINDOW * MAX_CANDIDATES

# A correction that takes a kept sample of a pair past SORT_MAX under this many neighbours
# (and under the pair's degree) has the store sort the pair again, inside the correction:
# the sample stays the first neighbours in sample order when neighbours leave it, but
# shrinks, and no question refills it (a question never sorts such a pair). Half of
# SAMPLE_KEEP: it still holds a question's window at up to 512 candidates a pair (the
# default is 100), and a pair is sorted again at most once every 2,048 of its kept
# neighbours taken out.
SAMPLE_FLOOR = SAMPLE_KEEP // 2


def sample_moved(sample: Sequence[str], degree: int, moved: Iterable[tuple[str, bool]]) -> list[str]:
    """A crowded pair's kept ``sample`` (of a pair of ``degree`` edges when it
    was kept) after its neighbours ``moved``: each (neighbour, whether the
    pair has it now), in order. A sample is the first neighbours in sample
    order: it stays one when a neighbour leaves it, or joins it ahead of its
    last one, or anywhere while it holds every neighbour (until a neighbour
    past SAMPLE_KEEP is cut off)."""
    sample, whole = list(sample), len(sample) >= degree
    for neighbour, there in moved:
        old, sample = sample, [x for x in sample if x != neighbour]
        if there and (whole or (old and sample_key(neighbour) < sample_key(old[-1]))):
            sample = heapq.nsmallest(len(sample) + 1, [*sample, neighbour], key=sample_key)
        whole = whole and len(sample) <= max(len(old), SAMPLE_KEEP)
        sample = sample[: max(len(old), SAMPLE_KEEP)]
    return sample


def sample_refills(degree: int, held: int) -> bool:
    """Whether a correction that left a crowded pair of ``degree`` edges with
    ``held`` kept neighbours sorts the pair again (SAMPLE_FLOOR)."""
    return degree > SORT_MAX and held < min(degree, SAMPLE_FLOOR)

# The look-ahead schema (which relations follow which), the same on every backend: the
# relations around SCHEMA_TAILS of the nodes a relation leads to, the first in the sample
# order among the distinct ones its first SCHEMA_READ edges reach (``look_ahead_tails``;
# for a relation of at most SCHEMA_READ edges those are all of them, so its tails are the
# same whatever order a backend reads them in); a tail that is a hub shows all its
# relations (its summary or degree counts), any other what its first SCHEMA_EDGES edges
# each way show. Bounded by construction: a relation's schema reads at most SCHEMA_READ +
# 2 x SCHEMA_TAILS x SCHEMA_EDGES edges besides the hubs' counts.
SCHEMA_TAILS = 16
SCHEMA_READ = 256
SCHEMA_EDGES = 32
# how ``tog info`` says it on every backend
SCHEMA_MADE = (f"{SCHEMA_TAILS} tails per relation, the first in sample order of those its first {SCHEMA_READ} "
               f"edges reach, {SCHEMA_EDGES} edges each way of each")


def look_ahead_tails(part: Sequence[T], reach: Callable[[Sequence[T], int], dict[int, list[str]]],
                     small: Callable[[Sequence[T]], Collection[T]]) -> dict[int, list[str]]:
    """The look-ahead's tails of each relation of ``part`` (a relation and
    direction, as a backend names them), by its place in it.

    ``reach(relations, most)`` gives, by place, at most ``most`` of the
    distinct nodes the first SCHEMA_READ edges of each reach (in the order
    the store reads them); ``small(relations)`` which have at most
    SCHEMA_READ edges in all. The first read stops one node past
    SCHEMA_TAILS, as cheap as a read of the tails alone. A relation that
    went past it is read again, up to SCHEMA_READ nodes, only when it is
    small: its first edges are then all its edges, and its tails the first
    SCHEMA_TAILS of them in the sample order on every backend. A bigger
    relation keeps the first SCHEMA_TAILS in the sample order of what its
    first read found: its first edges are the store's own, and the tails
    may differ by backend (reading SCHEMA_READ nodes of each of them cost a
    cold question 30-60 ms more at 10M triples)."""
    found = reach(part, SCHEMA_TAILS + 1)
    past = [k for k, nodes in found.items() if len(set(nodes)) > SCHEMA_TAILS]
    if past:
        whole = set(small([part[k] for k in past]))
        again = [k for k in past if part[k] in whole]
        if again:
            read = reach([part[k] for k in again], SCHEMA_READ)
            found.update({k: read.get(j, []) for j, k in enumerate(again)})
    import heapq

    return {k: heapq.nsmallest(SCHEMA_TAILS, set(nodes), key=sample_key) for k, nodes in found.items()}


@lru_cache(maxsize=1 << 16)  # hubs come back question after question
def sample_key(node_id: str) -> tuple[str, str]:
    """A reproducible pseudo-random order, used when a node has more
    neighbours than wanted: the SHA-1 of the IRI (of the lexical form for a
    literal, given as its N-Triples id), which a SPARQL endpoint computes
    as ``SHA1(STR(?x))`` and so can pick the same sample itself."""
    text = literal_value(node_id) if is_literal(node_id) else node_id
    return hashlib.sha1(text.encode("utf-8")).hexdigest(), node_id


def sample_hash(node_id: str) -> str:
    """The hash part of ``sample_key``: what a store keeps on a node so that
    it can sort neighbours in the sample order itself (Neo4j's ``sk``)."""
    return sample_key(node_id)[0]


def merged_sample(old: list[str], before: int, new: Iterable[str], keep: int) -> list[str]:
    """A kept sample (``old``: the first of a pair's ``before`` neighbours
    in the sample order) with neighbours written since merged in, still the
    first of the pair's neighbours: a sample that held only the first of
    them keeps as many (a new one ahead of its last takes the last's place;
    one after it may come after neighbours it never held); a whole one
    grows up to ``keep``."""
    import heapq

    cut = len(old) if len(old) < before else max(len(old), keep)
    return heapq.nsmallest(cut, set(old).union(new), key=sample_key)


def natural(path_id: str) -> tuple[int, str]:
    """Order path ids ``p2`` before ``p10``."""
    digits = "".join(c for c in path_id if c.isdigit())
    return (int(digits) if digits else 0, path_id)


def past_or_first(read: Callable[[int], list[str]], most: int, skip: int) -> list[str]:
    """``named_entities`` of any backend: ``read(skip)`` (its first ``most``
    entities past ``skip`` names), or ``read(0)`` when fewer lie past it."""
    found: list[str] = []
    for start in dict.fromkeys((skip, 0)):
        more = read(start)[:most]
        found = more if len(more) > len(found) else found
        if len(found) == most:
            break
    return found


def end_changes(changes: Iterable[tuple[str, str, str | None, int]]) -> dict[tuple[str, Direction, str], int]:
    """What facts a correction changes, (subject, relation, object or None
    for a literal, +1 came or -1 went) each, add to the degree of each
    (entity, direction, relation) at their ends: what a hub's summary moves by."""
    out: dict[tuple[str, Direction, str], int] = defaultdict(int)
    for s, r, o, n in changes:
        out[(s, "out", r)] += n
        if o is not None:
            out[(o, "in", r)] += n
    return dict(out)


def chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def chunks_within(items: Sequence[T], size: int, budget: int, weight: Callable[[T], int]) -> Iterable[Sequence[T]]:
    """``chunks`` of at most ``size`` items whose ``weight`` adds up to at
    most ``budget`` (an item past it alone), in order."""
    start, total = 0, 0
    for i, item in enumerate(items):
        w = weight(item)
        if i > start and (i - start == size or total + w > budget):
            yield items[start:i]
            start, total = i, 0
        total += w
    if start < len(items):
        yield items[start:]


def expand_request(requests: Sequence[tuple[str, Relation]], limit: int
                   ) -> tuple[list[tuple[str, Relation]], int]:
    """What every backend's ``expand`` starts from: the distinct pairs that
    can have neighbours (a literal has none), and the limit taken as at most
    MAX_CANDIDATES (a wider window would sort a crowded pair whole)."""
    return list(dict.fromkeys((e, r) for e, r in requests if not is_literal(e))), min(limit, MAX_CANDIDATES)


def crowd_cap(neighbours: int, limit: int, over: int = 0, size: int = 5) -> int:
    """How many candidates a pair with ``neighbours`` offers: ``limit``, or
    with ``over`` set, ToG's rule for crowded relations: ``size`` of them
    when there are ``over`` or more (ToG samples 5 of 20 or more)."""
    return min(limit, size) if over and neighbours >= over else limit


def select_candidates(
    requests: Sequence[tuple[str, Relation]],
    found: Found,
    limit: int,
    look_through: Callable[[list[tuple[tuple[str, Relation], str]], int], list[Candidate]],
    *,
    over: int = 0,
    size: int = 5,
    counts: dict[tuple[str, Relation], int] | None = None,
) -> list[Candidate]:
    """At most ``limit`` candidates per request (fewer for crowded ones, see
    ``crowd_cap``), the same on every backend: neighbours in ``sample_key``
    order (CANDIDATE_WINDOW times the cap, leaving room for unnamed nodes), unnamed ones
    replaced by what ``look_through`` finds behind them. ``counts`` gives
    each pair's number of neighbours where ``found`` holds only a window."""
    candidates: list[Candidate] = []
    unnamed: list[tuple[tuple[str, Relation], str]] = []
    caps: dict[tuple[str, Relation], int] = {}
    for source, rel in requests:
        seen = found.get((source, rel), {})
        n = counts[(source, rel)] if counts and (source, rel) in counts else len(seen)
        cap = caps[(source, rel)] = crowd_cap(n, limit, over, size)
        for xid in sorted(seen, key=sample_key)[: cap * CANDIDATE_WINDOW]:
            node = seen[xid]
            if node is None:
                unnamed.append(((source, rel), xid))
            else:
                candidates.append(Candidate(source, rel, node))
    if unnamed:
        candidates.extend(look_through(unnamed, limit))
    per: dict[tuple[str, Relation], int] = defaultdict(int)
    kept = []
    for c in candidates:
        k = (c.source, c.relation)
        if per[k] < caps.get(k, limit):
            per[k] += 1
            kept.append(c)
    return kept


def look_through(
    kg: KnowledgeGraph,
    unnamed: list[tuple[tuple[str, Relation], str]],
    limit: int,
) -> list[Candidate]:
    """Present unnamed nodes (Freebase CVTs) by their named neighbours:
    ``source --r1--> (cvt) --r2--> named`` becomes one candidate. What is
    behind a node comes from the backend's own bounded expansion (sample
    order, a crowded pair read from its sample), at most ``limit`` per node,
    without looking through again: a node with 100k edges is never read
    whole."""
    cvts = sorted({x for _, x in unnamed})
    rels = kg.relations(cvts)
    requests = [(x, r) for x in cvts for r in rels.get(x, []) if r.direction == "out"]
    second: dict[str, list[Candidate]] = defaultdict(list)
    for c in kg.expand(requests, limit, through=False) if requests else []:
        if len(second[c.source]) < limit:
            second[c.source].append(c)
    out = []
    for (source, rel), cvt in unnamed:
        through = [c for c in second.get(cvt, []) if c.node.id != source]
        if not through:
            # nothing named behind it: offer the node itself under its IRI's tail
            out.append(Candidate(source, rel, Node(cvt, local_name(cvt))))
        for c in through:
            out.append(Candidate(source, rel, c.node, via=(c.relation,)))
    return out


def nothing_behind(unnamed: list[tuple[tuple[str, Relation], str]], limit: int) -> list[Candidate]:
    """``select_candidates``' look-through for a second level: unnamed nodes
    there are dropped, not looked through again."""
    return []


def informative(found: Iterable[Relation], policy: RelationPolicy, name_predicates: Iterable[str]) -> list[Relation]:
    """The relations of ``found`` that the search may offer (the policy
    allows them and they carry no names), sorted."""
    names = set(name_predicates)
    return sorted((r for r in set(found) if policy.allows(r.id) and r.id not in names),
                  key=lambda r: (r.id, r.direction))


def label_relations(kg: KnowledgeGraph, found: dict[str, list[Relation]], cache: dict[str, str | None]) -> None:
    """Give the relations in ``found`` the names the KG has for them (a
    Wikidata subset names ``wdt:P19`` "place of birth"); one batched label
    lookup for the relations not seen before, remembered in ``cache``."""
    new = sorted({r.id for rels in found.values() for r in rels if r.id not in cache})
    if new:
        names = kg.labels(new)
        for rid in new:
            cache[rid] = names.get(rid)
    for e, rels in found.items():  # (most KGs name no relation: then nothing is made again)
        found[e] = [r if r.label == (label := cache.get(r.id)) else replace(r, label=label) for r in rels]


def term_too_long(q: ox.Quad, limit: int, names: Collection[str] = ()) -> str | None:
    """Why the quad cannot be kept by a store whose ids are at most ``limit``
    UTF-8 bytes (None when it can). A name (a literal of a predicate in
    ``names``) is no id: only its linking key is indexed, and that is capped
    apart (``engine.graph.MAX_NAME_KEY``)."""
    name = q.predicate.value in names
    for what, term in (("subject", q.subject), ("object", q.object)):
        if name and what == "object":
            continue
        text = term.value if isinstance(term, ox.NamedNode) else str(term) if isinstance(term, ox.Literal) else ""
        if len(text) * 4 > limit and len(size := text.encode("utf-8")) > limit:
            return f"its {what} is {len(size):,} bytes long; this store keeps at most {limit:,}"
    return None
