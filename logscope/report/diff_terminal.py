"""The terminal sections of a comparison (``logscope diff``, ``analyze --against``): rich
renderables built from a :class:`~logscope.diff.Comparison`, nothing decided here."""

from __future__ import annotations

from datetime import datetime

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from logscope.analysis import Analysis
from logscope.detectors.base import compact_ranks, when
from logscope.diff import Comparison
from logscope.diff.performance import LABELS
from logscope.model import Severity
from logscope.report.terminal import CATEGORY_STYLE, SEVERITY_STYLE

SHOWN_TEMPLATES = 10
SHOWN_EXAMPLE = 200


def render(comparison: Comparison, *, verbose: bool = False, limit: int = SHOWN_TEMPLATES) -> RenderableType:
    """Every section, in order: the two runs, new templates, volume, configuration, performance,
    fail-slow, and a last line saying whether BAD shows anything new."""
    parts: list[RenderableType] = [headline(comparison)]
    for section in (templates_table(comparison, limit if not verbose else len(comparison.new_templates)),
                    volume_table(comparison), drift_table(comparison), performance_table(comparison),
                    fail_slow_text(comparison)):
        if section is not None:
            parts.append(section)
    parts.append(summary_line(comparison))
    return Group(*parts)


def print_comparison(comparison: Comparison, console: Console, *, verbose: bool = False) -> None:
    console.print(render(comparison, verbose=verbose))


def _run_line(label: str, analysis: Analysis) -> Text:
    job = analysis.job
    ident = ", ".join(x for x in [f"job {job.job_id}" if job.job_id else "", job.job_name or ""] if x) or \
        (job.files[0].display if job.files else "")
    verdict = analysis.verdict
    text = Text(f"{label:<5}", style="bold")
    text.append(f"{ident}  ")
    text.append(verdict.category.value, style=CATEGORY_STYLE[verdict.category])
    if verdict.finding:
        text.append(f" [{verdict.finding}]", style="dim")
    text.append(f"  {len(job.nodes)} node(s)", style="dim")
    return text


def headline(comparison: Comparison) -> Text:
    text = Text("What changed from GOOD to BAD\n", style="bold")
    text.append_text(_run_line("GOOD", comparison.good))
    text.append("\n")
    text.append_text(_run_line("BAD", comparison.bad))
    return text


def templates_table(comparison: Comparison, limit: int) -> Text:
    """The new templates, most likely to matter first: for each, its severity, count, first line
    (relative to BAD's failure), where, its template, and one example line with its place."""
    new = comparison.new_templates
    if not new:
        return Text("new templates: none (every line template of BAD appears in GOOD)", style="dim")
    text = Text(f"new templates ({len(new)}; most likely to matter first)", style="bold")
    for index, item in enumerate(new[:limit], 1):
        text.append(f"\n{index:>2}  ")
        text.append(f"{item.severity:<8}", style=SEVERITY_STYLE[Severity(item.severity)])
        text.append(f" x{item.count:<4} {_first(item.first_seen, item.after_failure_s):<22} ")
        text.append(_where(item.ranks, item.hosts))
        if item.root:
            text.append("  [the root failure's line]", style="bold red")
        label = f"{item.catalogue_id}: " if item.catalogue_id else ""
        text.append(f"\n    {label}", style="cyan")
        text.append(item.template, style="bold")
        example = item.example
        shown = example.text if len(example.text) <= SHOWN_EXAMPLE else example.text[:SHOWN_EXAMPLE - 3] + "..."
        text.append(f"\n    {example.file}:{example.line}", style="dim cyan")
        text.append(f"\n    {shown}", style="yellow")
    if len(new) > limit:
        text.append(f"\n... and {len(new) - limit} more (--verbose, or --format json, lists them all)", style="dim")
    return text


def _where(ranks: tuple[int, ...], hosts: tuple[str, ...]) -> str:
    parts = []
    if ranks:
        parts.append(f"rank{'s' if len(ranks) > 1 else ''} {compact_ranks(ranks)}")
    if hosts:
        shown = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
        parts.append(("on " if ranks else "") + shown)
    return " ".join(parts)


def _first(first: datetime | None, after: float | None) -> str:
    if after is not None:
        if abs(after) < 0.05:
            return "at the failure"
        span = f"{abs(after):.1f} s" if abs(after) < 600 else f"{abs(after) / 60:.0f} min"
        return f"{span} {'before' if after < 0 else 'after'} the failure"
    return f"first {when(first)}" if first is not None else "time unknown"


def volume_table(comparison: Comparison) -> Table | None:
    if not comparison.volume_changes:
        return None
    table = Table(title="printed far more often", title_justify="left", expand=True)
    table.add_column("GOOD", justify="right", no_wrap=True)
    table.add_column("BAD", justify="right", no_wrap=True)
    table.add_column("template / example", ratio=1)
    for item in comparison.volume_changes:
        body = Text(item.template)
        body.append(f"\n{item.example.file}:{item.example.line}", style="dim cyan")
        table.add_row(str(item.good_count), str(item.bad_count), body)
    return table


def drift_table(comparison: Comparison) -> Table | Text:
    drift = comparison.config_drift
    if not drift:
        return Text("configuration drift: none (every setting both runs logged is the same)", style="dim")
    table = Table(title="configuration drift", title_justify="left", expand=True)
    table.add_column("setting", no_wrap=True)
    table.add_column("where", no_wrap=True)
    table.add_column("GOOD", ratio=1, overflow="fold")
    table.add_column("BAD", ratio=1, overflow="fold")
    for item in drift:
        table.add_row(Text(item.setting, style="bold"), Text(item.node or "job"),
                      Text(item.good if item.good is not None else "(not set)"),
                      Text(item.bad if item.bad is not None else "(not set)", style="yellow"))
    return table


def performance_table(comparison: Comparison) -> Table | Text:
    rows = comparison.performance
    if not rows:
        return Text("performance: the logs of one run or both give no step times, NCCL init or time to first step",
                    style="dim")
    table = Table(title="performance", title_justify="left")
    for column in ("figure", "GOOD", "BAD", "ratio", ""):
        table.add_column(column, no_wrap=column != "figure")
    for change in rows:
        label = LABELS.get(change.metric, change.metric) + (f" ({change.node})" if change.node else "")
        ratio = f"{change.ratio:.2f}x" if change.ratio is not None else ""
        table.add_row(label, _value(change.good, change.unit), _value(change.bad, change.unit), ratio,
                      Text("changed", style="bold yellow") if change.changed else Text(""))
    return table


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "?"
    text = f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return f"{text} {unit}".strip()


def fail_slow_text(comparison: Comparison) -> Text:
    if not comparison.fail_slow:
        return Text("fail-slow: none in BAD (no sustained change in its step times)", style="dim")
    text = Text("fail-slow in BAD", style="bold")
    if comparison.fail_slow_in_good:
        text.append(" (GOOD slowed down too)", style="dim")
    for finding in comparison.fail_slow:
        text.append(f"\n• {finding.title}")
    return text


def summary_line(comparison: Comparison) -> Text:
    if not comparison.changed:
        return Text("Nothing new in BAD: no new template, no configuration or performance change, no slowdown.",
                    style="bold green")
    parts = []
    if comparison.new_templates:
        parts.append(f"{len(comparison.new_templates)} new template(s)")
    if comparison.volume_changes:
        parts.append(f"{len(comparison.volume_changes)} printed far more often")
    if comparison.config_drift:
        parts.append(f"{len(comparison.config_drift)} setting(s) changed")
    if comparison.performance_changes:
        parts.append(f"{len(comparison.performance_changes)} performance figure(s) changed")
    if comparison.new_fail_slow:
        parts.append("a slowdown")
    return Text("BAD shows " + ", ".join(parts) + ".", style="bold yellow")


__all__ = ["print_comparison", "render"]
