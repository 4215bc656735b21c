"""Relation description files: other names for a KG's relations, read by the
offline scorers (``engine/descriptions.py``), from the library and from
``tog ask`` / ``tog eval``."""

from __future__ import annotations

import json

import pytest
from conftest import load_into
from test_cli import assert_clean_error

from engine.alignment import QuestionModel
from engine.descriptions import DescriptionError, Descriptions
from engine.graph import RELATION_NS, Relation
from engine.pruning import get_pruner
from engine.reasoning import get_reasoner
from engine.runs import ask
from engine.search import SearchConfig

# A family KG in the delimited form (relations become urn:tog:r:NAME).
FAMILY = """\
ann_example\tspouse\tbob_example
ann_example\tnationality\tnorway
bob_example\tnationality\tsweden
bob_example\tgender\tmale
carl_example\tgender\tmale
dora_example\tparents\tcarl_example
dora_example\tnationality\tdenmark
carl_example\tnationality\ticeland
"""

DESCRIPTIONS = """\
[relations]
spouse = "husband, wife, other half"
nationality = "nation, country"

[relations.parents]
aliases = ["father", "mother"]
inverse = ["son", "daughter", "child"]
tail = "person"
"""


@pytest.fixture
def family(tmp_path):
    src = tmp_path / "family.tsv"
    src.write_text(FAMILY, encoding="utf-8")
    kg, _ = load_into(tmp_path / "family", src, fmt="tsv")
    return kg


@pytest.fixture
def described(tmp_path):
    path = tmp_path / "family.toml"
    path.write_text(DESCRIPTIONS, encoding="utf-8")
    return path


def answer(kg, question, topic, descriptions=None):
    r = ask(kg, question, get_pruner("hybrid"), get_reasoner("offline"), SearchConfig(), [topic],
            descriptions=descriptions)
    return r.result.answer.names


def test_other_names_let_a_question_find_its_relations(family, described):
    question = "what is the nation of ann_example 's other half ?"
    # without descriptions nothing in the KG is called "nation" or "other half"
    assert answer(family, question, "ann_example") != ["sweden"]
    assert answer(family, question, "ann_example", Descriptions.load(described)) == ["sweden"]


def test_inverse_names_read_a_relation_backwards(family, described):
    # only "dora parents carl" is in the KG: Carl's daughter is that edge read backwards
    question = "what is the nationality of carl_example 's daughter ?"
    assert answer(family, question, "carl_example") != ["denmark"]
    assert answer(family, question, "carl_example", Descriptions.load(described)) == ["denmark"]


def test_names_and_kinds_per_direction(described):
    d = Descriptions.load(described)
    out = d.describe(Relation(RELATION_NS + "parents", "out"))
    back = d.describe(Relation(RELATION_NS + "parents", "in"))
    assert out.names == ("parents", "father", "mother")
    assert back.names == ("parents", "son", "daughter", "child")
    assert d.describe(Relation(RELATION_NS + "spouse", "in")).names == ("spouse", "husband", "wife", "other half")
    undescribed = Relation(RELATION_NS + "gender")
    assert d.describe(undescribed).names == ("gender",)
    # "which person": the tail kind says what the relation leads to
    model = QuestionModel.of("which person is the father of [X]", ["X"])
    assert not model.focus  # "person" names no kind
    model = QuestionModel.of("which country is [X] from", ["X"])
    nationality = Relation(RELATION_NS + "citizen_of")
    assert not model.kind_fits(nationality)
    assert model.kind_fits(Descriptions({"citizen_of": d.notes["nationality"].__class__(tail="country")})
                           .describe(nationality))


def test_words_that_start_with_co_keep_their_meaning():
    """Only "co-" (or a solid "costarred", "cowrote") marks something shared:
    "country", "coached" and "composer" are words of their own."""
    for question, relation in [("which country is [X] in", "country"), ("who coached [X]", "coached_by"),
                               ("who is the composer of [X]", "composed_by")]:
        model = QuestionModel.of(question, ["X"])
        assert model.utility([Relation(RELATION_NS + relation)]) >= 1, question  # the word is explained
    for question, shared in [("who co-wrote [X]", "writ"), ("who cowrote [X]", "writ"),
                             ("which actors costarred with [X]", "star")]:
        assert shared in QuestionModel.of(question, ["X"]).shared, question


def test_each_relation_explains_one_mention(described):
    """Two different names of one relation ("husband", "wife") are two hops."""
    d = Descriptions.load(described)
    spouse = d.describe(Relation(RELATION_NS + "spouse"))
    model = QuestionModel.of("who is the husband of ann_example 's wife ?", ["ann_example"])
    assert model.utility([spouse]) == 1
    assert model.utility([spouse, spouse]) == 2
    # the same word twice is one mention across a relative pronoun, two across "'s"
    assert len(QuestionModel.of("who is the director that directed [Y]", ["Y"]).occurrences) == 1
    assert len(QuestionModel.of("who is [Y] 's dad 's dad", ["Y"]).occurrences) == 2


def test_a_chain_explains_the_same_whatever_was_scored_before(described):
    """A question's model remembers what each chain's beginning explained and
    builds on it; a chain (told apart by its relations' names, not only their
    ids) must score as it does in a model that has seen nothing."""
    from engine.alignment import _model

    spouse = Descriptions.load(described).describe(Relation(RELATION_NS + "spouse"))
    husband = Relation(RELATION_NS + "spouse", label="husband")
    married = Relation(RELATION_NS + "spouse", label="married to")
    born = Relation(RELATION_NS + "born_in")
    chains = [[spouse], [spouse, spouse], [husband], [husband, spouse], [married, husband], [married, spouse, born],
              [husband, spouse, born], [born, husband], [married]]
    question, topics = "who is the husband of ann_example 's wife born in ?", ["ann_example"]

    def seen(model, chain):
        return model.claims(chain), model.utility(chain), model.score(chain), model.explained(chain)

    fresh = []
    for chain in chains:
        _model.cache_clear()
        fresh.append(seen(QuestionModel.of(question, topics), chain))
    for order in (chains, chains[::-1]):
        _model.cache_clear()
        model = QuestionModel.of(question, topics)
        assert [seen(model, c) for c in order] == (fresh if order is chains else fresh[::-1])
    assert fresh[2][0] == [[0]] and fresh[-1][0] == [[]]  # names, not ids, tell them apart
    assert fresh[1][0] == [[0], [1]]  # the second hop explains the mention the first left


@pytest.mark.parametrize("text, message", [
    ("relations = 3", "no [relations] table"),
    ("[relations]\nspouse = 3", "must be a text or a table"),
    ("[relations.spouse]\nalias = 'wife'", "unknown field(s) alias"),
    ("[relations.spouse]\naliases = [1, 2]", "must be a text or a list of texts"),
    ("[relations.spouse]\ntail = ['a']", "tail of relation 'spouse' must be a text"),
    ("[relations\n", "cannot read the relation description file"),
])
def test_bad_files_are_named_with_the_reason(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DescriptionError) as e:
        Descriptions.load(path)
    assert message in str(e.value) and str(path) in str(e.value)


def test_cli_reads_the_file_and_records_it(tmp_path, family, described, tog):
    store = str(tmp_path / "family")
    family.close()
    question = "what is the nation of ann_example 's other half ?"
    r = tog("ask", question, "--topic", "ann_example", "--store", store,
            "--relation-descriptions", described, "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["answer"] == ["sweden"]
    r = tog("runs", "show", data["run"], "--json", "--store", store)
    assert json.loads(r.output)["run"]["config"]["relation_descriptions"] == str(described)
    # from tog.toml too
    (tmp_path / "tog.toml").write_text(f'relation_descriptions = "{described}"\n', encoding="utf-8")
    r = tog("--config", tmp_path / "tog.toml", "ask", question, "--topic", "ann_example", "--store", store, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["answer"] == ["sweden"]


def test_cli_missing_file_is_one_clear_line(tmp_path, family, tog):
    store = str(tmp_path / "family")
    family.close()
    r = tog("ask", "what is the nation of ann_example ?", "--topic", "ann_example", "--store", store,
            "--relation-descriptions", tmp_path / "none.toml")
    assert_clean_error(r, "relation description file not found", "none.toml")


def test_reading_order_and_focus_ignore_the_topic():
    # "the birthplace of X's wife": the possessive after the topic is read first
    spouse, born = Relation(RELATION_NS + "spouse"), Relation(RELATION_NS + "place_of_birth")
    model = QuestionModel.of("what is the place of birth of ann_example 's spouse ?", ["ann_example"])
    assert model.order([spouse, born]) == 1.0
    assert model.order([born, spouse]) < 1.0
    # "what is the X's ..." names no kind: the topic is not the thing asked for
    assert not QuestionModel.of("what is the claudius 's father ?", ["claudius"]).focus
    assert QuestionModel.of("which nationality is claudius 's father ?", ["claudius"]).focus
