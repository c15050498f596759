"""LS801 transport-fallback: some nodes fell back to TCP sockets while the others used InfiniBand.

What it detects
    The odd node out in NCCL's network choice: ``Using network Socket`` (or only ``NET/Socket``
    channels, ``NET/IB : No device found``, ``Failed to open libibverbs``) on some nodes while
    other nodes of the same job report ``Using network IB`` / ``IBext`` / a net plugin. The
    finding carries the per-node table of NCCL's configuration (network, IB devices, net plugin,
    transports, ``NCCL_*`` variables) restricted to the columns that differ.

Why it matters
    NCCL silently falls back to sockets when a node lacks the IB driver or libraries, its HCA is
    down, the NET plugin failed to load there, or ``NCCL_IB_DISABLE``/``NCCL_NET`` differ between
    nodes. Every collective then runs at the speed of the slowest link: the job is several times
    slower, or slow enough to hit collective timeouts, with nothing in the log but one INFO line.

Evidence
    ``nccl_network``, ``nccl_net_device``, ``nccl_plugin``, ``nccl_channel`` and ``nccl_env``
    events per node, through :func:`logscope.detectors.config_skew.node_config_table`. It is the
    root when nothing else explains the job's end: a run that was merely slow, or one that hung,
    timed out or hit its time limit (the node on sockets is then the likely cause). When a real
    failure happened (a crash, an OOM, a GPU or node failure) it is context only.

Example
    ::

        ip-172-31-12-21:45361:45361 [0] NCCL INFO NET/IB : No device found.
        ip-172-31-12-21:45361:45361 [0] NCCL INFO Using network Socket
        ip-172-31-8-153:45343:45343 [0] NCCL INFO Using network IB

False positives
    Needs NCCL INFO lines from at least two nodes, placed by host or by per-node file. A job that
    uses sockets on purpose on every node is not flagged (there is no odd node out).

Advice
    On the named node, check ``ibstat`` / ``ibv_devinfo``, that ``libibverbs`` and the NET plugin
    are installed in the container, and that ``NCCL_IB_DISABLE``, ``NCCL_NET``, ``NCCL_IB_HCA`` and
    ``NCCL_SOCKET_IFNAME`` are the same everywhere. Exclude the node until it is fixed.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView
from logscope.detectors.config_skew import CONFIG_COLUMNS, node_config_table, node_culprit, render_table
from logscope.detectors.job_facts import first_failure, has_error_lines
from logscope.model import Category, Event, Finding, Role, Severity


def _values(cell: Any) -> set[str]:
    return set(str(cell).split(",")) if cell else set()


def socket_only(row: dict[str, Any]) -> bool:
    """The node's NCCL used TCP sockets for inter-node traffic and nothing faster."""
    network = _values(row.get("network"))
    transports = {t for t in _values(row.get("transports")) if t.startswith("NET/")}
    ib = _values(row.get("ib_devices"))
    if network:
        return network == {"Socket"}
    if transports:
        return transports == {"NET/Socket"}
    return bool(ib) and ib <= {"none", "no-verbs"}


def uses_fast_network(row: dict[str, Any]) -> bool:
    network = _values(row.get("network"))
    transports = {t for t in _values(row.get("transports")) if t.startswith("NET/")}
    ib = _values(row.get("ib_devices")) - {"none", "no-verbs"}
    return bool(network - {"Socket"} or transports - {"NET/Socket"} or (ib and not network and not transports))


class TransportFallback(Detector):
    code = "LS801"
    name = "transport-fallback"
    category = Category.NETWORK
    requires: ClassVar[frozenset[Event]] = frozenset(
        {Event.NCCL_NETWORK, Event.NCCL_NET_DEVICE, Event.NCCL_CHANNEL})
    specificity = 50
    names_a_node = True

    def detect(self, job: JobView) -> list[Finding]:
        table = node_config_table(job)
        if table.height < 2:
            return []
        rows = table.to_dicts()
        fast = [r["node"] for r in rows if uses_fast_network(r)]
        slow = [r["node"] for r in rows if socket_only(r) and not uses_fast_network(r)]
        if not fast or not slow:
            return []
        differing = [c for c in CONFIG_COLUMNS if table[c].drop_nulls().n_unique() > 1]
        shown = [c for c in ("network", "ib_devices", "net_plugin", "transports", "nccl_env") if c in differing] \
            or ["network"]
        causes = self._causes(table, slow)
        # A real failure (crash, OOM, hardware, lost node) explains the job's end by itself; timeouts,
        # hangs and time limits do not, and a node on sockets is then their likely cause.
        failed_otherwise = first_failure(job) is not None
        quiet = not has_error_lines(job)
        evidence = self._evidence(job, slow, fast)
        culprit = node_culprit(slow[0], evidence) if len(slow) == 1 else None
        fast_net = sorted(set().union(*(_values(r.get("network")) for r in rows if r["node"] in fast)) - {"Socket"})
        title = (f"{len(slow)} node(s) fell back to TCP sockets ({', '.join(slow[:4])}) while "
                 f"{len(fast)} used {'/'.join(fast_net) or 'InfiniBand'}")
        explanation = (
            f"NCCL on {', '.join(slow[:6])} used sockets for inter-node traffic while the other nodes used "
            f"{'/'.join(fast_net) or 'a faster network'}. Every collective then runs at socket speed. "
            + (f"Likely cause: {'; '.join(causes)}. " if causes else "")
            + ("Nothing else failed: expect a much slower run (or collective timeouts under load). " if quiet else
               "No crash or hardware failure explains the job's errors (timeouts, a hang, a time limit): the "
               "node on sockets is their likely cause. " if not failed_otherwise else
               "The job also failed for another reason: this fallback may explain slowness or timeouts before it, "
               "but is not the failure itself. ")
            + "Per-node NCCL configuration (differing columns):\n" + render_table(table, shown, slow)
        )
        return [self.finding(
            title=title,
            explanation=explanation,
            advice=("On the named node(s), check `ibstat` / `ibv_devinfo`, that libibverbs and the NCCL NET plugin "
                    "are installed in the job's environment, and that NCCL_IB_DISABLE, NCCL_NET, NCCL_IB_HCA and "
                    "NCCL_SOCKET_IFNAME are the same on every node; exclude the node until it is fixed."),
            rows=evidence,
            culprit=culprit,
            role=Role.CONTEXT if failed_otherwise else Role.ROOT,
            severity=Severity.WARNING if failed_otherwise else Severity.ERROR,
            hosts=slow,
        )]

    @staticmethod
    def _causes(table: pl.DataFrame, slow: list[str]) -> list[str]:
        causes: list[str] = []
        by_node = {r["node"]: r for r in table.to_dicts()}
        others = [r for n, r in by_node.items() if n not in slow]
        for node in slow:
            row = by_node[node]
            ib = _values(row.get("ib_devices"))
            if "none" in ib:
                causes.append(f"{node}: NET/IB found no device")
            if "no-verbs" in ib:
                causes.append(f"{node}: libibverbs could not be opened")
            plugin = _values(row.get("net_plugin"))
            if plugin and plugin != set().union(*(_values(o.get("net_plugin")) for o in others)):
                causes.append(f"{node}: NET plugin {'/'.join(sorted(plugin))} differs from the other nodes")
            env = _values(row.get("nccl_env"))
            common = set.intersection(*(_values(o.get("nccl_env")) for o in others)) if others else set()
            extra = sorted(env - common)
            if extra:
                causes.append(f"{node}: {', '.join(extra[:3])} set only there")
        return causes

    @staticmethod
    def _evidence(job: JobView, slow: list[str], fast: list[str]) -> list[dict[str, Any]]:
        rows = job.of(Event.NCCL_NETWORK, Event.NCCL_NET_DEVICE, Event.NCCL_CHANNEL, Event.NCCL_PLUGIN).with_columns(
            pl.coalesce("node", "host").alias("_place"))
        picked: list[dict[str, Any]] = []
        for node in slow[:3]:
            mine = rows.filter(pl.col("_place") == node)
            network = mine.filter(pl.col("event").is_in([Event.NCCL_NETWORK.value, Event.NCCL_NET_DEVICE.value]))
            picked.extend((network if network.height else mine).drop("_place").head(2).to_dicts())
        for node in fast[:1]:
            mine = rows.filter((pl.col("_place") == node) & (pl.col("event") == Event.NCCL_NETWORK.value))
            picked.extend(mine.drop("_place").head(1).to_dicts())
        return picked


__all__ = ["TransportFallback", "socket_only", "uses_fast_network"]
