"""SLURM's record saved beside the logs, read the same way as the live commands' output.

Away from the cluster, a job folder may hold what ``sacct``/``scontrol`` printed (see the README,
"Away from the cluster", and :mod:`logscope.accounting.bundle`, which saves them so). A file is
taken as such when its name starts with ``sacct`` or ``scontrol`` (``sacct.json``,
``sacct-12345.txt``, ``scontrol_show_job.out``) or ``batch-script``, in the folder given (not its
subfolders, which hold other jobs' files as often as not) or named on the command line; what it
is comes from its content: JSON of ``sacct --json`` or ``scontrol show job --json``, ``sacct -P``
text (a ``JobID|...`` header), ``sacct -B`` (``Batch Script for``), or ``scontrol show job`` text.
A file so named that is none of these, or not UTF-8 text, is an :class:`AccountingError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from logscope.accounting.record import AccountingRecord, merged
from logscope.errors import AccountingError, printable
from logscope.textsafe import drop_controls

PREFIXES = ("sacct", "scontrol", "batch-script", "batch_script")
MAX_BYTES = 64 * 1024 * 1024


def folded(records: list[AccountingRecord]) -> list[AccountingRecord]:
    """One record per job: the records of the same job from several files completed from each
    other, in the order given (the caller puts the most trusted first)."""
    by_job: dict[str, AccountingRecord] = {}
    for record in records:
        known = by_job.get(record.job_id)
        by_job[record.job_id] = record if known is None else merged(known, record)
    return list(by_job.values())


@dataclass
class SavedRecord:
    """What the saved files hold: records by kind, scripts, and the files they came from."""

    files: list[Path] = field(default_factory=list)
    sacct: list[AccountingRecord] = field(default_factory=list)
    scontrol: list[AccountingRecord] = field(default_factory=list)
    scripts: dict[str, str] = field(default_factory=dict)  # job id ("" unknown) -> script

    @property
    def empty(self) -> bool:
        return not (self.sacct or self.scontrol or self.scripts)


def is_saved_record(path: Path) -> bool:
    """Whether a file's name says it holds sacct/scontrol output or a job's batch script."""
    return path.name.lower().startswith(PREFIXES)


def saved_files(inputs: Sequence[Path]) -> list[Path]:
    """The saved-record files among ``inputs`` and directly inside the folders among them."""
    found: list[Path] = []
    for given in inputs:
        candidates = sorted(given.iterdir()) if given.is_dir() else [given]
        for path in candidates:
            try:
                regular = path.is_file()
            except OSError:
                continue
            if regular and is_saved_record(path) and path not in found:
                found.append(path)
    return found


def read_saved(files: Sequence[Path]) -> SavedRecord:
    """Parse each saved file by its content."""
    # the parsers load only where a record was saved: every analyze of a folder asks, few have one
    from logscope.accounting.sacct_json import parse_sacct_json
    from logscope.accounting.sacct_parsable import parse_batch_script, parse_sacct_parsable
    from logscope.accounting.scontrol import parse_scontrol

    saved = SavedRecord(files=list(files))
    parsable: list[AccountingRecord] = []
    for path in files:
        text = _text(path)
        shown = printable(str(path))
        stripped = text.lstrip()
        if stripped.startswith("{"):
            if _is_scontrol_json(stripped, shown):
                saved.scontrol.extend(parse_scontrol(stripped, shown))
            else:
                saved.sacct.extend(parse_sacct_json(stripped, shown))
        elif stripped.startswith("Batch Script for") or path.name.lower().startswith(PREFIXES[2:]):
            saved.scripts.update(parse_batch_script(text))
        elif "|" in stripped.split("\n", 1)[0] and "JobID" in stripped.split("\n", 1)[0]:
            parsable.extend(parse_sacct_parsable(text, shown))
        elif "JobId=" in stripped[:4096]:
            saved.scontrol.extend(parse_scontrol(text, shown))
        else:
            raise AccountingError(f"{shown}: named like a saved SLURM record, but it is neither sacct --json, "
                                  "sacct -P, sacct -B nor scontrol show job output")
    # sacct -P first: its ExitCode is right where 22.05's --json loses it
    saved.sacct = folded([*parsable, *saved.sacct])
    saved.scontrol = folded(saved.scontrol)
    return saved


def _is_scontrol_json(text: str, shown: str) -> bool:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise AccountingError(f"{shown}: not valid JSON ({str(error).splitlines()[0][:120]})") from None
    jobs = document.get("jobs") if isinstance(document, dict) else None
    return isinstance(jobs, list) and any(isinstance(j, dict) and "job_state" in j for j in jobs)


def _text(path: Path) -> str:
    shown = printable(str(path))
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise AccountingError(f"{shown}: {size} bytes is too big for a saved SLURM record")
        data = path.read_bytes()
    except OSError as error:
        raise AccountingError(f"{shown}: cannot read it ({error.strerror or error})") from None
    if b"\x00" in data:
        raise AccountingError(f"{shown}: binary data, not a saved SLURM record")
    try:
        return drop_controls(data.decode("utf-8"))  # never a terminal escape from a record into an output
    except UnicodeDecodeError:
        raise AccountingError(f"{shown}: not UTF-8 text, not a saved SLURM record") from None


__all__ = ["SavedRecord", "folded", "is_saved_record", "read_saved", "saved_files"]
