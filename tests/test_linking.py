"""Entity linking against the name index of a real store."""

from __future__ import annotations

import pytest
from conftest import RDFS_LABEL, fb, iri, load_into, write_nt

from engine.errors import QuestionError, UnknownEntityError
from engine.linking import bracketed, link


def ids(nodes):
    return [n.id for n in nodes]


@pytest.fixture
def names_kg(tmp_path):
    names = {"harbor": "Harbor", "night": "Night", "nightharbor": "Night Harbor", "it": "It",
             "paul": "Paul Author", "cora": "Cora Writer", "twin1": "Twin Peak", "twin2": "Twin Peak"}
    lines = [f'<{iri(k)}> <{RDFS_LABEL}> "{v}" .' for k, v in names.items()]
    lines += [f"<{iri(k)}> <{iri('rel')}> <{iri('hub')}> ." for k in names]
    g, _ = load_into(tmp_path / "store", write_nt(tmp_path / "names.nt", lines))
    return g.kg


def test_bracketed_mentions():
    assert bracketed("who directed [Quiz Game] and [ Night Harbor ] []") == ["Quiz Game", "Night Harbor"]
    assert bracketed("no brackets here") == []


def test_bracketed_mention_is_linked(store):
    nodes = link(store.kg, "who directed [Quiz Game]")
    assert [(n.id, n.name) for n in nodes] == [(iri("quiz"), "Quiz Game")]
    # normalised lookup: case and punctuation do not matter
    assert ids(link(store.kg, "who directed [quiz  GAME!]")) == [iri("quiz")]
    # a bracket wins over other names in the question
    assert ids(link(store.kg, "did Paul Author write [Night Harbor]")) == [iri("harbor")]


def test_two_bracketed_mentions(store):
    assert ids(link(store.kg, "films of [Paul Author] with [Cora Writer]")) == [iri("paul"), iri("cora")]


def test_topic_by_name(store):
    nodes = link(store.kg, "who directed the films written by him", topics=["Paul Author"])
    assert ids(nodes) == [iri("paul")]


@pytest.mark.parametrize("form", ["{}", "<{}>"])
def test_topic_by_iri(store, form):
    nodes = link(store.kg, "what is starring in it", topics=[form.format(fb("m.film1"))])
    assert [(n.id, n.name) for n in nodes] == [(fb("m.film1"), "Harbor Lights")]


def test_topic_overrides_brackets(store):
    assert ids(link(store.kg, "who directed [Quiz Game]", topics=["Night Harbor"])) == [iri("harbor")]


def test_ngrams_pick_the_longest_match(names_kg):
    assert ids(link(names_kg, "who directed night harbor")) == [iri("nightharbor")]
    assert ids(link(names_kg, "who directed Night Harbor?")) == [iri("nightharbor")]


def test_ngrams_find_every_non_overlapping_mention(names_kg):
    nodes = link(names_kg, "which films did paul author and cora writer make at night")
    assert set(ids(nodes)) == {iri("paul"), iri("cora"), iri("night")}


def test_ngrams_skip_stop_words(names_kg):
    # "It" is an entity, but a lone stop word is never taken for one
    assert ids(link(names_kg, "was it paul author")) == [iri("paul")]


def test_same_name_gives_every_entity(names_kg):
    assert set(ids(link(names_kg, "where is [Twin Peak]"))) == {iri("twin1"), iri("twin2")}


@pytest.mark.parametrize("question, topics", [
    ("who directed [No Such Film]", ()),
    ("who directed it", ("No Such Film",)),
    ("who directed it", ("http://example.org/store/nobody",)),
    ("who directed it", ("<http://example.org/store/nobody>",)),
    ("who directed it", ("Paul Author", "Nobody Known")),
])
def test_unknown_entity(store, question, topics):
    with pytest.raises(UnknownEntityError) as e:
        link(store.kg, question, topics)
    assert "unknown entity" in str(e.value)


def test_unknown_entity_error_names_the_mention(store):
    with pytest.raises(UnknownEntityError, match="No Such Film"):
        link(store.kg, "who directed [No Such Film]")


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_empty_question(store, question):
    with pytest.raises(QuestionError, match="empty"):
        link(store.kg, question)


def test_question_without_any_entity(store):
    """The error names both ways to give a topic: `ask --topic`, and a
    question file's topic_entities (an eval has no --topic)."""
    with pytest.raises(QuestionError, match="mark it like") as e:
        link(store.kg, "who directed the best film ever")
    assert "tog ask --topic" in str(e.value) and "topic_entities" in str(e.value)


def test_a_name_of_punctuation_only_is_linkable(tmp_path):
    lines = [f'<{iri("dollar")}> <{RDFS_LABEL}> "$" .', f'<{iri("bang")}> <{RDFS_LABEL}> "!!" .',
             f"<{iri('dollar')}> <{iri('rel')}> <{iri('bang')}> ."]
    g, (report,) = load_into(tmp_path / "store", write_nt(tmp_path / "p.nt", lines))
    assert report.names == 2
    assert ids(link(g.kg, "who directed [$]")) == [iri("dollar")]
    assert ids(link(g.kg, "what about [!!]")) == [iri("bang")]


def test_short_freebase_and_wikidata_ids_and_names_that_look_like_iris(tmp_path):
    from engine.linking import resolve

    label = "http://www.w3.org/2000/01/rdf-schema#label"
    lines = [f'<http://rdf.freebase.com/ns/m.0d05w3> <{label}> "Beijing" .',
             f'<http://www.wikidata.org/entity/Q42> <{label}> "Douglas Adams" .',
             f'<http://example.org/lily> <{label}> "<Lily>" .',
             '<http://rdf.freebase.com/ns/m.0d05w3> <http://example.org/near> <http://www.wikidata.org/entity/Q42> .',
             '<http://example.org/lily> <http://example.org/near> <http://www.wikidata.org/entity/Q42> .']
    store, _ = load_into(tmp_path / "s", write_nt(tmp_path / "kg.nt", lines))
    for spelling in ("m.0d05w3", "ns:m.0d05w3", "<http://rdf.freebase.com/ns/m.0d05w3>"):
        assert [n.name for n in resolve(store.kg, [spelling])] == ["Beijing"], spelling
    for spelling in ("Q42", "wd:Q42"):
        assert [n.id for n in resolve(store.kg, [spelling])] == ["http://www.wikidata.org/entity/Q42"]
    assert [n.id for n in resolve(store.kg, ["<Lily>"])] == ["http://example.org/lily"]  # a name, not an IRI
    with pytest.raises(UnknownEntityError):
        resolve(store.kg, ["Q43"])


def test_the_forms_a_question_writes_its_names_in(names_kg, monkeypatch):
    """What an endpoint (exact names only) looks up besides the keys: each
    span as written, and with a sentence's punctuation trimmed, but a name's
    own kept ("Quay Ahoy!", "(1995 film)"). A store with a name index never
    works them out."""
    from engine.linking import WrittenForms, written

    text = 'did "Night Harbor" beat Quay Ahoy! or Lantern (1995 film)?'
    forms = written(text, ["night harbor", "quay ahoy", "lantern 1995 film", "nowhere"])
    assert forms == {"night harbor": ['"Night Harbor"', "Night Harbor"], "quay ahoy": ["Quay Ahoy!", "Quay Ahoy"],
                     "lantern 1995 film": ["Lantern (1995 film)?", "Lantern (1995 film)"]}
    seen = []
    plain = names_kg.search_entities
    monkeypatch.setattr(names_kg, "search_entities", lambda keys, forms=None: seen.append(forms) or plain(keys, forms))
    assert ids(link(names_kg, "where is Night Harbor")) == [iri("nightharbor")]
    assert isinstance(seen[0], WrittenForms) and seen[0]._found is None  # never read by the embedded store
    assert seen[0]["night harbor"] == ["Night Harbor"]
