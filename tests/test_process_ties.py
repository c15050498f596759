"""The exit cascade's process ties (logscope.detectors.exit_cascade._ties): per place, the local
ranks and pids the lines tie to exactly one rank (or local rank), the same whether a small
timeline's rows are read one by one or grouped by polars."""

from __future__ import annotations

import polars as pl
import pytest
from corpus_support import corpus_views

from logscope.detectors import exit_cascade


def _both_ways(monkeypatch: pytest.MonkeyPatch, events: pl.DataFrame) -> list[list[dict[tuple[str, int], int]]]:
    answers = []
    for threshold in (exit_cascade.TIES_IN_PYTHON_UP_TO, -1):
        monkeypatch.setattr(exit_cascade, "TIES_IN_PYTHON_UP_TO", threshold)
        answers.append(exit_cascade._ties(events))
    return answers


def test_ties_are_the_same_read_in_python_or_grouped_by_polars(monkeypatch: pytest.MonkeyPatch) -> None:
    tied = 0
    for _, view in corpus_views():
        python, grouped = _both_ways(monkeypatch, view.events)
        assert python == grouped
        tied += bool(any(python))
    assert tied > 50


def test_a_pid_tied_to_two_ranks_is_tied_to_none(monkeypatch: pytest.MonkeyPatch) -> None:
    # pid 7 says rank 0 and rank 1 on node a (two lines of two processes that shared a pid over a
    # restart): no tie; on node b it says rank 1 only. A row without a node is placed by its host.
    events = pl.DataFrame({
        "node": ["a", "a", "b", None, "a"], "host": ["a", "a", "b", "c", "a"], "file": ["f"] * 5,
        "rank": [0, 1, 1, 2, None], "local_rank": [0, 1, 1, 0, 3], "pid": [7, 7, 7, 9, 11],
    })
    python, grouped = _both_ways(monkeypatch, events)
    assert python == grouped == [
        {("a", 0): 0, ("a", 1): 1, ("b", 1): 1, ("c", 0): 2},  # local rank -> rank
        {("b", 7): 1, ("c", 9): 2},  # pid -> rank
        {("b", 7): 1, ("c", 9): 0, ("a", 11): 3},  # pid -> local rank
    ]
