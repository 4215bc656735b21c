"""The KnowledgeGraph protocol on a real on-disk Oxigraph store."""

from __future__ import annotations

import re
from contextlib import contextmanager

import pyoxigraph as ox
import pytest
from conftest import (
    FB,
    KG_TRIPLES,
    RDFS_LABEL,
    XSD,
    close_graph,
    fb,
    iri,
    load_into,
    open_graph,
    same_kg,
    write_nt,
)

from engine.errors import StoreError, UnknownRunError
from engine.paths import Hop
from engine.graph import KnowledgeGraph, PathRecord, Relation, RunInfo, name_key
from engine.queries import render, sparql, sparql_values
from engine.runs import prune
from engine.store import open_store


def test_is_a_knowledge_graph(store):
    assert isinstance(store.kg, KnowledgeGraph)
    assert store.runs is not None and store.corrections is not None and store.sink is not None


def test_missing_store_is_a_store_error(tmp_path):
    with pytest.raises(StoreError, match="tog load"):
        open_store(tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()


# ---------------------------------------------------------------------------
# relations()

@pytest.fixture
def hub(tmp_path):
    lines = [f"<{iri('hub')}> <{iri('links')}> <{iri(f'n{i}')}> ." for i in range(40)]
    lines += [f"<{iri(f'm{i}')}> <{iri('links')}> <{iri('hub')}> ." for i in range(5)]
    lines += [f"<{iri(f'm{i}')}> <{iri('likes')}> <{iri('hub')}> ." for i in range(3)]
    lines += [f'<{iri(f"n{i}")}> <{RDFS_LABEL}> "Node {i:02d}" .' for i in range(40)]
    lines += [f'<{iri(f"m{i}")}> <{RDFS_LABEL}> "Member {i}" .' for i in range(5)]
    lines += [f'<{iri("hub")}> <{RDFS_LABEL}> "The Hub" .']
    g, _ = load_into(tmp_path / "hub-store", write_nt(tmp_path / "hub.nt", lines))
    return g.kg


def test_relations_are_distinct_per_predicate_and_direction(hub):
    rels = hub.relations([iri("hub")])[iri("hub")]
    assert sorted(rels, key=lambda r: (r.id, r.direction)) == [
        Relation(iri("likes"), "in"),
        Relation(iri("links"), "in"),
        Relation(iri("links"), "out"),
    ]


@pytest.mark.parametrize("direction", ["out", "in"])
def test_relation_query_text_has_a_row_per_relation(direction):
    text = sparql(f"relations_{direction}")
    assert "(COUNT(*) AS ?n)" in text and "GROUP BY ?e ?p" in text  # a hub's edges are not rows
    rendered = render(f"relations_{direction}", entities=sparql_values([(ox.NamedNode(iri("x")),)]))
    assert "{{" not in rendered
    assert f"(<{iri('x')}>)" in rendered
    with pytest.raises(KeyError):
        render(f"relations_{direction}", nothing="x")


def test_reads_by_place_name_their_columns_and_refuse_a_query_that_does_not_have_them(kg):
    """The reads whose rows are many take each value by its place (five
    times cheaper than by name): the query's columns are checked first, so
    a statement edited to another order fails at once instead of mixing
    its values up."""
    film = sparql_values([(ox.NamedNode(fb("m.film1")),)])
    text = render("relations_listed", out=film, **{"in": film})
    by_name = sorted((r["e"].value, r["d"].value, r["p"].value, int(r["n"].value)) for r in kg.db.query(text))
    placed = kg.db.query(text, columns=("e", "d", "p", "n"))
    by_place = sorted((e.value, d.value, p.value, int(n.value)) for e, d, p, n in placed)
    assert by_place == by_name and len(by_name) >= 2
    with pytest.raises(RuntimeError, match="columns"):
        kg.db.query(text, columns=("e", "p", "d", "n"))


def test_relations_batch_and_policy(kg):
    out = kg.relations([iri("quiz"), iri("paul"), fb("m.film1"), fb("m.cvt1")])
    assert set(out) == {iri("quiz"), iri("paul"), fb("m.film1"), fb("m.cvt1")}
    assert set(out[iri("quiz")]) == {
        Relation(iri(p), "out") for p in
        ("written_by", "screenplay_by", "directed_by", "release_year", "has_genre", "starred_actors")}
    assert set(out[iri("paul")]) == {
        Relation(iri("written_by"), "in"), Relation(iri("screenplay_by"), "in"), Relation(iri("born_in"), "out")}
    # type.object.*, common.*, owl:sameAs never offered; names never offered
    assert set(out[fb("m.film1")]) == {
        Relation(fb("film.film.starring"), "out"),
        Relation(fb("film.film.featured_filming_locations"), "out"),
        Relation(fb("film.performance.film"), "in"),
    }
    for rels in out.values():
        for r in rels:
            assert not r.id.startswith((FB + "type.object.", FB + "common."))
            assert r.id not in (RDFS_LABEL, "http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
                                "http://www.w3.org/2002/07/owl#sameAs")


def test_relations_of_unknown_entity_and_literal(kg):
    lit = '"1994"^^<http://www.w3.org/2001/XMLSchema#gYear>'
    assert kg.relations([iri("nobody"), lit]) == {iri("nobody"): [], lit: []}


# ---------------------------------------------------------------------------
# expand()

def test_expand_both_directions(kg):
    found = kg.expand([
        (iri("paul"), Relation(iri("written_by"), "in")),
        (iri("quiz"), Relation(iri("directed_by"), "out")),
    ])
    got = {(c.source, c.relation, c.node.id, c.node.name) for c in found}
    assert got == {
        (iri("paul"), Relation(iri("written_by"), "in"), iri("quiz"), "Quiz Game"),
        (iri("paul"), Relation(iri("written_by"), "in"), iri("harbor"), "Night Harbor"),
        (iri("quiz"), Relation(iri("directed_by"), "out"), iri("rita"), "Rita Director"),
    }
    assert all(not c.node.literal and not c.via for c in found)


def test_expand_literal_objects(kg):
    (c,) = kg.expand([(iri("quiz"), Relation(iri("release_year"), "out"))])
    assert c.node.literal
    assert c.node.name == "1994"
    assert c.node.datatype == XSD + "gYear"
    assert c.node.id == f'"1994"^^<{XSD}gYear>'
    # a literal id round-trips through labels()
    assert kg.labels([c.node.id]) == {c.node.id: "1994"}


def test_expand_limit_is_per_request(hub):
    out_rel, in_rel = Relation(iri("links"), "out"), Relation(iri("links"), "in")
    found = hub.expand([(iri("hub"), out_rel), (iri("hub"), in_rel)], limit=3)
    outs = [c for c in found if c.relation == out_rel]
    ins = [c for c in found if c.relation == in_rel]
    assert len(outs) == 3
    assert len({c.node.id for c in outs}) == 3
    assert len(ins) == 3
    assert {c.node.id for c in ins} <= {iri(f"m{i}") for i in range(5)}
    assert len(hub.expand([(iri("hub"), in_rel)], limit=10)) == 5
    everything = hub.expand([(iri("hub"), out_rel)], limit=100)
    assert len(everything) == 40
    assert {c.node.name for c in everything} == {f"Node {i:02d}" for i in range(40)}


def test_cvt_is_looked_through(kg):
    starring = Relation(fb("film.film.starring"), "out")
    found = kg.expand([(fb("m.film1"), starring)])
    got = {(c.node.id, c.node.name, c.via) for c in found}
    assert got == {
        (fb("m.actor1"), "Bea Star", (Relation(fb("film.performance.actor"), "out"),)),
        (fb("m.char1"), "Captain Nemo", (Relation(fb("film.performance.character"), "out"),)),
    }
    assert all(c.source == fb("m.film1") and c.relation == starring for c in found)
    # the unnamed node itself is never a candidate, nor the way back to the source
    assert fb("m.cvt1") not in {c.node.id for c in found}
    texts = {Hop(c.relation, c.node, c.via).relation_text for c in found}  # how a path shows it
    assert texts == {"film starring / film performance actor", "film starring / film performance character"}


def test_expand_empty_and_unknown(kg):
    assert kg.expand([]) == []
    assert kg.expand([(iri("nobody"), Relation(iri("written_by"), "out"))]) == []


# ---------------------------------------------------------------------------
# labels() and search_entities()

def test_labels(kg):
    ids = [iri("quiz"), iri("paul"), fb("m.film1"), fb("m.cvt1"), iri("nobody")]
    names = kg.labels(ids)
    assert names == {iri("quiz"): "Quiz Game", iri("paul"): "Paul Author", fb("m.film1"): "Harbor Lights"}


def test_search_entities_normalises_names(tmp_path):
    f = write_nt(tmp_path / "n.nt", [
        f'<{iri("cafe")}> <{RDFS_LABEL}> "Café Déjà-Vu!" .',
        f"<{iri('cafe')}> <{iri('p')}> <{iri('x')}> .",
        f'<{iri("twin1")}> <{RDFS_LABEL}> "Twin" .',
        f'<{iri("twin2")}> <{RDFS_LABEL}> "TWIN" .',
    ])
    g = load_into(tmp_path / "store", f)[0].kg
    for text in ("café déjà-vu!", "CAFE DEJA VU", "  Cafe, deja   vu ", "café déjà vu"):
        found = g.search_entities([name_key(text)])
        assert [(n.id, n.name) for n in found[name_key(text)]] == [(iri("cafe"), "Café Déjà-Vu!")], text
    twins = g.search_entities(["twin"])["twin"]
    assert {n.id for n in twins} == {iri("twin1"), iri("twin2")}
    assert g.search_entities(["cafe deja"]) == {}
    assert g.search_entities([]) == {}
    assert g.search_entities([""]) == {}


def test_search_with_injection_attempt_returns_nothing(kg):
    nasty = ['"} UNION { ?e ?p ?key } #', 'x" } UNION { GRAPH ?g { ?e ?p ?key } } #', '\\"} .', "}"]
    before = kg.stats()
    assert kg.search_entities(nasty) == {}
    assert same_kg(kg.stats()) == same_kg(before)


def test_sparql_values_only_takes_terms():
    with pytest.raises(TypeError):
        sparql_values([("http://example.org/x",)])
    with pytest.raises(TypeError):
        sparql_values([(ox.NamedNode(iri("x")), 'literal" }')])
    text = sparql_values([(ox.Literal('a "quoted" } value'),), (ox.NamedNode(iri("y")),)])
    assert text.splitlines()[0] == r'("a \"quoted\" } value")'
    assert text.splitlines()[1].strip() == f"(<{iri('y')}>)"


# ---------------------------------------------------------------------------
# run state

def _paths() -> list[PathRecord]:
    lit = f'"1994"^^<{XSD}gYear>'
    return [
        PathRecord("p0", 0, iri("quiz"), "Quiz Game"),
        PathRecord("p1", 1, lit, "1994", parent="p0", relation=iri("release_year"), direction="out",
                   score=0.75, kept=True, literal=True),
        PathRecord("p2", 1, iri("paul"), "Paul Author", parent="p0", relation=iri("written_by"),
                   direction="out", score=0.25, kept=False),
        PathRecord("p10", 2, fb("m.actor1"), "Bea Star", parent="p2", relation=fb("film.film.starring"),
                   direction="in", via=(fb("film.performance.actor"),), score=0.5, kept=True),
    ]


def test_run_round_trip(store):
    info = RunInfo(id="r1", question="what year was [Quiz Game] released", started="2024-05-01T10:00:00Z",
                   method="tog-r", config={"width": 2, "pruner": "bm25"})
    store.runs.start(info)
    assert [(r.id, r.status) for r in store.runs.list()] == [("r1", "running")]
    store.runs.record_step("r1", _paths()[:1])
    store.runs.record_step("r1", _paths()[1:])
    info.status, info.answer, info.stats, info.finished = "done", ["1994"], {"depth": 2}, "2024-05-01T10:00:05Z"
    store.runs.finish(info)

    (listed,) = store.runs.list()
    assert (listed.id, listed.status, listed.method, listed.answer, listed.finished) == (
        "r1", "done", "tog-r", ["1994"], "2024-05-01T10:00:05Z")
    tree = store.runs.get("r1")
    assert tree.info.config == {"width": 2, "pruner": "bm25"}
    assert tree.info.stats == {"depth": 2}
    assert tree.info.question == info.question
    assert tree.paths == _paths()  # every field, literal ids and via included, in (depth, id) order


def test_finish_run_twice_replaces_status(store):
    info = RunInfo(id="r2", question="q", started="2024-05-01T10:00:00Z")
    store.runs.start(info)
    info.status = "failed"
    store.runs.finish(info)
    info.status, info.answer = "done", ["x"]
    store.runs.finish(info)
    tree = store.runs.get("r2")
    assert (tree.info.status, tree.info.answer) == ("done", ["x"])
    assert len(store.runs.list()) == 1


def test_kept_flag_can_change(store):
    store.runs.start(RunInfo(id="r3", question="q", started="2024-05-01T10:00:00Z"))
    p = PathRecord("p0", 0, iri("quiz"), "Quiz Game", kept=True)
    store.runs.record_step("r3", [p])
    p.kept = False
    store.runs.record_step("r3", [p])
    (only,) = store.runs.get("r3").paths
    assert only.kept is False


def test_kept_flag_can_change_in_a_run_another_opening_started(store, store_path):
    store.runs.start(RunInfo(id="r4", question="q", started="2024-05-01T10:00:00Z"))
    close_graph(store)
    again = open_graph(store_path)  # knows nothing of what r4 wrote: it looks
    p = PathRecord("p0", 0, iri("quiz"), "Quiz Game", kept=True)
    again.runs.record_step("r4", [p])
    close_graph(again)
    last = open_graph(store_path)
    p.kept = False
    last.runs.record_step("r4", [p])
    (only,) = last.runs.get("r4").paths
    assert only.kept is False


def test_an_eval_does_not_flush_the_store_a_question(store, store_path, monkeypatch):
    """A run's end flushes at most every few seconds (a flush is 20-30 ms, a
    question in an eval a few): the write-ahead log holds every finished run for
    a view beside the writer, and for the next opening (a kill is tested in
    test_trust.py)."""
    from engine.backends.oxigraph.database import Database

    flushes = []
    real = Database.flush
    monkeypatch.setattr(Database, "flush", lambda db: (flushes.append(1), real(db))[1])
    for i in range(20):
        info = RunInfo(id=f"e{i:02}", question=f"question {i}", started="2024-05-01T10:00:00Z")
        store.runs.start(info)
        store.runs.record_step(info.id, _paths())
        info.status, info.answer, info.finished = "done", [str(i)], "2024-05-01T10:00:01Z"
        store.runs.finish(info)
    assert len(flushes) <= 1
    view = open_store(store_path, read_only=True)
    try:
        assert sorted((r.id, r.status) for r in view.runs.list()) == [(f"e{i:02}", "done") for i in range(20)]
        assert view.runs.get("e19").paths == _paths()
    finally:
        view.close()
    close_graph(store)
    assert len(flushes) >= 1  # closing flushes
    assert len(open_graph(store_path).runs.list()) == 20


def test_unknown_run(store):
    with pytest.raises(UnknownRunError, match="nope"):
        store.runs.get("nope")


def test_prune_runs_only_removes_older_runs(store):
    for rid, started in (("old", "2020-01-01T00:00:00Z"), ("mid", "2024-06-01T12:00:00Z"),
                         ("new", "2030-01-01T00:00:00Z")):
        store.runs.start(RunInfo(id=rid, question=f"question {rid}", started=started))
        store.runs.record_step(rid, _paths())
    kg_triples = store.kg.stats()["triples"]
    assert kg_triples == KG_TRIPLES  # runs live outside the KG's default graph
    assert prune(store.runs, "2024-06-01T12:00:00Z") == 1
    assert [r.id for r in store.runs.list()] == ["mid", "new"]
    with pytest.raises(UnknownRunError):
        store.runs.get("old")
    assert len(store.runs.get("mid").paths) == len(_paths())
    assert prune(store.runs, "2025-01-01T00:00:00Z") == 1
    assert [r.id for r in store.runs.list()] == ["new"]
    assert store.kg.stats()["triples"] == kg_triples
    assert store.kg.stats()["names"] > 0
    # the KG still answers
    assert store.kg.labels([iri("quiz")]) == {iri("quiz"): "Quiz Game"}


def test_runs_survive_reopening(store, store_path):
    store.runs.start(RunInfo(id="keep", question="q", started="2024-05-01T10:00:00Z"))
    store.runs.record_step("keep", _paths())
    close_graph(store)
    g = open_graph(store_path)
    assert [r.id for r in g.runs.list()] == ["keep"]
    assert g.runs.get("keep").paths == _paths()
    assert g.stats()["runs"] == 1


def test_custom_name_predicate_is_never_offered(tmp_path):
    foaf = "http://xmlns.com/foaf/0.1/name"
    f = write_nt(tmp_path / "k.nt", [
        f'<{iri("z")}> <{foaf}> "Zora Zed" .',
        f"<{iri('z')}> <{iri('born_in')}> <{iri('y')}> .",
        f'<{iri("y")}> <{foaf}> "Yonder" .',
    ])
    g = load_into(tmp_path / "store", f, name_predicates=(foaf,))[0].kg
    assert g.labels([iri("z")]) == {iri("z"): "Zora Zed"}  # foaf:name is a name here
    assert g.relations([iri("z")])[iri("z")] == [Relation(iri("born_in"), "out")]


@contextmanager
def _writes_through(db, extend):
    """The store's ``extend`` as ``extend(store, quads)`` says (what a disk
    does under it); everything else as it is."""
    real = db.store

    class Through:
        def __getattr__(self, name):
            return getattr(real, name)

        def extend(self, quads):
            extend(real, list(quads))

    db.store = Through()
    try:
        yield
    finally:
        db.store, real = real, None  # (the store's one reference again: closing it lets go of its lock)


def test_a_run_the_disk_refuses_fails_in_one_line(store, store_path):
    """A step the store cannot write (the disk full) is a StoreError naming
    the run and the store, which `tog` prints as one line; the run ends failed."""

    def full(real, quads):  # the disk filled up under the path nodes of one run
        if any(re.match(r"<urn:tog:run:full/", str(q.subject)) for q in quads):
            raise OSError(28, "No space left on device")
        real.extend(quads)

    with _writes_through(store.runs.db, full):
        for rid in ("full", "fine"):
            store.runs.start(RunInfo(id=rid, question="q", started="2024-05-01T10:00:00Z"))
        with pytest.raises(StoreError, match=r"^cannot write run full to .*: No space left on device$"):
            store.runs.record_step("full", _paths()[:1])
        store.runs.record_step("fine", _paths()[:1])
        for rid, status in (("full", "failed"), ("fine", "done")):
            store.runs.finish(RunInfo(id=rid, question="q", started="2024-05-01T10:00:00Z", status=status))
    close_graph(store)
    again = open_graph(store_path)
    assert {r.id: r.status for r in again.runs.list()} == {"full": "failed", "fine": "done"}
    assert again.runs.get("fine").paths == _paths()[:1] and again.runs.get("full").paths == []


def test_a_big_step_is_written_a_bounded_number_of_paths_at_a_time(store, monkeypatch):
    """One transaction held a whole step: 0.5M quads for a wide, deep question
    around a hub (see OxigraphRunLog.record_step)."""
    import engine.backends.oxigraph.runs as runs_module

    monkeypatch.setattr(runs_module, "STEP_PATHS", 3)
    sizes = []

    def counting(real, quads):
        sizes.append(len({q.subject for q in quads if str(q.subject).startswith("<urn:tog:run:big/")}))
        real.extend(quads)

    paths = [PathRecord(f"p{i}", 1, iri("quiz"), f"Path {i}", parent=None, kept=i % 2 == 0) for i in range(7)]
    store.runs.start(RunInfo(id="big", question="q", started="2024-05-01T10:00:00Z"))
    with _writes_through(store.runs.db, counting):
        store.runs.record_step("big", paths)
        assert sizes == [3, 3, 1]
        for p in paths:
            p.kept = not p.kept
        store.runs.record_step("big", paths)  # the kept flags replaced, chunk by chunk
    got = {p.id: p.kept for p in store.runs.get("big").paths}
    assert got == {f"p{i}": i % 2 == 1 for i in range(7)}
