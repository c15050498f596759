"""LS501 cuda-oom: a process ran out of GPU memory.

What it detects
    PyTorch's caching allocator giving up (``CUDA out of memory. Tried to allocate ...``) in all
    its generations: ``RuntimeError`` (torch <= 1.12), ``torch.cuda.OutOfMemoryError`` (1.13-2.x,
    with the ``(GPU 0; X total capacity; ...)``, the 2.1 ``total capacty`` and the 2.2+ ``GPU 0
    has a total capacity of`` shapes), ``torch.OutOfMemoryError`` (late 2.x), the XPU/NPU forks'
    wording, and NCCL's own allocation failures (``NCCL WARN Cuda failure 'out of memory'``, also
    quoted after "Last error:" in a ``DistBackendError``). It names the first process that ran
    out, its GPU, how much it tried to allocate and how much was free.

Why it matters
    One rank's OOM kills that rank; the launcher then SIGTERMs everyone and the other ranks print
    NCCL errors and timeouts. The OOM is the root cause, and it is usually specific to a rank
    (the one holding the largest pipeline stage, the embedding, or the longest sequence of the
    batch) or to a GPU that another process was also using.

Evidence
    ``cuda_oom`` events (the exception line), ``nccl_cuda_failure`` events whose message is
    ``out of memory``. The allocation size, capacity, free memory, memory held by other processes
    (``Process 20398 has 14.52 GiB memory in use``) and PyTorch's reserved-but-unallocated memory
    are read from the message.

Example
    ::

        [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 164.00 MiB. GPU 3 has a total capacity of 15.61 GiB of which 82.88 MiB is free. Including non-PyTorch memory, this process has 15.51 GiB memory in use. ...
        ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'

False positives
    A training loop that catches the OOM and carries on (batch-size finders, "skipping batch")
    still prints it; the finding then says that progress continued after it. An OOM on every
    rank at the same step is reported once, on the first rank, with the count of the others.

Advice
    Reduce the memory of the failing rank: smaller micro-batch, activation checkpointing,
    sharding (FSDP/ZeRO), shorter sequences. If PyTorch reserved much more than it allocated, set
    ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``. If another process held memory on the GPU,
    find it (two ranks on one GPU, a leftover process from an earlier job).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import (
    Detector,
    JobView,
    culprit_of,
    event_of,
    field_of,
    local_rank_from_device,
    order_key,
    when_row,
    who,
)
from logscope.detectors.exit_cascade import process_key
from logscope.detectors.job_facts import capitalised
from logscope.model import Category, Event, Finding, Role, Severity

_OOM = re.compile(r"out of memory", re.IGNORECASE)
_SIZE = r"([\d.]+ (?:[KMGT]i?B|bytes))"
_FACTS = {
    "tried": re.compile(r"Tried to allocate " + _SIZE),
    "capacity": re.compile(r"total capacit?t?y of " + _SIZE + r"|" + _SIZE + r" total capacity"),
    "free": re.compile(_SIZE + r" (?:is )?free"),
    "reserved_unallocated": re.compile(_SIZE + r" is reserved by PyTorch but unallocated"),
    "others": re.compile(r"Process \d+ has " + _SIZE + r" memory in use"),
}
_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "KB": 10**3, "MB": 10**6,
          "GB": 10**9, "TB": 10**12}


def _bytes(size: str) -> float:
    number, unit = size.split()
    return float(number) * _UNITS.get(unit, 1)


def oom_facts(text: str) -> dict[str, str | list[str]]:
    """What an OOM message says: allocation, capacity, free, other processes' memory."""
    facts: dict[str, str | list[str]] = {}
    for key, regex in _FACTS.items():
        if key == "others":
            found = [m.group(1) for m in regex.finditer(text)]
            if found:
                facts[key] = found
            continue
        m = regex.search(text)
        if m:
            facts[key] = next(g for g in m.groups() if g)
    return facts


class CudaOom(Detector):
    code = "LS501"
    name = "cuda-oom"
    category = Category.OOM
    requires: ClassVar[frozenset[Event]] = frozenset({Event.CUDA_OOM, Event.NCCL_CUDA_FAILURE})
    specificity = 70  # above LS301 (40): the OOM is what the crash cascade was about

    def detect(self, job: JobView) -> list[Finding]:
        rows = [r for r in job.rows(Event.CUDA_OOM, Event.NCCL_CUDA_FAILURE)
                if event_of(r) == Event.CUDA_OOM or _OOM.search(str(field_of(r, "message") or ""))]
        if not rows:
            return []
        rows.sort(key=order_key)
        first = rows[0]
        # One entry per process: by global rank when the line names it (the NCCL WARN and the
        # exception's "Last error:" of one rank are one OOM), else by place and pid/local rank.
        procs: dict[tuple[str, str], dict[str, Any]] = {}
        for r in rows:
            key = ("rank", str(r["rank"])) if r.get("rank") is not None else process_key(r)
            procs.setdefault(key, r)
        culprit = culprit_of(first)
        # Fill the rank/local rank from the process's other lines when the OOM line lacks them.
        if culprit.rank is None or culprit.local_rank is None:
            same = job.events.filter(
                (pl.col("pid") == first.get("pid")) & (pl.col("host") == first.get("host"))
            ) if first.get("pid") is not None and first.get("host") else job.events.clear()
            ranks = same["rank"].drop_nulls()
            locals_ = same["local_rank"].drop_nulls()
            culprit = replace(culprit,
                              rank=culprit.rank if culprit.rank is not None else (int(ranks[0]) if ranks.len() else None),
                              local_rank=culprit.local_rank if culprit.local_rank is not None
                              else (int(locals_[0]) if locals_.len() else None))
        facts = oom_facts(str(first.get("text") or ""))
        gpu = field_of(first, "cuda_dev")
        if event_of(first) == Event.NCCL_CUDA_FAILURE:
            # NCCL's own allocation: its [N] is the process's device. PyTorch's "GPU N" of a rank's
            # OOM is left a device: its line has no pid to tell the node's processes apart.
            culprit = local_rank_from_device(culprit, job)
        detail = self._detail(facts, gpu)
        if event_of(first) == Event.NCCL_CUDA_FAILURE:
            detail = "; ".join(p for p in ["NCCL could not allocate GPU memory for its own buffers", detail] if p)
        recovered = self._progress_after(job, first)
        others = len(procs) - 1
        title = f"{who(culprit)} ran out of GPU memory" + (f" ({detail.split(';')[0]})" if detail else "")
        if others:
            title += f"; {others} other process(es) also ran out"
        explanation = (
            f"{who(culprit)} failed to allocate GPU memory at {when_row(first)}"
            + (f": {detail}" if detail else "") + ". "
            + (f"{others} other process(es) hit the same error afterwards, so the model does not fit with this "
               "configuration on several ranks. " if others else "")
            + ("Other processes held memory on the same GPU, so it was shared: look for two ranks on one GPU "
               "or a leftover process. " if facts.get("others") else "")
            + ("Training progress continued after this error, so it was caught and recovered from. "
               if recovered else "")
            + "The errors and terminations on the other ranks that follow are consequences."
        )
        advice = ["Reduce the memory of the failing rank (micro-batch size, activation checkpointing, FSDP/ZeRO "
                  "sharding, sequence length)."]
        reserved = facts.get("reserved_unallocated")
        tried = facts.get("tried")
        if isinstance(reserved, str) and isinstance(tried, str) and _bytes(reserved) >= _bytes(tried):
            advice.append("PyTorch held more reserved-but-unallocated memory than it needed: set "
                          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to reduce fragmentation.")
        if facts.get("others"):
            advice.append("Another process used the same GPU: check CUDA_VISIBLE_DEVICES / LOCAL_RANK and kill "
                          "leftover processes (nvidia-smi).")
        return [self.finding(
            title=capitalised(title),
            explanation=capitalised(explanation),
            advice=" ".join(advice),
            rows=[first, *[r for r in procs.values() if r is not first][:5]],
            culprit=culprit,
            severity=Severity.WARNING if recovered else Severity.CRITICAL,
            role=Role.CONTEXT if recovered else Role.ROOT,
            ranks=[culprit.rank] if culprit.rank is not None else [],
            hosts=[h for h in [culprit.node or culprit.host] if h],
        )]

    @staticmethod
    def _detail(facts: dict[str, str | list[str]], gpu: Any) -> str:
        parts = []
        if facts.get("tried"):
            parts.append(f"tried to allocate {facts['tried']}")
        if gpu is not None:
            parts.append(f"GPU {gpu}")
        if facts.get("capacity"):
            parts.append(f"capacity {facts['capacity']}")
        if facts.get("free"):
            parts.append(f"{facts['free']} free")
        others = facts.get("others")
        if isinstance(others, list):
            parts.append(f"other processes held {', '.join(others)}")
        return "; ".join(parts)

    @staticmethod
    def _progress_after(job: JobView, oom: dict[str, Any]) -> bool:
        """Did training steps continue (on that rank, or anywhere if unknown) after the OOM?"""
        if oom.get("time") is None or oom.get("time_inferred"):
            return False
        progress = job.of(Event.PROGRESS).filter(pl.col("time") > oom["time"]) \
            .filter(~pl.col("time_inferred"))
        if oom.get("rank") is not None:
            progress = progress.filter(pl.col("rank").is_null() | (pl.col("rank") == oom["rank"]))
        return progress.height >= 3


__all__ = ["CudaOom", "oom_facts"]
