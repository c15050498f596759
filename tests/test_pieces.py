"""A big file read in pieces by several workers (logscope.ingest.pieces) reads as the whole file."""

from __future__ import annotations

import gzip
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import polars as pl
import pytest
from reading_support import assert_same_reads, without_repeats

from logscope.ingest import blocks, discover, pieces, read_file, reading, workers
from logscope.ingest.discovery import SourceFile
from logscope.ingest.pieces import LineCounts, Piece, plan_pieces, with_first_line
from logscope.ingest.reading import FileRead, PieceRead, merge_pieces, read_piece

_WORDS = ("loader", "optimizer", "checkpoint", "scheduler", "sampler", "profiler", "tokenizer", "evaluator")


def _log(path: Path, records: int) -> Path:
    """A log whose lines a read could carry across any cut: a timed line, then untimed ones (two
    exceptions, a torchrun record of several lines), each wording its own (no loop's repeats)."""
    out: list[str] = []
    for n in range(records):
        word = "-".join(_WORDS[int(digit)] for digit in f"{n:o}")  # n in words: no two lines alike but for digits
        second = n % 60
        out.append(f"[2026-03-01 10:{n // 60 % 60:02d}:{second:02d},123] INFO {word} ready on node{n % 7}")
        # (each from a process of its own, the srun task n: the thinning keeps them all)
        out.append(f"{n}: ValueError: {word} refused its input")
        out.append(f"{n}: RuntimeError: the {word} stopped")
        if n % 9 == 0:
            out.extend([
                "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                "============================================================",
                "train.py FAILED",
                "------------------------------------------------------------",
                "Root Cause (first observed failure):",
                "[0]:",
                f"  time      : 2026-03-01_10:{n // 60 % 60:02d}:{second:02d}",
                "  host      : node1",
                f"  rank      : {n % 8} (local_rank: {n % 8})",
                "  exitcode  : 1 (pid: 4242)",
                "  error_file: <N/A>",
                "============================================================",
            ])
        out.append(f"{word} says nothing of note here")
    path.write_text("\n".join(out) + "\n")
    return path


def _block_starts(source: SourceFile) -> list[int]:
    """Where the whole file's blocks start, as reading it cuts them."""
    starts, at = [], 0
    with source.path.open("rb") as stream:
        for block in blocks.blocks(stream, source.path, []):
            starts.append(at)
            at += len(block)
    return starts


def _pieces_at(source: SourceFile, starts: list[int]) -> list[Piece]:
    bounds = [*starts, source.size]
    cut = [Piece(source, n, len(starts), start, end) for n, (start, end) in enumerate(pairwise(bounds))]
    counts = LineCounts(cut)
    return [with_first_line(piece, counts) for piece in cut]


def test_a_file_read_in_pieces_cut_where_its_blocks_are_reads_as_the_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pieces cut where the whole file's blocks are hold the same blocks: what the file's steps do
    # with them together (times carried across a cut, records folded, thinning) must come out the
    # same. Each block starts and ends with untimed events, so the times carried across a cut are
    # needed (asserted below), and records cross some cuts.
    without_repeats(monkeypatch)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 256 * 1024)  # > 4,096 lines a block: none is a small file's whole
    source = discover([_log(tmp_path / "train.out", 4000)])[0][0]
    starts = _block_starts(source)
    assert len(starts) >= 4
    read = [read_piece(piece) for piece in _pieces_at(source, starts)]
    assert all(isinstance(piece, PieceRead) for piece in read)
    later = [piece for piece in read[1:] if isinstance(piece, PieceRead)]
    assert any(piece.events["time"].null_count() for piece in later)  # its first events: timed by the piece before
    assert any(piece.events["time_latest"].null_count() for piece in read[:-1] if isinstance(piece, PieceRead))
    whole = read_file(source)
    assert_same_reads([whole], [merge_pieces(source, read)])
    assert isinstance(whole, FileRead) and (whole.events["event"] == "child_failure").sum() >= 400


def test_a_piece_that_a_read_error_stopped_ends_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As a read of the whole file stops at the error: the pieces after it are not taken.
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 256 * 1024)
    source = discover([_log(tmp_path / "train.out", 4000)])[0][0]
    read = [read_piece(piece) for piece in _pieces_at(source, _block_starts(source))]
    assert all(isinstance(piece, PieceRead) for piece in read)
    stopped = replace(read[1], stopped=True, warnings=["stopped reading after line 9: damage"])  # type: ignore[type-var]
    merged = merge_pieces(source, [read[0], stopped, *read[2:]])
    assert isinstance(merged, FileRead) and isinstance(stopped, PieceRead)
    assert merged.lines_read == stopped.lines_read and merged.warnings[-1] == "stopped reading after line 9: damage"
    assert merged.events["line"].max() <= stopped.lines_read  # type: ignore[operator]
    # A later piece that cannot be opened (the file removed since it was cut): the lines before it.
    gone = merge_pieces(source, [read[0], read[1], reading.Skipped(source.display, "cannot open (gone)")])
    assert isinstance(gone, FileRead) and isinstance(read[1], PieceRead) and gone.lines_read == read[1].lines_read
    assert gone.warnings[-1].startswith(f"stopped reading after line {read[1].lines_read}: cannot open (gone)")


def test_the_first_piece_of_a_file_that_cannot_be_read_is_the_file_s_result(tmp_path: Path) -> None:
    path = tmp_path / "train.out"
    path.write_bytes(b"\x00\x01\x02\x03binary" * 4096)
    source = discover([path])[0][0]
    first, second = _pieces_at(source, [0, source.size // 2])
    result = merge_pieces(source, [read_piece(first), read_piece(second)])
    assert isinstance(result, reading.Skipped) and "binary" in result.reason


def _sized(path: Path, size: int, compression: str | None = None) -> SourceFile:
    return replace(discover([path])[0][0], size=size, compression=compression)


def test_only_an_uncompressed_file_bigger_than_a_worker_s_share_is_cut_and_at_line_starts(tmp_path: Path) -> None:
    mb = 1024 * 1024
    path = tmp_path / "big.out"
    line = b"x" * 99 + b"\n"
    path.write_bytes(line * (3 * mb // 100))
    big = discover([path])[0][0]
    small = _sized(path, mb)
    saved = pieces.PIECE_MIN_BYTES
    pieces.PIECE_MIN_BYTES = 256 * 1024
    try:
        items = plan_pieces([big, small], 3)  # share: 1.33 MB (4 MB over 3 workers)
        assert items[-1] == small  # less than a share: not cut
        cut = [item for item in items if isinstance(item, Piece)]
        assert [piece.index for piece in cut] == [0, 1, 2] and {piece.count for piece in cut} == {3}
        assert cut[0].start == 0 and cut[-1].end == big.size
        assert all(a.end == b.start and b.start % len(line) == 0 for a, b in pairwise(cut))
        # Twice the share, give or take a few bytes, is two pieces (a third of a few bytes is none).
        assert len(plan_pieces([big], 2)) == 2 and len(plan_pieces([_sized(path, big.size - 7)], 2)) == 2
        assert plan_pieces([big], 1) == [big]  # one worker: its share is the job
        assert plan_pieces([_sized(path, big.size, "gz")], 2) == [_sized(path, big.size, "gz")]
        # Three files of a third each on two workers: none keeps a worker busy alone.
        assert plan_pieces([big, big, big], 2) == [big, big, big]
    finally:
        pieces.PIECE_MIN_BYTES = saved
    assert plan_pieces([big], 2) == [big]  # 3 MB: below the pieces' least size


def test_the_lines_before_each_piece_are_its_newlines(tmp_path: Path) -> None:
    path = tmp_path / "train.out"
    lines = [f"line {n} " + "y" * (n % 50) for n in range(20_000)]
    path.write_text("\n".join(lines) + "\n")
    source = discover([path])[0][0]
    data = path.read_bytes()
    starts = [0, data.index(b"\n", 50_000) + 1, data.index(b"\n", 300_000) + 1]
    got = _pieces_at(source, starts)
    assert [piece.first_line for piece in got] == [data[:start].count(b"\n") for start in starts]


@pytest.mark.parametrize("early", [False, True])
def test_a_job_of_one_big_file_is_read_by_the_workers_in_pieces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, early: bool) -> None:
    # One file, so one worker took it whole before: now each worker reads pieces of it, and the
    # file comes back as one result, its lines all counted, the same failures found; as read_files
    # plans it, or as start_early does before the command imports (the CLI's way).
    path = _log(tmp_path / "train.out", 6000)
    gz = tmp_path / "other.out.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()[:200_000]))
    sources = discover([path, gz])[0]
    alone = [read_file(source) for source in sources]
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    monkeypatch.setattr(pieces, "PIECE_MIN_BYTES", 128 * 1024)
    handed: list[list[int]] = []
    units = workers._units

    def handing(items: list[SourceFile | Piece], count: int) -> list[list[int]]:
        handed.extend(units(items, count))
        return units(items, count)

    monkeypatch.setattr(workers, "_units", handing)
    if early:
        workers.start_early([path, gz])
        assert len(workers._EARLY_READ) == 1
    seen: dict[str, int] = {}
    got = workers.read_files(sources, lambda source, n: seen.update({source.display: seen.get(source.display, 0) + n}))
    assert not workers._EARLY_READ and not workers._EARLY
    assert len(handed) >= 3  # the big file in pieces, the compressed one whole
    assert seen[sources[0].display] == sources[0].size  # every piece's bytes said, once
    for expected, result in zip(alone, got, strict=True):
        assert isinstance(expected, FileRead) and isinstance(result, FileRead)
        assert (result.lines_read, result.lines_recognised, result.warnings) == (
            expected.lines_read, expected.lines_recognised, expected.warnings)
        failures = pl.col("event").is_in(["exception", "child_failure"])
        columns = ["line", "event", "time", "time_latest", "rank", "text"]
        assert result.events.filter(failures).select(columns).equals(expected.events.filter(failures).select(columns))
