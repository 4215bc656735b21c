"""Load one file through a store's sink (``engine.store.BulkSink``): stream,
count bad lines, checkpoint, report.

A sink with a native loader (``BulkSink.native``: the embedded store's, which
parses on every core) is handed a plain (uncompressed) N-Triples file
without blank nodes whole, while a thread finds the names and counts the
statements; a bad line sends it down the streaming path below.

Line formats are otherwise read in segments (``SEGMENT_LINES``).  With a
native loader, an N-Triples or delimited segment streams through it in one
call (the fast path: the loader pulls the bytes through :class:`_Feed`,
which picks out names and moves the progress bar on the way).  The bulk loader writes nothing
of a segment with a malformed line; such a segment is read again in chunks,
and a chunk that fails is parsed line by line, so a bad line costs just
itself.  N-Quads, and every sink without a native loader, take that careful
path (graph names are dropped).

After each segment, its names and a checkpoint (lines done) are committed
together, so a killed load resumes at the last segment.  Writes are set
inserts: a segment written twice changes nothing.  Other RDF formats stream
through their parser and start over on a re-run (again adding nothing twice).
"""

from __future__ import annotations

import re
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from engine.backends.common import term_too_long
from engine.errors import LoadError
from engine.graph import DEFAULT_NAME_PREDICATES, MAX_NAME_KEY, names_a_relation
from engine.store import BulkSink, LoadCheckpoint, NativeLoader
from loaders import rdf, triples
from loaders.base import (
    BOM,
    LoadReport,
    detect_format,
    open_binary,
    raw_position,
    read_line_chunks,
    skip_lines,
    source_id,
)

LINE_FORMATS = {"nt", "nq", "delimited", "tsv", "csv"}
# Fast path: lines per bulk-load call (and checkpoint).  Large on purpose: a
# bulk load into a store that already holds data is much slower (measured at
# 10M triples: 58 s in two calls of 5M lines, 46 s in one call).
SEGMENT_LINES = 50_000_000
STASH_BYTES = 128 << 20  # name lines held for indexing after the bulk load
QUAD_BATCH = 200_000  # statements a checkpoint of a statement format (Turtle ...), at most
STATEMENT_BYTES = 80  # and at most one per this many bytes of the sink's chunk (--chunk-bytes)


class _Progress:
    """A tqdm bar over the file's bytes on disk, with the triple rate beside it."""

    def __init__(self, path: Path, enabled: bool, initial_triples: int = 0) -> None:
        self.bar = None
        self.started = time.perf_counter()
        self.triples = initial_triples
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=path.stat().st_size, unit="B", unit_scale=True,
                            desc=path.name, dynamic_ncols=True, leave=True)

    def update(self, position: int, triples: int, skipped: int) -> None:
        self.triples = triples
        if self.bar is None:
            return
        self.bar.n = min(position, self.bar.total or position)
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self.bar.set_postfix_str(f"{triples:,} triples, {triples / elapsed:,.0f}/s, {skipped} skipped", refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def load_file(
    sink: BulkSink,
    path: str | Path,
    *,
    fmt: str | None = None,
    delimiter: str | None = None,
    max_errors: int = 1000,
    name_predicates: Sequence[str] = DEFAULT_NAME_PREDICATES,
    name_langs: Sequence[str] = ("en", ""),
    progress: bool = False,
    chunk_bytes: int | None = None,
    segment_lines: int = SEGMENT_LINES,
    force: bool = False,
    summarise: bool = True,
) -> LoadReport:
    """Load ``path`` through ``sink``, then (``summarise``) build what the
    store keeps about its hubs (``BulkSink.summarise``; a command loading
    several files builds it once, after the last).

    Raises :class:`LoadError` when the file cannot be read or has more than
    ``max_errors`` bad lines; everything written before stays and a re-run
    resumes. A file none of whose lines could be read (a wrong ``--format``
    or delimiter) is an error too, and leaves no record of having been loaded.
    """
    path = Path(path)
    chunk_bytes = chunk_bytes or sink.chunk_bytes
    if path.is_dir():
        raise LoadError(f"{path} is a directory; name the files to load")
    if not path.is_file():
        raise LoadError(f"no such file: {path}")
    fmt = detect_format(path, fmt)
    for p in name_predicates:
        try:
            ox.NamedNode(p)
        except ValueError as e:
            raise LoadError(f"--name-predicate {p!r} is not an IRI: {e}") from None
    report = LoadReport(source=str(path), format=fmt)
    sid = source_id(path)
    done = sink.resume(sid, name_predicates, force=force, languages=name_langs)
    if done.complete:
        report.already_complete = True
        report.triples, report.lines, report.skipped, report.names = done.triples, done.lines, done.skipped, done.names
        return report
    start_line = done.lines
    report.resumed_from = start_line
    if start_line:
        report.triples, report.skipped, report.names = done.triples, done.skipped, done.names
    started = time.perf_counter()
    report.resumed_triples = report.triples
    bar = _Progress(path, progress)
    # this load's name predicates, each with its place among the store's (its names' rank, ``common.name_rank``)
    order = {p: i for i, p in enumerate(sink.name_predicates)}
    places = {p: order.get(p, len(order) + i) for i, p in enumerate(name_predicates)}
    job = _Job(sink, path, fmt, sid, report, bar, places, tuple(name_langs), max_errors, delimiter, chunk_bytes,
               segment_lines)
    # not finished until its last checkpoint, even if stopped before its first (a correction waits for it)
    sink.started(sid, LoadCheckpoint(path=report.source, lines=done.lines, triples=done.triples, skipped=done.skipped,
                                     names=done.names))
    sink.begin()
    try:
        if fmt in LINE_FORMATS:
            _load_lines(job, start_line)
        elif fmt in rdf.OX_FORMATS:
            _load_stream(job, start_line)
        else:
            _load_rdflib(job)
        if report.skipped and report.triples == report.resumed_triples and not start_line:
            first = f"; line {report.bad[0][0]}: {report.bad[0][1]}" if report.bad else ""
            raise LoadError(f"{path}: none of its {report.skipped:,} statements could be read as {fmt}"
                            f"{f' with delimiter {delimiter!r}' if delimiter and fmt not in rdf.OX_FORMATS else ''}"
                            f"{first}. Is --format (or --delimiter) right? Nothing was recorded as loaded.")
        job.checkpoint(complete=True)
    except LoadError:
        sink.discard()
        if report.triples == report.resumed_triples and not start_line:
            sink.resume(sid, name_predicates, force=True)  # nothing of the file loaded: keep no record of it
        raise
    except (EOFError, zlib.error, OSError) as e:
        sink.discard()
        raise LoadError(f"{path}: cannot read it ({type(e).__name__}: {e}); is it truncated or corrupt? "
                        "Fix it and re-run: the load resumes at its last checkpoint.") from e
    except BaseException:
        sink.discard()  # names of the unfinished piece: its re-run adds them again
        raise
    finally:
        bar.close()
        sink.end()
        report.seconds = time.perf_counter() - started
    if summarise:
        report.summary = sink.summarise(progress)
    return report


@dataclass
class _Job:
    """One file's load: what every step of it reads."""

    sink: BulkSink
    path: Path
    fmt: str
    sid: str  # the source's id in checkpoints (``source_id``)
    report: LoadReport
    bar: _Progress
    predicates: dict[str, int]  # name predicates, each with its place among the store's
    langs: tuple[str, ...]  # languages of the names indexed
    max_errors: int
    delimiter: str | None
    chunk_bytes: int
    segment_lines: int

    def names(self, named: rdf.Named) -> int:
        """Queue a piece's names: its shown names, and its linking keys; how many keys."""
        # a relation's label (a Wikidata subset writes wdt:P19's) names no entity; a name
        # longer than anyone types is shown but not indexed for linking (counted apart)
        kept = []
        for e, k in named.keys:
            if len(k) > MAX_NAME_KEY:
                self.report.unindexed += 1
            elif not names_a_relation(e):
                kept.append((e, k))
        self.sink.show(named.shown, self.sid)
        return self.sink.names(kept, self.sid)

    def checkpoint(self, complete: bool = False, exact: bool = False) -> None:
        r = self.report
        self.sink.commit(self.sid, LoadCheckpoint(path=r.source, lines=r.lines, triples=r.triples, skipped=r.skipped,
                                                  names=r.names, complete=complete, exact=exact))

    def commit(self, statements: int, lines: int, names: int, bad) -> None:
        """Record a written piece: bad lines, counts, then the checkpoint, which
        commits the names queued for this piece (``names``: their number).
        Past ``max_errors`` the piece is still recorded (the store then holds
        what its checkpoint says, names included, and a re-run resumes after
        it) before the ``LoadError`` goes up."""
        report = self.report
        over: LoadError | None = None
        for lineno, reason in bad:
            try:
                report.bad_line(lineno, reason, self.max_errors)
            except LoadError as e:
                over = over or e
        report.names += names
        report.triples += statements
        report.lines += lines
        self.checkpoint(exact=over is not None)  # (the load stops here: nothing past it is written)
        if over is not None:
            raise over


class _Feed:
    """A file-like view of the next ``max_lines`` lines (or a little more: it
    stops at a block boundary) of ``stream``, handed to the bulk loader in one
    call.  On the way through it counts lines and statements, picks out
    names, converts delimited lines to N-Triples and moves the progress bar;
    the loader pulls the bytes, so only one block is held at a time."""

    def __init__(self, job: _Job, native: NativeLoader, reader: _BlockReader, first_line: int, block: int,
                 convert: triples.Converter | None) -> None:
        self.reader, self.stream = reader, reader.stream
        self.max_lines, self.first_line, self.block = job.segment_lines, first_line, block
        self.max_errors, self.sid = job.max_errors, job.sid
        self.fmt, self.convert = job.fmt, convert
        self.scanner = rdf.NameScanner(job.predicates, job.langs)
        self.report, self.bar = job.report, job.bar
        self.buf, self.pos = b"", 0
        self.lines = self.statements = 0
        self.eof = False
        self.stopped = False  # past max_errors: the loader gets no more blocks, and the segment ends here
        self.queue_names = job.names  # names go to the index (committed with the checkpoint)
        self.names_done = native.names_done  # builds the name index once the file's names are queued
        self.seen = native.seen
        self.names = 0
        # Name lines found while the loader reads are read and indexed once
        # it has everything (in a thread, while it sorts and writes: on two
        # cores that is when a core is free), or at once past STASH_BYTES.
        self.stash: list[bytes] = []
        self.stash_bytes = 0
        self.worker: threading.Thread | None = None
        self.worker_error: BaseException | None = None
        self.bad: list[tuple[int, str]] = []

    def _index_stash(self) -> None:
        blobs, self.stash, self.stash_bytes = self.stash, [], 0
        batch: list[bytes] = []
        size = 0
        for blob in blobs + [b""]:
            if blob:
                batch.append(blob)
                size += len(blob)
            if batch and (size >= 4 << 20 or not blob):  # parse about 4 MB of name lines at a time
                self.names += self.queue_names(self.scanner.parse(b"\n".join(batch).split(b"\n")))
                batch, size = [], 0

    def _index_in_background(self) -> None:
        def run() -> None:
            try:
                self._index_stash()
                if self.eof:
                    self.names_done()  # the file's last segment: build the name index now, too
            except BaseException as e:  # handed to the loading thread by finish()
                self.worker_error = e

        if self.stash and self.worker is None:
            self.worker = threading.Thread(target=run, name="tog-names", daemon=True)
            self.worker.start()

    def finish(self) -> None:
        """Wait for the names of this segment to be queued (after the bulk load)."""
        if self.worker is not None:
            self.worker.join()
            self.worker = None
        if self.worker_error is not None:
            raise self.worker_error
        if self.stash:
            self._index_stash()

    def _fill(self) -> bool:
        if self.lines >= self.max_lines or self.eof or self.stopped:
            self._index_in_background()
            return False
        if self.fmt == "nt":
            data = self.reader.next_block(self.block)
            if not data:
                self.eof = True
                self._index_in_background()
                return False
            count = data.count(b"\n")
            self.statements += _statements_in(data, count)
            data = skolemise(data, self.sid)
            self.seen(data)
            found = self.scanner.lines(data)
            if found:
                blob = b"\n".join(found)  # one object per block keeps the stash small
                self.stash.append(blob)
                self.stash_bytes += len(blob)
                if self.stash_bytes > STASH_BYTES:
                    self._index_stash()
        else:
            lines = self.stream.readlines(self.block)
            if not lines:
                self.eof = True
                return False
            count = len(lines)
            assert self.convert is not None  # a delimited file
            data, names, triples_, bad = self.convert(lines, self.first_line + self.lines)
            self.seen(data)
            self.names += self.queue_names(names)
            self.bad.extend(bad)
            # past the limit: this block is the segment's last (committed, then the load stops)
            self.stopped = self.report.skipped + len(self.bad) > self.max_errors
            self.statements += triples_
        self.buf, self.pos = data, 0
        self.lines += count
        self.bar.update(raw_position(self.stream), self.report.triples + self.statements, self.report.skipped)
        return True

    def read(self, size: int = -1) -> bytes:
        pos = self.pos
        if 0 <= size <= len(self.buf) - pos:  # the common case: served from the block
            self.pos = pos + size
            return self.buf[pos:pos + size]
        out = []
        want = size if size is not None and size >= 0 else 1 << 62
        while want > 0:
            if self.pos >= len(self.buf) and not self._fill():
                break
            piece = self.buf[self.pos:self.pos + want]
            self.pos += len(piece)
            want -= len(piece)
            out.append(piece)
        return b"".join(out)

    @property
    def finished(self) -> bool:
        """True when the file ended within this segment."""
        return self.eof


class _BlockReader:
    """Whole lines from a stream in blocks, keeping the partial last line
    for the next block, across the segments of one file."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.carry = b""

    def next_block(self, size: int) -> bytes:
        """About ``size`` bytes of whole lines (b"" at the end of the file)."""
        while True:
            data = self.stream.read(size)
            if not data:
                rest, self.carry = self.carry, b""
                return rest + b"\n" if rest and not rest.endswith(b"\n") else rest
            data = self.carry + data
            cut = data.rfind(b"\n") + 1
            if cut:
                self.carry = data[cut:]
                return data[:cut]
            self.carry = data  # a line longer than a block: keep reading


_BLANK = re.compile(rb"(?m)(^[ \t]*|>[ \t]+)_:([\w-](?:[\w.-]*[\w-])?)")


def skolemise(data: bytes, sid: str) -> bytes:
    """Give the labelled blank nodes of N-Triples text stable IRIs
    (``_:x`` -> ``<urn:tog:b:SOURCE:x>``), so that a file loaded twice, or
    a segment written again after a kill, adds nothing."""
    if b"_:" not in data:
        return data
    prefix = f"urn:tog:b:{sid}:".encode()
    return _BLANK.sub(lambda m: m.group(1) + b"<" + prefix + m.group(2) + b">", data)


def _load_lines(job: _Job, start_line: int) -> None:
    """Line formats in segments of ``segment_lines``.  N-Triples and delimited
    segments stream through the native loader in one call each (the fast
    path); a segment it rejects (a malformed line) is read again in chunks,
    and a chunk that fails is parsed line by line, so a bad line costs only
    itself.  N-Quads always take the careful path (graph names must be dropped)."""
    # A native loader takes a whole segment as a stream; other sinks take
    # chunk by chunk, each chunk in one transaction with its checkpoint.
    sink, path, fmt, report, bar = job.sink, job.path, job.fmt, job.report, job.bar
    native = sink.native if fmt != "nq" else None
    if native is not None and fmt == "nt" and start_line == 0 and _load_by_path(job, native):
        return
    block = min(job.chunk_bytes, 1 << 20)
    report.lines = start_line
    delimited = fmt in ("delimited", "tsv", "csv")
    delimiter = (job.delimiter or triples.file_delimiter(path, fmt)) if delimited else None

    def converter() -> triples.Converter | None:
        def header(line: int, names: str) -> None:
            report.header, report.header_line = names, line

        return triples.Converter(fmt, delimiter, job.sink.max_term_bytes, job.predicates, header) if delimited \
            else None

    convert = converter()
    if start_line and sink.replays:
        _replay(job, start_line, converter())
    stream = open_binary(path)
    try:
        skip_lines(stream, start_line)
        reader = _BlockReader(stream)
        while True:
            if native is not None:
                feed = _Feed(job, native, reader, report.lines + 1, block, convert)
                try:
                    try:
                        native.load_stream(feed)
                    finally:
                        feed.finish()
                except SyntaxError:
                    # redo this segment carefully from its first line
                    sink.discard()
                    convert = converter()  # what it had named is not written
                    stream.close()
                    stream = open_binary(path)
                    skip_lines(stream, report.lines)
                    reader = _BlockReader(stream)
                else:
                    job.commit(feed.statements, feed.lines, feed.names, feed.bad)
                    bar.update(raw_position(stream), report.triples, report.skipped)
                    if feed.finished:
                        return
                    continue
            done = 0
            for first, lines in read_line_chunks(stream, job.chunk_bytes, report.lines + 1):
                if fmt in ("nt", "nq"):
                    count, names, bad = _rdf_chunk(job, lines, first, fmt)
                else:
                    assert convert is not None
                    data, names, count, bad = convert(lines, first)
                    sink.write_ntriples(data)
                job.commit(count, len(lines), job.names(names), bad)
                bar.update(raw_position(stream), report.triples, report.skipped)
                done += len(lines)
                if native is not None and done >= job.segment_lines:
                    break
            else:
                return
    finally:
        stream.close()


def _replay(job: _Job, lines: int, convert: triples.Converter | None) -> None:
    """Hand a resumed load's sink the triples of the ``lines`` before its
    checkpoint (``BulkSink.replays``), read again as the run that wrote them
    read them; bad lines are passed over."""
    fmt = rdf.OX_FORMATS["nt" if convert is not None else job.fmt]
    left = lines
    with open_binary(job.path) as stream:
        for first, chunk in read_line_chunks(stream, job.chunk_bytes, 1):
            chunk = chunk[:left]
            left -= len(chunk)
            if convert is not None:
                data = convert(chunk, first)[0]
            else:
                data = b"".join(skolemise(line, job.sid) if b"_:" in line else line for line in chunk)
            try:
                quads = list(ox.parse(data, fmt))
            except SyntaxError:  # a chunk with a bad line: line by line
                quads = []
                for line in data.splitlines(keepends=True):
                    try:
                        quads.extend(ox.parse(line, fmt))
                    except SyntaxError:
                        continue
            job.sink.replay([rdf.skolem_quad(q, job.sid) for q in quads] if b"_:" in data else quads)
            job.bar.update(raw_position(stream), job.report.triples, job.report.skipped)
            if left <= 0:
                return


PATH_LOAD_BYTES = 512 << 20  # plain N-Triples files up to this size load by path (measured: 1M
# triples gain, at 10M the name indexing competes with the native parser and streaming wins)


def _load_by_path(job: _Job, native: NativeLoader) -> bool:
    """The fastest way in: a whole plain N-Triples file handed to the sink's
    native loader, which parses it on every core, while a thread finds the
    names, counts the statements and moves the progress bar (it runs a
    little ahead of the loader). Only for an uncompressed file without
    blank nodes (they must be renamed first) that fits in one segment; any
    other file, or one with a bad line (nothing is written then), takes the
    streaming path. Returns True when the file was loaded."""
    path, report, bar = job.path, job.report, job.bar
    size = path.stat().st_size
    if size > PATH_LOAD_BYTES or size // 40 > job.segment_lines:
        return False
    with path.open("rb") as fh:
        head = fh.read(3)
        if head[:2] in (b"\x1f\x8b", b"BZ") or head == BOM:
            return False  # compressed, or after a byte-order mark: the streaming path reads it so
        fh.seek(0)
        while True:  # one quick look for blank nodes (from the page cache for the load that follows)
            piece = fh.read(16 << 20)
            if not piece:
                break
            if b"_:" in piece:
                return False
    scanner = rdf.NameScanner(job.predicates, job.langs)
    found = {"lines": 0, "statements": 0, "names": 0}
    failure: list[BaseException] = []
    stop = threading.Event()

    def scan() -> None:
        try:
            reader = _BlockReader(path.open("rb"))
            try:
                while not stop.is_set():
                    data = reader.next_block(4 << 20)
                    if not data:
                        break
                    native.seen(data)
                    count = data.count(b"\n")
                    found["lines"] += count
                    found["statements"] += _statements_in(data, count)
                    lines = scanner.lines(data)
                    if lines:
                        found["names"] += job.names(scanner.parse(lines))
                    bar.update(reader.stream.tell(), report.triples + found["statements"], report.skipped)
                if not stop.is_set():
                    native.names_done()  # build the name index while the loader still writes
            finally:
                reader.stream.close()
        except BaseException as e:  # handed to the loading thread below
            failure.append(e)

    worker = threading.Thread(target=scan, name="tog-names", daemon=True)
    worker.start()
    try:
        native.load_path(path)
    except SyntaxError:
        stop.set()
        worker.join()
        job.sink.discard()
        return False  # a bad line: the streaming path finds it and loads the rest
    except BaseException:
        stop.set()
        worker.join()
        raise
    worker.join()
    if failure:
        raise failure[0]
    job.commit(found["statements"], found["lines"], found["names"], [])
    bar.update(size, report.triples, report.skipped)
    return True


_COMMENT = re.compile(rb"(?m)^[ \t]*#")
_ODD_LINE_START = re.compile(rb"\n[^<_]")


def _count_statements(lines: list[bytes], data: bytes) -> int:
    """Statements in a chunk that parsed cleanly: lines less blank and comment lines."""
    blank = sum(map(bytes.isspace, lines))
    return len(lines) - blank - len(_COMMENT.findall(data))


def _statements_in(data: bytes, newlines: int) -> int:
    """Like ``_count_statements`` for a block of whole lines, without
    splitting it unless a line starts oddly (blank, indented, a comment)."""
    if data[:1] not in (b"<", b"_") or _ODD_LINE_START.search(data, 0, len(data) - 1):
        return _count_statements(data.splitlines(keepends=True), data)
    return newlines


def _rdf_chunk(job: _Job, lines, first, fmt):
    """Write one chunk of N-Triples / N-Quads lines; returns (triples, names, bad).

    The whole chunk goes to the bulk loader, which writes nothing when a line
    is malformed; such a chunk is then parsed line by line, so a bad line
    costs exactly that line.
    """
    sid = job.sid
    lines = [skolemise(line, sid) for line in lines] if any(b"_:" in line for line in lines) else lines
    data = b"".join(lines)
    if fmt == "nt":
        try:
            job.sink.write_ntriples(data)
        except SyntaxError:
            pass  # fall through to the line-by-line path below
        else:
            return _count_statements(lines, data), rdf.NameScanner(job.predicates, job.langs).pairs(data), []
    good: list[ox.Quad] = []
    bad: list[tuple[int, str]] = []
    ox_format = rdf.OX_FORMATS[fmt]
    limit = job.sink.max_term_bytes
    for offset, line in enumerate(lines):
        if line.isspace() or not line:
            continue
        try:
            parsed = [rdf.skolem_quad(q, sid) for q in ox.parse(line, ox_format)]
        except SyntaxError as e:
            bad.append((first + offset, str(e).split(" (line")[0].replace("at line 1 ", "")))
            continue
        why = limit and next((w for q in parsed if (w := term_too_long(q, limit, job.predicates))), None)
        if why:
            bad.append((first + offset, why))
        else:
            good.extend(parsed)
    if good:
        job.sink.write(good)
    return len(good), rdf.name_pairs(good, job.predicates, job.langs), bad


def _load_stream(job: _Job, start: int) -> None:
    """Statement formats (Turtle, TriG, N3, RDF/XML, JSON-LD), parsed as a
    stream and written in batches of QUAD_BATCH statements (fewer for a
    small ``chunk_bytes``), each with its checkpoint: the statements read
    so far, bad ones included. A re-run
    parses the file again from its start and passes over the ``start``
    statements before its checkpoint (their unlabelled nodes numbered as
    before, so those after get the same names; a sink that replays gets
    them), then goes on."""
    batch: list[ox.Quad] = []
    bad: list[tuple[int, str]] = []
    before: list[ox.Quad] = []  # statements of the earlier run, for a sink that replays them
    report, bar, sink = job.report, job.bar, job.sink
    limit, replays = sink.max_term_bytes, bool(start) and sink.replays
    most = max(1, min(QUAD_BATCH, job.chunk_bytes // STATEMENT_BYTES))
    report.lines = start
    read = 0

    def flush() -> None:
        if batch:
            sink.write(batch)
        job.commit(len(batch), read - report.lines, job.names(rdf.name_pairs(batch, job.predicates, job.langs)), bad)
        batch.clear()
        bad.clear()

    blanks = rdf.MadeUpBlanks(job.sid)
    with open_binary(job.path) as stream:
        for item in rdf.parse_with_errors(stream, rdf.OX_FORMATS[job.fmt]):
            read += 1
            quad = None if isinstance(item, tuple) else blanks.quad(item)  # (numbered in parse order, from the start)
            why = term_too_long(quad, limit, job.predicates) if quad is not None and limit else None
            if read <= start:  # written by the earlier run
                if replays and quad is not None and why is None:
                    before.append(quad)
                if before and (len(before) >= most or read == start):
                    sink.replay(before)
                    before.clear()
                    bar.update(raw_position(stream), report.triples, report.skipped)
                continue
            if isinstance(item, tuple):
                bad.append(item)
            elif quad is not None and why is not None:
                bad.append((0, f"a statement about {str(quad.subject)[:60]}: {why}"))
            elif quad is not None:
                batch.append(quad)
            if read - report.lines >= most or (bad and report.skipped + len(bad) > job.max_errors):
                flush()
                bar.update(raw_position(stream), report.triples, report.skipped)
        if read > report.lines:
            flush()
        bar.update(raw_position(stream), report.triples, report.skipped)


def _load_rdflib(job: _Job) -> None:
    import rdflib

    path, fmt, report = job.path, job.fmt, job.report
    g = rdflib.Dataset() if fmt == "trix" else rdflib.Graph()
    try:
        with open_binary(path) as stream:
            g.parse(source=stream, format=fmt)
    except Exception as e:  # rdflib raises many unrelated types for bad input
        raise LoadError(f"{path}: rdflib could not parse it as {fmt}: {e}") from e
    data = g.serialize(format="nquads" if fmt == "trix" else "nt", encoding="utf-8")
    lines = data.splitlines(keepends=True)
    count, names, bad = _rdf_chunk(job, lines, 1, "nq" if fmt == "trix" else "nt")
    for lineno, reason in bad:
        report.bad_line(lineno, reason, job.max_errors)
    report.names += job.names(names)
    report.triples += count
    job.bar.update(path.stat().st_size, report.triples, report.skipped)
