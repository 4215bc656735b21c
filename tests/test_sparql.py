"""The SPARQL-endpoint backend against a real Virtuoso (Debian's virtuoso-opensource,
started by launcher/virtuoso-server; `.ci/run` does it). The endpoint holds the subset
that `tog extract freebase` cuts from the Freebase-format fixture; the same subset in
the embedded store must give the same answers and the same run trees."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import subprocess
import uuid
import warnings
from pathlib import Path

import pytest
from conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "freebase-excerpt.nt"
LAUNCHER = str(REPO / "launcher" / "virtuoso-server")
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
    drop_later(graph)
    yield f"{base}?default-graph-uri={graph}", subset
    while LOADED:
        graph = LOADED.pop()
        try:
            subprocess.run([LAUNCHER, "drop", graph], capture_output=True, timeout=300)
        except subprocess.TimeoutExpired:
            # (Virtuoso's own plan for emptying a graph once took minutes: see clear_graph in the launcher;
            # should a drop hang again, the server's running statements are printed for the next look)
            status = subprocess.run([LAUNCHER, "sql", "status('c');"], capture_output=True, text=True, timeout=60)
            warnings.warn(f"Virtuoso did not drop <{graph}> in 300 s; its status: {status.stdout[-2000:]}")


LOADED: list[str] = []


def drop_later(graph: str) -> None:
    """Drop ``graph`` from the endpoint when this module's tests are done."""
    LOADED.append(graph)


def test_the_launcher_streams_a_big_file_into_the_graph_a_small_one_makes(endpoint):
    """`launcher/virtuoso-server load` streams a file past VIRTUOSO_STREAM_OVER
    bytes from disk (a 10M-line file is too big to read into one string):
    the graph holds the same triples either way."""
    _, subset = endpoint
    lines = {line for line in subset.read_text(encoding="utf-8").splitlines() if line.strip()}
    said, counts = [], []
    for over in ("0", str(subset.stat().st_size)):
        graph = f"http://tog.test/{uuid.uuid4().hex}"
        loaded = subprocess.run([LAUNCHER, "load", str(subset), graph], capture_output=True, text=True, timeout=120,
                                env={**os.environ, "VIRTUOSO_STREAM_OVER": over})
        assert loaded.returncode == 0, loaded.stderr
        said.append("streamed from disk" in loaded.stdout)
        counted = subprocess.run([LAUNCHER, "sql", f"SPARQL SELECT COUNT(*) FROM <{graph}> WHERE {{ ?s ?p ?o }};"],
                                 capture_output=True, text=True, timeout=60)
        counts.append(int(re.search(r"_{20,}\s+(\d+)\s", counted.stdout).group(1)))  # isql: the row under the rule
        drop_later(graph)
    assert said == [True, False]
    assert counts == [len(lines), len(lines)]


@pytest.fixture
def stores(endpoint, tmp_path, tog, monkeypatch):
    spec, subset = endpoint
    monkeypatch.setenv("TOG_SPARQL_RUNS", str(tmp_path / "runs"))
    local = tmp_path / "store"
    assert tog("load", subset, "--store", local).exit_code == 0
    return spec, str(local)


TRUE = (b'<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#">'
        b'<head/><boolean>true</boolean></sparql>')


@contextlib.contextmanager
def answering(reply, calls_itself: str | None = None):
    """A local HTTP server that answers each POST with ``reply(handler,
    query)`` (bytes), with ``calls_itself`` as its Server header if given;
    yields its port.
    The request's form fields are in ``handler.form``."""
    import threading
    import urllib.parse
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Endpoint(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            self.form = urllib.parse.parse_qs(body)
            answer = reply(self, self.form["query"][0])
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+xml")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

        def version_string(self):
            return calls_itself or super().version_string()

    server = HTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_port
    finally:
        server.shutdown()



def probe_answer(hash_: str | None = None) -> bytes:
    """What a Virtuoso that runs prepared queries answers to their probe: the
    slot read back, and the SHA-1 of non-ASCII text marked as UTF-8
    (``hash_``, by default ours)."""
    from engine.backends.sparql import PAD, PROBE_HASH

    return ('<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#"><head>'
            '<variable name="v"/><variable name="h"/></head><results><result>'
            f'<binding name="v"><literal>{PAD}</literal></binding>'
            f'<binding name="h"><literal>{hash_ or PROBE_HASH}</literal></binding></result></results></sparql>').encode()

def test_same_answers_and_run_trees_as_the_embedded_store(stores):
    from test_backends import _tree_shape

    from engine.store import open_store
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
        assert remote.kg.labels(ids) == local.kg.labels(ids)
        assert remote.kg.relations(ids) == local.kg.relations(ids)
        assert remote.kg.search_entities(["harbor lights", "bea star", "nobody"]) == \
            local.kg.search_entities(["harbor lights", "bea star", "nobody"])
        assert remote.kg.has_entity(ids[0]) and not remote.kg.has_entity("http://rdf.freebase.com/ns/m.none")
        assert len(remote.runs.list()) == len(QUESTIONS)  # kept in the local runs store
        assert remote.sink is None and remote.corrections is None  # read-only: no roles that write
    finally:
        remote.close()
        local.close()


def test_topics_given_as_iris_cost_one_request_with_their_relations(stores):
    """Resolving IRI topics asks for their names and, in the same request,
    the relations around them, which the search's first listing then reuses;
    answers stay those of the embedded store."""
    from engine.store import open_store
    from engine.linking import link
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig

    remote, local = (open_store(s) for s in stores)
    film = "http://rdf.freebase.com/ns/m.film1"
    try:
        link(remote.kg, "warm up", [f"<{film}>"])  # first use: which name predicates, relation names
        remote.kg.relations([film])
        before = remote.kg.meter.lookups
        (topic,) = link(remote.kg, "who directed it", [f"<{film}>"])
        assert remote.kg.meter.lookups - before == 1 and topic.name == "Harbor Lights"
        assert remote.kg.relations([film]) == local.kg.relations([film])
        assert remote.kg.meter.lookups - before == 1  # the listing came with the names
        assert remote.kg.relations([film]) == local.kg.relations([film])
        assert remote.kg.meter.lookups - before == 1  # and is kept for the process (Memo)
        q = "who directed [Harbor Lights]"
        results = [ask(kg, q, get_pruner("hybrid"), get_reasoner("offline"), SearchConfig(), [f"<{film}>"])
                   for kg in (remote, local)]
        assert results[0].result.answer.names == results[1].result.answer.names != []
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "values-in-text"])
def test_the_endpoint_looks_ahead_over_the_schema_the_embedded_store_has(stores, prepared):
    """The offline judge's look-ahead schema (which relations follow which)
    is sampled on the endpoint as on the embedded store: every relation of
    the KG, both ways, is followed by the same relations. What a batch
    read (its relations' schema, each tail's first edges) is kept for the
    process: asked again, it costs no request; ``memo=False`` asks again.
    Both with prepared queries and with values in the text."""
    from engine.backends.sparql import SparqlGraph
    from engine.graph import Relation
    from engine.store import open_store

    local = open_store(stores[1])
    remote, forgetful = SparqlGraph(stores[0], prepared=prepared), SparqlGraph(stores[0], prepared=prepared, memo=False)
    try:
        ahead = [Relation(p, d) for p, _ in local.kg.relation_counts() for d in ("out", "in")]
        want = local.kg.schema.after(ahead)
        assert len(ahead) >= 10 and sum(bool(v) for v in want.values()) >= 10
        for kg in (remote, forgetful):
            kg._name_terms()  # which name predicates the endpoint uses: asked once, first
            before = kg.meter.lookups
            assert kg.schema.after(ahead) == want
            first = kg.meter.lookups - before
            assert 2 <= first <= 4  # the tails (one request a direction, prepared), then their first edges
            assert kg.schema.after(ahead[:3]) == {r: want[r] for r in ahead[:3]}
            again = kg.meter.lookups - before - first
            assert again == 0 if kg is remote else again > 0
        # what a tail showed is kept too: asked for again, it costs no request and is what a fresh read gives
        led = next(r for r in ahead if want[r])
        tails = remote._tails([(led.id, led.direction)])[0]
        assert tails
        before = remote.meter.lookups
        assert remote.schema._around(tails) == forgetful.schema._around(tails)
        assert remote.meter.lookups == before
        # and `tog info` says which of the two a process does
        assert "keeps what it read" in remote.stats()["summaries"]
        assert "keeps nothing it read (memo off)" in forgetful.stats()["summaries"]
    finally:
        remote.close()
        local.close()
        forgetful.close()


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "values-in-text"])
def test_the_endpoint_s_look_ahead_reads_a_bounded_part_of_a_hub(endpoint, tmp_path, prepared):
    """A relation all of whose 300 edges reach one hub of 2,000 edges: its
    tails are asked among its first SCHEMA_READ edges, and the server counts
    at most SCHEMA_EDGES of the hub's edges each way to say what follows."""
    from engine.backends.common import SCHEMA_EDGES, SCHEMA_READ
    from engine.backends.sparql import SparqlGraph
    from engine.graph import Relation

    ex = "http://example.org/ahead/"
    lines = [f"<{ex}fan{i}> <{ex}likes> <{ex}hub> ." for i in range(300)]
    lines += [f"<{ex}hub> <{ex}links> <{ex}n{i}> ." for i in range(2_000)]
    lines += [f"<{ex}hub> <{ex}born_in> <{ex}city> ."]
    spec, _ = loaded_both(tmp_path, lines, "ahead")
    kg = SparqlGraph(spec, prepared=prepared)
    sent: list[tuple[str, list]] = []
    plain = kg._select
    kg._select = lambda text, params=(): sent.append((text, rows := plain(text, params))) or rows
    try:
        likes = Relation(f"{ex}likes", "out")
        follows = kg.schema.after([likes])[likes]
        assert Relation(f"{ex}links", "out") in follows and Relation(f"{ex}likes", "in") in follows
        (tails, tails_rows), (around, around_rows) = sent
        assert f"LIMIT {SCHEMA_READ} }}" in tails and [r["n"].value for r in tails_rows] == [f"{ex}hub"]
        counted: dict[tuple, int] = {}
        for row in around_rows:  # (branch, [direction,] relation, edges counted)
            key = (row["k"].value, row["d"].value if "d" in row else None)
            counted[key] = counted.get(key, 0) + int(row["n"].value)
        assert sorted(counted.values()) == [SCHEMA_EDGES, SCHEMA_EDGES]  # the hub out, then in
    finally:
        kg.close()


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "values-in-text"])
def test_the_endpoint_takes_the_look_ahead_tails_the_stores_take(endpoint, tmp_path, prepared):
    """A relation of 200 edges to 200 tails: the endpoint keeps the tails
    first in the sample order, as the stores do, not the first its plan
    reads, and so looks ahead over the same schema. Which relations are
    small enough for that is asked as the embedded store asks it."""
    from conftest import look_ahead_graph

    from engine.backends.common import SCHEMA_READ
    from engine.backends.sparql import SparqlGraph
    from engine.graph import Relation

    ex = "http://example.org/tails/"
    lines, want = look_ahead_graph(ex, 200)
    lines += [f"<{ex}b{i}> <{ex}big> <{ex}c{i % 20}> ." for i in range(SCHEMA_READ + 1)]
    lines += [f"<{ex}b{i}> <{ex}edge> <{ex}c{i}> ." for i in range(SCHEMA_READ)]
    spec, local = loaded_both(tmp_path, lines, "tails")
    kg = SparqlGraph(spec, prepared=prepared)
    try:
        r = Relation(f"{ex}r", "out")
        assert sorted((x.id, x.direction) for x in kg.schema.after([r])[r]) == want
        assert sorted((x.id, x.direction) for x in local.schema.after([r])[r]) == want
        asked = [(f"{ex}{name}", d) for name in ("big", "edge", "r", "none") for d in ("out", "in")]
        assert kg._small(asked) == local._small(asked) == asked[2:]  # past SCHEMA_READ edges: big
    finally:
        kg.close()


def test_name_lookups_ask_only_for_the_name_predicates_the_endpoint_uses(stores):
    """Which name predicates the endpoint holds is asked once; lookups then
    name only those, and still find what the embedded store finds."""
    from engine.store import open_store

    remote, local = (open_store(s) for s in stores)
    try:
        held = {r["p"].value for r in local.kg.db.query("SELECT DISTINCT ?p WHERE { ?s ?p ?o }")}
        want = [p for p in remote.kg.name_predicates if p in held]
        assert want and len(want) < len(remote.kg.name_predicates)
        sent: list[str] = []
        plain_query = remote.kg._select
        remote.kg._select = lambda text, params=(): sent.append(text) or plain_query(text, params)
        ids = ["http://rdf.freebase.com/ns/m.film1", "http://rdf.freebase.com/ns/m.cvt1"]
        assert remote.kg.labels(ids) == local.kg.labels(ids)
        assert remote.kg.labels(ids) == local.kg.labels(ids)
        assert [t.value for (t,) in remote.kg._name_terms()] == want
        assert len(sent) == 3  # the check once, then one request per lookup (names in English only: all asked)
        unused = [p for p in remote.kg.name_predicates if p not in held]
        assert not any(f"<{p}>" in sent[-1] for p in unused)
    finally:
        remote.close()
        local.close()


def test_the_cli_on_the_endpoint_and_its_read_only_refusals(stores, tog):
    from engine.backends.common import SCHEMA_TAILS

    spec, _ = stores
    asked = tog("ask", "who starred in [Harbor Lights]", "--store", spec)
    assert asked.exit_code == 0 and "answer: Bea Star" in asked.output, asked.output
    assert "Harbor Lights" in tog("runs", "show", "last", "--store", spec).output
    load = tog("load", FIXTURE, "--store", spec)
    assert load.exit_code == 1 and "read-only" in load.output and "Traceback" not in load.output
    fix = tog("correct", "--add", "Harbor Lights|film.film.directed_by|Bea Star", "--reason", "x", "--store", spec)
    assert fix.exit_code == 1 and "cannot record corrections" in fix.output
    for args in (["corrections", "list"], ["corrections", "revert", "c1"]):  # every command that needs the role
        refused = tog(*args, "--store", spec)
        assert refused.exit_code == 1 and "read-only for tog: it cannot record corrections" in refused.output
        assert refused.output.count("\n") == 1 and "Traceback" not in refused.output
    info = tog("info", "--store", spec)  # reads and runs still work
    assert info.exit_code == 0 and "this process keeps what it read of hubs" in info.output, info.output
    assert f"({SCHEMA_TAILS} tails per relation" in info.output, info.output
    remote = json.loads(tog("relations", "--store", spec, "--json").output)
    local = json.loads(tog("relations", "--store", stores[1], "--json").output)
    assert remote == local and remote  # the same relations and counts as the same file loaded locally
    # what `tog learn --into-store` learns of an endpoint is kept where its runs are, and said so
    questions = Path(os.environ["TOG_SPARQL_RUNS"]).parent / "learn.jsonl"
    questions.write_text(json.dumps({"question": "who starred in [Harbor Lights]", "answers": ["Bea Star"]}) + "\n")
    learned = tog("learn", questions, "--store", spec, "--into-store")
    assert learned.exit_code == 0, learned.output
    assert f"kept in {os.environ['TOG_SPARQL_RUNS']}, where tog keeps what it records of http://" in learned.output


def test_an_unreachable_endpoint_is_one_line(tog, tmp_path, monkeypatch):
    monkeypatch.setenv("TOG_SPARQL_RUNS", str(tmp_path / "runs"))
    result = tog("ask", "who directed [Harbor Lights]", "--store", "sparql+http://127.0.0.1:9/sparql")
    assert result.exit_code == 1 and "cannot reach the SPARQL endpoint at http://127.0.0.1:9/sparql" in result.output
    assert "Traceback" not in result.output


def neighbours_sent(kg) -> list[list[str]]:
    """Spy on ``kg``'s queries: the neighbours (``?x``) each answer brought
    from the endpoint, a list per query, in the order asked."""
    sent: list[list[str]] = []
    plain = kg._select

    def spy(text, params=()):
        rows = plain(text, params)
        sent.append([r["x"].value for r in rows if "x" in r.keys() and r["x"] is not None])
        return rows

    kg._select = spy
    return sent


def loaded_both(tmp_path, lines, name):
    """``lines`` (N-Triples) in a new graph of the endpoint (dropped when the
    module is done) and in an embedded store: (the graph's spec, the local KG)."""
    from conftest import load_into, write_nt

    nt = write_nt(tmp_path / f"{name}.nt", lines)
    graph = f"http://tog.test/{uuid.uuid4().hex}"
    loaded = subprocess.run([LAUNCHER, "load", str(nt), graph], capture_output=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    drop_later(graph)
    return f"{os.environ['TOG_SPARQL_ENDPOINT']}?default-graph-uri={graph}", \
        load_into(tmp_path / f"local-{name}", nt)[0].kg


def test_the_endpoint_finds_a_name_as_the_question_writes_it(endpoint, tmp_path):
    """The endpoint matches exact names only: a name in neither lower,
    title nor upper case ("Lanterns of the Old Quay"), with punctuation its key
    drops ("Don't Wake the Quay") or with accents ("Café Déjà Lune") is found
    as the question writes it, in brackets or not, as the embedded store's
    name index finds it."""
    from engine.backends.sparql import SparqlGraph
    from engine.linking import link, suggestions

    ex = "http://example.org/names/"
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    films = {"valley": "Lanterns of the Old Quay", "word": "Don't Wake the Quay",
             "cafe": "Caf\u00e9 D\u00e9j\u00e0 Lune"}
    lines = [f'<{ex}robson> <{label}> "Mark Robson" .']
    for key, name in films.items():
        lines += [f'<{ex}{key}> <{label}> "{name}" .', f"<{ex}{key}> <{ex}directed_by> <{ex}robson> ."]
    spec, local = loaded_both(tmp_path, lines, "names")
    remote = SparqlGraph(spec)
    try:
        for question, film in [("who directed [Lanterns of the Old Quay]", "valley"),
                               ("who directed Lanterns of the Old Quay?", "valley"),
                               ("who directed \"Don't Wake the Quay\"?", "word"),
                               ("who directed [Caf\u00e9 D\u00e9j\u00e0 Lune]", "cafe")]:
            found = link(remote, question)
            assert [n.id for n in found] == [f"{ex}{film}"], question
            assert found == link(local, question), question
        assert [n.id for n in suggestions(remote, "films like Lanterns of the Old Quay")] == [f"{ex}valley"]
    finally:
        remote.close()


def test_the_endpoint_reads_a_name_thousands_share_no_further_than_the_cap(endpoint, tmp_path):
    """``test_name_hubs.py``'s graph on the endpoint: 200,000 entities named
    "Editorial". The lookup stops at NAMES_AT_ONCE rows, then asks each key
    again in a branch of at most NAME_MATCHES + 1 entities; it finds what
    the embedded store finds, and linking starts where it starts."""
    from test_name_hubs import QUESTION, SHARED, _expect_linking, _expect_lookup, shared_lines, small_lines

    from engine.backends.sparql import NAMES_AT_ONCE, SparqlGraph
    from engine.graph import NAME_MATCHES
    from engine.linking import link

    spec, local = loaded_both(tmp_path, shared_lines() + small_lines(), "namehub")
    remote = SparqlGraph(spec)
    sent: list[tuple[str, int]] = []
    plain = remote._select
    remote._select = lambda text, params=(): sent.append((text, len(rows := plain(text, params)))) or rows
    try:
        found = remote.search_entities(["editorial", "alice quarrington", "preface"])
        _expect_lookup(found)
        assert [n.id for n in found["preface"]] == [n.id for n in local.search_entities(["preface"])["preface"]]
        lookups = [(text, n) for text, n in sent if text.startswith(("# Entities whose name", "# names_lookup with"))]
        (first, n_first), (again, n_again) = lookups
        assert f"LIMIT {NAMES_AT_ONCE}" in first and n_first == NAMES_AT_ONCE < SHARED
        assert again.count(f"LIMIT {NAME_MATCHES + 1}") == 2 and n_again == 1 + NAME_MATCHES  # alice, preface
        assert max(n for _, n in sent) <= NAMES_AT_ONCE
        _expect_linking(remote)
        assert link(remote, QUESTION) == link(local, QUESTION)
    finally:
        remote.close()


def test_the_endpoint_shows_the_name_the_embedded_store_shows(endpoint, tmp_path):
    """``test_shown_names.py``'s nodes: of equal ranks the lower text, English
    of a region before untagged, the name predicates' order, other languages
    only when there is nothing else; whatever order the server's rows come in."""
    from test_shown_names import expected, many_lines, special_lines

    from engine.backends.sparql import SparqlGraph

    spec, local = loaded_both(tmp_path, many_lines()[:3_000] + special_lines(), "shown")
    remote = SparqlGraph(spec)
    try:
        ids = list(expected())
        assert remote.labels(ids) == local.labels(ids)
        assert len(local.labels(ids)) > 10
    finally:
        remote.close()


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "values-in-text"])
def test_the_endpoint_sends_a_row_a_node_named_in_300_languages(endpoint, tmp_path, prepared):
    """A node named in English and 299 other languages comes back by its
    English name alone (``shown_only.rq``: the KG names things in other
    languages), in an expansion, a labels request and a topic's; a node
    named only in other languages by all of them, asked next; the same
    names as the embedded store shows."""
    from conftest import iri
    from test_shown_names import BORDERS, OTHER_LANGS, SPECIAL, _counting, _name, expected, many_lines, special_lines

    from engine.backends.sparql import SparqlGraph
    from engine.graph import Relation

    quay = [f"<{iri('quay')}> <{iri('moors')}> <{iri(x)}> ." for x in ("cvt0", "cvt1", "far", "n1", "abroad")]
    quay += [_name("abroad", f"Fern {tag}", tag) for tag in OTHER_LANGS]  # no English name, 299 others
    spec, local = loaded_both(tmp_path, many_lines()[:40 * 301 + 1] + special_lines() + quay, "languages")
    remote = SparqlGraph(spec, prepared=prepared, memo=False)
    try:
        pair = [(iri("harbour"), BORDERS)]
        remote.labels([iri("harbour")])  # (the name predicates it uses: asked once)
        rows = _counting(remote)
        got = {c.node.id: c.node.name for c in remote.expand(pair, limit=20)}
        assert got == {c.node.id: c.node.name for c in local.expand(pair, limit=20)} and len(got) == 20
        assert sum(rows) <= 21 + 2  # a page of 21, not 21 x 300 names
        ids = [i for i in expected() if i in local.labels(list(expected()))]
        rows.clear()
        assert remote.labels(ids) == local.labels(ids)
        assert sum(rows) <= len(ids) + 2 * len(SPECIAL)  # (the special nodes: a few names each)
        rows.clear()
        assert remote.topic_labels([iri("n3"), iri("far")]) == local.labels([iri("n3"), iri("far")])
        assert sum(rows) < 100  # their names: one and two; the rest are relations
        # a page's neighbour named in other languages only is asked for its names; one with none (a CVT) is not
        asked_again: list[list[str]] = []
        names = remote._names
        remote._names = lambda iris, shown: (asked_again.append(list(iris)) if not shown else None) or names(iris, shown)
        moors = [(iri("quay"), Relation(iri("moors"), "out"))]
        rows.clear()
        assert [(c.node.id, c.node.name) for c in remote.expand(moors)] == \
            [(c.node.id, c.node.name) for c in local.expand(moors)]
        assert rows[0] == 5  # the page: a row a neighbour, not one for each of a neighbour's other names
        assert sorted(asked_again) == [sorted([iri("abroad"), iri("far")])]
    finally:
        remote.close()


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "values-in-text"])
def test_the_endpoint_sends_a_few_rows_a_node_however_many_names_it_has(endpoint, tmp_path, prepared):
    """Name lookups send the lowest name of each predicate and language rank
    (``name_rank.rq``), not every name: a node with 40 English aliases, one
    named in 299 other languages only, one with both and an English label,
    and a Latin-1 / Greek / CJK / astral tie among a node's aliases, the
    lower text by code point as the client picks it. In a labels request,
    a topic's, a page, and again in a KG judged to name things in English
    only (whose lookups keep every language); the names the embedded store
    shows."""
    from conftest import iri
    from test_shown_names import OTHER_LANGS, _counting, _name

    from engine.backends.sparql import SparqlGraph
    from engine.graph import Relation

    alias = "http://www.w3.org/2004/02/skos/core#altLabel"
    ties = ["Zeta", "\u00c9clair", "eclair", "\u03a9mega", "\u65e5\u672c", "\U0001F600 smile", "a\u00a0b", "ab"]
    named = {"aliased": [(f"Alias {j:02}", "en", alias) for j in range(40)],
             "abroad": [(f"Fern {tag}", tag) for tag in OTHER_LANGS],
             "mixed": [("Mixed", "en")] + [(f"Gemischt {tag}", tag) for tag in OTHER_LANGS]
             + [(f"Mixed alias {j:02}", "en", alias) for j in range(40)],
             "tied": [(text, "en", alias) for text in ties]}
    lines = [_name(node, *spec) for node, names in named.items() for spec in names]
    lines += [f"<{iri('quay')}> <{iri('moors')}> <{iri(node)}> ." for node in named]
    spec, local = loaded_both(tmp_path, lines, "rows")
    ids = [iri(node) for node in named]
    moors = [(iri("quay"), Relation(iri("moors"), "out"))]
    want = local.labels(ids)
    assert want[iri("aliased")] == "Alias 00" and want[iri("tied")] == min(ties) == "Zeta"
    assert want[iri("abroad")] == min(f"Fern {tag}" for tag in OTHER_LANGS) and want[iri("mixed")] == "Mixed"
    for english_only in (False, True):
        remote = SparqlGraph(spec, prepared=prepared, memo=False)
        try:
            remote._name_terms()  # (the name predicates and languages the KG uses: asked once)
            assert remote._multilingual  # the 299 languages are in any sample of the KG's names
            if english_only:  # as a KG whose sampled names were all English is judged
                remote._multilingual = False
            rows = _counting(remote)
            assert remote.labels(ids) == want
            # a row a node and predicate and rank ("mixed": two English, and its others unless filtered)
            assert sum(rows) <= 2 * len(named), (english_only, rows)
            rows.clear()
            assert remote.topic_labels(ids) == want
            assert sum(rows) < 20, (english_only, rows)  # (with their relations: one a node)
            rows.clear()
            assert {c.node.id: c.node.name for c in remote.expand(moors)} == \
                {c.node.id: c.node.name for c in local.expand(moors)} == want
            assert rows[0] <= 2 * len(named), (english_only, rows)  # the page: not 40 or 299 rows a neighbour
        finally:
            remote.close()
    # a KG of one name predicate, in English only, where a node has 40 labels: its sample shows a node
    # named twice, so its pages group too; where each node has one name, a page sends a row a name
    for lines, grouped in ((named_lines("many", 40), True), (named_lines("one", 1), False)):
        spec, local = loaded_both(tmp_path, lines, f"labels{grouped}")
        remote = SparqlGraph(spec, prepared=prepared, memo=False)
        try:
            remote._name_terms()
            assert not remote._multilingual and remote.names_repeat() == grouped
            texts = neighbours_sent(remote)
            rows = _counting(remote)
            assert {c.node.id: c.node.name for c in remote.expand(moors)} == \
                {c.node.id: c.node.name for c in local.expand(moors)}
            assert rows[0] <= 3 and len(texts[0]) == rows[0]  # (the neighbour and quay's other one: a row each)
            if grouped:  # a sample that missed the repeat (a big KG's): the first page finds it, the next groups
                remote._names_repeat = False
                for sent in (41, 2):
                    rows.clear()
                    assert {c.node.id: c.node.name for c in remote.expand(moors)} == \
                        {c.node.id: c.node.name for c in local.expand(moors)}
                    assert rows[0] == sent and remote.names_repeat()
        finally:
            remote.close()


def named_lines(node: str, labels: int) -> list[str]:
    """``node`` with ``labels`` English labels, and another node with one, both moored at quay."""
    from conftest import RDFS_LABEL, iri

    lines = [f'<{iri(node)}> <{RDFS_LABEL}> "{node} {j:02}"@en .' for j in range(labels)]
    lines += [f'<{iri("buoy")}> <{RDFS_LABEL}> "Buoy"@en .']
    return lines + [f"<{iri('quay')}> <{iri('moors')}> <{iri(x)}> ." for x in (node, "buoy")]


def test_the_endpoint_reads_typed_values_as_the_embedded_store_does(endpoint, tmp_path):
    """``test_backends.py``'s typed values, written as a file may write them:
    Virtuoso keeps them in canonical form as Oxigraph does."""
    from conftest import iri
    from test_backends import TYPED, typed_lines, typed_values

    from engine.backends.sparql import SparqlGraph

    spec, local = loaded_both(tmp_path, typed_lines(), "typed")
    remote = SparqlGraph(spec)
    try:
        assert typed_values(remote) == typed_values(local) == {iri(p): stored for p, (_, _, stored) in TYPED.items()}
    finally:
        remote.close()


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "values-in-text"])
def test_expand_pages_a_hub_in_the_sample_order_on_the_endpoint(endpoint, tmp_path, prepared):
    """The endpoint picks each pair's sample itself (SHA-1 order) and sends
    a page with names, not the hub: the candidates equal the embedded
    store's for every limit, with unnamed tails, literals (non-ASCII ones,
    which Virtuoso hashes unlike us, come first and are ordered by the
    client) and non-ASCII IRIs; a pair whose first page is all named costs
    one request. Both with prepared queries and with values in the text."""
    from engine.backends.sparql import SparqlGraph
    from engine.graph import Relation

    ex = "http://example.org/hub/"
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    lines = [f'<{ex}film> <{label}> "Hub Film" .']
    actors = [f"{ex}actor{i}" for i in range(100)] + [f"{ex}G\u00e9rard{i}" for i in range(3)]
    for i, actor in enumerate(actors):
        lines.append(f"<{ex}film> <{ex}starring> <{actor}> .")
        if i % 4:  # every fourth actor has no name: the page goes on past it
            lines.append(f'<{actor}> <{label}> "Actor {i}" .')
    for text in ("Caf\u00e9 \u2615", "plain", "\u00dcn\u00efcode", "zz"):
        lines.append(f'<{ex}film> <{ex}starring> "{text}" .')
    unordered = 3 + 4  # a first page of these alone is followed by a page of all of them (at most UNORDERED_MOST)
    for i in range(30):
        lines.append(f'<{ex}film> <{ex}directed> <{ex}director{i}> .')
        lines.append(f'<{ex}director{i}> <{label}> "Director {i}" .')
    # a hub on the other side: films starring one star, every third unnamed
    for i in range(45):
        lines.append(f"<{ex}sfilm{i}> <{ex}starring> <{ex}star> .")
        if i % 3:
            lines.append(f'<{ex}sfilm{i}> <{label}> "Star Film {i}" .')
    lines.append(f"<{ex}star> <{ex}directed> <{ex}director0> .")
    for i in range(45):  # and fans, every third unnamed: a second out-pair that pages on
        lines.append(f"<{ex}star> <{ex}knows> <{ex}fan{i}> .")
        if i % 3:
            lines.append(f'<{ex}fan{i}> <{label}> "Fan {i}" .')
    spec, local = loaded_both(tmp_path, lines, "hub")
    remote = SparqlGraph(spec, prepared=prepared, memo=False)  # every expansion pages (what a process keeps: below)
    assert remote.prepared is prepared
    sent = neighbours_sent(remote)  # the neighbours in each answer
    film, star = f"{ex}film", f"{ex}star"
    starring, directed = Relation(f"{ex}starring", "out"), Relation(f"{ex}directed", "out")
    starred = Relation(f"{ex}starring", "in")
    # both directions, (prepared) five out-pairs in eight slots, two of them paging on from different offsets
    mixed = [(film, starring), (star, starred), (film, directed), (star, directed), (star, Relation(f"{ex}knows", "out")),
             (f"{ex}sfilm1", starring)]
    mixed_follow_ups = 0  # expand calls of `mixed` that needed a second page request
    try:
        for limit in range(1, 40):
            for request in ([(film, starring)], [(film, directed)], [(film, starring), (film, directed)],
                            [(star, starred)], mixed):
                sent.clear()
                got = [(c.node.id, c.node.name) for c in remote.expand(request, limit=limit)]
                assert got == [(c.node.id, c.node.name) for c in local.expand(request, limit=limit)], limit
                if 4 * limit + 1 < len(actors) - 3 and limit >= unordered:  # the window is smaller
                    assert len(set().union(*sent) & set(actors)) < len(actors)  # never the whole hub
                if request == [(film, directed)]:
                    assert len(sent) == 1 and len(set(sent[0])) <= limit + 1
                mixed_follow_ups += request == mixed and len(sent) > 1
        assert mixed_follow_ups > 0
        # each pair's own window, whatever the other pairs of its direction ask for
        knows = Relation(f"{ex}knows", "out")
        windows = {(star, knows): (7, 2), (film, directed): (3, 5), (star, directed): (0, 1), (star, starred): (2, 6)}
        other = SparqlGraph(spec, prepared=not prepared)
        try:
            got = []
            for kg in (remote, other):
                text, params, slot_pairs = kg._page_query(list(windows), windows)
                rows: dict = {pair: set() for pair in windows}
                for row in kg._select(text, params):
                    pair = slot_pairs[int(row["i"].value)]
                    if pair is not None:
                        rows[pair].add(row["x"].value)
                got.append(rows)
            assert got[0] == got[1]
            assert [len(got[0][pair]) for pair in windows] == [3, 6, 1, 7]  # size + 1 rows, where there are
        finally:
            other.close()
        # ToG's rule for crowded relations: the first page shows whether a pair is crowded
        for over, size in ((20, 5), (10, 3), (37, 4), (38, 4), (2, 1), (31, 40)):
            for request in ([(film, starring)], [(film, directed)], [(film, starring), (film, directed)], mixed):
                sent.clear()
                got = [(c.node.id, c.node.name) for c in remote.expand(request, limit=30, over=over, size=size)]
                want = [(c.node.id, c.node.name) for c in local.expand(request, limit=30, over=over, size=size)]
                assert got == want, (over, size)
                if request == [(film, directed)] and over > 2:
                    assert len(sent) == 1 and len(set(sent[0])) <= max(over, 31)
        # the hub as the entity around which relations are listed, and named
        gérard = f"{ex}Gérard0"
        assert remote.relations([film, gérard]) == local.relations([film, gérard])
        assert {(r.id, r.direction, r.degree) for r in remote.relations([film, gérard])[film]} == \
            {(r.id, r.direction, r.degree) for r in local.relations([film, gérard])[film]}  # degrees too
        assert remote.labels([film, f"{ex}actor1"]) == local.labels([film, f"{ex}actor1"]) != {}
    finally:
        remote.close()



def test_virtuoso_pages_iris_that_are_not_ascii_in_the_sample_order(endpoint, tmp_path):
    """Virtuoso hashes an IRI's non-ASCII text as we do (a literal's it does
    not): prepared, a pair of 1,200 neighbours whose IRIs are not ASCII is
    paged in the sample order, a few dozen rows, where such IRIs came first,
    unordered, and the pair came whole. The candidates equal the embedded
    store's, prepared and with the values in the text (what other endpoints
    get, where such a pair comes whole up to UNORDERED_MOST neighbours)."""
    from engine.backends.common import sample_key
    from engine.backends.sparql import SparqlGraph
    from engine.graph import Relation

    ex = "http://example.org/accents/"
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    actors = [f"{ex}G\u00e9rard\u2615{i}" for i in range(1_200)]
    lines = [f'<{ex}film> <{label}> "Accent Film" .']
    for i, actor in enumerate(actors):
        lines.append(f"<{ex}film> <{ex}starring> <{actor}> .")
        if i % 2:
            lines.append(f'<{actor}> <{label}> "Acteur {i}" .')
    spec, local = loaded_both(tmp_path, lines, "accents")
    pair = [(f"{ex}film", Relation(f"{ex}starring", "out"))]
    for prepared in (True, False):
        kg = SparqlGraph(spec, prepared=prepared, memo=False)
        if prepared:  # the server's hash of each IRI, marked as UTF-8 as the pages do, is the sample order's
            rows = kg._select(f"SELECT ?x (SHA1(bif:__box_flags_tweak(STR(?x), 2)) AS ?h) "
                              f"WHERE {{ <{ex}film> <{ex}starring> ?x }}")
            assert len(rows) == len(actors) and all(sample_key(r["x"].value)[0] == r["h"].value for r in rows)
        sent = neighbours_sent(kg)
        try:
            for limit in (3, 10, 40):
                sent.clear()
                got = [(c.node.id, c.node.name) for c in kg.expand(pair, limit=limit)]
                assert got == [(c.node.id, c.node.name) for c in local.expand(pair, limit=limit)], (prepared, limit)
                if prepared:
                    assert len(set().union(*sent)) <= 4 * limit + 1, limit  # the window, not the pair
        finally:
            kg.close()


def test_a_limit_past_the_largest_window_is_taken_as_it(endpoint, tmp_path):
    """A pair of 5,000 neighbours expanded with five times MAX_CANDIDATES:
    the candidates are the largest window's, as on the embedded store, and
    no more than that window's neighbours leave the server (a first page of
    the limit asked for would bring the whole pair)."""
    from engine.backends.sparql import SparqlGraph
    from engine.graph import MAX_CANDIDATES, Relation

    ex = "http://example.org/wide/"
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    lines = [f'<{ex}film> <{label}> "Wide Film" .']
    for i in range(5_000):
        lines.append(f"<{ex}film> <{ex}starring> <{ex}actor{i}> .")
        lines += [f'<{ex}actor{i}> <{label}> "Actor {i}" .'] if i % 2 else []
    spec, local = loaded_both(tmp_path, lines, "wide")
    pair = [(f"{ex}film", Relation(f"{ex}starring", "out"))]
    kg = SparqlGraph(spec, memo=False)
    sent = neighbours_sent(kg)
    try:
        got = [(c.node.id, c.node.name) for c in kg.expand(pair, limit=5 * MAX_CANDIDATES)]
        assert got == [(c.node.id, c.node.name) for c in local.expand(pair, limit=MAX_CANDIDATES)]
        assert len(got) == MAX_CANDIDATES and 0 < len(set().union(*sent)) <= 4 * MAX_CANDIDATES + 1
    finally:
        kg.close()


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "values-in-text"])
def test_neighbours_the_endpoint_cannot_order_are_read_up_to_a_cap(endpoint, tmp_path, prepared, caplog):
    """Literals come first in a page, unordered, for the client to order. A
    pair of 600 of them (and 20 named IRIs) is read to its end once the first
    page holds nothing else, and its candidates equal the embedded store's;
    a pair of 6,000 is read no further than UNORDERED_MOST rows (it had come
    whole), and the process says once that its candidates may differ. A
    pair of 4,000 literals and 5,000 named IRIs, at the largest window, is paged
    within what Virtuoso sorts (SORTED_MAX rows) to the stores' candidates."""
    from engine.backends.sparql import SORTED_MAX, UNORDERED_MOST, SparqlGraph
    from engine.graph import MAX_CANDIDATES, Relation

    ex = "http://example.org/values/"
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    lines = []
    for name, values, items in (("few", 600, 20), ("many", 6_000, 20), ("wide", 4_000, 5_000)):
        lines.append(f'<{ex}{name}> <{label}> "Entity {name}" .')
        lines += [f'<{ex}{name}> <{ex}measured> "{name} {i}" .' for i in range(values)]
        for i in range(items):
            item = f"{ex}{name}-item{i}"
            lines += [f"<{ex}{name}> <{ex}measured> <{item}> .", f'<{item}> <{label}> "Item {i}" .']
    spec, local = loaded_both(tmp_path, lines, "values")
    few, many, wide = [(f"{ex}{name}", Relation(f"{ex}measured", "out")) for name in ("few", "many", "wide")]
    kg = SparqlGraph(spec, prepared=prepared, memo=False)
    sent = neighbours_sent(kg)
    pages: list[tuple[int, int]] = []
    plain_page = kg._page_query

    def page_spy(part, asked):
        pages.extend(asked[pair] for pair in part)
        return plain_page(part, asked)

    kg._page_query = page_spy
    try:
        got = [(c.node.id, c.node.name) for c in kg.expand([wide], limit=MAX_CANDIDATES)]
        assert got == [(c.node.id, c.node.name) for c in local.expand([wide], limit=MAX_CANDIDATES)]
        assert len(pages) > 2 and max(offset + size + 1 for offset, size in pages) <= SORTED_MAX
        with caplog.at_level(logging.INFO, logger="tog"):
            for limit in (5, 40):
                sent.clear()
                got = [(c.node.id, c.node.name) for c in kg.expand([few], limit=limit)]
                assert got == [(c.node.id, c.node.name) for c in local.expand([few], limit=limit)], limit
                assert 600 <= len(set().union(*sent)) <= 620
            assert "cannot put in the sample order" not in caplog.text
            for limit in (5, 40):
                sent.clear()
                got = kg.expand([many], limit=limit)
                assert len(got) == limit and all(c.node.literal for c in got)
                assert max(len(rows) for rows in sent) == UNORDERED_MOST + 1
                assert len(set().union(*sent)) == UNORDERED_MOST + 1
        assert caplog.text.count("cannot put in the sample order") == 1
    finally:
        kg.close()


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "values-in-text"])
def test_a_process_has_the_endpoint_sort_a_crowded_pair_and_list_a_hub_once(endpoint, tmp_path, prepared,
                                                                              monkeypatch):
    """The server reads all of a crowded pair to sort it for a page, and all
    of a hub's edges to list its relations: a process asks for each once
    (for a pair, once per limit and sampling rule) and later questions get
    the same candidates and relations without a request. A pair inside its
    first page is asked again (cheap; not kept); so is everything with
    ``memo=False``."""
    from engine.backends.sparql import SparqlGraph
    from engine.graph import Relation

    ex = "http://example.org/kept/"
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    lines = [f'<{ex}film> <{label}> "Kept Film" .']
    for i in range(60):  # crowded, every fourth unnamed: more than one page
        lines.append(f"<{ex}film> <{ex}starring> <{ex}actor{i}> .")
        if i % 4:
            lines.append(f'<{ex}actor{i}> <{label}> "Actor {i}" .')
    for i in range(3):
        lines.append(f"<{ex}film> <{ex}directed> <{ex}director{i}> .")
        lines.append(f'<{ex}director{i}> <{label}> "Director {i}" .')
    spec, local = loaded_both(tmp_path, lines, "kept")
    remote, forgetful = SparqlGraph(spec, prepared=prepared), SparqlGraph(spec, prepared=prepared, memo=False)
    film = f"{ex}film"
    starring, directed = (film, Relation(f"{ex}starring", "out")), (film, Relation(f"{ex}directed", "out"))

    def asked(kg, call):
        before = kg.meter.lookups
        return call(), kg.meter.lookups - before

    def candidates(kg, requests, **kw):
        return lambda: [(c.node.id, c.node.name) for c in kg.expand(requests, **kw)]

    try:
        for kg in (remote, forgetful):
            kg._name_terms()  # which name predicates the endpoint uses: asked once, first
            want = candidates(local, [starring], limit=10)()
            got, requests = asked(kg, candidates(kg, [starring], limit=10))
            assert got == want and requests == 2  # a first page, then the rest of the window
            again, requests = asked(kg, candidates(kg, [starring], limit=10))
            assert again == want and requests == (2 if kg is forgetful else 0)
            # another limit or sampling rule is another window: asked for
            for kw in ({"limit": 5}, {"limit": 10, "over": 20, "size": 5}):
                got, requests = asked(kg, candidates(kg, [starring], **kw))
                assert got == candidates(local, [starring], **kw)() and requests >= 1
            # a pair inside its first page is asked again, with a crowded pair kept
            got, requests = asked(kg, candidates(kg, [starring, directed], limit=10))
            assert got == candidates(local, [starring, directed], limit=10)() != want
            assert requests == (1 if kg is remote else 2)
            listed, requests = asked(kg, lambda: kg.relations([film]))
            assert listed == local.relations([film]) and requests >= 1  # (and the relations' own names, once)
            listing = 1 if prepared else 2  # requests: one prepared, else one per direction
            listed, requests = asked(kg, lambda: kg.relations([film]))
            assert listed == local.relations([film]) and requests == (listing if kg is forgetful else 0)
            listed, requests = asked(kg, lambda: kg.relations([film, f"{ex}actor1"]))
            assert listed == local.relations([film, f"{ex}actor1"]) and requests == listing
        assert len(remote.pages) == 3 and len(forgetful.pages) == len(forgetful.listings) == 0
        # a topic whose relations this process listed: its names alone (with them: the listing again)
        for kg in (remote, forgetful):
            texts: list[str] = []
            plain_select = kg._select
            kg._select = lambda text, params=(), plain=plain_select: texts.append(text) or plain(text, params)
            assert kg.topic_labels([film]) == {film: "Kept Film"} and len(texts) == 1
            assert ("?po" in texts[0]) == (kg is forgetful)
            del kg._select
        # relations come with their degrees, as on the embedded store; a pair known to be big gets
        # its whole window in its first page: the server sorts it once, not once per page
        listed = forgetful.relations([film])[film]
        assert [(r.id, r.direction, r.degree) for r in listed] == \
            [(r.id, r.direction, r.degree) for r in local.relations([film])[film]]
        big = next((film, r) for r in listed if r.id == starring[1].id)
        assert big[1].degree == 60
        monkeypatch.setattr("engine.backends.sparql.WINDOW_AT_ONCE", 59)
        got, requests = asked(forgetful, candidates(forgetful, [big], limit=10))
        assert got == candidates(local, [starring], limit=10)() and requests == 1
        monkeypatch.setattr("engine.backends.sparql.WINDOW_AT_ONCE", 60)
        got, requests = asked(forgetful, candidates(forgetful, [big], limit=10))
        assert got == candidates(local, [starring], limit=10)() and requests == 2
    finally:
        remote.close()
        forgetful.close()



def test_a_prepared_listing_counts_a_hub_apart_past_its_first_read(endpoint, tmp_path, monkeypatch):
    """A prepared listing reads at most LISTED_AT_ONCE of an entity's edges
    each way (here 50): an entity that reaches it, one way or the other, is
    asked again, each relation counted whole, in one request for the batch's
    hubs. Its relations and degrees equal the embedded store's, a relation
    past the first read's rows included; a batch without a hub costs one
    request, and so do topics' relations read with their names."""
    from engine.backends.sparql import SparqlGraph

    monkeypatch.setattr("engine.backends.sparql.LISTED_AT_ONCE", 50)
    ex = "http://example.org/listed/"
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    hub, exact, small = f"{ex}hub", f"{ex}exact", f"{ex}small"
    lines = [f'<{e}> <{label}> "{e[-5:]}" .' for e in (hub, exact, small)]
    lines += [f"<{ex}fan{i}> <{ex}likes> <{hub}> ." for i in range(70)]
    lines += [f"<{ex}zz{i}> <{ex}zz_rare> <{hub}> ." for i in range(2)]
    lines += [f"<{hub}> <{ex}born_in> <{ex}city> .", f"<{small}> <{ex}likes> <{hub}> ."]
    lines += [f"<{exact}> <{ex}links> <{ex}n{i}> ." for i in range(50)]  # just the cap: asked again
    spec, local = loaded_both(tmp_path, lines, "listed")
    kg = SparqlGraph(spec, prepared=True, memo=False)
    texts: list[str] = []
    plain_select = kg._select

    def spy(text, params=()):
        rows = plain_select(text, params)
        texts.append(text)
        if "LIMIT 50" in text:  # the first read: at most the cap each way of each entity
            for e in range(len(params)):
                for way in ("po", "pi"):
                    assert sum(int(r["n"].value) for r in rows if r[way] is not None and r["k"].value == str(e)) <= 50
        return rows

    kg._select = spy
    kg._name_terms()
    kg.relations([hub, exact, small])  # (the relations' own names: asked once, here)
    try:
        for batch, hubs in (([small], 0), ([hub, small], 1), ([small, exact, hub], 2), ([exact], 1)):
            texts.clear()
            got, want = kg.relations(batch), local.relations(batch)
            assert got == want
            assert {e: [(r.id, r.direction, r.degree) for r in rels] for e, rels in got.items()} == \
                {e: [(r.id, r.direction, r.degree) for r in rels] for e, rels in want.items()}
            assert [("GROUP BY ?pi }" in t) for t in texts] == [False] + [True] * bool(hubs), batch
            assert len(texts) == 1 + bool(hubs)
        assert {(r.id, r.degree) for r in local.relations([hub])[hub]} >= {(f"{ex}likes", 71), (f"{ex}zz_rare", 2)}
        texts.clear()
        assert kg.topic_labels([hub, small]) == local.labels([hub, small])
        assert len(texts) == 2 and kg.relations([hub, small]) == local.relations([hub, small]) and len(texts) == 2
        assert [(r.id, r.degree) for r in kg.relations([hub])[hub]] == \
            [(r.id, r.degree) for r in local.relations([hub])[hub]]
    finally:
        kg.close()

def test_a_listing_as_text_joins_its_batch_on_virtuoso_rather_than_testing_each_edge_against_it(
        endpoint, tmp_path):
    """Past PREPARED_MAX entities a listing (``relations_out.rq``,
    ``relations_in.rq``, and topics with their names) sends its batch in its
    text. Virtuoso 7.2 makes an IN list of a VALUES block of one column of
    distinct IRIs and tests every edge it reads against all of them
    (``ONE_OF_THESE`` in its plan): at 10M, a batch of 395 entities ending
    with five hubs took 3.9-7.3 s a direction, against 0.13-0.21 s joined. Each
    entity goes with its place, which keeps the batch a join in the plan the
    server makes of the very texts sent; the answers are the embedded
    store's."""
    from engine.backends.sparql import PREPARED_MAX, SparqlGraph, _without_comments

    ex = "http://example.org/batch/"
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    ids = [f"{ex}e{i}" for i in range(PREPARED_MAX + 8)] + [f"{ex}hub"]
    lines = [f'<{e}> <{label}> "{e.rsplit("/", 1)[1]}" .' for e in ids]
    lines += [f"<{e}> <{ex}likes> <{ex}hub> ." for e in ids[:-1]]
    lines += [f"<{ex}hub> <{ex}has> <{ex}t{i}> ." for i in range(300)]
    spec, local = loaded_both(tmp_path, lines, "batch")

    def plan(text: str) -> str:
        query = " ".join(_without_comments(text).split()).replace("'", "''")
        done = subprocess.run([LAUNCHER, "sql", f"explain('sparql {query}');"], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0 and "Subquery" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    for prepared in (True, False):
        kg = SparqlGraph(spec, prepared=prepared, memo=False)
        texts: list[str] = []
        plain_select = kg._select
        kg._select = lambda text, params=(), plain=plain_select: texts.append(text) or plain(text, params)
        try:
            assert kg.relations(ids) == local.relations(ids)
            assert kg.topic_labels(ids) == local.labels(ids)
            sent = [t for t in texts if "(COUNT(*) AS ?n)" in t and "VALUES (?e" in t]
            assert len(sent) == 3, texts  # a listing each way, then topics with their relations
            for text in sent:
                assert "ONE_OF_THESE" not in plan(text)
            # (the check sees the IN list a batch of one column gets)
            one_column = re.sub(r' "\d+"\^\^<http://www.w3.org/2001/XMLSchema#integer>\)', ")", sent[-1])
            assert "ONE_OF_THESE" in plan(one_column.replace("VALUES (?e ?k)", "VALUES (?e)"))
        finally:
            kg.close()


def test_the_memo_keeps_the_most_recently_used():
    """A process keeps at most ``size`` reads, dropping the least recently
    used; ``size`` 0 keeps none."""
    from engine.backends.sparql import Memo

    memo = Memo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # a is now the most recent
    memo.put("c", 3)
    assert memo.get("b") is None and memo.get("a") == 1 and memo.get("c") == 3 and len(memo) == 2
    memo.put("a", 4)  # a new value for a kept key
    memo.put("d", 5)
    assert memo.get("c") is None and memo.get("a") == 4 and memo.get("d") == 5
    off = Memo(0)
    off.put("a", 1)
    assert off.get("a") is None and len(off) == 0


def test_the_wire_xml_results_no_comments_and_garbage_is_one_error(tmp_path):
    """Requests ask for XML results and carry no comment lines; an answer
    that is not SPARQL results is one clear error."""
    from engine.backends.sparql import SparqlGraph
    from engine.errors import StoreError

    seen: list[tuple[str, str]] = []

    def reply(handler, query):
        seen.append((handler.headers["Accept"], query))
        return TRUE if query.startswith("ASK") else b"<html>not results</html>"

    with answering(reply) as port:
        kg = SparqlGraph(f"sparql+http://127.0.0.1:{port}/sparql")
        with pytest.raises(StoreError, match="not SPARQL Results in XML"):
            kg.relations(["http://example.org/x"])
        kg.close()
    assert len(seen) >= 2
    for accept, query in seen:
        assert accept == "application/sparql-results+xml"
        assert not [line for line in query.splitlines() if line.lstrip().startswith("#")]
    assert "SELECT ?e ?po (COUNT(*) AS ?n) WHERE" in seen[-1][1]  # the relation listing (its .rq has comments)


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "values-in-text"])
def test_a_look_ahead_answer_that_does_not_fit_its_query_is_one_error(prepared):
    """An endpoint whose answer to the look-ahead's tails names a branch
    the query does not have: one ``StoreError``, not a traceback and not a
    silently dropped row."""
    from engine.backends.sparql import SparqlGraph
    from engine.errors import StoreError
    from engine.graph import Relation

    def reply(handler, query):
        if query.startswith("ASK"):
            return TRUE
        if "AS ?v)" in query:  # the probe for prepared queries
            return probe_answer()
        return (b'<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#"><head>'
                b'<variable name="k"/><variable name="n"/></head><results><result>'
                b'<binding name="k"><literal>7</literal></binding>'
                b'<binding name="n"><uri>http://example.org/t</uri></binding></result></results></sparql>')

    with answering(reply, "Virtuoso/07.20.3229 (Linux)") as port:
        kg = SparqlGraph(f"sparql+http://127.0.0.1:{port}/sparql", prepared=prepared)
        assert kg.prepared is prepared
        with pytest.raises(StoreError, match=r"does not fit the query \(\?k = "):
            kg.schema.after([Relation("http://example.org/r", "out")])
        kg.close()


def test_requests_share_a_kept_connection_and_survive_its_close(endpoint, tmp_path):
    """Every request goes on one kept HTTP connection; when it is closed
    between two requests (a server's idle timeout), the next request is made
    again on a new one without the caller noticing."""
    import urllib.parse

    from proxy import TcpProxy

    from engine.backends.sparql import SparqlGraph

    spec, _ = endpoint
    parts = urllib.parse.urlsplit(spec.split("+", 1)[1])
    with TcpProxy(parts.hostname, parts.port) as proxy:
        # no retries: only the taking again of a dropped kept connection can save the request;
        # nothing kept for the process (Memo), so that every listing is a request
        kg = SparqlGraph(spec.replace(f":{parts.port}/", f":{proxy.port}/"), retries=0, memo=False)
        film = "http://rdf.freebase.com/ns/m.film1"
        try:
            first = kg.relations([film])
            for _ in range(3):
                assert kg.relations([film]) == first
            assert first[film] and proxy.accepted == 1  # the ASK at start and four listings
            proxy.drop()
            assert kg.relations([film]) == first
            assert proxy.accepted == 2
        finally:
            kg.close()


def test_through_an_http_proxy_each_request_goes_on_its_own_connection(tmp_path, monkeypatch):
    """With ``http_proxy`` set (and the endpoint not in ``no_proxy``), requests
    go through the proxy, as urllib sends them, and ask it to close."""
    from engine.backends.sparql import SparqlGraph

    seen: list[tuple[str, str]] = []

    def reply(handler, query):
        seen.append((handler.path, handler.headers.get("Connection", "")))
        return TRUE

    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with answering(reply) as port:
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{port}")
        kg = SparqlGraph("sparql+http://endpoint.invalid:8890/sparql")
        assert kg.has_entity("http://example.org/x")
        kg.close()
    assert seen == [("http://endpoint.invalid:8890/sparql", "close")] * 2  # the ASK at start, then has_entity


def test_prepared_queries_repeat_their_text_and_send_values_as_parameters(stores, tmp_path):
    """On Virtuoso the listing, naming and paging queries are prepared: the
    text is the same whatever the entities (so the endpoint compiles it once)
    and names none of them; the values travel as HTTP parameters. Answers
    equal those with the values in the text, past one request's slots too,
    and an IRI the store lacks is not added to its dictionary (as the IRIs
    in a query's text are)."""
    from engine.store import open_store
    from engine.backends.sparql import PAD, PREPARED_MAX, SparqlGraph
    from engine.graph import Relation

    spec, local_spec = stores
    # nothing kept for the process (Memo): every listing is a request
    prepared_store, plain, local_store = SparqlGraph(spec, memo=False), SparqlGraph(spec, prepared=False), \
        open_store(local_spec)
    prepared, local = prepared_store, local_store.kg
    prepared._name_terms()  # asked once, with the values in the text
    sent: list[tuple[str, dict]] = []
    plain_query = prepared._select
    prepared._select = lambda text, params=(): sent.append((text, dict(params))) or plain_query(text, params)
    film, person = "http://rdf.freebase.com/ns/m.film1", "http://rdf.freebase.com/ns/m.dir1"
    absent = f"http://rdf.freebase.com/ns/m.absent{uuid.uuid4().hex}"
    never = f"{absent}-asked-prepared-only"
    try:
        assert prepared.prepared and not plain.prepared
        for ids in ([film], [person], [absent], [film, person, absent]):
            assert prepared.relations(ids) == plain.relations(ids) == local.relations(ids)
            assert prepared.labels(ids) == plain.labels(ids) == local.labels(ids)
        assert all(params for _, params in sent)  # every request prepared
        listings = [(text, params) for text, params in sent if "?po" in text]
        namings = [(text, params) for text, params in sent  # not those of the relations' own names
                   if "?po" not in text and set(params.values()) <= {film, person, absent, PAD}]
        assert [params for _, params in listings[:3]] == [{"tog0": i} for i in (film, person, absent)]
        assert len({text for text, _ in listings[:3]}) == len({text for text, _ in namings[:3]}) == 1
        assert set(listings[3][1].values()) == {film, person, absent, PAD}  # four slots, one unused
        assert listings[3][0] != listings[0][0] and namings[3][0] != namings[0][0]
        assert not any(i in text for text, _ in sent for i in (film, person, absent))
        # past PREPARED_MAX entities, a request per direction with them in its text (faster than several
        # prepared; one UNION of both was once 700x slower on Virtuoso, see relations_out.rq)
        many = [film, person] + [f"{absent}{i}" for i in range(PREPARED_MAX)]
        sent.clear()
        assert prepared.relations(many) == plain.relations(many) == local.relations(many)
        assert len(sent) == 2 and all(not params and film in text for text, params in sent)
        assert "?po" in sent[0][0] and "?pi" not in sent[0][0] and "?pi" in sent[1][0] and "?po" not in sent[1][0]
        sent.clear()
        assert prepared.relations(many[:PREPARED_MAX]) == local.relations(many[:PREPARED_MAX])
        assert len(sent) == 1 and len(sent[0][1]) == PREPARED_MAX and film not in sent[0][0]
        requests = [(film, r) for r in local.relations([film])[film]] + [(person, Relation(r.id, r.direction))
                                                                       for r in local.relations([person])[person]]
        for over in (0, 2):
            got = [(c.node.id, c.node.name) for c in prepared.expand(requests, limit=5, over=over)]
            assert got == [(c.node.id, c.node.name) for c in plain.expand(requests, limit=5, over=over)] != []
        assert not any(i in text for text, _ in sent for i in (film, person))
        # looking through a CVT (m.film1 -starring-> m.cvt1 -actor-> m.actor1)
        cvt = "http://rdf.freebase.com/ns/m.cvt1"
        behind = [(cvt, r) for r in local.relations([cvt])[cvt] if r.direction == "out"] + [(absent, requests[0][1])]
        sent.clear()

        def named_behind(kg):
            return [(c.source, c.relation.id, c.node.id, c.node.name) for c in kg.expand(behind, 5, through=False)]

        assert named_behind(prepared) == named_behind(plain) == named_behind(local)
        assert len([c for c in named_behind(prepared) if c[0] == cvt]) >= 2 and sent and all(p for _, p in sent)
        # Virtuoso adds every IRI of a query's text to its dictionary; not those sent as values
        assert prepared.relations([never]) == {never: []} and prepared.labels([never]) == {}
        assert prepared.expand([(never, requests[0][1])], limit=5) == []
        assert not prepared.has_entity(never) and prepared.has_entity(film) and prepared.has_entity(person)
        held = f"select case when iri_to_id('{never}', 0) is null then 'ABSENT' else 'HELD' end;"
        check = subprocess.run([str(REPO / "launcher" / "virtuoso-server"), "sql", held],
                               capture_output=True, text=True, timeout=60)
        assert check.returncode == 0 and "ABSENT" in check.stdout, check.stdout  # not added by the lookups
    finally:
        for opened in (prepared_store, plain, local_store):
            opened.close()


def test_prepared_queries_only_on_a_virtuoso_that_runs_them(tmp_path):
    """Another endpoint gets the values in the query text; so does one that
    calls itself Virtuoso but fails the one probe; one that passes it gets
    prepared queries."""
    from engine.backends.sparql import SparqlGraph

    sent_back = {"text": b"<html>no</html>"}
    seen: list[str] = []

    def reply(handler, query):
        seen.append(query)
        if "bif:http_param" in query:
            return sent_back["text"]
        return TRUE

    for server, answer, want in (
            (None, None, False),
            ("Virtuoso/07.20.3229 (Linux)", b"<html>no</html>", False),
            # a Virtuoso that hashes the probe's non-ASCII text unlike us: its pages could not be ours
            ("Virtuoso/07.20.3229 (Linux)", probe_answer("0" * 40), False),
            ("Virtuoso/07.20.3229 (Linux)", probe_answer(), True)):
        seen.clear()
        sent_back["text"] = answer
        with answering(reply, server) as port:
            kg = SparqlGraph(f"sparql+http://127.0.0.1:{port}/sparql")
            assert kg.prepared is want, server
            kg.close()
        assert len(seen) == (1 if server is None else 2)  # the ASK, and the probe for a Virtuoso


def test_an_answer_whose_slot_is_not_in_the_query_is_one_error(tmp_path):
    """A prepared answer naming a slot the query does not have (a broken
    endpoint) is a clear StoreError, not a traceback."""
    from engine.backends.sparql import SparqlGraph
    from engine.errors import StoreError

    def results(var, *values):
        rows = "".join(f'<result><binding name="{var}"><literal>{v}</literal></binding></result>' for v in values)
        return ('<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#"><head>'
                f'<variable name="{var}"/></head><results>{rows}</results></sparql>').encode()

    def reply(handler, query):
        if query.startswith("ASK"):
            return TRUE
        if "BIND(bif:http_param('tog0') AS ?v)" in query:
            return probe_answer()  # the probe passes
        if "FILTER EXISTS" in query:
            return results("np")  # which name predicates the endpoint uses: none
        return results("k", 7)  # a one-slot listing answered for slot 7

    with answering(reply, "Virtuoso/07.20.3229 (Linux)") as port:
        kg = SparqlGraph(f"sparql+http://127.0.0.1:{port}/sparql")
        assert kg.prepared
        with pytest.raises(StoreError, match="does not fit the query"):
            kg.relations(["http://example.org/x"])
        kg.close()


# The prepared texts are assembled in Python from sparql/prepared_*.rq; these
# are the exact texts Virtuoso receives for two slots (comments dropped), as
# neo4j-graphrag pins its Cypher. A change to a query shows up here.
PINNED = {
    "relations": ("""\
SELECT ?k ?po ?pi ?n WHERE {
  { SELECT ?k ?po (COUNT(*) AS ?n) WHERE { { { SELECT ?po WHERE { `bif:iri_to_id(bif:http_param('tog0'), 0)` ?po ?x . } LIMIT 10000 } BIND(0 AS ?k) }
    UNION { { SELECT ?po WHERE { `bif:iri_to_id(bif:http_param('tog1'), 0)` ?po ?x . } LIMIT 10000 } BIND(1 AS ?k) } } GROUP BY ?k ?po }
  UNION
  { SELECT ?k ?pi (COUNT(*) AS ?n) WHERE { { { SELECT ?pi WHERE { ?x ?pi `bif:iri_to_id(bif:http_param('tog0'), 0)` . } LIMIT 10000 } BIND(0 AS ?k) }
    UNION { { SELECT ?pi WHERE { ?x ?pi `bif:iri_to_id(bif:http_param('tog1'), 0)` . } LIMIT 10000 } BIND(1 AS ?k) } } GROUP BY ?k ?pi }
}""",
        {'tog0': 'http://example.org/a', 'tog1': 'http://example.org/b'}),
    "hub_relations": ("""\
SELECT ?k ?po ?pi ?n WHERE {
  { { SELECT ?po (COUNT(*) AS ?n) WHERE { `bif:iri_to_id(bif:http_param('tog0'), 0)` ?po ?x . } GROUP BY ?po } BIND(0 AS ?k) }
    UNION { { SELECT ?po (COUNT(*) AS ?n) WHERE { `bif:iri_to_id(bif:http_param('tog1'), 0)` ?po ?x . } GROUP BY ?po } BIND(1 AS ?k) }
  UNION
  { { SELECT ?pi (COUNT(*) AS ?n) WHERE { ?x ?pi `bif:iri_to_id(bif:http_param('tog0'), 0)` . } GROUP BY ?pi } BIND(0 AS ?k) }
    UNION { { SELECT ?pi (COUNT(*) AS ?n) WHERE { ?x ?pi `bif:iri_to_id(bif:http_param('tog1'), 0)` . } GROUP BY ?pi } BIND(1 AS ?k) }
}""",
        {'tog0': 'http://example.org/a', 'tog1': 'http://example.org/b'}),
    "labels": ("""\
SELECT ?k ?np ?rank (MIN(STR(?label)) AS ?name) WHERE { { { `bif:iri_to_id(bif:http_param('tog0'), 0)` ?np ?label . VALUES (?np) { (<http://www.w3.org/2000/01/rdf-schema#label>) }  BIND(0 AS ?k) }
    UNION { `bif:iri_to_id(bif:http_param('tog1'), 0)` ?np ?label . VALUES (?np) { (<http://www.w3.org/2000/01/rdf-schema#label>) }  BIND(1 AS ?k) } } BIND(IF(LANG(?label) = "", 2, IF(LCASE(LANG(?label)) = "en", 0, IF(STRSTARTS(LCASE(LANG(?label)), "en-"), 1, 3))) AS ?rank) }
GROUP BY ?k ?np ?rank""",
        {'tog0': 'http://example.org/a', 'tog1': 'http://example.org/b'}),
    "topics": ("""\
SELECT ?k ?np ?rank ?name ?po ?pi ?n WHERE {
  { SELECT ?k ?np ?rank (MIN(STR(?label)) AS ?name) WHERE {
      { { `bif:iri_to_id(bif:http_param('tog0'), 0)` ?np ?label . VALUES (?np) { (<http://www.w3.org/2000/01/rdf-schema#label>) }  BIND(0 AS ?k) }
    UNION { `bif:iri_to_id(bif:http_param('tog1'), 0)` ?np ?label . VALUES (?np) { (<http://www.w3.org/2000/01/rdf-schema#label>) }  BIND(1 AS ?k) } } BIND(IF(LANG(?label) = "", 2, IF(LCASE(LANG(?label)) = "en", 0, IF(STRSTARTS(LCASE(LANG(?label)), "en-"), 1, 3))) AS ?rank) } GROUP BY ?k ?np ?rank }
  UNION
  { SELECT ?k ?po (COUNT(*) AS ?n) WHERE { { { SELECT ?po WHERE { `bif:iri_to_id(bif:http_param('tog0'), 0)` ?po ?x . } LIMIT 10000 } BIND(0 AS ?k) }
    UNION { { SELECT ?po WHERE { `bif:iri_to_id(bif:http_param('tog1'), 0)` ?po ?x . } LIMIT 10000 } BIND(1 AS ?k) } } GROUP BY ?k ?po }
  UNION
  { SELECT ?k ?pi (COUNT(*) AS ?n) WHERE { { { SELECT ?pi WHERE { ?x ?pi `bif:iri_to_id(bif:http_param('tog0'), 0)` . } LIMIT 10000 } BIND(0 AS ?k) }
    UNION { { SELECT ?pi WHERE { ?x ?pi `bif:iri_to_id(bif:http_param('tog1'), 0)` . } LIMIT 10000 } BIND(1 AS ?k) } } GROUP BY ?k ?pi }
}""",
        {'tog0': 'http://example.org/a', 'tog1': 'http://example.org/b'}),
    "page": ("""\
SELECT ?i ?x ?np ?label (SAMPLE(?names_it) AS ?other) WHERE {
  { { { SELECT ?x WHERE { `bif:iri_to_id(bif:http_param('tog0'), 0)` `bif:iri_to_id(bif:http_param('tog1'), 0)` ?x . FILTER(!isBlank(?x)) }
    ORDER BY (IF(isIRI(?x), SHA1(bif:__box_flags_tweak(STR(?x), 2)), ""))
    LIMIT 4 OFFSET 0 }
  BIND(0 AS ?i) }

  UNION
  { { SELECT ?x WHERE { ?x `bif:iri_to_id(bif:http_param('tog3'), 0)` `bif:iri_to_id(bif:http_param('tog2'), 0)` . FILTER(!isBlank(?x)) }
    ORDER BY (IF(isIRI(?x), SHA1(bif:__box_flags_tweak(STR(?x), 2)), ""))
    LIMIT 4 OFFSET 0 }
  BIND(1 AS ?i) }
 }
  OPTIONAL { ?x ?np ?label . VALUES (?np) { (<http://www.w3.org/2000/01/rdf-schema#label>) }  }
  
  
}
GROUP BY ?i ?x ?np ?label""",
        {'tog0': 'http://example.org/a', 'tog1': 'http://example.org/r', 'tog2': 'http://example.org/b', 'tog3': 'http://example.org/r'}),
    "page of a big pair": ("""\
SELECT ?i ?x ?np ?label (SAMPLE(?names_it) AS ?other) WHERE {
  { { { SELECT ?x WHERE { `bif:iri_to_id(bif:http_param('tog0'), 0)` <http://example.org/r> ?x . FILTER(!isBlank(?x)) }
    ORDER BY (IF(isIRI(?x), SHA1(bif:__box_flags_tweak(STR(?x), 2)), ""))
    LIMIT 13 OFFSET 0 }
  BIND(0 AS ?i) }
 }
  OPTIONAL { ?x ?np ?label . VALUES (?np) { (<http://www.w3.org/2000/01/rdf-schema#label>) }  }
  
  
}
GROUP BY ?i ?x ?np ?label""",
        {'tog0': 'http://example.org/a', 'tog1': 'http://example.org/r'}),
    "schema_tails_out": ("""\
SELECT ?k ?n WHERE {
  { { SELECT DISTINCT ?n WHERE { { SELECT ?s ?n WHERE { ?s `bif:iri_to_id(bif:http_param('tog0'), 0)` ?n . } LIMIT 256 } FILTER(isIRI(?n)) } LIMIT 17 } BIND(0 AS ?k) }
}""",
        {'tog0': 'http://example.org/r'}),
    "schema_tails_in": ("""\
SELECT ?k ?n WHERE {
  { { SELECT DISTINCT ?n WHERE { { SELECT ?n ?o WHERE { ?n `bif:iri_to_id(bif:http_param('tog0'), 0)` ?o . } LIMIT 256 } FILTER(isIRI(?n)) } LIMIT 17 } BIND(0 AS ?k) }
}""",
        {'tog0': 'http://example.org/r'}),
    "schema_around": ("""\
SELECT ?k ?d ?p (COUNT(*) AS ?n) WHERE {
  { { SELECT ?p WHERE { `bif:iri_to_id(bif:http_param('tog0'), 0)` ?p ?x . } LIMIT 32 } BIND(0 AS ?k) BIND("out" AS ?d) }
    UNION { { SELECT ?p WHERE { ?x ?p `bif:iri_to_id(bif:http_param('tog0'), 0)` . } LIMIT 32 } BIND(0 AS ?k) BIND("in" AS ?d) }
    UNION { { SELECT ?p WHERE { `bif:iri_to_id(bif:http_param('tog1'), 0)` ?p ?x . } LIMIT 32 } BIND(1 AS ?k) BIND("out" AS ?d) }
    UNION { { SELECT ?p WHERE { ?x ?p `bif:iri_to_id(bif:http_param('tog1'), 0)` . } LIMIT 32 } BIND(1 AS ?k) BIND("in" AS ?d) }
}
GROUP BY ?k ?d ?p""",
        {'tog0': 'http://example.org/a', 'tog1': 'http://example.org/b'}),
}


def test_prepared_query_texts_are_pinned(tmp_path):
    """Every prepared text as sent, with the HTTP parameters that fill its
    slots (an out-pair and an in-pair for the page: the in-pair's entity is
    the object of its pattern)."""
    from engine.backends.sparql import WINDOW_AT_ONCE, SparqlGraph
    from engine.graph import Relation

    label = "http://www.w3.org/2000/01/rdf-schema#label"

    def results(var, *values, iri=False):
        tag = "uri" if iri else "literal"
        rows = "".join(f'<result><binding name="{var}"><{tag}>{v}</{tag}></binding></result>' for v in values)
        return ('<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#"><head>'
                f'<variable name="{var}"/></head><results>{rows}</results></sparql>').encode()

    sent = []

    def reply(handler, query):
        if query.startswith("ASK"):
            return TRUE
        if "BIND(bif:http_param('tog0') AS ?v)" in query:
            return probe_answer()  # the probe passes: a Virtuoso that runs prepared queries
        if "FILTER EXISTS" in query:
            return results("np", label, iri=True)  # the endpoint names things by rdfs:label only
        sent.append((query, {k: v[0] for k, v in handler.form.items() if k.startswith("tog")}))
        return results("k")

    a, b, r = "http://example.org/a", "http://example.org/b", Relation("http://example.org/r", "out")
    with answering(reply, "Virtuoso/07.20.3229 (Linux)") as port:
        kg = SparqlGraph(f"sparql+http://127.0.0.1:{port}/sparql", memo=False)  # every text sent, none kept
        kg.relations([a, b])
        kg._slot_rows("hub_relations", [a, b])  # (asked for the entities a listing found to be hubs)
        kg.labels([a, b])
        kg.topic_labels([a, b])
        kg.expand([(a, r), (b, Relation(r.id, "in"))], limit=3)
        kg.expand([(a, Relation(r.id, "out", degree=WINDOW_AT_ONCE + 1))], limit=3)  # big: its relation in the text
        kg.schema.after([r, Relation(r.id, "in")])  # the look-ahead's tails: a request per direction
        kg.schema._around([a, b])  # and what they show
        kg.close()
    assert sent == list(PINNED.values())


def test_warm_asks_its_questions_of_an_endpoint(endpoint, tog, tmp_path, monkeypatch):
    """`tog warm` on a SPARQL endpoint (real Virtuoso): named entities of the
    graph by a bounded read, each asked about offline; nothing is recorded."""
    from conftest import no_traceback

    from engine.store import open_store

    spec, _ = endpoint
    monkeypatch.setenv("TOG_SPARQL_RUNS", str(tmp_path / "runs"))
    with open_store(spec) as s:
        entities = s.kg.named_entities(3)
        assert len(set(entities)) == 3 and set(entities) <= set(s.kg.labels(entities))
    done = tog("warm", "--store", spec, "--questions", "3")
    assert done.exit_code == 0 and no_traceback(done), done.output
    assert "warmed: 3 questions" in done.output
    assert all(f"<{e}>" in done.stderr for e in entities)
    assert "no runs yet" in tog("runs", "list", "--store", spec).output


EMPTY = b'<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#"><head/><results/></sparql>'
NONE_COUNTED = (b'<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#">'
                b'<head><variable name="n"/>'
                b'</head><results><result><binding name="n"><literal>0</literal></binding></result></results></sparql>')


def knows_nothing(handler, query) -> bytes:
    """An endpoint's answers with an empty KG."""
    return TRUE if query.startswith("ASK") else NONE_COUNTED if "(COUNT(*) AS ?n) WHERE {" in query and \
        "GROUP BY" not in query else EMPTY


@pytest.mark.parametrize("sized,whole", [(True, False), (False, False), (False, True)],
                         ids=["content-length", "read-to-close", "read-to-close-whole"])
def test_an_answer_cut_short_is_an_error_not_fewer_rows(tmp_path, sized, whole):
    """A reply whose connection ends before the body its Content-Length
    gives (a dropped connection, a proxy that gave up) is retried, then one
    error: read as it came, a listing cut after a row made the search
    answer from part of the KG, with no word of it. A reply without a
    Content-Length, read until the connection closes, is whole only when
    its document ends (a comment after the root's end is allowed)."""
    import socket
    import threading
    import urllib.parse

    from engine.backends.sparql import SparqlGraph
    from engine.errors import StoreError

    rows = "".join(f'<result><binding name="e"><uri>http://example.org/x</uri></binding><binding name="po">'
                   f'<uri>http://example.org/r{i}</uri></binding><binding name="n"><literal>1</literal></binding>'
                   f"</result>" for i in range(50))
    listing = ('<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#"><head>'
               '<variable name="e"/><variable name="po"/><variable name="pi"/><variable name="n"/></head>'
               f"<results>{rows}</results></sparql>").encode()
    asked = []
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    head += conn.recv(65536)
                length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
                body = head.split(b"\r\n\r\n", 1)[1]
                while len(body) < length:
                    body += conn.recv(65536)
                query = urllib.parse.parse_qs(body.decode())["query"][0]
                asked.append(query)
                answer = TRUE if query.startswith("ASK") else listing
                cut = answer if query.startswith("ASK") else answer[: answer.index(b"</result>") + 9]
                if whole:
                    cut = answer + b"<!-- 3 ms -->\n"
                size = b"Content-Length: " + str(len(answer)).encode() + b"\r\n" if sized else b""
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+xml\r\n" + size
                             + b"Connection: close\r\n\r\n" + cut)

    threading.Thread(target=serve, daemon=True).start()
    try:
        kg = SparqlGraph(f"sparql+http://127.0.0.1:{server.getsockname()[1]}/sparql", retries=1)
        if whole:  # every row, asked once
            rows = kg._select("SELECT ?e ?po ?n WHERE { ?e ?po ?n }")
            assert len(rows) == 50 and len([q for q in asked if not q.startswith("ASK")]) == 1
            return
        with pytest.raises(StoreError, match="IncompleteRead"):
            kg.relations(["http://example.org/x"])
        assert len([q for q in asked if not q.startswith("ASK")]) == 2  # the first try and one retry
        kg.close()
    finally:
        server.close()


def test_an_endpoint_s_user_and_password_authenticate_and_are_never_shown(tog, tmp_path, monkeypatch):
    """``sparql+http://USER:PASSWORD@HOST/...``: the pair goes as HTTP basic
    authentication, and no message, `tog info` line or error shows it; an
    address that names no usable port or host is one line."""
    import base64

    monkeypatch.setenv("TOG_SPARQL_RUNS", str(tmp_path / "runs"))
    heard: list[str | None] = []

    def reply(handler, query):
        heard.append(handler.headers["Authorization"])
        return knows_nothing(handler, query)

    with answering(reply) as port:
        spec = f"sparql+http://alice:s3cr%40t@127.0.0.1:{port}/sparql"
        info = tog("info", "--store", spec)
        assert info.exit_code == 0 and f"http://127.0.0.1:{port}/sparql" in info.output, info.output
        assert "s3cr" not in info.output and "alice" not in info.output
        assert heard and set(heard) == {"Basic " + base64.b64encode(b"alice:s3cr@t").decode()}
    for spec, said in [("sparql+http://alice:s3cr3t@127.0.0.1:9/sparql", "cannot reach the SPARQL endpoint at "
                        "http://127.0.0.1:9/sparql"),
                       ("sparql+http://alice:s3cr3t@127.0.0.1:notaport/sparql", "not a usable SPARQL endpoint address"),
                       ("sparql+http://alice:s3cr3t@[::1/sparql", "not a usable SPARQL endpoint address"),
                       ("sparql+http:///sparql", "it names no host"),
                       ("ftp://alice:s3cr3t@127.0.0.1/x", "unknown store 'ftp://127.0.0.1/x'")]:
        failed = tog("ask", "who directed [Harbor Lights]", "--store", spec)
        assert failed.exit_code == 1 and said in failed.output, (spec, failed.output)
        assert failed.output.count("\n") == 1 and "s3cr3t" not in failed.output and "Traceback" not in failed.output


def test_a_query_that_times_out_is_not_sent_again(tmp_path):
    """A query that ran out of time would again: one error after one
    timeout (three tries of 60 s each took three minutes to say so)."""
    import time as clock

    from engine.backends.sparql import SparqlGraph
    from engine.errors import StoreError

    asked = []

    def reply(handler, query):
        asked.append(query)
        if not query.startswith("ASK"):
            clock.sleep(1.5)
        return TRUE if query.startswith("ASK") else EMPTY

    with answering(reply) as port:
        kg = SparqlGraph(f"sparql+http://127.0.0.1:{port}/sparql", timeout=0.5, retries=2)
        with pytest.raises(StoreError, match="timed out"):
            kg.relations(["http://example.org/x"])
        kg.close()
    assert len([q for q in asked if not q.startswith("ASK")]) == 1


def test_commands_that_only_read_an_endpoint_work_beside_a_process_that_records_runs(tog, tmp_path, monkeypatch):
    """The runs of an endpoint are kept in a local store, which one process
    at a time writes: `tog info`, `entity`, `runs list` and `ask --no-record`
    read it as it is beside that process (they said it was in use)."""
    from engine.store import open_store

    monkeypatch.setenv("TOG_SPARQL_RUNS", str(tmp_path / "runs"))
    with answering(knows_nothing) as port:
        spec = f"sparql+http://127.0.0.1:{port}/sparql"
        with open_store(spec):  # another process, recording runs
            for args in (["info"], ["runs", "list"]):
                done = tog(*args, "--store", spec)
                assert done.exit_code == 0, (args, done.output)
                assert "in use by another process; reading it as it is now" in done.stderr
            recording = tog("ask", "who directed [Harbor Lights]", "--store", spec)
            assert recording.exit_code == 1 and "in use by another process" in recording.output
