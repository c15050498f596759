"""``logscope analyze JOBID --save DIR``: one folder to attach to a ticket.

DIR gets the job's log files (copied, named as they were; a name met twice gets its folder's name
in front), SLURM's record as the commands printed it (``sacct.json`` or ``sacct.txt``,
``scontrol.txt``, or the saved files it was read from) and the batch script (``batch-script.sh``).
``logscope analyze DIR`` then reads it all again, anywhere, the same way.

DIR must be new or empty, and outside the logs' folders (the CLI refuses it before any work, as
for every output). Each file is written through a temporary file and a rename.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from logscope.accounting.record import AccountingRecord
from logscope.errors import OutputError, printable


def check_target(target: Path) -> None:
    """Refuse a target that is not a new or empty folder (before any work)."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise OutputError(f"--save {printable(str(target))}: give a new or empty folder (it would mix with what "
                          "is there)")


def save_bundle(target: Path, logs: Sequence[Path], record: AccountingRecord | None, texts: dict[str, str],
                saved_files: Sequence[Path] = ()) -> list[Path]:
    """Write the bundle; return the files written."""
    shown = printable(str(target))
    check_target(target)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"--save {shown}: cannot create it ({error.strerror or error})") from None
    written: list[Path] = []
    used: set[str] = set()
    for path in [*logs, *saved_files]:
        name = path.name if path.name not in used else f"{path.parent.name}-{path.name}"
        used.add(name)
        written.append(_copy(path, target / name))
    for name, text in texts.items():
        if name not in used:
            used.add(name)
            written.append(_write(target / name, text.encode("utf-8")))
    if record is not None and record.script and not (used & {"batch-script.sh"}) and not any(
            n.lower().startswith(("batch-script", "batch_script")) for n in used):
        written.append(_write(target / "batch-script.sh", record.script.encode("utf-8")))
    return written


def _copy(source: Path, destination: Path) -> Path:
    descriptor, name = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent)
    temporary = Path(name)
    try:
        with source.open("rb") as reader, open(descriptor, "wb") as writer:  # noqa: PTH123 - a descriptor
            shutil.copyfileobj(reader, writer, 1024 * 1024)
        temporary.replace(destination)
    except BaseException as error:
        with contextlib.suppress(OSError):
            temporary.unlink()
        if isinstance(error, OSError):
            raise OutputError(f"--save: cannot copy {printable(str(source))} ({error.strerror or error})") from None
        raise
    return destination


def _write(destination: Path, data: bytes) -> Path:
    from logscope.report.output import atomic_write

    try:
        atomic_write(destination, data)
    except OSError as error:
        raise OutputError(f"--save: cannot write {printable(str(destination))} ({error.strerror or error})") from None
    return destination


__all__ = ["check_target", "save_bundle"]
