"""LS601 gpu-xid: the NVIDIA driver reported a GPU error (an Xid) on a node.

What it detects
    ``NVRM: Xid (PCI:dddd:bb:dd): N, ...`` lines (kernel log, ``dmesg``/journal, or a job log
    that collects them), with or without ``pid=``/``name=``, MIG ``GPU-I`` suffixes and ``dmesg
    -T`` timestamps. It explains the Xid and names the node, the GPU's PCI address and, when
    NCCL's ``Init COMPLETE`` lines on that node give the same ``busId``, the rank that used it.
    Common Xids:

    ====  ======================================================================================
    13    graphics engine exception: often an application fault (illegal instruction/address)
    31    GPU memory page fault (MMU fault): usually an illegal memory access by a kernel
    43    GPU stopped processing: the faulting context was killed, usually after 13/31
    45    preemptive cleanup after a previous error: a consequence, never the cause
    48    double-bit ECC error: uncorrectable GPU memory error
    63    ECC page retirement / row remapping recorded: reset the GPU to apply it
    64    ECC page retirement / row remapping *failed*: the GPU needs service
    74    NVLink error
    79    GPU has fallen off the bus: it stopped answering on PCIe
    92    high single-bit ECC error rate
    94    contained ECC error: the application was stopped, the GPU is usable after a reset
    95    uncontained ECC error: every application on the GPU is affected; reset required
    ====  ======================================================================================

Why it matters
    A GPU fault kills or hangs the process that owns the GPU, and the whole job goes down with
    it; the processes themselves only print ``CUDA error: unknown error`` or NCCL failures. The
    Xid line, usually outside the job's own output, says what actually happened and on which GPU.

Evidence
    ``xid`` events: the Xid number, the PCI address, ``pid``/``name`` when present. NCCL
    ``Init COMPLETE`` lines (``busId``) map the PCI address to a rank on the same host.

Example
    ::

        [Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.

False positives
    Xid 13/31/43 are very often caused by the application itself (an out-of-bounds access in a
    custom kernel). When the same application-class Xid appears on several nodes, the finding
    says so and calls it a likely software fault instead of hardware. Xid 45, 63 and 92 alone
    are reported as context, not as the cause.

Advice
    Drain the node and have it checked (``nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT``,
    ``dcgmi diag -r 3``); resubmit excluding it (``sbatch --exclude=NODE``). For 13/31/43 on
    several nodes, debug the kernel first (``CUDA_LAUNCH_BLOCKING=1``, ``compute-sanitizer``).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, evidence_of, field_of, when_row
from logscope.detectors.completion import clean_end
from logscope.detectors.job_facts import place_of
from logscope.knowledge.xids import known_xids, xid_is_critical, xid_meaning
from logscope.model import Category, Culprit, Event, Finding, Role, Severity

# What each Xid means, and whether it is a cause, is data: logscope/knowledge/xids.toml.
XID_TABLE = known_xids()
_PCI = re.compile(r"(?:PCI:)?([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})")


def gpu_of_bus(job: JobView, place: str | None, pci: str | None) -> tuple[int | None, int | None, int | None]:
    """(rank, local rank, cudaDev) of the process whose NCCL busId on ``place`` is the PCI address ``pci``."""
    m = _PCI.search(pci or "")
    if not m or not place:
        return None, None, None
    domain, bus, device = (int(g, 16) for g in m.groups())
    init = job.of(Event.NCCL_INIT).filter((pl.col("node") == place) | (pl.col("host") == place))
    for row in init.to_dicts():
        raw = str(field_of(row, "bus_id") or "").lower().removeprefix("0x")
        try:
            value = int(raw, 16)
        except ValueError:
            continue
        if (value >> 20, (value >> 12) & 0xFF, (value >> 4) & 0xFF) == (domain, bus, device):
            dev = field_of(row, "cuda_dev")
            # The same process's other lines (torchrun's "failed ... local_rank: L (pid: P)") give its local rank.
            same = job.events.filter((pl.col("host") == row.get("host")) & (pl.col("pid") == row.get("pid")))
            local = same["local_rank"].drop_nulls()
            return (row.get("rank"), int(local[0]) if local.len() else None,
                    int(dev) if dev is not None else None)
    return None, None, None


class GpuXid(Detector):
    code = "LS601"
    name = "gpu-xid"
    category = Category.HARDWARE
    requires: ClassVar[frozenset[Event]] = frozenset({Event.XID})
    specificity = 75

    def detect(self, job: JobView) -> list[Finding]:
        rows = job.rows_in_order(Event.XID)
        if not rows:
            return []
        causes = [r for r in rows if xid_meaning(int(field_of(r, "xid") or 0))[1] in ("hardware", "app")]
        first = causes[0] if causes else rows[0]
        xid = int(field_of(first, "xid") or 0)
        meaning, kind = xid_meaning(xid)
        place = place_of(first)
        pci = field_of(first, "bus_id")
        rank, local_rank, dev = gpu_of_bus(job, place, pci)
        codes = sorted({int(field_of(r, "xid") or 0) for r in rows})
        same_kind_places = {p for p in (place_of(r) for r in rows if int(field_of(r, "xid") or 0) == xid) if p}
        software = kind == "app" and len(same_kind_places) >= 2
        gpu = f"GPU {pci}" + (f" (cudaDev {dev})" if dev is not None else "")
        where = f"{place or 'an unnamed node'}, {gpu}" + (f", rank {rank}" if rank is not None else "")
        title = f"Xid {xid} on {where}: {meaning}"
        where += f" (local rank {local_rank})" if local_rank is not None else ""
        others = [f"Xid {c}: {xid_meaning(c)[0]}" for c in codes if c != xid]
        alone = not causes and self._all_that_failed(job)
        explanation = (
            f"The NVIDIA driver reported Xid {xid} on {where} at {when_row(first)}: {meaning}. "
            + (f"Also reported: {'; '.join(others)}. " if others else "")
            + (f"The same Xid appeared on {len(same_kind_places)} nodes ({', '.join(sorted(same_kind_places)[:4])}); "
               "an application-class Xid on several nodes at once points at the program (an illegal memory access "
               "in a kernel), not at the hardware. " if software else "")
            + ("Errors printed by the job's processes after it (CUDA errors, NCCL failures, timeouts) are "
               "consequences." if causes else
               "No Xid here stops a job by itself, and nothing else in these logs failed: the GPU needs a reset (and a "
               "check) before it runs a job again." if alone else
               "No Xid here stops a job by itself; see the other findings for the cause.")
        )
        if alone:
            # Nothing else in these logs went wrong (no error of a process, no clean end): a GPU
            # that needs a reset (row remapping pending, a high single-bit ECC rate) is all they show.
            role, severity = Role.ROOT, Severity.ERROR
        elif not causes:
            role, severity = Role.CONTEXT, Severity.WARNING
        elif software:
            role, severity = Role.ROOT, Severity.ERROR
        else:
            role = Role.ROOT
            severity = Severity.CRITICAL if xid_is_critical(xid) else Severity.ERROR
        evidence: list[dict[str, Any]] = [first, *[r for r in rows if r is not first][:5]]
        return [self.finding(
            title=title,
            explanation=explanation,
            advice=("Debug the kernel first (CUDA_LAUNCH_BLOCKING=1, compute-sanitizer): the same fault on several "
                    "nodes is unlikely to be hardware." if software else
                    "Drain the node and have the GPU checked (nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT; "
                    "dcgmi diag -r 3); resubmit with sbatch --exclude=" + (place or "NODE") + "."),
            rows=evidence,
            culprit=Culprit(host=place, node=place, rank=rank, local_rank=local_rank, time=first.get("time"),
                            evidence=evidence_of(first)) if causes or alone else None,
            category=Category.CRASH if software else Category.HARDWARE,
            role=role,
            severity=severity,
            ranks=[rank] if rank is not None else [],
            hosts=[place] if place else [],
            specificity=45 if software else None,
        )]

    @staticmethod
    def _all_that_failed(job: JobView) -> bool:
        """Whether the driver's Xid lines are the only failure these logs show: no other line of
        error severity, and no clean end."""
        others = job.events.filter(pl.col("severity").is_in([Severity.ERROR.value, Severity.CRITICAL.value])
                                   & (pl.col("event") != Event.XID.value))
        return others.height == 0 and clean_end(job) is None


__all__ = ["XID_TABLE", "GpuXid", "gpu_of_bus", "xid_meaning"]
