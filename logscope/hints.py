""""Next time, enable X": advice derived from evidence the logs did *not* contain.

:func:`missing_evidence_hints` looks at what is absent from a job's timeline (NCCL lines, timestamps,
host prefixes, desync reports, kernel logs, tracebacks) given what was found, and returns one
sentence per missing piece saying which setting would have produced it. Every hint is triggered by
a concrete absence; a job whose logs already have everything gets no hint. Pure: reads a
:class:`~logscope.detectors.base.JobView` and findings, prints nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from logscope.detectors.base import JobView
from logscope.model import Category, Event, Finding, Role

# Share of lines of a kind that must lack their own timestamp before we call them "untimed".
UNTIMED_SHARE = 0.9

HINT_NCCL_DEBUG = ("No NCCL lines in the logs: run with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET is enough) on "
                   "all ranks, so the network, the ranks' hosts and GPUs, and NCCL's own errors are recorded.")
HINT_DESYNC = ("A collective hang with no desync report: set TORCH_NCCL_DESYNC_DEBUG=1 and enable the Flight "
               "Recorder (TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1) so the timeout names the "
               "rank that did not join.")
HINT_NCCL_TIMESTAMPS = ("NCCL INFO lines carry no timestamps: set NCCL_DEBUG_TIMESTAMP_LEVELS=ALL (and, if wanted, "
                        "NCCL_DEBUG_TIMESTAMP_FORMAT) so NCCL events can be ordered across nodes.")
HINT_ROLE_PREFIX = ("Lines are prefixed with the local rank only ([defaultN]:), which repeats on every node: launch "
                    "torchrun with --role $(hostname -s): --tee 3 (or set TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE) so "
                    "each line names its host.")
HINT_SPLIT_OUTPUT = ("A multi-node job wrote one combined log file: write one file per node "
                     "(#SBATCH --output=%x-%j.out for the batch script and srun --output=%x-%j-%N.out for the tasks) "
                     "so each line's node is known.")
HINT_PROGRESS_TIMESTAMPS = ("Training progress lines carry no timestamps: log them with a time (logging's "
                            "%(asctime)s, or pipe the output through `ts`) so stalls and the last step can be dated.")
HINT_KERNEL_LOG = ("A hardware failure without kernel messages: collect the node's kernel log (dmesg -T | grep -i -e "
                   "xid -e nvrm, or journalctl -k) at the end of the job so the GPU error (Xid) is on record.")
HINT_FLIGHT_RECORDER = ("A collective timed out and no Flight Recorder dump was found: PyTorch writes one per rank "
                        "on a timeout, by default to ~/.cache/torch/comm_lib_trace_rank_<rank> (before torch 2.6 "
                        "/tmp/nccl_trace_rank_<rank>) on each node's own disk, gone with the node; set "
                        "TORCH_FR_DUMP_TEMP_FILE=/shared/folder/fr_rank_ (TORCH_NCCL_DEBUG_INFO_TEMP_FILE for older "
                        "torch) in the sbatch script and give it to logscope (--fr /shared/folder/fr_rank_): the dumps "
                        "name the rank the others waited for.")
HINT_TRACEBACK = ("A process failed without a Python traceback in the logs: decorate the entry point with "
                  "torch.distributed.elastic.multiprocessing.errors.record (and set PYTHONFAULTHANDLER=1) so the "
                  "worker's error reaches torchrun's report.")


def missing_evidence_hints(view: JobView, findings: Iterable[Finding]) -> list[str]:
    """One sentence per missing kind of evidence that would have made this post-mortem more exact.

    ``findings`` are the analysis's findings after the verdict (the root has role ``root``). A
    job with nothing to explain (no finding, no error line) gets no hint.
    """
    findings = list(findings)
    events = view.events
    if view.has(Event.FR_DUMP) and bool((events["source"] == "fr").all()):
        return []  # no log at all (Flight Recorder dumps alone): nothing about the logs to improve
    # Counts, not the rows counted: a crash loop's timeline holds ~100,000 error lines, and copying
    # them (their fields struct with them) to count them cost more than the hints themselves.
    nccl = pl.col("source") == "nccl"
    info = nccl & (pl.col("severity") == "info")
    counts = events.select(
        pl.col("severity").is_in(["error", "critical"]).any().alias("failed"),
        nccl.sum().alias("nccl"),
        info.sum().alias("info"),
        (info & _UNTIMED).sum().alias("info_untimed"),
    ).row(0, named=True)
    if not findings and not counts["failed"]:
        return []
    hints: list[str] = []
    distributed = _is_distributed(view)
    roots = [f for f in findings if f.role == Role.ROOT] or findings
    root_categories = {f.category for f in roots}

    if counts["nccl"] == 0 and distributed:
        hints.append(HINT_NCCL_DEBUG)
    if Category.HANG in root_categories and not view.has(Event.DESYNC_REPORT, Event.FR_DUMP):
        hints.append(HINT_DESYNC)
    if view.has(Event.WATCHDOG_TIMEOUT) and not view.has(Event.FR_DUMP):
        hints.append(HINT_FLIGHT_RECORDER)
    if counts["info"] and counts["info_untimed"] / counts["info"] >= UNTIMED_SHARE:
        hints.append(HINT_NCCL_TIMESTAMPS)
    if _local_rank_only(events) and _multi_node(view):
        hints.append(HINT_ROLE_PREFIX)
    if len(view.files) == 1 and _multi_node(view):
        hints.append(HINT_SPLIT_OUTPUT)
    progress = view.of(Event.PROGRESS)
    if progress.height and _untimed_share(progress) >= UNTIMED_SHARE:
        hints.append(HINT_PROGRESS_TIMESTAMPS)
    if Category.HARDWARE in root_categories and not view.has(Event.XID, Event.GPU_LOST):
        hints.append(HINT_KERNEL_LOG)
    if Category.CRASH in root_categories and not view.has(Event.TRACEBACK, Event.ERROR_FILE):
        hints.append(HINT_TRACEBACK)
    return hints


# A row whose time was not written on the line itself (null where ``time_inferred`` is null on a
# timed row: not counted, as a filter would drop it).
_UNTIMED = pl.col("time").is_null() | pl.col("time_inferred")


def _untimed_share(rows: pl.DataFrame) -> float:
    """Share of rows whose time was not written on the line itself."""
    if rows.height == 0:
        return 0.0
    untimed: int = rows.select(_UNTIMED.sum()).item()
    return untimed / rows.height


def _local_rank_only(events: pl.DataFrame) -> bool:
    """Lines identified only by a local-rank prefix: no rank and no host of their own."""
    anonymous = (pl.col("local_rank").is_not_null() & pl.col("prefix").is_not_null() & pl.col("rank").is_null()
                 & pl.col("host").is_null() & pl.col("node").is_null())
    return bool(events.select(anonymous.any()).item())


def _multi_node(view: JobView) -> bool:
    """The job ran on several nodes, by any evidence: hosts, NCCL's nNodes, torchrun's node counts, srun."""
    if len(view.nodes) > 1:
        return True
    hosts = view.events["host"].drop_nulls().n_unique() if view.events.height else 0
    if hosts > 1:
        return True
    comm = view.of(Event.NCCL_COMM_INFO)
    if comm.height and (comm.select(pl.col("fields").struct.field("nnodes").cast(pl.Int64, strict=False).max())
                        .item() or 0) > 1:
        return True
    config = view.of(Event.LAUNCH_CONFIG)
    for nnodes in config.select(pl.col("fields").struct.field("nnodes")).to_series().drop_nulls().to_list():
        top = str(nnodes).split(":")[-1]
        if top.isdigit() and int(top) > 1:
            return True
    for row in view.of(Event.LAUNCH_COMMAND).select("fields").to_series().to_list():
        if row and row.get("key") in ("SLURM_NNODES", "SLURM_JOB_NUM_NODES") and str(row.get("value")).isdigit() \
                and int(str(row.get("value"))) > 1:
            return True
    return view.of(Event.LAUNCH_CONFIG).height > 1


def _is_distributed(view: JobView) -> bool:
    """Evidence of a multi-process PyTorch job (torchrun, c10d, ranks), where NCCL lines would be expected."""
    if view.has(Event.LAUNCH_CONFIG, Event.RENDEZVOUS, Event.WORKER_FAILED, Event.CHILD_FAILURE,
                Event.WATCHDOG_TIMEOUT, Event.WATCHDOG_STATUS, Event.DESYNC_REPORT, Event.TEARDOWN):
        return True
    events = view.events
    if events.height == 0:
        return False
    return bool(events["rank"].drop_nulls().n_unique() > 1 or events["local_rank"].drop_nulls().n_unique() > 1)


__all__ = ["missing_evidence_hints"]
