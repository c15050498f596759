"""LS402 socket-error: TCP connections between ranks broke (NCCL sockets, Gloo, the store).

What it detects
    NCCL's socket transport and bootstrap failing (``socketProgressOpt: Call to recv from
    172.x<33759> failed : Connection reset by peer``, ``socketProgress: Connection closed by
    remote peer host<53735>``, ``Net : Connection closed by remote peer``, ``socketStartConnect:
    Connect to A<port> failed : ...``), Gloo's ``Connection closed by peer [ip]:port`` / ``Read
    error [ip]:port: Connection reset by peer``, and ``Broken pipe`` in distributed errors. It names
    the peer host (its address mapped through the addresses NCCL printed at init).

Why it matters
    A socket error means the process at the other end went away or the network between them
    dropped the connection. Most of the time the other end *died* (crash, OOM kill, SIGKILL) and
    these errors are consequences: the finding is then a consequence and the other detectors name
    the crash. It is the root only when nothing failed before it: a flaky Ethernet/IPoIB link, a
    firewall, an idle-connection reaper, or a peer that vanished without a trace (a node reboot).

Evidence
    ``nccl_socket_error`` events and exception / NCCL WARN lines with the messages above. The
    earliest of them is compared with the earliest real failure of the job (exceptions, non-signal
    exits, OOM kills, node failures, cancellations): if one came first, this is a consequence.

Example
    ::

        socketProgressOpt: Call to recv from 172.31.8.153<33759> failed : Connection reset by peer
        node-1:922:1149 [3] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node-2<53735>

False positives
    A peer killed by SIGKILL whose kill is not in the logs (no slurmstepd/kernel line, no torchrun
    exit code) makes the socket error look like the root; the named peer is then the node to
    look at anyway. A peer that SLURM reports as a failed node makes this a consequence even
    though srun's line comes later. When another node's failure cannot be ordered against it, the
    finding is marked reactive and yields to that failure.

Advice
    Look at the named peer's own log around that time: if it crashed, fix that. If it did not,
    check the network path between the two hosts (``NCCL_SOCKET_IFNAME`` pointing at the right
    interface, MTU, firewall), and enable ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET`` to see
    which interface each host used.
"""

from __future__ import annotations

import re
from collections import Counter
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
from logscope.detectors.job_facts import (
    FAILURE_EVENTS,
    NODE_FAILURE_EVENTS,
    address_map,
    capitalised,
    failed_nodes,
    first_failure,
    node_failure_rows,
    peer_host,
    place_of,
    possible_cause,
)
from logscope.model import Category, Culprit, Event, Finding, Role, Severity

SOCKET_TEXT = re.compile(
    r"Connection reset by peer|Connection closed by (?:remote )?peer|Broken pipe|Software caused connection abort",
    re.IGNORECASE,
)
SOCKET_TEXT_RUST = "(?i)" + SOCKET_TEXT.pattern  # the same, for polars
# What names the peer as the end that went away: NCCL's socketStartConnect "Connect to %s failed :
# %s" with ECONNREFUSED's text (nothing listens there; src/misc/socket.cc), and a connection the peer
# closed (recv returned 0, its process ended): NCCL's socketProgress "Connection closed by remote
# peer %s", gloo's pair.cc "Connection closed by peer [%s]:%d".
PEER_WENT_AWAY = re.compile(r"[Cc]onnect to \S+ failed ?: ?Connection refused|Connection closed by (?:remote )?peer")
# The address a message names: "from 172.1.2.3<33759>", "peer [10.0.0.2]:5000", "peer host<53735>".
_PEER = re.compile(
    r"(?:from|to|peer|error) (\[[^\]]+\]:\d+|[\w.:-]+<\d+>|[\w.-]+:\d+)",
)


class SocketError(Detector):
    code = "LS402"
    name = "socket-error"
    category = Category.NETWORK
    requires: ClassVar[frozenset[Event]] = frozenset({Event.NCCL_SOCKET_ERROR, Event.EXCEPTION, Event.NCCL_WARN})
    specificity = 45

    def detect(self, job: JobView) -> list[Finding]:
        # Polars picks the rows (a crash can leave thousands of exception lines); their dicts are the
        # ones the view shares (the exit cascade and LS206 read every exception and NCCL WARN).
        rows = job.rows_where((Event.NCCL_SOCKET_ERROR, Event.EXCEPTION, Event.NCCL_WARN),
                              (pl.col("event") == Event.NCCL_SOCKET_ERROR.value)
                              | message_and_text().str.contains(SOCKET_TEXT_RUST),
                              lambda row: (row["event"] == Event.NCCL_SOCKET_ERROR.value
                                           or SOCKET_TEXT.search(message_and_text_of(row)) is not None))
        if not rows:
            return []
        rows.sort(key=order_key)
        first = rows[0]
        addresses = address_map(job)
        nodes = list(job.nodes)
        peers: Counter[str] = Counter()
        reporters: set[str] = set()
        # The peer a line names depends on its words alone: a crash loop repeats a few hundred
        # lines over ~26,000 rows, each read once here.
        peer_of: dict[tuple[Any, ...], str | None] = {}
        for r in rows:
            said = (field_of(r, "peer"), field_of(r, "message"), r.get("text"))
            if said not in peer_of:
                peer_of[said] = self._peer(r, addresses, nodes)
            peer = peer_of[said]
            if peer:
                peers[peer] += 1
            if place_of(r):
                reporters.add(str(place_of(r)))
        # The peer most lines name is the end that went away.
        peer_name = peers.most_common(1)[0][0] if peers else None
        # Exceptions that are themselves peer-loss messages are victims (is_victim) and do not count.
        earlier = first_failure(job, before=first, events=(*FAILURE_EVENTS, Event.CANCELLED))
        dead = sorted(failed_nodes(job) & ({peer_name} | reporters))
        if earlier is None and dead:
            # SLURM reports a lost node late: a connection to it that broke before is still its consequence.
            earlier = node_failure_rows(job)[0]
        root = earlier is None
        message = str(field_of(first, "message") or first.get("text") or "")[:120]
        title = (f"Connection to {peer_name or 'a peer'} broke: {message}" if root
                 else f"Socket errors after an earlier failure (peer {peer_name or 'unknown'})")
        explanation = (
            f"{who(culprit_of(first))} lost its connection"
            + (f" to {peer_name}" if peer_name else "") + f" at {when_row(first)} ({message}). "
            + (f"{len(rows)} socket error line(s) from {len(reporters) or 'unknown'} host(s)"
               + (f"; most name {peer_name}" if peer_name and len(peers) > 1 else "") + ". ")
            + ("Nothing failed before it, so the connection itself broke or the peer vanished without a trace: "
               "look at that peer." if root else
               f"SLURM reported {', '.join(dead)} as a failed node: the connection broke because the node died, so "
               "these errors are consequences." if earlier is not None and event_of(earlier) in NODE_FAILURE_EVENTS
               else f"It follows an earlier failure ({str(earlier.get('text'))[:120] if earlier else ''}): the peer "
               "went away because of it, so these errors are consequences.")
        )
        culprit = None
        # Only a peer that went away is the end at fault: nothing listened at its address (a refused
        # connect) or it closed the connection (its process ended). A connection reset, aborted,
        # timed out or broken between two ends says it broke, not which end broke it: the peer's
        # address is where the failure was seen from. A host "losing" a connection to its own
        # address chose a wrong interface or address: the logs then name no end at fault either.
        if root and peer_name and reporters != {peer_name} and PEER_WENT_AWAY.search(message_and_text_of(first)):
            culprit = Culprit(host=peer_name, node=peer_name, time=first.get("time"), evidence=evidence_of(first))
        evidence: list[dict[str, Any]] = [first, *[r for r in rows if r is not first][:5]]
        return [self.finding(
            title=capitalised(title),
            explanation=capitalised(explanation),
            advice=("Look at the named peer's own log around that time: if it crashed or was killed, fix that. "
                    "Otherwise check the network path between the two hosts (NCCL_SOCKET_IFNAME, MTU, firewall) "
                    "and run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET."),
            rows=evidence,
            culprit=culprit,
            role=Role.ROOT if root else Role.CONSEQUENCE,
            severity=Severity.ERROR if root else Severity.WARNING,
            hosts=[peer_name] if root and peer_name else sorted(reporters),
            # a peer closing the connection may be its reaction to a failure whose order is unknown;
            # with no end to name, the reporter only witnessed the connection break
            reactive=culprit is None or possible_cause(job, first, reporters) is not None,
        )]

    @staticmethod
    def _peer(row: dict[str, Any], addresses: dict[str, str], nodes: list[str]) -> str | None:
        peer = field_of(row, "peer")
        if not peer:
            m = _PEER.search(message_and_text_of(row))
            peer = m.group(1) if m else None
        return peer_host(peer, addresses, nodes)


__all__ = ["SOCKET_TEXT", "SocketError"]
