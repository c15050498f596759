"""Launcher prefixes: strip them from each line and keep what they say about the line's origin.

Which prefixes launchers stack in front of what a process printed, and the regexes that read them,
are in :mod:`logscope.parsers.prefix_stack` (no polars there: a read worker's byte pass tests
heads with them too). Here, in polars: every line pays only for one anchored, capture-free match
of the whole stack (:data:`PREFIX_STACK`) and a slice; the peeling that records what each prefix
says runs once per *distinct* prefix string (:func:`prefix_fields`), and a job has a handful of
them (``[default0]:`` ... ``[default7]:``), not one per line.
"""

from __future__ import annotations

import polars as pl

from logscope.parsers.prefix_stack import MAX_PREFIXES, ONE_PREFIX, PREFIX_STACK, TIME_LEAD, TIME_TEXT

PREFIX_COLUMNS: dict[str, pl.DataType] = {
    "p_task": pl.Int64(),
    "p_pid": pl.Int64(),
    "p_local_rank": pl.Int64(),
    "p_rank": pl.Int64(),
    "p_host": pl.String(),
    "p_time": pl.String(),  # the text of the innermost time the stack holds
    "p_outer_time": pl.String(),  # the text of its outermost time (the same when it holds one)
    "prefix": pl.String(),
}


def split_prefix(frame: pl.DataFrame, column: str = "raw") -> pl.DataFrame:
    """Add ``prefix`` (the stacked launcher prefixes, null when none) and ``body`` (the rest of the
    line) to ``frame``."""
    frame = frame.with_columns(pl.col(column).fill_null("").str.extract(PREFIX_STACK, 0).alias("prefix"))
    return frame.with_columns(
        pl.col(column).fill_null("").str.slice(pl.col("prefix").str.len_chars().fill_null(0)).alias("body")
    )


def timeless(prefix: pl.Expr) -> pl.Expr:
    """A stack of prefixes without its times: who wrote the line (a process's lines share it
    whatever their times), the key :func:`prefix_fields` is asked of for a chunk's lines."""
    return prefix.str.replace_all(TIME_LEAD, "")


def times_of(prefix: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """The text of the outermost and of the innermost time a stack of prefixes holds (null when
    it holds none; the same text when it holds one)."""
    found = prefix.str.extract_all(TIME_TEXT)
    return found.list.first(), found.list.last()


def prefix_fields(prefixes: pl.Series) -> pl.DataFrame:
    """What each distinct prefix string says: ``prefix`` and the ``p_*`` columns, one row per value."""
    distinct = prefixes.drop_nulls().unique()
    if distinct.len() > 64:  # e.g. a timestamp in every prefix: nothing to remember
        return _peel(distinct)
    # Usually the same few values chunk after chunk and file after file: peel each value once.
    values = distinct.to_list()
    rows = prefix_rows(values)
    if rows is None:  # forgotten meanwhile (another thread cleared the memo)
        return _peel(distinct)
    return pl.DataFrame(list(rows.values()), schema=PREFIX_COLUMNS, orient="row")


def prefix_rows(values: list[str]) -> dict[str, tuple[object, ...]] | None:
    """:func:`prefix_fields`' row (the ``p_*`` columns in PREFIX_COLUMNS' order, then ``prefix``)
    of each distinct value, remembered across calls: a polars query only for values not seen
    before. None when another thread cleared the memo meanwhile."""
    missing = [v for v in dict.fromkeys(values) if v not in _KNOWN]
    if missing:
        if len(_KNOWN) > 4096:
            _KNOWN.clear()
        _KNOWN.update((row[-1], row) for row in _peel(pl.Series(missing, dtype=pl.String)).iter_rows())
    rows = {v: _KNOWN.get(v) for v in values}
    if any(row is None for row in rows.values()):
        return None
    return rows  # type: ignore[return-value]


_KNOWN: dict[str, tuple[object, ...]] = {}  # prefix -> its row of prefix_fields


def _peel(distinct: pl.Series) -> pl.DataFrame:
    state = (
        distinct.to_frame("body")
        .with_columns(
            [pl.lit(None, dtype=t).alias(c) for c, t in PREFIX_COLUMNS.items() if c != "prefix"]
            + [pl.col("body").alias("prefix")]
        )
    )
    columns = state.columns
    settled: list[pl.DataFrame] = []
    for _ in range(MAX_PREFIXES):
        if state.height == 0:
            break
        groups = state.with_columns(pl.col("body").str.extract_groups(ONE_PREFIX).alias("_g")).unnest("_g")
        has_prefix = pl.col("whole").is_not_null() & (pl.col("whole") != "")
        settled.append(groups.filter(~has_prefix).select(columns))
        # Innermost wins for each kind: what the process itself printed (its "[rank11]:") says more
        # than a wrapper around it (an Open MPI tag, a shipper's time).
        state = groups.filter(has_prefix).with_columns(
            # Open MPI's "[job,rank]<stderr>:" numbers the processes mpirun started, as srun's label
            # numbers its tasks: the training rank only where mpirun started the training processes
            # themselves (not a per-node launcher), which the tag does not say.
            pl.coalesce(_int("task"), _int("task_b"), _int("mpi_rank"), "p_task").alias("p_task"),
            pl.coalesce(_int("ray_pid"), _int("ucx_pid"), "p_pid").alias("p_pid"),
            pl.coalesce(_int("tee_local"), _int("role_local_c"), _int("role_local_b"), _int("role_local"),
                        "p_local_rank").alias("p_local_rank"),
            pl.coalesce(_int("rank"), "p_rank").alias("p_rank"),
            pl.coalesce("pdsh", "ship_host", "ucx_host", _ray_host(), _role_host(), "p_host").alias("p_host"),
            pl.coalesce("time", "ship_time", "p_time").alias("p_time"),
            pl.coalesce("p_outer_time", "time", "ship_time").alias("p_outer_time"),
            pl.col("body").str.slice(pl.col("whole").str.len_chars()).alias("body"),
        ).select(columns)
    settled.append(state)
    return pl.concat(settled, how="vertical").select(list(PREFIX_COLUMNS))


def strip_prefixes(frame: pl.DataFrame, column: str = "raw") -> pl.DataFrame:
    """Add ``body`` (the line without launcher prefixes) and the ``p_*`` and ``prefix`` columns."""
    frame = split_prefix(frame, column)
    return frame.join(prefix_fields(frame["prefix"]), on="prefix", how="left",
                      maintain_order="left")


def _int(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.Int64, strict=False)


def _ray_host() -> pl.Expr:
    """Ray's ``(Actor pid=N, ip=10.0.1.75)`` names the node by its address."""
    return pl.col("ray_ip").str.strip_chars()


def _role_host() -> pl.Expr:
    """``[host1:3]:`` names a host in the role (``--role $(hostname -s):``); ``[worker:3]`` names a
    role, not a host, and ``[node-0]`` without the colon is a tag whose digits may belong to the name."""
    role = pl.col("role")
    return pl.when(role.str.contains(r"[\d.-]") & pl.col("role_colon").is_not_null()).then(role).otherwise(None)


__all__ = ["ONE_PREFIX", "PREFIX_COLUMNS", "PREFIX_STACK", "prefix_fields", "prefix_rows", "split_prefix",
           "strip_prefixes", "timeless", "times_of"]
