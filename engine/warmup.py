"""Warming a KG server up after it starts: a few offline questions first.

A Neo4j server that has just started answers its first question on cold
code: its JVM compiles the Cypher runtime while it runs it. On the 10M
benchmark graph the first question after a restart took 4.8-12 s of KG time
where later ones take under one. ``tog warm`` asks a few questions first,
from named entities of the KG (one bounded read, from a seeded place among
the names, so not always the same first few), with the offline backbone (no
LLM) and nothing recorded: half start from the entity's IRI, half link its
name, so both ways into a question run once. What they make on the way (the
crowded pairs' samples, the look-ahead schema) is what questions make and
keep anyway. Any store can be warmed; an embedded store has little to gain.
A server's store keeps that it was warmed (``Store.warmth``), and a question
asked after the server's next start says that it was not.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.errors import UnknownEntityError
from engine.runs import ask
from engine.search import SearchConfig

if TYPE_CHECKING:
    from engine.store import Store

WARM_QUESTIONS = 8
FIRST_NAMES = 100_000  # the place among the names where the entities are taken lies before this


@dataclass
class Warmed:
    """What ``warm`` asked: the entities, each question's seconds and KG seconds."""

    entities: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    kg_seconds: list[float] = field(default_factory=list)
    unlinked: int = 0  # names that did not link to one entity (too many share it): asked by IRI


def warm(store: Store, questions: int = WARM_QUESTIONS, seed: int = 0,
         each: Callable[[int, str, float], None] | None = None) -> Warmed:
    """Ask up to ``questions`` offline questions of ``store``, recording
    none; ``each(i, entity, seconds)`` after each. Returns what was asked
    (no entities: the KG has no named entity)."""
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner

    kg = store.kg
    entities = kg.named_entities(questions, skip=random.Random(seed).randrange(FIRST_NAMES))
    names = kg.labels(entities[1::2])
    pruner, reasoner = get_pruner("hybrid"), get_reasoner("offline")
    out = Warmed(entities=entities)
    for i, entity in enumerate(entities):
        started, kg_started = time.perf_counter(), kg.meter.seconds
        name = names.get(entity, "")
        linked = False
        if i % 2 and name and not any(c in name for c in "[]"):
            try:
                ask(store, f"what is related to [{name}]?", pruner, reasoner, SearchConfig(), record=False)
                linked = True
            except UnknownEntityError:  # a name too many entities share (or none links): by its IRI then
                out.unlinked += 1
        if not linked:
            ask(store, "what is related to it?", pruner, reasoner, SearchConfig(), [f"<{entity}>"], record=False)
        out.seconds.append(time.perf_counter() - started)
        out.kg_seconds.append(kg.meter.seconds - kg_started)
        if each is not None:
            each(i, entity, out.seconds[-1])
    if store.warmth is not None:  # (with nothing to warm too: saying "run tog warm" again would not help)
        store.warmth.warmed()
    return out
