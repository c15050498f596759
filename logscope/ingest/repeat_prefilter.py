"""A big block's restart-loop repeats set aside on its bytes, before polars frames its lines.

:mod:`logscope.parsers.repeats` says the rule: in a chunk of lines, a group of lines (a line and
the lines that go on it) whose wording came at least ``head`` times before and comes ``tail``
times after is set aside, but for the first and last timed group of each run set aside (where
the lines kept next to the run take their times from them) and the
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

Each block keeps the first and last groups of each key *in the block*; a file's consecutive blocks
with repeats set aside are then held together (a few per cent of their bytes) and
:func:`drop_across` sets aside what the others make repeats too, so that a file of many blocks
keeps what one block of them all would keep, not that much per block (a 64 MB file of a loop kept
twice as many lines as a 32 MB one). A block this module looked at is not looked at again by the
polars rule (whatever it found): the lines it kept include each run's timed ends, which a second
pass would count as repeats. But for a block of progress lines (left to
:mod:`~logscope.ingest.progress_prefilter`, too few of its lines could go here): once those are set
aside, the lines it keeps are compared by the polars rule (a loop's attempts that print steps, then
fail alike, keep their first and last failures). A line longer than :data:`~logscope.limits.MATCH_CHARS` bytes is never
set aside here (the caller counts the lines it cuts for matching among those it frames).
``tests/test_repeat_prefilter.py`` holds this to the polars rule.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING

import polars as pl

from logscope.ingest import compiled
from logscope.ingest.blocks import Controls, for_csv_reader
from logscope.ingest.digit_regex import digit_blind
from logscope.limits import MATCH_CHARS, WRAP_MAX_LINES
from logscope.parsers.coll_groups import COLL_INFO, COLL_TRIGGER
from logscope.parsers.repeats import SAMPLE_LINES, SAMPLE_SHARE, far_recurs, progress_patterns

if TYPE_CHECKING:
    import numpy as np

# uint32s in a record of ``_collscan.aside``'s groups (its GROUP_RECORD): see drop_across.
GROUP_RECORD = 8
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
    first_line: int = 0  # the block's lines are numbered from first_line + 1
    # The groups kept (``_collscan.aside``'s records, with_groups), for drop_across; None after it.
    groups: bytes | None = None
    # The first and last groups of each key kept (progress_prefilter's keep more than a loop's):
    # drop_across keeps as many of the blocks together.
    keep: tuple[int, int] = (0, 0)
    # Whether the lines kept were compared for a loop's repeats here (a progress block's are, after
    # its progress lines are set aside: progress_prefilter), so that the polars rule does not again;
    # and the lines kept that a loop's lines set aside then are counted against (as ``counted``, but
    # of no group of ``groups``: drop_across leaves them as they are).
    loops_looked: bool = True
    loop_counted: pl.DataFrame | None = None


def looks_for_repeats(controls: Controls) -> bool:
    """Whether :func:`reduce_repeats` can read a block with these controls: the compiled scanner
    is there, and no line is split at a carriage return (a line is then several rows, and the
    polars rule leaves such chunks alone too)."""
    return compiled.COMPILED and not controls.carriage_return


def reduce_repeats(block: bytes | memoryview, first_line: int, controls: Controls,
                   head: int, tail: int, gated: bool = True) -> RepeatsFound | None:
    """``block`` (lines numbered from ``first_line + 1``, read as
    :func:`~logscope.ingest.line_frames.lines_frame` reads it) without the groups of lines a
    restart loop repeats (see the module docstring); None when it has too few lines to be looked
    at (the polars rule may then look). ``gated=False``: compared whole whatever its sample (an
    earlier block of its file was a loop's), unless its sample is mostly progress or COLL lines.
    Only when :func:`looks_for_repeats`."""
    text = for_csv_reader(block, controls.unit_separator, first=first_line == 0)
    found = loop_aside(memoryview(text)[:-1] if text[-1:] == b"\n" else memoryview(text), head, tail, gated)
    if found is None:
        return None
    if not found.rows:
        return RepeatsFound(None)
    kept, kept_count = compiled.scanner.lines_of(found.body, found.rows, True, first_line)
    return RepeatsFound(kept, kept_count, found.lines, counted_frame(found.counted, found.tallies, first_line),
                        first_line, found.groups, keep=(head, tail))


@dataclass
class LoopAside:
    """What the rule sets aside of the lines of ``body`` (``_collscan.aside``'s, native uint32
    each): ``rows``, ascending (empty: the lines were compared, none goes), the rows they are
    counted against and how many (``counted``, ``tallies``), the groups kept (``groups``, see
    drop_across); ``lines``: the body's lines, when some go."""

    body: memoryview
    rows: bytes = b""
    counted: bytes = b""
    tallies: bytes = b""
    groups: bytes = b""
    lines: int = 0


def loop_aside(body: memoryview, head: int, tail: int, gated: bool = True) -> LoopAside | None:
    """The rule on the lines of ``body`` (no newline at its end, as :func:`reduce_repeats` reads
    a block's): what goes, or None when they are too few to be looked at. ``gated``: only when
    its sample shows a loop (else: only when its sample is not mostly own-rule lines)."""
    needles = _needles()
    # What the sample's lines hold first (a quarter of the cost of their wordings): a block of
    # progress (or COLL) lines stops there, too few of its lines could go.
    _, flags, held, end = compiled.scanner.wordings(body, needles, MATCH_CHARS, SAMPLE_LINES, False)
    sample = len(flags)
    if end == len(body) and sample <= MIN_LINES:
        return None
    whole = LoopAside(body)
    own = _own_rows(body, held, 0)
    if sample - len(own) < SAMPLE_SHARE * sample:
        return whole
    hashes, flags, _, _ = compiled.scanner.wordings(body, (), MATCH_CHARS, SAMPLE_LINES)
    rows, counted, tallies, groups = b"", b"", b"", b""
    if gated:
        counts: dict[int, int] = {}
        for value in array("Q", hashes):
            counts[value] = counts.get(value, 0) + 1
        if sum(max(0, count - head - tail) for count in counts.values()) >= SAMPLE_SHARE * sample:
            rows, counted, tallies, groups = compiled.scanner.aside(hashes, flags, own.tobytes(), head, tail, True)
        # (else no wording comes often enough)
        if len(rows) // 4 < SAMPLE_SHARE * sample and not _far_sample_recurs(body, end, hashes, own):
            return whole  # no loop
    if end < len(body) or not gated:  # the whole block
        if end < len(body):
            more_hashes, more_flags, more_held, _ = compiled.scanner.wordings(body[end:], needles, MATCH_CHARS)
            hashes, flags = hashes + more_hashes, flags + more_flags
            own.extend(_own_rows(body[end:], more_held, sample))
        rows, counted, tallies, groups = compiled.scanner.aside(hashes, flags, own.tobytes(), head, tail, True)
        if not rows:
            return whole
    return LoopAside(body, rows, counted, tallies, groups, len(flags))


def _far_sample_recurs(body: memoryview, end: int, hashes: bytes, own: array[int]) -> bool:
    """The polars rule's second look (repeats.far_recurs) on the block's bytes: its last
    SAMPLE_LINES lines, when none of them is of its sample (which ended at ``end``, its lines
    worded as ``hashes``, its own-rule rows ``own``), against the sample."""
    start = _far_start(body, end)
    if start is None:
        return False
    far = body[start:]
    far_hashes, _, far_held, _ = compiled.scanner.wordings(far, _needles(), MATCH_CHARS, SAMPLE_LINES, True)
    return far_recurs(array("Q", hashes), own, array("Q", far_hashes), _own_rows(far, far_held, 0))


def _far_start(body: memoryview, end: int) -> int | None:
    """Where the last SAMPLE_LINES lines of ``body`` begin; None when they would begin before
    ``end`` (the block has fewer than twice as many lines). Looked for in a copy of its end, from
    twice the sample's bytes, not of the whole block (~3 ms)."""
    size = min(len(body), 2 * end + 1)
    while True:
        piece = bytes(body[len(body) - size:])
        at = len(piece)
        for _ in range(SAMPLE_LINES):
            at = piece.rfind(b"\n", 0, at)
            if at < 0:
                break
        if at >= 0:
            start = len(body) - size + at + 1
            return start if start >= end else None
        if size == len(body):
            return None
        size = min(len(body), 2 * size)


def counted_frame(rows: bytes, counts: bytes, first_line: int) -> pl.DataFrame:
    """``aside``'s counted rows and counts as a frame of line numbers in the file and counts."""
    return pl.DataFrame({"line": pl.Series(array("I", rows), dtype=pl.Int64) + (first_line + 1),
                         "count": pl.Series(array("I", counts), dtype=pl.Int64)})


def drop_across(blocks: list[RepeatsFound], head: int, tail: int) -> list[RepeatsFound]:
    """:func:`decide_across` of all ``blocks`` at once, with no blocks before them."""
    return decide_across(blocks, head, tail)[0]


def decide_across(blocks: list[RepeatsFound], head: int, tail: int, *, before: pl.DataFrame | None = None,
                  emit: int | None = None) -> tuple[list[RepeatsFound], pl.DataFrame | None]:
    """Consecutive blocks of a file, each without its repeats (:func:`reduce_repeats`), without
    the groups the other blocks make repeats too: each block kept the first ``head`` and last
    ``tail`` groups of each key *in the block*, but only the first and last of the blocks together
    are kept, as one block of them all would keep them. Kept all the same, as in a block: of each
    run of groups set aside back to back (across blocks too), the first and the last with a time
    where the groups kept next to it need them (:func:`_keep_ends_of_runs`).
    Every line set aside in any of the blocks is then counted against the line at its place in the
    first group of its key kept in them all, in the block that holds that line.

    A file's blocks are taken a few at a time (reading holds them in bounded memory): ``before``,
    each key's groups in the file's blocks before these, already framed (``key``, ``count``),
    count among those before a group; only the first ``emit`` blocks (all by default) are returned
    decided, the others were looked at only as the groups after theirs, and are returned as they
    came, but with the lines of the first counted against their groups (a key none of whose groups
    is kept in the first: its first group in the others). Returned with the blocks: each key's
    groups in ``before`` and the blocks decided, the next call's ``before`` (None when the blocks
    could not be decided: their groups are not known).

    As coll_prefilter.drop_surplus_across argues for COLL lines, blocks left out (not reduced)
    can only move a group further from both ends: what goes here would go counting them too."""
    import numpy as np

    emit = len(blocks) if emit is None else emit
    if any(block.groups is None for block in blocks):
        return blocks, None
    groups = _Groups.of(blocks)  # in file order
    keyed = groups.keyed
    # Each key's groups in each block: every record of a key in a block carries that count, and
    # a key's groups before a record are those of its blocks before the record's (an array of
    # keys by blocks: a few blocks, a few thousand keys; no window over the records).
    keys, key_of = groups.keys()
    in_block = np.zeros((len(keys), len(blocks)), dtype=np.int64)
    in_block[key_of, groups.block[keyed]] = groups.count[keyed]
    framed_keys = in_block[:, :emit].any(axis=1)
    framed = pl.DataFrame({"key": pl.Series(keys[framed_keys], dtype=pl.UInt64),
                           "count": in_block[framed_keys, :emit].sum(axis=1)})
    counts = framed if before is None else pl.concat([before, framed]).group_by("key").agg(pl.col("count").sum())
    if len(blocks) < 2 and before is None:
        return [replace(block, groups=None) for block in blocks], counts
    carried = np.zeros(len(keys), dtype=np.int64)
    if before is not None and before.height:
        known = before.sort("key")
        known_keys, known_counts = known["key"].to_numpy(), known["count"].to_numpy()
        at = np.minimum(np.searchsorted(known_keys, keys), len(known_keys) - 1)
        carried = np.where(known_keys[at] == keys, known_counts[at], 0)
    before_block = carried[:, None] + np.cumsum(in_block, axis=1) - in_block  # before each block
    total = carried + in_block.sum(axis=1)
    place = before_block[key_of, groups.block[keyed]] + groups.place[keyed]
    aside = np.zeros(len(keyed), dtype=bool)
    aside[keyed] = (place >= head) & (place < total[key_of] - tail)
    _keep_ends_of_runs(aside, groups)
    emitted = groups.block < emit
    dropped = aside & emitted
    # What the lines set aside are counted against: each key's first group kept in the blocks
    # returned decided, else its first in the others (never set aside: they come again).
    keyed_at = np.flatnonzero(keyed)
    candidate = (emitted[keyed] & ~dropped[keyed]) | (~emitted[keyed] & (groups.place[keyed] == 0))
    no_line = np.iinfo(np.int64).max
    first = np.full(len(keys), no_line, dtype=np.int64)
    np.minimum.at(first, key_of[candidate], groups.line[keyed_at[candidate]])
    if not dropped.any():
        return [replace(block, groups=None) if n < emit else block for n, block in enumerate(blocks)], counts
    first_of = np.full(len(keyed), no_line, dtype=np.int64)
    first_of[keyed_at] = first[key_of]
    # Each line set aside, here or in its block, and the line it is counted against.
    gone = np.flatnonzero(dropped)
    sizes = groups.lines[gone].astype(np.int64)
    which = np.repeat(np.arange(len(gone)), sizes)
    offset = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    gone_block = groups.block[gone][which]
    gone_row = groups.kept_at[gone].astype(np.int64)[which] + offset
    gone_first = first_of[gone][which]
    gone_line = _lines(gone_first + offset, gone_first == no_line)
    # A block's counted lines are of the first group of their key in the block (its place 0).
    starts = np.flatnonzero(keyed & (groups.place == 0) & emitted)
    block_firsts = pl.DataFrame({"line": groups.line[starts],
                                 "_first": _lines(first_of[starts], first_of[starts] == no_line)})
    earlier = [block.counted for block in blocks[:emit] if block.counted is not None]
    moved = [_moved(pl.concat(earlier).sort("line"), block_firsts)] if earlier else []
    here = pl.DataFrame({"line": gone_line, "count": pl.Series(np.ones(len(offset), dtype=np.int64))})
    counted = pl.concat([*moved, here]).group_by("line").agg(pl.col("count").sum())
    out = []
    for n, block in enumerate(blocks):
        assert block.kept is not None
        mine = counted.filter(pl.col("line").is_between(block.first_line + 1, block.first_line + block.lines_read))
        if n >= emit:  # looked at only: counted against, decided later
            if mine.height:
                own = [block.counted] if block.counted is not None else []
                mine = pl.concat([*own, mine]).group_by("line").agg(pl.col("count").sum())
                out.append(replace(block, counted=mine.sort("line")))
            else:
                out.append(block)
            continue
        rows = np.sort(gone_row[gone_block == n]).astype(np.uint32)
        # (the kept lines each end in '\n': the last is the one before it)
        kept, kept_count = ((block.kept, block.kept_count) if len(rows) == 0 else
                            compiled.scanner.lines_of(memoryview(block.kept)[:-1], rows.tobytes(), True, -1))
        out.append(replace(block, kept=kept, kept_count=kept_count, counted=mine.sort("line") if mine.height else None,
                           groups=None))
    return out, counts


def _keep_ends_of_runs(aside: np.ndarray, groups: _Groups) -> None:
    """Of each run of groups set aside back to back (``aside``, by group, in file order: changed in
    place), the first and the last with a time stay, as in a block (``_collscan.aside``): the first
    where the group kept before the run does not end in a line holding a time, the last where the
    one kept after it does not start with one (or no group is kept there), and each where the other
    stays and its lines after (before) its time hold none."""
    import numpy as np

    ends = np.flatnonzero(aside & groups.timed)
    if not len(ends):
        return
    run = np.cumsum(~aside)[ends]
    first = ends[np.concatenate(([True], run[1:] != run[:-1]))]
    last = ends[np.concatenate((run[:-1] != run[1:], [True]))]
    kept = np.flatnonzero(~aside)
    before = np.searchsorted(kept, first) - 1  # the group kept before each run, -1: none
    after = np.searchsorted(kept, last)  # and after it, len(kept): none
    if len(kept):
        before_timed = (before >= 0) & groups.ends_timed[kept[np.maximum(before, 0)]]
        after_timed = (after < len(kept)) & groups.starts_timed[kept[np.minimum(after, len(kept) - 1)]]
    else:
        before_timed = after_timed = np.zeros(len(first), dtype=bool)
    both = first != last
    keep_last = ~after_timed | (~before_timed & both & ~groups.ends_timed[first])
    keep_first = ~before_timed | (keep_last & both & ~groups.starts_timed[last])
    aside[first[keep_first]] = False
    aside[last[keep_last]] = False


@dataclass(frozen=True)
class _Groups:
    """The kept groups' records of a file's blocks (``aside``'s, see GROUP_RECORD), in file order,
    a numpy array a field."""

    block: np.ndarray  # which of the blocks holds it
    line: np.ndarray  # its first line's number in the file (int64)
    lines: np.ndarray  # how many lines it holds
    kept_at: np.ndarray  # its first line's place among the lines its block keeps
    place: np.ndarray  # its place among the groups of its key in its block
    count: np.ndarray  # the groups of its key in its block
    timed: np.ndarray  # whether a line of it holds a time (bool)
    keyed: np.ndarray  # whether it has a key, one of a loop's wordings (bool)
    starts_timed: np.ndarray  # whether its first line holds a time (bool)
    ends_timed: np.ndarray  # whether its last line does (bool)
    key: np.ndarray  # that key (uint64)
    number: np.ndarray  # that key's number in its block (aside numbers a block's keys as they come)

    @classmethod
    def of(cls, blocks: list[RepeatsFound]) -> _Groups:
        import numpy as np

        parts = [np.frombuffer(block.groups or b"", dtype=np.uint32).reshape(-1, GROUP_RECORD) for block in blocks]
        record = np.concatenate(parts)
        block = np.repeat(np.arange(len(blocks), dtype=np.int64), [len(part) for part in parts])
        first_line = np.array([found.first_line + 1 for found in blocks], dtype=np.int64)
        return cls(block=block, line=record[:, 0].astype(np.int64) + first_line[block], lines=record[:, 1],
                   kept_at=record[:, 2], place=record[:, 3].astype(np.int64), count=record[:, 4].astype(np.int64),
                   timed=(record[:, 5] & 1) > 0, keyed=(record[:, 5] & 2) == 0,
                   starts_timed=(record[:, 5] & 4) > 0, ends_timed=(record[:, 5] & 8) > 0,
                   key=np.ascontiguousarray(record[:, 6:8]).view(np.uint64).ravel(),
                   number=(record[:, 5] >> 4).astype(np.int64))

    def keys(self) -> tuple[np.ndarray, np.ndarray]:
        """The keys of the keyed groups, ascending, and the place there of each keyed group's. A
        block's keys are numbered (a loop's few wordings): each is put in order once, not once a
        group."""
        import numpy as np

        keyed = self.keyed
        block, number = self.block[keyed], self.number[keyed]
        if not len(block):
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
        # (block, number) as one index, then the indices held as 0, 1, 2, ...
        at = block * (int(number.max()) + 1) + number
        held = np.zeros(int(at.max()) + 1, dtype=bool)
        held[at] = True
        compact = np.cumsum(held) - 1
        of_block = np.zeros(int(compact[-1]) + 1, dtype=np.uint64)
        of_block[compact[at]] = self.key[keyed]
        keys, place = np.unique(of_block, return_inverse=True)
        return keys, place[compact[at]]


def _lines(numbers: np.ndarray, none: np.ndarray) -> pl.Series:
    """Line numbers as a column, null where ``none`` (a key with no group kept to count against)."""
    return pl.Series(numbers).set(pl.Series(none), None)


def _moved(counted: pl.DataFrame, block_firsts: pl.DataFrame) -> pl.DataFrame:
    """Counted lines (``line``, ``count``) of groups that were first of their key in their block
    (``block_firsts``: ``line``, the group's first line, and ``_first``, the first line of the
    first group of its key in all the blocks), counted against the line at their place there."""
    joined = counted.join_asof(block_firsts.rename({"line": "_start"}), left_on="line", right_on="_start",
                               strategy="backward")
    return joined.select((pl.col("_first") + (pl.col("line") - pl.col("_start"))).alias("line"), "count")


def _own_rows(body: memoryview, held: bytes, offset: int) -> array[int]:
    """The rows (ascending, plus ``offset``) of the lines another rule keeps the ends of (see
    repeats._own_rule_rows): NCCL COLL-shaped lines (both of its literals held) and progress lines
    (a trigger held, and a progress pattern's regex matching, asked of polars)."""
    progress_bits, coll_bits = _needle_bits()
    coll, maybe = _rows_holding(held, coll_bits, all_of=True), _rows_holding(held, progress_bits, all_of=False)
    rows = coll
    if maybe:
        text, _ = compiled.scanner.lines_of(body, maybe.tobytes(), False, 0)
        matched = _progress_lines(text, len(maybe))
        progress = maybe if matched is None else array("I", pl.Series(maybe).filter(pl.Series(matched)))
        rows = array("I", sorted(coll + progress)) if coll else progress
    return array("I", (row + offset for row in rows)) if offset else rows


def _progress_lines(text: bytes, count: int) -> np.ndarray | None:
    """Of the ``count`` lines of ``text``, which a progress pattern's regex matches (a bool each);
    None when they are not ``count``. The regexes tell no digit from another: the lines of one
    shape (alike but for their digits, ``_collscan.shapes``) are asked once, on their first."""
    import numpy as np

    _, regexes = progress_patterns()
    if _blind_progress():
        hashes, _, starts = compiled.scanner.shapes(text)
        if len(hashes) // 8 == count:
            # Only the first line of each shape is decoded and asked (a progress block's sample
            # is 16,384 lines of a few shapes: ~4 MB decoded and split for a dozen lines).
            asked, at, shapes = first_of_each_shape(text, np.frombuffer(hashes, dtype=np.uint64),
                                                    np.frombuffer(starts, dtype=np.uint64))
            found = pl.Series([asked.decode("utf-8", "replace")]).str.split("\n").explode()
            if len(found) == shapes:
                matched: np.ndarray = found.str.contains(regexes).to_numpy()[at]
                return matched
    lines = pl.Series([text.decode("utf-8", "replace")]).str.split("\n").explode()
    if len(lines) != count:
        return None
    return lines.str.contains(regexes).to_numpy()


def lines_at(body: bytes | memoryview, starts: np.ndarray, rows: np.ndarray) -> bytes:
    """The lines at ``rows`` (ascending) of ``body``, joined by '\\n', copied from where they start
    (``starts``: ``_collscan.shapes``' of each line), not found by reading the block up to them: a
    few lines of a 32 MB block cost ~5 ms that way, and a progress block asks for some six times."""
    import numpy as np

    text, _ = compiled.scanner.lines_of(body, rows.astype(np.uint32).tobytes(), False, 0, starts.data)
    return text


def first_of_each_shape(body: bytes | memoryview, shapes: np.ndarray,
                        starts: np.ndarray) -> tuple[bytes, np.ndarray, int]:
    """The first line of each shape of ``body``'s lines (``shapes`` and ``starts``: the hash and the
    start of each line, as ``_collscan.shapes`` gives them), joined by '\\n' in the block's order;
    for each line, the place of its shape's line among them; and how many shapes there are. Lines
    alike but for their digits are asked once, on their first, where what is asked tells no digit
    from another."""
    import numpy as np

    _, first, shape = np.unique(shapes, return_index=True, return_inverse=True)
    in_order = np.argsort(first)  # (lines_of takes rows in the block's order)
    place = np.empty(len(first), dtype=np.intp)
    place[in_order] = np.arange(len(first))
    return lines_at(body, starts, first[in_order]), place[shape], len(first)


@cache
def _blind_progress() -> bool:
    _, regexes = progress_patterns()
    return digit_blind(regexes)


def _rows_holding(held: bytes, bits: int, all_of: bool) -> array[int]:
    """The rows whose held needles (``wordings``' native uint32 by line) include ``bits``
    (``all_of``) or one of them."""
    import numpy as np

    got = np.frombuffer(held, dtype=np.uint32) & bits
    found = got == bits if all_of else got != 0
    return array("I", np.flatnonzero(found).astype(np.uint32).tobytes())


@cache
def _needles() -> tuple[bytes, ...]:
    """The byte strings ``wordings`` looks for: the progress patterns' triggers (but those that
    hold another: a line holding "iteration" holds "iter"), then NCCL's two COLL literals."""
    triggers, _ = progress_patterns()
    shortest = [t for t in triggers if not any(o != t and o in t for o in triggers)]
    return (*(t.encode() for t in shortest), COLL_INFO.encode(), COLL_TRIGGER.encode())


@cache
def _needle_bits() -> tuple[int, int]:
    """The bits of ``held`` (wordings') for the progress triggers, and for NCCL's COLL literals."""
    triggers = len(_needles()) - 2
    return (1 << triggers) - 1, 0b11 << triggers

__all__ = [
    "GROUP_RECORD",
    "MIN_LINES",
    "LoopAside",
    "RepeatsFound",
    "counted_frame",
    "decide_across",
    "drop_across",
    "looks_for_repeats",
    "loop_aside",
    "reduce_repeats",
]
