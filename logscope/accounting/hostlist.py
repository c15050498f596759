"""SLURM hostlist expressions: ``gpu[01-03,07]``, ``a[1-2]-ib[0-1]``, ``n1,n2`` -> host names.

The syntax is that of SchedMD/slurm src/common/hostlist.c (``hostlist_create``): comma-separated
items, each a prefix with bracketed ranges (``lo-hi`` keeps ``lo``'s zero padding, items separated
by commas), several bracket groups multiplying out.

Expansion is bounded before it starts: a list is parsed into its ranges first, and the number of
names they make (each range's length, summed per bracket group, multiplied across the groups of an
item, summed across items) is worked out from the numbers alone. A list that would make more than
its limit (:data:`MAX_HOSTS` by default) is refused before one name is made, so a few bytes such
as ``gpu[0-99998,0-99998,...]`` cannot allocate millions of names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from logscope.errors import AccountingError

MAX_HOSTS = 100_000
# The node names one saved or printed record may hold in all, over its jobs and steps (a listing of
# 1,000 jobs of 64 nodes with three steps each holds 256,000): a few bytes per line must not make
# millions of timeline rows.
MAX_RECORD_NODES = 1_000_000
# A host number longer than this is no node's (and Python refuses to convert very long ones).
_MAX_DIGITS = 18
_ITEM = re.compile(r"(?:[^,\[]|\[[^\]]*\])+")
_GROUP = re.compile(r"\[([^\]]*)\]")


@dataclass(frozen=True)
class _Range:
    low: int
    high: int
    width: int  # the low end's digits: its zero padding

    @property
    def size(self) -> int:
        return self.high - self.low + 1


@dataclass(frozen=True)
class _Item:
    """One comma-separated item: literal parts around its bracket groups (``parts`` has one more
    entry than ``groups``)."""

    parts: tuple[str, ...]
    groups: tuple[tuple[_Range, ...], ...]


def expand_hostlist(text: str, limit: int = MAX_HOSTS) -> list[str]:
    """The host names of a hostlist expression, in order, without duplicates.

    Raises :class:`AccountingError` for an unclosed bracket, a bad range, or a list that would make
    more than ``limit`` names (refused from its ranges, before any name is made).
    """
    items = _parse(text, limit)
    out: dict[str, None] = {}
    for item in items:
        for host in _names(item):
            out[host] = None
    return list(out)


def hostlist_size(text: str) -> int:
    """How many names ``text`` makes (duplicates counted), from its ranges alone; AccountingError
    for a list that is not one, or names more than :data:`MAX_HOSTS`."""
    return sum(_item_size(item) for item in _parse(text, MAX_HOSTS))


def hosts_named(text: str, limit: int = MAX_HOSTS) -> list[str]:
    """The hosts a hostlist printed in a log line names (``srun: error: Node failure on
    gpu[01-02]``): as :func:`expand_hostlist`, but a garbled or oversized list names nobody,
    because a line of a log is not trusted to say what it names, nor to allocate."""
    try:
        return expand_hostlist(text, limit)
    except AccountingError:
        return []


class NodeNames:
    """The node lists of one record (a ``sacct`` listing, an ``scontrol`` output) expanded within a
    budget: at most ``entries`` names over all its lists (a list met again costs nothing: it is
    the same tuple), each name made once (the steps' lists repeat the job's names)."""

    def __init__(self, source: str, entries: int | None = None) -> None:
        self.source = source
        self.budget = MAX_RECORD_NODES if entries is None else entries
        self.left = self.budget
        self._lists: dict[str, tuple[str, ...]] = {}
        self._names: dict[str, str] = {}

    def expand(self, text: str) -> tuple[str, ...]:
        """The names of a hostlist expression; AccountingError where it is none, or goes past the
        budget (worked out from its ranges, before any name is made)."""
        known = self._lists.get(text)
        if known is not None:
            return known
        size = hostlist_size(text)
        self._spend(size)
        hosts = self.listed(expand_hostlist(text), counted=True)
        self._lists[text] = hosts
        return hosts

    def listed(self, names: list[str], counted: bool = False) -> tuple[str, ...]:
        """``names`` as given (``sacct --json``'s ``"list"``), within the budget."""
        if not counted:
            self._spend(len(names))
        return tuple(self._names.setdefault(name, name) for name in names)

    def _spend(self, size: int) -> None:
        if size > self.left:
            raise AccountingError(f"{self.source}: its node lists name more than {self.budget} nodes in all "
                                  "(jobs and steps together): not a record of real jobs")
        self.left -= size


def _parse(text: str, limit: int) -> list[_Item]:
    """The items of ``text``, checked to make at most ``limit`` names in all."""
    text = text.strip()
    if not text or text in ("None assigned", "(null)"):
        return []
    if text.count("[") != text.count("]"):
        raise AccountingError(f"bad node list {text[:60]!r}: unbalanced brackets")
    items: list[_Item] = []
    total = 0
    for match in _ITEM.finditer(text):
        item = _item(match.group(0).strip(), text)
        if item is None:
            continue
        total += _item_size(item, limit - total)
        if total > limit:
            raise AccountingError(f"node list {text[:60]!r} names more than {limit} hosts")
        items.append(item)
    return items


def _item(item: str, whole: str) -> _Item | None:
    if not item:
        return None
    parts: list[str] = []
    groups: list[tuple[_Range, ...]] = []
    at = 0
    for match in _GROUP.finditer(item):
        parts.append(item[at:match.start()])
        groups.append(tuple(_range(part.strip(), whole) for part in match.group(1).split(",")))
        at = match.end()
    parts.append(item[at:])
    return _Item(tuple(parts), tuple(groups))


def _range(part: str, whole: str) -> _Range:
    low, dash, high = part.partition("-")
    if not dash:
        high = low
    if not (low.isdigit() and high.isdigit()) or not low.isascii() or not high.isascii():
        raise AccountingError(f"bad node list {whole[:60]!r}: {part[:20]!r} is not a number or a range")
    if len(low) > _MAX_DIGITS or len(high) > _MAX_DIGITS:
        raise AccountingError(f"bad node list {whole[:60]!r}: {part[:20]!r} is no node number")
    if int(high) < int(low):
        raise AccountingError(f"bad node list {whole[:60]!r}: bad range {part[:40]!r}")
    return _Range(int(low), int(high), len(low))


def _item_size(item: _Item, limit: int = MAX_HOSTS) -> int:
    """The names ``item`` makes, multiplied out group by group; once past ``limit`` the count
    stops there (the caller refuses it), so no product grows without bound."""
    size = 1
    for group in item.groups:
        size *= sum(r.size for r in group)
        if size > limit:
            return limit + 1
    return size


def _names(item: _Item) -> list[str]:
    names = [item.parts[0]]
    for group, after in zip(item.groups, item.parts[1:], strict=True):
        values = [str(n).zfill(r.width) for r in group for n in range(r.low, r.high + 1)]
        names = [name + value + after for name in names for value in values]
    return names


__all__ = ["MAX_HOSTS", "MAX_RECORD_NODES", "NodeNames", "expand_hostlist", "hostlist_size", "hosts_named"]
