"""LS102 collective-mismatch: ranks of one communicator ran different collectives at the same step.

What it detects
    Two ranks of the same communicator issuing *different* operations at the same position:
    NCCL COLL lines with the same ``opCount`` but a different op (``AllReduce`` on one rank,
    ``Broadcast`` on another), or c10d watchdog timeouts on the same ``SeqNum`` with different
    ``OpType``. It does not compare element counts yet (``count`` in COLL lines, ``NumelIn`` in
    watchdog timeouts; the parsers do not keep them), so ranks that run the same operation with
    different sizes at the same position are missed.

Why it matters
    NCCL matches collectives by order, not by name. If one rank takes a code path the others
    do not (``if rank == 0: dist.broadcast(...)``, a conditional evaluation, an uneven last batch),
    the ranks call different collectives at the same opCount and deadlock or corrupt data. The
    resulting hang looks like any other timeout.

Evidence
    ``NCCL_DEBUG_SUBSYS=COLL`` lines (``AllReduce: opCount 1f ... comm 0x... [nranks=16]``), grouped
    per communicator (by ``commId`` when the Init lines give it, else by size and creation order),
    and ``WorkNCCL(SeqNum=..., OpType=...)`` from watchdog timeouts.

Example
    ::

        node01:4242:4242 [0] NCCL INFO AllReduce: opCount 1f sendbuff 0x7f... comm 0x55d0 [nranks=16] ...
        node02:5151:5151 [5] NCCL INFO Broadcast: opCount 1f sendbuff 0x7f... comm 0x5610 [nranks=16] ...

False positives
    Communicators are matched across processes by their ``commId`` or by (size, creation order);
    a job that creates sub-communicators in a rank-dependent order without NCCL printing
    ``commId`` can be mismatched by the fallback. COLL lines are kept for the first and last
    collectives of each communicator only, so a mismatch in the middle of a long run is missed.

Advice
    Find the collective call that only some ranks reach: compare the Python stack of the quiet or
    mismatching rank with the others (``py-spy dump``, Flight Recorder). Make every rank execute
    the same sequence of collectives; move rank-conditional logic outside them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, compact_ranks, culprit_of
from logscope.model import Category, Culprit, Event, Finding, Severity


def communicator_ids(job: JobView) -> pl.DataFrame:
    """(host, pid, comm) -> a job-wide communicator id.

    NCCL's ``commId`` is the same on every rank of a communicator. Without it, the k-th
    communicator a process created, with its size, is the best stand-in. Worked out once per view
    (LS102 and LS202 read it), in one query (seven eager ones cost ~1 ms a small job).
    """
    ids: pl.DataFrame = job.remember("communicator ids", lambda: _communicator_ids(job))
    return ids


# Up to this many NCCL init and COLL lines, the ids are worked out in Python (two selects, ~0.25 ms a
# small job) rather than by one polars query (~0.6 ms).
IDS_IN_PYTHON_UP_TO = 4096
_IDS_SCHEMA = {"host": pl.String(), "pid": pl.Int64(), "comm": pl.String(), "communicator": pl.String()}


def _communicator_ids(job: JobView) -> pl.DataFrame:
    init, coll = job.of(Event.NCCL_INIT), job.of(Event.NCCL_COLL)
    if init.height + coll.height > IDS_IN_PYTHON_UP_TO:
        return _communicator_ids_in_polars(init, coll)
    said = pl.col("fields").struct
    first: dict[tuple[Any, Any, Any], tuple[Any, Any]] = {}  # (host, pid, comm) -> its first (comm_id, nranks)
    for host, pid, comm, comm_id, nranks in init.select("host", "pid", said.field("comm"), said.field("comm_id"),
                                                        said.field("nranks")).rows():
        first.setdefault((host, pid, comm), (comm_id, nranks))
    for host, pid, comm, nranks in coll.select("host", "pid", said.field("comm"), said.field("nranks")).rows():
        first.setdefault((host, pid, comm), (None, nranks))
    ordinal: dict[tuple[Any, Any], int] = {}
    communicators = []
    for (host, pid, _), (comm_id, nranks) in first.items():
        n = ordinal[(host, pid)] = ordinal.get((host, pid), -1) + 1
        communicators.append(comm_id if comm_id is not None else f"n{'?' if nranks is None else nranks}#{n}")
    return pl.DataFrame([(*key, communicator) for key, communicator in zip(first, communicators, strict=True)],
                        schema=_IDS_SCHEMA, orient="row")


def _communicator_ids_in_polars(init_rows: pl.DataFrame, coll_rows: pl.DataFrame) -> pl.DataFrame:
    init = init_rows.lazy().select(
        "host", "pid",
        pl.col("fields").struct.field("comm").alias("comm"),
        pl.col("fields").struct.field("comm_id").alias("comm_id"),
        pl.col("fields").struct.field("nranks").alias("nranks"),
    )
    coll = coll_rows.lazy().select(
        "host", "pid",
        pl.col("fields").struct.field("comm").alias("comm"),
        pl.lit(None, dtype=pl.String).alias("comm_id"),
        pl.col("fields").struct.field("nranks").alias("nranks"),
    )
    both = pl.concat([init, coll]).unique(subset=["host", "pid", "comm"], keep="first", maintain_order=True)
    return both.with_columns(
        pl.int_range(pl.len()).over("host", "pid").alias("ordinal")
    ).with_columns(
        pl.coalesce(
            "comm_id",
            pl.concat_str(pl.lit("n"), pl.col("nranks").cast(pl.String).fill_null("?"), pl.lit("#"),
                          pl.col("ordinal").cast(pl.String)),
        ).alias("communicator")
    ).select("host", "pid", "comm", "communicator").collect(engine="in-memory")


class CollectiveMismatch(Detector):
    code = "LS102"
    name = "collective-mismatch"
    category = Category.HANG
    requires: ClassVar[frozenset[Event]] = frozenset({Event.NCCL_COLL, Event.WATCHDOG_TIMEOUT})
    specificity = 70

    def detect(self, job: JobView) -> list[Finding]:
        findings = self._from_coll(job)
        findings += self._from_watchdog(job)
        return findings[:1] if findings else []

    def _from_coll(self, job: JobView) -> list[Finding]:
        coll = job.of(Event.NCCL_COLL)
        if coll.height == 0:
            return []
        ids = communicator_ids(job)
        rows = coll.with_columns(
            pl.col("fields").struct.field("comm").alias("comm"),
            pl.col("fields").struct.field("op_count").alias("op_count"),
            pl.col("fields").struct.field("op").str.to_lowercase().alias("op"),
        ).join(ids, on=["host", "pid", "comm"], how="left")
        per_position = rows.group_by("communicator", "op_count").agg(
            pl.col("op").n_unique().alias("ops"), pl.len().alias("n"))
        bad = per_position.filter(pl.col("ops") > 1).sort("op_count", "communicator")
        if bad.height == 0:
            return []
        first = bad.row(0, named=True)
        at = rows.filter((pl.col("communicator") == first["communicator"]) & (pl.col("op_count") == first["op_count"]))
        counts = at.group_by("op").agg(pl.col("rank").drop_nulls().unique().sort().alias("ranks"), pl.len().alias("n"))
        counts = counts.sort("n", "op")
        minority = counts.row(0, named=True)
        majority = counts.row(counts.height - 1, named=True)
        odd_ranks = [int(r) for r in minority["ranks"]]
        evidence = pl.concat([at.filter(pl.col("op") == minority["op"]).head(3),
                              at.filter(pl.col("op") == majority["op"]).head(2)]).drop(
            "comm", "op_count", "op", "communicator")
        return [self.finding(
            title=(f"Collective mismatch at opCount {first['op_count']:#x}: "
                   f"{'rank(s) ' + compact_ranks(odd_ranks) if odd_ranks else 'some ranks'} ran {minority['op']} "
                   f"while the others ran {majority['op']}"),
            explanation=("NCCL pairs collectives by their order in the communicator. At this position the "
                         "ranks called different operations, so they wait on each other forever (or exchange "
                         "the wrong data)."),
            advice=("Find the code path only these ranks take around this collective (rank-conditional "
                    "logic, uneven data); every rank must issue the same collectives in the same order."),
            rows=evidence,
            severity=Severity.CRITICAL,
            ranks=odd_ranks,
            hosts=_hosts_of(at, odd_ranks),
        )]

    def _from_watchdog(self, job: JobView) -> list[Finding]:
        timeouts = job.of(Event.WATCHDOG_TIMEOUT).with_columns(
            pl.col("fields").struct.field("seq").alias("seq"),
            pl.col("fields").struct.field("op").str.to_uppercase().str.strip_chars("_").alias("op"),
            pl.col("fields").struct.field("pg").fill_null("0").alias("pg"),
        )
        timeouts = timeouts.filter(pl.col("seq").is_not_null())  # gloo's send/recv timeouts carry no position
        if timeouts.height == 0:
            return []
        per_seq = timeouts.group_by("pg", "seq").agg(pl.col("op").n_unique().alias("ops"))
        bad = per_seq.filter(pl.col("ops") > 1)
        if bad.height == 0:
            return []
        first = bad.sort("seq", "pg").row(0, named=True)
        at = timeouts.filter(pl.col("pg").eq_missing(first["pg"]) & pl.col("seq").eq_missing(first["seq"]))
        ops = at.group_by("op").agg(pl.col("rank").drop_nulls().unique().sort().alias("ranks"), pl.len().alias("n")).sort("n", "op")
        minority = ops.row(0, named=True)
        odd = [int(r) for r in minority["ranks"]]
        majority = ops.row(ops.height - 1, named=True)
        return [self.finding(
            title=(f"Collective mismatch at SeqNum {first['seq']}: rank(s) {compact_ranks(odd) or '?'} "
                   f"timed out in {minority['op']}, others in {ops.row(ops.height - 1, named=True)['op']}"),
            explanation=("The watchdog timeouts disagree on which collective was running at the same sequence "
                         "number: the ranks issued different collectives at that position and deadlocked."),
            advice=("Every rank must call the same collectives in the same order; look for rank-conditional "
                    "collectives near this point of the training loop."),
            rows=at.drop("seq", "op", "pg"),
            severity=Severity.CRITICAL,
            ranks=odd,
            hosts=_hosts_of(at, odd),
            culprit=_odd_one_out(at, odd, majority["ranks"]),
        )]


def _odd_one_out(rows: pl.DataFrame, odd: list[int], majority: list[int]) -> Culprit | None:
    """One rank ran another collective than two or more that agree: that rank left the schedule.
    With more odd ranks, or a tie, the logs do not say which side diverged."""
    if len(odd) != 1 or len(majority) < 2:
        return None
    row = rows.filter(pl.col("rank") == odd[0]).sort("line").row(0, named=True)
    return culprit_of(row)


def _hosts_of(rows: pl.DataFrame, ranks: list[int]) -> list[str] | None:
    """The hosts of the odd ranks, not of every rank in the evidence (the majority's lines are
    there for comparison); None, so the evidence decides, when the odd ranks are unknown."""
    if not ranks:
        return None
    hosts = rows.filter(pl.col("rank").is_in(ranks))["host"].drop_nulls().unique().sort().to_list()
    return [str(h) for h in hosts] or None
