"""The engines a store can live in; ``engine.store.open_store`` picks one.

- ``oxigraph/``: the embedded store (a directory), every role;
- ``neo4j/``: a Neo4j 5 server, every role;
- ``sparql.py``: a remote SPARQL endpoint, read-only, runs kept locally.

Each is imported only when a store of its kind is opened.
"""

from __future__ import annotations

NEO4J_SCHEMES = ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")
SPARQL_SCHEMES = ("sparql+http", "sparql+https")


def scheme_of(spec: str) -> str:
    return spec.split("://", 1)[0].lower() if "://" in spec else ""


def is_neo4j_uri(spec: str) -> bool:
    return scheme_of(spec) in NEO4J_SCHEMES


def is_sparql_uri(spec: str) -> bool:
    return scheme_of(spec) in SPARQL_SCHEMES
