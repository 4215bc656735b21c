"""The ``tog`` command through click's CliRunner (and a few real subprocesses)."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import time

import pytest
from conftest import KG_TRIPLES, METAQA, REPO, VENV_BIN, env_without_traceback, iri, no_traceback

from engine.errors import QuestionError
from engine.evaluate import lenient_match, read_questions, strict_match

TWO_HOP = "who directed the films written by [Paul Author]"


def error_lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("Error:")]


def assert_clean_error(result, *fragments: str) -> str:
    """Non-zero exit, exactly one 'Error:' line, no traceback."""
    assert result.exit_code != 0, result.output
    assert no_traceback(result), result.output
    lines = error_lines(result)
    assert len(lines) == 1, result.output
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wait_for_next_second(stamp: str) -> None:
    """Sleep (at most about a second) until the clock has left ``stamp``'s second."""
    deadline = time.monotonic() + 3
    while _utc_now() <= stamp and time.monotonic() < deadline:
        time.sleep(0.05)


def test_load_ask_runs_roundtrip(tog, kg_file, store_path):
    r = tog("load", kg_file, "--store", store_path)
    assert r.exit_code == 0, r.output
    assert f"{KG_TRIPLES} triples read, 0 lines skipped" in r.output

    r = tog("info", "--store", store_path)
    assert r.exit_code == 0, r.output
    assert f"triples: {KG_TRIPLES}" in r.output.splitlines()

    r = tog("ask", TWO_HOP, "--store", store_path, "--width", "2")
    assert r.exit_code == 0, r.output
    answer_line = r.output.splitlines()[0]
    assert answer_line.startswith("answer: ")
    assert set(answer_line[len("answer: "):].split(", ")) == {"Rita Director", "Mike Maker"}
    assert "Paul Author -> written by (of) -> Quiz Game -> directed by -> Rita Director" in r.output
    run_line = [line for line in r.output.splitlines() if line.startswith("run: ")]
    assert len(run_line) == 1
    run_id = run_line[0].split()[1]

    r = tog("runs", "list", "--store", store_path)
    assert r.exit_code == 0, r.output
    header, listed = r.output.splitlines()
    assert header.startswith("RUN ") and listed.startswith(run_id)
    assert TWO_HOP in listed
    assert "done" in listed

    r = tog("runs", "list", "--store", store_path, "--json")
    (item,) = json.loads(r.output)
    assert item["id"] == run_id
    assert set(item["answer"]) == {"Rita Director", "Mike Maker"}

    for ref in (run_id, "last"):
        r = tog("runs", "show", ref, "--store", store_path)
        assert r.exit_code == 0, r.output
        assert f"run {run_id}" in r.output
        assert "Paul Author  (topic)" in r.output
        assert " kept" in r.output and " pruned" in r.output
        answer = [line for line in r.output.splitlines() if line.startswith("answer: ")]
        assert set(answer[0][len("answer: "):].split(", ")) == {"Rita Director", "Mike Maker"}
        assert "--directed by--> Rita Director" in r.output
        assert "--written by (of)--> Quiz Game" in r.output

    r = tog("runs", "show", "--kept-only", "--store", store_path)
    assert r.exit_code == 0
    assert " kept" in r.output
    assert " pruned\n" not in r.output + "\n" and "pruned hidden" in r.output

    r = tog("runs", "show", run_id, "--store", store_path, "--json")
    data = json.loads(r.output)
    assert data["run"]["id"] == run_id
    assert {p["entity"] for p in data["paths"] if p["kept"] and p["depth"] == 2} >= {iri("rita"), iri("mike")}
    assert any(not p["kept"] for p in data["paths"])

    _wait_for_next_second(item["started"])
    r = tog("runs", "prune", "--older-than", "0s", "--store", store_path)
    assert r.exit_code == 0, r.output
    assert r.output.startswith("removed 1 run(s)")
    r = tog("runs", "list", "--store", store_path)
    assert r.output.strip() == "no runs yet"
    # the KG itself is untouched
    r = tog("info", "--store", store_path)
    assert f"triples: {KG_TRIPLES}" in r.output.splitlines()
    assert "runs: 0" in r.output.splitlines()


def test_prune_keeps_recent_runs(tog, loaded_store):
    assert tog("ask", "who directed [Quiz Game]", "--store", loaded_store).exit_code == 0
    r = tog("runs", "prune", "--older-than", "1h", "--store", loaded_store)
    assert r.exit_code == 0
    assert r.output.startswith("removed 0 run(s)")
    assert len(json.loads(tog("runs", "list", "--json", "--store", loaded_store).output)) == 1


def test_prune_zero_seconds_removes_a_run_just_made(tog, loaded_store):
    # ask and prune within the same second: "0s" still means every run
    assert tog("ask", "who directed [Quiz Game]", "--store", loaded_store).exit_code == 0
    r = tog("runs", "prune", "--older-than", "0s", "--store", loaded_store)
    assert r.exit_code == 0
    assert r.output.startswith("removed 1 run(s)"), r.output
    assert json.loads(tog("runs", "list", "--json", "--store", loaded_store).output) == []


def test_ask_json(tog, loaded_store):
    r = tog("ask", "what year was [Quiz Game] released", "--store", loaded_store, "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["answer"] == ["1994"]
    assert data["answer_ids"][0].startswith('"1994"^^')
    assert data["paths"] == ["Quiz Game -> release year -> 1994"]
    assert data["topics"][0]["id"] == iri("quiz")
    assert data["depth"] == 1
    assert data["run"]
    runs = json.loads(tog("runs", "list", "--json", "--store", loaded_store).output)
    assert [x["id"] for x in runs] == [data["run"]]


def test_ask_no_record_and_topic_option(tog, loaded_store):
    r = tog("ask", "who directed the films written by him", "--topic", "Paul Author",
            "--store", loaded_store, "--json", "--no-record")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert set(data["answer"]) == {"Rita Director", "Mike Maker"}
    assert data["run"] is None
    assert tog("runs", "list", "--store", loaded_store).output.strip() == "no runs yet"


def test_store_from_environment(runner, loaded_store):
    from engine.cli import cli

    r = runner.invoke(cli, ["ask", "who directed [Quiz Game]", "--json"], env={"TOG_STORE": str(loaded_store)})
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["answer"] == ["Rita Director"]


@pytest.mark.parametrize("args, fragment", [
    (["ask", ""], "empty"),
    (["ask", "   "], "empty"),
    (["ask", "who directed [No Such Film]"], "No Such Film"),
    (["ask", "who directed it", "--topic", "Nobody Known"], "Nobody Known"),
    (["ask", "who directed the best film ever"], "no entity"),
    (["runs", "show", "no-such-run"], "no-such-run"),
])
def test_domain_errors_are_one_line(tog, loaded_store, args, fragment):
    r = tog(*args, "--store", loaded_store)
    assert r.exit_code == 1
    assert_clean_error(r, fragment)


@pytest.mark.parametrize("args", [
    ["ask", "who directed [Quiz Game]"],
    ["runs", "list"],
    ["runs", "show"],
    ["runs", "prune", "--older-than", "1d"],
    ["info"],
    ["eval", str(METAQA / "questions.jsonl"), "--out", "out.jsonl"],
])
def test_missing_store(tog, tmp_path, args):
    store = tmp_path / "no-store-here"
    r = tog(*args, "--store", store)
    assert r.exit_code == 1
    assert_clean_error(r, "no store at", str(store))
    assert not store.exists()


def test_show_last_without_runs(tog, loaded_store):
    assert_clean_error(tog("runs", "show", "--store", loaded_store), "no runs")


@pytest.mark.parametrize("age", ["5x", "abc", "-1d", "d", ""])
def test_bad_older_than(tog, loaded_store, age):
    r = tog("runs", "prune", "--older-than", age, "--store", loaded_store)
    assert r.exit_code == 1
    line = assert_clean_error(r, "--older-than")
    assert "30d" in line  # says what an age looks like


def test_load_errors(tog, tmp_path):
    assert_clean_error(tog("load", tmp_path / "missing.nt", "--store", tmp_path / "s"), "no such file")
    odd = tmp_path / "data.weird"
    odd.write_text("x\n")
    assert_clean_error(tog("load", odd, "--store", tmp_path / "s"), "--format")


def test_traceback_escape_hatch(runner, loaded_store, monkeypatch):
    from engine.cli import cli

    monkeypatch.setenv("TOG_TRACEBACK", "1")
    r = runner.invoke(cli, ["ask", "", "--store", str(loaded_store)])
    assert isinstance(r.exception, QuestionError)


def test_load_twice_via_cli(tog, kg_file, store_path):
    assert tog("load", kg_file, "--store", store_path).exit_code == 0
    r = tog("load", kg_file, "--store", store_path)
    assert r.exit_code == 0
    assert "already loaded" in r.output
    r = tog("load", kg_file, "--store", store_path, "--force")
    assert r.exit_code == 0
    assert f"{KG_TRIPLES} triples" in r.output
    assert f"triples: {KG_TRIPLES}" in tog("info", "--store", store_path).output.splitlines()


def test_load_reports_bad_lines(tog, tmp_path):
    f = tmp_path / "bad.nt"
    f.write_text(f"<{iri('a')}> <{iri('p')}> <{iri('b')}> .\nnot a triple\n<{iri('b')}> <{iri('p')}> <{iri('c')}> .\n")
    r = tog("load", f, "--store", tmp_path / "s")
    assert r.exit_code == 0, r.output
    assert "2 triples read, 1 lines skipped" in r.output
    assert "  line 2: " in r.output


# ---------------------------------------------------------------------------
# eval on the MetaQA sample

@pytest.fixture(scope="module")
def metaqa_store(tmp_path_factory):
    from conftest import close_graph, load_into

    store = tmp_path_factory.mktemp("metaqa") / "store"
    g, (report,) = load_into(store, METAQA / "kb.txt")
    assert report.skipped == 0
    close_graph(g)
    return store


def _summary_line(output: str) -> str:
    (line,) = [x for x in output.splitlines() if x.startswith("questions ")]
    return line


def test_eval_metaqa_sample(tog, metaqa_store, tmp_path):
    questions = list(read_questions(METAQA / "questions.jsonl"))
    out = tmp_path / "results" / "metaqa.jsonl"
    r = tog("eval", METAQA / "questions.jsonl", "--store", metaqa_store, "--out", out, "--no-record")
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["id"] for row in rows] == [q.id for q in questions]
    gold = {q.id: q.answers for q in questions}
    hits = strict = 0
    for row in rows:
        assert row["answers"] == gold[row["id"]]
        assert "error" not in row, row
        pred = row["prediction"]
        assert row["hit_lenient"] == (bool(pred) and lenient_match(pred[0], gold[row["id"]]))
        hits += row["hit_lenient"]
        strict += bool(pred) and strict_match(pred[0], gold[row["id"]])
    line = _summary_line(r.output)
    assert line.startswith(f"questions {len(questions)}  hits@1 {hits / len(questions):.3f} "
                           f"(strict {strict / len(questions):.3f})")
    # better than chance by a wide margin: most sample questions are answered
    assert hits > len(questions) // 2
    # one breakdown line per question type
    types = {q.type for q in questions}
    assert sum(1 for x in r.output.splitlines() if x.strip().split(":")[0] in types) == len(types)

    # a second run resumes: nothing to answer, the same summary
    r2 = tog("eval", METAQA / "questions.jsonl", "--store", metaqa_store, "--out", out, "--no-record")
    assert r2.exit_code == 0
    assert len(out.read_text().splitlines()) == len(questions)
    assert _summary_line(r2.output) == line


def test_eval_limit_records_runs(tog, metaqa_store, tmp_path):
    out = tmp_path / "out.jsonl"
    r = tog("eval", METAQA / "questions.txt", "--store", metaqa_store, "--out", out, "--limit", "3")
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3
    assert all(row["run"] for row in rows)
    listed = json.loads(tog("runs", "list", "--json", "--store", metaqa_store).output)
    assert {x["id"] for x in listed} >= {row["run"] for row in rows}


def test_eval_bad_question_file(tog, metaqa_store, tmp_path):
    assert_clean_error(tog("eval", tmp_path / "none.jsonl", "--store", metaqa_store, "--out", tmp_path / "o"),
                       "no such question file")


# ---------------------------------------------------------------------------
# the command stays light

_PROBE = """
import sys
from click.testing import CliRunner
from engine.cli import cli
for args in (["--help"], ["ask", "--help"], ["load", "--help"], ["eval", "--help"], ["runs", "--help"]):
    r = CliRunner().invoke(cli, args, prog_name="tog")
    assert r.exit_code == 0, (args, r.output)
heavy = ("litellm", "pyoxigraph", "bm25s", "rdflib", "numpy", "tqdm")
print(" ".join(sorted({m.split(".")[0] for m in sys.modules} & set(heavy))))
"""


def test_help_imports_nothing_heavy():
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, capture_output=True, text=True,
                          env=env_without_traceback(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


_ASK_PROBE = """
import sys
from click.testing import CliRunner
from engine.cli import cli
r = CliRunner().invoke(cli, ["ask", "who directed [Quiz Game]", "--store", sys.argv[1]], prog_name="tog")
assert r.exit_code == 0 and "Rita Director" in r.output, r.output
heavy = ("litellm", "numpy", "scipy", "bm25s", "neo4j", "rdflib", "engine.agent", "engine.backends.sparql",
         "engine.backends.neo4j")
print(" ".join(sorted(m for m in heavy if m in sys.modules)))
"""


def test_an_offline_question_on_the_embedded_store_imports_no_llm_numpy_or_other_backend(loaded_store):
    done = subprocess.run([sys.executable, "-c", _ASK_PROBE, str(loaded_store)], cwd=REPO, capture_output=True,
                          text=True, env=env_without_traceback(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_tog_entry_point_help():
    done = subprocess.run([str(VENV_BIN / "tog"), "--help"], capture_output=True, text=True,
                          env=env_without_traceback(), timeout=60)
    assert done.returncode == 0, done.stderr
    for command in ("load", "ask", "runs", "eval", "info"):
        assert f"  {command} " in done.stdout


def test_a_store_in_use_by_another_process_is_one_clear_line(tog, loaded_store):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from engine.store import open_store\n"
         f"g = open_store({str(loaded_store)!r})\n"
         "print('ready', flush=True)\n"
         "sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "ready"
        line = assert_clean_error(tog("ask", "who directed [Quiz Game]", "--store", loaded_store), "in use")
        assert str(loaded_store) in line
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # once the other process is gone, the store opens again
    assert tog("ask", "who directed [Quiz Game]", "--store", loaded_store).exit_code == 0


def test_bad_inputs_are_one_clear_line_each(tog, loaded_store, tmp_path, kg_file):
    import gzip

    truncated = tmp_path / "cut.nt.gz"
    truncated.write_bytes(gzip.compress(kg_file.read_bytes())[:-20])
    assert_clean_error(tog("load", truncated, "--store", tmp_path / "s1"), "truncated or corrupt")
    a_file = tmp_path / "plain"
    a_file.write_text("x")
    assert_clean_error(tog("load", kg_file, "--store", a_file / "sub"), "store")
    assert_clean_error(tog("load", kg_file, "--store", tmp_path / "s2", "--name-predicate", "rdfs:label x"),
                       "--name-predicate")
    assert_clean_error(tog("load", tmp_path, "--store", tmp_path / "s3"), "directory")
    assert_clean_error(tog("ask", "who directed it", "--topic", "urn:x>", "--store", loaded_store), "unknown entity")
    assert_clean_error(tog("runs", "show", "a b", "--store", loaded_store), "no run")
    assert_clean_error(tog("runs", "prune", "--older-than", "99999999999d", "--store", loaded_store), "--older-than")
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "who directed [Quiz Game]", "answers": ["Rita Director"]}\n')
    assert_clean_error(tog("eval", questions, "--out", tmp_path, "--store", loaded_store), "directory")


def test_long_answers_are_cut_in_text_output_but_not_in_json(tog, tmp_path):
    lines = [f"Hub Movie|starred_actors|Actor {i:02d}" for i in range(15)]
    f = tmp_path / "hub.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = tmp_path / "hub-store"
    assert tog("load", f, "--store", store).exit_code == 0
    text = tog("ask", "who starred in [Hub Movie]", "--store", store, "--max-candidates", "20")
    assert text.exit_code == 0, text.output
    line = next(x for x in text.output.splitlines() if x.startswith("answer: "))
    assert line.count(",") == 9 and line.endswith("… and 5 more (--json lists all)")
    data = json.loads(tog("ask", "who starred in [Hub Movie]", "--store", store, "--max-candidates", "20",
                          "--json").output)
    assert len(data["answer"]) == 15
    shown = tog("runs", "show", "last", "--store", store).output
    assert "… and 5 more" in next(x for x in shown.splitlines() if x.startswith("answer: "))
    # ToG's rule for crowded relations: 15 neighbours are crowded at 10, so 4 are offered
    data = json.loads(tog("ask", "who starred in [Hub Movie]", "--store", store, "--sample-over", "10",
                          "--sample-size", "4", "--json").output)
    assert len(data["answer"]) == 4
    from engine.store import open_store

    with open_store(str(store)) as opened:
        info = opened.runs.get(data["run"]).info
    assert info.config["sample_over"] == 10 and info.config["sample_size"] == 4
    assert len(json.loads(tog("ask", "who starred in [Hub Movie]", "--store", store, "--sample-over", "16",
                              "--json").output)["answer"]) == 15


def test_entity_shows_what_a_name_stands_for_and_suggests_near_names(tog, tmp_path):
    from conftest import METAQA

    store = tmp_path / "s"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    r = tog("entity", "Quiz Show", "--store", store, "--json")
    assert r.exit_code == 0, r.output
    (found,) = json.loads(r.output)
    kb = [line.split("|") for line in (METAQA / "kb.txt").read_text(encoding="utf-8").splitlines()]
    out = {rel for s, rel, _ in kb if s == "Quiz Show"}
    assert {x["relation"].rsplit(":", 1)[1] for x in found["relations"] if x["direction"] == "out"} == out
    tags = sum(1 for s, rel, _ in kb if s == "Quiz Show" and rel == "has_tags")
    assert next(x["degree"] for x in found["relations"] if x["relation"].endswith("has_tags")) == tags
    text = tog("entity", "Quiz Show", "--store", store)
    assert "-> has tags" in text.output and "<urn:tog:e:Quiz%20Show>" in text.output
    missing = tog("entity", "Quiz Show Redford", "--store", store)
    assert missing.exit_code == 1 and "did you mean 'Quiz Show'" in missing.output and no_traceback(missing)


def test_entity_shows_a_hub_s_relations_with_the_most_edges_and_says_how_many_more(tog, tmp_path):
    """An entity with more relations in a direction than `tog entity` lists
    (a hub of a real KG has thousands) shows those with the most edges, and
    says how many more there are; `--all` and `--json` list every one."""
    from conftest import write_nt

    from engine.cli import ENTITY_SHOWN

    kinds = ENTITY_SHOWN + 50
    lines = [f'<{iri("hub")}> <http://www.w3.org/2000/01/rdf-schema#label> "The Hub" .']
    lines += [f"<{iri('hub')}> <{iri(f'r{i}')}> <{iri(f'x{i}-{j}')}> ." for i in range(kinds) for j in range(i % 7 + 1)]
    lines += [f"<{iri('fan')}> <{iri('likes')}> <{iri('hub')}> ."]
    store = tmp_path / "s"
    assert tog("load", write_nt(tmp_path / "hub.nt", lines), "--store", store, "--no-progress").exit_code == 0
    text = tog("entity", "The Hub", "--store", store).output
    shown = re.findall(r"-> r(\d+)  \((\d+)\)", text)
    assert len(shown) == ENTITY_SHOWN and min(int(n) for _, n in shown) >= max(
        i % 7 + 1 for i in range(kinds) if str(i) not in {r for r, _ in shown})
    assert "-> … and 50 more relations out (the 100 above have the most edges; --all lists every one)" in text
    assert "<- likes  (1)" in text and "more relations in" not in text
    every = tog("entity", "The Hub", "--store", store, "--all").output
    assert len(re.findall(r"-> r\d+  ", every)) == kinds and "more relations" not in every
    (found,) = json.loads(tog("entity", "The Hub", "--store", store, "--json").output)
    assert len([r for r in found["relations"] if r["direction"] == "out"]) == kinds


def test_relations_lists_every_relation_with_its_count_on_each_backend(tog, store_spec):
    from collections import Counter

    from conftest import METAQA

    assert tog("load", METAQA / "kb.txt", "--store", store_spec).exit_code == 0
    r = tog("relations", "--store", store_spec, "--json")
    assert r.exit_code == 0, r.output
    kb = Counter(line.split("|")[1] for line in (METAQA / "kb.txt").read_text(encoding="utf-8").splitlines())
    got = {x["relation"].rsplit(":", 1)[1]: x["facts"] for x in json.loads(r.output) if x["role"] == "relation"}
    assert got == dict(kb)
    text = tog("relations", "--store", store_spec).output
    assert "starred actors" in text and "<urn:tog:r:starred_actors>" in text


def test_a_closed_output_beside_a_writer_is_not_blamed_on_the_writer(tog, kg_file, store_path):
    """`tog info | head` while another process writes the store: the reader
    of the output went away, which is no failure to read the store."""
    from engine.store import open_store

    assert tog("load", kg_file, "--store", store_path).exit_code == 0
    writer = open_store(store_path)  # (holds the store: the command reads it as a view)
    try:
        proc = subprocess.Popen([str(VENV_BIN / "tog"), "info", "--store", str(store_path)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env_without_traceback(), cwd=REPO)
        proc.stdout.close()  # the pipe's reader is gone before the first line
        _, err = proc.communicate(timeout=120)
    finally:
        writer.close()
    said = err.decode()
    assert "in use by another process" in said and "while another process writes it" not in said, said
    assert "Traceback" not in said, said
