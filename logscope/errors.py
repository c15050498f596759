"""The exceptions logscope raises on purpose. The CLI turns each into one line and an exit code.

Every user-facing message lives on the exception itself, so the library and the CLI say the same
thing. Anything that is not a :class:`LogscopeError` reaching the CLI is a bug and is reported as
an internal error (still one line, exit code 2, the traceback only with ``--debug``).
"""

from __future__ import annotations

import re

from logscope.textsafe import BIDI


class LogscopeError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with."""

    exit_code = 2


class InputError(LogscopeError):
    """The input cannot be analysed at all: missing path, nothing readable, no log lines."""


class UsageError(LogscopeError):
    """The command line asks for something that does not make sense (bad pattern, bad option)."""


class AccountingError(InputError):
    """SLURM's record of a job cannot be had or read: ``sacct``/``scontrol`` missing or failing, an
    unknown job id, a saved ``sacct --json`` or ``scontrol show job`` output that is malformed."""


class OutputError(LogscopeError):
    """An output file cannot be written (or would be written into the log folder)."""


_UNPRINTABLE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff{BIDI}]")


def printable(text: str) -> str:
    """``text`` safe to show on one line and to write as UTF-8: control characters (a newline in
    a file name, a terminal escape) and bytes that are not UTF-8 (a file name's surrogate
    escapes) are written as backslash escapes."""

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group(0))
        if match.group(0) in "\n\r\t":
            return repr(match.group(0))[1:-1]
        if 0xDC80 <= code <= 0xDCFF:
            return f"\\x{code - 0xDC00:02x}"  # an undecodable byte of a file name
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"

    return _UNPRINTABLE.sub(escape, text)
