"""Evaluation: answer matching, question readers, resumable runs."""

from __future__ import annotations

import bz2
import gzip
import json
import re

import pytest
from conftest import METAQA

from engine.errors import TogError, UnknownEntityError
from engine.evaluate import (
    Question,
    done_ids,
    evaluate,
    lenient_match,
    read_questions,
    set_f1,
    strict_match,
    summarise,
)

# ---------------------------------------------------------------------------
# matching


@pytest.mark.parametrize("prediction, answers, lenient, strict", [
    ("Robert Redford", ["Robert Redford"], True, True),
    ("robert  REDFORD!", ["Robert Redford"], True, True),
    ("Redford", ["Robert Redford"], True, False),          # contained in the gold answer
    ("Robert Redford Jr.", ["Robert Redford"], True, False),  # contains the gold answer
    ("Mike Newell", ["Robert Redford", "Mike Newell"], True, True),
    ("Mike Nichols", ["Mike Newell"], False, False),
    ("", ["Mike Newell"], False, False),
    ("!!!", ["Mike Newell"], False, False),
    ("Mike Newell", [], False, False),
    ("1994", ["1994"], True, True),
])
def test_lenient_and_strict_match(prediction, answers, lenient, strict):
    assert lenient_match(prediction, answers) is lenient
    assert strict_match(prediction, answers) is strict


def test_strict_match_ignores_accents():
    assert strict_match("Amélie", ["Amelie"])
    assert strict_match("AMELIE", ["Amélie"])


def test_a_strict_match_is_also_a_lenient_match():
    for prediction, gold in (("Amélie", "Amelie"), ("Francois Truffaut", "François Truffaut")):
        assert strict_match(prediction, [gold])
        assert lenient_match(prediction, [gold])


@pytest.mark.parametrize("predictions, answers, f1", [
    (["a", "b"], ["a", "b"], 1.0),
    (["a", "b"], ["b", "c"], 0.5),
    (["a"], ["a", "b", "c", "d"], 0.4),          # P=1, R=1/4
    (["a", "b", "c"], ["a"], 0.5),               # P=1/3, R=1
    (["A", "a!", "a"], ["a"], 1.0),              # normalised duplicates count once
    (["x"], ["a"], 0.0),
    ([], ["a"], 0.0),
    (["a"], [], 0.0),
])
def test_set_f1(predictions, answers, f1):
    assert set_f1(predictions, answers) == pytest.approx(f1)


# ---------------------------------------------------------------------------
# readers

METAQA_LINES = (
    "who directed [Quiz Game]\tRita Director\n"
    "what films did [Paul Author] write\tQuiz Game|Night Harbor\tauthor_to_movie\n"
    "\n"
    "what year was [Quiz Game] released\t1994\n"
)


def test_metaqa_reader(tmp_path):
    f = tmp_path / "qa_dev.txt"
    f.write_text(METAQA_LINES, encoding="utf-8")
    qs = list(read_questions(f))
    # stem, line number and a hash of the question text
    assert [q.id.rsplit("-", 1)[0] for q in qs] == ["qa_dev-1", "qa_dev-2", "qa_dev-4"]
    assert all(re.fullmatch(r"qa_dev-\d-[0-9a-f]{6}", q.id) for q in qs)
    assert qs[0].question == "who directed [Quiz Game]"
    assert qs[0].answers == ["Rita Director"]
    assert qs[1].answers == ["Quiz Game", "Night Harbor"]
    assert qs[1].type == "author_to_movie"
    assert qs[0].type is None
    assert all(q.topics == [] for q in qs)


def test_metaqa_reader_with_types_file_and_compression(tmp_path):
    f = tmp_path / "qa_dev.txt.gz"
    f.write_bytes(gzip.compress(METAQA_LINES.encode()))
    types = tmp_path / "qtype.txt.bz2"
    types.write_bytes(bz2.compress(b"movie_to_director\nwriter_to_movie\n\nmovie_to_year\n"))
    qs = list(read_questions(f, types))
    # the third column wins over the types file when present
    assert [q.type for q in qs] == ["movie_to_director", "author_to_movie", "movie_to_year"]


def test_jsonl_reader(tmp_path):
    f = tmp_path / "qs.jsonl"
    f.write_text("\n".join(json.dumps(o) for o in [
        {"id": "a", "question": "who directed [Quiz Game]", "answers": ["Rita Director"],
         "topic_entities": ["Quiz Game"], "type": "movie_to_director"},
        {"question": "what year was [Quiz Game] released", "answer": "1994"},
    ]) + "\n", encoding="utf-8")
    a, b = read_questions(f)
    assert (a.id, a.answers, a.topics, a.type) == ("a", ["Rita Director"], ["Quiz Game"], "movie_to_director")
    f.write_text(json.dumps({"question": "who directed it", "answers": ["R"], "topics": ["Quiz Game"]}) + "\n",
                 encoding="utf-8")
    (c,) = read_questions(f)
    assert c.topics == ["Quiz Game"]  # "topics" is read as topic_entities
    assert (b.id.rsplit("-", 1)[0], b.answers, b.topics, b.type) == ("qs-2", ["1994"], [], None)


def test_sample_questions_files_agree():
    jsonl = list(read_questions(METAQA / "questions.jsonl"))
    txt = list(read_questions(METAQA / "questions.txt"))
    assert len(jsonl) == len(txt) == 21
    for j, t in zip(jsonl, txt):
        assert j.question == t.question
        assert sorted(j.answers) == sorted(t.answers)
        assert j.topics and j.type


def test_reader_errors(tmp_path):
    with pytest.raises(TogError, match="no such question file"):
        list(read_questions(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "ok", "answers": []}\n{"answers": ["no question"]}\n', encoding="utf-8")
    with pytest.raises(TogError, match=r"bad.jsonl:2"):
        list(read_questions(bad))
    nocol = tmp_path / "bad.txt"
    nocol.write_text("a question without answers\n", encoding="utf-8")
    with pytest.raises(TogError, match=r"bad.txt:1"):
        list(read_questions(nocol))


# ---------------------------------------------------------------------------
# evaluate()

QUESTIONS = [
    Question("q1", "who directed [Quiz Game]", ["Rita Director"], type="movie_to_director"),
    Question("q2", "who directed [Night Harbor]", ["Mike Maker"], type="movie_to_director"),
    Question("q3", "what films did [Paul Author] write", ["Quiz Game", "Night Harbor"], type="writer_to_movie"),
    Question("q4", "what year was [Quiz Game] released", ["1994"], type="movie_to_year"),
    Question("q5", "who is [Nobody]", ["Someone"], type="movie_to_year"),
]
# what a scripted answerer says for each question (derived by hand above)
PREDICTIONS = {
    "q1": ["Rita Director"],      # strict hit
    "q2": ["Maker"],              # lenient-only hit
    "q3": ["Quiz Game"],          # hit, F1 = 2/3
    "q4": ["2001"],               # miss
}


def scores(summary: dict) -> dict:
    """A summary without its wall-clock field."""
    return {k: v for k, v in summary.items() if k != "ms_per_question"}


class Answerer:
    def __init__(self):
        self.calls: list[str] = []

    def __call__(self, q: Question) -> dict:
        self.calls.append(q.id)
        if q.id == "q5":
            raise UnknownEntityError("unknown entity 'Nobody'")
        return {"prediction": PREDICTIONS[q.id], "kg_lookups": 4, "kg_seconds": 0.002}


def test_evaluate_scores_every_question(tmp_path):
    out = tmp_path / "results" / "run.jsonl"
    answer = Answerer()
    summary = evaluate(QUESTIONS, answer, out)
    assert answer.calls == ["q1", "q2", "q3", "q4", "q5"]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q1", "q2", "q3", "q4", "q5"]
    by_id = {r["id"]: r for r in rows}
    assert (by_id["q1"]["hit_lenient"], by_id["q1"]["hit_strict"]) == (True, True)
    assert (by_id["q2"]["hit_lenient"], by_id["q2"]["hit_strict"]) == (True, False)
    assert by_id["q3"]["f1"] == pytest.approx(2 / 3, abs=1e-6)
    assert by_id["q4"]["hit_lenient"] is False
    # an error in one question is recorded, not fatal
    assert by_id["q5"]["error"] == "unknown entity 'Nobody'"
    assert by_id["q5"]["prediction"] == []
    assert by_id["q5"]["hit_lenient"] is False

    assert summary["questions"] == 5
    assert summary["hits@1"] == pytest.approx(3 / 5, abs=1e-4)
    assert summary["hits@1_strict"] == pytest.approx(2 / 5, abs=1e-4)
    assert summary["f1"] == pytest.approx((1 + 0 + 2 / 3 + 0 + 0) / 5, abs=1e-4)
    assert summary["errors"] == 1
    assert summary["kg_lookups_per_question"] == pytest.approx(16 / 5)
    # by-type breakdown
    assert set(summary["by_type"]) == {"movie_to_director", "writer_to_movie", "movie_to_year"}
    assert summary["by_type"]["movie_to_director"]["questions"] == 2
    assert summary["by_type"]["movie_to_director"]["hits@1"] == 1.0
    assert summary["by_type"]["movie_to_director"]["hits@1_strict"] == 0.5
    assert summary["by_type"]["movie_to_year"]["questions"] == 2
    assert summary["by_type"]["movie_to_year"]["hits@1"] == 0.0


def test_no_by_type_without_types(tmp_path):
    qs = [Question(q.id, q.question, q.answers) for q in QUESTIONS[:2]]
    summary = evaluate(qs, Answerer(), tmp_path / "out.jsonl")
    assert "by_type" not in summary
    assert summary["questions"] == 2


def test_evaluate_resumes(tmp_path):
    out = tmp_path / "out.jsonl"
    full = evaluate(QUESTIONS, Answerer(), out)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:2]))
    answer = Answerer()
    summary = evaluate(QUESTIONS, answer, out)
    assert answer.calls == ["q3", "q4", "q5"]
    assert scores(summary) == scores(full)
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["q1", "q2", "q3", "q4", "q5"]
    # nothing left to do: no calls, the same summary
    again = Answerer()
    assert scores(evaluate(QUESTIONS, again, out)) == scores(full)
    assert again.calls == []


def test_evaluate_resumes_after_a_torn_last_line(tmp_path):
    out = tmp_path / "out.jsonl"
    full = evaluate(QUESTIONS, Answerer(), out)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    assert done_ids(out) == {"q1", "q2"}
    answer = Answerer()
    summary = evaluate(QUESTIONS, answer, out)
    assert answer.calls == ["q3", "q4", "q5"]
    assert summary["questions"] == full["questions"] == 5


def test_summary_only_counts_the_given_questions(tmp_path):
    out = tmp_path / "out.jsonl"
    evaluate(QUESTIONS, Answerer(), out)
    summary = evaluate(QUESTIONS[:2], Answerer(), out)
    assert summary["questions"] == 2
    assert summary["hits@1"] == 1.0
    assert summarise(out)["questions"] == 5


def test_other_exceptions_are_not_swallowed(tmp_path):
    def broken(q):
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):
        evaluate(QUESTIONS[:1], broken, tmp_path / "out.jsonl")


def test_files_named_alike_never_share_ids(tmp_path):
    (tmp_path / "h1").mkdir()
    (tmp_path / "h2").mkdir()
    a = tmp_path / "h1" / "qa_dev.txt"
    b = tmp_path / "h2" / "qa_dev.txt"
    a.write_text("who directed [Quiz Game]\tRita Director\n", encoding="utf-8")
    b.write_text("who wrote [Quiz Game]\tPaul Author\n", encoding="utf-8")
    (qa,), (qb,) = list(read_questions(a)), list(read_questions(b))
    assert qa.id != qb.id
    out = tmp_path / "res.jsonl"
    evaluate([qa], lambda q: {"prediction": ["Rita Director"]}, out)
    summary = evaluate([qb], lambda q: {"prediction": ["Paul Author"]}, out)
    assert summary["questions"] == 1 and summary["hits@1"] == 1.0
    assert len(out.read_text().splitlines()) == 2


@pytest.mark.parametrize("line,answers", [
    ('{"question": "q [Quiz Game]", "answers": null}', []),
    ('{"question": "q [Quiz Game]", "answers": 1994}', ["1994"]),
    ('{"question": "q [Quiz Game]", "answer": "x"}', ["x"]),
])
def test_jsonl_answer_shapes(tmp_path, line, answers):
    f = tmp_path / "q.jsonl"
    f.write_text(line + "\n", encoding="utf-8")
    (q,) = list(read_questions(f))
    assert q.answers == answers


def test_unreadable_question_files_are_clear_errors(tmp_path):
    bad = tmp_path / "bin.txt"
    bad.write_bytes(b"\xff\xfe\x00 not text")
    with pytest.raises(TogError, match="not UTF-8"):
        list(read_questions(bad))
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"question": "q", "answers": {"a": 1}}\n', encoding="utf-8")
    with pytest.raises(TogError, match="answers"):
        list(read_questions(odd))


# -- ToG's question files (shapes written here after the originals' fields) ---

TOG_RECORDS = {
    "cwq": {"ID": "WebQTest-1_abc", "compositionality_type": "composition", "question": "Who plays in Harbor Lights?",
            "answer": "Bea Star", "topic_entity": {"m.film1": "Harbor Lights"}, "qid_topic_entity": {}},
    "webqsp": {"QuestionId": "WebQTest-7", "RawQuestion": "who stars in harbor lights",
               "Parses": [{"Answers": [{"AnswerType": "Entity", "AnswerArgument": "m.actor1",
                                        "EntityName": "Bea Star"}]}],
               "topic_entity": {"m.film1": "Harbor Lights"}},
    "webquestions": {"url": "http://www.freebase.com/view/en/x", "question": "who acted in harbor lights?",
                     "answers": ["Bea Star"], "topic_entity": {"m.film1": "Harbor Lights"},
                     "qid_topic_entity": {"Q999": "Harbor Lights"}},
    "simpleqa": {"topic_entity": {"m.film1": "Harbor Lights"}, "answer": "Bea Star",
                 "question": "who is in harbor lights", "relation": "starring"},
    "grailqa": {"qid": 2101, "question": "which actor is in harbor lights?", "level": "zero-shot",
                "answer": [{"answer_type": "Entity", "answer_argument": "m.actor1", "entity_name": "Bea Star"}],
                "topic_entity": {"m.film1": "Harbor Lights"}},
    "qald": {"answer": {"Q5": "Bea Star"}, "question": "Who starred in Harbor Lights?",
             "qid_topic_entity": {"Q999": "Harbor Lights"}},
}


@pytest.mark.parametrize("shape", sorted(TOG_RECORDS))
def test_tog_question_files_are_read_with_their_answers_and_topics(tmp_path, shape):
    path = tmp_path / f"{shape}.json"
    path.write_text(json.dumps([TOG_RECORDS[shape]]), encoding="utf-8")
    (q,) = read_questions(path)
    assert q.answers == ["Bea Star"] and "arbor" in q.question
    assert q.topics and all(t.startswith(("http://rdf.freebase.com/ns/", "http://www.wikidata.org/entity/"))
                            for t in q.topics)
    assert set(q.topic_names.values()) == {"Harbor Lights"}


def test_tog_eval_uses_mids_when_the_kg_has_them_and_names_otherwise(tmp_path, tog, loaded_store):
    path = tmp_path / "mixed.json.gz"
    import gzip

    records = [TOG_RECORDS["cwq"], TOG_RECORDS["qald"], TOG_RECORDS["grailqa"]]
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(records, fh)
    out = tmp_path / "out.jsonl"
    result = tog("eval", path, "--store", loaded_store, "--out", out)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows][0] == "WebQTest-1_abc" and not any(r.get("error") for r in rows)
    assert all(r["prediction"][:1] == ["Bea Star"] for r in rows), rows  # qald: Q999 unknown -> by name
    assert "composition" in result.output and "zero-shot" in result.output


@pytest.mark.parametrize("record,message", [
    ({"question": "q", "topic_entity": ["m.1"]}, "must map ids to names"),
    ({"answer": "a"}, "has no question"),
    ("just text", "is not an object"),
])
def test_malformed_tog_records_are_clear_errors(tmp_path, record, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    with pytest.raises(TogError, match=message):
        list(read_questions(path))
    path.write_text(json.dumps([{"question": "q", "Parses": ["odd", {"Answers": [{"EntityName": "A"}]}]}]))
    assert next(iter(read_questions(path))).answers == ["A"]


def test_an_eval_keeps_the_models_of_a_few_questions_only(tmp_path, tog, loaded_store):
    """Each question's model keeps a memo of every chain it scored (MBs on a
    graph with hubs). An eval keeps the models of its last few questions,
    not of a thousand: memory stays flat as the questions go by."""
    from engine.alignment import MODELS_KEPT, _model

    _model.cache_clear()
    path = tmp_path / "many.jsonl"
    asked = 3 * MODELS_KEPT
    path.write_text("".join(json.dumps({"question": f"what is the {i}th film like [Harbor Lights]",
                                        "answers": ["Bea Star"], "topic_entities": ["Harbor Lights"]}) + "\n"
                            for i in range(asked)), encoding="utf-8")
    result = tog("eval", path, "--store", loaded_store, "--out", tmp_path / "out.jsonl", "--no-record")
    assert result.exit_code == 0, result.output
    info = _model.cache_info()
    assert info.misses >= asked and info.currsize <= MODELS_KEPT, info


def test_two_questions_with_one_id_are_refused(tmp_path):
    """Results are kept by id: of two questions with one id (``5`` and
    ``"5"`` read alike), a resume would answer only the first."""
    f = tmp_path / "dup.jsonl"
    f.write_text(json.dumps({"id": 5, "question": "who directed [Quiz Game]", "answers": ["R"]}) + "\n"
                 + json.dumps({"id": "x", "question": "what year was [Quiz Game] released", "answers": ["1994"]}) + "\n"
                 + json.dumps({"id": "5", "question": "who wrote [Quiz Game]", "answers": ["W"]}) + "\n",
                 encoding="utf-8")
    with pytest.raises(TogError, match="questions 1 and 3 have the same id '5'"):
        list(read_questions(f))
