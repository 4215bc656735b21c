"""Tolerant, safe readers for LLM replies.

Real models drift from the format they are asked for: bold or bulleted
lines, scores out of 10 or in per cent, a candidate named by its text
rather than its number, JSON, markdown tables, ToG's own ``{relation
(Score: 0.4)}`` and ``{Yes}``, a preface and an explanation around the
lines that matter. The readers here accept all of that, and stay safe:

- a reply may only pick from what it was shown: candidate numbers in range,
  or a candidate's text matched exactly or in a normalised form (case,
  spacing, punctuation, arrows); anything else is ignored;
- ``None`` means nothing could be read at all (the caller may ask once
  more, then falls back);
- no reply text ever reaches a query: what comes out are numbers, booleans
  and names that are matched against the knowledge graph's own index.

A structured reply (JSON from a schema-constrained call) is read by the same
functions: JSON is looked for first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence

_NUM = r"(\d+(?:\.\d+)?|\.\d+)"
# a score: 0.8, .8, 80%, 8/10, 0.8/1
_SCORE = re.compile(_NUM + r"\s*(%|/\s*(?:10|100|1)\b)?")
_MARKUP = re.compile(r"\*\*|__|`|(?<!\w)\*(?!\s)|(?<=\S)\*(?!\w)")
_BULLET = re.compile(r"^\s*(?:[-*•+>]\s+)+")
_INDEXED = re.compile(r"^(?:candidate|option|path|no\.?|#)?\s*[\[(#]?\s*(\d+)\s*[\])]?\s*(?:[.:=)–—-]|\s(?=\d|\.\d))\s*(.*)$",
                      re.I)
_TOG_SCORE = re.compile(r"\{\s*([^{}]*?)\s*\(\s*score\s*[:=]\s*" + _NUM + r"\s*\)\s*\}", re.I)
_LABELLED_SCORE = re.compile(r"(?:\bscore\b|\brelevance\b|\bprobability\b)?\s*[:=]\s*" + _NUM
                             + r"\s*(%|/\s*(?:10|100|1)\b)?", re.I)
_ARROWS = re.compile(r"\s*(?:->|→|<-|←|=>|—>|-)\s*")
_WORDS = re.compile(r"[^\w]+")


def _norm(text: str) -> str:
    """Candidate text in a form that survives a model's retyping."""
    return " ".join(_WORDS.sub(" ", _ARROWS.sub(" ", text.replace("(of)", " "))).casefold().split())


def _strip_markup(line: str) -> str:
    return _BULLET.sub("", _MARKUP.sub("", line)).strip()


def _json_values(reply: str) -> Iterator[object]:
    """Every JSON object or array in ``reply`` (a fenced block, or inline)."""
    decoder = json.JSONDecoder()
    i, n = 0, len(reply)
    while i < n:
        j = min((k for k in (reply.find("{", i), reply.find("[", i)) if k >= 0), default=-1)
        if j < 0:
            return
        try:
            value, end = decoder.raw_decode(reply, j)
        except ValueError:
            i = j + 1
            continue
        yield value
        i = end


def _score_value(number: str, unit: str | None) -> tuple[float, str]:
    """(value, scale): scale is "1" for a plain number, "%" or "10" when said."""
    value = float(number)
    unit = (unit or "").replace(" ", "")
    if unit == "%":
        return value / 100.0, "1"
    if unit == "/100":
        return value / 100.0, "1"
    if unit == "/10":
        return value / 10.0, "1"
    return value, "?"


def _rescale(raw: list[tuple[int, float, str]]) -> dict[int, float]:
    """Scores in [0, 1]. Plain numbers that are all whole and go above 1 are
    read as out of 10 (or out of 100 when some go above 10); otherwise a
    plain number above 1 is dropped."""
    plain = [v for _, v, s in raw if s == "?"]
    top = max(plain, default=0.0)
    divisor: float | None = 1.0
    if top > 1.0:
        whole = all(v == int(v) for v in plain)
        divisor = (10.0 if top <= 10.0 else 100.0 if top <= 100.0 else None) if whole else 1.0
    out: dict[int, float] = {}
    for i, v, s in raw:
        if s == "?":
            if divisor is None:
                continue
            v = v / divisor
        if 0.0 <= v <= 1.0:
            out[i] = max(out.get(i, 0.0), round(v, 6))
    return out


class _Candidates:
    """Finds a candidate by number (1-based, in range) or by its text."""

    def __init__(self, candidates: Sequence[str]) -> None:
        self.n = len(candidates)
        self.by_text: dict[str, int] = {}
        tails: dict[str, list[int]] = {}
        for i, c in enumerate(candidates):
            self.by_text.setdefault(_norm(c), i)
            last = re.split(r"->|→|←|<-", c)[-1]
            tails.setdefault(_norm(last), []).append(i)
        # a candidate's last step stands for it only when no other ends the same way
        for key, found in tails.items():
            if len(found) == 1 and key:
                self.by_text.setdefault(key, found[0])

    def number(self, n: int) -> int | None:
        return n - 1 if 1 <= n <= self.n else None

    def text(self, text: str) -> int | None:
        key = _norm(re.sub(r"^\s*\d+\s*[.)]\s*", "", text))
        return self.by_text.get(key) if key else None


def _first_score(text: str) -> tuple[float, str] | None:
    """The score in the rest of a line after the candidate's number."""
    text = text.strip()
    m = _SCORE.match(text)
    if m:  # "0.8", "80%", "8/10", "0.8 (directed by)"
        return _score_value(m.group(1), m.group(2))
    labelled = list(_LABELLED_SCORE.finditer(text))
    if labelled:  # "directed by: 0.8", "score = 0.8"
        m = labelled[-1]
        return _score_value(m.group(1), m.group(2))
    m = re.search(_NUM + r"\s*(%|/\s*(?:10|100|1)\b)?\s*[.)]*\s*$", text)
    if m:  # "... so I give it 0.9"
        return _score_value(m.group(1), m.group(2))
    return None


def _scores_from_json(value: object, found: _Candidates) -> list[tuple[int, float, str]]:
    out: list[tuple[int, float, str]] = []

    def put(key: object, score: object) -> None:
        if isinstance(score, bool) or not isinstance(score, (int, float, str)):
            return
        try:
            v = float(str(score).rstrip("%")) / (100.0 if str(score).endswith("%") else 1.0)
        except ValueError:
            return
        index = None
        if isinstance(key, int) and not isinstance(key, bool):
            index = found.number(key)
        elif isinstance(key, str):
            index = found.number(int(key)) if key.strip().isdigit() else found.text(key)
        if index is not None:
            out.append((index, v, "?"))

    def walk(v: object) -> None:
        if isinstance(v, dict):
            keys = {k.lower(): k for k in v if isinstance(k, str)}
            score_key = next((keys[k] for k in ("score", "relevance", "probability", "value") if k in keys), None)
            id_key = next((keys[k] for k in ("candidate", "id", "number", "index", "n", "option", "relation",
                                             "entity", "name", "text") if k in keys), None)
            if score_key is not None and id_key is not None:
                put(v[id_key], v[score_key])
                return
            for k, item in v.items():
                if isinstance(item, (dict, list)):
                    walk(item)
                else:
                    put(k, item)
        elif isinstance(v, list):
            for item in v:
                walk(item)

    walk(value)
    return out


def parse_scores(reply: str, candidates: Sequence[str]) -> dict[int, float] | None:
    """{candidate index (0-based): score in [0, 1]}; None when nothing could be read.

    Reads ``1: 0.8`` and its variants (bold, bullets, ``#1``, ``(1)``,
    ``1. text: 0.8``, ``1: 0.8 (text)``), ``text: 0.8`` for a shown
    candidate's text, scores out of 10 or in per cent, JSON objects and
    lists, markdown tables and ToG's ``{text (Score: 0.8)}``."""
    found = _Candidates(candidates)
    for value in _json_values(reply):
        from_json = _scores_from_json(value, found)
        if from_json:
            return _rescale(from_json) or None
    raw: list[tuple[int, float, str]] = []

    def put(index: int | None, got: tuple[float, str] | None) -> None:
        if index is not None and got is not None:
            raw.append((index, *got))

    for tog in _TOG_SCORE.finditer(reply):
        put(found.text(tog.group(1)), _score_value(tog.group(2), None))
    if raw:
        return _rescale(raw) or None
    for line in reply.splitlines():
        if line.count("|") >= 2:  # a markdown table row
            cells = [c.strip() for c in _strip_markup(line).strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                continue
            at = next((k for k, c in enumerate(cells) if c.isdigit() and found.number(int(c)) is not None), None)
            index = found.number(int(cells[at])) if at is not None else None
            if index is None:
                index = next((found.text(c) for c in cells if found.text(c) is not None), None)
            scores = [s for k, c in enumerate(cells) if k != at and (s := _cell_score(c)) is not None]
            put(index, scores[-1] if scores else None)
            continue
        text = _strip_markup(line)
        if not text:
            continue
        indexed = _INDEXED.match(text)
        if indexed and found.number(int(indexed.group(1))) is not None:
            put(found.number(int(indexed.group(1))), _first_score(indexed.group(2)))
            continue
        m = re.match(r"^(.+?)\s*(?:[:=]|\(\s*score\s*[:=]?)\s*" + _NUM + r"\s*(%|/\s*(?:10|100|1)\b)?\s*\)?\s*[.,]?$",
                     text, re.I)
        if m:
            put(found.text(m.group(1).strip().strip("{}\"'")), _score_value(m.group(2), m.group(3)))
    return _rescale(raw) or None


def _cell_score(cell: str) -> tuple[float, str] | None:
    m = re.fullmatch(_NUM + r"\s*(%|/\s*(?:10|100|1))?", cell.strip())
    return _score_value(m.group(1), m.group(2)) if m else None


_VERDICT_LABEL = re.compile(r"\b(?:sufficient|enough|answerable|verdict|decision)\s*\??\s*[:=]\s*\{?\s*(yes|no|true|false)\b",
                            re.I)
_BRACED = re.compile(r"\{\s*(yes|no)\s*\}", re.I)
_LEADING = re.compile(r"^\W*(yes|no)\b(?!\s+or\b)", re.I)
_PHRASE = re.compile(r"\b(not sufficient|insufficient|not enough|cannot be answered|can't be answered|"
                     r"are sufficient|is sufficient|are enough|is enough|can be answered)\b", re.I)
_ALTERNATIVE = re.compile(r"\(\s*or\b[^)]*\)", re.I)
_CONFIDENCE = re.compile(r"\bconfidence\s*(?:level|score)?\s*(?:is|of|[:=])?\s*" + _NUM + r"\s*(%|/\s*(?:10|100|1)\b)?", re.I)


def _yes(word: str) -> bool:
    return word.lower() in ("yes", "true")


def parse_judgement(reply: str) -> float | None:
    """The judge's probability that the paths suffice: its confidence when it
    says yes, one minus it when it says no (1.0 / 0.0 without a confidence).
    The verdict is the first decisive one: a ``sufficient`` field (JSON), a
    ``Sufficient: yes`` line (a copied ``(or: ...)`` alternative is not
    read), ToG's ``{Yes}``, a reply that opens with yes or no, or a phrase
    such as "not enough". None when there is no verdict."""
    verdict: bool | None = None
    confidence: float | None = None
    for value in _json_values(reply):
        if isinstance(value, dict):
            keys = {k.lower(): k for k in value if isinstance(k, str)}
            for k in ("sufficient", "enough", "answerable", "verdict"):
                if k in keys:
                    v = value[keys[k]]
                    if isinstance(v, bool):
                        verdict = v
                    elif isinstance(v, str) and v.strip().lower() in ("yes", "no", "true", "false"):
                        verdict = _yes(v.strip())
                    break
            if "confidence" in keys and isinstance(value[keys["confidence"]], (int, float)) \
                    and not isinstance(value[keys["confidence"]], bool):
                confidence = float(value[keys["confidence"]])
            if verdict is not None:
                break
    text = _ALTERNATIVE.sub(" ", _MARKUP.sub("", reply))
    if verdict is None:
        hits = [(m.start(), _yes(m.group(1))) for m in _VERDICT_LABEL.finditer(text)]
        hits += [(m.start(), _yes(m.group(1))) for m in _BRACED.finditer(text)]
        if not hits:
            m = _LEADING.match(text)
            if m:
                hits.append((0, _yes(m.group(1))))
        if not hits:
            hits += [(m.start(), not m.group(1).lower().startswith(("not", "insuff", "cannot", "can't")))
                     for m in _PHRASE.finditer(text)]
        if not hits:
            words = {w.lower() for w in re.findall(r"\b(yes|no)\b", text, re.I)}
            if len(words) != 1:
                return None
            hits.append((0, words == {"yes"}))
        verdict = min(hits)[1]
    if confidence is None:
        m = _CONFIDENCE.search(text)
        if m:
            value, scale = _score_value(m.group(1), m.group(2))
            confidence = value / 10.0 if scale == "?" and 1.0 < value <= 10.0 else \
                value / 100.0 if scale == "?" and 10.0 < value <= 100.0 else value
    if confidence is None or not 0.0 <= confidence <= 1.0:
        confidence = 1.0
    return round(confidence if verdict else 1.0 - confidence, 6)


_ANSWER = re.compile(r"^\s*(?:final\s+)?answers?\s*(?:\(s\))?\s*[:=]\s*(.*)$", re.I | re.M)
_ANSWER_IS = re.compile(r"\b(?:the\s+)?answers?\s+(?:is|are)\s*:?\s*(.+?)(?:\.\s|\.?$)", re.I | re.M)
_PATHS = re.compile(r"^\s*\(?\s*(?:paths?|sources?|evidence)(?:\s+used)?\s*[:=]\s*(.*?)\)?\s*$", re.I | re.M)
_NO_ANSWER = {"none", "unknown", "n/a", "na", "no answer", "nothing", "not known", "i don't know",
              "i do not know", "cannot be determined"}


def _names(text: str, known: Sequence[str]) -> list[str]:
    """Answer names from one answer field: ``|``-separated as asked, or a
    list written with commas / "and" / semicolons when its parts are names
    the paths reached (or the whole is not one of them)."""
    text = text.strip().strip("*").strip()
    if "|" in text:
        parts = text.split("|")
    else:
        whole = _norm(text.rstrip("."))
        known_keys = {_norm(k) for k in known}
        parts = [text]
        if whole not in known_keys and re.search(r",|;|\band\b", text):
            split = [p for p in re.split(r"\s*(?:,|;|\band\b)\s*", text.rstrip(".")) if p.strip()]
            if not known_keys or sum(_norm(p) in known_keys for p in split) * 2 >= len(split):
                parts = split
    out = []
    exact = {k.casefold() for k in known}
    for p in parts:
        name = p.strip().strip("*{}[]\"'").strip()
        if name.casefold() not in exact:
            name = name.rstrip(".").strip()  # a sentence's full stop, unless it belongs to a name reached
        if name and name.casefold() not in _NO_ANSWER:
            out.append(name)
    return list(dict.fromkeys(out))


def parse_answer(reply: str, shown: int, known: Sequence[str] = ()) -> tuple[list[str], list[int]] | None:
    """(answer names, cited path indexes (0-based, only of the ``shown``
    paths)). ``known`` are the names the shown paths end at (they decide how
    a comma-separated list is split). Reads ``Answer:`` / ``Paths:`` lines,
    a JSON object with ``answers`` (or ``answer``) and ``paths``, ToG's
    ``{name}``, and "the answer is ...". None when there is no answer."""
    names: list[str] | None = None
    cited_numbers: list[object] = []
    for value in _json_values(reply):
        if isinstance(value, dict):
            keys = {k.lower(): k for k in value if isinstance(k, str)}
            key = next((keys[k] for k in ("answers", "answer", "names") if k in keys), None)
            if key is None:
                continue
            got = value[key]
            items = got if isinstance(got, list) else [got]
            names = list(dict.fromkeys(n for item in items if isinstance(item, (str, int, float))
                                       for n in _names(str(item), known)))
            pkey = next((keys[k] for k in ("paths", "path", "cited", "sources") if k in keys), None)
            if pkey is not None:
                p = value[pkey]
                cited_numbers = p if isinstance(p, list) else [p]
            break
    text = _MARKUP.sub("", reply)
    if names is None:
        lines = _ANSWER.findall(text)
        if lines:
            names = _names(lines[-1], known)
        else:
            braced = re.findall(r"\{([^{}]+)\}", text)
            if braced:
                names = list(dict.fromkeys(n for b in braced for n in _names(b, known)))
            else:
                said = _ANSWER_IS.findall(text)
                if not said:
                    return None
                names = _names(said[-1], known)
        paths = _PATHS.findall(text)
        if paths:
            cited_numbers = re.findall(r"\d+", paths[-1])
    cited: list[int] = []
    for n in cited_numbers:
        try:
            i = int(str(n)) - 1
        except ValueError:
            continue
        if 0 <= i < shown and i not in cited:
            cited.append(i)
    return names, cited


_ENTITIES = re.compile(r"^\s*(?:topic\s+)?entit(?:y|ies)\s*[:=]\s*(.*)$", re.I | re.M)


def parse_entities(reply: str, question: str) -> list[str] | None:
    """Entity names the reply lists that occur in the question (the prompt
    asks for exact copies; others are ignored). Reads an ``Entities:`` line
    (``|``- or comma-separated), a JSON ``entities`` list, or a bulleted
    list. None when nothing is listed."""
    listed: list[str] | None = None
    for value in _json_values(reply):
        if isinstance(value, dict):
            keys = {k.lower(): k for k in value if isinstance(k, str)}
            key = next((keys[k] for k in ("entities", "entity", "names") if k in keys), None)
            if key is not None:
                got = value[key]
                listed = [str(x) for x in (got if isinstance(got, list) else [got])]
                break
    text = _MARKUP.sub("", reply)
    if listed is None:
        found = _ENTITIES.findall(text)
        if found and found[-1].strip().strip(".").casefold() in ("", "none", "n/a", "no entities"):
            return []
        if found:
            field = found[-1]
            listed = field.split("|") if "|" in field else re.split(r"\s*[,;]\s*", field)
        else:
            bullets = [m.group(1) for m in re.finditer(r"^\s*(?:[-*•]|\d+[.)])\s+(.+)$", text, re.M)]
            if not bullets:
                return None
            listed = bullets
    low = question.casefold()
    names = [n.strip().strip("\"'*{}[]").strip().rstrip(".") for n in listed]
    return [n for n in dict.fromkeys(names) if n and n.casefold() in low]


_NEXT = re.compile(r"(?im)^[\s>*_`#-]*next\s*(?:relations?|steps?)?\s*[*_`]*\s*[:=-]\s*(.*)$")


def parse_next(reply: str) -> list[str] | None:
    """The relation names a simulated knowledge base foresees (``model.txt``):
    ``Next: a; b`` (also bold, bullets, commas, or JSON ``{"next": [...]}``);
    ``[]`` for ``Next: none``; None when there is no such line."""
    for value in _json_values(reply):
        if isinstance(value, dict) and isinstance(value.get("next"), list):
            return [" ".join(str(x).split()) for x in value["next"] if str(x).strip()][:5]
    m = _NEXT.search(reply)
    if m is None:
        return None
    text = m.group(1).strip().strip("*_`").strip()
    if not text or text.casefold().rstrip(".") in ("none", "nothing", "n/a", "-"):
        return []
    parts = re.split(r"\s*[;,|]\s*", text)
    return [" ".join(p.strip(" .*_`\"'").split()) for p in parts if p.strip(" .*_`\"'")][:5]
