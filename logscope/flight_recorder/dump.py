"""One Flight Recorder dump, read into plain typed columns, whatever its version and format.

PyTorch's Flight Recorder (``torch/csrc/distributed/c10d/FlightRecorder.hpp`` and
``FlightRecorderDetail.hpp``) dumps a dict: ``version`` (``"2.3"`` ... ``"2.10"``), ``pg_config``
(group name -> ``name``, ``desc``, ``ranks`` written as the text ``"[0, 1]"``), ``pg_status``
(the process's own group id -> ``last_enqueued_collective``, ``last_started_collective``,
``last_completed_collective``), the communication library's version (``nccl_version``, from 2.10
``comm_lib_version``) and ``entries``, the ring buffer oldest first: each collective or p2p
operation with its group (``process_group``: name and description), ``collective_seq_id``,
``p2p_seq_id``, ``op_id``, ``profiling_name`` (``nccl:all_reduce``), tensor sizes and dtypes,
``state`` (scheduled, started, completed), ``time_created_ns`` (UTC nanoseconds),
``duration_ms`` (with timing on), ``timeout_ms``, ``is_p2p``, the Python ``frames`` (with stack
traces on) and, from 2.8, the thread. The JSON form (``_dump_fr_trace_json``) writes the same keys,
the group as a list, ``pg_status`` numbers as text and an unknown time as 0; it leaves ``entries``
out when there are none.

The dump does not say which rank wrote it: the rank comes from the file's name (PyTorch names it
``<prefix><rank>``), else from the one rank every group of the dump holds.

Only the paths named above are read, each value checked for its type and bounded (entries,
groups, tensors, frames, text), so a crafted structure (deep, aliased, huge) costs no more than
its bounds. An entry that is not what the format says is dropped and counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_ENTRIES = 200_000
MAX_GROUPS = 100_000
MAX_TENSORS = 32
MAX_DIMS = 16
MAX_FRAMES = 64
MAX_TEXT = 256

# Columns of an entry, in this order; see Dump.entries.
ENTRY_COLUMNS = ("index", "record_id", "pg_id", "pg", "pg_desc", "seq", "p2p_seq", "op_id", "op", "created_ns",
                 "duration_ms", "state", "started_ns", "completed_ns", "retired", "timeout_ms", "is_p2p",
                 "shape", "frame", "thread")


class NotADump(ValueError):
    """The data is not a Flight Recorder dump: the reason says why."""


@dataclass(frozen=True)
class Group:
    """A process group as one dump's ``pg_config`` states it."""

    name: str
    desc: str
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class Status:
    """One group's counters as a dump's ``pg_status`` states them, keyed by the process's own
    group id (``pg_id``), which only the entries tie to a group name."""

    pg_id: int
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None


@dataclass
class Dump:
    """A dump read: where it came from, whose it is, and its content as columns."""

    file: str
    rank: int | None
    rank_from: str  # "name", "groups" or "" (unknown)
    format: str  # "pickle" or "json"
    version: str
    comm_lib_version: str | None
    groups: list[Group]
    status: list[Status]
    # ENTRY_COLUMNS -> one value per entry, oldest first; ``index`` is the entry's 1-based place
    # in the dump's list (the "line" evidence cites)
    entries: dict[str, list[Any]] = field(default_factory=dict)
    dropped: int = 0  # entries that were not what the format says
    size: int = 0
    # how many entries were read, and the newest one's creation time (UTC nanoseconds): kept when
    # the columns are handed over and dropped (logscope.flight_recorder.reading)
    entry_count: int = 0
    latest_ns: int | None = None


_RANK_IN_NAME = re.compile(r"(\d+)(?:\.json|\.pkl|\.pickle)?$")
_INT_TEXT = re.compile(r"-?\d+")


def rank_from_name(name: str) -> int | None:
    """The rank PyTorch appended to the dump's prefix (``nccl_trace_rank_3``, ``_dump_15``,
    ``trace_0.json``)."""
    m = _RANK_IN_NAME.search(name)
    return int(m.group(1)) if m else None


def read_dump(data: Any, *, file: str, name: str, fmt: str, size: int = 0,
              keep_per_group: int | None = None) -> Dump:
    """The dump ``data`` (what :mod:`logscope.flight_recorder.safe_load` loaded) as a
    :class:`Dump`; :class:`NotADump` when it is not one. With ``keep_per_group``, the columns hold
    the entries still in flight and each group's last ``keep_per_group`` (``entry_count`` counts
    them all)."""
    if not isinstance(data, dict):
        raise NotADump("not a Flight Recorder dump (not a dict)")
    version = data.get("version")
    if not isinstance(version, str) or not ("pg_config" in data or "entries" in data):
        raise NotADump("not a Flight Recorder dump (no version, pg_config or entries)")
    groups = _groups(data.get("pg_config"))
    status = _status(data.get("pg_status"))
    library = data.get("comm_lib_version", data.get("nccl_version"))
    rank, rank_from = rank_from_name(name), "name"
    if rank is None:
        rank, rank_from = _rank_from_groups(groups), "groups"
    if rank is None:
        rank_from = ""
    dump = Dump(file=file, rank=rank, rank_from=rank_from, format=fmt, version=version[:16],
                comm_lib_version=_text(library) if isinstance(library, str) and library else None,
                groups=groups, status=status, size=size)
    raw = data.get("entries", [])
    if not isinstance(raw, list):
        raise NotADump("not a Flight Recorder dump (entries is not a list)")
    dump.entries, dump.dropped, dump.entry_count = _entries(raw[:MAX_ENTRIES], keep_per_group)
    dump.dropped += max(0, len(raw) - MAX_ENTRIES)
    dump.latest_ns = max(dump.entries["created_ns"], default=None)
    return dump


def _text(value: str) -> str:
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT]


def _int(value: Any) -> int | None:
    """An integer from a pickle's int or a JSON dump's text ("12"); None otherwise."""
    if type(value) is int:
        return value
    if isinstance(value, str) and len(value) <= 24 and _INT_TEXT.fullmatch(value.strip()):
        return int(value)
    return None


def _groups(config: Any) -> list[Group]:
    if not isinstance(config, dict):
        return []
    out = []
    for key, info in list(config.items())[:MAX_GROUPS]:
        if not isinstance(info, dict):
            continue
        name = info.get("name", key)
        desc = info.get("desc", "")
        ranks = info.get("ranks", "")
        if isinstance(ranks, list):  # a writer that kept the list
            members = tuple(r for r in ranks[:1_000_000] if isinstance(r, int) and not isinstance(r, bool))
        elif isinstance(ranks, str):
            members = tuple(int(r) for r in _INT_TEXT.findall(ranks[:16_000_000]))
        else:
            members = ()
        out.append(Group(_text(name) if isinstance(name, str) else str(key)[:MAX_TEXT],
                         _text(desc) if isinstance(desc, str) else "", members))
    return out


def _status(status: Any) -> list[Status]:
    if not isinstance(status, dict):
        return []
    out = []
    for key, counters in list(status.items())[:MAX_GROUPS]:
        pg_id = _int(key)
        if pg_id is None or not isinstance(counters, dict):
            continue
        out.append(Status(pg_id, _int(counters.get("last_enqueued_collective")),
                          _int(counters.get("last_started_collective")),
                          _int(counters.get("last_completed_collective"))))
    return out


def _rank_from_groups(groups: list[Group]) -> int | None:
    """The one rank that every group of the dump holds (a process is in each group it records),
    when exactly one is."""
    common: set[int] | None = None
    for group in groups:
        if group.ranks:
            common = set(group.ranks) if common is None else common & set(group.ranks)
    return next(iter(common)) if common is not None and len(common) == 1 else None


def _entries(raw: list[Any], keep_per_group: int | None) -> tuple[dict[str, list[Any]], int, int]:
    """The entries as columns, how many were dropped and how many read. Column by column (one
    comprehension each: a dump of 2000 entries is ~40,000 values): a column of the expected type
    passes whole; a value that is not what the format says is checked alone, and an entry missing
    its group, sequence id, creation time or name is dropped. With ``keep_per_group``, only the
    entries still in flight and each group's last ``keep_per_group`` are made columns."""
    places = [n for n, e in enumerate(raw, start=1) if type(e) is dict]
    entries: list[dict[str, Any]] = [raw[n - 1] for n in places]
    read = len(entries)
    if keep_per_group is not None and read > keep_per_group:
        places, entries = _kept(places, entries, keep_per_group)

    def column(key: str) -> list[Any]:
        return [e.get(key) for e in entries]

    groups = column("process_group")
    pgs = [g[0] if type(g) in (tuple, list) and len(g) >= 2 and type(g[0]) is str and type(g[1]) is str
           else (g if type(g) is str else None) for g in groups]
    descs = [g[1] if type(g) in (tuple, list) and len(g) >= 2 and type(g[1]) is str else "" for g in groups]
    seqs = _ints([e.get("collective_seq_id", e.get("seq_id")) for e in entries])
    created = _ints(column("time_created_ns"))
    ops = _texts(column("profiling_name"))
    keep = [pg is not None and seq is not None and made is not None and op is not None
            for pg, seq, made, op in zip(pgs, seqs, created, ops, strict=True)]
    flags = column("is_p2p")
    p2p = [flag if type(flag) is bool else (op is not None and _looks_p2p(op)) for flag, op in zip(flags, ops,
                                                                                                    strict=True)]
    p2p_seqs = [value if is_p2p else None for value, is_p2p in zip(_ints(column("p2p_seq_id")), p2p, strict=True)]
    durations = [float(d) if type(d) in (float, int) else None for d in column("duration_ms")]
    retired = [r if type(r) is bool else None for r in column("retired")]
    frames_seen: dict[tuple[int, ...], str | None] = {}
    columns: dict[str, list[Any]] = {
        "index": places, "record_id": _ints(column("record_id")), "pg_id": _ints(column("pg_id")),
        "pg": _capped(pgs), "pg_desc": _capped(descs), "seq": seqs, "p2p_seq": p2p_seqs,
        "op_id": _ints(column("op_id")),
        "op": ops, "created_ns": created, "duration_ms": durations, "state": _texts(column("state")),
        "started_ns": _times(column("time_discovered_started_ns")),
        "completed_ns": _times(column("time_discovered_completed_ns")), "retired": retired,
        "timeout_ms": _ints(column("timeout_ms")), "is_p2p": p2p, "shape": [_shape(e) for e in entries],
        "frame": [_frame(e.get("frames"), frames_seen) for e in entries], "thread": _texts(column("thread_name")),
    }
    dropped = len(raw) - read
    if not all(keep):
        columns = {name: [v for v, k in zip(values, keep, strict=True) if k] for name, values in columns.items()}
        dropped += keep.count(False)
        read -= keep.count(False)
    return columns, dropped, read


def _kept(places: list[int], entries: list[dict[str, Any]], per_group: int) -> tuple[list[int], list[dict[str, Any]]]:
    """The entries still in flight (neither completed nor retired), and each group's last
    ``per_group`` (oldest first, as in the dump); the other entries completed long before, and
    the group's counters say how far they went."""
    names = [g[0] if type(g) in (tuple, list) and g and type(g[0]) is str else g if type(g) is str else None
             for g in (e.get("process_group") for e in entries)]
    seen: dict[Any, int] = {}
    last = [False] * len(entries)
    for at in range(len(entries) - 1, -1, -1):  # newest first
        name = names[at]
        count = seen.get(name, 0)
        if count < per_group:
            last[at] = True
            seen[name] = count + 1
    keep = [latest or (e.get("state") != "completed" and e.get("retired") is not True)
            for latest, e in zip(last, entries, strict=True)]
    return ([p for p, k in zip(places, keep, strict=True) if k], [e for e, k in zip(entries, keep, strict=True) if k])


def _ints(values: list[Any]) -> list[int | None]:
    if all(type(v) is int for v in values):
        return values
    return [_int(v) for v in values]


def _texts(values: list[Any]) -> list[str | None]:
    """Texts, each at most MAX_TEXT characters; None for what is no text."""
    if all(type(v) is str for v in values) and max(map(len, values), default=0) <= MAX_TEXT:
        return values
    return [v[:MAX_TEXT] if type(v) is str else None for v in values]


def _capped(values: list[Any]) -> list[Any]:
    if max((len(v) for v in values if type(v) is str), default=0) <= MAX_TEXT:
        return values
    return [v[:MAX_TEXT] if type(v) is str else v for v in values]


def _times(values: list[Any]) -> list[int | None]:
    return [v if type(v) is int and v else _time_or_none(v) if v is not None else None for v in values]


def _frame(frames: Any, seen: dict[tuple[int, ...], str | None]) -> str | None:
    """The caller's frame of an entry's stack (PyTorch's pickler writes each frame once and refers
    back to it: the answer is remembered per frame list)."""
    if type(frames) is not list:
        return None
    key = tuple(map(id, frames[:MAX_FRAMES]))
    if key not in seen:
        seen[key] = _user_frame(frames)
    return seen[key]


def _time_or_none(value: Any) -> int | None:
    number = value if type(value) is int else _int(value)
    return number if number else None  # the JSON form writes 0 for "not yet"


def _looks_p2p(op: str) -> bool:
    name = op.split(":", 1)[-1]
    return name.startswith(("send", "recv", "_send", "_recv"))


def _sizes(value: Any) -> str:
    """``[[4096, 1, 5120]]``: a list of tensors' sizes, written as Python writes it, when it is
    one (a few tensors of a few numeric dimensions); ``?`` otherwise."""
    if type(value) not in (list, tuple) or len(value) > MAX_TENSORS:
        return "?"
    try:
        for tensor in value:
            if type(tensor) not in (list, tuple) or len(tensor) > MAX_DIMS:
                return "?"
            sum(tensor)  # numbers only (in C): no container, no text, nothing aliased can hide in it
        return str([list(t) for t in value]) if type(value) is tuple or tuple in map(type, value) else str(value)
    except (TypeError, ValueError, OverflowError):
        return "?"


def _dtypes(value: Any) -> str:
    if type(value) not in (list, tuple) or len(value) > MAX_TENSORS:
        return "?"
    try:
        return ",".join(value) or "-" if max(map(len, value), default=0) <= MAX_TEXT else "?"
    except TypeError:
        return "?"


def _shape(entry: dict[str, Any]) -> str:
    """Sizes and dtypes in and out, as one comparable text: ``[[4, 8]] Float -> [[4, 8]] Float``."""
    get = entry.get
    ins, outs, in_types, out_types = get("input_sizes"), get("output_sizes"), get("input_dtypes"), get("output_dtypes")
    # the usual entry: one tensor in, one out, a few integer dimensions, one dtype each
    if (type(ins) is list and len(ins) == 1 and type(outs) is list and len(outs) == 1
            and type(ins[0]) is list and type(outs[0]) is list and len(ins[0]) <= MAX_DIMS and len(outs[0]) <= MAX_DIMS
            and type(in_types) is list and len(in_types) == 1 and type(out_types) is list and len(out_types) == 1
            and type(in_types[0]) is str and type(out_types[0]) is str
            and len(in_types[0]) <= MAX_TEXT and len(out_types[0]) <= MAX_TEXT):
        try:
            sum(ins[0])  # numbers only (in C): no container, no text, nothing aliased can hide in it
            sum(outs[0])
            return f"{ins} {in_types[0]} -> {outs} {out_types[0]}"
        except (TypeError, ValueError, OverflowError):
            return "? -> ?"
    return f"{_sizes(ins)} {_dtypes(in_types)} -> {_sizes(outs)} {_dtypes(out_types)}"


_LIBRARY_FRAME = re.compile(r"(?:^|/)(?:torch|site-packages|dist-packages)/|^<frozen |^<string>")


def _user_frame(frames: list[Any]) -> str | None:
    """The innermost frame outside torch and installed packages (``train.py:42 in step``), else
    the innermost frame."""
    first = None
    for frame in frames[:MAX_FRAMES]:
        if type(frame) is not dict:
            continue
        filename, line, name = frame.get("filename"), frame.get("line"), frame.get("name")
        if type(filename) is not str:
            continue
        shown = f"{filename[:MAX_TEXT]}:{line if type(line) is int else '?'}" + (
            f" in {name[:MAX_TEXT]}" if type(name) is str else "")
        first = first or shown
        if not _LIBRARY_FRAME.search(filename):
            return shown
    return first


__all__ = ["ENTRY_COLUMNS", "Dump", "Group", "NotADump", "Status", "rank_from_name", "read_dump"]
