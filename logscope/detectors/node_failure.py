"""LS604 node-failure: SLURM lost a node of the job.

What it detects
    ``srun: error: Node failure on HOST`` (srun's node-fail handler names the failed node or a
    hostlist) and ``*** STEP|JOB J ON HOST CANCELLED AT T DUE TO NODE FAILURE, SEE SLURMCTLD LOG
    FOR DETAILS ***``. It names the failed node from srun's line; the host in the CANCELLED line is
    only the node whose slurmstepd printed it (the step's first node), not the failed one.

Why it matters
    When a node stops answering (kernel panic, power, network partition, a GPU taking the node
    down), SLURM kills the whole step. The processes on the other nodes then die with NCCL errors
    and SIGTERMs that say nothing about the lost node; only srun's line names it.

Evidence
    ``node_failure`` events (host = the failed node) and ``cancelled`` events whose reason is
    ``NODE FAILURE``. Preceding GPU errors (LS603/LS601) are reported by their own detectors and
    take precedence when they describe the same moment.

Example
    ::

        srun: error: Node failure on jean-zay-iam37
        srun: Job step aborted: Waiting up to 62 seconds for job step to finish.
        slurmstepd: error: *** STEP 1943824.0 ON jean-zay-iam17 CANCELLED AT 2023-03-06T03:17:51 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***

False positives
    None known. When only the CANCELLED line is present, the failed node is not named in the job
    log and the finding has no culprit host.

Advice
    The node's own logs (slurmd, kernel, BMC) say why it failed: ask the administrators, or look
    at ``sacct -j JOB --format=JobID,State,NodeList`` and ``scontrol show node NODE`` (Reason=).
    Resubmit excluding it (``sbatch --exclude=NODE``); checkpoint often enough to lose little.
"""

from __future__ import annotations

from typing import ClassVar

from logscope.detectors.accounting_facts import srun_lost_hosts
from logscope.detectors.base import Detector, JobView, evidence_of, field_of, when
from logscope.model import Category, Culprit, Event, Finding, Severity


class NodeFailure(Detector):
    code = "LS604"
    name = "node-failure"
    category = Category.HARDWARE
    requires: ClassVar[frozenset[Event]] = frozenset({Event.NODE_FAILURE, Event.CANCELLED})
    specificity = 60

    def detect(self, job: JobView) -> list[Finding]:
        named = srun_lost_hosts(job)
        srun = [row for row, _ in named]
        cancelled = [r for r in job.rows_in_order(Event.CANCELLED)
                     if str(field_of(r, "reason") or "").startswith("NODE FAIL")]
        if not srun and not cancelled:
            return []
        failed = list(dict.fromkeys(host for _, hosts in named for host in hosts))
        cancel_time = cancelled[0].get("time") if cancelled else None
        first_srun = srun[0] if srun else None
        culprit = None
        if len(failed) == 1 and first_srun is not None:
            culprit = Culprit(host=failed[0], node=failed[0],
                              time=first_srun.get("time") or cancel_time, evidence=evidence_of(first_srun))
        if failed:
            title = f"SLURM lost node{'s' if len(failed) > 1 else ''} {', '.join(failed[:6])}: node failure"
        else:
            title = "SLURM cancelled the job due to a node failure (the failed node is not named in the log)"
        explanation = (
            (f"srun reported a node failure on {', '.join(failed[:6])}. " if failed else "")
            + (f"SLURM cancelled the step at {when(cancel_time)} DUE TO NODE FAILURE"
               + (f" (printed by {cancelled[0].get('host')}, the step's reporting node, not the failed one)"
                  if cancelled[0].get("host") and cancelled[0].get("host") not in failed else "")
               + ". " if cancelled else "")
            + "Everything the other nodes printed after it (NCCL errors, SIGTERMs, exits) is a consequence."
        )
        return [self.finding(
            title=title,
            explanation=explanation,
            advice=("Ask the administrators why the node failed (slurmd/kernel/BMC logs; `scontrol show node "
                    f"{failed[0] if failed else 'NODE'}` shows the Reason), check `sacct -j JOB --format="
                    "JobID,State,NodeList`, and resubmit excluding the node (sbatch --exclude=NODE)."),
            rows=[*srun[:4], *cancelled[:2]],
            culprit=culprit,
            severity=Severity.CRITICAL,
            hosts=failed,
        )]


__all__ = ["NodeFailure"]
