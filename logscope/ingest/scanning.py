"""The byte pass over a COLL-heavy file, without polars: what a read worker does with each file first.

A log written with ``NCCL_DEBUG_SUBSYS=COLL`` is almost all NCCL COLL lines that the thinning drops
(:mod:`logscope.ingest.coll_prefilter`). :func:`scan_file` takes a file through the compiled scanner
alone: blocks cut at newlines, their control bytes, the surplus COLL lines dropped (those of each
block, then those the other blocks make surplus: :func:`~logscope.ingest.coll_prefilter.drop_surplus_across`).
When every block of the file is reduced that way (but for small last blocks, as a file may end with, kept
whole), what is left (a few per cent of its bytes, numbered as in the file) goes to the main
process, which parses it together with the kept lines of the job's other such files
(:func:`logscope.ingest.reading.read_in_order`). A worker then never loads polars (~0.3 s of a core
each), and the parse's fixed costs are paid once for the job rather than in every worker.

A file the pass cannot take whole (too small to scan, not COLL-heavy, binary, a hole first, a
torchrun error file, no compiled scanner) gives None: it is read the usual way, in polars. Both ways
give the same events (``tests/test_scanning.py``).

This module, and everything it imports, loads no polars (a test holds it to that).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from logscope.ingest import compiled
from logscope.ingest.blocks import blocks, control_bytes, looks_binary, peek, without_escapes, without_nul
from logscope.ingest.coll_prefilter import Reduced, drop_surplus_across, reduce_block
from logscope.ingest.compression import READ_ERRORS, InflateStream, describe_error, open_source
from logscope.ingest.discovery import SourceFile
from logscope.parsers.time_forms import FULL_DATE_BYTES, MLLOG_TIME_MS_BYTES

# A file whose kept lines pass this is read the usual way: what a worker holds and hands over for
# one file stays bounded (a COLL-heavy file keeps well under 1% of its bytes).
MAX_KEPT_BYTES = 64 * 1024 * 1024
# A block the scanner does not reduce (too small, too few lines) is kept whole up to this size.
WHOLE_MAX_BYTES = 4 * 1024 * 1024

_FULL_DATE = re.compile(FULL_DATE_BYTES)
_MLLOG_TIME_MS = re.compile(MLLOG_TIME_MS_BYTES)


@dataclass
class ScannedBlock:
    """One block of a file after the byte pass: its kept lines, or the block itself."""

    reduced: Reduced | None  # its kept lines
    whole: bytes | None  # the block, when the scanner did not reduce it (NUL bytes left out)
    size: int  # its bytes (NUL bytes left out), as the usual way measures it
    carriage_return: bool  # some line of it holds '\r'
    unit_separator: bool  # some line of it holds 0x1f

    @property
    def kept_bytes(self) -> int:
        return len(self.reduced.kept) if self.reduced is not None else len(self.whole or b"")


@dataclass
class ScannedFile:
    """A file every block of which the byte pass reduced: what the main process needs to parse it."""

    source: SourceFile
    year: int  # for timestamps without one (see reference_year)
    blocks: list[ScannedBlock]
    warnings: list[str] = field(default_factory=list)  # what cutting it into blocks found, in order
    error: str | None = None  # what stopped the reading early (the blocks before it were kept)
    notes: list[str] = field(default_factory=list)  # the decompressor's, for a compressed file

    @property
    def kept_bytes(self) -> int:
        return sum(block.kept_bytes for block in self.blocks)


def scan_file(source: SourceFile) -> ScannedFile | None:
    """``source`` after the byte pass, or None when it must be read the usual way (see the module's
    docstring). Nothing is ever written; a file that cannot be opened or read gives None, and the
    usual way says why."""
    if not compiled.COMPILED or source.info.kind == "torchrun-error":
        return None
    try:
        stream = open_source(source)
    except OSError:
        return None
    with stream:
        try:
            head = peek(stream)
        except READ_ERRORS:
            return None
        if not head or head == bytes(len(head)) or looks_binary(head):
            return None
        scanned = ScannedFile(source, reference_year(head, source.path), [])
        lines = kept = 0
        try:
            # Mapped, not copied (blocks' mapped=True): no view of a block outlives the next one. The
            # blocks are those the usual way reads (bigger ones keep fewer lines but read otherwise
            # than the usual way in edge cases: carriage returns at a block's end).
            for block in blocks(stream, source.path, scanned.warnings, mapped=True):
                controls = control_bytes(block)
                if controls.nul:
                    block = without_nul(bytes(block))
                if controls.escape:
                    block = without_escapes(block)
                # A block kept whole is counted in lines where the main process reads it: the lines
                # of the blocks after it cannot be numbered here, and those are kept whole too.
                whole_before = bool(scanned.blocks) and scanned.blocks[-1].whole is not None
                reduced = None if whole_before else reduce_block(block, lines, controls, with_groups=True)
                if reduced is None and len(block) > WHOLE_MAX_BYTES:
                    return None
                taken = ScannedBlock(reduced, bytes(block) if reduced is None else None, len(block),
                                     controls.carriage_return, controls.unit_separator)
                kept += taken.kept_bytes
                if kept > MAX_KEPT_BYTES:
                    return None
                scanned.blocks.append(taken)
                lines += 0 if reduced is None else reduced.lines_read
        except READ_ERRORS as error:
            scanned.error = describe_error(error)
        if isinstance(stream, InflateStream):
            scanned.notes.extend(stream.notes)
    if not any(block.reduced is not None for block in scanned.blocks):
        return None
    # The file's blocks all scanned: a block's last COLL lines of a group that goes on after it
    # (and its first, after it began before) are surplus too (coll_prefilter.drop_surplus_across).
    thinner = drop_surplus_across([taken.reduced for taken in scanned.blocks])
    for taken, reduced in zip(scanned.blocks, thinner, strict=True):
        taken.reduced = reduced
    return scanned


def reference_year(head: bytes, path: Path) -> int:
    """The year for timestamps that carry none (glog, syslog): the file's first date (a full date,
    or an MLPerf line's time_ms), else its modification time."""
    dated = _FULL_DATE.search(head)
    mllog = _MLLOG_TIME_MS.search(head, 0, dated.start() if dated else len(head))
    if mllog is not None:
        return datetime.fromtimestamp(int(mllog.group(1)) / 1000, tz=UTC).year
    if dated is not None:
        return int(dated.group(1))
    try:
        year = datetime.fromtimestamp(path.stat().st_mtime).year
    except (OSError, ValueError, OverflowError):
        return 1970
    return year if 1900 <= year <= 2999 else 1970  # as timestamps.py: no year close to datetime's limits


__all__ = ["MAX_KEPT_BYTES", "WHOLE_MAX_BYTES", "ScannedBlock", "ScannedFile", "reference_year", "scan_file"]
