"""What loaders write through into an embedded store.

Triples go to Oxigraph's bulk loader, names and checkpoints to the SQLite
side tables; a checkpoint flushes the database first and commits the names
queued since in the same SQLite transaction, so a killed load never leaves
names without their checkpoint or the reverse.  The native loader is
Oxigraph's own N-Triples reader, which parses on every core.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, cast

import pyoxigraph as ox

from engine.backends.oxigraph.database import Database
from engine.backends.oxigraph.summaries import HubTally, Touched
from engine.store import ByteStream, LoadCheckpoint

CHUNK_BYTES = 16 << 20  # bytes of lines per commit on the loader's careful path


class OxigraphSink:
    """``BulkSink`` of an embedded store."""

    chunk_bytes = CHUNK_BYTES
    max_term_bytes = None
    replays = False  # a set insert: a resumed load needs nothing of what came before

    def __init__(self, db: Database) -> None:
        self.db = db
        # What the load writes, seen so that the hub summaries' build need
        # not count every edge: into an empty store, a sample of its lines
        # (the build counts the entities it names); into a store whose
        # summaries are fresh, every entity it writes an edge of (the build
        # counts those again). Any other load (a resumed one included)
        # leaves it None, and the build counts everything.
        self.tally: HubTally | Touched | None = None
        self.began = False
        self.native = OxigraphNativeLoader(self)

    def resume(self, source: str, name_predicates: Sequence[str], *, force: bool = False,
               languages: Sequence[str] = ()) -> LoadCheckpoint:
        self.db.add_name_predicates(name_predicates)
        self.db.add_name_languages(languages)
        if force:
            self.db.index.forget(source)
        return LoadCheckpoint.from_dict(self.db.index.checkpoint(source))

    def started(self, source: str, checkpoint: LoadCheckpoint) -> None:
        self.db.index.set_checkpoint(source, **checkpoint.to_dict())

    def begin(self) -> None:
        if not self.began:
            self.began = True
            if self.db.empty():
                self.tally = HubTally()
            elif self.db.summaries.fresh():
                self.tally = Touched(self.db.summaries.hub_entities(), self.db.summaries.sample_keys())
        # the load may add edges anywhere: the hub summaries are out of date until
        # its build (``summarise``), samples and the schema are made again as needed
        # (when it notes what it touches, the samples stay: its build merges its edges into them)
        self.db.summaries.mark_stale("a load started")
        self.db.summaries.clear(samples=not isinstance(self.tally, Touched))
        self.db.index.begin_bulk()

    def replay(self, quads: Iterable[ox.Quad]) -> None:
        pass

    def write(self, quads: Iterable[ox.Quad]) -> None:
        self.db.store.bulk_extend(self.tally.quads(quads) if self.tally is not None else quads)

    def write_ntriples(self, data: bytes) -> None:
        self.db.store.bulk_load(data, ox.RdfFormat.N_TRIPLES)
        self.seen(data)

    def seen(self, data: bytes) -> None:
        """N-Triples text (whole lines) that is written or about to be."""
        if self.tally is not None:
            self.tally.lines(data)

    def names(self, pairs: Iterable[tuple[str, str]], source: str) -> int:
        return self.db.index.add(pairs, source)

    def show(self, rows: Iterable[tuple[str, int, str]], source: str) -> None:
        self.db.index.show(rows, source)

    def commit(self, source: str, checkpoint: LoadCheckpoint) -> None:
        """Make the data written so far durable, then record the checkpoint
        (and the names queued with it) in one transaction."""
        self.db.flush()
        self.db.index.set_checkpoint(source, **checkpoint.to_dict())

    def discard(self) -> None:
        self.db.index.rollback()

    def loads(self) -> list[LoadCheckpoint]:
        return [LoadCheckpoint.from_dict(c) for c in self.db.index.checkpoints()]

    @property
    def name_predicates(self) -> tuple[str, ...]:
        return self.db.name_predicates

    def end(self) -> None:
        self.db.index.end_bulk(True)
        self.db.generation += 1
        # also what questions asked of a half-loaded store made (or, when the
        # load noted what it touched, its build drops the samples made meanwhile
        # of the pairs it touched)
        self.db.summaries.clear(samples=not isinstance(self.tally, Touched))

    def summarise(self, progress: bool = False) -> dict | None:
        """Build the hub summaries when a load left them out of date (or a
        store made by an older tog never had them), or sample the biggest
        pairs when a load stopped before it had; None when all are made."""
        from engine.backends.oxigraph.summaries import build, sample_big, update

        if self.db.summaries.fresh():
            if not self.db.summaries.big_pairs_due():
                return None
            # a load stopped while it sampled the biggest pairs: the hubs were kept, the samples not
            made = sample_big(self.db, progress=progress)
            return {k: made[k] for k in ("big_pairs_made", "big_pairs_seconds", "sort_max")}
        if isinstance(self.tally, Touched):
            touched = self.tally.touched()
            if touched is not None:
                return update(self.db, *touched, how="at load", progress=progress,
                              sampled=self.tally.sampled, sample_edges=self.tally.sample_edges())
            return build(self.db, how="at load", progress=progress)
        return build(self.db, how="at load", progress=progress,
                     candidates=self.tally.candidates() if self.tally is not None else None)


class OxigraphNativeLoader:
    """Oxigraph's bulk loader, which the loader hands whole segments and files."""

    def __init__(self, sink: OxigraphSink) -> None:
        self.db = sink.db
        self.seen = sink.seen

    def load_stream(self, stream: ByteStream) -> None:
        # pyoxigraph pulls from any object with read(): the loader's feed is one
        self.db.store.bulk_load(cast(IO[bytes], stream), ox.RdfFormat.N_TRIPLES)

    def load_path(self, path: Path) -> None:
        self.db.store.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES)

    def names_done(self) -> None:
        self.db.index.end_bulk(False)  # build the key index; it commits with the checkpoint
