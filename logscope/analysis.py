"""The library entry point: ``analyze(paths) -> Analysis``.

Runs every registered detector over a job's timeline, contains a detector that crashes (its
failure is reported, the others still run), and chooses the verdict: the earliest *root*
finding; when several roots describe the same moment (within :data:`SAME_MOMENT`), the most
specific one wins (an OOM beats the generic crash it caused). The other roots are then listed as
consequences. No root but error lines that no detector explains gives ``unknown``. With no
failure at all, the job is ``healthy`` only on evidence of a clean end
(:mod:`logscope.detectors.completion`) or of a recovery (LS302); otherwise it is ``incomplete``:
the logs stop without saying how the job ended. Failures before a clean end did not stop the run
and stay as context.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from logscope import __version__
from logscope.detectors import REGISTRY, Detector, JobView, by_code
from logscope.detectors.base import (
    context_line,
    culprit_of,
    evidence_of,
    local_rank_from_device,
    order_key,
    ordered_dicts,
    seen_at,
    when,
    who,
)
from logscope.detectors.completion import before_clean_end, clean_end, row_before_clean_end, run_completed
from logscope.detectors.exit_cascade import is_victim
from logscope.detectors.worker_restart import recovered_until
from logscope.errors import InputError
from logscope.hints import missing_evidence_hints
from logscope.ingest.job_text import job_text_in
from logscope.model import Category, Culprit, Event, Evidence, Finding, Role, Severity, Verdict
from logscope.parsers.filenames import DEFAULT_PATTERNS
from logscope.textsafe import shortened
from logscope.timeline import Job, ProgressHook, load_jobs

if TYPE_CHECKING:
    from logscope.accounting.record import AccountingRecord
    from logscope.detectors.fr_facts import FlightRecorder
    from logscope.diff import Comparison
    from logscope.lint import Problem

SCHEMA = "logscope.analysis/1"
SAME_MOMENT = timedelta(seconds=5)
SAME_MOMENT_LINES = 400
# findings saying SLURM lost a node: LS604 node-failure (srun's line), LS605 node-fail-recorded (sacct)
NODE_LOSS_FINDINGS = frozenset({"LS604", "LS605"})
# findings that are a root only where no log line shows a failure: LS305 failure-recorded (SLURM
# recorded FAILED and no log line says why)
RECORD_ONLY_ROOTS = frozenset({"LS305"})


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
    # SLURM's record of the job (sacct/scontrol, logscope.accounting), when it was read; its rows
    # are in the timeline too
    accounting: AccountingRecord | None = None
    # the lint problems of the job's batch script (from the record)
    script_problems: list[Problem] = field(default_factory=list)
    # what changed since a run that worked (analyze/report --against; logscope.diff), when asked
    comparison: Comparison | None = None

    @property
    def explaining_problems(self) -> list[Problem]:
        """The batch script's problems that explain the verdict (LL001 beside LS201)."""
        if not self.script_problems:
            return []
        from logscope.accounting.script_lint import explaining

        return explaining(self.script_problems, self.verdict.finding)

    @property
    def flight_recorder(self) -> FlightRecorder | None:
        """What the job's Flight Recorder dumps say (None without dumps): one model for every output."""
        from logscope.detectors.fr_facts import flight_recorder_of

        return flight_recorder_of(self.view)

    @property
    def root_finding(self) -> Finding | None:
        """The finding the verdict rests on (findings are ordered root first); None where the
        verdict rests on none (healthy, incomplete, a failure no finding explains), whatever
        context findings there are (a failure the job recovered from): no output advises on them."""
        if self.verdict.finding and self.findings and self.findings[0].code == self.verdict.finding:
            return self.findings[0]
        return None

    @property
    def failed(self) -> bool:
        return self.verdict.category not in (Category.HEALTHY, Category.INCOMPLETE)

    @property
    def exit_code(self) -> int:
        """0 healthy (or recovered), 1 a failure was found, 3 incomplete (no failure, no clean end)."""
        if self.verdict.category == Category.HEALTHY:
            return 0
        return 3 if self.verdict.category == Category.INCOMPLETE else 1

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
            "accounting": self.accounting.to_json() if self.accounting else None,
            "flight_recorder": self.flight_recorder.to_json() if self.flight_recorder else None,
            "script_lint": [{**p.to_json(), "explains_verdict": p in self.explaining_problems}
                            for p in self.script_problems],
            **({"comparison": self.comparison.to_json()} if self.comparison is not None else {}),
        }


def analyze(paths: Sequence[Path], *, patterns: tuple[str, ...] = DEFAULT_PATTERNS,
            select: Iterable[str] | None = None, ignore: Iterable[str] | None = None,
            on_progress: ProgressHook | None = None, accounting: AccountingRecord | None = None,
            exclude: Sequence[Path] = (), hints: bool = True, fr: Sequence[Path] = ()) -> Analysis:
    """Read the logs under ``paths`` and analyse them, with SLURM's record of the job beside them
    when given (``exclude``: the files that record was read from), and the job's Flight Recorder
    dumps (among ``paths``, at ``fr``, where the logs say: logscope.flight_recorder). Raises
    InputError for unusable input. ``hints=False``: no "next time" hints (``logscope scan``'s table
    has no place for them)."""
    from logscope.flight_recorder.joining import load_job_with_dumps

    script = accounting.script if accounting is not None else None
    return _analysed(load_job_with_dumps(paths, patterns, on_progress, exclude, fr, script), paths, select, ignore,
                     accounting, hints)


def _has_dumps(job: Job) -> bool:
    from logscope.flight_recorder.joining import has_dumps

    return has_dumps(job)


def analyze_jobs(inputs_of_jobs: Sequence[Sequence[Path]], *, patterns: tuple[str, ...] = DEFAULT_PATTERNS,
                 hints: bool = True) -> list[Analysis | InputError]:
    """:func:`analyze` for each job's inputs (the InputError it raises for one, in its place), the
    files of all of them read together (:func:`logscope.timeline.load_jobs`): ``logscope scan``."""
    out: list[Analysis | InputError] = []
    for inputs, job in zip(inputs_of_jobs, load_jobs(inputs_of_jobs, patterns), strict=True):
        try:
            out.append(job if isinstance(job, InputError) else _analysed(job, inputs, None, None, None, hints))
        except InputError as error:
            out.append(error)
    return out


def _analysed(job: Job, paths: Sequence[Path], select: Iterable[str] | None, ignore: Iterable[str] | None,
              accounting: AccountingRecord | None, hints: bool = True) -> Analysis:
    """The analysis of a job read from ``paths``; InputError when no line of it was recognised."""
    if accounting is not None:
        # SLURM's record is read only where one was given: its rows' module is imported here.
        from logscope.accounting.rows import add_to_job

        accounting = add_to_job(job, accounting)  # on the logs' clock
    if job.lines_recognised == 0 and accounting is None and _has_dumps(job):
        # Flight Recorder dumps and no log line: a job of the dumps alone
        job.warnings.append("no line of a job log was read: the verdict rests on the Flight Recorder dumps alone")
        return analyze_job(job, select=select, ignore=ignore, hints=hints)
    if job.lines_recognised == 0:
        if accounting is not None:
            job.warnings.append("no line of the logs was recognised: the verdict rests on SLURM's record alone")
        elif job_text_in(job.files):
            # A job's own prints, between which nothing upstream printed: a verdict on what they
            # show (no failure, no clean end) is honest; refusing them as no log is not.
            job.warnings.append("no message logscope knows stands in these lines; they read as a training job's "
                                "own output, and the verdict rests on them alone")
        else:
            # A README, a config, an empty file: nothing here is a training job's log, and a
            # verdict on it ("healthy") would be a promise about a job nobody saw.
            where = ", ".join(str(p) for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
            raise InputError(f"{where}: no line of a training job's log was recognised ({job.lines_read} line(s) "
                             "read), and none speaks of training: not a job log")
    analysis = analyze_job(job, select=select, ignore=ignore, hints=hints)
    if accounting is not None:
        analysis.accounting = accounting
        # The linter is imported only where SLURM's record may hold a batch script to lint.
        from logscope.accounting.script_lint import script_problems

        analysis.script_problems = script_problems(accounting)
    return analysis


def analyze_job(job: Job, *, select: Iterable[str] | None = None,
                ignore: Iterable[str] | None = None, hints: bool = True) -> Analysis:
    file_nodes = {f.display: f.info.node for f in job.files}
    view = JobView(job.timeline, tuple(job.nodes), tuple(f.display for f in job.files), file_nodes)
    findings, errors = run_detectors(view, selected_detectors(select, ignore))
    findings, verdict = choose_verdict(findings, view)
    advice: list[str] = []
    try:
        advice = missing_evidence_hints(view, findings) if hints else []
    except Exception as error:  # advice must never cost the verdict
        errors.append(f"hints failed: {type(error).__name__}: {error}")
    return Analysis(job, view, findings, verdict, errors, advice)


def selected_detectors(select: Iterable[str] | None, ignore: Iterable[str] | None) -> list[type[Detector]]:
    """Detectors chosen by code/name prefixes: explicit ignore beats select; longest prefix wins."""
    from logscope.choices import detector_keys, selectors

    chosen = []
    sel = selectors(select, detector_keys(), "--select")  # one naming no detector is a usage error
    ign = selectors(ignore, detector_keys(), "--ignore")
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
        if detector_class.requires and not view.has(*detector_class.requires):
            continue  # none of the events it cannot fire without (its contract; tests/test_registry.py)
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
    low, high = low or high, high or low
    if low is not None and high is not None and high < low:  # never inverted: one can always come first
        low, high = high, low
    return low, high


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
    completed = run_completed(view)
    if completed is not None:
        # The run went on to complete after these: they did not stop it (a logged-and-ignored
        # error, an earlier launch of the same job). What fails after the end still counts.
        findings = [dataclasses.replace(f, role=Role.CONTEXT)
                    if f.role == Role.ROOT and before_clean_end(f, completed, view) else f for f in findings]
    end = clean_end(view)
    roots = [f for f in findings if f.role == Role.ROOT and f.severity.rank >= Severity.ERROR.rank]
    if any(f.code not in RECORD_ONLY_ROOTS for f in roots):
        # the logs say why: SLURM's "FAILED, no log line says why" is their failure's record,
        # whatever the clocks (a record hours behind the logs seems to come first)
        roots = [f for f in roots if f.code not in RECORD_ONLY_ROOTS]
    if not roots:
        ordered = sorted(findings, key=_moment)
        return ordered, _no_root_verdict(view, ordered, survived, end)
    contenders = _possibly_first(roots)
    chosen = min(contenders, key=lambda f: (f.reactive, -f.specificity, _moment(f)))
    chosen = _stall_explained(chosen, roots)
    culprit = _corroborate(chosen, findings, view)
    rest = []
    for f in findings:
        if f is chosen or (f.code, f.order_key, f.evidence) == (chosen.code, chosen.order_key, chosen.evidence):
            continue  # the chosen one (or the one it was completed from: _stall_explained)
        if f.role == Role.ROOT:
            f = dataclasses.replace(f, role=Role.CONSEQUENCE)
        rest.append(f)
    ordered = [chosen, *sorted(rest, key=_moment)]
    summary = chosen.title
    if culprit is not None and chosen.culprit is not None and culprit.host != chosen.culprit.host:
        summary += f" (the only host named by related evidence is {culprit.host})"
    if (culprit is not None and chosen.culprit is not None and chosen.culprit.local_rank is not None
            and culprit.local_rank is None):
        summary += (f" (two launchers ran on {culprit.node or culprit.host}: its local rank "
                    f"{chosen.culprit.local_rank} names no one process)")
    verdict = Verdict(chosen.category, chosen.code, summary, culprit)
    return ordered, verdict


def _stall_explained(chosen: Finding, roots: list[Finding]) -> Finding:
    """A hang that names the rank that stopped advancing is explained by that rank's own failure,
    whenever its line was written (an OOM in a background thread stalls a rank without killing it;
    the line may be flushed only at exit, after the peers' timeouts)."""
    stopped = chosen.culprit
    if chosen.category != Category.HANG or stopped is None or stopped.rank is None:
        return chosen
    own = [f for f in roots if f is not chosen and not f.reactive and f.culprit is not None
           and f.culprit.rank == stopped.rank and f.category in (Category.OOM, Category.HARDWARE, Category.CRASH)
           and (f.culprit.host or f.culprit.node or None) in (None, stopped.host or stopped.node)]
    # SLURM lost the stopped rank's node (srun's "Node failure on HOST", LS604; the accounting
    # record's NODE_FAIL, LS605): the node's failure is why the rank stopped. A record that names
    # no node (22.05 has no FailedNode) but lists the stopped rank's node among the job's is
    # about that node: the logs say which node stopped, SLURM that a node of the job failed.
    place = stopped.node or stopped.host
    lost = [f for f in roots if f.code in NODE_LOSS_FINDINGS and place is not None
            and ((f.culprit is not None and (f.culprit.node or f.culprit.host) == place)
                 or (f.culprit is None and place in f.hosts))]
    if own or not lost:
        return min(own, key=_moment) if own else chosen
    found = min(lost, key=_moment)
    if found.culprit is not None:
        return found
    return dataclasses.replace(
        found, title=f"{found.title}; it was {place}, where rank {stopped.rank} stopped advancing",
        culprit=Culprit(host=place, node=place, time=found.first_seen,
                        evidence=found.evidence[0] if found.evidence else None), hosts=(str(place),))


def _corroborate(chosen: Finding, findings: list[Finding], view: JobView) -> Culprit | None:
    """The chosen finding's culprit, completed from what the job says: rank 0 is local rank 0; on a
    one-node job the node (and the local rank from the rank); a process with no place takes the one
    node the launchers' exit reports name, or the single host same-category findings name. A
    finding that names nobody gets nobody."""
    culprit = _completed(_same_line_filled(chosen, findings))
    node = _single_node(view)
    if node is not None and culprit is not None and culprit.rank is not None and culprit.local_rank is None:
        culprit = dataclasses.replace(culprit, local_rank=culprit.rank)  # one node: local rank = global rank
    if node is not None and chosen.evidence:
        # Every process of a one-node job ran there: whatever failed, failed on that node (the
        # scheduler's decisions excepted: they name no process, and no node either).
        if culprit is None and chosen.category != Category.SCHEDULER:
            return Culprit(host=node, node=node, time=chosen.first_seen, evidence=chosen.evidence[0])
        if culprit is not None and not (culprit.host or culprit.node):
            return dataclasses.replace(culprit, host=node, node=node)
    if culprit is None:
        # The detector named nobody: the hosts its evidence comes from are witnesses (a timeout
        # waited out, a connection seen breaking), not where the failure was.
        return None
    if culprit.host or culprit.node:
        detector = by_code(chosen.code)
        if detector is None or not detector.names_a_node:
            culprit = local_rank_from_device(culprit, view)
        return _local_rank_if_one_launcher(culprit, view)
    reported = _reported_places(view)
    if len(reported) == 1:
        # every launcher report of a failed process (torchrun's records, srun's task exits) is
        # about one node: the unidentified failure is among them
        place = next(iter(reported))
        return dataclasses.replace(culprit, host=place, node=place)
    named = {h for f in findings if f is not chosen and f.category == chosen.category for h in f.hosts}
    if len(named) == 1:
        host = next(iter(named))
        return dataclasses.replace(culprit, host=host, node=host)
    return culprit


def _local_rank_if_one_launcher(culprit: Culprit, view: JobView) -> Culprit:
    """A local rank names a process of its node only where one launcher ran there: where the
    node's lines give one local rank to two global ranks (two torchrun agents on one host, each
    numbering its workers from 0), a culprit known only by its local rank there is the node's."""
    place = culprit.node or culprit.host
    if culprit.local_rank is None or culprit.rank is not None or place is None:
        return culprit
    pairs = view.events.filter((pl.coalesce("node", "host") == place) & pl.col("rank").is_not_null()
                               & pl.col("local_rank").is_not_null())
    shared = pairs.group_by("local_rank").agg(pl.col("rank").n_unique().alias("ranks"))
    if shared.height and shared["ranks"].max() > 1:  # type: ignore[operator]
        return dataclasses.replace(culprit, local_rank=None)
    return culprit


def _same_line_filled(chosen: Finding, findings: list[Finding]) -> Culprit | None:
    """The chosen culprit with what it lacks (its rank, local rank, place) taken from the other
    findings whose culprit's evidence is the same line: one line is one process, and another
    detector may have tied it to its launcher's report (LS301 to torchrun's exit record). Values
    that disagree are not taken."""
    culprit = chosen.culprit
    if culprit is None or culprit.evidence is None:
        return culprit
    line = (culprit.evidence.file, culprit.evidence.line)
    for other in findings:
        them = other.culprit
        if other is chosen or them is None or them.evidence is None or (them.evidence.file,
                                                                          them.evidence.line) != line:
            continue
        if any(mine is not None and theirs is not None and mine != theirs
               for mine, theirs in ((culprit.rank, them.rank), (culprit.local_rank, them.local_rank),
                                    (culprit.node or culprit.host, them.node or them.host))):
            continue
        culprit = dataclasses.replace(
            culprit, rank=culprit.rank if culprit.rank is not None else them.rank,
            local_rank=culprit.local_rank if culprit.local_rank is not None else them.local_rank,
            host=culprit.host or them.host, node=culprit.node or them.node)
    return culprit


def _reported_places(view: JobView) -> set[str]:
    """The nodes the launchers' reports of failed processes name."""
    reports = view.of(Event.CHILD_FAILURE, Event.WORKER_FAILED, Event.SRUN_TASK_EXIT)
    return set(reports.select(pl.coalesce("node", "host").drop_nulls().unique()).to_series().to_list())


def _completed(culprit: Culprit | None) -> Culprit | None:
    """Global rank 0 is local rank 0 of the first node, whatever the launcher."""
    if culprit is not None and culprit.rank == 0 and culprit.local_rank is None:
        return dataclasses.replace(culprit, local_rank=0)
    return culprit


def _single_node(view: JobView) -> str | None:
    """The job's node when the logs show it ran on one node only: one place named, and NCCL saying
    its communicators span one node, or as many distinct ranks seen there as the job's world size.
    An excerpt of one node of a bigger job shows neither."""
    events = view.events
    places = events.select(pl.coalesce("node", "host").drop_nulls().unique()).to_series().to_list()
    if len(places) != 1:
        return None
    stated = view.of(Event.LAUNCH_COMMAND).filter(
        pl.col("fields").struct.field("key").is_in(["SLURM_NNODES", "SLURM_JOB_NUM_NODES", "number_of_nodes"]))
    if stated.height:
        counts = set(stated.select(pl.col("fields").struct.field("value")).to_series().to_list())
        return str(places[0]) if counts == {"1"} else None
    nnodes = view.of(Event.NCCL_COMM_INFO).select(pl.col("fields").struct.field("nnodes").cast(pl.Int64, strict=False)
                                                   .max()).item() if view.has(Event.NCCL_COMM_INFO) else None
    if nnodes is not None:
        return str(places[0]) if nnodes == 1 else None
    world = view.world_size
    seen = events.filter(~context_line()).select(
        pl.coalesce("rank", "local_rank", "task").drop_nulls().n_unique()).item()
    return str(places[0]) if world is not None and world > 1 and seen >= world else None


def _no_root_verdict(view: JobView, findings: list[Finding], survived: datetime | None = None,
                     end: dict[str, Any] | None = None) -> Verdict:
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
    unexplained = ordered_dicts(errors)
    completed = run_completed(view)
    if completed is not None:
        unexplained = [r for r in unexplained if not row_before_clean_end(r, completed)]
    if unexplained:
        first = unexplained[0]
        # a line that witnesses another's failure (a teardown announced, a peer gone) names no one
        witness = is_victim(first)
        summary = (f"{len(unexplained)} error line(s), first from {who(first)}, "
                   + ("which witnesses a failure no line of the logs shows" if witness
                      else "match no known failure pattern"))
        return Verdict(Category.UNKNOWN, None, summary, None if witness else culprit_of(first))
    if survived is not None:
        return Verdict(Category.HEALTHY, None, "The job recovered: it ran again after a failure (a torchrun restart "
                       "or a new launch) and every agent finished; see the notes below", None)
    if end is not None:
        text = str(end.get("text") or "").strip()
        shown = shortened(text, 100)
        return Verdict(Category.HEALTHY, None,
                       f"No failure found, and the run ended cleanly: {shown} ({end.get('file')}:{end.get('line')})",
                       None)
    return Verdict(Category.INCOMPLETE, None, _incomplete_summary(view), None)


def _incomplete_summary(view: JobView) -> str:
    """Where the logs stop, for a job with no failure and no clean end."""
    events = view.events.filter(pl.col("source") != "fr")  # where each log stops, not the dumps
    if events.height == 0:
        return "No failure found, but nothing in these logs shows how the job ended"
    # Only what is read of them below (who, seen_at, order_key, the text): not the fields struct.
    last = (events.select("file", "line", "text", "rank", "local_rank", "host", "node", "time", "time_latest",
                          "time_inferred")
            .sort("line").group_by("file", maintain_order=True).last().to_dicts())
    ends = []
    for row in sorted(last, key=order_key)[-4:]:
        text = str(row.get("text") or "").strip()
        step = _last_step(view, row)
        doing = f"after step {step}" if step is not None else f"last: {text[:60]}"
        ends.append(f"{who(row)} at {when(seen_at(row))} ({doing})")
    more = f" and {len(last) - 4} more" if len(last) > 4 else ""
    return ("No failure found, but no clean end either: the logs stop without saying how the job ended ("
            + "; ".join(ends) + more + "). A job still running, an excerpt cut short, or a cancellation "
            "whose line the log did not catch (SLURM's record, sacct, tells)")


def _last_step(view: JobView, row: dict[str, Any]) -> int | None:
    # One query on the progress rows, none of them copied (a progress log's are most of its rows).
    value = view.of(Event.PROGRESS).select(
        pl.col("fields").struct.field("step").filter(pl.col("file") == row.get("file")).max()).item()
    return int(value) if value is not None else None


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
    # Only the columns read below, before any filter: filtering the rows themselves (the fields
    # struct of 43 fields with them) took ~0.13 s of the ~0.2 s this took on a crash loop's
    # 225,000 events.
    rows = events.lazy().select(
        "node", "file", "line", "prefix", "text", "time", "time_latest", "time_inferred", "rank", "severity",
        "event", pl.col("fields").struct.field("step").alias("_step"),
    ).filter(pl.col("node").is_not_null())
    # SLURM's record of a node (an accounting row) and its ranks' Flight Recorder dumps are not
    # lines of its log
    own = rows.filter((owner.is_null() | (owner == pl.col("node")))
                      & ~pl.col("event").is_in([Event.ACCOUNTING.value, Event.FR_DUMP.value, Event.FR_GROUP.value,
                                                Event.FR_ENTRY.value]))
    summary_plan = (
        rows.group_by("node")
        .agg(
            pl.col("file").unique().sort().alias("files"),
            pl.col("rank").drop_nulls().unique().sort().alias("ranks"),
            pl.col("_step").max().alias("last_step"),
            pl.col("severity").is_in(["error", "critical"]).sum().alias("error_lines"),
        )
        .join(own.group_by("node").agg(pl.col("time").min().alias("first"), pl.col("time").max().alias("last")),
              on="node", how="left")
        .sort("node")
    )
    # Only what evidence_of reads, for each node's last line.
    last_plan = own.select(
        "node", "file", "line", "prefix", "text", "time", "time_latest", "time_inferred",
        pl.coalesce("time_latest", "time").alias("_at"),
    ).sort("_at", "file", "line", nulls_last=False).group_by("node").last()
    summary, last_frame = pl.collect_all([summary_plan, last_plan])
    last_lines = {row["node"]: row for row in last_frame.to_dicts()}
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
