"""LS303's look at each file's last traceback (logscope.detectors.traceback_cut_short.last_starts):
the same whether a few lines are read one by one or many are grouped by polars."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_support import corpus_views, fresh

from logscope.detectors import traceback_cut_short
from logscope.detectors.base import JobView
from logscope.detectors.traceback_cut_short import last_starts
from logscope.timeline import load_job


def _view(folder: Path) -> JobView:
    job = load_job([folder])
    return JobView(job.timeline, tuple(job.nodes), tuple(f.display for f in job.files),
                   {f.display: f.info.node for f in job.files})


def test_last_starts_are_the_same_read_in_python_or_grouped_by_polars(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Beside every job the tests know: a file whose exception shares its traceback's line (a \r
    # between them, as a progress bar leaves), which neither way counts as done with (the caller
    # looks at that line), and one whose traceback is followed by its exception.
    (tmp_path / "train-1-node01.out").write_text(
        "step 1\n[rank0]: Traceback (most recent call last):\r[rank0]: ValueError: boom\n")
    (tmp_path / "train-1-node02.out").write_text(
        "[rank1]: Traceback (most recent call last):\n[rank1]:   File \"t.py\", line 3, in <module>\n"
        "[rank1]: ValueError: boom\n")
    views = [view for _, view in corpus_views()] + [_view(tmp_path)]
    answers = []
    for threshold in (traceback_cut_short.ROWS_IN_PYTHON_UP_TO, -1):
        monkeypatch.setattr(traceback_cut_short, "ROWS_IN_PYTHON_UP_TO", threshold)
        answers.append([last_starts(fresh(view)) for view in views])
    starts, ended = answers[0][-1]
    assert [(Path(file).name, line) for file, line in starts] == [("train-1-node01.out", 2), ("train-1-node02.out", 1)]
    assert {Path(file).name for file in ended} == {"train-1-node02.out"}
    # Files with a traceback are common among them, and some are done with, some not.
    assert sum(bool(starts) for starts, _ in answers[0]) > 40
    assert any(ended and len(ended) < len(starts) for starts, ended in answers[0])
    assert answers[0] == answers[1]
