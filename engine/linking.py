"""Entity linking: find the question's topic entities in the name index.

A ``[bracketed]`` mention or a ``--topic`` is looked up directly (by IRI or
by name).  Otherwise every word n-gram of the question is looked up in one
batch and the longest matches that do not overlap win.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from engine.errors import CommonNameError, QuestionError, UnknownEntityError
from engine.graph import NAME_MATCHES, KnowledgeGraph, LazyMapping, Node, local_name, name_key, name_keys
from engine.text import STOPWORDS

MAX_NGRAM = 8
# how to give a question its topic, said in `ask` and in an eval's rows alike
TOPIC_HINT = "mark it like [Tom Hanks] or name it (`tog ask --topic`, or `topic_entities` in a question file)"
_BRACKET = re.compile(r"\[([^\]]+)\]")


def bracketed(question: str) -> list[str]:
    return [m.strip() for m in _BRACKET.findall(question) if m.strip()]


def _valid_iri(text: str) -> bool:
    import pyoxigraph as ox

    try:
        ox.NamedNode(text)
    except ValueError:
        return False
    return True


# The short ids people write for Freebase and Wikidata entities (as `tog extract` takes them).
_SHORT = ((re.compile(r"^(?:wd:)?(Q[1-9][0-9]*)$"), "http://www.wikidata.org/entity/"),
          (re.compile(r"^(?:ns:|fb:)?([mg]\.[0-9a-z_]+)$"), "http://rdf.freebase.com/ns/"))


def _short_iri(text: str) -> str | None:
    for pattern, namespace in _SHORT:
        m = pattern.match(text)
        if m:
            return namespace + m.group(1)
    return None


def resolve(kg: KnowledgeGraph, names: Sequence[str]) -> list[Node]:
    """Nodes for explicit topics: IRIs (``<...>`` or with a scheme), short
    Freebase / Wikidata ids (``m.0d05w3``, ``ns:m.0d05w3``, ``Q42``,
    ``wd:Q42``) or names; a text that is not an entity of the KG as an IRI
    is looked up as a name (``<Lily>`` may be a name).

    Raises :class:`UnknownEntityError` naming the first one not in the KG,
    :class:`CommonNameError` for a name more than NAME_MATCHES entities share.
    """
    out: list[Node] = []
    iris = {}
    for name in names:
        iri = name[1:-1] if name.startswith("<") and name.endswith(">") else name
        short = _short_iri(iri)
        if short is not None:
            iris[name] = short
        elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$", iri) and _valid_iri(iri):
            iris[name] = iri
    # one batched lookup; a backend may fetch the topics' relations with it (topic_labels)
    labels = kg.topic_labels(list(dict.fromkeys(iris.values()))) if iris else {}
    by_iri: dict[str, Node] = {}
    for name, found_iri in iris.items():
        label = labels.get(found_iri)  # a named entity is in the KG: no need to ask
        if label is not None or kg.has_entity(found_iri):
            by_iri[name] = Node(found_iri, label if label is not None else local_name(found_iri))
    # the rest are names (a text in angle brackets too, when it is no entity's IRI): one lookup
    keys = {n: name_key(n) for n in names if n not in by_iri}
    forms: dict[str, list[str]] = {}
    for n, k in keys.items():
        forms.setdefault(k, []).append(n.strip())
    found = kg.search_entities([k for k in dict.fromkeys(keys.values()) if k], forms) if keys else {}
    for name in names:
        if name in by_iri:
            out.append(by_iri[name])
            continue
        matches = found.get(keys.get(name, ""), [])
        if not matches:
            raise UnknownEntityError(f"unknown entity {name!r}: no entity with that name or IRI in the store")
        if len(matches) > NAME_MATCHES:
            raise CommonNameError(f"{name!r} names more than {NAME_MATCHES:,} entities of the store: too common to "
                                  f"stand for one; give the one you mean by its IRI (`tog entity` lists some)", matches)
        out.extend(matches)
    return _unique(out)


def link(kg: KnowledgeGraph, question: str, topics: Sequence[str] = ()) -> list[Node]:
    """Topic entities for ``question``.

    Raises :class:`QuestionError` for an empty question or one where no
    entity is found, :class:`UnknownEntityError` for a named topic that is
    not in the KG.
    """
    if not question or not question.strip():
        raise QuestionError("the question is empty")
    if topics:
        return resolve(kg, topics)
    marked = bracketed(question)
    if marked:
        return resolve(kg, marked)
    tokens = name_key(question).split()
    spans: dict[str, tuple[int, int]] = {}
    for n in range(min(MAX_NGRAM, len(tokens)), 0, -1):
        for i in range(len(tokens) - n + 1):
            gram = tokens[i:i + n]
            if all(t in STOPWORDS for t in gram):
                continue
            spans.setdefault(" ".join(gram), (i, i + n))
    found = kg.search_entities(list(spans), WrittenForms(question, spans))
    taken: set[int] = set()
    out: list[Node] = []
    common: list[str] = []  # names too many entities share to start from (their words are taken all the same)
    for key, (a, b) in sorted(spans.items(), key=lambda kv: (-(kv[1][1] - kv[1][0]), kv[1][0])):
        if key in found and not taken.intersection(range(a, b)):
            taken.update(range(a, b))
            if len(found[key]) > NAME_MATCHES:
                common.append(key)
            else:
                out.extend(found[key])
    if not out:
        why = f" ({common[0]!r} names more than {NAME_MATCHES:,} entities: too common to start from)" if common else ""
        raise QuestionError(
            f"found no entity of the store in the question{why}; {TOPIC_HINT}")
    return _unique(out)


_TRAILING = " \t?!.,;:\"'"  # what may end a span of a sentence without being part of a name


def written(text: str, keys: Iterable[str]) -> dict[str, list[str]]:
    """The spans of ``text`` as written (up to MAX_NGRAM words split at
    white space; each also with the punctuation a sentence puts around a
    name trimmed), by their name key, for the ``keys`` wanted: what a
    backend that can only match names exactly (an endpoint) looks for
    besides the keys, so that "Lanterns of the Old Quay" is found as written."""
    wanted = set(keys)
    words = text.split()
    spans = [" ".join(words[i:i + n]) for n in range(1, min(MAX_NGRAM, len(words)) + 1)
             for i in range(len(words) - n + 1)]
    spans = list(dict.fromkeys(form for span in spans for form in (span, span.strip(_TRAILING)) if form))
    out: dict[str, list[str]] = {}
    for span, key in zip(spans, name_keys(spans)):
        if key in wanted:
            out.setdefault(key, []).append(span)
    return out


class WrittenForms(LazyMapping[list[str]]):
    """``written(text, keys)``, worked out when first read: only a backend
    that matches exact names reads it (0.3 ms for a question of 28 words)."""

    def __init__(self, text: str, keys: Iterable[str]) -> None:
        wanted = list(keys)
        super().__init__(lambda: written(text, wanted))


def _unique(nodes: list[Node]) -> list[Node]:
    seen: dict[str, Node] = {}
    for n in nodes:
        seen.setdefault(n.id, n)
    return list(seen.values())


def suggestions(kg: KnowledgeGraph, text: str, most: int = 5) -> list[Node]:
    """Entities named by a part of ``text`` (its longest word n-grams first):
    what a "did you mean" can offer without a fuzzy index."""
    tokens = name_key(text).split()
    grams = [" ".join(tokens[i:i + n]) for n in range(len(tokens) - 1, 0, -1) for i in range(len(tokens) - n + 1)]
    grams = [g for g in dict.fromkeys(grams) if not all(t in STOPWORDS for t in g.split())]
    if not grams:
        return []
    found = kg.search_entities(grams, WrittenForms(text, grams))
    out: list[Node] = []
    for g in grams:
        out.extend(found.get(g, []))
    return _unique(out)[:most]
