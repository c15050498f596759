"""The job-wide communicator ids LS102 and LS202 join on (collective_mismatch.communicator_ids):
the same whether a small job's NCCL lines are read one by one or worked out by polars."""

from __future__ import annotations

import pytest
from corpus_support import corpus_views, fresh
from polars.testing import assert_frame_equal

from logscope.detectors import collective_mismatch
from logscope.detectors.collective_mismatch import communicator_ids


def test_communicator_ids_are_the_same_read_in_python_or_worked_out_by_polars(
        monkeypatch: pytest.MonkeyPatch) -> None:
    answers = []
    for threshold in (collective_mismatch.IDS_IN_PYTHON_UP_TO, -1):
        monkeypatch.setattr(collective_mismatch, "IDS_IN_PYTHON_UP_TO", threshold)
        answers.append([communicator_ids(fresh(view)) for _, view in corpus_views()])
    ids = [frame for frame in answers[0] if frame.height]
    # Jobs with NCCL's commId and without it (the k-th communicator of a process and its size).
    assert any(frame["communicator"].str.contains("#").any() for frame in ids)
    assert any(not frame["communicator"].str.contains("#").any() for frame in ids)
    for python, polars in zip(*answers, strict=True):
        assert_frame_equal(python, polars)
