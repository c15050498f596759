"""The live terminal view of ``logscope watch``: rich renderables built from the watch's state (per
node: its ranks, their last progress and how long ago; the state; the last alerts). Nothing is
worked out here."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from logscope.detectors.base import compact_ranks
from logscope.watch.events import END, ERROR, RECOVERED, STALL, WatchEvent, stamp
from logscope.watch.state import RankView, Watch

EVENT_STYLE = {STALL: "bold magenta", ERROR: "bold red", RECOVERED: "bold green", END: "bold"}
NODES_SHOWN = 32


def render(watch: Watch, now: float, target: str, recent: Sequence[WatchEvent]) -> RenderableType:
    """The view at ``now``."""
    parts: list[RenderableType] = [header(watch, target), state_line(watch, now)]
    table = nodes_table(watch.ranks, now)
    if table is not None:
        parts.append(table)
    if recent:
        parts.append(Text("alerts", style="bold"))
        parts.extend(event_line(event) for event in recent[-6:])
    return Group(*parts)


def header(watch: Watch, target: str) -> Text:
    text = Text("logscope watch ", style="bold")
    text.append(target)
    text.append(f"  ·  {watch.files} file(s), {watch.lines_read:,} lines, "
                f"{len(watch.ranks)} rank(s) with progress lines", style="dim")
    return text


def state_line(watch: Watch, now: float) -> Text:
    quiet = watch.quiet(now)
    if watch.end_row is not None:
        return Text("the logs say the job ended", style="bold")
    if watch.stall is not None and quiet is not None:
        text = Text(f"STALLED {quiet:.0f} s", style="bold magenta")
        text.append(f"  {watch.stall.summary.split('; ', 1)[-1]}")
        return text
    if quiet is None:
        return Text("no progress seen yet (training steps, NCCL collectives): waiting", style="cyan")
    text = Text("progressing", style="bold green")
    text.append(f"  last progress {quiet:.0f} s ago; stall after {watch.threshold:.0f} s without any", style="dim")
    if watch.failed:
        text.append("  (errors logged: see the alerts)", style="red")
    return text


def nodes_table(ranks: Sequence[RankView], now: float) -> Table | None:
    """One row per node: its ranks, their last counters (ranks grouped by counter), the oldest
    progress among them."""
    if not ranks:
        return None
    by_node: dict[str, list[RankView]] = {}
    for view in ranks:
        by_node.setdefault(view.place or "(unknown node)", []).append(view)
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for column in ("node", "ranks", "last progress", "quiet", "usual"):
        table.add_column(column)
    for node in sorted(by_node)[:NODES_SHOWN]:
        views = by_node[node]
        counters: dict[str, list[int]] = {}
        for view in views:
            counters.setdefault(view.counter, []).append(view.rank)
        said = " · ".join(f"{counter} ({compact_ranks(members)})" if len(counters) > 1 else counter
                          for counter, members in counters.items())
        oldest = min((v.progress_seen for v in views if v.progress_seen is not None), default=None)
        gaps = sorted(v.usual_gap for v in views if v.usual_gap is not None)
        table.add_row(node, compact_ranks([v.rank for v in views]), Text(said),
                      f"{max(0.0, now - oldest):.0f} s" if oldest is not None else "",
                      f"{gaps[len(gaps) // 2]:.0f} s" if gaps else "")
    if len(by_node) > NODES_SHOWN:
        table.add_row(f"... {len(by_node) - NODES_SHOWN} more", "", "", "", "")
    return table


def event_line(event: WatchEvent) -> Text:
    """An event as one terminal line (its time, its kind, what it says, where)."""
    text = Text(stamp(event.time)[11:19] + " ", style="dim")
    text.append(f"{event.kind:<9}", style=EVENT_STYLE.get(event.kind, ""))
    text.append(event.summary)
    if event.evidence is not None:
        text.append(f"  ({event.evidence.file}:{event.evidence.line})", style="dim")
    return text


__all__ = ["event_line", "render"]
