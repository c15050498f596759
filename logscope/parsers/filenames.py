"""What a log file's name says: job id, job name, node, array task, NCCL host/pid, torchrun rank.

SLURM's ``--output`` patterns (``man sbatch``, "filename pattern") are turned into anchored regexes:
``%x`` job name, ``%j`` job id, ``%J`` jobid.stepid, ``%N`` node, ``%n`` node index, ``%A``/``%a``
array master/task, ``%s`` step, ``%t`` task, ``%u`` user, ``%%`` a literal percent; a number
between ``%`` and the letter (``%4j``) is zero padding. NCCL_DEBUG_FILE uses ``%h`` (host) and
``%p`` (pid). torchrun ``--log-dir`` trees are ``.../attempt_N/<local_rank>/{stdout,stderr}.log``
and ``error.json``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from logscope.errors import UsageError

DEFAULT_PATTERNS: tuple[str, ...] = (
    "%x-%j-%N.out",
    "%x-%j-%N.err",
    "%x-%j-%N.log",
    "slurm-%A_%a.out",
    "slurm-%j.out",
    "slurm-%j.err",
    "%x-%j.out",
    "%x-%j.err",
    "%x-%j.log",
    "%x_%j.out",
    "%x.%j.out",
)

_SLURM_FIELDS = {
    "x": r"(?P<job_name>[^/]+?)",
    "j": r"(?P<job_id>\d+)",
    "J": r"(?P<job_id>\d+)(?:\.(?P<step>\d+|batch|extern))?",
    "N": r"(?P<node>[^/]+?)",
    "n": r"(?P<node_index>\d+)",
    "A": r"(?P<array_job>\d+)",
    "a": r"(?P<array_task>\d+)",
    "s": r"(?P<step>\d+|batch|extern)",
    "t": r"(?P<task>\d+)",
    "u": r"(?P<user>[^/]+?)",
    "b": r"(?P<array_task_mod>\d)",
    "h": r"(?P<host>[^/]+?)",  # NCCL_DEBUG_FILE
    "p": r"(?P<pid>\d+)",  # NCCL_DEBUG_FILE
}
_TOKEN = re.compile(r"%(\d*)([A-Za-z%])")
_COMPRESSED = (".gz", ".zst", ".zstd")
_TORCHRUN = re.compile(r"(?:^|/)attempt_(?P<attempt>\d+)/(?P<local_rank>\d+)/(?P<stream>stdout|stderr)\.log$")
_TORCHRUN_ERROR = re.compile(r"(?:^|/)attempt_(?P<attempt>\d+)/(?P<local_rank>\d+)/error\.json$")
_NCCL_DEBUG_FILE = re.compile(r"^(?:.*?\.)?(?P<host>[A-Za-z][A-Za-z0-9-]*)\.(?P<pid>\d+)$")


@dataclass(frozen=True)
class NameInfo:
    """Facts taken from a path. Any of them may be unknown."""

    kind: str  # slurm | nccl-debug | torchrun-worker | torchrun-error | other
    job_id: str | None = None
    job_name: str | None = None
    node: str | None = None
    host: str | None = None
    pid: int | None = None
    local_rank: int | None = None
    attempt: int | None = None
    array_task: str | None = None
    pattern: str | None = None


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Turn a SLURM (or NCCL_DEBUG_FILE) filename pattern into an anchored regex."""
    out: list[str] = []
    seen: set[str] = set()
    pos = 0
    for match in _TOKEN.finditer(pattern):
        out.append(re.escape(pattern[pos:match.start()]))
        letter = match.group(2)
        if letter == "%":
            out.append("%")
        elif letter in _SLURM_FIELDS:
            field = _SLURM_FIELDS[letter]
            name = re.search(r"\?P<(\w+)>", field)
            if name and name.group(1) in seen:  # a field used twice must match the same text
                out.append(f"(?P={name.group(1)})")
            else:
                out.append(field)
                if name:
                    seen.add(name.group(1))
        else:
            raise UsageError(f"unknown placeholder %{letter} in filename pattern {pattern!r}")
        pos = match.end()
    out.append(re.escape(pattern[pos:]))
    return re.compile("^" + "".join(out) + "$")


def strip_compression(name: str) -> tuple[str, str | None]:
    """``x.out.gz`` -> (``x.out``, ``gz``)."""
    for suffix in _COMPRESSED:
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix.lstrip(".").replace("zstd", "zst")
    return name, None


# SLURM's own default names and the per-node names (%N, %n, %t beside %j) say which job a file is
# of; a name that is only "<word>-<number>" says so only when the number can be a job id of a real
# cluster: "fragment-1.log", "part-2.out" number the pieces of one paste or one job's log.
_BARE_ID_MIN_DIGITS = 3


def _a_part_number(pattern: str, job_id: str) -> bool:
    """Whether the number a pattern read as the job id is rather a part's number: the pattern is
    neither SLURM's default (``slurm-%j.out``) nor names a node or task, and the number is short."""
    named = pattern.startswith("slurm-") or any(token in pattern for token in ("%N", "%n", "%t", "%h"))
    return not named and len(job_id.lstrip("0") or "0") < _BARE_ID_MIN_DIGITS


def describe(path: PurePath, patterns: tuple[str, ...] = DEFAULT_PATTERNS) -> NameInfo:
    """Read the facts a file's path holds, trying torchrun trees, SLURM patterns, then NCCL files."""
    # A name that is a compression suffix alone (".gz") is read as it stands: no path has an empty name.
    name = strip_compression(path.name)[0] or path.name
    posix = path.with_name(name).as_posix()
    if m := _TORCHRUN.search(posix):
        return NameInfo("torchrun-worker", local_rank=int(m["local_rank"]), attempt=int(m["attempt"]))
    if m := _TORCHRUN_ERROR.search(posix):
        return NameInfo("torchrun-error", local_rank=int(m["local_rank"]), attempt=int(m["attempt"]))
    for pattern in patterns:
        regex = compile_pattern(pattern)
        target = posix if "/" in pattern else name
        m = regex.search(target) if "/" in pattern else regex.match(target)
        if m:
            groups = m.groupdict()
            array_task = groups.get("array_task")
            job_id = groups.get("job_id") or groups.get("array_job")
            if job_id is not None and _a_part_number(pattern, job_id):
                continue
            return NameInfo(
                "slurm",
                job_id=job_id,
                job_name=groups.get("job_name"),
                node=groups.get("node") or groups.get("host"),
                host=groups.get("host"),
                pid=int(groups["pid"]) if groups.get("pid") else None,
                array_task=array_task,
                pattern=pattern,
            )
    if m := _NCCL_DEBUG_FILE.match(name):
        return NameInfo("nccl-debug", host=m["host"], node=m["host"], pid=int(m["pid"]))
    return NameInfo("other")
