"""Open a log file as a stream of its (decompressed) bytes: ``.gz`` and ``.zst`` are inflated on
the fly, and a corrupt or truncated archive hands out every byte decoded before the damage.

:data:`READ_ERRORS` is what reading a damaged file can raise; each becomes a warning or a skipped
file, never a crash.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from typing import Protocol

import zstandard

from logscope.ingest.discovery import SourceFile

# What reading a damaged file can raise; each becomes a warning or a skipped file, never a crash.
READ_ERRORS = (OSError, EOFError, zlib.error, ValueError, zstandard.ZstdError)


def open_source(source: SourceFile) -> io.BufferedReader | InflateStream | io.BufferedIOBase:
    raw = source.path.open("rb")
    if source.compression == "gz":
        return InflateStream(raw, lambda: zlib.decompressobj(16 + zlib.MAX_WBITS))
    if source.compression == "zst":
        return InflateStream(raw, lambda: zstandard.ZstdDecompressor().decompressobj())
    return raw


class TruncatedArchive(EOFError):
    """The compressed stream ended before its end marker."""


class _Decoder(Protocol):
    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes) -> bytes: ...


class InflateStream(io.RawIOBase):
    """Incremental gzip/zstd reader that hands out every byte decoded before a corruption, and
    raises :class:`TruncatedArchive` when the stream ends without its end marker.

    ``gzip.GzipFile.read`` drops the data of a read that hits a truncated member, and zstandard's
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


def describe_error(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    if isinstance(error, EOFError):
        return "compressed data ends early (truncated archive)"
    return text.splitlines()[0][:200]
