"""LS202's NCCL check (duplicate_rank._from_nccl): a small job's init lines read in Python say
"no clash" exactly where polars' queries find none."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_support import corpus_views, fresh

from logscope.detectors import duplicate_rank
from logscope.detectors.base import JobView
from logscope.detectors.duplicate_rank import DuplicateRank, _may_clash
from logscope.timeline import load_job

# NCCL's init line (init.cc), with the communicator's commId (2.19+) or without it (older).
WITH_ID = ("{host}:{pid}:{pid} [0] NCCL INFO ncclCommInitRankConfig comm 0x5581f4a{pid} rank {rank} nranks 2 "
           "cudaDev 0 nvmlDev 0 busId 18000 commId 0x4f2a1c5e9b3d7710 - Init COMPLETE")
WITHOUT_ID = ("{host}:{pid}:{pid} [0] NCCL INFO comm 0x5581f4a{pid} rank {rank} nranks 2 cudaDev 0 busId 18000 "
              "- Init COMPLETE")
# (host, pid, rank) of each process's init line
JOBS = {
    "rank 0 on two hosts": (WITH_ID, [("node01", 11, 0), ("node02", 21, 0)]),
    "rank 0 on two hosts, no commId": (WITHOUT_ID, [("node01", 11, 0), ("node02", 21, 0), ("node02", 22, 1)]),
    "two complete worlds, no commId": (WITHOUT_ID, [("node01", 11, 0), ("node01", 12, 1), ("node02", 21, 0),
                                                    ("node02", 22, 1)]),
    "one world": (WITH_ID, [("node01", 11, 0), ("node02", 21, 1)]),
}


def _view(folder: Path, line: str, processes: list[tuple[str, int, int]]) -> JobView:
    folder.mkdir()
    for host in sorted({host for host, _, _ in processes}):
        text = "".join(line.format(host=h, pid=pid, rank=rank) + "\n" for h, pid, rank in processes if h == host)
        (folder / f"train-7-{host}.out").write_text(text)
    job = load_job([folder])
    return JobView(job.timeline, tuple(job.nodes), tuple(f.display for f in job.files),
                   {f.display: f.info.node for f in job.files})


@pytest.mark.parametrize("case", JOBS)
def test_small_jobs_clashes_both_ways(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: str) -> None:
    view = _view(tmp_path / "job", *JOBS[case])
    answers = []
    for threshold in (duplicate_rank.CLASH_IN_PYTHON_UP_TO, -1):
        monkeypatch.setattr(duplicate_rank, "CLASH_IN_PYTHON_UP_TO", threshold)
        answers.append(DuplicateRank._from_nccl(fresh(view)))
    assert answers[0] == answers[1]
    assert answers[0][1] == ([0] if case.startswith("rank 0") else [])
    assert _may_clash(fresh(view)) == case.startswith("rank 0")


def test_a_clash_is_found_the_same_with_the_python_check_or_without(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = []
    for threshold in (duplicate_rank.CLASH_IN_PYTHON_UP_TO, -1):
        monkeypatch.setattr(duplicate_rank, "CLASH_IN_PYTHON_UP_TO", threshold)
        answers.append([DuplicateRank._from_nccl(fresh(view)) for _, view in corpus_views()])
    assert answers[0] == answers[1]
    # The check must say yes wherever polars finds a clash (synthetic clashes: below).
    maybe = [_may_clash(fresh(view)) for _, view in corpus_views()]
    assert all(may for may, (_, ranks, _) in zip(maybe, answers[1], strict=True) if ranks)
    assert maybe.count(False) > 100  # the fast path is taken


def test_separate_complete_worlds_are_no_clash() -> None:
    # Every rank of a world of N the same number of times, each world complete: LS203's split
    # world, not duplicate ranks (both ways must say so).
    views = {name: view for name, view in corpus_views()}
    split = [view for name, view in views.items() if "LS202-ok-split-world" in name]
    assert split
    assert not _may_clash(fresh(split[0]))
    assert DuplicateRank._from_nccl(fresh(split[0]))[1] == []
