"""A remote SPARQL endpoint as the knowledge graph (ToG's Virtuoso with Freebase, say).

``--store sparql+http://HOST:8890/sparql`` (or ``sparql+https://``; add
``?default-graph-uri=IRI`` to restrict the default graph). The KG is read
with batched queries (``sparql/*.rq``: one request per beam step, ``VALUES``
rows, full IRIs); following relations, the endpoint picks each pair's
sample itself and sends one page of it with names (see ``expand``), each request on a fresh
HTTP connection (Virtuoso stalls about 49 ms on answers past ~32 KB over a
reused connection), with XML results, read by pyoxigraph (Virtuoso 7.2
writes JSON results about 5x slower: 23 against 4 ms for 460 rows). The
queries' comment lines are dropped before sending: with them, one relation
listing took Virtuoso 80 ms instead of 1.5 ms. The endpoint is read-only for tog:
runs (and their feedback) live in a local embedded store, by default
``.tog/sparql-runs/<host>-<port>`` (``TOG_SPARQL_RUNS``). Corrections need a
writable store and are refused here.

Entity linking asks the endpoint for exact names (a key as written, in
title case and in upper case; English and untagged): with a big endpoint,
pass topic entities (``--topic``, or ToG's question files, whose mids are
used as they are).

Terms reach query text only through pyoxigraph's serialisation (the one
escaping function of the embedded store); a SPARQL endpoint takes no
parameters, so this is how values travel.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import pyoxigraph as ox

from engine.backends.common import Found, chunks, look_through, sample_key, select_candidates
from engine.backends.oxigraph import BATCH, OxigraphGraph
from engine.errors import StoreError
from engine.graph import DEFAULT_POLICY, Candidate, Node, Relation, RelationPolicy, local_name, name_key
from engine.queries import render, sparql, sparql_values

SCHEMES = ("sparql+http", "sparql+https")
PAGE_PAIRS = 40  # (entity, relation) pairs per page request


def _without_comments(text: str) -> str:
    """The query without its whole-line ``#`` comments (a ``#`` inside an
    IRI or a literal is never at the start of a line in our queries)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def is_sparql_uri(spec: str) -> bool:
    return spec.split("://", 1)[0].lower() in SCHEMES if "://" in spec else False


def _paged(xid: str) -> bool:
    """Whether the endpoint orders this neighbour (an IRI in printable
    ASCII, as ``tails_page_*.rq`` selects them); the rest come whole."""
    return not xid.startswith('"') and xid.isascii() and xid.isprintable() and " " not in xid


class _Row(dict):
    def __missing__(self, key):
        return None


def _read_results(data: bytes):
    """SPARQL XML results as a bool (ASK) or a list of rows (variable ->
    pyoxigraph term).  Raises ``StoreError`` when they are not readable."""
    try:
        results = ox.parse_query_results(data, ox.QueryResultsFormat.XML)
        if isinstance(results, ox.QueryBoolean):
            return bool(results)
        names = [(v, v.value) for v in results.variables]
        return [_Row({name: s[v] for v, name in names if s[v] is not None}) for s in results]
    except (SyntaxError, ValueError) as e:
        raise StoreError(f"the endpoint's answer is not SPARQL XML results ({e})") from None


class SparqlGraph(OxigraphGraph):
    """``KnowledgeGraph`` over a remote SPARQL endpoint; runs kept locally."""

    capabilities = frozenset({"runs"})

    def __init__(self, spec: str, *, runs: str | Path | None = None, policy: RelationPolicy = DEFAULT_POLICY,
                 timeout: float = 60.0, retries: int = 2) -> None:
        parts = urllib.parse.urlsplit(spec)
        scheme = parts.scheme.split("+", 1)[1]
        query = urllib.parse.parse_qs(parts.query)
        self.graphs = query.get("default-graph-uri", [])
        self.endpoint = urllib.parse.urlunsplit((scheme, parts.netloc, parts.path, "", ""))
        self.timeout, self.retries = timeout, retries
        where = runs or os.environ.get("TOG_SPARQL_RUNS") or (
            Path(".tog") / "sparql-runs" / f"{parts.hostname}-{parts.port or 80}-"
                                           f"{hashlib.sha1(spec.encode()).hexdigest()[:6]}")
        super().__init__(where, create=True, policy=policy)
        try:
            self._remote("ASK { }")
        except StoreError as e:
            super().close()
            raise StoreError(f"cannot reach the SPARQL endpoint at {self.endpoint}: {e}") from None

    # -- transport ------------------------------------------------------------
    def _remote(self, text: str):
        text = _without_comments(text)
        body = urllib.parse.urlencode([("query", text)] + [("default-graph-uri", g) for g in self.graphs]).encode()
        request = urllib.request.Request(self.endpoint, data=body, method="POST", headers={
            # XML, not JSON: Virtuoso 7.2 writes JSON results 5x slower (23 vs 4 ms for 460 rows)
            "Accept": "application/sparql-results+xml", "Content-Type": "application/x-www-form-urlencoded",
            "Connection": "close"})  # a fresh connection per request (see the module's note)
        for attempt in range(self.retries + 1):
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    data = response.read()
                return _read_results(data)
            except urllib.error.HTTPError as e:
                detail = e.read().decode("utf-8", "replace").strip().splitlines()[:2]
                if e.code >= 500 and attempt < self.retries:
                    time.sleep(0.5 * (2 ** attempt))
                    continue
                raise StoreError(f"the endpoint answered HTTP {e.code}: {' '.join(detail)[:300]}") from None
            except (urllib.error.URLError, OSError, TimeoutError) as e:
                if attempt < self.retries:
                    time.sleep(0.5 * (2 ** attempt))
                    continue
                raise StoreError(f"{getattr(e, 'reason', e)}") from None
        raise StoreError("unreachable")  # pragma: no cover (the loop returns or raises)

    def _kg_query(self, text: str):
        started = time.perf_counter()
        try:
            data = self._remote(text)
        except StoreError as e:
            raise StoreError(f"SPARQL endpoint {self.endpoint}: {e}") from None
        finally:
            self.lookups += 1
            self.seconds += time.perf_counter() - started
        return data

    # -- what differs from the embedded store ---------------------------------
    def has_entity(self, entity: str) -> bool:
        try:
            node = ox.NamedNode(entity)
        except ValueError:
            return False
        return bool(self._kg_query(render("ask_entity", entity=sparql_values([(node,)]))))

    def search_entities(self, keys: Sequence[str]) -> dict[str, list[Node]]:
        keys = list(dict.fromkeys(k for k in keys if k))
        if not keys:
            return {}
        rows = []
        for key in keys:
            for form in dict.fromkeys((key, key.title(), key.upper())):
                rows += [(ox.Literal(form, language="en"),), (ox.Literal(form),)]
        text = render("names_lookup", names=sparql_values(rows), predicates=sparql_values(self._name_terms()))
        found: dict[str, list[str]] = {}
        for r in self._kg_query(text):
            key = name_key(r["name"].value)
            if key in keys and r["e"].value not in found.setdefault(key, []):
                found[key].append(r["e"].value)
        names = self.labels([e for ents in found.values() for e in ents])
        return {k: [Node(e, names.get(e, local_name(e))) for e in sorted(v)] for k, v in found.items()}

    def expand(self, requests: Sequence[tuple[str, Relation]], limit: int = 100) -> list[Candidate]:
        """Each pair's neighbours a page at a time in ``sample_key`` order,
        chosen by the endpoint, with their names (``tails_page.rq``): one
        request for the first ``limit`` of every pair, another only for
        pairs where some of those had no name (up to the window of four
        times ``limit`` the embedded store looks at). A hub's hundreds of
        neighbours never leave the server."""
        pairs = list(dict.fromkeys((e, r) for e, r in requests if not e.startswith('"')))
        window = limit * 4
        seen: dict[tuple[str, Relation], dict[str, ox.NamedNode | ox.Literal]] = {p: {} for p in pairs}
        name_rows: list[tuple[str, str, ox.Literal]] = []
        names: dict[str, str] = {}
        todo = {pair: 0 for pair in pairs}  # pair -> offset of its next page
        while todo:
            sizes = {pair: limit if offset == 0 else window - offset for pair, offset in todo.items()}
            got: dict[tuple[str, Relation], dict] = defaultdict(dict)
            for part in chunks(list(todo), PAGE_PAIRS):
                for row in self._kg_query(self._page_query(part, todo, sizes)):
                    x = row["x"]
                    xid = str(x) if isinstance(x, ox.Literal) else x.value
                    got[part[int(row["i"].value)]][xid] = x
                    if row["name"] is not None:
                        name_rows.append((xid, row["np"].value, row["name"]))
            names = self._pick_names(name_rows)
            following = {}
            for pair, offset in todo.items():
                iris = sorted((x for x in got[pair] if _paged(x)), key=sample_key)
                seen[pair].update(got[pair])
                more = len(iris) > sizes[pair]  # one row past the page: the pair goes on
                if not more:
                    continue
                del seen[pair][iris[-1]]  # that row belongs to the next page
                edge = sample_key(iris[-2])
                # named neighbours before the page's edge (a literal past it
                # may come after IRIs not fetched yet)
                named = sum(1 for x in seen[pair] if (x.startswith('"') or x in names) and sample_key(x) <= edge)
                if named < limit and offset + sizes[pair] < window:
                    following[pair] = offset + sizes[pair]
            todo = following
        found: Found = {}
        for key, terms in seen.items():
            found[key] = {}
            named = 0
            for xid in sorted(terms, key=sample_key)[:window]:
                if named >= limit:
                    break  # what follows would be cut by select_candidates
                term = terms[xid]
                if isinstance(term, ox.Literal):
                    found[key][xid] = Node(xid, term.value, True, term.datatype.value if term.datatype else None)
                elif xid in names:
                    found[key][xid] = Node(xid, names[xid])
                else:
                    found[key][xid] = None
                named += found[key][xid] is not None
            if named >= limit:  # unnamed nodes would only be looked through to be cut
                found[key] = {x: n for x, n in found[key].items() if n is not None}
        return select_candidates(requests, found, limit,
                                 lambda unnamed, lim: look_through(self, unnamed, lim, self._expand_named))

    def _page_query(self, part: list[tuple[str, Relation]], offsets: dict, sizes: dict) -> str:
        """One request for a page of each pair in ``part`` (numbered by
        position), and the literal objects of those on their first page."""
        blocks, first = [], defaultdict(list)
        for i, (e, r) in enumerate(part):
            row = (ox.Literal(i), ox.NamedNode(e), ox.NamedNode(r.id))
            blocks.append(render(f"tails_page_{r.direction}", pair=sparql_values([row]),
                                 limit=sizes[(e, r)] + 1, offset=offsets[(e, r)]))
            if offsets[(e, r)] == 0:
                first[r.direction].append(row)
        for direction, rows in first.items():
            blocks.append(render(f"tails_rest_{direction}", pairs=sparql_values(rows)))
        return render("tails_page", pages="\n  UNION\n  ".join(blocks), names=sparql_values(self._name_terms()))

    def stats(self) -> dict:
        return {"endpoint": self.endpoint, "triples": int(self._kg_query(sparql("count"))[0]["n"].value),
                "runs": len(self.runs())}

    def set_name_predicates(self, predicates: Sequence[str]) -> None:
        raise StoreError(f"the SPARQL endpoint {self.endpoint} is read-only for tog; load it with its own tools")

    def bulk_load_ntriples(self, data, fmt=None) -> None:
        self.set_name_predicates(())

    bulk_extend = bulk_load_ntriples
