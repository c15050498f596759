"""Following a running job's files: at each look, the whole lines each file gained since the last
one, every byte read once.

* Files are found again at every look (:class:`Follower`'s ``find``: a folder walked as
  ``analyze`` walks it, or the files a SLURM job's output patterns name): a new file is followed
  from its first byte.
* A file is followed by its inode through a descriptor opened read-only (no lock, no write, its
  times untouched). It grows: the bytes after what was read, up to its last newline, are read (a
  line still being written waits for its newline, unless it grows past
  :data:`~logscope.ingest.blocks.MAX_LINE_BYTES`, where it is cut as ``analyze`` cuts it).
* Rotation (the file renamed, a new one at its path): the old inode is read to its end through the
  descriptor already open, and goes on being read while a writer still holds it; it is then
  known by its new name when a look finds it, and the new file is followed from its first byte.
* Truncation (``logrotate``'s ``copytruncate``; the file is now shorter than what was read): what
  was read of it becomes a file of its own ("before truncation"), and the file is read again from
  its start. NUL bytes (the hole a writer without ``O_APPEND`` leaves) are dropped.
* A compressed file (``.gz``, ``.zst``) may still be being written: it is read once, whole, when its
  size did not change between two looks and it decompresses to its end.

Each :class:`Piece` says when its lines were written, as well as a look can tell: after the
file's previous look (they were not there), and no later than this look (or the file's
modification time, when that is earlier and after the previous look).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from logscope.errors import LogscopeError, printable
from logscope.ingest.blocks import MAX_LINE_BYTES, SNIFF_BYTES, looks_binary, without_nul
from logscope.ingest.compression import READ_ERRORS, describe_error, open_source
from logscope.ingest.discovery import SourceFile

# At most this much is read at one look, of all files together (the rest at the next look, which
# comes at once: Looked.behind): what a look holds stays bounded when a watch starts on big files
# or a job writes fast. Files are read in turn, each look starting where the last one stopped.
READ_BYTES = 8 * 1024 * 1024
ARCHIVE_BLOCK_BYTES = 32 * 1024 * 1024  # a complete compressed file is read whole, in pieces of this
# A rotated file (its path now names another) that has not grown for this long, and that no look
# finds under a new name, is let go.
LET_GO_AFTER_S = 600.0


@dataclass(frozen=True)
class Piece:
    """Whole lines a file gained since the previous look."""

    file_id: int  # one followed file: an inode, and a new one after each truncation
    source: SourceFile  # its name (``display``) and what its name says
    data: bytes  # whole lines, each ending with a newline; NUL bytes dropped
    first_line: int  # the lines of the file before these
    written_after: float | None  # these bytes were not there then (the file's previous look); None: first look
    seen: float  # and were there by then


@dataclass
class Looked:
    """What one look found: new lines, files renamed (a rotation, a truncation), files it cannot
    read (each said once)."""

    pieces: list[Piece] = field(default_factory=list)
    renamed: dict[int, SourceFile] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    behind: bool = False  # some file has more to read than this look took (READ_BYTES): look again now


@dataclass
class _Tail:
    """One plain file being followed."""

    file_id: int
    source: SourceFile
    fd: int
    key: tuple[int, int]
    offset: int = 0  # bytes read (whole lines)
    lines: int = 0  # lines read
    last_look: float | None = None  # when it was last read
    grew: float = 0.0  # when it last grew
    truncations: int = 0
    found: bool = True  # the last look found it by a name
    rotated: bool = False  # its path names another file now, and no look found it by a new name


@dataclass
class _Archive:
    """A compressed file, read once it is complete."""

    file_id: int
    source: SourceFile
    size: int = -1  # its size at the previous look
    done: bool = False


class Follower:
    """The files of a running job, looked at again and again (see the module docstring).

    ``find`` lists the job's files at each look (an error, a folder gone, counts as none found
    this time); ``clock`` gives the time (seconds since the epoch).
    """

    def __init__(self, find: Callable[[], Sequence[SourceFile]], clock: Callable[[], float] = time.time) -> None:
        self._find = find
        self._clock = clock
        self._tails: dict[tuple[int, int], _Tail] = {}
        self._archives: dict[tuple[int, int], _Archive] = {}
        self._ignored: set[tuple[int, int]] = set()
        self._next_id = 0
        self._first = 0  # the file read first at the next look (files take turns when a look is full)
        self.looks = 0

    @property
    def files(self) -> int:
        """How many files are followed (plain and compressed)."""
        return len(self._tails) + len(self._archives)

    def look(self) -> Looked:
        """Read what every file gained since the previous look."""
        looked = Looked()
        now = self._clock()
        self.looks += 1
        try:
            found = list(self._find())
        except (LogscopeError, OSError):
            found = []  # a folder gone for a moment, a job's record not answering: the next look sees
        at_path: dict[Path, tuple[int, int]] = {}
        for tail in self._tails.values():
            tail.found = False
        for source in found:
            try:
                status = source.path.stat()
            except OSError:
                continue
            key = (status.st_dev, status.st_ino)
            at_path[source.path] = key
            if key in self._ignored:
                continue
            if source.compression is not None:
                if key not in self._archives:
                    self._archives[key] = _Archive(self._new_id(), source)
                continue
            known = self._tails.get(key)
            if known is None:
                self._start(source, key, looked)
                continue
            known.found = True
            if known.source.path != source.path:  # renamed (rotated): known by its new name now
                known.source, known.rotated = source, False
                looked.renamed[known.file_id] = source
        tails = list(self._tails.items())
        self._first = self._first % len(tails) if tails else 0
        budget = [READ_BYTES]
        for key, tail in tails[self._first:] + tails[:self._first]:
            moved = at_path.get(tail.source.path) not in (None, key)
            if moved and not tail.found and not tail.rotated:  # rotated away, its new name not found
                tail.rotated = True
                tail.source = replace(tail.source, display=f"{tail.source.display} (rotated)")
                looked.renamed[tail.file_id] = tail.source
            self._read(tail, now, looked, budget)
            if not tail.found and now - tail.grew > LET_GO_AFTER_S:
                self._let_go(key)
        self._first += 1
        for archive in self._archives.values():
            self._read_archive(archive, now, looked)
        return looked

    def close(self) -> None:
        for key in list(self._tails):
            self._let_go(key)

    # -- plain files ------------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _start(self, source: SourceFile, key: tuple[int, int], looked: Looked) -> None:
        try:
            fd = os.open(source.path, os.O_RDONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError as error:
            self._ignored.add(key)
            looked.notes.append(f"{source.display}: cannot read ({error.strerror or error})")
            return
        try:
            status = os.fstat(fd)
            head = os.pread(fd, SNIFF_BYTES, 0)
        except OSError as error:
            os.close(fd)
            self._ignored.add(key)
            looked.notes.append(f"{source.display}: cannot read ({error.strerror or error})")
            return
        if head and looks_binary(head):
            os.close(fd)
            self._ignored.add(key)
            looked.notes.append(f"{source.display}: binary data, not a text log")
            return
        self._tails[(status.st_dev, status.st_ino)] = _Tail(self._new_id(), source, fd,
                                                            (status.st_dev, status.st_ino))

    def _read(self, tail: _Tail, now: float, looked: Looked, budget: list[int]) -> None:
        try:
            status = os.fstat(tail.fd)
        except OSError:
            return
        if status.st_size < tail.offset:  # truncated: what was read is a file of its own now
            tail.truncations += 1
            before = replace(tail.source, display=f"{tail.source.display} (before truncation {tail.truncations})")
            looked.renamed[tail.file_id] = before
            tail.file_id = self._new_id()
            tail.offset = tail.lines = 0
            tail.last_look = None
        if status.st_size == tail.offset:
            tail.last_look = now
            return
        if budget[0] <= 0:
            looked.behind = True
            return  # this look is full: next look (its lines will not have been seen any earlier)
        want = status.st_size - tail.offset
        if want > budget[0]:
            looked.behind = True
        try:
            data = os.pread(tail.fd, min(want, budget[0]), tail.offset)
            if b"\n" not in data and len(data) < min(want, MAX_LINE_BYTES + 1):
                if budget[0] < READ_BYTES:
                    return  # what is left of this look's budget holds no whole line: next look
                data = os.pread(tail.fd, min(want, MAX_LINE_BYTES + 1), tail.offset)  # a line longer than a look
            after = os.fstat(tail.fd)
        except OSError as error:
            looked.notes.append(f"{tail.source.display}: cannot read ({error.strerror or error})")
            return
        end = data.rfind(b"\n") + 1
        if end == 0 and len(data) < MAX_LINE_BYTES:
            return  # a line still being written
        whole = data[:end] if end else data[:MAX_LINE_BYTES] + b"\n"
        consumed = end if end else MAX_LINE_BYTES
        lines = without_nul(whole)
        count = lines.count(b"\n")
        written_after = tail.last_look
        seen = min(now, after.st_mtime)
        if written_after is not None and seen < written_after:
            seen = now  # a clock that disagrees (a file server's): the look's own time
        looked.pieces.append(Piece(tail.file_id, tail.source, lines, tail.lines, written_after, seen))
        budget[0] -= consumed
        tail.offset += consumed
        tail.lines += count
        if want <= len(data):  # all the file held was taken: what comes next was written after now
            tail.last_look = now
        tail.grew = now

    def _let_go(self, key: tuple[int, int]) -> None:
        tail = self._tails.pop(key)
        with contextlib.suppress(OSError):
            os.close(tail.fd)

    # -- compressed files -------------------------------------------------------------------

    def _read_archive(self, archive: _Archive, now: float, looked: Looked) -> None:
        if archive.done:
            return
        try:
            size = archive.source.path.stat().st_size
        except OSError:
            return
        stable, archive.size = size == archive.size, size
        if not stable or not _complete(archive.source):
            return
        archive.done = True
        first_line = 0
        try:
            with open_source(archive.source) as stream:
                rest = b""
                while True:
                    block = stream.read(ARCHIVE_BLOCK_BYTES)
                    data = rest + block
                    end = data.rfind(b"\n") + 1 if block else len(data)
                    whole, rest = data[:end], data[end:]
                    if whole:
                        if not whole.endswith(b"\n"):
                            whole += b"\n"
                        lines = without_nul(whole)
                        looked.pieces.append(Piece(archive.file_id, archive.source, lines, first_line, None,
                                                   min(now, archive.source.path.stat().st_mtime)))
                        first_line += lines.count(b"\n")
                    if not block:
                        break
        except READ_ERRORS as error:
            looked.notes.append(f"{archive.source.display}: {describe_error(error)}")


def _complete(source: SourceFile) -> bool:
    """Whether a compressed file decompresses to its end (a file still being written does not)."""
    try:
        with open_source(source) as stream:
            while stream.read(ARCHIVE_BLOCK_BYTES):
                pass
    except READ_ERRORS:
        return False
    return True


def described(paths: Sequence[SourceFile]) -> str:
    """A short list of file names for a message."""
    return ", ".join(printable(source.display) for source in paths[:3]) + (" ..." if len(paths) > 3 else "")


__all__ = ["LET_GO_AFTER_S", "READ_BYTES", "Follower", "Looked", "Piece", "described"]
