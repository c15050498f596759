"""LS108 fr-arrival-lag: the Flight Recorder shows a rank that enters collectives late (a straggler).

What it detects
    For every collective that at least two ranks' Flight Recorder dumps hold, how long after the
    first member each member created it; a rank whose median delay over many collectives is both
    long (:data:`STRAGGLER_MS` or more) and several times the other ranks' median
    (:data:`STRAGGLER_FACTOR`) is flagged as a straggler. The per-rank medians are in the JSON's
    ``flight_recorder.arrival_lag_ms`` whatever they are.

Why it matters
    In synchronous training every rank waits for the slowest at every collective, so every rank
    logs the same step time: the logs cannot say who is slow. The dumps record when each rank
    reached each collective. A straggler (a slow GPU, a throttled node, a noisy neighbour, an
    unbalanced data loader) costs the whole job its delay at every step, and a rank that stalls
    for good starts as one.

Evidence
    ``fr_entry`` rows: each entry's creation time (``time``, from ``time_created_ns``), matched
    across ranks by group and sequence id. This is context, never a verdict by itself.

Example
    ::

        rank 5 entered 200 collectives a median 180 ms after the first rank; the other ranks 2 ms

False positives
    Ranks on different hosts are compared through their hosts' clocks: a clock offset between
    hosts reads as a delay of every rank of the later host. A rank that issues its collectives
    from another thread than its peers (a pipeline stage) can be late by design.

Advice
    Compare the straggler's hardware and load with its peers' (GPU clocks and temperature,
    ``nvidia-smi -q -d PERFORMANCE``, CPU pinning, data loader workers); check that its host's
    clock is synchronised (chrony, NTP) before trusting a delay that every rank of a host shares.
"""

from __future__ import annotations

from typing import ClassVar

from logscope.detectors.base import Detector, JobView, compact_ranks
from logscope.detectors.fr_facts import flight_recorder_of, median_of_others
from logscope.model import Category, Event, Finding, Role, Severity

STRAGGLER_MS = 50.0
STRAGGLER_FACTOR = 5.0
MIN_COLLECTIVES = 10


class FrArrivalLag(Detector):
    code = "LS108"
    name = "fr-arrival-lag"
    category = Category.HANG
    requires: ClassVar[frozenset[Event]] = frozenset({Event.FR_DUMP})

    def detect(self, job: JobView) -> list[Finding]:
        fr = flight_recorder_of(job)
        if fr is None or len(fr.arrival_lag_ms) < 2:
            return []
        late = sorted(rank for rank, lag in fr.arrival_lag_ms.items()
                      if fr.arrival_counts.get(rank, 0) >= MIN_COLLECTIVES and lag >= STRAGGLER_MS
                      and lag >= STRAGGLER_FACTOR * max(median_of_others(fr.arrival_lag_ms, rank), 1.0))
        if not late:
            return []
        shown = "; ".join(f"rank {r} a median {fr.arrival_lag_ms[r]:.0f} ms late over {fr.arrival_counts[r]} "
                          f"collectives (the others {median_of_others(fr.arrival_lag_ms, r):.1f} ms)" for r in late)
        rows = [row for row in job.rows(Event.FR_DUMP) if row.get("rank") in late]
        return [self.finding(
            title=f"Straggler: rank(s) {compact_ranks(late)} entered collectives late, per the Flight Recorder",
            explanation=f"Entering the same collectives: {shown}. Every other rank waited for them at each of these "
                        "collectives.",
            advice="Compare the straggler's GPU and host with its peers' (clocks, temperature, CPU pinning, data "
                   "loading); check its host's clock is synchronised before trusting a delay every rank of a host "
                   "shares.",
            rows=rows, role=Role.CONTEXT, severity=Severity.WARNING, ranks=late)]
