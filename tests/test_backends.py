"""One behavioural suite for every backend: the embedded Oxigraph store and a
real Neo4j server (``store_spec`` is parametrized over both; the Neo4j half
needs NEO4J_URI, which `.ci/run` sets after starting launcher/neo4j-server).

The same files go through the same loader, the same questions get the same
answers, and runs come back as the same trees.
"""

from __future__ import annotations

import json
import os
import itertools
import random
import re
import sys
import threading
from pathlib import Path

import pytest
from conftest import KG_NT, METAQA, RDFS_LABEL, fb, iri, no_traceback, open_spec, same_kg, write_nt

from engine.errors import StoreError, UnknownRunError
from engine.evaluate import read_questions
from engine.graph import KnowledgeGraph, Node, PathRecord, Relation, RunInfo
from engine.pruning import get_pruner
from engine.reasoning import get_reasoner
from engine.runs import ask, cutoff, prune
from engine.search import SearchConfig
from loaders.load import load_file

XSD = "http://www.w3.org/2001/XMLSchema#"


def edges(store) -> int:
    """KG edges a store holds, whatever the backend calls them."""
    s = store.kg.stats()
    return s["edges"] if "edges" in s else s["triples"]


@pytest.fixture
def fixture_store(store_spec, tmp_path):
    path = tmp_path / "kg.nt"
    path.write_text(KG_NT, encoding="utf-8")
    store = open_spec(store_spec, create=True)
    report = load_file(store.need_sink(), path)
    assert report.skipped == 0
    return store


@pytest.fixture
def fixture_kg(fixture_store):
    return fixture_store.kg


def test_protocol(fixture_store):
    """Every role is there on both backends, and each is what its protocol says."""
    from engine.store import BulkSink, CorrectionLog, RunLog

    assert isinstance(fixture_store.kg, KnowledgeGraph) and fixture_store.kg.schema is not None
    for role, protocol in (("runs", RunLog), ("corrections", CorrectionLog), ("sink", BulkSink)):
        implementation = getattr(fixture_store, role)
        assert implementation is not None and isinstance(implementation, protocol), role


def test_relations_both_directions_and_policy(fixture_kg):
    rels = fixture_kg.relations([iri("quiz"), iri("paul"), iri("nobody")])
    assert Relation(iri("directed_by"), "out") in rels[iri("quiz")]
    assert Relation(iri("written_by"), "in") in rels[iri("paul")]
    assert rels[iri("nobody")] == []
    film = fixture_kg.relations([fb("m.film1")])[fb("m.film1")]
    ids = {r.id for r in film}
    # names, types, sameAs and aliases are never offered to the search
    assert fb("film.film.starring") in ids and fb("type.object.name") not in ids
    assert fb("type.object.type") not in ids and "http://www.w3.org/2002/07/owl#sameAs" not in ids


def test_expand_entities_literals_and_cvts(fixture_kg):
    found = fixture_kg.expand([(iri("paul"), Relation(iri("written_by"), "in")),
                               (iri("quiz"), Relation(iri("release_year"), "out")),
                               (fb("m.film1"), Relation(fb("film.film.starring"), "out"))])
    by = {(c.source, c.relation.id): [] for c in found}
    for c in found:
        by[(c.source, c.relation.id)].append(c)
    assert sorted(c.node.name for c in by[(iri("paul"), iri("written_by"))]) == ["Night Harbor", "Quiz Game"]
    (year,) = by[(iri("quiz"), iri("release_year"))]
    assert year.node == Node(f'"1994"^^<{XSD}gYear>', "1994", True, XSD + "gYear")
    through = {c.node.name: c.via for c in by[(fb("m.film1"), fb("film.film.starring"))]}
    assert through["Bea Star"] == (Relation(fb("film.performance.actor"), "out"),)
    assert "Captain Nemo" in through and "Harbor Lights" not in through


def test_expand_limit_keeps_the_same_sample(store_spec, tmp_path):
    hub = [f"<{iri('hub')}> <{iri('links')}> <{iri(f'n{i}')}> ." for i in range(60)]
    hub += [f'<{iri(f"n{i}")}> <http://www.w3.org/2000/01/rdf-schema#label> "node {i}" .' for i in range(60)]
    store = open_spec(store_spec, create=True)
    load_file(store.need_sink(), write_nt(tmp_path / "hub.nt", hub))
    picked = [c.node.id for c in store.kg.expand([(iri("hub"), Relation(iri("links"), "out"))], limit=7)]
    assert len(picked) == 7
    # a hash order, not the first ids, and the same on every backend
    from engine.backends.common import sample_key

    assert picked == sorted((iri(f"n{i}") for i in range(60)), key=sample_key)[:7]
    assert picked != [iri(f"n{i}") for i in range(7)]


def test_the_look_ahead_takes_the_same_tails_on_every_backend(store_spec, tmp_path):
    """A relation of 200 edges to 200 tails, more than the look-ahead keeps:
    its tails are the first in the sample order, not the first the store
    happens to read, so its schema is the same on every backend. A relation
    of more edges than the look-ahead reads keeps as many tails, from its
    first edges."""
    from conftest import look_ahead_graph

    from engine.backends.common import SCHEMA_READ, SCHEMA_TAILS

    lines, want = look_ahead_graph(iri(""), 200)
    lines += [f"<{iri(f'b{i}')}> <{iri('big')}> <{iri(f'c{i}')}> ." for i in range(SCHEMA_READ + 50)]
    lines += [f"<{iri(f'c{i}')}> <{iri(f'd{i}')}> <{iri('e')}> ." for i in range(SCHEMA_READ + 50)]
    store = open_spec(store_spec, create=True)
    load_file(store.need_sink(), write_nt(tmp_path / "ahead.nt", lines))
    r, big = Relation(iri("r"), "out"), Relation(iri("big"), "out")
    follows = store.kg.schema.after([r, big])
    assert sorted((x.id, x.direction) for x in follows[r]) == want
    assert len([x for x in follows[big] if x.direction == "out"]) == SCHEMA_TAILS


def test_tog_sampling_of_crowded_relations(store_spec, tmp_path):
    """With ``over``, a pair with that many neighbours or more offers only
    ``size`` of them (the first in the sample order); smaller ones offer
    all, up to ``limit``."""
    from engine.backends.common import sample_key

    label = "http://www.w3.org/2000/01/rdf-schema#label"
    lines = [f"<{iri('hub')}> <{iri('links')}> <{iri(f'n{i}')}> ." for i in range(25)]
    lines += [f"<{iri('small')}> <{iri('links')}> <{iri(f'n{i}')}> ." for i in range(8)]
    lines += [f'<{iri(f"n{i}")}> <{label}> "node {i}" .' for i in range(25)]
    store = open_spec(store_spec, create=True)
    load_file(store.need_sink(), write_nt(tmp_path / "crowd.nt", lines))
    kg = store.kg
    links = Relation(iri("links"), "out")

    def picked(source, **rule):
        return [c.node.id for c in kg.expand([(iri(source), links)], limit=100, **rule)]

    hub = sorted((iri(f"n{i}") for i in range(25)), key=sample_key)
    assert picked("hub") == hub  # off: every neighbour, up to the limit
    assert picked("hub", over=20, size=5) == hub[:5]
    assert picked("hub", over=26, size=5) == hub  # 25 is not crowded
    assert picked("hub", over=25, size=3) == hub[:3]
    assert len(picked("small", over=8, size=2)) == 2 and len(picked("small", over=9, size=2)) == 8


def test_labels_prefer_english_and_decode_literals(fixture_kg):
    names = fixture_kg.labels([iri("quiz"), fb("m.film1"), fb("m.onlyfr"), f'"1994"^^<{XSD}gYear>', iri("nobody")])
    assert names[iri("quiz")] == "Quiz Game"
    assert names[fb("m.film1")] == "Harbor Lights"
    assert names[fb("m.onlyfr")] == "Château Rouge"  # the only name there is
    assert names[f'"1994"^^<{XSD}gYear>'] == "1994"
    assert iri("nobody") not in names


def test_search_entities_and_has_entity(fixture_kg):
    found = fixture_kg.search_entities(["paul author", "harbor lights", "chateau rouge", "nobody at all", "'}) //"])
    assert found["paul author"] == [Node(iri("paul"), "Paul Author")]
    assert [n.id for n in found["harbor lights"]] == [fb("m.film1")]
    assert "chateau rouge" not in found  # French names are not indexed for linking by default
    assert "nobody at all" not in found and "'}) //" not in found
    assert fixture_kg.has_entity(iri("paul")) and not fixture_kg.has_entity(iri("nobody"))


def test_relation_schema(fixture_kg):
    written = Relation(iri("written_by"), "in")
    after = fixture_kg.schema.after([written])[written]
    assert Relation(iri("directed_by"), "out") in after
    assert all(r.id != "http://www.w3.org/2000/01/rdf-schema#label" for r in after)


# -- loading --------------------------------------------------------------

def test_reloading_adds_nothing_even_with_force(store_spec, tmp_path):
    path = tmp_path / "kb.txt"
    path.write_text((METAQA / "kb.txt").read_text(encoding="utf-8"), encoding="utf-8")
    kg = open_spec(store_spec, create=True)
    first = load_file(kg.need_sink(), path)
    count = edges(kg)
    assert first.triples == 1750 + 1368 and count > 1700  # lines and name labels
    assert load_file(kg.need_sink(), path).already_complete
    load_file(kg.need_sink(), path, force=True)
    assert edges(kg) == count


XSD = "http://www.w3.org/2001/XMLSchema#"
# values written as a file may write them, and the form the stores give back
TYPED = {"height": ("1.50", "decimal", "1.5"), "count": ("007", "integer", "7"), "size": ("1.0E3", "double", "1000"),
         "year": ("1994", "gYear", "1994"), "code": ("0042", "string", "0042")}


def typed_lines() -> list[str]:
    return [f'<{iri("tower")}> <{RDFS_LABEL}> "Tower" .'] + [
        f'<{iri("tower")}> <{iri(p)}> "{text}"^^<{XSD}{kind}> .' for p, (text, kind, _) in TYPED.items()]


def typed_values(kg) -> dict[str, str]:
    """The tower's values as ``expand`` shows them, by relation."""
    relations = kg.relations([iri("tower")])[iri("tower")]
    return {c.relation.id: c.node.name for c in kg.expand([(iri("tower"), r) for r in relations], limit=10)}


@pytest.mark.neo4j
def test_typed_values_read_the_same_on_every_backend_and_correct_as_written(neo4j_store, tmp_path):
    """Oxigraph (and Virtuoso) keep a typed value in its canonical form
    ("1.50"^^xsd:decimal is 1.5); Neo4j's loads write it so too, and a
    correction that names a value as the file wrote it finds it on both."""
    from conftest import load_into

    from engine.feedback import correct
    from engine.graph import utc_now

    f = write_nt(tmp_path / "g.nt", typed_lines())
    local, _ = load_into(tmp_path / "local", f)
    remote = open_spec(neo4j_store, create=True)
    load_file(remote.need_sink(), f)
    want = {iri(p): stored for p, (_, _, stored) in TYPED.items()}
    assert typed_values(local.kg) == typed_values(remote.kg) == want
    for store in (local, remote):
        correct(store, remove=[f'<{iri("tower")}>|<{iri("height")}>|"1.50"^^<{XSD}decimal>'], add=[], reason="wrong")
        assert iri("height") not in typed_values(store.kg)
        # a record an older tog made holds the value it added as written: its revert takes the value away
        added = correct(store, remove=[], add=[f'<{iri("tower")}>|<{iri("width")}>|"2.5"^^<{XSD}decimal>'],
                        reason="measured")
        assert typed_values(store.kg)[iri("width")] == "2.5"
        added.added = [(iri("tower"), iri("width"), f'"2.50"^^<{XSD}decimal>')]
        store.need_corrections().revert(added, utc_now())
        assert iri("width") not in typed_values(store.kg)


@pytest.mark.neo4j
def test_a_neo4j_database_with_values_as_written_gets_them_in_stored_form_once(neo4j_store, tmp_path):
    """A database an older tog loaded holds typed values as the file wrote
    them, maybe both forms of one value: on the first connection they are
    put in stored form once, two forms made one node with both edges, and
    the samples (sorted by the values' keys) are to be made again."""
    import neo4j

    from engine.backends.common import sample_hash
    from engine.backends.neo4j.kg import load_end_state

    lines = typed_lines() + [f'<{iri("mast")}> <{RDFS_LABEL}> "Mast" .',
                             f'<{iri("mast")}> <{iri("height")}> "1.5"^^<{XSD}decimal> .']
    load_file(open_spec(neo4j_store, create=True).need_sink(), write_nt(tmp_path / "g.nt", lines))
    auth = (os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"])
    stored = f'"1.5"^^<{XSD}decimal>'
    with neo4j.GraphDatabase.driver(neo4j_store, auth=auth) as driver:
        # as an older tog wrote them: the tower's values as in the file; the mast's 1.5 written so already
        for p, (text, kind, _) in TYPED.items():
            driver.execute_query("MATCH (:Entity {id: $s})-[r]->(v:Value) WHERE type(r) = $p "
                                 "SET v.id = $id, v.value = $text",
                                 s=iri("tower"), p=iri(p), id=f'"{text}"^^<{XSD}{kind}>', text=text)
        driver.execute_query("MERGE (v:Value {id: $id}) SET v.value = '1.5', v.datatype = $dt, v.sk = $sk "
                             "WITH v MATCH (m:Entity {id: $mast}) MERGE (m)-[:$($p)]->(v)",
                             id=stored, dt=f"{XSD}decimal", sk=sample_hash(stored), mast=iri("mast"), p=iri("height"))
        driver.execute_query("MATCH (s:TogSetting {key: 'stored_values'}) DELETE s")
        store = open_spec(neo4j_store)
        rows = driver.execute_query("MATCH (v:Value) RETURN v.id AS id, v.value AS value, v.sk AS sk, "
                                    "COUNT { (v)<--() } AS edges").records
    assert {r["value"] for r in rows} == {value for _, _, value in TYPED.values()}
    assert all(r["sk"] == sample_hash(r["id"]) for r in rows)
    assert {r["id"]: r["edges"] for r in rows}[stored] == 2  # the tower's 1.50 and the mast's 1.5: one node
    assert typed_values(store.kg) == {iri(p): value for p, (_, _, value) in TYPED.items()}
    assert load_end_state(store.kg.session) == "missing"  # the samples are made again before the next question


def test_repeated_lines_and_bad_lines(store_spec, tmp_path):
    good = f"<{iri('a')}> <{iri('r')}> <{iri('b')}> ."
    lines = [good, "this is not a triple", good, f"<{iri('a')}> <{iri('r')}> <{iri('c')}> .", "<broken",
             f"<{iri('a')}> <{iri('r')}> \"x\" ."] + [good] * 3
    kg = open_spec(store_spec, create=True)
    report = load_file(kg.need_sink(), write_nt(tmp_path / "bad.nt", lines), chunk_bytes=64)
    assert report.skipped == 2 and [n for n, _ in report.bad] == [2, 5]
    assert edges(kg) == 3  # a->b once, a->c, a->"x"
    found = kg.kg.expand([(iri("a"), Relation(iri("r"), "out"))])
    assert sorted(c.node.name for c in found) == ["b", "c", "x"]


def _lines(n: int, at: int = 0, who: str = "s") -> list[str]:
    """``n`` N-Triples lines from ``at``: ``who``i relates to one of 50 objects by one of 7 relations."""
    return [f"<{iri(f'{who}{i}')}> <{iri(f'r{i % 7}')}> <{iri(f'o{i % 50}')}> ." for i in range(at, at + n)]


class _Killed(BaseException):
    pass


def _killed_at_third_commit(sink, path: Path, monkeypatch) -> None:
    """Load ``path`` in chunks of 2 KB until the process "dies" as it
    commits the third (the chunk's writes may be in; its checkpoint is not)."""
    calls = {"n": 0}
    original = type(sink).commit

    def dying(self, source, checkpoint):
        calls["n"] += 1
        if calls["n"] == 3:
            raise _Killed  # as if the process died during this chunk's write
        return original(self, source, checkpoint)

    monkeypatch.setattr(type(sink), "commit", dying)
    with pytest.raises(_Killed):
        load_file(sink, path, chunk_bytes=2048, segment_lines=100)
    monkeypatch.setattr(type(sink), "commit", original)


def test_a_load_killed_between_chunks_resumes_exactly(store_spec, tmp_path, monkeypatch):
    lines = _lines(400)
    lines += lines[:40]  # repeats across chunks
    path = write_nt(tmp_path / "many.nt", lines)
    kg = open_spec(store_spec, create=True)
    sink = kg.need_sink()
    _killed_at_third_commit(sink, path, monkeypatch)
    partial = edges(kg)
    assert 0 < partial < 400
    report = load_file(sink, path, chunk_bytes=2048, segment_lines=100)
    assert report.resumed_from > 0
    assert edges(kg) == 400 and report.lines == 440


def test_a_turtle_load_killed_midway_and_run_again_writes_its_unlabelled_nodes_once(store_spec, tmp_path,
                                                                                    monkeypatch):
    """A Turtle load stopped midway resumes after its last checkpoint (it
    had started over: Turtle had no checkpoint before its end). The re-run
    parses the file again, and the parser names an unlabelled node (``[ ]``)
    anew at every parse: its triples had been written again under the new
    names. Numbered in parse order, the nodes after the checkpoint get the
    names the first run gave them."""
    import loaders.load as load_module

    text = "".join(f"<{iri(f's{i}')}> <{iri('has')}> [ <{iri('at')}> <{iri(f'o{i % 9}')}> ; "
                   f"<{iri('rank')}> {i} ] .\n" for i in range(120))
    path = tmp_path / "nested.ttl"
    path.write_text(text, encoding="utf-8")
    kg = open_spec(store_spec, create=True)
    sink = kg.need_sink()
    monkeypatch.setattr(load_module, "QUAD_BATCH", 50)
    calls = {"n": 0}
    original = type(sink).write

    def dying(self, quads):
        calls["n"] += 1
        if calls["n"] == 4:
            raise _Killed  # as if the process died after three batches were written
        return original(self, quads)

    monkeypatch.setattr(type(sink), "write", dying)
    with pytest.raises(_Killed):
        load_file(sink, path)
    monkeypatch.setattr(type(sink), "write", original)
    written = edges(kg)  # three batches (the embedded store keeps each write; Neo4j commits with a checkpoint)
    assert 3 * 50 <= written < 3 * 120
    report = load_file(sink, path)
    assert report.triples == 3 * 120 and edges(kg) == 3 * 120
    assert report.resumed_from == 3 * 50  # statements (RDF's: triples) parsed: after the third batch


def _fact(i: int, who: str = "s") -> tuple[str, str, str]:
    """The fact of line ``i`` of ``_lines``."""
    return iri(f"{who}{i}"), iri(f"r{i % 7}"), iri(f"o{i % 50}")


def test_a_stopped_load_whose_file_changed_since_blocks_no_correction(store_spec, tmp_path, monkeypatch, tog):
    """A stopped load of a file that has changed since cannot be run again
    (a load of the new file is a new load: the old record stays unfinished),
    so it blocks no correction; `tog info` says so. It had blocked every
    correction for good, naming a command that said "already loaded"."""
    path = write_nt(tmp_path / "many.nt", _lines(400))
    s = open_spec(store_spec, create=True)
    _killed_at_third_commit(s.need_sink(), path, monkeypatch)
    s.close()
    fact = "|".join(f"<{x}>" for x in _fact(0))
    said = tog("correct", "--remove", fact, "--reason", "r", "--store", store_spec)
    assert said.exit_code == 1 and "stopped at line" in said.output, said.output
    path.write_text(path.read_text(encoding="utf-8") + "\n".join(_lines(5, 400)) + "\n", encoding="utf-8")
    assert tog("load", path, "--store", store_spec, "--no-progress").exit_code == 0
    info = tog("info", "--store", store_spec)
    assert "the file has changed or gone since" in info.output, info.output
    done = tog("correct", "--remove", fact, "--reason", "r", "--store", store_spec)
    assert done.exit_code == 0, done.output


def test_a_correction_is_refused_while_a_load_that_stopped_is_unfinished(store_spec, tmp_path, monkeypatch, tog):
    """A stopped load's re-run writes its lines past the checkpoint again, and
    the store may hold some of their facts already: a correction that took one
    out would be undone unseen. `tog correct` and `corrections revert` refuse,
    in one line, until the load has finished (or ``--despite-load``)."""
    from engine.feedback import correct

    first = write_nt(tmp_path / "first.nt", _lines(20, who="f"))
    path = write_nt(tmp_path / "many.nt", _lines(400))
    s = open_spec(store_spec, create=True)
    load_file(s.need_sink(), first)
    earlier = correct(s, [f"<{x}>|<{r}>|<{o}>" for x, r, o in [_fact(0, "f")]], [], "a load had finished")
    sink = s.need_sink()
    _killed_at_third_commit(sink, path, monkeypatch)
    (stopped,) = [c for c in sink.loads() if not c.complete]
    assert 0 < stopped.lines < 400
    log = s.need_corrections()
    held = [i for i in range(stopped.lines, 400) if log.has_fact(_fact(i))]  # written past the checkpoint
    assert held or store_spec.startswith("bolt"), "the embedded store keeps a killed chunk's triples"
    s.close()

    i = held[0] if held else 0
    fact = "|".join(f"<{x}>" for x in _fact(i))
    said = tog("correct", "--remove", fact, "--reason", "wrong", "--store", store_spec)
    assert said.exit_code == 1 and no_traceback(said), said.output
    line = said.output.strip()
    assert "\n" not in line and f"stopped at line {stopped.lines:,} before its end" in line, line
    assert "tog load" in line and "nothing was changed" in line, line
    said = tog("corrections", "revert", earlier.id, "--store", store_spec)
    assert said.exit_code == 1 and f"stopped at line {stopped.lines:,}" in said.output, said.output
    s = open_spec(store_spec)
    assert s.need_corrections().has_fact(_fact(i)) and not s.need_corrections().has_fact(_fact(0, "f"))
    assert [c.id for c in s.need_corrections().list()] == [earlier.id]
    s.close()
    if held:  # why it is refused: a correction made now is undone by the re-run
        assert tog("correct", "--remove", fact, "--reason", "wrong", "--despite-load",
                   "--store", store_spec).exit_code == 0
        assert tog("load", path, "--store", store_spec, "--no-progress").exit_code == 0
        s = open_spec(store_spec)
        assert s.need_corrections().has_fact(_fact(i))  # written back
        s.close()
    else:
        assert tog("load", path, "--store", store_spec, "--no-progress").exit_code == 0
    said = tog("correct", "--remove", fact, "--reason", "wrong", "--store", store_spec)
    assert said.exit_code == 0, said.output
    assert tog("corrections", "revert", earlier.id, "--store", store_spec).exit_code == 0
    s = open_spec(store_spec)
    assert not s.need_corrections().has_fact(_fact(i)) and s.need_corrections().has_fact(_fact(0, "f"))
    s.close()
    # a load that stops by itself, past its bad lines' limit, stops at a checkpoint: it blocks nothing
    broken = write_nt(tmp_path / "broken.nt", _lines(50, who="b") + ["not a triple"] * 3 + _lines(50, 50, "b"))
    stopped = tog("load", broken, "--store", store_spec, "--no-progress", "--max-errors", "1")
    assert stopped.exit_code == 1 and "broken.nt" in stopped.output, stopped.output
    said = tog("correct", "--remove", "|".join(f"<{x}>" for x in _fact(7, "b")), "--reason", "r", "--store", store_spec)
    assert said.exit_code == 0, said.output


@pytest.mark.neo4j
def test_a_correction_is_refused_beside_a_load_that_is_running(neo4j_store, tmp_path, tog):
    """Beside a load that is running (on a server), a correction is refused too:
    were the load killed, its re-run would write its later lines again."""
    from engine.backends.neo4j.sink import Neo4jSink
    from engine.store import LoadCheckpoint

    path = write_nt(tmp_path / "few.nt", _lines(30))
    assert tog("load", path, "--store", neo4j_store, "--no-progress").exit_code == 0
    fact = "|".join(f"<{x}>" for x in _fact(3))
    s = open_spec(neo4j_store)
    running = Neo4jSink(s.kg.session)
    running.resume("another.nt", ())
    running.begin()
    try:
        running.write_ntriples("\n".join(_lines(5, who="a")).encode())
        running.commit("another.nt", LoadCheckpoint(path="another.nt", lines=5, triples=5))
        running._wait(0)  # (its writer thread commits it)
        said = tog("correct", "--remove", fact, "--reason", "wrong", "--store", neo4j_store)
        assert said.exit_code == 1 and no_traceback(said), said.output
        assert f"a load into {neo4j_store} is running: correct once it ends" in said.output, said.output
        assert s.need_corrections().has_fact(_fact(3))
        said = tog("correct", "--remove", fact, "--reason", "wrong", "--despite-load", "--store", neo4j_store)
        assert said.exit_code == 0, said.output
        assert not s.need_corrections().has_fact(_fact(3))
    finally:
        running.end()


def _count(uri: str, query: str, **params) -> int:
    import neo4j

    user, password = os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"]
    with neo4j.GraphDatabase.driver(uri, auth=(user, password)) as driver:
        return driver.execute_query(query, params).records[0][0]


@pytest.mark.neo4j
def test_chunks_committed_out_of_order_resume_after_the_gap(neo4j_store, tmp_path, monkeypatch):
    """Two chunk transactions run at once.  Chunk 2 fails after chunk 3
    committed: the re-run resumes after chunk 1 (not 3) and ends exact."""
    import engine.backends.neo4j.sink as backend

    lines = _lines(400)
    path = write_nt(tmp_path / "many.nt", lines)
    made, third_done = [], threading.Event()
    make, write, committed = backend.Neo4jSink._chunk_writer, backend._Chunk.write, backend._Chunk.committed

    def numbered(self, quads, names, **how):
        chunk = make(self, quads, names, **how)
        made.append(chunk)
        chunk.number = len(made)
        return chunk

    def failing_second(self, tx, steps):
        if self.number == 2:  # holds no lock while it waits
            assert third_done.wait(30), "chunk 3 never committed"
            raise _Killed
        write(self, tx, steps)

    def noting(self):
        committed(self)
        if self.number == 3:
            third_done.set()

    monkeypatch.setattr(backend.Neo4jSink, "_chunk_writer", numbered)
    monkeypatch.setattr(backend._Chunk, "write", failing_second)
    monkeypatch.setattr(backend._Chunk, "committed", noting)
    kg = open_spec(neo4j_store, create=True)
    with pytest.raises(_Killed):
        load_file(kg.need_sink(), path, chunk_bytes=2048)
    first_chunk_lines = len(made[0].edges)
    assert 0 < edges(kg) < 400 and third_done.is_set()
    monkeypatch.undo()
    report = load_file(kg.need_sink(), path, chunk_bytes=2048)
    assert report.resumed_from == first_chunk_lines  # not past chunk 2's lines
    assert edges(kg) == 400 and report.lines == 400 and report.triples == 400 + report.names
    assert _count(neo4j_store, "MATCH (p:TogLoadPart) RETURN count(p)") == 0


def _profile(uri: str, text: str, **params) -> list[tuple[str, int]]:
    """Run ``text`` under PROFILE on the Neo4j server: its operators and the
    database hits of each."""
    import neo4j

    with neo4j.GraphDatabase.driver(uri, auth=(os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"])) as driver, \
            driver.session() as session:
        plan = session.run("PROFILE " + text, **params).consume().profile
    ops: list[tuple[str, int]] = []
    todo = [plan]
    while todo:
        op = todo.pop()
        ops.append((op["operatorType"].split("@")[0], op.get("dbHits", 0)))
        todo.extend(op.get("children", []))
    return ops


@pytest.mark.neo4j
def test_a_load_into_neo4j_merges_each_edge_between_its_two_nodes_not_by_a_scan_of_every_edge(neo4j_store, tmp_path):
    """A load into a database that holds edges MERGEs its edges. With the
    type as a parameter, Neo4j 5.26 planned that MERGE on a database without
    edges as a scan of every relationship for each row (and kept the plan):
    1,700 edges to one hub took 43 s. The statement a load sends names the
    type, and reads a few database hits a row however it was planned."""
    from engine.backends.neo4j.sink import _Chunk, edges_statement

    store = open_spec(neo4j_store, create=True)
    xs = [iri(f"x{i}") for i in range(300)]
    load_file(store.need_sink(), write_nt(tmp_path / "names.nt", [f'<{x}> <{RDFS_LABEL}> "Thing {i}" .'
                                                                   for i, x in enumerate(xs + [iri("hub")])]))
    session = store.kg.session
    node = {r["id"]: r["n"] for r in session.run_text("MATCH (e:Entity) RETURN e.id AS id, id(e) AS n")}
    edges = [(iri("hub"), iri("r") if i % 3 else iri("s"), x) for i, x in enumerate(xs)]
    steps = _Chunk([], [], edges, [], "", "merge", {}, {}).steps()
    assert sorted((statement, len(rows)) for statement, rows in steps) == [("load_edges_merge", 100),
                                                                          ("load_edges_merge", 200)]
    for statement, rows in steps:  # each planned on a database without edges, as a load's first would be
        session.run_text("CALL db.clearQueryCaches()", write=True)
        session.run_text("MATCH ()-[r]->() DELETE r", write=True)
        text, params = edges_statement(statement, rows, node)
        ops = _profile(neo4j_store, text, rows=params)
        assert sum(hits for _, hits in ops) <= 10 * len(rows) and "Expand(Into)" in dict(ops), ops
    assert _count(neo4j_store, "MATCH ()-[r]->() RETURN count(r)") == len(steps[-1][1])  # (the others deleted)
    # the form with the type as a parameter, planned the same way, scans (so the check above can fail)
    session.run_text("CALL db.clearQueryCaches()", write=True)
    session.run_text("MATCH ()-[r]->() DELETE r", write=True)
    rows = [(node[s], p, node[o]) for s, p, o in edges]
    ops = _profile(neo4j_store, "UNWIND $rows AS row MATCH (s) WHERE id(s) = row[0] MATCH (o) WHERE id(o) = row[2] "
                                "MERGE (s)-[:$(row[1])]->(o)", rows=rows)
    assert sum(hits for _, hits in ops) > 100 * len(rows), ops


@pytest.mark.neo4j
def test_a_load_into_neo4j_that_holds_names_but_no_edges_creates_its_edges(neo4j_store, tmp_path, monkeypatch):
    """A names file loaded first leaves entities and no edges, so a load of
    the edges after it cannot repeat one: it CREATEs them, dropping the
    file's own repeats, as a load into an empty database does (90,000 edges
    took 2.6-2.9 s, merging 14.5-17.6 s). Its name keys may exist: merged.
    A load into a database that holds edges merges them."""
    import engine.backends.neo4j.sink as backend
    from engine.queries import cypher

    store = open_spec(neo4j_store, create=True)
    xs = [iri(f"x{i}") for i in range(300)]
    load_file(store.need_sink(), write_nt(tmp_path / "names.nt", [f'<{x}> <{RDFS_LABEL}> "Thing {i}" .'
                                                                   for i, x in enumerate(xs + [iri("hub")])]))
    sent: list[str] = []
    write = backend._Chunk.write

    def spying(self, tx, steps):
        sent.extend(statement for statement, rows in steps if rows)
        write(self, tx, steps)

    monkeypatch.setattr(backend._Chunk, "write", spying)
    keys_of_x0 = "MATCH (n:TogName {entity: $e}) RETURN count(n)"
    named = _count(neo4j_store, keys_of_x0, e=xs[0])
    edges = [f"<{iri('hub')}> <{iri('r') if i % 3 else iri('s')}> <{x}> ." for i, x in enumerate(xs)]
    load_file(store.need_sink(), write_nt(tmp_path / "edges.nt", edges + edges[:50]  # (the file repeats 50)
                                          + [f'<{xs[0]}> <{RDFS_LABEL}> "Thing 0" .']), chunk_bytes=4096)
    assert "load_edges_create" in sent and "load_edges_merge" not in sent, sent
    assert "load_name_keys" in sent and "load_name_keys_create" not in sent, sent
    assert _count(neo4j_store, "MATCH (:Entity)-[r]->() RETURN count(r)") == 300
    assert _count(neo4j_store, keys_of_x0, e=xs[0]) == named > 0  # the repeated name's keys not made twice
    sent.clear()
    more = [f"<{iri('hub')}> <{iri('r')}> <{iri(f'y{i}')}> ." for i in range(20)]
    load_file(store.need_sink(), write_nt(tmp_path / "more.nt", edges[100:200] + more))
    assert "load_edges_merge" in sent and "load_edges_create" not in sent, sent
    assert _count(neo4j_store, "MATCH (:Entity)-[r]->() RETURN count(r)") == 320
    ops = _profile(neo4j_store, cypher("kg_edges"))  # the count is the count store's, not a read of the edges
    assert "RelationshipCountFromCountStore" in dict(ops) and sum(hits for _, hits in ops) <= 5, ops


def test_a_memory_setting_is_read_in_bytes():
    from engine.backends.neo4j.sink import byte_size

    assert [byte_size(v) for v in ("0B", "128.00MiB", "1.50GiB", "512k", "2g", "100", "", "lots", "1.2.3MiB")] == \
           [0, 128 << 20, 3 << 29, 512 << 10, 2 << 30, 100, 0, 0, 0]


def test_a_load_chunk_is_cut_into_transactions_by_the_memory_they_take():
    from engine.backends.neo4j.sink import ROW_MEMORY, _memory, _transactions

    steps = [("load_entities", [[f"e{i}"] for i in range(250)]), ("load_values", []),
             ("load_edges_create", [(f"e{i}", "p", f"e{i + 1}") for i in range(700)]),
             ("load_name_keys_create", [(f"k{i}", f"e{i}") for i in range(30)])]
    for budget in (1, 2600, 10_000, 100_000, 10 ** 9):
        groups = _transactions(steps, budget)
        # every row once, in order (nodes before the edges that address them)
        assert [(st, row) for g in groups for st, rows in g for row in rows] == \
               [(st, row) for st, rows in steps for row in rows]
        assert all(_memory(g) <= budget or sum(len(r) for _, r in g) == 1 for g in groups)
        if budget > 2600:  # each filled before the next: none but the last has room for another row
            assert len(groups) <= -(-_memory(steps) // (budget - 2600))
    assert len(_transactions(steps, 10 ** 9)) == 1 and len(_transactions(steps, 1)) == 980
    assert _transactions([], 1000) == [[]]  # a chunk of nothing still carries its checkpoint
    assert ROW_MEMORY["load_entities"] > ROW_MEMORY["load_edges_create"]


@pytest.mark.neo4j
def test_a_load_killed_between_the_transactions_of_a_chunk_resumes_exactly(neo4j_store, tmp_path, monkeypatch):
    """A chunk too big for one transaction is written in several, its
    checkpoint with the last: killed after some committed, the load has no
    checkpoint of that chunk, and its re-run writes it again, adding nothing twice."""
    import engine.backends.neo4j.sink as backend

    lines = _lines(400)
    lines += [f'<{iri(f"s{i}")}> <{RDFS_LABEL}> "s {i}" .' for i in range(0, 400, 3)]
    path = write_nt(tmp_path / "many.nt", lines)
    monkeypatch.setattr(backend, "load_budget", lambda session: 60 * 2600)  # 60 entities a transaction
    written, write = [], backend._Chunk.write

    def dying(self, tx, steps):
        written.append(steps)
        if len(written) == 4:
            raise _Killed
        write(self, tx, steps)

    monkeypatch.setattr(backend._Chunk, "write", dying)
    kg = open_spec(neo4j_store, create=True)
    with pytest.raises(_Killed):
        load_file(kg.need_sink(), path)  # one chunk
    assert kg.kg.stats()["entities"] == 180 and edges(kg) == 0  # three transactions of nodes committed
    monkeypatch.setattr(backend._Chunk, "write", write)
    written.clear()
    report = load_file(kg.need_sink(), path)
    assert report.resumed_from == 0 and report.lines == len(lines)
    stats = kg.kg.stats()
    assert (edges(kg), stats["entities"], stats["names"]) == (400, 450, 134)
    assert _count(neo4j_store, "MATCH (n:TogName) RETURN count(n)") == 134
    assert all(backend._memory(steps) <= 60 * 2600 for steps in written)


def _killed_in_its_third_chunk(backend, monkeypatch, sent: list[str]) -> None:
    """Kill a load in the second edge transaction of its third chunk (the
    first committed); note the edge statements sent."""
    made, write, statement = [], backend._Chunk.write, backend.edges_statement

    def numbered(self, quads, names, **how):
        chunk = make(self, quads, names, **how)
        made.append(chunk)
        chunk.number, chunk.edge_writes = len(made), 0
        return chunk

    def dying(self, tx, steps):
        if any(name.startswith("load_edges") for name, _ in steps):
            self.edge_writes += 1
            if self.number == 3 and self.edge_writes == 2:
                raise _Killed
        write(self, tx, steps)

    def noted(name, rows, ids):
        sent.append(name)
        return statement(name, rows, ids)

    make = backend.Neo4jSink._chunk_writer
    monkeypatch.setattr(backend.Neo4jSink, "_chunk_writer", numbered)
    monkeypatch.setattr(backend._Chunk, "write", dying)
    monkeypatch.setattr(backend, "edges_statement", noted)


_REPEATED_EDGES = ("MATCH (a:Entity)-[r]->(b) WITH a, type(r) AS t, b, count(*) AS n WHERE n > 1 "
                   "RETURN count(*)")


@pytest.mark.neo4j
@pytest.mark.parametrize("fmt", ["nt", "delimited"])
def test_a_resumed_neo4j_load_creates_the_edges_past_those_its_killed_run_wrote(neo4j_store, tmp_path, monkeypatch,
                                                                               fmt):
    """A load into a database without edges creates them. Killed with a
    transaction of a chunk past its checkpoint committed, its re-run merges
    up to the furthest line the killed run wrote, creates after it, and
    drops the repeats of the lines before its checkpoint, which it reads
    again: every edge once."""
    import engine.backends.neo4j.sink as backend

    if fmt == "nt":
        lines = _lines(300)
    else:  # nodes by name: a converter reads the lines before the checkpoint again
        lines = [f"thing number {i}|relation {i % 7}|other thing {i % 50}" for i in range(300)]
    lines += lines[:30] + lines[100:110]  # repeats of lines before the checkpoint, and after it
    path = write_nt(tmp_path / f"many.{'nt' if fmt == 'nt' else 'txt'}", lines)
    monkeypatch.setattr(backend, "load_budget", lambda session: 20 * 1300)  # 20 edges (10 nodes) a transaction
    sent: list[str] = []
    _killed_in_its_third_chunk(backend, monkeypatch, sent)
    kg = open_spec(neo4j_store, create=True)
    with pytest.raises(_Killed):
        load_file(kg.need_sink(), path, chunk_bytes=2048)
    assert set(sent) == {"load_edges_create"}
    before = edges(kg)
    reach = _count(neo4j_store, "MATCH (r:TogLoadReach) RETURN max(r.lines)")
    sent.clear()
    report = load_file(kg.need_sink(), path, chunk_bytes=2048)
    assert 0 < report.resumed_from < reach < 300 and before > 0
    assert "load_edges_merge" in sent and "load_edges_create" in sent  # merged up to the reach, then created
    assert sent.index("load_edges_create") > sent.index("load_edges_merge")
    assert edges(kg) == 300 and report.lines == len(lines)
    assert _count(neo4j_store, _REPEATED_EDGES) == 0
    assert _count(neo4j_store, "MATCH (r:TogLoadReach) RETURN count(r)") == 0  # gone with the load's end
    assert kg.kg.session.setting(backend.SOLE_LOAD, "unset") is None


@pytest.mark.neo4j
@pytest.mark.parametrize("between", ["a correction", "another load"])
def test_a_killed_neo4j_load_merges_when_resumed_after_other_writes(neo4j_store, tmp_path, monkeypatch, between):
    """Once a correction or another load has written edges, the re-run of a
    killed load cannot tell its own edges from theirs: it merges every edge."""
    import engine.backends.neo4j.sink as backend
    from engine.graph import Correction

    lines = _lines(300)
    path = write_nt(tmp_path / "many.nt", lines)
    monkeypatch.setattr(backend, "load_budget", lambda session: 20 * 1300)
    sent: list[str] = []
    _killed_in_its_third_chunk(backend, monkeypatch, sent)
    kg = open_spec(neo4j_store, create=True)
    with pytest.raises(_Killed):
        load_file(kg.need_sink(), path, chunk_bytes=2048)
    last = (iri("s299"), iri("r5"), iri("o49"))  # the file's last line, which the killed run did not reach
    if between == "a correction":
        kg.need_corrections().apply(Correction(id="c1", created="2026-12-07T00:00:00Z", reason="seen", added=[last]))
    else:
        load_file(kg.need_sink(), write_nt(tmp_path / "other.nt", [f"<{last[0]}> <{last[1]}> <{last[2]}> ."]))
    sent.clear()
    load_file(kg.need_sink(), path, chunk_bytes=2048)
    assert set(sent) == {"load_edges_merge"}
    assert edges(kg) == 300 and _count(neo4j_store, _REPEATED_EDGES) == 0


@pytest.mark.neo4j
def test_a_load_transaction_that_deadlocks_with_the_other_writer_is_written_again_alone(neo4j_store, tmp_path,
                                                                                          monkeypatch, caplog):
    """The load's two writers lock two nodes in opposite orders: the server
    rolls one transaction back as a deadlock's victim, and the load writes
    it again at once, alone, rather than racing the other writer again."""
    import logging

    import engine.backends.neo4j.sink as backend

    lines = _lines(300)
    path = write_nt(tmp_path / "many.nt", lines)
    made, write = [], backend._Chunk.write
    held = {2: threading.Event(), 3: threading.Event()}

    def numbered(self, quads, names, **how):
        chunk = make(self, quads, names, **how)
        made.append(chunk)
        chunk.number = len(made)
        return chunk

    def lock(tx, key: str) -> None:
        tx.run("MERGE (s:TogSetting {key: $key}) SET s.value = 'null'", key=key).consume()

    def crossing(self, tx, steps):
        if self.number in held and not held[self.number].is_set():  # chunks 2 and 3: a then b, b then a
            mine, other = ("lock-a", "lock-b") if self.number == 2 else ("lock-b", "lock-a")
            lock(tx, mine)
            held[self.number].set()
            assert held[5 - self.number].wait(30)
            lock(tx, other)
        write(self, tx, steps)

    make = backend.Neo4jSink._chunk_writer
    monkeypatch.setattr(backend.Neo4jSink, "_chunk_writer", numbered)
    monkeypatch.setattr(backend._Chunk, "write", crossing)
    kg = open_spec(neo4j_store, create=True)
    with caplog.at_level(logging.INFO, logger="tog"):
        report = load_file(kg.need_sink(), path, chunk_bytes=2048)
    alone = [r for r in caplog.records if "writing it again alone" in r.getMessage()]
    assert len(alone) == 1 and len(made) > 3
    assert edges(kg) == 300 and report.lines == 300 and _count(neo4j_store, _REPEATED_EDGES) == 0


@pytest.mark.neo4j
@pytest.mark.parametrize("between", ["another load before its first edge", "another load", "a correction"])
def test_a_load_that_creates_edges_merges_once_another_writer_begins(neo4j_store, tmp_path, monkeypatch, caplog,
                                                                    between):
    """A load into a database without edges creates them, as its only
    writer. Another load that begins meanwhile merges (even before the
    first one wrote an edge: it may be writing), and so does a correction;
    the first load's transactions see it and merge from then on. The two
    write the same 50 edges: each is there once."""
    import logging

    import engine.backends.neo4j.sink as backend
    from engine.graph import Correction

    path = write_nt(tmp_path / "first.nt", _lines(300))
    monkeypatch.setattr(backend, "load_budget", lambda session: 20 * 1300)
    sent: list[tuple[str, str]] = []  # (load, statement)
    who = ["first"]
    cut, statement = backend.Neo4jSink._chunk_writer, backend.edges_statement
    at = 1 if "before" in between else 3
    kg = open_spec(neo4j_store, create=True)
    sink = kg.need_sink()

    def meanwhile(self, quads, names, **how):
        if self is sink:
            meanwhile.cuts += 1
            if meanwhile.cuts == at:
                self._wait(0)  # (what the first load sent so far is its own)
                who[0] = "second"
                if between == "a correction":
                    kg.need_corrections().apply(Correction(id="c1", created="2026-12-07T00:00:00Z", reason="seen",
                                                           added=[(iri("s299"), iri("r5"), iri("o49"))]))
                else:
                    other = open_spec(neo4j_store)
                    load_file(other.need_sink(), write_nt(tmp_path / "second.nt", _lines(50, 250) + _lines(20, 0, "t")))
                who[0] = "first"
        return cut(self, quads, names, **how)

    meanwhile.cuts = 0

    def noted(name, rows, ids):
        sent.append((who[0], name))
        return statement(name, rows, ids)

    monkeypatch.setattr(backend.Neo4jSink, "_chunk_writer", meanwhile)
    monkeypatch.setattr(backend, "edges_statement", noted)
    with caplog.at_level(logging.INFO, logger="tog"):
        report = load_file(sink, path, chunk_bytes=2048)
    first = [name for w, name in sent if w == "first"]
    second = {name for w, name in sent if w == "second"}
    assert report.lines == 300 and meanwhile.cuts > at
    assert edges(kg) == (300 if between == "a correction" else 320) and _count(neo4j_store, _REPEATED_EDGES) == 0
    assert second == (set() if between == "a correction" else {"load_edges_merge"})
    assert first[-1] == "load_edges_merge" and ("load_edges_create" in first) == (at > 1), first
    assert first.index("load_edges_merge") > (first.index("load_edges_create") if at > 1 else -1)
    switched = [r for r in caplog.records if "merges its edges from here on" in r.getMessage()]
    assert len(switched) == 1
    told = [r for r in caplog.records if "is running" in r.getMessage()]
    assert len(told) == (1 if at == 1 else 0)  # (the other load met no edge, yet merged)
    assert kg.kg.session.setting(backend.SOLE_LOAD, "unset") is None


_KILLED_LOAD = """
import os, signal, sys
import engine.backends.neo4j.sink as backend
from engine.store import open_store
from loaders.load import load_file

def killed(self, tx, steps):  # in the first transaction: nothing of it commits
    os.kill(os.getpid(), signal.SIGKILL)

backend._Chunk.write = killed
load_file(open_store(sys.argv[1]).need_sink(), sys.argv[2], chunk_bytes=2048)
"""


@pytest.mark.neo4j
@pytest.mark.parametrize("next_load", ["its own re-run", "another file"])
def test_after_a_load_killed_outright_the_next_load_creates_edges(neo4j_store, tmp_path, monkeypatch, caplog,
                                                                  next_load):
    """A load killed outright (SIGKILL: its end never runs) before it wrote
    an edge leaves its entry among the loads running, but its connection
    closed and the server dropped its lock: the next load, its own re-run
    or another file's, finds the lock free, forgets the entry and creates
    its edges, as into any database without edges."""
    import logging
    import subprocess

    import engine.backends.neo4j.sink as backend

    first = write_nt(tmp_path / "first.nt", _lines(300))
    open_spec(neo4j_store, create=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    killed = subprocess.run([sys.executable, "-c", _KILLED_LOAD, neo4j_store, str(first)], env=env,
                            capture_output=True, timeout=120)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    assert _count(neo4j_store, "MATCH (r:TogLoadRun) RETURN count(r)") == 1  # (what tells running loads forgets it)
    again = open_spec(neo4j_store)
    assert edges(again) == 0
    sent: list[str] = []
    statement = backend.edges_statement

    def noted(name, rows, ids):
        sent.append(name)
        return statement(name, rows, ids)

    monkeypatch.setattr(backend, "edges_statement", noted)
    path = first if next_load == "its own re-run" else write_nt(tmp_path / "second.nt", _lines(70, 250))
    with caplog.at_level(logging.INFO, logger="tog"):
        load_file(again.need_sink(), path, chunk_bytes=2048)
    told = [r for r in caplog.records if "is running" in r.getMessage()]
    assert edges(again) == (300 if next_load == "its own re-run" else 70)
    assert set(sent) == {"load_edges_create"} and not told
    assert _count(neo4j_store, "MATCH (r:TogLoadRun) RETURN count(r)") == 0


@pytest.mark.neo4j
def test_a_load_that_begins_while_another_merges_before_its_first_edge_merges_too(neo4j_store, tmp_path,
                                                                                   monkeypatch):
    """Three loads: the first writes names only; the second begins while it
    runs, so merges, and waits before its first edge; the first ends; the
    third begins, into a database still without edges, while the second
    has written none. The second is running: the third merges too, and the
    second's edges are not written twice when the third writes them after."""
    import engine.backends.neo4j.sink as backend

    names = write_nt(tmp_path / "names.nt", [f'<{iri(f"s{i}")}> <{RDFS_LABEL}> "thing {i}" .' for i in range(300)])
    kg = open_spec(neo4j_store, create=True)
    sinks = {name: open_spec(neo4j_store).need_sink() for name in ("names", "second", "third")}
    who = {id(sink): name for name, sink in sinks.items()}
    sent: list[tuple[str, str]] = []
    second_decided, second_go = threading.Event(), threading.Event()
    cut, statement, decide = backend.Neo4jSink._chunk_writer, backend.edges_statement, backend.Neo4jSink._decide_writes
    second = threading.Thread(target=lambda: load_file(sinks["second"], write_nt(tmp_path / "second.nt",
                                                                                  _lines(300)), chunk_bytes=2048))

    def held(self, quads, names, **how):
        chunk = cut(self, quads, names, **how)
        chunk.who = who[id(self)]
        if chunk.who == "names" and not second.is_alive() and not second_decided.is_set():
            second.start()
            assert second_decided.wait(30)
        elif chunk.who == "second":
            assert second_go.wait(60)  # (before its first edge)
        elif chunk.who == "third" and not second_go.is_set():
            second_go.set()
            second.join(60)  # the second writes all its edges, then the third writes its own
        return chunk

    def deciding(self):
        decide(self)
        if who[id(self)] == "second":
            second_decided.set()

    def noted(name, rows, ids):
        sent.append((threading.current_thread().name, name))
        return statement(name, rows, ids)

    monkeypatch.setattr(backend.Neo4jSink, "_chunk_writer", held)
    monkeypatch.setattr(backend.Neo4jSink, "_decide_writes", deciding)
    load_file(sinks["names"], names, chunk_bytes=2048)
    assert edges(kg) == 0 and second.is_alive()
    monkeypatch.setattr(backend, "edges_statement", noted)
    load_file(sinks["third"], write_nt(tmp_path / "third.nt", _lines(70, 250)), chunk_bytes=2048)
    assert not second.is_alive()
    assert {name for _, name in sent} == {"load_edges_merge"}
    assert edges(kg) == 320 and _count(neo4j_store, _REPEATED_EDGES) == 0


@pytest.mark.neo4j
def test_a_load_taken_for_killed_and_the_load_that_took_its_place_both_merge(neo4j_store, tmp_path, monkeypatch):
    """A load that creates edges loses the connection that holds its lock
    (as a server's transaction timeout would do) before its first edge. A
    load that begins then takes it for killed, and creates. The first
    load's next transaction finds the other's mark: it clears it, and both
    merge from then on, so the 50 edges both write are there once."""
    import engine.backends.neo4j.sink as backend

    kg = open_spec(neo4j_store, create=True)
    first, other = kg.need_sink(), open_spec(neo4j_store).need_sink()
    decided, first_done = threading.Event(), threading.Event()
    cut = backend.Neo4jSink._chunk_writer
    how: dict[str, bool] = {}
    second = threading.Thread(target=lambda: load_file(other, write_nt(tmp_path / "second.nt", _lines(70, 250)),
                                                       chunk_bytes=2048))

    def lost(self, quads, names, **kw):
        if self is first and not second.is_alive() and not decided.is_set():
            self._running._held[0].close()  # the hold's connection is gone: its lock with it
            second.start()
            assert decided.wait(30)
        elif self is other:
            how.setdefault("second creates", self._creates)
            assert first_done.wait(60)  # the second writes after the first wrote all its edges
        return cut(self, quads, names, **kw)

    monkeypatch.setattr(backend.Neo4jSink, "_chunk_writer", lost)
    decide = backend.Neo4jSink._decide_writes

    def deciding(self):
        decide(self)
        if self is other:
            decided.set()

    monkeypatch.setattr(backend.Neo4jSink, "_decide_writes", deciding)
    load_file(first, write_nt(tmp_path / "first.nt", _lines(300)), chunk_bytes=2048)
    first_done.set()
    second.join(60)
    assert how == {"second creates": True}
    assert edges(kg) == 320 and _count(neo4j_store, _REPEATED_EDGES) == 0
    assert kg.kg.session.setting(backend.SOLE_LOAD, "unset") is None


@pytest.mark.neo4j
@pytest.mark.parametrize("second_writer", ["load", "correction"])
def test_another_writer_waits_for_a_load_transaction_in_flight_that_creates_edges(neo4j_store, tmp_path, monkeypatch,
                                                                                  second_writer):
    """A second load, or a correction, begins while a transaction of a load
    that creates edges is in flight: it waits for that transaction's commit
    (the writers' locks) before it decides to merge or writes, so none of
    the load's creates can land after another writer's write of the same edge."""
    import engine.backends.neo4j.corrections as corrections
    import engine.backends.neo4j.sink as backend
    from engine.graph import Correction

    path = write_nt(tmp_path / "first.nt", _lines(300))
    monkeypatch.setattr(backend, "load_budget", lambda session: 20 * 1300)
    order: list[str] = []
    decided = threading.Event()
    starting, started = threading.Lock(), []
    cut, write, done, decide = (backend.Neo4jSink._chunk_writer, backend._Chunk.write, backend._Chunk.done,
                                backend.Neo4jSink._decide_writes)
    kg = open_spec(neo4j_store, create=True)
    sink = kg.need_sink()
    if second_writer == "load":
        second = threading.Thread(target=lambda: load_file(open_spec(neo4j_store).need_sink(), write_nt(
            tmp_path / "second.nt", _lines(50, 250) + _lines(20, 0, "t"))))
    else:
        second = threading.Thread(target=lambda: open_spec(neo4j_store).need_corrections().apply(Correction(
            id="c1", created="2026-12-07T00:00:00Z", reason="seen", added=[(iri("s299"), iri("r5"), iri("o49"))])))
    not_sole = corrections._not_sole

    def owned(self, quads, names, **how):
        chunk = cut(self, quads, names, **how)
        chunk.first = self is sink
        return chunk

    def holding(self, tx, steps):
        with starting:  # (the load's two writers may get here at once: one starts the second writer)
            start = self.first and not started and any(name == "load_edges_create" for name, _ in steps) \
                and self.began
            started.extend([True] if start else [])
        if start:
            second.start()  # this transaction holds a writer's lock, and has checked the mark
            self.held = True
            order.append("second began" if not decided.wait(5) else "second decided while the first wrote")
        write(self, tx, steps)

    def committed(self):
        if getattr(self, "held", False):
            order.append("first committed")
            self.held = False
        done(self)

    def deciding(self):
        decide(self)
        if self is not sink:
            order.append("second decided")
            decided.set()

    def correcting(tx):
        not_sole(tx)
        order.append("second decided")
        decided.set()

    monkeypatch.setattr(backend.Neo4jSink, "_chunk_writer", owned)
    monkeypatch.setattr(backend._Chunk, "write", holding)
    monkeypatch.setattr(backend._Chunk, "done", committed)
    monkeypatch.setattr(backend.Neo4jSink, "_decide_writes", deciding)
    monkeypatch.setattr(corrections, "_not_sole", correcting)
    load_file(sink, path, chunk_bytes=2048)
    second.join(60)
    # the second did not decide while the first's transaction was open (5 s); after its commit, which of
    # the two threads records its step first is up to the scheduler
    assert order[0] == "second began" and sorted(order[1:]) == ["first committed", "second decided"], order
    assert edges(kg) == (320 if second_writer == "load" else 300) and _count(neo4j_store, _REPEATED_EDGES) == 0


def _transaction_cap(uri: str) -> int:
    """The server's cap on one transaction's memory in bytes (0: none)."""
    import neo4j

    from engine.backends.neo4j.sink import byte_size

    user, password = os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"]
    with neo4j.GraphDatabase.driver(uri, auth=(user, password)) as driver:
        value = driver.execute_query("SHOW SETTINGS YIELD name, value WHERE name = 'db.memory.transaction.max' "
                                     "RETURN value").records[0][0]
    return byte_size(value)


@pytest.mark.neo4j
def test_a_load_transaction_the_server_refuses_for_memory_is_split(neo4j_store, tmp_path, monkeypatch, caplog):
    """Against a server that caps a transaction's memory (CI starts it with
    NEO4J_TX_MEMORY=128m): a chunk of 45,000 new named entities, offered
    as one transaction, is refused by the server; the load writes it in
    smaller ones and goes on with half the budget, and nothing is lost."""
    import logging

    import engine.backends.neo4j.sink as backend

    cap = _transaction_cap(neo4j_store)
    if not cap:
        if os.environ.get("TOG_REQUIRE_NEO4J"):
            pytest.fail("CI must start Neo4j with a transaction cap (NEO4J_TX_MEMORY=128m)")
        pytest.skip("the Neo4j server caps no transaction (start it with NEO4J_TX_MEMORY=128m)")
    n = 45_000
    assert n * (backend.ROW_MEMORY["load_entities"] + backend.ROW_MEMORY["load_name_keys_create"]) > cap
    lines = [f'<{iri(f"e{i}")}> <{RDFS_LABEL}> "entity {i}" .' for i in range(n)]
    lines += [f"<{iri(f'e{i}')}> <{iri('next')}> <{iri(f'e{i + 1}')}> ." for i in range(0, n - 1, 9)]
    path = write_nt(tmp_path / "named.nt", lines)
    monkeypatch.setattr(backend, "load_budget", lambda session: 1 << 40)  # as if the server took anything
    tried: list = []  # what each attempt at a transaction wrote (held: no id is reused)
    write = backend._Chunk.write
    monkeypatch.setattr(backend._Chunk, "write", lambda chunk, tx, steps: tried.append(steps) or write(chunk, tx, steps))
    kg = open_spec(neo4j_store, create=True)
    sink = kg.need_sink()
    with caplog.at_level(logging.INFO, logger="tog"):
        report = load_file(sink, path, chunk_bytes=64 << 20)  # one chunk
    assert sink.tx_memory < n * 4000 and "refused a load transaction" in caplog.text
    # each refused transaction was tried once (not again as it was, until the retry time ran out: that is
    # for a refusal on commit, which the driver would retry), then split
    assert len({id(steps) for steps in tried}) == len(tried) > 2, [sum(len(r) for _, r in t) for t in tried]
    stats = kg.kg.stats()
    assert (report.triples, report.names, stats["entities"], stats["names"], edges(kg)) == \
           (len(lines), n, n, n, len(range(0, n - 1, 9)))
    assert kg.kg.labels([iri("e44999")]) == {iri("e44999"): "entity 44999"}


@pytest.mark.neo4j
def test_a_load_of_a_hubs_edges_fits_a_capped_server_at_the_first_try(neo4j_store, tmp_path, caplog):
    """Edges between hubs take five to ten times the memory Neo4j estimates
    for them when a transaction commits. Against a server that caps one
    transaction's memory (128 MB in CI), a load's transactions take a
    sixteenth of the cap by the estimate: a graph whose degrees follow a
    power law at both ends (500 types) loads in chunks of 4 MB without a
    refusal. With the budget of 48 MB a server without a cap gets, a chunk's
    transaction was refused and written again in halves."""
    import logging

    cap = _transaction_cap(neo4j_store)
    if not cap or cap > 128 << 20:
        if os.environ.get("TOG_REQUIRE_NEO4J"):
            pytest.fail("CI must start Neo4j with a transaction cap (NEO4J_TX_MEMORY=128m)")
        pytest.skip("the Neo4j server caps no transaction at 128 MB (start it with NEO4J_TX_MEMORY=128m)")
    rng = random.Random(5)  # a power law at both ends, as a real KG has: its first entities are hubs
    ends = rng.choices(range(4000), cum_weights=list(itertools.accumulate(1 / r ** 1.1 for r in range(1, 4001))),
                       k=400_000)
    types = rng.choices(range(500), cum_weights=list(itertools.accumulate(1 / r ** 0.8 for r in range(1, 501))),
                        k=200_000)
    lines = sorted({f"<{iri(f'e{s}')}> <{iri(f'r{t}')}> <{iri(f'e{o}')}> ."
                    for s, o, t in zip(ends[::2], ends[1::2], types)})
    path = write_nt(tmp_path / "hubs.nt", lines)
    kg = open_spec(neo4j_store, create=True)
    sink = kg.need_sink()
    with caplog.at_level(logging.INFO, logger="tog"):
        report = load_file(sink, path, chunk_bytes=4 << 20)
    assert "refused a load transaction" not in caplog.text
    assert sink.tx_memory == cap // 16
    assert report.triples == edges(kg) == len(lines)


@pytest.mark.neo4j
def test_a_load_halves_its_transactions_once_for_each_size_the_server_refuses(neo4j_store, tmp_path, monkeypatch):
    """The budget of a load's transactions is half the smallest one the
    server refused. A transaction sized before an earlier refusal and
    refused too does not halve it again (it went from 47 MiB to under 1 MiB
    in one 1M-triple load: 198.5 s, where the same load takes 40 s)."""
    import engine.backends.neo4j.sink as backend

    if not _transaction_cap(neo4j_store):
        pytest.skip("the Neo4j server caps no transaction (start it with NEO4J_TX_MEMORY=128m)")
    n = 45_000
    path = write_nt(tmp_path / "named.nt", [f'<{iri(f"e{i}")}> <{RDFS_LABEL}> "entity {i}" .' for i in range(n)])
    # two transactions of the chunk's, each sized before either is refused
    budget = n * (backend.ROW_MEMORY["load_entities"] + backend.ROW_MEMORY["load_name_keys_create"]) // 2 + 1
    monkeypatch.setattr(backend, "load_budget", lambda session: budget)
    refused: list[int] = []  # the cost of each refused transaction (the sink reckons it only then)
    memory = backend._memory
    monkeypatch.setattr(backend, "_memory", lambda steps: refused.append(got := memory(steps)) or got)
    kg = open_spec(neo4j_store, create=True)
    sink = kg.need_sink()
    report = load_file(sink, path, chunk_bytes=64 << 20)  # one chunk
    assert len(refused) >= 2 and sink.tx_memory == min(cost // 2 for cost in refused), refused
    assert (report.names, kg.kg.stats()["entities"]) == (n, n)


@pytest.mark.neo4j
def test_driver_retry_warnings_stay_off_the_terminal_unless_logging_is_configured(neo4j_store, monkeypatch):
    import logging

    driver_log = logging.getLogger("neo4j")
    monkeypatch.setattr(driver_log, "level", logging.NOTSET)
    open_spec(neo4j_store)
    # neither a retried deadlock between load chunks nor the driver's own lines about a lost connection
    assert not driver_log.isEnabledFor(logging.ERROR)
    monkeypatch.setattr(driver_log, "level", logging.INFO)  # the application chose: left alone
    open_spec(neo4j_store)
    assert driver_log.level == logging.INFO


def test_the_fresh_load_repeat_filter_matches_a_set():
    from engine.backends.neo4j.sink import _HashSet

    rng = random.Random(5)
    seen, filter_ = set(), _HashSet()
    for chunk in range(300):
        rows = [(f"s{rng.randrange(2000)}", "p", f"o{rng.randrange(40)}") for _ in range(rng.randrange(0, 200))]
        if chunk % 50 == 7:
            rows = list(seen)[:50]  # a chunk of repeats only
        assert filter_.new(rows) == list(dict.fromkeys(r for r in rows if r not in seen))
        seen.update(rows)
        filter_.commit()
    assert sum(len(run) for run in filter_.runs) == len(seen) and len(filter_.runs) < 12


# -- runs and answers -----------------------------------------------------

def _ask(kg, question, method="tog", record=True):
    return ask(kg, question, get_pruner("hybrid"), get_reasoner("offline"),
               SearchConfig(method=method), (), record=record)


def test_runs_are_path_nodes_written_as_the_search_goes(fixture_store, monkeypatch):
    seen_live = []
    original = type(fixture_store.runs).record_step

    def watching(self, run_id, paths):
        original(self, run_id, paths)
        tree = self.get(run_id)  # readable before the run finishes
        seen_live.append((tree.info.status, len(tree.paths)))

    monkeypatch.setattr(type(fixture_store.runs), "record_step", watching)
    result = _ask(fixture_store, "who directed the films written by [Paul Author]")
    assert sorted(result.result.answer.names) == ["Mike Maker", "Rita Director"]
    assert seen_live and all(status == "running" for status, _ in seen_live)
    assert seen_live[-1][1] > seen_live[0][1]
    tree = fixture_store.runs.get(result.run_id)
    assert tree.info.status == "done" and sorted(tree.info.answer) == ["Mike Maker", "Rita Director"]
    roots = [p for p in tree.paths if p.parent is None]
    assert [r.entity for r in roots] == [iri("paul")]
    kept = [p for p in tree.paths if p.kept and p.depth == 2]
    assert {p.name for p in kept} >= {"Mike Maker", "Rita Director"}


def test_kept_flag_changes_and_literal_path_nodes(fixture_store):
    runs = fixture_store.runs
    run = RunInfo(id="r1", question="q", started="2026-01-01T00:00:00+00:00")
    runs.start(run)
    lit = f'"1994"^^<{XSD}gYear>'
    runs.record_step("r1", [PathRecord("p0", 0, iri("quiz"), "Quiz Game"),
                            PathRecord("p1", 1, lit, "1994", parent="p0", relation=iri("release_year"),
                                       direction="out", score=0.5, kept=True, literal=True)])
    runs.record_step("r1", [PathRecord("p1", 1, lit, "1994", parent="p0", relation=iri("release_year"),
                                       direction="out", score=0.5, kept=False, literal=True)])
    tree = runs.get("r1")
    assert [(p.id, p.kept, p.literal, p.parent) for p in tree.paths] == [("p0", True, False, None),
                                                                      ("p1", False, True, "p0")]
    assert tree.info.status == "running"
    with pytest.raises(UnknownRunError):
        runs.get("no-such-run")


def test_prune_removes_old_runs_and_nothing_else(fixture_store):
    runs = fixture_store.runs
    before = edges(fixture_store)
    old = RunInfo(id="old", question="q", started="2020-01-01T00:00:00+00:00")
    runs.start(old)
    runs.record_step("old", [PathRecord("p0", 0, iri("paul"), "Paul Author")])
    recent = _ask(fixture_store, "who directed the films written by [Paul Author]")
    assert prune(runs, "2025-01-01T00:00:00+00:00") == 1
    assert [r.id for r in runs.list()] == [recent.run_id]
    assert edges(fixture_store) == before
    assert fixture_store.kg.labels([iri("paul")]) == {iri("paul"): "Paul Author"}
    assert prune(runs, cutoff("0s")) == 1 and runs.list() == []


# -- parity: the same answers and run trees on both backends --------------

def _tree_shape(store, run_id):
    tree = store.runs.get(run_id)
    return [(p.id, p.depth, p.parent, p.entity, p.relation, p.direction, p.via,
             None if p.score is None else round(p.score, 6), p.kept) for p in tree.paths]


@pytest.mark.neo4j
@pytest.mark.parametrize("method", ["tog", "tog-r"])
def test_same_answers_and_run_trees_on_both_backends(neo4j_store, tmp_path, method):
    questions = list(read_questions(METAQA / "questions.txt"))
    stores = [open_spec(str(tmp_path / "store"), create=True), open_spec(neo4j_store, create=True)]
    reports = [load_file(kg.need_sink(), METAQA / "kb.txt") for kg in stores]
    assert [(r.triples, r.skipped, r.names) for r in reports] == [(1750 + 1368, 0, 1368)] * 2
    answered = 0
    for q in questions:
        results = [_ask(kg, q.question, method) for kg in stores]
        assert results[0].result.answer.names == results[1].result.answer.names, q.question
        assert _tree_shape(stores[0], results[0].run_id) == _tree_shape(stores[1], results[1].run_id), q.question
        answered += bool(results[0].result.answer.names)
    assert answered >= len(questions) - 2


# -- Neo4j specifics ------------------------------------------------------

@pytest.mark.neo4j
def test_every_cypher_file_compiles_on_the_server(neo4j_store):
    from importlib import resources

    import neo4j

    from engine.backends.neo4j.kg import HUBS_GET, hub_relations_text
    from engine.backends.neo4j.session import migrations
    from engine.queries import cypher, cypher_name, render_cypher

    names = [p.name[:-7] for p in resources.files("cypher").iterdir() if p.name.endswith(".cypher")]
    assert len(names) > 25
    # texts assembled from fragments, with a relation IRI that needs its quoting
    odd = cypher_name("urn:tog:r:a `quoted` type")
    assembled = {
        "hub_relations": hub_relations_text(["urn:tog:r:a `quoted` type"]),
        "hubs_get": HUBS_GET,
        "pair_degree": render_cypher("pair_degree", type=odd),
        **{name: render_cypher(name, type=odd) for name in (  # statements that read by one type
            "expand_out", "expand_in", "fact_exists", "facts_held", "fact_remove", "fact_add_entity",
            "fact_add_value", "load_edges_merge", "name_held")},
        "names_of": render_cypher("names_of", types="|".join((odd, cypher_name("urn:tog:r:plain")))),
        **{name: render_cypher(name, type=odd, then=cypher("sample_return")) for name in ("sample_out", "sample_in")},
        # ... and end two ways
        **{f"{name} kept here": render_cypher(name, type=odd, then=cypher("sample_kept_here"))
           for name in ("sample_out", "sample_in")},
        "schema_tails": render_cypher("schema_tails", branches="\nUNION ALL\n".join(
            render_cypher(f"schema_tails_{d}", type=odd, i=i).strip() for i, d in enumerate(("out", "in")))),
        "relation_counts": render_cypher("relation_counts", counts=", ".join(
            render_cypher("relation_count_each", type=t).strip() for t in (odd, cypher_name("urn:tog:r:plain")))),
    }
    fragments = {"hub_count_out", "hub_count_in", "relation_count_each", "kg_degree",  # inside the ones above
                 "schema_tails_out", "schema_tails_in", "sample_return", "sample_kept_here"}
    kg = open_spec(neo4j_store).kg.session
    with kg.driver.session() as s:
        for name in names + [name for name in assembled if name not in names]:
            if name in fragments:
                continue
            text = assembled.get(name) or resources.files("cypher").joinpath(f"{name}.cypher").read_text(encoding="utf-8")
            assert "{{" not in text, name
            if "IN TRANSACTIONS" not in text:
                s.run(neo4j.Query("EXPLAIN " + text)).consume()
    applied = [r["id"] for r in kg.driver.execute_query(
        "MATCH (m:TogMigration) RETURN m.id AS id ORDER BY m.applied, m.id").records]
    assert sorted(applied) == migrations() == sorted(migrations())


@pytest.mark.neo4j
def test_unreachable_server_and_bad_password_are_one_clear_line(neo4j_server, tog):
    uri, user, password = neo4j_server
    result = tog("info", "--store", "bolt://127.0.0.1:9")
    assert result.exit_code == 1 and "cannot reach Neo4j at bolt://127.0.0.1:9" in result.output
    assert "Traceback" not in result.output
    bad = uri.replace("://", f"://{user}:wrong-password@")
    result = tog("info", "--store", bad)
    assert result.exit_code == 1 and "refused the credentials" in result.output
    assert "wrong-password" not in result.output
    for spec in ("bolt://", "bolt://:7687", f"bolt://{user}:{password}@"):  # (the driver tried localhost:7687)
        result = tog("info", "--store", spec)
        assert result.exit_code == 1 and "it names no host (bolt://HOST:7687)" in result.output, result.output
        assert result.output.count("\n") == 1 and password not in result.output


@pytest.mark.neo4j
def test_lost_connection_mid_run_fails_the_command_and_the_run(neo4j_store, tmp_path, tog, monkeypatch):
    """A real TCP proxy between tog and Neo4j is cut during the search."""
    from proxy import TcpProxy

    from engine.backends.neo4j import Neo4jRunLog

    kg = open_spec(neo4j_store, create=True)
    load_file(kg.need_sink(), METAQA / "kb.txt")
    monkeypatch.setenv("TOG_NEO4J_RETRY_SECONDS", "1")
    monkeypatch.setenv("TOG_STATE_DIR", str(tmp_path / "state"))
    host, port = neo4j_store.split("://")[1].split(":")
    with TcpProxy(host, int(port)) as proxy:
        original = Neo4jRunLog.record_step

        def cut_after_first_step(self, run_id, paths):
            original(self, run_id, paths)
            proxy.cut()

        monkeypatch.setattr(Neo4jRunLog, "record_step", cut_after_first_step)
        result = tog("ask", "who directed the films written by [Paul Attanasio]",
                     "--store", f"bolt://127.0.0.1:{proxy.port}")
    assert result.exit_code == 1
    assert "lost the connection to Neo4j" in result.output or "cannot reach Neo4j" in result.output
    assert "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1, result.output  # ours alone
    (run,) = kg.runs.list()
    assert run.status == "running" and run.answer == []  # what the cut left in the database
    again = open_spec(neo4j_store)  # the next connection marks it failed
    (run,) = again.runs.list()
    assert run.status == "failed" and run.answer == []
    assert not (tmp_path / "state" / "neo4j-failed-runs.jsonl").exists()


@pytest.mark.neo4j
def test_cli_on_neo4j(neo4j_store, tog):
    assert tog("load", METAQA / "kb.txt", "--store", neo4j_store).exit_code == 0
    result = tog("ask", "who directed the films written by [Paul Attanasio]", "--store", neo4j_store)
    assert result.exit_code == 0, result.output
    assert "Mike Newell" in result.output and "Robert Redford" in result.output
    run_id = result.output.rsplit("run: ", 1)[1].split()[0]
    shown = tog("runs", "show", run_id, "--store", neo4j_store, "--cypher")
    assert shown.exit_code == 0 and f':param run => "{run_id}"' in shown.output
    assert "MATCH (r:TogRun {id: $run})" in shown.output
    info = tog("info", "--store", neo4j_store)
    assert "edges: 1,750" in info.output and "runs: 1" in info.output
    assert "loads: 1" in info.output and "kb.txt: 3,118 triples read, 1,368 names, 0 lines skipped, complete" in info.output


def test_the_relations_totals_take_a_few_round_trips_however_many_relations(store_spec, tmp_path, tog):
    """250 relations are counted in a few statements (Neo4j: a batch of
    types per statement, each from its count store; embedded: one pass),
    each total exact."""
    lines = [f"e{k}_{i}|rel{k}|t{k}_{i}" for k in range(250) for i in range(k % 7 + 1)]
    (tmp_path / "many.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert tog("load", tmp_path / "many.txt", "--store", store_spec).exit_code == 0
    g = open_spec(store_spec)
    before = g.kg.meter.lookups
    got = {r.rsplit(":", 1)[1]: n for r, n in g.kg.relation_counts() if r.startswith("urn:tog:r:")}
    assert got == {f"rel{k}": k % 7 + 1 for k in range(250)}
    assert g.kg.meter.lookups - before <= 3


def test_cypher_flag_needs_a_neo4j_store(tog, loaded_store):
    assert tog("ask", "who wrote [Quiz Game]", "--store", loaded_store).exit_code == 0
    result = tog("runs", "show", "last", "--store", loaded_store, "--cypher")
    assert result.exit_code == 1 and "--cypher draws runs stored in Neo4j" in result.output


def test_unknown_store_scheme(tog):
    result = tog("info", "--store", "mongodb://localhost:27017")
    assert result.exit_code == 1 and "unknown store" in result.output


def test_store_error_type():
    from engine.store import open_store

    with pytest.raises(StoreError):
        open_store("ftp://x")


def test_docker_compose_offers_neo4j_5_with_a_healthcheck():
    import yaml

    from conftest import REPO

    compose = yaml.safe_load((REPO / "docker" / "docker-compose.yml").read_text(encoding="utf-8"))
    neo4j = compose["services"]["neo4j"]
    assert neo4j["image"].startswith("neo4j:5.")
    assert "healthcheck" in neo4j and any(v.startswith("neo4j-data:") for v in neo4j["volumes"])
    assert compose["services"]["tog"]["profiles"] == ["engine"]
    assert (REPO / compose["services"]["tog"]["build"]["dockerfile"]).exists()


# -- offline bulk import ----------------------------------------------------

def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def launcher_env(tmp_path):
    """Environment for a second, private launcher/neo4j-server (its own home and ports)."""
    import os
    import shutil

    from conftest import REPO

    if not (REPO / "launcher" / "target" / "lib").is_dir() or not shutil.which("java"):
        if os.environ.get("TOG_REQUIRE_NEO4J"):
            pytest.fail("launcher/target/lib or java is missing (launcher/neo4j-server start builds it)")
        pytest.skip("needs the Maven-built launcher (launcher/neo4j-server start) and Java")
    env = dict(os.environ, TOG_NEO4J_HOME=str(tmp_path / "neo4j-home"), NEO4J_BOLT_PORT=str(_free_port()),
               NEO4J_HTTP_PORT=str(_free_port()), NEO4J_HEAP="512m", NEO4J_PAGECACHE="128m",
               NEO4J_PASSWORD="import-test-pw", NEO4J_WARM="1")
    tog = Path(sys.executable).with_name("tog")  # this environment's tog warms the server up
    if tog.exists():
        env["TOG_BIN"] = str(tog)
    yield env
    launcher(env, "stop")


def launcher(env, *args):
    import subprocess

    from conftest import REPO

    return subprocess.run([str(REPO / "launcher" / "neo4j-server"), *args], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.neo4j
def test_offline_import_builds_the_same_database_as_an_online_load(neo4j_store, launcher_env, tmp_path, tog,
                                                                   monkeypatch):
    from engine.backends.neo4j import open_neo4j

    kg_file = tmp_path / "kg.nt"
    kg_file.write_text(KG_NT + "this line is not RDF\n", encoding="utf-8")
    files = [kg_file, METAQA / "kb.txt"]
    out = tmp_path / "csv"
    exported = tog("export-neo4j", *files, "--out", out)
    assert exported.exit_code == 0, exported.output
    assert "1 lines skipped" in exported.output and "line " in exported.output
    again = tog("export-neo4j", *files, "--out", out)
    assert again.exit_code == 1 and "not empty" in again.output

    done = launcher(launcher_env, "import", out)  # a new home: no database yet
    assert done.returncode == 0, done.stderr
    started = launcher(launcher_env, "start")  # which warms the server up with tog warm, recording nothing
    assert started.returncode == 0, started.stderr
    assert "warmed: 8 questions" in started.stdout and "warm-up failed" not in started.stderr, started.stdout
    imported = open_neo4j(f"bolt://127.0.0.1:{launcher_env['NEO4J_BOLT_PORT']}", user="neo4j",
                          password=launcher_env["NEO4J_PASSWORD"])
    uri = f"bolt://neo4j:{launcher_env['NEO4J_PASSWORD']}@127.0.0.1:{launcher_env['NEO4J_BOLT_PORT']}"
    question = next(iter(read_questions(METAQA / "questions.txt"))).question
    warm_asked = tog("ask", question, "--store", uri, "--no-record")  # the launcher warmed it: no note
    assert warm_asked.exit_code == 0 and "warmed up" not in warm_asked.stderr, warm_asked.output
    try:
        assert not imported.need_runs().list()
        online = open_spec(neo4j_store, create=True)
        for f in files:
            load_file(online.need_sink(), f)
        warmed = imported.stats()  # the warm-up's questions made look-ahead schemas, as questions do
        assert warmed.pop("relations with a look-ahead schema") > 0
        loaded = online.stats()
        assert loaded.pop("relations with a look-ahead schema") == 0
        assert same_kg(warmed) == same_kg(loaded)
        assert imported.stats()["values"] > 0 and imported.stats()["names"] > 0
        ids = [iri("paul"), fb("m.film1"), fb("m.cvt1"), fb("m.onlyfr"), iri("nobody")]
        assert imported.kg.labels(ids) == online.kg.labels(ids)
        keys = ["paul author", "harbor lights", "paul attanasio", "quiz show"]
        assert imported.kg.search_entities(keys) == online.kg.search_entities(keys)
        assert imported.kg.search_entities(keys)["paul attanasio"]
        for q in list(read_questions(METAQA / "questions.txt"))[:8]:
            assert _ask(imported, q.question).result.answer.names == _ask(online, q.question).result.answer.names
        report = load_file(imported.need_sink(), METAQA / "kb.txt")  # the import recorded complete loads
        assert report.already_complete and report.triples == 1750 + 1368
    finally:
        imported.close()
    # the import refuses while the server runs, and replaces a database only when told to
    busy = launcher(launcher_env, "import", out, "--replace")
    assert busy.returncode != 0 and "stop it first" in busy.stderr
    assert launcher(launcher_env, "stop").returncode == 0
    refused = launcher(launcher_env, "import", out)
    assert refused.returncode != 0 and "--replace" in refused.stderr
    # started again without a warm-up: a question says so in one line, until `tog warm`
    assert launcher(dict(launcher_env, NEO4J_WARM="0"), "start").returncode == 0
    cold = tog("ask", question, "--store", uri, "--no-record")
    assert cold.exit_code == 0 and cold.stderr.count("has not been warmed up since it started") == 1, cold.output
    assert "import-test-pw" not in cold.output + cold.stderr and "`tog warm --store bolt://127.0.0.1:" in cold.stderr
    evaluated = tog("eval", METAQA / "questions.txt", "--limit", "1", "--store", uri, "--no-record",
                    "--out", tmp_path / "cold.jsonl")  # so does an eval, once
    assert evaluated.exit_code == 0 and evaluated.stderr.count("has not been warmed up") == 1, evaluated.output
    assert tog("warm", "--store", uri, "--questions", "2").exit_code == 0
    warmed_again = tog("ask", question, "--store", uri, "--no-record")
    assert warmed_again.exit_code == 0 and "warmed up" not in warmed_again.stderr, warmed_again.output


@pytest.mark.neo4j
def test_questions_on_neo4j_say_in_one_line_that_a_load_has_not_finished(neo4j_store, tmp_path, tog):
    """A Neo4j load that runs, or that stopped before its end, leaves the
    samples of the pairs it grew to a load's end: until one finishes, `tog
    ask` and `tog eval` say so, once each, without credentials, and which
    of the two it is."""
    from engine.backends.neo4j.sink import Neo4jSink

    question = next(iter(read_questions(METAQA / "questions.txt"))).question
    note = "stopped before its end (killed, or failed): running it again resumes it"
    assert tog("load", METAQA / "kb.txt", "--store", neo4j_store, "--no-progress").exit_code == 0
    done = tog("ask", question, "--store", neo4j_store, "--no-record")
    assert done.exit_code == 0 and note not in done.stderr, done.output
    # a load that stops on a bad line (--max-errors 0) writes what came before it, and does not finish
    bad = write_nt(tmp_path / "bad.nt", [f"<{iri('a')}> <{iri('r')}> <{iri('b')}> .", "not a triple"])
    stopped = tog("load", bad, "--store", neo4j_store, "--no-progress", "--max-errors", "0")
    assert stopped.exit_code != 0, stopped.output
    asked = tog("ask", question, "--store", neo4j_store, "--no-record")
    assert asked.exit_code == 0 and asked.stderr.count(note) == 1, asked.output
    line = next(line for line in asked.stderr.splitlines() if note in line)  # one line, naming the store
    assert line.startswith(f"note: a load into {neo4j_store} stopped") and line.endswith("(once)")
    assert os.environ["NEO4J_PASSWORD"] not in asked.stderr
    evaluated = tog("eval", METAQA / "questions.txt", "--limit", "1", "--store", neo4j_store, "--no-record",
                    "--out", tmp_path / "out.jsonl")
    assert evaluated.exit_code == 0 and evaluated.stderr.count(note) == 1, evaluated.output
    # a load that finishes ends it ...
    good = write_nt(tmp_path / "good.nt", [f"<{iri('a')}> <{iri('r')}> <{iri('b')}> ."])
    assert tog("load", good, "--store", neo4j_store, "--no-progress").exit_code == 0
    after = tog("ask", question, "--store", neo4j_store, "--no-record")
    assert after.exit_code == 0 and "note: a load into" not in after.stderr, after.output
    # ... and one that is running (begun, not ended) is told as well
    store = open_spec(neo4j_store)
    running = Neo4jSink(store.kg.session)
    running.begin()
    try:
        meanwhile = tog("ask", question, "--store", neo4j_store, "--no-record")
        assert meanwhile.exit_code == 0 and note not in meanwhile.stderr, meanwhile.output
        assert meanwhile.stderr.count(f"note: a load into {neo4j_store} is running; answers may change") == 1
    finally:
        running.end()


def test_relations_named_in_the_kg_are_shown_by_their_names(store_spec, tmp_path):
    kb = write_nt(tmp_path / "wd.nt", [
        '<http://www.wikidata.org/entity/Q1> <http://www.w3.org/2000/01/rdf-schema#label> "Ada Example"@en .',
        '<http://www.wikidata.org/entity/Q2> <http://www.w3.org/2000/01/rdf-schema#label> "Testville"@en .',
        '<http://www.wikidata.org/entity/Q1> <http://www.wikidata.org/prop/direct/P19> '
        '<http://www.wikidata.org/entity/Q2> .',
        '<http://www.wikidata.org/prop/direct/P19> <http://www.w3.org/2000/01/rdf-schema#label> "place of birth"@en .',
    ])
    kg = open_spec(store_spec, create=True)
    load_file(kg.need_sink(), kb)
    (rel,) = kg.kg.relations(["http://www.wikidata.org/entity/Q1"])["http://www.wikidata.org/entity/Q1"]
    assert rel.text == "place of birth" and rel == Relation("http://www.wikidata.org/prop/direct/P19", "out")
    result = _ask(kg, "what is the place of birth of [Ada Example]")
    assert result.result.answer.names == ["Testville"]
    assert [p.verbalise() for p in result.result.supporting] == ["Ada Example -> place of birth -> Testville"]


def test_a_term_too_long_to_index_is_a_bad_line_and_a_long_name_is_kept_unlinked(tog, store_spec, tmp_path):
    """Neo4j cannot index ids over ~8 KB: such a statement is a counted bad
    line (on every backend that has the limit), never the end of the load;
    a name that long is kept (shown) but not indexed for linking."""
    long_iri = "urn:e:" + "x" * 9000
    long_name = " ".join(["word"] * 2000)
    nt = tmp_path / "big.nt"
    nt.write_text("\n".join([
        f'<urn:e:a> <{RDFS_LABEL}> "{long_name}" .',
        f'<urn:e:b> <{RDFS_LABEL}> "Bee" .',
        f'<urn:e:b> <urn:r:says> "{"y" * 9000}" .',
        f'<{long_iri}> <urn:r:knows> <urn:e:b> .',
        '<urn:e:a> <urn:r:knows> <urn:e:b> .',
    ]) + "\n", encoding="utf-8")
    tsv = tmp_path / "more.tsv"
    tsv.write_text(f"Cee\tknows\tBee\n{'z' * 9000}\tknows\tBee\n{'字' * 1000}\tknows\tBee\n", encoding="utf-8")
    loaded = tog("load", nt, tsv, "--store", store_spec)
    assert loaded.exit_code == 0 and no_traceback(loaded), loaded.output
    neo4j = store_spec.startswith("bolt")
    nt_line, tsv_line = (l for l in loaded.output.splitlines() if not l.startswith("  "))
    assert f"{2 if neo4j else 0} lines skipped" in nt_line and "(1 too long to index: shown, not linked)" in nt_line
    assert f"{2 if neo4j else 0} lines skipped" in tsv_line  # 1,000 CJK characters quote to 9,000 bytes
    if neo4j:
        assert "  line 3: its object is 9," in loaded.output and "  line 4: its subject is 9," in loaded.output
        assert "keeps at most 8,000" in loaded.output
    store = open_spec(store_spec)
    assert store.kg.labels(["urn:e:a"]).get("urn:e:a") == long_name, "the long name is not shown"
    assert store.kg.search_entities(["bee"])["bee"]
    assert not store.kg.search_entities([long_name]).get(long_name), "the long name is linked"
    store.close()
    again = tog("load", nt, "--store", store_spec)
    assert again.exit_code == 0 and "already loaded" in again.output


@pytest.mark.neo4j
def test_runs_recorded_before_captions_get_them_from_a_migration(neo4j_store, tog):
    import neo4j

    assert tog("load", METAQA / "kb.txt", "--store", neo4j_store).exit_code == 0
    asked = tog("ask", "who directed [Quiz Show]", "--store", neo4j_store, "--json")
    assert asked.exit_code == 0, asked.output
    run = json.loads(asked.output)["run"]
    auth = (os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"])
    captions = "MATCH (n:TogPath {run: $run}) OPTIONAL MATCH (n)-[e:PARENT]->() RETURN n.caption AS c, e.relation AS r"
    with neo4j.GraphDatabase.driver(neo4j_store, auth=auth) as driver:
        now = sorted((r["c"], r["r"]) for r in driver.execute_query(captions, run=run).records)
        assert ("Quiz Show (topic)", None) in now and any(r == "directed by" for _, r in now)
        # as a store made before captions: none on the nodes or edges, the migration not applied
        driver.execute_query("MATCH (n:TogPath) REMOVE n.caption WITH n MATCH (n)-[e:PARENT]->() REMOVE e.relation")
        driver.execute_query("MATCH (m:TogMigration {id: '014_run_captions'}) DELETE m")
    open_spec(neo4j_store)  # opening migrates
    with neo4j.GraphDatabase.driver(neo4j_store, auth=auth) as driver:
        again = sorted((r["c"], r["r"]) for r in driver.execute_query(captions, run=run).records)
    assert again == now


@pytest.mark.neo4j
def test_the_saved_browser_query_draws_a_root_per_topic(neo4j_store, tog, tmp_path):
    import neo4j
    from test_learning import clubs

    src, both = clubs(tmp_path)
    assert tog("load", src, "--store", neo4j_store, "--format", "tsv").exit_code == 0
    asked = tog("ask", "which player of northfield_rovers was born in eastby", "--store", neo4j_store, "--json")
    assert asked.exit_code == 0, asked.output
    run = json.loads(asked.output)["run"]
    query = tog("runs", "show", run, "--store", neo4j_store, "--cypher").output.split("\n\n")[2]
    auth = (os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"])
    with neo4j.GraphDatabase.driver(neo4j_store, auth=auth) as driver:
        records = driver.execute_query(query, run=run).records
    roots = {r["root"].end_node["caption"] for r in records}
    assert roots == {"northfield_rovers (topic)", "eastby (topic)"}
    answer = {n["caption"].rsplit(" ", 1)[0] for r in records for n in r["tree"].nodes if "Answer" in n.labels}
    assert both in answer


def test_warm_asks_offline_questions_from_named_entities_and_records_nothing(tog, store_spec, tmp_path):
    """`tog warm` (for a server just started): a few offline questions from
    named entities of the KG, found by a bounded read from a seeded place
    among the names (from the first names when fewer lie past it); every
    other one links the entity's name, or, when too many entities share it,
    is asked by its IRI. Nothing is recorded. An empty KG has nothing to warm."""
    made = open_spec(store_spec, create=True)
    if made.warmth is not None:  # a server's, as if it had started since its last warm-up
        from engine.backends.neo4j.warmth import WARMED

        made.kg.session.run("setting_set", write=True, key=WARMED, value='"an earlier start"')
        assert made.warmth.cold_since()
    made.close()
    empty = tog("warm", "--store", store_spec)
    assert empty.exit_code == 0 and no_traceback(empty), empty.output
    assert "nothing to warm" in empty.output
    if made.warmth is not None:  # warmed all the same: a question would say "run tog warm" again in vain
        assert open_spec(store_spec).warmth.cold_since() is None
    shared = [f"<{iri(f's{i}')}> <{iri('next')}> <{iri(f's{i + 1}')}> ." for i in range(120)]
    shared += [f'<{iri(f"s{i}")}> <{RDFS_LABEL}> "Same" .' for i in range(121)]  # more than NAME_MATCHES share it
    shared += [f"<{iri('unnamed')}> <{iri('next')}> <{iri('s0')}> ."]
    store = open_spec(store_spec)
    assert load_file(store.need_sink(), write_nt(tmp_path / "s.nt", shared)).skipped == 0
    kg = store.kg
    first, later = kg.named_entities(4), kg.named_entities(4, skip=4)
    assert len(set(first)) == 4 and len(set(later)) == 4 and not set(first) & set(later)
    assert set(first + later) <= set(kg.labels(first + later)) and iri("unnamed") not in first + later
    assert kg.named_entities(4, skip=10_000) == first  # past the names: from the first
    store.close()
    done = tog("warm", "--store", store_spec, "--questions", "6")
    assert done.exit_code == 0 and no_traceback(done), done.output
    assert "warmed: 6 questions" in done.output
    assert "3 asked by IRI, their names not linking to one entity" in done.output
    assert done.stderr.count(". <" + iri("")) == 6
    runs = tog("runs", "list", "--store", store_spec)
    assert runs.exit_code == 0 and "no runs yet" in runs.output

    unique = tmp_path / "unique"  # names that link: every other question starts from one
    lines = [f"<{iri(f'w{i}')}> <{iri('next')}> <{iri(f'w{i + 1}')}> ." for i in range(12)]
    lines += [f'<{iri(f"w{i}")}> <{RDFS_LABEL}> "Warm {chr(65 + i)}" .' for i in range(12)]
    assert tog("load", write_nt(tmp_path / "w.nt", lines), "--store", unique).exit_code == 0
    from engine.warmup import warm

    with open_spec(str(unique)) as s:
        asked = warm(s, 4, seed=1)
    assert len(set(asked.entities)) == 4 and len(asked.kg_seconds) == 4 and asked.unlinked == 0
    one = tog("warm", "--store", unique, "--questions", "1")
    assert one.exit_code == 0 and "warmed: 1 question in " in one.output, one.output
    assert "no runs yet" in tog("runs", "list", "--store", unique).output


def test_a_store_an_older_tog_loaded_takes_its_stopped_load_for_one_killed(tmp_path, tog):
    """An older tog's checkpoints do not tell a load that stopped by itself:
    a view reads them as they are, the writer adds the column, and its
    stopped load blocks a correction as a killed one would."""
    import sqlite3

    from engine.store import open_store

    store = tmp_path / "old"
    broken = write_nt(tmp_path / "broken.nt", _lines(20) + ["not a triple"] * 3)
    assert tog("load", broken, "--store", store, "--no-progress", "--max-errors", "1").exit_code == 1
    with sqlite3.connect(store / "index.sqlite") as db:  # as an older tog made the table
        db.execute("ALTER TABLE loads DROP COLUMN exact")
        db.execute("ALTER TABLE loads DROP COLUMN names")
    view = open_store(store, read_only=True)
    try:
        (seen,) = view.kg.db.index.checkpoints()
    finally:
        view.close()
    assert (seen["lines"], seen["complete"], seen["exact"], seen["names"]) == (23, False, False, 0)
    writer = open_store(store)
    try:
        (old,) = writer.need_sink().loads()
    finally:
        writer.close()
    assert old.lines == 23 and not old.complete and not old.exact
    said = tog("correct", "--remove", "|".join(f"<{x}>" for x in _fact(3)), "--reason", "r", "--store", store)
    assert said.exit_code == 1 and "stopped at line 23 before its end" in said.output, said.output
    with sqlite3.connect(store / "index.sqlite") as db:
        assert "exact" in {row[1] for row in db.execute("PRAGMA table_info(loads)")}


def test_a_load_that_writes_back_facts_corrections_took_out_says_so(store_spec, tmp_path, tog):
    """A fact an active correction took out, which a later load writes back,
    is named in one line after the load (a silent return would undo the
    correction unseen); facts a later correction put back, or whose
    correction was reverted, are not."""
    year = '"1994"^^<http://www.w3.org/2001/XMLSchema#gYear>'
    value = f"<{iri('s1')}> <{iri('year')}> {year} ."
    others = [value, f"<{iri('s4')}> <{iri('knows')}> <{iri('s5')}> ."]  # (s4 and o4 stay when line 4 goes)
    first = write_nt(tmp_path / "first.nt", _lines(20) + _lines(20, 50) + others)
    assert tog("load", first, "--store", store_spec, "--no-progress").exit_code == 0

    def fact(i: int) -> str:
        return "|".join(f"<{x}>" for x in _fact(i))

    def corrected(*args: str) -> str:
        said = tog("correct", *args, "--reason", "r", "--store", store_spec)
        assert said.exit_code == 0, said.output
        return re.search(r"correction (\S+):", said.output).group(1)

    c1 = corrected("--remove", fact(3), "--remove", fact(4), "--remove", f"<{iri('s1')}>|<{iri('year')}>|{year}")
    corrected("--add", fact(4))  # put back by a later correction
    c3 = corrected("--remove", fact(5))
    assert tog("corrections", "revert", c3, "--store", store_spec).exit_code == 0
    # the next file holds 3, 4, 5 and the value again, with new lines
    more = write_nt(tmp_path / "more.nt", _lines(3, 3) + _lines(10, 100) + [value])
    said = tog("load", more, "--store", store_spec, "--no-progress")
    assert said.exit_code == 0 and no_traceback(said), said.output
    notes = [x for x in said.stderr.splitlines() if "corrections took out" in x]
    assert len(notes) == 1, said.stderr
    assert notes[0].startswith("note: 2 facts that corrections took out are in the KG again"), notes
    assert f"the first <{iri('s3')}>|<{iri('r3')}>|<{iri('o3')}> (correction {c1})" in notes[0], notes
    assert "tog correct --remove" in notes[0]
    assert tog("load", more, "--store", store_spec, "--no-progress").stderr.count("took out") == 0  # wrote nothing
    c5 = corrected("--remove", fact(3))
    # only what this load wrote back: the value, back since the last load, is not said again
    again = tog("load", write_nt(tmp_path / "last.nt", _lines(3, 3)), "--store", store_spec, "--no-progress")
    assert again.stderr.count("note: a fact that a correction took out is in the KG again (the load wrote it") == 1
    assert f"back): <{iri('s3')}>|<{iri('r3')}>|<{iri('o3')}> (correction {c5});" in again.stderr, again.stderr


def test_a_load_stopped_before_its_first_checkpoint_is_known_as_unfinished(store_spec, tmp_path, monkeypatch,
                                                                         tog):
    """A load writes before its first checkpoint: the embedded store reads a
    whole N-Triples file in one bulk call, and a Turtle file's first batch is
    written before its checkpoint. Stopped there, the load is known as
    unfinished all the same, and a correction is refused until it is run
    again; so is one after a re-run, stopped as early, of a load that had
    stopped by itself at a checkpoint."""
    turtle = tmp_path / "few.ttl"
    turtle.write_text("".join(f"<{s}> <{r}> <{o}> .\n" for s, r, o in map(_fact, range(30))), encoding="utf-8")
    s = open_spec(store_spec, create=True)
    sink = s.need_sink()
    write = type(sink).write

    def dying(self, quads):
        write(self, quads)
        raise _Killed  # as if the process died right after its first write

    monkeypatch.setattr(type(sink), "write", dying)
    with pytest.raises(_Killed):
        load_file(sink, turtle)
    monkeypatch.undo()
    s.close()
    fact = "|".join(f"<{x}>" for x in _fact(3))
    said = tog("correct", "--remove", fact, "--reason", "r", "--store", store_spec)
    assert said.exit_code == 1 and "few.ttl stopped at statement 0 before its end" in said.output, said.output
    assert tog("load", turtle, "--store", store_spec, "--no-progress").exit_code == 0
    assert tog("correct", "--remove", fact, "--reason", "r", "--store", store_spec).exit_code == 0

    # a load that stopped by itself, run again and stopped before its next checkpoint
    from engine.errors import LoadError

    broken = write_nt(tmp_path / "broken.nt", _lines(50, who="b") + ["not a triple"] * 3 + _lines(50, 50, "b"))
    s = open_spec(store_spec)
    sink = s.need_sink()
    with pytest.raises(LoadError):
        load_file(sink, broken, max_errors=1, chunk_bytes=2048, segment_lines=100)
    (stopped,) = [c for c in sink.loads() if not c.complete]
    assert stopped.exact and 53 <= stopped.lines < 103
    commit = type(sink).commit

    def lost(self, source, checkpoint):
        raise _Killed  # its writes are in, its checkpoint is not

    monkeypatch.setattr(type(sink), "commit", lost)
    with pytest.raises(_Killed):
        load_file(sink, broken, max_errors=10, chunk_bytes=2048, segment_lines=100)
    monkeypatch.setattr(type(sink), "commit", commit)
    s.close()
    said = tog("correct", "--remove", "|".join(f"<{x}>" for x in _fact(7, "b")), "--reason", "r", "--store", store_spec)
    assert said.exit_code == 1 and f"broken.nt stopped at line {stopped.lines} before its end" in said.output, \
        said.output


def test_a_whole_file_bulk_load_stopped_before_its_checkpoint_is_unfinished(tmp_path, monkeypatch, tog):
    """The embedded store's fast path reads a plain N-Triples file in one
    bulk call, with one checkpoint at its end: killed inside it, the store
    holds the file's facts, and the load is still known as unfinished."""
    from engine.backends.oxigraph.sink import OxigraphNativeLoader

    path = write_nt(tmp_path / "whole.nt", _lines(200))
    s = open_spec(str(tmp_path / "store"), create=True)
    load_path = OxigraphNativeLoader.load_path

    def dying(self, file):
        load_path(self, file)
        raise _Killed

    monkeypatch.setattr(OxigraphNativeLoader, "load_path", dying)
    with pytest.raises(_Killed):
        load_file(s.need_sink(), path)
    monkeypatch.undo()
    assert s.need_corrections().has_fact(_fact(3))  # written, with no checkpoint past line 0
    s.close()
    said = tog("correct", "--remove", "|".join(f"<{x}>" for x in _fact(3)), "--reason", "r",
               "--store", tmp_path / "store")
    assert said.exit_code == 1 and "whole.nt stopped at line 0 before its end" in said.output, said.output
