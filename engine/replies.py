"""Strict readers for LLM replies.

A reply may only pick from what it was shown: candidate numbers in range, or
a candidate's exact text; anything else is ignored. ``None`` means the reply
could not be read at all (the caller asks once more, then falls back). No
reply text ever reaches a query: what comes out are numbers, booleans and
names that are matched against the knowledge graph's own index.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NUMBER = r"(\d+(?:\.\d+)?|\.\d+)"
_SCORE_LINE = re.compile(r"^\s*(?:candidate\s*)?[#(\[]?\s*(\d+)\s*[)\].]?\s*[:=\-–]\s*" + _NUMBER + r"\s*$", re.I)
_NAMED_LINE = re.compile(r"^\s*(.+?)\s*[:=]\s*" + _NUMBER + r"\s*$")
_SUFFICIENT = re.compile(r"\bsufficient\s*[:=]\s*\**\s*(yes|no)\b", re.I)
_CONFIDENCE = re.compile(r"\bconfidence\s*[:=]\s*\**\s*" + _NUMBER, re.I)
_ANSWER = re.compile(r"^\s*\**answer\**\s*[:=]\s*(.*)$", re.I | re.M)
_PATHS = re.compile(r"^\s*\**paths?\**\s*[:=]\s*(.*)$", re.I | re.M)
_ENTITIES = re.compile(r"^\s*\**entities\**\s*[:=]\s*(.*)$", re.I | re.M)


def _clean(text: str) -> str:
    return " ".join(text.split()).casefold()


def parse_scores(reply: str, candidates: Sequence[str]) -> dict[int, float] | None:
    """{candidate index (0-based): score} from ``number: score`` lines (or
    ``exact candidate text: score``); scores outside [0, 1] and unknown
    candidates are ignored. None when no line could be read."""
    by_text = {_clean(c): i for i, c in enumerate(candidates)}
    out: dict[int, float] = {}
    for line in reply.splitlines():
        if not line.strip():
            continue
        m = _SCORE_LINE.match(line)
        index = None
        if m:
            n = int(m.group(1))
            if 1 <= n <= len(candidates):
                index, value = n - 1, m.group(2)
        else:
            m = _NAMED_LINE.match(line)
            if m:
                name = re.sub(r"^\s*\d+[.)]\s*", "", m.group(1))  # "2. Blue Velvet -> x: 0.3"
                index = by_text.get(_clean(name))
                value = m.group(2)
        if index is None:
            continue
        score = float(value)
        if 0.0 <= score <= 1.0:
            out[index] = max(out.get(index, 0.0), score)
    return out or None


def parse_judgement(reply: str) -> float | None:
    """The judge's probability that the paths suffice: its confidence when it
    says yes, one minus it when it says no (1.0 / 0.0 without a confidence).
    None when there is no yes/no."""
    verdicts = _SUFFICIENT.findall(reply)
    if not verdicts:
        return None
    yes = verdicts[-1].lower() == "yes"
    found = _CONFIDENCE.findall(reply)
    confidence = float(found[-1]) if found else 1.0
    if not 0.0 <= confidence <= 1.0:
        confidence = 1.0
    return round(confidence if yes else 1.0 - confidence, 6)


def parse_answer(reply: str, shown: int) -> tuple[list[str], list[int]] | None:
    """(answer names, cited path indexes (0-based, only of the ``shown``
    paths)). None when there is no ``Answer:`` line."""
    answers = _ANSWER.findall(reply)
    if not answers:
        return None
    names = list(dict.fromkeys(n.strip().strip("*").strip() for n in answers[-1].split("|")))
    names = [n for n in names if n and n.casefold() not in {"none", "unknown", "n/a"}]
    cited: list[int] = []
    paths = _PATHS.findall(reply)
    if paths:
        for n in re.findall(r"\d+", paths[-1]):
            i = int(n) - 1
            if 0 <= i < shown and i not in cited:
                cited.append(i)
    return names, cited


def parse_entities(reply: str, question: str) -> list[str] | None:
    """Entity names the reply lists that occur in the question (the prompt
    asks for exact copies; others are ignored). None without an ``Entities:`` line."""
    found = _ENTITIES.findall(reply)
    if not found:
        return None
    low = question.casefold()
    names = [n.strip().strip("\"'*").strip() for n in found[-1].split("|")]
    return [n for n in dict.fromkeys(names) if n and n.casefold() in low]
