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

    @property
    def entry_count(self) -> int:
        return len(self.entries.get("index", ()))

    @property
    def latest_ns(self) -> int | None:
        """The newest entry's creation time (UTC nanoseconds)."""
        times = [t for t in self.entries.get("created_ns", ()) if t is not None]
        return max(times) if times else None


_RANK_IN_NAME = re.compile(r"(\d+)(?:\.json|\.pkl|\.pickle)?$")
_INT_TEXT = re.compile(r"-?\d+")


def rank_from_name(name: str) -> int | None:
    """The rank PyTorch appended to the dump's prefix (``nccl_trace_rank_3``, ``_dump_15``,
    ``trace_0.json``)."""
    m = _RANK_IN_NAME.search(name)
    return int(m.group(1)) if m else None


def read_dump(data: Any, *, file: str, name: str, fmt: str, size: int = 0) -> Dump:
    """The dump ``data`` (what :mod:`logscope.flight_recorder.safe_load` loaded) as a
    :class:`Dump`; :class:`NotADump` when it is not one."""
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
    dump.entries, dump.dropped = _entries(raw[:MAX_ENTRIES])
    dump.dropped += max(0, len(raw) - MAX_ENTRIES)
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


def _entries(raw: list[Any]) -> tuple[dict[str, list[Any]], int]:
    columns: dict[str, list[Any]] = {name: [] for name in ENTRY_COLUMNS}
    appenders = [columns[name].append for name in ENTRY_COLUMNS]
    frames_seen: dict[tuple[int, ...], str | None] = {}
    dropped = 0
    for index, entry in enumerate(raw, start=1):
        row = _entry(entry, index, frames_seen)
        if row is None:
            dropped += 1
            continue
        for append, value in zip(appenders, row, strict=True):
            append(value)
    return columns, dropped


def _entry(entry: Any, index: int, frames_seen: dict[tuple[int, ...], str | None]) -> tuple[Any, ...] | None:
    """One entry's columns, or None when it is not what the format says. Written for speed (a
    dump of 2000 entries is read in a few milliseconds): the types are checked inline."""
    if type(entry) is not dict:
        return None
    get = entry.get
    group = get("process_group")
    if isinstance(group, (tuple, list)) and len(group) >= 2 and type(group[0]) is str and type(group[1]) is str:
        pg, desc = group[0][:MAX_TEXT], group[1][:MAX_TEXT]
    elif type(group) is str:
        pg, desc = group[:MAX_TEXT], ""
    else:
        return None
    seq = _int(get("collective_seq_id", get("seq_id")))
    created = _int(get("time_created_ns"))
    op = get("profiling_name")
    if seq is None or created is None or type(op) is not str:
        return None
    is_p2p = get("is_p2p")
    is_p2p = is_p2p if type(is_p2p) is bool else _looks_p2p(op)
    duration = get("duration_ms")
    state = get("state")
    retired = get("retired")
    thread = get("thread_name")
    frames = get("frames")
    frame = None
    if type(frames) is list:
        key = tuple(id(f) for f in frames[:MAX_FRAMES])
        frame = frames_seen.get(key, "")
        if frame == "":
            frame = frames_seen[key] = _user_frame(frames)
    return (
        index, _int(get("record_id")), _int(get("pg_id")), pg, desc, seq,
        _int(get("p2p_seq_id")) if is_p2p else None, _int(get("op_id")), op[:MAX_TEXT], created,
        float(duration) if isinstance(duration, (int, float)) and type(duration) is not bool else None,
        state[:MAX_TEXT] if type(state) is str else None,
        _time_or_none(get("time_discovered_started_ns")), _time_or_none(get("time_discovered_completed_ns")),
        retired if type(retired) is bool else None, _int(get("timeout_ms")),
        is_p2p, _shape(entry), frame, thread[:MAX_TEXT] if type(thread) is str else None,
    )


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
    return (f"{_sizes(get('input_sizes'))} {_dtypes(get('input_dtypes'))} -> "
            f"{_sizes(get('output_sizes'))} {_dtypes(get('output_dtypes'))}")


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
