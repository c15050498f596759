"""``logscope analyze JOBID`` and saved SLURM records: the command line, its errors, its verdicts."""

from __future__ import annotations

import json
import os
import pwd
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


FAKE = '''#!{python}
"""A stand-in for SLURM's {name}: answers from the test's fixtures, as the real one prints."""
import os, sys
args = sys.argv[1:]
mode = os.environ.get("FAKE_SLURM", "ok")
data = os.environ["FAKE_DATA"]
if mode == "down":
    sys.stderr.write("{name}: error: Problem talking to the database: Connection refused\\n")
    sys.exit(1)
if "{name}" == "scontrol":
    sys.stderr.write("slurm_load_jobs error: Invalid job id specified\\n")
    sys.exit(1)
job = args[args.index("-j") + 1]
if "-B" in args:
    sys.stdout.write("Batch Script for " + job + "\\n" + "-" * 80 + "\\nNONE\\n")
    sys.exit(0)
if job != "4242015" and mode == "not-yet" and "-P" not in args:  # 22.05's --json of a job it has no record of
    sys.stdout.write('{{"jobs": [], "errors": [{{"description": "Nothing found", "error_number": 9003}}]}}\\n')
    sys.exit(0)
if job != "4242015":
    sys.stdout.write("JobID|JobName|State\\n" if "-P" in args else '{{"jobs": [], "errors": [], "warnings": []}}\\n')
    sys.exit(0)
name = "sacct-P-node-fail.txt" if "-P" in args else "sacct-24.11-node-fail.json"
text = open(os.path.join(data, name)).read()
# the job is the test's user's (logscope reads only the job's user's files)
text = text.replace("/lustre/alice/llm", os.environ["FAKE_WORKDIR"])
sys.stdout.write(text.replace("alice", os.environ["FAKE_USER"]))
'''


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """sacct and scontrol on PATH answering for job 4242015, whose logs are in the returned folder
    (its working directory, where its StdOut pattern train-%j-%N.out puts them)."""
    import sys

    from accounting_support import DATA

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sacct", "scontrol"):
        script = bin_dir / name
        script.write_text(FAKE.format(python=sys.executable, name=name))
        script.chmod(0o755)
    work = job_folder(tmp_path / "work", "node-failure", drop=NODE_FAIL_LINES)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_DATA", str(DATA))
    monkeypatch.setenv("FAKE_WORKDIR", str(work))
    monkeypatch.setenv("FAKE_USER", pwd.getpwuid(os.getuid()).pw_name)
    return work


@pytest.mark.usefixtures("utc")
def test_analyze_job_id_finds_its_logs_through_sacct(fake_slurm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "analyze", "4242015", "--format", "json")
    assert code == 1, err
    data = json.loads(out)
    assert sorted(Path(f).name for f in data["job"]["files"]) == ["train-4242015-gpu-node01.out",
                                                                  "train-4242015-gpu-node02.out"]
    assert (data["verdict"]["finding"], data["verdict"]["root_cause"]["node"]) == ("LS605", "gpu-node02")
    assert data["accounting"]["sources"] == ["sacct -j 4242015 -P", "sacct -j 4242015 --json"]


@pytest.mark.usefixtures("utc")
def test_unknown_job_id_one_line_exit_2(fake_slurm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "analyze", "999")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "no record of job 999" in err and "Invalid job id specified" in err


@pytest.mark.usefixtures("utc")
def test_a_job_sacct_has_no_record_of_yet_is_asked_of_scontrol(fake_slurm: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """sacct --json of a job just submitted reports "Nothing found" as an error (22.05, seen in the
    lab): scontrol, which knows a running job, is asked too, and the one line says what both said."""
    monkeypatch.setenv("FAKE_SLURM", "not-yet")
    code, out, err = run(capsys, "analyze", "999")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "no record of job 999" in err
    assert "Nothing found" in err and "Invalid job id specified" in err


@pytest.mark.usefixtures("utc")
def test_unreachable_accounting_one_line_exit_2(fake_slurm: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SLURM", "down")
    code, out, err = run(capsys, "analyze", "4242015_3.1")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "Connection refused" in err and "4242015_3.1" in err


@pytest.mark.usefixtures("utc")
def test_save_gathers_a_folder_that_reads_the_same(fake_slurm: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ticket = tmp_path / "ticket"
    code, out, err = run(capsys, "analyze", "4242015", "--save", str(ticket), "--format", "json")
    assert code == 1 and "Saved 4 file(s)" in err
    assert sorted(p.name for p in ticket.iterdir()) == ["sacct.json", "sacct.txt", "train-4242015-gpu-node01.out",
                                                        "train-4242015-gpu-node02.out"]
    before = json.loads(out)
    code, out, err = run(capsys, "analyze", str(ticket), "--format", "json")
    after = json.loads(out)
    assert code == 1, err
    assert after["verdict"]["finding"] == before["verdict"]["finding"] == "LS605"
    assert after["verdict"]["root_cause"]["node"] == "gpu-node02"
    assert after["accounting"]["steps"] == before["accounting"]["steps"]


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("inside", ["", "sub"])
def test_save_refuses_the_log_folder(fake_slurm: Path, inside: str, capsys: pytest.CaptureFixture[str]) -> None:
    target = fake_slurm / inside if inside else fake_slurm
    before = sorted(p.name for p in fake_slurm.iterdir())
    code, _, err = run(capsys, "analyze", "4242015", "--save", str(target))
    assert code == 2 and "inside the log folder" in err and err.count("\n") == 1
    assert sorted(p.name for p in fake_slurm.iterdir()) == before


def test_save_refuses_a_folder_with_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = job_folder(tmp_path / "logs", "healthy")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    code, _, err = run(capsys, "analyze", str(logs), "--save", str(busy))
    assert code == 2 and "new or empty folder" in err


@pytest.mark.usefixtures("utc")
def test_a_record_of_another_job_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = job_folder(tmp_path / "job", "healthy", record={"sacct.json": "sacct-22.05-crash-cascade.json"})
    code, out, err = run(capsys, "analyze", str(folder))
    assert (code, out) == (2, "")
    assert "the logs are of job 4242001" in err and "of job 4242004" in err and err.count("\n") == 1
    code, _, err = run(capsys, "analyze", "4242001", str(folder))
    assert code == 2 and "not of job 4242001" in err


@pytest.mark.usefixtures("utc")
def test_report_of_a_job_id(fake_slurm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out" / "r.html"
    out.parent.mkdir()
    code, _, err = run(capsys, "report", "4242015", "-o", str(out))
    assert code == 0, err
    html = out.read_text()
    assert "LS605" in html and "slurm-record" in html and "4242015.0" in html


@pytest.mark.usefixtures("utc")
def test_escape_sequences_in_a_record_never_reach_an_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from accounting_support import DATA

    folder = job_folder(tmp_path / "job", "node-failure", drop=NODE_FAIL_LINES)
    text = (DATA / "sacct-24.11-node-fail.json").read_text()
    hostile = text.replace('"name": "train"', '"name": "\\u001b]0;owned\\u0007tr\\u001b[2Jain"')
    hostile = hostile.replace('"state": ["NODE_FAIL"]', '"state": ["NODE_FAIL\\u001b[31m"]', 1)
    (folder / "sacct.json").write_text(hostile)
    for args in (["--format", "json"], ["--color", "never"]):
        code, out, err = run(capsys, "analyze", str(folder), *args)
        assert code == 1, err
        assert "\x1b" not in out and "\\u001b" not in out and "\x07" not in out
    assert json.loads(run(capsys, "analyze", str(folder), "--format", "json")[1])["accounting"]["name"] == "train"


def test_saved_record_files_are_not_listed_as_skipped_logs(capsys: pytest.CaptureFixture[str]) -> None:
    # sacct.json is read as SLURM's record: the footer must not also call it a file left unread
    lab = Path(__file__).parent / "data" / "accounting" / "lab" / "node-lost"
    code, out, _ = run(capsys, "analyze", str(lab), "--color", "never")
    assert code == 1
    footer = "\n".join(out.splitlines()[-3:])
    assert "2 file(s)" in footer and "skipped" not in footer


def test_scan_does_not_read_saved_records_as_logs(tmp_path: Path) -> None:
    from logscope.scan import find_jobs

    lab = Path(__file__).parent / "data" / "accounting" / "lab" / "node-lost"
    jobs = find_jobs([lab])
    names = sorted(p.name for job in jobs for p in job.files)
    assert names == ["node-lost-3-node01.out", "node-lost-3-node02.out"]
