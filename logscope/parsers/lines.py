"""Turn a chunk of raw log lines into event rows, with polars string expressions only.

Contract: :func:`parse_chunk` takes a frame of physical lines (``line``, ``raw``) and returns the
recognised events with every column of the timeline except ``file``/``node`` (the caller knows
them), plus the count of lines it recognised. Unknown lines are counted, never fatal; nothing
raises on odd bytes (the reader already decoded them lossily).

How one chunk is processed:

1. lines holding carriage returns (tqdm redraws, ``\\r``-glued output) are split into segments
   that keep their physical line number;
2. launcher prefixes are peeled (:mod:`logscope.parsers.prefixes`);
3. a leading timestamp is parsed for every line, so untimed events can take the time of the
   nearest timed line above them (``time_inferred``);
4. one Aho-Corasick pass finds which pattern triggers each line contains; lines with none are
   unrecognised and dropped here;
5. each pattern's regex runs only on the lines holding its trigger and not yet claimed by an
   earlier pattern.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache

import polars as pl

from logscope.model import FIELD_SCHEMA, Event
from logscope.parsers.patterns import PATTERNS, SUBJECT_IS_TARGET, LinePattern
from logscope.parsers.prefixes import strip_prefixes
from logscope.parsers.timestamps import leading_time, parse_event_time

MAX_TEXT = 4096  # characters of a line kept in the timeline; evidence never needs more

IDENTITY_GROUPS = ("host", "pid", "dev", "rank", "pg_rank", "local_rank")

# Columns of the frame parse_chunk returns, in order.
EVENT_COLUMNS: dict[str, pl.DataType] = {
    "line": pl.Int64(),
    "host": pl.String(),
    "pid": pl.Int64(),
    "local_rank": pl.Int64(),
    "rank": pl.Int64(),
    "task": pl.Int64(),
    "time": pl.Datetime("us"),
    "time_inferred": pl.Boolean(),
    "time_latest": pl.Datetime("us"),
    "source": pl.String(),
    "event": pl.String(),
    "severity": pl.String(),
    "fields": pl.Struct(FIELD_SCHEMA),
    "prefix": pl.String(),
    "text": pl.String(),
}


@dataclass
class ChunkResult:
    events: pl.DataFrame
    lines_recognised: int
    last_time: datetime | None  # the last timestamp seen in the chunk, carried into the next one


@cache
def _triggers() -> list[str]:
    return sorted({p.trigger for p in PATTERNS})


def parse_chunk(lines: pl.DataFrame, reference_year: int, carry_time: datetime | None) -> ChunkResult:
    """Recognise the events in ``lines`` (columns ``line``: Int64, ``raw``: String)."""
    frame = _split_carriage_returns(lines).with_row_index("idx")
    frame = strip_prefixes(frame, "raw")
    frame = frame.with_columns(
        pl.coalesce(
            leading_time(pl.col("body"), reference_year),
            leading_time(pl.col("p_app_time").fill_null(""), reference_year),
        ).alias("lead_time")
    )
    # Forward-fill time over every line, so an untimed event gets its nearest timed neighbour.
    frame = frame.with_columns(
        pl.col("lead_time").forward_fill().alias("near_time"),
        pl.col("lead_time").backward_fill().alias("next_time"),
    )
    if carry_time is not None:
        frame = frame.with_columns(pl.col("near_time").fill_null(pl.lit(carry_time, dtype=pl.Datetime("us"))))
    timed = frame["lead_time"].drop_nulls()
    last_time = timed[-1] if timed.len() else carry_time

    candidates = frame.with_columns(
        pl.col("body").str.extract_many(_triggers(), overlapping=True).alias("kw")
    ).filter(pl.col("kw").list.len() > 0)
    if candidates.height == 0:
        return ChunkResult(_empty_events(), 0, last_time)
    candidates = candidates.with_columns(
        pl.col("kw").list.unique().list.sort().list.join("\x1f").alias("kset")
    )
    classified = _classify(candidates.select("idx", "body", "kset"))
    if classified.height == 0:
        return ChunkResult(_empty_events(), 0, last_time)

    events = classified.join(frame, on="idx", how="left")
    event_time = parse_event_time(pl.col("fields").struct.field("event_time").fill_null(""))
    events = events.with_columns(
        pl.coalesce("lead_time", event_time).alias("exact_time"),
    ).with_columns(
        pl.coalesce("exact_time", "near_time").alias("time"),
        pl.col("exact_time").is_null().alias("time_inferred"),
        pl.coalesce("exact_time", "next_time").alias("time_latest"),
        pl.coalesce("id_host", "p_host").alias("host"),
        pl.coalesce("id_pid", "p_pid").alias("pid"),
        pl.coalesce(
            "p_rank",
            "id_rank",
            pl.when(pl.col("fields").struct.field("pg").is_null() | pl.col("fields").struct.field("pg").is_in(
                ["0", "default_pg"])).then(pl.col("id_pg_rank")),
        ).alias("rank"),
        pl.coalesce("id_local_rank", "p_local_rank").alias("local_rank"),
        pl.col("p_task").alias("task"),
        pl.col("body").str.slice(0, MAX_TEXT).alias("text"),
    )
    # For "Sending process N closing signal" and "failed (exitcode..) local_rank: L (pid: P)" the
    # line is about the worker, not the agent that printed it.
    events = events.with_columns(
        pl.when(pl.col("event").is_in([e.value for e in SUBJECT_IS_TARGET]))
        .then(pl.col("fields").struct.field("target_pid"))
        .otherwise(pl.col("pid"))
        .alias("pid")
    )
    recognised = events["line"].n_unique()
    events = events.sort("idx").select(list(EVENT_COLUMNS))
    return ChunkResult(events.cast(EVENT_COLUMNS), recognised, last_time)  # type: ignore[arg-type]


def _split_carriage_returns(lines: pl.DataFrame) -> pl.DataFrame:
    """Rows with ``\\r`` become one row per non-empty segment, keeping the line number."""
    has_cr = pl.col("raw").str.contains("\r", literal=True).fill_null(False)
    if not lines.select(has_cr.any()).item():
        return lines
    split = (
        lines.filter(has_cr)
        .with_columns(pl.col("raw").str.split("\r"))
        .explode("raw")
        .filter(pl.col("raw").str.strip_chars() != "")
    )
    return pl.concat([lines.filter(~has_cr), split]).sort("line", maintain_order=True)


def _classify(candidates: pl.DataFrame) -> pl.DataFrame:
    """Apply PATTERNS in order; each row gets the first pattern whose regex matches."""
    keysets = candidates["kset"].unique().to_list()
    members = {k: set(k.split("\x1f")) for k in keysets}
    remaining = candidates
    found: list[pl.DataFrame] = []
    for pattern in PATTERNS:
        keys = [k for k, m in members.items() if pattern.trigger in m]
        if not keys or remaining.height == 0:
            continue
        subset = remaining.filter(pl.col("kset").is_in(keys))
        if subset.height == 0:
            continue
        groups = subset.select(
            "idx", pl.col("body").str.extract_groups(_wrapped(pattern.regex)).alias("g")
        ).unnest("g")
        matched = groups.filter(pl.col("__m").is_not_null())
        if matched.height == 0:
            continue
        found.append(_to_event_rows(matched, pattern))
        remaining = remaining.join(matched.select("idx"), on="idx", how="anti")
    if not found:
        return pl.DataFrame(schema={"idx": pl.UInt32})
    return pl.concat(found, how="vertical")


@cache
def _wrapped(regex: str) -> str:
    # Polars' extract_groups gives nulls for a non-matching row; the outer group tells a match
    # from a match whose optional groups were all empty.
    return f"(?P<__m>{regex})"


def _to_event_rows(matched: pl.DataFrame, pattern: LinePattern) -> pl.DataFrame:
    groups = [c for c in matched.columns if c not in ("idx", "__m")]
    by_field: dict[str, list[str]] = {}
    for name in groups:
        by_field.setdefault(name.split("__")[0], []).append(name)

    def merged(name: str) -> pl.Expr:
        return pl.coalesce(*[pl.col(c) for c in by_field[name]]) if name in by_field else pl.lit(None)

    fields: list[pl.Expr] = []
    for name, dtype in FIELD_SCHEMA.items():
        if name == "op_count" and "op_count_hex" in by_field:
            expr = merged("op_count_hex").str.to_integer(base=16, strict=False)
        elif name == "cuda_dev" and "cuda_dev" not in by_field and "dev" in by_field:
            expr = merged("dev").cast(pl.Int64, strict=False)
        elif name in by_field:
            expr = merged(name).cast(dtype, strict=False)
        else:
            expr = pl.lit(None, dtype=dtype)
        fields.append(expr.cast(dtype, strict=False).alias(name))
    if "iteration_time_s" in by_field and "key" in by_field:
        # Megatron prints "elapsed time per iteration (ms): 6707.5"; store seconds.
        fields = [
            (pl.when(merged("key") == "ms").then(merged("iteration_time_s").cast(pl.Float64, strict=False) / 1000)
             .otherwise(merged("iteration_time_s").cast(pl.Float64, strict=False))).alias("iteration_time_s")
            if f.meta.output_name() == "iteration_time_s" else f
            for f in fields
        ]

    def identity(name: str, dtype: pl.DataType) -> pl.Expr:
        return (merged(name).cast(dtype, strict=False) if name in by_field else pl.lit(None, dtype=dtype)).alias(
            f"id_{name}")

    return matched.select(
        "idx",
        pl.lit(pattern.event.value).alias("event"),
        pl.lit(pattern.source).alias("source"),
        pl.lit(pattern.severity.value).alias("severity"),
        identity("host", pl.String()),
        identity("pid", pl.Int64()),
        identity("rank", pl.Int64()),
        identity("pg_rank", pl.Int64()),
        identity("local_rank", pl.Int64()),
        pl.struct(fields).alias("fields"),
    )


def _empty_events() -> pl.DataFrame:
    return pl.DataFrame(schema=EVENT_COLUMNS)


__all__ = ["EVENT_COLUMNS", "ChunkResult", "Event", "parse_chunk"]
