"""Word handling for the offline scorers: tokens, a light English stemmer,
stop words, and the question with its topic mentions cut out."""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = frozenset("""
a an the of in on at to for from by with and or as is are was were be been being
do does did done has have had having what which who whom whose when where why how
that this these those it its their there here than then so such also ever
can could will would shall should may might must i me my you your he him his she her
we us our they them one ones same other another any some all each both only
about into over under after before between through during
""".split())

# Irregular English forms that a suffix stemmer cannot join to their lemma.
IRREGULAR = {
    # verb and noun forms that share a lemma but no suffix
    "wrote": "write", "written": "write", "writer": "write", "writers": "write",
    "spoke": "speak", "spoken": "speak", "made": "make", "making": "make",
    "sang": "sing", "sung": "sing", "won": "win", "led": "lead", "born": "birth",
    "died": "death", "dead": "death", "die": "death", "children": "child",
    "men": "man", "women": "woman", "people": "person",
    "starring": "star", "starred": "star", "stars": "star",
    "actor": "act", "actors": "act", "actress": "act", "actresses": "act",
    "director": "direct", "directors": "direct",
}


@lru_cache(maxsize=1 << 16)  # the same words come back in every candidate's text
def stem(word: str) -> str:
    """A small, predictable suffix stemmer (plurals, -ed, -ing, -er, -ly).

    Both sides of every comparison go through it, so it only has to map the
    forms of one word to one key, not to a dictionary lemma.
    """
    w = word.lower()
    if w in IRREGULAR:
        return _final(IRREGULAR[w])
    if len(w) <= 3:
        return w
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("ers", ""),
                         ("er", ""), ("ly", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and w.endswith(("ss", "us", "is")):
                break
            w = w[: len(w) - len(suffix)] + repl
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # starr -> star, stopp -> stop
    return _final(IRREGULAR.get(w, w))


def _final(w: str) -> str:
    """Drop a final silent e so that release / released / releases meet."""
    return w[:-1] if len(w) > 4 and w.endswith("e") else w


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


@lru_cache(maxsize=65536)
def terms(text: str) -> tuple[str, ...]:
    """Stemmed content words of ``text`` (stop words removed), in order."""
    return tuple(stem(w) for w in words(text) if len(w) > 1 and w not in STOPWORDS)


_BRACKET = re.compile(r"\[[^\]]*\]")


def strip_mentions(question: str, mentions: list[str], placeholder: str = " ") -> str:
    """The question with ``[bracketed]`` spans and the topic names replaced
    by ``placeholder``."""
    text = _BRACKET.sub(placeholder, question)
    low = text.lower()
    for m in sorted(mentions, key=len, reverse=True):
        if not m:
            continue
        i = low.find(m.lower())
        if i >= 0:
            text = text[:i] + placeholder + text[i + len(m):]
            low = text.lower()
    return text


_FOCUS = re.compile(
    r"\b(?:which|what)\s+(?:(?:is|are|was|were)\s+(?:the\s+)?)?(?:(kind|type|sort)\s+of|([a-z]+)(?:\s+([a-z]+))?)\b",
    re.I)
# Nouns that ask for no particular kind of thing.
GENERIC_NOUNS = frozenset("""
person people persons man woman someone somebody thing things one ones word words term terms
topic topics name names entity entities
""".split())


def focus_terms(question: str) -> frozenset[str]:
    """The kind of thing a ``which X`` / ``what X`` question asks for, as the
    stems of the (at most two) content words after the question word: an
    answer fits when it is any of them ("the primary language" -> {primari,
    languag}; "which screenwriter wrote" -> {screenwrit, wrote}).  Empty when
    the question names no such thing ("who ...", "what is ...", "what kind
    of ...", "which person ...")."""
    text = _BRACKET.sub(" ", question)
    for m in _FOCUS.finditer(text):
        if m.group(1):
            return frozenset()
        found = []
        for word in (m.group(2), m.group(3)):
            if word is None or word.lower() in STOPWORDS or len(word) < 3:
                break
            found.append(word.lower())
        if not found:
            continue
        if found[0] in GENERIC_NOUNS:
            return frozenset()
        return frozenset(stem(w) for w in found)
    return frozenset()


# C0 and C1 codes, and the bidirectional overrides and isolates (U+202A-E, U+2066-9), which reorder
# what a terminal shows after them ("Trojan Source")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    return f"\\u{ord(m.group()):04x}"


def printable(text: str) -> str:
    """``text`` with every control character (newlines, escape sequences,
    carriage returns, C1 codes, bidi overrides) written as ``\\uXXXX``: a name
    from the data can neither move the cursor, retitle the terminal, reorder
    what follows it nor forge a line."""
    return _CONTROL.sub(_escape, text)


def printable_lines(text: str) -> str:
    """Like ``printable`` but keeps the line breaks: for output the program
    itself laid out (values in it were escaped where they were put in)."""
    return _CONTROL_BUT_NEWLINE.sub(_escape, text)


_SECRET_NAMES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_PASS", "_CREDENTIALS")


def known_secrets(extra: tuple[str, ...] = ()) -> list[str]:
    """Credentials this process knows: environment variables named like keys,
    tokens or passwords (what litellm and the Neo4j settings read), and any
    ``extra`` ones (an endpoint's user:password or query values)."""
    import os

    found = [v for k, v in os.environ.items() if k.upper().endswith(_SECRET_NAMES) and len(v) >= 6]
    found += [x for x in extra if x and len(x) >= 4]
    return sorted(set(found), key=len, reverse=True)


_USERINFO = re.compile(r"//[^/@]*@")  # the user (and password) of an address: //USER:PASSWORD@HOST


def without_userinfo(address: str) -> str:
    """``address`` (a URL, or what was meant as one) without the user and
    password it may carry: what a message may show of it."""
    return _USERINFO.sub("//", address)


def redact(text: str, extra: tuple[str, ...] = ()) -> str:
    """``text`` with every known credential replaced by ``***``."""
    for secret in known_secrets(extra):
        if secret in text:
            text = text.replace(secret, "***")
    return text
