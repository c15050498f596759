r"""Which pattern each candidate line is, and the event columns its regex groups give.

A candidate line holds one or more pattern triggers (found by :mod:`logscope.parsers.lines`); it is
the event of the first pattern, in table order, whose trigger it holds and whose regex matches it.

Two engines run the same regexes, chosen per pattern by how many lines it is tried on:

* few lines (:data:`FEW_LINES` or fewer, every pattern of a typical job): Python's ``re``. A polars
  query costs a fixed ~0.1-1 ms whatever its rows, and polars keeps only the last 32 regexes it
  compiled (per thread), so a job that meets 60 patterns compiles each of them again on every
  run: in a scan worker, every job. ``re`` compiles a pattern once per process (:func:`_compiled`)
  and matches a handful of lines in microseconds;
* more lines (a COLL-heavy log's NCCL lines): a polars query per pattern, all collected at once;
  a pattern tried on more than :data:`MANY_LINES` (a log of progress lines) runs alone, on the lines
  no earlier pattern claimed.

Python's ``re`` only sees lines of printable ASCII (and tabs): there, the table's syntax means the
same to both engines (leftmost-first alternation, lazy and greedy repeats, ``\d``, ``\w``, ``\s``,
``\b``, ``(?i)``). Beyond ASCII their classes part (``\s`` and the controls ``\x1c``-``\x1f``,
``\b`` next to a letter of another script), so any other line is left to polars, whatever the
count. Both engines get each regex with ``\d`` and ``\w`` as ASCII classes
(:mod:`logscope.parsers.regex_ascii`: Unicode classes cost polars milliseconds to compile).

Both give the same *groups frame*: ``idx``, ``order`` (the pattern's place in the table) and one
String column per field or identity group a pattern fills (alternative spellings ``name__2``
merged, NCCL's ``dev`` read as ``cuda_dev``). One query then turns the groups of every pattern into
event columns (:func:`_event_columns`): the casts, the decoding and the pattern's constants.
tests/test_classify_engines.py holds the engines to the same groups on the shipped samples and
the real-log corpus.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache

import polars as pl

from logscope.knowledge import RECOGNISERS, Message
from logscope.model import FIELD_SCHEMA
from logscope.parsers.regex_ascii import ascii_classes, plain_text

# Rows of one pattern up to which Python's re runs its regex. Measured on the NCCL COLL and the
# exception patterns: Python ~10 us a line (match and groups), polars ~4 us a line plus ~0.5 ms a
# query and ~0.5-1 ms to compile the regex again once evicted; they cost the same near 100-250 lines.
FEW_LINES = 256
# A pattern tried on more lines than this is run on its own, without the lines earlier patterns
# claimed (see classify). Below it, a query per pattern and a filter would cost more than the
# regex runs they save.
MANY_LINES = 4096

# The identity groups that become the event's own columns (``id_<name>``), with their types.
IDENTITY_SCHEMA: dict[str, pl.DataType] = {
    "host": pl.String(),
    "pid": pl.Int64(),
    "rank": pl.Int64(),
    "pg_rank": pl.Int64(),
    "local_rank": pl.Int64(),
}
# Group columns beyond FIELD_SCHEMA and the identities: NCCL's op count in hex, decoded below.
_HEX_OP_COUNT = "op_count_hex"
GROUP_COLUMNS: tuple[str, ...] = (*FIELD_SCHEMA, *IDENTITY_SCHEMA, _HEX_OP_COUNT)


def classify(candidates: pl.DataFrame) -> pl.DataFrame:
    """Each row (``idx``, ``body``, ``kw``: the triggers it holds) gets the first pattern, in table
    order, whose trigger it holds and whose regex matches it: ``idx``, ``event``, ``source``,
    ``severity``, the ``id_*`` identity columns and ``fields``; rows no pattern matches are left out."""
    # One row per (line, trigger it holds), split by trigger in one call: each pattern gets its
    # rows without a filter of its own. A line is tried by every pattern whose trigger it holds,
    # not only until one matches: a few more regex runs on few rows, against a join per pattern
    # to drop the rows already claimed (done for patterns of MANY_LINES only). The earliest
    # matching pattern wins below.
    # (A line's triggers made unique in its list before it is exploded: the same rows as a unique
    # over the exploded pairs, at a third of the cost.)
    by_trigger = (
        candidates.select("idx", "body", pl.col("kw").list.unique(maintain_order=True)).explode("kw")
        .partition_by("kw", as_dict=True, include_key=False)
    )

    def rows_for(pattern: Message) -> pl.DataFrame | None:
        parts = [by_trigger[(t,)] for t in pattern.triggers if (t,) in by_trigger]
        if len(parts) > 1:  # a line holding two of the pattern's triggers is tried once
            return pl.concat(parts).unique("idx", maintain_order=True)
        return parts[0] if parts else None

    few = _FewLines()
    queries = []
    claimed: list[pl.Series] = []  # the lines earlier patterns claimed, as far as already known
    for order, pattern in enumerate(RECOGNISERS):
        rows = rows_for(pattern)
        if rows is None:  # no line holds its trigger: its regex is never compiled
            continue
        if rows.height > MANY_LINES:
            # Lines an earlier pattern claimed cannot be this one's: on a log of hundreds of
            # thousands of progress lines, two progress patterns ("iteration", then "iter") would
            # each run on all of them. Such a pattern runs now, so that later ones know its lines.
            if claimed or few.found:
                taken = pl.concat([*claimed, few.claimed()])
                rows = rows.filter(~pl.col("idx").is_in(taken.implode()))
            matched = _query(order, pattern, rows).collect()
            claimed.append(matched["idx"])
            queries.append(matched.lazy())
            continue
        if rows.height <= FEW_LINES:
            rows = few.match(order, pattern, rows)
        if rows is not None:
            queries.append(_query(order, pattern, rows))
    # The other polars patterns in one call: polars runs the queries side by side.
    found = [frame for frame in [few.frame(), *pl.collect_all(queries)] if frame.height]
    if not found:
        return pl.DataFrame(schema={"idx": pl.UInt32})
    groups = pl.concat(found, how="diagonal").sort("idx", "order").filter(pl.col("idx").is_first_distinct())
    return _event_columns(groups)


def _regex(message: Message) -> str:
    assert message.match is not None  # a recogniser has one
    return message.match


@cache
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(ascii_classes(regex))


@cache
def _groups(regex: str) -> tuple[str, ...]:
    """The named groups of a pattern's regex, in the order they open (the order of the fields of
    polars' extract_groups struct)."""
    index = _compiled(regex).groupindex
    return tuple(sorted(index, key=index.__getitem__))


@cache
def _columns(pattern: Message) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The group columns a pattern fills, each with the groups it is read from, first non-null
    wins: ``name``, ``name__2``, ... are spellings of one field; NCCL's ``dev`` is ``cuda_dev``
    where the pattern has no ``cuda_dev`` of its own."""
    by_column: dict[str, list[str]] = {}
    for name in _groups(_regex(pattern)):
        by_column.setdefault(name.split("__")[0], []).append(name)
    dev = by_column.pop("dev", None)
    if dev is not None and "cuda_dev" not in by_column:
        by_column["cuda_dev"] = dev
    # The op count is read from one group or the other, never both (see _event_columns).
    assert not ("op_count" in by_column and _HEX_OP_COUNT in by_column), _regex(pattern)
    return tuple((column, tuple(names)) for column, names in by_column.items() if column in GROUP_COLUMNS)


@cache
def _values_reader(pattern: Message) -> Callable[[tuple[str | None, ...]], Sequence[str | None]]:
    """The values of a pattern's columns (see :func:`_columns`) from a match's ``groups()``."""
    index = _compiled(_regex(pattern)).groupindex
    numbers = [tuple(index[name] - 1 for name in names) for _, names in _columns(pattern)]
    if all(len(spellings) == 1 for spellings in numbers):  # most patterns: one group per column
        positions = [spellings[0] for spellings in numbers]
        return lambda groups: [groups[n] for n in positions]

    def first_spelling(groups: tuple[str | None, ...]) -> list[str | None]:
        return [next((groups[n] for n in spellings if groups[n] is not None), None) for spellings in numbers]

    return first_spelling


class _FewLines:
    """The groups of the patterns run in Python, kept per pattern and put into one frame at the end."""

    def __init__(self) -> None:
        # per pattern that matched: its order, its columns, and per match (idx, column values)
        self.found: list[tuple[int, tuple[str, ...], list[tuple[object, ...]]]] = []
        self.plain: dict[int, bool] = {}  # by idx: a line is tried by several patterns, checked once

    def match(self, order: int, pattern: Message, rows: pl.DataFrame) -> pl.DataFrame | None:
        """Run ``pattern`` on ``rows`` (``idx``, ``body``); the rows left to polars (not plain
        ASCII), None when there are none."""
        search = _compiled(_regex(pattern)).search
        values_of = _values_reader(pattern)
        plain = self.plain
        matches: list[tuple[object, ...]] = []
        others: list[bool] = []
        for idx, body in zip(rows["idx"].to_list(), rows["body"].to_list(), strict=True):
            is_plain = plain.get(idx)
            if is_plain is None:
                is_plain = plain[idx] = plain_text(body) is not None
            others.append(not is_plain)
            found = search(body) if is_plain else None
            if found is not None:
                matches.append((idx, *values_of(found.groups())))
        if matches:
            self.found.append((order, tuple(column for column, _ in _columns(pattern)), matches))
        return rows.filter(pl.Series(others, dtype=pl.Boolean)) if any(others) else None

    def claimed(self) -> pl.Series:
        """The lines matched so far."""
        return pl.Series("idx", [match[0] for _, _, matches in self.found for match in matches], dtype=pl.UInt32)

    def frame(self) -> pl.DataFrame:
        """The groups frame of every match (columns no matching pattern fills are left out)."""
        names = ["idx", "order", *dict.fromkeys(c for _, columns, _ in self.found for c in columns)]
        data: dict[str, list[object]] = {name: [] for name in names}
        for order, columns, matches in self.found:
            count = len(matches)
            data["order"].extend([order] * count)
            by_position = list(zip(*matches, strict=True))
            data["idx"].extend(by_position[0])
            for column, values in zip(columns, by_position[1:], strict=True):
                data[column].extend(values)
            for name in names[2:]:
                if name not in columns:
                    data[name].extend([None] * count)
        schema: dict[str, pl.DataType] = {name: pl.String() for name in names}
        schema.update(idx=pl.UInt32(), order=pl.UInt32())
        return pl.DataFrame(data, schema=schema)


def _query(order: int, pattern: Message, rows: pl.DataFrame) -> pl.LazyFrame:
    """The groups of a pattern run in polars on many rows."""
    groups = pl.col("g").struct
    return (
        rows.lazy()
        .select("idx", _extract(_regex(pattern)))
        .filter(groups.field("__m").is_not_null())
        .select(
            "idx",
            pl.lit(order, dtype=pl.UInt32).alias("order"),
            *[pl.coalesce([groups.field(name) for name in names]).alias(column) for column, names in _columns(pattern)],
        )
    )


@cache
def _wrapped(regex: str) -> str:
    # Polars' extract_groups gives nulls for a non-matching row; the outer group tells a match
    # from a match whose optional groups were all empty.
    return f"(?P<__m>{ascii_classes(regex)})"


@cache
def _extract(regex: str) -> pl.Expr:
    # Built once: making an extract_groups expression compiles its regex (for the output schema).
    return pl.col("body").str.extract_groups(_wrapped(regex)).alias("g")


@cache
def _pattern_table() -> pl.DataFrame:
    """What each pattern says of its events whatever the line: by ``order``, the event, source,
    severity, constant ``key`` (a catalogue message's id) and whether the line is about the process
    it names (``named``: the catalogue's blame "named") rather than the one that printed it."""
    return pl.DataFrame(
        {
            "order": range(len(RECOGNISERS)),
            "event": [m.event.value for m in RECOGNISERS],
            "source": [m.source for m in RECOGNISERS],
            "severity": [m.severity.value for m in RECOGNISERS],
            "_key": [m.key for m in RECOGNISERS],
            "_id": [m.id for m in RECOGNISERS],
            "named": [m.blame == "named" for m in RECOGNISERS],
        },
        schema={"order": pl.UInt32, "event": pl.String, "source": pl.String, "severity": pl.String,
                "_key": pl.String, "_id": pl.String, "named": pl.Boolean},
    )


def _event_columns(groups: pl.DataFrame) -> pl.DataFrame:
    """The event columns of a groups frame (one row per line, the pattern that claimed it)."""
    present = set(groups.columns)

    def group(name: str, dtype: pl.DataType) -> pl.Expr:
        return pl.col(name).cast(dtype, strict=False) if name in present else pl.lit(None, dtype=dtype)

    def field(name: str, dtype: pl.DataType) -> pl.Expr:
        if name == "op_count":  # NCCL's COLL lines write it in hex
            hex_count = group(_HEX_OP_COUNT, pl.String()).str.to_integer(base=16, strict=False)
            return pl.coalesce(hex_count, group("op_count", pl.Int64())).cast(dtype, strict=False)
        if name == "iteration_time_s":  # Megatron prints "elapsed time per iteration (ms): 6707.5"
            seconds = group(name, pl.Float64())
            return pl.when(group("key", pl.String()) == "ms").then(seconds / 1000).otherwise(seconds).cast(dtype)
        if name == "key":  # a catalogue message's own id beats a group named key
            return pl.coalesce(pl.col("_key"), group(name, pl.String()))
        if name == "message_id":  # the entry that recognised the line
            return pl.col("_id")
        return group(name, dtype)

    return groups.join(_pattern_table(), on="order", how="left", maintain_order="left").select(
        "idx", "event", "source", "severity", "named",
        *[group(name, dtype).alias(f"id_{name}") for name, dtype in IDENTITY_SCHEMA.items()],
        pl.struct([field(name, dtype).alias(name) for name, dtype in FIELD_SCHEMA.items()]).alias("fields"),
    )


__all__ = ["FEW_LINES", "classify"]
