"""`logscope analyze JOBID` on the live lab: logscope asks the lab's sacct/scontrol for the job, expands its
StdOut pattern (`<workdir>/<name>-<jobid>-%N.out`) to the per-node files, and reaches the verdict of what
the job did, naming the right node; `--save DIR` gathers a folder that `logscope analyze DIR` reads to
the same verdict, away from the cluster.

The lab runs once for the whole suite (conftest.py, `lab_run`) and stays up while these tests ask it;
they skip, with the reason, where the lab ran without accounting or the captures were reused
(LAB_CAPTURES: no live lab to ask).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lab  # noqa: E402
from test_slurm_lab import CRASH_OF_RANK_3, Expected, verdict_problem  # noqa: E402

pytestmark = pytest.mark.integration

LOGSCOPE = Path(sys.executable).parent / "logscope"

# What the job did, as logscope must conclude it with SLURM's record beside the logs.
EXPECTED: dict[str, Expected] = {
    "timelimit": Expected("scheduler", frozenset({"LS701"})),
    "scancel": Expected("scheduler", frozenset({"LS703"})),
    "rank-exit": CRASH_OF_RANK_3,  # the logs' root cause stays first: FAILED is its consequence
    "node-lost": Expected("hardware", frozenset({"LS604", "LS605"}), "node02"),  # NODE_FAIL, node02 lost
}


def live_job(lab_run: lab.LabRun, scenario: str) -> tuple[lab.SlurmLab, dict[str, Any]]:
    """The live lab and the scenario's meta.json; skips when there is no live lab with accounting."""
    if lab_run.live is None:
        pytest.skip("no live lab: the captures were reused (LAB_CAPTURES)")
    if not lab_run.live.accounting:
        pytest.skip("the lab ran without accounting: missing " + ", ".join(lab.accounting_missing()))
    capture = lab_run.out / scenario
    if lab.capture_problem(scenario, capture) is not None:
        pytest.skip("the capture does not show the scenario: see test_capture_shows_the_scenario")
    meta: dict[str, Any] = json.loads((capture / "meta.json").read_text())
    return lab_run.live, meta


def logscope(live: lab.SlurmLab, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """logscope's command line, run as a user of the lab's cluster would (its SLURM_CONF, sacct on PATH)."""
    return subprocess.run([str(LOGSCOPE), *args], capture_output=True, text=True, env=live.env(), cwd=cwd,
                          timeout=300, check=False)


def said(result: subprocess.CompletedProcess[str]) -> tuple[dict[str, Any], str]:
    assert result.returncode in (0, 1, 3), f"exit {result.returncode}: {result.stderr}"
    data: dict[str, Any] = json.loads(result.stdout)
    verdict = data["verdict"]
    culprit = verdict["root_cause"] or {}
    return data, (f"category={verdict['category']} finding={verdict['finding']} host={culprit.get('host')} "
                  f"rank={culprit.get('rank')} ({verdict['summary']})")


def test_every_accounted_scenario_has_an_expected_verdict() -> None:
    assert set(EXPECTED) == set(lab.ACCOUNTING_SCENARIOS)


@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_analyze_jobid_on_the_live_lab(lab_run: lab.LabRun, scenario: str, tmp_path: Path) -> None:
    live, meta = live_job(lab_run, scenario)
    job_id = str(meta["job_id"])
    result = logscope(live, tmp_path, "analyze", job_id, "--format", "json")
    data, verdict = said(result)
    # the StdOut pattern was expanded to the job's own per-node files, in its working directory
    workdir = live.dir / "jobs" / scenario
    wanted = {str(workdir / f"{meta['job_name']}-{job_id}-{node}.out") for node in meta["nodes"]}
    assert wanted <= set(data["job"]["files"]), data["job"]["files"]
    assert data["accounting"]["job_id"] == job_id, data["accounting"]
    problem = verdict_problem(data["verdict"], EXPECTED[scenario])
    assert problem is None, f"{problem}: logscope analyze {job_id} said {verdict}; expected {EXPECTED[scenario]}"


@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_saved_folder_reads_to_the_same_verdict(lab_run: lab.LabRun, scenario: str, tmp_path: Path) -> None:
    live, meta = live_job(lab_run, scenario)
    job_id = str(meta["job_id"])
    saved = tmp_path / f"ticket-{job_id}"
    on_cluster = logscope(live, tmp_path, "analyze", job_id, "--format", "json", "--save", str(saved))
    first, first_said = said(on_cluster)
    names = {p.name for p in saved.iterdir()}
    assert {f"{meta['job_name']}-{job_id}-{node}.out" for node in meta["nodes"]} <= names, names
    # away from the cluster: no sacct, no scontrol, no SLURM_CONF; only the folder
    away = subprocess.run([str(LOGSCOPE), "analyze", str(saved), "--format", "json"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300, check=False,
                          env={"PATH": str(tmp_path / "no-slurm-here"), "HOME": str(tmp_path), "LANG": "C.UTF-8"})
    second, second_said = said(away)
    assert second["accounting"] is not None and second["accounting"]["job_id"] == job_id
    same = ("category", "finding")
    assert {k: second["verdict"][k] for k in same} == {k: first["verdict"][k] for k in same}, \
        f"on the cluster: {first_said}; from {saved}: {second_said}"
    assert (second["verdict"]["root_cause"] or {}).get("host") == (first["verdict"]["root_cause"] or {}).get("host")
    assert (second["verdict"]["root_cause"] or {}).get("rank") == (first["verdict"]["root_cause"] or {}).get("rank")
