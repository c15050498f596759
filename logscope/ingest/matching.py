"""What the line parser is given, bounded whatever the content of a log.

The parser's memory grows with the trigger hits of a line times its length: every line holding a
trigger (``NCCL WARN``, ``Error``, ``=``...) is copied once per trigger it holds when it is
classified. Three limits keep this bounded by design:

* a line longer than :data:`MATCH_CHARS` is matched on its first :data:`MATCH_CHARS` characters,
  and, when it holds carriage returns (tqdm redraws with text glued after them), also on its last
  :data:`MATCH_CHARS` (as a further ``\\r`` segment); the line is still counted once, and the
  number of lines cut is said;
* a candidate line's triggers are listed once each, so a line of 80,000 ``=`` is one candidate
  for the ``=`` patterns, not 80,000;
* the candidate lines of a block are classified in pieces of at most :data:`CLASSIFY_BYTES`
  (each line's length times its distinct triggers), cut between lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import accumulate, pairwise

import polars as pl

from logscope.limits import MATCH_CHARS
from logscope.parsers.lines import PreparedChunk
from logscope.stacking import positions, stacked, unstacked

CLASSIFY_BYTES = 256 * 1024 * 1024


def cut_for_matching(lines: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """``lines`` (``line``, ``raw``) with each line longer than MATCH_CHARS cut for matching, and
    how many were cut."""
    long = pl.col("raw").str.len_chars() > MATCH_CHARS
    count = lines.select(long.sum()).item()
    if not count:
        return lines, 0
    head = pl.col("raw").str.head(MATCH_CHARS)
    glued = pl.col("raw").str.contains("\r", literal=True)
    cut = (
        pl.when(long & glued).then(pl.concat_str(head, pl.lit("\r"), pl.col("raw").str.tail(MATCH_CHARS)))
        .when(long).then(head)
        .otherwise(pl.col("raw"))
    )
    return lines.with_columns(cut.alias("raw")), int(count)


def cut_for_matching_each(lines: pl.DataFrame, heights: Sequence[int]) -> tuple[pl.DataFrame, list[int]]:
    """:func:`cut_for_matching` of several files' lines back to back (``heights`` rows each), in
    one query when none is long (a query a file cost ~0.1 ms), and how many of each were cut."""
    long = lines.select(pl.col("raw").str.len_chars() > MATCH_CHARS).to_series()
    if not long.any():
        return lines, [0] * len(heights)
    cut, _ = cut_for_matching(lines)
    return cut, [int(long.slice(start, end - start).sum()) for start, end in pairwise(accumulate(heights, initial=0))]


def bounded_pieces_each(prepared: Sequence[PreparedChunk]) -> list[list[tuple[PreparedChunk, int]]]:
    """:func:`bounded_pieces` of each of ``prepared`` (a pool's files), their triggers listed once
    and their costs worked out in two queries for all of them (two a file cost ~0.2 ms a file)."""
    with_rows = [n for n, chunk in enumerate(prepared) if chunk.candidates.height]
    if len(with_rows) <= 1:
        return [bounded_pieces(chunk) for chunk in prepared]
    joined = stacked([prepared[n].candidates for n in with_rows], {"_chunk": positions(len(with_rows))})
    costs = joined.select(_COST).to_series()
    parts = unstacked(joined.with_columns(_UNIQUE_TRIGGERS), "_chunk", len(with_rows))
    out = [[(chunk, 0)] for chunk in prepared]
    start = 0
    for n, part in zip(with_rows, parts, strict=True):
        total = int(costs.slice(start, part.height).sum())
        start += part.height
        out[n] = [(replace(prepared[n], candidates=part), total)] if total <= CLASSIFY_BYTES \
            else bounded_pieces(prepared[n])
    return out


# A candidate's triggers, each listed once; the cost of classifying it: its length times those.
_UNIQUE_TRIGGERS = pl.col("kw").list.unique(maintain_order=True)
_COST = _UNIQUE_TRIGGERS.list.len().cast(pl.Int64) * pl.col("raw").str.len_bytes().cast(pl.Int64)


def bounded_pieces(prepared: PreparedChunk) -> list[tuple[PreparedChunk, int]]:
    """``prepared`` with each candidate's triggers listed once, in pieces of at most
    CLASSIFY_BYTES to classify (one piece but for pathological blocks), each with its cost."""
    candidates = prepared.candidates
    if candidates.height == 0:
        return [(prepared, 0)]
    candidates = candidates.with_columns(_UNIQUE_TRIGGERS)
    cost = candidates.select(_COST)
    total = int(cost.to_series().sum())
    if total <= CLASSIFY_BYTES:
        return [(replace(prepared, candidates=candidates), total)]
    # Cut where the running cost crosses a multiple of the budget, never inside one line (a line
    # split at \r is several rows of one line number: its rows stay in one piece).
    piece = candidates.select(
        (cost.to_series().cum_sum() // CLASSIFY_BYTES).alias("piece"), pl.col("line")
    ).select(pl.col("piece").max().over("line").alias("piece"))["piece"]
    parts = candidates.with_columns(piece.alias("_piece"), cost.to_series().alias("_cost")).partition_by(
        "_piece", maintain_order=True)
    return [
        # The lines set aside are counted once, and the chunk's first time given once (see
        # lines.ChunkResult), with the first piece.
        (replace(prepared, candidates=part.drop("_piece", "_cost"), set_aside=prepared.set_aside.clear(),
                 set_aside_before=0, first_time=None) if n
         else replace(prepared, candidates=part.drop("_piece", "_cost")),
         int(part["_cost"].sum()))
        for n, part in enumerate(parts)
    ]
