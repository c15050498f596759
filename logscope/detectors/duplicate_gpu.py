"""LS206 duplicate-gpu: two ranks of one communicator were placed on the same GPU.

What it detects
    NCCL refusing to create a communicator because two of its ranks use the same device:
    ``Duplicate GPU detected : rank 2 and rank 10 both on CUDA device 50000`` (``init.cc``,
    returned as ``ncclInvalidUsage``). It names the host, the two ranks and the device's bus id,
    and counts, from NCCL's ``Init`` lines, how many processes on that host shared how many GPUs.

Why it matters
    Every rank needs its own GPU. Two on one device means the launch placed more processes on a
    node than it has GPUs, or each process picked the wrong device: ``torch.cuda.set_device`` not
    called with ``LOCAL_RANK`` (everyone on ``cuda:0``), ``CUDA_VISIBLE_DEVICES`` narrowed to one
    GPU, ``srun --ntasks-per-node`` combined with ``torchrun --nproc_per_node``, or containers on
    different nodes sharing one hostname (NCCL then believes they are on the same host). Init fails
    on every rank with ``invalid usage``.

Evidence
    ``nccl_duplicate_gpu`` events; ``nccl_init``/``nccl_init_start`` events (``cudaDev``,
    ``busId``) on the same host.

Example
    ::

        node3:4521:4521 [0] NCCL WARN Duplicate GPU detected : rank 2 and rank 10 both on CUDA device 50000
        torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3

False positives
    None known: NCCL prints it only when the bus ids collide.

Advice
    Call ``torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))`` before creating the process
    group; launch one task per node with torchrun (``--ntasks-per-node=1``) or one task per GPU
    without it, not both; do not narrow ``CUDA_VISIBLE_DEVICES`` per node to a single GPU; give
    containers their node's hostname.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, culprit_of, field_of, who
from logscope.detectors.job_facts import capitalised, place_of
from logscope.model import Category, Event, Finding, Severity


class DuplicateGpu(Detector):
    code = "LS206"
    name = "duplicate-gpu"
    category = Category.LAUNCH
    requires: ClassVar[frozenset[Event]] = frozenset({Event.NCCL_DUPLICATE_GPU})
    specificity = 85

    def detect(self, job: JobView) -> list[Finding]:
        rows = job.rows_in_order(Event.NCCL_DUPLICATE_GPU)
        if not rows:
            return []
        first = rows[0]
        pairs = sorted({(int(field_of(r, "comm_rank") or 0), int(field_of(r, "value") or 0)) for r in rows})
        ranks = sorted({r for pair in pairs for r in pair})
        device = field_of(first, "bus_id")
        place = place_of(first)
        share = self._sharing(job, place)
        # Neither rank of a pair is at fault: the launch placed them so. The node is where it happened.
        culprit = replace(culprit_of(first), rank=None, local_rank=None)
        title = (f"Ranks {pairs[0][0]} and {pairs[0][1]} were both placed on GPU {device}"
                 + (f" on {place}" if place else "") + (f" ({len(pairs)} such pairs)" if len(pairs) > 1 else ""))
        explanation = (
            f"NCCL found two ranks of one communicator on the same CUDA device (bus id {device}) and refused to "
            f"initialise (ncclInvalidUsage); {who(culprit_of(first))} reported it. "
            + (share + " " if share else "")
            + "Every rank needs its own GPU: the launch put more processes on the node than it has GPUs, or the "
            "processes did not select their device by LOCAL_RANK. The init errors on the other ranks are "
            "consequences."
        )
        return [self.finding(
            title=title,
            explanation=capitalised(explanation),
            advice=("Call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) before init_process_group; use either "
                    "srun --ntasks-per-node=1 with torchrun --nproc_per_node=<GPUs> or one srun task per GPU without "
                    "torchrun, not both; don't narrow CUDA_VISIBLE_DEVICES to one GPU; give containers distinct "
                    "hostnames."),
            rows=rows[:6],
            culprit=culprit,
            severity=Severity.CRITICAL,
            ranks=ranks,
            hosts=[place] if place else [],
        )]

    @staticmethod
    def _sharing(job: JobView, place: str | None) -> str:
        """"On node3, 16 processes initialised NCCL on 8 distinct GPUs" when the Init lines say so."""
        if not place:
            return ""
        init = job.of(Event.NCCL_INIT, Event.NCCL_INIT_START).filter(
            (pl.col("node") == place) | (pl.col("host") == place))
        if init.height == 0:
            return ""
        procs = init.select(pl.col("pid").n_unique()).item()
        gpus = init.select(pl.col("fields").struct.field("bus_id").n_unique()).item()
        if procs and gpus and procs > gpus:
            return f"On {place}, {procs} processes initialised NCCL on only {gpus} distinct GPU(s)."
        return ""


__all__ = ["DuplicateGpu"]
