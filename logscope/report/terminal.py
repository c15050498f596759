"""The terminal verdict: rich renderables built from an Analysis, no analysis done here."""

from __future__ import annotations

from datetime import datetime

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from logscope.analysis import Analysis, node_summary
from logscope.model import Category, Finding, Role, Severity
from logscope.report import fr_table
from logscope.report.accounting_table import record_note, script_lines
from logscope.report.times import culprit_time

CATEGORY_STYLE = {
    Category.HEALTHY: "bold green",
    Category.HANG: "bold magenta",
    Category.CRASH: "bold red",
    Category.OOM: "bold red",
    Category.HARDWARE: "bold red",
    Category.NETWORK: "bold yellow",
    Category.LAUNCH: "bold yellow",
    Category.SCHEDULER: "bold blue",
    Category.UNKNOWN: "bold white",
    Category.INCOMPLETE: "bold cyan",
}
SEVERITY_STYLE = {Severity.INFO: "dim", Severity.WARNING: "yellow", Severity.ERROR: "red",
                  Severity.CRITICAL: "bold red"}


def render(analysis: Analysis, *, verbose: bool = False) -> RenderableType:
    findings = findings_table(analysis.findings, verbose=verbose) if analysis.findings else None
    # top to bottom: the verdict, why, SLURM's side, every finding, where each node stopped, advice
    sections = [root_panel(analysis), script_panel(analysis), record_table(analysis), findings,
                flight_recorder_table(analysis), nodes_table(analysis), advice_panel(analysis), hints_panel(analysis)]
    parts: list[RenderableType] = [headline(analysis), *(s for s in sections if s is not None)]
    parts.append(footer(analysis))
    return Group(*parts)


def hints_panel(analysis: Analysis) -> Panel | None:
    if not analysis.hints:
        return None
    hints = Text()
    for i, hint in enumerate(analysis.hints):
        hints.append(("\n" if i else "") + "• " + hint)
    return Panel(hints, title="next time", title_align="left", border_style="dim")


def headline(analysis: Analysis) -> Text:
    verdict = analysis.verdict
    style = CATEGORY_STYLE[verdict.category]
    mark = verdict_mark(verdict.category)
    text = Text()
    text.append(f"{mark} {verdict.category.value.upper()}", style=style)
    if verdict.finding:
        text.append(f"  [{verdict.finding}]", style="dim")
    text.append("\n")
    text.append(verdict.summary, style="bold")
    job = analysis.job
    ident = ", ".join(x for x in [f"job {job.job_id}" if job.job_id else "", job.job_name or ""] if x)
    if ident:
        text.append(f"\n{ident}", style="dim")
    return text


def root_panel(analysis: Analysis) -> RenderableType | None:
    culprit = analysis.verdict.root_cause
    if culprit is None:
        return None
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style="bold", no_wrap=True)
    rows.add_column(overflow="fold")
    for label, value in (("host", culprit.host), ("node", culprit.node), ("rank", culprit.rank),
                         ("local rank", culprit.local_rank), ("time", culprit_time(culprit) or None)):
        if value is not None and not (label == "node" and value == culprit.host):
            rows.add_row(label, Text(str(value)))  # a host name is text, not rich markup
    if culprit.evidence is None:
        return Panel(rows, title="root cause", title_align="left", border_style="red")
    ev = culprit.evidence
    rows.add_row("evidence", Text(ev.text, style="yellow"))
    # where the line is goes below the panel, whole: inside it a long path was cut mid-name
    return Group(Panel(rows, title="root cause", title_align="left", border_style="red"),
                 Text(f"  at {ev.file}:{ev.line}", style="cyan", no_wrap=True, overflow="ignore"))


def findings_table(findings: list[Finding], *, verbose: bool = False) -> Group:
    """The findings as a list, not a table: each one's code, severity, role and hosts on a line,
    its title wrapped below at full width (a path in it stays whole on an 80-column terminal,
    where a table's narrow cell cut it mid-word), then where its evidence is, on a line never
    broken. ``verbose`` adds the explanation and the evidence lines below each, as paragraphs."""
    width = max(len(f.role.value) for f in findings)
    parts: list[RenderableType] = [Text("findings", style="italic")]
    for finding in findings:
        where = ", ".join(finding.hosts[:2]) + (" ..." if len(finding.hosts) > 2 else "")
        head = Text.assemble(("  " + finding.code, "bold"), "  ",
                             (f"{finding.severity.value:<8}", SEVERITY_STYLE[finding.severity]), "  ",
                             (f"{finding.role.value:<{width}}", "bold" if finding.role == Role.ROOT else "dim"),
                             "  ", where)
        title = finding.title if verbose or len(finding.title) <= 160 else finding.title[:157] + "..."
        parts += [head, Padding(Text(title, style="bold" if verbose else ""), (0, 0, 0, 9))]
        shown = finding.evidence[:4] if verbose else finding.evidence[:1]
        if verbose:
            parts.append(Padding(Text(finding.explanation), (0, 0, 0, 9)))
        for evidence in shown:
            parts.append(_location(f"{evidence.file}:{evidence.line}", indent=9))
            if verbose:
                parts.append(Padding(Text(evidence.text, style="yellow"), (0, 0, 0, 11)))
    return Group(*parts)


def _location(place: str, indent: int) -> Text:
    """``path:line`` on a line of its own that is never broken: longer than the terminal, it runs
    on (the terminal wraps it for the eye, a copy takes it whole) instead of being cut mid-name."""
    return Text(" " * indent + place, style="dim cyan", no_wrap=True, overflow="ignore")


def nodes_table(analysis: Analysis, limit: int = 32) -> Table | None:
    rows = node_summary(analysis)
    if not rows:
        return None
    table = Table(title="per node", title_justify="left")
    for col in ("node", "ranks", "last event", "last step", "errors", "role"):
        table.add_column(col, no_wrap=True)
    for row in rows[:limit]:
        ranks = row["ranks"]
        rank_text = f"{ranks[0]}-{ranks[-1]}" if len(ranks) > 1 else (str(ranks[0]) if ranks else "")
        table.add_row(
            Text(row["node"]), rank_text, (row["last_event"] or "").replace("T", " ")[:19],
            "" if row["last_step"] is None else str(row["last_step"]), str(row["error_lines"]),
            Text(row["role"], style="bold red" if row["role"] == "root" else ""),
        )
    if len(rows) > limit:
        table.caption = f"{len(rows) - limit} more node(s) in --format json"
    return table


def record_table(analysis: Analysis) -> Table | None:
    """SLURM's record of the job: one row per job and step (logscope.accounting)."""
    if analysis.accounting is None:
        return None
    record = analysis.accounting
    reason = record.job.reason if record.job.reason and record.job.reason != "None" else None
    days = {t.date() for step in record.records for t in (step.start, step.end) if t is not None}
    note = record_note(record) + (f"; reason {reason}" if reason else "") + (
        f"; times of {next(iter(days)).isoformat()}" if len(days) == 1 else "")
    table = Table(title="SLURM's record", title_justify="left", caption=note, caption_justify="left")
    for column in ("step", "state", "exit", "nodes", "ran", "MaxRSS"):
        table.add_column(column, no_wrap=column in ("step", "exit", "ran"), overflow="fold")
    for step in record.records:
        nodes = step.nodes[0] + (f" +{len(step.nodes) - 1}" if len(step.nodes) > 1 else "") if step.nodes else ""
        table.add_row(Text(step.step_id), Text(step.state_text), step.exit_text, Text(nodes),
                      _span(step.start, step.end, with_date=len(days) > 1), Text(step.max_rss or ""))
    return table


def flight_recorder_table(analysis: Analysis) -> Table | None:
    """The Flight Recorder's view of each rank (logscope.report.fr_table)."""
    fr = analysis.flight_recorder
    if fr is None:
        return None
    table = Table(title="Flight Recorder", title_justify="left", caption=fr_table.fr_note(fr),
                  caption_justify="left")
    for column in fr_table.COLUMNS:
        table.add_column(column, no_wrap=column in ("rank", "entries"), overflow="fold")
    for row in fr_table.fr_rows(fr, fr_table.places_of(analysis)):
        table.add_row(*(Text(cell, style="bold red" if cell.startswith(("LAGGING", "MISMATCH")) else "")
                        for cell in row))
    return table


def _span(start: datetime | None, end: datetime | None, *, with_date: bool) -> str:
    """``10:30:03-11:00:03`` (with dates when the record spans several days)."""

    def shown(value: datetime) -> str:
        return value.isoformat(sep=" ") if with_date else value.strftime("%H:%M:%S")

    return "-".join(shown(t) for t in (start, end) if t is not None)


def script_panel(analysis: Analysis) -> Panel | None:
    """The batch script's lint problems: first those that explain the verdict (LL001 beside LS201)."""
    explaining, others = script_lines(analysis)
    if not explaining and not others:
        return None
    text = Text()
    if explaining:
        text.append("explains the verdict:\n", style="bold")
        text.append("\n".join(explaining))
    if others:
        if explaining:
            text.append("\nother problems:\n", style="bold")
        text.append("\n".join(others))
    return Panel(text, title="batch script (sacct -B)", title_align="left", border_style="yellow")


def advice_panel(analysis: Analysis) -> Panel | None:
    main = analysis.root_finding
    if main is None:
        return None
    text = Text(main.explanation + "\n\n")
    text.append("What to do: ", style="bold")
    text.append(main.advice)
    return Panel(text, title=Text(f"{main.code} {main.name}"), title_align="left", border_style="blue")


def footer(analysis: Analysis) -> Text:
    job = analysis.job
    text = Text(style="dim")
    text.append(f"{len(job.files)} file(s), {len(job.nodes)} node(s), {job.lines_read:,} lines read "
                f"({job.lines_recognised:,} recognised, {job.lines_unrecognised:,} not)")
    if analysis.view.world_size:
        text.append(f", world size {analysis.view.world_size}")
    for skipped in job.skipped[:5]:
        text.append(f"\nskipped {skipped.display}: {skipped.reason}")
    if len(job.skipped) > 5:
        text.append(f"\n... {len(job.skipped) - 5} more skipped")
    for warning in (job.warnings + analysis.detector_errors)[:5]:
        text.append(f"\nwarning: {warning}")
    return text


def verdict_mark(category: Category) -> str:
    """✓ healthy, ? incomplete (neither healthy nor failed), ✗ a failure."""
    return {Category.HEALTHY: "✓", Category.INCOMPLETE: "?"}.get(category, "✗")


def recap(analysis: Analysis) -> Text:
    """The verdict on one line: category, code, summary, and where the root evidence is.

    Printed last (the full output scrolls the headline away) and alone with ``--quiet``.
    """
    verdict = analysis.verdict
    mark = verdict_mark(verdict.category)
    text = Text(no_wrap=False)
    text.append(f"{mark} {verdict.category.value.upper()}", style=CATEGORY_STYLE[verdict.category])
    if verdict.finding:
        text.append(f" [{verdict.finding}]", style="bold")
    summary = verdict.summary if len(verdict.summary) <= 160 else verdict.summary[:157] + "..."
    text.append(f" {summary}")
    culprit = verdict.root_cause
    if culprit is not None and culprit.evidence is not None:
        text.append(f" ({culprit.evidence.file}:{culprit.evidence.line})", style="cyan")
    return text


def print_analysis(analysis: Analysis, console: Console, *, verbose: bool = False, quiet: bool = False) -> None:
    if not quiet:
        console.print(render(analysis, verbose=verbose), crop=False)  # a path longer than a line runs on whole
    console.print(recap(analysis), soft_wrap=True)  # one line, last: the verdict does not scroll away
