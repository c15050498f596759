"""The command line: exit codes, output formats, one-line errors, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from logscope.cli import main

CRASH = Path(__file__).parent / "goldens" / "LS301-crash-two-nodes" / "logs"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_analyze_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "analyze", str(CRASH), "--format", "json")
    assert code == 1, err
    data = json.loads(out)
    assert data["schema"] == "logscope.analysis/1"
    assert set(data["job"]) >= {"id", "name", "nodes", "files", "lines_read", "lines_unrecognised", "world_size"}
    assert data["job"]["nodes"] == ["node01", "node02"]
    verdict = data["verdict"]
    assert verdict["category"] == "crash" and verdict["finding"] == "LS301"
    root = verdict["root_cause"]
    assert (root["host"], root["rank"], root["local_rank"]) == ("node02", 3, 1)
    assert root["evidence"]["file"].endswith("train-5001-node02.out") and root["evidence"]["line"] == 8
    finding = data["findings"][0]
    assert set(finding) >= {"code", "name", "category", "severity", "title", "ranks", "hosts", "first_seen",
                            "evidence", "explanation", "advice"}


def test_analyze_text_names_the_root(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", str(CRASH))
    assert code == 1
    assert "CRASH" in out and "rank 3" in out and "ValueError: batch 57 has NaN labels" in out
    assert "train-5001-node02.out:8" in out


def test_healthy_exits_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # the last step of a known total is a clean end
    (tmp_path / "ok-1-n1.out").write_text("2026-01-01 00:00:00,000 - INFO - step 1/2 loss 2.0\n"
                                          "2026-01-01 00:00:01,000 - INFO - step 2/2 loss 1.9\n")
    code, out, _ = run(capsys, "analyze", str(tmp_path))
    assert code == 0 and "HEALTHY" in out


def test_no_failure_without_a_clean_end_is_incomplete(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "ok-1-n1.out").write_text("2026-01-01 00:00:00,000 - INFO - step 1/2 loss 2.0\n")
    code, out, _ = run(capsys, "analyze", str(tmp_path))
    assert code == 3 and "INCOMPLETE" in out and "HEALTHY" not in out
    code, out, _ = run(capsys, "analyze", str(tmp_path), "--format", "json")
    verdict = json.loads(out)["verdict"]
    assert code == 3 and verdict["category"] == "incomplete" and verdict["root_cause"] is None


def test_files_of_several_jobs_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for job in ("101", "102"):
        (tmp_path / f"train-{job}-n1.out").write_text("2026-01-01 00:00:00,000 - INFO - step 1/1 loss 2.0\n")
    code, _, err = run(capsys, "analyze", str(tmp_path))
    assert code == 2 and "2 SLURM jobs (101, 102)" in err and "logscope scan" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("text", ["", "# Notes\n\nThis folder holds the logs of job 12.\n", "lr: 0.1\nbatch: 8\n"])
def test_input_holding_no_job_log_is_an_input_error(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    text: str) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(text)
    code, out, err = run(capsys, "analyze", str(path))
    assert code == 2 and out == "" and err.startswith("Error:") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [
    ("analyze", "/definitely/not/here"),
    ("analyze", "--format", "yaml", str(CRASH)),
    ("analyze", str(CRASH), "--pattern", "%x-%Q.out"),
    ("explain", "LS999"),
])
def test_usage_and_input_errors_are_one_line_exit_2(capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2
    assert "Traceback" not in out + err
    assert err.startswith("Error: ") and err.count("\n") == 1


def test_unknown_option_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", "--nope", str(CRASH))
    assert code == 2 and "Traceback" not in err


def test_internal_errors_are_contained(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import logscope.analysis

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(logscope.analysis, "analyze", boom)
    code, _, err = run(capsys, "analyze", str(CRASH))
    assert code == 2
    assert "internal error" in err and "simulated bug" in err and "Traceback" not in err


def test_explain_lists_and_prints_docs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain")
    assert code == 0 and "LS101" in out and "LS301" in out
    code, out, _ = run(capsys, "explain", "exit-cascade")
    assert code == 0 and "What it detects" in out and "Advice" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("logscope ")


def test_charts_refuse_the_log_folder(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", str(CRASH), "--charts", str(CRASH / "charts"))
    assert code == 2 and "inside the log folder" in err


def test_recap_is_the_last_line_and_quiet_prints_only_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", str(CRASH))
    assert code == 1
    last = out.rstrip("\n").splitlines()[-1]
    assert last.startswith("✗ CRASH [LS301]") and "train-5001-node02.out:8" in last
    code, quiet, _ = run(capsys, "analyze", str(CRASH), "--quiet")
    assert code == 1 and quiet.splitlines() == [last]


def test_color_flag(capsys: pytest.CaptureFixture[str]) -> None:
    _, always, _ = run(capsys, "analyze", str(CRASH), "--color", "always")
    _, never, _ = run(capsys, "analyze", str(CRASH), "--color", "never")
    _, auto, _ = run(capsys, "analyze", str(CRASH))  # not a terminal: no colour
    assert "\x1b[" in always and "\x1b[" not in never and "\x1b[" not in auto
    code, _, err = run(capsys, "analyze", str(CRASH), "--color", "pink")
    assert code == 2 and err.startswith("Error: ")


def test_analyse_alias_and_completion(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyse", str(CRASH), "-q")
    assert code == 1 and out.startswith("✗ CRASH")
    import subprocess
    import sys

    # The bash completion script, asked for as the shell asks (Click's protocol). Not through
    # --show-completion: that option ignores a shell name and guesses the shell from the parent
    # processes, which a test run started in the background does not have.
    shown = subprocess.run([sys.executable, "-m", "logscope"], capture_output=True, text=True, check=False,
                           env={**os.environ, "_LOGSCOPE_COMPLETE": "source_bash"}, stdin=subprocess.DEVNULL)
    assert shown.returncode == 0 and "complete" in shown.stdout and "_LOGSCOPE_COMPLETE" in shown.stdout


def test_explain_shows_no_rest_markup_and_knows_lint_rules(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "LS201")
    assert code == 0 and "$SLURM_PROCID" in out
    assert "``" not in out and "::" not in out
    code, out, _ = run(capsys, "explain", "LL004")
    assert code == 0 and out.startswith("LL004 missing-kill-on-bad-exit") and "``" not in out
    code, out, _ = run(capsys, "explain")
    assert "LL005" in out and "``" not in out
    code, _, err = run(capsys, "explain", "LL999")
    assert code == 2 and err.startswith("Error: ")
