"""``logscope watch`` on the command line: ``--once``'s exit codes and output, the jsonl contract, the
verdict when the logs say the job ended, a job id through SLURM's commands, one-line errors."""

from __future__ import annotations

import getpass
import json
import os
import shutil
from pathlib import Path

import pytest

from logscope.cli import main

GOLDENS = Path(__file__).parent / "goldens"
SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
LONG_AGO = 1_000_000_000  # 2001: the files' modification time when they must look quiet


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def copied(source: Path, target: Path, mtime: float | None = LONG_AGO) -> Path:
    """A copy of a job folder, its files last written at ``mtime`` (None: now)."""
    shutil.copytree(source, target)
    for path in target.iterdir():
        os.utime(path, (mtime, mtime) if mtime is not None else None)
    return target


def events(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


def test_once_on_logs_that_went_quiet_names_the_rank_behind_and_exits_1(capsys: pytest.CaptureFixture[str],
                                                                          tmp_path: Path) -> None:
    job = copied(GOLDENS / "LS104-quiet-rank-before-timeout" / "logs", tmp_path / "job")
    code, out, err = run(capsys, "watch", str(job), "--once", "--format", "jsonl")
    assert code == 1, err
    said = events(out)
    assert [e["kind"] for e in said] == ["stall", "status"]
    stall = said[0]
    assert (stall["rank"], stall["host"], stall["ranks"], stall["hosts"]) == (13, "gpu-node02", [13], ["gpu-node02"])
    assert stall["schema"] == "logscope.watch/1" and isinstance(stall["seconds_quiet"], float)
    assert set(stall) >= {"kind", "time", "rank", "host", "seconds_quiet", "evidence", "summary"}
    assert set(stall["evidence"]) == {"file", "line", "text"}  # type: ignore[arg-type]
    assert said[1]["state"] == "stalled"


def test_once_on_logs_written_just_now_is_progressing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    job = copied(GOLDENS / "LS104-quiet-rank-before-timeout" / "logs", tmp_path / "job", mtime=None)
    code, out, err = run(capsys, "watch", str(job), "--once", "--format", "jsonl")
    assert code == 0, err
    assert [(e["kind"], e.get("state")) for e in events(out)] == [("status", "progressing")]


def test_once_text_shows_each_node_and_the_counters(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    job = copied(GOLDENS / "LS104-quiet-rank-before-timeout" / "logs", tmp_path / "job")
    code, out, _ = run(capsys, "watch", str(job), "--once", "--color", "never")
    assert code == 1
    assert "stall" in out and "rank 13 is behind on gpu-node02" in out
    assert "gpu-node01" in out and "opCount 0x27 (8-12,14-15) · opCount 0x26 (13)" in out


@pytest.mark.parametrize(("sample", "code", "state"), [("healthy", 0, "ended"), ("crash-cascade", 1, "failed")])
def test_once_on_a_job_that_ended(capsys: pytest.CaptureFixture[str], tmp_path: Path, sample: str, code: int,
                                  state: str) -> None:
    job = copied(SAMPLES / sample, tmp_path / "job")
    got, out, err = run(capsys, "watch", str(job), "--once", "--format", "jsonl")
    assert got == code, err
    said = events(out)
    assert said[-1]["kind"] == "status" and said[-1]["state"] == state
    assert "stall" not in [e["kind"] for e in said]  # a job that ended does not stall


def test_a_job_whose_logs_say_it_ended_gets_its_verdict(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    job = copied(SAMPLES / "crash-cascade", tmp_path / "job")
    code, out, err = run(capsys, "watch", str(job), "--format", "jsonl", "--stall", "5")
    assert code == 1, err
    said = events(out)
    assert said[-1]["kind"] == "end"
    verdict = said[-1]["verdict"]
    assert isinstance(verdict, dict) and verdict["category"] == "crash" and verdict["finding"] == "LS301"
    assert (said[-1]["rank"], said[-1]["host"]) == (11, "gpu-node02")
    assert any(e["kind"] == "error" and e["rank"] == 11 for e in said)


def test_a_job_id_is_watched_through_slurm(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand-in scontrol and sacct: the job runs, its StdOut pattern names its files (the test's user's,
    as the record says: another user's are refused); --once reads them."""
    job = copied(GOLDENS / "LS104-quiet-rank-before-timeout" / "logs", tmp_path / "work")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(
        "#!/bin/sh\ncat <<EOF\nJobId=4242002 JobName=train\n"
        f"   UserId={getpass.getuser()}({os.getuid()}) GroupId={getpass.getuser()}({os.getgid()})\n"
        "   JobState=RUNNING Reason=None ExitCode=0:0\n   StartTime=2026-11-03T14:00:02 EndTime=Unknown\n"
        "   NodeList=gpu-node[01-02] BatchHost=gpu-node01\n"
        f"   WorkDir={job}\n   StdOut={job}/train-%j-%N.out\nEOF\n")
    (bin_dir / "sacct").write_text("#!/bin/sh\necho 'sacct: error: Problem talking to the database' >&2\nexit 1\n")
    for name in ("scontrol", "sacct"):
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
    code, out, err = run(capsys, "watch", "4242002", "--once", "--format", "jsonl")
    assert code == 1, err
    stall = events(out)[0]
    assert stall["kind"] == "stall" and (stall["rank"], stall["host"]) == (13, "gpu-node02")


@pytest.mark.parametrize(("args", "message"), [
    (["watch", "no/such/folder"], "no/such/folder: no such file or directory"),
    (["watch", ".", "--format", "json"], "'json' is not one of 'text', 'jsonl'"),
    (["watch", "12345", "67890"], "give one job id at a time"),
])
def test_usage_errors_are_one_line_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = run(capsys, *args)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_a_job_id_without_slurm_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, err = run(capsys, "watch", "12345")
    assert (code, out) == (2, "")
    assert err.startswith("Error: neither sacct nor scontrol is on PATH") and err.count("\n") == 1


def test_sigterm_stops_the_loop_only_while_it_runs() -> None:
    """SLURM sends SIGTERM, then SIGKILL after KillWait: a second SIGTERM while the verdict is made
    (or one before the loop started) only asks, and the verdict is still printed."""
    from logscope.watch.run import _Stopped, _Termination

    termination = _Termination()
    termination(15, None)  # before the loop: asked, nothing raised
    assert termination.asked
    termination.armed = True
    with pytest.raises(_Stopped):
        termination(15, None)
    assert not termination.armed
    termination(15, None)  # again, while the verdict is made: nothing raised
