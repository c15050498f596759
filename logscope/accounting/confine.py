"""The files SLURM's record names as a job's output, confined to the job.

Whoever submitted a job chose its output patterns (``--output``, ``srun --output`` in its batch
script); whoever runs ``logscope analyze JOBID`` (often an administrator) may read more than they
can. So a file is read as the job's log only when it is the job's:

* it is named by one of the job's patterns (:class:`~logscope.accounting.stdio_patterns.NameRule`:
  a folder known whole, its names matched in one listing of it, never a walk; at most
  :data:`MAX_RULES` patterns, and :data:`MAX_FILES` files, a job);
* it is a regular file owned by the job's user (its uid from the record's user name, or
  scontrol's ``UserId=name(uid)``), and none of the kernel's (``/proc``, ``/sys``, ``/dev``);
* its real path (links followed) is under the job's working directory, for a relative pattern,
  or under the folder an absolute pattern names: no link leads out, and no ``..`` (refused with
  the pattern, :mod:`~logscope.accounting.stdio_patterns`).

What a pattern names but is not the job's is listed as skipped, with the reason. Each file found
keeps its device and inode, so that ``--save`` copies the file that was read and no other.
"""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from logscope.accounting.record import AccountingRecord
from logscope.accounting.stdio_patterns import NameRule
from logscope.errors import printable
from logscope.ingest.discovery import Skipped

MAX_RULES = 1024
MAX_FILES = 10_000
MAX_REFUSED_SHOWN = 20
# The kernel's own files look regular (/proc/self/environ), but SLURM writes no job's output there.
KERNEL_FOLDERS = ("/proc/", "/sys/", "/dev/")


@dataclass
class JobFiles:
    """The job's files its patterns name, those refused (with why) and each file's identity."""

    files: list[Path] = field(default_factory=list)
    refused: list[Skipped] = field(default_factory=list)
    identities: dict[Path, tuple[int, int]] = field(default_factory=dict)  # path -> (st_dev, st_ino)


@dataclass(frozen=True)
class Owner:
    """The job's user as this machine knows it: a uid, or None with the reason."""

    uid: int | None
    name: str
    why_unknown: str = ""


def job_owner(record: AccountingRecord) -> Owner:
    """The uid of the job's user: the record's, else its user name's on this machine."""
    name = record.user or ""
    if record.uid is not None:
        return Owner(record.uid, name or str(record.uid))
    if not name:
        return Owner(None, "", "SLURM's record names no user for the job: its files cannot be told from others'")
    if name.isdigit():
        return Owner(int(name), name)
    try:
        return Owner(pwd.getpwnam(name).pw_uid, name)
    except (KeyError, OSError):
        return Owner(None, name, f"the job's user {name} is not known on this machine: its files cannot be told "
                                  "from others'")


def find_job_files(rules: Sequence[NameRule], nodes: tuple[str, ...], owner: Owner,
                   work_dir: str | None) -> JobFiles:
    """The files ``rules`` name that are the job's (see the module), in order, each once."""
    found = JobFiles()
    refused: list[Skipped] = []
    listings: dict[str, list[str]] = {}
    roots: dict[str, str | None] = {}
    for rule in rules[:MAX_RULES]:
        if rule.problem is not None:
            refused.append(Skipped(printable(rule.shown), rule.problem))
            continue
        names = listings.get(rule.folder)
        if names is None:
            names = listings[rule.folder] = _listing(rule.folder)
        root_key = work_dir if rule.relative and work_dir else rule.folder
        if root_key not in roots:
            roots[root_key] = _real(root_key)
        root = roots[root_key]
        for name in names:
            if not rule.matches(name, nodes):
                continue
            path = Path(rule.folder) / name
            if path in found.identities:
                continue
            reason, identity = _why_not(path, root, owner)
            if reason is not None:
                refused.append(Skipped(printable(str(path)), reason))
                continue
            found.files.append(path)
            found.identities[path] = identity
            if len(found.files) >= MAX_FILES:
                refused.append(Skipped(f"{printable(rule.shown)} ...", f"more than {MAX_FILES} files: the rest "
                                                                        "are not read"))
                break
        if len(found.files) >= MAX_FILES:
            break
    if len(rules) > MAX_RULES:
        refused.append(Skipped(f"{len(rules) - MAX_RULES} more output pattern(s)",
                               f"not looked for: a job's files are looked for with at most {MAX_RULES} patterns"))
    found.refused = _shortened(refused)
    return found


def _listing(folder: str) -> list[str]:
    """The names in ``folder``, sorted; none when it cannot be listed (no such folder: the job wrote
    nothing there)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(entry.name for entry in entries)
    except OSError:
        return []


def _real(folder: str) -> str | None:
    try:
        return os.path.realpath(folder, strict=True)
    except (OSError, RuntimeError):
        return None


def _why_not(path: Path, root: str | None, owner: Owner) -> tuple[str | None, tuple[int, int]]:
    """Why ``path`` is not the job's (None when it is), and its (device, inode)."""
    try:
        info = path.stat()
        real = os.path.realpath(path, strict=True)
    except (OSError, RuntimeError) as error:
        return f"cannot read ({getattr(error, 'strerror', None) or error})", (0, 0)
    identity = (info.st_dev, info.st_ino)
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file", identity
    if real.startswith(KERNEL_FOLDERS):
        return "a file of the kernel's, no job's output", identity
    if root is None or not (real == root or real.startswith(root.rstrip("/") + "/")):
        return f"a link to {printable(real)}, outside {printable(root or '(the job folder)')}", identity
    if owner.uid is None:
        return owner.why_unknown, identity
    if info.st_uid != owner.uid:
        return f"owned by {_user_name(info.st_uid)}, not by the job's user {printable(owner.name)}", identity
    return None, identity


def _user_name(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, OSError):
        return f"uid {uid}"


def _shortened(refused: list[Skipped]) -> list[Skipped]:
    if len(refused) <= MAX_REFUSED_SHOWN:
        return refused
    more = len(refused) - MAX_REFUSED_SHOWN
    return [*refused[:MAX_REFUSED_SHOWN], Skipped(f"{more} more file(s)", "refused as above")]


__all__ = ["MAX_FILES", "MAX_RULES", "JobFiles", "Owner", "find_job_files", "job_owner"]
