"""Open a log file as a stream of its (decompressed) bytes: ``.gz`` and ``.zst`` are inflated on
the fly, in bounded pieces, and a damaged archive hands out every byte decoded before the damage.

* Memory does not depend on what the archive inflates to: gzip is inflated at most
  :data:`PIECE_BYTES` per step, zstd one block (at most 128 KiB) per step, so a small file that
  inflates to many GB is read like a big plain file, never held whole.
* Damage keeps what came before it: a truncated archive, corrupt data in the middle, a wrong
  checksum, or garbage after the last member or frame (which ``zcat`` also ignores) give every
  line decoded before that point; the stream then ends, with :class:`TruncatedArchive` or
  :class:`DamagedArchive` raised on the read after the last good byte, or a note in
  :attr:`InflateStream.notes` when nothing was lost (trailing garbage).

:data:`READ_ERRORS` is what reading a damaged file can raise; each becomes a warning or a skipped
file, never a crash.
"""

from __future__ import annotations

import io
import os
import zlib
from collections.abc import Iterator

import zstandard

from logscope.ingest.discovery import SourceFile

# What reading a damaged file can raise; each becomes a warning or a skipped file, never a crash.
READ_ERRORS = (OSError, EOFError, zlib.error, ValueError, zstandard.ZstdError)

PIECE_BYTES = 1024 * 1024  # the most one gzip inflate step hands out
FEED_BYTES = 64 * 1024  # compressed bytes read at a time
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD_BLOCK_MAX = 128 * 1024  # RFC 8878: no block regenerates more than this


class TruncatedArchive(EOFError):
    """The compressed stream ended before its end marker."""


class DamagedArchive(ValueError):
    """The compressed stream holds bytes that cannot be decoded (the bytes before them were)."""


def open_source(source: SourceFile) -> io.BufferedReader | InflateStream:
    raw = source.path.open("rb")
    if source.compression == "gz":
        return InflateStream(raw, "gz")
    if source.compression == "zst":
        return InflateStream(raw, "zst")
    return raw


class InflateStream(io.RawIOBase):
    """A gzip or zstd file's decoded bytes, read in bounded pieces.

    ``read`` returns every byte decoded before a damage, and raises the damage
    (:class:`TruncatedArchive`, :class:`DamagedArchive`) on the next read, once they are all
    handed out. Python's ``gzip`` drops the data of a read that hits a damaged member, and
    zstandard's stream reader ends a truncated frame silently; a log cut short by a dying node is
    exactly that case, and its last lines are the interesting ones.
    """

    def __init__(self, raw: io.BufferedReader, kind: str) -> None:
        super().__init__()
        self._raw = raw
        self.notes: list[str] = []  # what was ignored without losing a line (trailing garbage)
        self._pieces = _gunzip(raw, self.notes) if kind == "gz" else _unzstd(raw, self.notes)
        self._left = b""
        self._error: BaseException | None = None

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = size if size >= 0 else 1 << 62
        parts = [self._left] if self._left else []
        have = len(self._left)
        while have < want and self._error is None:
            try:
                piece = next(self._pieces, None)
            except READ_ERRORS as damage:
                self._error = damage
                break
            if piece is None:
                break
            if not piece:
                continue
            parts.append(piece)
            have += len(piece)
        if not parts and self._error is not None:
            error, self._error = self._error, None
            self._pieces = iter(())  # the damage is said once; then the stream is at its end
            raise error
        data = b"".join(parts)
        out, self._left = (data, b"") if len(data) <= want else (data[:want], data[want:])
        return out

    def close(self) -> None:
        self._raw.close()
        super().close()


def _gunzip(raw: io.BufferedReader, notes: list[str]) -> Iterator[bytes]:
    """The decoded bytes of a gzip file (one or more members), at most PIECE_BYTES at a time."""
    member = zlib.decompressobj(16 + zlib.MAX_WBITS)
    fed = False  # whether the current member has had any input
    tail = b""  # input not yet given to the decoder
    offset = 0  # compressed bytes read before ``tail``
    while True:
        if not tail:
            tail = raw.read(FEED_BYTES)
            if not tail:
                if fed and not member.eof:
                    yield member.flush()  # what the decoder holds back (at most a match)
                    raise TruncatedArchive("compressed data ends early")
                return
        saved = member.copy()  # to go back to when this step meets damage
        try:
            out = member.decompress(tail, PIECE_BYTES)
        except zlib.error as error:
            yield from _gunzip_up_to(saved, tail, offset, error)
            return  # not reached: _gunzip_up_to raises
        fed = True
        # At the member's end the input left over is in unused_data (unconsumed_tail holds the
        # same bytes then).
        left = member.unused_data if member.eof else member.unconsumed_tail
        offset += len(tail) - len(left)
        tail = left
        if out:
            yield out
        if member.eof:
            while len(tail) < len(_GZIP_MAGIC) and (more := raw.read(FEED_BYTES)):
                tail += more
            if not tail:
                return
            if not tail.startswith(_GZIP_MAGIC):
                notes.append(f"{_rest_size(raw, tail):,} byte(s) after the end of the gzip data ignored")
                return
            member, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False


def _gunzip_up_to(member: zlib._Decompress, data: bytes, offset: int, error: zlib.error) -> Iterator[bytes]:
    """Feed ``data`` again a byte at a time to ``member`` (as it was before the failing step),
    handing out every byte decoded before the damage; then raise it as DamagedArchive."""
    pending: list[bytes] = []
    size = 0
    for i in range(len(data)):
        try:
            out = member.decompress(data[i:i + 1], PIECE_BYTES)
            while member.unconsumed_tail:
                pending.append(out)
                size += len(out)
                out = member.decompress(member.unconsumed_tail, PIECE_BYTES)
        except zlib.error as found:
            error, offset = found, offset + i
            break
        pending.append(out)
        size += len(out)
        if size >= PIECE_BYTES:
            yield b"".join(pending)
            pending, size = [], 0
        if member.eof:  # cannot happen before the damage; stop rather than read past it
            offset += i
            break
    yield b"".join(pending)
    raise DamagedArchive(f"damaged gzip data at byte {offset:,} ({_zlib_reason(error)})")


def _zlib_reason(error: zlib.error) -> str:
    text = str(error)
    return text.split(": ", 1)[1] if ": " in text else text


def _unzstd(raw: io.BufferedReader, notes: list[str]) -> Iterator[bytes]:
    """The decoded bytes of a zstd file (one or more frames, skippable frames skipped), one block
    at a time: the frame structure (RFC 8878) is walked here and each block fed alone to the
    decoder, so no step hands out more than a block, whatever the compression ratio."""
    offset = 0
    frames = 0
    while True:
        magic = raw.read(4)
        if not magic:
            return
        if len(magic) == 4 and magic[1:] == b"\x2a\x4d\x18" and magic[0] & 0xF0 == 0x50:  # skippable frame
            skipped = len(raw.read(int.from_bytes(_exact(raw, 4), "little")))
            offset += 8 + skipped
            continue
        if magic != _ZSTD_MAGIC:
            if frames == 0:
                raise DamagedArchive("not zstd data (no zstd frame at its start)")
            notes.append(f"{_rest_size(raw, magic):,} byte(s) after the end of the zstd data ignored")
            return
        frames += 1
        decoder = zstandard.ZstdDecompressor().decompressobj()
        descriptor = _exact(raw, 1)[0]
        single_segment = bool(descriptor & 0x20)
        checksum = bool(descriptor & 0x04)
        size_bytes = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
        header = magic + bytes([descriptor]) + _exact(
            raw, (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3] + size_bytes)
        at = offset
        try:
            decoder.decompress(header)
            offset += len(header)
            while True:
                block_header = _exact(raw, 3)
                value = int.from_bytes(block_header, "little")
                last, kind, size = value & 1, (value >> 1) & 3, value >> 3
                if kind == 3 or size > _ZSTD_BLOCK_MAX:
                    raise zstandard.ZstdError("invalid block header")
                at = offset
                body = _exact(raw, 1 if kind == 1 else size)
                offset += 3 + len(body)
                out = decoder.decompress(block_header + body)
                if out:
                    yield out
                if last:
                    break
            if checksum:
                at = offset
                offset += 4
                decoder.decompress(_exact(raw, 4))
        except zstandard.ZstdError as error:
            reason = str(error).removeprefix("zstd decompress error: ")
            raise DamagedArchive(f"damaged zstd data at byte {at:,} ({reason})") from None


def _exact(raw: io.BufferedReader, size: int) -> bytes:
    data = raw.read(size)
    if len(data) < size:
        raise TruncatedArchive("compressed data ends early")
    return data


def _rest_size(raw: io.BufferedReader, read: bytes) -> int:
    """How many bytes are left from ``read`` (just read) to the end of the file."""
    try:
        return len(read) + max(0, os.fstat(raw.fileno()).st_size - raw.tell())
    except (OSError, ValueError):
        return len(read)


def describe_error(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    if isinstance(error, EOFError):
        return "compressed data ends early (truncated archive)"
    return text.splitlines()[0][:200]
