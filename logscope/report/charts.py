"""Charts of one analysed job: pure data-prep functions, then thin matplotlib plotting.

Each chart has a ``*_data(analysis)`` function that returns a polars DataFrame holding exactly
what is plotted (tests check these frames, not pixels), and a ``plot_*`` function that only
draws that frame. Nothing here decides what went wrong: the root failure, its time and its
culprit come from :class:`~logscope.analysis.Analysis`; this module only places rows on lanes.

A *lane* is one row of a chart: ``rank 3 · node02`` when the job has at most
:data:`MAX_RANK_LANES` ranks, else one lane per node (the charts then say so in their titles).
Rows whose rank is unknown but whose node and local rank are known go to the rank that the same
(node, local rank) has on other lines; launcher and SLURM lines with neither go to a node lane.

The charts:

* ``swimlane`` — every timed event on its lane, coloured by kind; the root failure is a star,
  exits and kills are crosses.
* ``cascade`` — the same, zoomed on the cascade: every node from a little before the root
  failure to the last kill, seconds on a linear axis (a cascade of 1.3 s is not a dot at the
  edge of an hour).
* ``progress_strip`` — last training step / NCCL opCount / c10d SeqNum per lane as a heat strip:
  lanes behind the others are red, so the quiet rank stands out. Needs no timestamps.
* ``last_activity`` — per lane, its last own line (not an exit or kill printed about it), in
  seconds relative to the root failure; a lane that logs periodically and fell silent for more
  than 1.5 of its intervals before the root went quiet (the first such is red).
* ``failure_curve`` — how many lanes had failed or been killed, over the seconds since the root.

Jobs without timestamps still get the progress strip; the time-based charts are skipped with a
note (:func:`chart_notes`).
"""

from __future__ import annotations

import contextlib
import io
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")  # never open a window; charts are files

import polars as pl
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from logscope.errors import OutputError
from logscope.model import Event, Severity

if TYPE_CHECKING:
    from logscope.analysis import Analysis

# What matplotlib raises on times it cannot draw (a log dated year 1 or 9999): that chart is left out.
UNDRAWABLE = (OverflowError, ValueError)
MAX_RANK_LANES = 64
MAX_LABELLED_LANES = 80
MAX_SWIMLANE_POINTS = 20_000
DPI = 100

# Colours for the event kinds, chosen to be told apart in colour-blind-safe pairs.
# Drawn in this order, so errors sit on top of the exits and kills that follow them.
KIND_COLOURS: dict[str, str] = {
    "setup": "#8da0cb",
    "other": "#b3b3b3",
    "progress": "#1b9e77",
    "warning": "#e6ab02",
    "collective (FR)": "#a6cee3",
    "exit/kill": "#7570b3",
    "error": "#d95f02",
}
ROOT_COLOUR = "#d7191c"
LAGGARD_COLOUR = "#6a3d9a"

KILL_EVENTS = frozenset(e.value for e in (
    Event.CLOSING_SIGNAL, Event.AGENT_SIGNAL, Event.WORKER_FAILED, Event.CHILD_FAILURE,
    Event.SRUN_TASK_EXIT, Event.STEP_ABORTED, Event.CANCELLED, Event.TEARDOWN, Event.NCCL_ABORT,
))
PROGRESS_EVENTS = frozenset(e.value for e in (Event.PROGRESS, Event.HEARTBEAT, Event.NCCL_COLL))
FAILURE_KINDS = ("error", "exit/kill")
BAD_SEVERITIES = (Severity.ERROR.value, Severity.CRITICAL.value)

# What a chart says for an event of the timeline (its ``event`` column holds internal names).
EVENT_LABELS: dict[str, str] = {
    Event.PROGRESS.value: "training step",
    Event.HEARTBEAT.value: "heartbeat",
    Event.NCCL_COLL.value: "NCCL collective",
    Event.NCCL_INIT.value: "NCCL init complete",
    Event.NCCL_INIT_START.value: "NCCL init",
    Event.NCCL_COMM_INFO.value: "NCCL communicator",
    Event.NCCL_ABORT.value: "NCCL abort",
    Event.NCCL_WARN.value: "NCCL warning",
    Event.NCCL_NET_ERROR.value: "NCCL network error",
    Event.NCCL_SOCKET_ERROR.value: "NCCL socket error",
    Event.NCCL_CUDA_FAILURE.value: "NCCL CUDA failure",
    Event.WATCHDOG_TIMEOUT.value: "watchdog timeout",
    Event.WATCHDOG_STATUS.value: "watchdog status",
    Event.DESYNC_REPORT.value: "desync report",
    Event.TEARDOWN.value: "teardown",
    Event.DIST_ERROR.value: "distributed error",
    Event.STORE_ERROR.value: "store error",
    Event.WORKER_FAILED.value: "worker failed",
    Event.CLOSING_SIGNAL.value: "closing signal sent",
    Event.AGENT_SIGNAL.value: "signal received",
    Event.CHILD_FAILURE.value: "child failed",
    Event.EXCEPTION.value: "exception",
    Event.TRACEBACK.value: "traceback",
    Event.CPP_EXCEPTION.value: "C++ exception",
    Event.CUDA_ERROR.value: "CUDA error",
    Event.CUDA_OOM.value: "CUDA out of memory",
    Event.FATAL_SIGNAL.value: "fatal signal",
    Event.XID.value: "GPU Xid",
    Event.ECC_ERROR.value: "ECC error",
    Event.GPU_LOST.value: "GPU lost",
    Event.SRUN_TASK_EXIT.value: "srun task exit",
    Event.NODE_FAILURE.value: "node failure",
    Event.STEP_ABORTED.value: "step aborted",
    Event.CANCELLED.value: "cancelled",
    Event.FR_ENTRY.value: "Flight Recorder entry",
}
_ACRONYMS = {"nccl": "NCCL", "cuda": "CUDA", "gpu": "GPU", "fr": "FR", "ib": "IB", "oom": "OOM", "slurm": "SLURM"}


def event_label(event: str | None) -> str:
    """A reader's name for a timeline event (``watchdog_timeout`` -> ``watchdog timeout``)."""
    if not event:
        return ""
    return EVENT_LABELS.get(event) or " ".join(_ACRONYMS.get(word, word) for word in event.split("_"))


def value_text(metric: str, value: int) -> str:
    """A progress value as the logs print it: NCCL's opCount in hex (``0x1b``), others in decimal."""
    return f"{value:#x}" if metric == "NCCL opCount" else str(value)


TITLE_WIDTH = 105  # characters of an 11-inch chart's title line at 11 pt (longer titles wrap, never clip)


def _set_title(ax: Any, title: str) -> None:
    ax.set_title(textwrap.fill(title, TITLE_WIDTH), loc="left", fontsize=11)


CHART_TITLES: dict[str, str] = {
    "swimlane": "Timeline per rank",
    "cascade": "The cascade, zoomed: every node around the root failure",
    "progress_strip": "Progress per rank",
    "last_activity": "Last own line per rank, and who went quiet before the root failure",
    "failure_curve": "Failures over time since the root failure",
}


@dataclass(frozen=True)
class Chart:
    """One rendered chart: its file stem, title, and both image encodings."""

    name: str
    title: str
    png: bytes
    svg: bytes


# ---------------------------------------------------------------------------------------------
# Lanes


def by_node(analysis: Analysis) -> bool:
    """Whether the charts aggregate by node (more than :data:`MAX_RANK_LANES` ranks)."""
    ranks = analysis.view.events["rank"].drop_nulls().n_unique()
    return max(ranks, analysis.view.world_size or 0) > MAX_RANK_LANES


def _natural(text: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def lanes(analysis: Analysis) -> pl.DataFrame:
    """The timeline with ``lane``, ``lane_order``, ``lane_kind``, ``kind``, ``is_root``, ``proc``.

    ``lane_kind`` is ``rank``, ``local`` (node + local rank, global rank unknown), ``node`` or
    ``unknown`` (no rank, node or host: the lane is the file's name). ``proc`` names the process
    a row comes from (used to aggregate by node).
    """
    # Place each line at the same best estimate of its time the verdict uses (see
    # detectors.base.seen_at): an untimed line at the next timed line after it, if there is one.
    # ``time_earliest``/``time_latest`` keep the line's window for tables that print it.
    events = analysis.view.events.with_columns(
        pl.col("time").alias("time_earliest"),
        pl.when(pl.col("time_inferred") & pl.col("time_latest").is_not_null())
        .then(pl.col("time_latest")).otherwise(pl.col("time")).alias("time"))
    aggregate = by_node(analysis)
    known = events.filter(pl.col("rank").is_not_null() & pl.col("node").is_not_null()
                          & pl.col("local_rank").is_not_null())
    rank_of = (known.group_by("node", "local_rank").agg(pl.col("rank").unique().alias("_ranks"))
               .filter(pl.col("_ranks").list.len() == 1)
               .select("node", "local_rank", pl.col("_ranks").list.first().alias("_mapped")))
    frame = events.join(rank_of, on=["node", "local_rank"], how="left", maintain_order="left").with_columns(
        pl.coalesce("rank", "_mapped").alias("_rank"))
    node_of_rank = (frame.filter(pl.col("_rank").is_not_null() & pl.col("node").is_not_null())
                    .group_by("_rank").agg(pl.col("node").mode().first().alias("_rank_node")))
    frame = frame.join(node_of_rank, on="_rank", how="left", maintain_order="left").with_columns(
        pl.coalesce("node", "_rank_node", "host").alias("_node"))
    rank_label = pl.format("rank {}", pl.col("_rank"))
    if aggregate:
        frame = frame.with_columns(
            pl.when(pl.col("_node").is_not_null()).then(pl.lit("node"))
            .otherwise(pl.lit("unknown")).alias("lane_kind"),
            pl.coalesce("_node", _file_lane()).alias("lane"),
        )
    else:
        frame = frame.with_columns(
            pl.when(pl.col("_rank").is_not_null()).then(pl.lit("rank"))
            .when(pl.col("_node").is_not_null() & pl.col("local_rank").is_not_null()).then(pl.lit("local"))
            .when(pl.col("_node").is_not_null()).then(pl.lit("node"))
            .otherwise(pl.lit("unknown")).alias("lane_kind"),
            pl.when(pl.col("_rank").is_not_null() & pl.col("_node").is_not_null())
            .then(pl.format("rank {} · {}", pl.col("_rank"), pl.col("_node")))
            .when(pl.col("_rank").is_not_null()).then(rank_label)
            .when(pl.col("_node").is_not_null() & pl.col("local_rank").is_not_null())
            .then(pl.format("{} local {}", pl.col("_node"), pl.col("local_rank")))
            .when(pl.col("_node").is_not_null()).then(pl.col("_node"))
            .otherwise(_file_lane()).alias("lane"),
        )
    frame = frame.with_columns(
        pl.coalesce(
            pl.format("rank {}", pl.col("_rank")),
            pl.format("{}:{}", pl.col("_node"), pl.col("pid")),
            pl.format("{}/{}", pl.col("_node"), pl.col("local_rank")),
            pl.col("lane"),
        ).alias("proc"),
        _kind_expr().alias("kind"),
        _root_expr(analysis).alias("is_root"),
    )
    keys = frame.group_by("lane").agg(pl.col("lane_kind").first(), pl.col("_rank").min(),
                                      pl.col("_node").min(), pl.col("local_rank").min())
    kind_order = {"rank": 0, "local": 1, "node": 2, "unknown": 3}
    ordered = sorted(keys.to_dicts(), key=lambda r: (
        kind_order[r["lane_kind"]],
        r["_rank"] if r["lane_kind"] == "rank" else 0,
        _natural(r["_node"] or r["lane"]),
        r["local_rank"] if r["local_rank"] is not None else -1,
        r["lane"],
    ))
    order = pl.DataFrame({"lane": [r["lane"] for r in ordered], "lane_order": list(range(len(ordered)))},
                         schema={"lane": pl.String, "lane_order": pl.Int64})
    return frame.join(order, on="lane", how="left", maintain_order="left").drop(
        "_mapped", "_rank_node").rename({"_rank": "lane_rank", "_node": "lane_node"})


def _file_lane() -> pl.Expr:
    """The lane of a line with no rank, node or host: its file (``job.out``)."""
    return pl.coalesce(pl.col("file").str.split("/").list.last(), pl.lit("(unknown)"))


def _kind_expr() -> pl.Expr:
    return (
        pl.when(pl.col("event").is_in(list(KILL_EVENTS))).then(pl.lit("exit/kill"))
        .when(pl.col("severity").is_in(list(BAD_SEVERITIES)) | (pl.col("event") == Event.TRACEBACK.value))
        .then(pl.lit("error"))
        .when(pl.col("event").is_in(list(PROGRESS_EVENTS))).then(pl.lit("progress"))
        .when(pl.col("source") == "fr").then(pl.lit("collective (FR)"))
        .when(pl.col("severity") == Severity.WARNING.value).then(pl.lit("warning"))
        .when(pl.col("source").is_in(["nccl", "torchrun"])).then(pl.lit("setup"))
        .otherwise(pl.lit("other"))
    )


def root_lines(analysis: Analysis) -> set[tuple[str, int]]:
    """The (file, line) of the root failure: the verdict's culprit evidence, or none.

    A verdict that names no culprit (a silent hang: every rank waits, none is known to have
    stopped first) gets no star on any lane: a chart must not blame a rank the verdict does not.
    """
    culprit = analysis.verdict.root_cause
    if culprit is not None and culprit.evidence is not None:
        return {(culprit.evidence.file, culprit.evidence.line)}
    return set()


def _root_expr(analysis: Analysis) -> pl.Expr:
    expr = pl.lit(False)
    for file, line in root_lines(analysis):
        expr = expr | ((pl.col("file") == file) & (pl.col("line") == line))
    return expr


def reference_time(analysis: Analysis) -> datetime | None:
    """The moment charts measure from: the root failure's time, else the first error line's."""
    culprit = analysis.verdict.root_cause
    if culprit is not None and culprit.time is not None:
        return culprit.time
    root = analysis.root_finding
    if root is not None and root.first_seen:
        return root.first_seen
    errors = analysis.view.events.filter(pl.col("severity").is_in(list(BAD_SEVERITIES))
                                         & pl.col("time").is_not_null())
    if errors.height:
        value: datetime = errors["time"].min()  # type: ignore[assignment]
        return value
    return None


def has_times(analysis: Analysis) -> bool:
    return analysis.view.events["time"].drop_nulls().len() > 0


def _workers(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows of process lanes (ranks); all rows when no lane is a process (no ranks known)."""
    if frame.filter(pl.col("lane_kind") == "node").height == frame.height:
        return frame
    workers = frame.filter(pl.col("lane_kind").is_in(["rank", "local"]))
    return workers if workers.height else frame


def _seconds(reference: datetime | None) -> pl.Expr:
    if reference is None:
        return pl.lit(None, dtype=pl.Float64)
    return (pl.col("time") - pl.lit(reference, dtype=pl.Datetime("us"))).dt.total_microseconds() / 1e6


# ---------------------------------------------------------------------------------------------
# Chart data (pure)


def _root_at_reference(frame: pl.DataFrame, reference: datetime | None) -> pl.DataFrame:
    """The root line drawn at the verdict's moment when its window (an untimed line lies between
    the timed lines around it) holds that moment; ``window_start``/``window_end`` keep the window."""
    frame = frame.with_columns(pl.col("time_earliest").alias("window_start"),
                               pl.coalesce("time_latest", "time_earliest").alias("window_end"))
    if reference is None:
        return frame
    at = pl.lit(reference, dtype=pl.Datetime("us"))
    inside = pl.col("is_root") & (pl.col("window_start") <= at) & (pl.col("window_end") >= at)
    return frame.with_columns(pl.when(inside).then(at).otherwise(pl.col("time")).alias("time"))


def swimlane_data(analysis: Analysis) -> pl.DataFrame:
    """Timed events on lanes: lane, lane_order, time, seconds (from the root), kind, event, is_root.

    Empty when the job has no timestamps. Above :data:`MAX_SWIMLANE_POINTS` rows, routine kinds
    (progress, setup, other) keep one point per lane, kind and 1/1000th of the time span; errors,
    exits, warnings and the root failure are always kept.
    """
    reference = reference_time(analysis)
    placed = lanes(analysis)
    frame = _root_at_reference(placed.filter(pl.col("time").is_not_null()), reference)
    frame = pl.concat([frame.with_columns(pl.lit(False).alias("is_laggard")),
                       _laggards(analysis, placed, frame)], how="diagonal_relaxed")
    frame = frame.with_columns(_seconds(reference if reference else _first_time(frame)).alias("seconds"))
    frame = frame.select("lane", "lane_order", "lane_kind", "time", "seconds", "kind", "event", "severity",
                         "is_root", (pl.col("kind") == "exit/kill").alias("is_kill"), "file", "line",
                         "window_start", "window_end", "is_laggard")
    if frame.height > MAX_SWIMLANE_POINTS:
        seconds = frame["seconds"].drop_nulls().to_list()
        span = max(max(seconds) - min(seconds), 1.0)
        routine = (pl.col("kind").is_in(["progress", "setup", "other", "collective (FR)"]) & ~pl.col("is_root")
                   & ~pl.col("is_laggard"))
        thinned = (frame.filter(routine).with_columns((pl.col("seconds") / (span / 1000)).floor().alias("_b"))
                   .unique(["lane", "kind", "_b"], keep="last", maintain_order=True).drop("_b"))
        frame = pl.concat([thinned, frame.filter(~routine)])
    return frame.sort("time", "lane_order", maintain_order=True)


def _laggards(analysis: Analysis, placed: pl.DataFrame, timed: pl.DataFrame) -> pl.DataFrame:
    """A point for each rank the Flight Recorder shows lagging (logscope.detectors.fr_facts), on
    its lane, at the moment it stopped (its newest entry, or the first collective it never saw
    complete)."""
    fr = analysis.flight_recorder
    stops: dict[int, datetime] = {}
    for lag in fr.lagging if fr is not None else []:
        if lag.stopped is not None and (lag.rank not in stops or lag.stopped < stops[lag.rank]):
            stops[lag.rank] = lag.stopped
    if not stops:
        return timed.clear().with_columns(pl.lit(False).alias("is_laggard"))
    where = (placed.filter(pl.col("lane_rank").is_in(list(stops)))
             .group_by("lane_rank").agg(pl.col("lane").first(), pl.col("lane_order").first(),
                                        pl.col("lane_kind").first()))
    rows = [{"lane": lane, "lane_order": order, "lane_kind": kind, "time": stops[int(rank)],
             "kind": "collective (FR)", "event": Event.FR_ENTRY.value, "severity": Severity.INFO.value,
             "is_root": False, "file": None, "line": None, "window_start": stops[int(rank)],
             "window_end": stops[int(rank)], "is_laggard": True}
            for rank, lane, order, kind in where.iter_rows()]
    return pl.DataFrame(rows, schema={"lane": pl.String, "lane_order": pl.Int64, "lane_kind": pl.String,
                                      "time": pl.Datetime("us"), "kind": pl.String, "event": pl.String,
                                      "severity": pl.String, "is_root": pl.Boolean, "file": pl.String,
                                      "line": pl.Int64, "window_start": pl.Datetime("us"),
                                      "window_end": pl.Datetime("us"), "is_laggard": pl.Boolean})


def _first_time(frame: pl.DataFrame) -> datetime | None:
    value = frame["time"].min() if frame.height else None
    return value if isinstance(value, datetime) else None


PROGRESS_METRICS = ("step", "NCCL opCount", "c10d SeqNum")


def progress_strip_data(analysis: Analysis) -> pl.DataFrame:
    """Per lane and metric: the furthest value reached, how far behind the leader it is, quiet or not.

    Columns: lane, lane_order, metric, value, leader (the largest value of that metric), behind
    (leader - value), quiet (the lowest value while others are further), missing (no value while
    other lanes have one). Metrics: ``step``
    (training progress lines), ``NCCL opCount`` (COLL lines of the largest communicator; drawn in
    hex, as NCCL prints it), ``c10d SeqNum`` (watchdog lines: last completed, or the sequence
    number named). Aggregated by node, a node's value is its slowest process's; a node
    with a rank that lacks a metric most ranks report has none (missing, not its other ranks' value).
    Metrics no lane has are left out; the frame is empty when none is present.
    """
    frame = _workers(lanes(analysis))
    fields = pl.col("fields")
    coll = frame.filter(pl.col("event") == Event.NCCL_COLL.value)
    coll_nranks = coll.select(fields.struct.field("nranks").max()).item() if coll.height else None
    in_world = pl.lit(True) if coll_nranks is None else (fields.struct.field("nranks") == coll_nranks)
    metrics = {
        "step": pl.when(pl.col("event") == Event.PROGRESS.value).then(fields.struct.field("step")),
        "NCCL opCount": pl.when((pl.col("event") == Event.NCCL_COLL.value) & in_world)
        .then(fields.struct.field("op_count")),
        "c10d SeqNum": pl.when(pl.col("source") == "c10d").then(
            pl.coalesce(fields.struct.field("last_completed"), fields.struct.field("seq"))),
    }
    per_proc = frame.group_by("lane", "lane_order", "proc").agg(
        *[expr.max().alias(name) for name, expr in metrics.items()],
        pl.col("lane_rank").is_not_null().any().alias("_rank_process"))
    ranks = per_proc.filter(pl.col("_rank_process"))
    # A metric most rank processes report is expected of every one: a rank without it (the quiet
    # rank of a hang never reports the watchdog's SeqNum) makes its node's value missing, where
    # the node's minimum over the others would have hidden it. A metric few report (steps logged
    # by rank 0 only) is not expected: the node's value is that of the ranks that have it.
    expected = {name: ranks.height > 0 and ranks[name].is_not_null().sum() * 2 >= ranks.height for name in metrics}
    per_lane = per_proc.group_by("lane", "lane_order").agg(
        *[pl.when(pl.lit(expected[name]) & (pl.col(name).is_null() & pl.col("_rank_process")).any())
          .then(pl.lit(None, dtype=pl.Int64)).otherwise(pl.col(name).min().cast(pl.Int64)).alias(name)
          for name in metrics]).sort("lane_order")
    parts = []
    for name in PROGRESS_METRICS:
        if per_lane[name].null_count() == per_lane.height:
            continue
        part = per_lane.select("lane", "lane_order", pl.lit(name).alias("metric"),
                               pl.col(name).cast(pl.Int64).alias("value"))
        leader, low = part["value"].max(), part["value"].min()
        part = part.with_columns(
            pl.lit(leader, dtype=pl.Int64).alias("leader"),
            (pl.lit(leader, dtype=pl.Int64) - pl.col("value")).alias("behind"),
            ((pl.col("value") == low) & pl.lit(low != leader)).fill_null(False).alias("quiet"),
            pl.col("value").is_null().alias("missing"),
        )
        parts.append(part)
    if not parts:
        return pl.DataFrame(schema={"lane": pl.String, "lane_order": pl.Int64, "metric": pl.String,
                                    "value": pl.Int64, "leader": pl.Int64, "behind": pl.Int64,
                                    "quiet": pl.Boolean, "missing": pl.Boolean})
    return pl.concat(parts)


QUIET_FACTOR = 1.5


def last_activity_data(analysis: Analysis) -> pl.DataFrame:
    """Per lane: its last line, its last *own* line (not an exit or kill, which launchers print
    about it), its rhythm, and whether it went quiet before the root failure.

    Columns: lane, lane_order, last_time, last_event, last_normal_time, last_normal_event (the
    last own line), offset_s (the last own line, in seconds relative to the root failure; to the
    job's last line when there is no root), interval_s (the median gap between its periodic lines:
    progress, heartbeats, NCCL COLL; null with fewer than two), silent_s (how long it was silent
    before the root), quiet (silent for more than :data:`QUIET_FACTOR` intervals before the root:
    it stopped, it was not just between two log lines), earliest (the first quiet lane), last_rank
    (the rank whose times these are: the lane's, or by node its earliest-stopping rank). Silence
    is counted until the job began to fail: the root, or the first error or kill after it.

    A lane with no rhythm (ranks that log nothing while training) cannot be said to go quiet: its
    silence is how it always was. Aggregated by node, a node's times are its earliest-stopping
    process's. Empty without timestamps.
    """
    frame = _workers(lanes(analysis)).filter(pl.col("time").is_not_null())
    if frame.height == 0:
        return pl.DataFrame(schema={"lane": pl.String, "lane_order": pl.Int64, "last_time": pl.Datetime("us"),
                                    "last_event": pl.String, "last_normal_time": pl.Datetime("us"),
                                    "last_normal_event": pl.String, "offset_s": pl.Float64,
                                    "interval_s": pl.Float64, "silent_s": pl.Float64, "quiet": pl.Boolean,
                                    "earliest": pl.Boolean, "last_rank": pl.Int64})
    own = pl.col("kind") != "exit/kill"
    periodic = pl.col("event").is_in(list(PROGRESS_EVENTS))
    per_proc = frame.sort("time", maintain_order=True).group_by("lane", "lane_order", "proc").agg(
        pl.col("time").last().alias("last_time"),
        pl.col("event").last().alias("last_event"),
        pl.col("time").filter(own).last().alias("last_normal_time"),
        pl.col("event").filter(own).last().alias("last_normal_event"),
        pl.col("lane_rank").drop_nulls().first().alias("last_rank"),
    ).with_columns(pl.coalesce("last_normal_time", "last_time").alias("_quiet_from"))
    # A process's rhythm: per periodic kind (steps, COLL lines, heartbeats), the median gap between
    # its lines; the slowest kind sets it (several COLL lines per step must not make it milliseconds).
    rhythm = (frame.filter(periodic).sort("time").group_by("lane", "proc", "event")
              .agg((pl.col("time").unique().sort().diff().dt.total_microseconds().median() / 1e6).alias("_gap"))
              .group_by("lane", "proc").agg(pl.col("_gap").max().alias("interval_s")))
    per_proc = per_proc.join(rhythm, on=["lane", "proc"], how="left")
    per_lane = (per_proc.sort("_quiet_from", maintain_order=True).group_by("lane", "lane_order")
                .agg(pl.all().exclude("proc").first()).sort("lane_order"))
    reference = reference_time(analysis) or frame["time"].max()
    # Silence counts until the job began to fail for everyone: the root, or for a hang (whose root
    # is the quiet rank's own last line) the first error or kill after it.
    failures = failure_curve_data(analysis)["time"].drop_nulls()
    end = max(reference, failures.min()) if failures.len() else reference  # type: ignore[type-var]
    offset = (pl.col("_quiet_from") - pl.lit(reference, dtype=pl.Datetime("us"))).dt.total_microseconds() / 1e6
    silence = (pl.lit(end, dtype=pl.Datetime("us")) - pl.col("_quiet_from")).dt.total_microseconds() / 1e6
    per_lane = per_lane.with_columns(offset.alias("offset_s"), silence.clip(lower_bound=0.0).alias("silent_s")
                                     ).with_columns(
        (pl.col("interval_s").is_not_null() & (pl.col("interval_s") > 0)
         & (pl.col("silent_s") > QUIET_FACTOR * pl.col("interval_s"))).fill_null(False).alias("quiet"))
    first_quiet = per_lane.filter(pl.col("quiet"))["offset_s"].min()
    return per_lane.with_columns(
        (pl.col("quiet") & (pl.col("offset_s") == pl.lit(first_quiet))).fill_null(False).alias("earliest"),
    ).select("lane", "lane_order", "last_time", "last_event", "last_normal_time", "last_normal_event",
             "offset_s", "interval_s", "silent_s", "quiet", "earliest", "last_rank")


def failure_curve_data(analysis: Analysis) -> pl.DataFrame:
    """When each lane first failed or was killed, in order, with the running count.

    Columns: lane, lane_order, time, seconds (since the root failure), event, kind, is_root, file,
    line, text (the line itself), cumulative (lanes down so far), total_lanes (all worker lanes).
    Empty without timestamps or without any error or exit line.
    """
    all_rows = _workers(lanes(analysis))
    total = all_rows["lane"].n_unique()
    frame = all_rows.filter(pl.col("time").is_not_null() & pl.col("kind").is_in(list(FAILURE_KINDS)))
    reference = reference_time(analysis) or _first_time(frame)
    if reference is not None:
        # The verdict put the root first; a line that seems earlier only is through time
        # resolution (ChildFailedError times are truncated to the second), so it is drawn at the
        # root's moment, after the root.
        frame = frame.with_columns(
            pl.when(pl.col("time") < pl.lit(reference, dtype=pl.Datetime("us")))
            .then(pl.lit(reference, dtype=pl.Datetime("us"))).otherwise(pl.col("time")).alias("time"))
    firsts = (frame.with_columns((~pl.col("is_root")).alias("_not_root"))
              .sort("time", "_not_root", "file", "line", maintain_order=True)
              .group_by("lane", maintain_order=True).first()
              .with_columns(_seconds(reference).alias("seconds")))
    return firsts.select(
        "lane", "lane_order", "time", "seconds", "event", "kind", "is_root", "file", "line", "time_earliest",
        pl.coalesce("time_latest", "time_earliest").alias("time_latest"),
        (pl.col("prefix").fill_null("") + pl.col("text").fill_null("")).alias("text"),
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("cumulative"),
        pl.lit(total, dtype=pl.Int64).alias("total_lanes"),
    )


CASCADE_BEFORE_S = (2.0, 30.0)  # at least, at most: seconds shown before the root failure
CASCADE_AFTER_S = 60.0  # at most: seconds of the cascade shown after it


def cascade_window(analysis: Analysis) -> tuple[float, float]:
    """Seconds shown before and after the root failure in :func:`cascade_data`."""
    seconds = failure_curve_data(analysis)["seconds"].to_list()
    span = max((x for x in seconds if x is not None and x <= CASCADE_AFTER_S), default=0.0)
    return min(max(span, CASCADE_BEFORE_S[0]), CASCADE_BEFORE_S[1]), max(span, 1.0) * 1.1


def cascade_lanes(analysis: Analysis, data: pl.DataFrame) -> list[str]:
    """The cascade chart's lanes in order: every node of the job, and any other lane of ``data``."""
    return sorted({*data["lane"].unique().to_list(), *analysis.view.nodes}, key=_natural)


def cascade_data(analysis: Analysis) -> pl.DataFrame:
    """The cascade zoomed in: every timed line of every node from a little before the root failure
    until the last lane failed or was killed (at most :data:`CASCADE_AFTER_S` later).

    Columns: lane (the node, or the file for lines of no node), lane_order, time, seconds (from
    the root), kind, event, is_root, is_kill, file, line. The window is as long before the root
    as the cascade lasted after it (between 2 and 30 s). Empty without a root failure or times.
    """
    reference = reference_time(analysis)
    curve = failure_curve_data(analysis)
    if reference is None or curve.height == 0:
        return pl.DataFrame(schema={"lane": pl.String, "lane_order": pl.Int64, "time": pl.Datetime("us"),
                                    "seconds": pl.Float64, "kind": pl.String, "event": pl.String,
                                    "is_root": pl.Boolean, "is_kill": pl.Boolean, "file": pl.String,
                                    "line": pl.Int64, "window_from_s": pl.Float64, "window_to_s": pl.Float64})
    before, after = cascade_window(analysis)
    start = reference - timedelta(seconds=before)
    end = reference + timedelta(seconds=after)
    frame = _root_at_reference(lanes(analysis).filter(pl.col("time").is_not_null()), reference).filter(
        pl.col("time").is_between(pl.lit(start), pl.lit(end)))
    frame = frame.with_columns(pl.coalesce("lane_node", _file_lane()).alias("lane"))
    # every node has its lane, an empty one too: a node with nothing to say in the cascade is news
    names = cascade_lanes(analysis, frame)
    order = pl.DataFrame({"lane": names, "lane_order": list(range(len(names)))},
                         schema={"lane": pl.String, "lane_order": pl.Int64})
    # As in failure_curve_data: a kill that seems to precede the root only does through time
    # resolution (ChildFailedError times are whole seconds); it is drawn at the root's moment.
    at_root = pl.lit(reference, dtype=pl.Datetime("us"))
    frame = frame.with_columns(pl.when((pl.col("kind") == "exit/kill") & (pl.col("time") < at_root))
                               .then(at_root).otherwise(pl.col("time")).alias("time"))
    return (frame.drop("lane_order").join(order, on="lane", how="left")
            .with_columns(_seconds(reference).alias("seconds"), (pl.col("kind") == "exit/kill").alias("is_kill"))
            .with_columns(((pl.col("window_start") - at_root).dt.total_microseconds() / 1e6).alias("window_from_s"),
                          ((pl.col("window_end") - at_root).dt.total_microseconds() / 1e6).alias("window_to_s"))
            .select("lane", "lane_order", "time", "seconds", "kind", "event", "is_root", "is_kill", "file", "line",
                    "window_from_s", "window_to_s")
            .sort("time", "lane_order", maintain_order=True))


def chart_notes(analysis: Analysis) -> list[str]:
    """Why a chart is missing or aggregated; shown under the charts in reports."""
    notes = []
    if by_node(analysis):
        notes.append(f"More than {MAX_RANK_LANES} ranks: the charts are aggregated by node (one lane per node).")
    if not has_times(analysis):
        notes.append("The logs carry no timestamps: the timeline, last-activity and failure-over-time "
                     "charts are skipped.")
    else:
        events = analysis.view.events
        untimed = events["time"].null_count()
        timed = events.height - untimed
        inferred = events.filter(pl.col("time").is_not_null() & pl.col("time_inferred").fill_null(False)).height
        if inferred * 2 > timed:
            notes.append(f"{inferred} of {timed} timed event(s) take their time from a neighbouring line: "
                         "the time-based charts are approximate.")
        if untimed:
            notes.append(f"{untimed} event(s) without a timestamp are not on the time-based charts.")
        if failure_curve_data(analysis).height == 0:
            notes.append("No error or exit line: the failure-over-time chart is skipped.")
    if progress_strip_data(analysis).height == 0:
        notes.append("No step, NCCL opCount or c10d SeqNum lines: the progress strip is skipped.")
    return notes


# ---------------------------------------------------------------------------------------------
# Plotting (thin: draws the frames above)


def _lane_axis_labels(frame: pl.DataFrame) -> tuple[list[int], list[str]]:
    pairs = frame.select("lane_order", "lane").unique().sort("lane_order")
    orders, labels = pairs["lane_order"].to_list(), pairs["lane"].to_list()
    if len(orders) > MAX_LABELLED_LANES:
        step = -(-len(orders) // MAX_LABELLED_LANES)
        orders, labels = orders[::step], labels[::step]
    return orders, labels


def _lane_word(analysis: Analysis) -> str:
    return "node" if by_node(analysis) else "rank"


def _aggregated_suffix(analysis: Analysis, detail: str = "") -> str:
    if not by_node(analysis):
        return ""
    n = analysis.view.world_size or analysis.view.events["rank"].drop_nulls().n_unique()
    return f" ({n} ranks, aggregated by node{'; ' + detail if detail else ''})"


def _lane_height(n_lanes: int) -> float:
    """Figure height in inches for ``n_lanes`` rows: roomy for a few, compact (at most 10) for many."""
    per_lane = 0.28 if n_lanes <= 32 else 0.11
    return min(max(2.4, per_lane * n_lanes + 1.6), 10.0)


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def plot_swimlane(data: pl.DataFrame, title: str, reference: datetime | None) -> Figure:
    n_lanes = data["lane"].n_unique()
    fig = _figure(11, _lane_height(n_lanes))
    ax = fig.add_subplot()
    marker_size = 18 if n_lanes <= MAX_RANK_LANES else 6
    for z, (kind, colour) in enumerate(KIND_COLOURS.items()):
        rows = data.filter((pl.col("kind") == kind) & ~pl.col("is_root") & ~pl.col("is_laggard"))
        if rows.height == 0:
            continue
        marker = "x" if kind == "exit/kill" else ("|" if kind == "progress" else "o")
        ax.scatter(rows["time"].to_list(), rows["lane_order"].to_list(), s=marker_size * (2 if marker == "x" else 1),
                   c=colour, marker=marker, label=kind, linewidths=1.2 if marker != "o" else 0, zorder=2 + z / 10)
    root = data.filter(pl.col("is_root"))
    for row in root.filter(pl.col("window_start") < pl.col("window_end")).iter_rows(named=True):
        ax.hlines(row["lane_order"], row["window_start"], row["window_end"], colors=ROOT_COLOUR, linewidth=3,
                  alpha=0.35, zorder=1, label="root line's time window (no timestamp on it)")
    if root.height:
        ax.scatter(root["time"].to_list(), root["lane_order"].to_list(), s=220, c=ROOT_COLOUR, marker="*",
                   edgecolors="black", linewidths=0.8, label="root failure", zorder=4)
    laggards = data.filter(pl.col("is_laggard"))
    if laggards.height:
        ax.scatter(laggards["time"].to_list(), laggards["lane_order"].to_list(), s=160, c=LAGGARD_COLOUR, marker="D",
                   edgecolors="black", linewidths=0.8, label="lagging rank stopped (Flight Recorder)", zorder=4)
    if reference is not None:
        ax.axvline(reference, color=ROOT_COLOUR, linestyle="--", linewidth=1, zorder=1)  # type: ignore[arg-type]
    first, last = data["time"].min(), data["time"].max()
    if isinstance(first, datetime) and isinstance(last, datetime) and (last - first) < timedelta(seconds=1):
        ax.set_xlim(first - timedelta(seconds=1), last + timedelta(seconds=1))  # type: ignore[arg-type]
    orders, labels = _lane_axis_labels(data)
    ax.set_yticks(orders, labels, fontsize=8 if len(orders) <= 32 else 6)
    ax.set_ylim(max(orders, default=0) + 0.7, -0.7)
    ax.grid(axis="y", color="#eeeeee", zorder=0)
    ax.set_xlabel("time")
    _set_title(ax, title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    import matplotlib.dates as mdates

    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    return fig


def plot_cascade(data: pl.DataFrame, title: str, lane_names: list[str], window: tuple[float, float],
                 moment: str = "the root failure") -> Figure:
    """The zoomed cascade: seconds from the root failure on a linear axis, one lane per node
    (``lane_names``, in lane order, empty lanes too), ``window`` seconds before and after."""
    n_lanes = len(lane_names)
    fig = _figure(11, _lane_height(max(n_lanes, 3)))
    ax = fig.add_subplot()
    for z, (kind, colour) in enumerate(KIND_COLOURS.items()):
        rows = data.filter((pl.col("kind") == kind) & ~pl.col("is_root"))
        if rows.height == 0:
            continue
        marker = "x" if kind == "exit/kill" else ("|" if kind == "progress" else "o")
        ax.scatter(rows["seconds"].to_list(), rows["lane_order"].to_list(), s=40 if marker == "x" else 22,
                   c=colour, marker=marker, label="kill/exit" if kind == "exit/kill" else kind,
                   linewidths=1.4 if marker != "o" else 0, zorder=2 + z / 10)
    root = data.filter(pl.col("is_root"))
    for row in root.filter(pl.col("window_from_s") < pl.col("window_to_s")).iter_rows(named=True):
        ax.hlines(row["lane_order"], max(row["window_from_s"], -window[0]), min(row["window_to_s"], window[1]),
                  colors=ROOT_COLOUR, linewidth=3, alpha=0.35, zorder=1, label="root line's time window")
    if root.height:
        ax.scatter(root["seconds"].to_list(), root["lane_order"].to_list(), s=260, c=ROOT_COLOUR, marker="*",
                   edgecolors="black", linewidths=0.8, label="root failure", zorder=4)
    ax.axvline(0, color=ROOT_COLOUR, linestyle="--", linewidth=1, zorder=1)
    orders, labels = list(range(len(lane_names))), lane_names
    if len(orders) > MAX_LABELLED_LANES:
        step = -(-len(orders) // MAX_LABELLED_LANES)
        orders, labels = orders[::step], labels[::step]
    ax.set_yticks(orders, labels, fontsize=8 if len(orders) <= 32 else 6)
    ax.set_ylim(len(lane_names) - 0.3, -0.7)
    ax.set_xlim(-window[0], window[1])
    ax.grid(color="#eeeeee", zorder=0)
    ax.set_xlabel(f"seconds since {moment}")
    _set_title(ax, title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    return fig


def plot_progress_strip(data: pl.DataFrame, title: str) -> Figure:
    import numpy as np

    metrics = [m for m in PROGRESS_METRICS if m in set(data["metric"].to_list())]
    lane_pairs = data.select("lane_order", "lane").unique().sort("lane_order")
    lane_index = {order: i for i, order in enumerate(lane_pairs["lane_order"].to_list())}
    n = len(lane_index)
    grid = np.full((len(metrics), n), np.nan)
    worst = {m: data.filter(pl.col("metric") == m)["behind"].max() for m in metrics}
    values: dict[tuple[int, int], int] = {}
    for row in data.filter(pl.col("value").is_not_null()).iter_rows(named=True):
        i, j = metrics.index(row["metric"]), lane_index[row["lane_order"]]
        most = worst[row["metric"]]
        grid[i, j] = max(int(row["behind"]), 0) / most if most else 0.0  # type: ignore[operator]
        values[(i, j)] = int(row["value"])
    cmap = LinearSegmentedColormap.from_list("behind", ["#1a9850", "#fee08b", "#d73027"]).with_extremes(
        bad="#d9d9d9")
    label_space = 0.5 if n <= 6 else (1.3 if n <= MAX_LABELLED_LANES else 0.9)
    fig = _figure(11, 0.9 + 0.45 * len(metrics) + label_space)
    ax = fig.add_subplot()
    ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
    if n <= 32:
        for (i, j), value in values.items():
            ax.text(j, i, value_text(metrics[i], value), ha="center", va="center", fontsize=9 if n <= 8 else 7,
                    color="black")
    ax.set_yticks(range(len(metrics)), metrics, fontsize=9)
    labels = lane_pairs["lane"].to_list()
    step = max(1, -(-n // MAX_LABELLED_LANES))
    ax.set_xticks(range(0, n, step), labels[::step], rotation=0 if n <= 6 else 90, fontsize=8 if n <= 32 else 5)
    quiet = data.filter(pl.col("quiet"))
    quiet_lanes = set(quiet["lane"].to_list())
    for row in quiet.iter_rows(named=True):
        i, j = metrics.index(row["metric"]), lane_index[row["lane_order"]]
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.5))
    for label in ax.get_xticklabels():
        if label.get_text() in quiet_lanes:
            label.set_color(ROOT_COLOUR)
            label.set_fontweight("bold")
    _set_title(ax, title)
    ax.set_xlabel("green: up to date · red: furthest behind the leading " + ("node" if n > MAX_RANK_LANES else "lane")
                  + " · outlined: the lowest · grey: no data", fontsize=8, color="#555555")
    return fig


def plot_last_activity(data: pl.DataFrame, title: str, relative_to: str) -> Figure:
    n = data.height
    fig = _figure(11, _lane_height(n))
    ax = fig.add_subplot()
    orders = data["lane_order"].to_list()
    offsets = data["offset_s"].to_list()
    earliest = data["earliest"].to_list()
    colours = [ROOT_COLOUR if e else ("#f46d43" if q else ("#4575b4" if i is not None else "#aaaaaa"))
               for e, q, i in zip(earliest, data["quiet"].to_list(), data["interval_s"].to_list(), strict=True)]
    if n <= 32:  # a stem per lane reads well for a few lanes; for many, points only
        ax.hlines(orders, 0, offsets, colors=colours, linewidth=2, zorder=2)
    ax.scatter(offsets, orders, c=colours, s=36 if n <= 32 else 10, zorder=3)
    aggregated = any(rank is not None and lane != f"rank {rank}" and not lane.startswith(f"rank {rank} ")
                     for lane, rank in zip(data["lane"].to_list(), data["last_rank"].to_list(), strict=True))
    for order, offset, event, last, lane, rank, first in zip(
            orders, offsets, data["last_normal_event"].to_list(), data["last_event"].to_list(),
            data["lane"].to_list(), data["last_rank"].to_list(), earliest, strict=True):
        if n <= 32 or first:
            said = event_label(event) if event else f"last line: {event_label(last)}"
            if aggregated and rank is not None:  # a node's lane: say whose line it is
                said = f"rank {rank}: {said}"
            label = f" {said}  ({offset:+.3g} s)" if n <= 32 else f" {lane}: {said} ({offset:+.3g} s)"
            ax.annotate(label, (offset, order), xytext=(6, 0), textcoords="offset points", va="center",
                        fontsize=7, color=ROOT_COLOUR if first else "#444444")
    ax.axvline(0, color=ROOT_COLOUR, linestyle="--", linewidth=1)
    if max((abs(o) for o in offsets if o is not None), default=0.0) < 1e-6:
        ax.set_xlim(-1.0, 1.0)  # every lane stopped at the same moment: keep a readable scale
    tick_orders, labels = _lane_axis_labels(data)
    ax.set_yticks(tick_orders, labels, fontsize=8 if len(tick_orders) <= 32 else 6)
    ax.set_ylim(max(orders, default=0) + 0.7, min(orders, default=0) - 0.7)
    if max((abs(o) for o in offsets if o is not None), default=0.0) >= 1e-6:
        ax.margins(x=0.25)
    ax.set_xlabel(f"seconds relative to {relative_to} (negative = before); red: the first to go quiet (silent for "
                  f"more than {QUIET_FACTOR:g}x its usual interval); orange: quiet too; grey: no periodic output",
                  fontsize=8)
    ax.grid(axis="x", color="#eeeeee", zorder=0)
    _set_title(ax, title)
    return fig


def plot_failure_curve(data: pl.DataFrame, title: str, lane_word: str, moment: str = "the root failure") -> Figure:
    fig = _figure(11, 3.6)
    ax = fig.add_subplot()
    seconds = data["seconds"].to_list()
    counts = data["cumulative"].to_list()
    ax.step([min(*seconds, 0.0), *seconds], [0, *counts], where="post", color="#7570b3", linewidth=1.6, zorder=2)
    ax.scatter(seconds, counts, s=14, color="#7570b3", zorder=3)
    root = data.filter(pl.col("is_root"))
    if root.height:
        ax.scatter(root["seconds"].to_list(), root["cumulative"].to_list(), s=200, c=ROOT_COLOUR, marker="*",
                   edgecolors="black", linewidths=0.8, zorder=4, label="root failure")
        ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.axvline(0, color=ROOT_COLOUR, linestyle="--", linewidth=1)
    total = int(data["total_lanes"].max() or 0)  # type: ignore[arg-type]
    ax.set_ylim(0, max(total, int(data["cumulative"].max() or 0)) + 0.5)  # type: ignore[arg-type]
    ax.axhline(total, color="#999999", linestyle=":", linewidth=1)
    ax.set_xlabel(f"seconds since {moment}")
    ax.set_ylabel(f"{lane_word}s failed or killed")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(color="#eeeeee", zorder=0)
    _set_title(ax, title)
    return fig


# ---------------------------------------------------------------------------------------------
# Rendering and saving


def _encode(fig: Figure, fmt: str) -> bytes:
    buffer = io.BytesIO()
    if fmt == "svg":
        with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as <text>: searchable, selectable
            fig.savefig(buffer, format="svg", metadata={"Date": None})
    else:
        fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def render_charts(analysis: Analysis, formats: Sequence[str] = ("png", "svg")) -> list[Chart]:
    """Every chart that makes sense for this job, rendered in memory.

    ``formats`` picks the encodings (``png``, ``svg``); one left out is empty bytes. Every text
    is drawn as it is: a ``$`` in a host name or a log line is not matplotlib math (an unbalanced
    one made a chart fail to draw, and the chart was left out).
    """
    with matplotlib.rc_context({"text.parse_math": False}):
        return _render_charts(analysis, formats)


def _render_charts(analysis: Analysis, formats: Sequence[str]) -> list[Chart]:
    word = _lane_word(analysis)
    suffix = _aggregated_suffix(analysis)
    reference = reference_time(analysis)
    has_root = bool(analysis.verdict.finding) or analysis.verdict.root_cause is not None
    # the moment the charts measure from: "the root failure" only where the verdict names its process
    moment = "the root failure" if analysis.verdict.root_cause is not None else "the finding"
    figures: list[tuple[str, str, Figure]] = []

    swim = swimlane_data(analysis)
    if swim.height:
        marks = "★ root failure, × exits and kills" if swim["is_root"].any() else "× exits and kills"
        title = f"Timeline per {word}{suffix}: events by kind; {marks}"
        with contextlib.suppress(*UNDRAWABLE):
            figures.append(("swimlane", title, plot_swimlane(swim, title, reference)))
    cascade = cascade_data(analysis)
    if cascade.height:
        before, after = cascade_window(analysis)
        title = (f"The cascade, zoomed{suffix}: every node from {before:.3g} s before {moment} "
                 f"to {after:.3g} s after; {'★ root, ' if cascade['is_root'].any() else ''}× kills and exits")
        with contextlib.suppress(*UNDRAWABLE):
            figures.append(("cascade", title, plot_cascade(cascade, title, cascade_lanes(analysis, cascade),
                                                           (before, after), moment)))
    strip = progress_strip_data(analysis)
    if strip.height:
        quiet = strip.filter(pl.col("quiet"))["lane"].unique(maintain_order=True).to_list()
        who = f"; behind: {', '.join(quiet[:3])}{' ...' if len(quiet) > 3 else ''}" if quiet else ""
        title = f"Progress per {word}{_aggregated_suffix(analysis, 'slowest rank per node')}{who}"
        figures.append(("progress_strip", title, plot_progress_strip(strip, title)))
    last = last_activity_data(analysis)
    if last.height:
        relative_to = moment if has_root else "the job's last line"
        title = (f"Last own line per {word}{_aggregated_suffix(analysis, 'earliest rank per node')}, "
                 f"and who went quiet before {moment if has_root else 'the end'}")
        figures.append(("last_activity", title, plot_last_activity(last, title, relative_to)))
    curve = failure_curve_data(analysis)
    if curve.height:
        total = int(curve["total_lanes"].max() or 0)  # type: ignore[arg-type]
        title = (f"{word.capitalize()}s failed or killed since {moment}{suffix}: "
                 f"{curve.height} of {total}")
        figures.append(("failure_curve", title, plot_failure_curve(curve, title, word, moment)))

    charts = []
    for name, title, fig in figures:
        try:
            png = _encode(fig, "png") if "png" in formats else b""
            svg = _encode(fig, "svg") if "svg" in formats else b""
        except UNDRAWABLE:
            continue
        charts.append(Chart(name, title, png, svg))
    return charts


def chart_paths(charts: Sequence[Chart], out_dir: Path) -> list[Path]:
    """The files :func:`write_charts` writes for ``charts`` into ``out_dir``."""
    return [out_dir / f"{chart.name}{suffix}" for chart in charts
            for suffix, data in ((".png", chart.png), (".svg", chart.svg)) if data]


def write_charts(charts: Sequence[Chart], out_dir: Path) -> list[Path]:
    """Write each chart as ``<name>.png`` and ``<name>.svg`` into ``out_dir`` (created), each
    through a temporary file and a rename."""
    from logscope.atomic import atomic_write

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in charts:
        for suffix, data in ((".png", chart.png), (".svg", chart.svg)):
            if not data:
                continue
            path = out_dir / f"{chart.name}{suffix}"
            atomic_write(path, data)
            written.append(path)
    return written


def save_charts(analysis: Analysis, out_dir: Path) -> list[Path]:
    """Render the job's charts and write them (PNG and SVG) into ``out_dir``; return the paths.

    No chart file may be, or lead through a link to, one of the job's logs."""
    from logscope.report.output import refuse_inputs

    charts = render_charts(analysis)
    refuse_inputs(analysis.job, chart_paths(charts, out_dir))
    try:
        return write_charts(charts, out_dir)
    except OSError as error:
        raise OutputError(f"cannot write the charts into {out_dir}: {error.strerror or error}") from None


__all__ = [
    "CHART_TITLES",
    "MAX_RANK_LANES",
    "Chart",
    "by_node",
    "cascade_data",
    "chart_notes",
    "chart_paths",
    "failure_curve_data",
    "lanes",
    "last_activity_data",
    "progress_strip_data",
    "reference_time",
    "render_charts",
    "save_charts",
    "swimlane_data",
    "write_charts",
]
