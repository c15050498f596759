"""LS201 node-rank-collision: several nodes believe they are node 0 (``$SLURM_PROCID`` expanded too early).

What it detects
    More than one node launching with the same node rank: torchrun rendezvous results with the
    same ``group_rank`` on different hosts, c10d "joined round ... as rank R" with the same R on
    different hosts, or a launch command traced by ``set -x`` in which ``--node_rank`` is already a
    number on a multi-node job (so it was expanded on the batch host, not per task).

Why it matters
    ``srun bash -c "torchrun --node_rank $SLURM_PROCID ..."`` inside double quotes is expanded by
    the batch script's shell, where ``SLURM_PROCID`` is 0 (or unset), *before* srun starts one
    task per node. Every node then starts as node 0: with static rendezvous
    (``--master_addr/--master_port``) the nodes register the same global ranks, the world never
    forms, and the job hangs at init or fails with duplicate ranks. With ``--rdzv_backend c10d``
    the flag is ignored, which hides the mistake until someone switches backends.

Evidence
    torchrun rendezvous results (``group_rank=``), c10d rendezvous join lines, bash ``set -x``
    traces of ``srun``/``torchrun`` command lines, and torchrun's launch configs for the backend.

Example
    ::

        + srun --kill-on-bad-exit=1 bash -c 'python -u -m torch.distributed.run --nproc_per_node 8 --nnodes 2 --node_rank 0 --master_addr gpu-node01 ...'
        [gpu-node01] group_rank=0 ... [gpu-node02] group_rank=0

False positives
    A single-node job launched with a literal ``--node_rank 0`` is fine and not flagged. Claims
    collide only within one rendezvous (the same master address): nodes that each formed their
    own world are all group rank 0, and that is LS203 split-world. Logs of two separate jobs
    analysed together look like a collision.

Advice
    Escape the variable so each task expands it: ``--node_rank \\$SLURM_PROCID`` inside double
    quotes, or put the launcher in single quotes. With ``--rdzv_backend c10d`` drop
    ``--node_rank`` entirely: the rendezvous assigns ranks.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, field_of, node_host_or_file
from logscope.model import Category, Event, Finding, Role, Severity

_NODE_RANK = re.compile(r"--node[_-]rank[= ](\S+)")
_NNODES = re.compile(r"--nnodes[= ](\d+)(?::(\d+))?")
# How a claim of each kind is named.
_HOW = {Event.RENDEZVOUS: "group_rank", Event.LAUNCH_CONFIG: "node rank (static rendezvous 'rank')"}


class NodeRankCollision(Detector):
    code = "LS201"
    name = "node-rank-collision"
    category = Category.LAUNCH
    # static rendezvous claims are launch configs (rdzv_configs: {'rank': N})
    requires: ClassVar[frozenset[Event]] = frozenset({Event.RENDEZVOUS, Event.LAUNCH_COMMAND, Event.LAUNCH_CONFIG})
    specificity = 85

    def detect(self, job: JobView) -> list[Finding]:
        backend = self._backend(job)
        rows, how = self._rendezvous_collision(job)
        traced = self._expanded_in_trace(job)
        if not rows and not traced:
            return []
        evidence = rows + traced
        harmless = backend == "c10d" and not rows
        title = "Several nodes started as node 0: $SLURM_PROCID was expanded on the batch host"
        if rows and not traced:
            title = f"Several nodes claimed the same node rank ({how})"
        explanation = (
            ("The launch command already holds a literal --node_rank on a multi-node job, so the variable was "
             "expanded once by the batch script's shell instead of once per task. ") if traced else ""
        ) + (f"The rendezvous shows it: {how}. " if rows else "") + (
            "With the c10d rendezvous backend torchrun ignores --node_rank, so this did not break this job, "
            "but it will under static rendezvous." if harmless else
            "Every node then registers the same global ranks and the world cannot form: expect an init hang, "
            "duplicate ranks or a store timeout on all nodes.")
        return [self.finding(
            title=title,
            explanation=explanation,
            advice=("Write --node_rank \\$SLURM_PROCID (escaped) inside the double-quoted launcher, or single-quote "
                    "it; with --rdzv_backend c10d remove --node_rank altogether."),
            rows=evidence,
            role=Role.CONTEXT if harmless else Role.ROOT,
            severity=Severity.WARNING if harmless else Severity.CRITICAL,
        )]

    @staticmethod
    def _backend(job: JobView) -> str | None:
        return next((backend for backend in (field_of(r, "rdzv_backend") for r in job.rows(Event.LAUNCH_CONFIG))
                     if backend is not None), None)

    @staticmethod
    def _rendezvous_collision(job: JobView) -> tuple[list[dict[str, Any]], str]:
        """The same node rank claimed on two nodes: in rendezvous results (``group_rank=``), c10d
        join lines, or static-rendezvous launch configs (``rdzv_configs: {'rank': N}``)."""
        if not job.has(Event.RENDEZVOUS, Event.LAUNCH_CONFIG):
            return [], ""
        # Only claims made in one rendezvous collide: nodes that each formed their own world
        # (every one is group_rank 0, with its own master) are LS203 split-world. A claim: (round,
        # master, claimed, how); a node makes a few per rendezvous: grouped here, from the rows'
        # dicts other detectors read too (a polars group_by cost ~0.6 ms a small job).
        places: dict[tuple[Any, ...], set[str]] = {}
        for kind, claim in ((Event.RENDEZVOUS, "group_rank"), (Event.LAUNCH_CONFIG, "node_rank")):
            for row in job.rows(kind):
                claimed = field_of(row, claim)
                if claimed is None:
                    continue
                key, master_addr = field_of(row, "key"), field_of(row, "master_addr")
                round_ = "static" if kind == Event.LAUNCH_CONFIG else "0" if key is None else key
                places.setdefault((round_, "" if master_addr is None else master_addr, claimed, _HOW[kind]),
                                  set()).add(str(node_host_or_file(row)))
        clashes = [key for key, where in places.items() if len(where) > 1]
        if not clashes:
            return [], ""
        round_, master_addr, claimed, how = min(clashes, key=lambda key: (key[2], key[3], key[0], key[1]))
        said = pl.col("fields").struct
        master = said.field("master_addr").fill_null("")
        place = pl.coalesce("node", "host", "file")
        rows = pl.concat([
            job.of(Event.RENDEZVOUS).filter((said.field("group_rank") == claimed)
                                            & (said.field("key").fill_null("0") == round_)),
            job.of(Event.LAUNCH_CONFIG).filter((said.field("node_rank") == claimed) & (pl.lit("static") == round_)),
        ]).filter(master == master_addr)
        nodes = sorted({str(p) for p in rows.select(place).to_series().to_list()})
        said_how = (f"{how} {claimed} on {len(nodes)} nodes "
                    f"({', '.join(nodes[:4])}{'...' if len(nodes) > 4 else ''})")
        return rows.to_dicts(), said_how

    @staticmethod
    def _expanded_in_trace(job: JobView) -> list[dict[str, Any]]:
        out = []
        for row in job.rows(Event.LAUNCH_COMMAND):
            message = str(field_of(row, "message") or row.get("text") or "")
            m = _NODE_RANK.search(message)
            if not m or not m.group(1).isdigit():
                continue
            nnodes = _NNODES.search(message)
            many = (nnodes and int(nnodes.group(2) or nnodes.group(1)) > 1) or len(job.nodes) > 1
            if many:
                out.append(row)
        return out
