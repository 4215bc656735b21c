"""Relation descriptions: what a KG's relations mean, in a user's words.

A relation's name is often not the words a question uses: nobody asks for
the "spouse" of someone, they ask for the "husband", the "wife" or the
"other half".  A description file says, for any KG, what else each relation
is called and what it leads to; the offline scorers then take a question's
phrase as a mention of the relation when it matches the relation's name or
any one of those other names.  It is TOML, one entry per relation, keyed by
the relation's IRI, its local name or the words it is shown as::

    [relations]
    spouse = "husband, wife, partner, other half"      # other names, comma-separated

    [relations.parents]
    aliases = ["father", "mother", "dad", "mom"]
    inverse = ["son", "daughter", "child"]   # names of the relation read backwards
    tail = "person"                          # what it leads to
    head = "person"                          # what it starts from

``inverse`` (used for an ``in`` edge) defaults to ``aliases``; ``tail`` and
``head`` tell a "which X" question whether the relation ends in an X.

A file written by ``tog learn`` also has a ``[learned]`` table (where the
model came from) and ``[[chains]]``: relation chains with the weights of the
question words that ask for them (``engine/learning.py``).  Either
``[relations]`` or ``[[chains]]`` may be missing, not both.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import TogError
from engine.graph import Candidate, Relation, local_name, relation_text

if TYPE_CHECKING:
    from engine.learning import ChainModel

FIELDS = ("aliases", "inverse", "tail", "head")


@dataclass(frozen=True, slots=True)
class Note:
    """What one description entry says of a relation."""

    aliases: tuple[str, ...] = ()
    inverse: tuple[str, ...] | None = None
    tail: str | None = None
    head: str | None = None

    def names(self, direction: str) -> tuple[str, ...]:
        """Other names of the relation when followed in ``direction``."""
        if direction == "in" and self.inverse is not None:
            return self.inverse
        return self.aliases

    def reaches(self, direction: str) -> str | None:
        """What the relation leads to when followed in ``direction``."""
        return self.tail if direction == "out" else self.head


class DescriptionError(TogError):
    """A description file that cannot be read."""


def _names(value: object, path: object, key: str) -> tuple[str, ...]:
    """A list of names, or one text of comma-separated names."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise DescriptionError(f"{path}: the names of relation {key!r} must be a text or a list of texts")
    return tuple(v.strip() for v in value if v.strip())


class Descriptions:
    """Notes by relation key; ``describe`` puts them on :class:`Relation` values."""

    def __init__(self, notes: dict[str, Note], source: str = "", model: ChainModel | None = None) -> None:
        self.notes = notes
        self.source = source
        self.model = model  # learned chains (``tog learn``), or None
        self.exemplars: list = []  # worked examples from runs rated good (``engine.learning.Exemplar``)
        self._by_id: dict[str, Note | None] = {}

    def __len__(self) -> int:
        return len(self.notes)

    def summary(self) -> str:
        """``12 relation descriptions and 48 learned chains`` (what a run records)."""
        parts = [f"{len(self.notes)} relation description{'s' if len(self.notes) != 1 else ''}"]
        if self.model is not None:
            parts.append(f"{len(self.model)} learned chain{'s' if len(self.model) != 1 else ''}")
        return " and ".join(parts)

    @classmethod
    def load(cls, path: str | Path) -> Descriptions:
        """Read a description file.

        Raises :class:`DescriptionError` naming the file and the entry when
        the file is missing, is not TOML, or an entry has unknown fields.
        """
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DescriptionError(f"relation description file not found: {path}") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise DescriptionError(f"cannot read the relation description file {path}: {e}") from None
        return cls.from_data(data, str(path))

    @classmethod
    def from_text(cls, text: str, source: str) -> Descriptions:
        """A description file's text (as a store keeps it)."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise DescriptionError(f"cannot read the relation descriptions of {source}: {e}") from None
        return cls.from_data(data, source)

    @classmethod
    def from_data(cls, data: dict, path: str) -> Descriptions:
        model = None
        if "chains" in data:
            from engine.learning import ChainModel, read_chains, read_steps

            learned = data.get("learned", {})
            model = ChainModel(read_chains(data["chains"], path), read_steps(data.get("steps", {}), path),
                               learned if isinstance(learned, dict) else {})
        exemplars: list = []
        if "exemplars" in data:
            from engine.learning import read_exemplars

            exemplars = read_exemplars(data["exemplars"], path)
        unknown_tables = sorted(set(data) - {"relations", "chains", "learned", "steps", "exemplars"})
        if unknown_tables:
            raise DescriptionError(f"{path}: unknown table(s) {', '.join(unknown_tables)}; "
                                   "use [relations], [learned], [steps], [[chains]] and [[exemplars]]")
        table = data.get("relations", {} if model is not None or exemplars else None)
        if not isinstance(table, dict):
            raise DescriptionError(f"{path}: no [relations] table")
        notes: dict[str, Note] = {}
        for key, entry in table.items():
            if isinstance(entry, str):
                entry = {"aliases": entry}
            if not isinstance(entry, dict):
                raise DescriptionError(f"{path}: relation {key!r} must be a text or a table")
            unknown = sorted(set(entry) - set(FIELDS))
            if unknown:
                raise DescriptionError(f"{path}: relation {key!r} has unknown field(s) {', '.join(unknown)}; "
                                       f"use {', '.join(FIELDS)}")
            for field in ("tail", "head"):
                if not isinstance(entry.get(field, ""), str):
                    raise DescriptionError(f"{path}: {field} of relation {key!r} must be a text")
            inverse = entry.get("inverse")
            notes[key] = Note(_names(entry.get("aliases", ()), path, key),
                              None if inverse is None else _names(inverse, path, key),
                              entry.get("tail"), entry.get("head"))
        out = cls(notes, str(path), model)
        out.exemplars = exemplars
        return out

    def note(self, relation_id: str, label: str | None = None) -> Note | None:
        """The note for a relation: by IRI, then local name, then shown words."""
        if relation_id not in self._by_id:
            found = None
            for key in (relation_id, local_name(relation_id), label, relation_text(relation_id)):
                if key and key in self.notes:
                    found = self.notes[key]
                    break
            self._by_id[relation_id] = found
        return self._by_id[relation_id]

    def describe(self, relation: Relation) -> Relation:
        note = self.note(relation.id, relation.label)
        return relation if note is None or relation.note is note else replace(relation, note=note)

    def describe_all(self, relations: Iterable[Relation]) -> list[Relation]:
        return [self.describe(r) for r in relations]

    def describe_candidates(self, found: Sequence[Candidate]) -> list[Candidate]:
        """Candidates whose looked-through hops (``via``) carry their notes."""
        return [replace(c, via=tuple(self.describe_all(c.via))) if c.via else c for c in found]
