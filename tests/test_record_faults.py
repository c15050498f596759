"""What broke with an internal error, now a verdict or one ``Error:`` line (exit code 2): SLURM records
missing an end or holding numbers no field holds, input nested deeper than Python recurses (a folder
tree 1,000 levels deep, a scan cache nested 100,000 deep)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from accounting_support import DATA, job_folder, utc  # noqa: F401 - the utc fixture

from logscope.cli import main

NODE_FAIL_LINES = r"Node failure on|DUE TO NODE FAILURE"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in err, err
    return code, out, err


@pytest.mark.usefixtures("utc")
def test_a_node_fail_record_without_an_end_is_a_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # End=Unknown on every line: the rows' time is then their start, which came before the failed
    # node's last line (min() arg is an empty sequence: no root could come first)
    text = (DATA / "sacct-P-node-fail.txt").read_text().replace("|2026-11-03T04:24:10|", "|Unknown|")
    folder = job_folder(tmp_path / "job", "node-failure", drop=NODE_FAIL_LINES)
    (folder / "sacct.txt").write_text(text)
    code, out, _ = run(capsys, "analyze", str(folder), "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert (data["verdict"]["finding"], data["verdict"]["root_cause"]["node"]) == ("LS605", "gpu-node02")
    assert all(step["end"] is None for step in data["accounting"]["steps"])


def test_a_finding_whose_window_is_inverted_can_still_come_first() -> None:
    from datetime import datetime

    from logscope.analysis import _possibly_first
    from logscope.model import Category, Finding, Severity

    late, early = datetime(2026, 1, 1, 4, 19), datetime(2026, 1, 1, 4, 12)
    inverted = Finding(code="LS605", name="x", category=Category.HARDWARE, severity=Severity.CRITICAL, title="t",
                       explanation="", advice="", window=(late, early))
    assert _possibly_first([inverted]) == [inverted]


def node_fail_json(change: dict[str, object]) -> str:
    document = json.loads((DATA / "sacct-24.11-node-fail.json").read_text())
    job = document["jobs"][0]
    for path, value in change.items():
        *parents, last = path.split(".")
        target = job
        for name in parents:
            target = target[name]
        target[last] = value
    return json.dumps(document)


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("change", [
    {"time.start": float("inf")},  # json writes Infinity, Python reads it back: int(inf) OverflowError
    {"time.end": float("nan")},
    {"time.start": 10**30},
    {"time.start": 253402300000},  # 9999-12-31: a time outside the years the logs' times may hold
    {"exit_code.return_code": {"set": True, "infinite": False, "number": 10**40}},  # polars refused it
    {"exit_code.return_code": {"set": True, "infinite": False, "number": 1e300}},
    {"exit_code.signal": {"id": {"set": True, "number": -(2**70)}, "name": "KILL"}},
    {"job_id": 10**30},
])
def test_numbers_no_field_holds_are_no_internal_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      change: dict[str, object]) -> None:
    folder = job_folder(tmp_path / "job", "node-failure", drop=NODE_FAIL_LINES)
    (folder / "sacct.json").write_text(node_fail_json(change))
    code, out, err = run(capsys, "analyze", str(folder), "--format", "json")
    if code == 2:  # a job without an id is no record
        assert err.startswith("Error: ") and err.count("\n") == 1 and "job_id" in err
        return
    assert code == 1, err
    accounting = json.loads(out)["accounting"]
    assert accounting["state"] == "NODE_FAIL"
    assert accounting["start"] is None or accounting["start"].startswith("2026-")


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("exit_code", ["99999999999999999999999:0", "1:99999999999999999999", "4294967296:0"])
def test_an_exit_code_no_process_has_is_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                exit_code: str) -> None:
    folder = job_folder(tmp_path / "job", "node-failure", drop=NODE_FAIL_LINES)
    text = (DATA / "sacct-P-node-fail.txt").read_text().replace("|0:9|", f"|{exit_code}|")
    (folder / "sacct.txt").write_text(text)
    code, out, _ = run(capsys, "analyze", str(folder), "--format", "json")
    assert code == 1
    steps = {s["id"]: s for s in json.loads(out)["accounting"]["steps"]}
    assert steps["4242015.batch"]["exit_code"] in (None, 0, 1)


def deep_tree(root: Path, levels: int) -> Path:
    """``root``/d/d/.../d (``levels`` folders) holding a job log; made level by level (relative
    paths: the whole path is longer than one system call takes in some places)."""
    root.mkdir()
    here = Path.cwd()
    try:
        os.chdir(root)
        for _ in range(levels):
            Path("d").mkdir()
            os.chdir("d")
        Path("train-1-n1.out").write_text("2026-01-01 00:00:00,000 - INFO - step 1 loss 2.0\n"
                                          "[default0]:ValueError: boom\n")
    finally:
        os.chdir(here)
    return root


@pytest.fixture
def deep_root(tmp_path: Path) -> Iterator[Path]:
    """Where a deep tree goes; removed after the test without recursion (pytest's own clean-up of
    old temporary folders, shutil.rmtree, recurses once per level)."""
    root = tmp_path / "deep"
    yield root
    from logscope.walk import walk

    folders = [folder for folder, _, _ in walk(root)]
    for folder in reversed(folders):
        for entry in os.scandir(folder):
            if not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)  # noqa: PTH108
        os.rmdir(folder)  # noqa: PTH106


@pytest.mark.parametrize("command", ["analyze", "scan"])
def test_a_folder_tree_1000_levels_deep(tmp_path: Path, deep_root: Path, command: str) -> None:
    # The command itself (its early look at the inputs included): a RecursionError in os.walk was a
    # raw traceback and exit code 1, "a failure was found".
    root = deep_tree(deep_root, 1000)
    args = [command, str(root)] + (["-o", str(tmp_path / "t.csv")] if command == "scan" else ["--format", "json"])
    done = subprocess.run([sys.executable, "-m", "logscope", *args], capture_output=True, text=True, timeout=300,
                          check=False, cwd=tmp_path)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    if command == "analyze":
        assert done.returncode == 1, done.stderr
        assert json.loads(done.stdout)["verdict"]["category"] == "crash"
    else:
        assert done.returncode == 0, done.stderr
        assert "crash" in (tmp_path / "t.csv").read_text()


def test_walk_yields_what_os_walk_yields(tmp_path: Path) -> None:
    from logscope.walk import walk

    for name in ("b/c/d", "a/x", "a/y/z", "e"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "f.out").write_text("x")
    (tmp_path / "a" / "link").symlink_to(tmp_path / "b")  # listed among the folders, not entered
    (tmp_path / "loop").symlink_to(tmp_path)
    (tmp_path / "top.out").write_text("x")

    def walked(walker: object) -> list[tuple[str, list[str], list[str]]]:
        out = []
        for folder, dirs, files in walker:  # type: ignore[attr-defined]
            dirs.sort()
            out.append((folder, list(dirs), sorted(files)))
        return out

    assert walked(walk(tmp_path)) == walked(os.walk(tmp_path, followlinks=False))
    errors: list[OSError] = []
    assert list(walk(tmp_path / "missing", onerror=errors.append)) == [] and len(errors) == 1


def test_a_scan_cache_nested_100000_deep_costs_a_rescan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = job_folder(tmp_path / "logs", "healthy")
    cache = tmp_path / "scan.cache.json"
    cache.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = run(capsys, "scan", str(logs), "-o", str(tmp_path / "t.csv"), "--cache", str(cache), "-j", "1")
    assert code == 0, err
    assert json.loads(cache.read_text())["jobs"]  # rewritten, whole
