"""Flight Recorder dumps as timeline rows, on the logs' clock.

Events of source ``fr`` (:class:`logscope.model.Event`):

* ``fr_entry``: an entry of a dump's ring buffer; ``file`` the dump, ``line`` the entry's place
  in it (1 the oldest). Every entry still in flight, and the last 64 of each group
  (:data:`logscope.flight_recorder.reading.KEEP_PER_GROUP`): 64 ranks' buffers of 2000 are 128,000
  entries, most of them completed long before; their count is the ``fr_dump`` row's, their
  progress the group's counters. ``fields``: ``pg`` the group's name, ``pg_desc`` its description,
  ``comm`` the process's own id of the group (``pg_id``), ``seq`` the collective sequence id,
  ``p2p_seq`` a p2p operation's own one (null for a collective), ``op`` the operation
  (``all_reduce``, ``send 3->2``), ``value`` the tensors' sizes and dtypes in and out, ``state``,
  ``duration_ms``, ``timeout_ms``, ``transport`` the backend (``nccl``, ``gloo``: the profiling
  name's prefix), ``message`` the first frame of the caller outside torch
  (``train.py:42 in step``), ``version`` the dump's format;
* ``fr_group``: one per process group a dump holds (line 0): ``pg``, ``pg_desc``, ``nranks`` and
  ``value`` its members (``[0, 1, 2, 3]``; null when the dump does not say: torch 2.14's gloo
  writes an empty ``pg_config``), ``comm`` the process's id of it, ``last_enqueued`` and
  ``last_completed`` its counters from ``pg_status`` (null when the dump's id of the group is not
  known), ``key`` how that id was tied to the group (``entries``: an entry names both;
  ``creation order``: the groups' numeric names and the process's ids sorted together, a rule
  every dump of the job that could check it against its entries confirms);
* ``fr_dump``: one per dump (line 0): ``version``, ``value`` the library's version, ``count`` its
  entries, ``key`` its format (pickle, json), ``reason`` how its times were put on the logs'
  clock, ``message`` how its rank was known (the file name, the groups).

``rank`` is the dump's rank; ``node``, ``host`` and ``local_rank`` come from the logs' own rank map
(the rows that name both a rank and where it ran).

Times. PyTorch stamps entries in UTC nanoseconds (``c10::getTime``, the system clock); log lines
carry local times. The dumps are put on the logs' clock by, in order: a watchdog timeout line
naming a rank and a ``SeqNum`` the rank's dump holds (the line is written when the collective's
``timeout_ms`` has run out since it was created: the offset is the line's time less the entry's
creation and timeout; the median over such lines); else the time zone (a whole quarter hour)
that puts the dumps' newest in-flight collective's timeout nearest the logs' first error line, or
their last line; else none (the times stay UTC, as when there are no logs). The alignment used is
written on every ``fr_dump`` row and shown with the Flight Recorder table.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from logscope.flight_recorder.dump import ENTRY_COLUMNS, Dump
from logscope.model import FIELD_SCHEMA, TIMELINE_SCHEMA, Event, Severity

SOURCE = "fr"
ENTRY_SCHEMA: dict[str, pl.DataType] = {
    "index": pl.Int64(), "record_id": pl.Int64(), "pg_id": pl.Int64(), "pg": pl.String(), "pg_desc": pl.String(),
    "seq": pl.Int64(), "p2p_seq": pl.Int64(), "op_id": pl.Int64(), "op": pl.String(), "created_ns": pl.Int64(),
    "duration_ms": pl.Float64(), "state": pl.String(), "started_ns": pl.Int64(), "completed_ns": pl.Int64(),
    "retired": pl.Boolean(), "timeout_ms": pl.Int64(), "is_p2p": pl.Boolean(), "shape": pl.String(),
    "frame": pl.String(), "thread": pl.String(),
}
assert tuple(ENTRY_SCHEMA) == ENTRY_COLUMNS
_EPOCH = datetime(1970, 1, 1)
QUARTER_HOUR_NS = 15 * 60 * 1_000_000_000
MAX_ZONE_NS = 14 * 60 * 60 * 1_000_000_000


def entry_frame(dump: Dump) -> pl.DataFrame:
    """A dump's entries as a frame (:data:`ENTRY_SCHEMA` with ``file`` and ``rank``): those the
    reader kept (every entry still in flight, and of each group the last
    :data:`~logscope.flight_recorder.reading.KEEP_PER_GROUP`)."""
    frame = pl.DataFrame(dump.entries or {name: [] for name in ENTRY_COLUMNS}, schema=ENTRY_SCHEMA)
    return frame.with_columns(pl.lit(dump.file).alias("file"), pl.lit(dump.rank, dtype=pl.Int64).alias("rank"))


@dataclass(frozen=True)
class GroupRow:
    """One group of one dump, with its counters when the dump's id of it is known."""

    name: str
    desc: str
    ranks: tuple[int, ...] | None
    pg_id: int | None
    tied_by: str | None
    last_enqueued: int | None
    last_completed: int | None


def _ids_from_entries(dump: Dump, entries: pl.DataFrame) -> dict[int, str]:
    pairs = entries.select("pg_id", "pg").drop_nulls().unique()
    names: dict[int, set[str]] = {}
    for pg_id, name in pairs.iter_rows():
        names.setdefault(int(pg_id), set()).add(str(name))
    return {pg_id: next(iter(n)) for pg_id, n in names.items() if len(n) == 1}


def _by_creation_order(dump: Dump) -> dict[int, str] | None:
    """The process's group ids tied to the groups' names by sorting both, where the names are
    PyTorch's counters (decimal) and there are as many of each."""
    names = [g.name for g in dump.groups]
    ids = [s.pg_id for s in dump.status]
    if not names or len(names) != len(ids) or not all(n.isdecimal() for n in names) or len(set(names)) != len(names):
        return None
    return dict(zip(sorted(ids), sorted(names, key=int), strict=True))


def group_rows(dumps: Sequence[Dump], frames: Sequence[pl.DataFrame]) -> list[list[GroupRow]]:
    """Each dump's groups, their counters tied to them (see the module docstring)."""
    from_entries = [_ids_from_entries(d, e) for d, e in zip(dumps, frames, strict=True)]
    by_order = [_by_creation_order(d) for d in dumps]
    checked = [order is not None and bool(known) and all(order.get(i) == n for i, n in known.items())
               for order, known in zip(by_order, from_entries, strict=True)]
    contradicted = any(order is not None and known and not ok
                       for order, known, ok in zip(by_order, from_entries, checked, strict=True))
    order_holds = any(checked) and not contradicted
    out = []
    for dump, entries, known, order in zip(dumps, frames, from_entries, by_order, strict=True):
        ids = dict(known)
        how = dict.fromkeys(known, "entries")
        if order_holds and order is not None:
            for pg_id, name in order.items():
                if pg_id not in ids:
                    ids[pg_id], how[pg_id] = name, "creation order"
        status = {s.pg_id: s for s in dump.status}
        by_name = {name: pg_id for pg_id, name in ids.items()}
        rows = []
        seen = set()
        named_groups: list[tuple[str, str, tuple[int, ...] | None]] = [
            (g.name, g.desc, g.ranks) for g in dump.groups if g.name]
        descs = dict(entries.select("pg", "pg_desc").unique(subset="pg", keep="first").iter_rows())
        named_groups += [(name, descs.get(name, ""), None) for name in sorted(set(ids.values()) | set(descs))
                         if name not in {g[0] for g in named_groups}]
        for name, desc, ranks in named_groups:
            if name in seen:
                continue
            seen.add(name)
            group_id = by_name.get(name)
            counters = status.get(group_id) if group_id is not None else None
            rows.append(GroupRow(name, desc, tuple(ranks) if ranks else None, group_id,
                                 how.get(group_id) if group_id is not None else None,
                                 counters.last_enqueued if counters else None,
                                 counters.last_completed if counters else None))
        out.append(rows)
    return out


@dataclass(frozen=True)
class Alignment:
    """How FR's UTC nanoseconds map onto the logs' clock: add ``offset_ns``; ``how`` says why."""

    offset_ns: int
    how: str


def align(timeline: pl.DataFrame, entries: pl.DataFrame) -> Alignment:
    """See the module docstring."""
    anchors = _watchdog_offsets(timeline, entries)
    if anchors:
        offset = int(statistics.median(anchors))
        return Alignment(offset, f"aligned on {len(anchors)} watchdog timeout line(s) naming a rank and SeqNum of "
                                 f"the dumps (the logs' clock is {_signed(offset)} from the dumps' UTC)")
    zone = _zone_offset(timeline, entries)
    if zone is not None:
        return Alignment(zone, f"aligned by time zone: the logs' clock taken as UTC{_zone_text(zone)} (no watchdog "
                               "line names a collective of the dumps)")
    return Alignment(0, "not aligned: the logs have no time to align to; Flight Recorder times are UTC")


def _watchdog_offsets(timeline: pl.DataFrame, entries: pl.DataFrame) -> list[int]:
    said = pl.col("fields").struct
    timed = ~pl.col("time_inferred").fill_null(True)
    lines = (timeline.filter((pl.col("event") == Event.WATCHDOG_TIMEOUT.value) & timed
                             & pl.col("rank").is_not_null() & said.field("seq").is_not_null())
             .select("rank", "time", said.field("seq").alias("seq"), said.field("pg").alias("pg_text"),
                     said.field("timeout_ms").alias("line_timeout")))
    if lines.height == 0 or entries.height == 0:
        return []
    collectives = entries.filter(~pl.col("is_p2p")).select("rank", "seq", "pg_id", "created_ns", "timeout_ms")
    matched = lines.join(collectives, on=["rank", "seq"], how="inner")
    # the line's PG ID is the process's id of the group (c10d's log prefix); its timeout the entry's
    matched = matched.filter((pl.col("pg_text").is_null() | (pl.col("pg_text") == pl.col("pg_id").cast(pl.String)))
                             & (pl.col("line_timeout").is_null() | (pl.col("line_timeout") == pl.col("timeout_ms"))))
    # one entry per line, else the line is ambiguous
    matched = matched.filter(pl.len().over("rank", "seq", "time") == 1)
    out = []
    for time, created, timeout in matched.select("time", "created_ns", "timeout_ms").iter_rows():
        out.append(_naive_ns(time) - (int(created) + int(timeout or 0) * 1_000_000))
    return out


def _naive_ns(value: Any) -> int:
    """A naive datetime's nanoseconds since 1970 as if it were UTC."""
    delta: timedelta = value - _EPOCH
    return int((delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000)


def _zone_offset(timeline: pl.DataFrame, entries: pl.DataFrame) -> int | None:
    timed = timeline.filter(~pl.col("time_inferred").fill_null(True) & pl.col("time").is_not_null())
    if timed.height == 0 or entries.height == 0:
        return None
    errors = timed.filter(pl.col("severity").is_in([Severity.ERROR.value, Severity.CRITICAL.value]))
    target = errors["time"].min() if errors.height else timed["time"].max()
    in_flight = entries.filter(pl.col("completed_ns").is_null() & pl.col("state").ne("completed").fill_null(True))
    pick = in_flight if in_flight.height else entries
    newest = pick.sort("created_ns").tail(1)
    created = int(newest["created_ns"][0])
    timeout = int(newest["timeout_ms"][0] or 0) if in_flight.height else 0
    difference = _naive_ns(target) - (created + timeout * 1_000_000)
    offset = round(difference / QUARTER_HOUR_NS) * QUARTER_HOUR_NS
    return offset if abs(offset) <= MAX_ZONE_NS else None


def _signed(offset_ns: int) -> str:
    seconds = offset_ns / 1e9
    return f"{'+' if seconds >= 0 else '-'}{abs(seconds):.1f} s"


def _zone_text(offset_ns: int) -> str:
    minutes = round(offset_ns / 60e9)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def rank_places(timeline: pl.DataFrame) -> pl.DataFrame:
    """rank -> node, host, local_rank, as the logs' rows that name a rank say (the most frequent)."""
    named = timeline.filter(pl.col("rank").is_not_null() & pl.col("event").ne(Event.FR_ENTRY.value)).select(
        "rank", "node", "host", "local_rank")
    if named.height == 0:
        return pl.DataFrame(schema={"rank": pl.Int64, "node": pl.String, "host": pl.String, "local_rank": pl.Int64})
    return named.group_by("rank").agg(pl.col("node").drop_nulls().mode().first(),
                                      pl.col("host").drop_nulls().mode().first(),
                                      pl.col("local_rank").drop_nulls().mode().first())


def timeline_rows(dumps: Sequence[Dump], entries: Sequence[pl.DataFrame], groups: Sequence[Sequence[GroupRow]],
                  alignment: Alignment, places: pl.DataFrame) -> pl.DataFrame:
    """The dumps' rows in :data:`TIMELINE_SCHEMA` (see the module docstring)."""
    offset = alignment.offset_ns
    all_entries = pl.concat(list(entries), how="vertical") if entries else entry_frame_empty()
    version = {d.file: d.version for d in dumps}
    when = (pl.from_epoch(pl.col("created_ns") + offset, time_unit="ns").cast(pl.Datetime("us")))
    op_name = pl.col("op").str.replace(r"^[^:]*:", "")
    text = pl.concat_str(
        pl.lit("Flight Recorder rank "), pl.col("rank").cast(pl.String), pl.lit(": "),
        pl.col("pg_desc").fill_null(""), pl.lit(" (pg "), pl.col("pg"), pl.lit(") "),
        pl.when(pl.col("is_p2p")).then(pl.concat_str(pl.lit("p2p #"), pl.col("p2p_seq").cast(pl.String).fill_null("?")))
        .otherwise(pl.concat_str(pl.lit("collective #"), pl.col("seq").cast(pl.String))),
        pl.lit(" "), pl.col("op"), pl.lit(" "), pl.col("state").fill_null("?"), pl.lit(", "), pl.col("shape"),
        pl.when(pl.col("frame").is_not_null()).then(pl.concat_str(pl.lit(", from "), pl.col("frame")))
        .otherwise(pl.lit("")))
    fields = {name: pl.lit(None, dtype=dtype) for name, dtype in FIELD_SCHEMA.items()}
    fields.update(pg=pl.col("pg"), pg_desc=pl.col("pg_desc"), comm=pl.col("pg_id").cast(pl.String),
                  seq=pl.col("seq"), p2p_seq=pl.col("p2p_seq"), op=op_name, value=pl.col("shape"),
                  transport=pl.col("op").str.extract(r"^([^:]*):", 1),
                  state=pl.col("state"), duration_ms=pl.col("duration_ms"), timeout_ms=pl.col("timeout_ms"),
                  message=pl.col("frame"),
                  version=pl.col("file").replace_strict(version, default=None, return_dtype=pl.String))
    entry_rows = all_entries.select(
        "file", pl.col("index").alias("line"), "rank", when.alias("time"),
        pl.struct([expr.alias(name) for name, expr in fields.items()]).alias("fields"), text.alias("text"))
    entry_rows = _timeline_shape(entry_rows, Event.FR_ENTRY, places)

    extra: list[dict[str, Any]] = []
    for dump, rows in zip(dumps, groups, strict=True):
        newest = dump.latest_ns
        at = _datetime(newest + offset) if newest is not None else None
        for group in rows:
            members = "[" + ", ".join(str(r) for r in group.ranks) + "]" if group.ranks else None
            counters = (f"last enqueued #{group.last_enqueued}, last completed #{group.last_completed}"
                        if group.last_enqueued is not None else "its counters not tied to it")
            extra.append(_row(dump, at, Event.FR_GROUP, {
                "pg": group.name, "pg_desc": group.desc, "nranks": len(group.ranks) if group.ranks else None,
                "value": members, "comm": str(group.pg_id) if group.pg_id is not None else None,
                "last_enqueued": group.last_enqueued, "last_completed": group.last_completed, "key": group.tied_by,
                "version": dump.version},
                f"Flight Recorder rank {dump.rank}: group {group.desc or '?'} (pg {group.name}) members "
                f"{members or 'not stated'}: {counters}"))
        library = f", communication library {dump.comm_lib_version}" if dump.comm_lib_version else ""
        extra.append(_row(dump, at, Event.FR_DUMP, {
            "version": dump.version, "value": dump.comm_lib_version, "count": dump.entry_count, "key": dump.format,
            "reason": alignment.how, "message": "its name" if dump.rank_from == "name" else "its groups"},
            f"Flight Recorder dump of rank {dump.rank} ({dump.format}, format {dump.version}, {dump.entry_count} "
            f"entries{library})" + (f"; {dump.dropped} malformed entries left out" if dump.dropped else "")))
    other = (pl.DataFrame(extra, schema={**TIMELINE_SCHEMA}, orient="row") if extra
             else pl.DataFrame(schema=TIMELINE_SCHEMA))
    other = _placed(other.drop("node", "host", "local_rank"), places).select(list(TIMELINE_SCHEMA))
    return pl.concat([entry_rows, other], how="vertical")


def _datetime(ns: int) -> Any:
    return _EPOCH + timedelta(microseconds=ns // 1000)


def _row(dump: Dump, at: Any, event: Event, values: dict[str, Any], text: str) -> dict[str, Any]:
    fields: dict[str, Any] = dict.fromkeys(FIELD_SCHEMA)
    fields.update(values)
    return {"file": dump.file, "line": 0, "node": None, "host": None, "pid": None, "local_rank": None,
            "rank": dump.rank, "task": None, "time": at, "time_inferred": False, "time_latest": at,
            "source": SOURCE, "event": event.value, "severity": Severity.INFO.value, "fields": fields,
            "prefix": "", "text": text}


def entry_frame_empty() -> pl.DataFrame:
    return pl.DataFrame(schema={**ENTRY_SCHEMA, "file": pl.String(), "rank": pl.Int64()})


def _placed(rows: pl.DataFrame, places: pl.DataFrame) -> pl.DataFrame:
    return rows.join(places, on="rank", how="left", maintain_order="left")


def _timeline_shape(rows: pl.DataFrame, event: Event, places: pl.DataFrame) -> pl.DataFrame:
    rows = _placed(rows, places)
    return rows.select(
        "file", "line", "node", "host", pl.lit(None, dtype=pl.Int64).alias("pid"), "local_rank", "rank",
        pl.lit(None, dtype=pl.Int64).alias("task"), "time", pl.lit(False).alias("time_inferred"),
        pl.col("time").alias("time_latest"), pl.lit(SOURCE).alias("source"), pl.lit(event.value).alias("event"),
        pl.lit(Severity.INFO.value).alias("severity"), "fields", pl.lit("").alias("prefix"), "text",
    ).cast(TIMELINE_SCHEMA)  # type: ignore[arg-type]


__all__ = ["SOURCE", "Alignment", "GroupRow", "align", "entry_frame", "group_rows", "rank_places", "timeline_rows"]
