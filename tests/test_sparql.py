"""The SPARQL-endpoint backend against a real Virtuoso (Debian's virtuoso-opensource,
started by launcher/virtuoso-server; `.ci/run` does it). The endpoint holds the subset
that `tog extract freebase` cuts from the Freebase-format fixture; the same subset in
the embedded store must give the same answers and the same run trees."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest
from conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "freebase-excerpt.nt"
QUESTIONS = ["who starred in [Harbor Lights]", "who directed [Harbor Lights]",
             "what films did [Rita Director] direct", "where was [Rita Director] born"]


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    """(spec of the loaded endpoint graph, the subset file)."""
    base = os.environ.get("TOG_SPARQL_ENDPOINT")
    if not base:
        if os.environ.get("TOG_REQUIRE_VIRTUOSO"):
            pytest.fail("TOG_SPARQL_ENDPOINT is not set but TOG_REQUIRE_VIRTUOSO is")
        pytest.skip("no SPARQL endpoint: `launcher/virtuoso-server start` and "
                    "`eval $(launcher/virtuoso-server env)` (needs apt-get install virtuoso-opensource)")
    from click.testing import CliRunner

    from engine.cli import cli

    work = tmp_path_factory.mktemp("sparql")
    subset = work / "subset.nt"
    done = CliRunner().invoke(cli, ["extract", "freebase", str(FIXTURE), "--seed", "m.film1", "--hops", "2",
                                    "--out", str(subset)])
    assert done.exit_code == 0, done.output
    graph = f"http://tog.test/{uuid.uuid4().hex}"
    loaded = subprocess.run([str(REPO / "launcher" / "virtuoso-server"), "load", str(subset), graph],
                            capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    return f"{base}?default-graph-uri={graph}", subset


@pytest.fixture
def stores(endpoint, tmp_path, tog, monkeypatch):
    spec, subset = endpoint
    monkeypatch.setenv("TOG_SPARQL_RUNS", str(tmp_path / "runs"))
    local = tmp_path / "store"
    assert tog("load", subset, "--store", local).exit_code == 0
    return spec, str(local)


def test_same_answers_and_run_trees_as_the_embedded_store(stores):
    from test_backends import _tree_shape

    from engine.backends import open_store
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig

    remote, local = (open_store(s) for s in stores)
    try:
        assert remote.stats()["triples"] == local.stats()["triples"] > 10
        for q in QUESTIONS:
            results = [ask(kg, q, get_pruner("hybrid"), get_reasoner("offline"), SearchConfig()) for kg in (remote, local)]
            assert results[0].result.answer.names == results[1].result.answer.names, q
            assert results[0].result.answer.names, q
            assert _tree_shape(remote, results[0].run_id) == _tree_shape(local, results[1].run_id), q
        ids = ["http://rdf.freebase.com/ns/m.film1", "http://rdf.freebase.com/ns/m.cvt1"]
        assert remote.labels(ids) == local.labels(ids)
        assert remote.relations(ids) == local.relations(ids)
        assert remote.search_entities(["harbor lights", "bea star", "nobody"]) == \
            local.search_entities(["harbor lights", "bea star", "nobody"])
        assert remote.has_entity(ids[0]) and not remote.has_entity("http://rdf.freebase.com/ns/m.none")
        assert len(remote.runs()) == len(QUESTIONS)  # kept in the local runs store
    finally:
        remote.close()
        local.close()


def test_the_cli_on_the_endpoint_and_its_read_only_refusals(stores, tog):
    spec, _ = stores
    asked = tog("ask", "who starred in [Harbor Lights]", "--store", spec)
    assert asked.exit_code == 0 and "answer: Bea Star" in asked.output, asked.output
    assert "Harbor Lights" in tog("runs", "show", "last", "--store", spec).output
    load = tog("load", FIXTURE, "--store", spec)
    assert load.exit_code == 1 and "read-only" in load.output and "Traceback" not in load.output
    fix = tog("correct", "--add", "Harbor Lights|film.film.directed_by|Bea Star", "--reason", "x", "--store", spec)
    assert fix.exit_code == 1 and "cannot record corrections" in fix.output


def test_an_unreachable_endpoint_is_one_line(tog, tmp_path, monkeypatch):
    monkeypatch.setenv("TOG_SPARQL_RUNS", str(tmp_path / "runs"))
    result = tog("ask", "who directed [Harbor Lights]", "--store", "sparql+http://127.0.0.1:9/sparql")
    assert result.exit_code == 1 and "cannot reach the SPARQL endpoint at http://127.0.0.1:9/sparql" in result.output
    assert "Traceback" not in result.output
