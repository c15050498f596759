"""LS203's counts (split_world._counts): a small job's NCCL init lines counted in Python give what
polars' query gives, and so the same findings."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from corpus_support import corpus_views, fresh
from test_rank_clash import JOBS, WITHOUT_ID, _view

from logscope.detectors import split_world
from logscope.detectors.split_world import SplitWorld, _counts
from logscope.model import Event


def _polars_counts(init: pl.DataFrame) -> tuple[int, int, int, int]:
    nranks, comm_rank = pl.col("fields").struct.field("nranks"), pl.col("fields").struct.field("comm_rank")
    counts: tuple[int, int, int, int] = init.select(
        nranks.max().fill_null(0).alias("world"), pl.struct("host", "pid").n_unique().alias("processes"),
        pl.col("host").drop_nulls().n_unique().alias("hosts"),
        pl.col("host").filter((nranks == nranks.max()) & (comm_rank == 0)).drop_nulls().n_unique().alias("rank0"),
    ).row(0)
    return counts


# Two worlds of two whose processes have the same pids on both hosts (containers): four processes.
SAME_PIDS = (WITHOUT_ID, [("node01", 11, 0), ("node01", 12, 1), ("node02", 11, 0), ("node02", 12, 1)])


def test_the_counts_are_the_same_read_in_python_or_by_polars(tmp_path: Path) -> None:
    views = [view for _, view in corpus_views()]
    views += [_view(tmp_path / str(n), *JOBS[case]) for n, case in enumerate(JOBS)]
    views.append(_view(tmp_path / "same-pids", *SAME_PIDS))
    assert _counts(fresh(views[-1]).rows(Event.NCCL_INIT)) == (2, 4, 2, 2)
    counted = 0
    for view in views:
        init = view.of(Event.NCCL_INIT)
        if init.height:
            counted += 1
            assert _counts(fresh(view).rows(Event.NCCL_INIT)) == _polars_counts(init)
    assert counted > 20


def test_split_world_findings_are_the_same_both_ways(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    views = [view for _, view in corpus_views()]
    views += [_view(tmp_path / str(n), *JOBS[case]) for n, case in enumerate(JOBS)]
    answers = []
    for threshold in (split_world.COUNTS_IN_PYTHON_UP_TO, -1):
        monkeypatch.setattr(split_world, "COUNTS_IN_PYTHON_UP_TO", threshold)
        answers.append([[f.to_json() for f in SplitWorld().detect(fresh(view))] for view in views])
    assert answers[0] == answers[1]
    assert any(answers[0])  # split worlds found (the two complete worlds, the corpus's)
