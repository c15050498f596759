"""What the line parser is given (logscope.ingest.matching): candidates in pieces of bounded
classification cost, one chunk at a time or a pool's files together, the same events either way."""

from __future__ import annotations

from pathlib import Path

import pytest
from polars.testing import assert_frame_equal, assert_series_equal
from reading_support import assert_same_reads

from logscope.ingest import discover, matching, read_in_order
from logscope.ingest.line_frames import lines_frame
from logscope.parsers.lines import PreparedChunk, prepare_files

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"


def _prepared() -> list[PreparedChunk]:
    files = [file for folder in ("crash-cascade", "oom", "hang-quiet-rank") for file in discover([SAMPLES / folder])[0]]
    lines = [lines_frame(file.path.read_bytes(), 0) for file in files]
    lines.insert(1, lines_frame(b"no trigger here\n", 0))  # a file with no candidate between others
    return prepare_files(lines, [0] * len(lines), 2026)


def _assert_same_pieces(expected: list[tuple[PreparedChunk, int]], got: list[tuple[PreparedChunk, int]]) -> None:
    assert [cost for _, cost in got] == [cost for _, cost in expected]
    for (a, _), (b, _) in zip(expected, got, strict=True):
        assert_frame_equal(a.candidates, b.candidates)
        assert_series_equal(a.set_aside, b.set_aside)
        assert (a.was_split, a.last_time, a.set_aside_before) == (b.was_split, b.last_time, b.set_aside_before)


@pytest.mark.parametrize("budget", [matching.CLASSIFY_BYTES, 4096])
def test_a_pools_pieces_are_each_files_own(budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # With a small budget a file is cut into several pieces: the pool's way must give the same.
    monkeypatch.setattr(matching, "CLASSIFY_BYTES", budget)
    prepared = _prepared()
    assert sum(chunk.candidates.height == 0 for chunk in prepared) >= 1
    together = matching.bounded_pieces_each(prepared)
    alone = [matching.bounded_pieces(chunk) for chunk in prepared]
    assert len(together) == len(alone)
    for expected, got in zip(alone, together, strict=True):
        _assert_same_pieces(expected, got)
    pieces = sum(len(pieces) for pieces in together)
    assert pieces > len(prepared) if budget == 4096 else pieces == len(prepared)


def test_reads_in_small_pieces_read_as_in_one(monkeypatch: pytest.MonkeyPatch) -> None:
    sources = [file for folder in ("crash-cascade", "rank0-misresolution") for file in discover([SAMPLES / folder])[0]]
    whole = list(read_in_order(sources))
    monkeypatch.setattr(matching, "CLASSIFY_BYTES", 4096)
    assert_same_reads(whole, list(read_in_order(sources)))
