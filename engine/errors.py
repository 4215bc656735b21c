"""The project's exceptions: one root, a subclass per thing that can go wrong.

The CLI turns every :class:`TogError` into one clear line and a non-zero exit
code; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


class TogError(Exception):
    """Root of every error this project raises on purpose.

    ``llm_usage``: what the LLM calls of a question cost before it failed
    (``engine.runs.ask`` sets it), so an evaluation counts them."""

    llm_usage: dict = {}


class StoreError(TogError):
    """The knowledge-graph store is missing, locked or unusable."""

    code: str | None = None  # a server's status code, when it gave one


class StoreBusyError(StoreError):
    """Another process holds the embedded store for writing (a load, an eval):
    commands that only read may open it read-only instead."""


class LoadError(TogError):
    """A load could not go on (unreadable file, too many bad lines, ...)."""


class UnknownEntityError(TogError):
    """A topic entity named by the user or found in a question is not in the KG."""


class CommonNameError(UnknownEntityError):
    """A topic given by name is a name so many entities share (more than
    ``graph.NAME_MATCHES``) that it stands for none of them; ``nodes``: the
    ones the lookup read."""

    def __init__(self, message: str, nodes: list) -> None:
        super().__init__(message)
        self.nodes = nodes


class QuestionError(TogError):
    """The question itself is unusable (empty, no topic entity found, ...)."""


class UnknownRunError(TogError):
    """No reasoning run has that id."""


class UnknownComponentError(TogError):
    """A pruner, reasoner, method or backend name that is not registered."""


def lookup(registry: dict, kind: str, name: str):
    """``registry[name]``, or :class:`UnknownComponentError` naming the choices."""
    try:
        return registry[name]
    except KeyError:
        raise UnknownComponentError(
            f"unknown {kind} {name!r}; available: {', '.join(sorted(registry))}") from None


def deferred(module: str, name: str) -> Callable[..., Any]:
    """A registry entry that imports ``module`` when it is first called and
    makes ``module.name`` (litellm, behind the LLM pruner, costs seconds to
    import: a registry can name it without importing it)."""

    def make(**options: Any) -> Any:
        return getattr(importlib.import_module(module), name)(**options)

    make.__qualname__ = f"{module}.{name}"
    return make


class LLMError(TogError):
    """An LLM call failed for good (after any retries).

    Carries the model, the provider litellm routed to and, for rate limits,
    the seconds the provider asked to wait."""

    def __init__(self, message: str, *, model: str = "", provider: str = "",
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.model, self.provider, self.retry_after = model, provider, retry_after


class LLMAuthError(LLMError):
    """The provider refused the credentials (never retried)."""


class LLMRequestError(LLMError):
    """The provider rejected the request itself: bad parameters, unknown model,
    context window exceeded (never retried)."""


class LLMUnavailableError(LLMError):
    """Rate limits, timeouts, connection failures or 5xx answers outlasted the retries."""


class LLMReplyError(LLMError):
    """A reply could not be read, even when asked again, and ``--strict-llm``
    refuses the offline fallback."""
