"""Thinning: the events of a file kept in bounded memory, whatever its lines.

Detectors need where each process started and stopped, not every repetition in between: NCCL
COLL lines keep the first and last collectives of each communicator, progress lines the last
steps of each process, channel lines one per (process, peer, transport), and any other line a
process repeats its first and last of each kind. Across processes, each kind of event keeps at
most :data:`KIND_KEEP` rows per file (its first and last halves), so a log of millions of
processes each printing one warning cannot grow memory either.

Applying :func:`thin` again to thinned parts joined together gives what thinning the whole would
for the per-process rules, not for the across-processes one: a file read in more than 8 blocks
(logscope.ingest.reading thins its parts as they come) with more than KIND_KEEP events of one kind
can keep other rows in the middle than thinning it once would (the first and last rows of every
process stay either way). Known, and said in the README's Performance section.
"""

from __future__ import annotations

import polars as pl

from logscope.limits import COLL_HEAD, COLL_TAIL
from logscope.model import Event

# NCCL COLL lines can be most of a multi-GB log; per (file, host, pid, comm) only the first
# COLL_HEAD and the last COLL_TAIL matter to the detectors (where a rank started and stopped).
PROGRESS_TAIL = 4096
# Other repeated lines: first and last kept per (process, kind of line); multi-line records more.
REPEAT_KEEP = 64
RECORD_KEEP = 4096
_RECORD_EVENTS = [Event.CHILD_FAILURE.value, Event.LAUNCH_CONFIG.value, Event.RENDEZVOUS.value]
# Any kind of event, across all the processes of a file: the first and last KIND_KEEP // 2.
KIND_KEEP = 16384


def thin(events: pl.DataFrame) -> pl.DataFrame:
    """Keep the first/last COLL rows per communicator and the last progress rows per process."""
    if events.height <= min(REPEAT_KEEP, COLL_HEAD + COLL_TAIL) and not (
            events["event"] == Event.NCCL_CHANNEL.value).any():
        return events  # no group can be over its limit (channel lines are made unique: not skipped)
    # One lazy plan, collected once: each eager step cost a query's fixed ~0.5 ms, per file. Each
    # window is taken over the rows of its kind only (a column added after that kind's filter, so
    # the optimiser cannot move the filter that follows it before the first).
    lazy = events.lazy()
    event = pl.col("event")
    coll = event == Event.NCCL_COLL.value
    progress = event == Event.PROGRESS.value
    channel = event == Event.NCCL_CHANNEL.value
    records = event.is_in(_RECORD_EVENTS)

    def ends(frame: pl.LazyFrame, key: list[pl.Expr], first: int | pl.Expr, last: int | pl.Expr) -> pl.LazyFrame:
        """The first ``first`` and last ``last`` rows of each ``key`` group of ``frame``."""
        position = pl.int_range(pl.len()).over(key).alias("_pos")
        count = pl.len().over(key).cast(pl.Int64).alias("_n")  # UInt32 would wrap below zero
        kept = (pl.col("_pos") < first) | (pl.col("_pos") >= pl.col("_n") - last)
        return frame.with_columns(position, count).filter(kept).drop("_pos", "_n")

    process = [pl.col("host"), pl.col("pid"), pl.col("rank"), pl.col("local_rank"), pl.col("task")]
    keep_coll = ends(lazy.filter(coll), [pl.col("host"), pl.col("pid"), pl.col("fields").struct.field("comm")],
                     COLL_HEAD, COLL_TAIL)
    keep_progress = ends(lazy.filter(progress), process, COLL_HEAD, PROGRESS_TAIL)
    # Channel lines repeat per channel; one per (process, peer, transport) says all there is.
    channel_key = ["host", "pid", "_transport", "_from", "_to"]
    keep_channel = (
        lazy.filter(channel)
        .with_columns(
            pl.col("fields").struct.field("transport").alias("_transport"),
            pl.col("fields").struct.field("comm_rank").alias("_from"),
            pl.col("fields").struct.field("value").alias("_to"),
        )
        .unique(subset=channel_key, keep="first", maintain_order=True)
        .drop("_transport", "_from", "_to")
    )
    # Everything else: a process repeating the same kind of line thousands of times (a retry loop
    # of NCCL WARNs, tracebacks in a crash loop) keeps its first and last ones. What detectors use
    # is there: a process's first failure, and its last activity. Record lines (ChildFailedError,
    # launch configs, rendezvous results) span several lines each, so they get far more room.
    limit = pl.when(records).then(RECORD_KEEP).otherwise(REPEAT_KEEP)
    rest = ends(lazy.filter(~coll & ~progress & ~channel), [*process, event], limit, limit)
    kept = pl.concat([rest, keep_coll, keep_progress, keep_channel]).sort("line", maintain_order=True)
    # Any kind of event, across the processes of the file: its first and last KIND_KEEP // 2.
    return ends(kept, [event], KIND_KEEP // 2, KIND_KEEP // 2).collect()
