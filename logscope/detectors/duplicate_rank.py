"""LS202 duplicate-rank: the same global rank is held by two processes.

What it detects
    One rank number claimed twice in one world: two hosts reporting the same ``rank`` in the
    same NCCL communicator (same ``commId``, or the first communicator of each process when
    NCCL prints no ``commId``), the same ``GLOBAL_RANK`` banner from two hosts, or a store-based
    barrier that counted more workers than the world size (``worker_count=32`` with
    ``world_size=16``).

Why it matters
    Duplicate ranks come from launch mistakes: every node using ``--node_rank 0``, ``RANK``
    computed from ``SLURM_LOCALID`` instead of ``SLURM_PROCID``, or ``--ntasks-per-node`` greater
    than one with torchrun (each task spawning a full set of workers). The processes with the
    same rank overwrite each other's rendezvous keys; the job hangs at init or NCCL fails.

Evidence
    NCCL ``Init COMPLETE`` lines (``rank R nranks N ... commId``), Lightning's ``initializing
    ddp: GLOBAL_RANK`` lines, c10d store-barrier timeouts.

Example
    ::

        gpu-node01:4100:4180 [3] NCCL INFO comm 0x5621 rank 3 nranks 16 cudaDev 3 busId 3b000 commId 0x7d1a - Init COMPLETE
        gpu-node02:5120:5199 [3] NCCL INFO comm 0x55f0 rank 3 nranks 16 cudaDev 3 busId 3b000 commId 0x7d1a - Init COMPLETE

False positives
    Sub-communicators (tensor/pipeline parallel groups) legitimately reuse small ranks on every
    node; they are told apart by ``commId``, or ignored when NCCL prints none. Without
    ``commId``, ranks 0..N-1 each seen the same number of times are complete, separate worlds
    (each finished init, which a world holding a rank twice cannot): that is LS203 split-world,
    not flagged here. Logs of two jobs analysed together can look like duplicates.

Advice
    Check how RANK/node rank reach each process: escape ``\\$SLURM_PROCID`` in the launcher, use
    one srun task per node with torchrun (``--ntasks-per-node=1``), and let torchrun set RANK.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, compact_ranks, field_of
from logscope.detectors.collective_mismatch import communicator_ids
from logscope.model import Category, Event, Finding, Severity


class DuplicateRank(Detector):
    code = "LS202"
    name = "duplicate-rank"
    category = Category.LAUNCH
    requires: ClassVar[frozenset[Event]] = frozenset(
        {Event.NCCL_INIT, Event.DUPLICATE_RANK_BANNER, Event.STORE_ERROR})
    specificity = 80

    def detect(self, job: JobView) -> list[Finding]:
        rows, ranks, how = self._from_nccl(job)
        if not rows:
            rows, ranks, how = self._from_banner(job)
        if not rows:
            rows, ranks, how = self._from_barrier(job)
        if not rows:
            return []
        return [self.finding(
            title=f"Duplicate global rank(s) {compact_ranks(ranks) if ranks else ''}: {how}".replace("  ", " "),
            explanation=("Two processes hold the same rank in one world. Their rendezvous and NCCL bootstrap "
                         "messages collide, so the world cannot form correctly; this comes from the launch, "
                         "not from the training code."),
            advice=("Make each process's rank unique: escape \\$SLURM_PROCID in the launcher, run one srun task per "
                    "node under torchrun (--ntasks-per-node=1), and let torchrun set RANK/LOCAL_RANK."),
            rows=rows,
            severity=Severity.CRITICAL,
            ranks=ranks,
        )]

    @staticmethod
    def _from_nccl(job: JobView) -> tuple[list[dict[str, Any]], list[int], str]:
        init = job.of(Event.NCCL_INIT)
        if init.height == 0:
            return [], [], ""
        if init.height <= CLASH_IN_PYTHON_UP_TO and not _may_clash(job):
            return [], [], ""
        ids = communicator_ids(job)
        rows = init.with_columns(pl.col("fields").struct.field("comm").alias("comm"),
                                 pl.col("fields").struct.field("comm_rank").alias("crank"),
                                 pl.col("fields").struct.field("comm_id").alias("cid"),
                                 pl.col("fields").struct.field("nranks").alias("n")).join(
            ids, on=["host", "pid", "comm"], how="left")
        if rows["cid"].null_count() == rows.height:
            # No commId: only the first communicator of each process, when it is the largest, is
            # known to be the world.
            top = rows["n"].max()
            rows = rows.filter(pl.col("communicator").str.ends_with("#0") & (pl.col("n") == top))
            # Every rank 0..N-1 the same number of times: complete, separate worlds of N that each
            # finished init (NCCL refuses a rank that checks in twice). That is LS203 split-world.
            counts = rows.group_by("crank").len()["len"]
            if counts.len() == top and counts.n_unique() == 1 and counts[0] > 1:
                return [], [], ""
        clash = rows.group_by("communicator", "crank").agg(pl.col("host").n_unique().alias("hosts")).filter(
            pl.col("hosts") > 1)
        if clash.height == 0:
            return [], [], ""
        ranks = sorted(int(r) for r in clash["crank"].unique().to_list())
        evidence = rows.join(clash.select("communicator", "crank"), on=["communicator", "crank"]).sort(
            "crank", "host").drop("comm", "crank", "cid", "n", "communicator")
        hosts = sorted(set(evidence["host"].drop_nulls().to_list()))
        return evidence.head(6).to_dicts(), ranks, f"NCCL reports them on {len(hosts)} hosts ({', '.join(hosts[:4])})"

    @staticmethod
    def _from_banner(job: JobView) -> tuple[list[dict[str, Any]], list[int], str]:
        if not job.has(Event.DUPLICATE_RANK_BANNER):
            return [], [], ""
        rows = job.of(Event.DUPLICATE_RANK_BANNER).with_columns(
            pl.coalesce("host", "node", "file").alias("place"))
        clash = rows.group_by("rank").agg(pl.col("place").n_unique().alias("n"), pl.len().alias("count")).filter(
            (pl.col("n") > 1) | (pl.col("count") > 1))
        if clash.height == 0:
            return [], [], ""
        ranks = sorted(int(r) for r in clash["rank"].drop_nulls().to_list())
        return rows.filter(pl.col("rank").is_in(ranks)).drop("place").head(6).to_dicts(), ranks, \
            "the GLOBAL_RANK banner is printed more than once"

    @staticmethod
    def _from_barrier(job: JobView) -> tuple[list[dict[str, Any]], list[int], str]:
        out = []
        for row in job.rows(Event.STORE_ERROR):
            world, count = field_of(row, "world_size"), field_of(row, "count")
            if world is not None and count is not None and int(count) > int(world):
                out.append(row)
        if not out:
            return [], [], ""
        row = out[0]
        return out[:6], [], (f"the store barrier counted {field_of(row, 'count')} workers for a world of "
                             f"{field_of(row, 'world_size')}")


# Up to this many NCCL init lines, whether a rank of a communicator checked in on two hosts is read
# in Python (the usual answer, no, took three polars queries, ~0.5 ms a small job); polars then
# works out the evidence of a clash, as for more lines.
CLASH_IN_PYTHON_UP_TO = 4096


def _may_clash(job: JobView) -> bool:
    """Whether DuplicateRank._from_nccl's queries could find a clash: its rows, join (null keys
    match nothing), split-world check and host count per (communicator, rank) read in Python."""
    ids = {(host, pid, comm): communicator for host, pid, comm, communicator in
           communicator_ids(job).select("host", "pid", "comm", "communicator").iter_rows()}
    rows = []  # (communicator, comm_rank, comm_id, nranks, host) of each init line
    for row in job.rows(Event.NCCL_INIT):
        host, pid, comm = row.get("host"), row.get("pid"), field_of(row, "comm")
        communicator = None if host is None or pid is None or comm is None else ids.get((host, pid, comm))
        rows.append((communicator, field_of(row, "comm_rank"), field_of(row, "comm_id"), field_of(row, "nranks"), host))
    if all(comm_id is None for _, _, comm_id, _, _ in rows):
        top = max((n for _, _, _, n, _ in rows if n is not None), default=None)
        rows = [r for r in rows if r[0] is not None and r[0].endswith("#0") and top is not None and r[3] == top]
        counts = Counter(rank for _, rank, _, _, _ in rows)
        if len(counts) == top and len(set(counts.values())) == 1 and next(iter(counts.values())) > 1:
            return False  # complete, separate worlds: LS203
    hosts: dict[tuple[Any, Any], set[Any]] = defaultdict(set)
    for communicator, rank, _, _, host in rows:
        hosts[(communicator, rank)].add(host)
    return any(len(on) > 1 for on in hosts.values())
