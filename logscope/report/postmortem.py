"""Post-mortem reports to attach to a ticket: one self-contained HTML file, or Markdown + images.

Both formats render the same document, built once by :func:`build_document` from an
:class:`~logscope.analysis.Analysis`: the verdict, the root cause with its evidence lines, the
cascade of findings (root first) and the order in which ranks went down, the charts, the per-node
table, the NCCL configuration per node, and the advice. Nothing here decides what went wrong; the
sections only arrange the analysis's findings and tabulate the timeline.

The pages themselves are templates (logscope/report/templates: ``postmortem.html``, ``blocks.html``,
``postmortem.md``, ``blocks.md``, ``postmortem.css``), rendered by :mod:`logscope.report.templating`;
this module builds what they show.

Safety: every string that comes from a log is escaped for its format. HTML is autoescaped by
Jinja2 everywhere, has no ``<script>`` at all and a Content-Security-Policy that allows only
inline styles and ``data:`` images, so a hostile log line renders as text. Markdown puts log
text in code spans or fenced blocks whose backtick fence is longer than any backtick run inside
(:mod:`logscope.report.markdown`).

Large jobs: tables are per node, with identical NCCL configurations grouped; every list is capped
(:data:`MAX_EVIDENCE`, :data:`MAX_FINDINGS`, :data:`MAX_SEQUENCE`, :data:`MAX_NODE_ROWS`) and says
how much it left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import polars as pl
from markupsafe import Markup

from logscope import __version__
from logscope.analysis import Analysis, node_summary
from logscope.atomic import atomic_write
from logscope.detectors.base import compact_ranks
from logscope.errors import OutputError, UsageError
from logscope.model import Category, Event, Evidence, Finding, Role
from logscope.report import accounting_table, fr_table
from logscope.report import charts as charts_module
from logscope.report.charts import Chart
from logscope.report.context import last_line as last_line_of
from logscope.report.context import root_context
from logscope.report.markdown import _clip as clip
from logscope.report.markdown import md_block, md_code, md_text
from logscope.report.output import refuse_inputs
from logscope.report.templating import render, short_file
from logscope.report.times import culprit_time, stamp, window

MAX_EVIDENCE = 8
MAX_FINDING_EVIDENCE = 4
MAX_FINDINGS = 50
MAX_SEQUENCE = 20
MAX_NODE_ROWS = 200
MAX_CONFIG_ROWS = 50
MAX_FILES = 20
MAX_TEXT = 500

ReportFormat = Literal["html", "md"]

CATEGORY_COLOURS: dict[Category, str] = {
    Category.HEALTHY: "#1a7f37",
    Category.HANG: "#8250df",
    Category.CRASH: "#cf222e",
    Category.OOM: "#cf222e",
    Category.HARDWARE: "#cf222e",
    Category.NETWORK: "#bf8700",
    Category.LAUNCH: "#bf8700",
    Category.SCHEDULER: "#0969da",
    Category.UNKNOWN: "#57606a",
    Category.INCOMPLETE: "#1b7c83",
}


# ---------------------------------------------------------------------------------------------
# The document: format-neutral blocks


@dataclass(frozen=True)
class Code:
    """A table cell holding log text (rendered as code, escaped for the format)."""

    text: str
    wrap: bool = True


Cell = str | Code


@dataclass
class Paragraph:
    text: str
    label: str = ""


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Cell]]
    strong_rows: set[int] = field(default_factory=set)  # emphasised (the root's node)
    flagged_columns: set[int] = field(default_factory=set)  # values differ between rows
    nowrap_columns: set[int] = field(default_factory=set)  # short values kept on one line
    wide_columns: set[int] = field(default_factory=set)  # long log text: given room before others
    note: str = ""


@dataclass
class LogLines:
    """Evidence: ``file:line`` and the line's text, optionally folded under a summary."""

    lines: list[Evidence]
    summary: str = ""
    note: str = ""
    open: bool = False  # shown unfolded (HTML <details open>)


@dataclass
class Figures:
    charts: list[Chart]
    notes: list[str]


Block = Paragraph | Bullets | Table | LogLines | Figures


@dataclass
class Section:
    title: str
    anchor: str
    blocks: list[Block]


@dataclass
class Document:
    title: str
    category: Category
    code: str | None
    summary: str
    facts: str
    sections: list[Section]


# ---------------------------------------------------------------------------------------------
# Building the document (shared by both formats)


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return clip(text, limit)


def _when(value: datetime | None) -> str:
    return stamp(value) if value is not None else ""


def _delta(seconds: float | None) -> str:
    if seconds is None:
        return ""
    sign = "+" if seconds >= 0 else "−"
    s = abs(seconds)
    if s < 60:
        return f"{sign}{s:.3g} s" if s else "0 s"
    if s < 3600:
        return f"{sign}{int(s // 60)} min {int(s % 60)} s"
    return f"{sign}{int(s // 3600)} h {int(s % 3600 // 60)} min"


def _since(value: datetime | None, reference: datetime | None) -> str:
    if value is None or reference is None:
        return ""
    return _delta((value - reference).total_seconds())


def _since_window(earliest: datetime, latest: datetime, reference: datetime | None) -> str:
    """A line's place relative to the root: 0 when its window holds the root's moment, else the
    distance from the nearer end of its window."""
    if reference is None:
        return ""
    if earliest <= reference <= latest:
        return _delta(0.0)
    return _delta(((latest if latest < reference else earliest) - reference).total_seconds())


def _hosts(hosts: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(hosts[:limit])
    return shown + (f" +{len(hosts) - limit} more" if len(hosts) > limit else "")


def _ranks(ranks: Sequence[int], limit: int = 60) -> str:
    return _clip(compact_ranks(list(ranks)), limit) if ranks else ""


def _where(finding: Finding) -> str:
    parts = []
    if finding.ranks:
        parts.append(f"rank{'s' if len(finding.ranks) > 1 else ''} {_ranks(finding.ranks)}")
    if finding.hosts:
        parts.append(_hosts(list(finding.hosts)))
    return "; ".join(parts)


def build_document(analysis: Analysis, charts: Sequence[Chart] = ()) -> Document:
    """Everything the report says, in order, as plain data (no markup)."""
    job = analysis.job
    verdict = analysis.verdict
    ident = " ".join(x for x in [f"job {job.job_id}" if job.job_id else "", f"({job.job_name})" if job.job_name
                                 else ""] if x)
    title = f"Post-mortem: {ident}" if ident else "Post-mortem"
    facts = (f"{len(job.files)} file(s), {len(job.nodes)} node(s), {job.lines_read:,} lines read "
             f"({job.lines_recognised:,} recognised)")
    if analysis.view.world_size:
        facts += f", world size {analysis.view.world_size}"
    hints, hint_error = missing_evidence_hints(analysis)
    sections = [
        _root_section(analysis),
        _record_section(analysis),
        _flight_recorder_section(analysis),
        _cascade_section(analysis),
        *_comparison_sections(analysis),
        Section("Charts", "charts", [Figures(list(charts), charts_module.chart_notes(analysis))]),
        _nodes_section(analysis),
        _config_section(analysis),
        _advice_section(analysis, hints),
        _about_section(analysis, hint_error),
    ]
    return Document(title, verdict.category, verdict.finding, _clip(verdict.summary, 1000), facts,
                    [s for s in sections if s.blocks])


def _comparison_sections(analysis: Analysis) -> list[Section]:
    """"What changed" since the run it was compared with (report --against), when it was."""
    if analysis.comparison is None:
        return []
    from logscope.report.diff_section import comparison_section

    return [comparison_section(analysis.comparison)]


def _root_section(analysis: Analysis) -> Section:
    culprit = analysis.verdict.root_cause
    root = analysis.root_finding
    blocks: list[Block] = []
    if culprit is None and root is None:
        text = ("No failure found." if analysis.verdict.category == Category.HEALTHY
                else "No single process could be named as the origin.")
        return Section("Root cause", "root-cause", [Paragraph(text)])
    rows: list[list[Cell]] = []
    if root is not None:
        rows.append(["finding", f"{root.code} {root.name} ({root.category.value}, {root.severity.value})"])
    if culprit is not None:
        for label, value in (("host", culprit.host), ("node", culprit.node), ("rank", culprit.rank),
                             ("local rank", culprit.local_rank), ("time", culprit_time(culprit) or None)):
            if value is not None and not (label == "node" and value == culprit.host):
                rows.append([label, str(value)])
    blocks.append(Table(["", ""], rows))
    if root is not None:
        blocks.append(Paragraph(_clip(root.explanation, 4000)))
    evidence = list(root.evidence) if root is not None else []
    if not evidence and culprit is not None and culprit.evidence is not None:
        evidence = [culprit.evidence]
    if evidence:
        blocks.append(LogLines(evidence[:MAX_EVIDENCE], note=_more(len(evidence), MAX_EVIDENCE, "evidence line")))
    context = root_context(analysis)
    if context is not None:
        who = f"rank {culprit.rank}" if culprit is not None and culprit.rank is not None else "the root process"
        if context.traceback and culprit is not None and (culprit.rank is not None or culprit.local_rank is not None):
            blocks.append(LogLines(context.traceback, summary=f"Traceback of {who}", open=True,
                                   note="Only the lines of the same process (launcher prefix) are shown."))
        if context.around:
            first, last = context.around[0].line, context.around[-1].line
            # no "root failure" where the verdict names no process: the line is the finding's first
            what = "the root failure" if culprit is not None else "the finding's first line"
            blocks.append(LogLines(context.around, summary=f"Lines around {what} "
                                   f"({_short_file(context.file)}:{first}-{last}, every process)"))
        if context.note:
            blocks.append(Paragraph(context.note))
    return Section("Root cause", "root-cause", blocks)


def _record_section(analysis: Analysis) -> Section:
    """SLURM's record of the job and its batch script's problems (empty without a record)."""
    record = analysis.accounting
    if record is None:
        return Section("SLURM's record", "slurm-record", [])
    rows: list[list[Cell]] = [list(r) for r in accounting_table.record_rows(record)]
    blocks: list[Block] = [Table(list(accounting_table.COLUMNS), rows, note=accounting_table.record_note(record))]
    explaining, others = accounting_table.script_lines(analysis)
    if explaining:
        blocks.append(Paragraph("The batch script explains the verdict:"))
        blocks.append(Bullets(explaining))
    if others:
        blocks.append(Paragraph("Other problems of the batch script:" if explaining else
                                "Problems of the batch script:"))
        blocks.append(Bullets(others))
    return Section("SLURM's record", "slurm-record", blocks)


def _flight_recorder_section(analysis: Analysis) -> Section:
    """The Flight Recorder's view of each rank (empty without dumps)."""
    fr = analysis.flight_recorder
    if fr is None:
        return Section("Flight Recorder", "flight-recorder", [])
    rows: list[list[Cell]] = [list(r) for r in fr_table.fr_rows(fr, fr_table.places_of(analysis))]
    blocks: list[Block] = [Table(list(fr_table.COLUMNS), rows, note=fr_table.fr_note(fr))]
    if fr.mismatches:
        blocks.append(Bullets([f"{m.pg_desc or 'pg ' + m.pg} (pg {m.pg}) #{m.seq}: "
                               + ", ".join(f"rank {r} {v}" for r, v in sorted(m.ranks.items())[:8])
                               for m in fr.mismatches]))
    return Section("Flight Recorder", "flight-recorder", blocks)


def _drop_empty_columns(table: Table) -> Table:
    """The table without columns that are empty in every row (e.g. times of an untimed job)."""
    keep = [j for j in range(len(table.columns))
            if any((c.text if isinstance(c, Code) else c) for c in (row[j] for row in table.rows))]
    if len(keep) == len(table.columns):
        return table
    index = {old: new for new, old in enumerate(keep)}
    return Table([table.columns[j] for j in keep], [[row[j] for j in keep] for row in table.rows],
                 strong_rows=table.strong_rows, note=table.note,
                 flagged_columns={index[j] for j in table.flagged_columns if j in index},
                 nowrap_columns={index[j] for j in table.nowrap_columns if j in index},
                 wide_columns={index[j] for j in table.wide_columns if j in index})


def _more(total: int, shown: int, what: str) -> str:
    return f"{total - shown} more {what}(s) not shown." if total > shown else ""


def _cascade_section(analysis: Analysis) -> Section:
    reference = charts_module.reference_time(analysis)
    blocks: list[Block] = []
    findings = analysis.findings[:MAX_FINDINGS]
    if findings:
        rows: list[list[Cell]] = []
        strong = set()
        for i, finding in enumerate(findings):
            if finding.role == Role.ROOT:
                strong.add(i)
            first = finding.evidence[0] if finding.evidence else None
            if first is not None and first.time is not None:
                at = window(first.time, first.time_latest, note=False)
                since = _since_window(first.time, first.time_latest or first.time, reference)
            else:
                at, since = _when(finding.first_seen), _since(finding.first_seen, reference)
            rows.append([str(i + 1), since, at,
                         f"{finding.code} {finding.name}", finding.role.value, finding.severity.value,
                         _clip(finding.title, 400), _where(finding)])
        blocks.append(_drop_empty_columns(Table(
            ["#", "since root", "time", "finding", "role", "severity", "what", "where"], rows, strong_rows=strong,
            nowrap_columns={1, 2, 3}, note=_more(len(analysis.findings), MAX_FINDINGS, "finding"))))
        for i, finding in enumerate(findings):
            if i == 0 and finding.role == Role.ROOT:
                continue  # its evidence is in the root-cause section
            if finding.evidence:
                blocks.append(LogLines(list(finding.evidence[:MAX_FINDING_EVIDENCE]),
                                       summary=f"#{i + 1} {finding.code} evidence",
                                       note=_more(len(finding.evidence), MAX_FINDING_EVIDENCE, "line")))
    sequence = charts_module.failure_curve_data(analysis)
    if sequence.height:
        word = "node" if charts_module.by_node(analysis) else "rank"
        blocks.append(Paragraph(f"The order in which each {word} first logged an error or was stopped "
                                f"({sequence.height} of {int(sequence['total_lanes'].max() or 0)}):",  # type: ignore[arg-type]
                                label="Failure sequence."))
        rows = []
        for row in sequence.head(MAX_SEQUENCE).iter_rows(named=True):
            since = (_since_window(row["time_earliest"], row["time_latest"], reference)
                     if row["time_earliest"] is not None else _delta(row["seconds"]))
            rows.append([since, window(row["time_earliest"], row["time_latest"], note=False),
                         row["lane"], row["event"],
                         Code(f"{_short_file(row['file'])}:{row['line']}"), Code(_clip(row["text"], 300))])
        blocks.append(Table(["since root", "time", word, "event", "where", "line"], rows, nowrap_columns={0, 1},
                            wide_columns={5},
                            strong_rows={i for i, r in enumerate(sequence.head(MAX_SEQUENCE)["is_root"]) if r},
                            note=_more(sequence.height, MAX_SEQUENCE, word)))
    elif findings and not charts_module.has_times(analysis):
        blocks.append(Paragraph("The logs carry no timestamps, so the findings are in file order.",
                                label="Failure sequence."))
    if not blocks:
        blocks.append(Paragraph("Nothing to report: no detector fired."))
    return Section("Cascade", "cascade", blocks)


def _iso(text: str | None) -> str:
    return (text or "").replace("T", " ")[:23]


def _short_file(path: str) -> str:
    return short_file(path)


def _nodes_section(analysis: Analysis) -> Section:
    rows_in = node_summary(analysis)
    if not rows_in:
        return Section("Per node", "nodes", [])
    flagged = [r for r in rows_in if r["role"]]
    rest = [r for r in rows_in if not r["role"]]
    chosen = rows_in if len(rows_in) <= MAX_NODE_ROWS else (flagged + rest)[:MAX_NODE_ROWS]
    rows: list[list[Cell]] = []
    strong = set()
    sources = {f.display: f for f in analysis.job.files}
    for i, row in enumerate(chosen):
        if row["role"] == "root":
            strong.add(i)
        last = row["last_line"]
        last_line: Cell = ""
        if last:
            source = sources.get(last["file"])
            tail = last_line_of(source) if source is not None else None
            text = (f"{_short_file(last['file'])}:{last['line']}  {last['text']}" if tail is None
                    or tail == last["text"] else f"{_short_file(last['file'])}, end of file:  {tail}")
            last_line = Code(_clip(text, 300))
        rows.append([row["node"], _ranks(row["ranks"], 40), str(len(row["files"])), _iso(row["first_event"]),
                     _iso(row["last_event"]), "" if row["last_step"] is None else str(row["last_step"]),
                     str(row["error_lines"]), row["role"], last_line])
    note = _more(len(rows_in), len(chosen), "node")
    if note:
        note += " Nodes named by a finding are listed first; all are in `logscope analyze --format json`."
    table = Table(["node", "ranks", "files", "first event", "last event", "last step", "error lines", "role",
                   "its own log's last line"], rows,
                  strong_rows=strong, nowrap_columns={0, 3, 4}, wide_columns={8}, note=note)
    return Section("Per node", "nodes", [_drop_empty_columns(table)])


# --- configuration ---------------------------------------------------------------------------


def node_config_frame(analysis: Analysis) -> pl.DataFrame:
    """One row per node, one string column per setting.

    Uses :func:`logscope.detectors.config_skew.node_config_table` when that module exists;
    otherwise tabulates the timeline's NCCL version, network, CUDA driver and ``NCCL_*`` variables.
    """
    try:
        from logscope.detectors.config_skew import node_config_table  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return _tabulate_config(analysis)
    table = node_config_table(analysis.view)
    if not isinstance(table, pl.DataFrame):
        return _tabulate_config(analysis)
    return table


def _tabulate_config(analysis: Analysis) -> pl.DataFrame:
    events = analysis.view.of(Event.NCCL_VERSION, Event.NCCL_NETWORK, Event.NCCL_DRIVER, Event.NCCL_ENV)
    events = events.filter(pl.col("node").is_not_null())
    if events.height == 0:
        return pl.DataFrame(schema={"node": pl.String})
    f = pl.col("fields")
    settings = events.select(
        "node",
        pl.when(pl.col("event") == Event.NCCL_VERSION.value).then(pl.lit("NCCL version"))
        .when(pl.col("event") == Event.NCCL_NETWORK.value).then(pl.lit("network"))
        .when(pl.col("event") == Event.NCCL_DRIVER.value).then(pl.lit("CUDA driver"))
        .otherwise(f.struct.field("key")).alias("setting"),
        pl.when(pl.col("event") == Event.NCCL_ENV.value).then(f.struct.field("value"))
        .when(pl.col("event") == Event.NCCL_NETWORK.value).then(f.struct.field("transport"))
        .otherwise(f.struct.field("version")).alias("value"),
    ).filter(pl.col("setting").is_not_null())
    long = settings.group_by("node", "setting").agg(
        pl.col("value").drop_nulls().unique().sort().str.join(" / ").alias("value"))
    wide = long.pivot(on="setting", index="node", values="value")
    fixed = [c for c in ("NCCL version", "network", "CUDA driver") if c in wide.columns]
    others = sorted(c for c in wide.columns if c not in fixed and c != "node")
    return wide.select("node", *fixed, *others).sort("node")


def _config_section(analysis: Analysis) -> Section:
    frame = node_config_frame(analysis)
    settings = [c for c in frame.columns if c != "node"]
    if frame.height == 0 or not settings or "node" not in frame.columns:
        return Section("Configuration and transport", "config", [
            Paragraph("No NCCL version, network, driver or NCCL_* environment lines in the logs "
                      "(NCCL_DEBUG=INFO prints them).")])
    frame = frame.select("node", *[pl.col(c).cast(pl.String).fill_null("") for c in settings])
    # A setting only some nodes print (NCCL prints its version from rank 0 only) is unknown on the
    # others, not different: only two different printed values make a difference.
    printed = {c: sorted({v for v in frame[c].to_list() if v}) for c in settings}
    differing_settings = [c for c in settings if len(printed[c]) > 1]
    common = {c: printed[c][0] if printed[c] else "" for c in settings if c not in differing_settings}
    partial = [c for c in settings if c not in differing_settings and printed[c]
               and any(not v for v in frame[c].to_list())]
    keys: list[str | pl.Expr] = [*differing_settings] or [pl.lit(0).alias("_all")]
    groups = (frame.group_by(keys, maintain_order=True)
              .agg(pl.col("node").sort(), *[(pl.col(c) != "").any().alias(f"_printed_{c}") for c in partial])
              .sort(pl.col("node").list.len(), descending=True))
    differing = {i + 2 for i, c in enumerate(settings) if c in differing_settings}
    rows: list[list[Cell]] = []
    for row in groups.head(MAX_CONFIG_ROWS).iter_rows(named=True):
        nodes = row["node"]
        cells = [row[c] if c in differing_settings
                 else (common[c] if c not in partial or row[f"_printed_{c}"] else "(not printed)")
                 for c in settings]
        rows.append([_hosts(nodes, 8), str(len(nodes)), *cells])
    if groups.height == 1:
        lead = f"All {frame.height} node(s) report the same NCCL settings."
    else:
        lead = (f"{groups.height} different configurations across {frame.height} node(s); "
                "columns marked ≠ differ.")
    if partial:
        lead += (f" Printed by some nodes only, so not compared: {', '.join(partial)} "
                 "(NCCL prints its version from rank 0 only).")
    return Section("Configuration and transport", "config", [
        Paragraph(lead),
        _drop_empty_columns(Table(["nodes", "count", *settings], rows, flagged_columns=differing,
                                  note=_more(groups.height, MAX_CONFIG_ROWS, "configuration"))),
    ])


# --- advice ----------------------------------------------------------------------------------


def missing_evidence_hints(analysis: Analysis) -> tuple[list[str], str | None]:
    """"Next time, enable X" hints, computed with the analysis (see logscope.hints)."""
    failure = next((e for e in analysis.detector_errors if e.startswith("hints failed")), None)
    return list(analysis.hints), failure


def _advice_section(analysis: Analysis, hints: list[str]) -> Section:
    blocks: list[Block] = []
    # The advice the terminal gives: the verdict's finding's, and the others' beside it; none where
    # the verdict rests on no finding (healthy, incomplete: what the job recovered from needs no fix).
    root = analysis.root_finding
    if root is not None:
        blocks.append(Paragraph(_clip(root.advice, 4000), label=f"{root.code} {root.name}:"))
    seen = {root.advice} if root is not None else set()
    others = []
    for finding in analysis.findings[1:MAX_FINDINGS] if root is not None else ():
        if finding.advice and finding.advice not in seen:
            seen.add(finding.advice)
            others.append(f"{finding.code} {finding.name}: {_clip(finding.advice, 1000)}")
    if others:
        blocks.append(Paragraph("", label="Also:"))
        blocks.append(Bullets(others))
    if hints:
        blocks.append(Paragraph("", label="Next time, to make the logs tell more:"))
        blocks.append(Bullets([_clip(h, 1000) for h in hints]))
    return Section("Advice", "advice", blocks)


def _about_section(analysis: Analysis, hint_error: str | None) -> Section:
    job = analysis.job
    items = [f"{f.display}" for f in job.files[:MAX_FILES]]
    if len(job.files) > MAX_FILES:
        items.append(f"... and {len(job.files) - MAX_FILES} more file(s)")
    items += [f"skipped {s.display}: {s.reason}" for s in job.skipped[:MAX_FILES]]
    warnings = job.warnings + analysis.detector_errors + ([hint_error] if hint_error else [])
    items += [f"warning: {w}" for w in warnings[:MAX_FILES]]
    if len(warnings) > MAX_FILES:
        items.append(f"... and {len(warnings) - MAX_FILES} more warning(s)")
    items.append(f"generated by logscope {__version__}")
    return Section("About this report", "about", [Bullets([_clip(i, 400) for i in items])])


# ---------------------------------------------------------------------------------------------
# Rendering: the templates in logscope/report/templates (see logscope.report.templating)

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def render_html(analysis: Analysis, charts: Sequence[Chart | Path] = ()) -> str:
    """One self-contained HTML page: no scripts, no external resources, charts as data: PNGs."""
    doc = build_document(analysis, _load_charts(charts))
    return render("postmortem.html", doc=doc, colour=CATEGORY_COLOURS[doc.category], csp=Markup(_CSP))


def _load_charts(charts: Sequence[Chart | Path]) -> list[Chart]:
    loaded = []
    for item in charts:
        if isinstance(item, Chart):
            loaded.append(item)
        elif item.suffix.lower() == ".png":
            title = charts_module.CHART_TITLES.get(item.stem, item.stem)
            loaded.append(Chart(item.stem, title, item.read_bytes(), b""))
    return loaded


def render_markdown(analysis: Analysis, chart_paths: Sequence[Path] = (), relative_to: Path | None = None) -> str:
    """GitHub/Jira-friendly Markdown; charts are linked as images (``relative_to`` the .md's folder)."""
    doc = build_document(analysis)
    links: dict[str, str] = {}
    for path in chart_paths:
        if path.suffix.lower() != ".png":
            continue
        shown = path
        if relative_to is not None:
            try:
                shown = path.resolve().relative_to(relative_to.resolve())
            except ValueError:
                shown = path
        links[path.stem] = quote(shown.as_posix(), safe="/._-")
    return render("postmortem.md", doc=doc, chart_links=links)


# ---------------------------------------------------------------------------------------------
# Writing


def report_format(path: Path) -> ReportFormat:
    """The report format from the output file's extension: .html/.htm or .md."""
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        return "html"
    if suffix == ".md":
        return "md"
    raise UsageError(f"cannot tell the report format from {path.name!r}: use a .html, .htm or .md file name")


def chart_folder(out: Path) -> Path:
    """Where a Markdown report's images go: ``postmortem.md`` -> ``postmortem_files/``."""
    return out.with_name(out.stem + "_files")


def write_report(analysis: Analysis, out: Path) -> list[Path]:
    """Write the report (and, for Markdown, its images); return the paths written, report first.

    Every file goes through a temporary file and a rename (a full disk leaves no cut-short
    report), and none may be, or lead through a link to, one of the job's logs.
    """
    fmt = report_format(out)
    charts = charts_module.render_charts(analysis, formats=("png",) if fmt == "html" else ("png", "svg"))
    folder = chart_folder(out)
    targets = [out] if fmt == "html" else [out, *charts_module.chart_paths(charts, folder)]
    refuse_inputs(analysis.job, targets)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "html":
            atomic_write(out, render_html(analysis, charts).encode("utf-8"))
            return [out]
        images = charts_module.write_charts(charts, folder)
        atomic_write(out, render_markdown(analysis, images, relative_to=out.parent).encode("utf-8"))
        return [out, *images]
    except OSError as error:
        raise OutputError(f"cannot write {out}: {error.strerror or error}") from None


__all__ = [
    "Document", "build_document", "chart_folder", "md_block", "md_code", "md_text", "node_config_frame",
    "render_html", "render_markdown", "report_format", "write_report",
]
