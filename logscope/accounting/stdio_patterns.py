"""SLURM output filename patterns (``--output``/``--error``) expanded to the files a job wrote.

The expansion follows SchedMD/slurm src/common/print_fields.c (``expand_stdio_fields``, called by
``fname_create`` in src/slurmd/common/fname.c for each step's processes): ``%%`` is ``%``, ``%A``
the array's job id (the job id outside an array), ``%a`` the array task, ``%j`` the job id, ``%J``
``jobid.stepid``, ``%s`` the step, ``%N`` the (first step) node's short name, ``%n`` the node's
index in the step, ``%t`` the task (rank), ``%u`` the user, ``%x`` the job name, and in newer
releases ``%b`` (the array task modulo 10), ``%r`` (the restart count) and ``%S`` (the SLUID); a
number after ``%`` zero-pads (at most 10); an unknown letter is kept with its ``%``; a ``\\`` anywhere turns
expansion off; a relative path is relative to the job's working directory.

What the record does not say (a task id, the step an srun ran as, a node that is not known) becomes
a ``*`` of a glob, so the per-task and per-step files are found wherever they are.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_FIELD = re.compile(r"%(\d*)([%AabJjrSsNntux])|%(\d*)(.)")


@dataclass(frozen=True)
class PatternContext:
    """What is known of the process whose output a pattern names; None is unknown (a glob)."""

    job_id: str
    array_job_id: str | None = None
    array_task_id: str | None = None
    step: str | None = None
    node: str | None = None
    node_index: int | None = None
    task: int | None = None
    user: str | None = None
    job_name: str | None = None


def expand_pattern(pattern: str, context: PatternContext, work_dir: str | None = None) -> str:
    """The glob ``pattern`` names for ``context`` (a plain path when everything is known)."""
    # a backslash anywhere turns expansion off; SLURM drops the backslashes (remove_path_slashes)
    literal = "\\" in pattern
    expanded = glob.escape(pattern.replace("\\", "")) if literal else _FIELD.sub(lambda m: _field(m, context), pattern)
    if work_dir and not expanded.startswith("/"):
        expanded = str(Path(glob.escape(work_dir)) / expanded)
    return expanded


def _field(match: re.Match[str], context: PatternContext) -> str:
    if match.group(2) is None:  # not a wildcard: kept as it is
        return glob.escape(match.group(0))
    width = min(int(match.group(1)), 10) if match.group(1) else 0
    letter = match.group(2)

    def padded(value: str | int | None) -> str:
        if value is None:
            return "*"
        text = str(value)
        return text.zfill(width) if text.isdigit() else glob.escape(text)

    if letter == "%":
        return "%"
    if letter == "A":
        return padded(context.array_job_id or context.job_id.split("_")[0])
    if letter == "a":
        return padded(context.array_task_id)
    if letter == "b":
        return padded(int(context.array_task_id) % 10 if context.array_task_id else None)
    if letter in "rS":  # the restart count and the SLUID: not in the record
        return "*"
    if letter == "j":
        return padded(_raw_job(context))
    if letter == "J":
        job = padded(_raw_job(context))
        return job if context.step == "batch" else (job + "." + padded(context.step) if context.step else job + "*")
    if letter == "s":
        return padded(context.step)
    if letter == "N":
        return padded(context.node)
    if letter == "n":
        return padded(context.node_index)
    if letter == "t":
        return padded(context.task)
    if letter == "u":
        return padded(context.user)
    return padded(context.job_name)  # x


def _raw_job(context: PatternContext) -> str | None:
    """%j: the job's own id; for an array task SLURM prints its own numeric id, which the record
    of the task (``12345_7``) does not carry: unknown then."""
    return context.job_id if "_" not in context.job_id else None


def find_files(patterns: Sequence[str], limit: int = 10_000) -> list[Path]:
    """The regular files the expanded patterns name, each once, in order."""
    found: dict[Path, None] = {}
    for pattern in patterns:
        for name in sorted(glob.glob(pattern)):  # noqa: PTH207 - absolute patterns
            path = Path(name)
            if path.is_file():
                found[path] = None
            if len(found) >= limit:
                return list(found)
    return list(found)


__all__ = ["PatternContext", "expand_pattern", "find_files"]
