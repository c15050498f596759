"""torchrun's multi-line records folded into one event each.

torchrun writes a ChildFailedError entry, its launch configuration and each rendezvous result as a
header line followed by ``key: value`` (or ``key=value``) lines; the patterns classify each line on
its own (``child_failure``, ``launch_config``, ``rendezvous`` with ``fields.key`` and
``fields.value``), and :func:`assemble_records` folds the lines of a record into one event that
carries the fields of all of them, on its header's line. Records of different nodes interleave in
a shared file: they are kept apart by the writer's srun task and host. The fold is plain Python
over the record lines alone, each read as a tuple of its line, event, key and value (a header's
whole row beside): few in most logs, a third of a crash loop's rows after thinning (~37,000 lines
and ~0.17 s of a 100 MB loop, spent in the read workers, file by file: logscope.ingest.file_events).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl

from logscope.model import FIELD_SCHEMA, Event
from logscope.parsers.timestamps import parse_event_time

KV_EVENTS = (Event.CHILD_FAILURE.value, Event.LAUNCH_CONFIG.value, Event.RENDEZVOUS.value)


def assemble_records(events: pl.DataFrame, apart: Sequence[str] = ()) -> pl.DataFrame:
    """Fold the key/value lines of torchrun's multi-line records into one event per record; the
    columns ``apart`` (a file's key, when the events of several files are folded at once) keep
    records of different values apart. The folded events follow the others."""
    is_kv = pl.col("event").is_in(KV_EVENTS)
    records = events.filter(is_kv)
    if records.height == 0:
        return events
    # A record's lines are read for their key and value only, and its event gets fields of its own
    # (_record_event): the ~40-field struct is left out of what is read (turning it into dicts was
    # half of what folding cost, ~1.4 s in a crash loop's ~100,000 record lines). Each line is read
    # as a tuple (line, event, key, value, its row), not a dict (a dict a line, and the enum's
    # values looked up on each, were two thirds of what was left: ~0.26 s of a 105 MB loop); only a
    # record's header line becomes a whole dict (its columns are the event's).
    said = pl.col("fields").struct
    lines = records.select(pl.exclude("fields"), said.field("key").alias(_KEY), said.field("value").alias(_VALUE))
    # Records interleave between nodes in a shared file; keep them apart by file (``apart``), srun
    # task and host, each group in line order (a file's lines are one event each). Grouped here,
    # not by polars: a group_by, a sort and a conversion per group cost ~0.5 ms a small job.
    keys = [*apart, "task", "host"]
    width = len(keys)
    groups: dict[tuple[object, ...], list[_Line]] = {}
    header_rows: list[int] = []
    for n, values in enumerate(lines.select(*keys, "line", "event", _KEY, _VALUE).iter_rows()):
        line = (values[width], values[width + 1], values[width + 2], values[width + 3], n)
        if _starts_record(line[1], line[2]):
            header_rows.append(n)
        groups.setdefault(values[:width], []).append(line)
    wholes = dict(zip(header_rows, lines[pl.Series(header_rows, dtype=pl.UInt32)].to_dicts(), strict=True))
    built: list[dict[str, object]] = []
    for group in groups.values():
        group.sort(key=_line_of)
        built.extend(_fold(group, wholes))
    rest = events.filter(~is_kv)
    if not built:
        return rest
    folded = pl.DataFrame(built, schema=events.schema)
    # (a query that costs ~1 ms, and most jobs hold no record that states a time)
    if any(row["event"] == _CHILD_FAILURE and row["fields"]["event_time"]  # type: ignore[index]
           for row in built):
        folded = _stated_times(folded)
    return pl.concat([rest, folded], how="vertical")


def _stated_times(records: pl.DataFrame) -> pl.DataFrame:
    """A ChildFailedError record happened at the time it states (``time : ...``), where that
    parses: one query for all records (a query per record cost ~1 ms each)."""
    stated = pl.col("_stated")
    known = (pl.col("event") == Event.CHILD_FAILURE.value) & stated.is_not_null()
    return records.with_columns(
        parse_event_time(pl.col("fields").struct.field("event_time").fill_null("")).alias("_stated"),
    ).with_columns(
        pl.when(known).then(stated).otherwise(pl.col("time")).alias("time"),
        pl.when(known).then(stated).otherwise(pl.col("time_latest")).alias("time_latest"),
        pl.when(known).then(pl.lit(False)).otherwise(pl.col("time_inferred")).alias("time_inferred"),
    ).drop("_stated")


# The key and value a record's line gave (its fields "key" and "value"), beside its other columns.
_KEY, _VALUE = "_record_key", "_record_value"
# A record line as assemble_records reads it: its line number, event, key, value, and its row
# among the record lines (where its whole row is, should it start a record).
_Line = tuple[int, str, str | None, str | None, int]
_CHILD_FAILURE = Event.CHILD_FAILURE.value


def _starts_record(event: str, key: str | None) -> bool:
    """Whether a record line is a record's header: ChildFailedError's ``[0]:`` (its key the
    failure's index), a launch configuration's or rendezvous result's first line (no key)."""
    if event == _CHILD_FAILURE:
        return key is not None and key.isdigit()
    return key is None


def _line_of(line: _Line) -> int:
    return line[0]


def _fold(lines: list[_Line], wholes: dict[int, dict[str, object]]) -> list[dict[str, object]]:
    """The events of one group's record lines, in line order (``wholes``: the whole row of each
    line that starts a record, by its row)."""
    out: list[dict[str, object]] = []
    current: dict[str, object] | None = None
    values: dict[str, str] = {}
    root_next = False
    last_line = -10

    def flush() -> None:
        nonlocal current, values
        if current is not None and values:
            out.append(_record_event(current, values))
        current, values = None, {}

    for line, event, key, value, row in lines:
        gap = line - last_line > 3
        last_line = line
        if event == _CHILD_FAILURE:
            if key == "Root Cause":
                flush()
                root_next = True
                continue
            if key == "Failures" or key is None:
                flush()
                root_next = False
                continue
            if row in wholes:  # a failure's index: its header (_starts_record)
                flush()
                current = dict(wholes[row])  # (its own copy)
                values = {"index": key, "root": "1" if root_next else "0"}
                continue
            if current is None or gap:
                continue
            values[key] = value or ""
            continue
        # launch config / rendezvous: a header line, then "  key: value" or "  key=value" lines
        if row in wholes:  # its header (_starts_record)
            flush()
            current = dict(wholes[row])
            values = {}
            continue
        if current is None or gap or current["event"] != event:
            continue
        assert key is not None  # (a line of these without a key starts a record: _starts_record)
        values[key] = value or ""
    flush()
    return out


def _record_event(header: dict[str, object], values: dict[str, str]) -> dict[str, object]:
    """One event from a record header (a row without its fields, with the key and value its line
    gave) and its key/value lines."""
    fields: dict[str, object] = dict.fromkeys(FIELD_SCHEMA)
    row = {name: value for name, value in header.items() if name not in (_KEY, _VALUE)}
    event = header["event"]
    if event == Event.CHILD_FAILURE.value:
        rank = re.match(r"(-?\d+)(?: \(local_rank: (-?\d+)\))?", values.get("rank", ""))
        code = re.match(r"(-?\d+)(?: \(pid: (\d+)\))?", values.get("exitcode", ""))
        signal = re.search(r"Signal \d+ \((SIG\w+)\)", values.get("traceback", ""))
        fields.update(
            event_time=values.get("time"),
            key="root" if values.get("root") == "1" else "failure",
            exit_code=int(code.group(1)) if code else None,
            target_pid=int(code.group(2)) if code and code.group(2) else None,
            signal=signal.group(1) if signal else None,
            message=values.get("traceback") or None,
            value=values.get("error_file") or None,
        )
        row.update(
            rank=int(rank.group(1)) if rank else None,
            local_rank=int(rank.group(2)) if rank and rank.group(2) else None,
            host=values.get("host") or header.get("host"),
            pid=int(code.group(2)) if code and code.group(2) else None,
        )
        # The record spans several lines; its text says what they say, on its header's line.
        row["text"] = (f"[{values.get('index', '?')}]: ChildFailedError record: time {values.get('time', '?')}, "
                       f"host {values.get('host', '?')}, rank {values.get('rank', '?')}, "
                       f"exitcode {values.get('exitcode', '?')}")
        # its stated time (fields.event_time) is parsed for all records at once: _stated_times
    elif event == Event.LAUNCH_CONFIG.value:
        endpoint = values.get("rdzv_endpoint", "")
        addr, _, port = endpoint.rpartition(":") if ":" in endpoint else (endpoint, "", "")
        fields.update(
            message="launch config",
            rdzv_backend=values.get("rdzv_backend"),
            master_addr=addr or None,
            master_port=int(port) if port.isdigit() else None,
            nnodes=f"{values.get('min_nodes', '?')}:{values.get('max_nodes', '?')}",
            nproc_per_node=_int(values.get("nproc_per_node")),
            # static rendezvous passes the node rank as rdzv_configs {'rank': N}
            node_rank=_int(m.group(1)) if (m := re.search(r"'rank':\s*'?(\d+)", values.get("rdzv_configs", "")))
            else None,
            value=values.get("entrypoint"),
            key=values.get("run_id"),
        )
    else:  # rendezvous result
        fields.update(
            message="rendezvous result",
            master_addr=values.get("master_addr"),
            master_port=_int(values.get("master_port")),
            group_rank=_int(values.get("group_rank")),
            group_world_size=_int(values.get("group_world_size")),
            world_size=_first_int(values.get("global_world_sizes")),
            value=values.get("global_ranks"),
            key=values.get("restart_count"),
        )
    row["fields"] = fields
    return row


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().lstrip("-").isdigit() else None


def _first_int(text: str | None) -> int | None:
    if not text:
        return None
    m = re.search(r"\d+", text)
    return int(m.group(0)) if m else None


__all__ = ["KV_EVENTS", "assemble_records"]
