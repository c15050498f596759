"""LS603 gpu-fault: a process lost its GPU (unknown error, illegal address, launch failure, off the bus).

What it detects
    The CUDA errors a dying GPU produces in the processes that use it: ``CUDA error: unknown
    error``, ``an illegal memory access was encountered``, ``unspecified launch failure``,
    ``misaligned address``, ``an illegal instruction was encountered``, NVLink errors, from a
    Python exception or from ``what():`` after ``terminate called after throwing an instance of
    'c10::CUDAError'`` on the NCCL watchdog thread (``workCleanupLoop``), NCCL's ``Cuda failure
    999 'unknown error'``, and the driver's "GPU has fallen off the bus" message without an Xid.
    When all of it comes from one node it is reported as hardware; when the same error appears on
    several nodes it is reported as a likely software fault, with lower severity.

Why it matters
    A GPU that fails (falls off the bus, hits an uncontained error, hangs) makes every CUDA call
    in its process fail with a generic error. The error is often raised asynchronously on the
    NCCL watchdog thread, with no rank in the line, and the other ranks then die with NCCL errors.
    The one process that reported the CUDA error first points at the GPU. The same error on many
    nodes at once is not hardware: a kernel bug or a bad input reached all ranks.

Evidence
    ``cuda_error`` events with one of the messages above, ``nccl_cuda_failure`` with the same
    strings, ``gpu_lost`` events. Identity (host, rank, local rank from ``[defaultN]:`` /
    ``[rankN]:`` prefixes) comes from the line; a node failure reported on a single host (LS604)
    names the host when the CUDA error does not.

Example
    ::

        [default3]:terminate called after throwing an instance of 'c10::CUDAError'
        [default3]:  what():  CUDA error: unknown error
        [default3]:Exception raised from query at ../aten/src/ATen/cuda/CUDAEvent.h:95 (most recent call first):

False positives
    An illegal memory access from the program's own kernel, on a single rank, looks exactly like
    a hardware fault; the finding says that a repeat on the same node makes hardware likely, a
    repeat elsewhere makes software likely. Errors after another process already crashed are
    reported as consequences.

Advice
    Check the node's kernel log for Xid lines (``dmesg -T | grep -i xid``) and run ``nvidia-smi``
    / ``dcgmi diag`` on it; resubmit excluding it. If the error is on several nodes, debug with
    ``CUDA_LAUNCH_BLOCKING=1`` and ``compute-sanitizer``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from logscope.detectors.base import Detector, JobView, culprit_of, event_of, field_of, order_key, when_row, who
from logscope.detectors.job_facts import capitalised, first_failure, place_of
from logscope.model import Category, Event, Finding, Role, Severity

GPU_FAULT = re.compile(
    r"unknown error|illegal memory access|unspecified launch failure|misaligned address|illegal instruction"
    r"|NVLink error|GPU is lost|fallen off the bus",
    re.IGNORECASE,
)


class GpuFault(Detector):
    code = "LS603"
    name = "gpu-fault"
    category = Category.HARDWARE
    requires: ClassVar[frozenset[Event]] = frozenset({Event.CUDA_ERROR, Event.NCCL_CUDA_FAILURE, Event.GPU_LOST})
    specificity = 65  # above LS604 node-failure (60): the GPU error is the finer-grained account

    def detect(self, job: JobView) -> list[Finding]:
        rows = [r for r in job.rows(Event.CUDA_ERROR, Event.NCCL_CUDA_FAILURE, Event.GPU_LOST)
                if event_of(r) == Event.GPU_LOST
                or GPU_FAULT.search(str(field_of(r, "message") or r.get("text") or ""))]
        if not rows:
            return []
        rows.sort(key=order_key)
        first = rows[0]
        culprit = culprit_of(first)
        places = sorted({p for p in (place_of(r) for r in rows) if p})
        lost = any(event_of(r) == Event.GPU_LOST for r in rows)
        software = len(places) >= 2 and not lost
        earlier = first_failure(job, before=first, exclude=(Event.CUDA_ERROR, Event.NCCL_CUDA_FAILURE,
                                                              Event.GPU_LOST, Event.CPP_EXCEPTION))
        message = str(field_of(first, "message") or first.get("text") or "").strip()
        processes = {(place_of(r), r.get("rank"), r.get("local_rank"), r.get("pid")) for r in rows}
        where = f" on {len(places)} nodes ({', '.join(places[:4])})" if len(places) > 1 else ""
        title = (f"{who(culprit)} lost its GPU: {message[:120]}" if not software
                 else f"CUDA error '{message[:80]}'{where}: likely a software fault")
        if earlier is not None:
            title = f"CUDA error in {who(culprit)} after an earlier failure"
        explanation = (
            f"{who(culprit)} reported '{message[:160]}' at {when_row(first)}"
            + (f"; {len(processes)} process(es) reported GPU errors{where}" if len(processes) > 1 else "")
            + ". "
            + ("The same error on several nodes at once is not a failing GPU: a kernel bug or bad input reached "
               "all of them. " if software else
               "Confined to one node, this is how a failing GPU shows up in the processes using it (the call "
               "that notices is often the NCCL watchdog's event query, with no rank in the line). ")
            + (f"It came after an earlier failure ({str(earlier.get('text'))[:120]}), so it is probably a "
               "consequence. " if earlier is not None else "")
            + "The other ranks' NCCL errors and terminations after it are consequences."
        )
        if earlier is not None:
            role, severity = Role.CONSEQUENCE, Severity.WARNING
        elif software:
            role, severity = Role.ROOT, Severity.ERROR
        else:
            role, severity = Role.ROOT, Severity.CRITICAL
        evidence: list[dict[str, Any]] = [first, *[r for r in rows if r is not first][:5]]
        return [self.finding(
            title=capitalised(title),
            explanation=capitalised(explanation),
            advice=("Debug the program: rerun with CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer on a small case."
                    if software else
                    "Check the node's kernel log for Xid lines (dmesg -T | grep -i xid), run nvidia-smi / dcgmi diag "
                    "on it, and resubmit excluding it (sbatch --exclude=NODE)."),
            rows=evidence,
            culprit=culprit,
            category=Category.CRASH if software else Category.HARDWARE,
            role=role,
            severity=severity,
            ranks=[culprit.rank] if culprit.rank is not None else [],
            hosts=[h for h in [culprit.node or culprit.host] if h],
            specificity=45 if software else None,
        )]


__all__ = ["GPU_FAULT", "GpuFault"]
