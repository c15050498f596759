"""Cut a file's bytes into blocks that end at a newline (a block into a frame of lines: :mod:`.line_frames`).

* blocks hold about :data:`CHUNK_BYTES`, so memory does not grow with the file; a "line" longer
  than :data:`MAX_LINE_BYTES` is cut there and counted as several;
* a run of NUL bytes (a hole a crashed node left, a sparse file) is squeezed to one byte, and a
  sparse file's hole is skipped with ``SEEK_DATA``, so line numbers do not change;
* bytes are decoded as UTF-8 with replacement characters, never rejected;
* a file whose first :data:`SNIFF_BYTES` look binary is not a text log (:func:`looks_binary`);
* for the byte pass (:mod:`.scanning`), a plain file's blocks can be its pages mapped, not copied
  (``mapped=True``; see :func:`_mapped_block`).
"""

from __future__ import annotations

import codecs
import errno
import io
import mmap
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, NamedTuple, overload

from logscope.ingest import compiled
from logscope.ingest.compression import READ_ERRORS, InflateStream

CHUNK_BYTES = 32 * 1024 * 1024
MAX_LINE_BYTES = 8 * 1024 * 1024
SNIFF_BYTES = 8192
NUL_RUN = 4096  # NUL bytes in a row beyond this are a hole in the file, not text
PROBE_BYTES = 64 * 1024  # where a plain file's next block is cut at a newline before it is read


def peek(stream: io.BufferedIOBase | InflateStream) -> bytes:
    """The first bytes of the (decompressed) stream, pushed back for the block reader."""
    head = stream.read(SNIFF_BYTES)
    stream._logscope_head = head  # type: ignore[union-attr]
    return head


def skip_leading_hole(stream: io.BufferedIOBase | InflateStream, path: Path, head: bytes) -> tuple[int, bytes]:
    """After a ``head`` (see :func:`peek`) made only of NUL bytes, as logrotate's copytruncate
    leaves in front of what the writer adds next: skip the NUL bytes (a sparse file's hole by
    ``SEEK_DATA``, at disk speed otherwise) and return how many were skipped and the new head, the
    first bytes after them (empty when the file holds nothing else)."""
    skipped = len(head)
    while True:
        if isinstance(stream, io.BufferedReader):
            here = stream.tell()
            there = _next_data(path, here)
            if there is not None and there > here:
                stream.seek(there)
                skipped += there - here
        data = stream.read(1024 * 1024)
        if not data:
            stream._logscope_head = b""  # type: ignore[union-attr]
            return skipped, b""
        rest = data.lstrip(b"\0")
        skipped += len(data) - len(rest)
        if rest:
            if len(rest) < SNIFF_BYTES:
                rest += stream.read(SNIFF_BYTES - len(rest))
            stream._logscope_head = rest  # type: ignore[union-attr]
            return skipped, rest


@overload
def blocks(stream: io.BufferedIOBase | InflateStream, path: Path, warnings: list[str],
           mapped: Literal[False] = False, end: int | None = None) -> Iterator[bytes]: ...
@overload
def blocks(stream: io.BufferedIOBase | InflateStream, path: Path, warnings: list[str],
           mapped: Literal[True], end: int | None = None) -> Iterator[bytes | memoryview]: ...
def blocks(stream: io.BufferedIOBase | InflateStream, path: Path, warnings: list[str],
           mapped: bool = False, end: int | None = None) -> Iterator[bytes | memoryview]:
    """Blocks that end at a newline (the last one may not), each at most about CHUNK_BYTES, of the
    stream of the file at ``path``; what was cut or skipped is added to ``warnings``.

    ``mapped``: a plain file's block that needs no change (it ends at a newline and holds no hole
    at its ends: nearly all of them) is a read-only view of the file's pages (a memoryview), the
    same bytes at the same place, read with no copy (:func:`_mapped_block`). Only for readers that
    take any buffer and keep no view past the next block.

    ``end``: a plain file is read up to that byte only (a piece of it, :mod:`.pieces`: it ends at
    a newline), as if the file ended there."""
    pending: bytes = getattr(stream, "_logscope_head", b"")
    if pending and isinstance(stream, io.BufferedReader):
        # A plain file: the sniffed head (the bytes just before the position) is read again with
        # what follows, so that a block is the bytes read, not a copy of them joined to the head.
        try:
            stream.seek(-len(pending), io.SEEK_CUR)
            pending = b""
        except OSError:
            pass
    squeezed = 0
    size = _plain_size(stream)
    if end is not None and size is not None:
        size = min(size, end)
    while True:
        want = CHUNK_BYTES
        if size is not None and size - stream.tell() <= CHUNK_BYTES * 3 // 2:
            # The rest of a plain file, up to half a block more, in one block: every block costs
            # a fixed ~20 ms beyond its lines, and a small last block would cost it for little.
            want = max(CHUNK_BYTES, size - stream.tell() + 1)
        elif size is not None and not pending:
            want = _up_to_a_newline(stream, want)
        if mapped and size is not None and not pending:
            view = _mapped_block(stream, min(want, size - stream.tell()))
            if view is not None:
                yield view
                continue
        if end is not None:  # (at the end: nothing is read, and the loop ends)
            want = min(want, end - stream.tell())
        try:
            data = stream.read(want)
        except READ_ERRORS:  # damage: the lines before it, the last one cut short, still count
            if pending:
                yield pending
            _note_squeezed(squeezed, warnings)
            raise
        if not data:
            break
        if data[:1] == b"\0" or data[-1:] == b"\0":
            data, dropped = _squeeze_nul_runs(data)
            squeezed += dropped
            if data == b"\0" and isinstance(stream, io.BufferedReader):  # in a hole: jump to the data
                here = stream.tell()
                there = _next_data(path, here)
                if there is not None and end is not None:
                    there = min(there, end)
                if there is not None and there > here:
                    stream.seek(there)
                    squeezed += there - here
        cut = data.rfind(b"\n")
        if cut != -1:
            # One copy of the block, not two: the carried partial line joined to the new bytes up
            # to their last newline.
            if not pending:
                yield data if cut + 1 == len(data) else data[: cut + 1]  # a file's last block: no copy
            else:
                yield pending + memoryview(data)[: cut + 1]
            pending = data[cut + 1:]
            continue
        pending += data
        cut = pending.rfind(b"\n")  # only the sniffed head can hold one
        if cut == -1:
            if len(pending) > MAX_LINE_BYTES:
                split = f"a line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB was split"
                if split not in warnings:
                    warnings.append(split)
                yield pending + b"\n"
                pending = b""
            continue
        yield pending[: cut + 1]
        pending = pending[cut + 1:]
    if pending:
        yield pending
    _note_squeezed(squeezed, warnings)


def _up_to_a_newline(stream: io.BufferedIOBase | InflateStream, want: int) -> int:
    """How many bytes of a plain file to read from its position so that they end at a newline:
    ``want`` cut after the last newline of its last :data:`PROBE_BYTES` (looked at without moving
    the stream), or ``want`` itself when none is there. A block that ends at a newline as read is
    the bytes read, not a copy of them cut there."""
    if want <= 2 * PROBE_BYTES:
        return want
    try:
        tail = os.pread(stream.fileno(), PROBE_BYTES, stream.tell() + want - PROBE_BYTES)
    except (OSError, AttributeError, io.UnsupportedOperation):
        return want
    cut = tail.rfind(b"\n")
    return want if cut == -1 or len(tail) < PROBE_BYTES else want - PROBE_BYTES + cut + 1


def _mapped_block(stream: io.BufferedIOBase | InflateStream, want: int) -> memoryview | None:
    """The next ``want`` bytes of a plain file as a read-only view of its pages, the stream moved
    past them; None, the stream untouched, when they would not be a block as read (they do not end
    at a newline, or start with a NUL byte, which may begin a hole) or cannot be mapped.

    Reading copies every page, into memory the kernel must first clear and map unless a buffer is
    reused: 1 GB read and scanned by the byte pass costs the system 0.8 s of CPU with fresh
    buffers, 0.2-0.3 s with a read worker's (reused), 0.04 s mapped, for 0.5-0.8 s of the scanner's
    own; the scanner is no slower on mapped pages (measured 2026-12-04). A view keeps its pages
    mapped while it lives; the mapping goes with the last view of it. A file truncated while it
    is mapped kills the process that touches the lost pages (SIGBUS): only read workers map, and
    a file a worker did not return is read again by the main process (:mod:`.workers`)."""
    if want <= 0:
        return None
    try:
        here = stream.tell()
        if os.fstat(stream.fileno()).st_size < here + want:  # shrunk since: mapped, the lost pages would kill
            return None
        start = here - here % mmap.ALLOCATIONGRANULARITY
        pages = mmap.mmap(stream.fileno(), here - start + want, access=mmap.ACCESS_READ, offset=start)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
    view = memoryview(pages)[here - start:]
    if view[-1] != 0x0A or view[0] == 0:
        view.release()
        pages.close()
        return None
    stream.seek(here + want)
    return view


def _note_squeezed(squeezed: int, warnings: list[str]) -> None:
    if squeezed:
        warnings.append(f"{squeezed:,} NUL bytes skipped (a hole, as a node that crashed while writing "
                        "leaves); the lines around them were read")


def _plain_size(stream: io.BufferedIOBase | InflateStream) -> int | None:
    """The size of an uncompressed file being read; None for a decompressing stream."""
    if not isinstance(stream, io.BufferedReader):
        return None
    try:
        return os.fstat(stream.fileno()).st_size
    except OSError:
        return None


class Controls(NamedTuple):
    """Which control bytes a block holds: each changes how it is read."""

    nul: bool  # dropped (without_nul)
    carriage_return: bool  # a line holding one is split into segments
    unit_separator: bool  # 0x1f, the CSV reader's separator (lines_frame): a space instead
    escape: bool = False  # ESC: a terminal's escape sequences, dropped (without_escapes)


def control_bytes(block: bytes | memoryview) -> Controls:
    """What ``block`` holds of NUL, '\\r', 0x1f and ESC: one compiled pass when the scanner is
    built, else four byte searches (each a pass over the block)."""
    if compiled.COMPILED:
        found = compiled.scanner.controls(block)
        return Controls(bool(found & 1), bool(found & 2), bool(found & 4), bool(found & 8))
    return Controls(b"\0" in block, b"\r" in block, b"\x1f" in block, b"\x1b" in block)


def without_nul(block: bytes) -> bytes:
    """``block`` without NUL bytes: a crash leaves them in front of the next writer's text, where
    they would hide it from the patterns. Newlines are kept, and a last line made only of NUL
    bytes stays a line, so line numbers do not change."""
    if b"\0" not in block:
        return block
    kept = block.replace(b"\0", b"")
    if not block.endswith(b"\n") and (not kept or kept.endswith(b"\n")):
        kept += b"\0"
    return kept


# A terminal's escape sequences (ECMA-48): control sequences "ESC [ parameters intermediates final"
# (colours: "\x1b[1;31m", "\x1b[0m"; cursor moves), operating system commands "ESC ] ... BEL|ST"
# (a window title) and the two-byte escapes. A logger's colours or a terminal's redraws, never
# what a process said: a line that is coloured means what it means uncoloured.
_ESCAPE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[ -/]*[0-~])")


def without_escapes(block: bytes | memoryview) -> bytes:
    """``block`` (holding an ESC byte: :func:`control_bytes`) without terminal escape sequences;
    newlines are never part of one, so line numbers do not change."""
    return _ESCAPE.sub(b"", bytes(block))


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


def for_csv_reader(block: bytes | memoryview, unit_separator: bool | None = None,
                   first: bool = True) -> bytes | memoryview:
    """``block`` as :func:`~logscope.ingest.line_frames.lines_frame` reads it: 0x1f (its separator)
    a space, and in a file's ``first`` block its leading byte-order marks dropped (the reader drops
    one, and finds "no data" if that was all). A later block keeps them: a line that starts with
    one (files joined with ``cat``) reads the same wherever the blocks are cut (lines_frame keeps
    it from the reader). ``unit_separator``: whether the block holds 0x1f, when the caller knows
    (:func:`control_bytes`). A view (see :func:`blocks`) stays a view unless 0x1f must be replaced."""
    bom = codecs.BOM_UTF8
    while first and block[:len(bom)] == bom:
        block = block[len(bom):] or b"\n"
    if unit_separator if unit_separator is not None else b"\x1f" in bytes(block):
        block = bytes(block).replace(b"\x1f", b" ")
    return block


def looks_binary(head: bytes) -> bool:
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
