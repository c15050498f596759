"""The report's "What changed" section: a comparison (``report --against``) as the post-mortem's
format-neutral blocks, from the same :class:`~logscope.diff.Comparison` the terminal and the
JSON read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from logscope.detectors.base import compact_ranks
from logscope.diff.performance import LABELS
from logscope.model import Evidence

if TYPE_CHECKING:
    from logscope.diff import Comparison
    from logscope.report.postmortem import Section

MAX_TEMPLATES = 20
MAX_TEXT = 300


def comparison_section(comparison: Comparison) -> Section:
    """The new templates (ranked, with an example each), the lines printed far more often, the
    configuration drift, performance and BAD's fail-slow findings."""
    from logscope.report.postmortem import Block, Bullets, Cell, Code, LogLines, Paragraph, Section, Table

    good = comparison.good
    ident = good.job.job_id or (good.job.files[0].display if good.job.files else "?")
    blocks: list[Block] = [Paragraph(
        f"Compared with job {ident} ({good.verdict.category.value}, {len(good.job.nodes)} node(s)): "
        + ("nothing new in this run." if not comparison.changed else "what this run shows that it did not."))]
    new = comparison.new_templates
    if new:
        rows: list[list[Cell]] = [
            [str(i), item.severity + (" (root failure)" if item.root else ""), str(item.count), _after(item),
             _where(item.ranks, item.hosts),
             Code(_clip((f"{item.catalogue_id}: " if item.catalogue_id else "") + item.template))]
            for i, item in enumerate(new[:MAX_TEMPLATES], 1)]
        blocks.append(Paragraph(f"{len(new)} line template(s) of this run never appear in the other, most likely "
                                "to matter first (severity, first line relative to the failure, how many ranks "
                                "print it; numbers, hosts, paths and addresses masked).", label="New templates."))
        roots = {i for i, item in enumerate(new[:MAX_TEMPLATES]) if item.root}
        blocks.append(Table(["#", "severity", "count", "first", "where", "template"], rows, nowrap_columns={0, 2, 3},
                            wide_columns={5}, strong_rows=roots,
                            note=f"... and {len(new) - MAX_TEMPLATES} more" if len(new) > MAX_TEMPLATES else ""))
        blocks.append(LogLines([_example(item.example) for item in new[:MAX_TEMPLATES]],
                               summary="an example line of each", open=False))
    else:
        blocks.append(Paragraph("Every line template of this run appears in the other.", label="New templates."))
    if comparison.volume_changes:
        blocks.append(Paragraph("Templates of both runs that this one printed far more often.",
                                label="Volume."))
        blocks.append(Table(["other run", "this run", "template"],
                            [[str(v.good_count), str(v.bad_count), Code(_clip(v.template))]
                             for v in comparison.volume_changes]))
    drift = comparison.config_drift
    if drift:
        blocks.append(Paragraph(f"{len(drift)} setting(s) the logs show changed, most likely to matter first.",
                                label="Configuration drift."))
        blocks.append(Table(["setting", "where", "other run", "this run"],
                            [[d.setting, d.node or "job", Code(d.good if d.good is not None else "(not set)"),
                              Code(d.bad if d.bad is not None else "(not set)")] for d in drift],
                            flagged_columns={3}))
    else:
        blocks.append(Paragraph("No setting both runs logged changed.", label="Configuration drift."))
    if comparison.performance:
        changed = len(comparison.performance_changes)
        blocks.append(Paragraph(f"{changed} figure(s) changed beyond the runs' own jitter." if changed else
                                "No figure changed beyond the runs' own jitter.", label="Performance."))
        blocks.append(Table(["figure", "other run", "this run", "ratio", ""],
                            [[LABELS.get(c.metric, c.metric) + (f" ({c.node})" if c.node else ""),
                              _value(c.good, c.unit), _value(c.bad, c.unit),
                              f"{c.ratio:.2f}x" if c.ratio is not None else "", "changed" if c.changed else ""]
                             for c in comparison.performance], nowrap_columns={1, 2, 3}))
    if comparison.fail_slow:
        blocks.append(Paragraph("This run's step times changed for good:", label="Fail-slow."))
        blocks.append(Bullets([f.title for f in comparison.fail_slow]))
    return Section("What changed", "what-changed", blocks)


def _example(evidence: Evidence) -> Evidence:
    return Evidence(evidence.file, evidence.line, _clip(evidence.text, 500), evidence.time, evidence.time_latest)


def _after(item: object) -> str:
    after = getattr(item, "after_failure_s", None)
    if after is None:
        first = getattr(item, "first_seen", None)
        return first.strftime("%Y-%m-%d %H:%M:%S") if first is not None else ""
    return "at the failure" if abs(after) < 0.05 else f"{after:+.1f} s"


def _where(ranks: tuple[int, ...], hosts: tuple[str, ...]) -> str:
    parts = [f"rank{'s' if len(ranks) > 1 else ''} {compact_ranks(ranks)}"] if ranks else []
    if hosts:
        parts.append(", ".join(hosts[:4]) + (f" +{len(hosts) - 4}" if len(hosts) > 4 else ""))
    return "; ".join(parts)


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "?"
    return (f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}") + (f" {unit}" if unit else "")


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


__all__ = ["comparison_section"]
