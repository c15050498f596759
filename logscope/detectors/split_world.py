"""LS203 split-world: the nodes formed separate worlds instead of one.

What it detects
    NCCL's largest communicator is smaller than the number of processes the job started: each
    node (or group of nodes) initialised its own world, typically with the same ranks 0..k-1 on
    every node and ``nranks`` equal to the processes of one node. Also flagged when torchrun was
    told several nodes but each node's rendezvous came back with a world of one node.

Why it matters
    Training then runs as several independent jobs that never exchange gradients: it may even
    "work", at a fraction of the intended batch size, with each node overwriting the others'
    checkpoints. It comes from a rendezvous that does not span nodes: ``MASTER_ADDR=localhost``,
    a different ``--rdzv_endpoint`` or ``--rdzv_id`` per node, or ``--nnodes 1`` on each node.

Evidence
    NCCL ``Init COMPLETE`` lines (``nranks`` and the hosts holding each rank), torchrun launch
    configs (``min_nodes``/``max_nodes``) and rendezvous results (``group_world_size``).

Example
    ::

        gpu-node01:4100:4180 [0] NCCL INFO comm 0x5621 rank 0 nranks 8 cudaDev 0 busId 1b000 - Init COMPLETE
        gpu-node02:5120:5199 [0] NCCL INFO comm 0x55f0 rank 0 nranks 8 cudaDev 0 busId 1b000 - Init COMPLETE

False positives
    Jobs that deliberately run one independent replica per node (hyper-parameter sweeps inside
    one allocation) look exactly like this.

Advice
    Point every node at the same rendezvous: ``MASTER_ADDR=$(scontrol show hostnames
    $SLURM_JOB_NODELIST | head -n 1)``, the same ``--rdzv_endpoint`` and ``--rdzv_id
    $SLURM_JOB_ID`` everywhere, ``--nnodes $SLURM_NNODES``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, field_of, node_host_or_file
from logscope.model import Category, Event, Finding, Severity


class SplitWorld(Detector):
    code = "LS203"
    name = "split-world"
    category = Category.LAUNCH
    requires: ClassVar[frozenset[Event]] = frozenset({Event.NCCL_INIT, Event.RENDEZVOUS})
    specificity = 75

    def detect(self, job: JobView) -> list[Finding]:
        init = job.of(Event.NCCL_INIT)
        if init.height:
            nranks, comm_rank = pl.col("fields").struct.field("nranks"), pl.col("fields").struct.field("comm_rank")
            if init.height <= COUNTS_IN_PYTHON_UP_TO:
                world, processes, hosts, rank0_hosts = _counts(job.rows(Event.NCCL_INIT))
            else:  # every count in one query (five cost ~0.4 ms a small job)
                world, processes, hosts, rank0_hosts = init.select(
                    nranks.max().fill_null(0).alias("world"),
                    pl.struct("host", "pid").n_unique().alias("processes"),
                    pl.col("host").drop_nulls().n_unique().alias("hosts"),
                    pl.col("host").filter((nranks == nranks.max()) & (comm_rank == 0)).drop_nulls().n_unique()
                    .alias("rank0_hosts"),
                ).row(0)
            if processes > world and hosts > 1 and rank0_hosts > 1:
                evidence = init.filter((nranks == world) & (comm_rank == 0)).unique(
                    subset=["host"], keep="first", maintain_order=True)
                groups = processes // world if world else 0
                return [self.finding(
                    title=(f"Split world: {processes} processes on {hosts} hosts formed "
                           f"{groups or 'several'} separate worlds of {world} ranks"),
                    explanation=(f"The largest NCCL communicator has {world} ranks, but {processes} processes "
                                 f"initialised NCCL and rank 0 of that size exists on {rank0_hosts} hosts. "
                                 "Each group trained on its own instead of as one job."),
                    advice=self._advice(),
                    rows=evidence,
                    severity=Severity.CRITICAL,
                )]
        return self._from_rendezvous(job)

    def _from_rendezvous(self, job: JobView) -> list[Finding]:
        # A few rows a node and round: read as the dicts other detectors read too.
        config = [v for v in (field_of(r, "nnodes") for r in job.rows(Event.LAUNCH_CONFIG)) if v is not None]
        rdzv = [r for r in job.rows(Event.RENDEZVOUS) if field_of(r, "group_world_size") is not None]
        if not config or not rdzv:
            return []
        wanted = max(int(str(v).split(":")[-1]) for v in config if str(v).split(":")[-1].isdigit()) \
            if any(str(v).split(":")[-1].isdigit() for v in config) else None
        got = max(field_of(r, "group_world_size") for r in rdzv)
        places = len({node_host_or_file(r) for r in rdzv})
        if wanted and got is not None and got < wanted and places > 1:
            return [self.finding(
                title=f"Split world: torchrun expected {wanted} nodes but each rendezvous formed {got}",
                explanation=("The launch config asks for several nodes, yet the rendezvous on each node completed "
                             f"with a group of {got}: the nodes did not meet at the same rendezvous."),
                advice=self._advice(),
                rows=rdzv[:4],
                severity=Severity.CRITICAL,
            )]
        return []

    @staticmethod
    def _advice() -> str:
        return ("Give every node the same rendezvous: MASTER_ADDR from `scontrol show hostnames "
                "$SLURM_JOB_NODELIST | head -n 1`, one --rdzv_endpoint and --rdzv_id $SLURM_JOB_ID, "
                "--nnodes $SLURM_NNODES.")


# Up to this many NCCL init lines, LS203's counts are read from the rows in Python (one polars
# query, ~0.3 ms a small job, beyond).
COUNTS_IN_PYTHON_UP_TO = 4096


def _counts(rows: list[dict[str, Any]]) -> tuple[int, int, int, int]:
    """The largest communicator's size (0 if none says), the processes (host, pid; null a value),
    the hosts, and the hosts with rank 0 of a largest communicator: the polars query's counts."""
    sizes = [field_of(row, "nranks") for row in rows]
    top = max((size for size in sizes if size is not None), default=None)
    processes = len({(row.get("host"), row.get("pid")) for row in rows})
    hosts = len({row["host"] for row in rows if row.get("host") is not None})
    rank0_hosts = len({row["host"] for row, size in zip(rows, sizes, strict=True)
                       if top is not None and size == top and field_of(row, "comm_rank") == 0
                       and row.get("host") is not None})
    return (top if top is not None else 0), processes, hosts, rank0_hosts
