"""A big block's NCCL COLL lines thinned in one compiled pass, before polars sees the block.

Most of a COLL-heavy log (``NCCL_DEBUG_SUBSYS=COLL``) is lines the thinning drops: all but the
first :data:`~logscope.ingest.thinning.COLL_HEAD` and last :data:`~logscope.ingest.thinning.COLL_TAIL`
of each (process, communicator). Splitting them into a polars frame only to set them aside
(:func:`logscope.parsers.coll_aside.coll_surplus`) is most of what reading such a log costs. The
compiled scanner (``_collscan.c``, built with the package when a C compiler is there) finds and
groups them on the block's bytes; :func:`~logscope.parsers.coll_aside.merge_groups` checks each
group once, as the polars path does; the scanner then drops the surplus lines, and polars is handed
only the lines kept, with their line numbers in the file.

Without the compiled scanner, or for a block where it would not pay (small, few lines, no COLL
lines set aside), :func:`prefilter` returns None and the block takes the polars path whole. Both
give the same events: ``tests/test_coll_prefilter.py`` holds them to it.
"""

from __future__ import annotations

import array
from dataclasses import dataclass

import polars as pl

from logscope.ingest.blocks import lines_frame
from logscope.ingest.matching import MATCH_CHARS
from logscope.ingest.thinning import COLL_HEAD, COLL_TAIL
from logscope.parsers.coll_aside import merge_groups
from logscope.parsers.lines import WRAP_MAX_LINES

try:
    from logscope.ingest import _collscan

    COMPILED = True
except ImportError:  # not built where the package was installed (no C compiler): polars does it all
    COMPILED = False

# Below this a block is read whole by polars: the scanner's fixed cost (a group table, a call into
# polars per group check) would not pay.
MIN_BLOCK_BYTES = 1024 * 1024


@dataclass
class Prefiltered:
    """What is left of a block once its surplus COLL lines are dropped."""

    lines: pl.DataFrame  # ``line`` (numbered as in the file), ``raw``: the lines kept
    lines_read: int  # every line of the block, kept or not
    set_aside: int  # COLL lines dropped: recognised, never classified


def prefilter(block: bytes, first_line: int) -> Prefiltered | None:
    """``block`` (lines numbered from ``first_line + 1``) without the COLL lines the thinning would
    drop; None when the block is better read whole (see the module's docstring).

    The block is taken as :func:`~logscope.ingest.blocks.lines_frame` reads it (0x1f is a space
    there, so here too). A block of at most WRAP_MAX_LINES lines is never prefiltered: the parser
    may join hard-wrapped lines in such a block, and a dropped line would change what joins."""
    if not COMPILED or len(block) < MIN_BLOCK_BYTES:
        return None
    if b"\x1f" in block:
        block = block.replace(b"\x1f", b" ")
    total, pairs, groups = _collscan.scan(block, b"\r" in block, MATCH_CHARS)
    if total <= WRAP_MAX_LINES or not groups:
        return None
    merged, timed = merge_groups([head for head, _ in groups], [comm for _, comm in groups])
    kept, kept_lines, set_aside = _collscan.reduce(
        block, total, pairs, array.array("i", merged.to_list()).tobytes(), bytes(timed.to_list()),
        COLL_HEAD, COLL_TAIL,
    )
    if not set_aside:
        return None
    import numpy as np  # only here: a big block's cost, not every start's

    numbers = pl.Series("line", np.frombuffer(kept_lines, dtype=np.uint32)).cast(pl.Int64) + (first_line + 1)
    try:
        lines = lines_frame(kept, first_line, numbers=numbers)
    except ValueError:  # the CSV reader split lines otherwise than at '\n' (never seen): read it whole
        return None
    return Prefiltered(lines, total, set_aside)
