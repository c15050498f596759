"""LS602 ecc-error: an uncorrectable memory (ECC) error on a GPU or a node.

What it detects
    ``CUDA error: uncorrectable ECC error encountered`` raised in a process (as ``RuntimeError``,
    ``torch.AcceleratorError``, or ``what():`` of ``c10::Error`` / ``c10::AcceleratorError`` on
    the NCCL watchdog thread), double-bit ECC reports, and SLURM's ``*** JOB J ON NODE
    UNCORRECTABLE MEMORY ERROR AT T ***`` (host RAM). It names the process or node, and cites
    Xid 48/63/64/94/95 lines on the same node when the kernel log is included.

Why it matters
    An uncorrectable ECC error means data in GPU (or host) memory was corrupted. CUDA kills the
    context, the process dies, and every other rank fails after it with NCCL errors. Re-running on
    the same GPU usually fails again until the GPU is reset (pending row remap / page retirement)
    or replaced.

Evidence
    ``ecc_error`` events (CUDA, driver and SLURM lines) and ``xid`` events with ECC codes on the
    same node. Corrected (single-bit) ECC mentions are reported as context only.

Example
    ::

        RuntimeError: CUDA error: uncorrectable ECC error encountered
        CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.

False positives
    None known for uncorrectable errors: the driver only reports them when they happened. A log
    that merely prints ECC counters (``nvidia-smi -q``) is not flagged.

Advice
    Drain the node and reset or replace the GPU (``nvidia-smi -q -d ECC,ROW_REMAPPER``; a pending
    row remap needs a GPU reset); resubmit excluding it (``sbatch --exclude=NODE``). For host
    memory errors, report the node to the administrators.
"""

from __future__ import annotations

import re
from typing import ClassVar

from logscope.detectors.base import Detector, JobView, culprit_of, field_of, when_row, who
from logscope.detectors.job_facts import capitalised, place_of
from logscope.model import Category, Event, Finding, Role, Severity

_UNCORRECTABLE = re.compile(r"uncorrectable|double[ -]bit|\bDBE\b|uncontained", re.IGNORECASE)
ECC_XIDS = {48, 63, 64, 92, 94, 95}


class EccError(Detector):
    code = "LS602"
    name = "ecc-error"
    category = Category.HARDWARE
    requires: ClassVar[frozenset[Event]] = frozenset({Event.ECC_ERROR})
    specificity = 80

    def detect(self, job: JobView) -> list[Finding]:
        rows = job.rows_in_order(Event.ECC_ERROR)
        if not rows:
            return []
        fatal = [r for r in rows if _UNCORRECTABLE.search(f"{field_of(r, 'message') or ''} {r.get('text') or ''}")]
        first = fatal[0] if fatal else rows[0]
        culprit = culprit_of(first)
        place = place_of(first)
        host_memory = "MEMORY ERROR" in str(field_of(first, "message") or "")
        xids = [r for r in job.rows(Event.XID)
                if int(field_of(r, "xid") or 0) in ECC_XIDS and (place is None or place_of(r) == place)]
        processes = {(place_of(r), r.get("rank"), r.get("local_rank"), r.get("pid")) for r in fatal}
        what = "host memory (RAM)" if host_memory else "GPU memory"
        title = (f"Uncorrectable ECC error in {what}: {who(culprit)}" if fatal
                 else f"ECC error reported by {who(culprit)} (corrected)")
        explanation = (
            f"{who(culprit)} reported an {'uncorrectable' if fatal else 'ECC'} memory error in {what} at "
            f"{when_row(first)}. "
            + (f"{len(processes)} process(es) reported it. " if len(processes) > 1 else "")
            + (f"The kernel log has {len(xids)} ECC Xid line(s) on the same node. " if xids else "")
            + ("The corrupted memory killed the process; the other ranks' errors after it are consequences."
               if fatal else "Corrected errors do not stop a job; a rising rate announces a failing GPU.")
        )
        return [self.finding(
            title=capitalised(title),
            explanation=capitalised(explanation),
            advice=("Drain the node and reset or replace the GPU (nvidia-smi -q -d ECC,ROW_REMAPPER); resubmit with "
                    f"sbatch --exclude={place or 'NODE'}." if not host_memory else
                    f"Report node {place or '(see evidence)'} to the administrators and resubmit excluding it."),
            rows=[first, *[r for r in fatal if r is not first][:3], *xids[:3]],
            culprit=culprit if fatal else None,
            role=Role.ROOT if fatal else Role.CONTEXT,
            severity=Severity.CRITICAL if fatal else Severity.WARNING,
            ranks=[culprit.rank] if culprit.rank is not None else [],
            hosts=[place] if place else [],
        )]


__all__ = ["EccError"]
