"""``logscope analyze JOBID`` and saved SLURM records: the command line, its errors, its verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accounting_support import job_folder, utc  # noqa: F401 - the utc fixture

from logscope.cli import main

NODE_FAIL_LINES = r"Node failure on|DUE TO NODE FAILURE"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_without_sacct_or_scontrol_on_path_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, err = run(capsys, "analyze", "12345")
    assert code == 2
    assert out == ""
    assert err.startswith("Error: neither sacct nor scontrol is on PATH") and err.count("\n") == 1


@pytest.mark.usefixtures("utc")
def test_silent_node_fail_is_hardware_naming_the_node(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # The logs alone (srun's "Node failure" lines removed) blame the IB link between the two nodes.
    logs = job_folder(tmp_path / "logs", "node-failure", drop=NODE_FAIL_LINES)
    code, out, _ = run(capsys, "analyze", str(logs), "--format", "json")
    assert json.loads(out)["verdict"]["category"] == "network"
    # SLURM's record says gpu-node02 failed.
    job = job_folder(tmp_path / "job", "node-failure", drop=NODE_FAIL_LINES,
                     record={"sacct.json": "sacct-24.11-node-fail.json"})
    code, out, err = run(capsys, "analyze", str(job), "--format", "json")
    assert code == 1, err
    data = json.loads(out)
    assert data["verdict"]["category"] == "hardware" and data["verdict"]["finding"] == "LS605"
    assert data["verdict"]["root_cause"]["node"] == "gpu-node02"
    assert data["accounting"]["state"] == "NODE_FAIL" and data["accounting"]["failed_node"] == "gpu-node02"
    rows = [f for f in data["findings"] if f["code"] == "LS401"]
    assert rows and rows[0]["role"] == "consequence"
