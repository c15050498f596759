"""Thinning: the events of a file kept in bounded memory, whatever its lines.

Detectors need where each process started and stopped, not every repetition in between: NCCL
COLL lines keep the first and last collectives of each communicator, progress lines the last
steps of each process, channel lines one per (process, peer, transport), and any other line a
process repeats its first and last of each kind. Across processes, each kind of event keeps at
most :data:`KIND_KEEP` rows per file (its first and last halves), so a log of millions of
processes each printing one warning cannot grow memory either. Applying :func:`thin` again to
thinned parts joined together gives what thinning the whole would.
"""

from __future__ import annotations

import polars as pl

from logscope.model import Event

# NCCL COLL lines can be most of a multi-GB log; per (file, host, pid, comm) only the first and
# the last ones matter to the detectors (where a rank started and where it stopped).
COLL_HEAD = 2
COLL_TAIL = 64
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
    coll = pl.col("event") == Event.NCCL_COLL.value
    progress = pl.col("event") == Event.PROGRESS.value
    key_coll = [pl.col("host"), pl.col("pid"), pl.col("fields").struct.field("comm")]
    key_progress = [pl.col("host"), pl.col("pid"), pl.col("rank"), pl.col("local_rank"), pl.col("task")]
    pos_c = pl.int_range(pl.len()).over(key_coll)
    n_c = pl.len().over(key_coll).cast(pl.Int64)  # UInt32 would wrap below zero
    pos_p = pl.int_range(pl.len()).over(key_progress)
    n_p = pl.len().over(key_progress).cast(pl.Int64)
    keep_coll = events.filter(coll).filter((pos_c < COLL_HEAD) | (pos_c >= n_c - COLL_TAIL))
    keep_progress = events.filter(progress).filter((pos_p < COLL_HEAD) | (pos_p >= n_p - PROGRESS_TAIL))
    channel = pl.col("event") == Event.NCCL_CHANNEL.value
    # Channel lines repeat per channel; one per (process, peer, transport) says all there is.
    channel_key = ["host", "pid", "_transport", "_from", "_to"]
    keep_channel = (
        events.filter(channel)
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
    records = pl.col("event").is_in(_RECORD_EVENTS)
    key_rest = [pl.col("host"), pl.col("pid"), pl.col("rank"), pl.col("local_rank"), pl.col("task"),
                pl.col("event")]
    pos_r = pl.int_range(pl.len()).over(key_rest)
    n_r = pl.len().over(key_rest).cast(pl.Int64)
    limit = pl.when(records).then(RECORD_KEEP).otherwise(REPEAT_KEEP)
    rest = events.filter(~coll & ~progress & ~channel).filter((pos_r < limit) | (pos_r >= n_r - limit))
    kept = pl.concat([rest, keep_coll, keep_progress, keep_channel]).sort("line", maintain_order=True)
    if kept.height <= KIND_KEEP:
        return kept
    pos_k = pl.int_range(pl.len()).over("event")
    n_k = pl.len().over("event").cast(pl.Int64)
    return kept.filter((pos_k < KIND_KEEP // 2) | (pos_k >= n_k - KIND_KEEP // 2))
