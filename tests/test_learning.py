"""Learning from question–answer pairs (``tog learn``) and questions with
several topics, on small KGs of our own: the relations' names share no word
with the questions, so only what is learned at run time can link them."""

from __future__ import annotations

import json
import random

import pytest
from conftest import VENV_BIN, env_without_traceback, load_into, no_traceback, open_spec

import engine.learning as learning
from engine.descriptions import DescriptionError, Descriptions
from engine.evaluate import read_questions
from engine.learning import (
    ChainModel,
    LearnedChain,
    ReadCache,
    answer_side,
    chain_key,
    find_chains,
    split,
)
from engine.pruning import get_pruner
from engine.reasoning import get_reasoner
from engine.runs import ask, render_tree
from engine.search import SearchConfig
from engine.store import open_store

# A harbour KG with opaque relation codes: ship -kq1-> port -kq2-> land,
# ship -kq3-> skipper -kq4-> year.
WORDINGS = {
    ("kq1",): ["where does [{s}] berth", "what is the home harbour of [{s}]", "which harbour does [{s}] sail from"],
    ("kq1", "kq2"): ["in what land does [{s}] berth", "which land is the home harbour of [{s}] in",
                     "[{s}] sails from a harbour in which land"],
    ("kq3",): ["who commands [{s}]", "who is the skipper of [{s}]", "name the commander of [{s}]"],
    ("kq3", "kq4"): ["when was the skipper of [{s}] born", "what year was the commander of [{s}] born",
                     "in which year was the person who commands [{s}] born"],
    ("^kq1",): ["which vessels berth at [{p}]", "what boats have [{p}] as home harbour"],
    ("^kq1", "kq3"): ["who commands the vessels that berth at [{p}]", "name the skippers of boats berthing at [{p}]"],
}


def harbour(seed: int = 7):
    rng = random.Random(seed)
    lands = [f"land_{c}" for c in "abcd"]
    ports = {f"port_{i}": rng.choice(lands) for i in range(8)}
    ships = {f"ship_{i:02d}": (rng.choice(sorted(ports)), f"m_{i:02d}", str(1940 + rng.randrange(50)))
             for i in range(48)}
    triples = [f"{p}\tkq2\t{land}" for p, land in sorted(ports.items())]
    for s, (p, k, y) in sorted(ships.items()):
        triples += [f"{s}\tkq1\t{p}", f"{s}\tkq3\t{k}", f"{k}\tkq4\t{y}"]
    questions = []
    for chain, forms in WORDINGS.items():
        for n in range(40):
            if chain[0] == "^kq1":
                p = sorted(ports)[n % len(ports)]
                aboard = [s for s, v in sorted(ships.items()) if v[0] == p]
                if not aboard:
                    continue
                answers = aboard if chain == ("^kq1",) else [ships[s][1] for s in aboard]
                text = rng.choice(forms).format(p=p)
            else:
                s = sorted(ships)[rng.randrange(len(ships))]
                port, skipper, year = ships[s]
                answers = [{("kq1",): port, ("kq1", "kq2"): ports[port], ("kq3",): skipper,
                            ("kq3", "kq4"): year}[chain]]
                text = rng.choice(forms).format(s=s)
            questions.append({"question": text, "answers": answers, "chain": list(chain)})
    return "\n".join(triples) + "\n", questions


@pytest.fixture
def harbour_files(tmp_path):
    kb, questions = harbour()
    kb_path = tmp_path / "harbour.tsv"
    kb_path.write_text(kb, encoding="utf-8")
    learn_part, test_part = split(questions, 0.5, seed=3)
    paths = {}
    for name, part in (("learn", learn_part), ("test", test_part)):
        paths[name] = tmp_path / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps({"id": f"{name}{i}", **q}) + "\n" for i, q in enumerate(part)),
                               encoding="utf-8")
    return kb_path, paths


def test_learning_links_wordings_to_relations_that_share_no_word_with_them(tog, tmp_path, harbour_files):
    kb, files = harbour_files
    store = str(tmp_path / "store")
    assert tog("load", str(kb), "--store", store, "--format", "tsv").exit_code == 0
    learned = tmp_path / "learned.toml"
    r = tog("learn", str(files["learn"]), "--store", store, "--out", str(learned))
    assert r.exit_code == 0, r.output
    assert "learned" in r.output and str(learned) in r.output
    # readable: the chains, their step keys and example wordings are in the file
    text = learned.read_text(encoding="utf-8")
    assert 'steps = ["kq3", "kq4"]' in text and 'steps = ["^kq1", "kq3"]' in text and "@" in text

    def hits(*extra):
        out = tmp_path / f"eval{len(extra)}.jsonl"
        r = tog("eval", str(files["test"]), "--store", store, "--out", str(out), *extra)
        assert r.exit_code == 0, r.output
        return json.loads((tmp_path / f"eval{len(extra)}.jsonl.summary.json").read_text())["hits@1"]

    zero, taught = hits(), hits("--relation-descriptions", str(learned))
    assert taught >= 0.9, (zero, taught)
    assert zero <= 0.6 and taught - zero >= 0.3, (zero, taught)


def test_learning_is_deterministic(tog, tmp_path, harbour_files):
    kb, files = harbour_files
    store = str(tmp_path / "store")
    tog("load", str(kb), "--store", store, "--format", "tsv")
    one, two = tmp_path / "one.toml", tmp_path / "two.toml"
    assert tog("learn", str(files["learn"]), "--store", store, "--out", str(one)).exit_code == 0
    assert tog("learn", str(files["learn"]), "--store", store, "--out", str(two)).exit_code == 0
    assert one.read_bytes() == two.read_bytes()


def test_a_stopped_learn_goes_on_where_it_stopped_and_writes_what_an_unbroken_run_writes(tog, tmp_path, harbour_files,
                                                                                        monkeypatch):
    """What each question gave is kept in OUT.partial as it is found: the
    same command after an interruption (or a kill, which may cut the last
    line short) searches only the questions left, and writes the file an
    unbroken run writes. A search made otherwise is refused, not mixed in;
    --restart searches everything again."""
    kb, files = harbour_files
    store = str(tmp_path / "store")
    assert tog("load", kb, "--store", store, "--format", "tsv").exit_code == 0
    whole = tmp_path / "whole.toml"
    assert tog("learn", files["learn"], "--store", store, "--out", whole).exit_code == 0
    assert not (tmp_path / "whole.toml.partial").exists()
    asked = list(read_questions(files["learn"]))
    n, distinct = len(asked), len({learning.Journal.key(q) for q in asked})  # the same question twice: searched once
    with open_store(store) as s:  # the same as learning without a journal (which searches a repeat again)
        bare = learning.learn(s.kg, asked, None).text
    assert [x for x in bare.splitlines() if not x.startswith("source =")] == [
        x for x in whole.read_text(encoding="utf-8").splitlines() if not x.startswith("source =")]
    plain, searched = learning._example, []

    def search(kg, cache, q, depth):
        if stop_after is not None and len(searched) == stop_after:
            raise KeyboardInterrupt
        searched.append(q.question)
        return plain(kg, cache, q, depth)

    monkeypatch.setattr(learning, "_example", search)
    out, partial = tmp_path / "learned.toml", tmp_path / "learned.toml.partial"
    stop_after = 7
    r = tog("learn", files["learn"], "--store", store, "--out", out)
    assert r.exit_code == 130 and no_traceback(r) and str(partial) in r.output and not out.exists()
    assert len(partial.read_text(encoding="utf-8").splitlines()) == 1 + 7
    with open(partial, "ab") as fh:  # lines that are not ours (passed over), then one a kill cut short
        fh.write(b'["k", "used", "not a number", null]\n{"a": 1, "b": 2, "c": 3, "d": 4}\n\xff\xfe\n')
        fh.write(b'["0123456789abcdef01234567", "us')

    stop_after = None
    r = tog("learn", files["learn"], "--store", store, "--out", out, "--depth", "2")
    assert r.exit_code == 1 and no_traceback(r) and "depth: 3 -> 2" in r.output and "--restart" in r.output
    assert partial.exists() and not out.exists()
    searched.clear()
    r = tog("learn", files["learn"], "--store", store, "--out", out)
    assert r.exit_code == 0, r.output
    first = list(dict.fromkeys(learning.Journal.key(q) for q in asked))[:7]
    again = sum(learning.Journal.key(q) in first for q in asked)
    assert f"{again} of {n} questions searched before" in r.output and len(searched) == distinct - 7
    assert out.read_bytes() == whole.read_bytes() and not partial.exists()

    stop_after, searched[:] = 3, []
    assert tog("learn", files["learn"], "--store", store, "--out", out).exit_code == 130
    stop_after, searched[:] = None, []
    r = tog("learn", files["learn"], "--store", store, "--out", out, "--restart")
    assert r.exit_code == 0 and "searched before" not in r.output and len(searched) == distinct
    assert out.read_bytes() == whole.read_bytes()

    stop_after, searched[:] = 3, []
    assert tog("learn", files["learn"], "--store", store, "--out", out).exit_code == 130
    stop_after = None
    assert tog("correct", "--add", "ship_00|kq1|port_7", "--reason", "a new berth", "--store", store).exit_code == 0
    r = tog("learn", files["learn"], "--store", store, "--out", out)  # the KG changed since: not mixed in
    assert r.exit_code == 1 and "kg: '1 loads, 0 corrections" in r.output and "1 corrections" in r.output

    for foreign in ("these are not the chains you are looking for\n", "nor is this"):
        partial.write_text(foreign, encoding="utf-8")  # not ours: refused, and left as it is
        r = tog("learn", files["learn"], "--store", store, "--out", out)
        assert r.exit_code == 1 and no_traceback(r) and "not a journal of tog learn" in r.output
        assert partial.read_text(encoding="utf-8") == foreign
    partial.write_text('{"tog_learn_journal": ["not", "a", "table"]}\n', encoding="utf-8")
    r = tog("learn", files["learn"], "--store", store, "--out", out)
    assert r.exit_code == 1 and no_traceback(r) and "made otherwise" in r.output
    partial.write_bytes(b"")  # a kill as it began
    searched[:] = []
    assert tog("learn", files["learn"], "--store", store, "--out", out).exit_code == 0 and len(searched) == distinct


def test_a_killed_learn_goes_on_where_it_stopped(tog, tmp_path, harbour_files):
    """SIGKILL in the middle of the search (nothing of tog's runs after it):
    what was kept stays, and the same command searches the rest and writes
    the file an unbroken run writes."""
    import signal
    import subprocess
    import time

    kb, files = harbour_files
    store = str(tmp_path / "store")
    assert tog("load", kb, "--store", store, "--format", "tsv").exit_code == 0
    base = [json.loads(line) for line in files["learn"].read_text(encoding="utf-8").splitlines()]
    many = tmp_path / "many.jsonl"  # long enough (a few seconds) for a kill to land in the middle
    many.write_text("".join(json.dumps({**q, "id": f"{i}-{k}", "question": f"{q['question']} (take {k})"}) + "\n"
                            for k in range(40) for i, q in enumerate(base)), encoding="utf-8")
    distinct = len({learning.Journal.key(q) for q in read_questions(many)})
    whole = tmp_path / "whole.toml"
    assert tog("learn", many, "--store", store, "--out", whole).exit_code == 0
    out, partial = tmp_path / "learned.toml", tmp_path / "learned.toml.partial"
    proc = subprocess.Popen([str(VENV_BIN / "tog"), "learn", str(many), "--store", store, "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env_without_traceback())
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if partial.exists() and partial.read_bytes().count(b"\n") > 30:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    assert proc.wait() == -signal.SIGKILL and not out.exists()
    kept = partial.read_bytes().count(b"\n") - 1
    assert 30 <= kept < distinct, (kept, distinct)
    r = tog("learn", many, "--store", store, "--out", out)
    assert r.exit_code == 0 and "searched before" in r.output, r.output
    assert out.read_bytes() == whole.read_bytes() and not partial.exists()


def test_learning_into_the_store_alone_goes_on_where_it_stopped(tog, tmp_path, harbour_files, monkeypatch):
    """With --into-store and no --out, the search is kept in the cache
    directory, one journal a store and question file: an interrupted or
    failed run goes on where it stopped (the store named by a relative path
    as well), and the store keeps what an unbroken run learns. A cache that
    cannot be written is said in one line, and the run goes on unkept."""
    from engine.errors import StoreError

    kb, files = harbour_files
    store = tmp_path / "store"
    assert tog("load", kb, "--store", store, "--format", "tsv").exit_code == 0
    whole = tmp_path / "whole.toml"
    assert tog("learn", files["learn"], "--store", store, "--out", whole).exit_code == 0
    distinct = len({learning.Journal.key(q) for q in read_questions(files["learn"])})
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOG_CACHE_DIR", str(cache))
    plain, searched = learning._example, []

    def search(kg, cache, q, depth):
        if len(searched) == stop_after:
            raise failure
        searched.append(q.question)
        return plain(kg, cache, q, depth)

    def kept_learned():
        with open_store(str(store)) as s:
            return s.need_runs().learned()

    monkeypatch.setattr(learning, "_example", search)
    stop_after, failure = 5, KeyboardInterrupt()
    r = tog("learn", files["learn"], "--store", store, "--into-store")
    journals = list((cache / "learn").iterdir())
    assert r.exit_code == 130 and no_traceback(r) and len(journals) == 1 and str(journals[0]) in r.output
    assert len(journals[0].read_text(encoding="utf-8").splitlines()) == 1 + 5 and kept_learned() is None

    stop_after, failure, searched[:] = 8, StoreError("the connection to the store dropped"), []
    monkeypatch.chdir(tmp_path)  # the same store by a relative path: the same journal
    r = tog("learn", files["learn"], "--store", "store", "--into-store")
    assert r.exit_code == 1 and no_traceback(r) and "connection to the store dropped" in r.output
    assert f"the {5 + 8} questions searched are kept in {journals[0]}" in r.output
    assert list((cache / "learn").iterdir()) == journals and kept_learned() is None

    stop_after, searched[:] = None, []
    r = tog("learn", files["learn"], "--store", "store", "--into-store")
    assert r.exit_code == 0 and "searched before" in r.output and len(searched) == distinct - 13, r.output
    assert kept_learned() == whole.read_text(encoding="utf-8") and not any((cache / "learn").iterdir())

    assert tog("learn", "--forget", "--store", store).exit_code == 0
    monkeypatch.setenv("TOG_CACHE_DIR", str(whole))  # a file: no journal can go there
    r = tog("learn", files["learn"], "--store", store, "--into-store")
    assert r.exit_code == 0 and "cannot keep the search there" in r.output and "will start over" in r.output
    assert kept_learned() == whole.read_text(encoding="utf-8") and no_traceback(r)


def test_nothing_to_learn_is_one_line_and_writes_no_file(tog, tmp_path, harbour_files):
    kb, _ = harbour_files
    store = str(tmp_path / "store")
    tog("load", str(kb), "--store", store, "--format", "tsv")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "who is [nobody_here]", "answers": ["x"]}) + "\n"
                   + json.dumps({"question": "who commands [ship_01]", "answers": ["no_such_answer"]}) + "\n",
                   encoding="utf-8")
    out = tmp_path / "never.toml"
    r = tog("learn", str(bad), "--store", store, "--out", str(out))
    assert r.exit_code == 1 and no_traceback(r)
    assert "1 without a topic entity" in r.output and "1 whose answers no chain" in r.output
    assert not out.exists()


def test_chain_finding_takes_the_chains_that_reach_the_answers(tmp_path):
    kb, _ = harbour()
    src = tmp_path / "h.tsv"
    src.write_text(kb, encoding="utf-8")
    store, _ = load_into(tmp_path / "s", src, fmt="tsv")
    cache = ReadCache(store.kg)
    ship = "urn:tog:e:ship_00"
    port = next(c.node.name for c in store.kg.expand([(ship, r) for r in store.kg.relations([ship])[ship]
                                                     if r.id.endswith("kq1")]))
    found = find_chains(cache, ship, {port}, 3)
    assert [chain_key(c) for c in found.chains] == [("kq1",)] and found.f1 == 1.0


@pytest.mark.parametrize("crowded", [False, True], ids=["small", "crowded"])
def test_a_wide_last_depth_is_read_from_the_answers_side_unless_a_relation_into_them_is_crowded(
        tog, tmp_path, monkeypatch, store_spec, crowded):
    """A hub's neighbours make a last depth of 1,080 entities, most leading
    nowhere. When every relation into the answer is small, the last step is
    read from the answer's side and the wide depth is never listed; a
    crowded one brings the listing back. Both ways find what the listing
    finds, F1 included (the chain's other tails count)."""
    rows = [f"hub\tw{i}\tmid_{i}_{j}" for i in range(90) for j in range(12)]
    rows += [f"mid_{i}_0\tother\tthing_{i}" for i in range(90)]
    rows += ["mid_7_3\tgoal\tprize"] + [f"mid_7_{j}\tgoal\tconsolation_{j}" for j in (5, 6, 7)]
    if crowded:
        rows += [f"elsewhere_{k}\tgoal\tprize" for k in range(learning.EXPAND_LIMIT + 50)]
    src = tmp_path / "wide.tsv"
    src.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert tog("load", str(src), "--store", store_spec, "--format", "tsv").exit_code == 0
    kg, listed = open_spec(store_spec).kg, []
    reads = kg.relations
    monkeypatch.setattr(kg, "relations", lambda ids: (listed.extend(ids), reads(ids))[1])

    def chains(list_most: int):
        monkeypatch.setattr(learning, "LIST_MOST", list_most)
        cache = ReadCache(kg)
        listed.clear()
        found = find_chains(cache, "urn:tog:e:hub", {"prize"}, 2, answer_side(cache, {"prize"}))
        return [chain_key(c) for c in found.chains], round(found.f1, 4), {e for e in listed if "mid_" in e}

    wide, f1, mids = chains(1000)
    assert wide == [("w7", "goal")] and f1 == 0.4  # prize among 4 tails: precision 1/4, recall 1
    assert len(mids) == (1080 if crowded else 0)
    assert chains(10**9) == (wide, f1, mids if crowded else {f"urn:tog:e:mid_{i}_{j}" for i in range(90)
                                                              for j in range(12)})


def test_an_answer_reached_through_an_unnamed_node_keeps_a_wide_last_depth_listed(tog, tmp_path, monkeypatch,
                                                                                  store_spec):
    """The answers' side reads names only: an unnamed node on a relation into
    the answer (a Freebase CVT) leaves that step open, so the wide last depth
    is listed, and the chain that looks through the node is found."""
    ns, label = "http://example.org/", "http://www.w3.org/2000/01/rdf-schema#label"
    lines = [f'<{ns}hub> <{label}> "The Hub" .', f'<{ns}prize> <{label}> "The Prize" .']
    for i in range(90):
        for j in range(12):
            lines += [f"<{ns}hub> <{ns}w{i}> <{ns}mid_{i}_{j}> .", f'<{ns}mid_{i}_{j}> <{label}> "Mid {i} {j}" .']
    lines += [f"<{ns}mid_7_3> <{ns}goal> <{ns}unnamed> .", f"<{ns}unnamed> <{ns}goal> <{ns}prize> ."]
    src = tmp_path / "through.nt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert tog("load", str(src), "--store", store_spec).exit_code == 0
    kg, listed = open_spec(store_spec).kg, []
    reads = kg.relations
    monkeypatch.setattr(kg, "relations", lambda ids: (listed.extend(ids), reads(ids))[1])
    cache = ReadCache(kg)
    found = find_chains(cache, f"{ns}hub", {"the prize"}, 2, answer_side(cache, {"the prize"}))
    assert [chain_key(c) for c in found.chains] == [("w7", "goal", "goal")] and found.f1 == 1.0
    assert len({e for e in listed if "mid_" in e}) == 1080


def test_the_read_cache_is_bounded_by_what_it_holds_and_answers_in_full_across_a_trim(tmp_path):
    """A pair holds up to 100 neighbours: the cache counts them, not the
    pairs. Dropping what it holds never drops what the call asks for."""
    kb, _ = harbour()
    src = tmp_path / "h.tsv"
    src.write_text(kb, encoding="utf-8")
    store, _ = load_into(tmp_path / "s", src, fmt="tsv")
    cache = ReadCache(store.kg)
    cache.MAX_HELD = 30
    ports = [f"urn:tog:e:port_{i}" for i in range(8)]
    berths = {p: [r for r in rs if r.direction == "in"] for p, rs in cache.relations(ports).items()}
    most = 0
    for p in ports:  # one port a call: its ships (every port has some, or it has no relation in)
        got = cache.expand([(p, r) for r in berths[p]])
        batch = sum(len(v) for v in got.values())
        most = max(most, batch)
        assert batch > 0 and sum(len(v) for v in cache.tails.values()) <= cache.MAX_HELD + 2 * most
    assert sum(len(v) for v in got.values()) == len(store.kg.expand([(ports[-1], r) for r in berths[ports[-1]]]))
    ships = [f"urn:tog:e:ship_{i:02d}" for i in range(48)]
    for i in range(0, 48, 4):  # each call asks again for what the one before read, past the bound
        asked = ships[max(0, i - 4): i + 4]
        assert set(cache.relations(asked)) == set(asked)


def test_chain_finding_holds_off_full_collections_and_frees_each_questions_dropped_cycles(tmp_path, monkeypatch):
    """Finding chains keeps millions of objects at scale, which each of
    Python's full collections walked again (a fifth of the time at 1M
    triples): none runs on its own while questions are read, and young ones
    go on. After each question, one collection of that question's own objects
    frees its dropped cycles, even those that outlived young collections (a
    database driver's, which had waited for the end: +256 MiB at 10M on
    Neo4j), and sets the rest aside. The collector is as it was after, a
    failed read included; a process that had set objects aside itself keeps
    them so, and then gets no per-question collection."""
    import gc
    import weakref

    from engine.evaluate import Question

    kb, questions = harbour()
    src = tmp_path / "h.tsv"
    src.write_text(kb, encoding="utf-8")
    store, _ = load_into(tmp_path / "s", src, fmt="tsv")
    asked = [Question(id=str(i), question=q["question"], answers=q["answers"]) for i, q in enumerate(questions)]
    kg, plain = store.kg, store.kg.relations
    made, freed, generations = [0], [0], []

    class Loop:
        pass

    def relations(ids):
        loop = Loop()
        loop.me = loop  # only the collector can free it
        weakref.finalize(loop, lambda: freed.__setitem__(0, freed[0] + 1))
        made[0] += 1
        gc.collect(1)  # it outlives the young collections: only a full one frees it now
        del loop
        return plain(ids)

    def collected(phase, info):
        if phase == "start":
            generations.append(info["generation"])

    def seen(log):
        return lambda: log.append((made[0], freed[0], gc.get_freeze_count() > 0, generations.count(2)))

    monkeypatch.setattr(kg, "relations", relations)
    settings = gc.get_threshold()
    gc.set_threshold(100, 2, 2)  # a full collection every few hundred objects kept, unless held off
    gc.callbacks.append(collected)
    try:
        # a process that set its objects aside (as this one now does, so that they do
        # not put full collections off): no full collection at all while chains are found
        gc.freeze()
        gc.collect()
        generations.clear()
        aside = gc.get_freeze_count()
        examples = learning.examples_from(kg, asked, progress=seen([]))
        assert 2 not in generations and 0 in generations and made[0] > 50
        assert gc.get_freeze_count() > aside // 2 and gc.get_threshold() == (100, 2, 2)  # (some freed since)
        assert freed[0] < made[0] // 2  # the promoted cycles wait for a full collection
        generations.clear()
        kept = [[i] for i in range(5_000)]  # objects kept outside the search do bring one on
        assert len(kept) == 5_000 and 2 in generations
        gc.unfreeze()
        gc.collect()

        # a process with nothing set aside (the CLI's): one full collection a question,
        # which frees the question's dropped cycles before the next begins
        made[0] = freed[0] = 0
        generations.clear()
        log: list[tuple[int, int, bool, int]] = []
        again = learning.examples_from(kg, asked, progress=seen(log))
        assert [e.labels for e in again] == [e.labels for e in examples] and len(examples) > 100
        assert all(f == m and aside_now for m, f, aside_now, _ in log)
        assert [full for *_, full in log] == list(range(1, len(asked) + 1))
        assert gc.get_freeze_count() == 0 and gc.get_threshold() == (100, 2, 2)

        def broken(ids):
            raise ConnectionError("the store went away")

        monkeypatch.setattr(kg, "relations", broken)
        with pytest.raises(ConnectionError):
            learning.examples_from(kg, asked[:3])
        assert gc.get_freeze_count() == 0 and gc.get_threshold() == (100, 2, 2)
    finally:
        gc.callbacks.remove(collected)
        gc.set_threshold(*settings)
        gc.unfreeze()


def test_the_requests_of_a_depth_are_spread_evenly_over_every_chain_entity_and_relation():
    """``_thin`` picks what spreading the whole list evenly picks, without
    making the list (a hub's neighbours times their relations: millions)."""
    from engine.learning import _thin

    rng = random.Random(5)
    for _ in range(200):
        groups = [((f"c{i}",), f"e{i}", [f"r{i}.{j}" for j in range(rng.choice([0, 0, 1, 3, 40]))])
                  for i in range(rng.randrange(1, 60))]
        flat = [(c, e, r) for c, e, rs in groups for r in rs]
        n = rng.randrange(1, 120)
        expected = flat if len(flat) <= n else [flat[int(i * (len(flat) / n))] for i in range(n)]
        assert _thin(groups, n) == expected


def test_learned_chains_drive_pruner_judge_and_answer(tmp_path):
    kb, _ = harbour()
    src = tmp_path / "h.tsv"
    src.write_text(kb, encoding="utf-8")
    store, _ = load_into(tmp_path / "s", src, fmt="tsv")
    # a hand-written model: "homeland" asks for kq1 then kq2
    model = ChainModel([LearnedChain(("kq1", "kq2"), 0.0, {"homeland": 4.0}),
                        LearnedChain(("kq1",), 0.0, {"homeland": -2.0}),
                        LearnedChain(("kq3",), 0.0, {})])
    notes = Descriptions({}, "test", model)
    question = "what is the homeland of [ship_03]"
    plain = ask(store, question, get_pruner("hybrid"), get_reasoner("offline"), SearchConfig(), record=False)
    taught = ask(store, question, get_pruner("hybrid", descriptions=notes),
                 get_reasoner("offline", descriptions=notes), SearchConfig(), record=False, descriptions=notes)
    assert taught.result.depth == 2 and taught.result.answer.names[0].startswith("land_")
    assert not plain.result.answer.names or not plain.result.answer.names[0].startswith("land_")


def test_a_bad_learned_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[chains]]\nsteps = []\n', encoding="utf-8")
    with pytest.raises(DescriptionError, match="chain 1 needs steps"):
        Descriptions.load(bad)
    bad.write_text('[[chains]]\nsteps = ["kq1"]\n[chains.weights]\nword = "high"\n', encoding="utf-8")
    with pytest.raises(DescriptionError, match="weights of chain 1 must be numbers"):
        Descriptions.load(bad)
    bad.write_text('[nonsense]\n', encoding="utf-8")
    with pytest.raises(DescriptionError, match="unknown table"):
        Descriptions.load(bad)


# -- several topics ----------------------------------------------------------------------

def clubs(tmp_path):
    """Two clubs' players and their home towns: one player of the first club is from eastby."""
    rng = random.Random(5)
    lines, both = [], None
    for i in range(12):
        club = "northfield_rovers" if i < 6 else "southgate_united"
        town = "eastby" if i in (5, 7, 8, 9) else rng.choice(["westholm", "kirkvale"])
        lines += [f"player_{i:02d}\tmember_of\t{club}", f"player_{i:02d}\tborn_in\t{town}"]
        if club == "northfield_rovers" and town == "eastby":
            both = f"player_{i:02d}"
    src = tmp_path / "clubs.tsv"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return src, both


def test_a_question_with_two_topics_answers_what_both_reach(tmp_path):
    src, both = clubs(tmp_path)
    store, _ = load_into(tmp_path / "s", src, fmt="tsv")
    question = "which player of northfield_rovers was born in eastby"
    r = ask(store, question, get_pruner("hybrid"), get_reasoner("offline"), SearchConfig())
    assert [t.name for t in r.topics] == ["northfield_rovers", "eastby"]
    assert r.result.answer.names == [both]
    cited = {p.topic.name for p in r.result.supporting}
    assert cited == {"northfield_rovers", "eastby"}  # the answer cites a path from each topic
    tree = render_tree(store.runs.get(r.run_id))
    assert "northfield_rovers  (topic)" in tree and "eastby  (topic)" in tree


def test_learning_from_rated_runs(tog, tmp_path, harbour_files):
    kb, _ = harbour_files
    store = str(tmp_path / "store")
    tog("load", str(kb), "--store", store, "--format", "tsv")
    years = {}
    for line in kb.read_text(encoding="utf-8").splitlines():
        s, r, o = line.split("\t")
        years[s] = o  # m_NN -kq4-> year (and other facts, not looked at)
    for i in range(6):  # the user names the right answer of runs the zero-shot engine got wrong
        r = tog("ask", f"when was the skipper of [ship_{i:02d}] born", "--store", store)
        assert r.exit_code == 0, r.output
        right = years[f"m_{i:02d}"]
        rated = tog("feedback", "last", "--store", store, "--rating", "bad", "--answer", right)
        assert rated.exit_code == 0 and f"right answer: {right}" in rated.output
    tog("ask", "when was the skipper of [ship_10] born", "--store", store)
    tog("feedback", "last", "--store", store, "--rating", "bad")  # says nothing of what is right
    learned = tmp_path / "fb.toml"
    r = tog("learn", "--from-feedback", "--store", store, "--out", str(learned))
    assert r.exit_code == 0, r.output
    assert "6 with a named answer" in r.output and "1 rated bad without one" in r.output
    question = "when was the skipper of [ship_30] born"
    r = tog("ask", question, "--store", store, "--json")
    assert json.loads(r.output)["answer"] != [years["m_30"]]
    r = tog("ask", question, "--store", store, "--json", "--relation-descriptions", str(learned))
    assert json.loads(r.output)["answer"] == [years["m_30"]]


def test_learn_needs_a_file_or_feedback(tog, tmp_path):
    r = tog("learn", "--store", str(tmp_path / "s"), "--out", str(tmp_path / "x.toml"))
    assert r.exit_code == 2 and "--from-feedback" in r.output and no_traceback(r)


def test_learned_into_the_store_serves_every_later_question(tog, tmp_path, harbour_files, store_spec):
    kb, files = harbour_files
    assert tog("load", str(kb), "--store", store_spec, "--format", "tsv").exit_code == 0
    question = "in which year was the person who commands [ship_30] born"
    before = json.loads(tog("ask", question, "--store", store_spec, "--json").output)
    r = tog("learn", str(files["learn"]), "--store", store_spec, "--into-store", "--out", tmp_path / "l.toml")
    assert r.exit_code == 0 and "kept in" in r.output, r.output
    assert (tmp_path / "l.toml").exists() and not (tmp_path / "l.toml.partial").exists()  # (its journal gone)
    after = json.loads(tog("ask", question, "--store", store_spec, "--json").output)
    assert after["depth"] == 2 and after["answer"] != before["answer"]
    assert after["answer"][0].isdigit()
    run = tog("runs", "show", "last", "--store", store_spec, "--json")
    assert "kept in the store" in run.output
    r = tog("learn", "--forget", "--store", store_spec)
    assert r.exit_code == 0 and "keeps no learned file now" in r.output
    assert json.loads(tog("ask", question, "--store", store_spec, "--json").output)["answer"] == before["answer"]


def test_runs_rated_good_become_worked_examples_for_the_llm(tog, tmp_path, harbour_files, monkeypatch):
    from llm_server import StandInModel

    kb, _ = harbour_files
    store = str(tmp_path / "store")
    tog("load", str(kb), "--store", store, "--format", "tsv")
    asked = {"who is the skipper of [ship_04]": "good", "which vessels berth at [port_2]": "good",
             "who is the skipper of [ship_05]": "bad"}
    for question, rating in asked.items():
        assert tog("ask", question, "--store", store).exit_code == 0
        tog("feedback", "last", "--store", store, "--rating", rating)
    learned = tmp_path / "fb.toml"
    r = tog("learn", "--from-feedback", "--store", store, "--out", str(learned))
    assert r.exit_code == 0 and "2 worked examples" in r.output, r.output
    examples = Descriptions.load(learned).exemplars
    assert {e.question for e in examples} == {q for q, rating in asked.items() if rating == "good"}
    assert all(e.paths and (" -> " in e.paths[0] or " <- " in e.paths[0]) for e in examples)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-standin-4711")
    monkeypatch.setenv("TOG_CACHE_DIR", str(tmp_path / "cache"))
    with StandInModel(mode="gpt4") as model:
        r = tog("ask", "who is the skipper of [ship_30]", "--store", store, "--model", "openai/standin",
                "--api-base", model.api_base, "--no-cache", "--relation-descriptions", str(learned))
        assert r.exit_code == 0, r.output
    answer_prompts = [req["body"]["messages"] for req in model.requests
                      if "Answer:" in req["body"]["messages"][0]["content"]]
    assert answer_prompts
    shown = " ".join(m["content"] for m in answer_prompts[-1])
    assert "who is the skipper of [ship_04]" in shown  # the nearest rated run, as a worked example
    assert "which vessels berth at [port_2]" not in shown  # shares no wording with the question


# -- the local embedding model -----------------------------------------------------------

BOOKS = ("book_a\tauthor\tperson_x\nbook_a\tillustrator\tperson_y\nbook_a\teditor\tperson_z\n"
         "person_x\tresidence\ttown_x\nperson_y\tresidence\ttown_y\nperson_z\tresidence\ttown_z\n")


def test_soft_match_and_the_local_embedding_pruner_need_no_server(tog, tmp_path):
    src = tmp_path / "books.tsv"
    src.write_text(BOOKS, encoding="utf-8")
    store = str(tmp_path / "store")
    tog("load", str(src), "--store", store, "--format", "tsv")
    question = "what is the residence of the writer of [book_a]"  # no relation is called writer

    def answer(*extra):
        r = tog("ask", question, "--store", store, "--json", *extra)
        assert r.exit_code == 0, r.output
        return json.loads(r.output)["answer"]

    assert answer() != ["town_x"]
    assert answer("--soft-match") == ["town_x"]  # writer ~ author
    assert tog("ask", question, "--store", store, "--pruner", "embedding").exit_code == 0
    run = json.loads(tog("runs", "show", "last", "--store", store, "--json").output)
    assert run["run"]["config"]["pruner"] == "embedding"


def test_the_llm_sees_the_paths_of_every_topic(tog, tmp_path, monkeypatch):
    from llm_server import StandInModel

    src, both = clubs(tmp_path)
    store = str(tmp_path / "store")
    tog("load", str(src), "--store", store, "--format", "tsv")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-standin-4711")
    monkeypatch.setenv("TOG_CACHE_DIR", str(tmp_path / "cache"))
    with StandInModel(mode="gpt4") as model:
        r = tog("ask", "which player of northfield_rovers was born in eastby", "--store", store,
                "--model", "openai/standin", "--api-base", model.api_base, "--no-cache", "--json")
        assert r.exit_code == 0, r.output
    judged = next(req["body"]["messages"] for req in model.requests
                  if req["body"]["messages"][0]["content"].startswith("You decide whether"))  # the first judge
    shown = [line.split(". ", 1)[1] for line in judged[-1]["content"].splitlines() if line[:1].isdigit()]
    # both topics' paths, the ones that meet at the player of the club born in the town among them
    assert f"northfield_rovers <- member of <- {both}" in shown and f"eastby <- born in <- {both}" in shown


def test_without_wordllama_the_local_model_is_one_clear_line(tog, tmp_path, monkeypatch):
    import sys

    from engine.alignment import _model
    from engine.embeddings import local_model, word_similarity

    src = tmp_path / "books.tsv"
    src.write_text(BOOKS, encoding="utf-8")
    store = str(tmp_path / "store")
    tog("load", str(src), "--store", store, "--format", "tsv")
    for cached in (local_model, word_similarity, _model):  # as in a new process
        cached.cache_clear()
    monkeypatch.setitem(sys.modules, "wordllama", None)  # as if it were not installed
    try:
        for extra in (("--pruner", "embedding"), ("--soft-match",)):
            r = tog("ask", "what is the residence of the writer of [book_a]", "--store", store, *extra)
            assert r.exit_code == 1 and no_traceback(r), r.output
            assert "pip install wordllama" in r.output
    finally:
        local_model.cache_clear()
        word_similarity.cache_clear()


def test_a_chain_rated_bad_loses_to_the_one_it_tied_with():
    from engine.learning import Example, train

    one, two = (("urn:tog:r:kq1", "out"),), (("urn:tog:r:kq3", "out"),)
    tied = [Example(("zz", "yy", "zz yy"), {one: 1.0, two: 1.0}, "zz yy @") for _ in range(10)]
    bad = [Example(("zz", "yy", "zz yy"), {}, "zz yy @", avoid={one: 1.0}) for _ in range(3)]

    def likeliest(examples):
        chains, slots = train(examples)
        probs = ChainModel(chains, slots).probabilities("zz yy [t]", ["t"])
        return max(probs, key=probs.get)

    assert likeliest(tied) == ("kq1",)  # a tie falls to the first chain
    assert likeliest(tied + bad) == ("kq3",)


def test_a_correction_made_for_a_run_teaches_its_answer(tog, tmp_path, harbour_files):
    kb, _ = harbour_files
    store = str(tmp_path / "store")
    tog("load", str(kb), "--store", store, "--format", "tsv")
    facts = [line.split("\t") for line in kb.read_text(encoding="utf-8").splitlines()]
    year = {s: o for s, r, o in facts if r == "kq4"}
    other = next(y for y in sorted(set(year.values())) if y != year["m_07"])
    assert tog("ask", "when was the skipper of [ship_07] born", "--store", store).exit_code == 0
    r = tog("correct", "--store", store, "--remove", f"m_07|kq4|{year['m_07']}", "--add", f"m_07|kq4|{other}",
            "--run", "last", "--reason", "the register says so")
    assert r.exit_code == 0, r.output
    learned = tmp_path / "c.toml"
    r = tog("learn", "--from-feedback", "--store", store, "--out", str(learned))
    assert r.exit_code == 0 and "1 corrections made for a run" in r.output, r.output
    question = "when was the skipper of [ship_30] born"
    r = tog("ask", question, "--store", store, "--json", "--relation-descriptions", str(learned))
    assert json.loads(r.output)["answer"] == [year["m_30"]]
