"""One connection to a Neo4j 5 database, shared by the backend's roles:
the driver, statements by name (``cypher/*.cypher``), write transactions,
errors as one line, the schema migrations and the settings.

Values, relationship types included, travel as parameters (Cypher 5's
dynamic types ``$(...)``): no data ever becomes query text.  The schema is
set up by ordered migrations (``cypher/migrations/``), each recorded as a
``(:TogMigration)`` node.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Collection, Sequence
from importlib import resources
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from engine.errors import StoreError
from engine.graph import DEFAULT_NAME_PREDICATES, Meter, utc_now
from engine.queries import cypher

SAMPLE_KEYS, SAMPLE_KEY_KIND = "sample_keys", "sha1"  # the setting that says every node has its ``sk``
STORED_VALUES = "stored_values"  # the setting that says typed values are in their stored form (``stored_literal``)
log = logging.getLogger("tog")


def migrations() -> list[str]:
    """Names of the schema migrations, in the order they apply."""
    folder = resources.files("cypher").joinpath("migrations")
    return sorted(p.name[:-len(".cypher")] for p in folder.iterdir() if p.name.endswith(".cypher"))


def _retry_seconds() -> float:
    """How long transient errors are retried (with backoff): TOG_NEO4J_RETRY_SECONDS, default 15."""
    try:
        return max(0.0, float(os.environ.get("TOG_NEO4J_RETRY_SECONDS", "15")))
    except ValueError:
        return 15.0


def reason(e: BaseException) -> str:
    """The first line of an exception's message."""
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


class Neo4jSession:
    """The driver and what every role of the Neo4j backend does through it.

    ``uri`` is ``neo4j://``, ``bolt://`` (or their ``+s`` forms), optionally
    with ``user:password@``; otherwise ``user`` / ``password`` are used.
    Raises :class:`StoreError` (one line naming the URI, never the
    password) when the server cannot be reached or refuses the credentials.
    """

    def __init__(self, uri: str, *, user: str | None = None, password: str | None = None,
                 database: str | None = None, connect_timeout: float = 10.0,
                 retry_seconds: float | None = None) -> None:
        import neo4j
        from neo4j import exceptions as nx

        driver_log = logging.getLogger("neo4j")
        if driver_log.level == logging.NOTSET and not driver_log.handlers:
            # Unless the application configured it: the driver's retries of
            # transient errors (a deadlock between two chunk transactions of a
            # load, say) and its own lines about a lost connection ("[#C088]
            # _: <CONNECTION> error ...") are not for the user: failures
            # raise and tog says what happened in one line.
            driver_log.setLevel(logging.CRITICAL)
        parts = urlsplit(uri)
        if parts.username:  # credentials in the URI win over the environment's
            user, password = parts.username, parts.password or ""
            parts = parts._replace(netloc=(parts.hostname or "") + (f":{parts.port}" if parts.port else ""))
        self.uri = urlunsplit(parts)  # without credentials: safe to print
        if not parts.hostname:  # (the driver would try localhost:7687, which may be another server)
            raise StoreError(f"not a usable Neo4j address {self.uri!r}: it names no host (bolt://HOST:7687)")
        self.retry_seconds = retry_seconds if retry_seconds is not None else _retry_seconds()
        self.database = database or None
        self.nx = nx
        self._name_predicates: tuple[str, ...] | None = None
        try:
            self.driver = neo4j.GraphDatabase.driver(
                self.uri, auth=(user or "neo4j", password or ""),
                connection_timeout=connect_timeout,
                max_transaction_retry_time=self.retry_seconds,
                connection_acquisition_timeout=connect_timeout, notifications_min_severity="OFF")
            self.driver.verify_connectivity()
        except nx.AuthError:
            raise StoreError(f"Neo4j at {self.uri} refused the credentials of user {user or 'neo4j'!r} "
                             "(set NEO4J_USER / NEO4J_PASSWORD)") from None
        except (nx.ServiceUnavailable, nx.SessionExpired, OSError) as e:
            raise StoreError(f"cannot reach Neo4j at {self.uri}: {reason(e)} "
                             "(is the server running? `launcher/neo4j-server start` starts one)") from None
        except (ValueError, nx.ConfigurationError) as e:
            raise StoreError(f"not a usable Neo4j address {self.uri!r}: {e}") from None
        self._migrate()
        self.database_id: str = self.run("database_id")[0]["id"]
        self._ensure_sample_keys()
        self._ensure_stored_values()
        self._types: list[str] | None = None

    # -- statements -----------------------------------------------------------
    def error(self, e: Exception) -> StoreError:
        nx = self.nx
        if isinstance(e, (nx.ServiceUnavailable, nx.SessionExpired, OSError)):
            return StoreError(f"lost the connection to Neo4j at {self.uri}: {reason(e)}")
        if isinstance(e, nx.Neo4jError):
            error = StoreError(f"Neo4j at {self.uri} failed: {e.message or e}")
            error.code = e.code  # for callers that act on it (a load refused for memory)
            return error
        return StoreError(f"Neo4j at {self.uri} failed: {e}")

    def run(self, name: str, *, write: bool = False, meter: Meter | None = None, **params: Any) -> list:
        """The statement ``cypher/<name>.cypher`` in its own transaction
        (retried by the driver on transient errors); its records. A read
        given a ``meter`` is counted on it."""
        return self.run_text(cypher(name), write=write, meter=meter, **params)

    def run_text(self, text: str, *, write: bool = False, meter: Meter | None = None, **params: Any) -> list:
        """``run`` for a statement assembled from ``cypher/`` files
        (identifiers only through ``engine.queries.cypher_name``)."""
        import time

        import neo4j

        started = time.perf_counter()
        try:
            records, _, _ = self.driver.execute_query(
                text, params, database_=self.database,
                routing_=neo4j.RoutingControl.WRITE if write else neo4j.RoutingControl.READ)
            return records
        except (self.nx.DriverError, self.nx.Neo4jError, OSError) as e:
            raise self.error(e) from e
        finally:
            if meter is not None:
                meter.add(time.perf_counter() - started)

    def run_many(self, statements: Sequence[tuple[str, dict[str, Any]]], *,
                 meter: Meter | None = None) -> list[list]:
        """Read statements (texts as ``run_text`` takes, with their
        parameters) in one read transaction: their records, in order. A
        transaction each costs its own begin and commit; here they share
        one (retried whole by the driver on transient errors), and read one
        state of the database. Counted on ``meter`` a statement each."""
        import neo4j

        if len(statements) <= 1:
            return [self.run_text(text, meter=meter, **params) for text, params in statements]

        def work(tx) -> list[list]:
            return [list(tx.run(text, params)) for text, params in statements]

        started = time.perf_counter()
        try:
            with self.driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS,
                                     bookmark_manager=self.driver.execute_query_bookmark_manager) as session:
                return session.execute_read(work)
        except (self.nx.DriverError, self.nx.Neo4jError, OSError) as e:
            raise self.error(e) from e
        finally:
            if meter is not None:
                meter.add(time.perf_counter() - started, len(statements))

    def run_batched(self, name: str, **params: Any) -> None:
        """A statement that commits in batches itself (``CALL {} IN
        TRANSACTIONS``), so in an implicit transaction."""
        try:
            with self.driver.session(database=self.database) as session:
                session.run(cypher(name), params).consume()
        except (self.nx.DriverError, self.nx.Neo4jError, OSError) as e:
            raise self.error(e) from e

    def write_tx(self, work: Callable[[Any], None], *, refusals: Collection[str] = ()) -> None:
        """``work(tx)`` in one write transaction, retried on transient errors
        (the driver's way: for ``retry_seconds``, with backoff). An error
        whose code is in ``refusals`` is raised at once, when the work or
        its commit meets it: the driver would retry a commit the server
        refused for memory, as it is, until its retry time ran out."""
        nx = self.nx
        try:
            if not refusals:
                with self.driver.session(database=self.database) as session:
                    session.execute_write(work)
                return
            deadline, delay = time.monotonic() + self.retry_seconds, 1.0
            while True:
                try:
                    with self.driver.session(database=self.database) as session, \
                            session.begin_transaction() as tx:
                        work(tx)
                        tx.commit()
                    return
                except (nx.DriverError, nx.Neo4jError) as e:
                    if getattr(e, "code", None) in refusals or not e.is_retryable() or \
                            time.monotonic() + delay > deadline:
                        raise
                time.sleep(delay)
                delay *= 2
        except (nx.DriverError, nx.Neo4jError, OSError) as e:
            raise self.error(e) from e

    def _migrate(self) -> None:
        applied = {r["id"] for r in self.run("migrations_applied", write=True)}
        for name in migrations():
            if name not in applied:
                self.run(f"migrations/{name}", write=True)
                self.run("migration_record", write=True, id=name, applied=utc_now())

    def _ensure_sample_keys(self) -> None:
        """Every KG node keeps its sample key (``sk``), by which the server
        sorts a crowded pair's neighbours; a database made before nodes had
        one is given them once, here (a progress bar on a terminal)."""
        if self.setting(SAMPLE_KEYS, None) == SAMPLE_KEY_KIND:
            return
        missing = self.run("sample_keys_missing", write=True)[0]["n"]
        if missing:
            import sys

            from engine.backends.common import sample_hash

            bar = None
            if sys.stderr.isatty():
                from tqdm import tqdm

                bar = tqdm(total=missing, unit="node", desc="sample keys (once)", dynamic_ncols=True)
            while True:
                rows = self.run("sample_keys_next", write=True, batch=10_000)
                if not rows:
                    break
                self.run("sample_keys_set", write=True, rows=[[r["node"], sample_hash(r["id"])] for r in rows])
                if bar is not None:
                    bar.update(len(rows))
            if bar is not None:
                bar.close()
        self.run("setting_set", write=True, key=SAMPLE_KEYS, value=json.dumps(SAMPLE_KEY_KIND))

    def _ensure_stored_values(self) -> None:
        """Typed values are kept in the form the other stores give them back
        ("1.50"^^xsd:decimal as 1.5: ``stored_literal``); a database whose
        loads wrote them as the file did has them rewritten once, here. A
        value whose stored form is a node already gives it its edges. The
        kept samples (sorted by the values' sample keys) are then forgotten,
        and made again before the next question (``load_end_state``)."""
        if self.setting(STORED_VALUES, False):
            return
        from engine.backends.common import sample_hash
        from engine.backends.neo4j.kg import BIG_PAIRS
        from engine.graph import XSD_STRING, literal_term, stored_literal

        changed, moved, after = 0, set(), ""
        while rows := self.run("values_typed_next", write=True, after=after, batch=10_000, string=XSD_STRING):
            if not after:  # (a database this tog made has none when it is first opened)
                log.info("checking the typed values of the Neo4j database once (an older tog wrote them as its "
                         "files did) ...")
            after = rows[-1]["id"]
            fix = {}
            for r in rows:
                term = stored_literal(literal_term(r["id"]))
                if str(term) != r["id"]:
                    fix[r["id"]] = term
            if not fix:
                continue
            taken = {r["id"] for r in self.run("values_taken", write=True, ids=sorted({str(t) for t in fix.values()}))}
            rename, merge = [], []
            for old, term in fix.items():
                if str(term) in taken:
                    merge.append([old, str(term)])
                else:
                    taken.add(str(term))
                    rename.append([old, str(term), term.value, sample_hash(str(term))])
            self.run("values_rename", write=True, rows=rename)
            for r in self.run("values_merge", write=True, rows=merge) if merge else []:
                moved.update(r["subjects"])
            changed += len(fix)
        if moved:  # merged values may swap a hub's edges and keep its degrees: its kept counts go
            kept = [r["e"] for r in self.run("hubs_touch", write=True, ids=sorted(moved))]
            if kept:
                self.run("hubs_drop", write=True, ids=kept)
        if changed:
            log.info(f"{changed:,} typed values of the Neo4j database put in their stored form (once)")
            self.run_batched("summaries_clear")
            self.run("setting_set", write=True, key=BIG_PAIRS, value=json.dumps(None))
        self.run("setting_set", write=True, key=STORED_VALUES, value=json.dumps(True))

    def relationship_types(self) -> list[str]:
        """The KG's relationship types (IRIs; tog's own types have none of
        their characters), asked once per session and after ``changed``."""
        if self._types is None:
            self._types = [t for t in self.run("relationship_types")[0]["types"] if ":" in t]
        return self._types

    def changed(self) -> None:
        """The KG changed (a load, a correction): forget what was asked once."""
        self._types = None

    def close(self) -> None:
        self.driver.close()

    # -- settings -------------------------------------------------------------
    def setting(self, key: str, default: Any) -> Any:
        rows = self.run("setting_get", key=key)
        return json.loads(rows[0]["value"]) if rows else default

    @property
    def name_predicates(self) -> tuple[str, ...]:
        if self._name_predicates is None:
            self._name_predicates = tuple(self.setting("name_predicates", [])) or DEFAULT_NAME_PREDICATES
        return self._name_predicates

    def add_name_predicates(self, predicates: Sequence[str]) -> None:
        merged = list(dict.fromkeys([*self.setting("name_predicates", []), *predicates]))
        self.run("setting_set", write=True, key="name_predicates", value=json.dumps(merged))
        self._name_predicates = None
