"""The lab's accounting (slurmdbd on a private MariaDB, lab.py): what SLURM itself recorded of the
scenarios that end in a state of their own, as sacct printed it right after each job.

What is asserted is what SLURM must record for what each job did (its state, who cancelled it, the
exit code the batch script passed on, the script as submitted), never the shape of the rest of
sacct's output. The tests skip, with the reason, where the lab ran without accounting (mariadbd or
slurmdbd not installed: `lab.accounting_missing`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lab  # noqa: E402

pytestmark = pytest.mark.integration

ACCOUNTED = list(lab.ACCOUNTING_SCENARIOS)


def accounted_capture(lab_run: lab.LabRun, scenario: str) -> tuple[Path, dict[str, Any]]:
    """The scenario's capture and meta.json; skips when the lab had no accounting or the capture does
    not show the scenario (test_slurm_lab.py's test_capture_shows_the_scenario fails then)."""
    capture = lab_run.out / scenario
    meta: dict[str, Any] = json.loads((capture / "meta.json").read_text())
    if meta.get("accounting") is None:
        missing = lab.accounting_missing()
        why = (f"missing here: {', '.join(missing)}; apt-get install slurmdbd mariadb-server" if missing
               else "turned off")
        pytest.skip(f"the lab ran without accounting ({why})")
    if lab.capture_problem(scenario, capture) is not None:
        pytest.skip("the capture does not show the scenario: see test_capture_shows_the_scenario")
    return capture, meta


def sacct_rows(capture: Path) -> dict[str, dict[str, str]]:
    """`sacct -P` as saved by the lab: {JobID: {field: value}}."""
    header, *lines = (capture / "sacct-parsable2.txt").read_text().splitlines()
    names = header.split("|")
    rows = [dict(zip(names, line.split("|"), strict=True)) for line in lines if line]
    return {row["JobID"]: row for row in rows}


def test_every_accounted_scenario_is_a_scenario() -> None:
    assert set(ACCOUNTED) <= set(lab.SCENARIOS)
    for scenario, state in lab.ACCOUNTING_SCENARIOS.items():
        assert lab.SCENARIOS[scenario].job_state in (None, state), scenario


@pytest.mark.parametrize("scenario", ACCOUNTED)
def test_sacct_records_how_the_job_ended(lab_run: lab.LabRun, scenario: str) -> None:
    """The job's state in sacct is the one its scenario forces, and every step has ended."""
    capture, meta = accounted_capture(lab_run, scenario)
    rows = sacct_rows(capture)
    job_id = str(meta["job_id"])
    job = rows[job_id]
    expected = lab.ACCOUNTING_SCENARIOS[scenario]
    if expected == "CANCELLED":
        # sacct names who cancelled it: the uid that ran scancel (the lab's)
        assert job["State"] == f"CANCELLED by {meta['lab_action']['uid']}", job
    else:
        assert job["State"] == expected, job
    steps = {jid: row for jid, row in rows.items() if jid != job_id}
    assert f"{job_id}.batch" in steps and f"{job_id}.0" in steps, sorted(rows)
    for jid, row in steps.items():
        assert row["State"].split(" ")[0] in lab.TERMINAL_STATES, (jid, row["State"])
    # sacct --json says the same state (22.05: a string; 23.02 on: a list of flags)
    record = json.loads((capture / "sacct.json").read_text())["jobs"][0]
    current = record["state"]["current"]
    assert (current if isinstance(current, str) else current[0]) == expected, record["state"]


def test_a_failing_rank_fails_the_job_with_its_exit_code(lab_run: lab.LabRun) -> None:
    """rank-exit: rank 3 raises and its torchrun agent exits 1 (ChildFailedError). Step 0 records its
    tasks' highest exit status: FAILED 1:0. srun is the batch script's last command, so the job ends
    FAILED with srun's own exit status, the batch step's: 1, or 15 when srun's --kill-on-bad-exit
    SIGTERM reached node01's task before it exited by itself (both seen in the lab)."""
    capture, meta = accounted_capture(lab_run, "rank-exit")
    rows = sacct_rows(capture)
    job_id = str(meta["job_id"])
    job, batch, step = rows[job_id], rows[f"{job_id}.batch"], rows[f"{job_id}.0"]
    assert (step["State"], step["ExitCode"]) == ("FAILED", "1:0"), step
    assert (job["State"], batch["State"]) == ("FAILED", "FAILED"), (job, batch)
    assert job["ExitCode"] == batch["ExitCode"] != "0:0", (job, batch)


def test_a_time_limit_is_recorded_with_its_limit(lab_run: lab.LabRun) -> None:
    capture, meta = accounted_capture(lab_run, "timelimit")
    job = sacct_rows(capture)[str(meta["job_id"])]
    assert (job["State"], job["Timelimit"]) == ("TIMEOUT", "00:01:00"), job


@pytest.mark.parametrize("scenario", ACCOUNTED)
def test_sacct_keeps_the_batch_script(lab_run: lab.LabRun, scenario: str) -> None:
    """AccountingStoreFlags=job_script: `sacct -B` prints the script as it was submitted."""
    capture, meta = accounted_capture(lab_run, scenario)
    header, dashes, script = (capture / "sacct-batch-script.txt").read_text().split("\n", 2)
    assert header == f"Batch Script for {meta['job_id']}" and set(dashes) == {"-"}, (header, dashes)
    submitted = (lab.JOBS_DIR / lab.SCENARIOS[scenario].script).read_text()
    assert script.rstrip("\n") == submitted.rstrip("\n")
