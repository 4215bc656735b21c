"""What every loader shares: opening (compressed) files, format detection,
bad-line bookkeeping, checkpoints and the final report."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import zlib
from collections import deque
from itertools import islice
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from engine.errors import LoadError

MAX_BAD_SHOWN = 5

# extension (after any .gz/.bz2) -> format name
FORMATS = {
    ".nt": "nt", ".ntriples": "nt",
    ".nq": "nq", ".nquads": "nq",
    ".ttl": "turtle", ".turtle": "turtle",
    ".trig": "trig", ".n3": "n3",
    ".rdf": "xml", ".owl": "xml", ".xml": "xml",
    ".jsonld": "json-ld", ".json-ld": "json-ld",
    ".trix": "trix", ".hext": "hext",
    ".tsv": "tsv", ".txt": "delimited", ".csv": "csv", ".psv": "delimited",
}
FORMAT_NAMES = sorted(set(FORMATS.values()))


@dataclass
class LoadReport:
    """What a load did; printed as the final summary."""

    source: str
    format: str
    triples: int = 0
    lines: int = 0
    skipped: int = 0
    names: int = 0
    unindexed: int = 0  # names too long to index for linking (kept as names, not linked)
    header: str | None = None  # the column names of a delimited file's first line, skipped as a header
    header_line: int = 0  # (its line: after blank and comment lines)
    bad: list[tuple[int, str]] = field(default_factory=list)
    seconds: float = 0.0
    resumed_from: int = 0
    resumed_triples: int = 0
    already_complete: bool = False
    summary: dict | None = None  # how the store's hub summaries were built after it (BulkSink.summarise)

    def bad_line(self, line: int, reason: str, max_errors: int) -> None:
        self.skipped += 1
        if len(self.bad) < MAX_BAD_SHOWN:
            self.bad.append((line, reason))
        if self.skipped > max_errors:
            raise LoadError(
                f"{self.source}: more than {max_errors} bad lines (line {line}: {reason}); "
                "stopped. Fix the file or raise --max-errors; re-running resumes where the load stopped."
            )

    @property
    def rate(self) -> float:
        """Triples per second written by this run (a resumed run counts its own part)."""
        done = self.triples - self.resumed_triples
        return done / self.seconds if self.seconds else 0.0


BOM = b"\xef\xbb\xbf"  # UTF-8's byte-order mark, which editors on Windows put first


def open_binary(path: Path) -> BinaryIO:
    """The file's bytes, decompressed when it is gzip or bzip2 (by content,
    not name), past a byte-order mark (no parser takes one for part of
    the first statement)."""
    try:
        raw = path.open("rb")
    except OSError as e:
        raise LoadError(f"cannot read {path}: {e.strerror or e}") from e
    magic = raw.read(3)
    raw.seek(0)
    stream: BinaryIO = raw
    if magic[:2] == b"\x1f\x8b":
        stream = gzip.GzipFile(fileobj=raw)  # type: ignore[assignment]
    elif magic == b"BZh":
        stream = bz2.BZ2File(raw)  # type: ignore[assignment]
    try:
        if stream.read(3) != BOM:
            stream.seek(0)
    except (OSError, EOFError, zlib.error):
        stream.seek(0)  # (a corrupt start: the reader says so)
    return stream


def raw_position(stream: BinaryIO) -> int:
    """How far into the file on disk (compressed bytes) ``stream`` has read."""
    inner = getattr(stream, "fileobj", None) or getattr(stream, "_fp", None)
    if inner is None and isinstance(stream, bz2.BZ2File):
        inner = stream._fp  # type: ignore[attr-defined]
    target = inner if inner is not None else stream
    try:
        return target.tell()
    except (OSError, ValueError, AttributeError):
        return 0


def detect_format(path: Path, given: str | None = None) -> str:
    """The format named by ``--format`` or guessed from the file name."""
    if given:
        if given not in FORMAT_NAMES:
            raise LoadError(f"unknown format {given!r}; known: {', '.join(FORMAT_NAMES)}")
        return given
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in (".gz", ".bz2", ".gzip"):
        suffixes.pop()
    if suffixes and suffixes[-1] in FORMATS:
        return FORMATS[suffixes[-1]]
    raise LoadError(f"cannot tell the format of {path.name}; pass --format ({', '.join(FORMAT_NAMES)})")


STATEMENT_FORMATS = frozenset({"turtle", "trig", "n3", "xml", "json-ld"})  # their checkpoints count statements


def position(path: str | Path, lines: int, fmt: str | None = None) -> str:
    """A load's checkpoint in its file's terms: ``line N`` of a line format,
    ``statement N`` of a statement format (by ``fmt``, else the file name)."""
    if fmt is None:
        try:
            fmt = detect_format(Path(path))
        except LoadError:
            fmt = None
    return f"{'statement' if fmt in STATEMENT_FORMATS else 'line'} {lines:,}"


def resumable(path: str, source: str) -> bool:
    """Whether a load recorded as ``source`` of ``path`` can still be run
    again: the file is there, unchanged (a record that does not say its
    source is taken to be)."""
    if not source:
        return True
    try:
        return Path(path).is_file() and source_id(Path(path)) == source
    except OSError:
        return False


def source_id(path: Path) -> str:
    """Identifies a file for checkpoints: its absolute path, size and mtime."""
    st = path.stat()
    text = f"{path.resolve()}|{st.st_size}|{int(st.st_mtime)}"
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def read_line_chunks(stream: BinaryIO, chunk_bytes: int, first_line: int = 1):
    """Yield (line number of the first line, lines) with about ``chunk_bytes`` per chunk."""
    lineno = first_line
    while True:
        lines = stream.readlines(chunk_bytes)
        if not lines:
            return
        yield lineno, lines
        lineno += len(lines)


def skip_lines(stream: BinaryIO, count: int) -> None:
    """Read past ``count`` lines (a resumed load), at C speed."""
    deque(islice(stream, count), maxlen=0)

