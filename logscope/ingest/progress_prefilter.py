"""A big block's training-progress lines set aside on its bytes, before polars frames them.

A trainer logs a progress line per step and rank (Megatron's ``iteration 1200/ 500000 | consumed
samples: ... | lm loss: 2.51E+00 | ...``, DLLogger's ``DLL 2025-10-03 22:11:24.887573 - Iteration
591 | train_loss : ...``); the timeline keeps the first :data:`~logscope.limits.COLL_HEAD` and the
last :data:`~logscope.limits.PROGRESS_TAIL` of each process of a file
(:mod:`logscope.ingest.thinning`). :mod:`logscope.parsers.progress_aside` sets the others aside
once polars has framed every line (its prefixes split, its times parsed, its triggers listed):
~7 us of a core a line, nearly all of what a progress log costs. Here they go before that.

The lines of one step differ from those of the next in their digits alone (the step, the loss, the
time, the rank in ``[default3]:``). The compiled scanner hashes each line with its digits read as
``0`` (``_collscan.shapes``); the lines of a shape that hold a progress pattern's trigger are
described by polars once, on one line of the shape (:func:`~logscope.parsers.lines.described`,
framed behind the block's first lines, from which a file's wrappers and envelopes are learned),
and the shape is one whose lines can go when that line:

* is a progress line classification certainly gives (as progress_aside asks it:
  :func:`~logscope.parsers.claims.certain`), of a pattern with no identity group, so that its
  process is the one its prefixes name;
* carries at most one clock: no outer time in front of another (the offset between a file's two
  clocks is taken over the lines that carry both, and these would change it);
* holds no trigger with a digit in it, and tries no pattern whose regex tells digits apart (a
  literal digit, a class of some digits: :func:`~logscope.ingest.digit_regex.digit_blind`), so
  that every line of the shape is tried by the same patterns with the same outcome.

The regexes that read prefixes and times tell digits apart (a year is ``(?:19|2\\d)\\d\\d``), so the
lines of such a shape are read again, as the block reads them (behind its first lines:
:func:`~logscope.parsers.prefixes.split_prefix_of_files`, learned wrappers and line numbers
included): the length of their prefixes, of the text they leave once their times are taken out
(who wrote it: the key its lines are kept by, as progress_aside keys them) and, where the time
forms read with any digit anywhere (:func:`~logscope.ingest.digit_regex.digit_relaxed`) could
say otherwise, whether the body starts with a time must be those of the line that described its
shape; a line where one is not is kept. Not each line: the lines of a shape are grouped by their
digits where those regexes may tell them apart (:func:`~logscope.ingest.digit_regex.digit_reads`,
followed with Python's ``re`` as the block's reading takes them: the stack from the line's start
and behind each learned head, each search for a time from where the last stopped) and where the
writer's own digits are (a rank's), and one line of each group is read for all of it, where
Python's reading of it is polars' (else its group is kept). Where the first lines open an envelope,
or learn a head that tells digits apart, every line is read. What is left is the rule of
:mod:`logscope.ingest.repeat_prefilter` (``_collscan.aside``, then ``drop_across`` over a file's
consecutive blocks): each key's first ``head`` and last ``tail`` lines are kept, and of each run of
lines set aside back to back the first and the last with a time where the lines kept next to the
run need them (a line's time comes from its shape's line: its untimed neighbours take their times
from those). A line that holds no trigger of
the table is kept but ends no run: it is never a candidate, so no time of a neighbour is its
concern (a trainer's own prints between its progress lines would keep most of them otherwise).
Each line set aside is counted against its key's first line, itself a progress line, so every line
is still counted as recognised. A line of the file's progress sample
(:func:`~logscope.limits.progress_sampled`) stays, as the thinning keeps it.

Never set aside, as the polars path would read them otherwise: a block's first WRAPPER_SAMPLE
lines; a line after one holding ``File "`` (a traceback's source line is quoted text); every line
from the first holding torchrun's reprinted ``traceback : Traceback (most recent call last)`` on; a line
longer than MATCH_CHARS. Not exact in two corners, both of a clock that is no clock: a line whose
time has a time's form but is no date (a 13th month) is taken as timed as its shape's line; and
the year given to a glog or syslog time (which carries none) is the one nearest the median of the
kept lines' times, not of all of them. ``tests/test_progress_prefilter.py`` holds the rest to the
polars path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING

import polars as pl

from logscope.ingest import compiled
from logscope.ingest.blocks import Controls, for_csv_reader
from logscope.ingest.digit_regex import digit_blind, digit_reads, digit_relaxed
from logscope.ingest.line_frames import lines_frame
from logscope.ingest.repeat_prefilter import (
    GROUP_RECORD,
    MIN_LINES,
    RepeatsFound,
    counted_frame,
    first_of_each_shape,
    lines_at,
    loop_aside,
)
from logscope.knowledge import RECOGNISERS, Message
from logscope.limits import MATCH_CHARS, progress_sampled
from logscope.parsers.claims import certain, holds, regex
from logscope.parsers.envelopes import opened
from logscope.parsers.lines import described, message_triggers
from logscope.parsers.prefix_stack import PREFIX_STACK, TIME_LEAD
from logscope.parsers.prefixes import (
    WRAPPER_SAMPLE,
    Learned,
    split_prefix_learning,
    split_prefix_of_files,
    timeless,
    times_of,
)
from logscope.parsers.progress_aside import prefix_keyed_patterns
from logscope.parsers.repeats import SAMPLE_LINES
from logscope.parsers.time_forms import BODY_TIME_START

if TYPE_CHECKING:
    import numpy as np

# A block is looked at when at least this share of its first SAMPLE_LINES lines hold a progress
# trigger: elsewhere the scanner's pass would cost more than the few lines it could set aside.
SAMPLE_SHARE = 0.5
# A shape of fewer lines is not described: each costs a line framed, and few lines set aside.
MIN_SHAPE_LINES = 8
# _collscan.wordings' flag for a line longer than its max_line, and aside's for a timed line.
_LONG_LINE = 4
_TIMED = 2
_FRAME_NEEDLE = b'File "'  # lines.py's _FRAME_LINE holds it
# lines.py's _REPRINT_START holds both (a traceback's own first line, behind an srun label's
# "0: ", holds the second alone)
_REPRINT_NEEDLES = (b"traceback", b": Traceback (most recent call last)")


@dataclass(frozen=True)
class _Shapes:
    """What the lines that described the block's shapes said (one row per shape that may go)."""

    shape: np.ndarray  # the shape's hash (uint64), ascending
    prefix_chars: np.ndarray  # its prefixes' length
    who_chars: np.ndarray  # what is left of them once their times are out: its length
    body_timed: np.ndarray  # whether its body starts with a time (bool)
    # whether a line of its shape may read otherwise (its line's body starts with a time where
    # the time regexes read any digit anywhere: digit_relaxed), and so is read again (bool)
    body_check: np.ndarray
    timed: np.ndarray  # whether the line has a time (bool)


def reduce_progress(block: bytes | memoryview, first_line: int, controls: Controls, reference_year: int,
                    head: int, tail: int, loop_keep: tuple[int, int] | None = None) -> RepeatsFound | None:
    """``block`` (lines numbered from ``first_line + 1``, read as
    :func:`~logscope.ingest.line_frames.lines_frame` reads it) without the progress lines the
    thinning drops (see the module's docstring), as a :class:`RepeatsFound` whose ``keep`` is
    ``(head, tail)``; None when it sets none aside. ``loop_keep``: what is left is then compared
    for a loop's repeats (:func:`~logscope.ingest.repeat_prefilter.loop_aside`, the first and last
    of each wording kept). Only when :func:`~logscope.ingest.repeat_prefilter.looks_for_repeats`."""
    import numpy as np

    text = for_csv_reader(block, controls.unit_separator, first=first_line == 0)
    body = memoryview(text)[:-1] if text[-1:] == b"\n" else memoryview(text)
    needles, progress_bits = _needles()
    _, flags, held, end = compiled.scanner.wordings(body, needles, MATCH_CHARS, SAMPLE_LINES, False)
    sample = len(flags)
    if sample <= MIN_LINES and end == len(body):
        return None
    progress = np.flatnonzero(np.frombuffer(held, dtype=np.uint32) & progress_bits)
    if len(progress) < SAMPLE_SHARE * sample:
        return None
    # Asked of the sample: its share (by its bytes) of what each writer may keep.
    if _few_per_writer(body[:end], progress, (head + tail) * end / max(1, len(body))):
        return None
    hashes, _, starts = compiled.scanner.shapes(body)
    line_starts = np.frombuffer(starts, dtype=np.uint64)
    if end < len(body):
        flags, held = _held_by_shape(body, np.frombuffer(hashes, dtype=np.uint64), line_starts, needles)
    holding = np.frombuffer(held, dtype=np.uint32)
    count = len(holding)
    may_go = ((holding & progress_bits) != 0) & ((np.frombuffer(flags, dtype=np.uint8) & _LONG_LINE) == 0)
    may_go[:WRAPPER_SAMPLE] = False
    frame_bit, reprint_bits = 1 << (len(needles) - 3), 0b11 << (len(needles) - 2)
    after_frame = np.flatnonzero(holding & frame_bit) + 1
    may_go[after_frame[after_frame < count]] = False
    reprints = np.flatnonzero((holding & reprint_bits) == reprint_bits)
    if len(reprints):
        may_go[reprints[0]:] = False
    rows = np.flatnonzero(may_go)
    if len(rows) <= head + tail:
        return None
    shape_of_row = np.frombuffer(hashes, dtype=np.uint64)[rows]
    shapes, first, counts = np.unique(shape_of_row, return_index=True, return_counts=True)
    described_shapes = np.flatnonzero(counts >= MIN_SHAPE_LINES)
    if counts[described_shapes].sum() <= head + tail:
        return None
    by_row = np.argsort(first[described_shapes])  # the lines that describe them, in the block's order
    told = _described(body, line_starts, rows[first[described_shapes][by_row]], shapes[described_shapes][by_row],
                      first_line, reference_year)
    if told is None:
        return None
    # The lines of the shapes that may go, each read again where its digits could matter.
    place = np.searchsorted(told.shape, shape_of_row)
    place[place == len(told.shape)] = 0
    known = told.shape[place] == shape_of_row
    rows, place = rows[known], place[known]
    if len(rows) <= head + tail:
        return None
    checked = _checked(body, rows, place, told, line_starts)
    if checked is None:
        return None
    keys, same = checked
    rows, place, keys = rows[same], place[same], keys[same]
    if len(rows) <= head + tail:
        return None
    line_flags = np.zeros(count, dtype=np.uint8)
    line_flags[rows[told.timed[place]]] = _TIMED
    # A line of the file's progress sample stays, as its own (keyless: the first and last lines of
    # its key are taken among the others, as progress_aside takes them), timed as its shape's line.
    keyed = ~progress_sampled(rows.astype(np.int64) + (first_line + 1))
    rows, keys = rows[keyed], keys[keyed]
    line_keys = np.zeros(count, dtype=np.uint64)
    line_keys[rows] = keys
    own = np.ones(count, dtype=bool)
    own[rows] = False
    # The rule is asked of the lines that matter to it only: those that may go, and the others that
    # can be candidates (a line that holds no trigger is none: its time is no neighbour's concern,
    # and a run of lines set aside goes on across it; it is kept all the same).
    asked = np.flatnonzero(~own | _may_be_candidates(body, line_starts, np.flatnonzero(own), count))
    aside, counted, tallies, groups = compiled.scanner.aside(
        line_keys[asked].tobytes(), line_flags[asked].tobytes(),
        np.flatnonzero(own[asked]).astype(np.uint32).tobytes(), head, tail, True)
    if not aside:
        return None
    rows = asked[np.frombuffer(aside, dtype=np.uint32)].astype(np.uint32)  # as rows of the block
    counted_rows = asked[np.frombuffer(counted, dtype=np.uint32)].astype(np.uint32)
    # What is left is compared for a loop's repeats (the loop pass did not: this block's progress
    # lines were too many of its lines), as the polars rule would compare it.
    loop = _loop_in_kept(body, line_starts, rows, count, loop_keep) if loop_keep is not None else None
    loop_counted = None
    if loop is not None and len(loop[0]):
        rows = _union(rows, loop[0])
        loop_counted = counted_frame(loop[1].tobytes(), loop[2], first_line)
    kept, kept_count = compiled.scanner.lines_of(body, rows.tobytes(), True, first_line)
    return RepeatsFound(kept, kept_count, count, counted_frame(counted_rows.tobytes(), tallies, first_line),
                        first_line, _in_the_block(asked, groups, rows), keep=(head, tail),
                        loops_looked=loop is not None, loop_counted=loop_counted)


def _union(rows: np.ndarray, more: np.ndarray) -> np.ndarray:
    """The rows of both (each ascending), ascending and each once, as uint32: np.union1d's answer,
    by a sort (numpy 2's union1d finds them by hashing: ~80 ms for a progress block's ~218,000
    kept rows, 16% of what a real progress log's blocks cost; the sort takes ~3 ms)."""
    import numpy as np

    both = np.concatenate((rows, more)).astype(np.uint32)
    both.sort(kind="stable")
    return both[np.concatenate(([True], both[1:] != both[:-1]))] if len(both) else both


def _held_by_shape(body: memoryview, shapes: np.ndarray, starts: np.ndarray,
                   needles: tuple[bytes, ...]) -> tuple[bytes, bytes]:
    """``wordings(body, needles, MATCH_CHARS, 0, False)``'s flags and needles held, by line, asked
    of one line of each shape (``shapes``: ``_collscan.shapes``' hash of each line): lines alike but
    for their digits hold the same needles where no needle holds a digit, and are as long. A
    progress block's 138,000 lines are of a few shapes: the needles were looked for in each (~45 ms
    of a 32 MB block, 2.5 times what its shapes cost)."""
    import numpy as np

    if any(byte in b"0123456789" for needle in needles for byte in needle):
        _, flags, held, _ = compiled.scanner.wordings(body, needles, MATCH_CHARS, 0, False)
        return flags, held
    text, at, count = first_of_each_shape(body, shapes, starts)
    _, flags, held, _ = compiled.scanner.wordings(text, needles, MATCH_CHARS, 0, False)
    if len(flags) != count:  # (a last line that is empty: not one of the text's lines)
        _, flags, held, _ = compiled.scanner.wordings(body, needles, MATCH_CHARS, 0, False)
        return flags, held
    return np.frombuffer(flags, dtype=np.uint8)[at].tobytes(), np.frombuffer(held, dtype=np.uint32)[at].tobytes()


def _loop_in_kept(body: memoryview, starts: np.ndarray, aside: np.ndarray, count: int,
                  keep: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, bytes] | None:
    """The rule of a loop's repeats (repeat_prefilter.loop_aside, first and last ``keep``) on the
    block's lines but those at ``aside``: the rows it sets aside and the rows they are counted
    against (as rows of the block), and how many each; None when they are too few to be looked at
    (the polars rule may then look)."""
    import numpy as np

    kept = np.ones(count, dtype=bool)
    kept[aside] = False
    kept_rows = np.flatnonzero(kept).astype(np.uint32)
    text = lines_at(body, starts, kept_rows)
    found = loop_aside(memoryview(text), *keep)
    if found is None:
        return None
    return (kept_rows[np.frombuffer(found.rows, dtype=np.uint32)],
            kept_rows[np.frombuffer(found.counted, dtype=np.uint32)], found.tallies)


# The leading bytes of a line that _few_per_writer reads, and the bytes behind which a digit is
# kept there (a launcher's label: "0: ", "[default3]:", "[1,3]<stdout>"); every other digit is read
# as any digit (a time's, a date's, a step's).
_LABEL_BYTES = 16
_LABEL_ENDS = b":],|>"


def _few_per_writer(body: memoryview, rows: np.ndarray, most: float) -> bool:
    """Whether the lines at ``rows`` are likely no more than ``most`` for each writer, so that the
    rule could set none aside (a small file of many ranks' steps) and the pass is not worth its
    cost (asked of a block's first lines, ``most`` is their share of head + tail). A guess that
    only saves time: lines are grouped by their first _LABEL_BYTES with the digits of no
    launcher's label read as any digit, which merges writers (ranks 2 and 12) more often than it
    splits them (a label behind a time)."""
    import numpy as np

    if len(rows) > 8 * most:  # more than 8 writers' worth (a node's ranks): some go, most likely
        return False
    text = np.frombuffer(body, dtype=np.uint8)
    starts = np.concatenate(([0], np.flatnonzero(text == ord("\n")) + 1))[rows]
    at = starts[:, None] + np.arange(_LABEL_BYTES)
    lead = text[np.minimum(at, len(text) - 1)].copy()
    lead[np.cumsum(lead == ord("\n"), axis=1) > 0] = 0  # past the line's end
    digit = (lead >= ord("0")) & (lead <= ord("9"))
    after = np.concatenate([lead[:, 1:], np.zeros((len(lead), 1), dtype=np.uint8)], axis=1)
    lead[digit & ~np.isin(after, np.frombuffer(_LABEL_ENDS, dtype=np.uint8))] = ord("0")
    halves = lead.view(np.uint64)  # (the two halves of each line's lead, hashed into one)
    _, counts = np.unique(halves[:, 0] * np.uint64(0x9E3779B97F4A7C15) ^ halves[:, 1], return_counts=True)
    return bool(counts.max() <= most)


def _may_be_candidates(body: memoryview, starts: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """A mask over the block's ``count`` lines: True at each line of ``rows`` that may be a
    candidate once framed, as _candidates asks it (it holds a trigger of the table), or that holds
    a backslash (an envelope may unescape one into it)."""
    import numpy as np

    mask = np.zeros(count, dtype=bool)
    if not len(rows):
        return mask
    text = lines_at(body, starts, rows)
    lines = lines_frame(text + b"\n", 1)
    if lines.height != len(rows):
        mask[rows] = True
        return mask
    raw = pl.col("raw").fill_null("")
    held = lines.select(raw.str.contains_any(message_triggers()) | raw.str.contains("\\", literal=True))
    mask[rows[held.to_series().to_numpy()]] = True
    return mask


def _in_the_block(asked: np.ndarray, groups: bytes, aside: np.ndarray) -> bytes:
    """``_collscan.aside``'s group records (with_groups) over the lines at ``asked`` of a block, as
    the block's: a group's first line, and its place among the lines the block keeps (all but
    ``aside``, its rows set aside: those not asked are kept)."""
    import numpy as np

    records = np.frombuffer(groups, dtype=np.uint32).reshape(-1, GROUP_RECORD).copy()
    first = asked[records[:, 0]]
    records[:, 0] = first
    records[:, 2] = first - np.searchsorted(aside, first)
    return records.tobytes()


def _described(body: memoryview, starts: np.ndarray, rows: np.ndarray, shapes: np.ndarray, first_line: int,
               reference_year: int) -> _Shapes | None:
    """What one line of each shape (at ``rows`` of ``body``; ``shapes``: their hashes) says, read
    behind the block's first WRAPPER_SAMPLE lines as the block is read; only the shapes whose lines
    may go (see the module's docstring). None when no shape may."""
    import numpy as np

    lead = np.arange(min(WRAPPER_SAMPLE, int(rows.min())), dtype=np.int64)
    framed_rows = np.concatenate([lead, rows]).astype(np.uint32)
    text = lines_at(body, starts, framed_rows)
    lines = lines_frame(text + b"\n", 1)
    if lines.height != len(framed_rows):
        return None
    lines = lines.with_columns((pl.Series(framed_rows, dtype=pl.Int64) + (first_line + 1)).alias("line"))
    read = described(lines, reference_year)
    asked = pl.DataFrame({"line": pl.Series(rows, dtype=pl.Int64) + (first_line + 1),
                          "_shape": pl.Series(shapes, dtype=pl.UInt64),
                          "_text": lines["raw"].slice(len(lead))})
    read = asked.join(read, on="line", how="inner")
    mine, others = prefix_keyed_patterns()
    triggers = sorted({t for p in mine for t in p.triggers})
    read = read.with_row_index("_at").filter(holds(triggers))
    read = certain(read, mine, others)
    if read.height == 0:
        return None
    telling = _telling(set(read["kw"].explode().drop_nulls().to_list()))
    # Each shape's line is read by patterns that tell no digits apart (a trigger with a digit is
    # held by some lines of a shape only), and the prefixes span the start of its text.
    prefix = pl.col("prefix").fill_null("")
    outer, inner = times_of(pl.col("prefix"))
    body_timed = pl.col("body").fill_null("").str.contains(BODY_TIME_START)
    read = read.with_columns(body_timed.alias("_body_timed")).filter(
        (pl.col("raw") == pl.col("_text"))  # no envelope opened
        & (outer.is_null() | (~pl.col("_body_timed") & (outer == inner)))  # one clock
        & pl.col("kw").list.eval(pl.element().is_in(telling).not_()).list.all()
        & ~pl.col("_text").str.replace_all(r"[0-9]", "0").str.contains_any(_masked_digit_triggers())
    )
    if read.height == 0:
        return None
    read = read.sort("_shape")
    relaxed = _relaxed_leading_time()
    check = (pl.col("body").fill_null("").str.contains(relaxed) if relaxed is not None
             else pl.lit(True)).alias("_check")
    return _Shapes(read["_shape"].to_numpy(), prefix_chars=read.select(prefix.str.len_chars()).to_series().to_numpy(),
                   who_chars=read.select(pl.col("who").fill_null("").str.len_chars()).to_series().to_numpy(),
                   body_timed=read["_body_timed"].to_numpy(), body_check=read.select(check).to_series().to_numpy(),
                   timed=read["lead_time"].is_not_null().to_numpy())


def _checked(body: memoryview, rows: np.ndarray, place: np.ndarray, told: _Shapes,
             starts: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """For the lines at ``rows`` (of the shapes at ``place`` in ``told``; ``starts``: where each
    line of the block starts): the key each is kept by (a hash of who wrote it), and whether its
    prefixes and time read as its shape's line's do. They are read as the block reads them: behind
    its first WRAPPER_SAMPLE lines, from which wrappers and envelopes are learned (and which are
    kept: the lines left are read behind them too). Where what they teach can be followed line by
    line (:func:`_learned`), one line of each group that :func:`_by_digits` finds is read for all
    of its group."""
    import numpy as np

    lead = np.arange(min(WRAPPER_SAMPLE, int(rows.min())), dtype=np.int64)
    text = lines_at(body, starts, lead)
    lead_lines = lines_frame(text + b"\n", 1)
    learned = _learned(lead_lines) if lead_lines.height == len(lead) else None
    if learned is not None:
        grouped = _by_digits(body, rows, place, told, starts, learned)
        if grouped is not None:
            group, reps, readings = grouped
            found = _read_behind(body, starts, rows[reps], place[reps], told, lead, readings)
            if found is not None:
                return found[0][group], found[1][group]
    return _read_behind(body, starts, rows, place, told, lead)


def _learned(lead: pl.DataFrame) -> Learned | None:
    """What a block's first lines (``lead``) teach the reading of its lines (the heads taken off
    every line: :class:`~logscope.parsers.prefixes.Learned`), where it can be followed line by
    line: no envelope opened, and no head that tells digits apart. None otherwise."""
    if not opened(lead)["raw"].equals(lead["raw"]):
        return None
    learned = split_prefix_learning(lead)[1]
    heads = [learned.numbered, *(head for round_ in learned.rounds for head in round_)]
    return learned if all(head is None or digit_blind(head) for head in heads) else None


def _read_behind(body: memoryview, starts: np.ndarray, rows: np.ndarray, place: np.ndarray, told: _Shapes,
                 lead: np.ndarray, readings: list[_Reading] | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The lines at ``rows`` (of the shapes at ``place`` in ``told``) read behind the block's first
    lines: the key each is kept by, and whether its prefixes and time read as its shape's line's
    do; given their ``readings`` (one a line, by Python's regexes), not where polars reads one
    otherwise than its reading says."""
    import numpy as np

    text = lines_at(body, starts, np.concatenate([lead, rows]))
    lines = lines_frame(text + b"\n", 1)
    if lines.height != len(lead) + len(rows):
        return None
    split = split_prefix_of_files(opened(lines)).slice(len(lead))
    prefix = pl.col("prefix").fill_null("")
    read = split.select(
        prefix.str.len_chars().alias("span"), timeless(prefix).alias("who"),
        # a line with no prefix is keyed by a null, as the polars path keys it
        timeless(pl.col("prefix")).hash(seed=0x6c6f6773).alias("key"))
    span, who = read["span"].to_numpy(), read["who"]
    same = (span == told.prefix_chars[place]) & (who.str.len_chars().to_numpy() == told.who_chars[place])
    check = told.body_check[place]
    timed = np.zeros(len(place), dtype=bool)
    if check.any():
        body_timed = pl.col("body").fill_null("").str.contains(BODY_TIME_START)
        timed[check] = split.filter(pl.Series(check)).select(body_timed).to_series().to_numpy()
        same[check] &= timed[check] == told.body_timed[place][check]
    for n, reading in enumerate(readings or ()):
        if (reading.span, reading.who) != (span[n], who[n]) or (check[n] and reading.body_timed != timed[n]):
            same[n] = False
    return read["key"].to_numpy().astype(np.uint64), same


@dataclass(frozen=True)
class _Reading:
    """How the prefix regexes read one line (Python's ``re``), and where its digits decide it: a
    line of its shape with the same bytes at ``places`` is read alike, and its writer's digits
    (those of its prefixes outside their times) are at ``who``."""

    places: tuple[int, ...]  # bytes of the line (offsets) whose digits the regexes may tell apart
    digits: bytes  # the line's bytes there
    who: str  # its prefixes without their times (timeless)
    who_places: tuple[int, ...]  # the offsets of the digits there
    who_digits: bytes  # the line's bytes there (a line read alike by another writer has others)
    span: int  # its prefixes' length, in characters
    body_timed: bool  # whether its body starts with a time


# Readings known, by shape (a few a shape: one per writer, mostly), for every block of a run.
_READINGS: dict[tuple[int, bool, Learned], list[_Reading]] = {}
_READINGS_MAX = 4096
# Rounds of grouping a block's lines before their groups are taken as they are (two, mostly).
_GROUPING_ROUNDS = 4


def _by_digits(body: memoryview, rows: np.ndarray, place: np.ndarray, told: _Shapes, starts: np.ndarray,
               learned: Learned) -> tuple[np.ndarray, np.ndarray, list[_Reading]] | None:
    """The lines at ``rows`` in groups read alike: of one shape, and with the same bytes where a
    line of the group's digits may tell the prefix regexes apart (:func:`digit_reads`) and where
    its writer's digits are. Each line's group, the first line of each group (rows of ``rows``)
    and its reading. A shape's places are those of all its groups' lines read: grouped again
    until they hold every place each group's line is told at. None when they do not settle, or
    a line cannot be read so."""
    import numpy as np

    text = np.frombuffer(body, dtype=np.uint8)
    at = starts[rows].astype(np.int64)
    places: dict[int, set[int]] = {}
    for _ in range(_GROUPING_ROUNDS):
        group, reps = _groups(text, at, place, places)
        readings = []
        wider = {shape: set(held) for shape, held in places.items()}
        for rep in reps:
            reading = _reading_of(body, int(at[rep]), int(told.shape[place[rep]]), bool(told.body_check[place[rep]]),
                                  learned)
            if reading is None:
                return None
            readings.append(reading)
            wider.setdefault(int(place[rep]), set()).update(reading.places, reading.who_places)
        if wider == places:
            return group, reps, readings
        places = wider
    return None


def _groups(text: np.ndarray, at: np.ndarray, place: np.ndarray,
            places: dict[int, set[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The lines starting at ``at`` of ``text`` grouped by their shape (``place``) and their bytes
    at their shape's ``places``: each line's group, and the first line of each group."""
    import numpy as np

    width = max((len(held) for held in places.values()), default=0)
    offsets = np.full((int(place.max()) + 1, width), -1, dtype=np.int64)
    for shape, held in places.items():
        offsets[shape, :len(held)] = sorted(held)
    offset = offsets[place]
    bytes_at = np.where(offset >= 0, text[np.where(offset >= 0, at[:, None] + offset, 0)], 0).astype(np.uint64)
    mixed = place.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    for column in bytes_at.T:
        mixed = (mixed ^ column) * np.uint64(0xFF51AFD7ED558CCD)
        mixed ^= mixed >> np.uint64(29)
    _, reps, group = np.unique(mixed, return_index=True, return_inverse=True)
    # (exact, not up to a collision: every line has its group's first line's shape and bytes)
    if not ((place[reps][group] == place).all() and (bytes_at[reps][group] == bytes_at).all()):
        return np.arange(len(at)), np.arange(len(at))
    order = np.argsort(reps)  # the groups numbered in the order of their first lines
    number = np.empty_like(order)
    number[order] = np.arange(len(order))
    return number[group], reps[order]


def _reading_of(body: memoryview, start: int, shape: int, check: bool, learned: Learned) -> _Reading | None:
    """The reading of the line at ``start`` of ``body`` (of ``shape``; ``check``: its body's
    leading time is asked too; ``learned``: what its block's first lines teach): one known for its
    shape where the line has its bytes at its places, else read now (and known). None where the
    regexes cannot be followed."""
    line = bytes(body[start:start + MATCH_CHARS + 1]).partition(b"\n")[0]
    for known in _READINGS.get((shape, check, learned), []):
        if all(place < len(line) for place in (*known.places, *known.who_places)) and \
                bytes(line[place] for place in known.places) == known.digits and \
                bytes(line[place] for place in known.who_places) == known.who_digits:
            return known
    reading = _read(line, check, learned)
    if reading is not None:
        if len(_READINGS) >= _READINGS_MAX:
            _READINGS.clear()
        _READINGS.setdefault((shape, check, learned), []).append(reading)
    return reading


def _read(line: bytes, check: bool, learned: Learned) -> _Reading | None:
    """:class:`_Reading` of ``line`` as split_prefix_of_files reads it, with what its block's
    first lines taught it (``learned``): its prefixes (PREFIX_STACK, from its start, and again
    behind each head taken off), the times among them (TIME_LEAD, each match taken out), and its
    body's leading time (BODY_TIME_START, where ``check``), read with Python's ``re`` as polars reads
    them; and the digits each may tell apart: the prefix stack's whatever the line's digits (it is
    tried where blind heads end, whatever they are), the others' where they were tried on this
    line (where a search stopped depends on them)."""
    text = line.decode("utf-8", "replace")
    if text.encode("utf-8") != line:  # (a byte that is no UTF-8: its places would not be its own)
        return None
    masked = _DIGIT.sub("0", text)
    parts: list[frozenset[int] | None] = []
    where: list[int] = []  # the place in the line of each character of the prefixes

    def stack(at: int) -> int:
        parts.append(_stack_reads(masked, at))
        matched = re.match(PREFIX_STACK, text[at:])
        end = at + (matched.end() if matched else 0)
        where.extend(range(at, end))
        return end

    body_at = stack(_behind(learned.numbered, text, 0))
    for head, numbered in learned.rounds:
        body_at = stack(_behind(numbered, text, _behind(head, text, body_at)))
    prefix = "".join(text[at] for at in where)
    times = list(re.finditer(TIME_LEAD, prefix))
    in_lead = digit_reads(TIME_LEAD, prefix, _searched(times, 0, len(prefix)), 0, len(prefix))
    parts.append(None if in_lead is None else frozenset(where[at] for at in in_lead))
    body_timed = False
    if check:
        first = re.search(BODY_TIME_START, text[body_at:])
        body_timed = first is not None
        tried = _searched([first] if first else [], 0, len(text) - body_at, every=False)
        parts.append(digit_reads(BODY_TIME_START, text, [body_at + at for at in tried], body_at))
    if any(part is None for part in parts):
        return None
    told: set[int] = set().union(*parts)  # type: ignore[arg-type]
    in_times = {at for time in times for at in range(*time.span())}
    who = [at for at in range(len(prefix)) if at not in in_times]
    offset = [0]
    for char in text:
        offset.append(offset[-1] + len(char.encode("utf-8")))
    places = tuple(offset[at] for at in sorted(told))
    who_places = tuple(offset[where[at]] for at in who if "0" <= prefix[at] <= "9")
    return _Reading(places=places, digits=bytes(line[at] for at in places), who="".join(prefix[at] for at in who),
                    who_places=who_places, who_digits=bytes(line[at] for at in who_places), span=len(prefix),
                    body_timed=body_timed)


def _behind(head: str | None, text: str, at: int) -> int:
    """Where ``text`` goes on behind ``head`` (a regex) at ``at``: at itself where it is not there."""
    if head is None:
        return at
    matched = re.match(f"(?:{head})", text[at:])
    return at + (matched.end() if matched else 0)


_DIGIT = re.compile("[0-9]")


@lru_cache(maxsize=1024)
def _stack_reads(masked: str, start: int) -> frozenset[int] | None:
    """Where PREFIX_STACK, tried at ``start`` of a line, may tell its digits apart, whatever they
    are: read with each digit any digit (``masked``: the line, its digits read as ``0``), so the
    same for every line of its shape."""
    return digit_reads(PREFIX_STACK, masked, [start], start, any_digit=True)


def _searched(matches: list[re.Match[str]], begin: int, end: int, every: bool = True) -> list[int]:
    """Where a search tried a regex (found at ``matches``, all it finds when ``every``, else the
    first) over ``begin``..``end``: each place from where it looks on up to the next match's start,
    and on from its end."""
    tried: list[int] = []
    at = begin
    for match in matches:
        tried.extend(range(at, match.start() + 1))
        if not every:
            return tried
        at = match.end() if match.end() > match.start() else match.end() + 1
    tried.extend(range(at, end + 1))
    return tried


@cache
def _needles() -> tuple[tuple[bytes, ...], int]:
    """The byte strings ``wordings`` looks for (the progress patterns' triggers, but those that hold
    another, then a frame line's and a reprinted traceback's literals), and the bits of the first."""
    mine, _ = prefix_keyed_patterns()
    triggers = sorted({t for p in mine for t in p.triggers})
    shortest = [t.encode() for t in triggers if not any(o != t and o in t for o in triggers)]
    return (*shortest, _FRAME_NEEDLE, *_REPRINT_NEEDLES), (1 << len(shortest)) - 1


def _telling(held: set[str]) -> list[str]:
    """Of ``held`` (the triggers the described lines hold), those of a pattern a progress line may
    be tried by (a certain one's, and those before the last of them) whose regex tells digits
    apart: a shape whose line holds one is kept. Only the patterns of triggers held are read."""
    mine, others = prefix_keyed_patterns()
    return sorted({t for p in (*mine, *others) if held.intersection(p.triggers) and not _digit_blind_pattern(p)
                   for t in p.triggers}) or ["\x00"]


@cache
def _digit_blind_pattern(pattern: Message) -> bool:
    return digit_blind(regex(pattern))


@cache
def _masked_digit_triggers() -> list[str]:
    """Every trigger of the table that holds a digit, its digits read as ``0``: a line whose own
    text so read holds one may hold the trigger itself, and another of its shape not."""
    found = {re.sub(r"[0-9]", "0", t) for p in RECOGNISERS for t in p.triggers if re.search(r"[0-9]", t)}
    return sorted(found) or ["\x00"]


@cache
def _relaxed_leading_time() -> str | None:
    relaxed = digit_relaxed(BODY_TIME_START)
    return relaxed if relaxed is not None and digit_blind(relaxed) else None


__all__ = ["MIN_SHAPE_LINES", "SAMPLE_SHARE", "reduce_progress"]
