"""SLURM's record beside the logs changes the verdict only where the logs cannot tell, and the
logs win where they name a failure: each case is a sample job, lines of its logs removed to make
it silent where needed, with a record saved beside it as a user would (README, "Away from the
cluster")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accounting_support import job_folder, utc  # noqa: F401 - the utc fixture

from logscope.cli import main

CLEAN_END_LINES = r"worker group successfully finished|WorkerState.SUCCEEDED|iteration +\d+/|train metrics"
OOM_LINES = r"oom_kill|oom-kill|Killed process|Out Of Memory"

# name: (sample, log lines removed, saved record, (category, finding, root node), findings' roles)
CASES = {
    # the record says every step FAILED after rank 11 crashed: a consequence, the crash stays the root
    "crash-with-failed-record": ("crash-cascade", None, {"sacct.json": "sacct-22.05-crash-cascade.json"},
                                 ("crash", "LS301", "gpu-node02"), {"LS305": "consequence"}),
    # a script that swallowed the exit codes (srun bash -c 'torchrun ...; exit 0') ends COMPLETED 0:0
    # everywhere: the logs' crash wins
    "crash-with-completed-record": ("crash-cascade", None, {"sacct.txt": "sacct-P-crash-swallowed.txt"},
                                    ("crash", "LS301", "gpu-node02"), {}),
    "healthy-with-completed-record": ("healthy", None, {"sacct.json": "sacct-22.05-completed.json"},
                                      ("healthy", None, None), {}),
    # the logs stop without a clean end: COMPLETED 0:0 of the job and every step is one
    "cut-short-with-completed-record": ("healthy", CLEAN_END_LINES,
                                        {"scontrol.json": "scontrol-24.11-completed.json"},
                                        ("healthy", None, None), {}),
    "cut-short-without-record": ("healthy", CLEAN_END_LINES, {}, ("incomplete", None, None), {}),
    # slurmstepd's line says it: it stays the root, the record agrees
    "timeout-with-line": ("time-limit", None, {"sacct.txt": "sacct-P-timeout.txt"},
                          ("scheduler", "LS701", None), {"LS705": "consequence"}),
    "timeout-without-line": ("time-limit", "DUE TO TIME LIMIT", {"sacct.txt": "sacct-P-timeout.txt"},
                             ("scheduler", "LS705", None), {}),
    "cancelled-with-line": ("cancelled-by-user", None, {"sacct.txt": "sacct-P-cancelled.txt"},
                            ("scheduler", "LS703", None), {"LS705": "consequence"}),
    "cancelled-without-line": ("cancelled-by-user", "CANCELLED AT",
                               {"sacct.txt": "sacct-P-cancelled.txt",
                                "scontrol.txt": "scontrol-show-job-cancelled.txt"},
                               ("scheduler", "LS705", None), {}),
    # the OOM killer's lines lost: the logs alone say a SIGKILL crash; the record says OUT_OF_MEMORY
    "oom-without-lines": ("host-oom", OOM_LINES, {}, ("crash", "LS301", "gpu-node02"), {}),
    "oom-with-record": ("host-oom", OOM_LINES, {"sacct.txt": "sacct-P-oom.txt"},
                        ("oom", "LS503", "gpu-node02"), {"LS301": "consequence"}),
}


def analyse(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    code = main(["analyze", str(folder), "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1, 3), err
    return code, json.loads(out)


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("case", list(CASES))
def test_verdict_with_the_record(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample, drop, record, (category, finding, node), roles = CASES[case]
    code, data = analyse(job_folder(tmp_path / case, sample, drop=drop, record=record), capsys)
    verdict = data["verdict"]
    assert isinstance(verdict, dict)
    root = verdict["root_cause"] or {}
    assert (verdict["category"], verdict["finding"], root.get("node")) == (category, finding, node), verdict["summary"]
    assert code == {"healthy": 0, "incomplete": 3}.get(category, 1)
    findings = data["findings"]
    assert isinstance(findings, list)
    for code_name, role in roles.items():
        assert [f["role"] for f in findings if f["code"] == code_name] == [role], code_name
    assert (data["accounting"] is not None) == bool(record)


@pytest.mark.usefixtures("utc")
def test_cancelled_by_names_the_uid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = job_folder(tmp_path / "job", "cancelled-by-user", drop="CANCELLED AT",
                        record={"sacct.txt": "sacct-P-cancelled.txt"})
    _, data = analyse(folder, capsys)
    verdict = data["verdict"]
    assert isinstance(verdict, dict)
    assert "by uid 1000" in str(verdict["summary"])
    accounting = data["accounting"]
    assert isinstance(accounting, dict)
    assert accounting["cancelled_by"] == "1000"


@pytest.mark.usefixtures("utc")
def test_lint_finding_shown_beside_the_verdict_it_explains(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           plain_console: object) -> None:
    folder = job_folder(tmp_path / "job", "rank0-misresolution",
                        record={"sacct.txt": "sacct-P-procid.txt", "sacct-B.txt": "sacct-B-procid.txt"})
    _, data = analyse(folder, capsys)
    verdict = data["verdict"]
    assert isinstance(verdict, dict) and verdict["finding"] == "LS201"
    lint = data["script_lint"]
    assert isinstance(lint, list)
    assert [p["code"] for p in lint if p["explains_verdict"]] == ["LL001"]
    assert main(["analyze", str(folder), "--color", "never"]) == 1
    text = capsys.readouterr().out
    assert "explains the verdict:" in text
    explained = text.split("explains the verdict:", 1)[1]
    assert explained.index("LL001") < explained.index("LL00" + ("3" if "LL003" in explained else "5"))


@pytest.mark.usefixtures("utc")
def test_report_has_the_record_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = job_folder(tmp_path / "job", "time-limit", record={"sacct.txt": "sacct-P-timeout.txt"})
    out = tmp_path / "out" / "r.md"
    out.parent.mkdir()
    assert main(["report", str(folder), "-o", str(out)]) == 0
    text = out.read_text()
    section = text.split("## SLURM's record", 1)[1].split("\n## ", 1)[0]
    assert "| step | state | exit code | reason | nodes | start | end | MaxRSS |" in section
    assert "| 4242006\\.0 | CANCELLED | 0:15 |" in section and "| 4242006 | TIMEOUT | 0:0 | TimeLimit |" in section
    html = tmp_path / "out" / "r.html"
    assert main(["report", str(folder), "-o", str(html)]) == 0
    assert "SLURM&#x27;s record" in html.read_text() or "SLURM's record" in html.read_text()
    capsys.readouterr()


PREEMPTED_HEADER = "JobID|JobName|State|ExitCode|Reason|NodeList|Start|End|FailedNode\n"


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize(("state", "category", "finding", "node"), [
    ("PREEMPTED", "scheduler", "LS705", None),
    ("DEADLINE", "scheduler", "LS705", None),
    ("BOOT_FAIL", "hardware", "LS605", "gpu-node01"),
    ("NODE_FAIL", "hardware", "LS605", "gpu-node01"),
    ("REQUEUED", "scheduler", "LS705", None),
])
def test_each_state_gets_its_category(state: str, category: str, finding: str | None, node: str | None,
                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = job_folder(tmp_path / "job", "preempted", drop="DUE TO PREEMPTION")
    failed = "gpu-node01" if state.endswith("_FAIL") else ""
    (folder / "sacct.txt").write_text(
        PREEMPTED_HEADER
        + f"4242013|train|{state}|0:0|None|gpu-node[01-02]|2026-11-03T01:04:05|2026-11-03T01:08:36|{failed}\n"
        + "4242013.0|torchrun|CANCELLED|0:15||gpu-node[01-02]|2026-11-03T01:04:10|2026-11-03T01:08:37|\n")
    _, data = analyse(folder, capsys)
    verdict = data["verdict"]
    assert isinstance(verdict, dict)
    root = verdict["root_cause"] or {}
    assert (verdict["category"], verdict["finding"], root.get("node")) == (category, finding, node), verdict["summary"]
