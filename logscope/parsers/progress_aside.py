"""Training-progress lines set aside before classification: the ones the thinning would drop anyway.

A long run logs a progress line per step and rank (Megatron's ``iteration 1200/ 500000 |
consumed samples: ... | lm loss: 2.51E+00 | ...``); the timeline keeps the first
:data:`~logscope.limits.COLL_HEAD` and the last :data:`~logscope.limits.PROGRESS_TAIL` of each
process of a file, and the file's sample (:func:`~logscope.limits.progress_sampled`;
:mod:`logscope.ingest.thinning`). Classifying is most of what such a line
costs (the groups of Megatron's pattern, with its optional parts, take polars ~4-6 us a line; a
match test without groups ~0.4 us), so the candidate lines of a chunk that cannot be among those
kept are set aside here, counted as recognised and never classified.

A line is set aside only when classifying it certainly gives a progress event, of a process its
prefix tells:

* it holds the trigger of a progress pattern whose regex matches it (the same regex, as polars
  runs it in :mod:`logscope.parsers.classify`);
* no other pattern before the last progress pattern in the table can claim it first: none whose
  trigger it holds has a regex that matches it (a trigger alone says little: torchrun's failure
  index ``[1]:`` is held by every line under its own ``[default0]:`` prefix, and only a line that
  ends there is one);
* those progress patterns have no identity group (host, pid, rank, local rank): the event's
  process comes from the line's launcher prefix alone.

Lines are grouped by their prefix text, which may split a process in two (two spellings of one
prefix) but never merges two: a line that is not among the first ``head`` or the last ``tail`` of
its group in the chunk is not among those of its process in the file either. With at most
``head + tail`` lines holding a progress trigger in every group, nothing can be set aside, and no
regex is tried. A line at a number of the file's progress sample
(:func:`~logscope.limits.progress_sampled`) is never set
aside, and its group's first and last are taken among the others: the thinning keeps it too.
"""

from __future__ import annotations

import re
from functools import cache

import polars as pl

from logscope.knowledge import RECOGNISERS, Message
from logscope.limits import progress_sampled
from logscope.model import Event
from logscope.parsers.claims import certain, holds, others_before
from logscope.parsers.classify import IDENTITY_SCHEMA


def progress_surplus(candidates: pl.DataFrame, head: int, tail: int) -> pl.Series | None:
    """Row positions of the candidate lines (``line``, ``who``: the prefix without its times,
    ``raw``, ``kw``: the triggers each holds) that are progress lines the thinning would drop (see
    the module docstring); None when there is none."""
    patterns, others = prefix_keyed_patterns()
    if candidates.height <= head + tail or not patterns:
        return None
    triggers = sorted({t for p in patterns for t in p.triggers})
    held = (candidates.lazy().select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_at"), "line", "who", "raw", "kw")
            .filter(holds(triggers) & ~progress_sampled(pl.col("line").cast(pl.Int64))).collect())
    # Most chunks of a log with progress lines hold few of them per process: nothing to set aside.
    if held.height <= head + tail or held.group_by("who").len()["len"].max() <= head + tail:  # type: ignore[operator]
        return None
    progress = certain(held, patterns, others)
    # Positions among the certain lines of a prefix only: taken on their own frame, so that no
    # optimiser can fold the two filters into one (positions among every line held would be wrong).
    position = pl.int_range(pl.len()).over("who")
    count = pl.len().over("who").cast(pl.Int64)
    surplus = progress.filter((position >= head) & (position < count - tail))["_at"]
    return surplus if surplus.len() else None


@cache
def prefix_keyed_patterns() -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """The progress patterns whose events take their process from the prefix alone (no identity
    group), and every other pattern before the last of them (one of them matching a line claims it
    first, or makes its process another)."""
    usable = tuple(p for p in RECOGNISERS if p.event == Event.PROGRESS
                   and not {name.split("__")[0] for name in re.compile(str(p.match)).groupindex} & set(IDENTITY_SCHEMA))
    return usable, others_before(usable)


__all__ = ["prefix_keyed_patterns", "progress_surplus"]
