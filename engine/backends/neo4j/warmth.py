"""Whether a Neo4j server was warmed up since it last started.

A server that has just started answers its first questions on cold code
(``engine.warmup``). ``tog warm`` keeps, as a setting, the server start it
followed; a question asked on a server that started since is told, in one
line, that ``tog warm`` would spare it that. The launcher warms the servers
it starts; this is for a server someone else runs.
"""

from __future__ import annotations

import json

from engine.backends.neo4j.session import Neo4jSession
from engine.errors import StoreError

WARMED = "warmed_start"  # the setting: the server start (as text) that `tog warm` last followed


class Neo4jWarmth:
    """:class:`engine.store.ServerWarmth` of a Neo4j server."""

    def __init__(self, session: Neo4jSession) -> None:
        self.session = session

    def _read(self) -> tuple[str | None, str | None]:
        """When the server last started, and the start ``tog warm`` last
        followed, in one statement; (None, None) when the server does not
        tell its start (a user not allowed to query its JMX beans)."""
        try:
            rows = self.session.run("server_started", key=WARMED)
        except StoreError:
            return None, None
        if not rows or not rows[0]["started"]:
            return None, None
        warmed = rows[0]["warmed"]
        return str(rows[0]["started"]), (json.loads(warmed) if warmed else None)

    def cold_since(self) -> str | None:
        started, warmed = self._read()
        return started if started is not None and warmed != started else None

    def warmed(self) -> None:
        started, _ = self._read()
        if started is not None:
            self.session.run("setting_set", write=True, key=WARMED, value=json.dumps(started))
