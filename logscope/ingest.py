"""Find a job's log files and read each one into event rows, in bounded memory.

Reading policy, the same for every file:

* inputs are folders (walked recursively, symbolic links to folders not followed, so a link loop
  cannot trap the walk), files, or both; a file reached twice is read once;
* ``.gz`` and ``.zst`` are decompressed on the fly; a corrupt or truncated archive keeps what was
  read before the damage and says where it stopped;
* a file whose first 8 KiB look binary is skipped with a reason, as is one that cannot be opened;
* bytes are decoded as UTF-8 with replacement characters, never rejected;
* files are read in blocks of :data:`CHUNK_BYTES` cut at a newline, so memory does not grow with
  the file; a "line" longer than :data:`MAX_LINE_BYTES` is cut there and counted as several;
* nothing is ever written: files are opened read-only and their times are not changed.
"""

from __future__ import annotations

import codecs
import errno
import io
import json
import multiprocessing
import os
import pickle
import queue
import re
import subprocess
import sys
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

import polars as pl
import zstandard

from logscope.errors import InputError, printable
from logscope.model import FIELD_SCHEMA, Event, Severity
from logscope.parsers.filenames import DEFAULT_PATTERNS, NameInfo, describe, strip_compression
from logscope.parsers.lines import EVENT_COLUMNS, ChunkResult, PreparedChunk, finish_chunks, prepare_chunk
from logscope.parsers.timestamps import FULL_DATE_BYTES

CHUNK_BYTES = 32 * 1024 * 1024
MAX_LINE_BYTES = 8 * 1024 * 1024
SNIFF_BYTES = 8192
NUL_RUN = 4096  # NUL bytes in a row beyond this are a hole in the file, not text
# NCCL COLL lines can be most of a multi-GB log; per (file, host, pid, comm) only the first and
# the last ones matter to the detectors (where a rank started and where it stopped).
COLL_HEAD = 2
COLL_TAIL = 64
PROGRESS_TAIL = 4096
# Other repeated lines: first and last kept per (process, kind of line); multi-line records more.
REPEAT_KEEP = 64
RECORD_KEEP = 4096
_RECORD_EVENTS = [Event.CHILD_FAILURE.value, Event.LAUNCH_CONFIG.value, Event.RENDEZVOUS.value]
# Jobs at least this big are read by several processes (read_files). Below it the gain is small
# (starting a worker takes ~0.3 s) and each worker costs ~130 MB (an interpreter with polars).
PARALLEL_MIN_BYTES = 128 * 1024 * 1024
MAX_WORKERS = 8
_WORKER_ENV = "LOGSCOPE_READ_WORKER"

_FULL_DATE = re.compile(FULL_DATE_BYTES)
# What reading a damaged file can raise; each becomes a warning or a skipped file, never a crash.
READ_ERRORS = (OSError, EOFError, zlib.error, ValueError, zstandard.ZstdError)

# Met while walking a folder, these are not logs: documents, configs, code, images, checkpoints.
# A file named on the command line is always read, whatever its name.
NOT_LOG_SUFFIXES = frozenset((
    ".md", ".rst", ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".py", ".ipynb", ".sh",
    ".slurm", ".sbatch", ".csv", ".tsv", ".html", ".htm", ".js", ".css", ".png", ".jpg", ".jpeg", ".gif",
    ".svg", ".pdf", ".pt", ".pth", ".ckpt", ".bin", ".safetensors", ".npy", ".npz", ".pkl", ".pickle",
    ".parquet", ".arrow", ".h5", ".tar", ".zip", ".so", ".o", ".pyc", ".whl", ".lock",
))


@dataclass(frozen=True)
class SourceFile:
    path: Path
    display: str  # how the file is named in output: the input path joined with the relative path
    info: NameInfo
    compression: str | None
    size: int


@dataclass
class FileRead:
    """What reading one file produced."""

    source: SourceFile
    events: pl.DataFrame
    lines_read: int = 0
    lines_recognised: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Skipped:
    display: str
    reason: str


ProgressCallback = Callable[[int], None]


def discover(inputs: Sequence[Path], patterns: tuple[str, ...] = DEFAULT_PATTERNS) -> tuple[
        list[SourceFile], list[Skipped]]:
    """List the files under ``inputs`` in a stable order; raise InputError if none exist."""
    found: list[SourceFile] = []
    skipped: list[Skipped] = []
    ignored: list[str] = []
    seen: set[tuple[int, int]] = set()
    for given in inputs:
        if not given.exists() and not given.is_symlink():
            raise InputError(f"{given}: no such file or directory")
        if given.is_dir():
            walk_errors: list[OSError] = []
            for root, dirs, files in os.walk(given, onerror=walk_errors.append, followlinks=False):
                dirs.sort()
                for name in sorted(files):
                    if is_not_a_log(name):
                        ignored.append(str(Path(root) / name))
                        continue
                    _add(Path(root) / name, given, found, skipped, seen, patterns)
            for error in walk_errors:
                skipped.append(Skipped(printable(str(error.filename)), f"cannot list folder ({error.strerror})"))
        else:
            _add(given, None, found, skipped, seen, patterns)
    if ignored:
        shown = ", ".join(printable(Path(p).name) for p in ignored[:4]) + (" ..." if len(ignored) > 4 else "")
        skipped.append(Skipped(f"{len(ignored)} file(s)", f"not logs by their names ({shown})"))
    return found, skipped


def is_not_a_log(name: str) -> bool:
    """Whether a file met while walking a folder is skipped by its name (see NOT_LOG_SUFFIXES)."""
    plain, _ = strip_compression(name)
    if plain.endswith("error.json"):
        return False  # torchrun's per-worker error file
    return name.startswith(".") or Path(plain).suffix.lower() in NOT_LOG_SUFFIXES


def _add(path: Path, base: Path | None, found: list[SourceFile], skipped: list[Skipped],
         seen: set[tuple[int, int]], patterns: tuple[str, ...]) -> None:
    display = printable(str(path))  # a name may hold a newline, or bytes that are not UTF-8
    try:
        stat = path.stat()
    except OSError as error:
        skipped.append(Skipped(display, f"cannot read ({error.strerror or error})"))
        return
    if not path.is_file():
        skipped.append(Skipped(display, "not a regular file"))
        return
    key = (stat.st_dev, stat.st_ino)
    if key in seen:
        return
    seen.add(key)
    rel = path.relative_to(base) if base is not None else Path(path.name)
    _, compression = strip_compression(path.name)
    found.append(SourceFile(path, display, describe(Path(printable(str(rel))), patterns), compression, stat.st_size))


def read_file(source: SourceFile, on_bytes: ProgressCallback | None = None) -> FileRead | Skipped:
    """Read one file into events; return Skipped when it cannot or should not be read."""
    hook = None if on_bytes is None else (lambda _source, n: on_bytes(n))
    return next(read_in_order([source], hook))


def read_in_order(sources: Sequence[SourceFile],
                  on_bytes: Callable[[SourceFile, int], None] | None = None) -> Iterator[FileRead | Skipped]:
    """:func:`read_file` for each of ``sources``, yielded in order.

    Each block is taken as far as it goes alone (``prepare_chunk``: every per-line step), then the
    candidate lines of several blocks, of one file or of several, are classified in one batch
    (``finish_chunks``), whose cost is mostly fixed: a job of many small files, or of big ones
    cut into many blocks, pays it a few times rather than once a block. A batch is finished when
    it holds BATCH_ROWS candidate lines or BATCH_BYTES of blocks (their lines stay in memory
    until then), and at the end; a file's result is yielded once its last block is classified.
    ``on_bytes`` gets each block's size as it is read.
    """
    batch = _Batch()
    for source in sources:
        opened = _start_reading(source)
        if isinstance(opened, _Reading):
            batch.read(opened, on_bytes)
        else:
            batch.done(opened)
        yield from batch.ready()
    batch.finish()
    yield from batch.ready()


# A batch of blocks waiting for classification (see read_in_order) is finished at these sizes.
BATCH_ROWS = 200_000
BATCH_BYTES = 4 * CHUNK_BYTES


class _Reading:
    """A file being read: its stream, its result so far and its thinned event parts."""

    def __init__(self, source: SourceFile, stream: io.BufferedIOBase | _InflateStream, year: int) -> None:
        self.stream = stream
        self.year = year
        self.result = FileRead(source, pl.DataFrame(schema=EVENT_COLUMNS))
        self.parts: list[pl.DataFrame] = []
        self.waiting = 0  # blocks read but not yet classified

    def add(self, chunk: ChunkResult) -> None:
        self.waiting -= 1
        self.result.lines_recognised += chunk.lines_recognised
        if chunk.events.height:
            self.parts.append(chunk.events)
            if len(self.parts) >= 8:  # keep memory flat on huge files
                self.parts = [_thin(pl.concat(self.parts))]

    def finished(self) -> FileRead:
        if self.parts:
            self.result.events = _finish_times(_thin(pl.concat(self.parts)))
            self.parts = []
        return self.result


class _Batch:
    """Prepared blocks waiting to be classified together, and results waiting to be yielded in
    order (a file's result waits for its last block)."""

    def __init__(self) -> None:
        self._results: deque[_Reading | FileRead | Skipped] = deque()
        self._pending: list[tuple[_Reading, PreparedChunk]] = []
        self._rows = 0
        self._bytes = 0

    def done(self, result: FileRead | Skipped) -> None:
        """A file's result that needs no block read, in its place in the order."""
        self._results.append(result)

    def read(self, reading: _Reading, on_bytes: Callable[[SourceFile, int], None] | None) -> None:
        """Read every block of a file, finishing the batch whenever it is full."""
        self._results.append(reading)
        result = reading.result
        carry_time: datetime | None = None
        with reading.stream:
            try:
                for block in _blocks(reading.stream, result):
                    if on_bytes is not None:
                        on_bytes(result.source, len(block))
                    block = _without_nul(block)
                    lines = _lines_frame(block, result.lines_read)
                    result.lines_read += lines.height
                    prepared = prepare_chunk(lines, reading.year, carry_time, coll_keep=(COLL_HEAD, COLL_TAIL),
                                             carriage_returns=b"\r" in block)
                    carry_time = prepared.last_time
                    self._pending.append((reading, prepared))
                    reading.waiting += 1
                    self._rows += prepared.candidates.height
                    self._bytes += len(block)
                    if self._rows >= BATCH_ROWS or self._bytes >= BATCH_BYTES:
                        self.finish()
            except READ_ERRORS as error:
                result.warnings.append(
                    f"stopped reading after line {result.lines_read}: {_describe_error(error)}; "
                    "the lines before it were analysed"
                )

    def finish(self) -> None:
        """Classify every block waiting."""
        chunks = finish_chunks([prepared for _, prepared in self._pending])
        for (reading, _), chunk in zip(self._pending, chunks, strict=True):
            reading.add(chunk)
        self._pending, self._rows, self._bytes = [], 0, 0

    def ready(self) -> Iterator[FileRead | Skipped]:
        """The results at the front that are complete, in order."""
        while self._results and not (isinstance(self._results[0], _Reading) and self._results[0].waiting):
            done = self._results.popleft()
            yield done.finished() if isinstance(done, _Reading) else done


def _start_reading(source: SourceFile) -> _Reading | FileRead | Skipped:
    """A file opened and checked, ready for its blocks; or what it gives without them (an error
    file, an empty file) or why it is skipped."""
    if source.info.kind == "torchrun-error":
        return _read_error_json(source)
    try:
        stream = _open(source)
    except OSError as error:
        return Skipped(source.display, f"cannot open ({error.strerror or error})")
    try:
        head = _peek(stream)
    except READ_ERRORS as error:
        stream.close()
        return Skipped(source.display, f"cannot read ({_describe_error(error)})")
    if not head:
        stream.close()
        return FileRead(source, pl.DataFrame(schema=EVENT_COLUMNS), warnings=["empty file"])
    if _looks_binary(head):
        stream.close()
        what = "only NUL bytes at its start (a hole)" if head == bytes(len(head)) else "binary data"
        return Skipped(source.display, f"{what}, not a text log")
    return _Reading(source, stream, _reference_year(head, source.path))


def read_files(sources: Sequence[SourceFile],
               on_bytes: Callable[[SourceFile, int], None] | None = None) -> list[FileRead | Skipped]:
    """:func:`read_file` for each of ``sources``, results in the same order.

    A big job is read by one worker process per core, a file at a time. Polars runs each string
    kernel of a chunk on one core, and Python threads calling it contend rather than scale, so
    files are the unit of parallelism. (This process waits rather than reads: it cannot have the
    workers' memory settings, see _Workers, and reads ~15% slower.) Workers are plain
    ``python -c`` subprocesses, not multiprocessing, which re-imports the caller's ``__main__``: a
    library user's unguarded script would run again. A file a worker did not return (it could not
    start, or died) is read here. ``on_bytes`` gets each block read here, and a file's size when a
    worker returns it.
    """
    results: list[FileRead | Skipped | None] = [None] * len(sources)
    cores = min(_usable_cores(), len(sources), MAX_WORKERS)
    # A process that is itself a worker (ours, or one of scan's, which already fill the cores)
    # reads in-process.
    nested = bool(os.environ.get(_WORKER_ENV)) or multiprocessing.parent_process() is not None
    if cores >= 2 and not nested and sum(s.size for s in sources) >= PARALLEL_MIN_BYTES:
        for i, got in _Workers(sources, _balance(sources, cores)).results():
            results[i] = got
            if on_bytes is not None:
                on_bytes(sources[i], sources[i].size)

    left = [i for i, outcome in enumerate(results) if outcome is None]
    for i, outcome in zip(left, read_in_order([sources[i] for i in left], on_bytes), strict=True):
        results[i] = outcome
    return [outcome for outcome in results if outcome is not None]


def _usable_cores() -> int:
    """Cores this process may run on (a SLURM allocation or a container may grant fewer than the
    machine has)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _balance(sources: Sequence[SourceFile], count: int) -> list[list[int]]:
    """``count`` groups of file indexes of about equal total size (biggest first, to the least
    loaded group), each in file order."""
    groups: list[list[int]] = [[] for _ in range(count)]
    load = [0] * count
    for i in sorted(range(len(sources)), key=lambda i: -sources[i].size):
        smallest = load.index(min(load))
        groups[smallest].append(i)
        load[smallest] += sources[i].size
    return [sorted(group) for group in groups]


class _Workers:
    """Worker processes reading groups of files, each returning (index, result) per file."""

    def __init__(self, sources: Sequence[SourceFile], groups: list[list[int]]) -> None:
        package_root = str(Path(__file__).resolve().parents[1])
        self._env = {
            **os.environ, _WORKER_ENV: "1", "POLARS_MAX_THREADS": "1",  # the processes already fill the cores
            "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p),
            # Each block allocates a few buffers of CHUNK_BYTES, freed at the end of the block. By
            # default glibc maps and unmaps them (Python's) and jemalloc hands freed pages back to
            # the system (polars'), so every block faults its memory in again, page by page: ~10%
            # of a worker's time. A short-lived worker keeps and reuses its memory instead.
            "MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 32),
            "_RJEM_MALLOC_CONF": "dirty_decay_ms:-1,muzzy_decay_ms:-1",
        }
        self._sources = sources
        self._returned: queue.SimpleQueue[tuple[int, FileRead | Skipped] | None] = queue.SimpleQueue()
        self._running = len(groups)
        for group in groups:
            threading.Thread(target=self._run, args=(group,), daemon=True).start()

    def results(self) -> Iterator[tuple[int, FileRead | Skipped]]:
        """Each result as a worker returns it, until all the workers are done."""
        while self._running:
            item = self._returned.get()
            if item is None:
                self._running -= 1
            else:
                yield item

    def _run(self, group: list[int]) -> None:
        # Whatever fails (no interpreter, a worker killed for memory), the files it did not
        # return are read by the caller.
        try:
            with subprocess.Popen([sys.executable, "-c", "from logscope.ingest import _worker; _worker()"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  env=self._env) as proc:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(pickle.dumps([self._sources[i] for i in group]))
                proc.stdin.close()
                for i in group:  # one result per file, in order, as soon as it is read
                    self._returned.put((i, pickle.load(proc.stdout)))
        except Exception:
            pass
        finally:
            self._returned.put(None)


def _worker() -> None:
    """A worker process of :func:`read_files`: pickled sources on stdin, one pickled result per
    file on stdout."""
    sources = pickle.load(sys.stdin.buffer)
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but results may go into the results stream
    for result in read_in_order(sources):
        pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()


def _open(source: SourceFile) -> io.BufferedReader | _InflateStream | io.BufferedIOBase:
    raw = source.path.open("rb")
    if source.compression == "gz":
        return _InflateStream(raw, lambda: zlib.decompressobj(16 + zlib.MAX_WBITS))
    if source.compression == "zst":
        return _InflateStream(raw, lambda: zstandard.ZstdDecompressor().decompressobj())
    return raw


class TruncatedArchive(EOFError):
    """The compressed stream ended before its end marker."""


class _Decoder(Protocol):
    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes) -> bytes: ...


class _InflateStream(io.RawIOBase):
    """Incremental gzip/zstd reader that hands out every byte decoded before a corruption, and
    raises :class:`TruncatedArchive` when the stream ends without its end marker.

    ``_InflateStream.read`` drops the data of a read that hits a truncated member, and zstandard's
    stream reader ends silently; a log cut short by a dying node is exactly that case, and its
    last lines are the interesting ones.
    """

    def __init__(self, raw: io.BufferedReader, make_decoder: Callable[[], _Decoder]) -> None:
        super().__init__()
        self._raw = raw
        self._make = make_decoder
        self._decoder = make_decoder()
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = size if size >= 0 else 1 << 62
        while len(self._pending) < want and not self._done:
            compressed = self._raw.read(1 << 20)
            if not compressed:
                self._done = True
                break
            self._pending += self._decoder.decompress(compressed)
            while self._decoder.eof and self._decoder.unused_data:  # concatenated members/frames
                rest = self._decoder.unused_data
                self._decoder = self._make()
                self._pending += self._decoder.decompress(rest)
        if not self._pending and self._done and not self._decoder.eof:
            raise TruncatedArchive("compressed data ends early")
        out, self._pending = self._pending[:want], self._pending[want:]
        return out

    def close(self) -> None:
        self._raw.close()
        super().close()


def _peek(stream: io.BufferedIOBase | _InflateStream) -> bytes:
    """The first bytes of the (decompressed) stream, pushed back for the block reader."""
    head = stream.read(SNIFF_BYTES)
    stream._logscope_head = head  # type: ignore[union-attr]
    return head


def _blocks(stream: io.BufferedIOBase | _InflateStream, result: FileRead) -> Iterator[bytes]:
    """Blocks that end at a newline (the last one may not), each at most about CHUNK_BYTES."""
    pending: bytes = getattr(stream, "_logscope_head", b"")
    squeezed = 0
    size = _plain_size(stream)
    while True:
        want = CHUNK_BYTES
        if size is not None and size - stream.tell() <= CHUNK_BYTES * 3 // 2:
            # The rest of a plain file, up to half a block more, in one block: every block costs
            # a fixed ~20 ms beyond its lines, and a small last block would cost it for little.
            want = max(CHUNK_BYTES, size - stream.tell() + 1)
        data = stream.read(want)
        if not data:
            break
        if data[:1] == b"\0" or data[-1:] == b"\0":
            data, dropped = _squeeze_nul_runs(data)
            squeezed += dropped
            if data == b"\0" and isinstance(stream, io.BufferedReader):  # in a hole: jump to the data
                here = stream.tell()
                there = _next_data(result.source.path, here)
                if there is not None and there > here:
                    stream.seek(there)
                    squeezed += there - here
        cut = data.rfind(b"\n")
        if cut != -1:
            # One copy of the block, not two: the carried partial line joined to the new bytes up
            # to their last newline.
            yield pending + memoryview(data)[: cut + 1] if pending else data[: cut + 1]
            pending = data[cut + 1:]
            continue
        pending += data
        cut = pending.rfind(b"\n")  # only the sniffed head can hold one
        if cut == -1:
            if len(pending) > MAX_LINE_BYTES:
                split = f"a line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB was split"
                if split not in result.warnings:
                    result.warnings.append(split)
                yield pending + b"\n"
                pending = b""
            continue
        yield pending[: cut + 1]
        pending = pending[cut + 1:]
    if pending:
        yield pending
    if squeezed:
        result.warnings.append(f"{squeezed:,} NUL bytes skipped (a hole, as a node that crashed while writing "
                               "leaves); the lines around them were read")


def _plain_size(stream: io.BufferedIOBase | _InflateStream) -> int | None:
    """The size of an uncompressed file being read; None for a decompressing stream."""
    if not isinstance(stream, io.BufferedReader):
        return None
    try:
        return os.fstat(stream.fileno()).st_size
    except OSError:
        return None


def _without_nul(block: bytes) -> bytes:
    """``block`` without NUL bytes: a crash leaves them in front of the next writer's text, where
    they would hide it from the patterns. Newlines are kept, and a last line made only of NUL
    bytes stays a line, so line numbers do not change."""
    if b"\0" not in block:
        return block
    kept = block.replace(b"\0", b"")
    if not block.endswith(b"\n") and (not kept or kept.endswith(b"\n")):
        kept += b"\0"
    return kept


def _next_data(path: Path, offset: int) -> int | None:
    """Where data resumes at or after ``offset`` in a sparse file (its size when only a hole is
    left); None when the system cannot tell. Uses its own descriptor: the reader's is untouched."""
    seek_data = getattr(os, "SEEK_DATA", None)
    if seek_data is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.lseek(fd, offset, seek_data)
    except OSError as error:
        return os.fstat(fd).st_size if error.errno == errno.ENXIO else None
    finally:
        os.close(fd)


def _squeeze_nul_runs(data: bytes) -> tuple[bytes, int]:
    """A long run of NUL bytes at either end of ``data`` becomes one NUL byte (newlines, and so
    line numbers, are kept); return the new bytes and how many were dropped. A sparse or
    NUL-padded file is then read at disk speed, in constant memory."""
    if data == bytes(len(data)):
        return b"\0", len(data) - 1
    size = len(data)
    if data[-1:] == b"\0" and len(data) - len(kept := data.rstrip(b"\0")) > NUL_RUN:
        data = kept + b"\0"
    if data[:1] == b"\0" and len(data) - len(kept := data.lstrip(b"\0")) > NUL_RUN:
        data = b"\0" + kept
    return data, size - len(data)


def _lines_frame(block: bytes, first_line: int) -> pl.DataFrame:
    """Physical lines of ``block`` numbered from ``first_line + 1``, decoded lossily."""
    # The CSV reader is the fastest line splitter polars has; give it a separator byte that
    # cannot occur (0x1f is replaced by a space) and no quoting, so every line is one field.
    while block.startswith(codecs.BOM_UTF8):  # the reader drops it, and finds "no data" if that was all
        block = block[len(codecs.BOM_UTF8):] or b"\n"
    if b"\x1f" in block:
        block = block.replace(b"\x1f", b" ")
    frame = pl.read_csv(
        block,
        has_header=False,
        separator="\x1f",
        quote_char=None,
        new_columns=["raw"],
        schema_overrides={"raw": pl.String},
        encoding="utf8-lossy",
        infer_schema=False,
        truncate_ragged_lines=True,
    )
    return frame.select(
        (pl.int_range(1, pl.len() + 1, dtype=pl.Int64) + first_line).alias("line"),
        pl.col("raw"),
    )


def _looks_binary(head: bytes) -> bool:
    """Mostly control bytes, or mostly bytes that are not UTF-8: not a text log.

    A few NUL or invalid bytes are normal in logs of crashed jobs (a node died mid-write) and
    do not make a file binary, nor does a run of NUL bytes (a hole the crash left) after text.
    """
    head = re.sub(rb"\0{64,}", b"", head) or head
    control = len(head) - len(head.translate(None, bytes(range(0, 9)) + bytes(range(14, 32)) + b"\x7f"))
    if control > len(head) * 0.10:
        return True
    invalid = head.decode("utf-8", "replace").count("\ufffd")
    return invalid > len(head) * 0.30


def _reference_year(head: bytes, path: Path) -> int:
    """The year for timestamps that carry none (glog, syslog): the file's first full date, else
    its modification time."""
    if m := _FULL_DATE.search(head):
        return int(m.group(1))
    try:
        year = datetime.fromtimestamp(path.stat().st_mtime).year
    except (OSError, ValueError, OverflowError):
        return 1970
    return year if 1900 <= year <= 2999 else 1970  # as timestamps.py: no year close to datetime's limits


def _thin(events: pl.DataFrame) -> pl.DataFrame:
    """Keep the first/last COLL rows per communicator and the last progress rows per process."""
    coll = pl.col("event") == Event.NCCL_COLL.value
    progress = pl.col("event") == Event.PROGRESS.value
    key_coll = [pl.col("host"), pl.col("pid"), pl.col("fields").struct.field("comm")]
    key_progress = [pl.col("host"), pl.col("pid"), pl.col("rank"), pl.col("local_rank"), pl.col("task")]
    pos_c = pl.int_range(pl.len()).over(key_coll)
    n_c = pl.len().over(key_coll).cast(pl.Int64)  # UInt32 would wrap below zero
    pos_p = pl.int_range(pl.len()).over(key_progress)
    n_p = pl.len().over(key_progress).cast(pl.Int64)
    keep_coll = events.filter(coll).filter((pos_c < COLL_HEAD) | (pos_c >= n_c - COLL_TAIL))
    keep_progress = events.filter(progress).filter((pos_p < COLL_HEAD) | (pos_p >= n_p - PROGRESS_TAIL))
    channel = pl.col("event") == Event.NCCL_CHANNEL.value
    # Channel lines repeat per channel; one per (process, peer, transport) says all there is.
    channel_key = ["host", "pid", "_transport", "_from", "_to"]
    keep_channel = (
        events.filter(channel)
        .with_columns(
            pl.col("fields").struct.field("transport").alias("_transport"),
            pl.col("fields").struct.field("comm_rank").alias("_from"),
            pl.col("fields").struct.field("value").alias("_to"),
        )
        .unique(subset=channel_key, keep="first", maintain_order=True)
        .drop("_transport", "_from", "_to")
    )
    # Everything else: a process repeating the same kind of line thousands of times (a retry loop
    # of NCCL WARNs, tracebacks in a crash loop) keeps its first and last ones. What detectors use
    # is there: a process's first failure, and its last activity. Record lines (ChildFailedError,
    # launch configs, rendezvous results) span several lines each, so they get far more room.
    records = pl.col("event").is_in(_RECORD_EVENTS)
    key_rest = [pl.col("host"), pl.col("pid"), pl.col("rank"), pl.col("local_rank"), pl.col("task"),
                pl.col("event")]
    pos_r = pl.int_range(pl.len()).over(key_rest)
    n_r = pl.len().over(key_rest).cast(pl.Int64)
    limit = pl.when(records).then(RECORD_KEEP).otherwise(REPEAT_KEEP)
    rest = events.filter(~coll & ~progress & ~channel).filter((pos_r < limit) | (pos_r >= n_r - limit))
    return pl.concat([rest, keep_coll, keep_progress, keep_channel]).sort("line", maintain_order=True)


def _finish_times(events: pl.DataFrame) -> pl.DataFrame:
    """Untimed events before the file's first timestamp take that first timestamp (inferred);
    an untimed event at the end of a block takes the next block's first time as its latest.

    An untimed event lies between the timed lines around it, earliest ``time``, latest
    ``time_latest``. Processes writing to one file do not keep its times in order (a rank's
    buffered output lands after the agent's later lines), so the line below can be older than
    the one above: the window is then the span between the two, whichever comes first."""
    events = events.with_columns(pl.col("time").backward_fill(), pl.col("time_latest").backward_fill())
    return events.with_columns(
        pl.min_horizontal("time", "time_latest").alias("time"),
        pl.max_horizontal("time", "time_latest").alias("time_latest"),
    )


def _read_error_json(source: SourceFile) -> FileRead | Skipped:
    """torchrun's error.json: one event with the child's exception and its timestamp."""
    try:
        with _open(source) as stream:
            data = json.loads(stream.read(MAX_LINE_BYTES).decode("utf-8", "replace"))
    except READ_ERRORS as error:
        return Skipped(source.display, f"not a torchrun error file ({_describe_error(error)})")
    message_block = data.get("message") if isinstance(data, dict) else None
    if isinstance(message_block, str):
        message_block = {"message": message_block}
    if not isinstance(message_block, dict):
        return Skipped(source.display, "not a torchrun error file (no 'message')")
    message = str(message_block.get("message", "")).strip()
    extra = message_block.get("extraInfo") or {}
    stamp = extra.get("timestamp") if isinstance(extra, dict) else None
    when: datetime | None = None
    try:
        if stamp is not None:
            when = datetime.fromtimestamp(int(stamp), tz=timezone.utc).replace(tzinfo=None)
            when = when if 1900 <= when.year <= 2999 else None  # as timestamps.py
    except (ValueError, OverflowError, OSError):
        when = None
    first = message.splitlines()[0] if message else "(empty message)"
    error_type, _, rest = first.partition(": ")
    fields: dict[str, object] = dict.fromkeys(FIELD_SCHEMA)
    fields.update(error_type=error_type if rest else None, message=rest or first)
    row = {
        "line": 1, "host": None, "pid": None, "local_rank": source.info.local_rank, "rank": None,
        "task": None, "time": when, "time_inferred": when is None, "time_latest": when, "source": "torchrun",
        "event": Event.ERROR_FILE.value, "severity": Severity.ERROR.value, "fields": fields,
        "prefix": None, "text": first[:4096],
    }
    events = pl.DataFrame([row], schema=EVENT_COLUMNS)
    return FileRead(source, events, lines_read=1, lines_recognised=1)


def _describe_error(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    if isinstance(error, EOFError):
        return "compressed data ends early (truncated archive)"
    return text.splitlines()[0][:200]
