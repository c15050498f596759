"""A big block's restart-loop repeats set aside on its bytes, before polars frames its lines.

:mod:`logscope.parsers.repeats` says the rule: in a chunk of lines, a group of lines (a line and
the lines that go on it) whose wording came at least ``head`` times before and comes ``tail``
times after is set aside, but for the first and last timed group of each run set aside and the
groups with a line another rule keeps the ends of (progress lines, NCCL COLL lines). There, polars
frames every line of a block first, then the rule takes most of them out again: in a restart
loop's 64 MB file, framing, then turning the lines back into bytes for the scanner, then grouping
them in polars took ~1 s of its ~2.2 s, and the lines kept are ~5%.

Here the compiled scanner applies the same rule to the block's bytes (``_collscan.wordings``:
each line's wording, flags and which triggers it holds; ``aside``: the groups and what goes;
``lines_of``: the lines kept, numbered as in the file, or the lines whose triggers polars must
check), and polars frames the kept lines only. What is exact only in polars is asked of polars,
on the few lines concerned: whether a line holding a progress pattern's trigger is a progress
line. The gate is the polars rule's (:data:`~logscope.parsers.repeats.SAMPLE_LINES`,
:data:`~logscope.parsers.repeats.SAMPLE_SHARE`), on the block's first lines, read alone first: a
block without a loop pays ~15 ms.

A block this module looked at is not looked at again by the polars rule (whatever it found): the
lines it kept include each run's timed ends, which a second pass would count as repeats. One rule
applies per block, as before; a line longer than :data:`~logscope.limits.MATCH_CHARS` bytes is
never set aside here (the caller counts the lines it cuts for matching among those it frames).
``tests/test_repeat_prefilter.py`` holds this to the polars rule.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from functools import cache

import polars as pl

from logscope.ingest import compiled
from logscope.ingest.blocks import Controls, for_csv_reader
from logscope.limits import MATCH_CHARS, WRAP_MAX_LINES
from logscope.parsers.coll_groups import COLL_INFO, COLL_TRIGGER
from logscope.parsers.repeats import SAMPLE_LINES, SAMPLE_SHARE, progress_patterns

# Below this many lines a block is left to the polars rule (which takes chunks of more than 4096
# lines): a block of at most WRAP_MAX_LINES lines may be a paste whose hard-wrapped lines the
# parser joins, and a line set aside would change what joins.
MIN_LINES = WRAP_MAX_LINES


@dataclass
class RepeatsFound:
    """What :func:`reduce_repeats` made of a block: its kept lines, or None when it keeps all (the
    block is then framed whole, as it would have been)."""

    kept: bytes | None  # each kept line as ``<its number in the file>\\x1f<the line>\\n``
    kept_count: int = 0
    lines_read: int = 0  # of the block, when some were set aside
    # For each kept line some lines set aside are counted against (the line at their place in the
    # first group of their key): its number in the file and how many (``line``, ``count``).
    counted: pl.DataFrame | None = None


def looks_for_repeats(controls: Controls) -> bool:
    """Whether :func:`reduce_repeats` can read a block with these controls: the compiled scanner
    is there, and no line is split at a carriage return (a line is then several rows, and the
    polars rule leaves such chunks alone too)."""
    return compiled.COMPILED and not controls.carriage_return


def reduce_repeats(block: bytes | memoryview, first_line: int, controls: Controls,
                   head: int, tail: int) -> RepeatsFound | None:
    """``block`` (lines numbered from ``first_line + 1``, read as
    :func:`~logscope.ingest.line_frames.lines_frame` reads it) without the groups of lines a
    restart loop repeats (see the module docstring); None when it has too few lines to be looked
    at (the polars rule may then look). Only when :func:`looks_for_repeats`."""
    text = for_csv_reader(block, controls.unit_separator, first=first_line == 0)
    body = memoryview(text)[:-1] if text[-1:] == b"\n" else memoryview(text)
    needles = _needles()
    hashes, flags, held, end = compiled.scanner.wordings(body, needles, MATCH_CHARS, SAMPLE_LINES)
    sample = len(flags)
    if end == len(body) and sample <= MIN_LINES:
        return None
    whole = RepeatsFound(None)
    own = _own_rows(body, held, 0)
    if sample - len(own) < SAMPLE_SHARE * sample:  # progress (or COLL) lines: too few could go
        return whole
    counts: dict[int, int] = {}
    for value in array("Q", hashes):
        counts[value] = counts.get(value, 0) + 1
    if sum(max(0, count - head - tail) for count in counts.values()) < SAMPLE_SHARE * sample:
        return whole  # no wording comes often enough: no loop
    rows, counted, tallies = compiled.scanner.aside(hashes, flags, own.tobytes(), head, tail)
    if len(rows) // 4 < SAMPLE_SHARE * sample:
        return whole
    if end < len(body):  # the sample passed: the whole block
        more_hashes, more_flags, more_held, _ = compiled.scanner.wordings(body[end:], needles, MATCH_CHARS)
        hashes, flags = hashes + more_hashes, flags + more_flags
        own.extend(_own_rows(body[end:], more_held, sample))
        rows, counted, tallies = compiled.scanner.aside(hashes, flags, own.tobytes(), head, tail)
        if not rows:
            return whole
    kept, kept_count = compiled.scanner.lines_of(body, rows, True, first_line)
    lines = array("I", counted)
    return RepeatsFound(kept, kept_count, len(flags),
                        pl.DataFrame({"line": pl.Series(lines, dtype=pl.Int64) + (first_line + 1),
                                      "count": pl.Series(array("I", tallies), dtype=pl.Int64)}))


def _own_rows(body: memoryview, held: bytes, offset: int) -> array[int]:
    """The rows (ascending, plus ``offset``) of the lines another rule keeps the ends of (see
    repeats._own_rule_rows): NCCL COLL-shaped lines (both of its literals held) and progress lines
    (a trigger held, and a progress pattern's regex matching, asked of polars)."""
    coll, maybe = _rows_holding(held, _COLL_BITS, all_of=True), _rows_holding(held, _PROGRESS_BITS, all_of=False)
    rows = coll
    if maybe:
        text, _ = compiled.scanner.lines_of(body, maybe.tobytes(), False, 0)
        _, regexes = progress_patterns()
        matched = (pl.Series([text.decode("utf-8", "replace")]).str.split("\n").explode()
                   .str.contains(regexes))
        progress = maybe if len(matched) != len(maybe) else array("I", pl.Series(maybe).filter(matched))
        rows = array("I", sorted(coll + progress)) if coll else progress
    return array("I", (row + offset for row in rows)) if offset else rows


def _rows_holding(held: bytes, bits: int, all_of: bool) -> array[int]:
    """The rows whose held needles include ``bits`` (``all_of``) or one of them."""
    mask = bytes((b & bits == bits) if all_of else bool(b & bits) for b in range(256))
    found = held.translate(mask)
    if not found.strip(b"\0"):
        return array("I")
    if len(found) <= SAMPLE_LINES:
        return array("I", (row for row, yes in enumerate(found) if yes))
    import numpy as np

    return array("I", np.flatnonzero(np.frombuffer(found, dtype=np.uint8)).astype(np.uint32).tobytes())


@cache
def _needles() -> tuple[bytes, ...]:
    """The byte strings ``wordings`` looks for: the progress patterns' triggers (but those that
    hold another: a line holding "iteration" holds "iter"), then NCCL's two COLL literals."""
    triggers, _ = progress_patterns()
    shortest = [t for t in triggers if not any(o != t and o in t for o in triggers)]
    return (*(t.encode() for t in shortest), COLL_INFO.encode(), COLL_TRIGGER.encode())


_COLL_BITS = 0b11 << (len(_needles()) - 2)
_PROGRESS_BITS = (1 << (len(_needles()) - 2)) - 1

__all__ = ["MIN_LINES", "RepeatsFound", "looks_for_repeats", "reduce_repeats"]
