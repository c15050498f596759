"""SLURM's record of the job and its batch script's lint problems, as the rows every output shows
(terminal, Markdown and HTML reports); the JSON has the same in ``accounting`` and ``script_lint``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from logscope.accounting.record import AccountingRecord, StepRecord
from logscope.lint import Problem

if TYPE_CHECKING:
    from logscope.analysis import Analysis

COLUMNS = ("step", "state", "exit code", "reason", "nodes", "start", "end", "MaxRSS")
MAX_NODES_SHOWN = 6


def record_rows(record: AccountingRecord) -> list[list[str]]:
    """One row per job and step, as sacct shows them."""
    return [_row(step) for step in record.records]


def _row(step: StepRecord) -> list[str]:
    nodes = ", ".join(step.nodes[:MAX_NODES_SHOWN]) + (
        f" (+{len(step.nodes) - MAX_NODES_SHOWN})" if len(step.nodes) > MAX_NODES_SHOWN else "")
    rss = (step.max_rss or "") + (f" on {step.max_rss_node}" if step.max_rss and step.max_rss_node else "")
    reason = step.reason if step.reason and step.reason != "None" else ""
    return [step.step_id, step.state_text, step.exit_text, reason, nodes,
            step.start.isoformat(sep=" ") if step.start else "", step.end.isoformat(sep=" ") if step.end else "", rss]


def record_note(record: AccountingRecord) -> str:
    """Where the record came from, and the facts outside the table."""
    facts = [f"from {', '.join(record.sources)}"]
    if record.failed_node:
        facts.append(f"failed node {record.failed_node}")
    if record.stdout:
        facts.append(f"StdOut {record.stdout}")
    if record.user:
        facts.append(f"user {record.user}")
    return "; ".join(facts)


def problem_line(problem: Problem) -> str:
    """``line 12:5 LL001 message (fix: ...)``."""
    return f"line {problem.line}:{problem.column} {problem.code} {problem.message} (fix: {problem.fix})"


def script_lines(analysis: Analysis) -> tuple[list[str], list[str]]:
    """The script's problems that explain the verdict, and the others."""
    explaining = analysis.explaining_problems
    return ([problem_line(p) for p in explaining],
            [problem_line(p) for p in analysis.script_problems if p not in explaining])


__all__ = ["COLUMNS", "problem_line", "record_note", "record_rows", "script_lines"]
