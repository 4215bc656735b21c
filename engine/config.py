"""Settings of ``ask`` and ``eval``: one object that owns the defaults, the
ranges and choices (from the registries), the validation, and the building
of the engine's parts.

``OPTIONS`` describes every setting once; the CLI makes its options from it
(``engine.cli.search_options``), the config file's keys are checked against
it, and :class:`Settings` validates a set of values against it.
:meth:`Settings.open` builds what answers questions: the search config, the
pruner, the reasoner, the LLM client and the relation descriptions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import TogError
from engine.search import BASELINES, LIMITS, METHODS, SearchConfig

if TYPE_CHECKING:
    from engine.descriptions import Descriptions
    from engine.evaluate import Question
    from engine.llm import LLMClient
    from engine.pruning import Pruner
    from engine.reasoning import Reasoner
    from engine.runs import AskResult
    from engine.store import Store


class SettingsError(TogError):
    """Settings that do not go together, or a value out of its range (a usage error)."""


def _pruners() -> list[str]:
    from engine.pruning import PRUNERS

    return list(PRUNERS)


def _reasoners() -> list[str]:
    from engine.reasoning import REASONERS

    return list(REASONERS)


@dataclass(frozen=True)
class Option:
    """One setting: its key, type, default, help, and what values it takes.

    ``limits`` (min, max; None for no bound) for numbers; ``choices`` a
    function giving the names a registry holds; ``flags`` the command-line
    spellings after ``--NAME`` (``-n``); ``toggle`` a ``--x/--no-x`` pair."""

    name: str
    kind: type
    default: Any
    help: str
    limits: tuple[float | None, float | None] | None = None
    choices: Callable[[], Sequence[str]] | None = None
    flags: tuple[str, ...] = ()
    envvar: str | None = None
    toggle: str | None = None  # the option's name as a --x/--no-x pair, when it differs from NAME
    flag: bool = False  # a switch that only turns on

    @property
    def cli_name(self) -> str:
        return "--" + self.name.replace("_", "-")


OPTIONS: tuple[Option, ...] = (
    Option("width", int, 3, "Beam width N: paths kept per depth.", LIMITS["width"], flags=("-n",)),
    Option("depth", int, 3, "Maximum search depth D.", LIMITS["depth"], flags=("-d",)),
    Option("method", str, "tog", "ToG scores entities; ToG-R keeps relation chains and samples entities; plan "
           "looks ahead with an actor, a model and a critic before each step; kg-llm-once reads the topic's "
           "neighbourhood once and answers in one step; io and cot ask the LLM alone (baselines, no KG).",
           choices=lambda: [*METHODS, *BASELINES]),
    Option("pruner", str, None, "How candidate paths are scored [default: llm with --model, else hybrid].",
           choices=_pruners),
    Option("reasoner", str, None, "Who judges and answers [default: llm with --model, else offline].",
           choices=_reasoners),
    Option("threshold", float, None, "Stop once the judge's reward reaches this [default: 0.5 for the LLM judge, "
           "whose reward is its probability that the paths suffice; 0.9 offline].", LIMITS["threshold"]),
    Option("max_candidates", int, 100, "Neighbours fetched per (entity, relation).", LIMITS["max_candidates"]),
    Option("sample_over", int, None, "ToG's rule for crowded relations: an (entity, relation) with this many "
           "neighbours or more offers only --sample-size of them; 0 turns it off [default: 20, ToG's, when an "
           "LLM prunes; else 0].", LIMITS["sample_over"]),
    Option("sample_size", int, 5, "Neighbours a crowded relation offers (ToG's num_retain_entity).",
           LIMITS["sample_size"]),
    Option("seed", int, 0, "Seed for tie-breaks and sampling."),
    Option("lookahead", int, 3, "--method plan: simulated steps the planner looks ahead per real step (U).",
           LIMITS["lookahead"]),
    Option("proposals", int, 5, "--method plan: actions the Actor proposes per lookahead step (N).",
           LIMITS["proposals"]),
    Option("max_steps", int, 0, "--method plan: real steps at most (T) [0: --depth].", LIMITS["max_steps"]),
    Option("refresh_at", float, 0.34, "--method plan: Enough-NewInfo, how much the kept paths' answers or the "
           "judge's reward must change before the roles' context is rebuilt.", LIMITS["refresh_at"]),
    Option("relation_descriptions", Path, None, "TOML file giving the KG's relations other names and kinds "
           "(\"spouse\": husband, wife, other half), read by the offline scorers; see the README."),
    Option("record", bool, True, "Keep the run as path nodes in the store.", toggle="record"),
    Option("model", str, None, "Any model litellm reaches: gpt-4o-mini, ollama/llama2, hosted_vllm/meta-llama/"
           "Llama-2-7b-chat-hf ... (API keys from the provider's usual variable, e.g. OPENAI_API_KEY). Without "
           "it, no LLM is used.", envvar="TOG_MODEL"),
    Option("api_base", str, None, "Endpoint of the model's server (Ollama, vLLM, any OpenAI-compatible one).",
           envvar="TOG_API_BASE"),
    Option("embedding_model", str, None, "Embedding model for --pruner embedding, through litellm "
           "(text-embedding-3-small, ollama/nomic-embed-text ...) [default: the local wordllama model, no "
           "download].", envvar="TOG_EMBEDDING_MODEL"),
    Option("soft_match", bool, False, "The offline scorers also take a question word for a relation's word "
           "when the local wordllama model finds them similar (writer ~ author, painter ~ artist).",
           toggle="soft-match"),
    Option("temperature_explore", float, 0.4, "Temperature of pruning calls.", (0, 2)),
    Option("temperature_reason", float, 0.0, "Temperature of judging and answering calls.", (0, 2)),
    Option("max_tokens", int, 256, "Most tokens per LLM reply.", (1, None)),
    Option("llm_cache", bool, True, "Answer temperature-0 LLM calls from the response cache ($TOG_CACHE_DIR, "
           "default ~/.cache/tog).", toggle="cache"),
    Option("cache_sampled", bool, False, "Cache sampled (temperature > 0) calls too.", flag=True),
    Option("llm_timeout", float, 60.0, "Seconds per LLM call.", (1, None)),
    Option("llm_retries", int, 4, "Retries of a call on rate limits, timeouts and server errors (with backoff).",
           (0, 20)),
    Option("structured", str, "auto", "JSON-schema constrained replies: auto (when litellm's model map says the "
           "model supports them), on, off (free text, read tolerantly).", choices=lambda: ["auto", "on", "off"]),
    Option("strict_llm", bool, False, "An LLM reply that cannot be read (even when asked again) is an error, "
           "not a fallback to the offline component.", flag=True),
)
BY_NAME = {o.name: o for o in OPTIONS}
# keys a config file may also set (options of `eval` and the store)
FILE_KEYS = frozenset(BY_NAME) | {"store", "concurrency"}


@dataclass(frozen=True)
class Settings:
    """Validated values of every option; unknown keys are refused."""

    width: int = 3
    depth: int = 3
    method: str = "tog"
    pruner: str | None = None
    reasoner: str | None = None
    threshold: float | None = None
    max_candidates: int = 100
    sample_over: int | None = None
    sample_size: int = 5
    seed: int = 0
    lookahead: int = 3
    proposals: int = 5
    max_steps: int = 0
    refresh_at: float = 0.34
    relation_descriptions: Path | None = None
    record: bool = True
    model: str | None = None
    api_base: str | None = None
    embedding_model: str | None = None
    soft_match: bool = False
    temperature_explore: float = 0.4
    temperature_reason: float = 0.0
    max_tokens: int = 256
    llm_cache: bool = True
    cache_sampled: bool = False
    llm_timeout: float = 60.0
    llm_retries: int = 4
    structured: str = "auto"
    strict_llm: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Settings:
        """Settings from option values (None means the default)."""
        unknown = sorted(set(options) - set(BY_NAME))
        if unknown:
            raise SettingsError(f"unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}")
        return cls(**{k: v for k, v in options.items() if v is not None or BY_NAME[k].default is None})

    def __post_init__(self) -> None:
        for o in OPTIONS:
            value = getattr(self, o.name)
            if value is None:
                continue
            if o.limits is not None:
                lo, hi = o.limits
                if (lo is not None and value < lo) or (hi is not None and value > hi):
                    bounds = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
                    raise SettingsError(f"{o.cli_name} must be {bounds}, not {value}")
            if o.choices is not None and value not in o.choices():
                raise SettingsError(f"unknown {o.name} {value!r}; use one of {', '.join(o.choices())}")
        for kind, name in (("pruner", self.pruner_name), ("reasoner", self.reasoner_name)):
            if name == "llm" and not self.model:
                raise SettingsError(f"--{kind} llm needs a model: --model NAME (or TOG_MODEL)")
        if self.method in BASELINES and not self.model:
            raise SettingsError(f"--method {self.method} asks the LLM alone: --model NAME (or TOG_MODEL)")

    # -- what the defaults resolve to ----------------------------------------------
    @property
    def pruner_name(self) -> str:
        return self.pruner or ("llm" if self.model else "hybrid")

    @property
    def reasoner_name(self) -> str:
        return self.reasoner or ("llm" if self.model else "offline")

    @property
    def sample_from(self) -> int:
        """ToG's crowded-relation rule: on (20) by default when an LLM prunes."""
        if self.sample_over is not None:
            return self.sample_over
        return 20 if self.pruner_name == "llm" else 0

    @property
    def stop_at(self) -> float:
        """The judge's reward that stops the search (the LLM judge's is a probability)."""
        if self.threshold is not None:
            return self.threshold
        return 0.5 if self.reasoner_name == "llm" else 0.9

    def search_config(self) -> SearchConfig:
        return SearchConfig(width=self.width, depth=self.depth, method=self.method, threshold=self.stop_at,
                            max_candidates=self.max_candidates, sample_over=self.sample_from,
                            sample_size=self.sample_size, seed=self.seed, lookahead=self.lookahead,
                            proposals=self.proposals, max_steps=self.max_steps, refresh_at=self.refresh_at)

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    # -- building ---------------------------------------------------------------------
    def parts(self, llm: LLMClient | None, descriptions: Descriptions | None) -> tuple[Pruner, Reasoner]:
        """The pruner and the reasoner these settings name."""
        from engine.pruning import get_pruner
        from engine.reasoning import get_reasoner

        return (get_pruner(self.pruner_name, seed=self.seed, client=llm, descriptions=descriptions,
                           soft_match=self.soft_match),
                get_reasoner(self.reasoner_name, client=llm, method=self.method, descriptions=descriptions,
                             soft_match=self.soft_match))

    def open(self, concurrency: int = 1) -> Engine:
        """The parts that answer questions (close it, or use it as a context
        manager: it holds the LLM client's cache)."""

        llm = None
        if self.model or self.embedding_model:
            from engine.llm import LLMClient, LLMSettings

            llm = LLMClient(LLMSettings(
                model=self.model or "", embedding_model=self.embedding_model, api_base=self.api_base,
                temperature_explore=self.temperature_explore, temperature_reason=self.temperature_reason,
                max_tokens=self.max_tokens, timeout=self.llm_timeout, retries=self.llm_retries,
                cache=self.llm_cache, cache_sampled=self.cache_sampled and self.llm_cache,
                max_in_flight=max(1, concurrency), structured=self.structured, strict=self.strict_llm))
        try:
            descriptions, extra = None, dict[str, Any]()
            if self.relation_descriptions is not None:
                from engine.descriptions import Descriptions

                descriptions = Descriptions.load(self.relation_descriptions)
                extra = {"relation_descriptions": str(self.relation_descriptions)}
            if llm is not None:
                extra["llm"] = llm.describe()
            if self.soft_match:
                extra["soft_match"] = True
            pruner, reasoner = self.parts(llm, descriptions)
            return Engine(self, self.search_config(), pruner, reasoner, llm, descriptions, extra)
        except BaseException:
            if llm is not None:
                llm.close()
            raise


@dataclass
class Engine:
    """What answers questions with one set of settings."""

    settings: Settings
    config: SearchConfig
    pruner: Pruner
    reasoner: Reasoner
    llm: LLMClient | None = None
    descriptions: Descriptions | None = None
    extra: dict = field(default_factory=dict)  # what runs record besides the search config
    tags: dict = field(default_factory=dict)  # recorded with each run, not part of the settings (eval's retention)

    _adopted: str | None = field(default=None, repr=False)

    def adopt(self, store: Store) -> None:
        """Use the learned file the store keeps (``tog learn --into-store``)
        unless the settings name a description file (that one wins)."""
        if self.settings.relation_descriptions is not None or self._adopted == store.name or store.runs is None:
            return
        self._adopted = store.name
        text = store.runs.learned()
        if not text:
            return
        from engine.descriptions import Descriptions

        self.descriptions = Descriptions.from_text(text, f"the learned file kept in {store.name}")
        self.pruner, self.reasoner = self.settings.parts(self.llm, self.descriptions)
        self.extra["relation_descriptions"] = "kept in the store (tog learn --into-store)"

    def ask(self, store: Store, question: str, topics: Sequence[str] = ()) -> AskResult:
        """Link, search and (when the settings say ``record``) keep the run."""
        from engine.runs import ask

        self.adopt(store)
        return ask(store, question, self.pruner, self.reasoner, self.config, topics, record=self.settings.record,
                   extra_config={**self.extra, **self.tags}, llm=self.llm, descriptions=self.descriptions)

    def describe(self) -> dict:
        """What produced the answers: the search, the components and the model (no credentials)."""
        return {"search": dataclasses.asdict(self.config), "pruner": self.pruner.name,
                "reasoner": self.reasoner.name, **self.extra}

    def answer_row(self, store: Store, q: Question) -> dict:
        """One question of an evaluation, as its results-file row (without the scores)."""
        from engine.evaluate import result_row, topics_for

        return result_row(self.ask(store, q.question, topics_for(store.kg, q)))

    def close(self) -> None:
        if self.llm is not None:
            self.llm.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
