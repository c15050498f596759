"""LS502 host-oom: a node ran out of host (CPU) memory and the kernel killed a process.

What it detects
    The Linux OOM killer or the SLURM memory cgroup killing a task: ``slurmstepd: error: Detected
    N oom-kill event(s) in step J.S cgroup`` / ``Detected N oom_kill events in StepId=J.S``,
    ``srun: error: HOST: task N: Out Of Memory``, jobacct's ``StepId=J.S exceeded memory limit
    (A > B), being killed``, the kernel's ``Out of memory: Killed process P (python)``, and a
    torchrun worker that died with ``exitcode: -9`` (SIGKILL) on a node where one of those lines
    was printed. It names the node, the srun task and, when torchrun reported it, the local rank.

Why it matters
    A SIGKILL leaves no Python traceback: the worker simply vanishes, torchrun reports
    ``exitcode: -9`` and the other ranks fail with NCCL errors or time out. Without the
    slurmstepd/kernel line this looks like a mysterious crash or a network error. Host memory
    runs out from data loaders (many workers each holding a copy of the dataset), pinned memory,
    checkpoint loading on every rank at once, or a memory leak.

Evidence
    ``host_oom`` events (slurmstepd, srun, jobacct and kernel lines), the ``worker_failed`` /
    ChildFailedError records with exit code -9 on the same node, and the srun task list.
    slurmstepd prints its line when the step ends, so the time of the kill is taken from the
    killed worker when torchrun reported it.

Example
    ::

        slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your processes may have been killed by the cgroup out-of-memory handler.
        srun: error: Orion-01-01: task 4: Out Of Memory

False positives
    slurmstepd reports oom-kill events for *any* process of the step, including a DataLoader
    worker whose death the training survived. When no task failed, the finding is context only.
    With one combined log file and no srun line naming a host, the node cannot be named.

Advice
    Lower host memory use on the named node: fewer DataLoader workers, memory-mapped datasets,
    load checkpoints on one rank and broadcast, ``--mem`` / ``--mem-per-gpu`` large enough for
    the job. ``sacct -j JOB --format=JobID,MaxRSS,ReqMem,State`` shows what each step used.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, evidence_of, field_of, when
from logscope.detectors.exit_cascade import is_victim
from logscope.detectors.job_facts import place_of
from logscope.model import Category, Culprit, Event, Finding, Role, Severity

KILLED = {-9, 137, 9}


class HostOom(Detector):
    code = "LS502"
    name = "host-oom"
    category = Category.OOM
    requires: ClassVar[frozenset[Event]] = frozenset({Event.HOST_OOM})
    specificity = 65

    def detect(self, job: JobView) -> list[Finding]:
        ooms = job.rows_in_order(Event.HOST_OOM)
        if not ooms:
            return []
        oom_places = {p for p in (place_of(r) for r in ooms) if p}
        single_place = next(iter(oom_places)) if len(oom_places) == 1 else None
        # pids the kernel names ("Killed process 4321 (python)") tie a kill to a torchrun worker directly.
        killed_pids = {int(p) for p in (field_of(r, "target_pid") for r in ooms) if p is not None}
        killed = [r for r in job.rows_in_order(Event.WORKER_FAILED, Event.CHILD_FAILURE)
                  if field_of(r, "exit_code") is not None and int(field_of(r, "exit_code")) in KILLED
                  and (place_of(r) in oom_places or (r.get("pid") in killed_pids)
                       or (not oom_places and len(job.nodes) <= 1))]
        task_line = next((r for r in ooms if field_of(r, "tasks")), None)
        # A task that ended badly on the OOM node (or anywhere, when the node is unknown); SIGTERMs from a
        # time limit or a cancellation are not that.
        failed_tasks = [r for r in job.rows(Event.SRUN_TASK_EXIT, Event.WORKER_FAILED, Event.CHILD_FAILURE)
                        if not is_victim(r) and (not oom_places or place_of(r) in oom_places)]
        something_failed = bool(killed) or task_line is not None or bool(failed_tasks) or any(
            "exceeded memory limit" in str(field_of(r, "message") or "") for r in ooms)

        node = (place_of(killed[0]) if killed else None) or (place_of(task_line) if task_line else None) \
            or single_place
        victim = killed[0] if killed else None
        culprit = Culprit(
            host=node, node=node,
            rank=victim.get("rank") if victim else None,
            local_rank=victim.get("local_rank") if victim else None,
            time=(victim or ooms[0]).get("time"),
            evidence=evidence_of(victim or task_line or ooms[0]),
        )
        task = field_of(task_line, "tasks") if task_line else None
        count = sum(int(field_of(r, "count") or 0) for r in ooms)
        where = f"on {node}" if node else "on an unnamed node"
        what = (f"local rank {victim.get('local_rank')} (exit code -9)" if victim and victim.get("local_rank") is not None
                else f"srun task {task}" if task else "a process")
        title = f"Host memory exhausted {where}: the OOM killer killed {what}"
        explanation = (
            f"The kernel / SLURM memory cgroup killed {what} {where}"
            + (f" ({count} oom-kill event(s) reported by slurmstepd)" if count else "")
            + (f" at {when(culprit.time)}" if culprit.time else "") + ". "
            "A SIGKILL leaves no traceback: the worker just disappears, torchrun reports exit code -9, and "
            "the other ranks fail with NCCL errors or time out. Those are consequences."
        )
        if not something_failed:
            explanation = (f"slurmstepd reported oom-kill event(s) {where}, but no task failed: a helper "
                           "process (such as a DataLoader worker) was probably killed and the job survived.")
        evidence: list[dict[str, Any]] = [*([victim] if victim else []), *ooms[:5]]
        # The step's own memory summary, when printed, is worth citing.
        summary = job.of(Event.SRUN_ERROR).filter(
            pl.col("text").str.contains("memory limit|oom", literal=False)).head(2).to_dicts()
        return [self.finding(
            title=title if something_failed else f"oom-kill event(s) {where}; no task failed",
            explanation=explanation,
            advice=("Reduce host memory on that node: fewer DataLoader workers, memory-mapped data, load "
                    "checkpoints on one rank, or request more memory (--mem / --mem-per-gpu). Check what each "
                    "step used with `sacct -j JOB --format=JobID,MaxRSS,ReqMem,State`."),
            rows=evidence + summary,
            culprit=culprit if node or victim else None,
            role=Role.ROOT if something_failed else Role.CONTEXT,
            severity=Severity.CRITICAL if something_failed else Severity.WARNING,
            ranks=[int(victim["rank"])] if victim and victim.get("rank") is not None else [],
            hosts=[node] if node else [],
        )]


__all__ = ["HostOom"]
