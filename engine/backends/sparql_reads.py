"""KG reads written in SPARQL (``sparql/*.rq``), shared by the embedded
Oxigraph store and a remote SPARQL endpoint.

:class:`SparqlReads` holds what both answer the same way: the relations
around entities, names, and the named neighbours behind an unnamed node.
A subclass says how a query travels (``_select``) and which predicates
carry names; batches enter query text only through
:func:`engine.queries.sparql_values`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

import pyoxigraph as ox

from engine.backends.common import (
    SCHEMA_READ,
    SHOWN_RANK,
    chunks,
    informative,
    label_relations,
    lang_rank,
    look_ahead_tails,
    past_or_first,
)
from engine.graph import (
    DEFAULT_POLICY,
    Direction,
    KnowledgeGraph,
    Meter,
    Relation,
    RelationPolicy,
    RelationSchema,
    is_literal,
    literal_value,
)
from engine.errors import StoreError
from engine.queries import render, sparql, sparql_term, sparql_union, sparql_values

BATCH = 400  # VALUES rows per query: keeps query texts small and plans simple
UNION_BATCH = 64  # branches per query that joins a batch by UNION
LANGUAGE_SAMPLE = 500  # names whose languages tell whether the KG names things in other languages
NAMES_AN_ENTITY = 20  # name rows read per entity `named_entities` wants (a node may have one a language)
Degrees = dict[tuple[str, Direction], dict[str, int]]  # (entity, direction) -> {relation: degree}
NameRow = tuple[ox.NamedNode, int, ox.Literal]  # a name lookup's row: predicate, language rank, name (``name_row``)


def fragment(name: str) -> str:
    """A ``sparql/`` fragment that goes inside other queries, without its comments."""
    return "\n".join(line for line in sparql(name).splitlines() if line and not line.startswith("#"))


_SHOWN_ONLY = fragment("shown_only")
RANK = fragment("name_rank")  # the GROUP BY key of name lookups: a name's language rank


def name_row(row) -> NameRow | None:
    """(predicate, language rank, name) of a name lookup's row: grouped by
    predicate and rank (``?rank``, name_rank.rq, and the lowest ``?name``)
    or one name a row (``?label``, ranked here); None without a literal name
    (a node without names can come with a rank: Virtuoso ranks an unbound
    name as untagged)."""
    pred, rank, name, label = row["np"], row["rank"], row["name"], row["label"]
    if pred is None:
        return None
    if rank is not None:
        return (pred, int(rank.value), name) if name is not None else None
    return (pred, lang_rank(label.language), label) if isinstance(label, ox.Literal) else None


def node_id(term: ox.NamedNode | ox.Literal | ox.BlankNode) -> str:
    """The id of a term: an IRI, or a literal's N-Triples form."""
    return str(term) if isinstance(term, ox.Literal) else term.value


def values(rows: Iterable[Sequence[object]]) -> str:
    return sparql_values(rows)


def place_of(row, var: str, size: int) -> int:
    """The place (a branch or slot number below ``size``) in ``row[var]``;
    a ``StoreError`` when the answer does not have the shape of the query."""
    try:
        n = int(row[var].value)
    except (AttributeError, TypeError, ValueError):
        n = -1
    if not 0 <= n < size:
        raise StoreError(f"the endpoint's answer does not fit the query (?{var} = {row[var]})")
    return n


def iri_term(iri: str) -> str:
    """An IRI as a term in query text."""
    return sparql_term(ox.NamedNode(iri))


def iri_rows(iris: Iterable[str]) -> str:
    """A VALUES body of one IRI per row."""
    return sparql_values((ox.NamedNode(i),) for i in iris)


def keyed_rows(iris: Iterable[str]) -> str:
    """A VALUES body of one IRI per row with its place (``VALUES (?e ?k)``),
    for a batch whose edges a query reads: Virtuoso 7.2 makes an IN list of
    a single column of distinct IRIs and tests every edge it reads against
    the whole list (its plan's ONE_OF_THESE), so that a batch of hundreds
    with a hub in it cost seconds; with two columns it joins the rows."""
    return sparql_values((ox.NamedNode(i), ox.Literal(k)) for k, i in enumerate(iris))


class SparqlReads(KnowledgeGraph):
    """The reads of the ``KnowledgeGraph`` protocol that are the same SPARQL
    on every engine that answers SPARQL."""

    schema: RelationSchema | None = None

    def __init__(self, policy: RelationPolicy = DEFAULT_POLICY) -> None:
        self.policy = policy
        self.meter = Meter()
        self._relation_labels: dict[str, str | None] = {}
        self._used_names: tuple[object, list[tuple[ox.NamedNode]]] | None = None
        self._multilingual = False  # names in other languages than English among a sample (``_name_terms``)
        self._names_repeat = False  # ``names_repeat``

    # -- what a subclass provides ---------------------------------------------
    @property
    def name_predicates(self) -> tuple[str, ...]:
        raise NotImplementedError

    def _select(self, text: str, params: Sequence[tuple[str, str]] = ()) -> list:
        """Rows of a SELECT (variable -> term, None when unbound), counted on ``meter``."""
        raise NotImplementedError

    def _generation(self) -> object:
        """What changes when the KG may use other name predicates (a load)."""
        return None

    # -- names ----------------------------------------------------------------
    def _name_terms(self) -> list[tuple[ox.NamedNode]]:
        """The name predicates the KG uses (asked once, again after a load):
        every name lookup is cheaper without the others."""
        generation = (self._generation(), self.name_predicates)
        if self._used_names is None or self._used_names[0] != generation:
            terms = [(ox.NamedNode(p),) for p in self.name_predicates]
            rows = self._select(render("name_predicates", names=values(terms), sample=LANGUAGE_SAMPLE))
            used = {r["np"].value for r in rows if r["np"] is not None}
            self._used_names = (generation, [t for t in terms if t[0].value in used] or terms)
            self._multilingual = any(lang_rank(r["lang"].value) >= SHOWN_RANK for r in rows if r["lang"] is not None)
            sampled = [(r["s"], r["p"]) for r in rows if r["p"] is not None]
            self._names_repeat = self._multilingual or len(used) > 1 or len(set(sampled)) < len(sampled)
        return self._used_names[1]

    def names_repeat(self) -> bool:
        """Whether a node may have several names under one name predicate and
        language rank, judged from the sample ``_name_terms`` reads (names in
        other languages, more than one name predicate in use, or a sampled
        node named twice under one), or found by a page that sent a node's
        names one a row: only then does a page group its neighbours' names
        (``name_rank.rq``), which costs Virtuoso about a fifth more a page
        where each node has one name."""
        self._name_terms()
        return self._names_repeat

    def only(self, shown: bool) -> str:
        """The filter that keeps the names a node is shown by
        (``shown_only.rq``), when asked and when the KG's names are in
        other languages too (a sample of LANGUAGE_SAMPLE at ``_name_terms``);
        else none."""
        self._name_terms()
        return _SHOWN_ONLY if shown and self._multilingual else ""

    def _pick_names(self, rows: Iterable[tuple[str, NameRow | None]]) -> dict[str, str]:
        """Best name per id from (id, ``name_row``) pairs: English first, then
        the order of the name predicates, then the lower text
        (``common.name_rank``: whatever order the rows come in)."""
        order = {p: i for i, p in enumerate(self.name_predicates)}
        best: dict[str, tuple[tuple[int, int, str], str]] = {}
        for key, named in rows:
            if named is None:
                continue
            pred, rank, name = named
            sort = (rank, order.get(pred.value, 99), name.value)
            if key not in best or sort < best[key][0]:
                best[key] = (sort, name.value)
        return {k: v[1] for k, v in best.items()}

    def labels(self, ids: Sequence[str]) -> dict[str, str]:
        """Names by the names the nodes are shown by (``shown_only.rq``,
        in a KG with names in other languages); the nodes without any such
        name are asked again for all of theirs."""
        out = {i: literal_value(i) for i in ids if is_literal(i)}
        iris = [i for i in dict.fromkeys(ids) if not is_literal(i)]
        return {**out, **self._with_the_rest(iris, self._names(iris, shown=True))}

    def _with_the_rest(self, iris: Sequence[str], names: dict[str, str]) -> dict[str, str]:
        """``names`` (from the names ``iris`` are shown by) and, in a KG with
        names in other languages, those of the rest from all of their names
        (in a KG named in English only, the first request asked for all)."""
        rest = [i for i in iris if i not in names]
        return {**names, **self._names(rest, shown=False)} if rest and self.only(True) else names

    def _names(self, iris: Sequence[str], shown: bool) -> dict[str, str]:
        """The best name of each of ``iris`` that has one, from the names it
        is shown by (``shown``) or from all of its names."""
        out: dict[str, str] = {}
        for part in chunks(iris, BATCH):
            text = render("labels", entities=iri_rows(part), names=values(self._name_terms()), only=self.only(shown),
                          rank=RANK)
            out.update(self._pick_names((r["e"].value, name_row(r)) for r in self._select(text)))
        return out

    def topic_labels(self, ids: Sequence[str]) -> dict[str, str]:
        return self.labels(ids)

    def relation_counts(self) -> list[tuple[str, int]]:
        return [(r["p"].value, int(r["n"].value)) for r in self._select(sparql("relation_counts"))]

    def named_entities(self, most: int, skip: int = 0) -> list[str]:
        def read(offset: int) -> list[str]:
            text = render("named_entities", names=values(self._name_terms()), offset=offset,
                          limit=NAMES_AN_ENTITY * most)
            return list(dict.fromkeys(r["e"].value for r in self._select(text)))

        return past_or_first(read, most, skip)

    # -- relations ------------------------------------------------------------
    def relations(self, entities: Sequence[str]) -> dict[str, list[Relation]]:
        iris = [e for e in dict.fromkeys(entities) if not is_literal(e)]
        rows = []
        for part in chunks(iris, BATCH):  # a request per direction (relations_out.rq)
            rows += [{"e": r["e"], "po": r["po"], "pi": None, "n": r["n"]}
                     for r in self._select(render("relations_out", entities=keyed_rows(part)))]
            rows += [{"e": r["e"], "po": None, "pi": r["pi"], "n": r["n"]}
                     for r in self._select(render("relations_in", entities=keyed_rows(part)))]
        return self._relations_from(rows, entities)

    def _relations_from(self, rows: Iterable, entities: Sequence[str]) -> dict[str, list[Relation]]:
        """The informative relations in (?e ?po ?pi ?n) rows
        (``relations_out.rq``, ``relations_in.rq``), with their degrees,
        sorted and named."""
        out: dict[str, list[Relation]] = {e: [] for e in entities}
        names = set(self.name_predicates)
        for row in rows:
            head = row["po"]
            direction: Direction = "out" if head is not None else "in"
            pred = head.value if head is not None else row["pi"].value
            if self.policy.allows(pred) and pred not in names:
                n = row["n"]
                out[row["e"].value].append(Relation(pred, direction, degree=int(n.value) if n is not None else None))
        for rels in out.values():
            rels.sort(key=lambda r: (r.id, r.direction))
        label_relations(self, out, self._relation_labels)
        return out

    # -- bounded reads ----------------------------------------------------------
    def _bounded(self, keys: Sequence[tuple[str, Direction]], limit: int) -> Degrees:
        """The relations and degrees that at most ``limit`` edges of each
        (entity, direction) show, a batch of UNION branches per query."""
        out: Degrees = {}
        for part in chunks(keys, UNION_BATCH):
            branches = sparql_union(
                render(f"relations_bounded_{d}", e=iri_term(e), limit=limit, k=k).strip()
                for k, (e, d) in enumerate(part))
            found: dict[int, dict[str, int]] = defaultdict(dict)
            for row in self._select(render("relations_bounded", branches=branches)):
                found[place_of(row, "k", len(part))][row["p"].value] = int(row["n"].value)
            for k, key in enumerate(part):
                out[key] = found.get(k, {})
        return out

    def _follows(self, part: Sequence[tuple[str, Direction]], around: Callable[[list[str]], Degrees]
                 ) -> dict[tuple[str, Direction], list[Relation]]:
        """The look-ahead schema of a batch of (relation, direction): the
        relations ``around`` a bounded sample of the nodes each leads to
        (``_tails``: the first SCHEMA_TAILS in sample order of those its
        first SCHEMA_READ edges reach) and what ``around`` says of theirs
        (a sample of samples)."""
        tails = self._tails(part)
        degrees = around(sorted({n for ns in tails.values() for n in ns}))
        return {key: informative([Relation(p, d) for n in tails.get(k, []) for d in ("out", "in")
                                  for p in degrees.get((n, d), {})], self.policy, self.name_predicates)
                for k, key in enumerate(part)}

    def _tails(self, part: Sequence[tuple[str, Direction]]) -> dict[int, list[str]]:
        """The look-ahead's tails of each (relation, direction) of ``part``,
        by its place in it (``common.look_ahead_tails``)."""
        return look_ahead_tails(part, self._reach, self._small)

    def _reach(self, part: Sequence[tuple[str, Direction]], most: int) -> dict[int, list[str]]:
        """At most ``most`` of the distinct nodes the first SCHEMA_READ
        edges of each (relation, direction) reach, by its place in ``part``:
        one query (the batch's relations in its text)."""
        branches = sparql_union(
            render(f"schema_tails_{d}", p=iri_term(r), read=SCHEMA_READ, limit=most, k=k).strip()
            for k, (r, d) in enumerate(part))
        tails: dict[int, list[str]] = defaultdict(list)
        for row in self._select(render("schema_tails", branches=branches)):
            tails[place_of(row, "k", len(part))].append(row["n"].value)
        return tails

    def _small(self, part: Sequence[tuple[str, Direction]]) -> list[tuple[str, Direction]]:
        """Those of ``part`` whose relation has at most SCHEMA_READ edges."""
        big = self._big(list(dict.fromkeys(r for r, _ in part)))
        return [key for key in part if key[0] not in big]

    def _big(self, relations: Sequence[str]) -> set[str]:
        """Those of ``relations`` with more than SCHEMA_READ edges
        (``schema_past.rq``: a query per UNION_BATCH relations, each read no
        further than its edge past that)."""
        big: set[str] = set()
        for chunk in chunks(relations, UNION_BATCH):
            branches = sparql_union(render("schema_past_one", p=iri_term(r), read=SCHEMA_READ, k=k).strip()
                                    for k, r in enumerate(chunk))
            rows = self._select(render("schema_past", branches=branches))
            big.update(chunk[place_of(row, "k", len(chunk))] for row in rows)
        return big
