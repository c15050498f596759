"""Launcher prefixes: strip them from each line and keep what they say about the line's origin.

Launchers stack prefixes in front of what a process printed (formats.md, "Parser traps" 1):

====================================  ========================================  =================
prefix                                who adds it                               recorded as
====================================  ========================================  =================
``12: `` (padded: `` 3: ``)            ``srun --label``                          ``task``
``[0] ``                              mpirun-style task label                   ``task``
``(RayWorkerWrapper pid=4009) ``      Ray actor output                          ``pid``
``[default3]:``                       torchrun ``--tee 3`` (role ``default``)   ``local_rank``
``[host1:3]:`` / ``[host13]:``        torchrun ``--role host1:`` / templates    ``local_rank``,
                                                                                ``prefix_host``
``[rank3]:``                          PyTorch's own rank prefix                 ``rank``
``node-7: ``                          pdsh                                      ``prefix_host``
``2026-09-18 19:29:24 [rank3]:``      an app timestamp before a rank tag        ``app_time``
====================================  ========================================  =================

The prefixes are peeled one at a time, outermost first, by one anchored regex of alternatives, at
most :data:`MAX_PREFIXES` times; each pass only looks at the rows the previous pass changed. All
of it is polars string expressions, so the cost is a few anchored regex scans per chunk.
"""

from __future__ import annotations

import polars as pl

MAX_PREFIXES = 5

# One prefix, anchored. Alternatives are tried left to right at position 0 (leftmost-first), so
# the specific torchrun forms come before the generic role form. ``whole`` is the matched prefix.
_HOSTNAME = r"[A-Za-z][A-Za-z0-9-]*[0-9][A-Za-z0-9.-]*"
ONE_PREFIX = (
    r"^(?P<whole>"
    r"[ \t]*(?P<task>\d{1,6}): "  # srun --label
    r"|\[(?P<task_b>\d{1,6})\] "  # mpirun-style label "[0] "
    r"|\((?:[A-Za-z_][\w]*) pid=(?P<ray_pid>\d+)(?:, ip=[^)]*)?\) ?"  # Ray
    r"|\[default(?P<tee_local>\d+)\]:"  # torchrun --tee, default role
    r"|\[rank(?P<rank>\d+)\]: ?"  # PyTorch rank prefix (torch>=2.2 adds a space before tracebacks)
    r"|\[(?P<role>[A-Za-z][A-Za-z0-9_.-]*?):?(?P<role_local>\d+)\]:?"  # --role host: / templates
    r"|(?P<app_time>\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?) \[rank(?P<rank_b>\d+)\]:"
    r"|(?P<pdsh>" + _HOSTNAME + r"): "  # pdsh
    r")"
)

PREFIX_COLUMNS: dict[str, pl.DataType] = {
    "p_task": pl.Int64(),
    "p_pid": pl.Int64(),
    "p_local_rank": pl.Int64(),
    "p_rank": pl.Int64(),
    "p_host": pl.String(),
    "p_app_time": pl.String(),
    "prefix": pl.String(),
}


def strip_prefixes(frame: pl.DataFrame, column: str = "raw") -> pl.DataFrame:
    """Add ``body`` (the line without launcher prefixes) and the ``p_*`` columns to ``frame``.

    The frame must have a unique ``idx`` column. Only rows that start with a prefix are worked on.
    """
    frame = frame.with_columns(pl.col(column).fill_null("").alias("body"))
    state = (
        frame.filter(pl.col("body").str.contains(ONE_PREFIX))
        .select("idx", "body")
        .with_columns(
            [pl.lit(None, dtype=t).alias(c) for c, t in PREFIX_COLUMNS.items() if c != "prefix"]
            + [pl.lit("").alias("prefix")]
        )
    )
    if state.height == 0:
        return frame.with_columns([pl.lit(None, dtype=t).alias(c) for c, t in PREFIX_COLUMNS.items()])

    columns = state.columns
    settled: list[pl.DataFrame] = []
    for _ in range(MAX_PREFIXES):
        groups = state.with_columns(pl.col("body").str.extract_groups(ONE_PREFIX).alias("_g")).unnest("_g")
        has_prefix = pl.col("whole").is_not_null() & (pl.col("whole") != "")
        settled.append(groups.filter(~has_prefix).select(columns))
        peeled = groups.filter(has_prefix)
        if peeled.height == 0:
            state = state.clear()
            break
        # Outermost wins for each kind: keep a value an earlier pass already found.
        state = peeled.with_columns(
            pl.coalesce("p_task", pl.col("task").cast(pl.Int64), pl.col("task_b").cast(pl.Int64)).alias("p_task"),
            pl.coalesce("p_pid", pl.col("ray_pid").cast(pl.Int64)).alias("p_pid"),
            pl.coalesce(
                "p_local_rank", pl.col("tee_local").cast(pl.Int64), pl.col("role_local").cast(pl.Int64)
            ).alias("p_local_rank"),
            pl.coalesce("p_rank", pl.col("rank").cast(pl.Int64), pl.col("rank_b").cast(pl.Int64)).alias("p_rank"),
            pl.coalesce("p_host", "pdsh", _role_host()).alias("p_host"),
            pl.coalesce("p_app_time", "app_time").alias("p_app_time"),
            (pl.col("prefix") + pl.col("whole")).alias("prefix"),
            pl.col("body").str.slice(pl.col("whole").str.len_chars()).alias("body"),
        ).select(columns)
    settled.append(state)
    peeled_rows = pl.concat(settled, how="vertical")
    out = frame.drop("body").join(peeled_rows, on="idx", how="left", maintain_order="left")
    return out.with_columns(
        pl.coalesce("body", pl.col(column).fill_null("")).alias("body"),
        pl.when(pl.col("prefix") == "").then(None).otherwise(pl.col("prefix")).alias("prefix"),
    )


def _role_host() -> pl.Expr:
    """``[host1:3]:`` names a host in the role; ``[worker:3]`` names a role, not a host."""
    role = pl.col("role")
    return pl.when(role.str.contains(r"[\d.-]")).then(role).otherwise(None)


__all__ = ["ONE_PREFIX", "PREFIX_COLUMNS", "strip_prefixes"]
