"""``logscope analyze -``: a log read from standard input.

The readers map files and share them with worker processes, so standard input is first copied,
in blocks, to a private temporary folder (mode 0700, removed when the analysis ends, whatever
happens): never into a log folder nor the current folder. Its evidence is named ``<stdin>``
(:func:`display_name`), not by that temporary file.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from logscope.errors import InputError

NAME = "stdin"
PREFIX = "logscope-stdin-"
DISPLAY = "<stdin>"


def display_name(path: Path) -> str | None:
    """``<stdin>`` for the file :func:`spooled_stdin` spooled standard input to; None for any other."""
    return DISPLAY if path.name == NAME and path.parent.name.startswith(PREFIX) else None


@contextmanager
def spooled_stdin(stream: BinaryIO) -> Iterator[Path]:
    """A file holding what ``stream`` holds, for the time of the ``with`` block. An interactive
    terminal (nothing piped in) or an empty input is an InputError."""
    if stream.isatty():
        raise InputError("- reads a log from standard input, and nothing is piped in (zcat job.out.gz | "
                         "logscope analyze -)")
    with tempfile.TemporaryDirectory(prefix=PREFIX) as folder:
        path = Path(folder) / NAME
        try:
            with path.open("wb") as out:
                shutil.copyfileobj(stream, out, 1 << 20)
        except OSError as error:
            raise InputError(f"standard input: cannot read or spool it ({error.strerror or error})") from None
        if path.stat().st_size == 0:
            raise InputError("standard input: empty, no log lines")
        yield path
