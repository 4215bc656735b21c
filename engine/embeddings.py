"""The one embedding model that needs no download: wordllama's small static
token embeddings, whose weights ship inside its wheel (``pip install
wordllama``, or ``pip install think-on-graph[wordllama]``).

Its default loader looks for the weights in a cache folder and reaches for
the network when they are not there; here it is pointed at the package's own
folder with downloads off, so nothing leaves the machine.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from engine.errors import TogError


class EmbeddingUnavailable(TogError):
    """The local embedding model is not installed."""


@lru_cache(maxsize=1)
def local_model():
    """The wordllama model from the weights inside its package."""
    import logging

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        import wordllama  # type: ignore[import-untyped]
        from wordllama import WordLlama
    except ImportError:
        raise EmbeddingUnavailable("the local embedding model needs wordllama: pip install wordllama "
                                   "(or name one with --embedding-model)") from None
    finally:  # its import sets the root logger to INFO: put it back
        root.setLevel(level)
        for h in root.handlers[:]:
            if h not in handlers:
                root.removeHandler(h)
    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


def embed(texts: list[str]) -> list[list[float]]:
    """Vectors of ``texts`` by the local model."""
    return [list(map(float, v)) for v in local_model().embed(texts)]


@lru_cache(maxsize=200_000)
def word_similarity(a: str, b: str) -> float:
    """Cosine similarity of two words (1.0 when equal)."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    return float(local_model().similarity(a, b))
