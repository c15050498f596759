"""A block of bytes as a polars frame of numbered lines, decoded lossily (the blocks themselves,
cut at newlines: :mod:`logscope.ingest.blocks`, which imports no polars)."""

from __future__ import annotations

import codecs

import polars as pl

from logscope.ingest.blocks import for_csv_reader


def lines_frame(block: bytes, first_line: int, numbered: bool = False,
                unit_separator: bool | None = None) -> pl.DataFrame:
    """Physical lines of ``block`` numbered from ``first_line + 1``, decoded lossily.

    ``numbered``: each line of ``block`` is ``<its number>\\x1f<the line>`` and 0x1f occurs nowhere
    else: the lines of a block some of whose lines were dropped (:mod:`~logscope.ingest.coll_prefilter`).
    ``unit_separator``: see :func:`~logscope.ingest.blocks.for_csv_reader`.
    """
    if not block:  # no line (a block the byte pass dropped every kept line of): the reader refuses it
        return pl.DataFrame(schema={"line": pl.Int64, "raw": pl.String})
    # The CSV reader is the fastest line splitter polars has; give it a separator byte that
    # cannot occur (0x1f is replaced by a space) and no quoting, so every line is one field.
    if not numbered:
        block = bytes(for_csv_reader(block, unit_separator, first=first_line == 0))  # bytes in, bytes out: no copy
    # The reader decompresses what starts like zlib or zstd data (a line "x^2 ..." does), and drops
    # a byte-order mark it starts with (kept in a later block of a file: for_csv_reader): an empty
    # first line in front of such a block keeps it as it is, and its row is dropped below.
    shielded = _compressed_start(block) or (not numbered and block.startswith(codecs.BOM_UTF8))
    columns = ["line", "raw"] if numbered else ["raw"]
    frame = pl.read_csv(
        b"\n" + block if shielded else block,
        has_header=False,
        separator="\x1f",
        quote_char=None,
        new_columns=columns,
        schema_overrides={"line": pl.Int64, "raw": pl.String} if numbered else {"raw": pl.String},
        encoding="utf8-lossy",
        infer_schema=False,
        truncate_ragged_lines=True,
    )
    if shielded:
        frame = frame.slice(1)
    if numbered:
        return frame
    return frame.select(
        (pl.int_range(1, pl.len() + 1, dtype=pl.Int64) + first_line).alias("line"),
        pl.col("raw"),
    )


def _compressed_start(block: bytes) -> bool:
    """Whether ``block`` starts with a zlib header or the zstd magic number (gzip's cannot be
    left: its 0x1f is replaced before)."""
    if block.startswith(b"\x28\xb5\x2f\xfd"):
        return True
    return len(block) >= 2 and block[0] & 0x0F == 8 and ((block[0] << 8) | block[1]) % 31 == 0


__all__ = ["lines_frame"]
