"""Freebase subset extraction from a dump-shaped fixture (tests/fixtures/freebase-excerpt.nt,
written by us): hops, CVTs, names, noise, malformed lines, resume after a kill."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest
from conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "freebase-excerpt.nt"
NS = "http://rdf.freebase.com/ns/"


def triples(path) -> set[tuple[str, str, str]]:
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        s, p, o = line.rstrip(" .").split(" ", 2)
        out.add((s.strip("<>").replace(NS, ""), p.strip("<>").replace(NS, ""), o.replace(NS, "")))
    return out


def test_one_hop_keeps_cvts_english_names_and_literals_and_drops_noise(tog, tmp_path):
    out = tmp_path / "subset.nt"
    result = tog("extract", "freebase", FIXTURE, "--seed", "m.film1", "--hops", "1", "--out", out)
    assert result.exit_code == 0, result.output
    assert "2 malformed" in result.output and "line 16" in result.output
    got = triples(out)
    assert ("m.film1", "film.film.directed_by", "<m.dir1>") in got
    assert ("m.film1", "film.film.initial_release_date",
            '"1954"^^<http://www.w3.org/2001/XMLSchema#gYear>') in got
    assert ("m.dir1", "film.director.film", "<m.film1>") in got  # incoming edges too
    # the CVT at the edge is looked through: its facts and the names behind it are kept
    assert {("m.cvt1", "film.performance.actor", "<m.actor1>"), ("m.actor1", "type.object.name", '"Bea Star"@en'),
            ("m.char1", "type.object.name", '"Captain Nemo"@en')} <= got
    assert ("m.dir1", "type.object.name", '"Rita Director"@en') in got
    assert not any(p.startswith(("type.object.type", "common.", "http://www.w3.org/2002/07/owl")) for _, p, _ in got)
    assert not any("Lumières" in o for _, _, o in got)  # English names only
    assert not any(s in ("m.city1", "m.film2", "m.other") or "m.city1" in o for s, _, o in got)  # 2 hops away
    assert len(got) == len(out.read_text().splitlines())  # no triple twice


def test_two_hops_reach_further_and_read_prefixed_lines(tog, tmp_path):
    out = tmp_path / "subset.nt"
    assert tog("extract", "freebase", FIXTURE, "--seed", f"<{NS}m.film1>", "--hops", "2", "--out", out).exit_code == 0
    got = triples(out)
    assert ("m.dir1", "people.person.place_of_birth", "<m.city1>") in got
    assert ("m.film2", "film.film.directed_by", "<m.dir1>") in got  # from an ns: line
    assert ("m.film2", "film.film.initial_release_date", '"2001"^^<http://www.w3.org/2001/XMLSchema#gYear>') not in got
    assert ("m.city1", "type.object.name", '"Springfield"@en') in got
    assert not any(s == "m.country1" for s, _, _ in got) and len(got) == len(out.read_text().splitlines())


def test_domain_whitelist_and_seeds_from_tog_questions(tog, tmp_path):
    questions = tmp_path / "cwq.json.gz"
    with gzip.open(questions, "wt", encoding="utf-8") as fh:
        json.dump([{"question": "who starred in harbor lights", "answer": "Bea Star",
                    "topic_entity": {"m.film1": "Harbor Lights"}}], fh)
    out = tmp_path / "subset.nt"
    result = tog("extract", "freebase", FIXTURE, "--seed", questions, "--hops", "2", "--domain", "film", "--out", out)
    assert result.exit_code == 0, result.output
    got = triples(out)
    assert ("m.film1", "film.film.directed_by", "<m.dir1>") in got
    assert not any(p.startswith("people.") for _, p, _ in got)


def test_the_subset_loads_and_answers_through_the_cvt(tog, tmp_path):
    out, store = tmp_path / "subset.nt", tmp_path / "store"
    result = tog("extract", "freebase", FIXTURE, "--seed", "m.film1", "--hops", "1", "--out", out, "--store", store)
    assert result.exit_code == 0, result.output
    asked = tog("ask", "who starred in [Harbor Lights]", "--store", store)
    assert asked.exit_code == 0 and "answer: Bea Star" in asked.output, asked.output


def test_a_killed_extraction_resumes_to_the_same_output(tog, tmp_path, monkeypatch):
    import loaders.freebase as fb

    whole = tmp_path / "whole.nt"
    assert tog("extract", "freebase", FIXTURE, "--seed", "m.film1", "--hops", "2", "--out", whole).exit_code == 0
    out = tmp_path / "killed.nt"
    real = fb._edge_pass

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fb, "_edge_pass", killed)
    result = tog("extract", "freebase", FIXTURE, "--seed", "m.film1", "--hops", "2", "--out", out)
    assert result.exit_code == 130 and not out.exists()
    assert sorted(p.name for p in (tmp_path / "killed.nt.parts").iterdir()) == \
        ["levels", "pass-1.nt", "pass-2.nt", "pass-3.tmp", "state.json"]
    monkeypatch.setattr(fb, "_edge_pass", real)
    again = tog("extract", "freebase", FIXTURE, "--seed", "m.film1", "--hops", "2", "--out", out)
    assert again.exit_code == 0 and "2 passes done before" in again.output, again.output
    assert out.read_bytes() == whole.read_bytes()
    assert not (tmp_path / "killed.nt.parts").exists()
    other = tog("extract", "freebase", FIXTURE, "--seed", "m.film1", "--hops", "1", "--out", out)
    assert other.exit_code == 0  # the finished run left no state behind


@pytest.mark.parametrize("args,message", [
    (["--seed", "Harbor Lights"], "is not a Freebase mid"),
    (["--seed", "m.film1", "--max-errors", "1"], "more than 1 malformed lines"),
])
def test_bad_seeds_and_too_many_bad_lines_are_one_line(tog, tmp_path, args, message):
    result = tog("extract", "freebase", FIXTURE, *args, "--out", tmp_path / "o.nt")
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output


def test_changed_arguments_do_not_mix_with_a_half_done_extraction(tog, tmp_path, monkeypatch):
    import loaders.freebase as fb

    out = tmp_path / "o.nt"
    monkeypatch.setattr(fb, "_edge_pass", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    tog("extract", "freebase", FIXTURE, "--seed", "m.film1", "--hops", "1", "--out", out)
    monkeypatch.undo()
    result = tog("extract", "freebase", FIXTURE, "--seed", "m.dir1", "--hops", "1", "--out", out)
    assert result.exit_code == 1 and "other arguments" in result.output
    shutil.rmtree(tmp_path / "o.nt.parts")
