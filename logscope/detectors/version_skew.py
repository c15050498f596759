"""LS802 version-skew: nodes of one job ran different NCCL versions or CUDA drivers.

What it detects
    NCCL's own mismatch reports (``NCCL version mismatch with remote peer P (local: A, remote B)``
    from RAS, ``Mismatched NCCL version detected : rank R version V rank S version W`` from init)
    and, from the per-node table of NCCL's init lines, nodes whose ``NCCL version`` or
    ``cudaDriverVersion`` differs from the others'. The finding carries the per-node table of the
    differing columns and names the odd node out when there is a majority.

Why it matters
    Different NCCL versions across nodes may use incompatible protocols: init fails with
    ``ncclInvalidUsage``, or collectives hang or corrupt data. It comes from nodes loading
    different modules or containers, a stale ``LD_LIBRARY_PATH``, or a partially upgraded
    cluster. A driver difference alone is usually harmless, but it shows the nodes are not
    identically provisioned.

Evidence
    ``nccl_version_mismatch`` events; ``nccl_version`` and ``nccl_driver`` events per node through
    :func:`logscope.detectors.config_skew.node_config_table`. An explicit mismatch report is the
    root of the failure; an NCCL version difference is the root only when the job failed and
    nothing else explains it; otherwise (and for driver differences) it is context.

Example
    ::

        node-01:1:1 [0] ras/ras.cc:1 NCCL WARN NCCL version mismatch with remote peer 10.0.0.2<5555> (local: 2.27.5, remote 2.26.2)
        node-02:7:7 [0] NCCL INFO NCCL version 2.18.1+cuda12.1

False positives
    The bare ``NCCL version`` line has no host: with one combined log file it cannot be tied to a
    node, so skew is only seen with per-node files or prefixed lines. Two nodes with two versions
    have no majority: both are listed and no culprit is named.

Advice
    Make every node load the same environment: the same container image or module list, the same
    ``LD_LIBRARY_PATH`` (``python -c "import torch; print(torch.cuda.nccl.version())"`` on each
    node), and drain nodes whose driver differs.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, culprit_of
from logscope.detectors.config_skew import node_config_table, node_culprit, odd_nodes, render_table
from logscope.detectors.job_facts import capitalised, first_failure, has_error_lines
from logscope.model import Category, Culprit, Event, Finding, Role, Severity

_REPORT = re.compile(r"(?:NCCL version mismatch with remote peer|Mismatched NCCL version detected).*")


class VersionSkew(Detector):
    code = "LS802"
    name = "version-skew"
    category = Category.LAUNCH
    requires: ClassVar[frozenset[Event]] = frozenset(
        {Event.NCCL_VERSION_MISMATCH, Event.NCCL_VERSION, Event.NCCL_DRIVER})
    specificity = 75
    names_a_node = True

    def detect(self, job: JobView) -> list[Finding]:
        reports = job.rows_in_order(Event.NCCL_VERSION_MISMATCH)
        table = node_config_table(job)
        nccl_major, nccl_odd = odd_nodes(table, "nccl_version") if table.height else (None, {})
        driver_major, driver_odd = odd_nodes(table, "cuda_driver") if table.height else (None, {})
        if not reports and not nccl_odd and not driver_odd:
            return []
        columns = [c for c, odd in (("nccl_version", nccl_odd), ("cuda_driver", driver_odd)) if odd] or ["nccl_version"]
        odd_names = sorted(set(nccl_odd) | set(driver_odd))
        evidence = [*reports[:4], *self._version_rows(job, odd_names, Event.NCCL_VERSION if nccl_odd else Event.NCCL_DRIVER)]
        failed = has_error_lines(job)
        explained_elsewhere = first_failure(job) is not None
        if reports:
            role, severity = Role.ROOT, Severity.CRITICAL
        elif nccl_odd and failed and not explained_elsewhere:
            role, severity = Role.ROOT, Severity.ERROR
        else:
            role, severity = Role.CONTEXT, Severity.WARNING
        culprit: Culprit | None = None
        subject = nccl_odd or driver_odd
        if len(subject) == 1 and (nccl_major if nccl_odd else driver_major) is not None:
            culprit = node_culprit(next(iter(subject)), evidence)
        elif reports and not subject:
            culprit = culprit_of(reports[0])
        what = " and ".join(w for w, odd in (("NCCL versions", nccl_odd), ("CUDA drivers", driver_odd)) if odd) \
            or "NCCL versions"
        if reports:
            text = str(reports[0].get("text") or "")
            m = _REPORT.search(text)
            title = (m.group(0) if m else text)[:140]
            if odd_names:
                title += "; " + ", ".join(f"{n} runs {nccl_odd.get(n) or driver_odd.get(n)}" for n in odd_names[:3])
        else:
            title = f"Nodes run different {what}: " + ", ".join(
                f"{n} ({nccl_odd.get(n) or driver_odd.get(n)})" for n in odd_names[:4])
        explanation = (
            ("NCCL itself reported that ranks run different versions; communicator init or the collectives "
             "that follow fail because of it. " if reports else "")
            + (f"The majority runs NCCL {nccl_major}; " if nccl_major and nccl_odd else "")
            + (f"the majority's CUDA driver is {driver_major}; " if driver_major and driver_odd else "")
            + ("the odd node(s) are listed first below. " if odd_names else "")
            + ("With no other failure in the job, the NCCL version difference is the likely reason it failed. "
               if role == Role.ROOT and not reports else "")
            + ("A driver difference alone rarely breaks a job, but shows the nodes are not provisioned alike. "
               if driver_odd and not nccl_odd else "")
            + (("Per-node versions:\n" + render_table(table, columns, odd_names)) if table.height else "")
        )
        return [self.finding(
            title=title,
            explanation=capitalised(explanation),
            advice=("Load the same environment on every node (one container image or module list, the same "
                    "LD_LIBRARY_PATH); check `python -c \"import torch; print(torch.cuda.nccl.version())\"` on each "
                    "node, and drain nodes whose driver differs."),
            rows=evidence or reports,
            culprit=culprit,
            role=role,
            severity=severity,
            hosts=odd_names,
        )]

    @staticmethod
    def _version_rows(job: JobView, nodes: list[str], kind: Event) -> list[dict[str, Any]]:
        """The odd nodes' version lines, then one line of the same kind from a node of the majority."""
        rows = job.of(kind).with_columns(pl.coalesce("node", "host").alias("_p"))
        picked: list[dict[str, Any]] = []
        for node in nodes[:3]:
            picked.extend(rows.filter(pl.col("_p") == node).drop("_p").head(2).to_dicts())
        majority = rows.filter(~pl.col("_p").is_in(nodes) & pl.col("_p").is_not_null()).drop("_p").head(1).to_dicts()
        return picked + majority


__all__ = ["VersionSkew"]
