"""KG time per question on a SPARQL endpoint (Virtuoso): our batched access
against one query per entity, relation and candidate name (ToG's pattern).

Loads a MetaQA KB (as N-Triples; by default the full one from
../shared/data, else the sample's) into a fresh graph of the endpoint
(``launcher/virtuoso-server load``), then asks the sample's questions twice
in the same run, alternating per question: once with the backend as it is
(one request per beam step for the whole frontier) and once with a variant
that asks per item like ToG's code does (relations per entity, tails per
(entity, relation), then one query per candidate's name). Same search, same
answers; prints KG ms and requests per question and the ratio, for each
of ``--passes`` passes over the questions (the first one cold). The
per-item variant sends ToG's requests: its query texts (relations without
DISTINCT, one row per edge, deduplicated by the client; names through a
UNION with owl:sameAs), by GET on a new connection each, asking for JSON
as SPARQLWrapper does (``--per-item-wire ours`` sends our cheaper
one-pattern queries by POST and reads XML instead: a stricter
comparison). It also samples as ToG does: a relation with
20 or more tails gets 5 of them named (``--name-every-tail`` names all: an
upper bound). By default the search itself sees up to 100 candidates per
relation, so the per-item side gets the names beyond ToG's 5 for free (not
counted): a conservative comparison. ``--name-what-the-search-sees`` names,
one query each, exactly the candidates the search looks at instead (the
same search on both sides, every name counted). With ``--sample-over 20`` both sides
run ToG's rule in the search too (``tog --sample-over``): the search sees
exactly the 5 candidates ToG names, and every name is counted. Each side
is timed over the whole question, linking included (ToG's side gets its
topics' names free, as ToG reads them from its question files).
``--dev-per-hop N`` asks seeded MetaQA dev questions instead of the
sample's 21.

Virtuoso compiles each query text it has not seen and reuses the plan of
one it has, and compiling is most of what a small query costs it. Each
pass therefore starts every text of both sides with an unused ``PREFIX``
of its own: every pass runs as on a server that has seen none of its
texts, so questions asked again cost what new ones do. Within a pass, the
batched side's prepared texts (values sent as HTTP parameters) are
compiled at their first use and reused by the questions after it; on a
server that has answered questions before they would all be compiled
already. ``--repeat-texts`` sends the same texts in every pass instead.

    launcher/virtuoso-server start
    python benchmarks/sparql_endpoint.py --endpoint sparql+http://127.0.0.1:18890/sparql
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


SAMPLE_FROM, NUM_RETAIN = 20, 5  # ToG's sampling of entity candidates before naming them (defaults)
SAMPLE = True
NAME_SEEN = False  # --name-what-the-search-sees
WIRE = "tog"  # --per-item-wire
SALT = ""  # a no-op first line that makes every query text of a pass new to the endpoint
TOG_PREFIX = "PREFIX ns: <http://rdf.freebase.com/ns/>"  # ToG declares it in every query
SAME_AS = "http://www.w3.org/2002/07/owl#sameAs"


def per_item_class():
    import http.client
    import random
    import urllib.parse
    import urllib.request

    import pyoxigraph as ox

    from engine.backends.common import crowd_cap, look_through, nothing_behind, sample_key, select_candidates
    from engine.backends.sparql import SparqlGraph, _read_results
    from engine.errors import StoreError
    from engine.graph import CANDIDATE_WINDOW, Node, Relation, is_literal
    from engine.queries import sparql_values

    def one(term) -> str:
        return sparql_values([(term,)])

    def nt(term) -> str:
        """A term as query text: its N-Triples form (pyoxigraph validated it)."""
        assert isinstance(term, (ox.NamedNode, ox.Literal))
        return str(term)

    class PerItemSparqlGraph(SparqlGraph):
        """ToG's access pattern: the relations an entity is the head of and
        those it is the tail of (one row per edge, deduplicated by the
        client), the tails of each (entity, relation), then each candidate's
        name on its own. Same candidates as the batched backend. Each query
        on a new connection, as ToG's code sends them (SPARQLWrapper opens one
        per query). With ``WIRE == "tog"`` (the default) the requests are
        shaped as ToG's are: GET, JSON results (SPARQLWrapper's ``format`` /
        ``output`` / ``results`` parameters and Accept header), ToG's query
        texts (its ``ns:`` prefix declaration, and for names a ``DISTINCT``
        over a ``UNION`` with ``owl:sameAs``, one ``FILTER`` per branch).
        With ``WIRE == "ours"``: POST, XML results (which Virtuoso writes
        faster than JSON), and our one-pattern queries: cheaper per request
        than ToG's, so a stricter comparison."""

        rng = random.Random(0)

        def __init__(self, *args, **kwargs):
            super().__init__(*args, prepared=False, **kwargs)  # ToG's values are in its query texts
            self._fresh = True

        def _free(self, ids):
            """Names the per-item side gets for free: asked in one batch, our
            way, and neither counted nor timed."""
            lookups, seconds, self._uncounted = self.meter.lookups, self.meter.seconds, True
            try:
                return SparqlGraph.labels(self, ids)
            finally:  # take back what the meter counted meanwhile
                self.meter.add(seconds - self.meter.seconds, lookups - self.meter.lookups)
                self._uncounted = False

        _uncounted = False

        def _remote(self, text, params=()):
            text = SALT + text
            if WIRE != "tog" or self._uncounted:
                return SparqlGraph._remote(self, text, params)
            params = [("query", text)] + [("default-graph-uri", g) for g in self.graphs]
            params += [(key, "json") for key in ("format", "output", "results")]
            request = urllib.request.Request(
                self.endpoint + "?" + urllib.parse.urlencode(params),
                headers={"Accept": "application/sparql-results+json,application/json,text/javascript,"
                                   "application/javascript"})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    data = response.read()
            except (OSError, http.client.HTTPException) as e:
                raise StoreError(str(e) or type(e).__name__) from None
            return _read_results(data, ox.QueryResultsFormat.JSON)

        def _query_relations(self, e, direction):
            """The relations of one entity in one direction: (row variable, text)."""
            if WIRE == "tog":
                pattern = f"{nt(ox.NamedNode(e))} ?relation ?x" if direction == "out" else \
                    f"?x ?relation {nt(ox.NamedNode(e))}"
                return "relation", f"{TOG_PREFIX}\nSELECT ?relation\nWHERE {{\n  {pattern} .\n}}"
            pattern = "?e ?p ?x" if direction == "out" else "?x ?p ?e"
            return "p", f"SELECT ?p WHERE {{ VALUES (?e) {{ {one(ox.NamedNode(e))} }} {pattern} . }}"

        def _query_tails(self, e, rel):
            """The neighbours of one (entity, relation): (row variable, text)."""
            if WIRE == "tog":
                head, r = nt(ox.NamedNode(e)), nt(ox.NamedNode(rel.id))
                pattern = f"{head} {r} ?tailEntity" if rel.direction == "out" else f"?tailEntity {r} {head}"
                return "tailEntity", f"{TOG_PREFIX}\nSELECT ?tailEntity\nWHERE {{\n{pattern} .\n}}"
            pattern = "?e ?p ?x" if rel.direction == "out" else "?x ?p ?e"
            pair = sparql_values([(ox.NamedNode(e), ox.NamedNode(rel.id))])
            return "x", f"SELECT ?x WHERE {{ VALUES (?e ?p) {{ {pair} }} {pattern} . }}"

        def relations(self, entities):
            out = {}
            names = set(self.name_predicates)
            for e in entities:
                found = set()
                for direction in ("out", "in"):
                    var, text = self._query_relations(e, direction)
                    for row in self._select(text):
                        p = row[var].value
                        if self.policy.allows(p) and p not in names:
                            found.add(Relation(p, direction))
                out[e] = sorted(found, key=lambda r: (r.id, r.direction))
            return out

        def _tails(self, e, rel):
            var, text = self._query_tails(e, rel)
            return [row[var] for row in self._select(text) if row[var] is not None]

        def expand(self, requests, limit=100, *, over=0, size=5, through=True):
            if over or NAME_SEEN:
                return self._expand_sampled(requests, limit, over, size, through)
            found = {}
            for e, rel in requests:
                seen = {}
                tails = self._tails(e, rel)
                iris = [x.value for x in tails if isinstance(x, ox.NamedNode)]
                # ToG names each candidate with its own query, after sampling
                # NUM_RETAIN of them when there are SAMPLE_FROM or more
                asked = iris if len(iris) < SAMPLE_FROM or not SAMPLE else self.rng.sample(iris, NUM_RETAIN)
                names = {}
                for iri in asked:
                    names.update(self.labels([iri]))
                rest = [i for i in iris if i not in names and i not in asked]
                if rest:  # the names ToG never asks for, fetched uncounted so the search sees the same candidates
                    names.update(self._free(rest))
                for x in tails:
                    if isinstance(x, ox.Literal):
                        xid = str(x)
                        seen[xid] = Node(xid, x.value, True, x.datatype.value if x.datatype else None)
                    elif isinstance(x, ox.NamedNode):
                        name = names.get(x.value)
                        seen[x.value] = Node(x.value, name) if name is not None else None
                found[(e, rel)] = seen
            return select_candidates(requests, found, limit,
                                     self._behind if through else nothing_behind)

        def _expand_sampled(self, requests, limit, over, size, through):
            """One query per name the search needs, no more: with the search
            sampling crowded relations itself (ToG's rule, ``--sample-over``),
            that is what ToG's code names; every name asked and counted."""
            found, counts = {}, {}
            for e, rel in requests:
                terms = {}
                for x in self._tails(e, rel):
                    if isinstance(x, ox.Literal):
                        terms[str(x)] = x
                    elif isinstance(x, ox.NamedNode):
                        terms[x.value] = x
                counts[(e, rel)] = len(terms)
                cap = crowd_cap(len(terms), limit, over, size)
                seen, named = {}, 0
                for xid in sorted(terms, key=sample_key)[: CANDIDATE_WINDOW * cap]:
                    if named >= cap:
                        break
                    x = terms[xid]
                    if isinstance(x, ox.Literal):
                        seen[xid] = Node(xid, x.value, True, x.datatype.value if x.datatype else None)
                    else:
                        name = self.labels([xid]).get(xid)  # one query per candidate, as ToG names them
                        seen[xid] = Node(xid, name) if name is not None else None
                    named += seen[xid] is not None
                found[(e, rel)] = seen
            return select_candidates(requests, found, limit, self._behind if through else nothing_behind,
                                     over=over, size=size, counts=counts)

        def _behind(self, unnamed, limit):
            return look_through(self, unnamed, limit)

        def topic_labels(self, ids):
            # ToG's question files give the topic entities' names: its code
            # never asks for them (fetched here uncounted)
            return self._free(ids)

        def labels(self, ids):
            if WIRE != "tog":
                out = {}
                for i in ids:  # ToG asks for one entity's name at a time
                    out.update(super().labels([i]))
                return out
            out = {}
            for i in ids:
                if is_literal(i):
                    out.update(super().labels([i]))
                    continue
                # ToG's shape: the name, or else an owl:sameAs IRI, one query
                # per entity (with several name predicates, ToG has one, the
                # first branch takes them all and says which one it matched)
                iri, terms = nt(ox.NamedNode(i)), [np for (np,) in self._name_terms()]
                several = len(terms) > 1
                named = (f"?entity ?np ?tailEntity .\n    VALUES ?np {{ {' '.join(nt(t) for t in terms)} }}" if several
                         else f"?entity {nt(terms[0])} ?tailEntity .")
                text = (f"{TOG_PREFIX}\nSELECT DISTINCT ?tailEntity{' ?np' if several else ''}\nWHERE {{\n"
                        f"  {{\n    {named}\n    FILTER(?entity = {iri})\n  }}\n  UNION\n"
                        f"  {{\n    ?entity {nt(ox.NamedNode(SAME_AS))} ?tailEntity .\n    FILTER(?entity = {iri})\n"
                        f"  }}\n}}")
                rows = [(i, r["np"].value if several else terms[0].value, r["tailEntity"])
                        for r in self._select(text) if not several or r["np"] is not None]
                out.update(self._pick_names(rows))
            return out

    return PerItemSparqlGraph


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoint", default="sparql+http://127.0.0.1:18890/sparql")
    ap.add_argument("--name-every-tail", action="store_true",
                    help="Per-item variant names every tail (no sampling): an upper bound of ToG's cost.")
    ap.add_argument("--name-what-the-search-sees", action="store_true",
                    help="Per-item variant names, one query each, the candidates the search looks at (up to "
                         "100 per relation by default) instead of ToG's 5 of 20+ with the others free.")
    ap.add_argument("--sample-over", type=int, default=0,
                    help="Run both sides with ToG's rule for crowded relations (tog --sample-over; ToG: 20): "
                         "the search sees SIZE candidates of a relation with this many neighbours or more, and "
                         "the per-item side names exactly those, one query each.")
    ap.add_argument("--sample-size", type=int, default=5, help="Candidates a crowded relation offers (ToG: 5).")
    ap.add_argument("--per-item-wire", choices=("tog", "ours"), default="tog",
                    help="How the per-item side sends its queries: tog (default) as ToG's code does (GET, JSON "
                         "results, ToG's query texts); ours: POST, XML results and our one-pattern queries, "
                         "cheaper per request (a stricter comparison).")
    ap.add_argument("--repeat-texts", action="store_true",
                    help="Send the same query texts in every pass (Virtuoso then reuses what it compiled in the "
                         "first: questions asked again). By default each pass's texts are new to it, as with "
                         "questions never asked before.")
    ap.add_argument("--dev-per-hop", type=int, default=0,
                    help="Ask this many MetaQA dev questions per hop (seeded, as benchmarks/metaqa.py picks "
                         "them; needs ../shared/data) instead of the sample's 21.")
    ap.add_argument("--passes", type=int, default=3,
                    help="Passes over the questions (each prints its figures; the first is cold).")
    ap.add_argument("--keep", action="store_true",
                    help="Keep the loaded graph afterwards (Virtuoso answers some queries of a freshly loaded "
                         "graph several times slower for minutes; measure it again later with --graph).")
    ap.add_argument("--graph", default=None,
                    help="Measure a graph loaded earlier with --keep instead of loading a new one.")
    ap.add_argument("--kb", type=Path, default=None,
                    help="MetaQA-style KB to load (default: the full MetaQA KB from ../shared/data when "
                         "present, else the sample's)")
    args = ap.parse_args()
    global SAMPLE, NAME_SEEN, WIRE
    SAMPLE = not args.name_every_tail
    NAME_SEEN = args.name_what_the_search_sees
    WIRE = args.per_item_wire

    from engine.backends.sparql import SparqlGraph
    from engine.evaluate import read_questions
    from engine.linking import bracketed
    from engine.pruning import get_pruner
    from engine.reasoning import get_reasoner
    from engine.runs import ask
    from engine.search import SearchConfig
    from engine.store import Store
    from loaders import triples

    sample = HERE.parent / "examples" / "metaqa"
    with tempfile.TemporaryDirectory() as tmp:
        nt = Path(tmp) / "kb.nt"
        full = HERE.parent.parent / "shared" / "data" / "metaqa" / "kb.txt.gz"
        kb = args.kb or (full if full.exists() else sample / "kb.txt")
        from loaders.base import open_binary

        with open_binary(kb) as fh:
            lines = fh.read().splitlines(keepends=True)
        print(f"KB: {kb} ({len(lines):,} lines)")
        data, _, _, _ = triples.convert(lines, 1, "delimited", "|")  # noqa: F841 (names are in the data)
        nt.write_bytes(data)
        graph = args.graph or f"http://tog.bench/{uuid.uuid4().hex}"
        if args.graph is None:
            subprocess.run([str(HERE.parent / "launcher" / "virtuoso-server"), "load", str(nt), graph], check=True)
        if args.keep:
            print(f"graph: {graph} (kept: pass --graph {graph} to measure it again)")
        spec = f"{args.endpoint}?default-graph-uri={graph}"
        class Batched(SparqlGraph):
            def _remote(self, text, params=()):
                return super()._remote(SALT + text, params)

        # nothing kept from question to question (Memo): each pass is asked as a new process would
        # (what a process keeps is measured by big_pair.py --sparql)
        batched = Batched(spec, memo=False)
        per_item = per_item_class()(spec, memo=False)
        if args.dev_per_hop:
            from types import SimpleNamespace

            sys.path.insert(0, str(HERE))
            from metaqa import DEFAULT_DATA
            from metaqa import sample as dev_sample

            questions = [SimpleNamespace(question=d["question"]) for hop in (1, 2, 3)
                         for d in dev_sample(DEFAULT_DATA, hop, args.dev_per_hop, 0)]
            print(f"{len(questions)} MetaQA dev questions ({args.dev_per_hop} per hop)")
        else:
            questions = list(read_questions(sample / "questions.txt"))
        pruner, reasoner = get_pruner("hybrid"), get_reasoner("offline")
        config = SearchConfig(sample_over=args.sample_over, sample_size=args.sample_size)
        if args.sample_over:
            print(f"ToG's sampling on both sides: {args.sample_size} candidates of a relation with "
                  f"{args.sample_over} or more neighbours")
        # the first passes after a fresh load warm Virtuoso up (their figures
        # are printed too, but they swing by several times from run to run)
        global SALT
        run = uuid.uuid4().hex[:8]
        for n in range(1, args.passes + 1):
            if not args.repeat_texts:  # each pass's texts are new to the endpoint (an unused prefix)
                SALT = f"PREFIX tog{run}p{n}: <urn:x-tog:pass>\n"
            label = f"pass {n} of {args.passes}" + (" (cold)" if n == 1 else "")
            figures = {"batched": [], "per item": []}
            same = 0
            for q in questions:
                answers = []
                # the topic by its IRI (the endpoint's linking matches exact names only)
                topics = [f"<{triples.entity_iri(m)}>" for m in bracketed(q.question)]
                for name, kg in (("batched", batched), ("per item", per_item)):
                    # the whole question, linking included (the per-item side
                    # gets its topics' names free, as ToG reads them from its files)
                    lookups, seconds = kg.meter.lookups, kg.meter.seconds
                    r = ask(Store(name, kg), q.question, pruner, reasoner, config, topics, record=False)
                    figures[name].append((1000 * (kg.meter.seconds - seconds), kg.meter.lookups - lookups))
                    answers.append(r.result.answer.names)
                same += answers[0] == answers[1]
            print(f"{label}:")
            for name, rows in figures.items():
                ms = [m for m, _ in rows]
                print(f"  {name}: KG time median {statistics.median(ms):.1f} ms, mean {statistics.fmean(ms):.1f} ms, "
                      f"{statistics.fmean(n for _, n in rows):.1f} requests per question")
            mean = {name: statistics.fmean(m for m, _ in rows) for name, rows in figures.items()}
            median = {name: statistics.median(m for m, _ in rows) for name, rows in figures.items()}
            print(f"  {len(questions)} questions, same answers {same}/{len(questions)}; batched is "
                  f"{mean['per item'] / mean['batched']:.1f}x faster per question by mean KG time, "
                  f"{median['per item'] / median['batched']:.1f}x by median")
        batched.close()
        per_item.close()
        if not args.keep and args.graph is None:
            subprocess.run([str(HERE.parent / "launcher" / "virtuoso-server"), "drop", graph], check=True)


if __name__ == "__main__":
    main()
