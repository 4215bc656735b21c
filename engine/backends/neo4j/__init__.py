"""The Neo4j backend: the knowledge graph and the reasoning runs in a Neo4j 5
database, through the official driver; every role of a store over one
session (``session.py``): the KG (``kg.py``), runs (``runs.py``),
corrections (``corrections.py``) and the loaders' sink (``sink.py``).

Data model:
- ``(:Entity {id, name})`` per IRI; one relationship type per KG relation (the
  relation's IRI); literals as ``(:Value {id, value, datatype, lang})`` whose
  id is the literal's N-Triples form.  Names (``rdfs:label`` and the other
  name predicates) become the ``name`` property (the best one: English
  first) and ``(:TogName {key, entity, source})`` rows of the linking index.
- Runs: ``(:TogRun)-[:ROOT]->(:TogPath)``, ``(:TogPath)-[:PARENT]->(:TogPath)``,
  ``(:TogPath)-[:AT]->(:Entity|Value)``.
- Corrections: ``(:TogCorrection)-[:ABOUT]->(:Entity)``, ``-[:PROMPTED_BY]->(:TogRun)``.

Every statement is a file under ``cypher/``; values travel as parameters.
"""

from __future__ import annotations

from engine.backends import NEO4J_SCHEMES as SCHEMES
from engine.backends import is_neo4j_uri
from engine.backends.neo4j.corrections import Neo4jCorrections
from engine.backends.neo4j.kg import Neo4jKG, unfinished_load
from engine.backends.neo4j.runs import Neo4jBrowser, Neo4jRunLog
from engine.backends.neo4j.session import Neo4jSession
from engine.backends.neo4j.sink import Neo4jSink
from engine.backends.neo4j.warmth import Neo4jWarmth
from engine.graph import DEFAULT_POLICY, RelationPolicy
from engine.store import Store

__all__ = ["SCHEMES", "Neo4jBrowser", "Neo4jCorrections", "Neo4jKG", "Neo4jRunLog", "Neo4jSession", "Neo4jSink",
           "is_neo4j_uri", "open_neo4j"]


def open_neo4j(uri: str, *, user: str | None = None, password: str | None = None, database: str | None = None,
               policy: RelationPolicy = DEFAULT_POLICY, connect_timeout: float = 10.0,
               retry_seconds: float | None = None) -> Store:
    """The store in a Neo4j database (see :class:`Neo4jSession` for the
    URI and the errors); the schema is migrated and runs left unfinished by
    a dropped connection are marked failed."""
    session = Neo4jSession(uri, user=user, password=password, database=database, connect_timeout=connect_timeout,
                           retry_seconds=retry_seconds)
    try:
        runs = Neo4jRunLog(session)
    except BaseException:
        session.close()
        raise
    kg = Neo4jKG(session, policy)
    return Store(session.uri, kg, runs, Neo4jCorrections(session), Neo4jSink(session),
                 browser=Neo4jBrowser(kg), warmth=Neo4jWarmth(session),
                 unfinished_load=lambda: unfinished_load(session), closers=[session.close])
