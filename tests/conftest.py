"""Shared fixtures: a tiny hand-made knowledge graph written to disk, a real
on-disk Oxigraph store loaded from it through the real loader (``store``:
the whole ``engine.store.Store``; ``kg``: its read role), and click's
CliRunner for the real ``tog`` command.

The fixture KG (``KG_NT``) is small enough to reason about by hand; every
expected answer in the tests is derived from it:

- Paul Author wrote (``written_by``) Quiz Game and Night Harbor;
- Quiz Game: directed by Rita Director, screenplay by Paul Author and Cora
  Writer, released "1994"^^xsd:gYear, genre Drama, starring Ann Actor;
- Night Harbor: directed by Mike Maker, released "2001"^^xsd:gYear, genre
  Drama, starring Ann Actor;
- Paul Author was born in Springfield;
- a Freebase-style corner: m.film1 ("Harbor Lights"@en, also a French name)
  starring an unnamed CVT m.cvt1 -> actor m.actor1 ("Bea Star") and
  character m.char1 ("Captain Nemo"); m.onlyfr has only a French name.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.store import Store, open_store
from loaders.load import load_file

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path, monkeypatch):
    """Nothing a test does lands in the user's ~/.local/state."""
    monkeypatch.setenv("TOG_STATE_DIR", str(tmp_path / "state"))
VENV_BIN = REPO / ".venv" / "bin"
METAQA = REPO / "examples" / "metaqa"

EX = "http://example.org/kg/"
FB = "http://rdf.freebase.com/ns/"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
OWL_SAMEAS = "http://www.w3.org/2002/07/owl#sameAs"
XSD = "http://www.w3.org/2001/XMLSchema#"


def iri(local: str) -> str:
    return EX + local


def fb(local: str) -> str:
    return FB + local


def _label(e: str, name: str, lang: str | None = None) -> str:
    tag = f"@{lang}" if lang else ""
    return f'<{e}> <{RDFS_LABEL}> "{name}"{tag} .'


def _edge(s: str, p: str, o: str) -> str:
    return f"<{s}> <{p}> <{o}> ."


LABELS = {
    "quiz": "Quiz Game",
    "harbor": "Night Harbor",
    "paul": "Paul Author",
    "cora": "Cora Writer",
    "rita": "Rita Director",
    "mike": "Mike Maker",
    "drama": "Drama",
    "springfield": "Springfield",
    "ann": "Ann Actor",
}

KG_LINES = [
    # a French label first, so "English preferred" is not just "first seen"
    _label(iri("quiz"), "Jeu de Quiz", "fr"),
    *[_label(iri(k), v, "en" if k == "quiz" else None) for k, v in LABELS.items()],
    _edge(iri("quiz"), iri("written_by"), iri("paul")),
    _edge(iri("harbor"), iri("written_by"), iri("paul")),
    _edge(iri("quiz"), iri("screenplay_by"), iri("paul")),
    _edge(iri("quiz"), iri("screenplay_by"), iri("cora")),
    _edge(iri("quiz"), iri("directed_by"), iri("rita")),
    _edge(iri("harbor"), iri("directed_by"), iri("mike")),
    f'<{iri("quiz")}> <{iri("release_year")}> "1994"^^<{XSD}gYear> .',
    f'<{iri("harbor")}> <{iri("release_year")}> "2001"^^<{XSD}gYear> .',
    _edge(iri("quiz"), iri("has_genre"), iri("drama")),
    _edge(iri("harbor"), iri("has_genre"), iri("drama")),
    _edge(iri("quiz"), iri("starred_actors"), iri("ann")),
    _edge(iri("harbor"), iri("starred_actors"), iri("ann")),
    _edge(iri("paul"), iri("born_in"), iri("springfield")),
    _edge(iri("quiz"), RDF_TYPE, iri("Film")),
    _edge(iri("harbor"), RDF_TYPE, iri("Film")),
    # Freebase-style corner
    f'<{fb("m.film1")}> <{fb("type.object.name")}> "Lumières du port"@fr .',
    f'<{fb("m.film1")}> <{fb("type.object.name")}> "Harbor Lights"@en .',
    _edge(fb("m.film1"), fb("type.object.type"), fb("film.film")),
    f'<{fb("m.film1")}> <{fb("common.topic.alias")}> "HL" .',
    _edge(fb("m.film1"), OWL_SAMEAS, "http://www.wikidata.org/entity/Q1"),
    _edge(fb("m.film1"), fb("film.film.starring"), fb("m.cvt1")),
    _edge(fb("m.cvt1"), fb("film.performance.actor"), fb("m.actor1")),
    _edge(fb("m.cvt1"), fb("film.performance.character"), fb("m.char1")),
    _edge(fb("m.cvt1"), fb("film.performance.film"), fb("m.film1")),
    f'<{fb("m.actor1")}> <{fb("type.object.name")}> "Bea Star"@en .',
    f'<{fb("m.char1")}> <{fb("type.object.name")}> "Captain Nemo"@en .',
    f'<{fb("m.onlyfr")}> <{fb("type.object.name")}> "Château Rouge"@fr .',
    _edge(fb("m.film1"), fb("film.film.featured_filming_locations"), fb("m.onlyfr")),
]
KG_NT = "\n".join(KG_LINES) + "\n"
KG_TRIPLES = len(KG_LINES)


def same_kg(stats: dict) -> dict:
    """``Store.stats()`` less what says when the summaries were built: two
    loads of the same facts give the same."""
    return {k: v for k, v in stats.items() if k != "summaries"}


def write_nt(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def look_ahead_graph(ns: str, tails: int) -> tuple[list[str], list[tuple[str, str]]]:
    """A relation ``r`` from ``tails`` subjects to as many tails, each tail
    with a relation of its own and two edges each way besides: the
    N-Triples lines, and the look-ahead schema every backend must give
    ``r`` (out), the relations around the SCHEMA_TAILS tails first in the
    sample order, as sorted (relation, direction) pairs."""
    from engine.backends.common import SCHEMA_TAILS, sample_key

    lines = []
    for i in range(tails):
        lines += [f"<{ns}s{i}> <{ns}r> <{ns}t{i}> .", f"<{ns}t{i}> <{ns}q{i}> <{ns}u{i}> .",
                  f"<{ns}t{i}> <{ns}w> <{ns}v{i % 3}> .", f"<{ns}x{i % 5}> <{ns}y> <{ns}t{i}> ."]
    chosen = sorted((f"{ns}t{i}" for i in range(tails)), key=sample_key)[:SCHEMA_TAILS]
    want = {(f"{ns}q{t.rsplit('t', 1)[1]}", "out") for t in chosen} | {(f"{ns}w", "out"), (f"{ns}y", "in"),
                                                                        (f"{ns}r", "in")}
    return lines, sorted(want)


# ---------------------------------------------------------------------------
# Store bookkeeping: every store a test opens is closed afterwards.

_OPEN: list[Store] = []


def open_graph(path: Path | str, create: bool = False) -> Store:
    """Open a real on-disk embedded store and remember it so it gets closed."""
    g = open_store(path, create=create)
    _OPEN.append(g)
    return g


def close_graph(g: Store) -> None:
    g.close()  # closing twice is harmless


def load_into(store: Path, *files: Path, **options) -> tuple[Store, list]:
    """A store at ``store`` with ``files`` loaded; returns (store, reports)."""
    g = open_graph(store, create=True)
    reports = [load_file(g.need_sink(), f, **options) for f in files]
    return g, reports


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    """No traceback escape hatch leaking in; every store closed afterwards."""
    monkeypatch.delenv("TOG_TRACEBACK", raising=False)
    monkeypatch.delenv("TOG_STORE", raising=False)
    yield
    while _OPEN:
        close_graph(_OPEN.pop())


@pytest.fixture
def kg_file(tmp_path: Path) -> Path:
    """The fixture KG as an N-Triples file."""
    path = tmp_path / "kg.nt"
    path.write_text(KG_NT, encoding="utf-8")
    return path


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def store(kg_file: Path, store_path: Path) -> Store:
    """A real on-disk Oxigraph store holding the fixture KG."""
    g, (report,) = load_into(store_path, kg_file)
    assert report.skipped == 0
    return g


@pytest.fixture
def kg(store: Store):
    """The read role of ``store``."""
    return store.kg


@pytest.fixture
def loaded_store(kg_file: Path, store_path: Path) -> Path:
    """The path of a store holding the fixture KG, closed (for the CLI)."""
    g, _ = load_into(store_path, kg_file)
    close_graph(g)
    return store_path


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def tog(runner: CliRunner):
    """Invoke the real ``tog`` command in-process."""
    from engine.cli import cli

    def invoke(*args: str, **kwargs):
        return runner.invoke(cli, [str(a) for a in args], prog_name="tog", **kwargs)

    return invoke


def no_traceback(result) -> bool:
    text = (result.output or "") + (getattr(result, "stderr", "") or "")
    return "Traceback" not in text and (result.exception is None or isinstance(result.exception, SystemExit))


def env_without_traceback() -> dict:
    env = dict(os.environ)
    env.pop("TOG_TRACEBACK", None)
    env.pop("TOG_STORE", None)
    return env


# ---------------------------------------------------------------------------
# Neo4j: a real server from NEO4J_URI (CI starts launcher/neo4j-server), else
# testcontainers when a Docker engine answers, else the tests skip, saying why.

def _docker_answers() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
        return True
    except Exception:  # no client library, no socket, no engine: all mean "no Docker"
        return False


@pytest.fixture(scope="session")
def neo4j_server():
    """(uri, user, password) of a real Neo4j 5 server."""
    uri = os.environ.get("NEO4J_URI")
    if uri:
        yield uri, os.environ.get("NEO4J_USER", "neo4j"), os.environ.get("NEO4J_PASSWORD", "")
        return
    if _docker_answers():
        from testcontainers.neo4j import Neo4jContainer

        with Neo4jContainer("neo4j:5.26") as container:
            yield container.get_connection_url(), "neo4j", container.password
        return
    if os.environ.get("TOG_REQUIRE_NEO4J"):  # CI: a missing server is a failure, not a skip
        pytest.fail("TOG_REQUIRE_NEO4J is set but NEO4J_URI is not")
    pytest.skip("no Neo4j server: run `launcher/neo4j-server start` and set NEO4J_URI, NEO4J_USER and "
                "NEO4J_PASSWORD (`launcher/neo4j-server env` prints them), or start a Docker engine")


def clear_neo4j(uri: str, user: str, password: str) -> None:
    """Empty the database: data, runs, load checkpoints (the schema stays);
    the server counts as warmed up (``_mark_warmed``). (Batches of 20,000
    deletions passed CI's 128 MB cap on a transaction's memory for the
    suite's own data, and not for a 100k-triple load's; batches of 5,000
    not for a 10M-triple load's: ``benchmarks/neo4j_load.py``'s ``clear``;
    kept samples and schemas, which can be big, go 50 at a time first.)"""
    import neo4j

    with neo4j.GraphDatabase.driver(uri, auth=(user, password)) as driver, driver.session() as s:
        s.run("MATCH (n) WHERE n:TogSample OR n:TogSchema OR n:TogHub "
              "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 50 ROWS").consume()
        s.run("MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 1000 ROWS").consume()
        s.run("MATCH (n) CALL (n) { DELETE n } IN TRANSACTIONS OF 1000 ROWS").consume()
        _mark_warmed(s)


def _mark_warmed(session) -> None:
    """The suite's server counts as warmed up since it started (`tog warm`'s
    mark), so a question says nothing of it: the note of a server that was
    not is tested with a server of its own
    (test_offline_import_builds_the_same_database_as_an_online_load). A
    server that does not tell its start gets no note anyway."""
    import json

    import neo4j

    from engine.backends.neo4j.warmth import WARMED
    from engine.queries import cypher

    try:
        started = session.run(cypher("server_started"), key=WARMED).single()["started"]
    except neo4j.exceptions.Neo4jError:
        return
    session.run(cypher("setting_set"), key=WARMED, value=json.dumps(started)).consume()


@pytest.fixture
def neo4j_store(neo4j_server, monkeypatch):
    """The URI of an empty Neo4j store, with credentials in the environment
    as `tog` reads them."""
    uri, user, password = neo4j_server
    clear_neo4j(uri, user, password)
    monkeypatch.setenv("NEO4J_USER", user)
    monkeypatch.setenv("NEO4J_PASSWORD", password)
    return uri


@pytest.fixture(params=["oxigraph", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def store_spec(request, tmp_path):
    """An empty store of each backend, as a ``--store`` value."""
    if request.param == "neo4j":
        return request.getfixturevalue("neo4j_store")
    return str(tmp_path / "store")


def open_spec(spec: str, create: bool = False) -> Store:
    """Open a store of any backend and remember it so it gets closed."""
    g = open_store(spec, create=create)
    _OPEN.append(g)
    return g
