"""LS106 fr-lagging-rank: PyTorch's Flight Recorder shows the rank the others waited for.

What it detects
    From the Flight Recorder dumps of a hung job (one per rank): a member of a process group with
    work in flight that is behind the group's other members, and is not itself waiting for
    someone else. *Behind on issue*: it never enqueued the collective the others are blocked in
    (its Python thread stopped: a deadlock, a held GIL, data loading, a rank-conditional branch).
    *Behind on completion*: it saw fewer collectives complete than another member, although a
    collective completes on a member only when every member took part (its GPU stopped, or its
    watchdog cannot query it). It names the rank, its host (from the logs' rank map), the group
    and the collective, and cites the dump entries.

Why it matters
    After a hang every rank's log ends in the same timeout, and a rank stopped inside Python logs
    nothing: the logs rarely say which rank the others waited for. Each rank's Flight Recorder says
    exactly how far it got in every group. Ranks that lag only because they wait in another group
    (level with its newest collective, where someone else lags) are consequences, not roots.

Evidence
    ``fr_entry`` rows (the collectives each dump holds, their group, sequence id and state) and
    ``fr_group`` rows (each group's members and its ``pg_status`` counters), read from the dumps
    by :mod:`logscope.flight_recorder`; the comparison itself is
    :mod:`logscope.detectors.fr_facts`'s. A rank that wrote no dump is listed as missing,
    never blamed.

Example
    ::

        _dump_13: TENSOR_MODEL_PARALLEL_GROUP (pg 41) collective #42818 nccl:_reduce_scatter_base scheduled
        _dump_12: TENSOR_MODEL_PARALLEL_GROUP (pg 41) members [12, 13]: last enqueued #42817, last completed #42805

False positives
    Dumps taken at different moments of a job that was still making progress (on demand, not at a
    timeout) differ by the work done in between. A group's members come from the dumps'
    ``pg_config``; where a dump states none (torch 2.14's gloo), only the ranks whose dumps hold
    the group are compared.

Advice
    Look at what the lagging rank was doing when it stopped: its last log lines, its dump's last
    entries and their stack frames, ``py-spy dump`` of the process while it hangs; for a rank
    behind on completion, its GPU (``nvidia-smi``, the kernel log's Xid lines). Keep the dumps
    where they survive the job: set ``TORCH_FR_DUMP_TEMP_FILE`` to a shared folder.
"""

from __future__ import annotations

from typing import ClassVar

from logscope.detectors.base import Detector, JobView, compact_ranks, when
from logscope.detectors.fr_facts import Lag, flight_recorder_of
from logscope.model import Category, Culprit, Event, Finding, Role, Severity


class FrLaggingRank(Detector):
    code = "LS106"
    name = "fr-lagging-rank"
    category = Category.HANG
    requires: ClassVar[frozenset[Event]] = frozenset({Event.FR_DUMP})
    # PyTorch's own record of every rank beats the logs' inference of the quiet rank (LS101, 60)
    specificity = 70

    def detect(self, job: JobView) -> list[Finding]:
        fr = flight_recorder_of(job)
        if fr is None or not fr.lagging:
            return []
        first = fr.lagging[0]
        ranks = fr.lagging_ranks
        shown = [lag for lag in fr.lagging if lag.rank == first.rank]
        where = first.node or first.host
        title = (f"Hang: rank {first.rank}" + (f" on {where}" if where else "")
                 + f" {_behind(first)} in {first.pg_desc or 'group'} (pg {first.pg}), per the Flight Recorder"
                 + (f"; rank(s) {compact_ranks([r for r in ranks if r != first.rank])} lag too" if len(ranks) > 1 else ""))
        explanation = (
            "; ".join(_sentence(lag) for lag in shown[:3])
            + (f"; and in {len(shown) - 3} more group(s)" if len(shown) > 3 else "") + ". "
            + (f"Also lagging, not waiting for anyone: {', '.join(_short(lag) for lag in fr.lagging if lag.rank != first.rank)}. "
               if len(ranks) > 1 else "")
            + (f"Ranks {compact_ranks(sorted({lag.rank for lag in fr.waiting_lags}))} lag too, but wait in another "
               "group: consequences. " if fr.waiting_lags else "")
            + (f"Rank(s) {compact_ranks(fr.missing_ranks)} wrote no dump. " if fr.missing_ranks else "")
            + f"Times: {fr.alignment}.")
        evidence = tuple(e for lag in [*shown, *(lag for lag in fr.lagging if lag.rank != first.rank)]
                         for e in lag.evidence)[:8]
        culprit = Culprit(host=first.host or first.node, node=first.node or first.host, rank=first.rank,
                          local_rank=first.local_rank, time=first.stopped,
                          evidence=first.evidence[0] if first.evidence else None)
        advice = ("Look at what the lagging rank was doing when it stopped: its last log lines, its dump's last "
                  "entries and their stack frames, py-spy dump of the process while it hangs"
                  + ("; it is behind on completion: check its GPU (nvidia-smi, the kernel log's Xid lines)"
                     if first.how == "completion" else "") + ".")
        stopped = first.stopped
        return [Finding(
            code=self.code, name=self.name, category=self.category, severity=Severity.CRITICAL, title=title,
            explanation=explanation, advice=advice, role=Role.ROOT, ranks=tuple(ranks),
            hosts=tuple(sorted({h for lag in fr.lagging for h in [lag.node or lag.host] if h})),
            first_seen=stopped, evidence=evidence, culprit=culprit, specificity=self.specificity,
            order_key=(evidence[0].file, evidence[0].line) if evidence else None, window=(stopped, stopped))]


def _behind(lag: Lag) -> str:
    if lag.how == "issue":
        return f"never issued collective #{lag.seq}" + (f" ({lag.op})" if lag.op else "")
    return f"never saw collective #{lag.seq}" + (f" ({lag.op})" if lag.op else "") + " complete"


def _sentence(lag: Lag) -> str:
    if lag.how == "issue":
        return (f"in {lag.pg_desc or 'group'} (pg {lag.pg}) rank {lag.rank} never issued collective #{lag.seq}"
                + (f" ({lag.op})" if lag.op else "") + f", which the other members did (up to #{lag.newest})"
                + (f"; its newest entry is from {when(lag.stopped)}" if lag.stopped else ""))
    return (f"in {lag.pg_desc or 'group'} (pg {lag.pg}) rank {lag.rank} issued collective #{lag.seq}"
            + (f" ({lag.op})" if lag.op else "") + f" but never saw it complete, while another member saw "
            f"up to #{lag.newest} complete: its own GPU or watchdog stopped")


def _short(lag: Lag) -> str:
    return f"rank {lag.rank} in {lag.pg_desc or 'pg ' + lag.pg} ({lag.how}, #{lag.seq})"
