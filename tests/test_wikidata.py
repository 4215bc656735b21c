"""Wikidata subsets from dump-shaped fixtures written by us: the JSON dump
(tests/fixtures/wikidata-entities.json) and the truthy N-Triples dump
(tests/fixtures/wikidata-truthy.nt, the same entities plus noise)."""

from __future__ import annotations

import bz2
import json

import pytest
from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
JSON_DUMP = FIXTURES / "wikidata-entities.json"
TRUTHY = FIXTURES / "wikidata-truthy.nt"
WD, WDT = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"


def triples(path) -> set[str]:
    return set(path.read_text(encoding="utf-8").splitlines())


def test_json_and_truthy_dumps_give_the_same_subset(tog, tmp_path):
    outs = []
    for dump in (JSON_DUMP, TRUTHY):
        out = tmp_path / f"{dump.stem}.nt"
        result = tog("extract", "wikidata", dump, "--seed", "Q1", "--hops", "1", "--out", out)
        assert result.exit_code == 0, result.output
        assert "1 malformed" in result.output
        outs.append(triples(out))
    assert outs[0] == outs[1]
    got = outs[0]
    assert f'<{WD}Q1> <{WDT}P27> <{WD}Q4> .' in got  # the preferred statement only
    assert not any(f"<{WD}Q3>" in t or f"<{WD}Q5>" in t for t in got)  # deprecated / outranked
    assert f'<{WD}Q1> <http://www.w3.org/2004/02/skos/core#altLabel> "Ada E."@en .' in got
    assert f'<{WDT}P19> <http://www.w3.org/2000/01/rdf-schema#label> "place of birth"@en .' in got
    assert f'<{WD}Q1> <{WDT}P569> "1815-12-10T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .' in got
    assert not any("P213" in t or "(de)" in t or "description" in t or "wikiba.se" in t for t in got)
    assert not any(f"<{WD}Q7>" in t for t in got)  # two hops away


def test_property_whitelist_hops_and_compressed_json(tog, tmp_path):
    dump = tmp_path / "latest-all.json.bz2"
    dump.write_bytes(bz2.compress(JSON_DUMP.read_bytes()))
    out = tmp_path / "subset.nt"
    result = tog("extract", "wikidata", dump, "--seed", f"<{WD}Q1>", "--hops", "2", "--property", "P19",
                 "--property", "P17", "--out", out)
    assert result.exit_code == 0, result.output
    got = triples(out)
    assert f"<{WD}Q1> <{WDT}P19> <{WD}Q2> ." in got and f"<{WD}Q2> <{WDT}P17> <{WD}Q4> ." in got
    assert not any(f"<{WDT}P27>" in t.split()[1] for t in got)


def test_the_subset_answers_with_property_labels_and_aliases(tog, tmp_path):
    questions = tmp_path / "qald.json"
    questions.write_text(json.dumps([{"question": "where was Ada Example born?",
                                      "answer": {"Q2": "Testville"}, "qid_topic_entity": {"Q1": "Ada Example"}}]))
    out, store = tmp_path / "subset.nt", tmp_path / "store"
    result = tog("extract", "wikidata", JSON_DUMP, "--seed", questions, "--hops", "1", "--out", out,
                 "--store", store)
    assert result.exit_code == 0, result.output
    asked = tog("ask", "what is the place of birth of [Ada E.]", "--store", store)  # linked by its alias
    assert asked.exit_code == 0, asked.output
    assert "answer: Testville" in asked.output and "Ada Example -> place of birth -> Testville" in asked.output
    shown = tog("runs", "show", "last", "--store", store).output
    assert "--place of birth--> Testville" in shown
    assert "place of birth" in tog("runs", "show", "last", "--format", "mermaid", "--store", store).output
    evaluated = tog("eval", questions, "--store", store, "--out", tmp_path / "r.jsonl")
    assert evaluated.exit_code == 0 and "hits@1 1.000" in evaluated.output, evaluated.output
    # the property's label names the relation, never an entity to link a question to
    assert "place of birth" in tog("relations", "--store", store).output
    unlinked = tog("entity", "place of birth", "--store", store)
    assert unlinked.exit_code == 1 and "no entity named" in unlinked.output
    plain = tog("ask", "where is the place of birth of Ada Example", "--store", store, "--json")
    assert [t["name"] for t in json.loads(plain.output)["topics"]] == ["Ada Example"]


@pytest.mark.parametrize("seed,message", [("Ada", "is not a wikidata id"), ("m.0abc", "is not a wikidata id")])
def test_bad_seeds_are_one_line(tog, tmp_path, seed, message):
    result = tog("extract", "wikidata", TRUTHY, "--seed", seed, "--out", tmp_path / "o.nt")
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output
