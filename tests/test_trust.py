"""Nothing silently wrong (issue 21, the parts done so far): a load that
reads nothing is an error and leaves no record, runs a killed process left
running are marked failed, names cannot drive the terminal, and credentials
never reach a message."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import METAQA, REPO, env_without_traceback, no_traceback
from llm_server import StandInModel


def test_a_load_that_reads_nothing_fails_and_is_not_recorded(tog, tmp_path):
    wrong = tmp_path / "kb.txt"
    wrong.write_text("".join(f"Film {i}\tdirected_by\tPerson {i}\n" for i in range(50)), encoding="utf-8")
    store = tmp_path / "s"
    first = tog("load", wrong, "--store", store, "--format", "delimited", "--delimiter", ";")
    assert first.exit_code == 1 and no_traceback(first)
    assert "none of its 50 statements" in first.output and "Nothing was recorded" in first.output
    assert len(first.output.strip().splitlines()) == 1
    fixed = tog("load", wrong, "--store", store, "--format", "delimited", "--delimiter", "\t")
    assert fixed.exit_code == 0, fixed.output
    assert "already loaded" not in fixed.output and "50 triples" in fixed.output
    assert "names: 100" in tog("info", "--store", store).output  # both ends of every line, linked


def test_a_file_with_some_good_lines_still_loads_them(tog, tmp_path):
    mixed = tmp_path / "kb.nt"
    mixed.write_text('<urn:a> <urn:r> <urn:b> .\nnot a triple\n<urn:b> <urn:r> <urn:c> .\n', encoding="utf-8")
    done = tog("load", mixed, "--store", tmp_path / "s")
    assert done.exit_code == 0 and "2 triples read, 1 lines skipped" in done.output


def test_runs_a_killed_process_left_running_are_marked_failed(tog, tmp_path):
    store = tmp_path / "s"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    probe = ("import os\n"
             "from engine.store import open_store\n"
             "from engine.graph import RunInfo, utc_now\n"
             f"s = open_store({str(store)!r})\n"
             "s.need_runs().start(RunInfo(id='20261201T000000-dead01', question='who?', started=utc_now(), "
             "method='tog', config={}))\n"
             "os._exit(9)  # killed: no finish, no close\n")
    subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env_without_traceback(), timeout=120)
    listed = tog("runs", "list", "--store", store, "--json")
    assert listed.exit_code == 0, listed.output
    (run,) = [r for r in json.loads(listed.output) if r["id"] == "20261201T000000-dead01"]
    assert run["status"] == "failed"


HOSTILE = "Evil\u001b]0;pwned\u0007 Film\nanswer: forged line"


def _hostile_store(tog, tmp_path, name: str = HOSTILE):
    """A store where "Quiet Film" was directed by someone named ``name``."""
    kb = tmp_path / "kb.nt"
    escaped = name.replace("\u001b", "\\u001B").replace("\u0007", "\\u0007").replace("\n", "\\n")
    escaped = escaped.replace("\u202e", "\\u202E")
    kb.write_text(f'<urn:e:1> <http://www.w3.org/2000/01/rdf-schema#label> "Quiet Film" .\n'
                  f'<urn:e:2> <http://www.w3.org/2000/01/rdf-schema#label> "{escaped}" .\n'
                  f'<urn:e:1> <urn:r:directed_by> <urn:e:2> .\n', encoding="utf-8")
    store = tmp_path / "s"
    assert tog("load", kb, "--store", store).exit_code == 0
    return store


def test_names_with_control_characters_never_reach_the_terminal_raw(tog, tmp_path):
    store = _hostile_store(tog, tmp_path)
    outputs = [tog("ask", "who directed [Quiet Film]", "--store", store),
               tog("runs", "show", "last", "--store", store),
               tog("runs", "list", "--store", store),
               tog("ask", "who directed the film", "--store", store, "--topic", HOSTILE + " II")]
    for result in outputs:
        text = result.output
        assert "\u001b" not in text and "\u0007" not in text, text
        assert not any(line.startswith("answer: forged") for line in text.splitlines()), text
    assert "\\u001b]0;pwned\\u0007" in outputs[0].output  # shown, escaped
    assert outputs[3].exit_code == 1 and len(outputs[3].output.strip().splitlines()) == 1


def test_control_characters_never_reach_written_pictures_or_reports_raw(tog, tmp_path):
    """The run pictures (html, svg, mermaid) and an eval's report are read in
    terminals and editors too: a name's escape sequence, bell or bidi
    override is written escaped there as on the screen."""
    import json

    store = _hostile_store(tog, tmp_path, HOSTILE + "\u202eeman")
    assert tog("ask", "who directed [Quiet Film]", "--store", store).exit_code == 0
    written = []
    for fmt in ("html", "svg", "mermaid"):
        out = tmp_path / f"run.{fmt}"
        assert tog("runs", "show", "last", "--store", store, "--format", fmt, "--output", out).exit_code == 0
        written.append(out)
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q\u0007\u202e1", "question": "who directed [Quiet Film]\u001b[2J",
                                     "answers": [HOSTILE]}) + "\n", encoding="utf-8")
    report = tmp_path / "report.html"
    result = tog("eval", questions, "--store", store, "--out", tmp_path / "out.jsonl", "--report", report)
    assert result.exit_code == 0, result.output
    written += [report, *sorted((tmp_path / "report_runs").glob("*.html"))]
    assert len(written) == 5
    for f in written:
        text = f.read_text(encoding="utf-8")
        assert not set(text) & {"\u001b", "\u0007", "\u202e"}, (f.name, text[:300])
    assert "pwned" in written[0].read_text(encoding="utf-8") and "\\u202e" in written[3].read_text(encoding="utf-8")


@pytest.mark.neo4j
def test_a_hostile_relation_label_reaches_browsers_style_sheet_escaped(tog, tmp_path, neo4j_store):
    escaped = HOSTILE.replace("\u001b", "\\u001B").replace("\u0007", "\\u0007").replace("\n", "\\n")
    kb = tmp_path / "kb.nt"
    kb.write_text(f'<urn:e:1> <urn:r:directed_by> <urn:e:2> .\n'
                  f'<urn:r:directed_by> <http://www.w3.org/2000/01/rdf-schema#label> "{escaped}\u009b\u202e" .\n',
                  encoding="utf-8")
    assert tog("load", kb, "--store", neo4j_store).exit_code == 0
    styled = tog("browser-style", "--store", neo4j_store)
    assert styled.exit_code == 0
    sheet = styled.output.split("\n}\n")[0] + "\n}"
    assert not any(c in sheet for c in "\u001b\u0007\u009b\u202e")  # escaped, as JSON reads them
    assert json.loads(sheet)["relationship.urn:r:directed_by"]["caption"] == " ".join(HOSTILE.split()) + "\u009b\u202e"


def test_a_key_echoed_back_by_the_provider_is_masked(tog, tmp_path, monkeypatch):
    secret = "sk-test-ECHOED-9x8y7z"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("TOG_CACHE_DIR", str(tmp_path / "cache"))
    store = tmp_path / "s"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    with StandInModel() as model:
        model.faults.append(("status", 401, {}, f"Incorrect API key provided: {secret}"))
        result = tog("ask", "who directed [Quiz Show]", "--store", store, "--model", "openai/standin",
                     "--api-base", model.api_base, "--no-cache")
    assert result.exit_code == 1 and "refused the credentials" in result.output
    assert secret not in result.output and "***" in result.output


def test_a_password_in_the_environment_never_reaches_an_error_line(tog, tmp_path, monkeypatch):
    store = tmp_path / "s"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    monkeypatch.setenv("NEO4J_PASSWORD", "hunter2-secret-pw")
    bad = tog("ask", "who wrote it", "--store", store, "--topic", "hunter2-secret-pw")  # echoed in the error
    assert bad.exit_code == 1 and "hunter2-secret-pw" not in bad.output and "***" in bad.output
    assert os.environ["NEO4J_PASSWORD"] == "hunter2-secret-pw"


def test_a_byte_order_mark_is_not_part_of_a_name_and_nul_bytes_are_bad_lines(tog, tmp_path):
    kb = tmp_path / "kb.txt"
    kb.write_bytes("\ufeffQuiz Show|directed_by|Robert Redford\n".encode("utf-8")
                   + b"Quiz Show|written_by|Paul Attanasio\n"
                   + b"Quiz\x00Show|starred_actors|Ralph Fiennes\n")
    store = tmp_path / "s"
    done = tog("load", kb, "--store", store)
    assert done.exit_code == 0 and "5 triples read (3 of them name labels), 1 lines skipped" in done.output and "NUL" in done.output
    found = tog("ask", "who directed [Quiz Show]", "--store", store, "--json")
    assert found.exit_code == 0, found.output
    data = json.loads(found.output)
    assert len(data["topics"]) == 1 and data["answer"] == ["Robert Redford"]
    assert "names: 3" in tog("info", "--store", store).output  # Quiz Show once, not twice


def test_an_eval_that_answers_nothing_says_so_and_fails(tog, tmp_path):
    store = tmp_path / "s"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    none = tog("eval", empty, "--store", store, "--out", tmp_path / "o.jsonl")
    assert none.exit_code == 1 and "no questions" in none.output and len(none.output.strip().splitlines()) == 1
    elsewhere = tmp_path / "other.txt"
    elsewhere.write_text("who directed [Zyzzyva Nights]\tSomeone\nwhat is [Qwerty Film] about\tThings\n",
                         encoding="utf-8")
    failed = tog("eval", elsewhere, "--store", store, "--out", tmp_path / "o2.jsonl")
    assert failed.exit_code == 1 and "none of the 2 questions could be answered" in failed.output
    mixed = tmp_path / "mixed.txt"
    mixed.write_text("who directed [Zyzzyva Nights]\tSomeone\nwho directed [Quiz Show]\tRobert Redford\n",
                     encoding="utf-8")
    partly = tog("eval", mixed, "--store", store, "--out", tmp_path / "o3.jsonl")
    assert partly.exit_code == 0 and "warning: 1 of 2 questions could not be answered" in partly.output


def test_every_answer_entity_is_backed_by_a_cited_path(tog, tmp_path):
    kb = tmp_path / "kb.txt"
    kb.write_text("".join(f"Big Studio|produced|Picture {i:02d}\n" for i in range(30))
                  + "Picture 00|directed_by|Some Director\n", encoding="utf-8")
    store = tmp_path / "s"
    assert tog("load", kb, "--store", store).exit_code == 0
    result = tog("ask", "what did [Big Studio] produce", "--store", store, "--json", "--depth", "1")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["answer"]) == 30 and data["from_kg"]
    assert len(data["paths"]) == len(set(data["paths"])) == 30
    assert {p.rsplit(" -> ", 1)[1] for p in data["paths"]} == set(data["answer"])
    text = tog("ask", "what did [Big Studio] produce", "--store", store, "--depth", "1").output
    assert "… and 20 more (--json lists all)" in text


def test_runs_show_honours_or_refuses_every_option_combination(tog, tmp_path):
    store = tmp_path / "s"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    assert tog("ask", "who directed the films written by [Paul Attanasio]", "--store", store).exit_code == 0
    full = json.loads(tog("runs", "show", "last", "--store", store, "--json").output)
    kept = json.loads(tog("runs", "show", "last", "--store", store, "--json", "--kept-only").output)
    assert len(kept["paths"]) < len(full["paths"]) and all(p["kept"] for p in kept["paths"])
    out = tmp_path / "tree.txt"
    written = tog("runs", "show", "last", "--store", store, "-o", out)
    assert written.exit_code == 0 and out.read_text(encoding="utf-8").startswith("run ")
    for combo in (["--json", "--format", "html"], ["--kept-only", "--format", "svg"], ["--json", "--cypher"]):
        refused = tog("runs", "show", "last", "--store", store, *combo)
        assert refused.exit_code == 2 and no_traceback(refused), combo


def test_eval_refuses_to_resume_with_other_settings_or_questions(tog, tmp_path):
    from conftest import METAQA, no_traceback

    loaded_store = tmp_path / "metaqa-store"
    assert tog("load", METAQA / "kb.txt", "--store", loaded_store).exit_code == 0
    out = tmp_path / "results.jsonl"
    first = tog("eval", METAQA / "questions.txt", "--store", loaded_store, "--out", out, "--limit", "3")
    assert first.exit_code == 0, first.output
    more = tog("eval", METAQA / "questions.txt", "--store", loaded_store, "--out", out, "--limit", "5")
    assert more.exit_code == 0, more.output  # the same settings: a resume answers the rest
    assert len(out.read_text(encoding="utf-8").splitlines()) == 5
    other = tog("eval", METAQA / "questions.txt", "--store", loaded_store, "--out", out, "--width", "5")
    assert other.exit_code == 1 and no_traceback(other)
    assert "answers made otherwise" in other.output and "search.width: 3 -> 5" in other.output
    assert "--restart" in other.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == 5  # nothing added
    questions = tmp_path / "other.txt"
    questions.write_text("who directed [Quiz Show]\tRobert Redford\n", encoding="utf-8")
    r = tog("eval", questions, "--store", loaded_store, "--out", out)
    assert r.exit_code == 1 and "questions.file" in r.output
    again = tog("eval", METAQA / "questions.txt", "--store", loaded_store, "--out", out, "--width", "5",
                "--limit", "2", "--restart")
    assert again.exit_code == 0, again.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2


def test_eval_keeps_only_its_own_answers_in_its_results(tog, tmp_path, monkeypatch):
    """A results file is resumed only as what it is: answers `tog eval` made
    with the same settings on the same store, however that store's folder is
    spelled. The question file itself, a file of other lines, or answers
    whose record of settings is gone are refused in one line, unchanged."""
    from conftest import METAQA, no_traceback

    monkeypatch.chdir(tmp_path)
    assert tog("load", METAQA / "kb.txt", "--store", "kb").exit_code == 0
    out = tmp_path / "results.jsonl"
    assert tog("eval", METAQA / "questions.txt", "--store", "kb", "--out", out, "--limit", "2").exit_code == 0
    resumed = tog("eval", METAQA / "questions.txt", "--store", tmp_path / "kb", "--out", out, "--limit", "3")
    assert resumed.exit_code == 0, resumed.output  # the same folder, spelled otherwise
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3
    own = tmp_path / "own.txt"
    own.write_text((METAQA / "questions.txt").read_text(encoding="utf-8"), encoding="utf-8")
    before = own.read_text(encoding="utf-8")
    refused = [tog("eval", own, "--store", "kb", "--out", own)]
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('[1, 2]\n{"id": "x"}\n', encoding="utf-8")
    refused.append(tog("eval", METAQA / "questions.txt", "--store", "kb", "--out", foreign))
    (tmp_path / "results.jsonl.identity.json").unlink()
    refused.append(tog("eval", METAQA / "questions.txt", "--store", "kb", "--out", out, "--width", "5"))
    for result, said in zip(refused, ("is the question file", "line 1 is not an answer of tog eval",
                                      "without a readable record of how they were made")):
        assert result.exit_code in (1, 2) and no_traceback(result), result.output
        assert said in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert own.read_text(encoding="utf-8") == before and foreign.read_text(encoding="utf-8").startswith("[1, 2]")
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3


def test_eval_runs_expire_unless_rated_and_runs_list_filters(tog, tmp_path):
    import time

    from conftest import METAQA

    store = tmp_path / "metaqa-store"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    first = tog("eval", METAQA / "questions.txt", "--store", store, "--out", tmp_path / "a.jsonl", "--limit", "3",
                "--keep-runs", "1s")
    assert first.exit_code == 0, first.output
    evals = [json.loads(line)["run"] for line in (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()]
    assert tog("feedback", evals[0], "--store", store, "--rating", "good").exit_code == 0
    asked = tog("ask", "who directed [Quiz Show]", "--store", store)
    assert asked.exit_code == 0, asked.output
    listed = json.loads(tog("runs", "list", "--json", "--store", store).output)
    assert [x["keep"] for x in listed] == ["1s", "1s", "1s", None]
    time.sleep(1.2)
    second = tog("eval", METAQA / "questions.txt", "--store", store, "--out", tmp_path / "b.jsonl", "--limit", "2",
                 "--keep-runs", "forever")
    assert second.exit_code == 0, second.output
    assert "removed 2 eval run(s) past their retention" in second.output
    kept = json.loads(tog("runs", "list", "--json", "--store", store).output)
    ids = [x["id"] for x in kept]
    assert evals[0] in ids and evals[1] not in ids and evals[2] not in ids  # the rated one stays
    assert len(kept) == 1 + 1 + 2 and [x["keep"] for x in kept][-2:] == ["forever", "forever"]
    again = tog("runs", "prune", "--expired", "--store", store)
    assert again.exit_code == 0 and "removed 0 run(s)" in again.output
    assert tog("runs", "prune", "--store", store).exit_code == 2  # neither --older-than nor --expired

    table = tog("runs", "list", "--store", store, "--limit", "2")
    lines = table.output.splitlines()
    assert lines[0].split() [:3] == ["RUN", "STARTED", "(UTC)"] and lines[-1] == "(2 of 4 runs shown)"
    assert len(lines) == 4 and lines[1].index("done") == lines[2].index("done") == lines[0].index("STATUS")
    assert kept[-1]["id"] in lines[2] and kept[-2]["id"] in lines[1]
    assert tog("runs", "list", "--store", store, "--status", "failed").output.strip() == "no runs of the 4 kept match"
    assert len(json.loads(tog("runs", "list", "--json", "--store", store, "--since", "1h").output)) == 4
    assert json.loads(tog("runs", "list", "--json", "--store", store, "--since", "0s").output) == []
    bad = tog("runs", "list", "--store", store, "--since", "yesterday")
    assert bad.exit_code == 1 and "--since" in bad.output and no_traceback(bad)


def test_load_summaries_and_info_agree_on_what_was_read_and_what_is_there(tog, tmp_path):
    import re
    import shutil

    from conftest import METAQA

    store = tmp_path / "s"
    first = tog("load", METAQA / "kb.txt", "--store", store)
    assert first.exit_code == 0, first.output
    read, labels, names = map(lambda x: int(x.replace(",", "")), re.search(
        r"([\d,]+) triples read \(([\d,]+) of them name labels\), 0 lines skipped, ([\d,]+) names indexed",
        first.output).groups())
    lines = [x for x in (METAQA / "kb.txt").read_text(encoding="utf-8").splitlines() if x.strip()]
    assert read == len(lines) + labels and labels == names

    def info() -> list[str]:
        shown = tog("info", "--store", store)
        assert shown.exit_code == 0, shown.output
        return shown.output.splitlines()

    assert f"triples: {read:,}" in info() and f"names: {names:,}" in info()
    # the same facts under another file name: read again, stored once
    copy = tmp_path / "copy.txt"
    shutil.copy(METAQA / "kb.txt", copy)
    assert f"{read:,} triples read" in tog("load", copy, "--store", store).output
    shown = info()
    assert f"triples: {read:,}" in shown and "loads: 2" in shown
    assert sum(1 for x in shown if x.startswith("  ") and x.endswith(", complete")) == 2
    assert any(x.startswith("relations: ") for x in shown) and any(x.startswith("name predicates: ") for x in shown)
    # a stopped load says where a re-run resumes
    broken = tmp_path / "broken.txt"
    broken.write_text("a|r|b\n" * 3 + "bad line\n" * 5, encoding="utf-8")
    stopped = tog("load", broken, "--store", store, "--max-errors", "2")
    assert stopped.exit_code == 1
    assert any("broken.txt" in x and "(a re-run resumes)" in x for x in info())
    # corrections: a real one and a no-op
    there = tog("correct", "--store", store, "--add", "Quiz Show|directed_by|Robert Redford", "--reason", "sure")
    assert there.exit_code == 0, there.output
    new = tog("correct", "--store", store, "--add", "Quiz Show|directed_by|Paul Attanasio", "--reason", "a test")
    assert new.exit_code == 0, new.output
    assert "corrections: 1 active, 0 reverted, 1 no-op" in info()
    assert f"triples: {read + 3 + 1:,}" in info()  # the broken file's a|r|b and two names, the new fact


def test_reading_commands_work_while_another_process_writes_the_store(tog, tmp_path):
    store = tmp_path / "s"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    assert tog("ask", "who directed [Quiz Show]", "--store", store).exit_code == 0
    holder = ("import sys, time\n"
              "from engine.store import open_store\n"
              "from engine.graph import RunInfo, utc_now\n"
              f"s = open_store({str(store)!r})\n"
              "runs = s.need_runs()\n"
              "print('holding', flush=True)\n"
              "n = 0\n"
              "while not sys.stdin.closed:\n"  # writes runs until told to stop (a line on stdin)
              "    import select\n"
              "    if select.select([sys.stdin], [], [], 0.05)[0]:\n"
              "        break\n"
              "    n += 1\n"
              "    info = RunInfo(id=f'20261201T000000-w{n:05d}', question='q', started=utc_now(), method='tog')\n"
              "    runs.start(info); info.status = 'done'; runs.finish(info)\n"
              "s.close()\n")
    proc = subprocess.Popen([sys.executable, "-c", holder], cwd=REPO, env=env_without_traceback(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "holding"
        listed = tog("runs", "list", "--store", store, "--json")
        assert listed.exit_code == 0, listed.output
        assert "in use by another process; reading it as it is now" in listed.stderr
        ids = [r["id"] for r in json.loads(listed.stdout)]
        assert len(ids) >= 1
        shown = tog("runs", "show", ids[0], "--store", store)
        assert shown.exit_code == 0 and "Quiz Show" in shown.stdout
        assert tog("info", "--store", store).exit_code == 0
        assert tog("entity", "Quiz Show", "--store", store).exit_code == 0
        asked = tog("ask", "who directed [Quiz Show]", "--store", store, "--no-record", "--json")
        assert asked.exit_code == 0, asked.output
        assert "Robert Redford" in json.loads(asked.stdout)["answer"]
        later = json.loads(tog("runs", "list", "--store", store, "--json").stdout)
        assert len(later) > len(ids)  # a new view sees what the writer has written since
        qfile = tmp_path / "q.txt"
        qfile.write_text("who directed [Quiz Show]\tRobert Redford\n", encoding="utf-8")
        scored = tog("eval", qfile, "--store", store, "--out", tmp_path / "o.jsonl", "--no-record")
        assert scored.exit_code == 0, scored.output
        assert "reading it as it is now" in scored.stderr and "hits@1 1.000" in scored.stdout
        refused = tog("eval", qfile, "--store", store, "--out", tmp_path / "o2.jsonl")  # it would record
        assert refused.exit_code == 1 and "in use by another process" in refused.output and no_traceback(refused)
        # what would write is refused in one line, and says what to do
        recorded = tog("ask", "who directed [Quiz Show]", "--store", store)
        assert recorded.exit_code == 1 and no_traceback(recorded)
        assert "in use by another process" in recorded.output and "--no-record" in recorded.output
        loading = tog("load", METAQA / "kb.txt", "--store", store, "--force")
        assert loading.exit_code == 1 and "in use by another process" in loading.output and no_traceback(loading)
    finally:
        proc.communicate("stop\n", timeout=60)
    assert proc.returncode == 0
    assert not any((store / "views").iterdir())  # each reader's snapshot went with it
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = store / "views" / f"{gone.stdout.strip()}-killed"  # a reader killed before its close
    stale.mkdir()
    assert tog("ask", "who directed [Quiz Show]", "--store", store).exit_code == 0  # writable again
    assert not stale.exists()  # the writer's open cleared it


@pytest.mark.parametrize("started,start,after", [
    ("2026-12-01T10:00:00Z", "2026-12-01T10:00:00.000001Z", False),  # no fraction: still earlier
    ("2026-12-01T09:00:00+01:00", "2026-12-01T08:30:00Z", False),    # an offset: 08:00 UTC
    ("2026-12-01T10:00:00.5+00:00", "2026-12-01T10:00:00Z", True),
    ("2026-12-01T10:00:00", "2026-12-01T09:59:59Z", True),           # no zone: UTC
])
def test_run_times_compare_as_moments_not_strings(started, start, after):
    from engine.runs import since_ok

    assert since_ok(started, start) is after
