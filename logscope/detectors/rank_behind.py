"""LS104 rank-behind: the logs stop with one rank behind the others, before any timeout said so.

What it detects
    The logs stop with no error and no clean end, and the ranks' progress counters single out the
    rank(s) that stopped first: a lower NCCL ``opCount`` than the other ranks of their communicator,
    lower c10d sequence numbers, or a lower training step, while the peers wrote their higher count
    later (:mod:`logscope.detectors.behind`, the rule ``logscope watch`` alerts with while a job runs).

Why it matters
    A rank stuck in Python (a deadlock, data loading, a rank-conditional branch) stops before its
    next collective; every other rank enters it and waits. Nothing is logged until the collective
    timeout fires, 10 to 30 minutes later (or never, with an infinite timeout): a job killed or
    copied before then shows no error at all. The counters already say which rank did not come.

Evidence
    Per rank, its last count in each scope: NCCL COLL lines' opCount per communicator (its commId
    from the Init lines), "last enqueued NCCL work" per process group, training steps. The ranks
    named are those at the lowest count, fewer than the ranks ahead and at most a quarter of them,
    and each has a peer whose higher count is written after its own in the same file. Only logs
    with no error line and no clean end are read this way: a failure or an end says more.

Example
    ::

        [default5]:gpu-node02:80743:80743 [5] NCCL INFO AllReduce: opCount 26 ... comm 0x55db31979cb0 [nranks=16]
        [default0]:gpu-node02:80738:80738 [0] NCCL INFO AllReduce: opCount 27 ... comm 0x55c80d1d4a40 [nranks=16]
        ... every rank but 13 reached opCount 27; the logs stop there ...

False positives
    Logs read while the job still runs, or cut at different points per rank, can show a rank one
    count behind in passing: the same-file witness rules out a file cut short, not a snapshot taken
    mid-step. Use ``logscope watch``, which waits for the stall, on a running job.

Advice
    Look at what the rank behind was doing at its last line; take ``py-spy dump --pid`` of it
    while the job hangs. Next time set ``TORCH_NCCL_DESYNC_DEBUG=1`` and the Flight Recorder
    (``TORCH_NCCL_TRACE_BUFFER_SIZE``), and run ``logscope watch`` beside the job.
"""

from __future__ import annotations

from typing import ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, compact_ranks, evidence_of, when_row, who
from logscope.detectors.behind import Behind, located, marks_of, ranks_behind
from logscope.detectors.completion import clean_end
from logscope.model import Category, Culprit, Event, Finding, Severity


class RankBehind(Detector):
    code = "LS104"
    name = "rank-behind"
    category = Category.HANG
    requires: ClassVar[frozenset[Event]] = frozenset({Event.NCCL_COLL, Event.PROGRESS, Event.WATCHDOG_STATUS})
    specificity = 58

    def detect(self, job: JobView) -> list[Finding]:
        failed = job.events.select(pl.col("severity").is_in(["error", "critical"]).any()).item()
        if failed or clean_end(job) is not None:
            return []  # a failure or an end explains where the logs stop better than a count
        behind = ranks_behind(marks_of(job.of(Event.NCCL_COLL, Event.PROGRESS, Event.WATCHDOG_STATUS,
                                              Event.NCCL_INIT, Event.NCCL_INIT_START)))
        if behind is None:
            return []
        return [self._finding(behind)]

    def _finding(self, behind: Behind) -> Finding:
        first = behind.first
        row = first.row
        witness = behind.ahead[0]
        culprit = Culprit(host=row.get("host"), node=row.get("node"), rank=first.rank,
                          local_rank=row.get("local_rank"),
                          time=row.get("time") if not row.get("time_inferred") else None,
                          evidence=evidence_of(row))
        ranks = list(behind.ranks)
        return self.finding(
            title=(f"Hang: {who(culprit)} stopped first, at {first.said()}"
                   + (f" (with rank(s) {compact_ranks(ranks[1:])})" if len(ranks) > 1 else "")
                   + f"; {behind.peers - len(ranks)} rank(s) went further and the logs stop there"),
            explanation=(f"{behind.reason[0].upper()}{behind.reason[1:]}; a peer wrote its higher count after "
                         f"it in the same file ({witness.row.get('file')}:{witness.row.get('line')}). The others "
                         f"went on into a collective that waits for {who(culprit)}, last seen {when_row(row)}; the "
                         "logs stop before any timeout or error says so."),
            advice=("Look at the rank's last lines: what was it doing (data loading, a branch only some ranks "
                    "take, checkpoint I/O)? py-spy dump it while the job hangs; next time run `logscope watch` "
                    "beside the job, and set TORCH_NCCL_DESYNC_DEBUG=1."),
            rows=[*(mark.row for mark in behind.marks), *(mark.row for mark in behind.ahead[:1])],
            ordered=True,
            severity=Severity.CRITICAL,
            culprit=culprit,
            ranks=ranks,
            hosts=located(behind),
        )
