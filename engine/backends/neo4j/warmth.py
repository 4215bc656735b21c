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

    def _started(self) -> str | None:
        """When the server last started; None when it does not say (a user
        not allowed to query its JMX beans)."""
        try:
            rows = self.session.run("server_started")
        except StoreError:
            return None
        return str(rows[0]["started"]) if rows and rows[0]["started"] else None

    def cold_since(self) -> str | None:
        started = self._started()
        return started if started is not None and self.session.setting(WARMED, None) != started else None

    def warmed(self) -> None:
        started = self._started()
        if started is not None:
            self.session.run("setting_set", write=True, key=WARMED, value=json.dumps(started))
