"""Stores the engine runs on.  ``open_store`` picks one from a ``--store`` value."""

from __future__ import annotations

import os
from pathlib import Path

from engine.errors import StoreError


def open_store(spec: str, *, create: bool = False):
    """A Neo4j server for ``neo4j://`` / ``bolt://`` URIs (credentials from
    the URI or NEO4J_USER / NEO4J_PASSWORD, database from NEO4J_DATABASE), a
    remote SPARQL endpoint for ``sparql+http(s)://`` URLs, else the embedded
    Oxigraph store in the directory ``spec``."""
    from engine.backends.neo4j import is_neo4j_uri

    spec = str(spec)
    if is_neo4j_uri(spec):
        from engine.backends.neo4j import Neo4jGraph

        return Neo4jGraph(spec, user=os.environ.get("NEO4J_USER"), password=os.environ.get("NEO4J_PASSWORD"),
                          database=os.environ.get("NEO4J_DATABASE"))
    from engine.backends.sparql import is_sparql_uri

    if is_sparql_uri(spec):
        from engine.backends.sparql import SparqlGraph

        return SparqlGraph(spec)
    if "://" in spec:
        raise StoreError(f"unknown store {spec!r}: use a directory, neo4j://HOST:PORT, bolt://HOST:PORT "
                         "or sparql+http://HOST:PORT/sparql")
    from engine.backends.oxigraph import OxigraphGraph

    path = Path(spec)
    if create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create a store at {path}: {e.strerror or e}") from None
    return OxigraphGraph(path, create=create)
