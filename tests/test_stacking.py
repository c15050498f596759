"""Frames stacked and split again (logscope.stacking), and small files' lines read together
(line_frames.whole_files_lines): each must give what the one-frame-at-a-time form gives."""

from __future__ import annotations

import codecs

import polars as pl
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from logscope.ingest.line_frames import line_count, lines_frame, whole_files_lines
from logscope.stacking import positions, stacked, unstacked

# Frames of an integer, a text and a struct column (the timeline's kinds), some of them empty.
_frames = st.lists(
    st.lists(st.tuples(st.integers(-5, 5), st.none() | st.text(max_size=3)), max_size=5), min_size=1, max_size=6)


def _frame(rows: list[tuple[int, str | None]]) -> pl.DataFrame:
    return pl.DataFrame({"n": [n for n, _ in rows], "s": [s for _, s in rows],
                         "f": [{"a": n, "b": s} for n, s in rows]},
                        schema={"n": pl.Int64, "s": pl.String, "f": pl.Struct({"a": pl.Int64, "b": pl.String})})


@settings(max_examples=60, deadline=None)
@given(_frames, st.randoms(use_true_random=False))
def test_stacked_and_unstacked_read_as_concat_and_partition_by(rows_of_frames: list[list[tuple[int, str | None]]],
                                                              rng: object) -> None:
    frames = [_frame(rows) for rows in rows_of_frames]
    labels = [f"file-{n}" if n % 3 else None for n in range(len(frames))]
    expected = pl.concat([frame.with_columns(pl.lit(n, dtype=pl.UInt32).alias("_k"),
                                             pl.lit(label, dtype=pl.String).alias("label"))
                          for n, (frame, label) in enumerate(zip(frames, labels, strict=True))])
    got = stacked(frames, {"_k": positions(len(frames)), "label": pl.Series(labels, dtype=pl.String)})
    assert_frame_equal(got, expected)
    # split again, in the stacked order or shuffled (the rows of a part keep their order)
    order = list(range(got.height))
    rng.shuffle(order)  # type: ignore[attr-defined]
    for frame in (got, got[order]):
        parts = frame.partition_by("_k", as_dict=True, include_key=False, maintain_order=True)
        empty = frame.clear().drop("_k")
        split = unstacked(frame, "_k", len(frames))
        assert len(split) == len(frames)
        for n, part in enumerate(split):
            assert_frame_equal(part, parts.get((n,), empty))


_line = st.lists(st.sampled_from(["a", " ", "é", "\r", "\x1f", "\x00", "x^2", "\ufeff", '"']), max_size=6).map("".join)
_block = st.lists(_line, min_size=1, max_size=5).map(lambda lines: "\n".join(lines)).map(
    lambda text: text.encode("utf-8"))


@settings(max_examples=80, deadline=None)
@given(st.lists(_block | st.sampled_from([b"\n", codecs.BOM_UTF8, codecs.BOM_UTF8 + b"x\n", b"x\x9c ok\n"]),
                min_size=1, max_size=6))
@example([b"x^2 = 4\n", b"last line\r"])  # a zlib-like start; a file ending in '\r'
def test_whole_files_read_together_as_each_alone(blocks: list[bytes]) -> None:
    counts = [line_count(block) for block in blocks]
    together = whole_files_lines(blocks, counts)
    assert together is not None
    alone = [lines_frame(block, 0) for block in blocks]
    assert [frame.height for frame in alone] == counts  # the count the reader's split agrees with
    assert_frame_equal(together, pl.concat(alone))


def test_lines_counted_otherwise_are_refused() -> None:
    assert whole_files_lines([b"a\nb\n", b"c"], [2, 2]) is None
