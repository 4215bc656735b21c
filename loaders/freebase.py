"""Cut a subset out of a Freebase (or Wikidata) dump: seed entities plus k hops, streaming.

A :class:`Profile` says what the dump's entities, names and relations look
like: ``FREEBASE`` (below) and ``WIKIDATA`` (``wdt:`` relations only, labels
and aliases as names, no CVTs, property labels written for the relations;
``loaders.wikidata`` turns the JSON dump into such triples).

The dump (``freebase-rdf-latest.gz``: one triple a line, full IRIs, tabs; or
the ``ns:``-prefixed variants people make when filtering it) is read once per
hop and never held in memory: what is kept in memory is the hop at which each
entity of the subset joined (a few dozen bytes an entity).

- Pass *i* (1..k) writes every triple that touches an entity of hop *i* and
  no entity of an earlier hop (so no triple is written twice), in both
  directions, and gives the other end (a mid: ``m.`` / ``g.``) hop *i+1*.
- Pass k+1 writes the English names of the entities at the edge of the
  subset and keeps aside their own triples; those of unnamed ones (CVTs,
  compound facts the engine looks through) are written after it.
- Pass k+2 writes the names of what those CVTs point to.

Relations are filtered by the engine's policy (``type.object.*``,
``common.*``, ``freebase.*``, sameAs, ... are noise) and optionally by a
domain whitelist (``film``, ``people``...); names are ``type.object.name``
in English (or untagged), other literals are kept when English or untagged.
Each pass goes to its own part file, renamed into place when complete, with
a state file beside the output: a killed extraction, run again with the same
arguments, skips the finished passes and gives the same output.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import LoadError
from engine.graph import DEFAULT_POLICY, FREEBASE_NS, RelationPolicy
from loaders.base import open_binary, raw_position

NS = FREEBASE_NS.encode()
NAME = NS + b"type.object.name"
XSD = b"http://www.w3.org/2001/XMLSchema#"
RDFS_LABEL = b"http://www.w3.org/2000/01/rdf-schema#label"
STATE_VERSION = 1
PROPERTY = 1 << 29  # the "hop" of a property whose label the subset needs (Wikidata)


@dataclass(frozen=True)
class Profile:
    """What a dump's entities, names and relations look like."""

    name: str
    ns: bytes                            # entity namespace
    prefix: bytes                        # its prefixed form in filtered dumps (ns:, wd:)
    ids: tuple[bytes, ...]               # local ids that are entities
    names: frozenset[bytes]              # predicates whose English literals name things
    relations: bytes | None = None       # keep only relations in this namespace
    look_through: bool = True            # unnamed edge nodes are CVTs (Freebase)
    seed_key: str = "topic_entity"       # where ToG's question files keep this KG's ids

    def iri(self, term: bytes) -> bytes | None:
        """The IRI of ``<...>`` or a prefixed name (None for anything else)."""
        if term.startswith(b"<") and term.endswith(b">"):
            return term[1:-1]
        if term.startswith(self.prefix):
            return self.ns + term[len(self.prefix):]
        return None

    def key(self, iri: bytes) -> bytes | None:
        """The short key of an entity (``m.0abc``, ``Q42``), None for other IRIs."""
        if iri.startswith(self.ns):
            local = iri[len(self.ns):]
            if local.startswith(self.ids):
                return local
        return None

    def quick_key(self, term: bytes) -> bytes | None:
        """``key`` of a term without building its IRI."""
        if term.startswith(b"<" + self.ns):
            local = term[len(self.ns) + 1:-1]
        elif term.startswith(self.prefix):
            local = term[len(self.prefix):]
        else:
            return None
        return local if local.startswith(self.ids) else None


FREEBASE = Profile("freebase", NS, b"ns:", (b"m.", b"g."), frozenset({NAME}))
WIKIDATA = Profile(
    "wikidata", b"http://www.wikidata.org/entity/", b"wd:", (b"Q", b"P"),
    frozenset({RDFS_LABEL, b"http://www.w3.org/2004/02/skos/core#altLabel", b"http://schema.org/name"}),
    relations=b"http://www.wikidata.org/prop/direct/", look_through=False, seed_key="qid_topic_entity")


@dataclass
class ExtractReport:
    lines: int = 0
    written: int = 0
    entities: int = 0
    skipped: int = 0
    bad: list[tuple[int, str]] = field(default_factory=list)
    passes_done: int = 0
    passes_skipped: int = 0
    seconds: float = 0.0


def _literal(term: bytes) -> bytes | None:
    """A literal in N-Triples form (``xsd:`` datatypes expanded), None when
    malformed; language tags other than English are refused (b"")."""
    if not term.startswith(b'"'):
        return None
    end = term.rfind(b'"')
    if end <= 0:
        return None
    tail = term[end + 1:]
    if tail.startswith(b"@"):
        lang = tail[1:].lower()
        return term if lang == b"en" or lang.startswith(b"en-") else b""
    if tail.startswith(b"^^"):
        dt = tail[2:]
        if dt.startswith(b"xsd:"):
            return term[:end + 1] + b"^^<" + XSD + dt[4:] + b">"
        return term if dt.startswith(b"<") and dt.endswith(b">") else None
    return term if not tail else None


def parse(line: bytes, prof: Profile = FREEBASE) -> tuple[bytes, bytes, bytes, bytes | None] | None:
    """(subject IRI, predicate IRI, object in N-Triples form, object key or
    None) of one dump line; None for a malformed line. A refused literal
    (another language) comes back with an empty object."""
    parts = line.split(b"\t")
    if len(parts) == 4 and parts[3].strip() == b".":  # the dump's own layout: s TAB p TAB o TAB .
        s, p, rest = parts[0], parts[1], parts[2]
    else:
        parts = line.strip().split(None, 2)
        if len(parts) < 3:
            return None
        s, p, rest = parts
        rest = rest.rstrip()
        if not rest.endswith(b"."):
            return None
        rest = rest[:-1].rstrip()
    s_iri, p_iri = prof.iri(s), prof.iri(p)
    if s_iri is None or p_iri is None or not rest:
        return None
    o_iri = prof.iri(rest)
    if o_iri is not None:
        return s_iri, p_iri, b"<" + o_iri + b">", prof.key(o_iri)
    literal = _literal(rest)
    if literal is None:
        return None
    return s_iri, p_iri, literal, None


def touches(line: bytes, levels: dict[bytes, int], prof: Profile = FREEBASE) -> bool:
    """Might the line touch an entity of the subset?  A cheap test on
    tab-separated lines (the dump's own layout) before parsing them; other
    layouts are always parsed."""
    parts = line.split(b"\t", 3)
    if len(parts) < 3:
        return True
    s, o = prof.quick_key(parts[0]), prof.quick_key(parts[2].rstrip(b" .\r\n"))
    return (s is not None and s in levels) or (o is not None and o in levels)


def read_seeds(items: Iterable[str], prof: Profile = FREEBASE) -> list[bytes]:
    """Seed keys from ids (``m.0abc`` / ``Q42``), IRIs or prefixed names, or
    files of them (one per line), or ToG question files (their topic ids)."""
    out: list[bytes] = []
    for item in items:
        path = Path(item)
        if path.is_file():
            with open_binary(path) as fh:
                text = fh.read().decode("utf-8")
            if text.lstrip().startswith("["):
                try:
                    records = json.loads(text)
                except json.JSONDecodeError as e:
                    raise LoadError(f"{path}: not a JSON array of questions ({e})") from None
                values = [mid for r in records if isinstance(r, dict) for mid in (r.get(prof.seed_key) or {})]
            else:
                values = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
        else:
            values = [item]
        for v in values:
            v = v.strip()
            iri = prof.iri(v.encode()) or (prof.ns + v.encode() if not v.startswith("http") else v.encode())
            key = prof.key(iri)
            if key is None:
                what = "a Freebase mid (m.… or g.…)" if prof is FREEBASE else f"a {prof.name} id"
                raise LoadError(f"seed {v!r} is not {what}")
            out.append(key)
    if not out:
        raise LoadError("no seed entities: give --seed ID, a file of ids or ToG questions")
    return list(dict.fromkeys(out))


class _Filter:
    def __init__(self, policy: RelationPolicy, domains: Sequence[str], prof: Profile) -> None:
        self.policy, self.prof = policy, prof
        base = prof.relations or prof.ns
        sep = b"." if prof is FREEBASE else b""
        self.domains = tuple(base + d.strip().strip(".").encode() + sep for d in domains if d.strip())
        self.cache: dict[bytes, bool] = {}

    def keeps(self, predicate: bytes) -> bool:
        ok = self.cache.get(predicate)
        if ok is None:
            if predicate in self.prof.names:
                ok = True
            else:
                ok = self.policy.allows(predicate.decode("utf-8", "replace"))
                if ok and self.prof.relations:
                    ok = predicate.startswith(self.prof.relations)
                if ok and self.domains:
                    ok = predicate.startswith(self.domains)
            self.cache[predicate] = ok
        return ok


def extract(dump: Path, seeds: Sequence[bytes], out: Path, *, hops: int = 2, domains: Sequence[str] = (),
            policy: RelationPolicy = DEFAULT_POLICY, max_errors: int = 1000, progress: bool = False,
            profile: Profile = FREEBASE) -> ExtractReport:
    """Write the subset of ``dump`` around ``seeds`` to ``out`` (N-Triples)."""
    prof = profile
    if not dump.is_file():
        raise LoadError(f"no such dump: {dump}")
    if hops < 1:
        raise LoadError("--hops must be at least 1")
    started = time.perf_counter()
    st = dump.stat()
    fingerprint = hashlib.sha1(json.dumps(
        [STATE_VERSION, prof.name, str(dump.resolve()), st.st_size, int(st.st_mtime), [s.decode() for s in seeds],
         hops, sorted(domains)]).encode()).hexdigest()[:16]
    work = out.with_name(out.name + ".parts")
    state_file = work / "state.json"
    state = {}
    if state_file.is_file():
        state = json.loads(state_file.read_text(encoding="utf-8"))
        if state.get("fingerprint") != fingerprint:
            raise LoadError(f"{work} belongs to an extraction with other arguments or another dump; "
                            "remove it to start over")
    work.mkdir(parents=True, exist_ok=True)
    report = ExtractReport()
    done = int(state.get("passes", 0))
    report.passes_skipped = done
    levels: dict[bytes, int] = {}
    if done:
        levels = _load_levels(work / "levels")
        report.lines, report.skipped = state.get("lines", 0), state.get("skipped", 0)
        report.bad = [tuple(b) for b in state.get("bad", [])]
    else:
        for s in seeds:
            levels[s] = 1
    keep = _Filter(policy, domains, prof)
    total = hops + 2
    for number in range(done + 1, total + 1):
        part = work / f"pass-{number}.nt"
        tmp = part.with_suffix(".tmp")
        with open(tmp, "wb") as sink:
            if number <= hops:
                _hop_pass(dump, number, levels, keep, sink, report, max_errors, progress, total, number == 1, prof)
            elif number == hops + 1:
                _edge_pass(dump, hops + 1, levels, keep, sink, work, report, progress, total, prof)
            else:
                _name_pass(dump, hops + 2, levels, sink, report, progress, total, prof)
            sink.flush()
            os.fsync(sink.fileno())
        os.replace(tmp, part)
        _save_levels(work / "levels", levels)
        state = {"fingerprint": fingerprint, "passes": number, "lines": report.lines, "skipped": report.skipped,
                 "bad": report.bad[:20]}
        state_tmp = state_file.with_suffix(".tmp")
        state_tmp.write_text(json.dumps(state), encoding="utf-8")
        os.replace(state_tmp, state_file)
        report.passes_done += 1
    # the output: every pass in order, then the work folder goes
    tmp_out = out.with_name(out.name + ".tmp")
    written = 0
    with open(tmp_out, "wb") as sink:
        for number in range(1, total + 1):
            with open(work / f"pass-{number}.nt", "rb") as fh:
                for line in fh:
                    sink.write(line)
                    written += 1
    os.replace(tmp_out, out)
    for p in work.iterdir():
        p.unlink()
    work.rmdir()
    report.written = written
    report.entities = sum(1 for v in levels.values() if v != PROPERTY)
    report.seconds = time.perf_counter() - started
    return report


def _lines(dump: Path, desc: str, progress: bool, prof: Profile = FREEBASE, levels: dict | None = None):
    """(line number, line) of the dump, with a progress bar over its bytes.
    A Wikidata JSON dump's entity lines come out as N-Triples lines (see
    ``loaders.wikidata``), each with its entity's line number; given
    ``levels``, lines that name none of its entities are skipped undecoded."""
    if prof is WIKIDATA:
        from loaders.wikidata import is_json_dump, mentions, ntriples_of

        if is_json_dump(dump):
            for n, line in _raw_lines(dump, desc, progress):
                if levels is None or mentions(line, levels):
                    for converted in ntriples_of(line):
                        yield n, converted
            return
    yield from _raw_lines(dump, desc, progress)


def _raw_lines(dump: Path, desc: str, progress: bool):
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=dump.stat().st_size, unit="B", unit_scale=True, desc=desc, dynamic_ncols=True)
    with open_binary(dump) as fh:
        try:
            for n, line in enumerate(fh, start=1):
                yield n, line
                if bar is not None and n % 200_000 == 0:
                    bar.n = raw_position(fh)
                    bar.refresh()
        finally:
            if bar is not None:
                bar.n = bar.total
                bar.close()


def _touching(dump, desc, progress, levels, prof):
    """Parsed triples of the lines that touch an entity of the subset (bad lines were counted in pass 1)."""
    for _, line in _lines(dump, desc, progress, prof, levels):
        if touches(line, levels, prof):
            t = parse(line, prof)
            if t is not None:
                yield t


def _hop_pass(dump, hop, levels, keep, sink, report, max_errors, progress, total, count, prof) -> None:
    for n, line in _lines(dump, f"pass {hop}/{total} (hop {hop})", progress, prof, None if count else levels):
        if count:
            report.lines = n
        if not line.strip() or line.startswith(b"#"):
            continue
        if not count and not touches(line, levels, prof):
            continue  # after the first pass (which counts malformed lines) skip cheaply
        t = parse(line, prof)
        if t is None:
            if count:
                report.skipped += 1
                if len(report.bad) < 20:
                    report.bad.append((n, "not a triple line"))
                if report.skipped > max_errors:
                    raise LoadError(f"{dump}: more than {max_errors} malformed lines (line {n}); "
                                    "raise --max-errors or fix the file")
            continue
        s, p, o, okey = t
        skey = prof.key(s)
        ls = levels.get(skey, 0) if skey is not None else 0
        lo = levels.get(okey, 0) if okey is not None else 0
        first = min(x for x in (ls, lo, 1 << 30) if x)
        if first != hop or not o or not keep.keeps(p):
            continue
        sink.write(b"<" + s + b"> <" + p + b"> " + o + b" .\n")
        if skey is not None and not ls:
            levels[skey] = hop + 1
        if okey is not None and not lo:
            levels[okey] = hop + 1
        if prof.relations and p.startswith(prof.relations):
            levels.setdefault(p[len(prof.relations):], PROPERTY)  # its label is needed


def _edge_pass(dump, edge, levels, keep, sink, work, report, progress, total, prof) -> None:
    """Names of the entities at the subset's edge; the triples of the unnamed
    ones (CVTs) go to a side file and are written after the pass."""
    named: set[bytes] = set()
    side = work / "cvt-candidates.nt"
    with open(side, "wb") as aside:
        for s, p, o, okey in _touching(dump, f"pass {edge}/{total} (names, CVTs)", progress, levels, prof):
            skey = prof.key(s)
            if skey is None or levels.get(skey) != edge or not o:
                continue
            if p in prof.names:
                named.add(skey)
                sink.write(b"<" + s + b"> <" + p + b"> " + o + b" .\n")
            elif prof.look_through and keep.keeps(p) and (okey is None or levels.get(okey, 0) in (0, edge)):
                aside.write(skey + b"\t" + b"<" + s + b"> <" + p + b"> " + o + b" .\n")
    with open(side, "rb") as fh:
        for line in fh:
            skey, triple = line.split(b"\t", 1)
            if skey in named:
                continue  # a named entity at the edge: its own facts are beyond the k hops
            sink.write(triple)
            obj = triple.rsplit(b" ", 2)[-2]
            okey = prof.key(obj[1:-1]) if obj.startswith(b"<") else None
            if okey is not None and okey not in levels:
                levels[okey] = edge + 1
    side.unlink()


def _name_pass(dump, last, levels, sink, report, progress, total, prof) -> None:
    """Names of what the CVTs point to; labels of the relations used (Wikidata:
    ``wd:P19``'s label written for ``wdt:P19``, the relation in the triples)."""
    for s, p, o, _ in _touching(dump, f"pass {last}/{total} (names behind CVTs, relations)", progress, levels, prof):
        if p not in prof.names or not o:
            continue
        level = levels.get(prof.key(s) or b"")
        if level == last:
            sink.write(b"<" + s + b"> <" + p + b"> " + o + b" .\n")
        elif level == PROPERTY and p == RDFS_LABEL:
            sink.write(b"<" + prof.relations + prof.key(s) + b"> <" + p + b"> " + o + b" .\n")


def _save_levels(path: Path, levels: dict[bytes, int]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        for k, v in levels.items():
            fh.write(k + b"\t" + str(v).encode() + b"\n")
    os.replace(tmp, path)


def _load_levels(path: Path) -> dict[bytes, int]:
    out: dict[bytes, int] = {}
    with open(path, "rb") as fh:
        for line in fh:
            k, v = line.rstrip(b"\n").split(b"\t")
            out[k] = int(v)
    return out
