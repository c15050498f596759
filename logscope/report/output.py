"""Writing report files safely: never over a log, never half a file.

* :func:`refuse_inputs` checks the real target of every file about to be written (its resolved
  path, and the inode a symbolic or hard link leads to) against the job's log files: a report
  never overwrites a log, whatever link leads there.
* :func:`atomic_write` (from :mod:`logscope.atomic`, the one writer of every output) writes to a
  temporary file beside the target and renames it into place: a full disk or a crash leaves the
  previous file (or none), never a truncated report.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from logscope.atomic import atomic_write
from logscope.errors import OutputError, printable
from logscope.timeline import Job


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()  # follows symbolic links: the file a write would reach
    except OSError:
        return None
    return info.st_dev, info.st_ino


def refuse_inputs(job: Job, targets: Iterable[Path]) -> None:
    """Raise OutputError when a target is, or leads to, one of the job's log files."""
    inputs = {identity for f in job.files if (identity := _identity(f.path)) is not None}
    resolved_inputs = {_real(f.path) for f in job.files}
    for target in targets:
        identity = _identity(target)
        if _real(target) in resolved_inputs or (identity is not None and identity in inputs):
            raise OutputError(f"{printable(str(target))} is one of the logs this report reads (directly or through "
                              "a link); write the report elsewhere (logscope never modifies the logs it reads)")


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


__all__ = ["atomic_write", "refuse_inputs"]
