"""JobView.rows_where: a few plain-ASCII rows tested in Python pick the rows polars picks (LS209's
bootstrap and invalid-usage rows, LS402's socket errors)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from corpus_support import corpus_views, fresh

from logscope.detectors import base
from logscope.detectors.base import JobView
from logscope.detectors.nccl_bootstrap_error import NcclBootstrapError
from logscope.detectors.socket_error import SocketError
from logscope.model import Event
from logscope.timeline import load_job

# NCCL and PyTorch lines that the three conditions tell apart: a plugin line at INFO naming a
# bootstrap failure (not picked), socket errors in other cases and one that names none of their
# words, invalid usage in both spellings, a warning whose line names a bootstrap function where
# its message does not (not picked: the message is what is read).
LINES = """\
[rank0]:node01:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node01:1234:1240 [0] NCCL INFO NET/Plugin: Failed to initialize any NET plugin
node01:1234:1240 [0] NCCL WARN Bootstrap : no socket interface found
node01:1234:1240 [0] NCCL WARN bootstrapRoot: connection closed by remote peer
node01:1234:1240 [0] NCCL WARN socketProgress: CONNECTION RESET BY PEER node02<5000>
node01:1234:1240 [0] NCCL WARN Net : Connection closed by remote peer 10.0.0.2<41234>
node01:1234:1240 [0] NCCL WARN NET/IB :SHARP coll init error: Cannot create SHArP job(-11)
[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage (run with \
NCCL_DEBUG=WARN for details), NCCL version 2.21.5
[rank1]: RuntimeError: NCCL error: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:5000
[rank1]: ConnectionResetError: [Errno 104] Connection reset by peer
[rank1]: BrokenPipeError: [Errno 32] broken pipe
node01:1234:1240 [0] misc/socket.cc:563 NCCL WARN Net : Call to recv from 10.0.0.2<41234> failed : Connection timed out
[2026-04-11 10:21:07] node01:1234:1240 [0] bootstrap.cc:120 (bootstrapRoot) NCCL WARN Something odd happened here
"""
# Case-blind, Python's re finds "Broken pipe" in this dotless i and polars' regex does not: such
# rows are left to polars.
NOT_ASCII = "node01:1234:1240 [0] NCCL WARN Net : Broken p\u0131pe sending to 10.0.0.2<41234>\n"


def _view(folder: Path, text: str) -> JobView:
    folder.mkdir()
    (folder / "train-77-node01.out").write_text(text, encoding="utf-8")
    job = load_job([folder])
    return JobView(job.timeline, tuple(job.nodes), tuple(f.display for f in job.files),
                   {f.display: f.info.node for f in job.files})


def _both_ways(monkeypatch: pytest.MonkeyPatch, picks: Callable[[JobView], Any], views: list[JobView]) -> None:
    answers = []
    for threshold in (base.WHERE_IN_PYTHON_UP_TO, -1):
        monkeypatch.setattr(base, "WHERE_IN_PYTHON_UP_TO", threshold)
        answers.append([picks(fresh(view)) for view in views])
    assert answers[0] == answers[1]


PICKS: dict[str, Callable[[JobView], Any]] = {
    "LS209 bootstrap": lambda view: [row["line"] for row in NcclBootstrapError._bootstrap(view)],
    "LS209 invalid usage": lambda view: [row["line"] for row in NcclBootstrapError._invalid_usage(view)],
    "LS209": lambda view: [f.to_json() for f in NcclBootstrapError().detect(view)],
    "LS402": lambda view: [f.to_json() for f in SocketError().detect(view)],
}


@pytest.mark.parametrize("what", PICKS)
def test_the_rows_picked_in_python_are_those_polars_picks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         what: str) -> None:
    views = [_view(tmp_path / "ascii", LINES), _view(tmp_path / "not-ascii", LINES + NOT_ASCII),
             *(view for _, view in corpus_views())]
    _both_ways(monkeypatch, PICKS[what], views)


def test_python_picks_only_plain_ascii_rows_and_as_many_as_the_limit(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    # The condition given to polars picks nothing: whatever is picked, Python picked it.
    ascii_view, other = _view(tmp_path / "ascii", LINES), _view(tmp_path / "not-ascii", LINES + NOT_ASCII)
    kinds = (Event.NCCL_WARN, Event.NCCL_PLUGIN, Event.KNOWN_MESSAGE)

    def picked(view: JobView) -> list[int]:
        return [row["line"] for row in fresh(view).rows_where(kinds, pl.col("line") < 0, lambda row: True)]

    assert picked(ascii_view) == [2, 3, 4, 5, 7, 14]  # line 6 is a socket error, its own kind
    assert picked(other) == []
    monkeypatch.setattr(base, "WHERE_IN_PYTHON_UP_TO", 5)
    assert picked(ascii_view) == []
    monkeypatch.setattr(base, "WHERE_IN_PYTHON_UP_TO", 6)
    assert picked(ascii_view) == [2, 3, 4, 5, 7, 14]
    # and the synthetic lines hold what the conditions tell apart
    assert [row["line"] for row in NcclBootstrapError._bootstrap(fresh(ascii_view))] == [3, 4]
    assert [row["line"] for row in NcclBootstrapError._invalid_usage(fresh(ascii_view))] == [8, 9]
