"""A remote SPARQL endpoint as the knowledge graph (ToG's Virtuoso with Freebase, say).

``--store sparql+http://HOST:8890/sparql`` (or ``sparql+https://``; add
``?default-graph-uri=IRI`` to restrict the default graph). The KG is read
with batched queries (``sparql/*.rq``: one request per beam step, ``VALUES``
rows, full IRIs); following relations, the endpoint picks each pair's
sample itself and sends one page of it with names (see ``expand``). Each
thread keeps one HTTP connection open to the endpoint (a new one costs
about 0.15 ms per request on Virtuoso) and acknowledges every TCP segment
at once while it reads: over a reused connection, Virtuoso otherwise stalls
about 45 ms on answers past ~32 KB, waiting for the client's delayed ACK.
Through an HTTP proxy (``http_proxy`` and friends) each request goes on a
fresh connection. Results come as XML, read by pyoxigraph (Virtuoso 7.2
writes JSON results about 5x slower: 23 against 4 ms for 460 rows). The
queries' comment lines are dropped before sending: with them, one relation
listing took Virtuoso 80 ms instead of 1.5 ms. The endpoint is read-only for tog:
the store composes this read role with the run log of a local embedded
store, by default ``.tog/sparql-runs/<host>-<port>`` (``TOG_SPARQL_RUNS``);
it has no sink and no correction log.

On Virtuoso the main queries are prepared: the entities and relations
they name travel as HTTP parameters (``prepared_slot``), not in the text,
so the text repeats from question to question and Virtuoso compiles it
once. Compiling is most of what our queries cost it: a page of three
pairs took 6.1 ms with new values in the text and 2.6 ms prepared. The
number of slots is rounded up to a power of two (unused slots hold an IRI
no store has) so that few texts exist. Listings, names and look-through
of more than PREPARED_MAX entities go in one query with the values in its
text, then faster than several prepared ones. Other endpoints get the
same queries with the values in ``VALUES`` blocks.

A prepared listing reads at most LISTED_AT_ONCE of each entity's edges each
way; an entity that has more (a hub) is asked again, each relation counted
apart, which Virtuoso counts 4x faster than grouped by entity and relation
(the endpoint has no summary: that second read counts all the hub's edges).
What costs the server a hub's edges is asked once per process (``Memo``):
the relations around an entity (listed with their degrees) and a crowded
pair's candidates; a pair known to be big gets its whole window in its
first page, so the server sorts it once. The offline judge's look-ahead
schema is sampled from relations' first edges, as on the embedded store,
and kept for the process too, as is what each sampled tail showed
(``EndpointSchema``).

Entity linking asks the endpoint for exact names (each as the question
writes it, and its key as it is, in title case and in upper case; English
and untagged): with a big endpoint,
pass topic entities (``--topic``, or ToG's question files, whose mids are
used as they are).

Terms reach query text only through pyoxigraph's serialisation (the one
escaping function of the embedded store), or, prepared, as HTTP parameters.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import logging
import os
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyoxigraph as ox

from engine.backends import SPARQL_SCHEMES as SCHEMES
from engine.backends import is_sparql_uri
from engine.backends.common import (
    SAMPLE_KEEP,
    SCHEMA_EDGES,
    SCHEMA_MADE,
    SCHEMA_READ,
    Found,
    chunks,
    crowd_cap,
    expand_request,
    look_through,
    nothing_behind,
    sample_key,
    select_candidates,
)
from engine.backends.sparql_reads import (
    RANK,
    UNION_BATCH,
    Degrees,
    NameRow,
    SparqlReads,
    keyed_rows,
    name_row,
    node_id,
    place_of,
)
from engine.errors import StoreBusyError, StoreError
from engine.graph import (
    CANDIDATE_WINDOW,
    DEFAULT_NAME_PREDICATES,
    DEFAULT_POLICY,
    NAME_MATCHES,
    Candidate,
    Direction,
    Node,
    Relation,
    RelationPolicy,
    is_literal,
    local_name,
    name_key,
    stored_literal,
)
from engine.queries import render, sparql, sparql_term, sparql_union, sparql_values
from engine.text import without_userinfo
from engine.store import Store

__all__ = ["SCHEMES", "SparqlGraph", "is_sparql_uri", "open_sparql", "prepared_slot"]
log = logging.getLogger("tog")
PAGE_PAIRS = 40  # (entity, relation) pairs per page request
# Neighbours the endpoint cannot order (literals; IRIs not in ASCII, but on Virtuoso) come first in a
# page, for the client to order: a pair with more than this many has its candidates sampled from the
# first ones the endpoint sends (bounded, but not the stores' sample)
UNORDERED_MOST = SAMPLE_KEEP
AHEAD_MAX = 1_000  # topics whose relations wait for the search
PREPARED_MAX = 32  # entities (or pairs) a prepared query takes; more go in one VALUES query
PAD = "urn:x-tog:unused-slot"  # the IRI of an unused slot: no store holds it
PROBE_TEXT = "G\u00e9rard \u2615 \U0001F600"  # the prepared probe's non-ASCII text, and its SHA-1 as we compute it
PROBE_HASH = hashlib.sha1(PROBE_TEXT.encode("utf-8")).hexdigest()
# Rows Virtuoso sorts for ORDER BY ... LIMIT (MaxSortedTopRows). A page ends within the largest window
# past the unordered neighbours before it (8,193 rows at most), so no pair is ever asked for whole.
SORTED_MAX = 10_000
LISTINGS_KEPT = 20_000  # entities whose relations a process keeps (Memo)
PAGES_KEPT = 2_000  # crowded pairs whose candidates a process keeps (Memo)
WINDOW_AT_ONCE = 10_000  # edges past which a pair's first page is its whole window (one sort on the server)
LISTED_AT_ONCE = 10_000  # edges each way a prepared listing reads of an entity; a hub with more is counted again
NAMES_AT_ONCE = 1_000  # rows of a name lookup before it is asked again key by key, each bounded
SCHEMAS_KEPT = 20_000  # look-ahead schemas of relations, and reads of their sampled tails, a process keeps (Memo)


class Memo:
    """What this process read of a remote KG where the server reads a
    hub's edges to answer: the relations listed around an entity (counted
    over each of its edges) and the candidates of a crowded pair (the
    server hashes and sorts all of the pair for each page: 5.2-6.8 s for
    a page of two pairs of 2.5M and 0.9M edges on Virtuoso 7.2). Kept for
    the process, the least recently used ``size`` of them: a later question, or another
    thread of ``tog eval``, asks the server again for none of them. The
    endpoint is read-only for tog, so nothing tog does makes them wrong;
    nothing is kept on disk, where a change to the remote KG would go
    unseen from one run to the next."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict[object, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: object) -> object | None:
        with self._lock:
            value = self._kept.get(key)
            if value is not None:
                self._kept.move_to_end(key)
            return value

    def put(self, key: object, value: object) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._kept[key] = value
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)

    def __len__(self) -> int:
        return len(self._kept)


class EndpointSchema:
    """The offline judge's look-ahead on an endpoint (which relations
    follow which), sampled as the embedded store samples it
    (``SparqlReads._follows``: a relation's tails among its first edges),
    except that each tail shows what its first SCHEMA_EDGES edges each way
    show, a hub among them too: the endpoint has no summary of a hub's
    relations, and listing them reads all its edges (for the 20 questions
    of the scale row at 10M on Virtuoso: 13x the rows and 2.9x the time of
    these bounded reads). Made for a batch of relations at once when first
    needed: a request for their tails (on Virtuoso, prepared: one per
    direction and PREPARED_MAX relations), then what the tails not read
    before show (one request per PREPARED_MAX of them prepared, or per
    UNION_BATCH (tail, direction)).
    Both are kept for the process (``Memo``), as the listings are."""

    def __init__(self, kg: SparqlGraph, size: int) -> None:
        self.kg = kg
        self.kept = Memo(size)  # (relation, direction) -> what follows it
        self.around = Memo(size)  # tail -> ((relation, direction, edges), ...) its first edges show

    def after(self, relations: Sequence[Relation]) -> dict[Relation, list[Relation]]:
        keys = {(r.id, r.direction): r for r in relations}
        found: dict[tuple[str, Direction], tuple[Relation, ...]] = {}
        for key in keys:
            kept = self.kept.get(key)
            if kept is not None:
                found[key] = kept  # type: ignore[assignment]
        todo = [key for key in keys if key not in found]
        for part in chunks(todo, UNION_BATCH):
            for key, rels in self.kg._follows(part, self._around).items():
                found[key] = tuple(rels)
                self.kept.put(key, found[key])
        return {rel: list(found[key]) for key, rel in keys.items()}

    def _around(self, tails: list[str]) -> Degrees:
        """What each tail's first SCHEMA_EDGES edges each way show; a tail
        read for an earlier batch is not read again (the hubs are the tails
        of many relations: 356 tails made 997 reads in the 20 questions of
        the scale row at 10M)."""
        out: Degrees = {(n, d): {} for n in tails for d in ("out", "in")}
        todo = []
        for n in tails:
            kept = self.around.get(n)
            if kept is None:
                todo.append(n)
            for p, d, count in kept or ():  # type: ignore[attr-defined]
                out[(n, d)][p] = count
        read = self.kg._schema_around(todo)
        out.update(read)
        for n in todo:
            self.around.put(n, tuple((p, d, count) for d in ("out", "in") for p, count in read[(n, d)].items()))
        return out


def _without_comments(text: str) -> str:
    """The query without its whole-line ``#`` comments (a ``#`` inside an
    IRI or a literal is never at the start of a line in our queries)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


# how a kept connection fails when the server closed it while it was idle
_DROPPED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


_RESULTS_BEGIN = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?sparql[\s>/]")
# the root's end tag, then only what XML allows after it: space, comments, processing instructions
_RESULTS_END = re.compile(rb"</(?:[A-Za-z_][\w.-]*:)?sparql\s*>(?:\s|<!--.*?-->|<\?.*?\?>)*$", re.DOTALL)


def _whole_results(data: bytes) -> bool:
    """Whether an XML results document goes on to the close of its root. A
    reply without a Content-Length is read until the connection closes, and
    one cut at the end of an element still parses, as fewer rows. (A reply
    that is no results document is left for ``_read_results`` to refuse.)"""
    return not _RESULTS_BEGIN.search(data[:65536]) or bool(_RESULTS_END.search(data[-4096:]))


def _quick_ack(sock) -> None:
    """Acknowledge received TCP segments at once (Linux; elsewhere a no-op).
    The kernel turns this off again by itself, so it is set before each read."""
    if sock is not None and hasattr(socket, "TCP_QUICKACK"):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        except OSError:
            pass


def prepared_slot(n: int) -> str:
    """The text of slot ``n`` of a prepared query (Virtuoso): the IRI sent
    as HTTP parameter ``togN``, as Virtuoso's indexes know it. The
    backquotes make it an expression Virtuoso evaluates once, before it
    looks the IRI up; ``iri_to_id(..., 0)`` gives nothing for an IRI the
    store lacks, where ``iri()`` would add it to the store's dictionary."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise TypeError(f"a slot is a number, not {n!r}")
    return f"`bif:iri_to_id(bif:http_param('tog{n}'), 0)`"


def _slots(n: int) -> int:
    """The slots a prepared query gets for ``n`` values: the next power of two."""
    return 1 << max(n - 1, 0).bit_length()


def _pair_params(n: int, pair: tuple[str, Relation] | None) -> list[tuple[str, str]]:
    """The HTTP parameters of pair slot ``n`` (entity ``tog2n``, relation
    ``tog2n+1``); an unused slot (None) gets PAD for both."""
    e, r = (pair[0], pair[1].id) if pair is not None else (PAD, PAD)
    return [(f"tog{2 * n}", e), (f"tog{2 * n + 1}", r)]


def _big(pair: tuple[str, Relation]) -> bool:
    """Whether the listing said this pair has more than WINDOW_AT_ONCE
    edges: its first page is its whole window, its relation in the text."""
    return (pair[1].degree or 0) > WINDOW_AT_ONCE


def _paged(xid: str, prepared: bool) -> bool:
    """Whether the endpoint orders this neighbour by its SHA-1: an IRI in
    printable ASCII, as ``tails_page_*.rq`` tells them apart, or on
    Virtuoso (``prepared``) any IRI (``prepared_tails_page_*.rq``); the
    others come first in a page, unordered, and the client orders them."""
    return not is_literal(xid) and (prepared or (xid.isascii() and xid.isprintable() and " " not in xid))


class _Row(dict):
    def __missing__(self, key):
        return None


def _read_results(data: bytes, fmt: ox.QueryResultsFormat = ox.QueryResultsFormat.XML):
    """SPARQL results (XML unless told) as a bool (ASK) or a list of rows
    (variable -> pyoxigraph term).  Raises ``StoreError`` when they are not
    readable."""
    try:
        results = ox.parse_query_results(data, fmt)
        if isinstance(results, ox.QueryBoolean):
            return bool(results)
        names = [v.value for v in results.variables]
        # a solution iterates its values in the order of the variables (None
        # when unbound): 4x faster than looking each variable up. A typed value
        # is read in the form the embedded store gives it ("1000.0"^^xsd:double
        # from Virtuoso is 1000, as there: ``stored_literal``)
        return [_Row({name: stored_literal(term) if isinstance(term, ox.Literal) else term
                      for name, term in zip(names, s) if term is not None}) for s in results]
    except (SyntaxError, ValueError) as e:
        raise StoreError(f"the endpoint's answer is not {fmt.name} ({e})") from None


def open_sparql(spec: str, *, runs: str | Path | None = None, policy: RelationPolicy = DEFAULT_POLICY,
                timeout: float = 60.0, retries: int = 2, prepared: bool | None = None,
                read_only: bool = False) -> Store:
    """The endpoint of a ``sparql+http(s)://`` spec as a store: reads from the
    endpoint, runs in a local embedded store (``runs``, else
    ``TOG_SPARQL_RUNS``, else ``.tog/sparql-runs/HOST-PORT-HASH``); no sink
    and no corrections. :class:`StoreError` when the endpoint does not answer.
    ``read_only``: the local runs as a view beside a process that writes them."""
    from engine.backends.oxigraph import Database, OxigraphRunLog

    kg = SparqlGraph(spec, policy=policy, timeout=timeout, retries=retries, prepared=prepared)
    where = Path(runs or os.environ.get("TOG_SPARQL_RUNS") or (
        Path(".tog") / "sparql-runs" / f"{kg.host}-{urllib.parse.urlsplit(kg.endpoint).port or 80}-"
                                       f"{hashlib.sha1(spec.encode()).hexdigest()[:6]}"))
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        local = Database(where, read_only=True) if read_only else Database(where, create=True)
    except StoreBusyError:
        kg.close()
        raise
    except (OSError, StoreError) as e:
        kg.close()
        raise StoreError(f"cannot keep the runs of {kg.endpoint} in {where}: {e}") from None
    read_only_text = f"the SPARQL endpoint {kg.endpoint} is read-only for tog"
    run_log = OxigraphRunLog(local)
    if not read_only:
        run_log.fail_interrupted()
    return Store(kg.endpoint, kg, run_log, None, None,
                 absent={"sink": f"{read_only_text}; load it with its own tools",
                         "corrections": f"{read_only_text}: it cannot record corrections"},
                 closers=[local.close, kg.close])


class SparqlGraph(SparqlReads):
    """``KnowledgeGraph`` over a remote SPARQL endpoint."""

    def __init__(self, spec: str, *, policy: RelationPolicy = DEFAULT_POLICY,
                 timeout: float = 60.0, retries: int = 2, prepared: bool | None = None, memo: bool = True) -> None:
        """``prepared``: send prepared queries (Virtuoso only); by default,
        when the endpoint is a Virtuoso that runs them (checked once).
        ``memo``: keep relation listings, crowded pairs' candidates and
        the look-ahead schema for the process (``Memo``)."""
        super().__init__(policy)
        shown = without_userinfo(spec)  # what messages may say of the spec
        try:
            parts = urllib.parse.urlsplit(spec)
            self.host, self.port = parts.hostname or "", parts.port or (443 if parts.scheme.endswith("s") else 80)
        except ValueError as e:
            raise StoreError(f"not a usable SPARQL endpoint address {shown!r}: {e}") from None
        if not self.host:
            raise StoreError(f"not a usable SPARQL endpoint address {shown!r}: it names no host")
        scheme = parts.scheme.split("+", 1)[1]
        query = urllib.parse.parse_qs(parts.query)
        self.graphs = query.get("default-graph-uri", [])
        # the user and password of the spec go as HTTP basic authentication, never into a message
        self._auth = {"Authorization": "Basic " + base64.b64encode(
            f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}".encode()).decode()} \
            if parts.username else {}
        self.endpoint = urllib.parse.urlunsplit((scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))
        self.timeout, self.retries = timeout, retries
        self._parts = urllib.parse.urlsplit(self.endpoint)
        self._fresh = scheme in urllib.request.getproxies() and not urllib.request.proxy_bypass(parts.hostname or "")
        self._local = threading.local()  # each thread's kept connection
        self._server = ""  # the endpoint's Server header
        self._ahead: dict[str, list[Relation]] = {}  # relations fetched with topic names
        self._texts: dict[tuple[str, int], str] = {}  # prepared query texts by (kind, slots)
        self.listings = Memo(LISTINGS_KEPT if memo else 0)  # entity -> its relations
        self.pages = Memo(PAGES_KEPT if memo else 0)  # (entity, relation, direction, limit, over, size) -> found
        self._unordered_noted = False
        self.schema = EndpointSchema(self, SCHEMAS_KEPT if memo else 0)
        try:
            self._remote("ASK { }")
        except StoreError as e:
            raise StoreError(f"cannot reach the SPARQL endpoint at {self.endpoint}: {e}") from None
        self.prepared = self._runs_prepared() if prepared is None else prepared

    @property
    def name_predicates(self) -> tuple[str, ...]:
        return DEFAULT_NAME_PREDICATES

    def _runs_prepared(self) -> bool:
        """Whether the endpoint is a Virtuoso that reads slots, and hashes
        non-ASCII text marked as UTF-8 as we do, as the prepared pages hash
        IRIs (``prepared_tails_page_*.rq``): one probe."""
        if "virtuoso" not in self._server.lower():
            return False
        probe = (f"SELECT ?v ?h WHERE {{ OPTIONAL {{ {prepared_slot(0)} ?p ?o }} BIND(bif:http_param('tog0') AS ?v) "
                 "BIND(SHA1(bif:__box_flags_tweak(bif:http_param('tog1'), 2)) AS ?h) }")
        try:
            rows = self._remote(probe, [("tog0", PAD), ("tog1", PROBE_TEXT)])
        except StoreError:
            return False
        return isinstance(rows, list) and len(rows) == 1 and \
            [getattr(rows[0][v], "value", None) for v in ("v", "h")] == [PAD, PROBE_HASH]

    # -- transport ------------------------------------------------------------
    _HEADERS = {
        # XML, not JSON: Virtuoso 7.2 writes JSON results 5x slower (23 vs 4 ms for 460 rows)
        "Accept": "application/sparql-results+xml", "Content-Type": "application/x-www-form-urlencoded"}

    def _remote(self, text: str, params: Sequence[tuple[str, str]] = ()):
        text = _without_comments(text)
        body = urllib.parse.urlencode([("query", text)] + [("default-graph-uri", g) for g in self.graphs]
                                      + list(params)).encode()
        attempt = 0
        while True:
            reused = getattr(self._local, "connection", None) is not None
            try:
                status, data = self._post(body)
                if status == 200 and not _whole_results(data):  # (read to the connection's close, and cut)
                    raise http.client.IncompleteRead(data)
            except (http.client.HTTPException, OSError) as e:
                self._hang_up()
                if reused and isinstance(e, _DROPPED):
                    continue  # the server closed the idle kept connection: once more on a new one
                if attempt < self.retries and not isinstance(e, (TimeoutError, ssl.SSLError)):
                    # (a query that ran out of time, or a TLS handshake that failed, would again)
                    attempt += 1
                    time.sleep(0.5 * (2 ** (attempt - 1)))
                    continue
                raise StoreError(f"{getattr(e, 'reason', None) or e or type(e).__name__}") from None
            if status >= 500 and attempt < self.retries:
                attempt += 1
                time.sleep(0.5 * (2 ** (attempt - 1)))
                continue
            if status != 200:
                detail = data.decode("utf-8", "replace").strip().splitlines()[:2]
                raise StoreError(f"the endpoint answered HTTP {status}: {' '.join(detail)[:300]}")
            return _read_results(data)

    def _post(self, body: bytes) -> tuple[int, bytes]:
        """POST the query on this thread's kept connection: (status, body)."""
        if self._fresh:  # through a proxy: urllib, a new connection each time
            request = urllib.request.Request(self.endpoint, data=body, method="POST",
                                             headers={**self._HEADERS, **self._auth, "Connection": "close"})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    self._server = response.headers.get("Server") or ""
                    return response.status, response.read()
            except urllib.error.HTTPError as e:
                return e.code, e.read()
        connection = getattr(self._local, "connection", None)
        if connection is None:
            kind = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
            connection = kind(self.host, self.port, timeout=self.timeout)
            connection.connect()
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._local.connection = connection
        _quick_ack(connection.sock)
        connection.request("POST", self._parts.path or "/", body=body, headers={**self._HEADERS, **self._auth})
        response = connection.getresponse()
        self._server = response.getheader("Server") or ""
        parts = []
        while True:
            _quick_ack(connection.sock)
            part = response.read(1 << 16)
            if not part:
                break
            parts.append(part)
        if response.length:  # the connection ended before the body its Content-Length gave: not an answer
            raise http.client.IncompleteRead(b"".join(parts), response.length)
        if response.will_close:
            self._hang_up()
        return response.status, b"".join(parts)

    def _hang_up(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            connection.close()

    def _select(self, text: str, params: Sequence[tuple[str, str]] = ()):
        started = time.perf_counter()
        try:
            data = self._remote(text, params)
        except StoreError as e:
            raise StoreError(f"SPARQL endpoint {self.endpoint}: {e}") from None
        finally:
            self.meter.add(time.perf_counter() - started)
        return data

    # -- what differs from the embedded store ---------------------------------
    def has_entity(self, entity: str) -> bool:
        if self._ahead.get(entity):
            return True  # relations were found around it (topic_labels)
        try:
            node = ox.NamedNode(entity)
        except ValueError:
            return False
        if self.prepared:
            return bool(self._select(render("prepared_ask_entity", e=prepared_slot(0)), [("tog0", entity)]))
        return bool(self._select(render("ask_entity", entity=sparql_values([(node,)]))))

    def topic_labels(self, ids: Sequence[str]) -> dict[str, str]:
        """Names of topic entities (``linking.resolve``); the same request
        lists the relations around them, kept for the search's first
        ``relations`` call, which then costs no round trip (unless this
        process listed them already: then the names alone)."""
        iris = [i for i in dict.fromkeys(ids) if not is_literal(i)]
        if not iris or all(self.listings.get(i) is not None for i in iris):
            return self.labels(ids)  # (relations listed earlier in this process: names only)
        if self._prepare(iris):
            rows = self._slot_rows("topics", iris)
            rows = [r for r in rows if r["name"] is not None] + self._hubs_counted(
                [r for r in rows if r["name"] is None], iris)
        else:
            rows = self._select(render("topics", entities=keyed_rows(iris), names=sparql_values(self._name_terms()),
                                       only=self.only(True), rank=RANK))
        name_rows = [(r["e"].value, name_row(r)) for r in rows if r["name"] is not None]
        around = self._relations_from((r for r in rows if r["po"] is not None or r["pi"] is not None), iris)
        if len(self._ahead) > AHEAD_MAX:  # topics of questions that never got to search
            self._ahead.clear()
        self._ahead.update(around)
        for e, rels in around.items():
            self.listings.put(e, tuple(rels))
        return self._with_the_rest(iris, self._pick_names(name_rows))

    def relations(self, entities: Sequence[str]) -> dict[str, list[Relation]]:
        """The relations around ``entities``: those listed with a topic's
        name (``topic_labels``) or earlier in this process (``listings``)
        cost no request; the others are listed in one."""
        out: dict[str, tuple[Relation, ...]] = {}
        todo = []
        for e in dict.fromkeys(entities):
            ahead = self._ahead.pop(e, None)
            kept = tuple(ahead) if ahead is not None else self.listings.get(e)
            if kept is not None or is_literal(e):
                out[e] = kept or ()  # type: ignore[assignment]
            else:
                todo.append(e)
        if todo:
            found = self._relations_from(self._hubs_counted(self._slot_rows("relations", todo), todo), todo) \
                if self._prepare(todo) else super().relations(todo)
            for e in todo:
                out[e] = tuple(found[e])
                self.listings.put(e, out[e])
        return {e: list(out[e]) for e in entities}

    def _hubs_counted(self, rows: list, iris: Sequence[str]) -> list:
        """The rows of a prepared listing (``?e ?po ?pi ?n``), where an
        entity whose first read reached LISTED_AT_ONCE edges one way (a hub:
        it may have relations past them, and more edges) has its rows
        replaced by its relations counted whole, a request per PREPARED_MAX
        hubs (``prepared_hub_relations.rq``)."""
        read: dict[tuple[str, str], int] = defaultdict(int)
        for r in rows:
            read[(r["e"].value, "out" if r["po"] is not None else "in")] += int(r["n"].value)
        hubs = {e for (e, _), n in read.items() if n >= LISTED_AT_ONCE}
        if not hubs:
            return rows
        rows = [r for r in rows if r["e"].value not in hubs]
        for part in chunks([e for e in iris if e in hubs], PREPARED_MAX):
            rows += self._slot_rows("hub_relations", part)
        return rows

    def _names(self, iris: Sequence[str], shown: bool) -> dict[str, str]:
        if not self._prepare(iris):
            return super()._names(iris, shown)
        return self._pick_names((r["e"].value, name_row(r))
                                for r in self._slot_rows("labels" if shown else "labels_all", iris))

    # -- prepared queries (Virtuoso) --------------------------------------------
    def _prepare(self, values: Sequence) -> bool:
        """Whether a query over these entities (or pairs) goes prepared: on
        Virtuoso, up to PREPARED_MAX of them. Past that, one query with the
        values in its text is faster than several prepared ones."""
        return self.prepared and 0 < len(values) <= PREPARED_MAX

    def _slot_rows(self, kind: str, iris: Sequence[str]) -> list:
        """The rows of the prepared ``kind`` query (relations, labels,
        topics, the look-ahead's tails or bounded reads) for ``iris``; each
        row's slot ``?k`` is turned back into its IRI ``?e``."""
        slots = _slots(len(iris))
        params = [(f"tog{n}", iris[n] if n < len(iris) else PAD) for n in range(slots)]
        out = []
        for row in self._select(self._prepared_text(kind, slots), params):
            n = place_of(row, "k", slots)
            if n < len(iris):  # an unused slot's IRI is in no store
                row["e"] = ox.NamedNode(iris[n])
                out.append(row)
        return out

    def _prepared_text(self, kind: str, slots: int) -> str:
        """The text of the prepared ``kind`` query with ``slots`` slots (made once)."""
        text = self._texts.get((kind, slots))
        if text is None:
            def branches(*names: str, slot: str = "e", **values: str | int) -> str:
                """Each of ``names`` per slot (its IRI in ``slot``), joined by UNION."""
                return "\n    UNION ".join(render(name, **{slot: prepared_slot(n)}, k=n, **values).strip()
                                          for n in range(slots) for name in names)

            def around() -> dict[str, str]:
                return {"out": branches("prepared_around_out", cap=LISTED_AT_ONCE),
                        "in": branches("prepared_around_in", cap=LISTED_AT_ONCE)}

            def named(shown: bool = True) -> str:
                return branches("prepared_named", names=sparql_values(self._name_terms()), only=self.only(shown))

            if kind == "relations":
                text = render("prepared_relations", **around())
            elif kind == "hub_relations":
                text = render("prepared_hub_relations", out=branches("prepared_counted_out"),
                              **{"in": branches("prepared_counted_in")})
            elif kind == "topics":
                text = render("prepared_topics", named=named(), rank=RANK, **around())
            elif kind in ("labels", "labels_all"):
                text = render("prepared_labels", named=named(kind == "labels"), rank=RANK)
            elif kind == "schema_around":
                text = render("prepared_schema_around", branches=branches(
                    "prepared_schema_around_out", "prepared_schema_around_in", limit=SCHEMA_EDGES))
            elif kind == "schema_past":
                text = render("schema_past", branches=branches("schema_past_one", slot="p", read=SCHEMA_READ))
            elif kind.startswith("schema_tails_"):  # schema_tails_DIRECTION/MOST
                name, _, most = kind.partition("/")
                text = render("schema_tails", branches=branches(
                    f"prepared_{name}", slot="p", read=SCHEMA_READ, limit=int(most)))
            else:
                raise ValueError(f"no prepared query {kind!r}")
            self._texts[(kind, slots)] = text
        return text

    def _reach(self, part: Sequence[tuple[str, Direction]], most: int) -> dict[int, list[str]]:
        """On Virtuoso, prepared: a request per direction and PREPARED_MAX
        relations, the relations as slots (a text for each ``most``). With
        the relations in the text, Virtuoso took 0.5-0.9 s for
        30 relations on a restarted server (6-14 ms asked again); prepared,
        9-130 ms. (The prepared branches keep the inner query's other
        variable: with the relation a slot and ``?n`` alone projected,
        Virtuoso 7.2 answered one tail per relation where there were 16.)"""
        if not self.prepared:
            return super()._reach(part, most)
        tails: dict[int, list[str]] = defaultdict(list)
        for direction in ("out", "in"):
            place = {r: k for k, (r, d) in enumerate(part) if d == direction}
            for chunk in chunks(list(place), PREPARED_MAX):
                for row in self._slot_rows(f"schema_tails_{direction}/{most}", chunk):
                    tails[place[row["e"].value]].append(row["n"].value)
        return tails

    def _big(self, relations: Sequence[str]) -> set[str]:
        """On Virtuoso, prepared: a request per PREPARED_MAX relations, the
        relations as slots (``schema_past.rq``). With the relations in its
        text, a restarted Virtuoso compiled each new one: 135-235 ms for 30
        relations, against 3-13 ms prepared."""
        if not self.prepared:
            return super()._big(relations)
        return {row["e"].value for chunk in chunks(list(relations), PREPARED_MAX)
                for row in self._slot_rows("schema_past", chunk)}

    def _schema_around(self, tails: Sequence[str]) -> Degrees:
        """What each tail's first SCHEMA_EDGES edges each way show (the
        look-ahead's second read, ``EndpointSchema``): on Virtuoso prepared,
        a request per PREPARED_MAX tails; elsewhere ``_bounded``'s reads
        with the tails in the text."""
        both: tuple[Direction, Direction] = ("out", "in")
        keys = [(n, d) for n in tails for d in both]
        if not self.prepared:
            return self._bounded(keys, SCHEMA_EDGES)
        read: Degrees = {key: {} for key in keys}
        for part in chunks(list(tails), PREPARED_MAX):
            for row in self._slot_rows("schema_around", part):
                d = getattr(row["d"], "value", None)
                if d not in ("out", "in"):
                    raise StoreError(f"the endpoint's answer does not fit the query (?d = {row['d']})")
                read[(row["e"].value, d)][row["p"].value] = int(row["n"].value)
        return read

    def search_entities(self, keys: Sequence[str], forms: Mapping[str, Sequence[str]] | None = None
                        ) -> dict[str, list[Node]]:
        """Exact names: each key as the user wrote it (``forms``), as it is,
        in title case and in upper case; English or untagged. One request
        (``names_lookup``, at most NAMES_AT_ONCE rows); when a name that
        thousands share fills it, the keys are asked again with at most
        NAME_MATCHES + 1 entities each (``names_bounded``)."""
        keys = list(dict.fromkeys(k for k in keys if k))
        if not keys:
            return {}
        literals: dict[str, list[tuple[ox.Literal]]] = {}
        for key in keys:
            # the key's own casings first: with a written form that is one of them ahead of the key,
            # Virtuoso 7.2 took 80 ms for the same 1,002 rows it looked up in 8.5 ms in this order
            literals[key] = [row for form in dict.fromkeys((key, key.title(), key.upper(), *(forms or {}).get(key, ())))
                             for row in ((ox.Literal(form, language="en"),), (ox.Literal(form),))]
        predicates = sparql_values(self._name_terms())
        text = render("names_lookup", names=sparql_values(row for rows in literals.values() for row in rows),
                      predicates=predicates, limit=NAMES_AT_ONCE)
        rows = self._select(text)
        found: dict[str, dict[str, None]] = {}
        for r in rows:
            key = name_key(r["name"].value)
            if key in literals:
                found.setdefault(key, {})[r["e"].value] = None
        if len(rows) >= NAMES_AT_ONCE:  # cut short: some key may have lost entities to a common name
            todo = [key for key in keys if len(found.get(key, ())) <= NAME_MATCHES]
            for part in chunks(todo, UNION_BATCH):
                branches = sparql_union(
                    render("names_bounded_key", names=sparql_values(literals[key]), predicates=predicates,
                           limit=NAME_MATCHES + 1, k=k).strip() for k, key in enumerate(part))
                got: dict[int, dict[str, None]] = {}
                for r in self._select(render("names_bounded", branches=branches)):
                    got.setdefault(place_of(r, "k", len(part)), {})[r["e"].value] = None
                for k, key in enumerate(part):
                    found.pop(key, None)
                    if k in got:
                        found[key] = got[k]
        found = {key: dict.fromkeys(sorted(ents)[:NAME_MATCHES + 1]) for key, ents in found.items()}
        names = self.labels([e for ents in found.values() for e in ents])
        return {k: [Node(e, names.get(e, local_name(e))) for e in v] for k, v in found.items()}

    def expand(self, requests: Sequence[tuple[str, Relation]], limit: int = 100, *,
               over: int = 0, size: int = 5, through: bool = True) -> list[Candidate]:
        """Each pair's neighbours a page at a time in ``sample_key`` order,
        chosen by the endpoint, with their names (``tails_page.rq``): one
        request for the first page of every pair, another only for pairs
        where some of those had no name (up to the window of four times the
        cap the embedded store looks at). A hub's thousands of neighbours
        never leave the server. With ToG's rule for crowded relations
        (``over``), the first page holds ``over`` neighbours: enough to tell
        whether the pair is crowded. A pair whose relation says it has
        more than WINDOW_AT_ONCE edges gets its whole window in its first
        page. A crowded pair's candidates are kept for the process
        (``pages``): the server sorts each pair once. Neighbours it cannot
        order (``_paged``) come first, and the client orders them: at most
        UNORDERED_MOST of them are read."""
        pairs, limit = expand_request(requests, limit)
        first = max(over - 1, 1) if over else limit
        found: Found = {}
        counts: dict[tuple[str, Relation], int] = {}  # neighbours (at least) per pair

        def memo_key(pair: tuple[str, Relation]) -> tuple:
            return pair[0], pair[1].id, pair[1].direction, limit, over, size

        for asked in pairs:  # crowded pairs this process paged already
            kept = self.pages.get(memo_key(asked))
            if kept is not None:
                counts[asked], found[asked] = kept[0], dict(kept[1])  # type: ignore[index]
        pairs = [asked for asked in pairs if asked not in found]
        crowded: set[tuple[str, Relation]] = set()  # pairs past their first page: sorted by the server
        seen: dict[tuple[str, Relation], dict[str, ox.NamedNode | ox.Literal]] = {p: {} for p in pairs}
        caps: dict[tuple[str, Relation], int] = {}
        unordered: dict[tuple[str, Relation], int] = {}  # what the endpoint cannot order (first)
        name_rows: list[tuple[str, NameRow | None]] = []
        names: dict[str, str] = {}
        other_names: dict[str, str] = {}  # of neighbours with no English or untagged name, asked again
        asked_all: set[str] = set()
        elsewhere: set[str] = set()
        named_once: set[tuple] = set()  # (pair, neighbour, predicate, rank) of a name a page sent
        # pair -> (offset, size) of its next page; a pair known to be big gets its whole window at once,
        # for the server sorts all of it for every page (about 2 s for a million edges)
        todo = {pair: (0, CANDIDATE_WINDOW * limit if not over and _big(pair) else first)
                for pair in pairs}
        while todo:
            got: dict[tuple[str, Relation], dict] = defaultdict(dict)
            for part in chunks(list(todo), PREPARED_MAX if self.prepared else PAGE_PAIRS):
                text, params, slot_pairs = self._page_query(part, todo)
                for row in self._select(text, params):
                    pair = slot_pairs[place_of(row, "i", len(slot_pairs))]
                    if pair is None:
                        continue  # an unused slot (its IRI is in no store)
                    x = row["x"]
                    xid = node_id(x)
                    got[pair][xid] = x
                    if row["np"] is not None:
                        one = name_row(row)
                        name_rows.append((xid, one))
                        if one is not None and not self._names_repeat:  # a page of a name a row
                            once = (pair, xid, one[0].value, one[1])
                            if once in named_once:  # a node named twice under one predicate and rank
                                self._names_repeat = True  # (the sample missed it): pages group from now on
                            named_once.add(once)
                    elif row["other"] is not None and xid not in asked_all:
                        elsewhere.add(xid)
            names = self._pick_names(name_rows)
            if elsewhere:  # named in other languages only (a CVT has no name at all: not asked)
                asked_all.update(elsewhere)
                other_names.update(self._names(sorted(elsewhere), shown=False))
                elsewhere.clear()
            names.update(other_names)
            following = {}
            for pair, (offset, page) in todo.items():
                rows = got[pair]
                if offset == 0:
                    counts[pair] = len(rows)
                    caps[pair] = crowd_cap(len(rows), limit, over, size)
                seen[pair].update(rows)
                if len(rows) <= page:
                    continue  # no row past the page: the pair is complete
                crowded.add(pair)
                ordered = sorted((x for x in rows if _paged(x, self.prepared)), key=sample_key)
                if not ordered:  # a page of unordered neighbours only: all of them, if there are not too many
                    if page < UNORDERED_MOST:
                        following[pair] = (0, UNORDERED_MOST)
                    else:
                        self._unordered_note()
                    continue
                del seen[pair][ordered[-1]]  # the row past the page belongs to the next one
                if offset == 0:
                    unordered[pair] = len(rows) - len(ordered)  # they come first: all are here
                # named neighbours known to come before every one not fetched yet
                edge = sample_key(ordered[-1])
                named = sum(1 for x in seen[pair] if (is_literal(x) or x in names) and sample_key(x) < edge)
                fetched = offset + page - unordered[pair]  # ordered ones so far
                window = CANDIDATE_WINDOW * caps[pair]
                if named < caps[pair] and fetched < window:
                    following[pair] = (offset + page, window - fetched)
            todo = following
        for key, terms in seen.items():
            found[key] = {}
            named = 0
            for xid in sorted(terms, key=sample_key)[: CANDIDATE_WINDOW * caps[key]]:
                if named >= caps[key]:
                    break  # what follows would be cut by select_candidates
                term = terms[xid]
                if isinstance(term, ox.Literal):
                    found[key][xid] = Node(xid, term.value, True, term.datatype.value if term.datatype else None)
                elif xid in names:
                    found[key][xid] = Node(xid, names[xid])
                else:
                    found[key][xid] = None
                named += found[key][xid] is not None
            if named >= caps[key]:  # unnamed nodes would only be looked through to be cut
                found[key] = {x: n for x, n in found[key].items() if n is not None}
            if key in crowded:
                self.pages.put(memo_key(key), (counts[key], dict(found[key])))
        return select_candidates(requests, found, limit,
                                 (lambda unnamed, lim: look_through(self, unnamed, lim)) if through else nothing_behind,
                                 over=over, size=size, counts=counts)

    def _unordered_note(self) -> None:
        """Say once a process that a pair's candidates are not the stores'."""
        if not self._unordered_noted:
            self._unordered_noted = True
            log.info(f"note: a pair on the SPARQL endpoint has more than {UNORDERED_MOST:,} neighbours that the "
                     "endpoint cannot put in the sample order (literals, or IRIs that are not ASCII); its candidates "
                     f"are sampled from the first {UNORDERED_MOST:,} it sends, so they may differ from an embedded "
                     "store's")

    def _page_names(self) -> dict[str, str]:
        """How a page asks for its neighbours' names: all of them, or in a KG
        with names in other languages than English the names they are shown
        by, and whether a neighbour without one has others (``?other``);
        where names can repeat (``names_repeat``), the lowest of each
        predicate and language rank (``name_rank.rq``), else each name."""
        only = self.only(True)
        grouped = self.names_repeat()
        return {"only": only, "other": render("shown_other", names=sparql_values(self._name_terms())) if only else "",
                "picked": "?rank (MIN(STR(?label)) AS ?name)" if grouped else "?label",
                "rank": f"BIND({RANK} AS ?rank)" if grouped else "", "by": "?rank" if grouped else "?label"}

    def _page_query(self, part: Sequence[tuple[str, Relation]], pages: dict
                    ) -> tuple[str, list[tuple[str, str]], Sequence[tuple[str, Relation] | None]]:
        """One request for a page (offset, size) of each pair in ``part``:
        (text, HTTP parameters, the pair of each ``?i``, None for an unused
        slot). One row more than the size shows whether the pair goes on.
        Prepared, the pairs go out-pairs first, each direction in a power of
        two of slots, unused ones paged like the last pair before them."""
        names = sparql_values(self._name_terms())
        blocks: list[str] = []
        params: list[tuple[str, str]] = []
        slot_pairs: list[tuple[str, Relation] | None] = []
        if not self.prepared:
            for i, (e, r) in enumerate(part):
                offset, size = pages[(e, r)]
                row = (ox.Literal(i), ox.NamedNode(e), ox.NamedNode(r.id))
                blocks.append(render(f"tails_page_{r.direction}", pair=sparql_values([row]),
                                     limit=size + 1, offset=offset))
            return render("tails_page", pages=sparql_union(blocks), names=names, **self._page_names()), [], part
        for direction in ("out", "in"):
            group = [pair for pair in part if pair[1].direction == direction]
            for j in range(_slots(len(group)) if group else 0):
                pair = group[j] if j < len(group) else None
                offset, size = pages[pair or group[-1]]
                i = len(slot_pairs)
                slot_pairs.append(pair)
                params += _pair_params(i, pair)
                e, p = prepared_slot(2 * i), prepared_slot(2 * i + 1)
                if pair is not None and _big(pair):
                    # a big pair's relation in the text: Virtuoso sorts it 2x faster than with the
                    # relation a slot (2.9 against 5.9 s for 2.5M edges); its text is planned anew, once
                    p = sparql_term(ox.NamedNode(pair[1].id))
                blocks.append(render(f"prepared_tails_page_{direction}", e=e, p=p, i=i, limit=size + 1,
                                     offset=offset))
        return render("tails_page", pages=sparql_union(blocks), names=names, **self._page_names()), params, slot_pairs

    def close(self) -> None:
        self._hang_up()

    def stats(self) -> dict:
        return {"endpoint": self.endpoint, "triples": int(self._select(sparql("count"))[0]["n"].value),
                "summaries": "none on the endpoint; " + (
                    "this process keeps what it read of hubs (relation listings, crowded pairs' candidates) and "
                    "the look-ahead schema, made when first needed" if self.listings.size else
                    "this process keeps nothing it read (memo off): the look-ahead schema is made whenever needed"
                ) + f" ({SCHEMA_MADE}, a hub's too)"}
