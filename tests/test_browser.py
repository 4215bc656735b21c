"""Neo4j Browser, served by launcher/neo4j-server, draws a run: headless
Debian chromium (driven by playwright, no browser download) connects, sets
the style sheet and the run parameter that `tog runs show --cypher` prints,
runs its query and screenshots the picture.

Needs a Neo4j server (NEO4J_URI) whose Browser is at NEO4J_BROWSER_URL
(`launcher/neo4j-server env` prints both) and /usr/bin/chromium.  Set
TOG_SCREENSHOTS=DIR to keep the screenshot (the README's picture comes
from here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import METAQA, REPO

pytestmark = pytest.mark.neo4j

KEPT, PRUNED, ANSWER = "#57C7A4", "#D9DCE1", "#F5C342"  # fill colours of cypher/tog-browser.grass


@pytest.fixture
def browser_page():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    missing = None
    if not os.environ.get("NEO4J_BROWSER_URL"):
        missing = "NEO4J_BROWSER_URL is not set (launcher/neo4j-server env prints it)"
    elif not chromium:
        missing = "no chromium on PATH (apt-get install chromium)"
    else:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            missing = "playwright is not installed (pip install -e '.[test]')"
    if missing:
        if os.environ.get("TOG_REQUIRE_NEO4J"):
            pytest.fail(missing)
        pytest.skip(missing)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 1000})
        finally:
            browser.close()


def _one_line(cypher: str) -> str:
    """Browser's editor runs what it gets; comments and line breaks go."""
    lines = [line for line in cypher.splitlines() if not line.lstrip().startswith("//")]
    return " ".join(" ".join(lines).split())


def _connect(page, uri: str):
    """Log Browser in to the test server; returns what types and runs a command."""
    user, password = os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"]
    host = uri.split("://", 1)[1]
    page.goto(f"{os.environ['NEO4J_BROWSER_URL']}?dbms=bolt://{user}@{host}&preselectAuthMethod=NATIVE")
    page.fill('[data-testid="password"]', password)
    page.click('[data-testid="connect"]')
    page.wait_for_selector('[data-testid="disconnectedBanner"]', state="detached", timeout=30_000)
    # connected: the editor's prompt names the database
    page.locator('[data-testid="main"]').get_by_text(re.compile(r"^\w+\$$")).first.wait_for(timeout=30_000)

    def run(command: str) -> None:
        page.locator('[data-testid="activeEditor"]').click()
        page.keyboard.insert_text(command)
        page.keyboard.press("Control+Enter")

    return run


def _draw(page, uri: str, style: str, param: str, run_id: str, query: str, nodes: int):
    """Connect, then paste what `runs show --cypher` printed (``:style``,
    the parameter, the query): the command runner, the drawing's frame and
    its nodes' fill colours."""
    run = _connect(page, uri)
    run(style)
    run(param)
    page.wait_for_selector(f"text={run_id}", timeout=15_000)
    frame = _drawn_after(page, run, _one_line(query), nodes)
    fills = [f.upper() for f in frame.locator("svg g.node circle.b-outline").evaluate_all(
        "cs => cs.map(c => c.getAttribute('fill'))")]
    return run, frame, fills


def _drawn_after(page, run, command: str, at_least: int):
    """``_drawn`` after running ``command``, which is run once more if no
    frame draws: on a busy machine (CI's), one wait for a drawing timed out
    though the query returned nodes (most likely the typed command was lost)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    run(command)
    try:
        return _drawn(page, at_least)
    except PlaywrightTimeout:
        run(command)
        return _drawn(page, at_least)


def _drawn(page, at_least: int):
    """Wait for the newest frame's drawing of ``at_least`` nodes; that frame."""
    frame = page.locator('[data-testid="frame"]').filter(has=page.locator("svg g.node")).first
    frame.wait_for(timeout=30_000)
    frame.locator("svg g.node").nth(at_least - 1).wait_for(timeout=30_000)
    page.wait_for_timeout(1500)  # let the force layout settle for the picture
    return frame


def test_browser_draws_a_run_with_kept_and_pruned_paths(neo4j_store, browser_page, tog, tmp_path):
    import neo4j

    assert tog("load", METAQA / "kb.txt", "--store", neo4j_store).exit_code == 0
    asked = tog("ask", "who directed the films written by [Paul Attanasio]", "--store", neo4j_store)
    assert asked.exit_code == 0, asked.output
    run_id = asked.output.rsplit("run: ", 1)[1].split()[0]
    shown = tog("runs", "show", run_id, "--store", neo4j_store, "--cypher")
    assert shown.exit_code == 0, shown.output
    style, param, query, last_param, last_query, corrections_query = shown.output.strip().split("\n\n")
    assert param == f':param run => "{run_id}"' and last_param == ":param last => 10"
    assert style.startswith(":style {") and "\n" not in style  # one line, pasted as it is

    user, password = os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"]
    with neo4j.GraphDatabase.driver(neo4j_store, auth=(user, password)) as driver:
        records = driver.execute_query(query, run=run_id).records
        nodes = {n.element_id: n for r in records for v in r.values() if v is not None
                 for n in ([v] if isinstance(v, neo4j.graph.Node) else getattr(v, "nodes", []))}
        drawn = set(nodes)
        edges = {e.element_id: e for r in records for v in r.values() if v is not None
                 for e in ([v] if isinstance(v, neo4j.graph.Relationship) else getattr(v, "relationships", []))}
        # the run alone: its header and path nodes, its ROOT and PARENT edges, nothing of the KG
        (count,) = driver.execute_query("MATCH (p:TogPath {run: $run}) RETURN count(p) AS n", run=run_id).records[0]
        assert {label for n in nodes.values() for label in n.labels} <= {"TogRun", "TogPath", "Kept", "Pruned",
                                                                          "Answer"}
        assert len(nodes) == 1 + count and {e.type for e in edges.values()} == {"ROOT", "PARENT"}
        answer = driver.execute_query("MATCH (p:TogPath:Answer {run: $run}) RETURN count(p) AS n",
                                      run=run_id).records[0]["n"]
        assert answer >= 3  # the topic, the films, the two directors the answer cites
        assert driver.execute_query(last_query, last=10).records  # the last runs' query draws them too
        driver.execute_query(corrections_query, run=run_id)  # and the corrections' query runs
        kept, pruned = driver.execute_query(
            "MATCH (p:TogPath {run: $run}) WHERE NOT p:Answer "
            "RETURN sum(CASE WHEN p:Kept THEN 1 ELSE 0 END) AS k, sum(CASE WHEN p:Pruned THEN 1 ELSE 0 END) AS n",
            run=run_id).records[0]
    assert kept and pruned

    page = browser_page
    _, frame, fills = _draw(page, neo4j_store, style, param, run_id, query, len(drawn))
    assert page.locator("svg g.node").count() == len(drawn)
    # no relationship beyond the run's: Browser connected nothing of the KG into it
    assert page.locator("svg g.relationship").count() == len(edges)
    # kept green, pruned grey, the answer's paths gold
    assert (fills.count(KEPT), fills.count(PRUNED), fills.count(ANSWER)) == (kept, pruned, answer)
    captions = " ".join(page.locator("svg g.node text").all_text_contents())
    assert "Newell" in captions and "Redford" in captions and "Paul Attanasio" in captions
    assert "…" not in captions and "..." not in captions  # no caption cut short
    assert re.search(r"\b0\.\d\d\b", captions) and not re.search(r"\d\.\d{3,}", captions)  # scores to 2 places
    steps = " ".join(page.locator("svg g.relationship text").all_text_contents())
    assert "directed by" in steps and "written by (of)" in steps  # the KG's names of the relations
    assert not re.search(r"urn:|https?:|/", captions + " " + steps)  # no IRI as a caption or a type

    shot = tmp_path / "neo4j-browser-run.png"
    frame.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000
    if os.environ.get("TOG_SCREENSHOTS"):
        target = Path(os.environ["TOG_SCREENSHOTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, target / shot.name)


SIMULATED = "#D7C8EE"  # node.TogSimulated in cypher/tog-browser.grass


def test_browser_draws_a_planned_runs_lookahead_and_kg_relations_by_name(neo4j_store, browser_page, tog, tmp_path):
    """A planned run's simulated steps hang off its real path nodes, marked
    simulated; with `tog browser-style`, KG edges read as their relations'
    names, Freebase's dotted IRIs included."""
    import neo4j

    from engine.graph import relation_text

    for kb in (METAQA / "kb.txt", REPO / "tests" / "fixtures" / "freebase-excerpt.nt"):
        assert tog("load", kb, "--store", neo4j_store).exit_code == 0
    asked = tog("ask", "who directed the films written by [Paul Attanasio]", "--store", neo4j_store,
                "--method", "plan")
    assert asked.exit_code == 0, asked.output
    run_id = asked.output.rsplit("run: ", 1)[1].split()[0]
    style, param, query = tog("runs", "show", run_id, "--store", neo4j_store,
                              "--cypher").output.strip().split("\n\n")[:3]
    style_file = tmp_path / "tog.grass"
    styled = tog("browser-style", "--store", neo4j_store, "-o", style_file)
    assert styled.exit_code == 0 and "relationship types captioned with their names" in styled.output

    user, password = os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"]
    with neo4j.GraphDatabase.driver(neo4j_store, auth=(user, password)) as driver:
        records = driver.execute_query(query, run=run_id).records
        nodes = {n.element_id: n for r in records for v in r.values() if isinstance(v, neo4j.graph.Path)
                 for n in v.nodes} | {r["r"].element_id: r["r"] for r in records}
        edges = {e.element_id for r in records for v in r.values() if isinstance(v, neo4j.graph.Path)
                 for e in v.relationships} | {r["root"].element_id for r in records}
        simulated = [n for n in nodes.values() if "TogSimulated" in n.labels]
        (paths,) = driver.execute_query("MATCH (p:TogPath {run: $run}) RETURN count(p) AS n", run=run_id).records[0]
        # the lookahead's deepest level per real step, each hung off a real path node of this run, never the KG
        look = json.loads(driver.execute_query("MATCH (r:TogRun {id: $run}) RETURN r.stats AS s",
                                               run=run_id).records[0]["s"])["lookahead"]
        assert len(simulated) == sum(len(step["levels"][-1]) for step in look) > 0
        assert len(nodes) == 1 + paths + len(simulated)
        assert not driver.execute_query("MATCH (:TogSimulated {run: $run})-[:AT]->() RETURN 1", run=run_id).records
        kg_edges = driver.execute_query(
            "MATCH (f:Entity)-[k]->(d:Entity) WHERE type(k) STARTS WITH 'http://rdf.freebase.com/' "
            "RETURN count(k) AS n, collect(DISTINCT type(k)) AS types").records[0]

    page = browser_page
    run, frame, fills = _draw(page, neo4j_store, style, param, run_id, query, len(nodes))
    assert frame.locator("svg g.node").count() == len(nodes)
    assert frame.locator("svg g.relationship").count() == len(edges)
    assert fills.count(SIMULATED) == len(simulated)
    captions = " ".join(frame.locator("svg g.node text").all_text_contents())
    assert " => " in captions and "…" not in captions and "..." not in captions
    steps = frame.locator("svg g.relationship text").all_text_contents()
    assert steps.count("simulated") == len(simulated)
    if os.environ.get("TOG_SCREENSHOTS"):
        frame.screenshot(path=str(Path(os.environ["TOG_SCREENSHOTS"]) / "neo4j-browser-plan.png"))

    # the KG itself: Freebase's relationship types (IRIs with dots) shown by name with the store's sheet
    run(":style " + " ".join(style_file.read_text(encoding="utf-8").split()))
    run("MATCH (f:Entity)-[k]->(d:Entity) WHERE type(k) STARTS WITH 'http://rdf.freebase.com/' RETURN f, k, d")
    frame = page.locator('[data-testid="frame"]').first  # the newest frame comes first
    frame.locator("svg g.relationship").nth(kg_edges["n"] - 1).wait_for(timeout=30_000)
    page.wait_for_timeout(1500)
    shown = frame.locator("svg g.relationship text").all_text_contents()
    names = {relation_text(t) for t in kg_edges["types"]}
    # Browser cuts a caption longer than its edge (a trailing …); what is left is the start of a name
    assert len(shown) == kg_edges["n"] and "film directed by" in shown
    assert all(any(n.startswith(s.removesuffix("…")) for n in names) for s in shown), shown
    assert not [s for s in shown if re.search(r"https?:|urn:|/", s)]
