"""LS503 oom-recorded: SLURM's record says a step ran out of memory (OUT_OF_MEMORY).

What it detects
    A job or step whose accounting state is ``OUT_OF_MEMORY``: the kernel's OOM killer killed a
    process in the step's memory cgroup (slurmstepd counted an oom-kill event). It names the step,
    and the node: the step's only node, else the one node whose log shows the oom-kill, else the
    node where the step's memory peaked (sacct's MaxRSSNode).

Why it matters
    The OOM killer sends SIGKILL: the killed rank prints nothing, torchrun reports ``exitcode: -9``
    and the other ranks fail in their collectives. The logs look like a crash; the record says why.

Evidence
    ``accounting`` rows whose state is OUT_OF_MEMORY (step, nodes, MaxRSS in ``fields.message``);
    ``host_oom`` lines of the logs for the node.

Example
    ::

        $ sacct -j 4242011 -P --format=JobID,State,ExitCode,NodeList,MaxRSS
        JobID|State|ExitCode|NodeList|MaxRSS
        4242011|OUT_OF_MEMORY|0:125|gpu-node[01-02]|
        4242011.0|OUT_OF_MEMORY|0:125|gpu-node[01-02]|1017502364K

False positives
    Named from MaxRSSNode, the node is where memory peaked, usually but not always the one whose
    process the OOM killer chose. A step in which a helper process (a DataLoader worker, a compile job) was OOM-killed and the
    training survived is still OUT_OF_MEMORY; the logs then show the run going on.

Advice
    Ask for more memory per node (``--mem``), load less per process (DataLoader workers,
    prefetch, pinned memory), or shard the data loading; ``sacct -j JOB --format=JobID,MaxRSS,
    MaxRSSNode`` shows which step and node peaked.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import polars as pl

from logscope.detectors.accounting_facts import recorded_steps, steps_title
from logscope.detectors.base import Detector, JobView, evidence_of, field_of, when
from logscope.model import Category, Culprit, Event, Finding, Severity


class OomRecorded(Detector):
    code = "LS503"
    name = "oom-recorded"
    category = Category.OOM
    requires: ClassVar[frozenset[Event]] = frozenset({Event.ACCOUNTING})
    specificity = 60  # above the crash it causes (LS301, 40); below the logs' own OOM lines (LS501, LS502)

    def detect(self, job: JobView) -> list[Finding]:
        steps = recorded_steps(job, "OUT_OF_MEMORY")
        if not steps:
            return []
        # the most precise: an srun step (where the training ran), else the batch step, else the job
        chosen = ([s for s in steps if s.step_id.rsplit(".", 1)[-1].isdigit() and not s.is_job]
                  or [s for s in steps if not s.is_job] or steps)
        step = chosen[0]
        nodes = step.nodes
        rss = field_of(step.first, "message")
        peak = str(rss).split(" on ", 1)[1] if rss and " on " in str(rss) else None
        node = nodes[0] if len(nodes) == 1 else (_oom_node(job, nodes) or (peak if peak in nodes else None))
        rows = [r for r in step.rows if node is None or r.get("node") == node] or list(step.rows)
        culprit = Culprit(host=node, node=node, time=step.start or step.end, evidence=evidence_of(rows[0])) \
            if node else None
        where = f"on {node}" if node else f"on one of {', '.join(nodes[:6])}" if nodes else ""
        finding = self.finding(
            title=f"SLURM recorded OUT_OF_MEMORY for {steps_title([step])} {where}".rstrip(),
            explanation=(f"SLURM's accounting record says the kernel's OOM killer killed a process of "
                         f"{steps_title([step])} {where} (recorded at {when(step.end)}"
                         + (f", MaxRSS {rss}" if rss else "") + "). The killed process printed nothing; "
                         "the exits and collective errors of the others are consequences."),
            advice=("Ask for more memory per node (--mem), load less per process (DataLoader workers, prefetch, "
                    "pinned memory); `sacct -j JOB --format=JobID,MaxRSS,MaxRSSNode` shows which step and node "
                    "peaked."),
            rows=rows[:4], culprit=culprit, severity=Severity.CRITICAL, hosts=[node] if node else nodes)
        # the OOM kill happened while the step ran: between its start and SLURM's record of its end
        return [dataclasses.replace(finding, window=(step.start or step.end, step.end or step.start))]


def _oom_node(job: JobView, nodes: list[str]) -> str | None:
    """The one node of the step whose log reports an oom-kill."""
    places = job.of(Event.HOST_OOM).select(pl.coalesce("node", "host").drop_nulls().unique()).to_series().to_list()
    found = [n for n in nodes if n in places]
    return found[0] if len(found) == 1 else None


__all__ = ["OomRecorded"]
