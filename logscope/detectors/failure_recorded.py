"""LS305 failure-recorded: SLURM's record says a step FAILED, and nothing in the logs says why.

What it detects
    A step (else the job) whose accounting state is ``FAILED``: a process exited with a non-zero
    code or was killed by a signal (``ExitCode return:signal``). It is a root only when the logs
    show no earlier failure: SLURM records FAILED for every step after a rank crashed, which is a
    consequence of the crash, and the crash the logs show stays the root.

Why it matters
    A job whose logs stop without an error (output lost, a process killed before it flushed) but
    whose record says FAILED did not end cleanly; the exit code and signal are the only clue left.

Evidence
    ``accounting`` rows whose state is FAILED: the step, its nodes, ExitCode (``fields.exit_code``,
    ``fields.signal``). The step's node is named only when it ran on one node.

Example
    ::

        $ sacct -j 4242004 -P --format=JobID,State,ExitCode,NodeList
        JobID|State|ExitCode|NodeList
        4242004|FAILED|1:0|gpu-node[01-02]
        4242004.batch|FAILED|1:0|gpu-node01
        4242004.0|FAILED|1:0|gpu-node[01-02]

False positives
    A script that runs a failing command it expects (``grep`` finding nothing as its last command)
    ends FAILED too; the logs then show the run completing, and the verdict keeps it as context.

Advice
    Look at the step's own output (its ``--output`` file, ``srun --output=%x-%j-%N-%t.out`` for one
    file per task) for the traceback; exit codes above 128 are 128 + a signal (137 SIGKILL: the OOM
    killer or a kill; 143 SIGTERM: a cancellation or kill-on-bad-exit).
"""

from __future__ import annotations

from typing import ClassVar

import polars as pl

from logscope.detectors.accounting_facts import recorded_steps, steps_title
from logscope.detectors.base import Detector, JobView, evidence_of
from logscope.model import Category, Culprit, Event, Finding, Severity


class FailureRecorded(Detector):
    code = "LS305"
    name = "failure-recorded"
    category = Category.UNKNOWN
    requires: ClassVar[frozenset[Event]] = frozenset({Event.ACCOUNTING})
    specificity = 5  # below every detector that read a failure in the logs

    def detect(self, job: JobView) -> list[Finding]:
        failed = recorded_steps(job, "FAILED")
        steps = [s for s in failed if not s.is_job and not s.step_id.endswith(".extern")] or failed
        if not steps:
            return []
        step = steps[0]
        nodes = step.nodes
        node = nodes[0] if len(nodes) == 1 else None
        code, signal = step.exit_code, step.signal
        exit_text = f"ExitCode {code or 0}:{signal or 0}"
        how = f"killed by signal {signal}" if signal else f"exit code {code}" if code is not None else "a failure"
        where = f" on {node}" if node else (f" on {', '.join(nodes[:6])}" if nodes else "")
        culprit = Culprit(host=node, node=node, time=step.end, evidence=evidence_of(step.first)) if node else None
        # Whether a line of the logs says why (then this is its record, a consequence, and says so).
        logged = job.events.select(
            (pl.col("severity").is_in(["error", "critical"]) & (pl.col("event") != Event.ACCOUNTING.value)).any()
        ).item()
        said = f"SLURM's accounting record says {steps_title([step])} FAILED with {exit_text}{where}"
        return [self.finding(
            title=f"SLURM recorded {steps_title([step])} FAILED ({how}){where}"
            + ("" if logged else "; no log line says why"),
            explanation=said + (": the failure the logs show is its cause." if logged else
                                ". No failure in the logs explains it: their output may be lost, or the process "
                                "died before it could print."),
            advice=("Look at the step's own output for the traceback (one file per task: srun --output="
                    "%x-%j-%N-%t.out); exit codes above 128 are 128 + a signal (137 SIGKILL, 143 SIGTERM)."),
            rows=[step.first], culprit=culprit, severity=Severity.ERROR, hosts=[node] if node else nodes,
            reactive=True)]


__all__ = ["FailureRecorded"]
