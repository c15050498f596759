"""The lab's recapture rule without a lab (fast; part of the default test run).

A capture that does not show its scenario as set up is taken again, at most `lab.RECAPTURES` times,
and each recapture is reported; what torch or SLURM printed in reaction never makes a capture invalid.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lab  # noqa: E402

FAULT = {  # the injected fault's own line, as train.py prints it under torchrun --tee
    "segfault": "[node02:1]:2026-12-03 13:01:40,123 ERROR [node02 rank 3/4 local 1] injecting failure: "
                "reading address 0 (pid 4242) at step 4\n",
    "raise": "[node02:1]:2026-12-03 13:01:40,123 ERROR [node02 rank 3/4 local 1] injecting failure: "
             "raising RuntimeError at step 4\n",
}


def write_capture(dest: Path, scenario: str, job_id: int, node02: str | None, state: str = "COMPLETED",
                  note: str | None = None) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    meta = {"scenario": scenario, "job_id": job_id, "job_name": scenario, "job_state": state,
            "nodes": ["node01", "node02"], "lab_note": note, "wall_seconds": 1.0, "exit_code": "0:0"}
    (dest / "meta.json").write_text(json.dumps(meta))
    (dest / f"{scenario}-{job_id}-node01.out").write_text("START TIME: now\nsrun exit code: 1\n")
    if node02 is not None:
        (dest / f"{scenario}-{job_id}-node02.out").write_text(node02)


def test_a_capture_with_the_fault_line_shows_the_scenario(tmp_path: Path) -> None:
    # however torch reacted: here it printed nothing else at all (no exit code line, no summary)
    write_capture(tmp_path, "segfault", 7, FAULT["segfault"])
    assert lab.capture_problem("segfault", tmp_path) is None


def test_a_capture_without_the_fault_line_does_not(tmp_path: Path) -> None:
    write_capture(tmp_path, "segfault", 7, "[node02:1]:Fatal Python error: Segmentation fault\n")
    problem = lab.capture_problem("segfault", tmp_path)
    assert problem is not None and "node02" in problem and "injecting failure" in problem


def test_the_fault_line_of_another_rank_does_not_count(tmp_path: Path) -> None:
    write_capture(tmp_path, "raise", 7, FAULT["raise"].replace("rank 3/4 local 1", "rank 2/4 local 0"))
    assert lab.capture_problem("raise", tmp_path) is not None


def test_a_job_that_never_started_does_not(tmp_path: Path) -> None:
    write_capture(tmp_path, "raise", 7, None, state="PENDING", note="lab timeout after 180s; scancel sent")
    assert "lab timeout" in (lab.capture_problem("raise", tmp_path) or "")
    write_capture(tmp_path / "b", "raise", 8, None)
    assert "no output file for node02" in (lab.capture_problem("raise", tmp_path / "b") or "")


def test_a_time_limit_scenario_needs_the_time_limit(tmp_path: Path) -> None:
    write_capture(tmp_path, "timelimit", 7, "", state="FAILED")
    assert "TIMEOUT" in (lab.capture_problem("timelimit", tmp_path) or "")
    write_capture(tmp_path / "b", "timelimit", 8, "", state="TIMEOUT")
    assert lab.capture_problem("timelimit", tmp_path / "b") is None


class FakeLab:
    """Stands in for SlurmLab: run_scenarios only enters it, reads its dir, and copies its logs."""

    dir: Path = Path()
    network = "netns"

    def __init__(self, **kwargs: object) -> None:
        (FakeLab.dir / "log").mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> FakeLab:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None


@pytest.fixture
def fake_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """A lab whose raise captures lack the fault line for the first N jobs (N = the list's first item)."""
    FakeLab.dir = tmp_path / "labdir"
    jobs: list[int] = [0]

    def capture(the_lab: object, name: str, dest: Path) -> dict[str, object]:
        jobs.append(len(jobs))
        job_id = jobs[-1]
        valid = job_id > jobs[0]
        write_capture(dest, name, job_id, FAULT["raise"] if valid else "[node02:1]:Traceback\n")
        return dict(json.loads((dest / "meta.json").read_text()))

    monkeypatch.setattr(lab, "SlurmLab", FakeLab)
    monkeypatch.setattr(lab, "capture", capture)
    yield jobs


@pytest.mark.parametrize("invalid", [0, 1, 2])
def test_recaptured_until_the_scenario_shows(fake_lab: list[int], tmp_path: Path, invalid: int) -> None:
    fake_lab[0] = invalid
    said: list[str] = []
    out = tmp_path / "out"
    meta = lab.run_scenarios(["raise"], out, verbose=False, on_recapture=said.append)["raise"]
    assert meta["capture_problem"] is None and meta["capture_attempt"] == invalid + 1
    assert meta["job_id"] == invalid + 1
    assert len(said) == invalid
    assert all(s.startswith(f"recapture {i + 1}/2 of raise: job {i + 1} ") for i, s in enumerate(said))
    assert [e["job_id"] for e in json.loads((out / lab.RECAPTURE_LOG).read_text())] == list(range(1, invalid + 1))
    assert sorted(p.name for p in (out / "_invalid").glob("*")) == [f"raise-{i}" for i in range(1, invalid + 1)]


def test_at_most_two_recaptures(fake_lab: list[int], tmp_path: Path) -> None:
    fake_lab[0] = 5
    said: list[str] = []
    meta = lab.run_scenarios(["raise"], tmp_path / "out", verbose=False, on_recapture=said.append)["raise"]
    assert len(said) == lab.RECAPTURES == 2
    assert meta["capture_attempt"] == 3 and meta["job_id"] == 3
    assert "injecting failure" in str(meta["capture_problem"])  # left to the test to fail on
