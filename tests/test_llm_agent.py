"""The LLM agent against stand-ins that behave like real models
(tests/llm_server.py): replies read tolerantly and safely, structured replies,
a hard call budget, honest fallbacks, provider hygiene and runs that say
which model produced them."""

from __future__ import annotations

import json
import socket
from collections import Counter
from pathlib import Path

import pytest
from conftest import METAQA
from llm_server import StandInModel

from engine.replies import parse_answer, parse_entities, parse_judgement, parse_scores

CORPUS = Path(__file__).parent / "fixtures" / "llm_replies.jsonl"
MODEL = "openai/standin"


def _corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]


def _read(row: dict):
    kind, reply = row["kind"], row["reply"]
    if kind in ("relations", "entities"):
        return parse_scores(reply, row["candidates"])
    if kind == "judge":
        return parse_judgement(reply)
    if kind == "answer":
        return parse_answer(reply, row["shown"], row["known"])
    return parse_entities(reply, row["question"])


def _meant(row: dict):
    m = row["reading"]
    if m is None:
        return None
    if "scores" in m:
        return {int(k): v for k, v in m["scores"].items()}
    if "reward" in m:
        return m["reward"]
    if "names" in m:
        return m["names"], m["cited"]
    return m["entities"]


def test_every_reply_of_the_corpus_reads_as_its_model_meant():
    """Replies the two stand-in classes gave to the engine's real prompts on
    the MetaQA sample (``python tests/llm_server.py tests/fixtures/llm_replies.jsonl
    --limit 21`` writes the file), each with the reading it means."""
    rows = _corpus()
    kinds = Counter((r["mode"], r["kind"]) for r in rows)
    assert len(rows) >= 150 and {m for m, _ in kinds} == {"gpt4", "llama2"}
    assert {k for _, k in kinds} >= {"relations", "entities", "judge", "answer"}
    wrong = [(r["reply"], _read(r), _meant(r)) for r in rows if _read(r) != _meant(r)]
    assert not wrong, wrong[:3]
    assert sum(r["reading"] is None for r in rows) >= 1  # the unreadable ones stay unread


SHOWN = ["Quiz Show -> directed by", "Quiz Show -> release year", "Quiz Show -> written by"]

HABITS = [  # (reply, reading) over SHOWN: what real models write
    ("**1**: 0.8\n**3**: 0.2", {0: 0.8, 2: 0.2}),
    ("- 1: 0.8\n- 2: 0.1", {0: 0.8, 1: 0.1}),
    ("1: 0.8 (directed by)\n3: 0.2 (written by)", {0: 0.8, 2: 0.2}),
    ("directed by: 0.8\nwritten by: 0.2", {0: 0.8, 2: 0.2}),
    ("1: 8\n3: 2", {0: 0.8, 2: 0.2}),
    ("1: 80%\n2: 20%", {0: 0.8, 1: 0.2}),
    ("1. 0.7\n2. 0.3", {0: 0.7, 1: 0.3}),
    ('{"1": 0.8, "3": 0.2}', {0: 0.8, 2: 0.2}),
    ('```json\n{"scores": [{"candidate": 1, "score": 0.9}, {"candidate": 2, "score": 0.1}]}\n```', {0: 0.9, 1: 0.1}),
    ('[{"relation": "directed by", "score": 0.6}]', {0: 0.6}),
    ("| # | relation | score |\n|---|---|---|\n| 1 | directed by | 0.9 |\n| 3 | written by | 0.1 |", {0: 0.9, 2: 0.1}),
    ("{directed by (Score: 0.4)}\n{written by (Score: 0.6)}", {0: 0.4, 2: 0.6}),
    ("Quiz Show -> directed by: 0.75", {0: 0.75}),
    ("Candidate #2 = 0.5", {1: 0.5}),
    ("Sure! Here are my scores.\n\n1: 0.9 - the question asks who directed it.\n\nHope this helps!", {0: 0.9}),
    ("(1) 0.6\n(2) 0.4", {0: 0.6, 1: 0.4}),
    ("1: 0.7\n2: 3.5", {0: 0.7}),  # a score out of range is not guessed at
]


@pytest.mark.parametrize("reply,reading", HABITS)
def test_common_score_habits_read_correctly(reply, reading):
    assert parse_scores(reply, SHOWN) == reading


@pytest.mark.parametrize("reply", [
    "4: 0.9\n0: 0.5",                       # numbers that were not shown
    "Quiz Show -> sequel of: 0.9",          # a relation that was not shown
    "MATCH (n) DETACH DELETE n: 1.0",       # hostile text is only ever compared with the candidates
    "I think the first one is best.",
    "", "   \n  ",
])
def test_a_candidate_that_was_not_shown_never_counts(reply):
    assert parse_scores(reply, SHOWN) is None


@pytest.mark.parametrize("reply,reward", [
    ("Sufficient: yes\nConfidence: 0.8", 0.8),
    ("Sufficient: yes   (or: Sufficient: no)\nConfidence: 0.8", 0.8),  # a copied format line
    ("**Sufficient:** No\n**Confidence:** 90%", 0.1),
    ("{Yes}", 1.0),
    ("{No}. The paths do not say.", 0.0),
    ("Yes, the paths answer it. Confidence: 9/10", 0.9),
    ("No. We need the director's birthplace.", 0.0),
    ('{"sufficient": false, "confidence": 0.7}', 0.3),
    ("The given paths are not sufficient.", 0.0),
    ("Based on the paths above, the facts are enough to answer.", 1.0),
    ("Sufficient: YES\nConfidence: 8", 0.8),
])
def test_the_judge_is_read_from_its_first_decisive_word(reply, reward):
    assert parse_judgement(reply) == pytest.approx(reward)


@pytest.mark.parametrize("reply", ["maybe", "It depends on the paths.", "Yes or no? Hard to say, no idea, yes."])
def test_a_judge_without_a_verdict_is_unread(reply):
    assert parse_judgement(reply) is None


@pytest.mark.parametrize("reply,known,reading", [
    ("Answer: Robert Redford | Mike Newell\nPaths: 1, 2", ["Robert Redford", "Mike Newell"],
     (["Robert Redford", "Mike Newell"], [0, 1])),
    ("Answer: Robert Redford, Mike Newell\nPaths: 2", ["Robert Redford", "Mike Newell"],
     (["Robert Redford", "Mike Newell"], [1])),
    ("Answer: Washington, D.C.\nPaths: 1", ["Washington, D.C."], (["Washington, D.C."], [0])),
    ('{"answers": ["Robert Redford"], "paths": [1, 7]}', ["Robert Redford"], (["Robert Redford"], [0])),
    ("Based on the paths, the answer is Robert Redford and Mike Newell.", ["Robert Redford", "Mike Newell"],
     (["Robert Redford", "Mike Newell"], [])),
    ("{Robert Redford}", ["Robert Redford"], (["Robert Redford"], [])),
    ("**Answer:** Robert Redford\n(Paths used: 1)", ["Robert Redford"], (["Robert Redford"], [0])),
    ("Answer: none\nPaths: none", [], ([], [])),
])
def test_answers_read_as_a_list_with_their_paths(reply, known, reading):
    assert parse_answer(reply, 2, known) == reading


def test_topic_names_must_occur_in_the_question():
    q = "who directed the films written by Paul Attanasio and Quiz Show"
    assert parse_entities("Entities: Paul Attanasio | Mars", q) == ["Paul Attanasio"]
    assert parse_entities("Entities: Paul Attanasio, Quiz Show", q) == ["Paul Attanasio", "Quiz Show"]
    assert parse_entities('{"entities": ["Quiz Show", "DROP TABLE"]}', q) == ["Quiz Show"]
    assert parse_entities("The named entities are:\n- Paul Attanasio\n- Quiz Show", q) == ["Paul Attanasio", "Quiz Show"]
    assert parse_entities("Entities: none", q) == [] and parse_entities("no idea", q) is None


# -- through litellm, end to end ----------------------------------------------------

@pytest.fixture
def sample_store(tmp_path, tog):
    store = tmp_path / "metaqa-store"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    return store


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-standin-4711")
    monkeypatch.setenv("TOG_CACHE_DIR", str(tmp_path / "cache"))


def _eval(tog, store, tmp_path, model, *args, name="results.jsonl"):
    out = tmp_path / name
    result = tog("eval", METAQA / "questions.txt", "--store", store, "--out", out, "--model", MODEL,
                 "--api-base", model.api_base, "--no-cache", *args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    summary = json.loads(out.with_name(out.name + ".summary.json").read_text())
    return rows, summary, result.output


@pytest.mark.parametrize("method,bound", [("tog", 10), ("tog-r", 7)])
def test_a_llama2_like_model_is_rarely_asked_again_and_never_over_budget(tog, sample_store, env, tmp_path, method,
                                                                         bound):
    with StandInModel(mode="llama2", unreadable=0.03) as model:
        rows, summary, _ = _eval(tog, sample_store, tmp_path, model, "--method", method)
    assert len(rows) == 21 and not any(r.get("error") for r in rows)
    calls = summary["llm"]["calls"]
    assert calls == model.calls
    assert summary["llm"]["repairs"] / calls < 0.05  # under 5% of calls repeated
    assert max(r["llm_calls"] for r in rows) <= bound == rows[0]["llm_budget"]
    assert all(r["llm_calls"] <= r["llm_budget"] for r in rows)


def test_structured_replies_need_no_repairs_and_offer_only_the_shown_numbers(tog, sample_store, env, tmp_path):
    with StandInModel(mode="llama2") as model:  # its free-text habits do not reach a constrained reply
        rows, summary, output = _eval(tog, sample_store, tmp_path, model, "--structured", "on", "--limit", "8")
    assert summary["llm"]["repairs"] == 0 and summary["llm"]["fallbacks"] == 0
    formats = [r["body"].get("response_format") for r in model.requests]
    assert all(f and f["type"] == "json_schema" for f in formats)
    scores = [f["json_schema"]["schema"] for f in formats if "scores" in f["json_schema"]["schema"]["properties"]]
    assert scores
    for schema, req in zip(scores, [r for r in model.requests
                                    if "scores" in r["body"]["response_format"]["json_schema"]["schema"]["properties"]]):
        shown = req["body"]["messages"][-1]["content"].count(" -> ?") + req["body"]["messages"][-1]["content"].count(
            " <- ?")
        enum = schema["properties"]["scores"]["items"]["properties"]["candidate"]["enum"]
        assert enum == list(range(1, len(enum) + 1)) and (not shown or len(enum) == shown)
    assert summary["settings"]["llm"]["structured"] == "on"
    # free text by default for a model litellm does not know to support schemas
    with StandInModel(mode="gpt4") as model:
        _eval(tog, sample_store, tmp_path, model, "--limit", "2", name="auto.jsonl")
    assert all("response_format" not in r["body"] for r in model.requests)


def test_a_model_that_never_answers_readably_stays_in_budget_and_says_so(tog, sample_store, env, tmp_path):
    with StandInModel(mode="llama2", unreadable=1.0, stubborn=True) as model:
        result = tog("ask", "who directed the films written by [Paul Attanasio]", "--store", sample_store,
                     "--model", MODEL, "--api-base", model.api_base, "--no-cache", "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["stats"]["llm_calls"] <= 10 == data["stats"]["llm_budget"]
        # every step fell back to the offline component; a repair was asked only while the budget had room
        assert data["fallbacks"] >= 3 and data["stats"]["llm_repairs"] >= 1
        assert "offline" in data["reason"]
        text = tog("ask", "who directed the films written by [Paul Attanasio]", "--store", sample_store,
                   "--model", MODEL, "--api-base", model.api_base, "--no-cache")
        assert "warning:" in text.output and "could not be read" in text.output
        shown = tog("runs", "show", "last", "--store", sample_store)
        assert "warning:" in shown.output and "model: openai/standin at 127.0.0.1" in shown.output
        page = tog("runs", "show", "last", "--store", sample_store, "--format", "html")
        assert 'id="fallbacks"' in page.output and "could not be read" in page.output
        strict = tog("ask", "who directed the films written by [Paul Attanasio]", "--store", sample_store,
                     "--model", MODEL, "--api-base", model.api_base, "--no-cache", "--strict-llm")
        assert strict.exit_code == 1 and "--strict-llm" in strict.output
        assert len(strict.output.strip().splitlines()) == 1 and "Traceback" not in strict.output
        rows, summary, output = _eval(tog, sample_store, tmp_path, model, "--limit", "4")
    assert summary["llm"]["questions_with_fallbacks"] == 4 and "fallbacks in 4 questions" in output


def test_the_gpt4_like_model_keeps_to_the_budget_without_repairs_on_most_questions(tog, sample_store, env, tmp_path):
    with StandInModel(mode="gpt4") as model:
        rows, summary, output = _eval(tog, sample_store, tmp_path, model)
    assert summary["llm"]["repairs"] == 0 and summary["llm"]["fallbacks"] == 0
    assert summary["llm"]["calls_max"] <= 10 and "at most" in output
    # a model that reads relation names as well as the offline backbone does loses nothing on the way:
    # prompts, caps, readers, judge and answer keep what it decides
    out = tmp_path / "offline.jsonl"
    assert tog("eval", METAQA / "questions.txt", "--store", sample_store, "--out", out).exit_code == 0
    offline = json.loads(out.with_name(out.name + ".summary.json").read_text())
    assert summary["hits@1"] >= offline["hits@1"] > 0.5


def test_a_missing_key_is_one_line_naming_the_variable_and_no_call(tog, sample_store, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("TOG_CACHE_DIR", str(tmp_path / "cache"))
    with StandInModel() as model:
        result = tog("ask", "who directed [Quiz Show]", "--store", sample_store, "--model", MODEL,
                     "--api-base", model.api_base, "--no-cache")
    assert result.exit_code == 1 and "OPENAI_API_KEY" in result.output and "not set" in result.output
    assert len(result.output.strip().splitlines()) == 1 and model.calls == 0


def test_connection_refused_reads_as_such(tog, sample_store, env):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = tog("ask", "who directed [Quiz Show]", "--store", sample_store, "--model", MODEL,
                 "--api-base", f"http://127.0.0.1:{port}/v1", "--no-cache")
    assert result.exit_code == 1 and "connection refused" in result.output.lower()
    assert "Traceback" not in result.output and "internal" not in result.output.lower()


def test_runs_and_summaries_record_which_model_and_prompts_answered(tog, sample_store, env, tmp_path):
    from engine.agent import prompts_hash

    with StandInModel(mode="gpt4") as model:
        rows, summary, output = _eval(tog, sample_store, tmp_path, model, "--limit", "2",
                                      "--temperature-explore", "0.2")
    llm = summary["settings"]["llm"]
    assert llm["model"] == MODEL and llm["host"] == "127.0.0.1" and llm["temperature_explore"] == 0.2
    assert llm["prompts"] == prompts_hash() and len(llm["prompts"]) == 12
    assert "sk-test" not in json.dumps(summary) and str(model.port) not in json.dumps(llm)
    shown = tog("runs", "show", rows[0]["run"], "--store", sample_store, "--json")
    config = json.loads(shown.output)["run"]["config"]
    assert config["llm"]["model"] == MODEL and config["llm"]["structured"] == "auto"
    assert f"model: {MODEL} at 127.0.0.1" in output


def test_relation_candidates_name_their_entity_once_and_say_the_direction(tog, sample_store, env):
    with StandInModel(mode="exact") as model:
        result = tog("ask", "who directed the films written by [Paul Attanasio]", "--store", sample_store,
                     "--model", MODEL, "--api-base", model.api_base, "--no-cache")
        assert result.exit_code == 0, result.output
    prompts = [r["body"]["messages"] for r in model.requests]
    relations = [m[-1]["content"] for m in prompts if m[-1]["content"].count(" -> ?") + m[-1]["content"].count(" <- ?")]
    assert relations and all("(of)" not in p for m in prompts for p in (x["content"] for x in m))
    second = next(p for p in relations if "reached by" in p)  # depth 2: from the films Paul Attanasio wrote
    lines = [line for line in second.splitlines() if line[:1].isdigit()]
    assert len(lines) == len(set(line.split(". ", 1)[1] for line in lines))  # no candidate twice
    assert "reached by: Paul Attanasio <- written by <-" in second
    assert "A <- r <- B" in prompts[0][0]["content"]  # the system part says how to read it


def test_a_run_reaches_for_no_network_but_the_model_endpoint(sample_store, env, tmp_path):
    """Through litellm with a vLLM route and an OpenAI one: no tokenizer, price
    list or telemetry request leaves the machine (every address a socket is
    asked for is recorded in the child process)."""
    import subprocess
    import sys

    from conftest import REPO, env_without_traceback

    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(
        "import socket, os\n"
        "log = open(os.environ['TOG_PROBE_LOG'], 'a')\n"
        "real = socket.getaddrinfo\n"
        "def watched(host, *a, **k):\n"
        "    log.write(f'{host}\\n'); log.flush()\n"
        "    return real(host, *a, **k)\n"
        "socket.getaddrinfo = watched\n", encoding="utf-8")
    hosts = tmp_path / "hosts.log"
    with StandInModel(mode="gpt4") as model:
        for route in ("hosted_vllm/meta-llama/Llama-2-7b-chat-hf", MODEL):
            run_env = {**env_without_traceback(), "PYTHONPATH": f"{probe}:{REPO}", "TOG_PROBE_LOG": str(hosts),
                       "OPENAI_API_KEY": "sk-x", "TOG_CACHE_DIR": str(tmp_path / "c")}
            run_env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)  # the engine sets it itself
            done = subprocess.run([sys.executable, "-m", "engine.cli", "ask", "who directed [Quiz Show]", "--store",
                                   str(sample_store), "--model", route, "--api-base", model.api_base, "--no-cache"],
                                  cwd=REPO, env=run_env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stdout + done.stderr
            assert "answer:" in done.stdout
    asked = set(hosts.read_text().split())
    assert asked and asked <= {"127.0.0.1", "localhost"}, asked


def test_an_answer_may_be_an_entity_a_path_passes_and_is_backed_by_it(tog, sample_store, env):
    """A model that reads "Franklyn Seales <- starred actors <- Southern Comfort -> has genre -> Action"
    answers "what films did he star in" with the film, not the path's end: the
    answer links to that entity and counts as the KG's."""
    with StandInModel(mode="exact", reader="aligned") as model:  # never stops early: --threshold 1
        result = tog("ask", "what films did [Franklyn Seales] star in", "--store", sample_store, "--model", MODEL,
                     "--api-base", model.api_base, "--no-cache", "--threshold", "1", "--depth", "2", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["depth"] == 2 and data["answer"] and len(data["answer_ids"]) == len(data["answer"])
    for name in data["answer"]:
        hops = [p.split(" -> ") for p in data["paths"]]
        assert any(name in parts[1:-1] for parts in hops) and not any(parts[-1] == name for parts in hops)
    assert data["from_kg"] and data["fallbacks"] == 0 and "cited paths" in data["reason"]


def test_a_model_pruning_entities_keeps_the_tails_that_go_on(tog, env, tmp_path):
    """Nine teams are equally good to a model that sees only their names;
    one has a captain, and it comes last in the sample order. The KG knows
    which tails go on (one bounded listing, which the next depth reuses):
    the model is shown that team first, and with width 1 the beam keeps it,
    whichever way the model's tie falls."""
    lines = [f"north_league\thas_team\tteam_{i:02d}" for i in range(9)]
    lines += [f"team_{i:02d}\tfounded_in\t{1950 + i}" for i in range(9)]
    lines += ["team_07\tcaptained_by\tdana_reyes"]
    src = tmp_path / "league.tsv"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = tmp_path / "store"
    assert tog("load", src, "--store", store, "--format", "tsv").exit_code == 0
    with StandInModel(mode="exact", reader="aligned") as model:
        for seed in range(4):
            asked = tog("ask", "which captain did the teams of [north_league] have", "--store", store, "--model",
                        MODEL, "--api-base", model.api_base, "--no-cache", "--width", "1", "--depth", "2",
                        "--threshold", "1", "--seed", str(seed), "--json")
            assert asked.exit_code == 0, asked.output
            data = json.loads(asked.output)
            assert data["answer"] == ["dana_reyes"] and data["from_kg"], (seed, data["answer"], data["paths"])
        # and the model is shown it first among the teams
        listings = [r["body"]["messages"][-1]["content"] for r in model.requests
                    if "north_league -> has team -> ..." in r["body"]["messages"][-1]["content"]]
        assert listings and all(x.split("has team -> ...\n", 1)[1].startswith("1. team_07\n") for x in listings)
    assert all(x.rstrip().endswith(". team_04") for x in listings)  # the rest in the sample order: team_07 was last


def test_a_name_many_entities_share_is_shown_to_the_model_in_one_call_each_entity_by_its_best(tog, env, tmp_path):
    """Forty entities are named Blue River, each with thirty relations: the
    question's topic is all of them (alternatives of one mention). Shown
    whole (24 relations each) that first step had taken several calls of a
    4,096-token model; at most MAX_RELATIONS_STEP relations are shown, each
    entity's best (by the offline scorer) first, so every namesake is
    shown, and the one that flows into a lake with the relation the
    question asks for."""
    from conftest import RDFS_LABEL, iri, write_nt

    from engine.agent import MAX_RELATIONS_STEP

    words = ["borders", "named_after", "mapped_by", "surveyed_in", "crossed_by", "dammed_by", "fished_by",
             "painted_by", "sung_by", "owned_by", "studied_by", "visited_by", "guarded_by", "cleaned_by",
             "measured_by", "bridged_by", "photographed_by", "described_by", "renamed_by", "sailed_by",
             "charted_by", "walked_by", "listed_in", "feeds", "drains", "shades", "waters", "floods",
             "freezes_in", "dries_in"]
    lines = []
    for i in range(40):
        lines.append(f'<{iri(f"river{i}")}> <{RDFS_LABEL}> "Blue River" .')
        lines += [f'<{iri(f"river{i}")}> <{iri(w)}> <{iri(f"thing{i}_{j}")}> .' for j, w in enumerate(words)]
    lines += [f'<{iri("river29")}> <{iri("flows_into")}> <{iri("lake")}> .',
              f'<{iri("lake")}> <{RDFS_LABEL}> "Lake Ostra" .']
    store = tmp_path / "store"
    assert tog("load", write_nt(tmp_path / "rivers.nt", lines), "--store", store).exit_code == 0
    with StandInModel(mode="exact", reader="aligned") as model:
        asked = tog("ask", "what does Blue River flow into", "--store", store, "--model", MODEL,
                    "--api-base", model.api_base, "--no-cache", "--depth", "1", "--json")
        assert asked.exit_code == 0, asked.output
    prompts = [r["body"]["messages"][-1]["content"] for r in model.requests]
    first = [p for p in prompts if " -> ?" in p and "reached by" not in p]
    assert len(first) == 1  # one call (40 x 24 relations had taken 4)
    shown = [line for line in first[0].splitlines() if line[:1].isdigit()]
    assert len(shown) <= MAX_RELATIONS_STEP
    assert sum(line.startswith("From Blue River") for line in first[0].splitlines()) == 40  # every namesake
    assert any(line.endswith("Blue River -> flows into -> ?") for line in shown)
    assert json.loads(asked.output)["answer"] == ["Lake Ostra"]
