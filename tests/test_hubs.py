"""Hubs on the embedded store: a 210k-edge entity is never read whole at
question time.

Every query's rows are counted (a spy on the KG's one query function):
the load builds each hub's summary (relations and degrees), so relation
listing reads no hub at all and every other entity's listing is bounded;
expansion returns at most a bounded number of rows whatever the hub (a
crowded pair past SORT_MAX edges is sampled by the load, a smaller one
sorted by the store inside the query once, then read back; a hub's pair
takes its degree from the summary); answers equal
those computed from the whole graph; and corrections, reverts, a killed-then-resumed load and a store made before
summaries existed keep (or make) the summaries true to the KG."""

from __future__ import annotations

import re

import pytest
from conftest import RDFS_LABEL, iri, open_graph, write_nt

from engine.backends.common import sample_key
from engine.backends.oxigraph.summaries import HUB_EDGES, SAMPLE_KEEP
from engine.graph import MAX_CANDIDATES, Relation, local_name

OUT, IN = 150_000, 60_000
LINKS, LIKES, BORN = Relation(iri("links"), "out"), Relation(iri("likes"), "in"), Relation(iri("born_in"), "out")


def _hub_lines() -> list[str]:
    lines = [f'<{iri("hub")}> <{RDFS_LABEL}> "The Hub" .', f'<{iri("city")}> <{RDFS_LABEL}> "Hub City" .',
             f"<{iri('hub')}> <{iri('born_in')}> <{iri('city')}> ."]
    lines += [f"<{iri('hub')}> <{iri('links')}> <{iri(f'n{i}')}> ." for i in range(OUT)]
    lines += [f'<{iri(f"n{i}")}> <{RDFS_LABEL}> "Node {i}" .' for i in range(0, OUT, 3)]  # a third named
    lines += [f"<{iri(f'm{i}')}> <{iri('likes')}> <{iri('hub')}> ." for i in range(IN)]
    lines += [f'<{iri(f"m{i}")}> <{RDFS_LABEL}> "Fan {i}" .' for i in range(IN)]
    return lines


@pytest.fixture(scope="module")
def loaded_hub(tmp_path_factory):
    """A store holding the hub graph, loaded once (and closed)."""
    from engine.store import open_store
    from loaders.load import load_file

    folder = tmp_path_factory.mktemp("hub")
    with open_store(folder / "store", create=True) as store:
        report = load_file(store.need_sink(), write_nt(folder / "hub.nt", _hub_lines()))
    assert report.skipped == 0 and report.triples == 3 + OUT + OUT // 3 + 2 * IN
    return folder / "store"


@pytest.fixture
def hub_store(loaded_hub, tmp_path):
    """A copy of it of the test's own, open."""
    import shutil

    shutil.copytree(loaded_hub, tmp_path / "hub-store")
    return open_graph(tmp_path / "hub-store")


def _statement(text: str) -> str:
    """The ``cypher/`` file a Neo4j statement was rendered from (by its first
    line, which no two files share), else the text."""
    from importlib import resources

    first = text.split("\n", 1)[0]
    for f in resources.files("cypher").iterdir():
        if f.name.endswith(".cypher") and f.read_text(encoding="utf-8").split("\n", 1)[0] == first:
            return f.name[: -len(".cypher")]
    return text


def _db_hits(uri: str, text: str, params: dict) -> int:
    """The database hits of one statement, as Neo4j's PROFILE counts them
    (its rows read first: a write's profile is there only then)."""
    import os

    import neo4j

    def total(plan: dict) -> int:
        return plan.get("args", {}).get("DbHits", 0) + sum(total(c) for c in plan.get("children", []))

    auth = (os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"])
    with neo4j.GraphDatabase.driver(uri, auth=auth) as driver, driver.session() as session:
        tx = session.begin_transaction()
        try:  # rolled back: a write is profiled without being made
            result = tx.run("PROFILE " + text, params)
            list(result)
            return total(result.consume().profile)
        finally:
            tx.rollback()


def _hubs_counted(monkeypatch, session) -> list[str]:
    """The hubs a Neo4j session counts per type from now on (``hub_relations``), as it counts them."""
    counted: list[str] = []
    plain = session.run_text

    def spy(text, *args, **params):
        if _statement(text) == "hub_relations":
            counted.extend(params["ids"])
        return plain(text, *args, **params)

    monkeypatch.setattr(session, "run_text", spy)
    return counted


def _loaded(spec: str, path, lines: list[str]):
    """A store (a directory or a Neo4j URI) that holds ``lines`` (loaded from ``path``)."""
    from conftest import open_spec

    from loaders.load import load_file

    store = open_spec(spec, create=True)
    load_file(store.need_sink(), write_nt(path, lines))
    return store


def _neo4j_kg(uri: str, path, lines: list[str]):
    """The KG of a Neo4j store that holds ``lines`` (loaded from ``path``)."""
    return _loaded(uri, path, lines).kg


def _sent(session, method: str, monkeypatch) -> list[tuple[str, dict]]:
    """What ``session``'s ``method`` (``run``: statement names, ``run_text``:
    texts) is sent from now on, with the parameters."""
    sent: list[tuple[str, dict]] = []
    plain = getattr(session, method)

    def spy(first, *args, **params):
        sent.append((first, {k: v for k, v in params.items() if k not in ("write", "meter")}))
        return plain(first, *args, **params)

    monkeypatch.setattr(session, method, spy)
    return sent


class Spy:
    """Every query the KG sends, with the rows it returned (``kg`` a KG, or
    its class: then every KG of it, those a correction makes too)."""

    def __init__(self, kg, monkeypatch) -> None:
        self.calls: list[tuple[str, int]] = []
        plain = kg._select

        def spy(*args, **kwargs):
            rows = plain(*args, **kwargs)
            self.calls.append((args[1] if isinstance(kg, type) else args[0], len(rows)))
            return rows

        monkeypatch.setattr(kg, "_select", spy)

    def most_rows(self) -> int:
        return max((n for _, n in self.calls), default=0)

    def full_reads(self) -> int:
        """Queries that read a whole hub or pair (natively) to summarise it."""
        return sum(1 for text, _ in self.calls if "GROUP BY ?p\n" in text + "\n" and "?k" not in text
                   or "ORDER BY ?h" in text)

    def unbounded(self, entity: str) -> list[str]:
        """Queries that read ``entity``'s edges with no LIMIT (what a hub must never get)."""
        return [text for text, _ in self.calls if f"<{entity}>" in text and "LIMIT" not in text
                and not text.startswith("# Every name of a batch")]  # a names lookup reads names only


def _expected(limit: int, cap: int | None = None, extra: tuple[str, str] | None = None) -> list[tuple[str, str]]:
    """What the search must be offered for (hub, links), from the whole pair
    (and ``extra``, a named neighbour added since): the named neighbours of
    the window in sample order, then the unnamed ones under their IRI's tail
    (nothing is behind them)."""
    cap = cap or limit
    names = {iri(f"n{i}"): f"Node {i}" for i in range(0, OUT, 3)}
    everyone = [iri(f"n{i}") for i in range(OUT)]
    if extra is not None:
        everyone.append(extra[0])
        names[extra[0]] = extra[1]
    window = sorted(everyone, key=sample_key)[: 4 * cap]
    named = [(x, names[x]) for x in window if x in names]
    unnamed = [(x, local_name(x)) for x in window if x not in names]
    return (named + unnamed)[:cap]


def test_a_hubs_relations_come_from_the_summary_its_load_built(hub_store, monkeypatch):
    kg = hub_store.kg
    state = kg.summaries.state()
    assert state["state"] == "fresh" and state["how"] == "at load" and state["hubs"] == {"out": 1, "in": 1}
    assert state["edges"] == OUT + 2 + IN  # its label and born_in besides
    spy = Spy(kg, monkeypatch)
    rels = {(r.id, r.direction): r.degree for r in kg.relations([iri("hub")])[iri("hub")]}
    assert rels == {(LINKS.id, "out"): OUT, (BORN.id, "out"): 1, (LIKES.id, "in"): IN}
    assert spy.full_reads() == 0 and spy.unbounded(iri("hub")) == []  # the hub's edges are not read at all
    assert not any(f"<{iri('hub')}>" in text for text, _ in spy.calls)
    spy.calls.clear()
    again = kg.relations([iri("hub"), iri("city"), iri("n3")])
    assert {(r.id, r.direction): r.degree for r in again[iri("hub")]} == rels
    assert again[iri("city")] == [Relation(BORN.id, "in")]
    assert again[iri("n3")] == [Relation(LINKS.id, "in")]
    # the others, which the fresh summaries say are no hubs (at most HUB_EDGES edges a
    # direction each), in one join; the hub is in no query
    assert spy.full_reads() == 0 and spy.most_rows() <= 4 and len(spy.calls) == 1
    assert spy.unbounded(iri("hub")) == [] and f"<{iri('city')}>" in spy.calls[0][0]
    assert kg.made["hubs"] == 0 and hub_store.kg.summaries.counts()["hubs"] == 2


def test_a_hub_the_summaries_missed_is_summarised_from_its_first_listing(loaded_hub, tmp_path, monkeypatch):
    """Fresh summaries that lack a hub (its load's sample of lines missed it,
    which the tally makes unlikely, not impossible): listing it reads it
    whole once, and what that read counted becomes its summary."""
    import shutil
    import sqlite3

    shutil.copytree(loaded_hub, tmp_path / "store")
    db = sqlite3.connect(tmp_path / "store" / "index.sqlite")
    with db:
        db.execute("DELETE FROM hubs WHERE entity = ? AND direction = 'out'", (iri("hub"),))
        db.execute("DELETE FROM hub_relations WHERE entity = ? AND direction = 'out'", (iri("hub"),))
    db.close()
    kg = open_graph(tmp_path / "store").kg
    assert kg.summaries.fresh() and kg.summaries.counts()["hubs"] == 1
    spy = Spy(kg, monkeypatch)
    rels = {(r.id, r.direction): r.degree for r in kg.relations([iri("hub")])[iri("hub")]}
    assert rels == {(LINKS.id, "out"): OUT, (BORN.id, "out"): 1, (LIKES.id, "in"): IN}
    listings = [text for text, _ in spy.calls if text.startswith("# The relations around")]
    assert len(listings) == 1 and spy.full_reads() == 0  # no second read to summarise it
    assert kg.made["hubs"] == 1 and kg.summaries.counts()["hubs"] == 2
    spy.calls.clear()
    again = {(r.id, r.direction): r.degree for r in kg.relations([iri("hub")])[iri("hub")]}
    assert again == rels and not any(f"<{iri('hub')}>" in text for text, _ in spy.calls)


def _edge_lines(fmt: str) -> list[str]:
    """Hubs at the threshold's edge, shuffled among small entities: 12 with
    HUB_EDGES + 1 edges out, 12 with HUB_EDGES + 1 in, 6 with exactly
    HUB_EDGES out (no hub in N-Triples; in a delimited file their names
    make them one), 20,000 lines about others."""
    import random

    rng = random.Random(7)
    triples = [(f"h{h}", "knows", f"x{h}.{i}") for h in range(12) for i in range(HUB_EDGES + 1)]
    triples += [(f"y{h}.{i}", "likes", f"g{h}") for h in range(12) for i in range(HUB_EDGES + 1)]
    triples += [(f"e{h}", "knows", f"z{i}") for h in range(6) for i in range(HUB_EDGES)]
    triples += [(f"s{rng.randrange(4000)}", f"r{rng.randrange(30)}", f"s{rng.randrange(4000)}") for _ in range(20_000)]
    triples += [("s1", "r1", "s2")] * 3  # a line thrice is one edge
    rng.shuffle(triples)
    if fmt == "tsv":
        return ["\t".join(t) for t in triples]
    sep = [" ", "\t"]  # N-Triples lets any blank part the terms, or none (every edge of h0 and g0)
    out = [f"<{iri(s)}><{iri(p)}><{iri(o)}>." if "h0" in (s, o) or "g0" in (s, o) else
           f"<{iri(s)}>{sep[i % 2]}<{iri(p)}> <{iri(o)}> ." for i, (s, p, o) in enumerate(triples)]
    out[100:100] = ["# a comment line", "", f'<{iri("h0")}> <{RDFS_LABEL}> "Hub Zero" .']
    return out


@pytest.mark.parametrize("fmt", ["nt", "nt.gz"])
def test_a_hub_whose_iri_lines_spell_in_several_ways_is_found_from_the_sample(tmp_path, fmt):
    """An IRI written with escapes (``\\u00E9`` for é) is one entity however
    each line spells it: the load's sample of lines tallies it once, and it
    is summarised as a hub each way (it was split three ways, each part too
    few to be a candidate, and its first listing read all its edges)."""
    import gzip

    from engine.store import open_store
    from loaders.load import load_file

    spellings = [f"<{iri('Hé')}>", f"<{iri('H')}\\u00E9>", f"<{iri('H')}\\u00e9>"]
    edges = HUB_EDGES + 500
    lines = [f"{spellings[i % 3]} <{LINKS.id}> <{iri(f'n{i}')}> ." for i in range(edges)]
    lines += [f"<{iri(f'm{i}')}> <{iri('likes')}> {spellings[i % 3]} ." for i in range(edges)]
    f = tmp_path / f"escaped.{fmt}"
    text = ("\n".join(lines) + "\n").encode()
    f.write_bytes(gzip.compress(text) if fmt.endswith(".gz") else text)
    with open_store(tmp_path / "store", create=True) as store:
        load_file(store.need_sink(), f)
        state = store.kg.summaries.state()
        assert state["found"] == "sampled" and state["hubs"] == {"out": 1, "in": 1}, state
        assert store.kg.summaries.hubs([iri("Hé")]) == {(iri("Hé"), "out"): {LINKS.id: edges},
                                                        (iri("Hé"), "in"): {iri("likes"): edges}}


@pytest.mark.parametrize("fmt", ["nt", "nt.gz", "tsv"])
def test_a_load_into_an_empty_store_finds_every_hub_from_a_sample(tmp_path, fmt, tog):
    """A load into an empty store samples one line in SAMPLE_RATE of what it
    writes, on every path (a whole file, a stream, a delimited file), and
    counts only the entities the sample names: the hubs and degrees it
    keeps are those of counting every edge, down to entities with one edge
    more than HUB_EDGES; a second load updates them from what it touched."""
    import gzip

    from engine.backends.oxigraph.summaries import SAMPLE_RATE, build
    from engine.store import open_store
    from loaders.load import load_file

    lines = _edge_lines(fmt.split(".")[0])
    f = tmp_path / f"edge.{fmt}"
    text = ("\n".join(lines) + "\n").encode()
    f.write_bytes(gzip.compress(text) if fmt.endswith(".gz") else text)
    with open_store(tmp_path / "store", create=True) as store:
        sink = store.need_sink()
        written = load_file(sink, f).triples
        state = store.kg.summaries.state()
        named = 6 if fmt == "tsv" else 0  # a delimited file names its entities: e0-e5 get one edge more
        assert state["found"] == "sampled" and state["hubs"] == {"out": 12 + named, "in": 12}
        taken = sink.tally.taken
        assert abs(taken - written / SAMPLE_RATE) < 0.1 * written / SAMPLE_RATE  # one line in ten
        assert state["candidates"] < 60  # the few entities near the edge, not every one
        table = "SELECT entity, direction, relation, degree FROM hub_relations ORDER BY 1, 2, 3"
        kept = store.kg.summaries.db.execute(table).fetchall()
    info = tog("info", "--store", tmp_path / "store")
    assert f"found among {state['candidates']} candidates from a 1-in-{SAMPLE_RATE} sample" in info.output, info.output
    with open_store(tmp_path / "store") as store:  # the same, counted from every edge
        counted = build(store.kg.db, how="by a test")
        assert counted["found"] == "counted" and counted["hubs"] == state["hubs"]
        assert counted["edges"] == state["edges"] and store.kg.summaries.db.execute(table).fetchall() == kept
    more = tmp_path / "more.nt"  # a second load: the store holds triples and their summaries already
    more.write_text(f"<{iri('h0')}> <{iri('knows')}> <{iri('new')}> .\n")
    loaded = tog("load", more, "--store", tmp_path / "store", "--no-progress")
    assert loaded.exit_code == 0 and "updated for the 2 entities the load wrote edges of" in loaded.output
    info = tog("info", "--store", tmp_path / "store").output
    hubs = 0 if fmt == "tsv" else 1  # a delimited file's entities are not named iri(...)
    # (h0, knows) has HUB_EDGES + 1 edges: past SORT_MAX, so the first load sampled it and this one merges
    assert f"(updated for the 2 entities the last load wrote edges of: {hubs} hub summaries counted again, " \
           f"{hubs} crowded-pair samples merged)" \
        in info, info
    with open_store(tmp_path / "store") as store:  # what the update kept is what counting every edge gives
        kept = store.kg.summaries.db.execute(table).fetchall()
        assert build(store.kg.db, how="by a test")["found"] == "counted"
        assert store.kg.summaries.db.execute(table).fetchall() == kept


def _more_lines() -> list[tuple[str, str, str]]:
    """A second load's triples on top of ``_edge_lines``: e0-e5 (HUB_EDGES
    edges out) get one more, h0 a relation it lacked, g0 in-edges by a new
    relation, a new entity HUB_EDGES + 1 edges, h1 an edge it had, and
    small entities a few edges each."""
    triples = [(f"e{h}", "knows", "z-new") for h in range(6)]
    triples += [("h0", "admires", f"x0.{i}") for i in range(3)]
    triples += [(f"y-new{i}", "fears", "g0") for i in range(4)]
    triples += [("fresh", "knows", f"f{i}") for i in range(HUB_EDGES + 1)]
    triples += [("h1", "knows", "x1.0")]
    triples += [(f"s{i}", "r1", f"s{i + 1}") for i in range(50)]
    return triples


@pytest.mark.parametrize("fmt", ["nt", "nt.gz", "ttl"])
def test_a_load_into_a_summarised_store_counts_only_the_entities_it_touched(tmp_path, fmt, tog, monkeypatch):
    """A load into a store whose summaries are fresh notes every entity it
    writes an edge of, whatever the path (a whole file, a stream, parsed
    quads; terms with no blank between them; a malformed line skipped),
    and counts only those again: no pass over the whole KG, and the hubs
    and degrees it keeps are those of counting every edge (entities made
    hubs by one edge, a hub's new relation, a new hub), for one file or
    two in one command. It counts every edge instead past TOUCHED_MAX
    entities, at a line it cannot read, and into an out-of-date store."""
    import gzip
    import shutil

    from engine.backends.oxigraph import summaries
    from engine.queries import render
    from engine.store import open_store
    from loaders.load import load_file

    base = write_nt(tmp_path / "edge.nt", _edge_lines("nt"))
    triples = _more_lines()
    more = tmp_path / f"more.{fmt}"
    if fmt == "ttl":
        more.write_text(f"@prefix ex: <{iri('')}> .\n" + "".join(f"ex:{s.replace('.', '_')} ex:{p} "
                        f"ex:{o.replace('.', '_')} .\n" for s, p, o in triples))
        triples = [(s.replace(".", "_"), p, o.replace(".", "_")) for s, p, o in triples]
    else:
        lines = [f"<{iri(s)}> <{iri(p)}> <{iri(o)}> ." for s, p, o in triples]
        lines[3] = lines[3].replace(" ", "")  # <s><p><o>.
        if fmt == "nt.gz":  # a line the load skips (its block is then written line by line)
            lines.insert(5, f'<{iri("h0")}> <{iri("newp")}> "unterminated .')
        text = ("\n".join(lines) + "\n").encode()
        more.write_bytes(gzip.compress(text) if fmt.endswith(".gz") else text)
    with open_store(tmp_path / "store", create=True) as store:
        load_file(store.need_sink(), base)
        before = store.kg.summaries.state()["hubs"]
    for copy in ("copy", "two", "stale", "odd"):
        shutil.copytree(tmp_path / "store", tmp_path / copy)
    table = "SELECT entity, direction, relation, degree FROM hub_relations ORDER BY 1, 2, 3"
    with open_store(tmp_path / "store") as store:
        texts: list[str] = []
        query = store.kg.db.query
        monkeypatch.setattr(store.kg.db, "query", lambda text, *a, **k: texts.append(text) or query(text, *a, **k))
        report = load_file(store.need_sink(), more)
        monkeypatch.undo()
        assert report.skipped == (1 if fmt == "nt.gz" else 0)
        state = store.kg.summaries.state()
        assert state["found"] == "updated"
        assert state["touched"] == len({s for s, _, _ in triples} | {o for _, _, o in triples})
        passes = [render(f"hubs_{d}", limit=HUB_EDGES) for d in ("out", "in")]
        assert not any(t in passes for t in texts)  # no pass over every edge
        # hubs now: e0-e5 and the new one, every relation grouped; hubs before:
        # h0 and g0 have the relations the load added edges of counted (and
        # the malformed line's, which finds none), h1 all of its (the one the
        # load touched holds all its edges)
        whole = [t for t in texts if "GROUP BY ?p" in t]
        some = [t for t in texts if "COUNT(*) AS ?n) WHERE {" in t and "?p" not in t]
        counted_pairs = sorted(re.findall(r"<[^>]*/(\w+)> \S+ \.", " ".join(some)))
        assert len(whole) == 8 and state["recounted"] == 10
        assert counted_pairs == (["admires", "fears", "newp"] if fmt == "nt.gz" else ["admires", "fears"])
        assert state["hubs"] == {"out": before["out"] + 6 + 1, "in": before["in"]}
        kept = store.kg.summaries.db.execute(table).fetchall()
        counted = summaries.build(store.kg.db, how="by a test")
        assert (counted["hubs"], counted["edges"]) == (state["hubs"], state["edges"])
        assert store.kg.summaries.db.execute(table).fetchall() == kept
    if fmt == "nt":  # the same lines in two files of one command
        half = len(lines) // 2
        first = write_nt(tmp_path / "first.nt", lines[:half])
        second = write_nt(tmp_path / "second.nt", lines[half:])
        loaded = tog("load", first, second, "--store", tmp_path / "two", "--no-progress")
        assert loaded.exit_code == 0 and "updated for the" in loaded.output, loaded.output
        with open_store(tmp_path / "two") as store:
            assert store.kg.summaries.db.execute(table).fetchall() == kept
    with open_store(tmp_path / "stale") as store:  # a load left it out of date: every edge counted
        store.kg.summaries.mark_stale("a test")
        load_file(store.need_sink(), more)
        state = store.kg.summaries.state()
        assert state["found"] == "counted" and store.kg.summaries.db.execute(table).fetchall() == kept
    if fmt == "nt":  # a line the noting cannot read as a triple: every edge counted
        odd = write_nt(tmp_path / "odd.nt", [*lines, "<broken", f"<{iri('h0')}> <{iri('odd')}> <{iri('z')}> ."])
        with open_store(tmp_path / "odd") as store:
            load_file(store.need_sink(), odd)
            state = store.kg.summaries.state()
            assert state["found"] == "counted" and ("h0", "odd") in {
                (local_name(e), local_name(r)) for e, _, r, _ in store.kg.summaries.db.execute(table)}
    monkeypatch.setattr(summaries, "TOUCHED_MAX", 20)  # too many to follow: every edge counted
    with open_store(tmp_path / "copy") as store:
        load_file(store.need_sink(), more)
        state = store.kg.summaries.state()
        assert state["found"] == "counted" and store.kg.summaries.db.execute(table).fetchall() == kept


def _crowded_pairs(knows: int, crowd: int) -> tuple[list[str], list[tuple[str, Relation]], list[tuple[str, str, str]]]:
    """N-Triples lines of six crowded pairs (star knows ``knows`` entities,
    likes and is a fan's of ``crowd``; mid, other and quiet have ``crowd``
    r-neighbours each), the pairs and their sample keys."""
    lines = [f"<{iri('star')}> <{iri('knows')}> <{iri(f'k{i}')}> ." for i in range(knows)]
    lines += [f"<{iri('star')}> <{iri('likes')}> <{iri(f'l{i}')}> ." for i in range(crowd)]
    lines += [f"<{iri(f'p{i}')}> <{iri('fan_of')}> <{iri('star')}> ." for i in range(crowd)]
    lines += [f"<{iri(e)}> <{iri('r')}> <{iri(f'{e}.{i}')}> ." for e in ("mid", "other", "quiet") for i in range(crowd)]
    pairs = [(iri("star"), Relation(iri("knows"), "out")), (iri("star"), Relation(iri("likes"), "out")),
             (iri("star"), Relation(iri("fan_of"), "in")), (iri("mid"), Relation(iri("r"), "out")),
             (iri("other"), Relation(iri("r"), "out")), (iri("quiet"), Relation(iri("r"), "out"))]
    return lines, pairs, [(e, r.id, r.direction) for e, r in pairs]


@pytest.mark.parametrize("fmt", ["nt", "nt-bad", "ttl"])
def test_a_load_into_a_summarised_store_keeps_the_samples_and_merges_what_it_wrote(tmp_path, fmt, tog, monkeypatch):
    """Crowded pairs' samples outlive a load that notes what it writes: a
    kept pair it wrote edges of gets the new neighbours merged in (those
    the store holds, a literal too; a line the store refuses adds none),
    the sample order kept, so that it equals a sample made again from the
    store; the rest stay as they were, and nothing is sorted again. Past
    FACTS_MAX noted edges the touched samples go instead; a load that
    began and never ended, or one past what it can follow, leaves none
    (the build drops them all). The second load's lines are noted as text
    (``nt``), or as parsed quads (``ttl``; ``nt-bad``, whose bad line sends
    its block down the careful path)."""
    import shutil

    from engine.backends.oxigraph import kg as kg_module
    from engine.backends.oxigraph import summaries
    from engine.store import open_store
    from loaders.load import load_file

    keep = 20  # a sample keeps the first 20 (the window of a limit of 5): every pair below is cut short
    monkeypatch.setattr(summaries, "SAMPLE_KEEP", keep)
    # star's HUB_EDGES + 1 knows make it a hub; its samples here are the ones questions make (the
    # load's own, of pairs past SORT_MAX, are the next test's)
    monkeypatch.setattr(summaries, "SORT_MAX", 2 * HUB_EDGES)
    monkeypatch.setattr(kg_module, "SAMPLE_KEEP", keep)
    crowd = 30
    lines, pairs, keys = _crowded_pairs(HUB_EDGES + 1, crowd)
    with open_store(tmp_path / "store", create=True) as store:
        load_file(store.need_sink(), write_nt(tmp_path / "base.nt", lines))
        store.kg.expand(pairs, limit=5)
        assert store.kg.made["crowded_pairs"] == 6
        gone = store.kg.summaries.samples(keys[3:4])[keys[3]][1][0]
    # a correction takes one of mid's first 20 away: its sample holds 19, the first of 29
    removed = tog("correct", "--remove", f"<{iri('mid')}>|<{iri('r')}>|<{gone}>", "--reason", "r",
                  "--store", tmp_path / "store")
    assert removed.exit_code == 0, removed.output
    with open_store(tmp_path / "store") as store:
        before = store.kg.summaries.samples(keys)
    assert [len(before[k][1]) for k in keys] == [keep, keep, keep, keep - 1, keep, keep]
    for copy in ("begun", "over", "many", "cli"):
        shutil.copytree(tmp_path / "store", tmp_path / copy)

    def new_iri(prefix: str, after: list[str]) -> str:
        """A new neighbour's IRI that sorts ahead of the last of ``after``, or after all of them."""
        last = max(map(sample_key, after))
        return next(x for x in (iri(f"{prefix}{i}") for i in range(1000))
                    if (sample_key(x) < last) == (after is before[knows][1]))

    knows, mid, other = keys[0], keys[3], keys[4]
    new = {"k": new_iri("k-new", before[knows][1]),  # ahead of the last of star's sample
           "m": new_iri("mid.new", [iri(f"mid.{i}") for i in range(crowd)])}  # after every one of mid's
    has = next(x for x in (iri(f"mid.{i}") for i in range(crowd)) if x != gone)
    more_lines = [
        f"<{iri('st')}\\u0061r> <{iri('knows')}> <{new['k']}> .",  # star, its "a" escaped
        f"<{iri('mid')}> <{iri('r')}> <{new['m']}> .",
        f"<{iri('mid')}> <{iri('r')}> <{has}> .",  # an edge it has
        f'<{iri("other")}> <{iri("r")}> "a literal" .',
        f"<{iri('quiet')}> <{iri('elsewhere')}> <{iri('z')}> .",  # quiet touched, not through its pair
        f'<{iri("star")}> <{RDFS_LABEL}> "Star" .']
    if fmt == "nt-bad":  # a line the store refuses (a Turtle file's would stop its parser): skipped
        more_lines.insert(4, f"<{iri('other')}> <{iri('r')}> <{iri('not an iri')}> .")
    more = write_nt(tmp_path / f"more.{fmt.split('-')[0]}", more_lines)  # N-Triples lines are Turtle too
    with open_store(tmp_path / "store") as store:
        report = load_file(store.need_sink(), more)
        state = store.kg.summaries.state()
        assert report.skipped == (fmt == "nt-bad") and state["found"] == "updated" and state["samples_merged"] == 3
        merged = store.kg.summaries.samples(keys)
        assert set(merged) == set(keys) and all(merged[k] == before[k] for k in (keys[1], keys[2], keys[5]))
        assert merged[knows][0] == HUB_EDGES + 2 and new["k"] in merged[knows][1]
        # mid's sample held the first 19 of 29: one after all of them cannot join (it is not the 20th)
        assert merged[mid] == (crowd, before[mid][1])
        assert merged[other][0] == crowd + 1
        got = {pair: [c.node.id for c in store.kg.expand([pair], limit=3)] for pair in pairs}
        assert store.kg.made["crowded_pairs"] == 0  # nothing sorted again
        store.kg.summaries.clear()  # every pair made again from the store: the same samples, the same answers
        assert {pair: [c.node.id for c in store.kg.expand([pair], limit=3)] for pair in pairs} == got
        made = store.kg.summaries.samples(keys)
        for k in keys:  # each merged sample is the first of the pair's neighbours as they are now
            assert merged[k][0] == made[k][0] and merged[k][1] == made[k][1][:len(merged[k][1])], k
    assert "3 crowded-pair samples merged" in tog("info", "--store", tmp_path / "store").output
    loaded = tog("load", more, "--store", tmp_path / "cli", "--no-progress")
    assert loaded.exit_code == 0 and "(3 crowded-pair samples merged)" in loaded.output, loaded.output
    monkeypatch.setattr(summaries, "FACTS_MAX", 2)  # too many edges of kept pairs: the touched samples go
    with open_store(tmp_path / "many") as store:
        load_file(store.need_sink(), more)
        assert store.kg.summaries.state()["samples_merged"] == 0
        assert sorted(store.kg.summaries.samples(keys)) == sorted([keys[1], keys[2]])  # quiet's went too
    with open_store(tmp_path / "begun") as store:  # a load that began and never ended (killed)
        store.need_sink().begin()
    with open_store(tmp_path / "begun") as store:
        assert store.kg.summaries.counts()["crowded_pairs"] == 6
        store.kg.expand(pairs[:1], limit=5)  # the first question builds the summaries, without the samples
        assert store.kg.summaries.state()["how"] == "on first use" and store.kg.made["crowded_pairs"] == 1
        assert store.kg.summaries.counts()["crowded_pairs"] == 1
    monkeypatch.setattr(summaries, "TOUCHED_MAX", 1)  # too many to follow: every edge counted, no sample kept
    with open_store(tmp_path / "over") as store:
        load_file(store.need_sink(), more)
        assert store.kg.summaries.state()["found"] == "counted"
        assert store.kg.summaries.counts()["crowded_pairs"] == 0


def test_the_biggest_pairs_are_sampled_with_the_summaries_never_by_a_question(tmp_path, tog, monkeypatch, capsys):
    """A hub's pair past SORT_MAX edges gets its sample with the summaries
    (a question would sort it whole in the store, 9.6 s for a real KG's
    1M-edge pair): the first SAMPLE_KEEP of its neighbours in the sample
    order, literals too, what the store's sort gives. On every path: a
    load into an empty store; a load into a summarised one (a pair that
    grows past SORT_MAX is sampled, one it wrote to is merged, or, past
    FACTS_MAX, sampled again); a store whose summaries an older tog made
    (the first question samples them, once). A question then sorts none."""
    import json
    import shutil

    from engine.backends.oxigraph import kg as kg_module
    from engine.backends.oxigraph import summaries
    from engine.store import open_store
    from loaders.load import load_file

    keep = 50
    monkeypatch.setattr(summaries, "SAMPLE_KEEP", keep)
    monkeypatch.setattr(kg_module, "SAMPLE_KEEP", keep)
    monkeypatch.setattr(summaries, "SORT_MAX", 1500)
    r, s_ = iri("r"), iri("s")
    lines = [f"<{iri('big')}> <{r}> <{iri(f'x{i}')}> ." for i in range(1700)]
    lines += [f'<{iri("big")}> <{r}> "value {i}" .' for i in range(300)]  # literals take their places by hash
    lines += [f"<{iri('big')}> <{s_}> <{iri(f'y{i}')}> ." for i in range(1200)]  # a hub's pair under SORT_MAX
    lines += [f"<{iri(f'z{i}')}> <{r}> <{iri('sink')}> ." for i in range(1600)]
    big, small, sink = (iri("big"), r, "out"), (iri("big"), s_, "out"), (iri("sink"), r, "in")

    def truth(store, key) -> list[str]:
        """The pair's first neighbours in the sample order, from the store as it is."""
        e, rel, d = key
        pairs = [(e, Relation(rel, d))]
        every = store.kg.neighbours(pairs, 10**6)[0][pairs[0]]
        return sorted(every, key=sample_key)[:keep]

    with open_store(tmp_path / "store", create=True) as store:
        load_file(store.need_sink(), write_nt(tmp_path / "base.nt", lines))
        state = store.kg.summaries.state()
        assert state["big_pairs"] == 2 and state["sort_max"] == 1500
        kept = store.kg.summaries.samples([big, small, sink])
        assert set(kept) == {big, sink} and kept[big][0] == 2000 and kept[sink][0] == 1600
        assert kept[big][1] == truth(store, big) and kept[sink][1] == truth(store, sink)
        assert any(x.startswith('"value') for x in kept[big][1])
        spy = Spy(store.kg, monkeypatch)
        got = [c.node.id for c in store.kg.expand([(iri("big"), Relation(r, "out"))], limit=5)]
        assert got and store.kg.made["crowded_pairs"] == 0 and spy.full_reads() == 0
        assert spy.most_rows() <= keep
        # what the store's sort makes of the same pair, were it asked to: the same sample
        store.kg.summaries.clear()
        assert [c.node.id for c in store.kg.expand([(iri("big"), Relation(r, "out"))], limit=5)] == got
        assert store.kg.summaries.samples([big])[big][1] == kept[big][1] and store.kg.made["crowded_pairs"] == 1
        store.kg.summaries.clear(keep_big=True)  # a benchmark's cold start: the questions' samples go, not the load's
    assert "2 pairs of more than 1,500 edges sampled with the summaries" in tog("info", "--store", tmp_path / "store").output
    with open_store(tmp_path / "store") as store:  # (the sort above made big's again; the load's are what count)
        store.kg.summaries.clear()
        from engine.backends.oxigraph.summaries import sample_big

        assert sample_big(store.kg.db)["big_pairs_made"] == 2
    for copy in ("many", "older", "higher"):
        shutil.copytree(tmp_path / "store", tmp_path / copy)
    more = write_nt(tmp_path / "more.nt", [f"<{iri('big')}> <{s_}> <{iri(f'y-new{i}')}> ." for i in range(400)]
                    + [f"<{iri('big')}> <{r}> <{iri(f'x-new{i}')}> ." for i in range(30)])
    for name in ("store", "many"):
        if name == "many":
            monkeypatch.setattr(summaries, "FACTS_MAX", 2)  # too many edges of kept pairs to follow: theirs go
        with open_store(tmp_path / name) as store:
            load_file(store.need_sink(), more)
            state = store.kg.summaries.state()
            assert state["found"] == "updated" and state["big_pairs"] == 3
            assert state["samples_merged"] == (1 if name == "store" else 0)
            assert state["big_pairs_made"] == (1 if name == "store" else 2)  # small grew past SORT_MAX
            kept = store.kg.summaries.samples([big, small, sink])
            assert kept[small][0] == 1600 and kept[big][0] == 2030
            for key in (big, small, sink):
                assert kept[key][1] == truth(store, key), (name, key)
    # a store an older tog summarised, or a load stopped before it sampled them: no big_pairs in
    # its state, no samples
    with open_store(tmp_path / "older") as store:
        store.kg.summaries.clear()
        db = store.kg.summaries.db
        state = json.loads(db.execute("SELECT value FROM summary_state WHERE key = 'hubs'").fetchone()[0])
        del state["big_pairs"]
        db.execute("UPDATE summary_state SET value = ? WHERE key = 'hubs'", (json.dumps(state),))
        db.commit()
    shutil.copytree(tmp_path / "older", tmp_path / "stopped")
    again = tog("load", tmp_path / "base.nt", "--store", tmp_path / "stopped", "--no-progress")  # (loaded before)
    assert again.exit_code == 0 and "biggest pairs: 2 of more than 1,500 edges sampled" in again.output, again.output
    with open_store(tmp_path / "stopped") as store:
        assert store.kg.summaries.state()["big_pairs"] == 2 and not store.kg.summaries.big_pairs_due()
        assert store.kg.summaries.samples([sink])[sink][1] == truth(store, sink)
    capsys.readouterr()
    with open_store(tmp_path / "older") as store:
        spy = Spy(store.kg, monkeypatch)
        store.kg.expand([(iri("sink"), Relation(r, "in"))], limit=5)
        assert store.kg.made["crowded_pairs"] == 0 and spy.full_reads() == 0
        assert store.kg.summaries.state()["big_pairs"] == 2
        said = capsys.readouterr().err
        assert "sampling the biggest pairs of" in said and "an older tog made its summaries" in said, said
        assert store.kg.summaries.samples([sink])[sink][1] == truth(store, sink)
    # a store a tog with a higher threshold summarised (1,800 here; 10,000 before SORT_MAX was the hub
    # threshold): big sampled, sink not; the first question samples sink, once
    with open_store(tmp_path / "higher") as store:
        db = store.kg.summaries.db
        state = json.loads(db.execute("SELECT value FROM summary_state WHERE key = 'hubs'").fetchone()[0])
        db.execute("UPDATE summary_state SET value = ? WHERE key = 'hubs'",
                   (json.dumps({**state, "big_pairs": 1, "sort_max": 1800}),))
        db.execute("DELETE FROM pair_samples WHERE degree <= 1800")
        db.commit()
    with open_store(tmp_path / "higher") as store:
        spy = Spy(store.kg, monkeypatch)
        store.kg.expand([(iri("sink"), Relation(r, "in"))], limit=5)
        assert store.kg.made["crowded_pairs"] == 0 and spy.full_reads() == 0
        state = store.kg.summaries.state()
        assert (state["big_pairs"], state["big_pairs_made"], state["sort_max"]) == (2, 1, 1500)
        assert store.kg.summaries.samples([sink])[sink][1] == truth(store, sink)


@pytest.mark.neo4j
def test_neo4j_samples_the_biggest_pairs_at_load_as_the_embedded_store_does(neo4j_store, tmp_path, monkeypatch,
                                                                              capsys, tog):
    """On Neo4j too a pair past SORT_MAX is sampled by the load (the server
    sorts it then), the same sample as the embedded store's; a later load
    samples the pairs it grows past SORT_MAX (around what it touched); a
    database without the record (an older tog's, an offline import) gets
    them from its first crowded expansion, once. No question sorts one, not
    while a load runs; a load killed before its end leaves no sample the next
    load follows, and no schema of a half-loaded KG outlives a load."""
    from conftest import open_spec

    from engine.backends.neo4j import kg as neo4j_kg
    from engine.backends.neo4j.kg import BIG_PAIRS, Neo4jKG, sample_id
    from engine.backends.oxigraph import summaries
    from engine.store import open_store
    from loaders.load import load_file

    monkeypatch.setattr(neo4j_kg, "SORT_MAX", 1500)
    monkeypatch.setattr(summaries, "SORT_MAX", 1500)
    r, s_ = iri("r"), iri("s")
    lines = [f"<{iri('big')}> <{r}> <{iri(f'x{i}')}> ." for i in range(1700)]
    lines += [f'<{iri("big")}> <{r}> "value {i}" .' for i in range(300)]
    lines += [f"<{iri('big')}> <{s_}> <{iri(f'y{i}')}> ." for i in range(1200)]
    lines += [f"<{iri(f'z{i}')}> <{r}> <{iri('sink')}> ." for i in range(1600)]
    big, small, sink = (iri("big"), r, "out"), (iri("big"), s_, "out"), (iri("sink"), r, "in")
    base = write_nt(tmp_path / "base.nt", lines)
    more = write_nt(tmp_path / "more.nt", [f"<{iri('big')}> <{s_}> <{iri(f'y-new{i}')}> ." for i in range(400)])

    def kept(store) -> dict:
        found = store.kg.session.run("samples_get", keys=[sample_id(k) for k in (big, small, sink)])
        return {tuple(row["key"].split("\n")): (row["degree"], list(row["sample"])) for row in found}

    embedded = {}
    with open_store(tmp_path / "embedded", create=True) as ox_store:
        for f in (base, more):
            load_file(ox_store.need_sink(), f)
            embedded[f.name] = ox_store.kg.summaries.samples([big, small, sink])
    store = open_spec(neo4j_store, create=True)
    loaded = tog("load", base, "--store", neo4j_store, "--no-progress")
    assert loaded.exit_code == 0 and "biggest pairs: 2 of more than 1,500 edges sampled" in loaded.output, loaded.output
    assert kept(store) == embedded["base.nt"] and set(kept(store)) == {big, sink}
    info = tog("info", "--store", neo4j_store)
    assert "except the samples of pairs past 1,500 edges, made by the load (all made)" in info.output, info.output
    kg = Neo4jKG(store.kg.session)
    found = [c.node.id for c in kg.expand([(iri("big"), Relation(r, "out"))], limit=5)]
    assert found and kg.made["crowded_pairs"] == 0
    load_file(store.need_sink(), more)  # grows (big, s) past SORT_MAX: only what it touched is looked at
    assert store.kg.session.setting(BIG_PAIRS, None) == 1500
    assert kept(store) == embedded["more.nt"] and set(kept(store)) == {big, small, sink}
    # a database without the record (an older tog's, an offline import): its first crowded expansion samples all
    store.kg.session.run_batched("summaries_clear")
    store.kg.session.run_text("MATCH (s:TogSetting {key: $key}) DELETE s", write=True, key=BIG_PAIRS)
    capsys.readouterr()
    kg = Neo4jKG(store.kg.session)
    assert [c.node.id for c in kg.expand([(iri("big"), Relation(r, "out"))], limit=5)] == found
    assert kg.made["crowded_pairs"] == 3 and "sampling the biggest pairs and counting the hubs of the Neo4j " in \
        capsys.readouterr().err
    assert kept(store) == embedded["more.nt"]
    kg.expand([(iri("sink"), Relation(r, "in"))], limit=5)
    assert kg.made["crowded_pairs"] == 3  # (the expansion itself sorted nothing: all three were made before it)
    # one a tog with a higher threshold sampled (1,800 here: big's sample kept, not sink's or small's)
    store.kg.session.run_text("MATCH (s:TogSetting {key: $key}) SET s.value = '1800'", write=True, key=BIG_PAIRS)
    store.kg.session.run_text("MATCH (s:TogSample) WHERE s.key IN $keys DELETE s", write=True,
                              keys=[sample_id(small), sample_id(sink)])
    kg = Neo4jKG(store.kg.session)
    kg.expand([(iri("big"), Relation(r, "out"))], limit=5)
    assert kg.made["crowded_pairs"] == 2 and store.kg.session.setting(BIG_PAIRS, None) == 1500
    assert kept(store) == embedded["more.nt"]
    # a load that finds more kept samples than it follows (KEEP_MAX) forgets them all: its end samples
    # every big pair again, not only those around what it wrote (big's, by one edge; sink's as well)
    from engine.backends.neo4j import sink as neo4j_sink

    monkeypatch.setattr(neo4j_sink, "KEEP_MAX", 2)
    load_file(store.need_sink(), write_nt(tmp_path / "one.nt", [f"<{iri('big')}> <{s_}> <{iri('y-one')}> ."]))
    assert set(kept(store)) == {big, small, sink} and kept(store)[sink] == embedded["more.nt"][sink]
    # while such a load runs, the samples stay until its end: a question sorts no pair (its start forgot
    # them before, and each question sorted the big pairs it met until the load ended)
    from engine.backends.neo4j.sink import Neo4jSink

    killed = Neo4jSink(store.kg.session)
    killed.begin()
    kg = Neo4jKG(store.kg.session)
    assert [c.node.id for c in kg.expand([(iri("big"), Relation(r, "out"))], limit=5)] == found
    assert kg.made["crowded_pairs"] == 0
    # it is killed after a question kept a sample of a half-loaded KG (here: one neighbour short); the next
    # load, which could follow the kept samples, must not: its end samples every big pair again
    degree, sample = kept(store)[sink]
    store.kg.session.run("sample_save", write=True, key=sample_id(sink), degree=degree - 1, sample=sample[1:])
    killed._writers.shutdown()
    monkeypatch.setattr(neo4j_sink, "KEEP_MAX", 100_000)
    load_file(store.need_sink(), write_nt(tmp_path / "two.nt", [f"<{iri('big')}> <{s_}> <{iri('y-two')}> ."]))
    assert kept(store)[sink] == embedded["more.nt"][sink]
    # a load that follows the samples forgets at its end the look-ahead schema questions made meanwhile
    following = Neo4jSink(store.kg.session)
    following.begin()
    Neo4jKG(store.kg.session).schema.after([Relation(r, "out")])
    assert store.kg.session.run("summaries_count")[0]["schema"] == 1
    following.end()
    assert store.kg.session.run("summaries_count")[0]["schema"] == 0 and set(kept(store)) == {big, small, sink}


@pytest.mark.neo4j
def test_neo4j_a_load_of_a_file_loaded_before_makes_what_a_stopped_end_left(neo4j_store, tmp_path, monkeypatch,
                                                                              tog):
    """A load killed in its end (while it sampled the biggest pairs) leaves
    them to be made. The same command again finds its file loaded: it makes
    them then, once, as a question would, unless another load is running,
    whose end makes them. Before, it recorded them made and made none, and
    beside a running load it recorded that load's end as done."""
    import json

    from conftest import open_spec

    from engine.backends.neo4j import kg as neo4j_kg
    from engine.backends.neo4j.kg import BIG_PAIRS, load_end_state, sample_id
    from engine.backends.neo4j.sink import Neo4jSink

    monkeypatch.setattr(neo4j_kg, "SORT_MAX", 1500)
    xs = [iri(f"x{i}") for i in range(1700)]
    base = write_nt(tmp_path / "base.nt", [f"<{iri('big')}> <{LINKS.id}> <{x}> ." for x in xs])
    big = sample_id((iri("big"), LINKS.id, "out"))
    store = open_spec(neo4j_store, create=True)
    session = store.kg.session

    def kept() -> list:
        return [(row["degree"], list(row["sample"])) for row in session.run("samples_get", keys=[big])]

    assert tog("load", base, "--store", neo4j_store, "--no-progress").exit_code == 0
    made = kept()
    assert made == [(1700, sorted(xs, key=sample_key)[:SAMPLE_KEEP])]
    session.run_batched("summaries_clear")  # killed in its end: pending, its samples not made
    session.run("setting_set", write=True, key=BIG_PAIRS, value=json.dumps("pending"))
    running = Neo4jSink(open_spec(neo4j_store).kg.session)
    running.begin()  # another load, running
    again = tog("load", base, "--store", neo4j_store, "--no-progress")
    assert again.exit_code == 0 and "already loaded" in again.output and "biggest pairs" not in again.output
    assert load_end_state(session) == "pending" and kept() == []  # left to the running load's end
    running._writers.shutdown()
    running._release_running()  # (killed)
    again = tog("load", base, "--store", neo4j_store, "--no-progress")
    assert again.exit_code == 0 and "biggest pairs: 1 of more than 1,500 edges sampled" in again.output, again.output
    assert load_end_state(session) == "made" and kept() == made


@pytest.mark.neo4j
def test_neo4j_reads_a_big_pair_an_unfinished_load_grew_by_its_first_window(neo4j_store, tmp_path, monkeypatch,
                                                                           tog):
    """A pair past SORT_MAX edges that a load grew has its sample made when
    the load ends. Until then (the load runs, or it stopped early), a
    question reads the pair's first window in the database's order, and
    keeps nothing: it does not have the server sort the whole pair (1,700
    edges here, against a window of 20)."""
    from conftest import open_spec

    from engine.backends.neo4j import kg as neo4j_kg
    from engine.backends.neo4j.kg import Neo4jKG, sample_id
    from engine.backends.neo4j.sink import Neo4jSink

    monkeypatch.setattr(neo4j_kg, "SORT_MAX", 1500)
    r, hub = iri("r"), iri("hub")
    xs = [iri(f"x{i}") for i in range(1700)]
    named = [f'<{x}> <{RDFS_LABEL}> "Thing {i}" .' for i, x in enumerate(xs)]
    assert tog("load", write_nt(tmp_path / "names.nt", named), "--store", neo4j_store, "--no-progress").exit_code == 0
    # a load that stops on a bad line (--max-errors 0) after writing the pair's 1,700 edges
    grow = write_nt(tmp_path / "grow.nt", [f"<{hub}> <{r}> <{x}> ." for x in xs] + ["not a triple"])
    stopped = tog("load", grow, "--store", neo4j_store, "--no-progress", "--max-errors", "0")
    assert stopped.exit_code != 0 and "biggest pairs" not in stopped.output, stopped.output
    store = open_spec(neo4j_store)
    assert store.kg.pair_degree(hub, r, "out") == 1700
    running = Neo4jSink(store.kg.session)  # (a question finishes a load that stopped, unless one runs)
    running.begin()
    kg = Neo4jKG(store.kg.session)
    rows: list[int] = []
    run_text = kg._run_text
    monkeypatch.setattr(kg, "_run_text", lambda text, **params: rows.append(len(got := run_text(text, **params)))
                        or got)
    meanwhile = [c.node.id for c in kg.expand([(hub, Relation(r, "out"))], limit=5)]
    running.end()
    assert len(meanwhile) == 5 and max(rows) <= 4 * 5 + 1, rows
    assert kg.made["unsorted_pairs"] == 1 and kg.made["crowded_pairs"] == 0
    assert not store.kg.session.run("samples_get", keys=[sample_id((hub, r, "out"))])
    # a load that finishes samples it: the question reads the pair's first five in the sample order
    done = tog("load", write_nt(tmp_path / "more.nt", [f"<{iri('a')}> <{r}> <{iri('b')}> ."]), "--store",
               neo4j_store, "--no-progress")
    assert done.exit_code == 0 and "biggest pairs: 1 of more than 1,500 edges sampled" in done.output, done.output
    kg = Neo4jKG(store.kg.session)
    after = [c.node.id for c in kg.expand([(hub, Relation(r, "out"))], limit=5)]
    assert after == sorted(xs, key=sample_key)[:5] and kg.made == {"crowded_pairs": 0, "hubs": 0, "unsorted_pairs": 0}


@pytest.mark.neo4j
def test_the_first_question_after_a_neo4j_load_stopped_before_its_end_makes_what_its_end_would_have(
        neo4j_store, tmp_path, monkeypatch, tog, capsys):
    """A load stopped before its end (here on a bad line) with no load
    running: the first question that meets a crowded pair samples the big
    pairs once, as the load's end would have, and reads the pair in the
    sample order. If a load begins while it does, it records nothing: that
    load's end samples them again. (The CLI's notes go to stderr.)"""
    import sys

    from conftest import open_spec

    from engine.backends.neo4j import kg as neo4j_kg
    from engine.backends.neo4j.kg import Neo4jKG, load_end_state, sample_id
    from engine.backends.neo4j.sink import PENDING, Neo4jSink

    monkeypatch.setattr(neo4j_kg, "SORT_MAX", 1500)
    r, hub = iri("r"), iri("hub")
    xs = [iri(f"x{i}") for i in range(1900)]
    named = [f'<{x}> <{RDFS_LABEL}> "Thing {i}" .' for i, x in enumerate(xs)]
    assert tog("load", write_nt(tmp_path / "names.nt", named), "--store", neo4j_store, "--no-progress").exit_code == 0
    grow = write_nt(tmp_path / "grow.nt", [f"<{hub}> <{r}> <{x}> ." for x in xs[:1700]] + ["not a triple"])
    assert tog("load", grow, "--store", neo4j_store, "--no-progress", "--max-errors", "0").exit_code != 0
    store = open_spec(neo4j_store)
    session = store.kg.session
    assert load_end_state(session) == "pending"
    assert "(a load stopped before its end: the first question that needs them makes them)" in \
        Neo4jKG(session).stats()["summaries"]
    kg = Neo4jKG(session)
    capsys.readouterr()
    with monkeypatch.context() as terminal:
        terminal.setattr(sys.stderr, "isatty", lambda: True)  # (a bar on a terminal)
        first = [c.node.id for c in kg.expand([(hub, Relation(r, "out"))], limit=5)]
    said = capsys.readouterr().err
    assert first == sorted(xs[:1700], key=sample_key)[:5]
    assert kg.made["unsorted_pairs"] == 0 and kg.made["crowded_pairs"] == 1
    assert session.run("samples_get", keys=[sample_id((hub, r, "out"))])[0]["degree"] == 1700
    assert load_end_state(session) == "made" and session.setting(PENDING, None) is False
    assert said.count("stopped before its end") == 1 and "1 pairs sampled" in said, said
    assert "sampling the biggest pairs" in said, said
    assert tog("ask", "what is x1", "--store", neo4j_store, "--no-record").stderr.count("note: a load into") == 0
    # another stopped load grows the pair; a load begins while the next question samples it
    grow = write_nt(tmp_path / "more.nt", [f"<{hub}> <{r}> <{x}> ." for x in xs[1700:]] + ["not a triple"])
    assert tog("load", grow, "--store", neo4j_store, "--no-progress", "--max-errors", "0").exit_code != 0
    kg = Neo4jKG(session)
    sample_big, began = kg.sample_big, []

    def meanwhile(*args, **kw):
        made = sample_big(*args, **kw)
        began.append(Neo4jSink(session))
        began[0].begin()
        return made

    monkeypatch.setattr(kg, "sample_big", meanwhile)
    kg.expand([(hub, Relation(r, "out"))], limit=5)
    assert "(a load is running: its end makes them)" in Neo4jKG(session).stats()["summaries"]
    began[0].end()
    assert began and load_end_state(session) == "pending"
    assert capsys.readouterr().err.count("a load began meanwhile") == 1


def test_the_hub_tally_stays_small_and_misses_no_hub(monkeypatch):
    """Lossy counting: with a round of pruning every 500 sampled lines, a
    stream of 300,000 lines about 100,000 entities keeps a few thousand
    counts, not every entity it saw, and still names every hub."""
    import random

    from engine.backends.oxigraph import summaries

    monkeypatch.setattr(summaries, "TALLY_BUCKET", 500)
    rng = random.Random(3)
    hubs = [f"<urn:h{h}>" for h in range(20)]
    lines = [f"{h} <urn:p> <urn:o{i}> ." for h in hubs for i in range(HUB_EDGES + 1)]
    lines += [f"<urn:s{rng.randrange(10**5)}> <urn:p> \"x\" ." for _ in range(280_000)]
    rng.shuffle(lines)
    tally = summaries.HubTally()
    for i in range(0, len(lines), 2000):  # blocks of whole lines, as a load hands them
        tally.lines(("\n".join(lines[i:i + 2000]) + "\n").encode())
    assert tally.bucket > 40 and len(tally.counts["out"]) < 5_000
    assert set(tally.candidates()["out"]) >= {h[1:-1] for h in hubs}


def test_what_a_load_touched_names_a_hub_the_way_the_store_does():
    """A hub written with an escape in one line and without in another is
    one key, with the relations of both lines; a blank subject (which the
    loader would have named) stops the noting, and the build counts all."""
    from engine.backends.oxigraph.summaries import Touched

    touched = Touched({"out": ["http://x/h\u00e9"], "in": ["http://x/h\u00e9"]})
    touched.lines(b"<http://x/h\\u00E9> <http://x/p> <http://x/o> .\n"
                  b"<http://x/s>\t<http://x/q>  <http://x/h\xc3\xa9> .\n"
                  b'<http://x/h\xc3\xa9> <http://x/r> "a <literal>" .\n')
    entities, relations = touched.touched()
    assert entities == {"out": ["http://x/h\u00e9", "http://x/s"], "in": ["http://x/h\u00e9", "http://x/o"]}
    assert relations == {("http://x/h\u00e9", "out"): ["http://x/p", "http://x/r"],
                         ("http://x/h\u00e9", "in"): ["http://x/q"]}
    touched.lines(b"_:b1 <http://x/p> <http://x/o> .\n")
    assert touched.touched() is None


def test_a_store_made_before_summaries_builds_them_once_on_first_use(loaded_hub, tmp_path, monkeypatch, caplog, tog):
    """An older tog kept no hub summaries: the first question builds them
    (saying so), the next process finds them; a read-only view beside a
    writer cannot build them and reads each hub it meets once, in memory."""
    import logging
    import shutil
    import sqlite3

    shutil.copytree(loaded_hub, tmp_path / "old")
    db = sqlite3.connect(tmp_path / "old" / "index.sqlite")
    for table in ("hubs", "hub_relations", "summary_state"):
        db.execute(f"DROP TABLE {table}")
    db.commit()
    db.close()
    from engine.store import open_store

    view = open_store(tmp_path / "old", read_only=True)
    spy = Spy(view.kg, monkeypatch)
    with caplog.at_level(logging.INFO, logger="tog"):
        rels = {(r.id, r.direction): r.degree for r in view.kg.relations([iri("hub")])[iri("hub")]}
    assert rels[(LINKS.id, "out")] == OUT and spy.full_reads() == 2 and view.kg.made["hubs"] == 2
    assert "out of date" in caplog.text and view.kg.summaries.state()["state"] == "missing"
    assert "the first question asked once the process writing the store ends builds them" in caplog.text
    assert "none built yet (built by the first question once the process writing the store ends)" in \
        view.kg.stats()["summaries"]
    view.close()
    caplog.clear()
    store = open_graph(tmp_path / "old")
    spy = Spy(store.kg, monkeypatch)
    with caplog.at_level(logging.INFO, logger="tog"):
        rels = {(r.id, r.direction): r.degree for r in store.kg.relations([iri("hub")])[iri("hub")]}
    assert rels == {(LINKS.id, "out"): OUT, (BORN.id, "out"): 1, (LIKES.id, "in"): IN}
    assert "building the hub summaries" in caplog.text and "made by an older tog" in caplog.text
    assert store.kg.summaries.state()["how"] == "on first use" and store.kg.made["hubs"] == 0
    store.close()
    caplog.clear()
    store = open_graph(tmp_path / "old")
    spy = Spy(store.kg, monkeypatch)
    with caplog.at_level(logging.INFO, logger="tog"):
        store.kg.relations([iri("hub")])
    assert caplog.text == "" and spy.calls == [] or all(f"<{iri('hub')}>" not in t for t, _ in spy.calls)
    store.close()
    # the command line says so on stderr, in one line, and answers
    shutil.copytree(loaded_hub, tmp_path / "old-cli")
    db = sqlite3.connect(tmp_path / "old-cli" / "index.sqlite")
    db.execute("DROP TABLE summary_state")
    db.commit()
    db.close()
    asked = tog("ask", "where was [The Hub] born", "--store", tmp_path / "old-cli", "--no-record")
    assert asked.exit_code == 0 and "Hub City" in asked.stdout, asked.output
    assert "building the hub summaries of" in asked.stderr and "made by an older tog" in asked.stderr


def test_expanding_a_crowded_pair_reads_only_its_sample(hub_store, monkeypatch):
    kg = hub_store.kg
    spy = Spy(kg, monkeypatch)
    links, likes = (iri("hub"), LINKS.id, "out"), (iri("hub"), LIKES.id, "in")
    # both pairs are past SORT_MAX: the load sampled them, with their degrees
    assert {k: n for k, (n, _) in kg.summaries.samples([links, likes]).items()} == {links: OUT, likes: IN}
    for made_by_load in (True, False):  # then every sample dropped: each made by the store's sort, the same
        # up to the largest window the kept sample still holds, which a larger limit is taken as
        for limit in (5, 40, 100, MAX_CANDIDATES, 5 * MAX_CANDIDATES):
            spy.calls.clear()
            got = [(c.node.id, c.node.name) for c in kg.expand([(iri("hub"), LINKS)], limit=limit)]
            assert got == _expected(min(limit, MAX_CANDIDATES)), limit
            assert spy.most_rows() <= max(SAMPLE_KEEP, 4 * min(limit, MAX_CANDIDATES) + 1)
        # ToG's sampling of crowded relations, and the other direction of the hub
        assert [c.node.id for c in kg.expand([(iri("hub"), LINKS)], limit=100, over=20, size=3)] == \
            [x for x, _ in _expected(100, cap=3)]
        fans = kg.expand([(iri("hub"), LIKES)], limit=7)
        want = sorted((iri(f"m{i}") for i in range(IN)), key=sample_key)[:7]
        assert [c.node.id for c in fans] == want and all(c.node.name.startswith("Fan ") for c in fans)
        assert spy.most_rows() <= SAMPLE_KEEP
        assert kg.made["crowded_pairs"] == (0 if made_by_load else 2)  # each sorted once, then read back
        assert kg.summaries.samples([links])[links][1] == sorted(
            (iri(f"n{i}") for i in range(OUT)), key=sample_key)[:SAMPLE_KEEP]
        kg.summaries.clear()
    # sampled afresh, a hub's pairs take their degrees from its summary: nothing counts them
    spy.calls.clear()
    _, degree, _ = kg.neighbours([(iri("hub"), LINKS), (iri("hub"), LIKES)], 100)
    assert degree == {(iri("hub"), LINKS): OUT, (iri("hub"), LIKES): IN}
    assert kg.made["crowded_pairs"] == 4 and not [text for text, _ in spy.calls if "COUNT(" in text]
    # a pair whose listing gave its degree is known to be crowded: sorted at once, not read through
    # the window first (a relation without a degree, as above, is read through it: 401 rows)
    kg.summaries.clear()
    listed = {(r.id, r.direction): r for r in kg.relations([iri("hub")])[iri("hub")]}
    assert listed[(LINKS.id, "out")].degree == OUT
    spy.calls.clear()
    got = [(c.node.id, c.node.name) for c in kg.expand([(iri("hub"), listed[(LINKS.id, "out")])], limit=40)]
    assert got == _expected(40) and kg.made["crowded_pairs"] == 5
    assert not [text for text, _ in spy.calls if "SELECT ?k ?x ?np ?name" in text]  # no window read
    assert spy.most_rows() <= SAMPLE_KEEP


def test_a_correction_that_takes_a_kept_neighbour_out_leaves_the_pair_unsorted(hub_store, monkeypatch):
    """A correction that takes one of a hub pair's kept neighbours out leaves
    its sample one short of the largest window: a question at that window
    reads what is kept, where it had the store sort the pair (150,000 edges)
    again, and is offered the same candidates a sort would give."""
    from engine.feedback import correct, revert

    kg = hub_store.kg
    links = (iri("hub"), LINKS.id, "out")
    first = kg.summaries.samples([links])[links][1][0]
    c = correct(hub_store, [f"<{iri('hub')}>|<{LINKS.id}>|<{first}>"], [], "a test")
    degree, sample = kg.summaries.samples([links])[links]
    assert degree == OUT - 1 and len(sample) == SAMPLE_KEEP - 1 and first not in sample
    spy = Spy(kg, monkeypatch)
    got = [(x.node.id, x.node.name) for x in kg.expand([(iri("hub"), LINKS)], limit=MAX_CANDIDATES)]
    named = sorted((x for x in range(0, OUT, 3) if iri(f"n{x}") != first), key=lambda i: sample_key(iri(f"n{i}")))
    assert got == [(iri(f"n{i}"), f"Node {i}") for i in named[:MAX_CANDIDATES]]
    assert kg.made["crowded_pairs"] == 0 and spy.most_rows() <= SAMPLE_KEEP and not spy.unbounded(iri("hub"))
    revert(hub_store, c.id)  # back in: first in the sample order, the kept sample takes it again
    assert kg.summaries.samples([links])[links] == (OUT, [first, *sample])
    got = [(x.node.id, x.node.name) for x in kg.expand([(iri("hub"), LINKS)], limit=MAX_CANDIDATES)]
    assert got == _expected(MAX_CANDIDATES) and kg.made["crowded_pairs"] == 0


def test_a_correction_that_takes_most_of_a_kept_sample_out_sorts_the_pair_again(hub_store, monkeypatch):
    """A correction that takes a hub pair's kept sample under SAMPLE_FLOOR
    has the store sort the pair again, in the correction: a question never
    sorts it, and read from a sample emptied by corrections it had no
    candidates at all. A few neighbours out still sort nothing. A revert
    puts the sample back as the load made it."""
    from engine.backends.common import SAMPLE_FLOOR
    from engine.feedback import correct, revert

    kg = hub_store.kg
    links = (iri("hub"), LINKS.id, "out")
    loaded = kg.summaries.samples([links])[links][1]
    edge = f"<{iri('hub')}>|<{LINKS.id}>|<{{}}>".format
    few = correct(hub_store, [edge(x) for x in loaded[:10]], [], "a few")
    assert kg.summaries.samples([links])[links] == (OUT - 10, loaded[10:]) and kg.made["crowded_pairs"] == 0
    gone = loaded[: SAMPLE_KEEP - SAMPLE_FLOOR + 1]  # the sample left one under the floor
    most = correct(hub_store, [edge(x) for x in gone[10:]], [], "most of the sample")
    left = sorted((iri(f"n{i}") for i in range(OUT) if iri(f"n{i}") not in set(gone)), key=sample_key)
    assert kg.summaries.samples([links])[links] == (OUT - len(gone), left[:SAMPLE_KEEP])  # sorted again
    spy = Spy(kg, monkeypatch)
    got = [c.node.id for c in kg.expand([(iri("hub"), LINKS)], limit=MAX_CANDIDATES)]
    named = [x for x in left[: 4 * MAX_CANDIDATES] if int(x.rsplit("n", 1)[1]) % 3 == 0]
    assert len(named) > MAX_CANDIDATES and got == named[:MAX_CANDIDATES]
    assert kg.made["crowded_pairs"] == 0 and spy.most_rows() <= SAMPLE_KEEP and not spy.unbounded(iri("hub"))
    revert(hub_store, most.id)
    revert(hub_store, few.id)
    assert kg.summaries.samples([links])[links] == (OUT, loaded)
    assert [(c.node.id, c.node.name) for c in kg.expand([(iri("hub"), LINKS)], limit=100)] == _expected(100)


@pytest.mark.neo4j
def test_neo4j_a_correction_that_takes_most_of_a_kept_sample_out_sorts_the_pair_again(neo4j_store, tmp_path):
    """As on the embedded store, and to the same sample: a correction that
    leaves a big pair's kept sample under SAMPLE_FLOOR has the server sort
    the pair again in its transaction, and a revert puts back the sample
    the load made."""
    from conftest import open_spec

    from engine.backends.common import SAMPLE_FLOOR
    from engine.backends.neo4j.kg import Neo4jKG, sample_id
    from engine.feedback import correct, revert
    from engine.store import open_store
    from loaders.load import load_file

    size = 6_000
    nt = write_nt(tmp_path / "pair.nt", [f"<{iri('hub')}> <{LINKS.id}> <{iri(f'n{i}')}> ." for i in range(size)])
    links = (iri("hub"), LINKS.id, "out")
    everyone = sorted((iri(f"n{i}") for i in range(size)), key=sample_key)
    gone = everyone[: SAMPLE_KEEP - SAMPLE_FLOOR + 1]
    edges = [f"<{iri('hub')}>|<{LINKS.id}>|<{x}>" for x in gone]
    store = open_spec(neo4j_store, create=True)
    load_file(store.need_sink(), nt)

    def kept() -> tuple[int, list[str]]:
        (row,) = store.kg.session.run("samples_get", keys=[sample_id(links)])
        return row["degree"], list(row["sample"])

    assert kept() == (size, everyone[:SAMPLE_KEEP])  # sampled by the load's end
    c = correct(store, edges, [], "most of the sample")
    assert kept() == (size - len(gone), everyone[len(gone):][:SAMPLE_KEEP])
    with open_store(tmp_path / "embedded", create=True) as embedded:
        load_file(embedded.need_sink(), nt)
        correct(embedded, edges, [], "most of the sample")
        assert embedded.kg.summaries.samples([links])[links] == kept()
    kg = Neo4jKG(store.kg.session)
    got = [x.node.id for x in kg.expand([(iri("hub"), LINKS)], limit=MAX_CANDIDATES)]
    assert got == everyone[len(gone):][:MAX_CANDIDATES] and kg.made["crowded_pairs"] == 0
    revert(store, c.id)
    assert kept() == (size, everyone[:SAMPLE_KEEP])


def test_a_correction_that_changes_a_whole_sample_twice_keeps_it_whole(store_spec, tmp_path):
    """A pair of 3,000 edges keeps every neighbour as its sample. A
    correction that takes one out and puts two in, one of them last in
    the sample order, leaves it whole, on both stores. Each change was
    weighed against the pair's final degree, so the second one was taken
    for a change to a sample that was cut off, and the last neighbour
    was dropped; no question refills it."""
    from conftest import open_spec

    from engine.backends.neo4j.kg import sample_id
    from engine.feedback import correct, revert
    from loaders.load import load_file

    size = 3_000
    everyone = sorted((iri(f"n{i}") for i in range(size)), key=sample_key)
    late = [x for x in (iri(f"new{i}") for i in range(100_000)) if sample_key(x) > sample_key(everyone[-1])][:2]
    lines = [f"<{iri('hub')}> <{LINKS.id}> <{x}> ." for x in everyone]
    lines += [f"<{x}> <{BORN.id}> <{iri('city')}> ." for x in late]
    store = open_spec(store_spec, create=True)
    load_file(store.need_sink(), write_nt(tmp_path / "pair.nt", lines))
    links = (iri("hub"), LINKS.id, "out")

    def kept() -> tuple[int, list[str]]:
        if store_spec.startswith("bolt://"):
            (row,) = store.kg.session.run("samples_get", keys=[sample_id(links)])
            return row["degree"], list(row["sample"])
        return store.kg.summaries.samples([links])[links]

    assert kept() == (size, everyone)  # sampled by the load: whole
    edge = f"<{iri('hub')}>|<{LINKS.id}>|<{{}}>".format
    c = correct(store, [edge(everyone[5])], [edge(x) for x in late], "one out, two in")
    assert kept() == (size + 1, sorted([*everyone[:5], *everyone[6:], *late], key=sample_key))
    revert(store, c.id)
    assert kept() == (size, everyone)


def test_a_question_about_a_hub_is_answered_from_bounded_reads(hub_store, monkeypatch):
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig

    spy = Spy(hub_store.kg, monkeypatch)
    for _ in range(2):
        r = ask(hub_store, "where was [The Hub] born", get_pruner("hybrid"), get_reasoner("offline"), SearchConfig())
        assert r.result.answer.names == ["Hub City"]
        assert spy.most_rows() <= SAMPLE_KEEP
    spy.calls.clear()
    ask(hub_store, "which nodes does [The Hub] link to", get_pruner("hybrid"), get_reasoner("offline"),
        SearchConfig(), record=False)
    assert spy.most_rows() <= SAMPLE_KEEP and spy.full_reads() == 0  # the load sampled both of its pairs
    # a kind not reached at the hub: the judge's schema look-ahead and the beam's listing of
    # the candidates' relations (the hub among them) stay bounded too
    spy.calls.clear()
    r = ask(hub_store, "which city was the one [Fan 7] likes born in", get_pruner("hybrid"), get_reasoner("offline"),
            SearchConfig(), record=False)
    assert r.result.depth >= 2  # the hub was a candidate tail the beam looked at
    assert spy.most_rows() <= SAMPLE_KEEP and spy.full_reads() == 0


def test_the_look_ahead_schema_reads_a_relation_s_first_edges_only(hub_store, monkeypatch):
    """What follows ``likes`` (60,000 edges, every one to the hub): its
    tails are looked for among its first edges only, never by reading the
    relation whole for more distinct ones; the hub's relations come from
    its summary."""
    from engine.backends.common import SCHEMA_READ, SCHEMA_TAILS

    kg = hub_store.kg
    spy = Spy(kg, monkeypatch)
    follows = kg.schema.after([Relation(LIKES.id, "out")])[Relation(LIKES.id, "out")]
    assert set(follows) == {LINKS, BORN, LIKES}  # around the one tail, the hub
    (tails,) = [(text, n) for text, n in spy.calls if "SELECT DISTINCT ?n" in text]
    assert f"}} LIMIT {SCHEMA_READ} }}" in tails[0] and tails[1] <= SCHEMA_TAILS
    assert spy.full_reads() == 0 and spy.unbounded(iri("hub")) == []
    spy.calls.clear()
    assert kg.schema.after([Relation(LIKES.id, "out")])[Relation(LIKES.id, "out")] == follows
    assert spy.calls == []  # kept


def test_corrections_and_reverts_keep_the_summaries_true(hub_store, tog, monkeypatch):
    kg = hub_store.kg
    kg.relations([iri("hub")])
    kg.expand([(iri("hub"), LINKS)], limit=3)  # the load's summary and sample, read
    j = min(range(IN), key=lambda i: sample_key(iri(f"m{i}")))  # a fan ahead of most nodes in sample order
    newcomer = iri(f"m{j}")
    hub_store.close()
    store = hub_store.name
    added = tog("correct", "--add", f"<{iri('hub')}>|<{iri('links')}>|<{newcomer}>", "--add",
                f"<{iri('hub')}>|<{iri('rare')}>|<{iri('city')}>", "--reason", "r", "--store", store)
    assert added.exit_code == 0, added.output
    cid = re.search(r"correction (\S+):", added.output).group(1)
    g = open_graph(store)
    spy = Spy(g.kg, monkeypatch)
    rels = {(r.id, r.direction): r.degree for r in g.kg.relations([iri("hub")])[iri("hub")]}
    assert rels[(LINKS.id, "out")] == OUT + 1 and rels[(iri("rare"), "out")] == 1
    got = [(c.node.id, c.node.name) for c in g.kg.expand([(iri("hub"), LINKS)], limit=100)]
    assert got == _expected(100, extra=(newcomer, f"Fan {j}")) and (newcomer, f"Fan {j}") in got
    assert spy.full_reads() == 0  # the correction updated the summary and the sample in place
    g.close()
    assert tog("corrections", "revert", cid, "--store", store).exit_code == 0
    g = open_graph(store)
    spy = Spy(g.kg, monkeypatch)
    rels = {(r.id, r.direction): r.degree for r in g.kg.relations([iri("hub")])[iri("hub")]}
    assert rels == {(LINKS.id, "out"): OUT, (BORN.id, "out"): 1, (LIKES.id, "in"): IN}
    assert [(c.node.id, c.node.name) for c in g.kg.expand([(iri("hub"), LINKS)], limit=100)] == _expected(100)
    assert spy.full_reads() == 0
    g.close()
    info = tog("info", "--store", store)
    # both of the hub's pairs were sampled by the load (past SORT_MAX), and kept true
    assert "hubs summarised: 2" in info.output and "crowded pairs sampled: 2" in info.output, info.output
    assert f"1 out, 1 in, {OUT + 2 + IN:,} edges, built at load" in info.output, info.output  # (its name: one out)
    # the hub's figures in `tog info` are the kept counts as corrections leave them, not the build's
    fans = [f"<{iri(f'm{i}')}>|<{iri('likes')}>|<{iri('hub')}>" for i in range(IN - HUB_EDGES)]
    taken = tog("correct", *[x for fan in fans for x in ("--remove", fan)], "--reason", "r", "--store", store)
    assert taken.exit_code == 0, taken.output
    info = tog("info", "--store", store)
    assert f"1 out, 0 in, {OUT + 2:,} edges, built at load" in info.output, info.output


def test_a_correction_of_a_hub_s_fact_counts_none_of_its_pairs(hub_store, tog, monkeypatch):
    """A correction adds what it changes to the hub's degrees before the KG
    changes, with a mark of its step, so neither it nor its revert reads a
    pair of the hub whole (150,000 and 60,000 edges); one that dies after
    the mark is finished on the next open without adding twice, one
    without it (as an older tog's) counts the pairs it touched again, and
    none leaves a mark behind."""
    from engine.backends.oxigraph.corrections import fact_quad
    from engine.backends.oxigraph.kg import OxigraphKG
    from engine.backends.oxigraph.summaries import Summaries
    from engine.graph import Correction

    hub, links, likes = iri("hub"), iri("links"), iri("likes")
    hub_store.close()
    store = hub_store.name

    def degrees() -> dict[tuple[str, str], int]:
        g = open_graph(store)
        try:
            return {(r.id, r.direction): r.degree for r in g.kg.relations([hub])[hub]}
        finally:
            g.close()

    spy = Spy(OxigraphKG, monkeypatch)
    fix = tog("correct", "--add", f"<{hub}>|<{links}>|<{iri('m7')}>", "--remove", f"<{iri('m3')}>|<{likes}>|<{hub}>",
              "--reason", "r", "--store", store)
    assert fix.exit_code == 0, fix.output
    assert spy.calls and spy.unbounded(hub) == []  # the correction's reads, none of the hub's pairs whole
    assert degrees() == {(links, "out"): OUT + 1, (BORN.id, "out"): 1, (likes, "in"): IN - 1}
    spy.calls.clear()
    cid = re.search(r"correction (\S+):", fix.output).group(1)
    assert tog("corrections", "revert", cid, "--store", store).exit_code == 0
    assert spy.calls and spy.unbounded(hub) == []
    assert degrees() == {(links, "out"): OUT, (BORN.id, "out"): 1, (likes, "in"): IN}
    # killed after its step was counted and the KG changed: the next open finishes it, adding nothing twice
    refresh = OxigraphKG.refresh
    monkeypatch.setattr(OxigraphKG, "refresh", lambda self, facts, **_: (_ for _ in ()).throw(RuntimeError("killed")))
    died = tog("correct", "--add", f"<{hub}>|<{links}>|<{iri('m8')}>", "--reason", "r", "--store", store)
    assert died.exit_code != 0
    monkeypatch.setattr(OxigraphKG, "refresh", refresh)
    spy.calls.clear()
    assert degrees()[(links, "out")] == OUT + 1 and spy.unbounded(hub) == []
    # written by a tog that did not count its step: the pair it touched is counted again
    g = open_graph(store)
    fact = (hub, links, iri("m9"))
    g.corrections._save(Correction("c-old", "2026-01-01T00:00:00Z", "r", added=[fact], status="applying"))
    g.kg.db.store.add(fact_quad(fact))
    g.close()
    spy.calls.clear()
    assert degrees()[(links, "out")] == OUT + 2 and len(spy.unbounded(hub)) == 1
    # killed as its step's mark goes: the record is finished on the next open, and no mark outlives it
    done = Summaries.step_done
    monkeypatch.setattr(Summaries, "step_done", lambda self, step: (_ for _ in ()).throw(RuntimeError("killed")))
    died = tog("correct", "--add", f"<{hub}>|<{links}>|<{iri('m10')}>", "--reason", "r", "--store", store)
    assert died.exit_code != 0
    monkeypatch.setattr(Summaries, "step_done", done)
    assert degrees()[(links, "out")] == OUT + 3
    g = open_graph(store)
    assert g.kg.summaries.db.execute("SELECT COUNT(*) FROM correction_steps").fetchone()[0] == 0
    assert [c.status for c in g.corrections.list()].count("applying") == 0
    g.close()


def test_a_killed_load_leaves_summaries_true_after_it_resumes(tmp_path, tog):
    """A killed load leaves its summaries marked out of date: a question
    asked of the half-loaded store builds them for what is there; the
    resumed load's end builds them again, true to the whole file."""
    from test_loaders import _kill_mid_load

    edges = 4 * HUB_EDGES
    lines = [f"<{iri('star')}> <{iri('fan_of')}> <{iri(f'f{i}')}> ." for i in range(edges)]
    lines.append(f'<{iri("star")}> <{RDFS_LABEL}> "Star" .')
    f = write_nt(tmp_path / "star.nt", lines)
    store = tmp_path / "star-store"
    for _ in range(3):
        if _kill_mid_load(f, store, chunks_before_kill=120):
            break
        import shutil

        shutil.rmtree(store, ignore_errors=True)
    else:
        pytest.fail("every load finished before it could be killed")
    g = open_graph(store)
    assert g.kg.summaries.state()["state"] == "stale"
    (partial,) = g.kg.relations([iri("star")])[iri("star")]
    assert partial.degree < edges
    assert g.kg.summaries.state()["how"] == "on first use"
    assert g.kg.summaries.counts()["hubs"] == (partial.degree > HUB_EDGES)  # summarised as it is now
    g.close()
    resumed = tog("load", f, "--store", store)
    assert resumed.exit_code == 0 and "resumed at line" in resumed.output, resumed.output
    assert "hub summaries: 1 entities with more than 1,000 edges out" in resumed.output, resumed.output
    g = open_graph(store)
    assert g.kg.summaries.state()["how"] == "at load"
    (full,) = g.kg.relations([iri("star")])[iri("star")]
    assert full.degree == edges and g.kg.made["hubs"] == 0
    g.close()


def test_a_correction_that_makes_a_hub_summarises_it(tmp_path, tog, monkeypatch):
    """An entity with exactly HUB_EDGES edges is read at question time; the
    correction that adds one more summarises it in the same recorded step,
    so the next question reads none of its edges; a revert keeps it exact."""
    lines = [f"<{iri('edge')}> <{iri('knows')}> <{iri(f'k{i}')}> ." for i in range(HUB_EDGES - 1)]
    lines.append(f'<{iri("edge")}> <{RDFS_LABEL}> "Edge Case" .')  # HUB_EDGES edges out, its label included
    store = tmp_path / "edge-store"
    assert tog("load", write_nt(tmp_path / "edge.nt", lines), "--store", store).exit_code == 0
    g = open_graph(store)
    assert g.kg.summaries.counts()["hubs"] == 0
    g.close()
    added = tog("correct", "--add", f"<{iri('edge')}>|<{iri('likes')}>|<{iri('k0')}>", "--reason", "r",
                "--store", store)
    assert added.exit_code == 0, added.output
    cid = re.search(r"correction (\S+):", added.output).group(1)
    g = open_graph(store)
    assert (iri("edge"), "out") in g.kg.summaries.hubs([iri("edge")])
    spy = Spy(g.kg, monkeypatch)
    rels = {(r.id, r.direction): r.degree for r in g.kg.relations([iri("edge")])[iri("edge")]}
    assert rels == {(iri("knows"), "out"): HUB_EDGES - 1, (iri("likes"), "out"): 1}
    assert spy.full_reads() == 0 and not any(f"<{iri('edge')}> ?p ?x" in t for t, _ in spy.calls)  # none out
    g.close()
    assert tog("corrections", "revert", cid, "--store", store).exit_code == 0
    g = open_graph(store)
    rels = {(r.id, r.direction): r.degree for r in g.kg.relations([iri("edge")])[iri("edge")]}
    assert rels == {(iri("knows"), "out"): HUB_EDGES - 1}
    g.close()


@pytest.mark.neo4j
def test_neo4j_answers_the_same_from_bounded_reads(neo4j_store, loaded_hub, tmp_path, monkeypatch):
    """The same hub in a real Neo4j: degrees from its degree store, every
    statement's rows bounded, the crowded pairs (past SORT_MAX) sorted by
    the server at load (and kept), the same candidates as the embedded
    store; a correction updates the kept sample in its own transaction."""
    from conftest import open_spec

    from engine.feedback import correct
    from loaders.load import load_file

    store = open_spec(neo4j_store, create=True)
    load_file(store.need_sink(), loaded_hub.parent / "hub.nt")
    session = store.kg.session
    rows: list[tuple[str, int]] = []  # (statement, rows it returned)
    sent: list[tuple[str, dict]] = []  # (text, parameters) of what the engine sent
    plain = session.run_text

    def spy(text, *args, **params):
        got = plain(text, *args, **params)
        rows.append((_statement(text), len(got)))
        sent.append((text, {k: v for k, v in params.items() if k not in ("write", "meter")}))
        return got

    monkeypatch.setattr(session, "run_text", spy)
    in_tx = session.write_tx

    def tx_spy(work):  # a correction's statements, sent in its transaction
        class Tx:
            def __init__(self, tx) -> None:
                self.tx = tx

            def run(self, text, params=None, **kw):
                sent.append((text, {**(params or {}), **kw}))
                return self.tx.run(text, params, **kw)

        return in_tx(lambda tx: work(Tx(tx)))

    monkeypatch.setattr(session, "write_tx", tx_spy)
    kg = store.kg
    rels = {(r.id, r.direction): r.degree for r in kg.relations([iri("hub")])[iri("hub")]}
    assert rels == {(LINKS.id, "out"): OUT, (BORN.id, "out"): 1, (LIKES.id, "in"): IN}
    for limit in (5, 40, 100, 5 * MAX_CANDIDATES):  # (a limit past MAX_CANDIDATES is taken as it)
        got = [(c.node.id, c.node.name) for c in kg.expand([(iri("hub"), LINKS)], limit=limit)]
        assert got == _expected(min(limit, MAX_CANDIDATES)), limit
    fans = kg.expand([(iri("hub"), LIKES)], limit=7)
    assert [c.node.id for c in fans] == sorted((iri(f"m{i}") for i in range(IN)), key=sample_key)[:7]
    # a pair whose listing gave its degree is known to be crowded: read from its sample, with no
    # window read first (a relation without a degree, as above, is read through the window)
    start = len(rows)
    listed = {(r.id, r.direction): r for r in kg.relations([iri("hub")])[iri("hub")]}
    got = [(c.node.id, c.node.name) for c in kg.expand([(iri("hub"), listed[(LINKS.id, "out")])], limit=40)]
    assert got == _expected(40) and not [name for name, _ in rows[start:] if name.startswith("expand_")]
    assert [name for name, _ in rows[:start] if name.startswith("expand_")]
    # both pairs are past SORT_MAX: the load had the server sort them, no question does (the
    # widest window, 4 x MAX_CANDIDATES = SAMPLE_KEEP, is read with one row more to see it is full)
    assert kg.made["crowded_pairs"] == 0 and max(n for _, n in rows) <= SAMPLE_KEEP + 1
    assert not [name for name, _ in rows if name.startswith("sample_")]
    j = min(range(IN), key=lambda i: sample_key(iri(f"m{i}")))
    newcomer = iri(f"m{j}")
    c = correct(store, [], [f"<{iri('hub')}>|<{LINKS.id}>|<{newcomer}>"], "a test")
    got = [(x.node.id, x.node.name) for x in kg.expand([(iri("hub"), LINKS)], limit=100)]
    assert got == _expected(100, extra=(newcomer, f"Fan {j}"))
    assert kg.made["crowded_pairs"] == 0  # updated in place by the correction's transaction
    from engine.feedback import revert

    revert(store, c.id)
    assert [(x.node.id, x.node.name) for x in kg.expand([(iri("hub"), LINKS)], limit=100)] == _expected(100)
    assert kg.made["crowded_pairs"] == 0 and max(n for _, n in rows) <= SAMPLE_KEEP + 1
    # the revert left the sample a neighbour short (the newcomer out, the one it had pushed out not
    # back): the largest window reads it as it is, where the server sorted the 150,000 edges again
    got = [(x.node.id, x.node.name) for x in kg.expand([(iri("hub"), LINKS)], limit=MAX_CANDIDATES)]
    assert got == _expected(MAX_CANDIDATES) and kg.made["crowded_pairs"] == 0
    # finding and taking out the hub's one link, and adding it to the hub's kept counts, read
    # neither the hub's 150,000 links nor its other edges
    facts = {_statement(text): (text, params) for text, params in sent
             if _statement(text) in ("fact_exists", "fact_remove", "hubs_touch", "hubs_save")}
    assert set(facts) == {"fact_exists", "fact_remove", "hubs_touch", "hubs_save"}
    assert facts["fact_remove"][1]["s"] == iri("hub") and iri("hub") in facts["hubs_touch"][1]["ids"]
    hits = {name: _db_hits(neo4j_store, *statement) for name, statement in facts.items()}
    assert max(hits.values()) < 100, hits
    # a fact between two nodes of many edges (the hub and itself: 210,000) is looked for, added and
    # taken out through its type's edges only (its type as a parameter, every edge of an end was read)
    sent.clear()
    revert(store, correct(store, [], [f"<{iri('hub')}>|<{LIKES.id}>|<{iri('hub')}>"], "a loop").id)
    facts = {_statement(text): (text, params) for text, params in sent if _statement(text).startswith("fact_")}
    assert set(facts) == {"fact_exists", "fact_add_entity", "fact_remove"}
    hits = {name: _db_hits(neo4j_store, *statement) for name, statement in facts.items()}
    assert max(hits.values()) < 100, hits
    # a load's look for the facts corrections took out reads as little, a type a statement
    sent.clear()
    linked = (iri("hub"), LINKS.id, got[0][0])
    loop = (iri("hub"), LIKES.id, iri("hub"))
    assert store.corrections.held([loop, linked, (iri("hub"), LINKS.id, iri("hub"))]) == {linked}
    held = [(text, params) for text, params in sent if _statement(text) == "facts_held"]
    assert len(held) == 2 and sorted(len(params["facts"]) for _, params in held) == [1, 2]
    hits = [_db_hits(neo4j_store, *statement) for statement in held]
    assert max(hits) < 100, hits
    # the look-ahead over `likes` (60,000 edges, all to the hub) reads its first edges only
    from engine.backends.common import SCHEMA_READ, SCHEMA_TAILS
    from engine.queries import cypher

    assert "LIMIT $read" in cypher("schema_tails_out") and SCHEMA_READ < IN
    rows.clear()
    follows = kg.schema.after([Relation(LIKES.id, "out")])[Relation(LIKES.id, "out")]
    assert set(follows) == {LINKS, BORN, LIKES}
    assert [n for name, n in rows if name.startswith("schema_tails")] == [1] and SCHEMA_TAILS > 1
    # A statement that follows a type reads that type's edges only, by the server's own count
    # (PROFILE): the hub's one born_in edge beside its 150,000 links, looked for by an
    # expansion, a sample and the look-ahead (a type given as a parameter read them all).
    sent.clear()
    assert [c.node.id for c in kg.expand([(iri("hub"), BORN)], limit=5)] == [iri("city")]
    assert kg._sample((iri("hub"), BORN.id, "out"), SAMPLE_KEEP) == (1, [iri("city")])
    assert kg.schema.after([BORN])[BORN] == [Relation(BORN.id, "in")]  # back from the city: its one relation
    hits = {_statement(text): _db_hits(neo4j_store, text, params) for text, params in sent
            if _statement(text).startswith(("expand_", "sample_out", "schema_tails"))}
    assert set(hits) == {"expand_out", "sample_out", "schema_tails"} and max(hits.values()) < 100, hits


@pytest.mark.neo4j
def test_neo4j_keeps_a_hub_s_counts_until_its_edges_change(neo4j_store, loaded_hub, tmp_path, monkeypatch):
    """A hub's relations, counted per type from the degree store, are
    counted once and kept: by the load that wrote it, when it ends. A
    correction adds the edges it changed to them in its own transaction
    (a new type, a type's last edge gone, a swap that keeps the degrees),
    and counts taken before it and kept after it are not used; edges a
    load or a raw write adds change the hub's degree, which the kept counts
    then no longer add up to (a load counts them again when it ends); a
    type another process added is seen. Each time the next listing is
    exact; run state is no KG."""
    from conftest import open_spec

    from engine.backends.neo4j.kg import Neo4jKG
    from engine.feedback import correct, revert
    from loaders.load import load_file

    store = open_spec(neo4j_store, create=True)
    load_file(store.need_sink(), loaded_hub.parent / "hub.nt")
    session = store.kg.session
    counted = _hubs_counted(monkeypatch, session)
    plain = session.run_text

    checks: list[dict] = []  # the parameters of each read of kept counts
    between: list = []  # a correction to make between a count and its save

    def spy(text, *args, **params):
        if _statement(text) == "hubs_save" and between:
            between.pop()()
        elif _statement(text) == "hubs_get":
            checks.append({k: v for k, v in params.items() if k not in ("write", "meter")})
        return plain(text, *args, **params)

    monkeypatch.setattr(session, "run_text", spy)

    def listed() -> dict:
        kg = Neo4jKG(session)  # a new reader each time: what is kept in the database, not in a process
        return {(r.id, r.direction): r.degree for r in kg.relations([iri("hub")])[iri("hub")]}

    def kept() -> int:
        return session.run("summaries_count")[0]["hubs"]

    base = {(LINKS.id, "out"): OUT, (BORN.id, "out"): 1, (LIKES.id, "in"): IN}
    assert kept() == 1 and listed() == base and counted == []  # counted by the load
    from engine.backends.neo4j.kg import HUBS_GET

    assert _db_hits(neo4j_store, HUBS_GET, checks[-1]) < 100  # its check: degrees, not the edges
    new = (iri("new_rel"), "out")
    hub_, links = f"<{iri('hub')}>", f"<{LINKS.id}>"
    c = correct(store, [], [f"{hub_}|<{new[0]}>|<{iri('city')}>", f'{hub_}|<{new[0]}>|"1990"',  # a new type, a value
                            f"<{iri('city')}>|<{LIKES.id}>|{hub_}", f"{hub_}|{links}|{hub_}"], "a test")  # in; a loop
    more = {new: 2, (LIKES.id, "in"): IN + 1, (LINKS.id, "out"): OUT + 1, (LINKS.id, "in"): 1}
    assert kept() == 1 and listed() == {**base, **more} and counted == []  # added to by the correction
    revert(store, c.id)
    assert listed() == base and counted == []  # the new types' edges gone: so are their counts
    link = f"<{iri('hub')}>|<{LINKS.id}>|<{iri('n5')}>"
    moved = correct(store, [link], [link.replace("n5", "m1")], "a test")  # one of the hub's links swapped
    assert listed() == base and counted == []
    assert correct(store, [], [link.replace("n5", "m1")], "already there").added == []  # nothing changed
    assert listed() == base and counted == []
    revert(store, moved.id)
    assert listed() == base and counted == []
    born = f"<{iri('hub')}>|<{BORN.id}>|<{iri('city')}>"
    swap = correct(store, [born], [f"<{iri('hub')}>|<{new[0]}>|<{iri('city')}>"], "a test")  # the same degrees
    swapped = {**{k: n for k, n in base.items() if k[0] != BORN.id}, new: 1}
    assert listed() == swapped and counted == []
    revert(store, swap.id)
    assert listed() == base and counted == []
    session.run_text("MATCH (h:TogHub) DETACH DELETE h", write=True)
    raced = []
    between.append(lambda: raced.append(correct(store, [born], [f"<{iri('hub')}>|<{new[0]}>|<{iri('city')}>"], "r")))
    assert listed() == base and raced  # counted, then the swap, then the (now stale) counts kept
    assert counted == [iri("hub")] and kept() == 1
    grown = correct(store, [], [f"{hub_}|{links}|<{iri('m2')}>"], "a test")  # meets the stale counts: drops them
    assert kept() == 0 and listed() == {**swapped, (LINKS.id, "out"): OUT + 1} and counted == [iri("hub")] * 2
    revert(store, grown.id)
    assert listed() == swapped and counted == [iri("hub")] * 2
    revert(store, raced[0].id)
    assert listed() == base and counted == [iri("hub")] * 2
    assert iri("newer") not in session.relationship_types()  # this session's types, cached
    other = open_spec(neo4j_store)  # another process, which adds a relationship type to the hub
    added = correct(other, [], [f"<{iri('hub')}>|<{iri('newer')}>|<{iri('city')}>"], "elsewhere")
    assert listed() == {**base, (iri("newer"), "out"): 1} and counted == [iri("hub")] * 2  # added to there
    session.run_text("MATCH (h:TogHub) DETACH DELETE h", write=True)
    assert listed() == {**base, (iri("newer"), "out"): 1}  # this session had cached the types without it
    assert counted == [iri("hub")] * 4  # counted short of its degree, then again with the types read again
    revert(other, added.id)
    assert listed() == base and counted == [iri("hub")] * 4
    counted.clear()
    more = write_nt(tmp_path / "more.nt", [f"<{iri('hub')}> <{iri('other')}> <{iri(f'o{i}')}> ." for i in range(3)])
    load_file(store.need_sink(), more)
    assert kept() == 1 and counted == [iri("hub")]  # counted again by the load's end, which kept them
    assert listed() == {**base, (iri("other"), "out"): 3} and counted == [iri("hub")]
    counted.clear()
    hub = {"hub": iri("hub")}
    session.run_text("MATCH (e:Entity {id: $hub}) CREATE (:TogPath {id: 'p'})-[:AT]->(e), "
                     "(:TogCorrection {id: 'c'})-[:ABOUT]->(e)", write=True, **hub)  # run state, a record
    assert listed() == {**base, (iri("other"), "out"): 3} and counted == []
    behind_its_back = f"MATCH (e:Entity {{id: $hub}}) CREATE (e)<-[:`{LIKES.id}`]-(:Entity {{id: 'x'}})"
    session.run_text(behind_its_back, write=True, **hub)  # neither a load nor a correction
    assert listed() == {**base, (iri("other"), "out"): 3, (LIKES.id, "in"): IN + 1} and counted == [iri("hub")]


@pytest.mark.neo4j
def test_neo4j_corrections_of_one_hub_at_once_both_reach_its_counts(neo4j_store, tmp_path, monkeypatch):
    """Two reverts that take edges off one hub at the same time (a deleted
    edge does not lock a dense node) both move its correction counter and
    both reach its kept counts: neither reads the counter before the other
    has committed (read first, then set, one of the two moves was lost)."""
    import threading

    from conftest import open_spec

    from engine.backends.neo4j import corrections as neo4j_corrections
    from engine.backends.neo4j import kg as neo4j_kg
    from engine.backends.neo4j.kg import Neo4jKG
    from engine.feedback import correct, revert
    from loaders.load import load_file

    monkeypatch.setattr(neo4j_kg, "HUB_EDGES", 30)
    links = 120  # past Neo4j's 50 edges, from where a node is dense
    lines = [f"<{iri('hub')}> <{LINKS.id}> <{iri(f'n{i}')}> ." for i in range(links)]
    store = open_spec(neo4j_store, create=True)
    load_file(store.need_sink(), write_nt(tmp_path / "hub.nt", lines))
    fixes = [correct(store, [], [f"<{iri('hub')}>|<{LIKES.id}>|<{iri(f'n{i}')}>"], "a test") for i in range(2)]
    session = store.kg.session

    def counter() -> int:
        return session.run_text("MATCH (e:Entity {id: $id}) RETURN e.tog_edits AS n", id=iri("hub"))[0]["n"]

    before = counter()
    meet = threading.Barrier(2, timeout=5)
    plain = neo4j_corrections.refresh_summaries

    def together(tx, *args) -> None:  # both have taken their edge off when either moves the counter
        try:
            meet.wait()
        except threading.BrokenBarrierError:
            pass  # a transaction retried after a deadlock goes on alone
        plain(tx, *args)

    monkeypatch.setattr(neo4j_corrections, "refresh_summaries", together)
    failed: list[BaseException] = []

    def undo(c) -> None:
        try:
            revert(open_spec(neo4j_store), c.id)  # another process each
        except BaseException as e:  # noqa: BLE001 (reported below)
            failed.append(e)

    threads = [threading.Thread(target=undo, args=(c,)) for c in fixes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failed and counter() == before + 2
    counted = _hubs_counted(monkeypatch, session)
    listed = {(r.id, r.direction): r.degree for r in Neo4jKG(session).relations([iri("hub")])[iri("hub")]}
    assert listed == {(LINKS.id, "out"): links} and counted == []  # both steps in the kept counts


@pytest.mark.neo4j
def test_neo4j_counts_an_older_database_s_hubs_once_before_a_question_lists_one(neo4j_store, tmp_path, monkeypatch,
                                                                                  caplog):
    """A database whose hubs a load's end did not count (an older tog made
    it, or it was imported offline) has every hub counted, in one go and
    said so, before the first listing that meets a hub, not a hub at a
    time inside whichever questions list them first; then never again."""
    import logging

    from conftest import open_spec

    from engine.backends.neo4j import kg as neo4j_kg
    from engine.backends.neo4j.kg import HUBS_COUNTED, Neo4jKG
    from loaders.load import load_file

    monkeypatch.setattr(neo4j_kg, "HUB_EDGES", 30)
    lines = [f"<{iri(h)}> <{LINKS.id}> <{iri(f'{h}-{i}')}> ." for h in ("a", "b") for i in range(40)]
    lines += [f"<{iri('small')}> <{BORN.id}> <{iri('city')}> ."]
    store = open_spec(neo4j_store, create=True)
    load_file(store.need_sink(), write_nt(tmp_path / "two-hubs.nt", lines))
    session = store.kg.session

    def kept() -> int:
        return session.run("summaries_count")[0]["hubs"]

    assert kept() == 2 and session.setting(HUBS_COUNTED, None) == 30  # the load's end counted both

    def as_an_older_tog_left_it() -> None:
        session.run_text("MATCH (h:TogHub) DETACH DELETE h", write=True)
        session.run_text("MATCH (s:TogSetting {key: $key}) DELETE s", write=True, key=HUBS_COUNTED)

    as_an_older_tog_left_it()
    load_file(store.need_sink(), write_nt(tmp_path / "more.nt", [f"<{iri('small')}> <{BORN.id}> <{iri('town')}> ."]))
    assert kept() == 2 and session.setting(HUBS_COUNTED, None) == 30  # a load's end: the whole KG, not what it touched
    as_an_older_tog_left_it()
    counted = _hubs_counted(monkeypatch, session)
    caplog.set_level(logging.INFO, logger="tog")
    kg = Neo4jKG(session)
    assert kg.relations([iri("small")])[iri("small")] and counted == []  # no hub listed: nothing counted yet
    assert {(r.id, r.degree) for r in kg.relations([iri("a")])[iri("a")]} == {(LINKS.id, 40)}
    assert sorted(counted) == [iri("a"), iri("b")] and kept() == 2  # both, in one go
    assert "counting the hubs of the Neo4j database once" in caplog.text and "2 hubs counted" in caplog.text
    assert session.setting(HUBS_COUNTED, None) == 30
    assert {(r.id, r.degree) for r in Neo4jKG(session).relations([iri("b")])[iri("b")]} == {(LINKS.id, 40)}
    assert sorted(counted) == [iri("a"), iri("b")]  # kept: a new reader counts nothing


@pytest.mark.neo4j
def test_neo4j_look_ahead_reads_a_tail_s_first_edges_only(neo4j_store, tmp_path, monkeypatch):
    """A look-ahead tail that is no hub shows what its first SCHEMA_EDGES
    edges each way say, as on the embedded store: a tail of 1,800 edges is
    not read whole, by the server's own count (PROFILE)."""
    from engine.backends.common import SCHEMA_EDGES

    wide = 900  # each way: under the hub threshold, so listed, not counted per type
    lines = [f"<{iri('a')}> <{iri('points_to')}> <{iri('wide')}> ."]
    lines += [f"<{iri('wide')}> <{iri('has')}> <{iri(f'w{i}')}> ." for i in range(wide)]
    lines += [f"<{iri(f'v{i}')}> <{iri('sees')}> <{iri('wide')}> ." for i in range(wide)]
    kg = _neo4j_kg(neo4j_store, tmp_path / "wide.nt", lines)
    sent = _sent(kg.session, "run", monkeypatch)
    points = Relation(iri("points_to"), "out")
    follows = set(kg.schema.after([points])[points])
    has, sees = Relation(iri("has"), "out"), Relation(iri("sees"), "in")
    assert {has, sees} <= follows <= {has, sees, Relation(iri("points_to"), "in")}
    from engine.queries import cypher

    (params,) = [p for name, p in sent if name == "relations"]
    assert params["ids"] == [iri("wide")] and params["edges"] == SCHEMA_EDGES
    sampled = _db_hits(neo4j_store, cypher("relations"), params)
    whole = _db_hits(neo4j_store, cypher("relations"), {**params, "edges": params["hub"]})  # a listing's
    assert whole > 2 * wide and sampled < 10 * SCHEMA_EDGES, (sampled, whole)
    degrees = kg.degrees([iri("wide")], sample=SCHEMA_EDGES)[iri("wide")]
    assert sum(r.degree or 0 for r in degrees) == 2 * SCHEMA_EDGES


@pytest.mark.neo4j
def test_neo4j_look_ahead_reads_a_hub_tail_s_kept_types_without_its_degrees(neo4j_store, tmp_path, monkeypatch):
    """A look-ahead tail that is a hub shows the relations its kept counts
    name (``hubs_types``), read without the check of its degree that a
    listing makes (``hubs_get``: two sums over every type of the hub), and
    they are the listing's relations. A correction that gives the hub a new
    type is in them; a hub with none kept is counted, and its counts kept."""
    from conftest import open_spec

    from engine.backends.neo4j import kg as neo4j_kg
    from engine.backends.neo4j.kg import Neo4jKG
    from engine.feedback import correct
    from loaders.load import load_file

    monkeypatch.setattr(neo4j_kg, "HUB_EDGES", 30)
    links = 120  # each way: a hub past the threshold above, and dense for Neo4j (50)
    lines = [f"<{iri('a')}> <{iri('points_to')}> <{iri('hub')}> ."]
    lines += [f"<{iri('hub')}> <{LINKS.id}> <{iri(f'n{i}')}> ." for i in range(links)]
    lines += [f"<{iri(f'v{i}')}> <{LIKES.id}> <{iri('hub')}> ." for i in range(links)]
    store = open_spec(neo4j_store, create=True)
    load_file(store.need_sink(), write_nt(tmp_path / "hub.nt", lines))
    session = store.kg.session
    counted = _hubs_counted(monkeypatch, session)
    names, texts = _sent(session, "run", monkeypatch), _sent(session, "run_text", monkeypatch)
    points = Relation(iri("points_to"), "out")

    def follows() -> set[Relation]:
        session.run_batched("schema_clear")
        names.clear()
        texts.clear()
        return set(Neo4jKG(session).schema.after([points])[points])  # a new reader: nothing in a process

    def checked() -> int:
        return sum(_statement(text) == "hubs_get" for text, _ in texts)

    listing = set(Neo4jKG(session).relations([iri("hub")])[iri("hub")])
    assert listing == {LINKS, LIKES, Relation(iri("points_to"), "in")} and counted == []  # counted by the load
    assert follows() == listing
    assert [p["ids"] for name, p in names if name == "hubs_types"] == [[iri("hub")]]
    assert checked() == 0 and counted == []
    new = Relation(iri("new_rel"), "out")
    correct(store, [], [f"<{iri('hub')}>|<{new.id}>|<{iri('n0')}>"], "a test")
    assert follows() == listing | {new} and checked() == 0 and counted == []  # added to by the correction
    session.run_text("MATCH (h:TogHub) DELETE h", write=True)
    assert follows() == listing | {new} and counted == [iri("hub")]
    assert session.run("summaries_count")[0]["hubs"] == 1


@pytest.mark.neo4j
def test_neo4j_look_ahead_over_a_relation_to_literals_reads_its_first_edges_only(neo4j_store, tmp_path, monkeypatch):
    """A relation whose objects are literals (a date, say) leads to few
    entities or none: its look-ahead reads its first SCHEMA_READ edges each
    way, as on the embedded store, not all 200,000 looking for entities, by the
    server's own count (PROFILE)."""
    from engine.backends.common import SCHEMA_READ

    n = 200_000
    lines = [f'<{iri(f"p{i}")}> <{iri("dated")}> "{1800 + i % 200}" .' for i in range(n)]
    lines += [f"<{iri('p0')}> <{iri('dated')}> <{iri('era')}> .", f"<{iri('era')}> <{iri('after')}> <{iri('next')}> ."]
    kg = _neo4j_kg(neo4j_store, tmp_path / "dated.nt", lines)
    sent = _sent(kg.session, "run_text", monkeypatch)
    out, back = Relation(iri("dated"), "out"), Relation(iri("dated"), "in")
    follows = kg.schema.after([out, back])
    assert set(follows[back]) <= {out}  # its subjects' one relation
    reads = [(text, params) for text, params in sent if _statement(text) == "schema_tails"]
    assert len(reads) == 1
    hits = _db_hits(neo4j_store, *reads[0])
    assert hits < 20 * SCHEMA_READ < n, hits


@pytest.mark.neo4j
def test_neo4j_reads_a_batch_of_relations_look_ahead_tails_in_few_statements(neo4j_store, tmp_path, monkeypatch):
    """Neo4j plans every new statement text, and a look-ahead tail read names
    its type: a batch of relations has its tails read by one statement per
    UNION_TYPES of them, not one each, and each relation gets the schema it
    gets when made alone."""
    from engine.backends.neo4j.kg import UNION_TYPES

    n = UNION_TYPES + 5
    lines = [f"<{iri(f'a{t}')}> <{iri(f'r{t}')}> <{iri(f'b{t}')}> ." for t in range(n)]
    lines += [f"<{iri(f'b{t}')}> <{iri(f's{t}')}> <{iri(f'c{t}')}> ." for t in range(n)]
    kg = _neo4j_kg(neo4j_store, tmp_path / "types.nt", lines)
    texts = _sent(kg.session, "run_text", monkeypatch)
    ahead = [Relation(iri(f"r{t}"), "out") for t in range(n)] + [Relation(iri(f"s{t}"), "in") for t in range(n)]
    follows = kg.schema.after(ahead)
    sent = [_statement(text) for text, _ in texts]
    assert sent.count("schema_tails") == -(-2 * n // UNION_TYPES) < 2 * n
    assert not [name for name in sent if name.startswith("schema_tails_")]
    for t in range(n):  # around b{t}, the one tail either way
        around = {Relation(iri(f"r{t}"), "in"), Relation(iri(f"s{t}"), "out")}
        assert set(follows[Relation(iri(f"r{t}"), "out")]) == around == set(follows[Relation(iri(f"s{t}"), "in")])
    kg.session.run_batched("schema_clear")
    for r in ahead[:3] + ahead[n - 2:n + 2] + ahead[-3:]:  # the batch's ends and where its statements split
        assert kg.schema.after([r])[r] == follows[r]


def _plans_cleared(uri: str) -> int:
    """Empty the server's plan cache; the plans it held (its own count)."""
    import os

    import neo4j

    with neo4j.GraphDatabase.driver(uri, auth=(os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"])) as driver:
        said = driver.execute_query("CALL db.clearQueryCaches()").records[0][0]
    found = re.search(r"of (\d+) quer", said)
    return int(found.group(1)) if found else 0


@pytest.mark.neo4j
def test_neo4j_plans_an_expansion_once_whether_it_is_sent_one_pair_or_several(neo4j_store, tmp_path):
    """An expansion's text (one per relationship type and direction) gets one
    plan in the server's cache, not one for a single pair and another for a
    few: Neo4j keys a plan by the size of each list it is sent, bucketed,
    and on a KG of hundreds of types the extra plans cost planning time and
    crowd the cache (1,000 plans a database by default). Counted by the
    server (``db.clearQueryCaches``); the candidates stay each pair's own."""
    from conftest import open_spec

    from loaders.load import load_file

    people = ["a", "b", "c", "d"]
    lines = [f"<{iri(p)}> <{iri('likes')}> <{iri(f'{p}{i}')}> ." for p in people for i in range(3)]
    lines += [f"<{iri(x)}> <{RDFS_LABEL}> \"{x} name\" ." for x in people]
    lines += [f"<{iri(f'{p}{i}')}> <{RDFS_LABEL}> \"{p}{i} name\" ." for p in people for i in range(3)]
    store = open_spec(neo4j_store, create=True)
    load_file(store.need_sink(), write_nt(tmp_path / "likes.nt", lines))
    kg, likes = store.kg, Relation(iri("likes"), "out")

    def expand(who: list[str]) -> set[str]:
        return {c.node.id for c in kg.expand([(iri(p), likes) for p in who], through=False)}

    _plans_cleared(neo4j_store)
    assert expand(["a"]) == {iri(f"a{i}") for i in range(3)}
    one = _plans_cleared(neo4j_store)
    assert one >= 1
    assert expand(["a"]) == {iri(f"a{i}") for i in range(3)}
    assert expand(["b", "c", "d"]) == {iri(f"{p}{i}") for p in "bcd" for i in range(3)}
    assert expand(["d"]) == {iri(f"d{i}") for i in range(3)}
    assert _plans_cleared(neo4j_store) == one


@pytest.mark.neo4j
def test_neo4j_expands_a_batch_of_relationship_types_in_one_transaction(neo4j_store, tmp_path, monkeypatch):
    """An expansion names each relationship type in a statement of its own;
    a batch over several types sends them all in one read transaction (a
    transaction each paid its own begin and commit: a quarter of `tog
    learn`'s expansion time at 1M triples), counted a statement each, and
    each pair gets the candidates it gets alone. A statement the server
    refuses there is the store's error, as anywhere else."""
    from conftest import open_spec

    from engine.errors import StoreError
    from loaders.load import load_file

    people, types = ["a", "b", "c"], ["likes", "knows", "owns", "visits"]
    lines = [f"<{iri(p)}> <{iri(t)}> <{iri(f'{p}-{t}-{i}')}> ." for p in people for t in types for i in range(3)]
    lines += [f"<{iri(f'{p}-{t}-{i}')}> <{RDFS_LABEL}> \"{p} {t} {i}\" ." for p in people for t in types
              for i in range(3)]
    store = open_spec(neo4j_store, create=True)
    load_file(store.need_sink(), write_nt(tmp_path / "types.nt", lines))
    kg, driver = store.kg, store.kg.session.driver
    pairs = [(iri(p), Relation(iri(t), d)) for p in people for t in types for d in ("out", "in")]
    alone = {pair: [(c.node.id, c.node.name) for c in kg.expand([pair], limit=5, through=False)] for pair in pairs}
    assert sum(map(len, alone.values())) == len(people) * len(types) * 3
    calls = {"execute_query": 0, "session": 0}
    for method in calls:
        def spy(*args, _plain=getattr(driver, method), _method=method, **kwargs):
            calls[_method] += 1
            return _plain(*args, **kwargs)

        monkeypatch.setattr(driver, method, spy)
    before = kg.meter.lookups
    got = kg.expand(pairs, limit=5, through=False)
    assert calls == {"execute_query": 0, "session": 1}
    assert kg.meter.lookups - before == 2 * len(types)  # a statement a type and direction
    for pair in pairs:
        assert [(c.node.id, c.node.name) for c in got if (c.source, c.relation) == pair] == alone[pair], pair
    with pytest.raises(StoreError) as e:
        kg.session.run_many([("RETURN 1 AS one", {}), ("RETURN nothing_of_ours(1)", {})])
    assert str(e.value).startswith(f"Neo4j at {kg.session.uri} failed: Unknown function")


@pytest.mark.neo4j
def test_a_neo4j_database_made_before_sample_keys_gets_them_once(neo4j_store):
    """Nodes written before nodes kept a sample key get theirs on the first
    connection, once; crowded pairs then sort as everywhere else."""
    import os

    import neo4j
    from conftest import METAQA, open_spec

    from engine.backends.common import sample_hash
    from loaders.load import load_file

    load_file(open_spec(neo4j_store, create=True).need_sink(), METAQA / "kb.txt")
    auth = (os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"])
    with neo4j.GraphDatabase.driver(neo4j_store, auth=auth) as driver:
        driver.execute_query("MATCH (n) WHERE n:Entity OR n:Value REMOVE n.sk")  # as an older tog wrote them
        driver.execute_query("MATCH (s:TogSetting {key: 'sample_keys'}) DELETE s")
        open_spec(neo4j_store)
        rows = driver.execute_query("MATCH (n) WHERE n:Entity OR n:Value RETURN n.id AS id, n.sk AS sk").records
    assert rows and all(r["sk"] == sample_hash(r["id"]) for r in rows)


@pytest.mark.parametrize("method", ["plan", "kg-llm-once"])
def test_the_other_paradigms_read_a_hub_in_bounded_pieces_too(hub_store, monkeypatch, method):
    """The planner's real steps and the one-shot retrieval use the same
    bounded listing and expansion; the planner's simulated steps read the
    schema only, and the retrieval shows at most its token cap."""
    from engine.paradigms import TOKENS
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig

    spy = Spy(hub_store.kg, monkeypatch)
    r = ask(hub_store, "where was [The Hub] born", get_pruner("hybrid"), get_reasoner("offline"),
            SearchConfig(method=method), record=False)
    assert r.result.answer.names == ["Hub City"]
    assert spy.most_rows() <= SAMPLE_KEEP
    spy.calls.clear()
    r = ask(hub_store, "which city was the one [Fan 7] likes born in", get_pruner("hybrid"),
            get_reasoner("offline"), SearchConfig(method=method), record=False)
    assert spy.most_rows() <= SAMPLE_KEEP and spy.full_reads() <= 2
    if method == "kg-llm-once":
        assert sum(len(p.verbalise()) // 4 + 2 for p in r.result.kept) <= TOKENS
        assert r.result.stats["retrieved"] >= r.result.stats["shown"] > 0
        hub_links = [p for p in r.result.kept if any(h.relation == LINKS for h in p.hops)]
        assert len(hub_links) <= 100  # --max-candidates of the hub's 150,000 links, never all of them


WIDE_RELATIONS, WIDE_EDGES = 400, 250  # an entity of 100k edges over 400 relations


@pytest.mark.parametrize("backend", ["oxigraph", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_retrieving_once_around_an_entity_of_400_relations_follows_the_best_until_its_cap(backend, request, tmp_path,
                                                                                        monkeypatch):
    """The one-shot retrieval follows an entity's relations best first, at
    most ``STEPS`` a hop, until they would bring ``READ`` paths (the
    listing's degrees say what each brings): 400 relations of 250 edges each
    are not all expanded, and the one the question asks for is."""
    from engine.paradigms import READ, STEPS
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig

    star = iri("star")
    lines = [f'<{star}> <{RDFS_LABEL}> "The Star" .']
    lines += [f"<{star}> <{iri(f'kind_{r}_of_link')}> <{iri(f'x{r}_{i}')}> ."
              for r in range(WIDE_RELATIONS - 1) for i in range(WIDE_EDGES)]
    lines += [f"<{star}> <{iri('won_prize')}> <{iri(f'prize{i}')}> ." for i in range(WIDE_EDGES)]
    lines += [f'<{iri(f"prize{i}")}> <{RDFS_LABEL}> "Prize {i}" .' for i in range(WIDE_EDGES)]
    spec = request.getfixturevalue("neo4j_store") if backend == "neo4j" else str(tmp_path / "store")
    store = _loaded(spec, tmp_path / "wide.nt", lines)
    asked: list[int] = []
    plain = store.kg.expand

    def expand(requests, *args, **kwargs):
        asked.append(len(requests))
        return plain(requests, *args, **kwargs)

    monkeypatch.setattr(store.kg, "expand", expand)
    # 100 candidates a pair: the paths bind (30 relations); 5 of a crowded pair (ToG's rule): the steps do
    for config, first in ((SearchConfig(method="kg-llm-once"), READ // 100),
                          (SearchConfig(method="kg-llm-once", sample_over=20, sample_size=5), STEPS)):
        asked.clear()
        r = ask(store, "which prize did [The Star] win", get_pruner("hybrid"), get_reasoner("offline"), config,
                record=False)
        assert asked[0] == first and max(asked) <= STEPS
        assert r.result.stats["retrieved"] <= config.depth * (READ + config.max_candidates)
        won = [p for p in r.result.kept if p.hops[0].relation.id == iri("won_prize")]
        # the relation asked for was followed, and shown first
        assert len(won) == min(config.max_candidates, config.sample_size if config.sample_over else WIDE_EDGES)
        assert r.result.kept[: len(won)] == won
        assert set(r.result.answer.names) <= {f"Prize {i}" for i in range(WIDE_EDGES)} and r.result.answer.names


CVT_EDGES = 120_000
HOLDS = Relation(iri("holds"), "out")


def _cvt_lines() -> list[str]:
    """A named source whose one neighbour is an unnamed node (a Freebase CVT)
    with 120k edges, a third of them to named nodes."""
    lines = [f'<{iri("src")}> <{RDFS_LABEL}> "The Source" .', f"<{iri('src')}> <{HOLDS.id}> <{iri('cvt')}> ."]
    lines += [f"<{iri('cvt')}> <{LINKS.id}> <{iri(f'n{i}')}> ." for i in range(CVT_EDGES)]
    lines += [f'<{iri(f"n{i}")}> <{RDFS_LABEL}> "Node {i}" .' for i in range(0, CVT_EDGES, 3)]
    return lines


@pytest.mark.parametrize("backend", ["oxigraph", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_looking_through_an_unnamed_node_with_100k_edges_reads_only_its_sample(backend, request, tmp_path,
                                                                              monkeypatch):
    """What is behind an unnamed node comes from the same bounded expansion
    as any step: its crowded pair is read from its sample, never whole."""
    spec = request.getfixturevalue("neo4j_store") if backend == "neo4j" else str(tmp_path / "store")
    kg = _loaded(spec, tmp_path / "cvt.nt", _cvt_lines()).kg
    rows: list[int] = []
    if backend == "neo4j":
        for method in ("run", "run_text"):
            plain = getattr(kg.session, method)

            def spy(name, *args, _plain=plain, **params):
                got = _plain(name, *args, **params)
                rows.append(len(got))
                return got

            monkeypatch.setattr(kg.session, method, spy)
    else:
        plain_select = kg._select

        def spy_select(text, params=(), **kwargs):
            got = plain_select(text, params, **kwargs)
            rows.append(len(got))
            return got

        monkeypatch.setattr(kg, "_select", spy_select)
    named = {iri(f"n{i}"): f"Node {i}" for i in range(0, CVT_EDGES, 3)}
    order = sorted((iri(f"n{i}") for i in range(CVT_EDGES)), key=sample_key)
    for limit in (5, 40):
        rows.clear()
        got = [(c.node.id, c.node.name, tuple(v.id for v in c.via)) for c in kg.expand([(iri("src"), HOLDS)], limit)]
        want = [(x, named[x], (LINKS.id,)) for x in order[: 4 * limit] if x in named][:limit]
        assert got == want, limit
        assert max(rows) <= max(SAMPLE_KEEP, 4 * limit + 1), (limit, max(rows))


@pytest.mark.neo4j
def test_a_load_into_neo4j_merges_its_edges_into_the_kept_samples(neo4j_store, tmp_path, monkeypatch, tog):
    """Neo4j keeps crowded-pair samples across a load as the embedded store
    does: a kept pair the load wrote edges of gets them merged in (the
    sample order kept, equal to a sample the server sorts again), the rest
    stay, the schema goes, nothing is sorted again. Samples that questions
    made during the load go; a load that fails drops the samples of the
    pairs it wrote to; one past NOTED_MAX drops them too; after a load that
    began and never ended the next load forgets every sample."""
    from conftest import open_spec

    from engine.backends.neo4j import kg as kg_module
    from engine.backends.neo4j import sink as sink_module
    from engine.backends.neo4j.kg import sample_id
    from engine.errors import LoadError
    from loaders.load import load_file

    keep, crowd = 20, 30  # samples keep the first 20 (the window of a limit of 5): every pair is cut short
    monkeypatch.setattr(kg_module, "SAMPLE_KEEP", keep)
    lines, pairs, keys = _crowded_pairs(crowd, crowd)
    knows, likes, fans, mid, other, quiet = keys
    store = open_spec(neo4j_store, create=True)
    sink, kg = store.need_sink(), store.kg
    load_file(sink, write_nt(tmp_path / "base.nt", lines))

    def kept() -> dict:
        rows = kg.session.run("samples_get", keys=[sample_id(k) for k in keys])
        return {tuple(row["key"].split("\n")): (row["degree"], list(row["sample"])) for row in rows}

    kg.expand(pairs, limit=5)
    kg.schema.after([Relation(iri("knows"), "out")])
    before = kept()
    assert kg.made["crowded_pairs"] == 6 and [len(before[k][1]) for k in keys] == [keep] * 6
    assert kg.session.run("summaries_count")[0]["schema"] > 0
    last = max(map(sample_key, before[knows][1]))
    ahead = next(x for x in (iri(f"knows-new{i}") for i in range(1000)) if sample_key(x) < last)
    behind = next(x for x in (iri(f"mid.new{i}") for i in range(1000))
                  if sample_key(x) > max(sample_key(iri(f"mid.{i}")) for i in range(crowd)))
    more = write_nt(tmp_path / "more.nt", [
        f"<{iri('star')}> <{iri('knows')}> <{ahead}> .",
        f"<{iri('mid')}> <{iri('r')}> <{behind}> .",  # after all of mid's: not in its first 20
        f"<{iri('mid')}> <{iri('r')}> <{before[mid][1][0]}> .",  # an edge it has
        f'<{iri("other")}> <{iri("r")}> "a literal" .',
        f"<{iri('p-new')}> <{iri('fan_of')}> <{iri('star')}> .",  # into star
        f"<{iri('quiet')}> <{iri('elsewhere')}> <{iri('z')}> .",  # quiet touched, not through its pair
        f'<{iri("star")}> <{RDFS_LABEL}> "Star" .'])
    report = load_file(sink, more)
    merged = kept()
    assert report.summary is not None and report.summary["samples_merged"] == 4 and not report.summary["big_pairs_made"]
    assert kg.session.run("summaries_count")[0] == {"samples": 6, "schema": 0, "hubs": 0}
    assert all(merged[k] == before[k] for k in (likes, quiet)) and merged[fans][0] == crowd + 1
    assert merged[knows][0] == crowd + 1 and ahead in merged[knows][1] and len(merged[knows][1]) == keep
    assert merged[mid] == (crowd + 1, before[mid][1]) and merged[other][0] == crowd + 1
    kg.made["crowded_pairs"] = 0
    got = {pair: [c.node.id for c in kg.expand([pair], limit=3)] for pair in pairs}
    assert kg.made["crowded_pairs"] == 0  # nothing sorted again
    kg.session.run_batched("summaries_clear")  # every pair sorted again by the server: the same samples
    assert {pair: [c.node.id for c in kg.expand([pair], limit=3)] for pair in pairs} == got
    assert kept() == merged

    # a load that fails after writing to knows: its sample goes; one a question made meanwhile goes too
    kg.session.run("sample_drop", write=True, keys=[sample_id(other)])
    plain_commit = sink.commit

    def commit_then_ask(source, checkpoint):
        plain_commit(source, checkpoint)
        kg.expand([pairs[4]], limit=5)  # other's pair, sorted again while the load is on

    monkeypatch.setattr(sink, "commit", commit_then_ask)
    bad = write_nt(tmp_path / "bad.nt", [f"<{iri('star')}> <{iri('knows')}> <{iri('knows-late')}> .",
                                         "<no closing bracket .", "not a triple ."])
    with pytest.raises(LoadError):
        load_file(sink, bad, max_errors=1, chunk_bytes=1)
    monkeypatch.setattr(sink, "commit", plain_commit)
    assert kg.made["crowded_pairs"] >= 1 and sorted(kept()) == sorted([likes, fans, mid, quiet])
    # past NOTED_MAX a load drops the samples it wrote to, and keeps the others
    monkeypatch.setattr(sink_module, "NOTED_MAX", 1)
    report = load_file(sink, write_nt(tmp_path / "many.nt", [f"<{iri('mid')}> <{iri('r')}> <{iri(f'mid.x{i}')}> ."
                                                             for i in range(2)]))
    assert sorted(kept()) == sorted([likes, fans, quiet]) and report.summary is None
    # a load that began and never ended (killed): the next one forgets every sample, then keeps them again
    sink.begin()
    again = open_spec(neo4j_store)
    load_file(again.need_sink(), write_nt(tmp_path / "after.nt", [f"<{iri('z')}> <{iri('r')}> <{iri('y')}> ."]))
    assert kept() == {}
    again.kg.expand(pairs[1:2], limit=5)
    later = write_nt(tmp_path / "later.nt", [f"<{iri('star')}> <{iri('likes')}> <{iri('likes-late')}> ."])
    loaded = tog("load", later, "--store", neo4j_store, "--no-progress")
    assert loaded.exit_code == 0 and "crowded-pair samples: 1 merged" in loaded.output, loaded.output
    assert sorted(kept()) == [likes] and kept()[likes][0] == crowd + 1


def _transaction_cap(session) -> float:
    """The server's cap on one transaction's memory, in bytes; the test is
    skipped without one, or with one past what it fills (CI's is 128 MB)."""
    (value,) = [r["value"] for r in session.run_text(
        "SHOW SETTINGS YIELD name, value WHERE name = 'db.memory.transaction.max' RETURN value")]
    number, unit = re.fullmatch(r"([\d.]+)\s*([KMGT]?i?B)", value).groups()
    cap = float(number) * 1024 ** "BKMGT".index(unit[0])
    if not cap or cap > 256 * 2**20:
        pytest.skip(f"the server caps a transaction at {value}: more than this test fills (CI's caps at 128 MB)")
    return cap


@pytest.mark.neo4j
def test_neo4j_what_a_load_clears_and_merges_fits_a_capped_transaction(neo4j_store, tmp_path, monkeypatch):
    """A load on a server that caps one transaction's memory (CI's: 128 MB)
    begins and ends on a database whose questions made a schema that names
    hundreds of relations a relation, and kept hundreds of full samples: the
    schema goes and the samples are merged a few a transaction. In one
    transaction each, the server refused both: the load failed as it began,
    or ended as if done, its samples left without its edges. A load's end
    that fails on a load that did not is its error, and the first question
    then makes what a stopped load's end would."""
    from conftest import open_spec

    from engine.backends.neo4j import sink as sink_module
    from engine.backends.neo4j.kg import SAMPLE_KEEP, load_end_state, sample_id
    from engine.errors import StoreError
    from loaders.load import load_file

    store = open_spec(neo4j_store, create=True)
    session = store.kg.session
    cap = _transaction_cap(session)
    n = 200
    load_file(store.need_sink(), write_nt(tmp_path / "base.nt",
                                          [f"<{iri(f'e{i}')}> <{iri('r')}> <{iri(f'x{i}')}> ." for i in range(n)]))
    chars = int(0.75 * cap)  # of each kind: at two bytes a char, 1.5 caps in one transaction
    filler = "x" * (chars // (n * SAMPLE_KEEP))
    with session.driver.session() as raw:
        for part in range(0, n, 10):
            raw.run("UNWIND $rows AS row CREATE (:TogSchema {key: row[0], follows: row[1]})",
                    rows=[[f"made{i}\nout", "y" * (chars // n)] for i in range(part, part + 10)]).consume()
            raw.run("UNWIND $rows AS row CREATE (:TogSample {key: row[0], degree: 5000, sample: row[1]})",
                    rows=[[sample_id((iri(f"e{i}"), iri("r"), "out")),
                           [iri(f"s{i}.{j}.{filler}") for j in range(SAMPLE_KEEP)]] for i in range(part, part + 10)]
                    ).consume()
    assert session.run("summaries_count")[0] == {"samples": n, "schema": n, "hubs": 0}
    more = [f"<{iri(f'e{i}')}> <{iri('r')}> <{iri(f'new{i}')}> ." for i in range(n)]
    report = load_file(store.need_sink(), write_nt(tmp_path / "more.nt", more))
    assert report.summary is not None and report.summary["samples_merged"] == n
    assert session.run("summaries_count")[0] == {"samples": n, "schema": 0, "hubs": 0}
    degrees = session.run_text("MATCH (s:TogSample) RETURN DISTINCT s.degree AS d")
    assert [r["d"] for r in degrees] == [2] and session.setting(sink_module.PENDING, None) is False

    def refused(self, session):
        raise StoreError("Neo4j at bolt://x failed: The allocation of an extra 2.0 MiB would use more than the limit")

    monkeypatch.setattr(sink_module._SampleNotes, "apply", refused)
    with pytest.raises(StoreError, match="the limit"):
        load_file(store.need_sink(), write_nt(tmp_path / "last.nt", [f"<{iri('e0')}> <{iri('r')}> <{iri('z')}> ."]))
    assert load_end_state(session) == "pending"  # (the first question makes what its end would have)


def test_chunks_within_a_budget_keep_the_order_and_put_a_big_item_alone():
    from engine.backends.common import chunks_within

    got = [list(c) for c in chunks_within([1, 2, 3, 9, 1, 1, 1, 1], 3, 5, lambda x: x)]
    assert got == [[1, 2], [3], [9], [1, 1, 1], [1]]
    assert list(chunks_within([], 3, 5, lambda x: x)) == []


@pytest.mark.neo4j
def test_neo4j_keeps_many_hubs_counts_a_few_a_transaction(neo4j_store, monkeypatch):
    """Hubs' counts are kept (``hubs_save``) in transactions that fit a
    server that caps one's memory: 400 hubs of 400 long relationship types,
    0.75 of the cap in characters, where one transaction for all of them
    (2,000 hubs a statement) was refused."""
    from conftest import open_spec

    store = open_spec(neo4j_store, create=True)
    kg = store.kg
    cap = _transaction_cap(kg.session)
    hubs, n = [iri(f"hub{i}") for i in range(400)], 400
    types = [iri(f"r{j}.") + "x" * int(0.75 * cap / (len(hubs) * n)) for j in range(n)]

    def count(todo):  # what counting them from the degree store would find
        return ({h: [Relation(t, "out", degree=2) for t in types] for h in todo},
                {h: (2 * n, 0, 0) for h in todo})

    monkeypatch.setattr(kg, "_count_hubs", count)
    got = kg._hub_relations(hubs)
    assert sorted(got) == sorted(hubs) and kg.session.run("summaries_count")[0]["hubs"] == len(hubs)


@pytest.mark.neo4j
def test_neo4j_keeps_a_batch_of_big_schemas_a_few_a_transaction(neo4j_store, tmp_path, monkeypatch):
    """The look-ahead schemas a batch of relations makes are kept in
    transactions that fit a capped server: 200 relations, each followed by
    400 long ones (0.75 of the cap in characters in all), where one
    transaction for the batch was refused."""
    from conftest import open_spec

    from engine.backends.neo4j.kg import Neo4jKG
    from loaders.load import load_file

    n = 200
    store = open_spec(neo4j_store, create=True)
    load_file(store.need_sink(), write_nt(tmp_path / "few.nt", [
        f"<{iri(f'a{i}')}> <{iri(f'r{i}')}> <{iri(f't{i}')}> ." for i in range(n)]))
    kg = Neo4jKG(store.kg.session)
    cap = _transaction_cap(kg.session)
    after = [Relation(iri(f"next{j}.") + "x" * int(0.75 * cap / (n * 400)), "out") for j in range(400)]
    monkeypatch.setattr(kg, "degrees", lambda tails, sample=None: {t: after for t in tails})  # what each tail shows
    relations = [Relation(iri(f"r{i}"), "out") for i in range(n)]
    follows = kg.schema.after(relations)
    assert all(sorted(follows[r], key=lambda x: x.id) == sorted(after, key=lambda x: x.id) for r in relations)
    assert kg.session.run("summaries_count")[0]["schema"] == n


def test_the_relations_totals_are_counted_once_and_kept_true(hub_store, tog, monkeypatch, tmp_path):
    """``tog info`` and ``tog relations`` count every fact once after a load
    and then read what was kept; a correction (facts and a new entity's
    name), its revert, one that dies half-way and a second load each leave
    the totals equal to a fresh count: a correction adds what it changed
    to them, counting nothing, and only one interrupted before it did that
    (or by an older tog) has the relations it changed counted again; the
    names' count follows too."""
    from engine.backends.oxigraph.corrections import fact_quad
    from engine.backends.oxigraph.kg import OxigraphKG
    from engine.queries import sparql

    def counted(g) -> list[tuple[str, int]]:  # what a fresh count over every fact says
        rows = g.kg.db.query(sparql("relation_counts"))
        return [(r["p"].value, int(r["n"].value)) for r in rows]

    def totals(store) -> tuple[list[tuple[str, int]], list[str]]:
        g = open_graph(store)
        spy = Spy(g.kg, monkeypatch)
        got, stats = g.kg.relation_counts(), g.stats()
        assert got == counted(g) and stats["triples"] == sum(n for _, n in got) and stats["relations"] == len(got)
        g.close()
        return got, [text.splitlines()[0] for text, _ in spy.calls]

    kg = hub_store.kg
    spy = Spy(kg, monkeypatch)
    first = kg.relation_counts()
    assert first == counted(hub_store) and dict(first)[LINKS.id] == OUT and len(spy.calls) == 1
    assert kg.relation_counts() == first and hub_store.stats()["triples"] == sum(n for _, n in first)
    assert len(spy.calls) == 1  # kept: no second pass over the facts
    names = hub_store.stats()["names"]
    hub_store.close()
    store = hub_store.name
    fix = tog("correct", "--add", f"<{iri('hub')}>|<{iri('rare')}>|<{iri('city')}>",
              "--remove", f"<{iri('hub')}>|<{iri('born_in')}>|<{iri('city')}>",
              "--new", "Brand New", "--add", f"<{iri('hub')}>|<{iri('links')}>|Brand New", "--reason", "r",
              "--store", store)
    assert fix.exit_code == 0, fix.output
    got, queries = totals(store)
    assert dict(got)[iri("rare")] == 1 and iri("born_in") not in dict(got) and dict(got)[LINKS.id] == OUT + 1
    assert dict(got)[RDFS_LABEL] == dict(first)[RDFS_LABEL] + 1 and queries == []  # nothing counted again
    info = tog("info", "--store", store).output
    assert f"names: {names + 1:,}" in info, info
    cid = re.search(r"correction (\S+):", fix.output).group(1)
    assert tog("corrections", "revert", cid, "--store", store).exit_code == 0
    got, queries = totals(store)
    assert got == first and queries == []
    assert f"names: {names:,}" in tog("info", "--store", store).output
    # a correction that dies after it changed the KG is finished on the next open, adding nothing twice
    monkeypatch.setattr(OxigraphKG, "refresh", lambda self, facts, **_: (_ for _ in ()).throw(RuntimeError("killed")))
    died = tog("correct", "--add", f"<{iri('hub')}>|<{iri('odd')}>|<{iri('city')}>", "--reason", "r",
               "--store", store)
    assert died.exit_code != 0
    monkeypatch.undo()
    got, queries = totals(store)
    assert dict(got)[iri("odd")] == 1 and queries == []
    # one interrupted before it counted its step (as an older tog's could be): what it changed is counted again
    from engine.graph import Correction

    g = open_graph(store)
    fact = (iri("hub"), iri("links"), iri("late"))
    g.corrections._save(Correction("c-old", "2026-01-01T00:00:00Z", "r", added=[fact], status="applying"))
    g.kg.db.store.add(fact_quad(fact))
    g.close()
    got, queries = totals(store)
    assert dict(got)[LINKS.id] == OUT + 1 and queries == ["# The facts of each of a few relations (those a "
                                                          "correction changed since"]
    # a load marks them out of date: the next call counts every fact again (a
    # read-only view beside the store's writer counts them for itself, keeping nothing)
    more = write_nt(tmp_path / "more.nt", [f"<{iri('m1')}> <{iri('fresh')}> <{iri('city')}> .",
                                           f'<{iri("newbie")}> <{RDFS_LABEL}> "New Bie" .'])
    assert tog("load", more, "--store", store).exit_code == 0
    from engine.store import open_store

    view = open_store(store, read_only=True)
    spy = Spy(view.kg, monkeypatch)
    assert view.kg.relation_counts() == view.kg.relation_counts() == counted(view) and len(spy.calls) == 1
    assert view.stats()["names"] == names + 1
    view.close()
    got, queries = totals(store)
    assert dict(got)[iri("fresh")] == 1 and queries == ["# Every relation of the knowledge graph (the default graph) "
                                                       "with its number of triples."]


def test_a_crowded_pairs_sample_leaves_out_blank_nodes(tmp_path):
    """Blank nodes (which tog's loads rename, but a store written by another
    tool may hold) have no place in the sample order: the store's sort drops
    them and keeps the first neighbours in that order, literals included."""
    import pyoxigraph as ox

    from engine.backends.sparql_reads import node_id

    g = open_graph(tmp_path / "store", create=True)
    s, p = ox.NamedNode(iri("s")), ox.NamedNode(iri("p"))
    outs = [ox.NamedNode(iri(f"x{i}")) for i in range(300)] + [ox.Literal(f"v{i}") for i in range(100)]
    ins = [ox.NamedNode(iri(f"y{i}")) for i in range(300)]
    blanks = [ox.BlankNode(f"b{i}") for i in range(100)]
    g.kg.db.store.extend([ox.Quad(s, p, o) for o in outs + blanks] + [ox.Quad(x, p, s) for x in ins + blanks])
    for direction, wanted in (("out", outs), ("in", ins)):
        _, sample = g.kg._sample((iri("s"), iri("p"), direction), 120)
        assert sample == sorted((node_id(x) for x in wanted), key=sample_key)[:120], direction
    # expansion reads a window of neighbours, blank ones included: a pair they fill is
    # crowded (its sample then has none); one they do not fill is read whole, without them
    pair = (iri("s"), Relation(iri("p"), "in"))
    for window, crowded in ((350, True), (450, False)):
        g.kg.summaries.clear()
        ordered, degree, known = g.kg.neighbours([pair], window)
        assert ordered[pair][:window] == sorted((node_id(x) for x in ins), key=sample_key)[:window], window
        assert degree[pair] == len(ins) and (pair not in known) == crowded, window


@pytest.mark.neo4j
def test_neo4j_finds_named_entities_by_their_names_not_every_entity(neo4j_store, tmp_path):
    """`tog warm`'s entities on Neo4j: in a KG of 40 names among 30,000
    unnamed nodes, a place past the names reads the names (the linking
    index), not every entity to go past them, by the server's own count
    (PROFILE); what it finds is named, and from the first names then."""
    from engine.queries import cypher

    unnamed = 30_000
    lines = [f"<{iri('root')}> <{iri('holds')}> <{iri(f'u{i}')}> ." for i in range(unnamed)]
    lines += [f'<{iri(f"u{i}")}> <{RDFS_LABEL}> "Kept {i}" .' for i in range(0, 40 * 750, 750)]
    kg = _neo4j_kg(neo4j_store, tmp_path / "few-names.nt", lines)
    first, later = kg.named_entities(5), kg.named_entities(5, skip=5)
    assert len(set(first + later)) == 10 and set(first + later) <= set(kg.labels(first + later))
    assert kg.named_entities(5, skip=1_000) == first  # past the names: from the first
    hits = _db_hits(neo4j_store, cypher("named_entities"), {"skip": 1_000, "most": 5})
    assert hits < 20 * 40 < unnamed, hits
