"""A node of a multilingual dump has names in hundreds of languages
(Wikidata's countries have labels in about 300), of which one is shown:
English, then English of a region, then untagged; then the name predicates'
order; then the lower text. The embedded store keeps each node's shown name
in a table its loads fill, so showing a node reads one row however many
languages name it; a node named only in other languages is read from the
KG. Neo4j keeps the name on the node, a SPARQL endpoint picks it from the
rows (``test_sparql.py``): every backend shows the same name. Corrections
and their reverts, a killed and resumed load and a store made before the
table keep it true."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import RDFS_LABEL, iri, load_into, open_graph, open_spec, write_nt

from engine.graph import Relation

NEIGHBOURS = 400
# 299 language tags besides English (ISO 639's private-use range qaa-qtz: valid, and no real language)
OTHER_LANGS = [f"q{a}{b}" for a in "abcdefghijklmnopqrst" for b in "abcdefghijklmnopqrstuvwxyz"][:299]
PREF = "http://www.w3.org/2004/02/skos/core#prefLabel"
BORDERS = Relation(iri("borders"), "out")
INTEGER, STRING = "^^<http://www.w3.org/2001/XMLSchema#integer>", "^^<http://www.w3.org/2001/XMLSchema#string>"

# node: (its name lines, the name every backend must show)
SPECIAL = {
    "twin": ([("Zed Twin", "en"), ("Alpha Twin", "en")], "Alpha Twin"),  # equal ranks: the lower text
    "hall": ([("Color Hall", None), ("Colour Hall", "en-GB"), ("Salle", "fr")], "Colour Hall"),  # en-GB before untagged
    "pref": ([("Label Name", "en"), ("Pref Name", "en", PREF)], "Label Name"),  # rdfs:label before skos:prefLabel
    "far": ([("Voisin", "fr"), ("Nachbar", "de")], "Nachbar"),  # no English, none untagged: read from the KG
    # a typed name is untagged, in the form the KG keeps it ("012" would be the lower text as written)
    "dozen": ([("012", INTEGER), ("100", None)], "100"),
    "answer": ([("042", INTEGER), ("Zed", STRING)], "42"),
}


def _name(node: str, text: str, lang: str | None, predicate: str = RDFS_LABEL) -> str:
    """A name line; ``lang``: a language tag, or a datatype (``INTEGER``)."""
    tag = "" if not lang else lang if lang.startswith("^^") else f"@{lang}"
    return f'<{iri(node)}> <{predicate}> "{text}"{tag} .'


def special_lines() -> list[str]:
    lines = []
    for node, (names, _) in SPECIAL.items():
        lines += [_name(node, *spec) for spec in names]
        lines.append(f"<{iri('harbour')}> <{iri('knows')}> <{iri(node)}> .")
    return lines


def many_lines() -> list[str]:
    """A pair of NEIGHBOURS nodes, each named in English and 299 other languages."""
    lines = [_name("harbour", "Quillon Harbour", "en")]
    for i in range(NEIGHBOURS):
        lines.append(f"<{iri('harbour')}> <{iri('borders')}> <{iri(f'n{i}')}> .")
        lines.append(_name(f"n{i}", f"Neighbour {i}", "en"))
        lines += [_name(f"n{i}", f"Nachbar {i} {tag}", tag) for tag in OTHER_LANGS]
    return lines


def expected() -> dict[str, str]:
    return {**{iri(node): shown for node, (_, shown) in SPECIAL.items()},
            **{iri(f"n{i}"): f"Neighbour {i}" for i in range(NEIGHBOURS)}, iri("harbour"): "Quillon Harbour"}


@pytest.fixture(scope="module")
def nt(tmp_path_factory):
    return write_nt(tmp_path_factory.mktemp("shown") / "g.nt", many_lines() + special_lines())


def from_kg(kg, ids) -> dict[str, str]:
    """The names the rule picks from every name the KG holds (how the stores showed nodes before the table)."""
    from engine.backends.sparql_reads import SparqlReads

    return SparqlReads.labels(kg, ids)


def in_table(kg, ids) -> dict[str, str]:
    """The shown names the embedded store's table holds (no fallback to the KG)."""
    return kg.db.index.shown(ids)


def _counting(kg) -> list[int]:
    """Rows the KG's store returns from now on (one entry a query)."""
    rows: list[int] = []
    plain = kg._select
    kg._select = lambda text, params=(), **kw: rows.append(len(out := plain(text, params, **kw))) or out
    return rows


def test_a_node_named_in_300_languages_is_shown_by_one_row(nt, tmp_path):
    store, _ = load_into(tmp_path / "store", nt)
    kg = store.kg
    rows = _counting(kg)
    candidates = kg.expand([(iri("harbour"), BORDERS)], limit=200)
    assert {c.node.id: c.node.name for c in candidates} == {iri(f"n{i}"): f"Neighbour {i}" for i in range(NEIGHBOURS)
                                                            if iri(f"n{i}") in {c.node.id for c in candidates}}
    assert len(candidates) == 200
    assert sum(rows) <= NEIGHBOURS + 1  # the pair's neighbours; reading their names would be 120,000
    kg._name_terms()  # (the name predicates the KG uses: asked once)
    rows.clear()
    want = expected()
    assert kg.labels(list(want)) == want
    assert sum(rows) == 1  # "far" alone is read from the KG (its two names, grouped); the rest, one seek each
    assert kg.stats()["shown names"] == "by the loads, as they index names"
    from engine.linking import resolve

    assert [n.id for n in resolve(kg, ["42"])] == [iri("answer")]  # a typed name is found as it is shown


def test_names_indexed_in_another_language_leave_the_shown_name_english(tmp_path):
    """`--name-lang fr` indexes French names for linking; the shown names
    are still the English and untagged ones (the loader reads those too)."""
    from engine.linking import resolve

    store, _ = load_into(tmp_path / "store", write_nt(tmp_path / "g.nt", special_lines()), name_langs=("fr",))
    want = {iri(node): shown for node, (_, shown) in SPECIAL.items()}
    assert store.kg.labels(list(want)) == want
    assert in_table(store.kg, list(want)) == {k: v for k, v in want.items() if k != iri("far")}
    assert [n.id for n in resolve(store.kg, ["Salle"])] == [iri("hall")]  # found by its French name
    assert [n.name for n in resolve(store.kg, ["Salle"])] == ["Colour Hall"]  # shown by its English one


def test_corrections_and_reverts_change_the_shown_name(nt, tmp_path):
    from engine.feedback import correct, revert

    store, _ = load_into(tmp_path / "store", nt)
    kg = store.kg
    seven = iri("n7")
    renamed = correct(store, remove=[f'<{seven}>|<{RDFS_LABEL}>|"Neighbour 7"@en'],
                      add=[f'<{seven}>|<{RDFS_LABEL}>|"Renamed Seven"@en'], reason="misnamed")
    assert kg.labels([seven]) == {seven: "Renamed Seven"}
    gone = correct(store, remove=[f'<{seven}>|<{RDFS_LABEL}>|"Renamed Seven"@en'], add=[], reason="no English name")
    assert kg.labels([seven]) == {seven: "Nachbar 7 qaa"}  # the lowest of the other languages, from the KG
    revert(store, gone.id)
    assert kg.labels([seven]) == {seven: "Renamed Seven"}
    revert(store, renamed.id)
    assert kg.labels([seven]) == {seven: "Neighbour 7"}
    made = correct(store, remove=[], add=[f"Brand New Quay|<{iri('borders')}>|<{seven}>"], reason="new",
                   new=["Brand New Quay"])
    (new,) = [e for e, _ in made.named]
    assert kg.labels([new]) == {new: "Brand New Quay"}
    revert(store, made.id)
    assert kg.labels([new]) == {}
    # a bare name gets a delimited load's IRI: a load that names it too, then the revert, which takes the label
    made = correct(store, remove=[], add=[f"Brand New Quay|<{iri('borders')}>|<{seven}>"], reason="new",
                   new=["Brand New Quay"])
    (new,) = [e for e, _ in made.named]
    from loaders.load import load_file

    load_file(store.need_sink(), write_nt(tmp_path / "quay.tsv", ["Brand New Quay\tmoored_at\tOld Pier"]),
              fmt="tsv")
    assert in_table(kg, [new]) == {new: "Brand New Quay"}
    revert(store, made.id)
    assert kg.labels([new]) == from_kg(kg, [new]) == {} and in_table(kg, [new]) == {}


def test_a_comment_among_name_lines_and_an_untagged_name_load(tmp_path):
    """A block whose name lines are not all in the plain shape (a comment
    that states a name, an indented line) is matched line by line; an
    untagged name there has no language tag at all."""
    lines = [f'# <{iri("old")}> <{RDFS_LABEL}> "Old Name"@en .', f'<{iri("plain")}> <{RDFS_LABEL}> "Plain Name" .',
             f'   <{iri("indented")}> <{RDFS_LABEL}> "Indented Name"@en .',
             f"<{iri('plain')}> <{iri('near')}> <{iri('indented')}> ."]
    store, (report,) = load_into(tmp_path / "store", write_nt(tmp_path / "g.nt", lines))
    assert report.skipped == 0
    ids = [iri("plain"), iri("indented"), iri("old")]
    assert in_table(store.kg, ids) == {iri("plain"): "Plain Name", iri("indented"): "Indented Name"}
    assert store.kg.labels(ids) == from_kg(store.kg, ids)


def test_a_name_predicate_given_later_shows_the_names_it_already_had(tmp_path, tog):
    """Triples under a predicate loaded as facts become names when a later
    load gives it as a name predicate: the table is made again from the KG."""
    title = iri("title")
    first = write_nt(tmp_path / "a.nt", [f'<{iri("x")}> <{RDFS_LABEL}> "Zed" .',
                                         f'<{iri("x")}> <{title}> "Title X"@en .',
                                         f"<{iri('x')}> <{iri('near')}> <{iri('y')}> ."])
    later = write_nt(tmp_path / "b.nt", [f'<{iri("y")}> <{title}> "Title Y"@en .'])
    store = tmp_path / "store"
    assert tog("load", first, "--store", store).exit_code == 0
    assert tog("load", later, "--store", store, "--name-predicate", title).exit_code == 0
    g = open_graph(store)
    assert g.kg.labels([iri("x"), iri("y")]) == {iri("x"): "Title X", iri("y"): "Title Y"}  # English over untagged
    assert g.kg.stats()["shown names"].startswith("once, on first use")
    assert in_table(g.kg, [iri("x"), iri("y")]) == {iri("x"): "Title X", iri("y"): "Title Y"}
    # the same in one process: the store open, its names shown, then the load
    from loaders.load import load_file

    same = open_graph(tmp_path / "same", create=True)
    load_file(same.need_sink(), first)
    assert same.kg.labels([iri("x")]) == {iri("x"): "Zed"}
    load_file(same.need_sink(), later, name_predicates=(title,))
    assert same.kg.labels([iri("x"), iri("y")]) == {iri("x"): "Title X", iri("y"): "Title Y"}


def test_a_view_beside_a_load_reads_names_from_the_kg_while_the_index_is_down(nt, tmp_path):
    """A load drops the table's index while it writes; a read-only view
    beside it then shows nodes from the KG, not by a scan of the table an id."""
    from engine.store import open_store

    path = tmp_path / "store"
    store, _ = load_into(path, nt)
    store.close()
    with sqlite3.connect(path / "index.sqlite") as db:
        db.execute("DROP INDEX shown_entity")  # as a running load leaves it
    view = open_store(path, read_only=True)
    try:
        assert in_table(view.kg, [iri("n1")]) is None
        view.kg._name_terms()  # (the name predicates and a sample of the languages: asked once)
        rows = _counting(view.kg)
        assert view.kg.labels(list(expected())) == expected()
        assert len(expected()) <= sum(rows) <= len(expected()) + 10  # a row a node from the KG (not its 300 names)
    finally:
        view.close()


def test_a_killed_load_resumes_to_the_shown_names_of_one_load(nt, tmp_path, tog):
    from test_loaders import _kill_mid_load

    small = write_nt(tmp_path / "small.nt", many_lines()[:30_000] + special_lines())
    for attempt in range(3):
        store = tmp_path / f"killed{attempt}"
        if _kill_mid_load(small, store, chunks_before_kill=40):
            break
    else:
        pytest.fail("every load finished before it could be killed")
    resumed = tog("load", small, "--store", store)
    assert resumed.exit_code == 0 and "resumed at line" in resumed.output, resumed.output
    whole, _ = load_into(tmp_path / "whole", small)
    ids = list(expected())
    killed = open_graph(store)
    assert killed.kg.labels(ids) == whole.kg.labels(ids) == from_kg(whole.kg, ids)
    assert in_table(killed.kg, ids) == in_table(whole.kg, ids)  # the rows themselves, not the KG's fallback
    assert len(in_table(whole.kg, ids)) > 100


def test_a_store_made_before_the_table_fills_it_once(nt, tmp_path, tog):
    """A store whose index has no shown names: a read-only view reads the
    KG (the same names) and says why; the first writer fills the table once,
    and `tog info` says how it was made."""
    from engine.store import open_store

    path = tmp_path / "store"
    store, _ = load_into(path, nt)
    want = expected()
    files = [str(f) for f in path.rglob("*.sqlite*")] + [str(f) for f in path.rglob("*.db")]
    store.close()
    (index,) = [f for f in files if f.endswith((".sqlite", ".db"))]
    with sqlite3.connect(index) as db:  # as an older tog left it
        db.execute("DROP TABLE shown")
        db.execute("DELETE FROM settings WHERE key = 'shown_complete'")
    view = open_store(path, read_only=True)
    try:
        view.kg._name_terms()
        rows = _counting(view.kg)
        assert view.kg.labels(list(want)) == want
        assert len(want) <= sum(rows) <= len(want) + 10  # from the KG, a row a node (not its 300 names)
        assert view.kg.stats()["shown names"].startswith("not made yet")
    finally:
        view.close()
    writer = open_graph(path)
    assert writer.kg.labels(list(want)) == want
    writer.close()
    info = tog("info", "--store", path)
    assert info.exit_code == 0 and "shown names: once, on first use (" in info.output, info.output
    again = open_graph(path)
    again.kg._name_terms()
    rows = _counting(again.kg)
    assert again.kg.labels(list(want)) == want and sum(rows) == 1  # ("far"'s two names: one group)


@pytest.mark.neo4j
def test_neo4j_shows_the_name_the_embedded_store_shows(neo4j_store, tmp_path):
    f = write_nt(tmp_path / "g.nt", many_lines()[:3_000] + special_lines())
    local, _ = load_into(tmp_path / "local", f)
    from loaders.load import load_file

    remote = open_spec(neo4j_store, create=True)
    load_file(remote.need_sink(), f)
    ids = [i for i in expected() if i in local.kg.labels(list(expected()))]
    assert len(ids) > 10
    assert remote.kg.labels(ids) == local.kg.labels(ids)
