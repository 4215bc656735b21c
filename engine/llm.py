"""Every LLM call of the engine goes through here, and through litellm.

This is the only module that imports litellm, and only when the first call
is made (the import costs about 3 s); ``LITELLM_LOCAL_MODEL_COST_MAP`` is set
first, so litellm reads its bundled price list instead of fetching one.

Per call: a timeout; bounded retries with exponential backoff (honouring a
provider's retry-after) on rate limits, timeouts, connection failures and
5xx answers; no retry on refused credentials or rejected requests. Failures
become :class:`engine.errors.LLMError` subclasses that name the model and
provider. Temperature-0 calls are answered from a persistent cache when the
same model saw the same messages and parameters before (sampled calls only
when asked); the key holds no credentials: litellm reads API keys from the
environment and they never pass through this module. Usage (calls, tokens,
cost, seconds, retries, cache hits) is summed per run and per evaluation.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

from engine.errors import LLMAuthError, LLMError, LLMRequestError, LLMUnavailableError

T = TypeVar("T")
CACHE_VERSION = 2
DEFAULT_CONTEXT_WINDOW = 4096  # models litellm does not know (Llama-2's window)
MAX_WAIT = 60.0

_litellm_module = None
_litellm_lock = threading.Lock()


def litellm():
    """The litellm module, imported on first use with the local price list."""
    global _litellm_module
    with _litellm_lock:
        if _litellm_module is None:
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
            import litellm as module

            import logging

            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
                logging.getLogger(name).setLevel(logging.WARNING)  # its INFO lines would mix into our output
            module.suppress_debug_info = True
            module.telemetry = False
            module.drop_params = True  # a parameter a provider lacks is dropped, not an error
            _litellm_module = module
    return _litellm_module


def cache_dir() -> Path:
    """Where tog keeps what outlives a process but not the user's files:
    $TOG_CACHE_DIR, or ~/.cache/tog."""
    return Path(os.environ.get("TOG_CACHE_DIR") or Path.home() / ".cache" / "tog")


def _default_cache_path() -> Path:
    return cache_dir() / "llm-cache.sqlite"


@dataclass(frozen=True)
class LLMSettings:
    """Which model, how to call it, and what may be cached."""

    model: str
    api_base: str | None = None
    temperature_explore: float = 0.4   # pruning
    temperature_reason: float = 0.0    # judging and answering
    max_tokens: int = 256
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 1.0               # first wait in seconds; doubles per retry
    cache: bool = True                 # temperature-0 calls
    cache_sampled: bool = False        # calls with temperature > 0 too
    cache_path: Path | None = None     # default: $TOG_CACHE_DIR or ~/.cache/tog
    context_window: int | None = None  # default: litellm's model info, else 4096
    max_in_flight: int = 8             # concurrent calls at most
    embedding_model: str | None = None  # for the embedding pruner
    structured: str = "auto"           # JSON-schema replies: auto (when litellm says the model can), on, off
    strict: bool = False               # an unreadable reply is an error, not an offline fallback

    def with_(self, **changes) -> LLMSettings:
        return replace(self, **changes)


@dataclass
class Usage:
    """What LLM calls cost, summed; ``calls`` are the ones a provider answered."""

    calls: int = 0
    cache_hits: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = 0.0   # None once any answered call had no known price
    seconds: float = 0.0
    retries: int = 0
    repairs: int = 0           # malformed replies asked again
    fallbacks: int = 0         # replies given up on (the offline component decided instead)
    splits: int = 0            # extra calls of lists split to fit the context window
    by_purpose: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, purpose: str, tokens_in: int, tokens_out: int, cost: float | None, seconds: float,
            cached: bool, retries: int = 0) -> None:
        with self._lock:
            self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) + 1
            if cached:
                self.cache_hits += 1
                return
            self.calls += 1
            self.tokens_in += tokens_in
            self.tokens_out += tokens_out
            self.cost = None if cost is None or self.cost is None else self.cost + cost
            self.seconds += seconds
            self.retries += retries

    def count(self, what: str) -> None:
        with self._lock:
            setattr(self, what, getattr(self, what) + 1)

    def to_dict(self) -> dict:
        return {"llm_calls": self.calls, "llm_cache_hits": self.cache_hits, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "cost": None if self.cost is None else round(self.cost, 8),
                "llm_seconds": round(self.seconds, 6), "llm_retries": self.retries,
                "llm_repairs": self.repairs, "llm_fallbacks": self.fallbacks, "llm_splits": self.splits,
                "llm_calls_by_purpose": dict(self.by_purpose)}


_current: contextvars.ContextVar[Usage | None] = contextvars.ContextVar("tog_llm_usage", default=None)


@dataclass
class CallBudget:
    """A question's hard limit on chat calls, repairs included.

    ``ahead`` is how many calls the search's plan still needs after the one
    being made (the search says so before each step); a repair is asked only
    when it leaves room for them. Lists split to fit the context window are
    the one exception: each extra part raises the limit and is counted."""

    limit: int
    ahead: int = 0
    spent: int = 0
    splits: int = 0

    def spare(self) -> bool:
        """Is there room for one more call besides the plan?"""
        return self.spent + self.ahead < self.limit

    def split(self, extra: int) -> None:
        self.limit += extra
        self.splits += extra


_budget: contextvars.ContextVar[CallBudget | None] = contextvars.ContextVar("tog_llm_budget", default=None)


@contextlib.contextmanager
def _scoped(var: contextvars.ContextVar, value: T) -> Iterator[T]:
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


def budgeting(budget: CallBudget) -> contextlib.AbstractContextManager[CallBudget]:
    """Count the chat calls made inside the block against ``budget``."""
    return _scoped(_budget, budget)


def current_budget() -> CallBudget | None:
    return _budget.get()


def plan_calls(ahead: int) -> None:
    """Tell the question's budget how many calls the plan still needs after the next one."""
    budget = _budget.get()
    if budget is not None:
        budget.ahead = max(0, ahead)


def tracking(usage: Usage) -> contextlib.AbstractContextManager[Usage]:
    """Sum the LLM calls made inside the block (in this thread) into ``usage``."""
    return _scoped(_current, usage)


def current_usage() -> Usage | None:
    return _current.get()


class ResponseCache:
    """Replies by request key in a SQLite file, safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, model TEXT, "
                         "created REAL, reply TEXT)")
        self._db.commit()
        self._lock = threading.Lock()

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, model: str, reply: dict) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?)",
                             (key, model, time.time(), json.dumps(reply)))
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _public_base(api_base: str | None) -> str | None:
    """The endpoint without any user:password or query string (never cached or printed)."""
    if not api_base:
        return None
    parts = urlsplit(api_base)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def cache_key(model: str, api_base: str | None, messages: Sequence[dict], temperature: float,
              max_tokens: int, response_format: dict | None = None) -> str:
    blob = json.dumps({"v": CACHE_VERSION, "model": model, "api_base": _public_base(api_base),
                       "messages": list(messages), "temperature": temperature, "max_tokens": max_tokens,
                       "response_format": response_format},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class LLMClient:
    """Calls one model through litellm with retries, a cache and usage counts."""

    def __init__(self, settings: LLMSettings) -> None:
        if not (settings.model or "").strip() and not settings.embedding_model:
            raise LLMRequestError("no model named (--model or TOG_MODEL)")
        self.settings = settings
        self.total = Usage()
        self._slots = threading.BoundedSemaphore(max(1, settings.max_in_flight))
        self._cache: ResponseCache | None = None
        if settings.cache or settings.cache_sampled:
            path = settings.cache_path or _default_cache_path()
            try:
                self._cache = ResponseCache(path)
            except (OSError, sqlite3.Error) as e:
                raise LLMError(f"cannot open the LLM cache at {path}: {e}") from None
        self._provider: str | None = None
        self._window: int | None = settings.context_window
        self._structured: bool | None = None
        self._credentials_checked = False

    # -- facts about the model ------------------------------------------------
    @property
    def provider(self) -> str:
        if self._provider is None:
            try:
                self._provider = litellm().get_llm_provider(self.settings.model or self.settings.embedding_model,
                                                            api_base=self.settings.api_base)[1]
            except Exception:  # litellm raises its own types for unknown routes
                self._provider = "unknown"
        return self._provider

    @property
    def context_window(self) -> int:
        """Input tokens the model takes (litellm's model info; 4096 when unknown)."""
        if self._window is None:
            try:
                info = litellm().get_model_info(self.settings.model)
                self._window = int(info.get("max_input_tokens") or info.get("max_tokens") or DEFAULT_CONTEXT_WINDOW)
            except Exception:  # an unmapped model: assume a small window
                self._window = DEFAULT_CONTEXT_WINDOW
        return self._window

    @property
    def structured(self) -> bool:
        """Are replies constrained by a JSON schema? ``auto``: when litellm's
        model map says the model supports response schemas."""
        mode = self.settings.structured
        if mode in ("on", "off"):
            return mode == "on"
        if self._structured is None:
            try:
                self._structured = bool(litellm().supports_response_schema(
                    model=self.settings.model, custom_llm_provider=None))
            except Exception:  # an unmapped model: free text, read tolerantly
                self._structured = False
        return self._structured

    def describe(self) -> dict:
        """What a run records about the model: never credentials, only the endpoint's host."""
        from engine.agent import prompts_hash

        s = self.settings
        host = urlsplit(s.api_base).hostname if s.api_base else None
        return {"model": s.model or None, "host": host, "embedding_model": s.embedding_model,
                "temperature_explore": s.temperature_explore, "temperature_reason": s.temperature_reason,
                "max_tokens": s.max_tokens, "structured": s.structured, "prompts": prompts_hash()}

    @staticmethod
    def count_tokens(messages: Sequence[dict]) -> int:
        """A local estimate (about four characters a token): no tokenizer is
        downloaded at run time; providers report the real counts."""
        return sum(len(m.get("content") or "") for m in messages) // 4 + 4 * len(messages)

    def fits(self, messages: Sequence[dict], max_tokens: int | None = None) -> bool:
        return self.count_tokens(messages) + (max_tokens or self.settings.max_tokens) <= self.context_window

    # -- calls ----------------------------------------------------------------
    def complete(self, messages: Sequence[dict], *, temperature: float, purpose: str,
                 schema: dict | None = None, max_tokens: int | None = None) -> str:
        """The model's reply text to ``messages``; with ``schema`` (a JSON
        schema) and structured replies on, the provider is asked to keep to it."""
        s = self.settings
        if not (s.model or "").strip():
            raise LLMRequestError("no model named (--model or TOG_MODEL)")
        max_tokens = max_tokens or s.max_tokens
        response_format = None
        if schema is not None and self.structured:
            response_format = {"type": "json_schema",
                               "json_schema": {"name": purpose.replace("-", "_"), "schema": schema, "strict": True}}
        budget = _budget.get()
        if budget is not None:
            budget.spent += 1
        cache = self._cache if (temperature == 0 and s.cache) or (temperature > 0 and s.cache_sampled) else None
        key = cache_key(s.model, s.api_base, messages, temperature, max_tokens, response_format) \
            if cache is not None else None
        if cache is not None and key is not None:
            hit = cache.get(key)
            if hit is not None:
                self._record(purpose, 0, 0, 0.0, 0.0, cached=True)
                return hit["text"]
        with self._slots:
            text, tokens_in, tokens_out, cost, seconds, retries = self._call(messages, temperature, max_tokens,
                                                                             response_format)
        self._record(purpose, tokens_in, tokens_out, cost, seconds, cached=False, retries=retries)
        if cache is not None and key is not None:
            cache.put(key, s.model, {"text": text, "tokens_in": tokens_in, "tokens_out": tokens_out,
                                           "cost": cost})
        return text

    def _record(self, purpose, tokens_in, tokens_out, cost, seconds, cached, retries=0) -> None:
        for usage in (self.total, _current.get()):
            if usage is not None:
                usage.add(purpose, tokens_in, tokens_out, cost, seconds, cached, retries)

    def _call(self, messages, temperature, max_tokens, response_format):
        s = self.settings
        extra: dict = {}
        if response_format is not None:
            extra["response_format"] = response_format
        if self.provider in ("ollama", "ollama_chat"):
            extra["num_ctx"] = self.context_window  # Ollama's own default (2048) would cut prompts silently
        self._check_credentials()
        response, seconds, retries = self._with_retries(
            s.model, lambda lm: lm.completion(model=s.model, messages=list(messages), temperature=temperature,
                                              max_tokens=max_tokens, api_base=s.api_base, timeout=s.timeout,
                                              num_retries=0, **extra))
        text = (response.choices[0].message.content or "") if response.choices else ""
        usage = getattr(response, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        return text, tokens_in, tokens_out, _cost(response), seconds, retries

    def _check_credentials(self) -> None:
        """A provider's key variable that is not set is one clear line, before any call (never retried)."""
        if self._credentials_checked:
            return
        s = self.settings
        try:
            found = litellm().validate_environment(model=s.model, api_base=s.api_base)
        except Exception:  # a route litellm cannot check: the call will say
            found = {}
        missing = [k for k in (found.get("missing_keys") or []) if isinstance(k, str) and k.endswith(("_KEY", "_TOKEN", "_SECRET"))]
        if missing:
            names = " / ".join(missing)
            hint = " (a local OpenAI-compatible server that needs no key takes any value)" \
                if s.api_base and self.provider == "openai" else ""
            raise LLMAuthError(f"LLM {s.model} ({self.provider}) needs {names}, which is not set{hint}",
                               model=s.model, provider=self.provider)
        self._credentials_checked = True

    def embed(self, texts: Sequence[str], purpose: str = "embedding") -> list[list[float]]:
        """One vector per text from the embedding model (cached per text)."""
        s = self.settings
        model = s.embedding_model
        if not model:
            raise LLMRequestError("no embedding model named (--embedding-model or TOG_EMBEDDING_MODEL)")
        out: dict[int, list[float]] = {}
        keys = {}
        if self._cache is not None and s.cache:
            for i, t in enumerate(texts):
                keys[i] = cache_key(model, s.api_base, [{"role": "embed", "content": t}], 0.0, 0)
                hit = self._cache.get(keys[i])
                if hit is not None:
                    out[i] = hit["vector"]
            if out:
                self._record(purpose, 0, 0, 0.0, 0.0, cached=True)
        todo = [i for i in range(len(texts)) if i not in out]
        if todo:
            with self._slots:
                response, seconds, retries = self._with_retries(
                    model, lambda lm: lm.embedding(model=model, input=[texts[i] for i in todo], api_base=s.api_base,
                                                   timeout=s.timeout, num_retries=0))
            data = sorted(response.data, key=lambda d: d["index"] if isinstance(d, dict) else d.index)
            if len(data) != len(todo):
                raise LLMRequestError(f"embedding model {model} returned {len(data)} vectors for {len(todo)} texts",
                                      model=model, provider=self.provider)
            usage = getattr(response, "usage", None)
            self._record(purpose, int(getattr(usage, "prompt_tokens", 0) or 0), 0, _cost(response), seconds,
                         cached=False, retries=retries)
            for i, d in zip(todo, data):
                vector = [float(x) for x in (d["embedding"] if isinstance(d, dict) else d.embedding)]
                out[i] = vector
                if i in keys and self._cache is not None:
                    self._cache.put(keys[i], model, {"vector": vector})
        return [out[i] for i in range(len(texts))]

    def _with_retries(self, model: str, call):
        """(``call(litellm)``'s response, seconds of the answered attempt, retries)."""
        lm = litellm()
        s = self.settings
        retryable = (lm.RateLimitError, lm.Timeout, lm.APIConnectionError, lm.InternalServerError,
                     lm.ServiceUnavailableError, lm.BadGatewayError)
        refused = (lm.AuthenticationError, lm.PermissionDeniedError)
        rejected = (lm.BadRequestError, lm.NotFoundError, lm.UnprocessableEntityError,
                    lm.UnsupportedParamsError, lm.ContentPolicyViolationError)
        retries = 0
        while True:
            started = time.perf_counter()
            try:
                response = call(lm)
            except refused as e:
                raise self._error(LLMAuthError, "refused the credentials", e, model=model) from None
            except rejected as e:
                raise self._error(LLMRequestError, "rejected the request", e, model=model) from None
            except retryable as e:
                wait_asked = _retry_after(e)
                refused_conn = _connection_refused(e)
                if retries >= s.retries or (refused_conn and retries >= 1):
                    raise self._error(LLMUnavailableError, f"failed after {retries + 1} attempts", e,
                                      wait_asked, model=model) from None
                wait = s.backoff * (2 ** retries) * (0.75 + random.random() / 2)
                time.sleep(min(MAX_WAIT, max(wait, wait_asked or 0.0)))
                retries += 1
                continue
            except lm.APIError as e:  # other provider errors: 5xx are worth another try
                status = getattr(e, "status_code", None) or 0
                if status >= 500 and retries < s.retries:
                    time.sleep(min(MAX_WAIT, s.backoff * (2 ** retries)))
                    retries += 1
                    continue
                raise self._error(LLMUnavailableError if status >= 500 else LLMRequestError, "failed", e,
                                  model=model) from None
            return response, time.perf_counter() - started, retries

    def _error(self, kind, what: str, e: Exception, retry_after: float | None = None, *,
               model: str | None = None) -> LLMError:
        model = model or self.settings.model
        from urllib.parse import parse_qsl

        from engine.text import redact

        base = urlsplit(self.settings.api_base or "")
        extra = tuple(x for x in (base.password or "", *(v for _, v in parse_qsl(base.query)))
                      if x)
        detail = redact(" ".join(str(getattr(e, "message", None) or e).split()), extra)
        if _connection_refused(e):
            where = _public_base(self.settings.api_base) or "the provider"
            return kind(f"LLM {model}: connection refused by {where} (is the model's server running?)",
                        model=model, provider=self.provider, retry_after=retry_after)
        detail = _last_message(detail)
        if len(detail) > 300:
            detail = detail[:300] + "…"
        provider = getattr(e, "llm_provider", None) or self.provider
        return kind(f"LLM {model} ({provider}) {what}: {type(e).__name__}: {detail}",
                    model=model, provider=provider, retry_after=retry_after)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()


def _connection_refused(e: BaseException) -> bool:
    """Did the call fail because nothing listens at the endpoint? (litellm
    wraps the socket's error as a generic connection or server error)."""
    seen = 0
    x: BaseException | None = e
    while x is not None and seen < 12:
        text = str(x).lower()
        if isinstance(x, ConnectionRefusedError) or "connection refused" in text or "connect call failed" in text:
            return True
        x = x.__cause__ or x.__context__
        seen += 1
    return False


def _last_message(detail: str) -> str:
    """litellm nests provider messages ("litellm.X: litellm.Y: text"): keep the innermost."""
    while True:
        head, sep, rest = detail.partition(": ")
        if sep and head.startswith("litellm.") and " " not in head:
            detail = rest
            continue
        return detail


def _cost(response) -> float | None:
    """The call's price from litellm's list; None for a model without a price."""
    try:
        return float(litellm().completion_cost(completion_response=response))
    except Exception:  # an unknown model is not an error
        return None


def _retry_after(e: Exception) -> float | None:
    """Seconds a provider asked to wait (``Retry-After`` header), if it said."""
    headers = getattr(e, "headers", None) or getattr(getattr(e, "response", None), "headers", None) or {}
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None
