"""LS901 known-message: a failure message from the catalogue that no specific detector explains.

What it detects
    Lines holding a message of logscope's message catalogue (``logscope/knowledge/messages.toml``:
    NCCL, PyTorch c10d and elastic, DeepSpeed, SLURM, driver and runtime messages, each with its
    upstream source file) whose meaning is known but which no specialised detector reads: an NCCL
    socket filter matching no interface, NVLS multicast memory that cannot be bound, a foreign
    connection on an NCCL port, an elastic agent that lost its rendezvous store, a rendezvous with
    more nodes than allowed. The finding takes the message's category (launch, hardware, network,
    hang...) from the catalogue.

Why it matters
    Real failures speak in hundreds of messages; a verdict must not fall back to "healthy" or
    "unknown" because the one line that says what happened is not among the handful a detector
    was written for. The catalogue records what each message means and whom it blames: the
    process that printed it (a CUDA call that failed there), or nobody (a timeout it waited out).

Evidence
    ``known_message`` events (``fields.key`` is the catalogue id). The first line of each message
    is the evidence. The printing process is named as the culprit only for messages that blame
    it, and only when it is the one process that printed it at that moment; when every process of
    a node printed it at once, the node is named, not a rank.

Example
    ::

        rdma-test-gpu-worker-1: rdma-test-gpu-worker-1:2918:4483 [4] transport/nvls.cc:245 NCCL WARN Cuda failure 'initialization error'
        [trainer0|0]:ncclSocketInit: connecting to address  with family 59936 is neither AF_INET(2) nor AF_INET6(10)

False positives
    A message that is a consequence of an earlier failure is reported as a consequence only when
    that failure is found; a catalogue message printed after an unrecognised root failure can take
    the verdict. Messages whose category depends on context the line does not hold get the
    category most threads agreed on (each entry's ``meaning`` says which).

Advice
    Read the message's meaning in the explanation and its upstream source; the advice follows the
    category (fix the launch configuration, drain the node, check the fabric).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import (
    Detector,
    JobView,
    culprit_of,
    field_of,
    ordered_dicts,
    place_of,
    seen_at,
    who,
)
from logscope.detectors.job_facts import capitalised
from logscope.knowledge import by_id
from logscope.model import Category, Culprit, Event, Finding, Role, Severity
from logscope.textsafe import shortened

SAME_MOMENT = timedelta(seconds=5)
ADVICE = {
    Category.LAUNCH: "A launch or environment problem: fix the configuration the message names (environment "
                     "variables, interfaces, container mounts, launcher options) and relaunch; retrying as is "
                     "fails again.",
    Category.HARDWARE: "A node-level fault: drain the node named here (or the one whose log this is), check it with "
                       "nvidia-smi / dcgmi diag and the kernel log, and resubmit without it.",
    Category.NETWORK: "A network fault between nodes: check the links and the fabric of the hosts named, and the "
                      "NCCL_SOCKET_IFNAME / NCCL_IB_* settings; resubmit on other nodes if it persists.",
    Category.HANG: "The job stopped making progress: find the rank that stopped first (NCCL_DEBUG=INFO, "
                   "TORCH_NCCL_DUMP_ON_TIMEOUT=1 flight recorder dumps, py-spy dump on a live job).",
    Category.OOM: "Memory ran out: lower the batch size or the memory held per process, or free the device.",
    Category.CRASH: "A process failed: read its traceback or error above the evidence line.",
    Category.SCHEDULER: "The scheduler ended the job: check its record (sacct -j JOBID).",
}


class KnownMessage(Detector):
    code = "LS901"
    name = "known-message"
    category = Category.UNKNOWN
    requires: ClassVar[frozenset[Event]] = frozenset({Event.KNOWN_MESSAGE})
    specificity = 45  # above the generic crash (LS301, 40), below every specialised detector

    def detect(self, job: JobView) -> list[Finding]:
        by_message: dict[str, list[dict[str, Any]]] = {}
        for row in self._rows(job):
            by_message.setdefault(str(field_of(row, "key")), []).append(row)
        findings = []
        for message_id, rows in by_message.items():
            message = by_id(message_id)
            if message is None or message.category is None:
                continue
            failure = message.severity.rank >= Severity.ERROR.rank
            culprit = self._culprit(rows) if message.blame == "self" else None  # "job": nobody to name
            first = rows[0]
            said = str(first.get("text") or "").strip()
            said = shortened(said, 140)
            place = f" ({who(culprit)})" if culprit is not None and who(culprit) != who({}) else ""
            findings.append(self.finding(
                title=f"{capitalised(message.category.value)}: {said}{place}",
                explanation=(f"{message.meaning} ({len(rows)} line(s); the message comes from {message.project} "
                             f"{message.file}.)"),
                advice=ADVICE.get(message.category, ADVICE[Category.CRASH]),
                rows=rows,
                ordered=True,  # rows_in_order's: sorting them again by order_key gave the same list
                role=Role.ROOT if failure else Role.CONTEXT,
                severity=message.severity if failure else Severity.WARNING,
                culprit=culprit,
                category=message.category,
                reactive=message.blame == "none",
                ranks=[culprit.rank] if culprit is not None and culprit.rank is not None else [],
                hosts=[h for h in [culprit.node or culprit.host] if h] if culprit is not None else
                sorted({p for p in (place_of(r) for r in rows) if p}),
            ))
        return findings

    @staticmethod
    def _rows(job: JobView) -> list[dict[str, Any]]:
        """The KNOWN_MESSAGE rows in order, less those of messages without a category (context
        lines: a C++ backtrace's header, a banner), which give no finding: a crash loop's 16,832
        rows were all such lines, each made a dict to be passed over."""
        frame = job.of(Event.KNOWN_MESSAGE)
        key = pl.col("fields").struct.field("key")
        keys = {str(k) for k in frame.select(key.unique()).to_series().to_list()}
        said = sorted(k for k in keys if (message := by_id(k)) is not None and message.category is not None)
        if len(said) == len(keys):
            return job.rows_in_order(Event.KNOWN_MESSAGE)
        return ordered_dicts(frame.filter(key.is_in(said))) if said else []

    @staticmethod
    def _culprit(rows: list[dict[str, Any]]) -> Culprit | None:
        """The one process that printed the message first; when several printed it at that moment,
        their node if they share one (every GPU of a node failing at once points at the node)."""
        first = rows[0]
        start = seen_at(first)
        together = [r for r in rows if start is None or seen_at(r) is None or seen_at(r) - start <= SAME_MOMENT]  # type: ignore[operator]
        processes = {(r.get("node") or r.get("host"), r.get("pid"), r.get("rank"), r.get("local_rank"))
                     for r in together}
        culprit = culprit_of(first)
        if len(processes) <= 1:
            return culprit
        places = {r.get("node") or r.get("host") for r in together}
        if len(places) == 1 and None not in places:
            return Culprit(host=culprit.host, node=culprit.node, time=culprit.time, evidence=culprit.evidence)
        return None


__all__ = ["KnownMessage"]
