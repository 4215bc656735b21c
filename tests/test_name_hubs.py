"""A name that thousands of entities share (Wikidata has thousands of
articles titled "Editorial"; common personal names are shared by hundreds)
is a hub of the name index. It is looked up for at most
NAME_MATCHES + 1 entities on every backend, by the store's own count of
what it read: linking starts from the question's other names, a topic given
by such a name is one clear error, `tog entity` lists some of them, and a
load that adds one more of them finds its row by its entity, not among
all the others. A name shared by exactly NAME_MATCHES entities is still
taken whole. (The SPARQL endpoint's side is in ``test_sparql.py``.)"""

from __future__ import annotations

import pytest
from conftest import RDFS_LABEL, iri, no_traceback, write_nt

from engine.errors import CommonNameError, QuestionError
from engine.graph import NAME_MATCHES
from engine.linking import link, resolve

SHARED = 200_000  # entities named "Editorial"
QUESTION = "which journal published the editorial that Alice Quarrington wrote"


def small_lines() -> list[str]:
    """Everything but the shared names: Alice wrote editorial 7, published
    in journal 7; NAME_MATCHES prefaces, each part of its own book."""
    lines = [f'<{iri("alice")}> <{RDFS_LABEL}> "Alice Quarrington" .',
             f"<{iri('alice')}> <{iri('wrote')}> <{iri('ed7')}> ."]
    lines += [f"<{iri(f'ed{i}')}> <{iri('published_in')}> <{iri(f'journal{i % 50}')}> ." for i in range(0, 1000)]
    lines += [f'<{iri(f"journal{j}")}> <{RDFS_LABEL}> "Journal {j}" .' for j in range(50)]
    lines += [f'<{iri(f"pref{i}")}> <{RDFS_LABEL}> "Preface" .' for i in range(NAME_MATCHES)]
    lines += [f"<{iri(f'pref{i}')}> <{iri('part_of')}> <{iri(f'book{i}')}> ." for i in range(NAME_MATCHES)]
    return lines


def shared_lines() -> list[str]:
    return [f'<{iri(f"ed{i}")}> <{RDFS_LABEL}> "Editorial" .' for i in range(SHARED)]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """The graph in an embedded store, loaded once (and closed)."""
    from engine.store import open_store
    from loaders.load import load_file

    folder = tmp_path_factory.mktemp("namehub")
    with open_store(folder / "store", create=True) as store:
        report = load_file(store.need_sink(), write_nt(folder / "g.nt", shared_lines() + small_lines()))
    assert report.skipped == 0
    return folder


@pytest.fixture
def store(loaded):
    from conftest import open_graph

    return open_graph(loaded / "store")


def _expect_lookup(found: dict) -> None:
    """What every backend's lookup must give for the three names."""
    assert [n.id for n in found["alice quarrington"]] == [iri("alice")]
    assert [n.id for n in found["preface"]] == sorted(iri(f"pref{i}") for i in range(NAME_MATCHES))
    assert {n.name for n in found["preface"]} == {"Preface"}
    editorials = found["editorial"]
    assert len(editorials) == NAME_MATCHES + 1 and {n.name for n in editorials} == {"Editorial"}
    assert [n.id for n in editorials] == sorted(n.id for n in editorials)
    assert {n.id for n in editorials} <= {iri(f"ed{i}") for i in range(SHARED)}


def _expect_linking(kg) -> None:
    assert link(kg, QUESTION) == resolve(kg, ["Alice Quarrington"])  # the common name is no topic
    assert len(link(kg, "which book has the preface")) == NAME_MATCHES  # at the cap: every one of them
    with pytest.raises(QuestionError, match=rf"'editorial' names more than {NAME_MATCHES} entities"):
        link(kg, "which journal published the editorial")
    with pytest.raises(CommonNameError, match=r"'Editorial' names more than .* give the one you mean by its IRI") as e:
        resolve(kg, ["Alice Quarrington", "Editorial"])
    assert len(e.value.nodes) == NAME_MATCHES + 1


def test_a_name_thousands_share_is_read_no_further_than_the_cap(store):
    """SQLite's own count of the steps the lookup ran (a progress handler
    called every 100 virtual-machine steps): the bounded lookup of the
    shared name against reading its rows whole."""
    kg = store.kg
    db = kg.db.index.db
    steps = [0]
    db.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1) or 0, 100)
    try:
        found = kg.search_entities(["editorial", "alice quarrington", "preface", "nobody at all"])
        bounded, steps[0] = steps[0], 0
        whole = len(db.execute("SELECT entity FROM names WHERE key = ?", ("editorial",)).fetchall())
        read_whole = steps[0]
    finally:
        db.set_progress_handler(None, 0)
    _expect_lookup(found)
    assert "nobody at all" not in found
    assert whole == SHARED and read_whole >= SHARED // 100 and bounded < read_whole / 50, (bounded, read_whole)
    _expect_linking(kg)


def test_the_cli_answers_from_the_other_names_and_explains_the_common_one(loaded, tog):
    spec = str(loaded / "store")
    asked = tog("ask", QUESTION, "--store", spec, "--no-record")
    assert asked.exit_code == 0, asked.output
    assert "answer: Journal 7" in asked.output
    for question in ("which journal published the editorial", "which journal published [Editorial]"):
        failed = tog("ask", question, "--store", spec, "--no-record")
        assert failed.exit_code == 1 and no_traceback(failed)
        assert f"names more than {NAME_MATCHES} entities" in failed.output and len(failed.output.splitlines()) == 1
    listed = tog("entity", "Editorial", "--store", spec)
    assert listed.exit_code == 0, listed.output
    assert f"'Editorial' names more than {NAME_MATCHES} entities; {NAME_MATCHES} of them:" in listed.stderr
    assert listed.stdout.count("Editorial  <") == NAME_MATCHES


@pytest.mark.neo4j
def test_neo4j_reads_a_name_thousands_share_no_further_than_the_cap(neo4j_store, tmp_path):
    """The shared names are written straight into the database (a load of
    them all is the same rows and takes a minute); the rest comes from a
    load, which adds more of them by merging (the database is not empty).
    Database hits by Neo4j's PROFILE. The statement that adds name keys is
    planned first on the empty database, as a first load would: planned
    again only once the server sees its statistics changed, it must not
    read the shared name whole meanwhile."""
    import os

    import neo4j
    from conftest import open_spec
    from test_hubs import _db_hits

    from engine.graph import name_key
    from engine.queries import cypher
    from loaders.load import load_file

    auth = (os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"])
    rows = [[name_key("Editorial"), iri(f"ed{i}")] for i in range(SHARED + 20, SHARED + 30)]  # ten more names
    with neo4j.GraphDatabase.driver(neo4j_store, auth=auth) as driver, driver.session() as s:
        store = open_spec(neo4j_store, create=True)  # the schema first (its migrations)
        s.run("UNWIND range(1, 50) AS i CREATE (:TogName {key: 'key ' + i, entity: 'e' + i})").consume()
        s.run("CALL db.resampleOutdatedIndexes()").consume()
        s.run("CALL db.clearQueryCaches()").consume()  # (planned afresh, on 50 names of their own)
        assert _db_hits(neo4j_store, cypher("load_name_keys"), {"rows": rows, "source": "x"}) < 100 * len(rows)
        s.run("MATCH (n:TogName) DELETE n").consume()
        s.run("UNWIND range(0, $n - 1) AS i CALL (i) { CREATE (:Entity {id: $ns + 'ed' + i, name: 'Editorial'}), "
              "(:TogName {key: 'editorial', entity: $ns + 'ed' + i, source: 'direct'}) } IN TRANSACTIONS OF 20000 ROWS",
              n=SHARED, ns=iri("")).consume()
    early = _db_hits(neo4j_store, cypher("load_name_keys"), {"rows": rows, "source": "x"})
    assert early < 100 * len(rows), early
    more = [f'<{iri(f"ed{i}")}> <{RDFS_LABEL}> "Editorial" .' for i in range(SHARED, SHARED + 20)]
    report = load_file(store.need_sink(), write_nt(tmp_path / "small.nt", small_lines() + more))
    assert report.skipped == 0
    kg = store.kg
    _expect_lookup(kg.search_entities(["editorial", "alice quarrington", "preface"]))
    _expect_linking(kg)
    lookup = _db_hits(neo4j_store, cypher("names_lookup"), {"keys": ["editorial"], "most": NAME_MATCHES + 1})
    whole = _db_hits(neo4j_store, "MATCH (n:TogName {key: $key}) RETURN n.entity", {"key": "editorial"})
    assert whole > SHARED and lookup < 20 * NAME_MATCHES, (lookup, whole)
    merged = _db_hits(neo4j_store, cypher("load_name_keys"), {"rows": rows, "source": "x"})
    assert merged < 100 * len(rows), merged
