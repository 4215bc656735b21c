"""The LLM as the agent of ToG: it prunes, judges and answers.

Prompts are files under ``engine/prompts/`` (a system part, worked examples,
the task); every call shows the whole beam at once with numbered candidates
(``relations.txt``, ``entities.txt``), so a beam step costs one call. Replies
are read strictly (``engine/replies.py``); an unreadable reply is asked once
more, then given up on (uniform scores, a "no" from the judge, the best kept
path as the answer), and each repair and fallback is counted in the run's
stats. A candidate list too long for the model's context window is split
across calls and the partial scores joined.

Call budget per question at depth D: ToG at most 3D+1 (relations, entities
and the judge per depth, no judge after the last depth, one answer, one more
only when the topic entities had to be found by the LLM); ToG-R at most
2D+1; a cheap pruner with the LLM judge at most D+1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from engine.llm import LLMClient, current_usage
from engine.paths import Path
from engine.pruning import Choice, _normalise
from engine.reasoning import Answer
from engine.replies import parse_answer, parse_entities, parse_judgement, parse_scores

SECTIONS = ("[system]", "[example]", "[reply]", "[task]")


@dataclass(frozen=True)
class Prompt:
    """One prompt file: system text, (example, reply) pairs and the task template."""

    name: str
    system: str
    examples: tuple[tuple[str, str], ...]
    task: str

    def messages(self, **values: str) -> list[dict]:
        out = [{"role": "system", "content": self.system}] if self.system else []
        for user, reply in self.examples:
            out += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
        out.append({"role": "user", "content": self.task.format_map(values)})
        return out

    @property
    def reply_format(self) -> str:
        """The reply format the system part asks for (its lines after 'Reply')."""
        lines = self.system.splitlines()
        for i, line in enumerate(lines):
            if line.lower().startswith(("reply", "end your reply")):
                return "\n".join(lines[i:]).strip()
        return self.system


@lru_cache(maxsize=None)
def prompt(name: str) -> Prompt:
    text = resources.files("engine").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    parts: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.strip() in SECTIONS:
            parts.append((line.strip(), []))
        elif parts:
            parts[-1][1].append(line)
    system, task, examples, pending = "", "", [], None
    for head, lines in parts:
        body = "\n".join(lines).strip()
        if head == "[system]":
            system = body
        elif head == "[example]":
            pending = body
        elif head == "[reply]" and pending is not None:
            examples.append((pending, body))
            pending = None
        elif head == "[task]":
            task = body
    return Prompt(name, system, tuple(examples), task)


def prompt_names() -> list[str]:
    folder = resources.files("engine").joinpath("prompts")
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))


def numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i}. {' '.join(t.split())}" for i, t in enumerate(items, start=1))


def _count(client: LLMClient, what: str) -> None:
    for usage in (client.total, current_usage()):
        if usage is not None:
            usage.count(what)


def ask_strictly(client: LLMClient, messages: list[dict], read, *, temperature: float, purpose: str,
                 reply_format: str):
    """``read(reply)``, asking once more when it returns None; None when the
    second reply cannot be read either (a fallback, counted)."""
    reply = client.complete(messages, temperature=temperature, purpose=purpose)
    got = read(reply)
    if got is not None:
        return got
    _count(client, "repairs")
    again = messages + [{"role": "assistant", "content": reply},
                        {"role": "user", "content": prompt("repair").task.format(format=reply_format)}]
    got = read(client.complete(again, temperature=temperature, purpose=purpose + "-repair"))
    if got is None:
        _count(client, "fallbacks")
    return got


class LLMPruner:
    """Scores the whole beam's candidates in one call per step."""

    name = "llm"

    def __init__(self, client: LLMClient | None = None, **_: object) -> None:
        if client is None:
            from engine.errors import UnknownComponentError

            raise UnknownComponentError("the llm pruner needs a model (--model or TOG_MODEL)")
        self.client = client

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores("relations", question, [c.text for c in choices])

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores("entities", question, [c.text for c in choices])

    def _scores(self, name: str, question: str, texts: list[str]) -> list[float]:
        if len(texts) <= 1:
            return [1.0] * len(texts)  # nothing to choose between: no call
        out: list[float] = []
        for part in self._parts(prompt(name), question, texts):
            out.extend(self._score_part(prompt(name), question, part))
        return out

    def _parts(self, p: Prompt, question: str, texts: list[str]) -> list[list[str]]:
        """``texts`` in as few pieces as fit the model's context window."""
        if len(texts) == 1 or self.client.fits(p.messages(question=question, candidates=numbered(texts))):
            return [texts]
        half = len(texts) // 2
        return self._parts(p, question, texts[:half]) + self._parts(p, question, texts[half:])

    def _score_part(self, p: Prompt, question: str, texts: list[str]) -> list[float]:
        if len(texts) == 1:
            return [1.0]
        scores = ask_strictly(self.client, p.messages(question=question, candidates=numbered(texts)),
                              lambda reply: parse_scores(reply, texts),
                              temperature=self.client.settings.temperature_explore, purpose=p.name,
                              reply_format=p.reply_format)
        if scores is None:
            return [1.0 / len(texts)] * len(texts)
        return [scores.get(i, 0.0) for i in range(len(texts))]


class LLMReasoner:
    """The judge and the answer by the LLM (ToG-R's judge sees relation chains)."""

    name = "llm"

    def __init__(self, client: LLMClient | None = None, method: str = "tog", **_: object) -> None:
        if client is None:
            from engine.errors import UnknownComponentError

            raise UnknownComponentError("the llm reasoner needs a model (--model or TOG_MODEL)")
        self.client, self.method = client, method

    def judge(self, question, topics, paths, next_relations, remaining=0, schema=None) -> float:
        if not paths or remaining <= 0:
            return 1.0  # the search stops here anyway: no call
        if self.method == "tog-r":
            p, shown = prompt("judge_chains"), _chains(paths)
        else:
            p, shown = prompt("judge"), [q.verbalise() for q in paths]
        reward = ask_strictly(self.client, p.messages(question=question, paths=numbered(shown)), parse_judgement,
                              temperature=self.client.settings.temperature_reason, purpose=p.name,
                              reply_format=p.reply_format)
        return 0.0 if reward is None else reward

    def answer(self, question, topics, kept, candidates) -> Answer:
        if not kept:
            names = baseline_answer(self.client, "io", question)
            return Answer(names, from_kg=False, reason="no KG path reached an answer; the model's own knowledge")
        p = prompt("answer")
        got = ask_strictly(self.client, p.messages(question=question, paths=numbered([q.verbalise() for q in kept])),
                           lambda reply: parse_answer(reply, len(kept)),
                           temperature=self.client.settings.temperature_reason, purpose="answer",
                           reply_format=p.reply_format)
        if got is None:  # fallback: the tail of the best kept path
            best = max(kept, key=lambda q: q.score)
            return Answer([best.tail.name], [best.tail.id], [best.id], True, "unreadable answer; best kept path")
        names, cited = got
        used = [kept[i] for i in cited]
        ids = []
        for name in names:
            match = next((q.tail.id for q in used if q.tail.name.casefold() == name.casefold()), None)
            if match is None:
                match = next((q.tail.id for q in kept if q.tail.name.casefold() == name.casefold()), None)
            if match is not None and match not in ids:
                ids.append(match)
        from_kg = bool(used)
        reason = "the model's answer from the cited paths" if from_kg else "the model's own knowledge"
        return Answer(names, ids, [q.id for q in used], from_kg, reason)


class EmbeddingPruner:
    """Cosine similarity between the question and each verbalised candidate,
    by an embedding model through litellm (one call per beam step for the
    texts the cache does not hold yet)."""

    name = "embedding"

    def __init__(self, client: LLMClient | None = None, **_: object) -> None:
        if client is None or not client.settings.embedding_model:
            from engine.errors import UnknownComponentError

            raise UnknownComponentError("the embedding pruner needs an embedding model "
                                        "(--embedding-model or TOG_EMBEDDING_MODEL)")
        self.client = client

    def _scores(self, question: str, texts: list[str]) -> list[float]:
        import numpy as np

        if not texts:
            return []
        vectors = np.asarray(self.client.embed([question, *texts]), dtype=float)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        unit = vectors / norms[:, None]
        similarity = unit[1:] @ unit[0]
        return _normalise([float(x) for x in similarity])

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, [c.text for c in choices])

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, [c.text for c in choices])


def _chains(paths: Sequence[Path]) -> list[str]:
    """ToG-R's view: one line per relation chain with the entities it reached."""
    groups: dict[tuple, list[Path]] = {}
    for q in paths:
        groups.setdefault((q.topic.id, q.chain), []).append(q)
    out = []
    for group in groups.values():
        tails = ", ".join(dict.fromkeys(q.tail.name for q in group))
        out.append(f"{group[0].verbalise(with_entities=False)}: {tails}")
    return out


def extract_topics(client: LLMClient, question: str) -> list[str]:
    """Names of the question's topic entities, by the LLM (copied from the question)."""
    p = prompt("topics")
    got = ask_strictly(client, p.messages(question=question), lambda reply: parse_entities(reply, question),
                       temperature=client.settings.temperature_reason, purpose="topics", reply_format=p.reply_format)
    return got or []


def baseline_answer(client: LLMClient, method: str, question: str) -> list[str]:
    """IO or CoT prompting: the model answers alone, no knowledge graph."""
    p = prompt(method)
    got = ask_strictly(client, p.messages(question=question), lambda reply: parse_answer(reply, 0),
                       temperature=client.settings.temperature_reason, purpose=method, reply_format=p.reply_format)
    return got[0] if got else []

