"""LS605 node-fail-recorded: SLURM's record says a node of the job failed (NODE_FAIL, BOOT_FAIL).

What it detects
    A job or step whose accounting state (``sacct``/``scontrol show job``, read by ``logscope
    analyze JOBID`` or from their saved outputs) is ``NODE_FAIL`` (a node stopped answering
    slurmctld and the job was terminated) or ``BOOT_FAIL`` (a node failed to boot for it). It names
    the node SLURM's ``FailedNode`` names (sacct 23.02+, scontrol); without it (22.05), the node
    srun's ``Node failure on HOST`` names, else the one node of the job whose log is silent. When
    none of these names it and the logs show a rank that stopped advancing on a node of the job,
    the verdict names that node.

Why it matters
    A node that dies takes its log with it: its last lines are ordinary progress, and the other
    nodes only show NCCL errors and timeouts about a peer. The scheduler's record is then the only
    witness, even when no ``srun: error: Node failure`` line reached a log (LS604).

Evidence
    ``accounting`` rows whose state is NODE_FAIL or BOOT_FAIL, their FailedNode (``fields.peer``);
    the failed node's own last log line bounds when it failed (after it, before SLURM's End).

Example
    ::

        $ sacct -j 4242015 -P --format=JobID,State,ExitCode,NodeList,FailedNode
        JobID|State|ExitCode|NodeList|FailedNode
        4242015|NODE_FAIL|0:0|gpu-node[01-02]|gpu-node02
        4242015.0|CANCELLED|0:15|gpu-node[01-02]|

False positives
    None known: SLURM records NODE_FAIL only when it lost a node. When neither FailedNode nor a
    silent log names the node, the finding names none.

Advice
    Ask the administrators why the node failed (``scontrol show node NODE`` shows its Reason; the
    slurmd, kernel and BMC logs say more), resubmit excluding it (``sbatch --exclude=NODE``), and
    checkpoint often enough to lose little.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import ClassVar

import polars as pl

from logscope.detectors.accounting_facts import own_rows, recorded_failed_node, recorded_steps, steps_title
from logscope.detectors.base import Detector, JobView, evidence_of, when
from logscope.model import Category, Culprit, Event, Finding, Severity


class NodeFailRecorded(Detector):
    code = "LS605"
    name = "node-fail-recorded"
    category = Category.HARDWARE
    requires: ClassVar[frozenset[Event]] = frozenset({Event.ACCOUNTING})
    specificity = 58  # below LS604 (60): srun's own line about the same failure is the finer account

    def detect(self, job: JobView) -> list[Finding]:
        steps = recorded_steps(job, "NODE_FAIL", "BOOT_FAIL")
        if not steps:
            return []
        nodes = list(dict.fromkeys(n for s in steps for n in s.nodes))
        failed = recorded_failed_node(job)
        rows = [r for s in steps for r in s.rows if failed is None or r.get("node") == failed] or list(steps[0].rows)
        state = steps[0].state
        end = min((s.end for s in steps if s.end), default=None)
        last_seen = _last_own_line(job, failed) if failed else None
        start = min((s.start for s in steps if s.start), default=None)
        low = max(t for t in (last_seen, start) if t is not None) if (last_seen or start) else end
        culprit = Culprit(host=failed, node=failed, time=low, evidence=evidence_of(rows[0])) if failed else None
        what = "failed to boot" if state == "BOOT_FAIL" else "failed"
        where = f"node {failed}" if failed else f"one of {', '.join(nodes[:6])}"
        finding = self.finding(
            title=f"SLURM recorded {state} for {steps_title(steps)}: {where} {what}",
            explanation=(f"SLURM's accounting record says {where} {what} and the job was terminated ({state}, "
                         f"recorded at {when(end)})"
                         + (f"; its log's last line was written at {when(last_seen)}" if last_seen else "")
                         + ". Whatever the other nodes printed after it (NCCL errors, timeouts, SIGTERMs) is a "
                         "consequence." + ("" if failed else " The record names no failed node (FailedNode is "
                                           "in sacct from 23.02) and no single node's log is silent.")),
            advice=(f"Ask the administrators why {failed or 'the node'} failed (`scontrol show node "
                    f"{failed or 'NODE'}` shows the Reason; slurmd, kernel and BMC logs say more), and resubmit "
                    f"excluding it (sbatch --exclude={failed or 'NODE'})."),
            rows=rows[:4], culprit=culprit, severity=Severity.CRITICAL, hosts=[failed] if failed else nodes)
        # The node failed some time after its last line (or the step's start) and before SLURM's record.
        # (A record whose end comes before the node's last line, its clock behind the logs', bounds nothing.)
        high = end if end is not None and (low is None or end >= low) else low
        return [dataclasses.replace(finding, window=(low, high), first_seen=low or finding.first_seen)]


def _last_own_line(job: JobView, node: str) -> datetime | None:
    value = own_rows(job, node).select(pl.col("time").max()).item()
    return value if isinstance(value, datetime) else None


__all__ = ["NodeFailRecorded"]
