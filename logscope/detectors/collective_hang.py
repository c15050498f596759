"""LS101 collective-hang: a collective timed out, and this is the rank that stopped advancing.

What it detects
    A hang in a collective: PyTorch's c10d watchdog reports ``Watchdog caught collective
    operation timeout: WorkNCCL(SeqNum=S, ...)`` (or a desync report names lagging ranks) on some
    ranks, while one or more ranks never reached collective S. It names those quiet ranks and
    their hosts.

Why it matters
    When one rank stops (stuck in data loading, a Python deadlock, a dead GPU that raises
    nothing), every other rank blocks in the next collective and, after the timeout (10 or 30
    minutes), all of them print the same timeout error. Those errors are everywhere and all
    alike; the rank that caused them is the one that printed *nothing*, or the one whose counters
    are behind.

Evidence
    Per rank: watchdog timeouts (``SeqNum``), "last enqueued / last completed NCCL work"
    status lines, ``TORCH_NCCL_DESYNC_DEBUG`` reports, the last NCCL ``opCount`` per
    communicator from ``NCCL_DEBUG_SUBSYS=COLL`` lines, and the last training step. The world
    size comes from NCCL ``Init COMPLETE`` lines or torchrun's rendezvous result. Quiet ranks are,
    in order of confidence: ranks a desync report names; ranks whose last enqueued work is below
    the sequence number the others time out on; ranks (at most a quarter of the world) that never
    report a timeout; ranks whose last opCount or step is behind all others.

Example
    ::

        [rank0]:[E1103 14:40:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.
        ... the same on every rank except rank 13, which printed nothing after 14:30:09 ...

False positives
    If the logs of some ranks are missing (a node's file was not collected), those ranks look
    silent: the finding says how many ranks it expected and saw. If the quiet rank crashed
    before the timeout, this is reported as a consequence and LS301 names the crash.

Advice
    Look at what the quiet rank was doing at its last line (data loading, a rank-conditional
    branch, checkpoint I/O). Next time, run with ``TORCH_NCCL_DESYNC_DEBUG=1`` and the Flight
    Recorder (``TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1``), and take
    ``py-spy dump`` of the quiet rank while it hangs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import (
    Detector,
    JobView,
    compact_ranks,
    context_line,
    ends_in_order,
    field_of,
    order_key,
    ordered_dicts,
    when,
    who,
)
from logscope.detectors.behind import marks_of, ranks_behind
from logscope.detectors.exit_cascade import DETAIL_EVENTS, is_victim
from logscope.model import Category, Culprit, Event, Finding, Role, Severity

MAX_SILENT_FRACTION = 0.25


class CollectiveHang(Detector):
    code = "LS101"
    name = "collective-hang"
    category = Category.HANG
    requires: ClassVar[frozenset[Event]] = frozenset(
        {Event.WATCHDOG_TIMEOUT, Event.WATCHDOG_STATUS, Event.DESYNC_REPORT})
    specificity = 60

    def detect(self, job: JobView) -> list[Finding]:
        timeouts = job.of(Event.WATCHDOG_TIMEOUT, Event.WATCHDOG_STATUS)
        desync = job.of(Event.DESYNC_REPORT)
        if timeouts.height == 0 and desync.height == 0:
            return []
        reporting = sorted({int(r) for r in timeouts["rank"].drop_nulls().to_list()})
        waited_seq = timeouts.select(pl.col("fields").struct.field("seq").max()).item()
        expected = self._expected_ranks(job)

        quiet, how = self._from_desync(desync)
        if not quiet:
            quiet, how = self._behind_on_enqueue(job, waited_seq)
        if not quiet and expected:
            silent = sorted(set(expected) - set(reporting))
            if reporting and 0 < len(silent) <= max(1, int(len(expected) * MAX_SILENT_FRACTION)):
                quiet, how = silent, (f"{len(reporting)} of {len(expected)} ranks reported the timeout; "
                                      f"rank(s) {compact_ranks(silent)} never did")
        if not quiet:
            quiet, how = self._behind_on_counters(job)

        # The first three in time (a crash loop leaves thousands): the first one, and evidence.
        first_timeouts = ends_in_order(timeouts, 3)
        first_timeout = first_timeouts[0] if first_timeouts else None
        if not quiet:
            rows = (timeouts if timeouts.height else desync).to_dicts()
            return [self.finding(
                title=(f"Collective timeout ({f'SeqNum {waited_seq}' if waited_seq is not None else 'SeqNum not logged'}) "
                       f"on {len(reporting)} rank(s); the rank that stopped could not be identified"),
                explanation=("Ranks timed out waiting in a collective, but every rank the logs show reported "
                             "the timeout and no counters differ, so the quiet rank is not in these logs "
                             f"(expected {len(expected) if expected else 'an unknown number of'} ranks)."),
                advice=self._advice(),
                rows=rows,
                severity=Severity.ERROR,
                culprit=None,
                reactive=True,  # a timeout nobody can be blamed for may be waiting on a crash
            )]

        last_rows = self._last_activity(job, quiet)
        crashed = self._crashed(job, quiet, first_timeout)
        culprit_row = last_rows[0] if last_rows else None
        culprit = self._culprit(job, quiet[0], culprit_row)
        evidence = [*last_rows, *first_timeouts, *desync.to_dicts()[:2]]
        if crashed:
            return [self.finding(
                title=(f"Ranks timed out in a collective waiting for rank(s) {compact_ranks(quiet)}, "
                       f"which had already failed"),
                explanation=(f"The watchdog timeouts are a consequence: {how}, and that rank failed "
                             f"({crashed.get('text')!s:.160}) before the timeout fired."),
                advice="See the crash finding; these timeouts are the other ranks waiting for it.",
                rows=[crashed, *evidence],
                role=Role.CONSEQUENCE,
                severity=Severity.WARNING,
                culprit=culprit,
                ranks=quiet,
            )]
        seq_text = f"SeqNum {waited_seq}" if waited_seq is not None else "a collective"
        timeout_ms = first_timeout and field_of(first_timeout, "timeout_ms")
        # An untimed timeout line (gloo's RuntimeError in a traceback) borrows a neighbour's time,
        # which can be the quiet rank's last step, not the moment the timeout fired.
        fired = first_timeout.get("time") if first_timeout and not first_timeout.get("time_inferred") else None
        stopped = culprit.time
        if stopped is None and fired and timeout_ms:
            from datetime import timedelta

            stopped = fired - timedelta(milliseconds=int(timeout_ms))
        title = (f"Hang: {who(culprit)} stopped advancing"
                 + (f" (last seen {when(culprit.time)})" if culprit.time else "")
                 + f"; {len(reporting)} rank(s) timed out waiting in {seq_text}")
        explanation = (
            f"{how}. The other ranks entered "
            f"{'collective ' + seq_text if waited_seq is not None else seq_text} and waited for it until the "
            f"watchdog timeout{f' of {int(timeout_ms) // 1000} s' if timeout_ms else ''} fired"
            + (f" at {when(fired)}" if fired else "")
            + ". Their timeout errors, and the process teardown that follows, are consequences of the quiet "
            f"rank{'s' if len(quiet) > 1 else ''}."
        )
        finding = self.finding(
            title=title,
            explanation=explanation,
            advice=self._advice(),
            rows=evidence,
            severity=Severity.CRITICAL,
            culprit=culprit,
            ranks=quiet,
            hosts=sorted({h for h in [culprit.node or culprit.host] if h}),
        )
        # The hang began when the quiet rank went silent, before anyone timed out.
        from dataclasses import replace

        if stopped is None:
            return [finding]
        return [replace(finding, first_seen=stopped, window=(stopped, stopped))]

    # -- how quiet ranks are found ------------------------------------------------------------

    @staticmethod
    def _expected_ranks(job: JobView) -> list[int]:
        """Every rank of the job: from its world size, else the ranks its lines name when they are
        0 to N-1 without a gap. Ranks seen here and there (an excerpt of a few ranks' lines) are no
        world: a rank missing from them says nothing."""
        size = job.world_size
        if size:
            return list(range(size))
        ranks = job.events.filter(~context_line())["rank"].drop_nulls().unique().to_list()
        seen = sorted(int(r) for r in ranks)
        return seen if seen == list(range(len(seen))) else []

    @staticmethod
    def _from_desync(desync: pl.DataFrame) -> tuple[list[int], str]:
        named: set[int] = set()
        for row in desync.to_dicts():
            if "didn't join" in str(row.get("text")) and row.get("rank") is not None:
                named.add(int(row["rank"]))
            value = field_of(row, "value")
            if value and ("lagging ranks" in str(row.get("text")) or "missing ranks" in str(row.get("text"))):
                named.update(int(v) for v in str(value).replace(" ", "").split(",") if v.isdigit())
        if named:
            return sorted(named), f"the desync report names rank(s) {compact_ranks(sorted(named))}"
        return [], ""

    @staticmethod
    def _behind_on_enqueue(job: JobView, waited_seq: int | None) -> tuple[list[int], str]:
        status = job.of(Event.WATCHDOG_STATUS).filter(pl.col("rank").is_not_null())
        if status.height == 0 or waited_seq is None:
            return [], ""
        said = pl.col("fields").struct
        # Counters count the collectives of one process group: only the group of the collective the
        # others waited in is compared (PG IDs are each rank's own numbering: a rank that timed out
        # at another SeqNum waits in another group that has that ID too, or another collective).
        groups = status.filter(said.field("seq") == waited_seq).select(said.field("pg")).to_series().unique()
        if groups.len():
            status = status.filter(said.field("pg").is_in(groups.to_list(), nulls_equal=True))
        last = status.group_by("rank").agg(said.field("last_enqueued").max().alias("enq"),
                                           said.field("seq").drop_nulls().unique().alias("waits"))
        last = last.filter((pl.col("waits").list.len() == 0) | pl.col("waits").list.contains(waited_seq))
        behind = sorted(int(r) for r in last.filter(pl.col("enq") < waited_seq)["rank"].to_list())
        if behind and len(behind) < last.height:
            return behind, (f"rank(s) {compact_ranks(behind)} never enqueued collective {waited_seq} "
                            f"(their last enqueued work is lower)")
        return [], ""

    @staticmethod
    def _behind_on_counters(job: JobView) -> tuple[list[int], str]:
        """The ranks whose progress counters are behind their peers' (the rule ``logscope watch``
        and LS104 apply: :mod:`logscope.detectors.behind`); the timeout proves the others waited."""
        behind = ranks_behind(marks_of(job.of(Event.NCCL_COLL, Event.PROGRESS, Event.NCCL_INIT,
                                              Event.NCCL_INIT_START)), peers_waited=True)
        if behind is None:
            return [], ""
        return list(behind.ranks), behind.reason

    @staticmethod
    def _last_activity(job: JobView, ranks: list[int]) -> list[dict[str, Any]]:
        """The quiet ranks' last three own lines, newest first; what others wrote about them
        (failure records, closing signals, a desync report naming them) does not count as
        activity."""
        about_them = [e.value for e in (Event.CHILD_FAILURE, Event.WORKER_FAILED, Event.CLOSING_SIGNAL,
                                        Event.SRUN_TASK_EXIT, Event.ERROR_FILE, Event.DESYNC_REPORT)]
        own = job.events.filter(pl.col("rank").is_in(ranks) & ~pl.col("event").is_in(about_them))
        rows = own.filter(~pl.col("time_inferred"))
        if rows.height == 0:
            rows = own
        return list(reversed(ends_in_order(rows, 3, last=True)))

    @staticmethod
    def _crashed(job: JobView, ranks: list[int], first_timeout: dict[str, Any] | None) -> dict[str, Any] | None:
        rows = job.of(*DETAIL_EVENTS).filter(pl.col("rank").is_in(ranks))
        for row in ordered_dicts(rows):
            if is_victim(row):
                continue
            if first_timeout is None or order_key(row) <= order_key(first_timeout):
                return row
        return None

    @staticmethod
    def _culprit(job: JobView, rank: int, last: dict[str, Any] | None) -> Culprit:
        from logscope.detectors.base import evidence_of

        rows = job.events.filter((pl.col("rank") == rank) & pl.col("host").is_not_null())
        host = rows["host"][0] if rows.height else (last or {}).get("host")
        node = rows["node"][0] if rows.height else (last or {}).get("node")
        local = rows["local_rank"].drop_nulls()
        return Culprit(
            host=host,
            node=node,
            rank=rank,
            local_rank=int(local[0]) if local.len() else None,
            time=last.get("time") if last and not last.get("time_inferred") else None,
            evidence=evidence_of(last) if last else None,
        )

    @staticmethod
    def _advice() -> str:
        return ("Look at the quiet rank's last lines: what was it doing (data loading, a branch only some "
                "ranks take, checkpoint I/O)? Next time set TORCH_NCCL_DESYNC_DEBUG=1 and enable the Flight "
                "Recorder (TORCH_NCCL_TRACE_BUFFER_SIZE=2000, TORCH_NCCL_DUMP_ON_TIMEOUT=1), and py-spy dump "
                "the quiet rank while the job hangs.")

