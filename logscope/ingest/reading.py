"""Read files into event rows, in bounded memory: the per-file pipeline.

Each file is opened (:mod:`~logscope.ingest.compression`), checked, cut into blocks of numbered
lines (:mod:`~logscope.ingest.blocks`), and each block's lines are parsed; the candidate lines of
several blocks are classified in one batch. Repeated events are thinned as they arrive, so memory
does not grow with the lines of a file, and untimed events take their times from the lines
around them. torchrun's ``error.json`` is read as one event. Nothing is ever written: files are
opened read-only and their times are not changed.
"""

from __future__ import annotations

import io
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cache
from itertools import accumulate, pairwise

import polars as pl

from logscope.ingest import compiled
from logscope.ingest.blocks import (
    CHUNK_BYTES,
    MAX_LINE_BYTES,
    blocks,
    control_bytes,
    looks_binary,
    peek,
    skip_leading_hole,
    without_escapes,
    without_nul,
)
from logscope.ingest.coll_prefilter import Reduced, reduce_block
from logscope.ingest.compression import READ_ERRORS, InflateStream, describe_error, open_source
from logscope.ingest.discovery import Skipped, SourceFile
from logscope.ingest.file_events import completed
from logscope.ingest.line_frames import line_count, lines_frame, whole_files_lines
from logscope.ingest.matching import (
    CLASSIFY_BYTES,
    bounded_pieces,
    bounded_pieces_each,
    cut_for_matching,
    cut_for_matching_each,
)
from logscope.ingest.pieces import Piece
from logscope.ingest.progress_prefilter import reduce_progress
from logscope.ingest.repeat_prefilter import (
    RepeatsFound,
    decide_across,
    looks_for_repeats,
    reduce_repeats,
)
from logscope.ingest.scanning import ScannedFile, reference_year
from logscope.ingest.thinning import KIND_KEEP, LOOP_KEEP, thin_each, thin_parts
from logscope.limits import COLL_HEAD, COLL_TAIL, MATCH_CHARS, PROGRESS_TAIL
from logscope.model import FIELD_SCHEMA, Event, Severity
from logscope.parsers.lines import (
    EVENT_COLUMNS,
    ChunkResult,
    PreparedChunk,
    finish_chunks,
    prepare_chunk,
    prepare_files,
)


@dataclass
class FileRead:
    """What reading one file produced: its events (EVENT_COLUMNS, thinned, timed, and made ready
    for its job by :func:`~logscope.ingest.file_events.completed`: controls dropped, the file's
    facts filled in, torchrun's records folded), the lines read and recognised, what was said."""

    source: SourceFile
    events: pl.DataFrame
    lines_read: int = 0
    lines_recognised: int = 0
    warnings: list[str] = field(default_factory=list)


ProgressCallback = Callable[[int], None]


def read_file(source: SourceFile, on_bytes: ProgressCallback | None = None) -> FileRead | Skipped:
    """Read one file into events; return Skipped when it cannot or should not be read."""
    hook = None if on_bytes is None else (lambda _source, n: on_bytes(n))
    return next(read_in_order([source], hook))


class Pause:
    """Among :func:`read_in_order`'s sources: nothing more comes for a while (the read workers are
    reading on); what waits is finished now, while this process would idle, not after them."""


PAUSE = Pause()


def read_in_order(sources: Iterable[SourceFile | ScannedFile | Pause],
                  on_bytes: Callable[[SourceFile, int], None] | None = None) -> Iterator[FileRead | Skipped]:
    """:func:`read_file` for each of ``sources``, yielded in order; a file a read worker's byte pass
    took (:class:`~logscope.ingest.scanning.ScannedFile`) is parsed from what the pass kept (the
    kept lines of consecutive such files read in one call, up to SCANNED_HELD_BYTES of them:
    _kept_lines_of).

    Each block is taken as far as it goes alone (``prepare_chunk``: every per-line step), then the
    candidate lines of several blocks, of one file or of several, are classified in one batch
    (``finish_chunks``), whose cost is mostly fixed: a job of many small files, or of big ones
    cut into many blocks, pays it a few times rather than once a block. A batch is finished when
    it holds BATCH_ROWS candidate lines or BATCH_BYTES of blocks framed (their lines stay in memory
    until then), and at the end; a file's result is yielded once its last block is classified.
    ``on_bytes`` gets each block's size as it is read; at a :data:`PAUSE` among ``sources``
    everything waiting is finished (what the end does), and the files complete yielded.
    """
    batch = _Batch()
    scanned: list[ScannedFile] = []  # consecutive files of the byte pass, taken together
    held = 0  # the bytes they kept

    def take_scanned() -> None:
        nonlocal held
        for file, kept in zip(scanned, _kept_lines_of(scanned), strict=True):
            if not batch.read_scanned(_Reading(file.source, None, file.year), file, kept):
                read_here(file.source)
        scanned.clear()
        held = 0

    def read_here(source: SourceFile) -> None:
        opened = _start_reading(source)
        if isinstance(opened, _Reading):
            batch.read(opened, on_bytes)
        else:
            batch.done(opened)

    for source in sources:
        if isinstance(source, Pause):
            take_scanned()
            batch.finish_all()
            yield from batch.ready()
            continue
        if isinstance(source, ScannedFile):
            scanned.append(source)
            held += sum(block.kept_bytes for block in source.blocks)
            if held >= SCANNED_HELD_BYTES:  # memory stays flat, whatever the job's files
                take_scanned()
                yield from batch.ready()
            continue
        take_scanned()
        read_here(source)
        yield from batch.ready()
    take_scanned()
    batch.finish_all()
    yield from batch.ready()


# The files of the byte pass are taken (their kept lines read together) once they hold this much.
SCANNED_HELD_BYTES = 16 * 1024 * 1024


def _kept_lines_of(scanned: Sequence[ScannedFile]) -> list[list[pl.DataFrame | None] | None]:
    """For each of ``scanned``, the kept lines of each of its blocks (None for a block kept whole),
    all read in one call of the CSV reader: ~4 ms a call whatever its lines, and a 1 GB job's 16
    files keep ~32 blocks of a few hundred lines (25 ms read block by block, 4-5 ms together).
    None for every file when they do not read back as the pass counted them (never seen: each
    block is then read alone, as read_scanned does)."""
    reduced = [block.reduced for file in scanned for block in file.blocks if block.reduced is not None]
    if len(reduced) < 2:
        return [None] * len(scanned)
    # The kept lines are numbered in their file (lines_frame's numbered form): the blocks' bytes
    # joined read as their frames put end to end, each block ending its last line.
    joined = b"".join(r.kept if r.kept.endswith(b"\n") or not r.kept else r.kept + b"\n" for r in reduced)
    frame = lines_frame(joined, 0, numbered=True)
    if frame.height != sum(r.kept_count for r in reduced):
        return [None] * len(scanned)
    out: list[list[pl.DataFrame | None] | None] = []
    at = 0
    for file in scanned:
        frames: list[pl.DataFrame | None] = []
        for block in file.blocks:
            if block.reduced is None:
                frames.append(None)
                continue
            frames.append(frame.slice(at, block.reduced.kept_count))
            at += block.reduced.kept_count
        out.append(frames)
    return out


COLL_ASIDE_MIN_LINES = 4096  # see _Batch.read
# A file's first block of at most this many bytes is held until the next is read, to know whether
# it is the whole file (see _frame); a bigger one is framed before the next is read, as always, so
# that a big file never holds two blocks.
WHOLE_MAX_BYTES = 1024 * 1024

# A batch of blocks waiting for classification (see read_in_order) is finished at these sizes.
# (100,000: a block of progress lines, ~140,000 candidates, is classified alone; two of them held
# together took ~0.7 GB in a worker.)
BATCH_ROWS = 100_000
BATCH_BYTES = 4 * CHUNK_BYTES


# A file's event parts are thinned together once there are 8 of them, or more than this many rows,
# by the rules for each process alone (exact: the bound across processes is applied once, to the
# whole file). What those rules keep grows with the processes: beyond this many rows (a real log
# repeated with new pids, millions of processes each printing a line) the parts are thinned across
# processes too, bounded but no longer exact (see thinning). A real log's 32 MB block can give
# ~136,000 events: 8 such parts held and thinned together took ~2.4 GB; ~0.8 GB this way.
PARTS_MAX_ROWS = 16 * KIND_KEEP


class _Reading:
    """A file being read: its stream, its result so far and its thinned event parts."""

    def __init__(self, source: SourceFile, stream: io.BufferedIOBase | InflateStream | None, year: int) -> None:
        self.stream = stream  # None for a file the byte pass read (logscope.ingest.scanning)
        self.year = year
        self.result = FileRead(source, _no_events())
        self.parts: list[pl.DataFrame] = []
        self.waiting = 0  # blocks (or pieces of blocks) read but not yet classified
        self.cut = 0  # lines cut for matching
        # A block of it was a restart loop's: its next blocks are compared whole for the loop's
        # repeats, without the gate's samples (repeat_prefilter.reduce_repeats' gated).
        self.looping = False
        # A piece of the file (logscope.ingest.pieces), and where it ends (None: the last piece
        # reads on to the file's end, as a whole read would, however much the file grew since)
        self.piece = False
        self.end: int | None = None
        self.stopped = False  # a read error ended it
        # The first and the last time of its lines (of a piece: for the pieces around it, merge_pieces)
        self.first_time: datetime | None = None
        self.last_time: datetime | None = None

    def add(self, chunk: ChunkResult) -> None:
        self.waiting -= 1
        self.result.lines_recognised += chunk.lines_recognised
        self.first_time = self.first_time or chunk.first_time
        self.last_time = chunk.last_time  # (carried from the chunks before: the latest so far)
        if chunk.first_time is not None:
            self.parts = _latest_below(self.parts, chunk.first_time)
        if chunk.events.height:
            self.parts.append(chunk.events)
            waiting = sum(part.height for part in self.parts)
            if len(self.parts) >= 8 or waiting > PARTS_MAX_ROWS:  # keep memory flat on huge files
                # Not copied into one frame first, and gathered once: 8 parts of a real log's
                # blocks (~136,000 events each) took ~1.6 GB more than they hold that way.
                self.parts = [thin_parts(self.parts, PARTS_MAX_ROWS)]

    @staticmethod
    def finish(readings: list[_Reading]) -> None:
        """The files' results complete: their events thinned (in one query for all of them), and
        made ready to join their job's, their untimed events timed (file_events.completed, for all
        of them at once)."""
        with_events = [reading for reading in readings if reading.parts]
        joined = [pl.concat(reading.parts) if len(reading.parts) > 1 else reading.parts[0] for reading in with_events]
        thinned = thin_each(joined)
        for reading, events in zip(with_events, completed(thinned, [r.result.source for r in with_events]),
                                   strict=True):
            reading.result.events = events
            reading.parts = []


def _latest_below(parts: list[pl.DataFrame], first_time: datetime) -> list[pl.DataFrame]:
    """The events of a file's chunks (or pieces) before one whose first timed line is at
    ``first_time``: the untimed events at their end have no timed line after them in their own
    chunk (time_latest null), and that line is the nearest below them. (Left to
    file_events._timed, after the thinning, they would take the time of the next event kept, maybe
    far below the line that gives it.)"""
    latest = pl.col("time_latest").fill_null(pl.lit(first_time, dtype=pl.Datetime("us")))
    return [part.with_columns(latest) if part["time_latest"].null_count() else part for part in parts]


def _split_whole(pooled: list[tuple[_Reading, _Framed | _Whole]]) -> list[tuple[_Reading, _Framed]]:
    """``pooled`` with the lines of its small whole files (:class:`_Whole`) split, in one call of
    the CSV reader for all of them, and cut for matching, as _frame and _framed take a block."""
    wholes = [(reading, whole) for reading, whole in pooled if isinstance(whole, _Whole)]
    if not wholes:
        return [(reading, item) for reading, item in pooled if isinstance(item, _Framed)]
    heights = [whole.lines for _, whole in wholes]
    lines = whole_files_lines([whole.block for _, whole in wholes], heights)
    if lines is None:  # never seen: each read alone, counted as the reader splits it
        alone = [lines_frame(whole.block, 0) for _, whole in wholes]
        for (reading, whole), frame in zip(wholes, alone, strict=True):
            reading.result.lines_read += frame.height - whole.lines
        heights = [frame.height for frame in alone]
        lines = pl.concat(alone)
    lines, cuts = cut_for_matching_each(lines, heights)
    framed: list[_Framed] = []
    for (reading, whole), (start, end), cut in zip(wholes, pairwise(accumulate(heights, initial=0)), cuts,
                                                    strict=True):
        reading.cut += cut
        _say_cut(reading)  # its other warnings were said when its block was taken (_Batch._end)
        framed.append(_Framed(lines.slice(start, end - start), cut > 0 or whole.carriage_returns, False, 0,
                              whole.size))
    in_order = iter(framed)  # the wholes' framings, in the pool's order
    return [(reading, next(in_order) if isinstance(item, _Whole) else item) for reading, item in pooled]


def _say_cut(reading: _Reading) -> None:
    """The warning of a file's lines cut for matching, once they are known (see _Batch._end); a
    piece's are said by merge_pieces, once for the file."""
    if reading.cut and not reading.piece:
        reading.result.warnings.append(_cut_warning(reading.cut))


def _cut_warning(cut: int) -> str:
    return (f"{cut:,} line(s) longer than {MATCH_CHARS:,} characters were matched on their first (and, "
            f"after a carriage return, last) {MATCH_CHARS:,} characters")


@cache
def _no_events() -> pl.DataFrame:
    """The events of a file that has none (frames are immutable: one serves every file; building
    one costs ~2 ms, paid per file of a job of thousands)."""
    return pl.DataFrame(schema=EVENT_COLUMNS)


# Prefiltered blocks of a file are prepared together up to this many lines left.
HELD_ROWS = 100_000


@dataclass
class _Framed:
    """Lines of one block (or of consecutive prefiltered blocks of a file) waiting to be prepared."""

    lines: pl.DataFrame  # line, raw
    carriage_returns: bool  # some line may hold '\r'
    prefiltered: bool  # COLL lines were dropped (logscope.ingest.coll_prefilter): no paste to unwrap
    set_aside: int  # the COLL lines dropped
    size: int  # bytes held until classified
    # The byte pass looked for a restart loop's repeats (logscope.ingest.repeat_prefilter): the polars
    # rule does not look again. ``repeated``: the lines kept that those it set aside are counted against.
    repeats_looked: bool = False
    repeated: pl.DataFrame | None = None
    # Progress lines were set aside on its bytes (logscope.ingest.progress_prefilter): it is
    # prepared alone (a chunk's wrappers are learned from its first lines, and it keeps its own).
    progress: bool = False

    def joined(self, later: _Framed) -> _Framed:
        repeated = [r for r in (self.repeated, later.repeated) if r is not None]
        return _Framed(pl.concat([self.lines, later.lines]), self.carriage_returns or later.carriage_returns,
                       self.prefiltered and later.prefiltered, self.set_aside + later.set_aside,
                       self.size + later.size, self.repeats_looked or later.repeats_looked,
                       pl.concat(repeated) if repeated else None)  # (never a progress block: prepared alone)


@dataclass
class _Whole:
    """A small file read whole in one block, its lines not split yet: the pool splits them with
    the other such files' in one call (see _Batch._flush_pool)."""

    block: bytes
    lines: int  # its lines, split at '\n' as the CSV reader splits them
    carriage_returns: bool  # some line may hold '\r'
    size: int  # bytes held until classified


def _frame(reading: _Reading, block: bytes, last: bool) -> _Framed | _Whole | _Repeated:
    """A block's lines, numbered in its file, cut for matching; without the COLL lines the
    thinning would drop when the compiled scanner could drop them from the block's bytes. The
    ``last`` block of a file that is its first too (the file whole), of at most
    COLL_ASIDE_MIN_LINES lines, is left to be split with the pool's (:class:`_Whole`): such a
    block is pooled, and the byte pass never drops lines from it (it keeps blocks of at most
    WRAP_MAX_LINES lines whole). A block with a restart loop's repeats set aside on its bytes is
    left to be framed with the file's next such blocks (:class:`_HeldRepeats`)."""
    controls = control_bytes(block)
    if controls.nul:
        block = without_nul(block)
    if controls.escape:
        block = without_escapes(block)
    if last and reading.result.lines_read == 0:
        count = line_count(block)
        if count <= COLL_ASIDE_MIN_LINES:
            reading.result.lines_read = count
            return _Whole(bytes(block), count, controls.carriage_return, len(block))
    first_line = reading.result.lines_read
    reduced = reduce_block(block, first_line, controls)
    kept = None if reduced is None else _kept_lines(reduced, first_line)
    if reduced is not None and kept is not None:
        return _framed(reading, kept, reduced.lines_read, reduced.set_aside, len(reduced.kept), len(block),
                       controls.carriage_return, True)
    # Not COLL-heavy: a restart loop's repeats, set aside on the block's bytes when it is one.
    found = (reduce_repeats(block, first_line, controls, LOOP_KEEP, LOOP_KEEP, gated=not reading.looping)
             if looks_for_repeats(controls) else None)
    reading.looping = reading.looping or (found is not None and found.kept is not None)
    if found is not None and found.kept is None:
        # No loop: its progress lines, set aside on the block's bytes when they are most of it
        # (the polars rule's repeats are looked for no more either way, as without).
        found = reduce_progress(block, first_line, controls, reading.year, COLL_HEAD, PROGRESS_TAIL,
                                loop_keep=(LOOP_KEEP, LOOP_KEEP)) or found
    if found is not None and found.kept is not None:
        reading.result.lines_read += found.lines_read  # the next block's lines are numbered after them
        return _Repeated(found, controls.carriage_return, len(block))
    lines = lines_frame(block, first_line, unit_separator=controls.unit_separator)
    return _framed(reading, lines, lines.height, 0, len(block), len(block), controls.carriage_return, False,
                   repeats_looked=found is not None)


@dataclass
class _Repeated:
    """A block with a restart loop's repeats set aside on its bytes (repeat_prefilter), not framed
    yet: the file's next such blocks may make more of its lines repeats (:class:`_HeldRepeats`)."""

    found: RepeatsFound
    carriage_return: bool
    size: int  # the block's bytes


# The blocks with a loop's repeats set aside are held until they keep this many bytes (a few per
# cent of what they read), or a block without comes, or the file ends.
REPEATS_HELD_BYTES = 32 * 1024 * 1024
# A file's keys counted from its blocks framed before (see _HeldRepeats) are forgotten beyond this
# many (~16 bytes each): its next blocks then keep the first groups of each key again, as if the
# file began there (more kept, never fewer).
BEFORE_MAX_KEYS = 1_000_000


class _HeldRepeats:
    """A file's consecutive blocks with a loop's repeats set aside, held until they are framed
    together: the groups each kept of a key that comes on in the others are repeats too
    (repeat_prefilter.drop_across), as one block of them all would set them aside.

    When they hold REPEATS_HELD_BYTES, all but the last are framed: the last is held on, to be
    decided with the next ones, so that the groups of a key it holds again are set aside in those
    framed (a loop of attempts longer than a block's share of the bytes kept would otherwise keep
    the last groups of each key at every release); and the groups of each key framed are counted,
    so that the next blocks keep no first groups of a key framed before (drop_across's
    ``before``). A file of a restart loop keeps about what one block of it all would keep."""

    def __init__(self, reading: _Reading) -> None:
        self._reading = reading
        self._held: list[_Repeated] = []
        self._bytes = 0
        # Each key's groups in the blocks framed before, by what is kept of a key (a loop's
        # groups, progress lines'): keys of one are not keys of the other.
        self._before: dict[tuple[int, int], pl.DataFrame] = {}

    def take(self, item: _Framed | _Whole | _Repeated) -> Iterator[_Framed | _Whole]:
        """``item`` held, or framed after those held (which are framed first)."""
        if not isinstance(item, _Repeated):
            yield from self.release()
            yield item
            return
        if self._held and self._held[0].found.keep != item.found.keep:  # a loop's, then progress lines
            yield from self.release()
        self._held.append(item)
        self._bytes += len(item.found.kept or b"")
        if self._bytes >= REPEATS_HELD_BYTES:
            yield from self.release(hold_last=True)

    def release(self, hold_last: bool = False) -> Iterator[_Framed]:
        """The blocks held, framed, in order (but the last, when ``hold_last`` and there are more)."""
        held = self._held
        if not held:
            return
        emit = len(held) - 1 if hold_last and len(held) > 1 else len(held)
        keep = held[0].found.keep
        decided, counts = decide_across([block.found for block in held], *keep, before=self._before.get(keep),
                                        emit=emit)
        self._held = [replace(block, found=found) for block, found in zip(held[emit:], decided[emit:], strict=True)]
        self._bytes = sum(len(block.found.kept or b"") for block in self._held)
        # (None, or too many to hold: fewer are counted before the next blocks, more kept, never fewer)
        if counts is not None and counts.height <= BEFORE_MAX_KEYS:
            self._before[keep] = counts
        progress = keep != (LOOP_KEEP, LOOP_KEEP)
        for block, found in zip(held[:emit], decided[:emit], strict=True):
            assert found.kept is not None
            lines = lines_frame(found.kept, found.first_line, numbered=True)
            if lines.height != found.kept_count:  # never seen: the lines split in Python
                lines = _numbered_lines(found.kept)
            # What a progress block keeps was compared for a loop's repeats there, or is by the
            # polars rule (the loop pass did not: its progress lines were too many of its lines).
            counted = [c for c in (found.counted, found.loop_counted) if c is not None]
            yield _framed(self._reading, lines, 0, 0, len(found.kept), block.size, block.carriage_return, True,
                          repeats_looked=found.loops_looked,
                          repeated=pl.concat(counted).sort("line") if len(counted) > 1 else next(iter(counted), None),
                          progress=progress)


def _numbered_lines(kept: bytes) -> pl.DataFrame:
    """Lines written as ``<number>\\x1f<line>\\n`` (repeat_prefilter's), split at '\\n' only, as
    lines_frame reads them (an empty line null)."""
    numbers: list[int] = []
    texts: list[str | None] = []
    for line in kept.split(b"\n")[:-1]:
        number, _, text = line.partition(b"\x1f")
        numbers.append(int(number))
        texts.append(text.decode("utf-8", "replace") or None)
    return pl.DataFrame({"line": numbers, "raw": texts}, schema={"line": pl.Int64, "raw": pl.String})


def _kept_lines(reduced: Reduced, first_line: int) -> pl.DataFrame | None:
    """The lines a block kept after the byte pass (numbered after ``first_line``); None when the CSV
    reader split them otherwise than at '\n' (never seen: the block is then read whole)."""
    lines = lines_frame(reduced.kept, first_line, numbered=True)
    return lines if lines.height == reduced.kept_count else None


def _framed(reading: _Reading, lines: pl.DataFrame, read: int, set_aside: int, size: int, block_size: int,
            carriage_return: bool, prefiltered: bool, repeats_looked: bool = False,
            repeated: pl.DataFrame | None = None, progress: bool = False) -> _Framed:
    """``lines`` of a block of ``block_size`` bytes (``read`` lines, ``set_aside`` of them dropped by
    the byte pass, ``size`` bytes left) counted in its file and cut for matching (``repeats_looked``,
    ``repeated``: see _Framed)."""
    reading.result.lines_read += read
    lines, cut = cut_for_matching(lines) if block_size > MATCH_CHARS else (lines, 0)
    reading.cut += cut
    return _Framed(lines, cut > 0 or carriage_return, prefiltered, set_aside, size, repeats_looked, repeated, progress)


class _Batch:
    """Prepared blocks waiting to be classified together, and results waiting to be yielded in
    order (a file's result waits for its last block)."""

    def __init__(self) -> None:
        self._results: deque[_Reading | FileRead | Skipped] = deque()
        self._pending: list[tuple[_Reading, PreparedChunk]] = []
        self._rows = 0
        self._bytes = 0
        self._cost = 0  # the classification cost of what is waiting (see matching.bounded_pieces)
        self._pooled: list[tuple[_Reading, _Framed | _Whole]] = []  # whole files prepared together (see _pool)
        self._pooled_rows = 0

    def done(self, result: FileRead | Skipped) -> None:
        """A file's result that needs no block read, in its place in the order."""
        self._results.append(result)

    def read(self, reading: _Reading, on_bytes: Callable[[SourceFile, int], None] | None) -> None:
        """Read every block of a file, finishing the batch whenever it is full."""
        assert reading.stream is not None
        self._results.append(reading)
        result = reading.result
        with reading.stream:

            def framed_blocks() -> Iterator[_Framed | _Whole]:
                assert reading.stream is not None
                source_blocks = blocks(reading.stream, result.source.path, result.warnings, end=reading.end)
                held = _HeldRepeats(reading)  # consecutive blocks with a loop's repeats set aside
                try:
                    block = next(source_blocks, None)
                    while block is not None:
                        if on_bytes is not None:
                            on_bytes(result.source, len(block))
                        if result.lines_read or len(block) > WHOLE_MAX_BYTES:  # not a small file whole
                            yield from held.take(_frame(reading, block, last=False))
                            block = next(source_blocks, None)
                            continue
                        try:  # the next block is read first: is this small one the whole file?
                            following = next(source_blocks, None)
                        except READ_ERRORS:  # this one is the last read: taken, then the error said
                            yield from held.take(_frame(reading, block, last=True))
                            raise
                        yield from held.take(_frame(reading, block, last=following is None))
                        block = following
                except READ_ERRORS:  # what was held before it is taken first
                    yield from held.release()
                    raise
                yield from held.release()

            self._take(reading, framed_blocks())
        self._end(reading, reading.stream.notes if isinstance(reading.stream, InflateStream) else [])

    def read_scanned(self, reading: _Reading, scanned: ScannedFile,
                     kept_lines: list[pl.DataFrame | None] | None = None) -> bool:
        """Take a file that went through the byte pass (:mod:`logscope.ingest.scanning`) as
        :meth:`read` takes its blocks (``kept_lines``: its blocks' kept lines already read, see
        _kept_lines_of); False, with nothing taken, when a block's kept lines do not read back as
        the pass counted them (never seen: the caller reads the file the usual way)."""
        first_line = 0
        framed: list[tuple[pl.DataFrame, int, int, int]] = []  # lines, how many read, set aside, kept bytes
        for n, block in enumerate(scanned.blocks):
            if block.reduced is None:  # kept whole (its last): read as _frame reads a block
                assert block.whole is not None
                lines = lines_frame(block.whole, first_line, unit_separator=block.unit_separator)
                framed.append((lines, lines.height, 0, len(block.whole)))
                first_line += lines.height
                continue
            kept = kept_lines[n] if kept_lines is not None else _kept_lines(block.reduced, first_line)
            if kept is None:
                return False
            framed.append((kept, block.reduced.lines_read, block.reduced.set_aside, len(block.reduced.kept)))
            first_line += block.reduced.lines_read
        self._results.append(reading)
        reading.result.warnings.extend(scanned.warnings)
        self._take(reading, (
            _framed(reading, lines, read, set_aside, size, block.size, block.carriage_return, block.reduced is not None)
            for block, (lines, read, set_aside, size) in zip(scanned.blocks, framed, strict=True)))
        if scanned.error is not None:
            self._stopped(reading, scanned.error)
        self._end(reading, scanned.notes)
        return True

    def _take(self, reading: _Reading, framed_blocks: Iterator[_Framed | _Whole]) -> None:
        """Prepare a file's framed blocks into the batch, in order; a read error that stops them is
        said, and what came before it kept. A small file read whole in one block, or all of whose
        blocks were prefiltered, joins the pool (see _pool)."""
        carry_time: datetime | None = None
        held: _Framed | None = None  # prefiltered blocks not prepared yet
        plain: _Framed | None = None  # a block that was not, prepared when the next one comes
        # held or plain is all the file (nothing prepared before): it may join the pool (not a
        # piece's: the pool's prepare gives no times to carry across the pieces' cuts)
        whole = not reading.piece
        try:
            for framed in framed_blocks:
                if isinstance(framed, _Whole):  # the file's only block (see _frame)
                    self._pool(reading, framed)
                    continue
                if plain is not None:
                    carry_time, plain, whole = self._prepare(reading, plain, carry_time), None, False
                # What is left of prefiltered blocks is prepared a few blocks at a time: a prepare
                # costs ~20 ms whatever its lines, and those are few. Not a block whose progress
                # lines were set aside: it keeps its first lines, and its wrappers are learned
                # from those, as they are without it.
                if framed.prefiltered and not framed.progress:
                    held = framed if held is None else held.joined(framed)
                    if held.lines.height >= HELD_ROWS:
                        carry_time, held, whole = self._prepare(reading, held, carry_time), None, False
                    continue
                if held is not None:
                    carry_time, held, whole = self._prepare(reading, held, carry_time), None, False
                plain = framed
        except READ_ERRORS as error:
            self._stopped(reading, describe_error(error))
        if plain is not None and whole and plain.lines.height <= COLL_ASIDE_MIN_LINES:
            self._pool(reading, plain)  # small: prepared alone, it would set no line aside either
        elif plain is not None:
            self._prepare(reading, plain, carry_time)
        elif held is not None and whole:
            self._pool(reading, held)
        elif held is not None:
            self._prepare(reading, held, carry_time)

    @staticmethod
    def _stopped(reading: _Reading, why: str) -> None:
        reading.stopped = True
        reading.result.warnings.append(f"stopped reading after line {reading.result.lines_read}: {why}; "
                                       "the lines before it were analysed")

    @staticmethod
    def _end(reading: _Reading, notes: list[str]) -> None:
        """What is said of a file once all its blocks are taken: the decompressor's notes, the lines
        cut for matching."""
        reading.result.warnings.extend(notes)
        _say_cut(reading)

    def _prepare(self, reading: _Reading, framed: _Framed, carry_time: datetime | None) -> datetime | None:
        """Take ``framed`` as far as it goes alone, into the batch (finished when full); return the
        time it hands to the next block."""
        # Setting COLL and progress lines aside early pays on big blocks only; in a small one it
        # costs more than classifying them (thinning drops them just the same).
        big = framed.lines.height > COLL_ASIDE_MIN_LINES
        prepared = prepare_chunk(framed.lines, reading.year, carry_time,
                                 coll_keep=(COLL_HEAD, COLL_TAIL) if big else None,
                                 carriage_returns=framed.carriage_returns, join_wraps=not framed.prefiltered,
                                 set_aside_before=framed.set_aside,
                                 # (a progress block's progress lines were set aside already: the
                                 # few it kept beyond a process's ends are thinned as its events)
                                 progress_keep=(COLL_HEAD, PROGRESS_TAIL) if big and not framed.progress else None,
                                 channels_aside=big,
                                 repeat_keep=(LOOP_KEEP, LOOP_KEEP) if big and not framed.repeats_looked else None,
                                 wordings=compiled.scanner.wordings if compiled.COMPILED else None,
                                 repeated=framed.repeated)
        self._enqueue(reading, bounded_pieces(prepared), framed.size)
        return prepared.last_time

    def _pool(self, reading: _Reading, framed: _Framed | _Whole) -> None:
        """A whole file (all prefiltered, or small), prepared later with others of the same
        reference year (lines.prepare_files): its few lines cost a prepare's fixed cost (~5-20 ms)
        once for many files: a job of many small files, or many jobs (logscope scan)."""
        if self._pooled and self._pooled[0][0].year != reading.year:
            self._flush_pool()
        reading.waiting += 1  # not ready before its pool is prepared
        self._pooled.append((reading, framed))
        self._pooled_rows += framed.lines if isinstance(framed, _Whole) else framed.lines.height
        if self._pooled_rows >= HELD_ROWS:
            self._flush_pool()

    def _flush_pool(self) -> None:
        pooled = _split_whole(self._pooled)
        self._pooled, self._pooled_rows = [], 0
        if not pooled:
            return
        prepared = prepare_files([framed.lines for _, framed in pooled], [framed.set_aside for _, framed in pooled],
                                 pooled[0][0].year,
                                 carriage_returns=any(framed.carriage_returns for _, framed in pooled),
                                 join_wraps=[not framed.prefiltered for _, framed in pooled],
                                 repeated=[framed.repeated if isinstance(framed, _Framed) else None
                                           for _, framed in pooled])
        for (reading, framed), pieces in zip(pooled, bounded_pieces_each(prepared), strict=True):
            reading.waiting -= 1
            self._enqueue(reading, pieces, framed.size)

    def _enqueue(self, reading: _Reading, pieces: list[tuple[PreparedChunk, int]], size: int) -> None:
        """A prepared chunk's pieces (matching.bounded_pieces) into the batch; the batch finished
        when full."""
        for piece, cost in pieces:
            if self._pending and self._cost + cost > CLASSIFY_BYTES:
                self.finish()
            self._pending.append((reading, piece))
            reading.waiting += 1
            self._rows += piece.candidates.height
            self._cost += cost
        # What waits is the candidates of what was framed: a prefiltered block's kept lines only,
        # so that the blocks of a COLL-heavy job share a few classify calls.
        self._bytes += size
        if self._rows >= BATCH_ROWS or self._bytes >= BATCH_BYTES:
            self.finish()

    def finish_all(self) -> None:
        """Prepare the pool and classify everything waiting: the end of the files."""
        self._flush_pool()
        self.finish()

    def finish(self) -> None:
        """Classify every block waiting."""
        chunks = finish_chunks([prepared for _, prepared in self._pending])
        for (reading, _), chunk in zip(self._pending, chunks, strict=True):
            reading.add(chunk)
        self._pending, self._rows, self._bytes, self._cost = [], 0, 0, 0

    def ready(self) -> Iterator[FileRead | Skipped]:
        """The results at the front that are complete, in order (finished together: a job's small
        files are all complete at its end)."""
        done: list[_Reading | FileRead | Skipped] = []
        while self._results and not (isinstance(self._results[0], _Reading) and self._results[0].waiting):
            done.append(self._results.popleft())
        _Reading.finish([result for result in done if isinstance(result, _Reading)])
        yield from (result.result if isinstance(result, _Reading) else result for result in done)


@dataclass
class PieceRead:
    """What :func:`read_piece` read of a piece of a file, for :func:`merge_pieces`: its events
    thinned by the rules of each process (thin_parts), not yet completed, the lines of the file
    up to its end, those recognised in it, what was said of it (but the lines cut for matching:
    ``cut``), its first and last time, and whether a read error stopped it."""

    events: pl.DataFrame
    lines_read: int
    lines_recognised: int
    warnings: list[str]
    cut: int
    first_time: datetime | None
    last_time: datetime | None
    stopped: bool


def read_piece(piece: Piece) -> PieceRead | FileRead | Skipped:
    """One piece of a big file (:mod:`logscope.ingest.pieces`), read as its file's blocks are, its
    lines numbered after ``piece.first_line``. The first piece is checked as a file is (what
    :func:`read_file` gives for a file that cannot be read, binary or empty comes back instead);
    the others are read from their start."""
    assert piece.first_line is not None
    opened = _start_reading(piece.source)
    if not isinstance(opened, _Reading):
        return opened
    assert isinstance(opened.stream, io.BufferedReader)  # a plain file: pieces are of no other
    opened.piece = True
    opened.end = piece.end if piece.index < piece.count - 1 else None
    if piece.index:
        try:
            opened.stream.seek(piece.start)
        except OSError as error:
            opened.stream.close()
            return Skipped(piece.source.display, f"cannot read ({describe_error(error)})")
        opened.stream._logscope_head = b""  # type: ignore[attr-defined]  # (the sniffed head is the first piece's)
        opened.result.warnings.clear()  # (a hole at the file's start: the first piece says it)
        opened.result.lines_read = piece.first_line
    batch = _Batch()
    batch.read(opened, None)
    batch.finish_all()  # every block classified into opened.parts: the file's steps are merge_pieces'
    events = thin_parts(opened.parts, PARTS_MAX_ROWS) if opened.parts else _no_events()
    return PieceRead(events, opened.result.lines_read, opened.result.lines_recognised, opened.result.warnings,
                     opened.cut, opened.first_time, opened.last_time, opened.stopped)


def merge_pieces(source: SourceFile, reads: Sequence[PieceRead | FileRead | Skipped]) -> FileRead | Skipped:
    """A file's result from its pieces' (:func:`read_piece`, in order), as reading it whole gives
    it: a first piece that could not be read is the file's result; the pieces after one a read
    error stopped are not taken (the lines before it were analysed, as a read of the whole file
    stops there). Each piece's events are given the times a read of the whole would have carried
    across its cut (:meth:`_Reading.add`, _candidates' carried time), then thinned and completed
    together, as a file's are."""
    first = reads[0]
    if not isinstance(first, PieceRead):
        return first
    taken: list[PieceRead] = []
    warnings: list[str] = []
    for read in reads:
        if not isinstance(read, PieceRead):  # (a later piece could not be opened: shrunk, removed)
            why = read.reason if isinstance(read, Skipped) else "the file changed while it was read"
            warnings.append(f"stopped reading after line {taken[-1].lines_read}: {why}; "
                            "the lines before it were analysed")
            break
        taken.append(read)
        if read.stopped:
            break
    frames: list[pl.DataFrame] = []
    carried: datetime | None = None  # the last time of the pieces before: their untimed lines' time
    for read in taken:
        if read.first_time is not None:  # as a chunk's gives the chunks before theirs (_Reading.add)
            frames = _latest_below(frames, read.first_time)
        events = read.events
        if carried is not None and events.height and events["time"].null_count():
            events = events.with_columns(pl.col("time").fill_null(pl.lit(carried, dtype=pl.Datetime("us"))))
        frames.append(events)
        carried = read.last_time or carried
    events = completed(thin_each([pl.concat(frames)]), [source])[0]
    said = list(dict.fromkeys(warning for read in taken for warning in read.warnings))  # (each once)
    cut = sum(read.cut for read in taken)
    return FileRead(source, events, lines_read=taken[-1].lines_read,
                    lines_recognised=sum(read.lines_recognised for read in taken),
                    warnings=[*said, *([_cut_warning(cut)] if cut else []), *warnings])


def _start_reading(source: SourceFile) -> _Reading | FileRead | Skipped:
    """A file opened and checked, ready for its blocks; or what it gives without them (an error
    file, an empty file) or why it is skipped."""
    if source.info.kind == "torchrun-error":
        return _read_error_json(source)
    try:
        stream = open_source(source)
    except OSError as error:
        return Skipped(source.display, f"cannot open ({error.strerror or error})")
    try:
        head = peek(stream)
    except READ_ERRORS as error:
        stream.close()
        return Skipped(source.display, f"cannot read ({describe_error(error)})")
    if not head:
        stream.close()
        return FileRead(source, _no_events(), warnings=["empty file"])
    hole = 0
    if head == bytes(len(head)):  # a hole first (logrotate's copytruncate): the lines after it count
        try:
            hole, head = skip_leading_hole(stream, source.path, head)
        except READ_ERRORS as error:
            stream.close()
            return Skipped(source.display, f"cannot read ({describe_error(error)})")
        if not head:
            stream.close()
            return Skipped(source.display, "only NUL bytes (a hole), not a text log")
    if looks_binary(head):
        stream.close()
        return Skipped(source.display, "binary data, not a text log")
    reading = _Reading(source, stream, reference_year(head, source.path))
    if hole:
        reading.result.warnings.append(f"{hole:,} NUL bytes at its start skipped (a hole, as logrotate's "
                                       "copytruncate leaves); the lines after it were read")
    return reading


def _read_error_json(source: SourceFile) -> FileRead | Skipped:
    """torchrun's error.json: one event with the child's exception and its timestamp."""
    try:
        with open_source(source) as stream:
            data = json.loads(stream.read(MAX_LINE_BYTES).decode("utf-8", "replace"))
    except READ_ERRORS as error:
        return Skipped(source.display, f"not a torchrun error file ({describe_error(error)})")
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
    events = completed([pl.DataFrame([row], schema=EVENT_COLUMNS)], [source])[0]
    return FileRead(source, events, lines_read=1, lines_recognised=1)
