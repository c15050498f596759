"""A file's events are made ready for its job as its reading ends (logscope.ingest.file_events):
controls dropped, the file's facts filled in, torchrun's records folded, one pass for the files
finished together, each file's records kept to itself."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from logscope.ingest import FileRead, discover, file_events, read_file, read_in_order, reading
from logscope.model import Event

# A ChildFailedError entry as torchrun prints it (sample_logs/crash-cascade): a header, then
# "key : value" lines that name no host or task of their own.
RECORD = """Root Cause (first observed failure):
[0]:
  time      : 2026-11-03_11:06:{second}
  host      : {host}
  rank      : {rank} (local_rank: {local})
  exitcode  : 1 (pid: {pid})
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def _job(tmp_path: Path) -> list[Path]:
    # Two nodes' files whose records sit on the same line numbers and name no host on their lines:
    # folded as one group, their lines would interleave.
    paths = []
    for n, (host, rank) in enumerate([("gpu-node01", 0), ("gpu-node02", 11)]):
        path = tmp_path / f"train-77-{host}.out"
        path.write_text("starting\n" + RECORD.format(second=40 + n, host=host, rank=rank, local=rank % 8,
                                                     pid=1000 + n))
        paths.append(path)
    return paths


def test_files_finished_together_keep_their_records_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = discover(_job(tmp_path))[0]
    alone = [read_file(source) for source in sources]
    passes: list[int] = []
    completed = file_events.completed

    def counted(frames: Sequence[pl.DataFrame], files: Sequence[object]) -> list[pl.DataFrame]:
        passes.append(len(frames))
        return completed(frames, files)  # type: ignore[arg-type]

    monkeypatch.setattr(reading, "completed", counted)
    together = list(read_in_order(sources))
    assert [n for n in passes if n] == [2]  # both small files ended in one pass
    for one, both in zip(alone, together, strict=True):
        assert isinstance(one, FileRead) and isinstance(both, FileRead)
        assert_frame_equal(one.events, both.events)
    records = [r.events.filter(pl.col("event") == Event.CHILD_FAILURE.value) for r in together
               if isinstance(r, FileRead)]
    assert [(f.height, f["rank"].to_list(), f["host"].to_list()) for f in records] == [
        (1, [0], ["gpu-node01"]), (1, [11], ["gpu-node02"])]


def test_a_record_is_one_event_with_its_lines_fields(tmp_path: Path) -> None:
    read = read_file(discover(_job(tmp_path)[:1])[0][0])
    assert isinstance(read, FileRead)
    record = read.events.filter(pl.col("event") == Event.CHILD_FAILURE.value).row(0, named=True)
    assert (record["line"], record["rank"], record["local_rank"], record["pid"]) == (3, 0, 0, 1000)
    assert record["fields"]["key"] == "root" and record["fields"]["exit_code"] == 1
    assert read.lines_read == 10  # every line still counted


def test_a_file_s_controls_are_dropped_before_its_records_fold(tmp_path: Path) -> None:
    # A coloured host value: the fold reads the text after the escape sequences are gone.
    path = _job(tmp_path)[0]
    path.write_text(path.read_text().replace("gpu-node01", "\x1b[1mgpu-node01\x1b[0m"))
    read = read_file(discover([path])[0][0])
    assert isinstance(read, FileRead)
    record = read.events.filter(pl.col("event") == Event.CHILD_FAILURE.value).row(0, named=True)
    assert record["host"] == "gpu-node01"
    assert "\x1b" not in "".join(read.events["text"].to_list())
