"""The outer loop on both backends: feedback, corrections with provenance and
exact undo, the next answer changing, and pictures of runs."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import METAQA
from test_backends import edges as edge_count

from engine.store import open_store


def kg_call(store, fn):
    """``fn(store)`` on the opened store, closed again (an embedded store opens once at a time)."""
    with open_store(str(store)) as opened:
        return fn(opened)

QUESTION = "who directed [Quiz Show]"
WRONG = "Quiz Show|directed_by|Robert Redford"
RIGHT = "Quiz Show|directed_by|Mike Newell"


@pytest.fixture
def sample(store_spec, tog):
    assert tog("load", METAQA / "kb.txt", "--store", store_spec).exit_code == 0
    return store_spec


def answer(tog, store) -> tuple[list[str], str]:
    result = tog("ask", QUESTION, "--store", store, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    return data["answer"], data["run"]


def test_a_correction_changes_the_next_answer_and_revert_undoes_it(sample, tog):
    before, run = answer(tog, sample)
    assert before == ["Robert Redford"]
    edges = kg_call(sample, edge_count)
    done = tog("correct", "--remove", WRONG, "--add", RIGHT, "--run", run, "--reason", "checked the credits",
               "--store", sample)
    assert done.exit_code == 0, done.output
    cid = re.search(r"correction (\S+):", done.output).group(1)
    after, run2 = answer(tog, sample)
    assert after == ["Mike Newell"]
    trace = tog("runs", "show", run2, "--store", sample).output
    assert re.search(rf"--directed by--> Mike Newell .*\*answer\s+\[corrected: {cid}\]", trace), trace
    listed = json.loads(tog("corrections", "list", "--json", "--store", sample).output)
    (c,) = listed
    assert c["id"] == cid and c["reason"] == "checked the credits" and c["run"] == run and c["status"] == "active"
    assert [f[2] for f in c["removed"]] == ["urn:tog:e:Robert%20Redford"]  # what was there before
    assert [f[2] for f in c["added"]] == ["urn:tog:e:Mike%20Newell"] and c["created"]
    assert kg_call(sample, edge_count) == edges

    undone = tog("corrections", "revert", cid, "--store", sample)
    assert undone.exit_code == 0, undone.output
    assert answer(tog, sample)[0] == ["Robert Redford"]
    assert kg_call(sample, edge_count) == edges
    assert not kg_call(sample, lambda kg: kg.corrections.has_fact(
        ("urn:tog:e:Quiz%20Show", "urn:tog:r:directed_by", "urn:tog:e:Mike%20Newell")))
    assert json.loads(tog("corrections", "list", "--json", "--store", sample).output)[0]["status"] == "reverted"
    again = tog("corrections", "revert", cid, "--store", sample)
    assert again.exit_code == 1 and "reverted already" in again.output
    # provenance stays: the run made while the correction held still shows it, marked as undone since
    kept = tog("runs", "show", run2, "--store", sample).output
    assert re.search(rf"--directed by--> Mike Newell .*\[corrected: {cid}, since reverted\]", kept), kept
    assert "corrected" not in tog("runs", "show", run, "--store", sample).output  # made before it


def test_adding_a_fact_that_is_there_is_undone_exactly(sample, tog):
    before = kg_call(sample, lambda kg: kg.kg.stats())
    fact = ("urn:tog:e:Quiz%20Show", "urn:tog:r:release_year", "urn:tog:e:1994")
    assert kg_call(sample, lambda kg: kg.corrections.has_fact(fact))
    done = tog("correct", "--add", "Quiz Show|release_year|1994", "--add",
               'Quiz Show|urn:tog:r:note|"seen twice"@en', "--reason", "r", "--store", sample)
    assert done.exit_code == 0 and "1 added, 1 already there" in done.output, done.output
    literal = ("urn:tog:e:Quiz%20Show", "urn:tog:r:note", '"seen twice"@en')
    assert kg_call(sample, lambda kg: kg.corrections.has_fact(literal))
    cid = re.search(r"correction (\S+):", done.output).group(1)
    assert tog("corrections", "revert", cid, "--store", sample).exit_code == 0
    assert kg_call(sample, lambda kg: kg.corrections.has_fact(fact) and not kg.corrections.has_fact(literal))  # what was there stays
    assert kg_call(sample, lambda kg: kg.kg.stats()) == before


@pytest.mark.parametrize("args,message", [
    (["--remove", "Quiz Show|directed_by|Mike Newell"], "is not a fact in the KG"),
    (["--remove", "Quiz Show|directed_by"], "is not a fact; write it as SUBJECT|RELATION|OBJECT"),
    (["--add", "Nobody Known|directed_by|Mike Newell"], "no entity with that name"),
    (["--add", "Quiz Show|produced_by|Mike Newell"], "has no relation of that name"),
    (["--add", 'Quiz Show|directed_by|"unterminated'], "is not an N-Triples literal"),
    (["--remove", WRONG, "--add", RIGHT, "--run", "no-such-run"], "no run 'no-such-run'"),
    (["--reason", "   "], "say why"),
    (["--add", "Quiz Show|http://ex/a{b}|Mike Newell"], "is not a valid IRI"),
])
def test_bad_corrections_are_one_line_and_change_nothing(sample, tog, args, message):
    edges = kg_call(sample, edge_count)
    if "--reason" not in args:
        args = [*args, "--reason", "because"]
    result = tog("correct", *args, "--store", sample)
    assert result.exit_code == 1 and message in result.output, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert kg_call(sample, lambda kg: (edge_count(kg), kg.corrections.list())) == (edges, [])


def test_feedback_is_kept_with_the_run(sample, tog, monkeypatch):
    from engine.backends.oxigraph.runs import OxigraphRunLog

    _, run = answer(tog, sample)
    read = []
    plain = OxigraphRunLog.get
    monkeypatch.setattr(OxigraphRunLog, "get", lambda self, run_id: read.append(run_id) or plain(self, run_id))
    assert tog("feedback", run, "--rating", "bad", "--comment", "wrong director", "--store", sample).exit_code == 0
    assert read == []  # the run's header is enough to know it is there: its paths are not read
    assert tog("feedback", "last", "--rating", "good", "--store", sample).exit_code == 0
    shown = tog("runs", "show", run, "--json", "--store", sample)
    feedback = json.loads(shown.output)["run"]["feedback"]
    assert [(f["rating"], f.get("comment")) for f in feedback] == [("bad", "wrong director"), ("good", None)]
    assert "feedback: bad" in tog("runs", "show", run, "--store", sample).output
    missing = tog("feedback", "no-such-run", "--rating", "good", "--store", sample)
    assert missing.exit_code == 1 and "no run 'no-such-run'" in missing.output
    assert tog("feedback", run, "--rating", "meh", "--store", sample).exit_code == 2


def test_pictures_show_kept_pruned_cited_and_corrected(sample, tog, tmp_path):
    _, run = answer(tog, sample)
    tog("correct", "--remove", WRONG, "--add", RIGHT, "--run", run, "--reason", "r", "--store", sample)
    _, run = answer(tog, sample)
    mermaid = tog("runs", "show", run, "--format", "mermaid", "--store", sample).output
    assert mermaid.startswith("flowchart LR") and ':::keptAnswer' in mermaid and ":::pruned" in mermaid
    assert re.search(r'==>\|"directed by \[corrected c\S+\]"\| n\d+', mermaid)
    svg = tog("runs", "show", run, "--format", "svg", "--store", sample).output
    assert svg.lstrip().startswith("<svg") and 'class="node kept answer"' in svg and 'class="node pruned"' in svg
    assert "stroke-dasharray" in svg  # the corrected hop
    page = tmp_path / "run.html"
    assert tog("runs", "show", run, "--format", "html", "-o", page, "--store", sample).exit_code == 0
    text = page.read_text(encoding="utf-8")
    assert "<b>Mike Newell</b>" in text and "Quiz Show → directed by → Mike Newell" in text
    assert "<script" not in text and not re.search(r"(src|href)=\"?https?:", text)  # standalone
    assert re.findall(r"https?://[^\s\"'<>]+", text) == ["http://www.w3.org/2000/svg"]


def test_eval_writes_an_html_report_with_run_pictures(sample, tog, tmp_path):
    report = tmp_path / "report.html"
    result = tog("eval", METAQA / "questions.jsonl", "--store", sample, "--out", tmp_path / "r.jsonl",
                 "--limit", "5", "--report", report)
    assert result.exit_code == 0, result.output
    text = report.read_text(encoding="utf-8")
    assert "Hits@1" in text and text.count("<tr class=") == 5
    links = re.findall(r'href="([^"]+)"', text)
    assert len(links) == 5 and all((tmp_path / link).is_file() for link in links)
    assert 'id="types"' in text
    assert 'id="settings"' in text and "pruner hybrid" in text and "width 3" in text  # what made the answers
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()]
    for row, link in zip(rows, links):  # each question's page: its gold answers and whether it was a hit
        page = (tmp_path / link).read_text(encoding="utf-8")
        assert 'id="gold"' in page and html.escape(row["answers"][0]) in page
        assert ("hit</span>" if row["hit_lenient"] else "miss</span>") in page


def test_compare_two_evaluations(sample, tog, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert tog("eval", METAQA / "questions.jsonl", "--store", sample, "--out", a, "--width", "1",
               "--depth", "1").exit_code == 0
    assert tog("eval", METAQA / "questions.jsonl", "--store", sample, "--out", b).exit_code == 0
    ra = {r["id"]: r for r in map(json.loads, a.read_text(encoding="utf-8").splitlines())}
    rb = {r["id"]: r for r in map(json.loads, b.read_text(encoding="utf-8").splitlines())}
    gained = sorted(i for i in ra if rb[i]["hit_lenient"] and not ra[i]["hit_lenient"])
    assert gained  # one hop and one path cannot answer the multi-hop questions
    r = tog("compare", a, b, "--json")
    assert r.exit_code == 0, r.output
    c = json.loads(r.output)
    assert c["questions"] == len(ra) and sorted(x["id"] for x in c["gained"]) == gained
    assert c["hits@1"]["b"] - c["hits@1"]["a"] == pytest.approx(
        (sum(x["hit_lenient"] for x in rb.values()) - sum(x["hit_lenient"] for x in ra.values())) / len(ra), abs=1e-3)
    text = tog("compare", a, b)
    assert f"gained: {len(gained)}" in text.output and "->" in text.output
    missing = tog("compare", a, tmp_path / "nope.jsonl")
    assert missing.exit_code == 1 and "no such results file" in missing.output


@pytest.mark.neo4j
def test_corrections_are_visible_in_neo4j(neo4j_store, tog):
    assert tog("load", METAQA / "kb.txt", "--store", neo4j_store).exit_code == 0
    _, run = answer(tog, neo4j_store)
    done = tog("correct", "--remove", WRONG, "--add", RIGHT, "--run", run, "--reason", "r", "--store", neo4j_store)
    cid = re.search(r"correction (\S+):", done.output).group(1)
    kg = open_store(neo4j_store)
    rows = kg.kg.session.driver.execute_query(
        "MATCH (c:TogCorrection {id: $id})-[:ABOUT]->(e:Entity), (c)-[:PROMPTED_BY]->(r:TogRun) "
        "MATCH (e)-[x]->(o:Entity) WHERE x.tog_correction = $id RETURN e.name AS s, o.name AS o, r.id AS run",
        id=cid).records
    kg.close()
    assert [(r["s"], r["o"], r["run"]) for r in rows] == [("Quiz Show", "Mike Newell", run)]


def test_an_interrupted_correction_is_finished_on_the_next_access(tmp_path, tog):
    from engine.graph import Correction

    store = tmp_path / "store"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    kg = open_store(str(store))
    fact = ("urn:tog:e:Quiz%20Show", "urn:tog:r:directed_by", "urn:tog:e:Mike%20Newell")
    c = Correction("c1", "2026-01-01T00:00:00Z", "r", added=[fact], status="applying")
    kg.corrections._save(c)  # the record is written first; a crash here leaves the KG unchanged
    assert not kg.corrections.has_fact(fact)
    assert [x.status for x in kg.corrections.list()] == ["active"] and kg.corrections.has_fact(fact)
    kg.close()


def test_names_a_correction_changes_rank_link_and_read_alike_on_both_stores(store_spec, tog, tmp_path):
    """A made entity's label outranks a later alias; a name the load did not
    index (another language) does not keep a key that a removal takes out;
    a loaded name another spelling displaced can still be taken out; an
    empty name is refused; a name may hold a |; a patch file may start with
    a byte-order mark."""
    from conftest import write_nt

    ex, label = "http://example.org/", "http://www.w3.org/2000/01/rdf-schema#label"
    lines = [f'<{ex}p> <{label}> "Paris" .', f'<{ex}p> <{label}> "Paris"@fr .', f'<{ex}h> <{label}> "Anne" .',
             f"<{ex}p> <{ex}mayor> <{ex}h> .", f'<{ex}a> <{label}> "Alpha" .', f"<{ex}a> <{ex}near> <{ex}p> ."]
    store = store_spec
    assert tog("load", write_nt(tmp_path / "kg.nt", lines), "--store", store, "--no-progress").exit_code == 0

    def linked(name: str) -> list[str]:
        found = tog("entity", name, "--store", store)
        return re.findall(r"<(\S+)>", found.output.splitlines()[0]) if found.exit_code == 0 else []

    def shown(iri: str) -> str:
        return tog("entity", iri, "--store", store).output.splitlines()[0].split("  <")[0]

    def correct(*args: str) -> str:
        done = tog("correct", *args, "--reason", "r", "--store", store)
        assert done.exit_code == 0, done.output
        return re.search(r"correction (\S+):", done.output).group(1)

    correct("--new", "Omega X", "--add", "Omega X|mayor|Anne", "--add", "Omega X|altLabel|OX")
    assert shown("urn:tog:e:Omega%20X") == "Omega X" and linked("OX") == ["urn:tog:e:Omega%20X"]
    correct("--remove", "Paris|label|Paris")  # "Paris"@fr stays, but loads index English and untagged names
    assert linked("Paris") == []
    correct("--add", f"<{ex}a>|label|ALPHA")  # shown: "ALPHA" sorts before "Alpha"
    assert shown(f"{ex}a") == "ALPHA"
    correct("--remove", f"<{ex}a>|label|Alpha")
    assert shown(f"{ex}a") == "ALPHA" and linked("alpha") == [f"{ex}a"]
    empty = tog("correct", "--add", f'<{ex}a>|label|""', "--reason", "r", "--store", store)
    assert empty.exit_code == 1 and "a name cannot be empty" in empty.output
    patch = tmp_path / "p.patch"
    patch.write_text("\ufeff+ Anne|label|A|B\n", encoding="utf-8")
    assert tog("correct", "--file", patch, "--reason", "r", "--store", store).exit_code == 0
    assert linked("A|B") == [f"{ex}h"]


def test_an_interrupted_rename_is_finished_with_its_linking_keys(tmp_path, tog):
    """A rename recorded but not applied (a crash after the record) is
    finished on the next access, linking keys and all."""
    from conftest import write_nt

    from engine.graph import Correction
    from engine.linking import resolve

    label = "http://www.w3.org/2000/01/rdf-schema#label"
    store = tmp_path / "store"
    kg_file = write_nt(tmp_path / "kg.nt", [f'<urn:x:a> <{label}> "Alpha Town" .', "<urn:x:b> <urn:x:in> <urn:x:a> ."])
    assert tog("load", kg_file, "--store", store, "--no-progress").exit_code == 0
    kg = open_store(str(store))
    c = Correction("c1", "2026-01-01T00:00:00Z", "r", removed=[("urn:x:a", label, '"Alpha Town"')],
                   added=[("urn:x:a", label, '"Alphaville"')], status="applying")
    kg.corrections._save(c)
    assert [x.status for x in kg.corrections.list()] == ["active"]
    assert [n.id for n in resolve(kg.kg, ["Alphaville"])] == ["urn:x:a"]
    assert kg.corrections.db.index.lookup(["alpha town"]) == {}
    kg.close()


def test_headless_chromium_renders_the_run_picture(tog, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if not chromium or sync_playwright is None:
        if os.environ.get("TOG_REQUIRE_NEO4J"):  # CI installs both
            pytest.fail("chromium and playwright are needed (apt-get install chromium; pip install -e '.[test]')")
        pytest.skip("needs chromium and playwright")
    sample = tmp_path / "store"
    assert tog("load", METAQA / "kb.txt", "--store", sample).exit_code == 0
    asked = tog("ask", "who directed the films written by [Paul Attanasio]", "--store", sample, "--json")
    answer_names = json.loads(asked.output)["answer"]
    assert sorted(answer_names) == ["Mike Newell", "Robert Redford"]
    page_file = tmp_path / "run.html"
    assert tog("runs", "show", "last", "--format", "html", "-o", page_file, "--store", sample).exit_code == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 760})
            page.route("**/*", lambda route: route.abort() if not route.request.url.startswith("file:")
                       else route.continue_())  # standalone: nothing from the network
            page.goto(page_file.as_uri())
            assert page.locator("#answer b").all_text_contents() == answer_names
            cited = page.locator("#cited li").all_text_contents()
            assert "Paul Attanasio → written by (of) → Quiz Show → directed by → Robert Redford" in cited
            answer_nodes = page.locator("g.node.answer text").all_text_contents()
            assert {"Paul Attanasio", "Quiz Show", "Robert Redford", "Mike Newell"} <= set(answer_nodes)
            assert page.locator("g.node.pruned").count() > 0 and page.locator("g.node.kept").count() >= 1
            box = page.locator("g.node.answer").last.bounding_box()
            assert box and box["width"] > 50  # drawn, with a size
            shot = tmp_path / "run-picture.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    if os.environ.get("TOG_SCREENSHOTS"):
        target = Path(os.environ["TOG_SCREENSHOTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, target / shot.name)


def test_a_correction_that_a_later_one_relies_on_cannot_be_reverted_first(sample, tog):
    first = tog("correct", "--add", RIGHT, "--reason", "one", "--store", sample)
    c1 = re.search(r"correction (\S+):", first.output).group(1)
    later = tog("correct", "--remove", RIGHT, "--reason", "two", "--store", sample)  # relies on the first
    assert later.exit_code == 0, later.output
    refused = tog("corrections", "revert", c1, "--store", sample)
    assert refused.exit_code == 1 and "revert it first" in refused.output


def test_a_correction_that_changes_nothing_is_a_no_op_that_blocks_no_revert(sample, tog):
    first = tog("correct", "--add", RIGHT, "--reason", "one", "--store", sample)
    second = tog("correct", "--add", RIGHT, "--reason", "two", "--store", sample)
    assert "nothing changed, 1 already there" in second.output and "no-op" in second.output
    listed = tog("corrections", "list", "--store", sample)
    assert "  no-op  " in listed.output
    c1 = re.search(r"correction (\S+):", first.output).group(1)
    done = tog("corrections", "revert", c1, "--store", sample)
    assert done.exit_code == 0, done.output
    assert not kg_call(sample, lambda kg: kg.corrections.has_fact(
        ("urn:tog:e:Quiz%20Show", "urn:tog:r:directed_by", "urn:tog:e:Mike%20Newell")))


def test_a_crash_between_two_records_or_during_a_revert_is_finished_on_open(tmp_path, tog):
    from engine.graph import Correction

    store = tmp_path / "store"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    fact = ("urn:tog:e:Quiz%20Show", "urn:tog:r:directed_by", "urn:tog:e:Robert%20Redford")
    kg = open_store(str(store))
    c = kg.corrections.apply(Correction("c1", "2026-01-01T00:00:00Z", "r", removed=[fact]))
    old = ox_record(kg, "c1")
    c.status, c.reverted = "reverting", "2026-01-02T00:00:00Z"
    kg.corrections.db.store.add(ox_quad(kg, c))  # the new record is in, the old one not yet out: a crash here
    assert len(ox_record(kg, "c1", all_=True)) == 2 and old
    kg.close()
    kg = open_store(str(store))  # opening finishes the revert
    assert [x.status for x in kg.corrections.list()] == ["reverted"] and kg.corrections.has_fact(fact)
    kg.close()


def ox_record(kg, cid, all_=False):
    import pyoxigraph as ox

    from engine.backends.oxigraph.corrections import CORRECTION_PREFIX, CORRECTIONS
    from engine.backends.oxigraph.runs import vocab

    quads = list(kg.corrections.db.store.quads_for_pattern(ox.NamedNode(CORRECTION_PREFIX + cid), vocab("record"),
                                                           None, CORRECTIONS))
    return quads if all_ else (quads[0] if quads else None)


def ox_quad(kg, c):
    import pyoxigraph as ox

    from engine.backends.oxigraph.corrections import CORRECTION_PREFIX, CORRECTIONS
    from engine.backends.oxigraph.runs import vocab

    return ox.Quad(ox.NamedNode(CORRECTION_PREFIX + c.id), vocab("record"), ox.Literal(c.to_json()), CORRECTIONS)


def test_pictures_escape_names_with_markup(tmp_path, tog):
    kb = tmp_path / "kb.txt"
    kb.write_text('Evil <script>alert(1)</script> & "Co"|directed_by|Mike #1\n', encoding="utf-8")
    store = tmp_path / "store"
    assert tog("load", kb, "--store", store).exit_code == 0
    asked = tog("ask", 'who directed [Evil <script>alert(1)</script> & "Co"]', "--store", store)
    assert asked.exit_code == 0, asked.output
    page = tog("runs", "show", "last", "--format", "html", "--store", store).output
    assert "<script" not in page and "&lt;script&gt;" in page
    mermaid = tog("runs", "show", "last", "--format", "mermaid", "--store", store).output
    assert "<script" not in mermaid and "#lt;script#gt;" in mermaid and "#35;1" in mermaid
    svg = tog("runs", "show", "last", "--format", "svg", "--store", store).output
    assert "<script" not in svg
    bad = tog("runs", "show", "last", "--format", "html", "-o", tmp_path / "no" / "such" / "dir.html",
              "--store", store)
    assert bad.exit_code == 1 and "cannot write" in bad.output and "Traceback" not in bad.output


def test_a_patch_file_is_one_correction_and_export_writes_it_back(sample, tog, tmp_path):
    patch = tmp_path / "fix.patch"
    patch.write_text(f"# the credits, checked\n- {WRONG}\n+ {RIGHT}\n\n+ Quiz Show|release_year|1995\n",
                     encoding="utf-8")
    done = tog("correct", "--file", patch, "--reason", "credits", "--store", sample)
    assert done.exit_code == 0 and "1 removed, 2 added" in done.output, done.output
    cid = re.search(r"correction (\S+):", done.output).group(1)
    added = tog("corrections", "export", cid, "--store", sample).output.splitlines()
    assert added == ["<urn:tog:e:Quiz%20Show> <urn:tog:r:directed_by> <urn:tog:e:Mike%20Newell> .",
                     "<urn:tog:e:Quiz%20Show> <urn:tog:r:release_year> <urn:tog:e:1995> ."]
    removed = tog("corrections", "export", cid, "--removed", "--store", sample).output.splitlines()
    assert removed == ["<urn:tog:e:Quiz%20Show> <urn:tog:r:directed_by> <urn:tog:e:Robert%20Redford> ."]
    as_patch = tog("corrections", "export", cid, "--patch", "--store", sample).output.splitlines()
    assert as_patch == ["D " + removed[0], *("A " + a for a in added)]
    import pyoxigraph as ox  # what export writes parses as N-Triples

    assert len(list(ox.parse("\n".join(added) + "\n", ox.RdfFormat.N_TRIPLES))) == 2
    bad = tmp_path / "bad.patch"
    bad.write_text(f"{RIGHT}\n", encoding="utf-8")
    refused = tog("correct", "--file", bad, "--reason", "x", "--store", sample)
    assert refused.exit_code == 1 and "bad.patch:1: expected '+ S|R|O'" in refused.output


def test_a_correction_can_make_a_new_entity_that_links_and_a_revert_takes_it_out(sample, tog, tmp_path):
    unknown = tog("correct", "--add", "Quiz Show|directed_by|Zed Newperson", "--reason", "x", "--store", sample)
    assert unknown.exit_code == 1 and "no entity with that name" in unknown.output  # not made by accident
    patch = tmp_path / "new.patch"
    patch.write_text("new Zed Newperson\n+ Quiz Show|directed_by|Zed Newperson\n"
                     "+ Zed Newperson|written_by|Paul Attanasio\n", encoding="utf-8")
    done = tog("correct", "--file", patch, "--reason", "the real credits", "--store", sample)
    assert done.exit_code == 0, done.output
    assert "2 added, made Zed Newperson <urn:tog:e:Zed%20Newperson>" in done.output
    cid = re.search(r"correction (\S+):", done.output).group(1)
    # linked by its name like any loaded entity, in questions and in `tog entity`
    asked = tog("ask", "who wrote [Zed Newperson]", "--store", sample, "--json")
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.output)["answer"] == ["Paul Attanasio"]
    shown = tog("entity", "zed newperson", "--store", sample)
    assert shown.exit_code == 0 and "<urn:tog:e:Zed%20Newperson>" in shown.output
    exported = tog("corrections", "export", cid, "--store", sample).output.splitlines()
    assert exported[0] == '<urn:tog:e:Zed%20Newperson> <http://www.w3.org/2000/01/rdf-schema#label> "Zed Newperson" .'
    assert "* new entity Zed Newperson" in tog("corrections", "list", "--store", sample).output
    # a name that is taken, and the same entity made twice, are refused
    taken = tog("correct", "--new", "Paul Attanasio", "--reason", "x", "--store", sample)
    assert taken.exit_code == 1 and "already names <urn:tog:e:Paul%20Attanasio>" in taken.output
    again = tog("correct", "--new", "Zed Newperson", "--reason", "x", "--store", sample)
    assert again.exit_code == 1 and "already names" in again.output
    reverted = tog("corrections", "revert", cid, "--store", sample)
    assert reverted.exit_code == 0 and "1 entities it made taken out" in reverted.output
    gone = tog("entity", "Zed Newperson", "--store", sample)
    assert gone.exit_code == 1 and "no entity named" in gone.output
    assert kg_call(sample, lambda s: s.kg.has_entity("urn:tog:e:Zed%20Newperson")) is False
    assert "Zed Newperson" not in json.dumps(answer(tog, sample)[0])


def test_a_correction_takes_a_relation_by_the_name_tog_entity_shows(tmp_path, tog):
    """`tog entity` shows a Freebase relation by its words (``film directed
    by`` for ``film.film.directed_by``): a correction takes that name, as it
    takes the relation's local name; a name two of the subject's relations
    go by is refused in one line, naming both."""
    from conftest import write_nt

    fb = "http://rdf.freebase.com/ns/"
    name = f"{fb}type.object.name"
    lines = [f'<{fb}m.1> <{name}> "Quiz Film"@en .', f'<{fb}m.2> <{name}> "Ann Maker"@en .',
             f'<{fb}m.3> <{name}> "Bob Other"@en .', f"<{fb}m.1> <{fb}film.film.directed_by> <{fb}m.2> ."]
    store = tmp_path / "store"
    assert tog("load", write_nt(tmp_path / "fb.nt", lines), "--store", store, "--no-progress").exit_code == 0
    shown = tog("entity", "Quiz Film", "--store", store)
    assert "film directed by" in shown.output, shown.output
    for words in ("film directed by", "film.film.directed_by"):
        done = tog("correct", "--add", f"Quiz Film|{words}|Bob Other", "--reason", "r", "--store", store)
        assert done.exit_code == 0, done.output
        assert kg_call(store, lambda kg: kg.corrections.has_fact((f"{fb}m.1", f"{fb}film.film.directed_by",
                                                                   f"{fb}m.3")))
    other = write_nt(tmp_path / "other.nt", [f"<{fb}m.1> <http://example.org/film_directed_by> <{fb}m.2> ."])
    assert tog("load", other, "--store", store, "--no-progress").exit_code == 0
    both = tog("correct", "--remove", "Quiz Film|film directed by|Ann Maker", "--reason", "r", "--store", store)
    assert both.exit_code == 1 and both.output.count("\n") == 1, both.output
    assert "names 2 relations" in both.output and "film.film.directed_by" in both.output, both.output


def test_a_corrected_name_links_its_entity_and_the_name_taken_out_no_longer_does(store_spec, tog, tmp_path):
    """A name a correction puts in links its entity in the next question,
    and one it takes out no longer does (a rename used to link by the old
    name only, on both stores); a revert undoes both. A name predicate's
    object is a name, quoted or not, and the predicate goes by its local
    name (``label``, ``name``)."""
    from conftest import write_nt

    ex, label, name = "http://example.org/", "http://www.w3.org/2000/01/rdf-schema#label", "http://schema.org/name"
    lines = [f'<{ex}a> <{label}> "Alpha Town" .', f'<{ex}b> <{label}> "Beta Person" .',
             f'<{ex}c> <{label}> "Gamma River" .', f"<{ex}b> <{ex}born_in> <{ex}a> .",
             f"<{ex}c> <{ex}flows_through> <{ex}a> ."]
    store = store_spec
    assert tog("load", write_nt(tmp_path / "kg.nt", lines), "--store", store, "--no-progress").exit_code == 0

    def ask(question: str) -> list[str] | None:
        asked = tog("ask", question, "--store", store, "--json", "--no-record")
        if asked.exit_code == 1 and "found no entity" in asked.output:
            return None
        assert asked.exit_code == 0, asked.output
        return json.loads(asked.output)["answer"]

    def shown(iri: str) -> str:
        return tog("entity", iri, "--store", store).output.splitlines()[0].split("  <")[0]

    assert ask("Who was born in Alphaville?") is None
    spelt = tog("correct", "--remove", "Alpha Town|label|alpha town", "--reason", "x", "--store", store)
    assert spelt.exit_code == 1 and "is not a fact in the KG" in spelt.output  # not its name as written
    done = tog("correct", "--remove", "Alpha Town|label|Alpha Town", "--add", 'Alpha Town|label|"Alphaville"',
               "--reason", "renamed", "--store", store)
    assert done.exit_code == 0, done.output
    rename = re.search(r"correction (\S+):", done.output).group(1)
    assert ask("Who was born in Alphaville?") == ["Beta Person"]
    assert ask("Who was born in Alpha Town?") is None
    assert shown(f"{ex}a") == "Alphaville"
    alias = tog("correct", "--add", "Beta Person|name|Bee", "--reason", "nickname", "--store", store)
    assert alias.exit_code == 0, alias.output
    assert ask("Where was Bee born?") == ["Alphaville"] and shown(f"{ex}b") == "Beta Person"
    assert kg_call(store, lambda s: s.corrections.has_fact((f"{ex}b", name, '"Bee"')))
    wrong = tog("correct", "--remove", "Beta Person|label|Bee", "--reason", "x", "--store", store)
    assert wrong.exit_code == 1 and "is not a fact in the KG" in wrong.output and wrong.output.count("\n") == 1
    assert tog("corrections", "revert", rename, "--store", store).exit_code == 0
    assert ask("Who was born in Alpha Town?") == ["Beta Person"] and ask("Who was born in Alphaville?") is None
    assert shown(f"{ex}a") == "Alpha Town"
    unalias = tog("correct", "--remove", "Beta Person|name|Bee", "--reason", "x", "--store", store)
    assert unalias.exit_code == 0, unalias.output
    assert ask("Where was Bee born?") is None and ask("Where was Beta Person born?") == ["Alpha Town"]
    # a name that ranks first (a label, the lower text) is shown; a revert shows the loaded one again
    before = tog("correct", "--add", "Gamma River|label|Gamma Brook", "--reason", "x", "--store", store)
    assert before.exit_code == 0 and shown(f"{ex}c") == "Gamma Brook"
    after = tog("correct", "--add", "Gamma Brook|name|Aardvark Creek", "--reason", "x", "--store", store)
    assert after.exit_code == 0 and shown(f"{ex}c") == "Gamma Brook"  # (a schema:name ranks after a label)
    first = re.search(r"correction (\S+):", before.output).group(1)
    assert tog("corrections", "revert", first, "--store", store).exit_code == 0
    assert shown(f"{ex}c") == "Gamma River" and ask("What flows through Aardvark Creek?") == ["Alpha Town"]


def test_corrections_made_in_one_second_list_in_the_order_made(tmp_path, monkeypatch):
    """A correction's time has six digits of its second always: one made at
    a whole second (whose fraction ``isoformat`` leaves out) lists before one
    made half a second later, and so is the later one a revert checks."""
    import datetime as dt

    import engine.feedback as feedback
    from conftest import iri, write_nt
    from engine.graph import utc_text
    from loaders.load import load_file

    store = open_store(tmp_path / "store", create=True)
    lines = [f"<{iri('a')}> <{iri('r')}> <{iri(f'b{i}')}> ." for i in range(3)]
    lines.append(f"<{iri('b0')}> <{iri('r')}> <{iri('a')}> .")  # (b0 stays when a's edge to it goes)
    load_file(store.need_sink(), write_nt(tmp_path / "kg.nt", lines))
    whole = dt.datetime(2026, 12, 7, 12, 0, 0, tzinfo=dt.timezone.utc)
    moments = [whole, whole + dt.timedelta(microseconds=500_000)]
    monkeypatch.setattr(feedback, "utc_now", lambda: utc_text(moments.pop(0)))
    first = feedback.correct(store, [f"<{iri('a')}>|<{iri('r')}>|<{iri('b0')}>"], [], "first")
    second = feedback.correct(store, [], [f"<{iri('a')}>|<{iri('r')}>|<{iri('b0')}>"], "second, later")
    assert first.created < second.created
    assert [c.id for c in store.need_corrections().list()] == [first.id, second.id]
    with pytest.raises(feedback.CorrectionError, match=f"correction {second.id} changed the same facts later"):
        feedback.revert(store, first.id)
    store.close()
