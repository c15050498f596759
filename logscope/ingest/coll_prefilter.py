"""A big block's NCCL COLL lines thinned in one compiled pass, before polars sees the block.

Most of a COLL-heavy log (``NCCL_DEBUG_SUBSYS=COLL``) is lines the thinning drops: all but the
first :data:`~logscope.limits.COLL_HEAD` and last :data:`~logscope.limits.COLL_TAIL`
of each (process, communicator). Splitting them into a polars frame only to set them aside
(:func:`logscope.parsers.coll_aside.coll_surplus`) is most of what reading such a log costs. The
compiled scanner (``_collscan.c``, built with the package when a C compiler is there) finds and
groups them on the block's bytes; :func:`~logscope.parsers.coll_groups.group_keys` checks each group
once, as the polars path does; the scanner then drops the surplus lines and writes the others with
their line numbers, for polars to read (:func:`~logscope.ingest.line_frames.lines_frame`).

This module imports no polars: it is the heart of a read worker's byte pass
(:mod:`logscope.ingest.scanning`).

Without the compiled scanner, or for a block where it would not pay (small, few lines, no COLL
line to drop), :func:`reduce_block` returns None and the block takes the polars path whole. Both give
the same events: ``tests/test_coll_prefilter.py`` holds them to it.
"""

from __future__ import annotations

import array
import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from logscope.ingest import compiled
from logscope.ingest.blocks import Controls, for_csv_reader
from logscope.limits import COLL_HEAD, COLL_TAIL, MATCH_CHARS, WRAP_MAX_LINES
from logscope.parsers.coll_groups import group_keys

# Below this a block is read whole by polars: the scanner's fixed cost (a group table, the checks
# of new groups) would not pay.
MIN_BLOCK_BYTES = 1024 * 1024
# What each (head, comm) group checked so far is: (key, timed), or None when not valid. A file's
# blocks share their groups (a handful of processes and communicators), so only its first block
# pays for the checks. Emptied when full: lines stamped with NCCL's time make new heads each second.
_KNOWN: dict[tuple[bytes, bytes], tuple[str, bool] | None] = {}
KNOWN_MAX = 100_000


# A block's merged groups, each as the scanner's (head, comm) or as (the process's key, comm).
Identities = list[tuple[bytes, bytes]] | list[tuple[str, bytes]]


@dataclass
class Reduced:
    """What is left of a block once its surplus COLL lines are dropped."""

    kept: bytes  # the lines kept, each as ``<its number in the file>\x1f<the line>\n``
    kept_count: int  # how many
    lines_read: int  # every line of the block, kept or not
    set_aside: int  # COLL lines dropped: recognised, never classified
    # With reduce_block's ``with_groups``: its groups' identities (by merged group), each group's
    # COLL lines in the block, and where each COLL line kept stands (see _collscan.c's reduce and
    # drop_across).
    groups: GroupLines | None = None


@dataclass(frozen=True)
class GroupLines:
    """A reduced block's COLL groups and the COLL lines it kept (see :class:`Reduced`)."""

    # By merged group: the scanner's (head, comm) in a block whose COLL lines carry no time (each
    # group its own merged group), else (the process's key, comm) (see _merged).
    identities: Identities
    counts: bytes  # native uint32 by merged group: its lines in the block
    coll_lines: bytes  # native uint32 (group and flags, place in group, start, length) per COLL line kept


def reduce_block(block: bytes | memoryview, first_line: int, controls: Controls, *,
                 with_groups: bool = False) -> Reduced | None:
    """``block`` (lines numbered from ``first_line + 1``) without the COLL lines the thinning would
    drop; None when the block is better read whole (see the module's docstring).

    The block is taken as :func:`~logscope.ingest.line_frames.lines_frame` reads it: a file's leading
    byte-order marks dropped (in its first block), 0x1f a space. A block of at most WRAP_MAX_LINES
    lines is never prefiltered: the parser may join hard-wrapped lines in such a block, and a
    dropped line would change what joins.
    ``controls``: what the block holds (:func:`~logscope.ingest.blocks.control_bytes`)."""
    if not compiled.COMPILED or len(block) < MIN_BLOCK_BYTES:
        return None
    block = for_csv_reader(block, controls.unit_separator, first=first_line == 0)
    total, pairs, groups = compiled.scanner.scan(block, controls.carriage_return, MATCH_CHARS)
    if total <= WRAP_MAX_LINES or not groups:
        return None
    merged, timed, identities = _merged(groups)
    if with_groups:
        kept, kept_count, set_aside, coll_lines, counts = compiled.scanner.reduce(
            block, total, pairs, merged, timed, COLL_HEAD, COLL_TAIL, first_line, True)
        return Reduced(kept, kept_count, total, set_aside, GroupLines(identities, counts, coll_lines)) \
            if set_aside else None
    kept, kept_count, set_aside = compiled.scanner.reduce(block, total, pairs, merged, timed, COLL_HEAD, COLL_TAIL,
                                                   first_line)
    if not set_aside:
        return None
    return Reduced(kept, kept_count, total, set_aside)


def drop_surplus_across(blocks: Sequence[Reduced | None]) -> list[Reduced | None]:
    """A file's reduced blocks, in order (None: a block read whole), without the COLL lines that
    the other blocks make surplus: each block keeps the first COLL_HEAD and last COLL_TAIL lines of
    each group *in the block*, but only the file's first and last stay after the thinning
    (:mod:`logscope.ingest.thinning`), so a block's last lines of a group that goes on in later
    blocks (and its first, after earlier ones) are dropped here, before they are parsed.

    Only blocks reduced ``with_groups`` are counted and changed. A line is dropped only when its
    place in its group over the file is neither among the first COLL_HEAD nor the last COLL_TAIL:
    counting the lines of the blocks that are not counted would only move it further from both
    ends, so what is dropped is what the thinning drops. Lines with NCCL's time are dropped as
    the scanner sets them aside in a block: of each run of lines dropped back to back (across
    blocks too), the first and the last that carry a time stay, as those are the only ones the
    untimed lines around the run take their times from; they become events the thinning drops."""
    # What the blocks say of their groups is not needed beyond this (nor sent to the main process).
    out = [None if reduced is None else dataclasses.replace(reduced, groups=None) for reduced in blocks]
    counted = [(n, reduced, reduced.groups) for n, reduced in enumerate(blocks)
               if reduced is not None and reduced.groups is not None]
    if len(counted) < 2:
        return out
    in_block = [_lines_by_group(groups) for _, _, groups in counted]
    total: Counter[tuple[bytes, bytes] | tuple[str, bytes]] = Counter()
    for lines in in_block:
        total.update(lines)
    before: Counter[tuple[bytes, bytes] | tuple[str, bytes]] = Counter()
    bounds: list[bytes] = []
    for (_, _, groups), lines in zip(counted, in_block, strict=True):
        # Per merged group: the places in the block whose place in the file is in neither end.
        block_bounds = array.array("q")
        for identity in groups.identities:
            earlier = before[identity]
            block_bounds.extend((COLL_HEAD - earlier, total[identity] - COLL_TAIL - earlier))
        bounds.append(block_bounds.tobytes())
        before.update(lines)
    # A run of dropped lines goes on only through blocks that follow one another.
    runs: list[list[int]] = []
    for at, (n, _, _) in enumerate(counted):
        if runs and counted[runs[-1][-1]][0] == n - 1:
            runs[-1].append(at)
        else:
            runs.append([at])
    for run in runs:
        thinner = compiled.scanner.drop_across([counted[at][1].kept for at in run],
                                               [counted[at][2].coll_lines for at in run], [bounds[at] for at in run])
        for at, (kept, dropped) in zip(run, thinner, strict=True):
            n, reduced, _ = counted[at]
            if dropped:
                out[n] = Reduced(kept, reduced.kept_count - dropped, reduced.lines_read, reduced.set_aside + dropped)
    return out


def _lines_by_group(groups: GroupLines) -> dict[tuple[bytes, bytes] | tuple[str, bytes], int]:
    counts = array.array("I", groups.counts)
    return {groups.identities[m]: count for m, count in enumerate(counts) if count}


def _merged(groups: list[tuple[bytes, bytes]]) -> tuple[bytes, bytes, Identities]:
    """For the scanner's groups: the merged group of each (int32, -1 when not valid), whether its
    lines carry a leading time (one byte each), as the polars path groups them (alone when no line
    has a time, else one group per (key, comm)), and each merged group's identity: the scanner's
    (head, comm) when alone, else (key, comm)."""
    unknown = [group for group in groups if group not in _KNOWN]
    if unknown:
        if len(_KNOWN) + len(unknown) > KNOWN_MAX:
            _KNOWN.clear()
        _KNOWN.update(zip(unknown, group_keys([h for h, _ in unknown], [c for _, c in unknown]), strict=True))
    keys = [_KNOWN[group] for group in groups]
    timed = bytes(key is not None and key[1] for key in keys)
    if not any(timed):
        return array.array("i", [-1 if key is None else n for n, key in enumerate(keys)]).tobytes(), timed, groups
    ids: dict[tuple[str, bytes], int] = {}
    merged = [-1 if key is None else ids.setdefault((key[0], comm), len(ids))
              for key, (_, comm) in zip(keys, groups, strict=True)]
    return array.array("i", merged).tobytes(), timed, list(ids)
