"""LS105 fail-slow: where a slowdown starts, that jitter is none, that it never changes a verdict
and never names a rank; the step series and the change points it reads."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from reading_support import jobsim

from logscope.analysis import analyze
from logscope.detectors.base import JobView
from logscope.detectors.fail_slow import slowdowns
from logscope.detectors.step_times import change_points, step_series
from logscope.model import Role, Severity
from logscope.timeline import load_job

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


@pytest.fixture(scope="module")
def sim() -> Any:
    return jobsim()


def _write(sim: Any, folder: Path, **spec: Any) -> Path:
    sim.write_job(sim.JobSpec(**spec), folder)
    return folder


def _start(title: str) -> int:
    found = re.search(r"from step (\d+)", title)
    assert found is not None, title
    return int(found.group(1))


@pytest.mark.parametrize(("factor", "step", "steps", "seed"), [
    (1.3, 500, 1000, 1), (1.3, 205, 600, 2), (1.5, 333, 1000, 3), (2.0, 120, 300, 4), (1.35, 777, 1200, 5),
    (1.3, 1500, 3000, 6), (1.6, 95, 400, 7),
])
def test_a_slowdown_is_found_where_it_starts(sim: Any, tmp_path: Path, factor: float, step: int, steps: int,
                                             seed: int) -> None:
    """1.3x or more from step N on: found, the start within 5% of N."""
    result = analyze([_write(sim, tmp_path, steps=steps, seed=seed, slowdown=factor, slowdown_step=step)])
    found = [f for f in result.findings if f.code == "LS105"]
    assert len(found) == 1, [f.title for f in found]
    assert abs(_start(found[0].title) - step) <= 0.05 * step
    assert f"{factor:.2f}x" in found[0].title or abs(float(found[0].title.split("x")[0].split()[-1]) - factor) < 0.1


@pytest.mark.parametrize("seed", range(8))
def test_ordinary_jitter_is_no_slowdown(sim: Any, tmp_path: Path, seed: int) -> None:
    result = analyze([_write(sim, tmp_path, steps=1500, seed=seed, job_id=4300000 + seed)])
    assert not [f for f in result.findings if f.code == "LS105"]


@pytest.mark.parametrize("progress", ["megatron", "logging"])
def test_the_finding_names_no_rank_and_is_context(sim: Any, tmp_path: Path, progress: str) -> None:
    result = analyze([_write(sim, tmp_path, steps=400, slowdown=1.5, slowdown_step=200, slowdown_event=True,
                             progress_style=progress)])
    finding = next(f for f in result.findings if f.code == "LS105")
    assert finding.role == Role.CONTEXT and finding.severity == Severity.WARNING
    assert finding.ranks == () and finding.hosts == () and finding.culprit is None
    # the IB port error near its start is named, not cited: a cited error line counts as explained
    assert "port error" in finding.explanation and "port error" in finding.title
    assert not any("port error" in e.text for e in finding.evidence)


def _verdicts(paths: list[Path]) -> tuple[Any, Any]:
    with_it, without = analyze(paths), analyze(paths, ignore=["LS105"])
    return with_it, without


@pytest.mark.parametrize("scenario", ["crash-cascade", "oom", "ib-network-error", "gpu-xid", "hang-quiet-rank",
                                      "preempted", "cancelled-by-user", "silent-hang"])
def test_a_slowdown_never_changes_the_verdict_of_a_failed_run(sim: Any, tmp_path: Path, scenario: str) -> None:
    steps = 3400 if scenario == "silent-hang" else 400
    slow_from = 1600 if scenario == "silent-hang" else 150
    result, without = _verdicts([_write(sim, tmp_path, scenario=scenario, steps=steps, fail_step=steps,
                                        slowdown=1.5, slowdown_step=slow_from, slowdown_event=True)])
    assert [f.code for f in result.findings if f.code == "LS105"], scenario
    assert result.verdict == without.verdict
    assert result.failed
    assert result.findings[0].code != "LS105"


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
def test_the_sample_jobs_keep_their_verdicts(sample: str) -> None:
    result, without = _verdicts([SAMPLES / sample])
    assert result.verdict == without.verdict


def test_steps_that_restart_are_another_attempt(sim: Any, tmp_path: Path) -> None:
    """A file holding two runs of the loop (the second slower from its start): no slowdown inside
    either, and no step is compared across them."""
    first = _write(sim, tmp_path / "a", steps=200, seed=1)
    second = _write(sim, tmp_path / "b", steps=200, seed=2, iter_time_s=1.4)
    merged = tmp_path / "merged"
    merged.mkdir()
    for name in sorted(p.name for p in first.iterdir()):
        (merged / name).write_text((first / name).read_text() + (second / name).read_text())
    job = load_job([merged])
    view = JobView(job.timeline, tuple(job.nodes))
    series = step_series(view)
    assert sorted(series["attempt"].unique().to_list()) == [0, 1]
    assert slowdowns(view) == []


def test_step_times_come_from_the_spacing_of_timed_lines(tmp_path: Path) -> None:
    """Progress lines without a printed step time: the time between two timed lines over the steps
    between them."""
    lines = []
    clock = 0.0
    for step in range(10, 410, 10):
        clock += 10 * (1.0 if step <= 200 else 1.5)
        minutes, seconds = divmod(clock, 60)
        lines.append(f"2026-11-03 10:{int(minutes):02d}:{seconds:06.3f} - INFO - step {step} loss 2.5")
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines).replace(".", ",", 0) + "\n")
    job = load_job([log])
    view = JobView(job.timeline, tuple(job.nodes))
    series = step_series(view)
    assert series["printed"].to_list() == [False] * len(lines)
    assert series["step_time_s"][1] == pytest.approx(1.0) and series["step_time_s"][-1] == pytest.approx(1.5)
    found = slowdowns(view)
    assert len(found) == 1 and found[0].start_step == 201 and found[0].ratio == pytest.approx(1.5)


def test_change_points_split_where_the_level_moves() -> None:
    values = [0.0] * 10 + [0.3] * 10 + [0.0] * 10
    assert change_points(values, 3, 0.01) == [10, 20]
    assert change_points([0.0, 0.01] * 15, 3, 0.01) == []
    assert change_points([0.0] * 5, 3, 0.0) == []  # too short to hold two phases


def test_a_slowdown_is_a_dataclass_of_the_series_rows(sim: Any, tmp_path: Path) -> None:
    job = load_job([_write(sim, tmp_path, steps=400, seed=3, slowdown=1.5, slowdown_step=200)])
    found = slowdowns(JobView(job.timeline, tuple(job.nodes)))
    assert len(found) == 1
    slow = found[0]
    assert slow.last_fast["step"] == 200 and slow.first_slow["step"] == 210 and slow.until_step is None
    assert dataclasses.replace(slow, after_s=slow.before_s).ratio == 1.0
