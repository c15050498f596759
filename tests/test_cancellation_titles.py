"""What a scheduler ending names: the job when slurmstepd says the job ended, else the step by its id."""

from __future__ import annotations

from pathlib import Path

from logscope.analysis import analyze

STEP = "slurmstepd: error: *** STEP 4.0 ON node01 CANCELLED AT 2026-12-03T15:45:16 DUE TO TIME LIMIT ***\n"
JOB = "slurmstepd: error: *** JOB 4 ON node01 CANCELLED AT 2026-12-03T15:45:16 DUE TO TIME LIMIT ***\n"
START = "[2026-12-03 15:44:10] step 1/100 loss 2.3\n"


def _title(tmp_path: Path, text: str) -> str:
    log = tmp_path / "train-4-node01.out"
    log.write_text(START + text)
    result = analyze([log])
    finding = next(f for f in result.findings if f.code == "LS701")
    return finding.title


def test_the_job_is_named_when_its_own_line_follows_the_steps(tmp_path: Path) -> None:
    # slurmstepd prints the step's line first: the title named "Step 4" (the job's id) before
    assert _title(tmp_path, STEP + JOB).startswith("Job 4 reached its time limit")


def test_a_step_alone_is_named_with_its_step_id(tmp_path: Path) -> None:
    assert _title(tmp_path, STEP).startswith("Step 4.0 reached its time limit")
