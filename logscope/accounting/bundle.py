"""``logscope analyze JOBID --save DIR``: one folder to attach to a ticket.

DIR gets the job's log files that ``analyze`` read (copied, named as they were; a name met twice
gets its folder's name in front), SLURM's record as the commands printed it (``sacct.json`` or
``sacct.txt``, ``scontrol.txt``, or the saved files it was read from) and the batch script
(``batch-script.sh``). ``logscope analyze DIR`` then reads it all again, anywhere, the same way.

Nothing else goes in: only the files the analysis read, and a log found through SLURM's record
only while it is still the file that was found (its device and inode, logscope.accounting.confine).
DIR must be new or empty, and outside the logs' folders (the CLI refuses it before any work, as
for every output). The bundle is written into a new temporary folder beside DIR, renamed to DIR
once complete: a full disk or an interruption leaves no half bundle (the temporary folder is
removed), and a rerun finds DIR as it was.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from logscope.accounting.record import AccountingRecord
from logscope.atomic import plain_folder_mode
from logscope.errors import OutputError, printable


def check_target(target: Path) -> None:
    """Refuse a target that is not a new or empty folder (before any work)."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise OutputError(f"--save {printable(str(target))}: give a new or empty folder (it would mix with what "
                          "is there)")


def save_bundle(target: Path, logs: Sequence[Path], record: AccountingRecord | None, texts: dict[str, str],
                saved_files: Sequence[Path] = (),
                identities: Mapping[Path, tuple[int, int]] | None = None) -> list[Path]:
    """Write the bundle; return the files written (in ``target``).

    ``identities``: (device, inode) of the logs found through SLURM's record when they were found;
    such a log that is another file now (replaced meanwhile) is refused (OutputError)."""
    shown = printable(str(target))
    check_target(target)
    parent = target.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent))
    except OSError as error:
        raise OutputError(f"--save {shown}: cannot create it ({error.strerror or error})") from None
    try:
        names = _fill(building, logs, record, texts, saved_files, identities or {})
        os.chmod(building, plain_folder_mode())  # noqa: PTH101 - as a plain mkdir would make it
        check_target(target)  # still new or empty
        building.rename(target)  # over an empty folder too (rename(2))
    except BaseException as error:
        shutil.rmtree(building, ignore_errors=True)
        if isinstance(error, OSError):
            raise OutputError(f"--save {shown}: {error.strerror or error}; nothing was saved") from None
        raise
    return [target / name for name in names]


def _fill(folder: Path, logs: Sequence[Path], record: AccountingRecord | None, texts: dict[str, str],
          saved_files: Sequence[Path], identities: Mapping[Path, tuple[int, int]]) -> list[str]:
    names: list[str] = []
    used: set[str] = set()
    for path in [*logs, *saved_files]:
        name = path.name if path.name not in used else f"{path.parent.name}-{path.name}"
        used.add(name)
        _copy(path, folder / name, identities.get(path))
        names.append(name)
    for name, text in texts.items():
        if name not in used:
            used.add(name)
            (folder / name).write_bytes(text.encode("utf-8"))
            names.append(name)
    if record is not None and record.script and not any(
            n.lower().startswith(("batch-script", "batch_script")) for n in used):
        (folder / "batch-script.sh").write_bytes(record.script.encode("utf-8"))
        names.append("batch-script.sh")
    return names


def _copy(source: Path, destination: Path, identity: tuple[int, int] | None) -> None:
    try:
        with source.open("rb") as reader:
            info = os.fstat(reader.fileno())
            if not stat.S_ISREG(info.st_mode) or (identity is not None and (info.st_dev, info.st_ino) != identity):
                raise OutputError(f"--save: {printable(str(source))} is not the file that was read (replaced since); "
                                  "nothing was saved")
            with destination.open("xb") as writer:
                shutil.copyfileobj(reader, writer, 1024 * 1024)
    except FileNotFoundError:
        raise OutputError(f"--save: {printable(str(source))} is gone since it was read; nothing was saved") from None


__all__ = ["check_target", "save_bundle"]
