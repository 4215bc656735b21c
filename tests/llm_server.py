"""Stand-in language models behind a real OpenAI-compatible HTTP endpoint on
127.0.0.1, so that tests exercise litellm's own code path end to end
(``--model openai/standin --api-base http://127.0.0.1:PORT/v1``).

What the stand-in knows comes from the prompt text alone (it never sees gold
answers) and from one real model: wordllama's small static embeddings (in
its wheel, offline), which say how close a question's words are to a
relation's name. No knowledge graph's vocabulary is written here.

- How well it reads (``reader``): a GPT-4-class model (``gpt4``) reads
  relation names as a careful reader of English does (``aligned``): it
  weighs a chain by the question's words each relation's name explains, in
  the order the question says them, with sharing ("co-wrote", "the same
  director") as a walk out and back; it calls paths sufficient when no next
  step would explain more and nothing it explains leaves a relation word
  of the question unexplained, and it answers with the entity, anywhere on
  a path, whose way from the topic explains the question best. This reader
  is ``engine.alignment``, which reads nothing but the question and the
  names shown in the prompt, so that comparing the LLM path with the
  offline backbone measures what the LLM path itself (prompts, caps,
  readers, budget, judge, answer) loses. The other classes go by single
  word similarities (``words``): they prefer relations whose words are
  close to the question's words, call paths sufficient once every content
  word of the question is close to some relation on a path, and answer
  with the tails of the best-covered paths.
- ``mode`` sets its reply habits, seeded per request (deterministic):
  ``gpt4``: on format most of the time, with mild drift (bold numbers, a
  preface, a comment after the score, answers split by commas);
  ``llama2``: verbose, ignores the format about half the time (names
  instead of numbers, scores out of 10 or in per cent, JSON, markdown
  tables, ToG's ``{relation (Score: 0.4)}`` and ``{Yes}``, "The answer is
  ..."), and now and then (``unreadable``) a reply nobody could read;
  ``exact``: always exactly the format asked for.
  A request with a JSON-schema ``response_format`` gets JSON that keeps to
  the schema (what constrained decoding gives), in every mode.
- Faults can be queued (an HTTP status with headers, a delay, a garbage
  reply) and ``error_rate`` makes some requests fail with a 500; every
  request is kept for inspection.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
import time
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from engine.graph import Relation

_WORD = re.compile(r"[a-z]+")
# English words that carry no relation of their own: function words, question
# words and the generic nouns a question uses for what it asks about
STOP = frozenset("""
a an the of in on at to for from by with and or but as is are was were be been being do does did has have had
who whom whose what which where when why how that this these those there their its it his her they them he she
i you we me my our your name names list tell give find show one ones some any all same also other another
both each either many much more most than then so such can could would should will may might must please
thing things person people someone something work works
listed known called named considered main primary
""".split())


def relational(word: str) -> bool:
    """Does a word look like it names a relation (English morphology only):
    a verb form (directed, written, starring), an agent noun (writer,
    director, actors) or a plural (languages, genres, years)?"""
    return len(word) >= 5 and word.endswith(("ed", "en", "ing", "er", "or", "ers", "ors", "ist", "ists", "s"))
COVERED = 0.27   # similarity at which a relation accounts for a question word


def _wordllama():
    from engine.embeddings import local_model  # the weights inside the wheel, no download

    return local_model()


@lru_cache(maxsize=200_000)
def similarity(word: str, relation: str) -> float:
    if not word or not relation:
        return 0.0
    if _stem(word) in {_stem(w) for w in _WORD.findall(relation)}:
        return 1.0
    return float(_wordllama().similarity(word, relation))


def _stem(w: str) -> str:
    for suffix in ("ings", "ing", "ers", "ors", "ed", "er", "or", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[: -len(suffix)]
    return w


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def cues(question: str, topic: str) -> list[str]:
    """The question's content words, without the topic entity's nor the noun
    that says what kind of thing the topic is ("the novel [X]")."""
    topic_words = set(_words(topic))
    kind = re.search(r"\b(?:the|a|an)\s+([a-z]+)\s*\[", question.lower())
    if kind:
        topic_words.add(kind.group(1))
    return list(dict.fromkeys(w for w in _words(question) if w not in STOP and w not in topic_words and len(w) > 2))


def relevance(question: str, topic: str, relations: list[str]) -> float:
    """How well some relations account for the question: the mean, over the
    question's content words, of the best similarity to any of them."""
    found = cues(question, topic)
    if not found or not relations:
        return 0.0
    return sum(max(similarity(w, r) for r in relations) for w in found) / len(found)


def uncovered(question: str, topic: str, relations: list[str]) -> list[str]:
    return [w for w in cues(question, topic) if max((similarity(w, r) for r in relations), default=0.0) < COVERED]


WH = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "how"})


def incidental(question: str, covered: list[str]) -> set[str]:
    """Words that name what is asked about rather than a relation: the noun
    right after the question word ("which films did X star in") and a word
    next to one a relation already accounts for ("the films directed by")."""
    said = _words(question)
    known = set(covered)
    return {said[i + 1] for i in range(len(said) - 1) if said[i] in WH} | next_to(said, lambda w: w in known)


def next_to(said: list[str], hit) -> set[str]:
    """The words of ``said`` that are, or stand next to, a word ``hit`` accepts."""
    return {w for i, w in enumerate(said) if any(hit(x) for x in said[max(0, i - 1):i + 2])}


# -- reading the engine's prompts -------------------------------------------------

_STEP = re.compile(r"\s(?:->|<-)\s")


def _field(task: str, name: str) -> str:
    m = re.search(rf"^{name}:\s*(.*)$", task, re.M)
    return m.group(1).strip() if m else ""


def _numbered(task: str) -> list[tuple[int, str]]:
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(r"^(\d+)\. (.*)$", task, re.M)]


def path_relations(line: str) -> tuple[str, list[str]]:
    """(first entity, relation texts) of a path in the prompts' notation."""
    parts = _STEP.split(f" {line} ")
    parts = [p.strip() for p in parts]
    return parts[0], [p for i, p in enumerate(parts) if i % 2 == 1 and p]


def chain_relations(line: str) -> tuple[str, list[str]]:
    """(topic, relation texts) of a ToG-R chain line ``A -> r1 <- r2: tails``."""
    head = line.rsplit(":", 1)[0]
    parts = [p.strip() for p in re.split(r"\s(?:->|<-)\s", f" {head} ")]
    parts = [p for p in parts if p]
    return parts[0], parts[1:]


_ARROWS = re.compile(r"\s(->|<-)\s")


def steps(line: str) -> tuple[str, list[Relation], list[str]]:
    """(first entity, relations with their directions, the entity after
    each step) of a line in the prompts' notation: ``A <- r <- B -> s -> ?``
    (a ToG-R chain, ``A -> r <- s``, has no entities between)."""
    parts = [p.strip() for p in _ARROWS.split(f" {line.strip()} ")]
    rels: list[Relation] = []
    ents: list[str] = [parts[0]]
    i = 1
    while i + 1 < len(parts):
        arrow, text = parts[i], parts[i + 1]
        rels.append(Relation(text, "out" if arrow == "->" else "in", label=text))
        if i + 3 < len(parts) and parts[i + 2] == arrow:  # A -> r -> B: B follows
            ents.append(parts[i + 3])
            i += 4
        else:
            ents.append("")
            i += 2
    return parts[0], rels, ents


def aligned_score(question: str, topic: str, chain: list[Relation]) -> float:
    """How well a chain of relation names accounts for a question, read as
    a careful reader of English reads them: the question's words each
    relation's name explains, in the order the question says them, sharing
    ("co-wrote", "the same director") as a walk out and back, less a share
    for a relation that explains nothing (``engine.alignment``, which reads
    nothing but the question and the names)."""
    if not chain:
        return 0.0
    m = _question_model(question, topic)
    # a walk under way should have explained the words read first from the topic ("the actors in the
    # films directed by the director of X": the director first)
    claimed = [i for c in m.claims(chain) for i in c]
    first = sorted(range(len(m.occurrences)), key=lambda i: m.occurrences[i][1])[:len(claimed)]
    fit = len(set(claimed) & set(first)) / len(claimed) if claimed else 0.0
    return (m.utility(chain) - 0.5 * m.idle(chain) + 0.25 * m.order(chain) + 0.1 * fit) / (m.size + 0.25)


def explains(question: str, topic: str, chain: list[Relation]) -> tuple[int, int]:
    """(occurrences of the question's words the chain explains, how many of
    them name a relation by their form (``relational``), or a sharing)."""
    from engine.text import IRREGULAR, stem

    m = _question_model(question, topic)
    claimed = {i for c in m.claims(chain) for i in c}
    explained = {m.occurrences[i][0] for i in claimed}
    said = _words(question)
    # a word next to one the chain explains is what that relation is about ("the films directed by",
    # "release dates"), not a relation of its own
    beside = {stem(w) for w in next_to(said, lambda x: stem(x) in explained)}
    form = {stem(w): w for w in reversed(said)}
    asked = sum(1 for i, (s, _) in enumerate(m.occurrences)
                if i in claimed or ((relational(form.get(s, s)) or form.get(s) in IRREGULAR) and s not in beside))
    return m.explained(chain), asked + (1 if m.shares else 0)


def _question_model(question: str, topic: str):
    from engine.alignment import QuestionModel

    return QuestionModel.of(question, [topic])


def _best_deepest(ranked: list[tuple[float, int, int, str]]) -> tuple[list[str], list[int]]:
    """From (score, depth, path number, name): the names of the best score,
    the deepest of equals, and the paths that give them."""
    if not ranked:
        return [], []
    top = max(r[0] for r in ranked)
    best = [r for r in ranked if r[0] >= top - 1e-9]
    deepest = max(r[1] for r in best)
    chosen = [r for r in best if r[1] == deepest]
    return list(dict.fromkeys(r[3] for r in chosen)), list(dict.fromkeys(r[2] for r in chosen))


class Judgement:
    """What the stand-in thinks of a prompt: scores, a verdict or an answer."""

    def __init__(self, messages: list[dict], reader: str = "words") -> None:
        self.reader = reader
        self.system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        self.task = messages[-1]["content"] if messages else ""
        self.question = _field(self.task, "Question")
        if self.task.startswith("Your reply could not be read"):
            # a repair: answer the earlier task again, in the format asked for
            earlier = [m for m in messages if m["role"] == "user"]
            self.task = earlier[-2]["content"] if len(earlier) >= 2 else self.task
            self.question = _field(self.task, "Question")
            self.repair = True
        else:
            self.repair = False
        self.kind = self._kind()

    def _kind(self) -> str:
        if "\nWalk: " in self.task:
            return "foresee"  # the planner's Model
        if "\nSteps:" in self.task or "\nPlans:" in self.task:
            return "plans"  # the planner's Actor and Critic
        if "Candidates:" in self.task:
            return "relations" if re.search(r"^From ", self.task, re.M) else "entities"
        if "Sufficient" in self.system:
            return "judge"
        if "Entities:" in self.system:
            return "topics"
        if "Paths:" in self.task:
            return "answer"
        return "baseline"

    # -- the decisions ------------------------------------------------------------
    def scores(self) -> list[tuple[int, float, str]]:
        """(candidate number, score, its text) for the best three candidates."""
        items = _numbered(self.task)
        if not items:
            return []
        scored = []
        if self.kind == "plans":  # a walk's real steps (->, <-) and those a simulation foresaw (=>)
            for n, text in items:
                real, *ahead = text.split(" => ")
                topic, rels = path_relations(real.replace(" ?", " X"))
                rels = [r.removesuffix(" (of)") for r in [*rels, *ahead]]
                scored.append((relevance(self.question, topic, rels), n, text))
            scored.sort(key=lambda t: (-t[0], t[1]))
            top = [(max(sc, 0.01), n, text) for sc, n, text in scored[:3]]
            return [(n, round(min(1.0, sc), 2), text) for sc, n, text in top]
        if self.reader == "aligned" and self.kind in ("relations", "entities"):
            for n, text in items:
                if self.kind == "relations":
                    start = re.search(r"\(reached by: (.*)\):", self._group_of(n))
                    topic, before, _ = steps(start.group(1).split("; ")[0]) if start else (None, [], [])
                    first, rels, _ = steps(text)
                    chain, topic = [*before, *rels], topic or first
                    name = rels[-1].text if rels else text
                else:
                    topic, chain, _ = steps(self._group_of(n))
                    name = text
                scored.append((aligned_score(self.question, topic, chain), n, name))
        elif self.kind == "relations":
            for n, text in items:
                topic, rels = path_relations(text.replace(" ?", " X"))
                start = re.search(r"\(reached by: (.*)\):", self._group_of(n)) or None
                reached = start.group(1).split("; ")[0] if start else ""
                first = path_relations(reached)[0] if start else topic
                before = path_relations(reached)[1] if start else []
                scored.append((relevance(self.question, first, [*before, *rels]) + 0.5 * relevance(
                    self.question, first, rels), n, rels[-1] if rels else text))
        else:  # entities: by the relations that reached them
            for n, text in items:
                head = self._group_of(n)
                topic, rels = path_relations(head.replace(" ...", " X"))
                scored.append((relevance(self.question, topic, rels), n, text))
        scored.sort(key=lambda t: (-t[0], t[1]))
        # a model names a candidate by its relation when that is unambiguous, else by its whole line
        names = [t[2] for t in scored]
        full = dict(items)
        if self.kind == "relations":
            scored = [(sc, n, text if names.count(text) == 1 else full[n].removesuffix(" ?").strip())
                      for sc, n, text in scored]
        else:  # an entity reached twice is named by its whole path
            scored = [(sc, n, text if names.count(text) == 1 else
                       f"{self._group_of(n).removesuffix('...').rstrip()} {text}") for sc, n, text in scored]
        top = [(max(sc, 0.01), n, text) for sc, n, text in scored[:3]]  # similarities can be negative
        total = sum(sc for sc, _, _ in top)
        return [(n, round(sc / total, 2), text) for sc, n, text in top]

    def foresee(self) -> list[str]:
        """What a model without the graph guesses follows a walk: the
        question's words its relations do not account for yet."""
        topic, rels = path_relations(_field(self.task, "Walk").replace(" ?", " X"))
        return uncovered(self.question, topic, [r.removesuffix(" (of)") for r in rels])[:3]

    def _group_of(self, n: int) -> str:
        """The group line a numbered candidate is listed under."""
        head = ""
        for line in self.task.splitlines():
            m = re.match(r"^(\d+)\. ", line)
            if m is None:
                if line.strip() and not line.startswith(("Question:", "Candidates:")):
                    head = line
            elif int(m.group(1)) == n:
                return head
        return head

    def verdict(self) -> tuple[bool, float]:
        """Sufficient when the best path accounts for every content word of
        the question that names a relation (by its form, or because a next
        step offers it); a question about things that share something ("the
        same director", "share actors", "[X] actors") needs a walk there and
        back."""
        if self.reader == "aligned":
            return self._aligned_verdict()
        items = [text for _, text in _numbered(self.task)]
        chains = "Chains:" in self.task
        following = [re.sub(r"^(?:->|<-)\s*", "", x.strip()) for x in _field(self.task, "Next steps the walk could take")
                     .split(";") if x.strip() and x.strip() != "none"]
        low = self.question.lower()
        # "the same director", "share actors", "[X] actors": there and back again
        shared = bool(re.search(r"\b(same|share|shares|shared|also)\b", low) or re.search(r"\]\s+[a-z]+(?:ors|ers)\b", low))
        best = None
        for text in items:
            topic, rels = chain_relations(text) if chains else path_relations(text)
            words = cues(self.question, topic)
            useful = all(max((similarity(w, r) for w in words), default=0.0) >= COVERED for r in rels)
            left = uncovered(self.question, topic, rels)
            aside = incidental(self.question, [w for w in words if w not in left])
            wanted = [w for w in left if (relational(w) and w not in aside) or
                      max((similarity(w, r) for r in following), default=0.0) >= COVERED]
            back = not shared or len(rels) >= 2
            enough = useful and back and not wanted
            score = (enough, relevance(self.question, topic, rels))
            best = score if best is None or score > best else best
        if best is None:
            return False, 0.5
        return best[0], round(min(0.95, 0.6 + best[1] / 2), 2)

    def _aligned_verdict(self) -> tuple[bool, float]:
        """Sufficient when the best path (or chain) accounts for the question
        as well as it can be: no step the walk could take next would
        account for more of it."""
        following = [x.strip() for x in _field(self.task, "Next steps the walk could take").split(";")]
        after = [Relation(x[2:].strip(), "out" if x.startswith("->") else "in", label=x[2:].strip())
                 for x in following if x.startswith(("->", "<-"))]
        best: tuple[float, float, str, list[Relation]] | None = None
        for _, text in _numbered(self.task):
            topic, chain, _ = steps(text.rsplit(":", 1)[0] if "Chains:" in self.task else text)
            now = aligned_score(self.question, topic, chain)
            ahead = max((aligned_score(self.question, topic, [*chain, r]) for r in after), default=now)
            if best is None or (now, ahead) > best[:2]:
                best = (now, ahead, topic, chain)
        if best is None:
            return False, 0.6
        now, ahead, topic, chain = best
        explained, asked = explains(self.question, topic, chain)
        # a step ahead would explain more, or the path explains part of the question and not the rest
        more = ahead > now + 1e-9 or 0 < explained < asked
        return not more, round(min(0.95, 0.6 + abs(now - ahead)), 2)

    def _aligned_answer(self) -> tuple[list[str], list[int]]:
        """The entities, anywhere on a path, whose way from the topic
        accounts best for the question (the deepest of equals)."""
        ranked = []
        for n, text in _numbered(self.task):
            topic, chain, ents = steps(text)
            for k in range(1, len(chain) + 1):
                if ents[k] != topic:
                    ranked.append((aligned_score(self.question, topic, chain[:k]), k, n, ents[k]))
        return _best_deepest(ranked)

    def answer(self) -> tuple[list[str], list[int]]:
        if self.reader == "aligned":
            return self._aligned_answer()
        items = _numbered(self.task)
        ranked = []
        for n, text in items:
            topic, rels = path_relations(text)
            tail = _STEP.split(f" {text} ")[-1].strip()
            if tail == topic and rels:
                continue  # "the same director as X": not X itself
            ranked.append((relevance(self.question, topic, rels), len(rels), n, tail))
        return _best_deepest(ranked)

    def topics(self) -> list[str]:
        m = re.search(r"\[([^\]]+)\]", self.question)
        if m:
            return [m.group(1)]
        names = re.findall(r"(?:[A-Z][\w'.-]*(?:\s+(?:of|the|and|de|la)?\s*[A-Z][\w'.-]*)*)", self.question)
        return [n for n in names[1:] or names if n][:2]


# -- the replies, in each mode's habits ------------------------------------------------

VERBOSE_OPENINGS = ("Sure! I'd be happy to help.", "Of course! Let me think about this step by step.",
                    "Great question! Here is my analysis.", "Certainly. Based on the information given:")
UNREADABLE = ("I apologize, but I cannot determine that from the information provided.",
              "As an AI language model, I need more context to help with this request.",
              "", "Let me think... The question is interesting and has several aspects to consider.")


def reply_text(messages: list[dict], mode: str, rng: random.Random, unreadable: float,
               stubborn: bool = False, reader: str = "words") -> str:
    return reply_and_reading(messages, mode, rng, unreadable, stubborn, reader)[0]


def reply_and_reading(messages: list[dict], mode: str, rng: random.Random,
                      unreadable: float, stubborn: bool = False, reader: str = "words") -> tuple[str, dict | None]:
    """The reply in the mode's habits, and the reading it means (what a
    reader must get from it; None for a reply that says nothing readable):
    ``{"scores": {index: score}}`` (0-based), ``{"reward": p}``,
    ``{"names": [...], "cited": [...]}`` (0-based) or ``{"entities": [...]}``."""
    j = Judgement(messages, reader)
    drift = rng.random()
    if mode == "llama2" and (stubborn or not j.repair) and rng.random() < unreadable:
        return rng.choice(UNREADABLE), None
    if j.kind == "foresee":
        ahead = j.foresee()
        exact = f"Next: {'; '.join(ahead) or 'none'}"
        meant = {"next": ahead}
        if mode == "exact" or j.repair or (mode == "gpt4" and drift < 0.8):
            return exact, meant
        if mode == "gpt4":
            return f"**Next:** {', '.join(ahead) or 'none'}", meant
        return (f"{rng.choice(VERBOSE_OPENINGS)}\n\nThe walk would likely reach entities with these relations.\n"
                f"{exact}\n\nI hope this helps!", meant)
    if j.kind in ("relations", "entities", "plans"):
        top = j.scores()
        exact = "\n".join(f"{n}: {s}" for n, s, _ in top)
        meant = {"scores": {n - 1: s for n, s, _ in top}}
        if mode == "exact" or j.repair:
            return exact, meant
        if mode == "gpt4":
            if drift < 0.75:
                return exact, meant
            if drift < 0.85:
                return "\n".join(f"**{n}**: {s}" for n, s, _ in top), meant
            if drift < 0.93:
                return "Here are the scores:\n" + "\n".join(f"- {n}: {s}" for n, s, _ in top), meant
            return "\n".join(f"{n}: {s} ({text})" for n, s, text in top), meant
        opening = rng.choice(VERBOSE_OPENINGS)
        style = rng.randrange(8)
        if style == 0:
            body = exact
        elif style == 1:
            body = "\n".join(f"{text}: {s}" for _, s, text in top)
        elif style == 2:
            body = "\n".join(f"{n}: {round(s * 10)}" for n, s, _ in top)
            tens = [round(s * 10) for _, s, _ in top]
            divisor = 10 if max(tens, default=0) > 1 else 1  # all 0s and 1s: read as they stand
            meant = {"scores": {n - 1: t / divisor for (n, _, _), t in zip(top, tens) if t / divisor <= 1}}
        elif style == 3:
            body = "\n".join(f"{n}: {round(s * 100)}%" for n, s, _ in top)
            meant = {"scores": {n - 1: round(s * 100) / 100 for n, s, _ in top}}
        elif style == 4:
            body = "```json\n" + json.dumps({str(n): s for n, s, _ in top}) + "\n```"
        elif style == 5:
            body = "| # | Candidate | Score |\n|---|---|---|\n" + "\n".join(f"| {n} | {text} | {s} |"
                                                                        for n, s, text in top)
        elif style == 6:
            body = "\n".join(f"{{{text} (Score: {s})}}" for _, s, text in top)
        else:
            body = "\n".join(f"{n}. {text}: {s} - this seems relevant to the question." for n, s, text in top)
        return f"{opening}\n\n{body}\n\nI hope this helps! Let me know if you need anything else.", meant
    if j.kind == "judge":
        yes, confidence = j.verdict()
        word = "yes" if yes else "no"
        exact = f"Sufficient: {word}\nConfidence: {confidence}"
        meant = {"reward": round(confidence if yes else 1 - confidence, 6)}
        if mode == "exact" or j.repair:
            return exact, meant
        if mode == "gpt4":
            if drift < 0.8:
                return exact, meant
            if drift < 0.9:
                return f"**Sufficient:** {word.capitalize()}\n**Confidence:** {confidence}", meant
            return (f"Sufficient: {word.capitalize()}. " + ("The paths contain the answer." if yes else
                                                            "More facts are needed.") + f"\nConfidence: {confidence}",
                    meant)
        style = rng.randrange(5)
        if style == 0:
            return f"{rng.choice(VERBOSE_OPENINGS)}\n\n{exact}", meant
        if style == 1:
            return (f"{{{word.capitalize()}}}. " + ("The paths answer the question." if yes else
                                                    "The given paths are not enough."), {"reward": float(yes)})
        if style == 2:
            tenths = round(confidence * 10)
            return (f"{'Yes' if yes else 'No'}, the paths {'are' if yes else 'are not'} sufficient to answer the "
                    f"question. My confidence is {tenths}/10.",
                    {"reward": round(tenths / 10 if yes else 1 - tenths / 10, 6)})
        if style == 3:
            return json.dumps({"sufficient": yes, "confidence": confidence}), meant
        percent = round(confidence * 100)
        return (f"Looking at the paths, the knowledge {'is' if yes else 'is not'} enough.\n\n"
                f"Sufficient: {word.upper()}\nConfidence: {percent}%",
                {"reward": round(percent / 100 if yes else 1 - percent / 100, 6)})
    if j.kind == "answer":
        names, cited = j.answer()
        if not names:
            return "Answer: unknown\nPaths: none", {"names": [], "cited": []}
        exact = f"Answer: {' | '.join(names)}\nPaths: {', '.join(map(str, cited))}"
        meant = {"names": names, "cited": [c - 1 for c in cited]}
        if mode == "exact" or j.repair:
            return exact, meant
        if mode == "gpt4":
            if drift < 0.85 or len(names) == 1:
                return exact, meant
            return f"Answer: {', '.join(names)}\nPaths: {', '.join(map(str, cited))}", meant
        style = rng.randrange(4)
        listed = ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]
        if style == 0:
            return f"{rng.choice(VERBOSE_OPENINGS)}\n\n{exact}", meant
        if style == 1:
            return f"Based on the paths, the answer is {listed}.", {"names": names, "cited": []}
        if style == 2:
            return (f"{{{names[0]}}}" if len(names) == 1 else f"Answer: {', '.join(names)}",
                    {"names": names, "cited": []})
        return f"Answer: {', '.join(names)}\n(Paths used: {', '.join(map(str, cited))})", meant
    if j.kind == "topics":
        found = j.topics()
        if mode == "llama2" and not j.repair and drift < 0.5 and found:
            return "The named entities in the question are:\n" + "\n".join(f"- {n}" for n in found), \
                {"entities": found}
        return f"Entities: {' | '.join(found)}", {"entities": found}
    # io / cot: no knowledge of its own beyond words; it guesses, as small models do
    m = re.search(r"\[([^\]]+)\]", j.question)
    return f"Answer: {m.group(1) if m else 'I do not know'}", None


def structured_reply(messages: list[dict], schema: dict, reader: str = "words") -> str:
    """JSON that keeps to ``schema``: what a constrained decoder returns."""
    j = Judgement(messages, reader)
    props = schema.get("properties", {})
    if "scores" in props:
        allowed = set(props["scores"]["items"]["properties"]["candidate"].get("enum") or [])
        return json.dumps({"scores": [{"candidate": n, "score": s} for n, s, _ in j.scores() if n in allowed]})
    if "sufficient" in props:
        yes, confidence = j.verdict()
        return json.dumps({"sufficient": yes, "confidence": confidence})
    if "next" in props:
        return json.dumps({"next": j.foresee()})
    if "answers" in props:
        names, cited = j.answer() if j.kind == "answer" else ([], [])
        return json.dumps({"answers": names, "paths": cited})
    if "entities" in props:
        return json.dumps({"entities": j.topics()})
    return json.dumps({})


def bag_of_words(text: str, dimensions: int = 64) -> list[float]:
    """The stand-in embedding: word counts hashed into a fixed number of slots."""
    import zlib

    vector = [0.0] * dimensions
    for w in set(_words(text)):
        vector[zlib.crc32(w.encode()) % dimensions] += 1.0
    return vector


class StandInModel:
    """The HTTP endpoint; use as a context manager."""

    def __init__(self, mode: str = "exact", seed: int = 0, latency: float = 0.0, unreadable: float = 0.03,
                 error_rate: float = 0.0, stubborn: bool = False, reader: str | None = None) -> None:
        if mode not in ("exact", "gpt4", "llama2"):
            raise ValueError(f"unknown stand-in mode {mode!r}")
        # what it understands: a GPT-4-class model reads relation names as a careful reader does; the
        # others go by single word similarities
        self.reader = reader or ("aligned" if mode == "gpt4" else "words")
        self.mode, self.seed, self.latency = mode, seed, latency
        self.unreadable, self.error_rate, self.stubborn = unreadable, error_rate, stubborn
        self.requests: list[dict] = []
        self.faults: list[tuple] = []
        self.replies: list[str] = []  # canned reply texts, used before the rules
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                messages = body.get("messages", [])
                rng = random.Random(hashlib.sha256(
                    f"{model.seed}:{json.dumps(messages, sort_keys=True)}".encode()).hexdigest())
                with model._lock:
                    model.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                           "body": body})
                    fault = model.faults.pop(0) if model.faults else None
                    canned = model.replies.pop(0) if model.replies and fault is None else None
                if fault is None and model.error_rate and rng.random() < model.error_rate \
                        and len(model.requests) % 2:  # a retry of the same request gets through
                    fault = ("status", 500)
                if fault and fault[0] == "status":
                    message = fault[3] if len(fault) > 3 else f"stand-in {fault[1]}"
                    self._send(fault[1], {"error": {"message": message, "type": "standin"}},
                               fault[2] if len(fault) > 2 else {})
                    return
                if fault and fault[0] == "sleep":
                    time.sleep(fault[1])
                if model.latency:
                    time.sleep(model.latency)
                if self.path.endswith("/embeddings"):
                    texts = body.get("input", [])
                    texts = [texts] if isinstance(texts, str) else texts
                    self._send(200, {"object": "list", "model": body.get("model", "standin-embed"),
                                     "data": [{"object": "embedding", "index": i, "embedding": bag_of_words(t)}
                                              for i, t in enumerate(texts)],
                                     "usage": {"prompt_tokens": sum(len(t.split()) for t in texts),
                                               "total_tokens": sum(len(t.split()) for t in texts)}})
                    return
                schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
                if canned is not None:
                    text = canned
                elif fault and fault[0] == "garbage":
                    text = fault[1]
                elif schema:
                    text = structured_reply(messages, schema, model.reader)
                else:
                    text = reply_text(messages, model.mode, rng, model.unreadable, model.stubborn, model.reader)
                with model._lock:
                    model.requests[-1]["reply"] = text
                prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
                self._send(200, {
                    "id": f"chatcmpl-{len(model.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "standin"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                              "total_tokens": prompt_tokens + len(text.split())},
                })

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.api_base = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StandInModel:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def calls(self) -> int:
        return len(self.requests)

    def kinds(self) -> list[str]:
        """The kind of prompt of each chat request, in order."""
        return [Judgement(r["body"].get("messages", [])).kind for r in self.requests if "messages" in r["body"]]


ScriptedModel = StandInModel  # the name the older tests use


# -- the reply corpus (tests/fixtures/llm_replies.jsonl) ---------------------------------

def reader_inputs(messages: list[dict]) -> dict:
    """What the engine hands a reader for this prompt: the candidate texts,
    the number of paths shown and the names they end at, the question."""
    j = Judgement(messages)
    out: dict = {"kind": j.kind, "question": j.question}
    items = _numbered(j.task)
    if j.kind == "relations":
        out["candidates"] = [text[:-5] if text.endswith((" -> ?", " <- ?")) else text for _, text in items]
    elif j.kind == "entities":
        out["candidates"] = [j._group_of(n).removesuffix("...").rstrip() + " " + text for n, text in items]
    elif j.kind == "answer":
        out["shown"] = len(items)
        out["known"] = [_STEP.split(f" {text} ")[-1].strip() for _, text in items]
    return out


def corpus(questions: Path, kb: Path, limit: int, modes=("gpt4", "llama2")) -> list[dict]:
    """Every prompt the engine sends on the first ``limit`` questions, with
    each mode's reply and the reading it means."""
    import os
    import tempfile

    from click.testing import CliRunner

    from engine.cli import cli

    rows: list[dict] = []
    os.environ.setdefault("OPENAI_API_KEY", "sk-corpus")
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        runner = CliRunner()
        assert runner.invoke(cli, ["load", str(kb), "--store", str(store)]).exit_code == 0
        for mode in modes:
            for method in ("tog", "tog-r"):
                with StandInModel(mode=mode) as model:
                    out = Path(tmp) / f"{mode}-{method}.jsonl"
                    r = runner.invoke(cli, ["eval", str(questions), "--store", str(store), "--out", str(out),
                                            "--limit", str(limit), "--model", "openai/standin", "--api-base",
                                            model.api_base, "--no-cache", "--method", method])
                    assert r.exit_code == 0, r.output
                    for req in model.requests:
                        messages = req["body"].get("messages")
                        if not messages:
                            continue
                        rng = random.Random(hashlib.sha256(
                            f"{model.seed}:{json.dumps(messages, sort_keys=True)}".encode()).hexdigest())
                        reply, meant = reply_and_reading(messages, mode, rng, model.unreadable,
                                                         reader=model.reader)
                        assert reply == req["reply"]
                        rows.append({"mode": mode, **reader_inputs(messages), "reply": reply, "reading": meant})
    return rows


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Write the reply corpus the reader tests use.")
    ap.add_argument("out", type=Path)
    ap.add_argument("--limit", type=int, default=12)
    args = ap.parse_args()
    here = Path(__file__).resolve().parent.parent / "examples" / "metaqa"
    seen, kept = set(), []
    for row in corpus(here / "questions.txt", here / "kb.txt", args.limit):
        key = (row["kind"], row["reply"], json.dumps(row.get("candidates")))
        if key not in seen:
            seen.add(key)
            kept.append(row)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
    print(f"{len(kept)} replies written to {args.out}")
