"""LS208 rendezvous-unreachable: nodes could not reach the rendezvous / TCPStore endpoint.

What it detects
    Clients failing to connect to the rendezvous store: ``The client socket has timed out after
    600000ms while trying to connect to (172.18.21.4, 37907)``, ``The client socket has failed to
    connect to [host]:port`` / ``to any network address of (host, port)``, ``The client socket
    cannot be initialized to connect to host:port``, ``TCP client failed to connect/validate to host
    H:P``, raised as ``DistNetworkError``/``TimeoutError``/``RuntimeError``, and torchrun's
    ``RendezvousConnectionError``. It names the endpoint, the nodes that could not reach it, and
    the nodes that did. A ``RendezvousTimeoutError`` is not one: the store answered, but too few
    nodes joined before the join timeout (LS207 when the node count is wrong).

Why it matters
    Every node must reach the store on the master node before anything else happens. When they
    cannot, the job dies (or waits for the join timeout, often 10-30 minutes) before the first
    step, with errors that do not say why. If no node reached it, nothing listened there: a wrong
    ``MASTER_ADDR`` (``localhost``, an unresolvable name, a login node), the master's torchrun not
    started or already dead, or a firewall. If only some nodes failed, their network path is the
    problem (wrong interface, DNS).

Evidence
    ``store_error`` events with the client-socket and rendezvous messages above (their peer and
    port), torchrun's ``rdzv_endpoint`` / ``master_addr`` from launch configs and rendezvous
    results, and which nodes completed a rendezvous. Port-in-use errors (LS205) and earlier crashes
    make this a consequence.

Example
    ::

        [E521 15:43:02.707733876 socket.cpp:1023] [c10d] The client socket has timed out after 600000ms while trying to connect to (172.18.21.4, 37907).
        torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details.

False positives
    When the master's agent died first (crash, OOM kill) the other nodes' connection errors are
    consequences; that is only known if the master's failure is in the logs.

Advice
    Compute the endpoint once in the batch script from the first node of the allocation
    (``MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)``), use the same
    ``--rdzv_endpoint`` everywhere, check that the name resolves and the port is open from the other
    nodes (``nc -zv $MASTER_ADDR $MASTER_PORT``), and that the master's torchrun really started.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, evidence_of, field_of, when_row
from logscope.detectors.job_facts import first_failure, place_of, possible_cause
from logscope.model import Category, Culprit, Event, Finding, Role, Severity
from logscope.timeline import node_of_host

CLIENT_FAILURE = re.compile(
    r"The client socket (?:has timed out|has failed to connect|cannot be initialized)|TCP client failed to connect"
    r"|RendezvousConnectionError", re.IGNORECASE)
_LOCAL = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


class RendezvousUnreachable(Detector):
    code = "LS208"
    name = "rendezvous-unreachable"
    category = Category.LAUNCH
    requires: ClassVar[frozenset[Event]] = frozenset({Event.STORE_ERROR})
    specificity = 70

    def detect(self, job: JobView) -> list[Finding]:
        rows = [r for r in job.rows_in_order(Event.STORE_ERROR)
                if CLIENT_FAILURE.search(f"{field_of(r, 'error_type') or ''} {field_of(r, 'message') or ''}")]
        if not rows:
            return []
        first = rows[0]
        endpoint_host, endpoint_port = self._endpoint(job, rows)
        failing = sorted({p for p in (place_of(r) for r in rows) if p})
        reached = sorted({p for p in (place_of(r) for r in job.rows(Event.RENDEZVOUS)) if p}
                         - set(failing))
        earlier = first_failure(job, before=first)
        port_in_use = job.of(Event.PORT_IN_USE).height > 0
        endpoint = f"{endpoint_host or '?'}:{endpoint_port}" if endpoint_port else (endpoint_host or "the store")
        local = (endpoint_host or "").lower() in _LOCAL
        multi = len(job.nodes) > 1 or len(failing) + len(reached) > 1

        culprit_host: str | None = None
        if reached and len(failing) == 1:
            culprit_host, why = failing[0], (f"{failing[0]} could not reach it while {', '.join(reached[:4])} did: "
                                             "its network path (interface, DNS, firewall) is the problem")
        elif local and multi:
            why = ("the endpoint is the local host, so every node looked for the store on itself; only the master "
                   "node has it")
        elif endpoint_host and not reached:
            # The master's node is at fault only if it is one of the job's nodes (its torchrun not
            # started, or gone). An address no node of the job has (the login node, a container's
            # bridge address) is a wrong MASTER_ADDR: the launch configuration, no host, is to blame.
            master = node_of_host(endpoint_host, list(job.nodes)) if not local else None
            culprit_host = master if master in job.nodes else None
            why = (f"no node reached {endpoint}: nothing was listening there (wrong MASTER_ADDR, the master's "
                   "torchrun not started or already gone, or a firewall)")
        else:
            why = "the rendezvous store could not be reached"
        who_failed = f"{len(failing)} node(s) ({', '.join(failing[:4])})" if failing else "the processes"
        title = f"Rendezvous endpoint {endpoint} unreachable from {who_failed}"
        explanation = (
            f"{who_failed} failed to connect to the rendezvous/TCPStore at {endpoint}, first at "
            f"{when_row(first)}: {why}. "
            + (f"Earlier, {str(earlier.get('text'))[:120]!r}: the store probably went away with it, so this is a "
               "consequence. " if earlier is not None else "")
            + ("The port was already in use on the master (LS205), so the store never started there. "
               if port_in_use else "")
        )
        consequence = earlier is not None or port_in_use
        culprit = None
        if culprit_host and not consequence:
            culprit = Culprit(host=culprit_host, node=culprit_host, time=first.get("time"), evidence=evidence_of(first))
        config = job.of(Event.LAUNCH_CONFIG).head(1).to_dicts()
        return [self.finding(
            title=title,
            explanation=explanation.strip(),
            advice=("Set the endpoint once from the first node of the allocation (MASTER_ADDR=$(scontrol show "
                    "hostnames $SLURM_JOB_NODELIST | head -n1)), pass the same --rdzv_endpoint to every node, and check "
                    "from another node that it resolves and the port is open (nc -zv $MASTER_ADDR $MASTER_PORT)."),
            rows=[*rows[:5], *config],
            culprit=culprit,
            role=Role.CONSEQUENCE if consequence else Role.ROOT,
            severity=Severity.WARNING if consequence else Severity.CRITICAL,
            hosts=[culprit.host] if culprit and culprit.host else failing,
            # the store may be gone because its host failed at a moment the logs cannot place
            reactive=self._store_host_failed(job, first, failing, endpoint_host),
        )]

    @staticmethod
    def _store_host_failed(job: JobView, first: dict[str, Any], failing: list[str], endpoint_host: str | None) -> bool:
        """Whether a failure that may have come first can explain the store being gone: one on the
        endpoint's node, or one the logs place nowhere. A process that failed on another node (srun
        reporting a client's exit) took no store with it."""
        cause = possible_cause(job, first, failing)
        if cause is None:
            return False
        place = place_of(cause)
        if place is None or endpoint_host is None:
            return True
        return place == node_of_host(endpoint_host, list(job.nodes))

    @staticmethod
    def _endpoint(job: JobView, rows: list[dict[str, Any]]) -> tuple[str | None, int | None]:
        for r in rows:
            peer, port = field_of(r, "peer"), field_of(r, "master_port")
            if peer:
                return str(peer), int(port) if port is not None else None
        config = job.of(Event.LAUNCH_CONFIG, Event.RENDEZVOUS).filter(
            pl.col("fields").struct.field("master_addr").is_not_null()).head(1).to_dicts()
        if config:
            port = field_of(config[0], "master_port")
            return str(field_of(config[0], "master_addr")), int(port) if port is not None else None
        return None, None


__all__ = ["CLIENT_FAILURE", "RendezvousUnreachable"]
