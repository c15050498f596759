"""Which groups of NCCL COLL lines the compiled scanner made are valid, and which process each is.

The compiled scanner (:mod:`logscope.ingest.coll_prefilter`) groups a block's COLL lines by (the
text before " NCCL INFO ", the 20 bytes after "comm ") and asks :func:`group_keys` about each
group once: a file brings a handful (its processes and communicators). The rules are those of the
polars path (:func:`logscope.parsers.coll_aside.coll_surplus`), which reads the same regexes,
defined here.

A few groups of printable ASCII are checked here, by Python's ``re``; the others by the polars
path (:func:`logscope.parsers.coll_aside.polars_group_keys`). This module imports no polars: a read
worker's byte pass (:mod:`logscope.ingest.scanning`) runs it, and its process loads polars only
when a group needs it.
"""

from __future__ import annotations

import re
from functools import cache

from logscope.parsers.prefix_stack import PREFIX_STACK, stack_has_time
from logscope.parsers.regex_ascii import ascii_classes, plain_text
from logscope.parsers.time_forms import ANY_LEADING_TIME

# A COLL line is cut at these literals, by byte offset.
COLL_INFO = " NCCL INFO "
COLL_TRIGGER = ": opCount "
COLL_COMM = "comm "
COLL_SLICE = 20  # bytes read after "opCount " and after "comm ": a 64-bit hex value and more
# The operation, then the op count and a space within COLL_SLICE bytes of "opCount ".
COLL_OP_COUNT = r"^[A-Za-z]+: opCount [0-9a-fA-F]{1," + str(COLL_SLICE - 1) + "} "
# What may stand before " NCCL INFO " once the launcher prefixes are off, given a trailing space:
# the NCCL_COLL pattern's head, its optional timestamp apart from the rest (the key).
NCCL_STAMP = ascii_classes(r"\[\d{4}-\d{2}-\d{2}[^\]]*\] ")  # NCCL_DEBUG_TIMESTAMP_FORMAT's default, "[%F %T] "
NCCL_HEAD = ascii_classes(r"[^\s:\[\]]+:\d+:\d+ (?:\[\d+\] )?(?:[\w./-]+:\d+ )?")
COLL_HEAD_BODY = r"^(?:" + NCCL_STAMP + r")?(?P<key>" + NCCL_HEAD + r")$"
# A COLL line with NCCL's own timestamp.
STAMPED_COLL = NCCL_STAMP + NCCL_HEAD + r"NCCL INFO [A-Za-z]+: opCount "
COLL_POINTER = r"^(?:0x[0-9a-fA-F]+|\(nil\))"


def text_of(value: bytes | None) -> str | None:
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

    The checks are those of :func:`~logscope.parsers.coll_aside.coll_surplus`. A head that is not
    UTF-8, or a comm that is not ASCII, is not valid here either: the text polars decodes from such
    bytes may differ from them. Its lines go through the polars path, which is never wrong, only
    slower.

    Up to :data:`FEW_GROUPS` groups of printable ASCII are checked by Python's ``re`` with the same
    regexes (:func:`_few_group_keys`): a polars query costs a fixed ~1 ms, and a read worker that
    never needs polars never loads it (~0.3 s). The others are checked by polars.
    """
    texts = [text_of(head) for head in heads]
    if len(heads) <= FEW_GROUPS and all(
            text is not None and plain_text(text) and comm.isascii() and plain_text(comm.decode())
            for text, comm in zip(texts, comms, strict=True)):
        return _few_group_keys(heads, comms)
    # Loaded here, and only here: the byte pass of a read worker imports no polars until a group
    # of its files needs it.
    from logscope.parsers import coll_aside

    return coll_aside.polars_group_keys(heads, comms)


FEW_GROUPS = 512


class _Regexes:
    """The regexes of the checks, compiled for Python's re on first use (a process that never
    meets a COLL line does not pay for them)."""

    def __init__(self) -> None:
        self.prefix_stack = re.compile(PREFIX_STACK).match
        self.stamp = re.compile(NCCL_STAMP).search
        self.head_body = re.compile(COLL_HEAD_BODY).search
        self.nccl_head = re.compile("^" + NCCL_HEAD + "$").search
        self.leading_time = re.compile(ANY_LEADING_TIME).search
        self.pointer = re.compile(COLL_POINTER).match


@cache
def _regexes() -> _Regexes:
    return _Regexes()


def _few_group_keys(heads: list[bytes], comms: list[bytes]) -> list[tuple[str, bool] | None]:
    """:func:`group_keys` for a few groups of printable ASCII, in Python: the polars path's steps
    (coll_aside's _split_at_stamp, _keyed, _head_keys, _valid_pointers), one group at a time.
    tests/test_coll_prefilter.py holds the two to the same answers."""
    rx = _regexes()

    def split_prefix_of(raw: str) -> tuple[str | None, str]:
        found = rx.prefix_stack(raw)
        prefix = found.group(0) if found else None
        return prefix, raw[len(prefix):] if prefix else raw

    keys: list[tuple[str, bool] | None] = [None] * len(heads)
    for n, (head_bytes, comm) in enumerate(zip(heads, comms, strict=True)):
        head = head_bytes.decode()
        pointer = rx.pointer(comm.decode())
        if pointer is None or not (pointer.end() < len(comm) or len(comm) < COLL_SLICE):
            continue
        stamp = rx.stamp(head)
        if stamp is None:
            prefix, body = split_prefix_of(head + COLL_INFO)
            parts = rx.head_body(body.removesuffix("NCCL INFO "))
            if parts is None or parts.group("key") is None:
                continue
            timed = (prefix is not None and stack_has_time(prefix)) or rx.leading_time(body) is not None
            keys[n] = (parts.group("key"), timed)
            continue
        before, rest = head[:stamp.start()], head[stamp.start():]
        after = rest[rest.find("] ") + 2:]
        if (split_prefix_of(before)[1] == "" and rx.nccl_head(after + " ") is not None
                and rx.leading_time(after) is None):
            keys[n] = (after, True)
    return keys


__all__ = ["COLL_COMM", "COLL_HEAD_BODY", "COLL_INFO", "COLL_OP_COUNT", "COLL_POINTER", "COLL_SLICE", "COLL_TRIGGER",
           "FEW_GROUPS", "NCCL_HEAD", "NCCL_STAMP", "STAMPED_COLL", "group_keys", "text_of"]
