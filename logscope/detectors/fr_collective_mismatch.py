"""LS107 fr-collective-mismatch: the Flight Recorder shows ranks that ran a different collective at the same step.

What it detects
    Two members of one process group whose Flight Recorder dumps hold the same collective sequence
    id with a different operation (``all_reduce`` on most, ``broadcast`` on one), or, for a
    collective whose tensors must match on every member (all_reduce, broadcast, all_gather,
    reduce_scatter and their tensor forms), different sizes or dtypes. The members that differ
    from the majority are named; with no majority, none is.

Why it matters
    Collectives are matched by order, not by name: a rank that takes another code path
    (``if rank == 0: broadcast(...)``, an uneven last batch, a shape that depends on the data)
    calls a different collective at the same place, and the job hangs or corrupts data. The logs
    then show only timeouts; the dumps show the two calls side by side, with their stack frames.

Evidence
    ``fr_entry`` rows: each member's entries of one group and sequence id, in order (a coalesced
    group is compared whole), their ``op`` and tensor sizes and dtypes (``value``). Each member's
    oldest sequence id in its buffer is left out (a wrapped ring buffer may have cut it), and only
    a group's first mismatch is reported: later ones follow from it.

Example
    ::

        nccl_trace_rank_1: TP (pg 1) collective #7 nccl:broadcast scheduled, [[4, 8]] Float -> [[4, 8]] Float
        nccl_trace_rank_0: TP (pg 1) collective #7 nccl:all_reduce scheduled, [[4, 8]] Float -> [[4, 8]] Float

False positives
    Operations whose sizes legitimately differ between members (all_to_all with uneven splits,
    gather, scatter, reduce) are compared by operation only. Two members that disagree with no
    majority (a group of two) are reported without a culprit.

Advice
    Compare the stack frames of the differing entries (the dumps' ``frames``, with
    ``TORCH_INCLUDE_STACK_TRACE`` on): find the branch only some ranks take and make every rank
    issue the same collectives in the same order.
"""

from __future__ import annotations

from typing import ClassVar

from logscope.detectors.base import Detector, JobView, compact_ranks
from logscope.detectors.fr_facts import flight_recorder_of
from logscope.model import Category, Culprit, Event, Finding, Role, Severity


class FrCollectiveMismatch(Detector):
    code = "LS107"
    name = "fr-collective-mismatch"
    category = Category.HANG
    requires: ClassVar[frozenset[Event]] = frozenset({Event.FR_DUMP})
    # a named mismatch explains the lag it causes (LS106, 70)
    specificity = 75

    def detect(self, job: JobView) -> list[Finding]:
        fr = flight_recorder_of(job)
        if fr is None:
            return []
        out = []
        for mismatch in fr.mismatches:
            differing = mismatch.minority
            what = "operation" if mismatch.what == "op" else "tensor sizes or dtypes"
            if differing:
                ran = mismatch.ranks[differing[0]]
                title = (f"Collective mismatch: rank(s) {compact_ranks(differing)} ran {ran} as collective "
                         f"#{mismatch.seq} of {mismatch.pg_desc or 'group'} (pg {mismatch.pg}), the others "
                         f"{mismatch.majority}, per the Flight Recorder")
            else:
                title = (f"Collective mismatch in {mismatch.pg_desc or 'group'} (pg {mismatch.pg}) at #{mismatch.seq}: "
                         "the members disagree with no majority, per the Flight Recorder")
            explanation = (f"At collective #{mismatch.seq} of {mismatch.pg_desc or 'group'} (pg {mismatch.pg}) the "
                           f"members' {what} differ: "
                           + "; ".join(f"rank {r}: {v}" for r, v in sorted(mismatch.ranks.items())[:8])
                           + (" ..." if len(mismatch.ranks) > 8 else "") + ". "
                           + (f"Rank(s) {compact_ranks(differing)} differ from the majority." if differing
                              else "No majority: no culprit is named."))
            rank = differing[0] if len(differing) == 1 else None
            node, host, local = fr.places.get(rank, (None, None, None)) if rank is not None else (None, None, None)
            evidence = mismatch.evidence
            culprit = (Culprit(host=host or node, node=node or host, rank=rank, local_rank=local,
                               evidence=evidence[0] if evidence else None, time=evidence[0].time if evidence else None)
                       if rank is not None else None)
            at = evidence[0].time if evidence else None
            out.append(Finding(
                code=self.code, name=self.name, category=self.category, severity=Severity.CRITICAL, title=title,
                explanation=explanation,
                advice="Compare the stack frames of the differing entries; make every rank issue the same collectives "
                       "in the same order (look for a branch only some ranks take).",
                role=Role.ROOT, ranks=tuple(differing or sorted(mismatch.ranks)),
                hosts=tuple(h for h in [node or host] if h and rank is not None),
                first_seen=at, evidence=evidence, culprit=culprit, specificity=self.specificity,
                order_key=(evidence[0].file, evidence[0].line) if evidence else None, window=(at, at),
                reactive=rank is None))
        return out
