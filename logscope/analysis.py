"""The library entry point: ``analyze(paths) -> Analysis``.

Runs every registered detector over a job's timeline, contains a detector that crashes (its
failure is reported, the others still run), and chooses the verdict: the earliest *root*
finding; when several roots describe the same moment (within :data:`SAME_MOMENT`), the most
specific one wins (an OOM beats the generic crash it caused). The other roots are then listed as
consequences. No root but error lines that no detector explains gives ``unknown``; nothing at
all gives ``healthy``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from logscope import __version__
from logscope.detectors import REGISTRY, Detector, JobView
from logscope.detectors.base import culprit_of, evidence_of, order_key, who
from logscope.detectors.worker_restart import recovered_until
from logscope.hints import missing_evidence_hints
from logscope.model import Category, Culprit, Evidence, Finding, Role, Severity, Verdict
from logscope.parsers.filenames import DEFAULT_PATTERNS
from logscope.timeline import Job, ProgressHook, load_job

SCHEMA = "logscope.analysis/1"
SAME_MOMENT = timedelta(seconds=5)
SAME_MOMENT_LINES = 400


@dataclass
class Analysis:
    """A job's findings and verdict, plus the job they came from."""

    job: Job
    view: JobView
    findings: list[Finding]
    verdict: Verdict
    detector_errors: list[str] = field(default_factory=list)
    # "next time, enable X": what the logs lacked that would have made this analysis sharper
    hints: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.verdict.category != Category.HEALTHY

    def to_json(self) -> dict[str, Any]:
        job = self.job
        return {
            "schema": SCHEMA,
            "logscope_version": __version__,
            "job": {
                "id": job.job_id,
                "name": job.job_name,
                "nodes": job.nodes,
                "files": [f.display for f in job.files],
                "lines_read": job.lines_read,
                "lines_recognised": job.lines_recognised,
                "lines_unrecognised": job.lines_unrecognised,
                "world_size": self.view.world_size,
            },
            "verdict": self.verdict.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "nodes": node_summary(self),
            "hints": self.hints,
            "skipped": [{"file": s.display, "reason": s.reason} for s in job.skipped],
            "warnings": job.warnings + self.detector_errors,
        }


def analyze(paths: Sequence[Path], *, patterns: tuple[str, ...] = DEFAULT_PATTERNS,
            select: Iterable[str] | None = None, ignore: Iterable[str] | None = None,
            on_progress: ProgressHook | None = None) -> Analysis:
    """Read the logs under ``paths`` and analyse them. Raises InputError for unusable input."""
    job = load_job(paths, patterns, on_progress)
    return analyze_job(job, select=select, ignore=ignore)


def analyze_job(job: Job, *, select: Iterable[str] | None = None,
                ignore: Iterable[str] | None = None) -> Analysis:
    file_nodes = {f.display: f.info.node for f in job.files}
    view = JobView(job.timeline, tuple(job.nodes), tuple(f.display for f in job.files), file_nodes)
    findings, errors = run_detectors(view, selected_detectors(select, ignore))
    findings, verdict = choose_verdict(findings, view)
    try:
        hints = missing_evidence_hints(view, findings)
    except Exception as error:  # advice must never cost the verdict
        hints = []
        errors.append(f"hints failed: {type(error).__name__}: {error}")
    return Analysis(job, view, findings, verdict, errors, hints)


def selected_detectors(select: Iterable[str] | None, ignore: Iterable[str] | None) -> list[type[Detector]]:
    """Detectors chosen by code/name prefixes: explicit ignore beats select; longest prefix wins."""
    chosen = []
    sel = [s.strip().upper() for s in select or [] if s.strip()]
    ign = [s.strip().upper() for s in ignore or [] if s.strip()]
    for detector in REGISTRY:
        keys = (detector.code.upper(), detector.name.upper())

        def match(prefixes: list[str], keys: tuple[str, ...] = keys) -> int:
            return max((len(p) for p in prefixes for k in keys if k.startswith(p)), default=-1)

        s, i = (match(sel) if sel else 0), match(ign)
        if s >= 0 and s >= i and not (i >= 0 and i >= s):
            chosen.append(detector)
    return chosen


def run_detectors(view: JobView, detectors: Sequence[type[Detector]]) -> tuple[list[Finding], list[str]]:
    findings: list[Finding] = []
    errors: list[str] = []
    for detector_class in detectors:
        detector = detector_class()
        try:
            findings.extend(detector.detect(view))
        except Exception as error:  # a broken detector must not hide the others' findings
            errors.append(f"{detector.code} {detector.name} failed: {type(error).__name__}: {error}")
    return findings, errors


def _moment(finding: Finding) -> tuple[datetime, str, int]:
    """Sort key: the earliest a finding's evidence can have been written, then file order."""
    low, high = _window(finding)
    file, line = finding.order_key or ("", 0)
    return (low or high or datetime.max, file, line)


def _window(finding: Finding) -> tuple[datetime | None, datetime | None]:
    low, high = finding.window
    if low is None and high is None:
        return finding.first_seen, finding.first_seen
    return low or high, high or low


def _possibly_first(roots: list[Finding]) -> list[Finding]:
    """The roots that may have happened first: no other root certainly precedes them.

    A root certainly precedes another when its latest possible time is before the other's
    earliest (beyond SAME_MOMENT). Without times, file order within one file decides.
    """
    timed = [f for f in roots if _window(f)[0] is not None]
    if not timed:
        first = min(roots, key=_moment)
        return [f for f in roots if _same_moment(f, first)]
    earliest_latest = min(_window(f)[1] or datetime.max for f in timed)
    return [f for f in timed if (_window(f)[0] or datetime.max) <= earliest_latest + SAME_MOMENT]


def _same_moment(a: Finding, b: Finding) -> bool:
    if a.order_key and b.order_key and a.order_key[0] == b.order_key[0]:
        return abs(a.order_key[1] - b.order_key[1]) <= SAME_MOMENT_LINES
    return a.first_seen is None and b.first_seen is None


def choose_verdict(findings: list[Finding], view: JobView) -> tuple[list[Finding], Verdict]:
    """Pick the root finding and order the findings: root first, then by time.

    Among the roots that may have come first, a non-reactive one beats a reactive one (a crash
    beats the timeouts it causes), then the most specific wins (an OOM beats the generic crash
    it caused), then the earliest. Roots from before the last restart of a job that recovered
    from it are context.
    """
    survived = recovered_until(view)
    if survived is not None:
        # torchrun restarted the workers and every agent finished: what failed before the last
        # restart is part of the story (LS301/LS302 tell it), not the job's verdict.
        findings = [dataclasses.replace(f, role=Role.CONTEXT)
                    if f.role == Role.ROOT and (_window(f)[0] or datetime.min) <= survived else f
                    for f in findings]
    roots = [f for f in findings if f.role == Role.ROOT and f.severity.rank >= Severity.ERROR.rank]
    if not roots:
        ordered = sorted(findings, key=_moment)
        return ordered, _no_root_verdict(view, ordered, survived)
    contenders = _possibly_first(roots)
    chosen = min(contenders, key=lambda f: (f.reactive, -f.specificity, _moment(f)))
    culprit = _corroborate(chosen, findings)
    rest = []
    for f in findings:
        if f is chosen:
            continue
        if f.role == Role.ROOT:
            f = dataclasses.replace(f, role=Role.CONSEQUENCE)
        rest.append(f)
    ordered = [chosen, *sorted(rest, key=_moment)]
    summary = chosen.title
    if culprit is not None and chosen.culprit is not None and culprit.host != chosen.culprit.host:
        summary += f" (the only host named by related evidence is {culprit.host})"
    verdict = Verdict(chosen.category, chosen.code, summary, culprit)
    return ordered, verdict


def _corroborate(chosen: Finding, findings: list[Finding]) -> Culprit | None:
    """A culprit without a host takes the single host named by same-category findings."""
    culprit = chosen.culprit
    if culprit is None:
        hosts = set(chosen.hosts)
        if len(hosts) == 1 and chosen.evidence:
            host = next(iter(hosts))
            return Culprit(host=host, node=host, time=chosen.first_seen, evidence=chosen.evidence[0])
        return None
    if culprit.host or culprit.node:
        return culprit
    named = {h for f in findings if f is not chosen and f.category == chosen.category for h in f.hosts}
    if len(named) == 1:
        host = next(iter(named))
        return dataclasses.replace(culprit, host=host, node=host)
    return culprit


def _no_root_verdict(view: JobView, findings: list[Finding], survived: datetime | None = None) -> Verdict:
    errors = view.events.filter(pl.col("severity").is_in([Severity.ERROR.value, Severity.CRITICAL.value]))
    if survived is not None:
        # the errors of the attempts a restart replaced are the failure the job recovered from
        errors = errors.filter(~(pl.coalesce("time_latest", "time") <= survived).fill_null(False))
    # Error lines a finding already cites (as context: a corrected-memory Xid, a killed
    # DataLoader worker) are explained, not unknown.
    cited = {(e.file, e.line) for f in findings for e in f.evidence}
    if cited and errors.height:
        explained = pl.DataFrame([{"file": f, "line": n} for f, n in cited],
                                 schema={"file": pl.String, "line": pl.Int64})
        errors = errors.join(explained, on=["file", "line"], how="anti")
    if errors.height:
        first = sorted(errors.to_dicts(), key=order_key)[0]
        culprit = culprit_of(first)
        return Verdict(
            Category.UNKNOWN, None,
            f"{errors.height} error line(s), first from {who(first)}, match no known failure pattern",
            culprit,
        )
    if survived is not None:
        return Verdict(Category.HEALTHY, None, "The job recovered: it ran again after a failure (a torchrun restart "
                       "or a new launch) and every agent finished; see the notes below", None)
    if findings:
        return Verdict(Category.HEALTHY, None, "No failure found; see the notes below", None)
    return Verdict(Category.HEALTHY, None, "No failure found: the job looks healthy", None)


def node_summary(analysis: Analysis) -> list[dict[str, Any]]:
    """Per node: files, ranks, first/last event time, last step, error lines, its role, and its
    last line.

    Times follow the timeline's model (``time`` the earliest a line can have been written): a
    node's first and last events are those of its own lines; a line about it in another node's
    file (``srun: error: Node failure on node02`` in node01's log) does not make it look alive
    later than its own log. ``last_line`` is the last recognised line of the node's own files.
    """
    events = analysis.view.events
    if events.height == 0:
        return []
    root = analysis.verdict.root_cause
    root_node = (root.node or root.host) if root else None
    involved: set[str] = set()
    for finding in analysis.findings:
        involved.update(finding.hosts)
    owner = pl.col("file").replace_strict(analysis.view.file_nodes, default=None, return_dtype=pl.String)
    rows = events.filter(pl.col("node").is_not_null())
    own = rows.filter(owner.is_null() | (owner == pl.col("node")))
    summary = (
        rows.group_by("node")
        .agg(
            pl.col("file").unique().sort().alias("files"),
            pl.col("rank").drop_nulls().unique().sort().alias("ranks"),
            pl.col("fields").struct.field("step").max().alias("last_step"),
            pl.col("severity").is_in(["error", "critical"]).sum().alias("error_lines"),
        )
        .join(own.group_by("node").agg(pl.col("time").min().alias("first"), pl.col("time").max().alias("last")),
              on="node", how="left")
        .sort("node")
    )
    last_lines = {
        row["node"]: row for row in own.with_columns(pl.coalesce("time_latest", "time").alias("_at"))
        .sort("_at", "file", "line", nulls_last=False).group_by("node").last().to_dicts()}
    out = []
    for row in summary.to_dicts():
        node = row["node"]
        role = "root" if node == root_node else ("involved" if node in involved else "")
        last = last_lines.get(node)
        out.append({
            "node": node,
            "files": row["files"],
            "ranks": row["ranks"],
            "first_event": row["first"].isoformat() if row["first"] else None,
            "last_event": row["last"].isoformat() if row["last"] else None,
            "last_step": row["last_step"],
            "error_lines": row["error_lines"],
            "role": role,
            "last_line": evidence_of(last).to_json() if last else None,
        })
    return out


__all__ = ["SCHEMA", "Analysis", "Evidence", "analyze", "analyze_job", "choose_verdict"]
