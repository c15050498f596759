"""Reading a Flight Recorder dump without trusting it: pickle (protocols 2 to 5) and JSON.

A dump is a file someone else wrote, and a pickle is a program: its opcodes may name any class or
function (``GLOBAL``), call it (``REDUCE``), build objects through it (``BUILD``, ``NEWOBJ``) or
reach outside the stream (``PERSID``, ``EXT1``). PyTorch's dumps hold only plain data (dicts,
lists, tuples, strings, numbers, booleans, None), so logscope refuses everything else, twice:

1. :func:`prescan` walks every opcode before anything is loaded and refuses any opcode that is
   not plain data, naming it and its byte offset, and any length that runs past the end of the
   file (a file cut short);
2. :func:`load_pickle` then loads with an unpickler whose ``find_class`` and ``persistent_load``
   always refuse: no class is ever looked up, so no callable can ever reach the stack.

No code from a dump ever runs, and torch is never imported. Sizes are bounded: a file above
:data:`MAX_DUMP_BYTES` is not read. What the loaded structure may hold (how many entries, how deep,
aliased lists) is bounded by the reader of its fields (:mod:`logscope.flight_recorder.dump`), which
walks only the paths it knows and never the structure as a whole.
"""

from __future__ import annotations

import io
import json
import pickle
import re
from functools import cache
from typing import Any

# PyTorch's default buffer (2000 entries, with stack frames) pickles to ~0.3 MB and to ~1 MB as
# JSON; TORCH_FR_BUFFER_SIZE may raise it. A file beyond this is not read.
MAX_DUMP_BYTES = 64 * 1024 * 1024


class UnsafeDump(ValueError):
    """The file is not a plain-data pickle or JSON document: the reason says why, in a few words."""


# Plain-data opcodes (pickletools' names): no argument, a fixed-size argument, or a length-prefixed
# payload. Anything else is refused.
_NO_ARGUMENT = b"()]}N\x88\x89012aestlud\x85\x86\x87\x94\x8f\x90\x91"  # MARK ... FROZENSET, MEMOIZE
_FIXED = {ord("K"): 1, ord("M"): 2, ord("J"): 4, ord("G"): 8,  # BININT1 BININT2 BININT BINFLOAT
          ord("h"): 1, ord("j"): 4, ord("q"): 1, ord("r"): 4,  # BINGET LONG_BINGET BINPUT LONG_BINPUT
          0x80: 1, 0x95: 8}  # PROTO FRAME
# opcode -> bytes of its little-endian length prefix
_LENGTH_PREFIXED = {0x8A: 1, 0x8B: 4,  # LONG1 LONG4
                    0x8C: 1, ord("X"): 4, 0x8D: 8,  # SHORT_BINUNICODE BINUNICODE BINUNICODE8
                    ord("U"): 1, ord("T"): 4,  # SHORT_BINSTRING BINSTRING
                    ord("C"): 1, ord("B"): 4, 0x8E: 8, 0x96: 8}  # SHORT_BINBYTES BINBYTES BINBYTES8 BYTEARRAY8
_STOP = ord(".")
# What each refused opcode would do, for the reason given.
_REFUSED = {
    ord("c"): "GLOBAL (names a class or function)", 0x93: "STACK_GLOBAL (names a class or function)",
    ord("i"): "INST (builds an object of a class)", ord("o"): "OBJ (builds an object of a class)",
    ord("R"): "REDUCE (calls a function)", ord("b"): "BUILD (sets an object's state)",
    0x81: "NEWOBJ (builds an object of a class)", 0x92: "NEWOBJ_EX (builds an object of a class)",
    0x82: "EXT1 (a registered class)", 0x83: "EXT2 (a registered class)", 0x84: "EXT4 (a registered class)",
    ord("P"): "PERSID (an object outside the file)", ord("Q"): "BINPERSID (an object outside the file)",
    0x97: "NEXT_BUFFER (a buffer outside the file)", 0x98: "READONLY_BUFFER (a buffer outside the file)",
}
# Strings and small integers this short are walked by one regular expression (in C) rather than
# one opcode at a time in Python: a dump of 2000 entries holds ~150,000 opcodes.
_SHORT = 64


@cache
def _runs() -> re.Pattern[bytes]:
    """A pattern matching a run of plain-data opcodes whose arguments have a size known from their
    first bytes: every opcode but STOP and the longer length-prefixed payloads, which
    :func:`prescan` takes one at a time."""
    def byte(value: int) -> str:
        return f"\\x{value:02x}"

    def sized(opcode: int, prefix: int, most: int) -> str:
        tails = "\\x00" * (prefix - 1)
        return byte(opcode) + "(?:" + "|".join(
            byte(n) + tails + (f"[\\x00-\\xff]{{{n}}}" if n else "") for n in range(most + 1)) + ")"

    fixed = {size: "".join(byte(op) for op, s in _FIXED.items() if s == size) for size in set(_FIXED.values())}
    parts = ["[" + "".join(byte(b) for b in _NO_ARGUMENT) + "]"]
    parts += [f"[{ops}][\\x00-\\xff]{{{size}}}" for size, ops in sorted(fixed.items())]
    parts += [sized(0x8A, 1, 9), sized(0x8C, 1, _SHORT), sized(ord("X"), 4, _SHORT)]
    body = "(?:" + "|".join(parts) + ")"
    try:  # Python 3.11+: a possessive run keeps no backtracking state per opcode
        return re.compile((body + "*+").encode("latin-1"))
    except re.error:  # pragma: no cover - Python 3.10
        return re.compile((body + "*").encode("latin-1"))


def prescan(data: bytes) -> int:
    """Walk every opcode of a pickle and refuse what is not plain data; return where STOP ends.

    Raises :class:`UnsafeDump` naming the first refused opcode and its byte offset, or saying the
    file is cut short (a length that runs past its end, no STOP)."""
    if len(data) < 2 or data[0] != 0x80 or not 2 <= data[1] <= 5:
        raise UnsafeDump("not a pickle of protocol 2 to 5")
    runs, end, at = _runs(), len(data), 0
    while True:
        matched = runs.match(data, at)
        at = matched.end() if matched is not None else at
        if at >= end:
            raise UnsafeDump("cut short: the pickle has no STOP opcode")
        opcode = data[at]
        if opcode == _STOP:
            return at + 1
        prefix = _LENGTH_PREFIXED.get(opcode)
        if prefix is None and opcode in _FIXED:  # a plain opcode whose argument runs past the end
            raise UnsafeDump(f"cut short at byte {at}")
        if prefix is None:
            what = _REFUSED.get(opcode)
            if what is not None:
                raise UnsafeDump(f"refused: pickle opcode {what} at byte {at}; a dump holds only plain data")
            raise UnsafeDump(f"refused: pickle opcode {opcode:#04x} at byte {at} is not plain data")
        if at + 1 + prefix > end:
            raise UnsafeDump(f"cut short at byte {at}")
        length = int.from_bytes(data[at + 1:at + 1 + prefix], "little")
        at += 1 + prefix + length
        if at > end:
            raise UnsafeDump(f"cut short: a value at byte {at - length - 1 - prefix} runs past the end of the file")


class _NoClasses(pickle.Unpickler):
    """An unpickler that never looks up a class or an outside object."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused: class {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("refused: a persistent id")


def load_pickle(data: bytes) -> Any:
    """The plain data of a pickled dump, after :func:`prescan`; :class:`UnsafeDump` otherwise."""
    stop = prescan(data)
    try:
        # buffered: the unpickler then reads ahead in blocks instead of calling read per opcode
        # (3x faster at protocol 2, which has no frames)
        return _NoClasses(io.BufferedReader(io.BytesIO(data[:stop]), 1 << 20)).load()
    except (pickle.UnpicklingError, ValueError, TypeError, EOFError, IndexError, KeyError, AttributeError,
            MemoryError, RecursionError, OverflowError) as error:
        raise UnsafeDump(f"not a readable pickle ({_short(error)})") from None


def load_json(data: bytes) -> Any:
    """The data of a JSON dump (``_dump_fr_trace_json``); :class:`UnsafeDump` when it is not JSON."""
    try:
        return json.loads(data)
    except RecursionError:
        raise UnsafeDump("JSON nested too deep") from None
    except (ValueError, MemoryError) as error:
        raise UnsafeDump(f"not JSON ({_short(error)})") from None


def _short(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) <= 120 else text[:117] + "..."


__all__ = ["MAX_DUMP_BYTES", "UnsafeDump", "load_json", "load_pickle", "prescan"]
