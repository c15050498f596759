"""The one way logscope writes a file: whole or not at all, readable as a plain write would make it.

Every output (reports, charts, scan tables and caches, ``merge`` tables, ``--save`` bundles) goes
through :func:`write_atomically`: the content is written to a new temporary file beside the
target, then renamed over it. A full disk or a crash leaves the previous file (or none), never a
cut-short one; a rename replaces the name, never the content of a file linked to it.

The temporary file is created exclusively by :func:`tempfile.mkstemp`, which gives it mode 0600;
left so, every report and table would be unreadable to the rest of the group. It is given the
mode a plain ``open(path, "w")`` would have given it, 0666 less the umask, before anything is
written (:func:`plain_file_mode`; folders: :func:`plain_folder_mode`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def umask() -> int:
    """The process's umask (there is no call that reads it without setting it)."""
    current = os.umask(0o022)
    os.umask(current)
    return current


def plain_file_mode() -> int:
    """The permissions ``open(path, "w")`` gives a new file: 0666 less the umask."""
    return 0o666 & ~umask()


def plain_folder_mode() -> int:
    """The permissions ``mkdir`` gives a new folder: 0777 less the umask."""
    return 0o777 & ~umask()


def write_atomically(target: Path, write: Callable[[Path], None]) -> None:
    """Call ``write`` on a new temporary file beside ``target`` (mode 0666 less the umask), then
    rename it over ``target``; on any error the temporary file is removed and the error raised."""
    descriptor, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    temporary = Path(name)
    try:
        try:
            os.fchmod(descriptor, plain_file_mode())
        finally:
            os.close(descriptor)
        write(temporary)
        temporary.replace(target)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def atomic_write(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` through :func:`write_atomically`, synced to disk before the rename."""

    def write(temporary: Path) -> None:
        with temporary.open("wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())

    write_atomically(target, write)


__all__ = ["atomic_write", "plain_file_mode", "plain_folder_mode", "umask", "write_atomically"]
