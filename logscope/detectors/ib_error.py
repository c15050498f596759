"""LS401 ib-error: InfiniBand/RoCE transfers between nodes failed.

What it detects
    NCCL's IB transport reporting failed work completions, in its three generations:
    ``NET/IB : Got completion from peer P with error 12, opcode 0, len 0, vendor err 129 (Recv)``
    (old ``net_ib.cc``), ``... with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ...``
    (plugins, middle generation), ``NET/IB: Got completion from peer P with status=
    IBV_WC_RETRY_EXC_ERR(12) opcode=... vendor_err=129 ... hca mlx5_0`` (current ``p2p.cc``), and
    ``NET/IBP:`` forms of other plugins; also HCA ``async fatal event`` reports. It names the
    reporting host, the peer (its address mapped to a host through the addresses NCCL printed at
    init), the completion status and the vendor error.

Why it matters
    ``RETRY_EXC_ERR`` (12) means the HCA retried a transfer until it gave up: the peer was
    unreachable (bad cable, switch port, subnet manager, a down HCA, or IB not provisioned between
    the hosts). NCCL turns it into ``ncclRemoteError`` and every rank then fails or times out.
    Which link failed is in these lines only. ``WR_FLUSH_ERR`` (5) is the queue being flushed
    after an earlier error, and errors after a process already crashed are consequences of it.

Evidence
    ``nccl_net_error`` events (peer, status, vendor error, Send/Recv, HCA). Peer addresses are
    mapped to hosts with the ``NET/IB : Using ...; OOB if:addr`` / ``NET/Socket : Using`` /
    ``Bootstrap : Using`` lines. When several hosts report errors with the same peer, that peer is
    named as the culprit; when one host reports errors with several peers, the reporting host's own
    HCA or link is; one host and one peer point at the link between them (no single culprit).

Example
    ::

        node-2:5776:5902 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len 0, vendor err 129 (Recv)

False positives
    When a remote process dies (crash, OOM kill), its peers' transfers fail with these errors too;
    if an earlier failure exists, or SLURM later reports the peer (or reporter) as a failed node
    (srun names a lost node only minutes after it died), the finding is a consequence.

Advice
    Check the link between the named hosts: ``ibstat`` / ``ibv_devinfo`` (port State: Active),
    ``ibdiagnet`` or the switch port counters, and run ``ib_write_bw`` between them or
    ``nccl-tests`` across the two nodes. Resubmit excluding the suspect node. A protection or
    access status (``LOC_PROT_ERR``, ``REM_ACCESS_ERR``: :data:`MEMORY_STATUSES`) is no link fault:
    check GPUDirect RDMA (nvidia-peermem, IOMMU, ACS), the driver and NCCL versions and the
    locked-memory limit instead.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, ClassVar

from logscope.detectors.base import Detector, JobView, event_of, evidence_of, field_of, when_row
from logscope.detectors.job_facts import (
    NODE_FAILURE_EVENTS,
    address_map,
    failed_nodes,
    first_failure,
    node_failure_rows,
    peer_host,
    place_of,
)
from logscope.model import Category, Culprit, Event, Finding, Role, Severity

# ibv_wc_status (verbs.h)
WC_STATUS = {
    1: "LOC_LEN_ERR", 2: "LOC_QP_OP_ERR", 3: "LOC_EEC_OP_ERR", 4: "LOC_PROT_ERR", 5: "WR_FLUSH_ERR",
    6: "MW_BIND_ERR", 7: "BAD_RESP_ERR", 8: "LOC_ACCESS_ERR", 9: "REM_INV_REQ_ERR", 10: "REM_ACCESS_ERR",
    11: "REM_OP_ERR", 12: "RETRY_EXC_ERR", 13: "RNR_RETRY_EXC_ERR", 14: "LOC_RDD_VIOL_ERR",
    15: "REM_INV_RD_REQ_ERR", 16: "REM_ABORT_ERR", 17: "INV_EECN_ERR", 18: "INV_EEC_STATE_ERR", 19: "FATAL_ERR",
    20: "RESP_TIMEOUT_ERR", 21: "GENERAL_ERR",
}
STATUS_MEANING = {
    "RETRY_EXC_ERR": "transport retries exhausted: the peer was unreachable (link, switch, HCA or fabric)",
    "RNR_RETRY_EXC_ERR": "receiver-not-ready retries exhausted: the peer stopped posting receives",
    "WR_FLUSH_ERR": "queue flushed after an earlier error (a consequence)",
    "LOC_PROT_ERR": "local protection error: memory registration problem (GPUDirect RDMA / driver)",
    "REM_ACCESS_ERR": "remote access error: the peer rejected the memory access",
    "REM_OP_ERR": "remote operation error on the peer",
    "LOC_LEN_ERR": "local length error",
}
# The statuses that say the HCA refused a memory access or a malformed request on a working link:
# the memory NCCL registered (GPUDirect RDMA, the driver, the locked-memory limit), not the cable.
MEMORY_STATUSES = frozenset({"LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_PROT_ERR", "MW_BIND_ERR", "LOC_ACCESS_ERR",
                             "REM_INV_REQ_ERR", "REM_ACCESS_ERR"})
LINK_ADVICE = ("Check the IB link between the named hosts: `ibstat` / `ibv_devinfo` (port State: Active), "
               "`ibdiagnet` or the switch port counters; run `ib_write_bw` between them or nccl-tests across "
               "the two nodes, and resubmit excluding the suspect node.")
MEMORY_ADVICE = ("A protection or access error is no link fault: the HCA refused the memory NCCL registered. "
                 "Check GPUDirect RDMA on the reporting host (the nvidia-peermem module loaded, the IOMMU off or "
                 "in passthrough, PCIe ACS disabled), the GPU driver, NCCL and net-plugin versions, and the "
                 "locked-memory limit (`ulimit -l` unlimited in the job); NCCL_NET_GDR_LEVEL=LOC (no GPUDirect "
                 "RDMA) tells whether GPUDirect is the cause.")
_STATUS = re.compile(r"(?:with error|status=)\s*(?:IBV_WC_)?(\w*?)(?:\((\d+)\))?[\s,]")
_VENDOR = re.compile(r"vendor[_ ]err[= ](\d+)")
_DIRECTION = re.compile(r"\((Send|Recv)\)")
_HCA = re.compile(r"\bhca (\S+)")


def completion_status(text: str) -> tuple[int | None, str | None]:
    """(status code, name) from any generation of the completion-error line."""
    m = _STATUS.search(text + " ")
    if not m:
        return None, None
    word, number = m.group(1), m.group(2)
    code: int | None
    if number:
        code = int(number)
    elif word.isdigit():
        code = int(word)
    else:
        code = next((k for k, v in WC_STATUS.items() if v == word.upper()), None)
    name = WC_STATUS.get(code) if code is not None else (word or None)
    return code, name


class IbError(Detector):
    code = "LS401"
    name = "ib-error"
    category = Category.NETWORK
    requires: ClassVar[frozenset[Event]] = frozenset({Event.NCCL_NET_ERROR})
    specificity = 70

    def detect(self, job: JobView) -> list[Finding]:
        rows = job.rows_in_order(Event.NCCL_NET_ERROR)
        if not rows:
            return []
        addresses = address_map(job)
        nodes = list(job.nodes)
        completions = [r for r in rows if "completion" in str(r.get("text"))]
        fatal_events = [r for r in rows if "completion" not in str(r.get("text"))]
        # The first real error: a flush (status 5) only follows another one.
        real = [r for r in completions if completion_status(str(r.get("text")))[1] != "WR_FLUSH_ERR"]
        first = (real or completions or rows)[0]
        text = str(first.get("text") or "")
        code, status = completion_status(text)
        vendor = _VENDOR.search(text)
        direction = _DIRECTION.search(text)
        hca = _HCA.search(text)

        pairs: Counter[tuple[str | None, str | None]] = Counter()
        for r in completions:
            pairs[(place_of(r), peer_host(field_of(r, "peer"), addresses, nodes))] += 1
        reporters = {p for p, _ in pairs}
        peers = {q for _, q in pairs}
        culprit_host, how = self._blame(pairs, reporters, peers, fatal_events)
        earlier = first_failure(job, before=first)
        dead = sorted(failed_nodes(job) & ({culprit_host} | peers | reporters) - {None})
        if earlier is None and dead:
            # The node SLURM lost was at the other end: its transfers failed because it died.
            earlier = node_failure_rows(job)[0]

        reporter = place_of(first)
        peer = peer_host(field_of(first, "peer"), addresses, nodes)
        status_text = (f"status {status}" + (f" ({code})" if code is not None and str(code) != status else "")
                       if status else "an error")
        meaning = STATUS_MEANING.get(status or "", "")
        if first in fatal_events:
            title = f"InfiniBand HCA fatal event on {reporter or 'a host'}: {field_of(first, 'reason')}"
        else:
            title = (f"InfiniBand transfer failed between {reporter or 'a host'} and {peer or 'a peer'}: "
                     f"{status_text}")
        if first in fatal_events:
            what = (f"At {when_row(first)} the InfiniBand HCA of {reporter or 'an unnamed host'} reported a "
                    f"fatal asynchronous event ({field_of(first, 'reason')}). ")
        else:
            what = (f"At {when_row(first)} NCCL on {reporter or 'an unnamed host'} got a failed work "
                    f"completion from {peer or 'its peer'} with {status_text}"
                    + (f", vendor error {vendor.group(1)}" if vendor else "")
                    + (f", {direction.group(1)}" if direction else "") + (f", HCA {hca.group(1)}" if hca else "")
                    + ". " + (f"{status} means {meaning}. " if meaning else ""))
        if earlier is None:
            after = "NCCL reports these as ncclRemoteError; the timeouts and aborts on other ranks follow from them."
        elif event_of(earlier) in NODE_FAILURE_EVENTS:
            after = (f"SLURM reported {', '.join(dead)} as a failed node ({str(earlier.get('text'))[:100]}): the "
                     "transfers failed because the node died, so this is a consequence.")
        else:
            after = (f"An earlier failure ({str(earlier.get('text'))[:120]}) came first: the peer probably went away, "
                     "so this is a consequence.")
        explanation = (what + f"{len(rows)} such error(s) from {len(reporters)} host(s) naming {len(peers)} "
                       f"peer(s): {how}. " + after)
        culprit = None
        if culprit_host:
            culprit = Culprit(host=culprit_host, node=culprit_host, time=first.get("time"), evidence=evidence_of(first))
        hosts = sorted({h for pair in pairs for h in pair if h} | {h for h in [reporter] if h})
        evidence: list[dict[str, Any]] = [first, *[r for r in rows if r is not first][:5]]
        return [self.finding(
            title=title,
            explanation=explanation,
            advice=MEMORY_ADVICE if status in MEMORY_STATUSES else LINK_ADVICE,
            rows=evidence,
            culprit=culprit,
            role=Role.CONSEQUENCE if earlier is not None else Role.ROOT,
            severity=Severity.WARNING if earlier is not None else Severity.CRITICAL,
            hosts=[culprit_host] if culprit_host else hosts,
        )]

    @staticmethod
    def _blame(pairs: Counter[tuple[str | None, str | None]], reporters: set[str | None],
               peers: set[str | None], fatal: list[dict[str, Any]]) -> tuple[str | None, str]:
        """Who the errors point at: a shared peer, a reporter with many peers, or just a link."""
        fatal_hosts = {place_of(r) for r in fatal} - {None}
        if len(fatal_hosts) == 1:
            host = next(iter(fatal_hosts))
            return host, f"the HCA of {host} reported a fatal event"
        named_reporters = reporters - {None}
        named_peers = peers - {None}
        if len(named_reporters) >= 2 and len(named_peers) == 1:
            peer = next(iter(named_peers))
            return peer, f"every reporting host names the same peer, {peer}"
        if len(named_reporters) == 1 and len(named_peers) >= 2:
            host = next(iter(named_reporters))
            return host, f"{host} failed with {len(named_peers)} different peers, so its own link or HCA is suspect"
        if len(named_peers) == 1 and len(named_reporters) <= 1:
            peer = next(iter(named_peers))
            reporter = next(iter(named_reporters), None)
            return None, (f"the link between {reporter or 'the reporting host'} and {peer} failed; the logs cannot "
                          "tell which end is at fault")
        return None, "no single host is common to all of them"


__all__ = ["WC_STATUS", "IbError", "completion_status"]
