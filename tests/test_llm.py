"""The LLM backbone through litellm's own code path: a stand-in model behind a
real OpenAI-compatible endpoint on 127.0.0.1 (tests/llm_server.py), called as
``--model openai/scripted --api-base http://127.0.0.1:PORT/v1``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import METAQA, REPO, env_without_traceback
from llm_server import ScriptedModel

from engine.errors import LLMAuthError, LLMReplyError, LLMRequestError, LLMUnavailableError
from engine.llm import LLMClient, LLMSettings, Usage, tracking
from engine.replies import parse_answer, parse_entities, parse_judgement, parse_next, parse_scores

SECRET = "sk-test-DO-NOT-LEAK-4711"
MODEL = "openai/scripted"


@pytest.fixture
def model(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("TOG_CACHE_DIR", str(tmp_path / "cache"))
    with ScriptedModel() as m:
        yield m


@pytest.fixture
def metaqa_sample(tmp_path, tog):
    store = tmp_path / "metaqa-store"
    assert tog("load", METAQA / "kb.txt", "--store", store).exit_code == 0
    return store


def client(server, tmp_path, **settings) -> LLMClient:
    base = dict(model=MODEL, api_base=server.api_base, backoff=0.01, timeout=5, cache_path=tmp_path / "c.sqlite")
    return LLMClient(LLMSettings(**{**base, **settings}))


def _results(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _eval(tog, store, out, model, *args):
    result = tog("eval", METAQA / "questions.txt", "--store", store, "--out", out, "--model", MODEL,
                 "--api-base", model.api_base, *args)
    assert result.exit_code == 0, result.output
    return result


# -- call budgets ----------------------------------------------------------

@pytest.mark.parametrize("method,pruner,bound", [("tog", "llm", lambda d: 3 * d + 1),
                                                 ("tog-r", "llm", lambda d: 2 * d + 1),
                                                 ("tog", "bm25", lambda d: d + 1)])
def test_llm_calls_per_question_stay_within_the_method_budget(tog, metaqa_sample, model, tmp_path, method,
                                                              pruner, bound):
    out = tmp_path / "results.jsonl"
    result = _eval(tog, metaqa_sample, out, model, "--method", method, "--pruner", pruner, "--no-cache")
    rows = _results(out)
    assert len(rows) == 21 and not any(r.get("error") for r in rows)
    calls = [r["llm_calls"] for r in rows]
    assert max(calls) <= bound(3)
    assert sum(calls) == model.calls  # every call the endpoint saw is accounted for
    if method == "tog" and pruner == "llm":
        assert sum(calls) / len(calls) <= 7
    purposes = {k for r in rows for k in r["llm_calls_by_purpose"]}
    assert "answer" in purposes and ("relations" in purposes) == (pruner == "llm")
    assert ("entities" in purposes) == (method == "tog" and pruner == "llm")
    # the judge stops the search before the last depth for many questions (the sample's 1- and 2-hop ones)
    assert sum(r["depth"] < 3 for r in rows) >= 9
    assert "LLM:" in result.output and "cost unknown" in result.output  # unknown model: no price, no crash
    summary = json.loads(out.with_name(out.name + ".summary.json").read_text())
    assert summary["llm"]["calls"] == sum(calls) and summary["llm"]["cost"] is None


def test_a_rerun_makes_no_llm_calls(tog, metaqa_sample, model, tmp_path):
    out = tmp_path / "first.jsonl"
    _eval(tog, metaqa_sample, out, model, "--cache-sampled", "--limit", "6")
    made = model.calls
    assert made > 0
    _eval(tog, metaqa_sample, out, model, "--cache-sampled", "--limit", "6")  # same file: resumes, all done
    assert model.calls == made
    second = tmp_path / "second.jsonl"  # a new evaluation: every reply from the cache
    _eval(tog, metaqa_sample, second, model, "--cache-sampled", "--limit", "6")
    assert model.calls == made
    again = _results(second)
    assert [r["prediction"] for r in again] == [r["prediction"] for r in _results(out)]
    assert all(r["llm_calls"] == 0 and r["llm_cache_hits"] > 0 for r in again)


def test_sampled_calls_are_not_cached_unless_asked(model, tmp_path):
    llm = client(model, tmp_path)
    messages = [{"role": "user", "content": "Question: q\nCandidates:\n1. a\n2. b"}]
    for _ in range(2):
        llm.complete(messages, temperature=0.4, purpose="relations")
        llm.complete(messages, temperature=0.0, purpose="relations")
    assert model.calls == 3  # the sampled call twice, the temperature-0 call once
    assert llm.total.calls == 3 and llm.total.cache_hits == 1


def test_the_api_key_never_lands_in_cache_results_or_output(tog, metaqa_sample, model, tmp_path, monkeypatch):
    out = tmp_path / "results.jsonl"
    result = _eval(tog, metaqa_sample, out, model, "--limit", "3", "--cache-sampled")
    assert model.requests[0]["headers"].get("authorization") == f"Bearer {SECRET}"  # it was in use
    assert model.requests[0]["path"] == "/v1/chat/completions"
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in files)
    for p in files:
        assert SECRET.encode() not in p.read_bytes(), p
    assert SECRET not in result.output
    model.faults.append(("status", 401))
    failed = tog("ask", "who wrote [Quiz Show]", "--store", metaqa_sample, "--model", MODEL, "--api-base",
                 model.api_base, "--no-cache")
    assert failed.exit_code == 1 and "refused the credentials" in failed.output
    assert SECRET not in failed.output and "Traceback" not in failed.output


# -- retries and errors ----------------------------------------------------

def test_rate_limits_and_5xx_are_retried_with_backoff(model, tmp_path):
    llm = client(model, tmp_path, cache=False)
    model.faults += [("status", 429, {"Retry-After": "0"}), ("status", 503), ("status", 500)]
    usage = Usage()
    with tracking(usage):
        text = llm.complete([{"role": "user", "content": "Question: who?"}], temperature=0, purpose="io")
    assert text.startswith("Answer:")
    assert model.calls == 4 and usage.calls == 1 and usage.retries == 3


def test_a_timeout_is_retried(model, tmp_path):
    llm = client(model, tmp_path, cache=False, timeout=1)
    model.faults.append(("sleep", 3))
    text = llm.complete([{"role": "user", "content": "Question: who?"}], temperature=0, purpose="io")
    assert text.startswith("Answer:") and llm.total.retries >= 1


def test_credentials_and_bad_requests_are_not_retried(model, tmp_path):
    llm = client(model, tmp_path, cache=False)
    model.faults.append(("status", 401))
    with pytest.raises(LLMAuthError) as e:
        llm.complete([{"role": "user", "content": "x"}], temperature=0, purpose="io")
    assert model.calls == 1 and e.value.model == MODEL and e.value.provider == "openai"
    model.faults.append(("status", 400))
    with pytest.raises(LLMRequestError):
        llm.complete([{"role": "user", "content": "x"}], temperature=0, purpose="io")
    assert model.calls == 2


def test_retries_run_out_into_one_clear_error(model, tmp_path, tog, metaqa_sample):
    llm = client(model, tmp_path, cache=False, retries=2)
    model.faults += [("status", 429, {"Retry-After": "0.05"})] * 3
    with pytest.raises(LLMUnavailableError) as e:
        llm.complete([{"role": "user", "content": "x"}], temperature=0, purpose="io")
    assert model.calls == 3 and e.value.retry_after == 0.05 and "failed after 3 attempts" in str(e.value)
    model.faults += [("status", 503)] * 10
    result = tog("ask", "who wrote [Quiz Show]", "--store", metaqa_sample, "--model", MODEL, "--api-base",
                 model.api_base, "--llm-retries", "1", "--no-cache")
    assert result.exit_code == 1 and "failed after 2 attempts" in result.output
    assert "Traceback" not in result.output


# -- strict parsing, repairs, fallbacks ---------------------------------------

def test_replies_may_only_pick_what_they_were_shown():
    shown = ["Quiz Show -> directed by", "Quiz Show -> release year", "Quiz Show -> has tags"]
    assert parse_scores("2: 0.7\n7: 0.9\n1 - 0.2\nquiz show -> has tags: 0.1\nfoo: 0.5\n3: 4", shown) == \
        {1: 0.7, 0: 0.2, 2: 0.1}
    assert parse_scores("I think the second one.", shown) is None
    assert parse_judgement("Sufficient: no\nConfidence: 0.8") == pytest.approx(0.2)
    assert parse_judgement("Sufficient: yes") == 1.0 and parse_judgement("maybe") is None
    assert parse_answer("Answer: A | B |\nPaths: 2, 9, 1", 2) == (["A", "B"], [1, 0])
    assert parse_answer("no idea", 2) is None
    assert parse_entities("Entities: Quiz Show | Mars", "who directed quiz show") == ["Quiz Show"]


def _relation_choices(names):
    from engine.graph import Node, Relation
    from engine.paths import Path
    from engine.pruning import Choice

    topic = Path("p0", Node("urn:tog:e:a", "Quiz Show"))
    return [Choice(topic, f"Quiz Show -> {n}", Relation(f"urn:tog:r:{n.replace(' ', '_')}", "out", n))
            for n in names]


def test_garbage_gets_one_repair_then_the_offline_scorer(model, tmp_path):
    from engine.agent import LLMPruner
    from engine.pruning import HybridPruner

    llm = client(model, tmp_path, cache=False)
    pruner = LLMPruner(client=llm)
    choices = _relation_choices(["directed by", "release year", "has tags"])
    model.replies += ["blah", "still nothing useful"]
    usage = Usage()
    with tracking(usage):
        scores = pruner.score_relations("who directed [Quiz Show]", choices)
    assert scores == HybridPruner().score_relations("who directed [Quiz Show]", choices)
    assert scores[0] == max(scores) and usage.repairs == 1 and usage.fallbacks == 1
    model.replies += ["whatever", "3: 0.9"]
    with tracking(usage):
        scores = pruner.score_relations("who directed [Quiz Show]", choices)
    assert scores == [0.0, 0.0, 0.9] and usage.repairs == 2 and usage.fallbacks == 1
    assert model.calls == 4
    model.replies += ["nothing", "nothing again"]
    strict = LLMPruner(client=client(model, tmp_path, cache=False, strict=True))
    with pytest.raises(LLMReplyError, match="strict-llm"):
        strict.score_relations("who directed [Quiz Show]", choices)


def test_a_candidate_list_too_long_for_the_window_is_split(model, tmp_path):
    from engine.agent import LLMPruner

    choices = _relation_choices([f"relation number {i} with a long descriptive name" for i in range(20)])
    small = LLMPruner(client=client(model, tmp_path, cache=False, context_window=560, max_tokens=64))
    usage = Usage()
    with tracking(usage):
        scores = small.score_relations("which relation number 12 is it", choices)
    split_calls = model.calls
    assert split_calls >= 3 and len(scores) == 20 and usage.splits == split_calls - 1
    assert all(s <= 1 for s in scores) and sum(s > 0 for s in scores) >= split_calls  # each part scored its own
    sent = [r["body"]["messages"][-1]["content"].count(" -> ?") for r in model.requests]
    assert sum(sent) == 20  # every candidate was shown once
    big = LLMPruner(client=client(model, tmp_path, cache=False, context_window=100_000))
    big.score_relations("which relation number 12 is it", choices)
    assert model.calls == split_calls + 1


def test_every_few_shot_example_parses_with_our_parser():
    from engine.agent import prompt, prompt_names
    from engine.replies import parse_answer, parse_judgement

    readers = {
        "relations": lambda ex, reply: parse_scores(reply, [line.split(". ", 1)[1] for line in ex.splitlines()
                                                           if line[:1].isdigit()]),
        "entities": lambda ex, reply: parse_scores(reply, [line.split(". ", 1)[1] for line in ex.splitlines()
                                                          if line[:1].isdigit()]),
        "judge": lambda ex, reply: parse_judgement(reply),
        "judge_chains": lambda ex, reply: parse_judgement(reply),
        "answer": lambda ex, reply: parse_answer(reply, sum(line[:1].isdigit() for line in ex.splitlines())),
        "topics": lambda ex, reply: parse_entities(reply, ex) or None,
        "actor": lambda ex, reply: parse_scores(reply, [line.split(". ", 1)[1] for line in ex.splitlines()
                                                       if line[:1].isdigit()]),
        "critic": lambda ex, reply: parse_scores(reply, [line.split(". ", 1)[1] for line in ex.splitlines()
                                                        if line[:1].isdigit()]),
        "model": lambda ex, reply: parse_next(reply),
        "io": lambda ex, reply: parse_answer(reply, 0),
        "cot": lambda ex, reply: parse_answer(reply, 0),
    }
    names = prompt_names()
    assert set(readers) <= set(names) and "repair" in names
    for name in readers:
        p = prompt(name)
        assert p.system and p.examples and "{question}" in p.task, name
        for example, reply in p.examples:
            got = readers[name](example, reply)
            assert got is not None and got != ([], []), (name, reply)


# -- methods, config, concurrency ------------------------------------------------

def test_io_and_cot_ask_the_model_alone(tog, metaqa_sample, model):
    for method in ("io", "cot"):
        result = tog("ask", "who wrote [Quiz Show]", "--store", metaqa_sample, "--model", MODEL, "--api-base",
                     model.api_base, "--method", method, "--no-cache")
        assert result.exit_code == 0, result.output
        assert "from the model's own knowledge" in result.output and "LLM: 1 calls" in result.output
    offline = tog("ask", "who wrote [Quiz Show]", "--store", metaqa_sample, "--method", "io")
    assert offline.exit_code == 2 and "--model" in offline.output


def test_topics_the_name_index_misses_are_asked_of_the_llm(tog, metaqa_sample, model, tmp_path):
    result = tog("ask", "what do you know about zzyzx", "--store", metaqa_sample, "--model", MODEL,
                 "--api-base", model.api_base, "--no-cache", "--json")
    assert result.exit_code == 1 and "neither the name index nor the LLM" in result.output
    assert [r["body"]["messages"][0]["content"] for r in model.requests][0].startswith("You find the named")
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "z", "question": "what do you know about zzyzx", "answers": ["x"]}\n')
    out = tmp_path / "out.jsonl"
    done = tog("eval", questions, "--store", metaqa_sample, "--out", out, "--model", MODEL, "--api-base",
               model.api_base, "--no-cache")
    (row,) = _results(out)
    assert row["error"] and row["llm_calls"] == 1  # the failed question's call is still counted
    assert "LLM: 1 calls" in done.output


def test_settings_come_from_a_config_file_and_the_environment(tog, metaqa_sample, model, tmp_path, monkeypatch):
    config = tmp_path / "tog.toml"
    config.write_text(f'model = "{MODEL}"\napi_base = "{model.api_base}"\ncache = false\n'
                      f'[ask]\nmethod = "tog-r"\n', encoding="utf-8")
    result = tog("--config", config, "ask", "who wrote [Quiz Show]", "--store", metaqa_sample, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["stats"]["llm_calls"] == model.calls > 0 and "entities" not in data["stats"]["llm_calls_by_purpose"]
    monkeypatch.setenv("TOG_MODEL", MODEL)
    monkeypatch.setenv("TOG_API_BASE", model.api_base)
    before = model.calls
    assert tog("ask", "who wrote [Quiz Show]", "--store", metaqa_sample, "--no-cache").exit_code == 0
    assert model.calls > before
    monkeypatch.setenv("TOG_ASK_METHOD", "io")  # any option: TOG_<COMMAND>_<OPTION>
    io = tog("ask", "who wrote [Quiz Show]", "--store", metaqa_sample, "--no-cache", "--json")
    assert json.loads(io.output)["stats"]["llm_calls_by_purpose"] == {"io": 1}
    config.write_text("modle = 1\n", encoding="utf-8")
    bad = tog("--config", config, "ask", "x", "--store", metaqa_sample)
    assert bad.exit_code == 2 and "unknown setting 'modle'" in bad.output


def test_concurrent_evaluation_gives_the_sequential_results(tog, metaqa_sample, model, tmp_path):
    one, four = tmp_path / "one.jsonl", tmp_path / "four.jsonl"
    _eval(tog, metaqa_sample, one, model, "--temperature-explore", "0", "--no-cache")
    _eval(tog, metaqa_sample, four, model, "--temperature-explore", "0", "--no-cache", "--concurrency", "4")
    # KG lookups are left out: which question pays for a shared cache (relation names) depends on timing
    a = {r["id"]: (r["prediction"], r["llm_calls"], r["paths"]) for r in _results(one)}
    b = {r["id"]: (r["prediction"], r["llm_calls"], r["paths"]) for r in _results(four)}
    assert a == b and len(a) == 21


def test_commands_without_a_model_never_import_litellm(metaqa_sample):
    probe = (
        "import sys\nfrom click.testing import CliRunner\nfrom engine.cli import cli\n"
        f"r = CliRunner().invoke(cli, ['ask', 'who wrote [Quiz Show]', '--store', {str(metaqa_sample)!r}])\n"
        "assert r.exit_code == 0, r.output\nprint('litellm' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,
                          env=env_without_traceback(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_embedding_pruner_ranks_by_similarity_through_litellm(tog, metaqa_sample, model, tmp_path):
    from engine.agent import EmbeddingPruner
    from engine.pruning import Choice

    llm = client(model, tmp_path, model="", embedding_model="openai/scripted-embed")
    pruner = EmbeddingPruner(client=llm)
    choices = [Choice(path=None, text=t) for t in
               ("Quiz Show -> release year", "Quiz Show -> directed by", "Quiz Show -> has tags")]
    scores = pruner.score_relations("who directed [Quiz Show]", choices)
    assert max(range(3), key=scores.__getitem__) == 1 and scores[1] == 1.0
    assert model.calls == 1 and model.requests[0]["path"] == "/v1/embeddings"
    assert pruner.score_relations("who directed [Quiz Show]", choices) == scores
    assert model.calls == 1  # vectors come from the cache the second time
    result = tog("ask", "who directed [Quiz Show]", "--store", metaqa_sample, "--pruner", "embedding",
                 "--embedding-model", "openai/scripted-embed", "--api-base", model.api_base, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["answer"] == ["Robert Redford"] and data["stats"]["llm_calls"] >= 1
    calls = model.calls
    local = tog("ask", "who directed [Quiz Show]", "--store", metaqa_sample, "--pruner", "embedding", "--json")
    assert local.exit_code == 0, local.output  # no --embedding-model: the local wordllama model, no server
    assert model.calls == calls and "llm_calls" not in json.loads(local.output)["stats"]


def test_an_evaluation_stops_on_a_refused_model_and_resumes_later(tog, metaqa_sample, model, tmp_path):
    out = tmp_path / "results.jsonl"
    model.faults.append(("status", 401))
    failed = tog("eval", METAQA / "questions.txt", "--store", metaqa_sample, "--out", out, "--limit", "3",
                 "--model", MODEL, "--api-base", model.api_base, "--no-cache")
    assert failed.exit_code == 1 and "refused the credentials" in failed.output and "Traceback" not in failed.output
    assert not out.exists() or out.read_text() == ""  # nothing recorded as answered
    done = _eval(tog, metaqa_sample, out, model, "--limit", "3", "--no-cache")
    rows = _results(out)
    assert len(rows) == 3 and not any(r.get("error") for r in rows) and "questions 3" in done.output


def test_the_llm_judge_sees_the_next_steps_the_next_depth_then_reuses(store, model, tmp_path, monkeypatch):
    """The LLM's judge is shown the relations one more depth could follow
    (what it would add); when the search goes on, that listing is the next
    depth's: the relations around a beam are never listed twice."""
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig

    calls = []
    plain = store.kg.relations
    monkeypatch.setattr(store.kg, "relations", lambda entities: calls.append(list(entities)) or plain(entities))
    reasoner = get_reasoner("llm", client=client(model, tmp_path))  # made without importing engine.agent first
    r = ask(store, "who directed [Quiz Game]", get_pruner("bm25"), reasoner, SearchConfig(depth=3), record=False)
    assert r.result.answer.names == ["Rita Director"] and r.result.depth == 1
    assert len(calls) == 2  # around the topic, around the kept paths for the judge
    judged = [m["body"]["messages"][-1]["content"] for m in model.requests if "Paths:" in
              m["body"]["messages"][-1]["content"] and "Sufficient" in m["body"]["messages"][0]["content"]]
    assert judged and "Next steps the walk could take:" in judged[0]
    calls.clear()
    r = ask(store, "who directed the films written by [Paul Author]", get_pruner("bm25"), reasoner,
            SearchConfig(depth=3), record=False)
    assert r.result.depth == 2 and len(calls) == 3  # topic, depth-1 beam (judge and depth 2), depth-2 beam
