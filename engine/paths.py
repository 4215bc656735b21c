"""Reasoning paths: a topic entity and the hops taken from it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph import Node, Relation, name_key


@dataclass(frozen=True, slots=True)
class Hop:
    relation: Relation
    node: Node
    via: tuple[Relation, ...] = ()

    @property
    def relation_text(self) -> str:
        text = " / ".join([self.relation.text] + [r.text for r in self.via])
        return text


@dataclass(slots=True)
class Path:
    """``topic -r1-> e1 -r2-> e2 ...``; ``id`` names its path node in the run."""

    id: str
    topic: Node
    hops: tuple[Hop, ...] = ()
    score: float = 0.0
    relation_score: float = 0.0
    parent: str | None = None

    @property
    def tail(self) -> Node:
        return self.hops[-1].node if self.hops else self.topic

    @property
    def depth(self) -> int:
        return len(self.hops)

    @property
    def chain(self) -> tuple[tuple[str, str], ...]:
        """The relation chain, ignoring entities: what ToG-R reasons over."""
        return tuple((h.relation.id, h.relation.direction) for h in self.hops)

    def extend(self, new_id: str, hop: Hop) -> Path:
        return Path(new_id, self.topic, self.hops + (hop,), parent=self.id)

    def walks_back(self, relation: Relation, node_id: str) -> bool:
        """Would ``relation`` to ``node_id`` take the last hop's edge backwards?

        Paths may come back to a node they passed ("X's father's son" is X
        when X is the only son), but not by undoing their last step."""
        if not self.hops:
            return False
        last = self.hops[-1]
        before = self.hops[-2].node.id if len(self.hops) > 1 else self.topic.id
        return (not last.via and last.relation.id == relation.id
                and last.relation.direction != relation.direction and node_id == before)

    def relations(self) -> list[Relation]:
        """Every relation along the path, looked-through hops included."""
        out: list[Relation] = []
        for h in self.hops:
            out.append(h.relation)
            out.extend(h.via)
        return out

    def verbalise(self, with_entities: bool = True) -> str:
        """``Tom Hanks -> starred actors (of) -> Big -> directed by -> Penny Marshall``.

        An ``in`` edge is read backwards, marked ``(of)``: the tail is the
        subject of that relation.
        """
        parts = [self.topic.name]
        for h in self.hops:
            rel = h.relation_text + (" (of)" if h.relation.direction == "in" else "")
            parts.append(rel)
            if with_entities:
                parts.append(h.node.name)
        return " -> ".join(parts)


def topic_groups(topics: Sequence[Node]) -> dict[str, int]:
    """Topic id -> its mention: entities that share a name are one mention
    (alternatives), different names are different topics of the question."""
    keys: dict[str, int] = {}
    return {t.id: keys.setdefault(name_key(t.name), len(keys)) for t in topics}
