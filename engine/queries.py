"""Query texts kept as files: ``sparql/*.rq`` and ``cypher/*.cypher``.

Each file is read once.  Values never become query text by string pasting:
SPARQL statements take single values through pyoxigraph's ``substitutions``
and batches through :func:`sparql_values` (one term: :func:`sparql_term`),
which write pyoxigraph term objects in their own (escaped, validated)
serialisation.  They are the only place where data enters SPARQL text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources


@cache
def sparql(name: str) -> str:
    """The text of ``sparql/<name>.rq``."""
    return resources.files("sparql").joinpath(f"{name}.rq").read_text(encoding="utf-8")


@cache
def cypher(name: str) -> str:
    """The text of ``cypher/<name>.cypher``."""
    return resources.files("cypher").joinpath(f"{name}.cypher").read_text(encoding="utf-8")


def sparql_term(term: object) -> str:
    """One pyoxigraph term as SPARQL text: its N-Triples form, validated
    when the term was built (the same rule as :func:`sparql_values`)."""
    import pyoxigraph as ox

    if not isinstance(term, (ox.NamedNode, ox.Literal)):
        raise TypeError(f"not a pyoxigraph term: {term!r}")
    return str(term)


def sparql_union(blocks: Iterable[str]) -> str:
    """Rendered group patterns as the branches of one SPARQL ``UNION`` (a
    query's ``{{branches}}``), one per line."""
    return "\n  UNION\n  ".join(blocks)


def sparql_values(rows: Iterable[Sequence[object]]) -> str:
    """Rows of pyoxigraph terms (NamedNode, Literal, ...) as the body of a
    SPARQL ``VALUES`` block.  Terms are validated when they are built, and
    ``str(term)`` is their N-Triples form, so nothing else can leak in."""
    import pyoxigraph as ox

    out = []
    for row in rows:
        for term in row:
            if not isinstance(term, (ox.NamedNode, ox.Literal)):
                raise TypeError(f"not a pyoxigraph term: {term!r}")
        out.append("(" + " ".join(str(t) for t in row) + ")")
    return "\n    ".join(out)


def render(name: str, **blocks: str | int) -> str:
    """``sparql(name)`` with each ``{{block}}`` replaced by a VALUES body
    produced by :func:`sparql_values`, by other rendered statements, or by
    an ``int`` (a LIMIT or an OFFSET)."""
    return _fill(sparql(name), f"sparql/{name}.rq", blocks)


def cypher_name(identifier: str) -> str:
    """A name (a relationship type: a KG relation's IRI) as Cypher text:
    backquoted, a backquote inside doubled. The one way an identifier
    reaches Cypher text; values are parameters. Neo4j 5.26 plans a degree
    count of a type named in the text from its degree store, and a read of
    its edges from a node or from the type's index; a type given as a
    parameter costs every relationship of the node (or of the database)."""
    if not isinstance(identifier, str) or not identifier or "\x00" in identifier:
        raise ValueError(f"not a usable Cypher name: {identifier!r}")
    return "`" + identifier.replace("`", "``") + "`"


def render_cypher(name: str, **blocks: str | int) -> str:
    """``cypher(name)`` with each ``{{block}}`` replaced by other rendered
    statements, names from :func:`cypher_name`, or an ``int``."""
    return _fill(cypher(name), f"cypher/{name}.cypher", blocks)


def _fill(text: str, where: str, blocks: dict[str, str | int]) -> str:
    for key, body in blocks.items():
        marker = "{{" + key + "}}"
        if marker not in text:
            raise KeyError(f"{where} has no {marker}")
        if isinstance(body, bool) or not isinstance(body, (str, int)):
            raise TypeError(f"{{{{{key}}}}} of {where} takes text or an int, not {body!r}")
        text = text.replace(marker, str(body))
    return text
