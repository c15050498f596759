"""LS803 net-plugin-skew: some nodes loaded an external NCCL network plugin, others used NCCL's own.

What it detects
    Nodes of one job whose NCCL network plugin differs: on some, an external plugin was loaded
    (``NET/Plugin: Loaded net plugin ...``, ``Successfully loaded external network plugin``, the
    RDMA/SHARP plugin's ``Plugin Path : .../libnccl-net.so``); on others NCCL found none and went on
    with its internal transports (``NET/Plugin: Could not find: libnccl-net.so. Using internal
    network plugin.``, ``No plugin found``) or failed to load one. The finding carries the per-node
    table of NCCL's configuration, restricted to the columns that differ.

Why it matters
    The plugin is the transport: with the RDMA/SHARP plugin a node speaks IBext/UCX/SHARP, without
    it NCCL's own IB or socket code. Nodes that disagree may fail to connect, hang at the first
    inter-node collective, or run at the slowest node's speed. It comes from a container or module
    that differs between nodes (HPC-X on some only), a ``LD_LIBRARY_PATH`` or ``NCCL_NET_PLUGIN``
    set in one launch and not another.

Evidence
    ``nccl_plugin`` events per node through :func:`logscope.detectors.config_skew.node_config_table`.
    It is the root when nothing else explains the job's end (no crash, OOM, hardware or network
    failure line); otherwise context. When a node fell back to TCP sockets LS801 (transport-fallback)
    reports it, with the plugin difference among its causes, and this rule stays silent.

Example
    ::

        HGX-H100-11:18226:18274 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.
        HGX-H100-04:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so

False positives
    Needs plugin lines from at least two nodes, placed by host or per-node file. The odd node out is
    the minority; with as many nodes on each side, the nodes where the loader found no plugin are
    named (they lack what the others loaded), and only when that is one node. A job with the same
    plugin everywhere, or none anywhere, is not flagged.

Advice
    Give every node the same NCCL environment: the same container image or module list (HPC-X),
    the same ``LD_LIBRARY_PATH`` and ``NCCL_NET_PLUGIN``; check ``NCCL_DEBUG=INFO``'s ``NET/Plugin``
    line on each node before a long run.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView
from logscope.detectors.config_skew import CONFIG_COLUMNS, node_config_table, node_culprit, render_table
from logscope.detectors.job_facts import first_failure
from logscope.detectors.transport_fallback import socket_only, uses_fast_network
from logscope.model import Category, Event, Finding, Role, Severity

# net_plugin cells that mean "no external plugin": NCCL's internal transports, or a load that failed
_NO_PLUGIN = frozenset({"none", "failed"})


def external_plugins(cell: Any) -> set[str]:
    """The external plugins a node's net_plugin cell says were loaded."""
    return set(str(cell).split(",")) - _NO_PLUGIN if cell else set()


class NetPluginSkew(Detector):
    code = "LS803"
    name = "net-plugin-skew"
    category = Category.LAUNCH
    requires: ClassVar[frozenset[Event]] = frozenset({Event.NCCL_PLUGIN})
    specificity = 60
    names_a_node = True

    def detect(self, job: JobView) -> list[Finding]:
        table = node_config_table(job)
        rows = [r for r in table.to_dicts() if r.get("net_plugin")]
        if len(rows) < 2:
            return []
        loaded = [r["node"] for r in rows if external_plugins(r["net_plugin"])]
        internal = [r["node"] for r in rows if not external_plugins(r["net_plugin"])]
        if not loaded or not internal:
            return []
        every = table.to_dicts()
        if any(socket_only(r) and not uses_fast_network(r) for r in every) and any(uses_fast_network(r) for r in every):
            return []  # LS801 names the node on sockets, the plugin among its causes
        # the minority is odd; on a tie, the nodes whose loader found nothing lack what the others have
        odd = loaded if len(loaded) < len(internal) else internal
        plugins = sorted(set().union(*(external_plugins(r["net_plugin"]) for r in rows)))
        failed_otherwise = first_failure(job) is not None
        evidence = self._evidence(job, odd, [n for n in loaded + internal if n not in odd])
        culprit = node_culprit(odd[0], evidence) if len(odd) == 1 else None
        differing = [c for c in CONFIG_COLUMNS if table[c].drop_nulls().n_unique() > 1]
        shown = ["net_plugin", *[c for c in differing if c != "net_plugin"]]
        title = (f"NCCL network plugin differs between nodes: {len(loaded)} loaded {', '.join(plugins)[:80]}, "
                 f"{len(internal)} used NCCL's internal transport ({', '.join(internal[:4])})")
        explanation = (
            f"NCCL on {', '.join(loaded[:6])} loaded the external network plugin ({', '.join(plugins)[:160]}), "
            f"while on {', '.join(internal[:6])} it found none and used its own transports. The plugin is the "
            "transport between nodes: nodes that disagree may fail to connect, hang at the first inter-node "
            "collective, or run at the slowest one's speed. "
            + (f"The odd node out is {', '.join(odd[:6])}. " if odd else "")
            + ("The job also failed for another reason, which explains its end; this difference may explain "
               "slowness or timeouts before it. " if failed_otherwise else
               "Nothing else in the logs explains how the job ended: this difference is its likely cause. ")
            + "Per-node NCCL configuration (differing columns):\n" + render_table(table, shown, odd)
        )
        return [self.finding(
            title=title,
            explanation=explanation,
            advice=("Give every node the same NCCL environment: one container image or module list (HPC-X), the "
                    "same LD_LIBRARY_PATH and NCCL_NET_PLUGIN; check the NET/Plugin line of NCCL_DEBUG=INFO on each "
                    "node before a long run."),
            rows=evidence,
            culprit=culprit,
            role=Role.CONTEXT if failed_otherwise else Role.ROOT,
            severity=Severity.WARNING if failed_otherwise else Severity.ERROR,
            hosts=odd,
        )]

    @staticmethod
    def _evidence(job: JobView, odd: list[str], others: list[str]) -> list[dict[str, Any]]:
        """The odd nodes' plugin lines, then one from a node of the other side."""
        rows = job.of(Event.NCCL_PLUGIN).with_columns(pl.coalesce("node", "host").alias("_place"))
        picked: list[dict[str, Any]] = []
        for node in odd[:3]:
            picked.extend(rows.filter(pl.col("_place") == node).drop("_place").head(1).to_dicts())
        for node in others[:1]:
            picked.extend(rows.filter(pl.col("_place") == node).drop("_place").head(1).to_dicts())
        return picked


__all__ = ["NetPluginSkew", "external_plugins"]
