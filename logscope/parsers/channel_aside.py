"""NCCL channel lines set aside before classification: the ones the thinning would drop anyway.

With ``NCCL_DEBUG=INFO`` every rank prints a line per channel and peer each time it connects a
communicator (NVIDIA/nccl ``src/transport/p2p.cc``: ``Channel %02d/%01d : %d[%d] -> %d[%d] via
P2P/%s%s%s``; ``src/transport/net.cc``: ``... [send] via NET/%s/%d%s%s%s``; the message table's
``nccl.channel.connect``): half the lines of a 16-node Megatron-DeepSpeed log. The timeline keeps
the first of each (process, transport, peers) (:mod:`logscope.ingest.thinning`); classifying the
others (~2 us a line) was most of what they cost.

A channel line is set aside when an earlier line of its chunk says the same but for the channel's
number, and the thread id and device in NCCL's head (``Channel 00`` and ``Channel 01`` of one
process to one peer over one transport, from the thread of one communicator or another's): both
give one thinning key (host and pid from NCCL's head, transport and peers from the message; none
of the others), and the earlier one is kept. Only lines classification certainly makes channel
events are compared: a channel pattern's trigger held and its regex matching, and
no earlier pattern of the table claiming them (:mod:`logscope.parsers.claims`). Lines set aside
are counted as recognised. A line whose text holds anything else that changes (a time a wrapper
wrote in front of it) is set aside only after one that said it all the same, to the second.
"""

from __future__ import annotations

from functools import cache

import polars as pl

from logscope.knowledge import RECOGNISERS, Message
from logscope.model import Event
from logscope.parsers.claims import certain, holds, others_before

# Below this many lines holding a channel pattern's trigger a chunk is left alone: asking costs
# more than classifying them.
MIN_LINES = 256
# What a line's text says beyond its thinning key, masked: the channel's number, and the thread
# id and device of NCCL's head (``host:pid:tid [dev] NCCL INFO``; each communicator connects from
# a thread of its own). The rest of the text says the key. (A regex without groups: ~4x faster.)
_BEYOND_KEY = r":\d+ (?:\[\d+\] )?NCCL INFO Channel \d+"
_MASKED = ":# NCCL INFO Channel #"


def channel_surplus(candidates: pl.DataFrame) -> pl.Series | None:
    """Row positions of the candidate lines (``raw``, ``kw``: the triggers each holds) that are NCCL
    channel lines the thinning would drop (see the module docstring); None when there is none."""
    patterns, earlier = _channel_patterns()
    if candidates.height <= MIN_LINES or not patterns:
        return None
    triggers = sorted({t for p in patterns for t in p.triggers})
    held = (candidates.lazy().select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_at"), "raw", "kw")
            .filter(holds(triggers) & pl.col("raw").str.contains("NCCL INFO Channel ", literal=True)).collect())
    if held.height <= MIN_LINES:
        return None
    said = pl.col("raw").str.replace(_BEYOND_KEY, _MASKED, literal=False)
    surplus = certain(held, patterns, earlier).filter(pl.int_range(pl.len()).over(said) > 0)["_at"]
    return surplus if surplus.len() else None


@cache
def _channel_patterns() -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """The channel patterns, and every other pattern before the last of them."""
    channel = tuple(p for p in RECOGNISERS if p.event == Event.NCCL_CHANNEL)
    return channel, others_before(channel)


__all__ = ["MIN_LINES", "channel_surplus"]
