"""LS207 nnodes-mismatch: torchrun was told a different number of nodes than the job has.

What it detects
    A disagreement between torchrun's ``min_nodes``/``max_nodes`` (its "Starting elastic_operator
    with launch configs" block) and the nodes the job really runs on: the number of torchrun
    agents that printed a launch config, ``SLURM_NNODES`` / ``SLURM_JOB_NUM_NODES`` (an
    environment dump or a ``set -x`` trace), ``srun -N``/``--nodes`` in a traced command, and the
    rendezvous result (``group_world_size``). Also agents launched with different node counts.

Why it matters
    ``--nnodes`` is usually typed by hand while ``#SBATCH --nodes`` changes. With more agents
    than ``max_nodes``, the extra nodes never join (they wait for the next round, or fail with
    ``RendezvousClosedError``) and the job hangs or fails at start. With fewer nodes than
    ``min_nodes``, the agents wait until the join timeout; one fails with
    ``RendezvousTimeoutError``, the others then see ``RendezvousClosedError``. With an elastic
    range, the rendezvous may complete with fewer nodes than were started and the rest sit idle.

Evidence
    ``launch_config`` records (``nnodes`` = ``min:max``), ``launch_command`` rows (``SLURM_NNODES``
    values, ``srun -N``), ``rendezvous`` results and join lines (``group_world_size``), and
    rendezvous errors (``store_error``) as corroboration.

Example
    ::

        SLURM_NNODES=4
        INFO:torch.distributed.launcher.api:Starting elastic_operator with launch configs:
          min_nodes        : 2
          max_nodes        : 2

False positives
    Agents are counted from launch-config blocks; when some nodes' logs are missing the count is
    low: fewer agents than ``min_nodes`` with a rendezvous that timed out is reported as a
    mismatch, though a node whose torchrun never started gives the same picture. One node per torchrun agent is assumed. ``--nnodes=1`` on several nodes that each formed
    their own world is reported by LS203 (split-world), not here.

Advice
    Derive the node count from SLURM instead of typing it: ``torchrun --nnodes=$SLURM_NNODES``
    (or ``$SLURM_JOB_NUM_NODES``) with ``srun --ntasks-per-node=1``, and the same value on every node.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, field_of
from logscope.detectors.job_facts import place_of
from logscope.model import Category, Event, Finding, Role, Severity

_SRUN_NODES = re.compile(r"\bsrun\b.*?(?:\s-N\s*|\s--nodes[= ])(\d+)(?:\b|$)")


def _bounds(nnodes: str | None) -> tuple[int | None, int | None]:
    if not nnodes:
        return None, None
    lo, _, hi = nnodes.partition(":")
    lo_v = int(lo) if lo.strip().isdigit() else None
    hi_v = int(hi) if hi.strip().isdigit() else lo_v
    return lo_v, hi_v


class NnodesMismatch(Detector):
    code = "LS207"
    name = "nnodes-mismatch"
    category = Category.LAUNCH
    requires: ClassVar[frozenset[Event]] = frozenset({Event.LAUNCH_CONFIG})
    specificity = 80

    def detect(self, job: JobView) -> list[Finding]:
        # A few rows a node (read as the dicts other detectors read too, not filtered by polars).
        configs = [r for r in job.rows_in_order(Event.LAUNCH_CONFIG) if field_of(r, "nnodes") is not None]
        if not configs:
            return []
        bounds = {_bounds(field_of(r, "nnodes")) for r in configs}
        known = {b for b in bounds if b != (None, None)}
        if not known:
            return []
        agents = self._agents(configs)
        slurm_rows, slurm_nodes = self._slurm_nodes(job)
        rdzv = [r for r in job.rows(Event.RENDEZVOUS) if field_of(r, "group_world_size") is not None]
        world_sizes = sorted({int(field_of(r, "group_world_size")) for r in rdzv})
        lo = min(b[0] for b in known if b[0] is not None) if any(b[0] is not None for b in known) else None
        hi = max(b[1] for b in known if b[1] is not None) if any(b[1] is not None for b in known) else None
        if hi == 1 and world_sizes == [1] and agents > 1:
            return []  # every node formed its own world: LS203 split-world
        problems: list[tuple[str, str]] = []  # (short, full)
        blocking = False
        if len(known) > 1:
            counts = ", ".join(f"{a}:{b}" for a, b in sorted(known, key=str))
            problems.append((f"agents launched with different node counts ({counts})",
                             f"the agents were launched with different node counts ({counts})"))
            blocking = True
        if hi is not None and agents > hi:
            problems.append((f"{agents} agents started for max_nodes={hi}",
                             f"{agents} torchrun agents started but max_nodes is {hi}: the extra node(s) cannot join"))
            blocking = True
        if slurm_nodes is not None and lo is not None and slurm_nodes < lo:
            problems.append((f"the job has {slurm_nodes} node(s) for min_nodes={lo}",
                             f"the job has {slurm_nodes} node(s) but min_nodes is {lo}: the rendezvous waits for "
                             "nodes that never come"))
            blocking = True
        elif slurm_nodes is None and lo is not None and agents < lo and not world_sizes and self._join_timed_out(job):
            problems.append((f"{agents} agent(s) started for min_nodes={lo}",
                             f"only {agents} torchrun agent(s) started but min_nodes is {lo}: the rendezvous waited "
                             "for the rest until its join timeout (RendezvousTimeoutError). If a node's log is "
                             "missing here, check it: its agent may not have started"))
            blocking = True
        elif slurm_nodes is not None and hi is not None and slurm_nodes > hi:
            problems.append((f"the job has {slurm_nodes} nodes for max_nodes={hi}",
                             f"the job has {slurm_nodes} nodes but torchrun accepts at most {hi}: "
                             f"{slurm_nodes - hi} node(s) are left out"))
        if world_sizes and agents > 1 and max(world_sizes) < agents and not (hi is not None and agents > hi):
            problems.append((f"rendezvous world of {max(world_sizes)} for {agents} agents",
                             f"the rendezvous completed with {max(world_sizes)} node(s) although {agents} agents "
                             "started"))
            blocking = True
        if not problems:
            return []
        rdzv_errors = job.of(Event.STORE_ERROR).head(2).to_dicts()
        title = f"torchrun node count does not match the job: {problems[0][0]}"
        explanation = (
            f"torchrun's launch config says min_nodes={lo}, max_nodes={hi}; "
            + f"{agents} agent(s) printed a launch config"
            + (f", SLURM says the job has {slurm_nodes} node(s)" if slurm_nodes is not None else "")
            + (f", rendezvous world size(s): {', '.join(map(str, world_sizes))}" if world_sizes else "")
            + ". Problem: " + "; ".join(full for _, full in problems) + ". "
            + ("Rendezvous errors follow from it." if rdzv_errors else "")
        )
        evidence: list[dict[str, Any]] = [*configs[:3], *slurm_rows[:1], *rdzv[:2], *rdzv_errors]
        return [self.finding(
            title=title,
            explanation=explanation.strip(),
            advice=("Derive the node count from SLURM: torchrun --nnodes=$SLURM_NNODES (or $SLURM_JOB_NUM_NODES), one "
                    "srun task per node (--ntasks-per-node=1), and the same value on every node."),
            rows=evidence,
            # Unused nodes waste the allocation but break nothing: context, not a cause.
            role=Role.ROOT if blocking else Role.CONTEXT,
            severity=Severity.CRITICAL if blocking else Severity.WARNING,
            hosts=[],
        )]

    @staticmethod
    def _join_timed_out(job: JobView) -> bool:
        """A rendezvous that waited for nodes until its join timeout (dynamic_rendezvous raises a
        bare RendezvousTimeoutError only then; an unreachable store is a RendezvousConnectionError)."""
        errors = job.of(Event.STORE_ERROR).select(pl.col("fields").struct.field("error_type")).to_series()
        return bool(errors.str.ends_with("RendezvousTimeoutError").any())

    @staticmethod
    def _agents(configs: list[dict[str, Any]]) -> int:
        """Torchrun agents: one launch config each (distinct by place and pid when known)."""
        keys = set()
        for i, r in enumerate(configs):
            place = place_of(r)
            keys.add((place, r.get("pid")) if place or r.get("pid") is not None else ("#", i))
        return len(keys)

    @staticmethod
    def _slurm_nodes(job: JobView) -> tuple[list[dict[str, Any]], int | None]:
        rows = job.rows(Event.LAUNCH_COMMAND)
        found: list[tuple[int, dict[str, Any]]] = []
        for r in rows:
            key = field_of(r, "key")
            if key in ("SLURM_NNODES", "SLURM_JOB_NUM_NODES") and str(field_of(r, "value") or "").isdigit():
                found.append((int(field_of(r, "value")), r))
                continue
            m = _SRUN_NODES.search(str(field_of(r, "message") or ""))
            if m:
                found.append((int(m.group(1)), r))
        if not found:
            return [], None
        value = max(v for v, _ in found)
        return [r for v, r in found if v == value], value


__all__ = ["NnodesMismatch"]
