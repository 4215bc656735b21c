"""Cypher statements used by the Neo4j backend, one `.cypher` file each (see engine/queries.py)."""
