"""Training steps and their times, read from the progress lines (a helper module).

:func:`step_series` is pure: it reads a :class:`JobView`'s ``progress`` events and returns one row
per logged step, in order, with the time one step took there. LS105 (fail-slow) looks for a
change in it, and ``logscope diff`` (:mod:`logscope.diff.performance`) compares two jobs' series.

A step's time comes from the line itself where the trainer prints it (Megatron's ``elapsed time
per iteration (ms)``, ``fields.iteration_time_s``: the mean over the steps since the previous
logged one), else from the spacing of the logged steps: the time between two timed progress lines
over the steps between them. Lines without their own timestamp give no spacing (their time is the
window between the timed lines around them, not a moment).

A job may hold several runs of its training loop (a torchrun restart, a requeued job appending to
the same file): in each file, a step number lower than the one before starts a new *attempt*. The
n-th attempts of every file are taken as one attempt of the job (every rank restarts together);
steps are never compared across attempts.

Where several ranks print the same step, the step's row takes the earliest time and the median of
their printed times.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from statistics import median

import polars as pl

from logscope.detectors.base import JobView
from logscope.model import Event

SERIES_SCHEMA: dict[str, pl.DataType] = {
    "attempt": pl.Int64(),
    "step": pl.Int64(),
    # when it was logged (the earliest rank's line; a line without its own time: the latest it can
    # have been written, as base.seen_at reads it)
    "time": pl.Datetime("us"),
    "step_time_s": pl.Float64(),  # seconds per step at this point (null: neither printed nor spaced)
    "printed": pl.Boolean(),  # True when step_time_s is the trainer's own figure
    "file": pl.String(),
    "line": pl.Int64(),  # the first line that logged the step (its file above)
}


def step_series(view: JobView, by_node: bool = False) -> pl.DataFrame:
    """One row per (attempt, logged step) of the job, in order (:data:`SERIES_SCHEMA`); with
    ``by_node``, one per (node, attempt, step) and a ``node`` column (each node's own lines)."""
    key = f"step series:{by_node}"
    series: pl.DataFrame = view.remember(key, lambda: _step_series(view, by_node))
    return series


def _step_series(view: JobView, by_node: bool) -> pl.DataFrame:
    schema = {**({"node": pl.String()} if by_node else {}), **SERIES_SCHEMA}
    progress = view.of(Event.PROGRESS)
    if progress.height == 0:
        return pl.DataFrame(schema=schema)
    fields = pl.col("fields").struct
    rows = progress.select(
        "file", "line", pl.coalesce("node", "host").alias("node"),
        fields.field("step").alias("step"), fields.field("iteration_time_s").alias("printed_s"),
        pl.when(pl.col("time_inferred").fill_null(False)).then(None).otherwise(pl.col("time")).alias("own_time"),
        pl.when(pl.col("time_inferred").fill_null(False)).then(pl.coalesce("time_latest", "time"))
        .otherwise(pl.col("time")).alias("seen"),
    ).filter(pl.col("step").is_not_null()).sort("file", "line")
    if rows.height == 0:
        return pl.DataFrame(schema=schema)
    # a step number lower than the previous one of the same file starts another attempt
    rows = rows.with_columns(
        (pl.col("step") < pl.col("step").shift(1).over("file")).fill_null(False).cum_sum().over("file")
        .cast(pl.Int64).alias("attempt"))
    keys = ["node", "attempt", "step"] if by_node else ["attempt", "step"]
    if by_node:
        rows = rows.filter(pl.col("node").is_not_null())
    steps = (rows.group_by(keys).agg(
        pl.col("own_time").min().alias("own_time"), pl.col("seen").min().alias("time"),
        pl.col("printed_s").median().alias("printed_s"),
        pl.col("file").sort_by("line").first().alias("file"), pl.col("line").min().alias("line"))
        .sort(keys))
    group = ["node", "attempt"] if by_node else ["attempt"]
    # The spacing of two timed steps, over the steps between them; the time of a step between two
    # untimed ones is unknown.
    timed = steps.filter(pl.col("own_time").is_not_null()).with_columns(
        ((pl.col("own_time") - pl.col("own_time").shift(1).over(group)).dt.total_microseconds() / 1e6
         / (pl.col("step") - pl.col("step").shift(1).over(group))).alias("spaced_s")).select(*keys, "spaced_s")
    steps = steps.join(timed, on=keys, how="left", maintain_order="left")
    spaced = pl.when(pl.col("spaced_s") > 0).then(pl.col("spaced_s"))
    return steps.select(
        *keys[:-1], "step", "time",
        pl.coalesce(pl.when(pl.col("printed_s") > 0).then(pl.col("printed_s")), spaced).alias("step_time_s"),
        (pl.col("printed_s") > 0).fill_null(False).alias("printed"), "file", "line",
    ).select(list(schema)).cast(schema)  # type: ignore[arg-type]


# --- change points --------------------------------------------------------------------------------


def change_points(values: Sequence[float], min_size: int, penalty: float) -> list[int]:
    """Where the level of ``values`` changes: the indexes that start a new segment, by binary
    segmentation under a squared-error cost. A split is kept when it lowers the cost by more than
    ``penalty``; no segment is shorter than ``min_size``."""
    n = len(values)
    sums = [0.0]
    squares = [0.0]
    for value in values:
        sums.append(sums[-1] + value)
        squares.append(squares[-1] + value * value)

    def cost(start: int, end: int) -> float:
        total = sums[end] - sums[start]
        return squares[end] - squares[start] - total * total / (end - start)

    splits: list[int] = []
    pending = [(0, n)]
    while pending:
        start, end = pending.pop()
        if end - start < 2 * min_size:
            continue
        whole = cost(start, end)
        gain, at = max(((whole - cost(start, k) - cost(k, end), k) for k in range(start + min_size, end - min_size + 1)),
                       default=(0.0, start))
        if gain > penalty:
            splits.append(at)
            pending += [(start, at), (at, end)]
    return sorted(splits)


def noise(values: Sequence[float]) -> float:
    """A robust estimate of the point-to-point noise of ``values`` (the median absolute deviation
    of their first differences, scaled to a standard deviation of the values): a level shift moves
    one difference only, so it barely moves this."""
    if len(values) < 3:
        return 0.0
    diffs = [b - a for a, b in pairwise(values)]
    middle = median(diffs)
    mad = median(abs(d - middle) for d in diffs)
    return mad / 0.6745 / math.sqrt(2)


__all__ = ["SERIES_SCHEMA", "change_points", "noise", "step_series"]
