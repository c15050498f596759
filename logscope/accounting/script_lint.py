"""The job's batch script (``sacct -B``), linted, and which of its problems explain a verdict.

A launch mistake in the script is often *why* the logs show what they show: ``$SLURM_PROCID``
expanded by the batch shell (LL001) is why every node believed it was node 0 (LS201). :data:`EXPLAINS`
lists, for each lint rule, the detectors whose finding it can cause; the report shows such a
problem beside the verdict, and every other problem of the script below it.
"""

from __future__ import annotations

from logscope.accounting.record import AccountingRecord
from logscope.lint import Problem, lint_script, parse_script

# lint rule -> the detector codes whose findings that mistake produces (logscope/lint.py's rules,
# logscope/detectors/'s codes)
EXPLAINS: dict[str, frozenset[str]] = {
    "LL001": frozenset({"LS201", "LS203"}),  # procid-expanded-early: node-rank-collision, split-world
    "LL002": frozenset({"LS202", "LS205", "LS206"}),  # ntasks-per-node with torchrun: duplicate rank/port/GPU
    "LL003": frozenset({"LS207"}),  # nnodes-not-from-slurm: nnodes-mismatch
    "LL004": frozenset({"LS101", "LS103"}),  # no --kill-on-bad-exit: the step hangs on after a rank died
    "LL006": frozenset({"LS204", "LS208"}),  # MASTER_ADDR not from the node list: mismatch, unreachable
    "LL007": frozenset({"LS201", "LS203"}),  # --node_rank with c10d: collisions, split worlds
}


def script_problems(record: AccountingRecord) -> list[Problem]:
    """The lint problems of the record's batch script (none without a script)."""
    if not record.script:
        return []
    return lint_script(parse_script(record.script, f"batch script of job {record.job_id}"))


def explaining(problems: list[Problem], finding_code: str | None) -> list[Problem]:
    """The problems that can explain a verdict whose root finding is ``finding_code``."""
    if finding_code is None:
        return []
    return [p for p in problems if finding_code in EXPLAINS.get(p.code, frozenset())]


__all__ = ["EXPLAINS", "explaining", "script_problems"]
