"""The LLM as the agent of ToG: it prunes, judges and answers.

Prompts are files under ``engine/prompts/`` (a system part, worked examples,
the task); every call shows the whole beam at once with numbered candidates
(``relations.txt``, ``entities.txt``), grouped by the path they extend, so a
beam step costs one call. Paths read ``A -> r -> B`` (B is A's r) and
``A <- r <- B`` (A is B's r). Where the model supports it, replies are
constrained by a JSON schema (the candidate numbers shown are its only
choices); otherwise they are read tolerantly (``engine/replies.py``). An
unreadable reply is asked once more while the question's call budget has
room, then left to the offline component (the hybrid scorer, the offline
judge or answer), and each repair and fallback is counted in the run's
stats (``--strict-llm`` makes a fallback an error). A candidate list too
long for the model's context window is split across calls and the partial
scores joined; a list longer than a model reads well is cut to the offline
scorer's best first.

Call budget per question at depth D, repairs included: ToG at most 3D+1
(relations, entities and the judge per depth, no judge after the last
depth, one answer, and one spare: for finding the topic entities by the LLM
or for a repair); ToG-R at most 2D+1; a cheap pruner with the LLM judge at
most D+1. Context-window splits are the one exception, counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from engine.errors import LLMReplyError
from engine.graph import Relation
from engine.llm import LLMClient, current_budget, current_usage
from engine.paths import Path
from engine.pruning import Choice, _normalise
from engine.reasoning import Answer
from engine.replies import parse_answer, parse_entities, parse_judgement, parse_next, parse_scores

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


def with_exemplars(p: Prompt, exemplars: Sequence, question: str, topic_names: Sequence[str]) -> Prompt:
    """The answer prompt with the worked examples from rated runs nearest the
    question (``engine.learning.choose_exemplars``) after its own."""
    if not exemplars:
        return p
    from dataclasses import replace

    from engine.learning import choose_exemplars

    chosen = choose_exemplars(exemplars, question, topic_names)
    extra = tuple((f"Question: {e.question}\nPaths:\n{numbered(e.paths)}",
                   f"Answer: {' | '.join(e.answer)}\nPaths: {', '.join(str(i) for i in range(1, len(e.paths) + 1))}")
                  for e in chosen)
    return replace(p, examples=p.examples + extra) if extra else p


def prompt_names() -> list[str]:
    folder = resources.files("engine").joinpath("prompts")
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))


def numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i}. {' '.join(t.split())}" for i, t in enumerate(items, start=1))


@lru_cache(maxsize=None)
def prompts_hash() -> str:
    """A short hash of every prompt file: which prompt version produced a run."""
    digest = hashlib.sha256()
    for name in prompt_names():
        digest.update(name.encode())
        digest.update(resources.files("engine").joinpath("prompts", f"{name}.txt").read_bytes())
    return digest.hexdigest()[:12]


# -- how candidates are shown to a model ---------------------------------------

def step(rel: Relation, text: str | None = None) -> str:
    """One hop in the prompts' notation: ``-> r ->`` forwards, ``<- r <-``
    backwards (``A <- author <- B``: A is B's author); the system parts
    say how to read both."""
    text = " ".join((text or rel.text).split())
    return f"-> {text} ->" if rel.direction == "out" else f"<- {text} <-"


def describe(p: Path) -> str:
    """A path for a model: ``Ursula K. Le Guin <- author <- The Dispossessed -> publisher -> Harper & Row``."""
    parts = [p.topic.name]
    for h in p.hops:
        parts += [step(h.relation, h.relation_text), h.node.name]
    return " ".join(" ".join(x.split()) for x in parts)


def _relation_groups(choices: Sequence[Choice], reached: Mapping[str, Sequence[Path]] | None = None
                     ) -> tuple[str, list[str]]:
    """The relation candidates grouped by the entity they would extend from
    (with the paths that reached it): the listing shown, and one text per
    candidate for reading names back."""
    lines: list[str] = []
    texts: list[str] = []
    last = None
    for c in choices:
        p, rel = c.path, c.relation
        if p.tail.id != last:
            last = p.tail.id
            ways = [q for q in (reached or {}).get(p.tail.id, [p]) if q.hops]
            lines.append(f"From {' '.join(p.tail.name.split())}"
                         + (f" (reached by: {'; '.join(describe(q) for q in ways)})" if ways else "") + ":")
        assert rel is not None
        texts.append(f"{p.tail.name} {step(rel)[:-3].rstrip()}")
        lines.append(f"{len(texts)}. {' '.join(p.tail.name.split())} {step(rel)} ?")
    return "\n".join(lines), texts


def _entity_groups(choices: Sequence[Choice]) -> tuple[str, list[str]]:
    """Entity candidates grouped by the path and relation that reached them."""
    lines: list[str] = []
    texts: list[str] = []
    last = None
    for c in choices:
        q = c.path
        head = describe(Path(q.id, q.topic, q.hops[:-1]))
        key = (q.parent, q.hops[-1].relation)
        if key != last:
            last = key
            lines.append(f"{head} {step(q.hops[-1].relation, q.hops[-1].relation_text)} ...")
        texts.append(describe(q))
        lines.append(f"{len(texts)}. {' '.join(q.tail.name.split())}")
    return "\n".join(lines), texts


def _schema_scores(n: int) -> dict:
    return {"type": "object", "additionalProperties": False, "required": ["scores"],
            "properties": {"scores": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["candidate", "score"],
                "properties": {"candidate": {"type": "integer", "enum": list(range(1, n + 1))},
                               "score": {"type": "number", "minimum": 0, "maximum": 1}}}}}}


SCHEMA_JUDGE = {"type": "object", "additionalProperties": False, "required": ["sufficient", "confidence"],
                "properties": {"sufficient": {"type": "boolean"},
                               "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}
SCHEMA_TOPICS = {"type": "object", "additionalProperties": False, "required": ["entities"],
                 "properties": {"entities": {"type": "array", "items": {"type": "string"}}}}


def _schema_answer(shown: int) -> dict:
    paths: dict = {"type": "array", "items": {"type": "integer", "enum": list(range(1, shown + 1))}} if shown \
        else {"type": "array", "items": {"type": "integer"}, "maxItems": 0}
    return {"type": "object", "additionalProperties": False, "required": ["answers", "paths"],
            "properties": {"answers": {"type": "array", "items": {"type": "string"}}, "paths": paths}}


def _count(client: LLMClient, what: str) -> None:
    for usage in (client.total, current_usage()):
        if usage is not None:
            usage.count(what)


def ask_strictly(client: LLMClient, messages: list[dict], read, *, temperature: float, purpose: str,
                 reply_format: str, schema: dict | None = None, max_tokens: int | None = None):
    """``read(reply)``; when it returns None, asked once more if the
    question's call budget has room for it. None when no reply could be read
    (a fallback, counted; an error with ``--strict-llm``)."""
    reply = client.complete(messages, temperature=temperature, purpose=purpose, schema=schema, max_tokens=max_tokens)
    got = read(reply)
    if got is not None:
        return got
    budget = current_budget()
    if budget is None or budget.spare():
        _count(client, "repairs")
        again = messages + [{"role": "assistant", "content": reply},
                            {"role": "user", "content": prompt("repair").task.format(format=reply_format)}]
        got = read(client.complete(again, temperature=temperature, purpose=purpose + "-repair", schema=schema,
                                   max_tokens=max_tokens))
        if got is not None:
            return got
    if client.settings.strict:
        raise LLMReplyError(f"LLM {client.settings.model}: its {purpose} reply could not be read "
                            f"(--strict-llm refuses the offline fallback)", model=client.settings.model)
    _count(client, "fallbacks")
    return None


MAX_RELATIONS_SHOWN = 24   # per beam path; a hub's longer list is pre-ranked by the offline scorer
MAX_RELATIONS_STEP = 144   # per step, six entities' worth: a name 100 entities share had made 16 calls of one step
MAX_ENTITIES_SHOWN = 48    # per call


def reply_tokens(client: LLMClient, n: int) -> int:
    """Reply tokens for a list of ``n`` scores (about 8 a line, and room for a preface)."""
    return min(1024, max(client.settings.max_tokens, 8 * n + 64))


class LLMPruner:
    """Scores the whole beam's candidates in one call per step. A list longer
    than a model reads well is cut to the offline scorer's best first; a
    reply that cannot be read leaves the step to the offline scorer."""

    name = "llm"
    uses_llm = True

    def __init__(self, client: LLMClient | None = None, descriptions=None, **options: object) -> None:
        if client is None:
            from engine.errors import UnknownComponentError

            raise UnknownComponentError("the llm pruner needs a model (--model or TOG_MODEL)")
        from engine.pruning import HybridPruner

        self.client = client
        self.offline = HybridPruner(descriptions, bool(options.pop("soft_match", False)), **options)

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        # beam paths that end at the same entity offer the same next steps: each is shown once
        keys = [(c.path.tail.id, c.relation) for c in choices]
        first: dict[tuple, int] = {}
        reached: dict[str, list[Path]] = {}
        for i, (c, k) in enumerate(zip(choices, keys)):
            first.setdefault(k, i)
            ways = reached.setdefault(c.path.tail.id, [])
            if all(q.id != c.path.id for q in ways):
                ways.append(c.path)
        order = {tail: k for k, tail in enumerate(reached)}  # entities in the order the beam reached them
        unique = sorted(first.values(), key=lambda i: (order[choices[i].path.tail.id], i))
        if len(unique) <= 1:
            return [1.0] * len(choices)  # nothing to choose between: no call
        shown_choices = [choices[i] for i in unique]
        shown = self._cap(question, shown_choices, "relations")
        scores = self._scores("relations", question, [shown_choices[i] for i in shown],
                              lambda part: _relation_groups(part, reached))
        if scores is None:
            return self.offline.score_relations(question, choices)
        by_key = {keys[unique[i]]: v for i, v in zip(shown, scores)}
        return [by_key.get(k, 0.0) for k in keys]

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        if len(choices) <= 1:
            return [1.0] * len(choices)
        shown = self._cap(question, choices, "entities")
        scores = self._scores("entities", question, [choices[i] for i in shown], _entity_groups)
        if scores is None:
            return self.offline.score_entities(question, choices)
        out = [0.0] * len(choices)
        for i, v in zip(shown, scores):
            out[i] = v
        return out

    def _cap(self, question: str, choices: Sequence[Choice], kind: str) -> list[int]:
        """Indexes of the choices shown to the model, in their order."""
        if kind == "relations":
            per_path: dict[str, list[int]] = {}
            for i, c in enumerate(choices):
                per_path.setdefault(c.path.tail.id, []).append(i)
            if len(choices) <= MAX_RELATIONS_STEP and all(len(v) <= MAX_RELATIONS_SHOWN for v in per_path.values()):
                return list(range(len(choices)))
            offline = self.offline.score_relations(question, choices)
            # each entity's best relations; past MAX_RELATIONS_STEP in all (the topics of a name many
            # entities share), every entity's best first, then every entity's second best, and so on
            ranked = [(rank, -offline[i], i) for found in per_path.values()
                      for rank, i in enumerate(sorted(found, key=lambda i: -offline[i])[:MAX_RELATIONS_SHOWN])]
            return sorted(i for _, _, i in sorted(ranked)[:MAX_RELATIONS_STEP])
        if len(choices) <= MAX_ENTITIES_SHOWN:
            return list(range(len(choices)))
        offline = self.offline.score_entities(question, choices)
        return sorted(sorted(range(len(choices)), key=lambda i: -offline[i])[:MAX_ENTITIES_SHOWN])

    def _scores(self, name: str, question: str, choices: Sequence[Choice], render) -> list[float] | None:
        p = prompt(name)
        parts = self._parts(p, question, list(choices), render)
        budget = current_budget()
        if len(parts) > 1:
            if budget is not None:
                budget.split(len(parts) - 1)
            for _ in parts[1:]:
                _count(self.client, "splits")
        out: list[float] = []
        for part in parts:
            listing, texts = render(part)
            scores = ask_strictly(self.client, p.messages(question=question, candidates=listing),
                                  lambda reply, texts=texts: parse_scores(reply, texts),
                                  temperature=self.client.settings.temperature_explore, purpose=p.name,
                                  reply_format=p.reply_format, schema=_schema_scores(len(texts)),
                                  max_tokens=reply_tokens(self.client, len(texts)))
            if scores is None:
                return None
            out.extend(scores.get(i, 0.0) for i in range(len(texts)))
        return out

    def _parts(self, p: Prompt, question: str, choices: list[Choice], render) -> list[list[Choice]]:
        """``choices`` in as few pieces as fit the model's context window."""
        listing, texts = render(choices)
        if len(choices) == 1 or self.client.fits(p.messages(question=question, candidates=listing),
                                                 reply_tokens(self.client, len(texts))):
            return [choices]
        half = len(choices) // 2
        return self._parts(p, question, choices[:half], render) + self._parts(p, question, choices[half:], render)


OFFLINE_STOP = 0.9  # the offline judge's own threshold, for a fallback judgement


class LLMReasoner:
    """The judge and the answer by the LLM (ToG-R's judge sees relation
    chains). A reply that cannot be read leaves the decision to the offline
    reasoner, and says so."""

    name = "llm"
    uses_llm = True

    def __init__(self, client: LLMClient | None = None, method: str = "tog", descriptions=None, **_: object) -> None:
        if client is None:
            from engine.errors import UnknownComponentError

            raise UnknownComponentError("the llm reasoner needs a model (--model or TOG_MODEL)")
        from engine.reasoning import OfflineReasoner

        self.client, self.method = client, method
        self.offline = OfflineReasoner(descriptions=descriptions)
        self.exemplars = list(descriptions.exemplars) if descriptions is not None else []

    def judge(self, question, topics, paths, next_relations, remaining=0, schema=None) -> float:
        if not paths or remaining <= 0:
            return 1.0  # the search stops here anyway: no call
        if self.method == "tog-r":
            p, shown = prompt("judge_chains"), _chains(paths)
        else:
            p, shown = prompt("judge"), [describe(q) for q in paths]
        reward = ask_strictly(self.client, p.messages(question=question, paths=numbered(shown),
                                                      next=_next_steps(paths, next_relations)),
                              parse_judgement, temperature=self.client.settings.temperature_reason, purpose=p.name,
                              reply_format=p.reply_format, schema=SCHEMA_JUDGE)
        if reward is None:
            offline = self.offline.judge(question, topics, paths, next_relations, remaining, schema)
            return 1.0 if offline >= OFFLINE_STOP else 0.0
        return reward

    def answer(self, question, topics, kept, candidates) -> Answer:
        if not kept:
            names = baseline_answer(self.client, "io", question)
            return Answer(names, from_kg=False, reason="no KG path reached an answer; the model's own knowledge")
        p = with_exemplars(prompt("answer"), self.exemplars, question, [t.name for t in topics])
        # an answer may be any entity a shown path passes, not only its end (the books an author wrote,
        # read off a path that goes on to their publishers): the ends first, then the entities on the way
        on_paths = [(q, h.node) for q in kept for h in q.hops]
        on_paths.sort(key=lambda item: item[1] is not item[0].tail)
        known = list(dict.fromkeys(node.name for _, node in on_paths)) or [q.tail.name for q in kept]
        got = ask_strictly(self.client, p.messages(question=question, paths=numbered([describe(q) for q in kept])),
                           lambda reply: parse_answer(reply, len(kept), known),
                           temperature=self.client.settings.temperature_reason, purpose="answer",
                           reply_format=p.reply_format, schema=_schema_answer(len(kept)))
        if got is None:
            fallback = self.offline.answer(question, topics, kept, candidates)
            fallback.reason = "the model's answer could not be read; the offline reasoner answered from the paths"
            return fallback
        names, cited = got
        key = " ".join
        used = [kept[i] for i in cited]
        ids: list[str] = []
        backed: list[Path] = []
        cited_first = sorted(on_paths, key=lambda item: all(item[0] is not q for q in used))
        for name in names:
            norm = key(name.casefold().split())
            found = next(((q, node) for q, node in cited_first if key(node.name.casefold().split()) == norm), None)
            if found is not None:
                match, node = found
                if node.id not in ids:
                    ids.append(node.id)
                if all(match.id != q.id for q in backed):
                    backed.append(match)
        # every answer backed by a kept path cites it, whether the reply said so or not
        cited_paths = list({q.id: q for q in [*used, *backed]}.values())
        from_kg = bool(backed) or (bool(used) and not names)
        reason = "the model's answer from the cited paths" if from_kg else "the model's own knowledge"
        return Answer(names, ids, [q.id for q in cited_paths], from_kg, reason)


class EmbeddingPruner:
    """Cosine similarity between the question and each verbalised candidate,
    by an embedding model through litellm (one call per beam step for the
    texts the cache does not hold yet), or, when none is named, by the local
    wordllama model (``engine/embeddings.py``: no download, no server)."""

    name = "embedding"
    uses_llm = False  # embeddings, not chat calls: outside the call budget

    def __init__(self, client: LLMClient | None = None, **_: object) -> None:
        self.embed: Callable[[list[str]], list[list[float]]]
        if client is not None and client.settings.embedding_model:
            self.embed = client.embed
        else:
            from engine.embeddings import embed, local_model

            local_model()  # a clear error now when wordllama is missing
            self.embed = embed

    def _scores(self, question: str, texts: list[str]) -> list[float]:
        import numpy as np

        if not texts:
            return []
        vectors = np.asarray(self.embed([question, *texts]), dtype=float)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        unit = vectors / norms[:, None]
        similarity = unit[1:] @ unit[0]
        return _normalise([float(x) for x in similarity])

    def score_relations(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, [c.text for c in choices])

    def score_entities(self, question: str, choices: Sequence[Choice]) -> list[float]:
        return self._scores(question, [c.text for c in choices])


MAX_NEXT_SHOWN = 30


def _next_steps(paths: Sequence[Path], next_relations) -> str:
    """The relations the walk could follow from the kept paths' ends (what
    one more depth could add), at most ``MAX_NEXT_SHOWN``."""
    seen: dict[str, None] = {}
    for q in paths:
        for rel in next_relations.get(q.id, ()) if q.id in next_relations else ():
            seen.setdefault(step(rel)[:-3].rstrip(), None)
            if len(seen) >= MAX_NEXT_SHOWN:
                break
    return "; ".join(seen) if seen else "none"


def _chains(paths: Sequence[Path]) -> list[str]:
    """ToG-R's view: one line per relation chain with the entities it reached."""
    groups: dict[tuple, list[Path]] = {}
    for q in paths:
        groups.setdefault((q.topic.id, q.chain), []).append(q)
    out = []
    for group in groups.values():
        tails = ", ".join(dict.fromkeys(q.tail.name for q in group))
        head = " ".join([group[0].topic.name, *(step(h.relation, h.relation_text) for h in group[0].hops)])
        out.append(f"{head[:-3].rstrip()}: {tails}")
    return out


def extract_topics(client: LLMClient, question: str) -> list[str]:
    """Names of the question's topic entities, by the LLM (copied from the question)."""
    p = prompt("topics")
    got = ask_strictly(client, p.messages(question=question), lambda reply: parse_entities(reply, question),
                       temperature=client.settings.temperature_reason, purpose="topics", reply_format=p.reply_format,
                       schema=SCHEMA_TOPICS)
    return got or []


def baseline_answer(client: LLMClient, method: str, question: str) -> list[str]:
    """IO or CoT prompting: the model answers alone, no knowledge graph."""
    p = prompt(method)
    got = ask_strictly(client, p.messages(question=question), lambda reply: parse_answer(reply, 0),
                       temperature=client.settings.temperature_reason, purpose=method, reply_format=p.reply_format,
                       schema=_schema_answer(0))
    return got[0] if got else []



# -- the planner's roles (``--method plan``, engine/planner.py) -------------------

SCHEMA_NEXT = {"type": "object", "additionalProperties": False, "required": ["next"],
               "properties": {"next": {"type": "array", "maxItems": 5, "items": {"type": "string"}}}}


class _Role:
    """One planner role by the LLM, its offline counterpart deciding when a reply cannot be read."""

    uses_llm = True

    def __init__(self, client: LLMClient, offline) -> None:
        self.client, self.offline = client, offline

    def _scores(self, name: str, question: str, context: str, texts: Sequence[str]) -> dict[int, float] | None:
        p = prompt(name)
        return ask_strictly(self.client, p.messages(question=question, context=context, candidates=numbered(texts)),
                            lambda reply: parse_scores(reply, texts),
                            temperature=self.client.settings.temperature_explore, purpose=name,
                            reply_format=p.reply_format, schema=_schema_scores(len(texts)),
                            max_tokens=reply_tokens(self.client, len(texts)))


class LLMActor(_Role):
    """Proposes the steps the model scores best, out of at most ``MAX_RELATIONS_SHOWN`` shown
    (a longer list is cut to the offline scorer's best first)."""

    def propose(self, question: str, context: str, options, n: int) -> list[int]:
        from engine.planner import _option_text

        if not options:
            return []
        shown = list(range(len(options))) if len(options) <= MAX_RELATIONS_SHOWN else \
            sorted(self.offline.propose(question, context, options, MAX_RELATIONS_SHOWN))
        scores = self._scores("actor", question, context, [_option_text(*options[i]) for i in shown])
        if scores is None:
            return self.offline.propose(question, context, options, n)
        ranked = sorted(range(len(shown)), key=lambda k: -scores.get(k, 0.0))
        return [shown[k] for k in ranked if scores.get(k, 0.0) > 0][:n] or [shown[ranked[0]]]


class LLMModel(_Role):
    """The simulated knowledge base: one call per proposed trajectory (no KG lookup)."""

    def predict(self, question: str, context: str, trajectories) -> list[list[Relation]]:
        from engine.planner import foreseen

        p = prompt("model")
        out: list[list[Relation]] = []
        for t in trajectories:
            names = ask_strictly(self.client, p.messages(question=question, context=context, walk=f"{t.text()} -> ?"),
                                 parse_next, temperature=self.client.settings.temperature_explore, purpose="model",
                                 reply_format=p.reply_format, schema=SCHEMA_NEXT)
            if names is None:
                out.extend(self.offline.predict(question, context, [t]))
            else:
                out.append([foreseen(n) for n in names])
        return out


class LLMCritic(_Role):
    """Scores every trajectory of a lookahead level in one call."""

    def evaluate(self, question: str, context: str, topics, trajectories) -> list[float]:
        if not trajectories:
            return []
        scores = self._scores("critic", question, context, [t.text() for t in trajectories])
        if scores is None:
            return self.offline.evaluate(question, context, topics, trajectories)
        return [scores.get(i, 0.0) for i in range(len(trajectories))]
