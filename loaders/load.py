"""Load one file into a backend: stream, count bad lines, checkpoint, report.

A plain (uncompressed) N-Triples file without blank nodes is handed whole to
the backend's own reader when it can take a path (``bulk_load_file``: the
embedded store parses it on every core) while a thread finds the names and
counts the statements; a bad line sends it down the streaming path below.

Line formats are otherwise read in segments (``SEGMENT_LINES``).  An N-Triples or
delimited segment streams through the backend's bulk loader in one call (the
fast path: the loader pulls the bytes through :class:`_Feed`, which picks out
names and moves the progress bar on the way).  The bulk loader writes nothing
of a segment with a malformed line; such a segment is read again in chunks,
and a chunk that fails is parsed line by line, so a bad line costs just
itself.  N-Quads always take that careful path (graph names are dropped).

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
from pathlib import Path

import pyoxigraph as ox

from engine.errors import LoadError
from engine.graph import DEFAULT_NAME_PREDICATES
from loaders import rdf, triples
from loaders.base import (
    LoadReport,
    detect_format,
    open_binary,
    raw_position,
    read_line_chunks,
    skip_lines,
    source_id,
)

LINE_FORMATS = {"nt", "nq", "delimited", "tsv", "csv"}
CHUNK_BYTES = 16 << 20       # careful path: bytes per write (and checkpoint)
# Fast path: lines per bulk-load call (and checkpoint).  Large on purpose: a
# bulk load into a store that already holds data is much slower (measured at
# 10M triples: 58 s in two calls of 5M lines, 46 s in one call).
SEGMENT_LINES = 50_000_000
STASH_BYTES = 128 << 20  # name lines held for indexing after the bulk load
QUAD_BATCH = 200_000


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
    graph,
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
) -> LoadReport:
    """Load ``path`` into ``graph`` (a backend with the bulk-load capability).

    Raises :class:`LoadError` when the file cannot be read or has more than
    ``max_errors`` bad lines; everything written before stays and a re-run
    resumes.
    """
    path = Path(path)
    chunk_bytes = chunk_bytes or getattr(graph, "chunk_bytes", CHUNK_BYTES)
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
    graph.set_name_predicates(name_predicates)
    done = graph.checkpoint(sid)
    if done.get("complete") and not force:
        report.already_complete = True
        report.triples, report.lines, report.skipped = done["triples"], done["lines"], done["skipped"]
        report.names = done.get("names", 0)
        return report
    if force:
        graph.forget_load(sid)
        done = {}
    start_line = done.get("lines", 0)
    report.resumed_from = start_line
    if start_line:
        report.triples, report.skipped, report.names = done["triples"], done["skipped"], done.get("names", 0)
    started = time.perf_counter()
    report.resumed_triples = report.triples
    bar = _Progress(path, progress)
    graph.begin_bulk()
    try:
        if fmt in LINE_FORMATS:
            _load_lines(graph, path, fmt, delimiter, sid, start_line, report, max_errors,
                        frozenset(name_predicates), name_langs, bar, chunk_bytes, segment_lines)
        elif fmt in rdf.OX_FORMATS:
            _load_stream(graph, path, fmt, sid, report, max_errors, frozenset(name_predicates), name_langs, bar)
        else:
            _load_rdflib(graph, path, fmt, sid, report, max_errors, frozenset(name_predicates), name_langs, bar)
        _checkpoint(graph, sid, report, complete=True)
    except (EOFError, zlib.error, OSError) as e:
        graph.discard_names()
        raise LoadError(f"{path}: cannot read it ({type(e).__name__}: {e}); is it truncated or corrupt? "
                        "Fix it and re-run: the load resumes at its last checkpoint.") from e
    except BaseException:
        graph.discard_names()  # names of the unfinished piece: its re-run adds them again
        raise
    finally:
        bar.close()
        graph.end_bulk()
        report.seconds = time.perf_counter() - started
    return report


def _checkpoint(graph, sid: str, report: LoadReport, complete: bool = False) -> None:
    graph.set_checkpoint(sid, path=report.source, lines=report.lines, triples=report.triples,
                         skipped=report.skipped, names=report.names, complete=complete)


class _Feed:
    """A file-like view of the next ``max_lines`` lines (or a little more: it
    stops at a block boundary) of ``stream``, handed to the bulk loader in one
    call.  On the way through it counts lines and statements, picks out
    names, converts delimited lines to N-Triples and moves the progress bar;
    the loader pulls the bytes, so only one block is held at a time."""

    def __init__(self, reader: _BlockReader, max_lines: int, first_line: int, fmt: str, delimiter: str | None,
                 predicates: frozenset[str], langs: Sequence[str], report: LoadReport, bar: _Progress,
                 block: int, queue_names, max_errors: int, sid: str) -> None:
        self.reader, self.stream = reader, reader.stream
        self.max_lines, self.first_line, self.block = max_lines, first_line, block
        self.max_errors, self.sid = max_errors, sid
        self.fmt, self.delimiter = fmt, delimiter
        self.scanner = rdf.NameScanner(predicates, langs)
        self.report, self.bar = report, bar
        self.buf, self.pos = b"", 0
        self.lines = self.statements = 0
        self.eof = False
        self.queue_names = queue_names  # names go to the index (committed with the checkpoint)
        self.names = 0
        # Name lines found while the loader reads are read and indexed once
        # it has everything (in a thread, while it sorts and writes: on two
        # cores that is when a core is free), or at once past STASH_BYTES.
        self.stash: list[bytes] = []
        self.stash_bytes = 0
        self.worker: threading.Thread | None = None
        self.worker_error: BaseException | None = None
        self.end_bulk = None  # set by the caller: builds the name index without committing
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
                if self.eof and self.end_bulk is not None:
                    self.end_bulk(False)  # the file's last segment: build the key index now, too
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
        if self.lines >= self.max_lines or self.eof:
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
            data, names, triples_, bad = triples.convert(lines, self.first_line + self.lines, self.fmt, self.delimiter)
            self.names += self.queue_names(names)
            self.bad.extend(bad)
            if self.report.skipped + len(self.bad) > self.max_errors:
                for line, reason in self.bad:  # raises LoadError on the first one past the limit
                    self.report.bad_line(line, reason, self.max_errors)
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


def _load_lines(graph, path, fmt, delimiter, sid, start_line, report, max_errors,
                predicates, langs, bar, chunk_bytes, segment_lines) -> None:
    """Line formats in segments of ``segment_lines``.  N-Triples and delimited
    segments stream through the bulk loader in one call each (the fast path);
    a segment it rejects (a malformed line) is read again in chunks, and a
    chunk that fails is parsed line by line, so a bad line costs only itself.
    N-Quads always take the careful path (graph names must be dropped)."""
    # Oxigraph's bulk loader takes a whole segment as a stream; other backends
    # write chunk by chunk, each chunk in one transaction with its checkpoint.
    fast = fmt != "nq" and "bulk_load" in graph.capabilities
    if fast and fmt == "nt" and start_line == 0 and _load_by_path(graph, path, sid, report, predicates, langs, bar,
                                                                  segment_lines):
        return
    block = min(chunk_bytes, 1 << 20)
    report.lines = start_line
    if fmt in ("delimited", "tsv", "csv"):
        delimiter = delimiter or triples.file_delimiter(path, fmt)
    stream = open_binary(path)
    try:
        skip_lines(stream, start_line)
        reader = _BlockReader(stream)
        while True:
            if fast:
                feed = _Feed(reader, segment_lines, report.lines + 1, fmt, delimiter, predicates, langs,
                             report, bar, block, lambda pairs: graph.index_names(pairs, sid), max_errors, sid)
                feed.end_bulk = graph.end_bulk
                try:
                    try:
                        graph.bulk_load_ntriples(feed)
                    finally:
                        feed.finish()
                except SyntaxError:
                    # redo this segment carefully from its first line
                    graph.discard_names()
                    stream.close()
                    stream = open_binary(path)
                    skip_lines(stream, report.lines)
                    reader = _BlockReader(stream)
                else:
                    _commit(graph, sid, report, feed.statements, feed.lines, feed.names, feed.bad, max_errors)
                    bar.update(raw_position(stream), report.triples, report.skipped)
                    if feed.finished:
                        return
                    continue
            done = 0
            for first, lines in read_line_chunks(stream, chunk_bytes, report.lines + 1):
                if fmt in ("nt", "nq"):
                    count, names, bad = _rdf_chunk(graph, lines, first, fmt, predicates, langs, sid)
                else:
                    data, names, count, bad = triples.convert(lines, first, fmt, delimiter)
                    graph.bulk_load_ntriples(data)
                _commit(graph, sid, report, count, len(lines), graph.index_names(names, sid), bad, max_errors)
                bar.update(raw_position(stream), report.triples, report.skipped)
                done += len(lines)
                if fast and done >= segment_lines:
                    break
            else:
                return
    finally:
        stream.close()


PATH_LOAD_BYTES = 512 << 20  # plain N-Triples files up to this size load by path (measured: 1M
# triples gain, at 10M the name indexing competes with the native parser and streaming wins)


def _load_by_path(graph, path: Path, sid, report, predicates, langs, bar, segment_lines) -> bool:
    """The fastest way in: a whole plain N-Triples file handed to the store's
    own reader, which parses it on every core, while a thread finds the
    names, counts the statements and moves the progress bar (it runs a
    little ahead of the loader). Only for an uncompressed file without
    blank nodes (they must be renamed first) that fits in one segment; any
    other file, or one with a bad line (nothing is written then), takes the
    streaming path. Returns True when the file was loaded."""
    load = getattr(graph, "bulk_load_file", None)
    size = path.stat().st_size
    if load is None or size > PATH_LOAD_BYTES or size // 40 > segment_lines:
        return False
    with path.open("rb") as fh:
        if fh.read(3)[:2] in (b"\x1f\x8b", b"BZ"):
            return False  # compressed: the streaming path decompresses
        fh.seek(0)
        while True:  # one quick look for blank nodes (from the page cache for the load that follows)
            piece = fh.read(16 << 20)
            if not piece:
                break
            if b"_:" in piece:
                return False
    scanner = rdf.NameScanner(predicates, langs)
    found = {"lines": 0, "statements": 0, "names": 0, "error": None}
    stop = threading.Event()

    def scan() -> None:
        try:
            reader = _BlockReader(path.open("rb"))
            try:
                while not stop.is_set():
                    data = reader.next_block(4 << 20)
                    if not data:
                        break
                    count = data.count(b"\n")
                    found["lines"] += count
                    found["statements"] += _statements_in(data, count)
                    lines = scanner.lines(data)
                    if lines:
                        found["names"] += graph.index_names(scanner.parse(lines), sid)
                    bar.update(reader.stream.tell(), report.triples + found["statements"], report.skipped)
                if not stop.is_set():
                    graph.end_bulk(False)  # build the key index while the loader still writes
            finally:
                reader.stream.close()
        except BaseException as e:  # handed to the loading thread below
            found["error"] = e

    worker = threading.Thread(target=scan, name="tog-names", daemon=True)
    worker.start()
    try:
        load(path)
    except SyntaxError:
        stop.set()
        worker.join()
        graph.discard_names()
        return False  # a bad line: the streaming path finds it and loads the rest
    except BaseException:
        stop.set()
        worker.join()
        raise
    worker.join()
    if found["error"] is not None:
        raise found["error"]
    _commit(graph, sid, report, found["statements"], found["lines"], found["names"], [], 0)
    bar.update(size, report.triples, report.skipped)
    return True


def _commit(graph, sid, report, statements, lines, names, bad, max_errors) -> None:
    """Record a written piece: bad lines, counts, then the checkpoint, which
    commits the names queued for this piece (``names``: their number)."""
    for lineno, reason in bad:
        report.bad_line(lineno, reason, max_errors)
    report.names += names
    report.triples += statements
    report.lines += lines
    _checkpoint(graph, sid, report)


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


def _rdf_chunk(graph, lines, first, fmt, predicates, langs, sid):
    """Write one chunk of N-Triples / N-Quads lines; returns (triples, names, bad).

    The whole chunk goes to the bulk loader, which writes nothing when a line
    is malformed; such a chunk is then parsed line by line, so a bad line
    costs exactly that line.
    """
    lines = [skolemise(line, sid) for line in lines] if any(b"_:" in line for line in lines) else lines
    data = b"".join(lines)
    if fmt == "nt":
        try:
            graph.bulk_load_ntriples(data, ox.RdfFormat.N_TRIPLES)
        except SyntaxError:
            pass  # fall through to the line-by-line path below
        else:
            return _count_statements(lines, data), rdf.NameScanner(predicates, langs).pairs(data), []
    good: list[ox.Quad] = []
    bad: list[tuple[int, str]] = []
    ox_format = rdf.OX_FORMATS[fmt]
    for offset, line in enumerate(lines):
        if line.isspace() or not line:
            continue
        try:
            good.extend(rdf.skolem_quad(q, sid) for q in ox.parse(line, ox_format))
        except SyntaxError as e:
            bad.append((first + offset, str(e).split(" (line")[0].replace("at line 1 ", "")))
    if good:
        graph.bulk_extend(good)
    return len(good), rdf.name_pairs(good, predicates, langs), bad


def _load_stream(graph, path, fmt, sid, report, max_errors, predicates, langs, bar) -> None:
    batch: list[ox.Quad] = []

    def flush() -> None:
        if batch:
            graph.bulk_extend(batch)
            report.names += graph.index_names(rdf.name_pairs(batch, predicates, langs), sid)
            report.triples += len(batch)
            batch.clear()

    with open_binary(path) as stream:
        for item in rdf.parse_with_errors(stream, rdf.OX_FORMATS[fmt]):
            if isinstance(item, tuple):
                report.bad_line(item[0], item[1], max_errors)
                continue
            batch.append(rdf.skolem_quad(item, sid))
            if len(batch) >= QUAD_BATCH:
                flush()
                bar.update(raw_position(stream), report.triples, report.skipped)
        flush()
        bar.update(raw_position(stream), report.triples, report.skipped)


def _load_rdflib(graph, path, fmt, sid, report, max_errors, predicates, langs, bar) -> None:
    import rdflib

    g = rdflib.Dataset() if fmt == "trix" else rdflib.Graph()
    try:
        with open_binary(path) as stream:
            g.parse(source=stream, format=fmt)
    except Exception as e:  # rdflib raises many unrelated types for bad input
        raise LoadError(f"{path}: rdflib could not parse it as {fmt}: {e}") from e
    data = g.serialize(format="nquads" if fmt == "trix" else "nt", encoding="utf-8")
    lines = data.splitlines(keepends=True)
    count, names, bad = _rdf_chunk(graph, lines, 1, "nq" if fmt == "trix" else "nt", predicates, langs, sid)
    for lineno, reason in bad:
        report.bad_line(lineno, reason, max_errors)
    report.names += graph.index_names(names, sid)
    report.triples += count
    bar.update(path.stat().st_size, report.triples, report.skipped)
