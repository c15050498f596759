"""LS209 nccl-bootstrap-error: NCCL (or the process group's store) failed while ranks were meeting.

What it detects
    Failures of the step where ranks exchange NCCL's unique id and connect to each other, before
    any collective runs: NCCL bootstrap warnings (``Bootstrap : no socket interface found``,
    ``NET/Socket : No usable listening interface found``, ``Invalid NCCL_COMM_ID``, ``Bootstrap
    Root : mismatch in rank count``, ``rank N of M ranks has already checked in``), ``Failed to
    initialize any NET plugin``, ``ncclInvalidUsage`` / ``invalid usage`` raised by a process
    that never completed an NCCL init, and the process group's TCPStore giving up outside the
    torchrun rendezvous (``DistStoreError: Timed out after N seconds waiting for clients. 1/2
    clients joined.``, ``Timed out initializing process group in store based barrier``).

Why it matters
    These fail at start-up, often only after a long timeout, with messages that do not name the
    cause: a rank that never arrived (crashed or launched with the wrong world size), no usable
    network interface for NCCL's sockets (``NCCL_SOCKET_IFNAME``), an inconsistent
    ``NCCL_COMM_ID``, or a NET plugin that cannot start.

Evidence
    ``nccl_warn`` events with bootstrap messages, ``nccl_plugin`` warnings, ``exception`` events
    with ``invalid usage`` from processes without an ``Init COMPLETE`` line, and ``store_error``
    events outside rendezvous (store-based barrier, ``DistStoreError``). Duplicate GPUs (LS206),
    NCCL version mismatches (LS802) and duplicate ranks (LS202) explain ``invalid usage`` and the
    barrier counts themselves and are left to those detectors. A store-based barrier that fewer
    processes than the group's size reached (``worker_count`` < ``world_size``) is a hang, not a
    launch failure: they had connected to the store, and some stopped on the way.

Example
    ::

        node1:1234:1234 [0] bootstrap.cc:41 NCCL WARN Bootstrap : no socket interface found
        torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3

False positives
    A rank that crashed before joining makes the others' store wait time out; when that crash
    is in the logs this is a consequence.

Advice
    Run with ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET`` to see the interfaces each
    rank chose; set ``NCCL_SOCKET_IFNAME`` to the interface that connects the nodes; check that
    every rank was started with the same world size and master address, and that no rank died
    before ``init_process_group``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import (
    Detector,
    JobView,
    culprit_of,
    event_of,
    evidence_of,
    field_of,
    message_and_text,
    message_and_text_of,
    order_key,
    when_row,
    who,
)
from logscope.detectors.exit_cascade import is_victim
from logscope.detectors.job_facts import capitalised, first_failure, happened_before, place_of, possible_cause
from logscope.knowledge import by_id
from logscope.model import Category, Culprit, Event, Finding, Role, Severity

BOOTSTRAP = re.compile(
    r"Bootstrap|bootstrap(?:Root|Net|Create|Init|Connect)|No usable listening interface|Invalid NCCL_COMM_ID"
    r"|no socket interface found|Failed to initialize any NET plugin")
INVALID_USAGE = re.compile(r"invalid usage|ncclInvalidUsage")
STORE = re.compile(r"store based barrier|waiting for clients|clients joined|wait timeout|Socket Timeout",
                   re.IGNORECASE)


class NcclBootstrapError(Detector):
    code = "LS209"
    name = "nccl-bootstrap-error"
    category = Category.LAUNCH
    requires: ClassVar[frozenset[Event]] = frozenset(
        {Event.NCCL_WARN, Event.NCCL_PLUGIN, Event.EXCEPTION, Event.STORE_ERROR, Event.KNOWN_MESSAGE})
    specificity = 55

    def detect(self, job: JobView) -> list[Finding]:
        rows = self._bootstrap(job) + self._invalid_usage(job) + self._store(job)
        if not rows:
            return []
        rows.sort(key=order_key)
        causes = [r for r in rows if not is_victim(r)] or rows
        first = causes[0]
        earlier = first_failure(job, before=first, exclude=(Event.EXCEPTION,))
        message = str(field_of(first, "message") or first.get("text") or "").strip().rstrip(".")
        places = sorted({p for p in (place_of(r) for r in rows) if p})
        kind = ("NCCL bootstrap" if event_of(first) in (Event.NCCL_WARN, Event.NCCL_PLUGIN, Event.KNOWN_MESSAGE)
                else "process-group store" if event_of(first) == Event.STORE_ERROR
                else "NCCL communicator init")
        title = f"{kind[:1].upper()}{kind[1:]} failed: {message[:140]}"
        arrived, size = field_of(first, "count"), field_of(first, "world_size")
        # The processes had connected to the store, and some never reached the barrier of a group
        # being created: they hang (or died unseen) on the way, after a launch that worked.
        stuck = (event_of(first) == Event.STORE_ERROR and "store based barrier" in message
                 and arrived is not None and size is not None and int(arrived) < int(size))
        if stuck:
            title = (f"Not every process reached the process group's store-based barrier: {arrived} of {size} "
                     f"arrived before it timed out ({message[:100]})")
        explanation = (
            f"{who(culprit_of(first))} failed during the {kind} step at {when_row(first)}: {message[:200]}. "
            + (f"{len(rows)} related line(s) on {len(places)} host(s). " if len(rows) > 1 else "")
            + self._hint(message)
            + (f" It came after an earlier failure ({str(earlier.get('text'))[:120]}), which is the likely cause: "
               "a rank that died cannot join." if earlier is not None else "")
        )
        culprit = culprit_of(first) if event_of(first) != Event.STORE_ERROR and place_of(first) else None
        named = by_id(field_of(first, "key"))
        if named is not None and named.blame == "named" and first.get("rank") is not None:
            # The message names the process at fault (a rank two processes claimed), not the one that
            # printed it: that rank, whose host the line does not say.
            culprit = Culprit(rank=int(first["rank"]), time=first.get("time"), evidence=evidence_of(first))
        return [self.finding(
            title=title,
            explanation=capitalised(explanation.strip()),
            advice=("Run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET to see the interface each rank "
                    "chose; set NCCL_SOCKET_IFNAME to the interface that connects the nodes; make sure every rank has "
                    "the same world size and master address and that none died before init_process_group."),
            rows=[first, *[r for r in rows if r is not first][:5]],
            culprit=None if earlier is not None else culprit,
            role=Role.CONSEQUENCE if earlier is not None else Role.ROOT,
            category=Category.HANG if stuck else None,
            severity=Severity.WARNING if earlier is not None else Severity.CRITICAL,
            hosts=places if culprit is None else [h for h in [place_of(first)] if h],
            # a store wait that times out may be a reaction to a rank that failed before arriving
            reactive=event_of(first) == Event.STORE_ERROR and possible_cause(job, first, places) is not None,
        )]

    @staticmethod
    def _hint(message: str) -> str:
        if re.search(r"no socket interface|No usable listening interface", message):
            return "NCCL found no network interface to bootstrap on: set NCCL_SOCKET_IFNAME to the right one."
        if "NCCL_COMM_ID" in message:
            return "NCCL_COMM_ID is malformed or differs between ranks."
        if "mismatch in rank count" in message or "already checked in" in message:
            return "Ranks disagree on the world size, or two processes claimed the same rank."
        if "NET plugin" in message:
            return "No NCCL network plugin could start (IB stack, plugin library, NCCL_NET)."
        if STORE.search(message):
            return "Not every rank reached the store: one crashed, hangs before init, or was started with another world size."
        if INVALID_USAGE.search(message):
            return "NCCL rejected the communicator before it was created (see the NCCL WARN lines above it)."
        return ""

    @staticmethod
    def _bootstrap(job: JobView) -> list[dict[str, Any]]:
        # The catalogue knows some of these messages (KNOWN_MESSAGE rows carry no message field).
        # Polars picks the rows (a crash loop leaves ~100,000 NCCL WARN and exception rows): the
        # patterns are literals, which both regex engines read alike.
        message = pl.col("fields").struct.field("message")
        said = pl.when(message.is_not_null() & (message != "")).then(message).otherwise(pl.col("text").fill_null(""))

        def bootstrap(row: dict[str, Any]) -> bool:  # the same in Python
            return (row.get("severity") != "info"
                    and BOOTSTRAP.search(field_of(row, "message") or row.get("text") or "") is not None)

        return job.rows_where((Event.NCCL_WARN, Event.NCCL_PLUGIN, Event.KNOWN_MESSAGE),
                              (pl.col("severity").is_null() | (pl.col("severity") != "info"))
                              & said.str.contains(BOOTSTRAP.pattern), bootstrap, apart=True)

    @staticmethod
    def _invalid_usage(job: JobView) -> list[dict[str, Any]]:
        if job.has(Event.NCCL_DUPLICATE_GPU, Event.NCCL_VERSION_MISMATCH):
            return []  # LS206 / LS802 name the reason
        rows = job.rows_where((Event.EXCEPTION, Event.CPP_EXCEPTION),
                              message_and_text().str.contains(INVALID_USAGE.pattern),
                              lambda row: INVALID_USAGE.search(message_and_text_of(row)) is not None)
        if not rows:
            return []
        inits = job.rows(Event.NCCL_INIT)
        out = []
        for r in rows:
            same = [i for i in inits if (i.get("host"), i.get("pid")) == (r.get("host"), r.get("pid"))
                    or (r.get("rank") is not None and i.get("rank") == r.get("rank"))]
            if not any(happened_before(i, r) for i in same) and not (inits and not same and r.get("pid") is None):
                out.append(r)
        return out

    @staticmethod
    def _store(job: JobView) -> list[dict[str, Any]]:
        out = []
        for r in job.rows(Event.STORE_ERROR):
            error_type = str(field_of(r, "error_type") or "")
            text = f"{field_of(r, 'message') or ''} {r.get('text') or ''}"
            if "Rendezvous" in error_type or "client socket" in text or "TCP client failed" in text:
                continue  # LS208
            count, size = field_of(r, "count"), field_of(r, "world_size")
            if count is not None and size is not None and int(count) > int(size):
                continue  # more workers than the world: LS202 duplicate-rank
            if STORE.search(text) or "DistStoreError" in error_type:
                out.append(r)
        return out


__all__ = ["NcclBootstrapError"]
