"""LS204 master-addr-mismatch: nodes were told different rendezvous addresses.

What it detects
    torchrun launch configs (``rdzv_endpoint``) or rendezvous results (``master_addr``,
    ``master_port``) that differ between nodes of one job.

Why it matters
    Every node must meet at the same rendezvous. ``MASTER_ADDR=$(hostname)`` evaluated per node,
    or ``localhost``, gives each node its own endpoint: nodes wait for peers that never come
    (rendezvous timeout) or form separate worlds (LS203).

Evidence
    The ``rdzv_endpoint`` line of torchrun's "Starting elastic_operator with launch configs"
    block and the ``master_addr=``/``master_port=`` lines of its rendezvous result, per node.

Example
    ::

        gpu-node01.out:  rdzv_endpoint    : gpu-node01:29500
        gpu-node02.out:  rdzv_endpoint    : gpu-node02:29500

False positives
    Endpoints that change between rendezvous rounds (a torchrun restart) are not a mismatch: only
    nodes that share no endpoint at all are reported. A host written with different names (short
    name on one node, FQDN or an IP on another) is compared as written; different spellings of
    one address are reported.

Advice
    Compute the address once in the batch script and pass it to every node:
    ``MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, field_of, node_host_or_file
from logscope.model import Category, Event, Finding, Severity


class MasterAddrMismatch(Detector):
    code = "LS204"
    name = "master-addr-mismatch"
    category = Category.LAUNCH
    requires: ClassVar[frozenset[Event]] = frozenset({Event.LAUNCH_CONFIG, Event.RENDEZVOUS})
    specificity = 80

    def detect(self, job: JobView) -> list[Finding]:
        # Each kind's endpoints per place: a few lines a node and round, grouped here from the
        # rows' dicts other detectors read too (a polars group_by cost ~0.6 ms a small job).
        per_place: dict[str, dict[str, set[str]]] = {}
        for row in job.rows(Event.LAUNCH_CONFIG, Event.RENDEZVOUS):
            address, port = field_of(row, "master_addr"), field_of(row, "master_port")
            if address is not None and port is not None:
                per_place.setdefault(row["event"], {}).setdefault(str(node_host_or_file(row)), set()).add(
                    f"{address}:{port}")
        kind = next((k for k in sorted(per_place) if _groups_apart(list(per_place[k].values())) > 1), None)
        if kind is None:
            return []
        said = job.of(Event.LAUNCH_CONFIG, Event.RENDEZVOUS).lazy().with_columns(
            pl.concat_str(pl.col("fields").struct.field("master_addr"), pl.lit(":"),
                          pl.col("fields").struct.field("master_port").cast(pl.String), ignore_nulls=False
                          ).alias("endpoint"),
            pl.coalesce("node", "host", "file").alias("place"),
        ).filter(pl.col("endpoint").is_not_null())
        subset = said.collect(engine="in-memory").filter(pl.col("event") == kind).unique(
            subset=["place", "endpoint"], keep="first", maintain_order=True)
        endpoints = sorted(set(subset["endpoint"].to_list()))
        return [self.finding(
            title=f"Nodes used different rendezvous endpoints: {', '.join(endpoints[:4])}",
            explanation=("torchrun on different nodes was given different master/rendezvous addresses, so the "
                         "nodes could not all meet at one rendezvous."),
            advice=("Set MASTER_ADDR once in the batch script, from `scontrol show hostnames "
                    "$SLURM_JOB_NODELIST | head -n 1`, and pass the same --rdzv_endpoint to every node."),
            rows=subset.drop("endpoint", "place").head(6),
            severity=Severity.CRITICAL,
        )]


def _groups_apart(per_place: Sequence[Collection[str]]) -> int:
    """How many groups of nodes (``per_place``: each node's endpoints) never shared an endpoint. A
    node's endpoints can change between rendezvous rounds (torchrun restarts; older torch picks a
    new master port each round), but the nodes of one job share each round's: only nodes with no
    endpoint in common never met."""
    parent = list(range(len(per_place)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, endpoints in enumerate(per_place):
        for endpoint in endpoints:
            j = owner.setdefault(endpoint, i)
            parent[root(i)] = root(j)
    return len({root(i) for i in range(len(per_place))})
