"""SLURM hostlist expressions: ``gpu[01-03,07]``, ``a[1-2]-ib[0-1]``, ``n1,n2`` -> host names.

The syntax is that of SchedMD/slurm src/common/hostlist.c (``hostlist_create``): comma-separated
items, each a prefix with bracketed ranges (``lo-hi`` keeps ``lo``'s zero padding, items separated
by commas), several bracket groups multiplying out. A list larger than :data:`MAX_HOSTS` is refused
(a corrupt record must not allocate millions of names).
"""

from __future__ import annotations

import re

from logscope.errors import AccountingError

MAX_HOSTS = 100_000
_ITEM = re.compile(r"(?:[^,\[]|\[[^\]]*\])+")
_GROUP = re.compile(r"\[([^\]]*)\]")


def expand_hostlist(text: str) -> list[str]:
    """The host names of a hostlist expression, in order, without duplicates.

    Raises :class:`AccountingError` for an unclosed bracket, a bad range or a list too large.
    """
    text = text.strip()
    if not text or text in ("None assigned", "(null)"):
        return []
    if text.count("[") != text.count("]"):
        raise AccountingError(f"bad node list {text!r}: unbalanced brackets")
    out: dict[str, None] = {}
    for item in _ITEM.findall(text):
        for host in _expand_item(item.strip(), text):
            out[host] = None
            if len(out) > MAX_HOSTS:
                raise AccountingError(f"node list {text[:60]!r} names more than {MAX_HOSTS} hosts")
    return list(out)


def hosts_named(text: str) -> list[str]:
    """The hosts a hostlist printed in a log line names (``srun: error: Node failure on
    gpu[01-02]``): as :func:`expand_hostlist`, but a garbled or oversized list names nobody,
    because a line of a log is not trusted to say what it names, nor to allocate."""
    try:
        return expand_hostlist(text)
    except AccountingError:
        return []


def _expand_item(item: str, whole: str) -> list[str]:
    match = _GROUP.search(item)
    if match is None:
        return [item] if item else []
    head, tail = item[: match.start()], item[match.end():]
    tails = _expand_item(tail, whole) if "[" in tail else [tail]
    out: list[str] = []
    for value in _range_values(match.group(1), whole):
        out.extend(head + value + rest for rest in tails)
        if len(out) > MAX_HOSTS:
            raise AccountingError(f"node list {whole[:60]!r} names more than {MAX_HOSTS} hosts")
    return out


def _range_values(ranges: str, whole: str) -> list[str]:
    values: list[str] = []
    for part in ranges.split(","):
        part = part.strip()
        if "-" not in part:
            if not part.isdigit():
                raise AccountingError(f"bad node list {whole!r}: {part!r} is not a number")
            values.append(part)
            continue
        low, high = part.split("-", 1)
        if not (low.isdigit() and high.isdigit()) or int(high) < int(low):
            raise AccountingError(f"bad node list {whole!r}: bad range {part!r}")
        if int(high) - int(low) >= MAX_HOSTS:
            raise AccountingError(f"node list {whole[:60]!r} names more than {MAX_HOSTS} hosts")
        values.extend(str(i).zfill(len(low)) for i in range(int(low), int(high) + 1))
    return values


__all__ = ["MAX_HOSTS", "expand_hostlist", "hosts_named"]
