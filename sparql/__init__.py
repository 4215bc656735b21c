"""SPARQL statements used by the engine, one `.rq` file each (see engine/queries.py)."""
