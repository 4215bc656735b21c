"""Loaders against a real on-disk Oxigraph store: bad lines, formats,
compression, idempotence, names and resuming an interrupted load."""

from __future__ import annotations

import bz2
import gzip
import os
import re
import select
import signal
import subprocess
import time
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import (
    EX,
    KG_TRIPLES,
    RDFS_LABEL,
    VENV_BIN,
    close_graph,
    env_without_traceback,
    fb,
    iri,
    load_into,
    no_traceback,
    open_graph,
    same_kg,
    write_nt,
)

from engine.backends.oxigraph.sink import OxigraphNativeLoader
from engine.errors import LoadError
from engine.graph import Relation, name_key
from loaders.load import load_file
from loaders.triples import entity_iri, relation_iri


def db(g):
    """The database under an embedded store's roles."""
    return g.sink.db


def content(g) -> tuple[list[str], list[str]]:
    """Everything a load writes: the KG (default graph) and the name index."""
    kg = sorted(str(q) for q in db(g).store.quads_for_pattern(None, None, None, ox.DefaultGraph()))
    names = sorted(set(db(g).index.db.execute("SELECT key, entity FROM names").fetchall()))
    return kg, names


def has(g, s: str, p: str, o: ox.NamedNode | ox.Literal) -> bool:
    return any(True for _ in db(g).store.quads_for_pattern(ox.NamedNode(s), ox.NamedNode(p), o, ox.DefaultGraph()))


# ---------------------------------------------------------------------------
# N-Triples with bad lines

GOOD_AROUND_BAD = [
    f"<{iri('a')}> <{iri('p')}> <{iri('b')}> .",
    f'<{iri("a")}> <{RDFS_LABEL}> "Alpha" .',
    "this is not a triple",  # line 3
    f"<{iri('c')}> <{iri('p')}> <{iri('d')}> .",
    f'<{iri("d")}> <{iri("q")}> "x" .',
]


def test_nt_bad_line_is_reported_and_skipped(tmp_path):
    f = write_nt(tmp_path / "bad.nt", GOOD_AROUND_BAD)
    g, (report,) = load_into(tmp_path / "store", f)
    assert report.skipped == 1
    assert len(report.bad) == 1
    line, reason = report.bad[0]
    assert line == 3
    assert reason  # a parser message, not an empty string
    assert report.triples == 4
    assert g.stats()["triples"] == 4
    assert has(g, iri("a"), iri("p"), ox.NamedNode(iri("b")))
    assert has(g, iri("c"), iri("p"), ox.NamedNode(iri("d")))
    assert has(g, iri("d"), iri("q"), ox.Literal("x"))
    assert g.kg.search_entities(["alpha"])["alpha"][0].id == iri("a")


def test_nt_bad_line_in_a_later_chunk_keeps_its_file_line_number(tmp_path):
    lines = [f"<{iri(f'e{i}')}> <{iri('p')}> <{iri(f'e{i + 1}')}> ." for i in range(200)]
    lines[150] = "not a triple at all"
    f = write_nt(tmp_path / "bad.nt", lines)
    g, (report,) = load_into(tmp_path / "store", f, chunk_bytes=1024)
    assert report.skipped == 1
    assert report.bad[0][0] == 151
    assert g.stats()["triples"] == 199
    assert has(g, iri("e151"), iri("p"), ox.NamedNode(iri("e152")))


@pytest.mark.parametrize("bad", [
    "<http://example.org/kg/b> <http://example.org/kg/p> <http://example.org/kg/c .",  # unterminated IRI
    '<http://example.org/kg/b> <http://example.org/kg/p> "unterminated .',
    "<http://example.org/kg/b> <http://example.org/kg/p> <http://example.org/kg/c>",  # no final dot
], ids=["unterminated-iri", "unterminated-literal", "missing-dot"])
def test_nt_any_malformed_line_costs_exactly_that_line(tmp_path, bad):
    good = [f"<{iri('a')}> <{iri('p')}> <{iri('b')}> .",
            f"<{iri('c')}> <{iri('p')}> <{iri('d')}> .",
            f"<{iri('d')}> <{iri('p')}> <{iri('e')}> ."]
    f = write_nt(tmp_path / "bad.nt", [good[0], bad, good[1], good[2]])
    g, (report,) = load_into(tmp_path / "store", f)
    assert (report.skipped, [b[0] for b in report.bad]) == (1, [2])
    kg, _ = content(g)
    assert len(kg) == 3
    for s, o in (("a", "b"), ("c", "d"), ("d", "e")):
        assert has(g, iri(s), iri("p"), ox.NamedNode(iri(o)))


def test_max_errors_exceeded_raises_load_error(tmp_path):
    f = write_nt(tmp_path / "bad.nt", GOOD_AROUND_BAD + ["also bad", "bad again"])
    g = open_graph(tmp_path / "store", create=True)
    with pytest.raises(LoadError) as e:
        load_file(g.need_sink(), f, max_errors=2)
    msg = str(e.value)
    assert "more than 2 bad lines" in msg
    assert "--max-errors" in msg
    assert str(f) in msg
    # within the limit the same file loads
    report = load_file(g.need_sink(), f, max_errors=3)
    assert report.skipped == 3


def test_max_errors_via_cli_is_one_clean_error(tmp_path, tog):
    f = write_nt(tmp_path / "bad.nt", GOOD_AROUND_BAD)
    result = tog("load", f, "--store", tmp_path / "store", "--max-errors", "0")
    assert result.exit_code != 0
    assert no_traceback(result)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1
    assert "max-errors" in errors[0]


# ---------------------------------------------------------------------------
# Delimited files

DELIMITED = [
    ("Quiz Game", "directed_by", "Rita Director"),
    ("Quiz Game", "written_by", "Paul Author"),
    ("Night Harbor", "written_by", "Paul Author"),
    ("Night Harbor", "release_year", "2001"),
]


def _delimited(path: Path, sep: str, rows=DELIMITED) -> Path:
    path.write_text("".join(sep.join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_pipe_delimited_file(tmp_path):
    f = _delimited(tmp_path / "kb.txt", "|")
    g, (report,) = load_into(tmp_path / "store", f)
    assert report.format == "delimited"
    entities = {x for h, _, t in DELIMITED for x in (h, t)}
    assert report.triples == len(DELIMITED) + len(entities)
    # one relation triple per line plus one label per distinct node
    assert g.stats()["triples"] == len(DELIMITED) + len(entities)
    assert g.stats()["names"] == len(entities)
    quiz = entity_iri("Quiz Game")
    assert has(g, quiz, relation_iri("directed_by"), ox.NamedNode(entity_iri("Rita Director")))
    assert g.kg.labels([quiz]) == {quiz: "Quiz Game"}
    rels = g.kg.relations([entity_iri("Paul Author")])[entity_iri("Paul Author")]
    assert rels == [Relation(relation_iri("written_by"), "in")]
    assert [n.id for n in g.kg.search_entities(["night harbor"])["night harbor"]] == [entity_iri("Night Harbor")]


def test_tsv_gives_the_same_store_as_pipes(tmp_path):
    g1, _ = load_into(tmp_path / "s1", _delimited(tmp_path / "kb.txt", "|"))
    g2, (report,) = load_into(tmp_path / "s2", _delimited(tmp_path / "kb.tsv", "\t"))
    assert report.format == "tsv"
    assert content(g1) == content(g2)
    # a .txt file with tabs is recognised as tab-separated too
    g3, _ = load_into(tmp_path / "s3", _delimited(tmp_path / "tabs.txt", "\t"))
    assert content(g3) == content(g1)


def test_delimited_bad_line_is_counted(tmp_path):
    f = tmp_path / "kb.txt"
    f.write_text("A|rel|B\nonly|two\nC|rel|D\n", encoding="utf-8")
    g, (report,) = load_into(tmp_path / "store", f)
    assert report.skipped == 1
    assert report.bad[0][0] == 2
    assert "3 fields" in report.bad[0][1]
    assert report.triples == 2 + 4  # two lines, four names
    assert has(g, entity_iri("C"), relation_iri("rel"), ox.NamedNode(entity_iri("D")))


def test_a_delimited_chunk_skips_blank_lines_and_counts_each_bad_one():
    """The converter's rules line by line: blank lines and comments are
    skipped, each bad line is counted with its number, and a field whose IRI
    would pass the store's limit is bad at one character past it, not at the
    limit."""
    from engine.graph import ENTITY_NS
    from loaders.triples import Converter

    limit = 200
    fits = "x" * (limit - len(ENTITY_NS))  # its IRI is exactly the limit
    lines = ["A|r|B", "", "   ", "| |", " |\t| ", "# note", "A|r", "A||B", "A|r|B\x00", f"A|r|{fits}",
             f"A|r|{fits}y", "é|r|ü ", "  C | r |D", "A|r|B|C", f"A|r|{'😀' * 15}", f"A|r|{'😀' * 16}"]
    data, names, triples, bad = Converter("delimited", "|", limit)([f"{x}\n".encode() for x in lines], 10)
    assert bad == [(13, "empty field"), (14, "empty field"),
                   (16, "expected 3 fields separated by '|', found 2"), (17, "empty field"),
                   (18, "a NUL byte in the line"),
                   (20, f"a field's IRI is {limit + 1:,} bytes long; this store keeps at most {limit:,}"),
                   (23, "expected 3 fields separated by '|', found 4"),
                   (25, f"a field's IRI is {limit + 2:,} bytes long; this store keeps at most {limit:,}")]  # (12 a 😀)
    got = {(q.subject.value, q.predicate.value, q.object.value) for q in ox.parse(data, ox.RdfFormat.N_TRIPLES)}
    edges = {(s, o) for s, p, o in got if p == relation_iri("r")}
    assert edges == {(entity_iri(h), entity_iri(t))
                     for h, t in (("A", "B"), ("A", fits), ("é", "ü"), ("C", "D"), ("A", "😀" * 15))}
    assert triples == len(got) == 5 + 8 and len(names.shown) == 8  # five edges; eight nodes, each named once
    # a line of only tabs is blank in a TSV file (its delimiters are white space)
    data, names, triples, bad = Converter("tsv", "\t", limit)([b"A\tr\tB\n", b"\t\t\n", b" \t \t\n", b"\t\n"], 1)
    assert bad == [] and triples == 3


# ---------------------------------------------------------------------------
# Compression

@pytest.mark.parametrize("kind", ["nt", "delimited"])
def test_gzip_and_bz2_match_plain(tmp_path, kind, kg_file):
    plain = kg_file if kind == "nt" else _delimited(tmp_path / "kb.txt", "|")
    data = plain.read_bytes()
    suffix = plain.suffix
    gz = tmp_path / f"packed{suffix}.gz"
    gz.write_bytes(gzip.compress(data))
    bz = tmp_path / f"packed{suffix}.bz2"
    bz.write_bytes(bz2.compress(data))
    g0, (r0,) = load_into(tmp_path / "plain", plain)
    expected = content(g0)
    assert expected[0]  # something was loaded
    for packed in (gz, bz):
        g, (r,) = load_into(tmp_path / packed.name.replace(".", "_"), packed)
        assert content(g) == expected
        assert (r.triples, r.skipped, r.names) == (r0.triples, r0.skipped, r0.names)


# ---------------------------------------------------------------------------
# Other RDF formats

def test_turtle_bad_statement_recovers(tmp_path):
    f = tmp_path / "kg.ttl"
    f.write_text(
        f"@prefix ex: <{EX}> .\n"
        f"@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        "ex:a ex:p ex:b .\n"
        "ex:b nope:p ex:c .\n"  # line 4: undefined prefix
        "ex:c ex:p ex:d .\n"
        'ex:d rdfs:label "Delta" .\n',
        encoding="utf-8")
    g, (report,) = load_into(tmp_path / "store", f)
    assert report.format == "turtle"
    assert report.skipped == 1
    assert report.bad[0][0] == 4
    assert report.triples == 3
    assert has(g, iri("a"), iri("p"), ox.NamedNode(iri("b")))
    assert has(g, iri("c"), iri("p"), ox.NamedNode(iri("d")))
    assert not has(g, iri("b"), iri("p"), ox.NamedNode(iri("c")))
    assert [n.id for n in g.kg.search_entities(["delta"])["delta"]] == [iri("d")]


def test_a_turtle_load_stopped_past_its_bad_statements_limit_resumes_after_its_checkpoint(tmp_path, monkeypatch):
    """Past --max-errors a Turtle load stops at a checkpoint; a re-run with a
    higher limit goes on from there, writing each statement once, and checks
    in once a batch (not once a statement, as when its count of bad ones
    was already past the limit)."""
    lines = [f"<{EX}s{i}> <{EX}p> <{EX}o{i}> .\n" if i % 7 != 3 else f"<{EX}s{i}> nope:p <{EX}o{i}> .\n"
             for i in range(40)]
    f = tmp_path / "kg.ttl"
    f.write_text("".join(lines), encoding="utf-8")
    g = open_graph(tmp_path / "store", create=True)
    sink = g.need_sink()
    with pytest.raises(LoadError, match="more than 2 bad"):
        load_file(sink, f, max_errors=2)
    (stopped,) = sink.loads()
    assert stopped.skipped == 3 and not stopped.complete and stopped.lines < 40
    commits: list = []
    commit = type(sink).commit
    monkeypatch.setattr(type(sink), "commit", lambda self, *a: commits.append(a) or commit(self, *a))
    with pytest.raises(LoadError, match="more than 2 bad"):  # the same limit: on to the next bad statement
        load_file(sink, f, max_errors=2)
    assert len(commits) == 1
    (again,) = sink.loads()
    commits.clear()
    report = load_file(sink, f, max_errors=10)
    assert report.resumed_from == again.lines > stopped.lines and (report.triples, report.skipped) == (34, 6)
    assert len(commits) == 2  # its one batch, then complete
    assert sum(1 for _ in db(g).store.quads_for_pattern(None, ox.NamedNode(f"{EX}p"), None)) == 34


def test_rdf_xml_through_pyoxigraph(tmp_path):
    f = tmp_path / "kg.rdf"
    f.write_text(f"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#" xmlns:ex="{EX}">
  <rdf:Description rdf:about="{iri('a')}">
    <rdfs:label xml:lang="en">Alpha Node</rdfs:label>
    <ex:p rdf:resource="{iri('b')}"/>
    <ex:year rdf:datatype="http://www.w3.org/2001/XMLSchema#gYear">1999</ex:year>
  </rdf:Description>
</rdf:RDF>
""", encoding="utf-8")
    g, (report,) = load_into(tmp_path / "store", f)
    assert report.format == "xml"
    assert report.triples == 3
    assert g.stats()["triples"] == 3
    assert has(g, iri("a"), iri("p"), ox.NamedNode(iri("b")))
    assert [n.id for n in g.kg.search_entities(["alpha node"])["alpha node"]] == [iri("a")]


def test_trix_through_rdflib(tmp_path):
    f = tmp_path / "kg.trix"
    f.write_text(f"""<?xml version="1.0" encoding="utf-8"?>
<TriX xmlns="http://www.w3.org/2004/03/trix/trix-1/">
  <graph>
    <uri>{EX}graph1</uri>
    <triple><uri>{iri('a')}</uri><uri>{iri('p')}</uri><uri>{iri('b')}</uri></triple>
    <triple><uri>{iri('b')}</uri><uri>{RDFS_LABEL}</uri><plainLiteral xml:lang="en">Beta</plainLiteral></triple>
    <triple><uri>{iri('b')}</uri><uri>{RDFS_LABEL}</uri><plainLiteral xml:lang="de">Betta</plainLiteral></triple>
  </graph>
</TriX>
""", encoding="utf-8")
    g, (report,) = load_into(tmp_path / "store", f)
    assert report.format == "trix"
    assert report.triples == 3
    assert report.skipped == 0
    # named graphs of the source end up in the KG's default graph
    assert g.stats()["triples"] == 3
    assert has(g, iri("a"), iri("p"), ox.NamedNode(iri("b")))
    assert g.kg.labels([iri("b")]) == {iri("b"): "Beta"}
    assert list(g.kg.search_entities(["beta", "betta"])) == ["beta"]


def test_unparseable_rdflib_file_is_a_load_error(tmp_path):
    f = tmp_path / "broken.trix"
    f.write_text("<TriX><graph><triple>", encoding="utf-8")
    g = open_graph(tmp_path / "store", create=True)
    with pytest.raises(LoadError, match="trix"):
        load_file(g.need_sink(), f)


def test_unknown_format_and_missing_file(tmp_path):
    g = open_graph(tmp_path / "store", create=True)
    odd = tmp_path / "data.weird"
    odd.write_text("x\n")
    with pytest.raises(LoadError, match="--format"):
        load_file(g.need_sink(), odd)
    with pytest.raises(LoadError, match="unknown format"):
        load_file(g.need_sink(), odd, fmt="nope")
    with pytest.raises(LoadError, match="no such file"):
        load_file(g.need_sink(), tmp_path / "missing.nt")


# ---------------------------------------------------------------------------
# Idempotence

@pytest.mark.parametrize("kind", ["nt", "delimited"])
def test_loading_twice_adds_nothing(tmp_path, kind, kg_file):
    f = kg_file if kind == "nt" else _delimited(tmp_path / "kb.txt", "|")
    g, (first,) = load_into(tmp_path / "store", f)
    stats = g.stats()
    before = content(g)
    again = load_file(g.need_sink(), f)
    assert again.already_complete
    assert again.triples == first.triples
    forced = load_file(g.need_sink(), f, force=True)
    assert not forced.already_complete
    assert forced.triples == first.triples
    assert same_kg(g.stats()) == same_kg(stats)
    assert content(g) == before
    # and after reopening the store from disk
    close_graph(g)
    g2 = open_graph(tmp_path / "store")
    assert load_file(g2.need_sink(), f).already_complete
    assert same_kg(g2.stats()) == same_kg(stats)


def test_fixture_kg_counts(store):
    stats = store.stats()
    assert stats["triples"] == KG_TRIPLES
    assert stats["runs"] == 0


# ---------------------------------------------------------------------------
# Names

def test_names_from_rdfs_label_and_freebase_name(kg):
    found = kg.search_entities([name_key("Quiz Game"), name_key("Harbor Lights"), name_key("Bea Star")])
    assert [n.id for n in found["quiz game"]] == [iri("quiz")]
    assert [n.id for n in found["harbor lights"]] == [fb("m.film1")]
    assert [n.id for n in found["bea star"]] == [fb("m.actor1")]


def test_english_name_preferred(kg):
    names = kg.labels([iri("quiz"), fb("m.film1"), fb("m.onlyfr"), iri("paul")])
    # both have a French name stored before the English one
    assert names[iri("quiz")] == "Quiz Game"
    assert names[fb("m.film1")] == "Harbor Lights"
    # an entity with only a French name is still labelled with it
    assert names[fb("m.onlyfr")] == "Château Rouge"
    assert names[iri("paul")] == "Paul Author"


def test_non_english_names_not_indexed_by_default(kg):
    keys = [name_key("Château Rouge"), name_key("Jeu de Quiz"), name_key("Lumières du port")]
    assert kg.search_entities(keys) == {}


def test_name_langs_option_indexes_other_languages(tmp_path, kg_file):
    g, _ = load_into(tmp_path / "store", kg_file, name_langs=("fr",))
    found = g.kg.search_entities([name_key("Château Rouge"), name_key("Quiz Game")])
    assert [n.id for n in found["chateau rouge"]] == [fb("m.onlyfr")]
    # English was not asked for this time
    assert "quiz game" not in found


def test_custom_name_predicate(tmp_path):
    foaf = "http://xmlns.com/foaf/0.1/name"
    f = write_nt(tmp_path / "k.nt", [
        f'<{iri("z")}> <{foaf}> "Zora Zed" .',
        f"<{iri('z')}> <{iri('p')}> <{iri('y')}> .",
    ])
    g0, _ = load_into(tmp_path / "default", f)
    assert g0.kg.search_entities(["zora zed"]) == {}
    g, _ = load_into(tmp_path / "store", f, name_predicates=(foaf,))
    assert [n.id for n in g.kg.search_entities(["zora zed"])["zora zed"]] == [iri("z")]
    assert g.kg.labels([iri("z")]) == {iri("z"): "Zora Zed"}


# ---------------------------------------------------------------------------
# Resuming an interrupted load

def _generated(path: Path, n: int) -> Path:
    lines = []
    for i in range(n):
        lines.append(f"<{EX}gen/e{i}> <{EX}gen/next> <{EX}gen/e{i + 1}> .")
        if i % 4 == 0:
            lines.append(f'<{EX}gen/e{i}> <{RDFS_LABEL}> "Generated {i}" .')
    return write_nt(path, lines)


_PROGRESS = re.compile(rb"([1-9][\d,]*) triples")


def _kill_mid_load(f: Path, store: Path, chunks_before_kill: int = 3) -> bool:
    """Run `tog load` in a subprocess and SIGKILL it once its progress bar
    shows that a few chunks (each checkpointed) are written.  True when the
    kill landed before the load finished."""
    proc = subprocess.Popen(
        [str(VENV_BIN / "tog"), "load", str(f), "--store", str(store), "--chunk-bytes", "2048", "--segment-lines", "20",
         "--progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env_without_traceback())
    seen = b""
    updates = 0
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if ready:
                data = os.read(proc.stderr.fileno(), 65536)
                if not data:
                    break
                seen += data
                updates = len(_PROGRESS.findall(seen))
                if updates >= chunks_before_kill:
                    proc.send_signal(signal.SIGKILL)
                    break
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None and updates < chunks_before_kill:
            proc.kill()
        proc.wait()
        proc.stderr.close()
    return proc.returncode == -signal.SIGKILL and updates >= chunks_before_kill


def test_a_killed_turtle_load_resumes_at_its_checkpoint(tmp_path, tog):
    """A Turtle load killed (SIGKILL) after a few checkpoints resumes at the
    last: the same triples and names as a load never stopped, the nodes the
    file leaves unlabelled under the same names (Turtle had started over)."""
    for attempt, size in enumerate((3000, 8000, 20000)):
        f = tmp_path / f"gen{attempt}.ttl"
        f.write_text(f"@prefix ex: <{EX}gen/> .\n" + "".join(
            f'ex:e{i} ex:next ex:e{i + 1} ; ex:at [ ex:rank {i} ; ex:near ex:e{i % 7} ] .\n'
            + (f'ex:e{i} <{RDFS_LABEL}> "Generated {i}" .\n' if i % 4 == 0 else "") for i in range(size)),
            encoding="utf-8")
        store = tmp_path / f"killed{attempt}"
        if _kill_mid_load(f, store):
            break
    else:
        pytest.fail("every load finished before it could be killed")
    clean, (clean_report,) = load_into(tmp_path / "clean", f)
    expected = content(clean)
    close_graph(clean)
    g = open_graph(store)
    assert 0 < g.stats()["triples"] < clean_report.triples
    close_graph(g)

    result = tog("load", f, "--store", store)
    assert result.exit_code == 0, result.output
    m = re.search(r"resumed at statement ([\d,]+)", result.output)
    assert m and 0 < int(m.group(1).replace(",", "")) < clean_report.triples, result.output
    triples = int(re.search(r"([\d,]+) triples read", result.output).group(1).replace(",", ""))
    assert triples == clean_report.triples
    g = open_graph(store)
    assert content(g) == expected
    close_graph(g)


def test_killed_load_resumes(tmp_path, tog):
    for attempt, size in enumerate((2500, 6000, 15000)):
        f = _generated(tmp_path / f"gen{attempt}.nt", size)
        store = tmp_path / f"killed{attempt}"
        if _kill_mid_load(f, store):
            break
    else:
        pytest.fail("every load finished before it could be killed")
    total_lines = len(f.read_text().splitlines())
    clean, (clean_report,) = load_into(tmp_path / "clean", f)
    expected = content(clean)
    close_graph(clean)

    g = open_graph(store)
    partial = g.stats()["triples"]
    assert 0 < partial < clean_report.triples
    close_graph(g)

    result = tog("load", f, "--store", store)
    assert result.exit_code == 0, result.output
    m = re.search(r"resumed at line ([\d,]+)", result.output)
    assert m, result.output
    resumed_from = int(m.group(1).replace(",", ""))
    assert 0 < resumed_from < total_lines
    # the summary counts the whole file, the part before the kill included
    names = int(re.search(r"([\d,]+) names indexed", result.output).group(1).replace(",", ""))
    triples = int(re.search(r"([\d,]+) triples read", result.output).group(1).replace(",", ""))
    assert (triples, names) == (clean_report.triples, clean_report.names)

    g = open_graph(store)
    assert content(g) == expected
    stats = g.stats()
    assert {k: stats[k] for k in ("triples", "names", "runs")} == {"triples": clean_report.triples,
                                                                   "names": clean_report.names, "runs": 0}
    assert stats["hubs summarised"] == stats["crowded pairs sampled"] == 0  # a load leaves none behind
    # the checkpoint says complete now: a third run does nothing
    report = load_file(g.need_sink(), f)
    assert report.already_complete
    assert report.lines == total_lines


def test_report_does_not_count_whitespace_lines_as_triples(tmp_path):
    f = tmp_path / "ws.nt"
    f.write_text(f"<{iri('a')}> <{iri('p')}> <{iri('b')}> .\n   \n\t\n"
                 f"<{iri('a')}> <{iri('p')}> <{iri('c')}> .\n", encoding="utf-8")
    g, (report,) = load_into(tmp_path / "store", f)
    assert g.stats()["triples"] == 2
    assert report.skipped == 0
    assert report.triples == 2


# ---------------------------------------------------------------------------
# Fast path (one bulk-load call per segment) and careful path side by side

@pytest.mark.parametrize("segment_lines,chunk_bytes", [(1, 1024), (7, 1024), (50, 4096), (10**6, 1 << 20)])
def test_segments_with_bad_lines_match_a_clean_load(tmp_path, segment_lines, chunk_bytes):
    lines = []
    for i in range(120):
        lines.append(f"<{EX}seg/e{i}> <{EX}seg/next> <{EX}seg/e{i + 1}> .")
        if i % 5 == 0:
            lines.append(f'<{EX}seg/e{i}> <{RDFS_LABEL}> "Segment {i}" .')
    clean = write_nt(tmp_path / "clean.nt", lines)
    dirty_lines = list(lines)
    bad_at = [10, 60, 61, 130]  # 0-based positions where bad lines are inserted
    for pos in bad_at:
        dirty_lines.insert(pos, "<broken")
    dirty = write_nt(tmp_path / "dirty.nt", dirty_lines)
    ref, (ref_report,) = load_into(tmp_path / "ref", clean)
    expected = content(ref)
    g, (report,) = load_into(tmp_path / "seg", dirty, segment_lines=segment_lines, chunk_bytes=chunk_bytes)
    assert content(g) == expected
    assert report.triples == ref_report.triples == len(lines)
    assert report.skipped == len(bad_at)
    assert [line for line, _ in report.bad] == [p + 1 for p in bad_at]
    assert report.lines == len(dirty_lines)


def test_tab_separated_ntriples_index_names(tmp_path):
    f = tmp_path / "tabs.nt"
    f.write_text(f'<{fb("m.01")}>\t<{fb("type.object.name")}>\t"Paul Attanasio"@en\t.\n'
                 f'<{fb("m.02")}>\t<{fb("film.film.written_by")}>\t<{fb("m.01")}>\t.\n', encoding="utf-8")
    g, (report,) = load_into(tmp_path / "store", f)
    assert report.names == 1
    assert [n.id for n in g.kg.search_entities(["paul attanasio"])["paul attanasio"]] == [fb("m.01")]


@pytest.mark.parametrize("segment_lines,chunk_bytes", [(1, 1024), (2, 1024), (3, 1024), (10**6, 1024)])
def test_segment_boundaries_lose_no_line(tmp_path, segment_lines, chunk_bytes):
    # long lines (> a block) and no newline at the end: every segment boundary
    # falls inside a line somewhere
    lines = [f"<{EX}long/s{i}> <{EX}long/p> \"{'x' * (300 + 97 * i)}\" ." for i in range(12)]
    lines.append(f"<{EX}long/keep> <{EX}long/p> <{EX}long/o> . #<{EX}long/bogus> <{EX}long/p> <{EX}long/o> .")
    f = tmp_path / "long.nt"
    f.write_bytes(("\n".join(lines)).encode())  # no final newline
    ref, (ref_report,) = load_into(tmp_path / "ref", f, segment_lines=10**6, chunk_bytes=1 << 20)
    g, (report,) = load_into(tmp_path / "seg", f, segment_lines=segment_lines, chunk_bytes=chunk_bytes)
    assert content(g) == content(ref)
    assert report.triples == ref_report.triples == len(lines)
    assert report.skipped == 0
    assert has(g, f"{EX}long/keep", f"{EX}long/p", ox.NamedNode(f"{EX}long/o"))
    assert not has(g, f"{EX}long/bogus", f"{EX}long/p", ox.NamedNode(f"{EX}long/o"))


@pytest.mark.parametrize("suffix,text", [
    (".nt", "<urn:a> <urn:p> _:x .\n_:x <urn:q> <urn:b> .\n"),
    (".nt", "<urn:a> <urn:p> _:x .\n_:x <urn:q> <urn:b> .\nnot a triple\n"),
    (".ttl", "<urn:a> <urn:p> _:x .\n_:x <urn:q> <urn:b> .\n"),
    (".nq", "<urn:a> <urn:p> _:x <urn:g> .\n_:x <urn:q> <urn:b> .\n"),
])
def test_blank_nodes_are_stable_so_reloading_adds_nothing(tmp_path, suffix, text):
    f = tmp_path / f"bn{suffix}"
    f.write_text(text, encoding="utf-8")
    g, _ = load_into(tmp_path / "store", f)
    once = content(g)
    assert len(once[0]) == 2
    load_file(g.need_sink(), f, force=True)
    assert content(g) == once
    # the two statements meet in one node
    (node,) = {q.object for q in db(g).store.quads_for_pattern(ox.NamedNode("urn:a"), None, None, ox.DefaultGraph())}
    assert any(True for _ in db(g).store.quads_for_pattern(node, ox.NamedNode("urn:q"), None, ox.DefaultGraph()))


ANONYMOUS = [  # nodes without a label, which the parser names itself (each with the triples it makes)
    (".ttl", "<urn:a> <urn:p> [ <urn:q> <urn:b> ; <urn:r> ( <urn:c> <urn:d> ) ] .\n<urn:e> <urn:p> [] .\n", 8),
    (".trig", "<urn:g> { <urn:a> <urn:p> [ <urn:q> <urn:b> ] . }\n", 2),
    (".rdf", '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:x="urn:x:">'
             '<rdf:Description rdf:about="urn:a"><x:p><rdf:Description><x:q rdf:resource="urn:b"/>'
             '</rdf:Description></x:p></rdf:Description></rdf:RDF>', 2),
    (".jsonld", '{"@id": "urn:a", "urn:p": {"urn:q": {"@id": "urn:b"}, "urn:r": {"urn:q": {"@id": "urn:c"}}}}', 4),
]


@pytest.mark.parametrize("suffix,text,triples", ANONYMOUS)
def test_nodes_without_a_label_are_the_same_nodes_when_a_file_is_loaded_again(tmp_path, suffix, text, triples):
    """A re-run of a stopped load, or ``--force``, parses the file again: the
    parser's own names for unlabelled nodes differ at every parse, and they
    were written again beside the first ones. They are numbered in the
    order the parse meets them, the same in another store and process."""
    f = tmp_path / f"anon{suffix}"
    f.write_text(text, encoding="utf-8")
    g, (report,) = load_into(tmp_path / "store", f)
    once = content(g)
    assert report.triples == len(once[0]) == triples
    load_file(g.need_sink(), f, force=True)
    assert content(g) == once
    other, _ = load_into(tmp_path / "other", f)
    assert content(other) == once
    # a node met twice is one node: what hangs from (urn:a, urn:p) goes on to urn:b
    (node,) = {q.object for q in db(g).store.quads_for_pattern(ox.NamedNode("urn:a"), None, None, ox.DefaultGraph())
               if isinstance(q.object, ox.NamedNode) and q.object.value.startswith("urn:tog:a:")}
    assert has(g, node.value, "urn:q" if suffix != ".rdf" else "urn:x:q", ox.NamedNode("urn:b"))


def test_a_label_that_looks_made_up_is_one_node_wherever_it_comes_back(tmp_path):
    """A file another tool wrote with ids like the parser's own (Oxigraph
    writes blank nodes so): far apart, the same label is the same node."""
    label = "c8b572a479557f516bad368aaae45cce"
    lines = [f"<urn:a> <urn:p> _:{label} ."] + [f"<urn:s{i}> <urn:p> [ <urn:q> <urn:o{i}> ] ." for i in range(300)]
    lines.append(f"_:{label} <urn:q> <urn:b> .")
    f = tmp_path / "far.ttl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    g, (report,) = load_into(tmp_path / "store", f)
    (node,) = {q.object for q in db(g).store.quads_for_pattern(ox.NamedNode("urn:a"), None, None, ox.DefaultGraph())}
    assert has(g, node.value, "urn:q", ox.NamedNode("urn:b"))
    assert report.triples == 2 + 2 * 300


@pytest.mark.parametrize("suffix,text", [
    (".nt", f'<urn:a> <urn:p> <urn:b> .\r\n<urn:b> <{RDFS_LABEL}> "Bee" .\r\n'),
    (".nt.gz", f'<urn:a> <urn:p> <urn:b> .\n<urn:b> <{RDFS_LABEL}> "Bee" .\n'),
    (".nq", f'<urn:a> <urn:p> <urn:b> <urn:g> .\n<urn:b> <{RDFS_LABEL}> "Bee" .\n'),
    (".ttl", f'<urn:a> <urn:p> <urn:b> .\n<urn:b> <{RDFS_LABEL}> "Bee" .\n'),
])
def test_a_byte_order_mark_is_not_read_as_the_first_statement(tmp_path, suffix, text):
    """Editors on Windows start a UTF-8 file with a byte-order mark: the
    first statement was a bad line (N-Triples, N-Quads) or the whole file
    refused (Turtle)."""
    import gzip

    data = "\ufeff".encode() + text.encode()
    f = tmp_path / f"bom{suffix}"
    f.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    g, (report,) = load_into(tmp_path / "store", f)
    assert (report.triples, report.skipped) == (2, 0)
    assert has(g, "urn:a", "urn:p", ox.NamedNode("urn:b"))
    assert g.kg.search_entities(["bee"])["bee"][0].id == "urn:b"


@pytest.mark.parametrize(("name", "first"), [("h.csv", "Subject,Predicate,Object"), ("h.tsv", "head\trelation\ttail"),
                                             ("h.txt", ":START_ID|:TYPE|:END_ID"), ("h.csv", "s,p,o"),
                                             ("h.csv", ":START_ID(Entity),:TYPE,:END_ID(Entity)"),
                                             ("h.csv", ":START_ID,:END_ID,:TYPE"), ("h.csv", "src,rel,dst"),
                                             ("h.tsv", "# exported\n\nsource_id\trelation\ttarget_id")])
def test_a_header_row_is_skipped_not_loaded_as_a_fact(tmp_path, name, first, tog):
    """A delimited file's first line of column names was loaded as a fact
    (an entity "subject" with a relation "predicate"); it is now skipped and
    said so (not a bad line: --max-errors 0 loads the file), after comment
    and blank lines too, and a first line of data stays a fact."""
    sep = "," if name.endswith(".csv") else "\t" if name.endswith(".tsv") else "|"
    f = tmp_path / name
    f.write_text(f"{first}\nAlice{sep}knows{sep}Bob\n", encoding="utf-8")
    columns = ", ".join(first.splitlines()[-1].split(sep))
    g, (report,) = load_into(tmp_path / "store", f, max_errors=0)
    assert (report.triples, report.skipped, report.header) == (1 + 2, 0, columns)
    assert g.kg.search_entities(["subject", "head", "start id", "s", "src", "source id"]) == {}
    said = tog("load", f, "--store", tmp_path / "store2", "--no-progress")
    line = len(first.splitlines())
    assert said.exit_code == 0 and f"line {line}: a header ({columns}), not a fact" in said.output, said.output
    for line in ("Source|cites|Target", "S|knows|O", "Start|edge|End", "Subject|type|Thing"):  # data that looks alike
        data = tmp_path / f"data{f.suffix}"
        data.write_text(line.replace("|", sep) + "\n", encoding="utf-8")
        g2, (r2,) = load_into(tmp_path / f"store-{line}", data)
        assert (r2.triples, r2.skipped, r2.header) == (1 + 2, 0, None), line


def test_delimiter_is_guessed_once_per_file(tmp_path):
    f = tmp_path / "tabs.txt"
    f.write_text("# my kb\n\nAlice\tknows\tBob\nBob\tknows\tCarol\n", encoding="utf-8")
    g, (report,) = load_into(tmp_path / "store", f, chunk_bytes=1024)
    assert (report.triples, report.skipped) == (2 + 3, 0)  # two lines, three names
    c = tmp_path / "semi.csv"
    c.write_text('a;r;"b;c"\n', encoding="utf-8")
    g2, (r2,) = load_into(tmp_path / "store2", c, delimiter=";")
    assert (r2.triples, r2.skipped) == (1 + 2, 0)
    assert has(g2, entity_iri("a"), relation_iri("r"), ox.NamedNode(entity_iri("b;c")))


def test_names_found_before_and_after_the_stash_limit_are_all_indexed(tmp_path, monkeypatch):
    import loaders.load as load_module

    monkeypatch.setattr(load_module, "STASH_BYTES", 200)  # index inline every few lines too
    lines = []
    for i in range(300):
        lines.append(f'<{EX}n/e{i}> <{RDFS_LABEL}> "Name {i}"@en .')
        lines.append(f"<{EX}n/e{i}> <{EX}n/p> <{EX}n/e{i + 1}> .")
    f = write_nt(tmp_path / "names.nt", lines)
    g, (report,) = load_into(tmp_path / "store", f, chunk_bytes=1024, segment_lines=250)
    assert report.names == 300
    found = g.kg.search_entities([f"name {i}" for i in range(300)])
    assert sorted(found) == sorted(f"name {i}" for i in range(300))
    assert found["name 7"][0].id == f"{EX}n/e7"


def test_a_plain_ntriples_file_loads_by_path_with_the_same_result_as_streaming(tmp_path, kg_file, monkeypatch):
    """The native by-path load (whole file, names found in a thread) must
    give what the streaming path gives: triples, names, linking."""
    calls = []
    real = OxigraphNativeLoader.load_path

    def spy(self, path):
        calls.append(path)
        return real(self, path)

    monkeypatch.setattr(OxigraphNativeLoader, "load_path", spy)
    by_path, (r1,) = load_into(tmp_path / "a", kg_file)
    streamed, (r2,) = load_into(tmp_path / "b", kg_file, segment_lines=3)  # too small a segment: streaming
    assert calls == [kg_file]
    assert (r1.triples, r1.lines, r1.names, r1.skipped) == (r2.triples, r2.lines, r2.names, r2.skipped)
    assert same_kg(by_path.stats()) == same_kg(streamed.stats())
    keys = ["paul author", "harbor lights", "quiz game"]
    assert by_path.kg.search_entities(keys) == streamed.kg.search_entities(keys)
    again = load_file(by_path.need_sink(), kg_file)  # checkpointed as complete
    assert again.already_complete and calls == [kg_file]
    by_path.close()
    streamed.close()


def test_files_with_blank_nodes_or_bad_lines_leave_the_path_load(tmp_path, monkeypatch):
    calls = []
    real = OxigraphNativeLoader.load_path
    monkeypatch.setattr(OxigraphNativeLoader, "load_path", lambda self, p: (calls.append(p), real(self, p)))
    blank = write_nt(tmp_path / "blank.nt", ['_:x <http://ex.org/p> <http://ex.org/o> .'])
    bad = write_nt(tmp_path / "bad.nt", ['<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .', 'oops',
                                          '<http://ex.org/s> <http://ex.org/p> "v" .'])
    g, (rb, rbad) = load_into(tmp_path / "store", blank, bad)
    assert calls == [bad]  # blank nodes are renamed by the streaming path, never loaded by path
    assert rb.triples == 1 and (rbad.triples, rbad.skipped) == (2, 1) and rbad.bad[0][0] == 2
    g.close()


def test_a_delimited_name_said_on_many_lines_is_named_once(tmp_path):
    """Across the chunks of one load a node's name is written and indexed
    once (it used to be once per chunk: 8x the rows on a real file)."""
    lines = [f"Hub Node|links|Leaf {i % 7}" for i in range(300)]
    f = tmp_path / "many.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for path, chunk in (("careful", 256), ("fast", None)):
        g, (report,) = load_into(tmp_path / path, f, chunk_bytes=chunk)
        _, names = content(g)
        assert report.names == len(names) == 8, path
        assert g.kg.stats()["triples"] == 7 + 8  # seven distinct edges, eight labels
        assert [n.name for n in g.kg.search_entities(["leaf 3"])["leaf 3"]] == ["Leaf 3"]


def test_node_iris_quote_like_urllib():
    import random
    import string
    from urllib.parse import quote

    rng = random.Random(0)
    for _ in range(20000):
        text = "".join(rng.choice(string.printable + "éü✓日") for _ in range(rng.randrange(0, 16)))
        assert entity_iri(text) == "urn:tog:e:" + quote(text, safe=""), text


@pytest.mark.parametrize("fmt", ["delimited", "nt"])
def test_a_stop_at_max_errors_leaves_what_its_checkpoint_says_names_included(tmp_path, fmt):
    """Past --max-errors in the middle of a segment, the store holds exactly
    what the load record says (every entity with an edge has its name), and
    a re-run with a higher limit resumes and ends as a clean load does."""
    good = [(f"e{i}", f"r{i % 7}", f"e{i + 1}") for i in range(20_000)]
    bad = [f"broken line {i}" for i in range(40)]

    def line(h, r, t):
        return f"{h}|{r}|{t}" if fmt == "delimited" else (f'<{iri(h)}> <{iri(r)}> <{iri(t)}> .\n<{iri(h)}> <{RDFS_LABEL}> "{h}" .\n'
                                                                 f'<{iri(t)}> <{RDFS_LABEL}> "{t}" .')

    rows = [line(*x) for x in good[:12_000]] + bad + [line(*x) for x in good[12_000:]]
    f = tmp_path / ("kb.txt" if fmt == "delimited" else "kb.nt")
    f.write_text("\n".join(rows) + "\n", encoding="utf-8")
    g = open_graph(tmp_path / "store", create=True)
    sink = g.need_sink()
    with pytest.raises(LoadError, match="more than 10 bad lines"):
        load_file(sink, f, max_errors=10, segment_lines=5_000, chunk_bytes=64 << 10)
    (record,) = sink.loads()
    assert not record.complete and 0 < record.triples and record.lines < sum(r.count("\n") + 1 for r in rows)
    if fmt == "delimited":
        assert g.kg.stats()["triples"] == record.triples
    else:  # the lines before the checkpoint, each distinct statement once
        read = "\n".join(rows).split("\n")[:record.lines]
        assert g.kg.stats()["triples"] == len({x for x in read if x.startswith("<")})
    label = ox.NamedNode(RDFS_LABEL)
    entities = set()
    for q in db(g).store.quads_for_pattern(None, None, None, ox.DefaultGraph()):
        if q.predicate != label:
            entities |= {q.subject.value, q.object.value}
    names = g.kg.labels(sorted(entities))
    assert set(names) == entities  # every entity with an edge is named...
    found = g.kg.search_entities([name_key(n) for n in names.values()])
    linked = {node.id for nodes in found.values() for node in nodes}
    assert linked >= entities  # ...and linked by that name
    if fmt == "delimited":
        assert record.names == len(entities)
    done = load_file(sink, f, max_errors=100, segment_lines=5_000, chunk_bytes=64 << 10)
    assert done.resumed_from == record.lines and done.skipped == len(bad)
    clean = open_graph(tmp_path / "clean", create=True)
    f_clean = tmp_path / ("clean.txt" if fmt == "delimited" else "clean.nt")
    f_clean.write_text("\n".join(line(*x) for x in good) + "\n", encoding="utf-8")
    load_file(clean.need_sink(), f_clean)
    assert g.kg.stats()["triples"] == clean.kg.stats()["triples"]
    assert g.kg.stats()["names"] == clean.kg.stats()["names"]
