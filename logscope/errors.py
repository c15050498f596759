"""The exceptions logscope raises on purpose. The CLI turns each into one line and an exit code.

Every user-facing message lives on the exception itself, so the library and the CLI say the same
thing. Anything that is not a :class:`LogscopeError` reaching the CLI is a bug and is reported as
an internal error (still one line, exit code 2, the traceback only with ``--debug``).
"""

from __future__ import annotations


class LogscopeError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with."""

    exit_code = 2


class InputError(LogscopeError):
    """The input cannot be analysed at all: missing path, nothing readable, no log lines."""


class UsageError(LogscopeError):
    """The command line asks for something that does not make sense (bad pattern, bad option)."""


class OutputError(LogscopeError):
    """An output file cannot be written (or would be written into the log folder)."""
