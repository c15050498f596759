"""Facts about a job that several detectors need (a helper module: it registers no detector).

* :func:`first_failure` — the earliest failure that was not a reaction to another one, optionally
  only those before a given line. Network errors, cancellations and timeouts use it to decide
  whether they are the root or the consequence of an earlier crash (the same rule as LS301's
  :func:`~logscope.detectors.exit_cascade.is_victim`).
* :func:`happened_before` — "is this line earlier than that one", honest about what cannot be
  compared (two untimed lines in different files).
* :func:`address_map` / :func:`peer_host` — turn the peer an error names (``10.2.0.5<33092>``,
  ``[::ffff:10.0.0.5]:29500``, ``node7-ib0``) into the host that owns it, using the addresses
  NCCL prints at init (``NET/IB : Using ...; OOB eth0:10.2.0.4<0>``, ``NET/Socket : Using
  [0]ens3:172.31.12.210<0>``, ``Bootstrap : Using enp10s0:10.10.7.107<0>``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

import polars as pl

from logscope.detectors.accounting_facts import recorded_failed_node, recorded_failure_rows, srun_lost_hosts
from logscope.detectors.base import JobView, event_of, order_key, place_of, seen_at, seen_at_expr
from logscope.detectors.exit_cascade import DETAIL_EVENTS, Victims, root_failure
from logscope.model import Event, Severity
from logscope.timeline import node_of_host

# Lines saying a process (or a node) really failed. CANCELLED is added by callers that treat a
# scheduler cancellation as "something happened first".
FAILURE_EVENTS: tuple[Event, ...] = (*DETAIL_EVENTS, Event.WORKER_FAILED, Event.CHILD_FAILURE,
                                     Event.SRUN_TASK_EXIT, Event.HOST_OOM, Event.NODE_FAILURE)

_IPV4 = r"\d{1,3}(?:\.\d{1,3}){3}"
# "ens3:172.31.12.210<0>", "eth0:10.2.0.4<0>", "ib0:fe80::1%ib0<0>": an interface and its address.
_IF_ADDRESS = re.compile(r"[\w.-]+:(" + _IPV4 + r"|[0-9a-fA-F:]*:[0-9a-fA-F]+)(?:%[\w.-]+)?<\d+>")


# A ChildFailedError record is compared by the time it states, truncated to the second.
_RECORD = Event.CHILD_FAILURE.value
_RECORD_SLACK = timedelta(seconds=1)


def _latest(row: dict[str, Any]) -> datetime | None:
    """The latest a row's line can have been written, as happened_before compares it: its seen_at,
    a second later for a ChildFailedError record (written after the death it reports, that death's
    time truncated to the second)."""
    latest = seen_at(row)
    return latest + _RECORD_SLACK if latest is not None and row.get("event") == _RECORD else latest


def happened_before(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True when row ``a`` is known to come before row ``b``.

    Lines one process wrote to one file are in the order it wrote them. Lines of different
    processes are not, even in one file: torchrun's ``--tee`` copies each worker's output into the
    agent's by polling, so a peer's reaction can land above the crash that caused it (seen in the
    lab). Those, and lines of different files, are ordered by time: ``a`` must have been written
    before ``b``. An untimed line lies between the timed lines around it, so its latest possible
    time is the next timed line (``time_latest``) and its earliest the one above (``time``). With
    no timed line below it, the one above stands in (a traceback is printed right after the last
    log line). Lines with no time at all are never ordered across files; within a file, file
    order is all there is. A prefixed untimed line's window is widened by :data:`COPY_SLACK`: its
    neighbours in the file may have been copied there later or earlier than it (``--tee`` tails
    each worker's stdout and stderr separately, every 0.1 s; a CI run had a rank's traceback above
    its own earlier step line).
    """
    same_file = a.get("file") == b.get("file") and a.get("event") != _RECORD and b.get("event") != _RECORD
    if same_file and _writer(a) == _writer(b):
        return int(a.get("line") or 0) < int(b.get("line") or 0)
    # A ChildFailedError record is compared by its time, never by where it sits in the file.
    latest_a = _latest(a)
    earliest_b = b.get("time")
    above = same_file and int(a.get("line") or 0) < int(b.get("line") or 0)
    if latest_a is None or earliest_b is None:
        return above
    # In one file, a tie goes to file order when b is the very timed line that bounds a. Two
    # untimed lines bounded by one timed line between them are not ordered by it: a lab run had
    # rank 2's reaction above rank 3's segfault that way.
    if above and latest_a == earliest_b and not b.get("time_inferred"):
        return True
    return bool(latest_a + _slack(a) < earliest_b - _slack(b))


_WRITER_TAG = re.compile(r"\s*(\[[^\]]*\]|\d+:)")
# How far a launcher-copied line can sit from where its time says it belongs: torchrun's --tee
# polls every 0.1 s per stream; the rest is margin for a loaded machine.
COPY_SLACK = timedelta(seconds=0.5)


def _slack(row: dict[str, Any]) -> timedelta:
    """An untimed line's window, when it was copied into the file with a launcher prefix, is only
    as good as the copying."""
    return COPY_SLACK if row.get("time_inferred") and row.get("prefix") else timedelta(0)


def _writer(row: dict[str, Any]) -> str:
    """Which process wrote a line into a shared file, as its launcher prefix's first tag tells
    (``[node02:1]:[rank3]:`` -> ``[node02:1]``, ``3: `` -> ``3:``); unprefixed lines share ``""``."""
    match = _WRITER_TAG.match(row.get("prefix") or "")
    return match.group(1) if match else ""


def first_failure(job: JobView, *, before: dict[str, Any] | None = None,
                  events: Iterable[Event] = FAILURE_EVENTS, exclude: Iterable[Event] = ()) -> dict[str, Any] | None:
    """The earliest non-victim failure row (before ``before`` when given), or None."""
    skip = {e.value for e in exclude}
    wanted = [e for e in events if e.value not in skip]
    if not wanted:
        return None
    rows = job.rows_in_order(*wanted) if before is None else _may_come_before(job, tuple(wanted), before)
    judge = Victims(job)
    for row in rows:
        if event_of(row) != Event.CANCELLED and judge(row):
            continue
        if before is not None and not happened_before(row, before):
            continue
        return row
    return None


def _may_come_before(job: JobView, events: tuple[Event, ...], before: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of ``events`` that :func:`happened_before` ``before`` can hold for, in failure order
    (order_key): those of its file (file order may tell), and those whose latest time is before its
    time (happened_before's other rule asks that, and more). A crash loop's ~19,000 failure rows were
    each made a dict, judged and compared with the first socket error, for the few of its first
    attempt; polars picks those now."""
    file, time = before.get("file"), before.get("time")
    latest = pl.when(pl.col("event") == _RECORD).then(seen_at_expr() + _RECORD_SLACK).otherwise(seen_at_expr())
    condition = pl.col("file") == file if file is not None else pl.lit(False)
    if time is not None:
        condition = condition | (latest < pl.lit(time, dtype=pl.Datetime("us")))

    def test(row: dict[str, Any]) -> bool:
        if file is not None and row.get("file") == file:
            return True
        latest = _latest(row)
        return time is not None and latest is not None and latest < time

    rows = job.rows_where(events, condition, test, apart=True)
    rows.sort(key=order_key)
    return rows


def possible_cause(job: JobView, row: dict[str, Any], own_places: Iterable[str | None] = ()) -> dict[str, Any] | None:
    """A real failure elsewhere that may have come before ``row`` (order unknown), or None.

    For findings that can be reactions (a peer's connection closing, a store nobody serves): they
    are ``reactive`` only when such a failure exists on another node. Failures on the reporting
    nodes themselves (srun's summary of the same task, the watchdog abort that follows) are the
    same story, not another cause.
    """
    mine = {p for p in own_places if p}
    root = root_failure(job)  # LS301's root knows which signal exits nobody asked for
    if root is not None and not happened_before(row, root) and root is not row and not (
            root.get("file") == row.get("file") and root.get("line") == row.get("line")):
        return root
    judge = Victims(job)
    for other in job.rows_in_order(*FAILURE_EVENTS):
        if judge(other) or place_of(other) in mine:
            continue
        if not happened_before(row, other):
            return other
    return None


def has_error_lines(job: JobView) -> bool:
    """Whether any line of the job is an error or critical one (LS801 and LS802 ask it of the whole
    timeline: worked out once, by polars, without copying a crash loop's ~100,000 such rows)."""
    found: bool = job.remember("has error lines", lambda: bool(
        job.events.select(pl.col("severity").is_in([Severity.ERROR.value, Severity.CRITICAL.value]).any()).item()))
    return found


def failed_nodes(job: JobView) -> set[str]:
    """Nodes SLURM reported as failed (``srun: error: Node failure on HOST``, hostlists expanded;
    the node its accounting record names for a NODE_FAIL, logscope.detectors.accounting_facts).

    srun prints it only after slurmctld gives up on the node, often minutes after the node died,
    so errors *about* such a node that come before the line are still its consequences.
    """
    nodes: set[str] = set()
    for _, hosts in srun_lost_hosts(job):
        nodes.update(hosts)
    recorded = recorded_failed_node(job)
    if recorded is not None:
        nodes.add(recorded)
    return nodes


def node_failure_rows(job: JobView) -> list[dict[str, Any]]:
    """The rows saying SLURM lost a node (srun's lines, then the accounting record's), in order."""
    return [*job.rows_in_order(Event.NODE_FAILURE), *recorded_failure_rows(job)]


NODE_FAILURE_EVENTS = (Event.NODE_FAILURE, Event.ACCOUNTING)


def address_map(job: JobView) -> dict[str, str]:
    """Address -> host, from the interfaces NCCL reports at init on each host."""
    # Each rank prints its interfaces at every init: the same (host, line) many times over (16,384
    # rows of a crash loop's files), read once each, in the order they first came.
    rows = job.of(Event.NCCL_NET_DEVICE).filter(pl.col("host").is_not_null())
    mapping: dict[str, str] = {}
    for row in rows.select("host", "text").unique(maintain_order=True).to_dicts():
        for address in _IF_ADDRESS.findall(str(row["text"] or "")):
            mapping.setdefault(address.lower(), str(row["host"]))
    return mapping


@lru_cache(maxsize=4096)  # a crash loop's ~26,000 socket errors name a few peers
def bare_address(peer: str) -> str:
    """``10.2.0.5<33092>`` / ``[::ffff:10.0.0.5]:29500`` / ``fe80::1%ib0`` -> the address alone."""
    text = peer.strip().strip("'\"")
    text = re.sub(r"<\d+>$", "", text)
    bracket = re.match(r"^\[([^\]]+)\](?::\d+)?$", text)
    if bracket:
        text = bracket.group(1)
    elif re.match(r"^" + _IPV4 + r":\d+$", text) or re.match(r"^[A-Za-z][\w.-]*:\d+$", text):
        text = text.rsplit(":", 1)[0]
    text = text.split("%", 1)[0]
    if text.lower().startswith("::ffff:") and re.match(r"^" + _IPV4 + r"$", text[7:]):
        text = text[7:]
    return text


def peer_host(peer: str | None, addresses: dict[str, str], nodes: Iterable[str]) -> str | None:
    """The host a peer string names: mapped through NCCL's interface addresses, else as written."""
    if not peer:
        return None
    address = bare_address(peer)
    if not address:
        return None
    if address.lower() in addresses:
        return addresses[address.lower()]
    if re.match(r"^" + _IPV4 + r"$", address) or ":" in address:
        return address
    return node_of_host(address, list(nodes))


def capitalised(text: str) -> str:
    """``rank 3 on node02 ...`` -> ``Rank 3 on node02 ...`` for sentences built from :func:`who`.

    Only our own words are capitalised; a sentence starting with a host name keeps its spelling.
    """
    if text.startswith(("rank ", "local rank ", "an ", "a ", "the ")):
        return text[:1].upper() + text[1:]
    return text


__all__ = [
    "FAILURE_EVENTS",
    "NODE_FAILURE_EVENTS",
    "address_map",
    "bare_address",
    "capitalised",
    "failed_nodes",
    "first_failure",
    "happened_before",
    "has_error_lines",
    "node_failure_rows",
    "peer_host",
    "place_of",
    "possible_cause",
]
