"""`logscope scan --user/--since/--state/--array` on the live lab's slurmdbd (issue 39): the jobs come
from sacct, each job's logs from where its record says its output went, and each row holds the job's
state and efficiency beside the verdict; an array job is scanned task by task.

Run as a user of the lab's cluster would (its SLURM_CONF, sacct on PATH, another working directory),
while the lab that ran the scenarios is still up (conftest.py, `lab_run`). The tests skip, with the
reason, where the lab ran without accounting or the captures were reused (no live lab to ask).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lab  # noqa: E402
from test_analyze_jobid_lab import EXPECTED, LOGSCOPE, live_job  # noqa: E402
from test_slurm_lab import verdict_problem  # noqa: E402

pytestmark = pytest.mark.integration

ENDED = ("TIMEOUT", "FAILED", "CANCELLED", "NODE_FAIL")


def scan_json(live: lab.SlurmLab, cwd: Path, *args: str) -> dict[str, Any]:
    result = subprocess.run([str(LOGSCOPE), "scan", *args, "-j", "2", "-o", "-", "--format", "json"],
                            capture_output=True, text=True, env=live.env(), cwd=cwd, timeout=300, check=False)
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_scan_user_since_state_on_the_live_lab(lab_run: lab.LabRun, scenario: str, tmp_path: Path) -> None:
    """The accounted scenarios' jobs are listed by user, time and state, found with both node files,
    analysed to the verdict `analyze JOBID` reaches, with their state and efficiency."""
    live, meta = live_job(lab_run, scenario)
    data = scan_json(live, tmp_path, "--user", "root", "--since", "1d", "--state", ",".join(ENDED))
    rows = {row["job_id"]: row for row in data["jobs"]}
    assert all(row["state"] in ENDED for row in rows.values()), {k: r["state"] for k, r in rows.items()}
    job_id = str(meta["job_id"])
    assert job_id in rows, sorted(rows)
    row = rows[job_id]
    assert (row["state"], row["user"], row["files"]) == (lab.ACCOUNTING_SCENARIOS[scenario], "root", 2), row
    verdict = {"category": row["category"], "finding": row["finding"],
               "root_cause": {"host": row["root_host"], "node": row["root_node"], "rank": row["root_rank"]}
               if row["root_host"] or row["root_node"] else None}
    problem = verdict_problem(verdict, EXPECTED[scenario])
    assert problem is None, f"{problem}: scan said {verdict}; expected {EXPECTED[scenario]}"
    # what the job used: 2 CPUs (cpus-per-task=1 on 2 nodes), some of them, some of its memory
    assert row["alloc_cpus"] == 2 and 0 < row["cpu_efficiency"] <= 1, row
    assert row["elapsed_s"] > 0 and row["mem_requested"] > 0, row
    # The memory peak is what jobacct_gather sampled (every JobAcctGatherFrequency seconds): a step that
    # was killed before its first sample has none in sacct, and scan then says unknown, never 0.
    assert row["mem_peak"] is None or row["mem_peak"] > 0, row
    assert (row["mem_used"] is None) == (row["mem_peak"] is None), row
    if scenario == "timelimit":  # ran until its 1-minute limit
        assert row["time_limit_s"] == 60 and row["time_used"] >= 1, row


def test_scan_state_keeps_only_that_state(lab_run: lab.LabRun, tmp_path: Path) -> None:
    live, meta = live_job(lab_run, "timelimit")
    data = scan_json(live, tmp_path, "--user", "root", "--since", "1d", "--state", "TIMEOUT")
    assert str(meta["job_id"]) in {row["job_id"] for row in data["jobs"]}
    assert {row["state"] for row in data["jobs"]} == {"TIMEOUT"}


ARRAY_SCRIPT = """#!/bin/bash
#SBATCH --job-name=scan-array
#SBATCH --array=0-2
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
# No --output: each task writes SLURM's default slurm-%A_%a.out. Task 1 fails.
echo "task $SLURM_ARRAY_TASK_ID of array $SLURM_ARRAY_JOB_ID on $(hostname -s)"
if [ "$SLURM_ARRAY_TASK_ID" = 1 ]; then
    echo "Traceback (most recent call last):"
    echo '  File "train.py", line 3, in <module>'
    echo "RuntimeError: task 1 failed on purpose"
    exit 3
fi
echo "done"
"""


def test_scan_array_scans_each_task(lab_run: lab.LabRun, tmp_path: Path) -> None:
    """An array job submitted to the lab: `scan --array ID` gives a row per task, each with its own
    default output file and its own state."""
    live, _ = live_job(lab_run, "timelimit")
    work = live.dir / "jobs" / "scan-array"
    work.mkdir(parents=True, exist_ok=True)
    (work / "scan-array.sbatch").write_text(ARRAY_SCRIPT)
    array_id = live.sbatch(work / "scan-array.sbatch", work)
    tasks = [f"{array_id}_{n}" for n in range(3)]
    deadline = time.monotonic() + 120
    states: dict[str, str] = {}
    while time.monotonic() < deadline:  # every task ended and recorded by slurmdbd
        listed = live.sacct("-n", "-P", "-X", "-j", str(array_id), "--format=JobID,State", check=False).stdout
        states = dict(line.split("|", 1) for line in listed.splitlines() if "|" in line)
        if all(states.get(t, "").split(" ")[0] in lab.TERMINAL_STATES for t in tasks):
            break
        time.sleep(1)
    assert all(states.get(t, "").split(" ")[0] in lab.TERMINAL_STATES for t in tasks), states
    data = scan_json(live, tmp_path, "--user", "root", "--array", str(array_id))
    rows = {row["job_id"]: row for row in data["jobs"]}
    assert sorted(rows) == tasks, sorted(rows)
    for row in rows.values():
        assert row["files"] == 1 and row["error"] is None, row
        assert row["location"] == str(work), row
    assert (rows[tasks[1]]["state"], rows[tasks[0]]["state"], rows[tasks[2]]["state"]) == (
        "FAILED", "COMPLETED", "COMPLETED")
    assert rows[tasks[1]]["category"] != "healthy" and rows[tasks[0]]["category"] != "no-logs"
