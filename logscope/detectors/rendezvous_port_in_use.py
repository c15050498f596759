"""LS205 rendezvous-port-in-use: the rendezvous/store port was already taken.

What it detects
    ``errno: 98 - Address already in use`` (TCPStore / c10d rendezvous) when torchrun tries to
    start the rendezvous server, and says whether it happened on the master node or elsewhere.

Why it matters
    On the master node it means another job (or a stale process from a previous run) holds the
    port. On a *non-master* node it means that node also believed it was the master: the
    classic symptom of every node launching as node 0 (LS201), or of several jobs sharing a node
    with the same fixed ``MASTER_PORT``.

Evidence
    ``DistNetworkError``/``RuntimeError`` lines naming ``Address already in use`` and the port,
    the node that printed them, and the rendezvous endpoint from torchrun's launch config.

Example
    ::

        torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use

False positives
    ``Address already in use`` from another program (a helper server the batch script starts)
    reads the same; it is ignored when torchrun on that node went on to form the rendezvous or
    finish. Whether the node is "the master" is judged from the endpoint in the launch config,
    when it is logged.

Advice
    Pick a free, job-specific port (``MASTER_PORT=$((10000 + SLURM_JOB_ID % 50000))``), make sure
    only the master node hosts the store (escape ``\\$SLURM_PROCID``; use c10d rendezvous), and
    kill stale launchers from earlier jobs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import (
    Detector,
    JobView,
    event_of,
    evidence_of,
    field_of,
    order_key,
    place_of,
    seen_at,
    who,
)
from logscope.model import Category, Culprit, Event, Finding, Severity
from logscope.timeline import node_of_host


class RendezvousPortInUse(Detector):
    code = "LS205"
    name = "rendezvous-port-in-use"
    category = Category.LAUNCH
    requires: ClassVar[frozenset[Event]] = frozenset({Event.PORT_IN_USE})
    specificity = 85

    def detect(self, job: JobView) -> list[Finding]:
        # A port taken on a node whose torchrun then formed the rendezvous (or finished) did not
        # stop the launch: some other program's port (a helper server in the batch script).
        met = [r for r in job.rows(Event.RENDEZVOUS, Event.AGENT_FINISHED)
               if event_of(r) == Event.AGENT_FINISHED or field_of(r, "message") == "rendezvous result"]
        rows = [r for r in job.rows(Event.PORT_IN_USE)
                if not any(place_of(m) == place_of(r) and order_key(m) > order_key(r) for m in met)]
        if not rows:
            return []
        first = rows[0]
        masters = job.of(Event.LAUNCH_CONFIG, Event.RENDEZVOUS).select(
            pl.col("fields").struct.field("master_addr").drop_nulls()).to_series().unique().to_list()
        master_nodes = {node_of_host(str(m), list(job.nodes)) for m in masters}
        place = first.get("node") or first.get("host")
        port = field_of(first, "master_port")
        if place is None and len(master_nodes) == 1 and self._store_port(job, port):
            # A line no name or tag places (a paste, a renamed file): only the rendezvous endpoint's
            # node binds the store's port, and the launch configuration names that node.
            place = next(iter(master_nodes))
        off_master = bool(master_nodes) and place is not None and place not in master_nodes
        where = f" on {place}" if place else ""
        title = (f"Rendezvous port{f' {port}' if port else ''} already in use{where}"
                 + (", which is not the master node: it also tried to host the rendezvous" if off_master else ""))
        return [self.finding(
            title=title,
            explanation=(f"{who(first) if first.get('node') or first.get('host') else place or who(first)} could not "
                         "bind the rendezvous/store port. "
                         + ("Only the master node should listen on it; a non-master node doing so believes it "
                            "is node 0 (see LS201)." if off_master else
                            "Another process (another job, or a leftover launcher) holds the port.")),
            advice=("Use a job-specific MASTER_PORT, escape \\$SLURM_PROCID so only node 0 hosts the store, and "
                    "make sure no stale torchrun from an earlier job is still running on the node."),
            rows=rows[:4],
            severity=Severity.CRITICAL,
            # the node whose port was taken; no process of the job is at fault
            culprit=Culprit(host=place, node=place, time=seen_at(first), evidence=evidence_of(first)) if place else None,
        )]

    @staticmethod
    def _store_port(job: JobView, port: Any) -> bool:
        """Whether ``port`` (a bind failure's) is the rendezvous store's, as the launch configuration
        or a rendezvous result names it (a bind failure naming no port: the store's, if one is named)."""
        ports = set(job.of(Event.LAUNCH_CONFIG, Event.RENDEZVOUS).select(
            pl.col("fields").struct.field("master_port").drop_nulls()).to_series().to_list())
        return bool(ports) and (port is None or port in ports)
