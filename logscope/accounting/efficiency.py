"""How well a job used what it was given, from its ``sacct -P`` lines: what ``seff``, ``reportseff``
and ``jobstats`` print beside a job, computed from the same fields.

* **time**: ``ElapsedRaw`` (seconds) against ``TimelimitRaw`` (minutes; ``UNLIMITED`` and
  ``Partition_Limit`` are no limit), the job's line;
* **CPU**: ``TotalCPU / (ElapsedRaw x AllocCPUS)``, the job's line (its TotalCPU is the sum of its
  steps'; where it is empty, the steps' are summed);
* **memory**: the peak of the job's tasks together (a step's ``TRESUsageInTot`` ``mem=``, the sum of
  its tasks' high-water marks; the highest step; ``MaxRSS``, one task's, where no step has it)
  against what the job requested (``ReqMem``: the job's ``mem`` TRES since SLURM 21.08,
  SchedMD/slurm src/sacct/print.c ``PRINT_REQ_MEM``; an older ``4000Mn`` is per node, ``4000Mc``
  per CPU);
* **GPU**, where the record has it: the GPUs allocated (``AllocTRES`` ``gres/gpu=N``), their use
  (``TRESUsageInAve`` ``gres/gpuutil``, percent, the highest step) and the most GPU memory a task
  held (``TRESUsageInMax`` ``gres/gpumem``), which SLURM records with ``AcctGatherGpu`` (23.02+).

Every value is None where the record does not say it: a job that never started, a cluster that
gathers no memory, a GPU-less job. Nothing here runs a command.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

# sacct prints sizes with a binary unit letter (convert_num_unit: K, M, G, T, P; none: bytes)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)([nc]?)\s*$", re.IGNORECASE)
# [D-][HH:]MM:SS[.mmm] (src/sacct/print.c _elapsed_time)
_DURATION = re.compile(r"^\s*(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)\s*$")

# The fields the efficiency is computed from (all in sacct since 18.08; TRESUsage* since 18.08 too)
FIELDS = ("ElapsedRaw", "TimelimitRaw", "AllocCPUS", "TotalCPU", "ReqMem", "NNodes", "AllocTRES",
          "TRESUsageInTot", "TRESUsageInAve", "TRESUsageInMax")


@dataclass(frozen=True)
class Efficiency:
    """A job's use of its allocation (fractions: 1.0 is all of it)."""

    elapsed_s: int | None = None
    time_limit_s: int | None = None
    time_used: float | None = None  # elapsed / limit
    alloc_cpus: int | None = None
    cpu_efficiency: float | None = None  # TotalCPU / (elapsed x CPUs)
    mem_requested: int | None = None  # bytes, the whole job
    mem_peak: int | None = None  # bytes, the job's tasks together at the highest step
    mem_used: float | None = None  # peak / requested
    gpus: int | None = None
    gpu_util: float | None = None  # the GPUs' average use, 0-1
    gpu_mem_peak: int | None = None  # bytes, the most one task held

    def to_row(self) -> dict[str, int | float | None]:
        return asdict(self)


def efficiency_of(job: Mapping[str, str], steps: Sequence[Mapping[str, str]] = ()) -> Efficiency:
    """The efficiency of a job from its ``sacct -P`` line and its steps' lines (field -> text)."""
    elapsed = _integer(job.get("ElapsedRaw"))
    if elapsed is None:
        seconds = duration_s(job.get("Elapsed"))
        elapsed = int(seconds) if seconds is not None else None
    limit_min = _integer(job.get("TimelimitRaw"))
    limit = limit_min * 60 if limit_min else None
    cpus = _integer(job.get("AllocCPUS")) or _integer(job.get("NCPUS"))
    total_cpu = duration_s(job.get("TotalCPU"))
    if not total_cpu:
        step_cpu = [s for s in (duration_s(step.get("TotalCPU")) for step in steps) if s is not None]
        total_cpu = sum(step_cpu) if step_cpu else total_cpu
    requested = _requested_memory(job.get("ReqMem"), _integer(job.get("NNodes")), cpus)
    if requested is None:
        requested = size_bytes(tres(job.get("ReqTRES")).get("mem"))
    peaks = [v for v in (size_bytes(tres(s.get("TRESUsageInTot")).get("mem")) for s in steps) if v is not None]
    if not peaks:
        peaks = [v for v in (size_bytes(s.get("MaxRSS")) for s in steps) if v is not None]
    peak = max(peaks) if peaks else None
    gpus = _gpu_count(tres(job.get("AllocTRES")))
    utils = [v for v in (_number(tres(s.get("TRESUsageInAve")).get("gres/gpuutil")) for s in steps) if v is not None]
    gpu_mem = [v for v in (size_bytes(tres(s.get("TRESUsageInMax")).get("gres/gpumem")) for s in steps)
               if v is not None]
    return Efficiency(
        elapsed_s=elapsed, time_limit_s=limit,
        time_used=elapsed / limit if elapsed is not None and limit else None,
        alloc_cpus=cpus,
        cpu_efficiency=total_cpu / (elapsed * cpus) if total_cpu is not None and elapsed and cpus else None,
        mem_requested=requested, mem_peak=peak,
        mem_used=peak / requested if peak is not None and requested else None,
        gpus=gpus, gpu_util=max(utils) / 100 if utils and gpus else None,
        gpu_mem_peak=max(gpu_mem) if gpu_mem and gpus else None)


def tres(text: str | None) -> dict[str, str]:
    """A TRES list (``cpu=2,mem=4000M,node=2,gres/gpu=4``) as name -> value; a GPU type
    (``gres/gpu:a100=4``) is kept in the name."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            out[name.strip()] = value.strip()
    return out


def size_bytes(text: str | None) -> int | None:
    """``849594K`` / ``4000M`` / ``1.50G`` / ``12345`` as bytes; None for empty or unknown."""
    match = _SIZE.match(text or "")
    if match is None:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def duration_s(text: str | None) -> float | None:
    """``00:14.093`` / ``01:02:03`` / ``2-00:00:00`` as seconds; None for empty or unknown."""
    match = _DURATION.match(text or "")
    if match is None:
        return None
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)


def _requested_memory(text: str | None, nodes: int | None, cpus: int | None) -> int | None:
    match = _SIZE.match(text or "")
    if match is None:
        return None
    amount = size_bytes(match.group(1) + (match.group(2) or "M"))  # ReqMem's default unit is megabytes
    if not amount:
        return None
    scope = match.group(3).lower()
    if scope == "n":  # per node (before 21.08)
        return amount * nodes if nodes else None
    if scope == "c":  # per CPU (before 21.08)
        return amount * cpus if cpus else None
    return amount


def _gpu_count(allocated: Mapping[str, str]) -> int | None:
    """The GPUs of an AllocTRES: ``gres/gpu=4`` (typed entries ``gres/gpu:a100=4`` repeat it)."""
    if "gres/gpu" in allocated:
        return _integer(allocated["gres/gpu"])
    typed = [_integer(v) for k, v in allocated.items() if k.startswith("gres/gpu:")]
    counts = [n for n in typed if n is not None]
    return sum(counts) if counts else None


def _integer(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


__all__ = ["FIELDS", "Efficiency", "duration_s", "efficiency_of", "size_bytes", "tres"]
