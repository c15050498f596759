"""NCCL COLL lines set aside before classification: the ones the thinning would drop anyway.

A COLL-heavy log (``NCCL_DEBUG_SUBSYS=COLL``) is mostly lines such as
``host:pid:tid [dev] NCCL INFO AllReduce: opCount 1a ... comm 0x55d0c3a0 ...``; the timeline keeps
the first :data:`~logscope.ingest.thinning.COLL_HEAD` and last :data:`~logscope.ingest.thinning.COLL_TAIL`
of each (host, pid, comm) of a file. The lines of a chunk that cannot be among those are set aside
here, counted as recognised and never classified. Two ways, one rule:

* :func:`coll_surplus`, polars expressions over a chunk's frame of lines (the reference, and the
  path when the compiled scanner is not built);
* :func:`group_keys`, for the compiled scanner (:mod:`logscope.ingest.coll_prefilter`), which
  finds and groups the COLL lines of a block of bytes itself and asks here which of its groups are
  valid and which process each is. A few groups of plain ASCII (a file's processes) are checked
  by Python's ``re`` with the same regexes, the others by the polars path (polars_group_keys).

Both group lines by (the text before " NCCL INFO ", the 20 bytes after "comm ") and check each
group's head and pointer once, with the same functions below.
"""

from __future__ import annotations

import re
from functools import cache

import polars as pl

from logscope.parsers.prefixes import PREFIX_COLUMNS, PREFIX_STACK, prefix_fields, prefix_rows, split_prefix
from logscope.parsers.regex_ascii import ascii_classes, plain_text
from logscope.parsers.timestamps import ANY_LEADING_TIME

# The COLL fast path (see coll_surplus): a COLL line is cut at these literals, by byte offset.
_COLL_INFO = " NCCL INFO "
_COLL_TRIGGER = ": opCount "
_COLL_COMM = "comm "
_COLL_SLICE = 20  # bytes read after "opCount " and after "comm ": a 64-bit hex value and more
# The operation, then the op count and a space within _COLL_SLICE bytes of "opCount ".
_COLL_OP_COUNT = r"^[A-Za-z]+: opCount [0-9a-fA-F]{1," + str(_COLL_SLICE - 1) + "} "
# What may stand before " NCCL INFO " once the launcher prefixes are off, given a trailing space:
# the NCCL_COLL pattern's head, its optional timestamp apart from the rest (the key).
_NCCL_STAMP = ascii_classes(r"\[\d{4}-\d{2}-\d{2}[^\]]*\] ")  # NCCL_DEBUG_TIMESTAMP_FORMAT's default, "[%F %T] "
_NCCL_HEAD = ascii_classes(r"[^\s:\[\]]+:\d+:\d+ (?:\[\d+\] )?(?:[\w./-]+:\d+ )?")
_COLL_HEAD_BODY = r"^(?:" + _NCCL_STAMP + r")?(?P<key>" + _NCCL_HEAD + r")$"
# A COLL line with NCCL's own timestamp, and how many lines of a chunk are searched for one.
_STAMPED_COLL = _NCCL_STAMP + _NCCL_HEAD + r"NCCL INFO [A-Za-z]+: opCount "
_STAMP_SAMPLE = 4096
_COLL_POINTER = r"^(?:0x[0-9a-fA-F]+|\(nil\))"


def coll_surplus(lines: pl.DataFrame, head: int, tail: int) -> pl.Series | None:
    """Row positions of the NCCL COLL lines of ``lines`` (column ``raw``) that are neither among
    the first ``head`` nor the last ``tail`` of their (host, pid, comm) in this chunk, so not among
    them in the file either: the thinning the caller applies later would drop them.

    This runs on every line of a COLL-heavy log before anything else, so each line pays only for
    three substring searches, three byte slices and one anchored regex on a short slice: it is
    cut at the first " NCCL INFO ", ": opCount " and "comm "; the operation and the op count
    between are checked on the line. The text before " NCCL INFO " (launcher prefixes, NCCL's
    optional timestamp, ``host:pid:tid [dev]``) and the bytes after "comm " are checked once per
    *distinct* value, a handful per chunk (a timestamp is split off first: see _keyed). A line
    passing every check is one the NCCL_COLL pattern (first in PATTERNS) matches, with that host,
    pid and comm.

    The key, (``host:pid:tid [dev]``, the bytes after "comm "), may split one (host, pid, comm) in
    two (two threads, a pid written with a leading zero) but never merges two, so it keeps a
    superset of what the caller keeps, and the caller's thinning of that superset gives the same
    rows. Lines with a leading time are set aside only where no other line needs that time (see
    _untimed_or_unneeded).
    """
    raw = pl.col("raw")
    data = raw.cast(pl.Binary)  # byte offsets (str.find) need byte slices: lines may hold any UTF-8
    at_info, at_op, at_comm = pl.col("_info"), pl.col("_op"), pl.col("_comm")
    coll = (
        lines.lazy()
        .select(
            pl.int_range(pl.len(), dtype=pl.UInt32).alias("idx"),
            raw,
            raw.str.find(_COLL_INFO, literal=True).alias("_info"),
            raw.str.find(_COLL_TRIGGER, literal=True).alias("_op"),
        )
        .filter(at_info < at_op)
        .with_columns(raw.str.find(_COLL_COMM, literal=True).alias("_comm"))
        .filter(at_comm > at_op)
        .select(
            "idx",
            data.bin.slice(0, at_info).alias("head"),
            data.bin.slice(at_comm + len(_COLL_COMM), _COLL_SLICE).alias("comm"),
            # From the operation on, checked by an anchored regex (a regex search of the whole
            # line costs more). The slice starts and ends where characters do (after " NCCL INFO ",
            # at the line's end), so it is text: a slice that could cut a character in two cannot be
            # cast (polars 2 raises where it gave null before).
            data.bin.slice(at_info + len(_COLL_INFO)).cast(pl.String).alias("_op_count"),
        )
        .filter(pl.col("_op_count").str.contains(_COLL_OP_COUNT))
    )
    if lines.head(_STAMP_SAMPLE).select(raw.str.contains(_STAMPED_COLL).any()).item():
        # NCCL's own timestamp (NCCL_DEBUG_TIMESTAMP_LEVELS) changes line by line: the head is
        # split at it, so that the groups stay a handful. (A chunk whose first lines show none is
        # not split: what it holds is still checked per distinct head, only at a higher cost.)
        groups = _split_at_stamp(coll).group_by("head", "after", "comm").agg("idx").collect()
    else:
        groups = coll.group_by("head", "comm").agg("idx").collect().with_columns(
            pl.lit(None, dtype=pl.String).alias("after"))
    # A handful of groups: their heads and pointers are checked here, once each. A valid head
    # gets its key: the NCCL head without a timestamp in front (launcher prefixes dropped too:
    # the host and pid that follow name the process).
    groups = _keyed(groups).filter(pl.col("comm").is_in(_valid_pointers(groups["comm"]).implode()))
    if groups.height == 0:
        return None
    count = pl.col("idx").list.len().cast(pl.Int64)
    if not groups["timed"].any():
        # No line set aside has a time: a group is a key already, or a part of one.
        surplus = groups.select(pl.col("idx").list.slice(head, (count - head - tail).clip(0)).explode()).to_series()
    else:
        surplus = _untimed_or_unneeded(groups, head, tail)
    surplus = surplus.drop_nulls()
    return surplus if surplus.len() else None


def _untimed_or_unneeded(groups: pl.DataFrame, head: int, tail: int) -> pl.Series:
    """The surplus rows of COLL lines some of which carry a time (NCCL_DEBUG_TIMESTAMP_LEVELS):
    a group per (key, comm), the key leaving out the time, so lines of one second and the next
    are one group. Set aside, a timed line would take its time away from the lines around it
    (an untimed event takes its time from the nearest timed lines above and below, and a chunk
    hands its last time to the next). So in every run of lines set aside back to back, the
    first and the last timed one stay: those are the only ones any other line can take a time
    from. They become events the caller's thinning drops again."""
    rows = groups.select("key", "comm", "timed", "idx").explode("idx").sort("idx")
    key = [pl.col("key"), pl.col("comm")]
    position = pl.int_range(pl.len()).over(key)
    rows = rows.with_columns(
        ((position >= head) & (position < pl.len().over(key).cast(pl.Int64) - tail)).alias("surplus")
    )
    # A run: rows set aside with consecutive positions in the chunk (any other line between them,
    # or a line that stays, ends it).
    follows = (pl.col("idx").cast(pl.Int64) - pl.col("idx").shift().cast(pl.Int64) == 1).fill_null(False)
    rows = rows.with_columns((~(pl.col("surplus") & follows & pl.col("surplus").shift().fill_null(False)))
                             .cum_sum().alias("run"))
    timed = rows.filter(pl.col("surplus") & pl.col("timed"))
    needed = pl.concat([timed.unique("run", keep="first")["idx"], timed.unique("run", keep="last")["idx"]])
    return rows.filter(pl.col("surplus") & ~pl.col("idx").is_in(needed.implode()))["idx"]


def _keyed(groups: pl.DataFrame) -> pl.DataFrame:
    """Groups of COLL lines (``head``: the text before their NCCL timestamp, or before " NCCL
    INFO " when there is none; ``after``: the text between the timestamp and " NCCL INFO ", null
    when there is none; ``comm``; ``idx``) with their ``key`` and ``timed`` (see _head_keys); the
    groups that are not valid are left out.

    With a timestamp, what comes before it must be launcher prefixes and nothing else (so that
    the timestamp stands where the NCCL_COLL pattern reads it) and what follows it an NCCL
    ``host:pid:tid [dev]`` head, the key; each distinct part is checked once. Such a line is
    ``timed``."""
    plain = groups.filter(pl.col("after").is_null()).drop("after")
    plain = plain.join(_head_keys(plain["head"].unique()), on="head")
    stamped = groups.filter(pl.col("after").is_not_null())
    if stamped.height == 0:
        return plain
    befores = split_prefix(stamped["head"].unique().cast(pl.String, strict=False).to_frame("raw")).filter(
        pl.col("raw").is_not_null() & (pl.col("body") == ""))
    afters = stamped["after"].unique().to_frame("after").filter(
        (pl.col("after") + " ").str.contains("^" + _NCCL_HEAD + "$")
        & ~pl.col("after").str.contains(ANY_LEADING_TIME)
    )
    stamped = stamped.filter(
        pl.col("head").is_in(befores["raw"].cast(pl.Binary).implode())
        & pl.col("after").is_in(afters["after"].implode())
    ).select("head", "comm", "idx", pl.col("after").alias("key"), pl.lit(True).alias("timed"))
    return pl.concat([plain.select("head", "comm", "idx", "key", "timed"), stamped])


def _head_keys(heads: pl.Series) -> pl.DataFrame:
    """For each distinct text before " NCCL INFO " that is launcher prefixes, an optional NCCL
    timestamp and an NCCL ``host:pid:tid [dev] [file:line]`` head: ``head``, its ``key`` (the
    head without prefixes or timestamp) and whether the line has a leading time (``timed``, as
    :func:`_leading_times` would find it). Other texts are left out."""
    frame = split_prefix(heads.cast(pl.String, strict=False).to_frame("text").with_columns(
        (pl.col("text") + _COLL_INFO).alias("raw")))
    frame = frame.join(prefix_fields(frame["prefix"]), on="prefix", how="left")
    parts = pl.col("body").str.strip_suffix("NCCL INFO ").str.extract_groups(_COLL_HEAD_BODY)
    return (
        frame.with_columns(parts.struct.field("key").alias("key"))
        .filter(pl.col("key").is_not_null())
        .select(
            pl.col("text").cast(pl.Binary).alias("head"),
            "key",
            (pl.col("p_app_time").is_not_null() | pl.col("body").str.contains(ANY_LEADING_TIME)).alias("timed"),
        )
    )


def _valid_pointers(slices: pl.Series) -> pl.Series:
    """The distinct values of ``slices`` (the bytes after "comm ") that start with the whole pointer
    the pattern reads: it ends inside the slice, or the line does. (A slice that cut a character in
    two is not text, and not valid: its pointer, if any, does not end inside it.)"""
    distinct = slices.unique()
    text = pl.Series([_text(value) for value in distinct], dtype=pl.String)  # a handful of values
    pointer = text.str.extract(_COLL_POINTER, 0)
    whole = pointer.str.len_bytes() < text.str.len_bytes()
    return distinct.filter((pointer.is_not_null() & (whole | (distinct.bin.size() < _COLL_SLICE))).fill_null(False))


def _text(value: bytes | None) -> str | None:
    """``value`` as text; None when it is not UTF-8."""
    try:
        return None if value is None else value.decode()
    except UnicodeDecodeError:
        return None


def group_keys(heads: list[bytes], comms: list[bytes]) -> list[tuple[str, bool] | None]:
    """For groups of COLL lines the compiled scanner made (group ``i``: lines whose text before
    " NCCL INFO " is ``heads[i]`` and whose 20 bytes after "comm " are ``comms[i]``): each group's
    key (the NCCL head without launcher prefixes or timestamp: one process) and whether its lines
    carry a leading time; None for a group that is not valid.

    The checks are those of :func:`coll_surplus`, by the same functions. A head that is not UTF-8,
    or a comm that is not ASCII, is not valid here either: the text polars decodes from such bytes
    may differ from them. Its lines go through the polars path, which is never wrong, only slower.

    A file brings a handful of new groups (its processes), and a polars query costs a fixed
    ~1 ms: up to :data:`FEW_GROUPS` groups of printable ASCII are checked by Python's ``re``
    with the same regexes (:func:`_few_group_keys`; ~9 ms a file less), the others by polars.
    """
    texts = [_text(head) for head in heads]
    if len(heads) <= FEW_GROUPS and all(
            text is not None and plain_text(text) and comm.isascii() and plain_text(comm.decode())
            for text, comm in zip(texts, comms, strict=True)):
        return _few_group_keys(heads, comms)
    return polars_group_keys(heads, comms)


FEW_GROUPS = 512


class _Regexes:
    """The regexes of the checks, compiled for Python's re on first use (a process that never
    meets a COLL line does not pay for them)."""

    def __init__(self) -> None:
        self.prefix_stack = re.compile(PREFIX_STACK).match
        self.stamp = re.compile(_NCCL_STAMP).search
        self.head_body = re.compile(_COLL_HEAD_BODY).search
        self.nccl_head = re.compile("^" + _NCCL_HEAD + "$").search
        self.leading_time = re.compile(ANY_LEADING_TIME).search
        self.pointer = re.compile(_COLL_POINTER).match


@cache
def _regexes() -> _Regexes:
    return _Regexes()


_APP_TIME = list(PREFIX_COLUMNS).index("p_app_time")


def _few_group_keys(heads: list[bytes], comms: list[bytes]) -> list[tuple[str, bool] | None]:
    """:func:`group_keys` for a few groups of printable ASCII, in Python: the polars path's steps
    (_split_at_stamp, _keyed, _head_keys, _valid_pointers), one group at a time.
    tests/test_coll_prefilter.py holds the two to the same answers."""
    rx = _regexes()

    def split_prefix_of(raw: str) -> tuple[str | None, str]:
        found = rx.prefix_stack(raw)
        prefix = found.group(0) if found else None
        return prefix, raw[len(prefix):] if prefix else raw

    plain: dict[int, tuple[str | None, str]] = {}  # group -> (prefix, body) of its head + " NCCL INFO "
    keys: list[tuple[str, bool] | None] = [None] * len(heads)
    for n, (head_bytes, comm) in enumerate(zip(heads, comms, strict=True)):
        head = head_bytes.decode()
        pointer = rx.pointer(comm.decode())
        if pointer is None or not (pointer.end() < len(comm) or len(comm) < _COLL_SLICE):
            continue
        stamp = rx.stamp(head)
        if stamp is None:
            plain[n] = split_prefix_of(head + _COLL_INFO)
            continue
        before, rest = head[:stamp.start()], head[stamp.start():]
        after = rest[rest.find("] ") + 2:]
        if (split_prefix_of(before)[1] == "" and rx.nccl_head(after + " ") is not None
                and rx.leading_time(after) is None):
            keys[n] = (after, True)
    rows = prefix_rows([prefix for prefix, _ in plain.values() if prefix]) if plain else {}
    if rows is None:  # another thread cleared prefixes' memo meanwhile: ask polars
        return polars_group_keys(heads, comms)
    for n, (prefix, body) in plain.items():
        parts = rx.head_body(body.removesuffix("NCCL INFO "))
        if parts is None or parts.group("key") is None:
            continue
        app_time = rows[prefix][_APP_TIME] if prefix else None
        keys[n] = (parts.group("key"), app_time is not None or rx.leading_time(body) is not None)
    return keys


def polars_group_keys(heads: list[bytes], comms: list[bytes]) -> list[tuple[str, bool] | None]:
    """:func:`group_keys` by the polars path, whatever the groups (the reference)."""
    kept = [n for n, (head, comm) in enumerate(zip(heads, comms, strict=True))
            if comm.isascii() and _text(head) is not None]
    groups = pl.DataFrame(
        {"head": [heads[n] for n in kept], "comm": [comms[n] for n in kept], "idx": kept},
        schema={"head": pl.Binary, "comm": pl.Binary, "idx": pl.UInt32},
    )
    groups = _split_at_stamp(groups.lazy()).collect()
    valid = _keyed(groups).filter(pl.col("comm").is_in(_valid_pointers(groups["comm"]).implode()))
    keys: list[tuple[str, bool] | None] = [None] * len(heads)
    for idx, key, timed in valid.select("idx", "key", "timed").iter_rows():
        keys[idx] = (key, timed)
    return keys


def _split_at_stamp(groups: pl.LazyFrame) -> pl.LazyFrame:
    """Groups (``head``: the bytes before " NCCL INFO ") with ``head`` cut at NCCL's own timestamp,
    when it holds one: ``head`` the text before it, ``after`` the text after it (null without one).
    NCCL's timestamp (NCCL_DEBUG_TIMESTAMP_LEVELS) changes line by line: split off, it leaves the
    groups a handful."""
    text, at = pl.col("head"), pl.col("_at")
    return groups.with_columns(
        text.cast(pl.String, strict=False).str.find(_NCCL_STAMP).alias("_at")
    ).with_columns(
        pl.when(at.is_null()).then(text).otherwise(text.bin.slice(0, at)),
        text.bin.slice(at + text.bin.slice(at).cast(pl.String, strict=False).str.find("] ", literal=True) + 2)
        .cast(pl.String, strict=False).alias("after"),
    ).drop("_at")
