"""LS103 progress-stall at its edges, on small built logs: the silence after the last step is
measured to the last line the job wrote with its own time, a stall is a silence of at least the
threshold (ten steps, at least 15 minutes), and a failure after the last step explains it."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from logscope.analysis import analyze
from logscope.detectors.progress_stall import MIN_STALL

START = datetime(2026, 11, 7, 2, 0, 0)
STEP = timedelta(seconds=60)  # ten steps are 10 minutes: the threshold is MIN_STALL


def job(tmp_path: Path, steps: int, after: list[str], pace: timedelta = STEP) -> list[Path]:
    """A node's log: torchrun's launch, ``steps`` progress lines ``pace`` apart (a minute) on two
    ranks, then the lines ``after`` (``{t+N}``: the last step's time plus N seconds, as each line
    spells times)."""
    last = START + pace * (steps - 1)
    lines = ["START TIME: Sat Nov  7 02:00:00 UTC 2026"]
    for n in range(steps):
        at = START + pace * n
        for rank in (0, 1):
            lines.append(f"[default{rank}]:{at:%Y-%m-%d %H:%M:%S},000 - INFO - step {n + 1} loss 2.5")
    for line in after:
        head, _, rest = line.partition("{t+")
        if rest:
            seconds, _, tail = rest.partition("}")
            at = last + timedelta(seconds=int(seconds))
            line = head + (at.strftime("%m%d %H:%M:%S.000000") if head == "E" else
                           at.strftime("%Y-%m-%d %H:%M:%S") if head == "[" else at.strftime("%Y-%m-%dT%H:%M:%S")) + tail
        lines.append(line)
    path = tmp_path / "train-8401-gpu01.out"
    path.write_text("\n".join(lines) + "\n")
    return [path]


def cancelled(seconds: int) -> str:
    return f"slurmstepd: error: *** JOB 8401 ON gpu01 CANCELLED AT {{t+{seconds}}} DUE TO TIME LIMIT ***"


def codes(paths: list[Path]) -> list[str]:
    return [finding.code for finding in analyze(paths).findings]


@pytest.mark.parametrize(("silence", "stalled"), [
    (int(MIN_STALL.total_seconds()), True),  # exactly the threshold: a stall
    (int(MIN_STALL.total_seconds()) - 1, False),  # a second short of it
    (3 * 3600, True),
])
def test_a_silence_of_the_threshold_is_a_stall(tmp_path: Path, silence: int, stalled: bool) -> None:
    assert ("LS103" in codes(job(tmp_path, 20, [cancelled(silence)]))) is stalled


def test_a_failure_after_the_last_step_explains_the_silence(tmp_path: Path) -> None:
    failure = ("E{t+600} 6100 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
               "local_rank: 0 (pid: 6101) of binary: /usr/bin/python")
    assert "LS103" not in codes(job(tmp_path, 20, [failure, cancelled(3 * 3600)]))


def test_the_silence_ends_at_the_last_line_with_its_own_time(tmp_path: Path) -> None:
    # srun's line has no time of its own: it says nothing of how long the job stayed alive
    untimed = "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."
    assert "LS103" not in codes(job(tmp_path, 20, [cancelled(60), untimed]))
    # nor is an untimed error below the last timed line a failure after the last step: the stall stands
    alive = "[{t+10800}] PULSE: train-8401 is running for 3:19:00 since 2026-11-07T02:00:00 on 'gpu' partition"
    srun_error = "srun: error: gpu01: task 0: Exited with exit code 1"
    assert "LS103" in codes(job(tmp_path, 20, [alive, srun_error]))
    # many progress lines (sorted by polars) and few (read in Python) end the same way
    assert "LS103" in codes(job(tmp_path, 40, [cancelled(3 * 3600)]))
    assert "LS103" in codes(job(tmp_path, 5, [cancelled(3 * 3600)]))


def test_a_job_silent_for_most_of_its_run_until_the_time_limit_hung(tmp_path: Path) -> None:
    # Five steps two seconds apart, then 50 s of silence until a one-minute limit: far below
    # MIN_STALL, but the job spent most of its allocation without a step: a hang naming nobody.
    result = analyze(job(tmp_path, 5, [cancelled(50)], pace=timedelta(seconds=2)))
    assert result.verdict.category.value == "hang" and result.verdict.finding == "LS103"
    assert result.verdict.root_cause is None
    assert "until its time limit" in next(f.title for f in result.findings if f.code == "LS103")


@pytest.mark.parametrize("cancel_after", [
    timedelta(seconds=1),  # cut while it ran: it ran out of time
    timedelta(seconds=15),  # ten steps of silence, but a small share of a run of 3 min
])
def test_a_job_the_time_limit_cut_while_it_ran_ran_out_of_time(tmp_path: Path, cancel_after: timedelta) -> None:
    result = analyze(job(tmp_path, 100, [cancelled(int(cancel_after.total_seconds()))], pace=timedelta(seconds=2)))
    assert "LS103" not in [f.code for f in result.findings]
    assert result.verdict.finding == "LS701"


def test_the_stall_quotes_the_last_line_of_work_before_the_silence(tmp_path: Path) -> None:
    # Megatron's checkpoint save that never said 'successfully saved': where the job stopped
    saving = "[default0]:{t+5} - INFO - saving checkpoint at iteration      20 to /lustre/ckpt/run"
    alive = "[{t+7200}] PULSE: train-8401 is running for 2:19:00 since 2026-11-07T02:00:00 on 'gpu' partition"
    stall = next(f for f in analyze(job(tmp_path, 20, [saving, alive, cancelled(3 * 3600)])).findings
                 if f.code == "LS103")
    assert "saving checkpoint at iteration      20" in stall.explanation
    assert any("saving checkpoint" in e.text for e in stall.evidence)
    # with the save reported done, the done line is the last one
    saved = "[default0]:{t+8} - INFO -   successfully saved checkpoint from iteration      20 to /lustre/ckpt/run"
    stall = next(f for f in analyze(job(tmp_path, 20, [saving, saved, alive, cancelled(3 * 3600)])).findings
                 if f.code == "LS103")
    assert "successfully saved checkpoint" in stall.explanation
