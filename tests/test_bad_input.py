"""Bad input through the command line: one ``Error:`` line and exit code 2, or a partial analysis
that names what it skipped and why; never a traceback, never a hang (docs/guarantees.md). Every command
that reads files is run on every kind of bad input."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from reading_support import PEAK_KIB

from logscope.cli import main

CRASH = Path(__file__).parent / "goldens" / "LS301-crash-two-nodes" / "logs"
GOOD = "2026-01-01 00:00:00,000 - INFO - step 1 loss 2.0\n[default0]:ValueError: boom\n"
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return code, out, err


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert err.startswith("Error: ") and err.count("\n") == 1, err
    assert "internal error" not in err, err
    for fragment in fragments:
        assert fragment in err, err


# --- the inputs ------------------------------------------------------------------------------


def inputs(tmp: Path) -> Path:
    """A folder for the inputs, apart from where outputs go."""
    folder = tmp / "in"
    folder.mkdir(exist_ok=True)
    return folder


def empty_folder(tmp: Path) -> Path:
    (tmp / "empty").mkdir()
    return tmp / "empty"


def missing(tmp: Path) -> Path:
    return tmp / "not-here"


def symlink_loop(tmp: Path) -> Path:
    (tmp / "loop-a").symlink_to(tmp / "loop-b")
    (tmp / "loop-b").symlink_to(tmp / "loop-a")
    return tmp / "loop-a"


def binaries(tmp: Path) -> Path:
    folder = tmp / "bins"
    folder.mkdir()
    (folder / "train-1-node1.out").write_bytes(bytes(range(256)) * 64)
    (folder / "train-1-node2.log").write_bytes(zstandard.ZstdCompressor().compress(os.urandom(20000)))
    (folder / "train-1-node3.err").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(4000))
    return folder


def corrupt_gz(tmp: Path) -> Path:
    path = tmp / "train-1-node1.out.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00 not really gzip" * 20)
    return path


def fifo(tmp: Path) -> Path:
    path = tmp / "train-1-node1.out"
    os.mkfifo(path)  # open() of a FIFO blocks without a writer: must be skipped, even as root
    return path


def folder_named_like_a_log(tmp: Path) -> Path:
    path = tmp / "train-1-node1.out"
    path.mkdir()
    return path


def dangling_link(tmp: Path) -> Path:
    path = tmp / "train-1-node1.out"
    path.symlink_to(tmp / "gone" / "train-1-node1.out")
    return path


UNUSABLE: dict[str, tuple[Callable[[Path], Path], str]] = {
    # name: (builder, what analyze's message must say)
    "empty folder": (empty_folder, "no files found"),
    "missing path": (missing, "no such file or directory"),
    "symlink loop": (symlink_loop, "symbolic link"),
    "folder of binaries": (binaries, "binary data"),
    "corrupt gz": (corrupt_gz, "cannot read"),
    "fifo": (fifo, "not a regular file"),
    "dangling link": (dangling_link, "No such file or directory"),
    "folder named like a log": (folder_named_like_a_log, "no files found"),
}


@pytest.mark.parametrize("case", sorted(UNUSABLE))
@pytest.mark.parametrize("command", ["analyze", "analyze-json", "report"])
def test_unusable_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str,
                                               command: str) -> None:
    build, message = UNUSABLE[case]
    target = build(inputs(tmp_path))
    args = {"analyze": ["analyze", str(target)], "analyze-json": ["analyze", str(target), "--format", "json"],
            "report": ["report", str(target), "-o", str(tmp_path / "out" / "r.html")]}[command]
    code, out, err = run(capsys, *args)
    assert_one_line_error(code, err, message if case != "symlink loop" else "Too many levels of symbolic links")
    assert out == ""
    assert not (tmp_path / "out").exists()  # nothing written for an input that could not be read


@pytest.mark.skipif(ROOT, reason="root reads files whatever their mode; the FIFO, dangling-link and "
                                 "folder-named-like-a-log cases above make open() fail as root too")
def test_unreadable_file_chmod_000(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = inputs(tmp_path) / "train-1-node1.out"
    path.write_text(GOOD)
    path.chmod(0)
    try:
        code, _, err = run(capsys, "analyze", str(path))
        assert_one_line_error(code, err, "cannot open", "Permission denied")
        code, _, err = run(capsys, "lint", str(path))
        assert_one_line_error(code, err, "cannot read", "Permission denied")
    finally:
        path.chmod(0o644)


@pytest.mark.parametrize("case", ["empty folder", "missing path", "symlink loop"])
def test_scan_of_nothing_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 case: str) -> None:
    target = UNUSABLE[case][0](inputs(tmp_path))
    code, out, err = run(capsys, "scan", str(target), "-o", str(tmp_path / "out" / "t.parquet"))
    assert out == ""
    assert_one_line_error(code, err, {"empty folder": "no log files found", "missing path": "no such file",
                                      "symlink loop": "broken or looping symbolic link"}[case])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", ["folder of binaries", "corrupt gz", "fifo"])
def test_scan_reports_unreadable_jobs_and_why(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                              case: str) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "good-7-node1.out").write_text(GOOD)
    bad = UNUSABLE[case][0](logs)
    code, out, err = run(capsys, "scan", str(logs), "-j", "1")
    assert code == 0, err
    if case == "fifo":  # the FIFO shares job 1 with nothing else: its job is the unreadable one
        assert "unreadable 1" in out and "not a regular file" in out
    else:
        assert "unreadable 1" in out and ("binary data" in out or "cannot read" in out), out
    assert str(bad.name if case != "folder of binaries" else bad) in out


@pytest.mark.parametrize("case", ["empty folder", "missing path", "symlink loop", "fifo", "dangling link",
                                  "folder named like a log"])
def test_lint_on_unusable_paths(capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str) -> None:
    target = UNUSABLE[case][0](tmp_path)
    code, _, err = run(capsys, "lint", str(target))
    assert_one_line_error(code, err, str(target))


def test_lint_on_binary_and_empty_scripts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "lint", str(binaries(tmp_path) / "train-1-node1.out"))
    assert_one_line_error(code, err, "binary file")
    (tmp_path / "empty.sbatch").write_bytes(b"")
    code, out, _ = run(capsys, "lint", str(tmp_path / "empty.sbatch"))
    assert code in (0, 1) and out
    (tmp_path / "odd.sbatch").write_bytes(b"#!/bin/bash\r\n#SBATCH -N 2\r\n\xff\xfe srun \x1b[31m python x.py\r\n")
    code, out, _ = run(capsys, "lint", str(tmp_path / "odd.sbatch"), "--format", "json")
    assert code in (0, 1) and isinstance(json.loads(out), list)


@pytest.mark.parametrize("code_or_name", ["", " ", "LS", "ls301", "<script>", "LS301\x00", "é" * 300])
def test_explain_any_argument(capsys: pytest.CaptureFixture[str], code_or_name: str) -> None:
    code, out, err = run(capsys, "explain", code_or_name)
    if code == 0:
        assert "What it detects" in out
    else:
        assert_one_line_error(code, err, "no detector")


# --- partial analyses: what could be read is analysed, the rest is named with its reason -------


def test_good_file_beside_bad_ones_is_analysed_and_the_bad_ones_named(capsys: pytest.CaptureFixture[str],
                                                                       tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "train-1-node1.out").write_text(GOOD)
    (logs / "train-1-node2.out").write_bytes(bytes(range(256)) * 64)
    (logs / "train-1-node3.out.gz").write_bytes(b"garbage" * 100)
    os.mkfifo(logs / "train-1-node4.out")
    (logs / "train-1-node5.out").write_bytes(b"")
    (logs / "loop").symlink_to(logs)
    (logs / "dangling-1-node6.out").symlink_to(tmp_path / "nowhere")
    code, out, err = run(capsys, "analyze", str(logs), "--format", "json")
    assert code == 1, err
    data = json.loads(out)
    assert data["verdict"]["category"] == "crash"
    reasons = {Path(s["file"]).name: s["reason"] for s in data["skipped"]}
    assert "binary data" in reasons["train-1-node2.out"]
    assert "cannot read" in reasons["train-1-node3.out.gz"]
    assert "not a regular file" in reasons["train-1-node4.out"]
    assert "cannot read" in reasons["dangling-1-node6.out"]
    assert any("empty file" in w for w in data["warnings"])
    assert data["job"]["lines_read"] == 2
    # the text output names them too
    code, out, _ = run(capsys, "analyze", str(logs))
    assert code == 1 and "skipped" in out and "binary data" in out


def test_zero_byte_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = inputs(tmp_path) / "train-1-node1.out"
    path.write_bytes(b"")
    # an empty file is no job log: a verdict ("healthy") would be a promise about a job nobody saw
    code, out, err = run(capsys, "analyze", str(path), "--format", "json")
    assert_one_line_error(code, err, "no line of a training job's log was recognised (0 line(s) read)")
    assert out == ""
    code, out, err = run(capsys, "report", str(path), "-o", str(tmp_path / "r.md"))
    assert_one_line_error(code, err, "no line of a training job's log")
    assert not (tmp_path / "r.md").exists()


def test_truncated_zst_is_analysed_up_to_the_damage(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    body = "".join(f"2026-01-01 00:00:{i % 60:02d},000 - INFO - step {i} loss 1.0\n" for i in range(20000))
    blob = zstandard.ZstdCompressor().compress((body + "[default0]:ValueError: end\n").encode())
    path = tmp_path / "train-1-node1.out.zst"
    path.write_bytes(blob[: len(blob) // 2])
    code, out, err = run(capsys, "analyze", str(path), "--format", "json")
    # no failure in what was read, and no clean end: incomplete, not healthy
    assert code == 3, err
    data = json.loads(out)
    assert 0 < data["job"]["lines_read"] < 20001
    assert any("truncated" in w for w in data["warnings"])


def _damaged(blob: bytes, how: str) -> bytes:
    """``blob`` (a gzip or zstd file) damaged as logs of crashed jobs and bad copies are."""
    if how == "checksum":  # gzip: the CRC in the trailer; zstd: the content checksum at the end
        at = len(blob) - 8 if blob[:2] == b"\x1f\x8b" else len(blob) - 1
        return blob[:at] + bytes([blob[at] ^ 0xFF]) + blob[at + 1:]
    if how == "garbage after":
        return blob + b"\x00\x01junk"
    at = int(len(blob) * 0.6)  # "middle": bytes overwritten at 60%
    return blob[:at] + b"\xff" * 16 + blob[at + 16:]


@pytest.mark.parametrize("compression", ["gz", "zst"])
@pytest.mark.parametrize("how", ["checksum", "garbage after", "middle"])
def test_damaged_archive_keeps_every_line_before_the_damage(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                            compression: str, how: str) -> None:
    # Random payloads, so that the archive is not all back-references and the damage lands in
    # real data, as in an 8.7 MB .gz damaged at 60%.
    rng = random.Random(7)
    body = "".join(f"2026-01-01 00:00:{i % 60:02d},000 - INFO - step {i} loss 1.0 {rng.randbytes(24).hex()}\n"
                   for i in range(40000)) + "[default0]:ValueError: end\n"
    raw = body.encode()
    blob = gzip.compress(raw) if compression == "gz" else zstandard.ZstdCompressor(write_checksum=True).compress(raw)
    path = tmp_path / f"train-1-node1.out.{compression}"
    path.write_bytes(_damaged(blob, how))
    code, out, err = run(capsys, "analyze", str(path), "--format", "json")
    assert code in (1, 3), err  # the crash at the end, or no failure and no clean end before the damage
    data = json.loads(out)
    lines = data["job"]["lines_read"]
    if how == "middle":  # what comes before the damage (and what the damaged bytes decode to, as zcat)
        assert lines > 0.5 * 40001, lines
        assert any("damaged" in w or "truncated" in w or "checksum" in w for w in data["warnings"]), data
    else:  # nothing lost: every line, and the damage said
        assert lines == 40001, lines
        assert data["verdict"]["category"] == "crash"
        said = "ignored" if how == "garbage after" else ("check" if compression == "gz" else "checksum")
        assert any(said in w for w in data["warnings"]), data["warnings"]


def test_small_damaged_archive_is_read_not_skipped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Smaller than the first read (8 KiB): the damage used to make it "no readable log file".
    blob = gzip.compress(GOOD.encode())
    path = tmp_path / "train-1-node1.out.gz"
    path.write_bytes(_damaged(blob, "checksum"))
    code, out, err = run(capsys, "analyze", str(path), "--format", "json")
    assert code == 1, err
    assert json.loads(out)["job"]["lines_read"] == 2


def test_gzip_of_binary_is_skipped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "train-1-node1.out.gz").write_bytes(gzip.compress(bytes(range(256)) * 100))
    code, _, err = run(capsys, "analyze", str(tmp_path))
    assert_one_line_error(code, err, "binary data")


# --- huge inputs: read in bounded time (memory: test_readonly.py measures it) ----------------


def _sparse(path: Path, size: int, head: bytes = b"", tail: bytes = b"") -> Path:
    with path.open("wb") as f:
        f.write(head)
        f.seek(size - len(tail))
        f.write(tail)
        f.truncate(size)
    if path.stat().st_blocks * 512 > 64 * 1024 * 1024:
        pytest.skip("this file system does not make sparse files")
    return path


def test_ten_gigabyte_sparse_file_is_skipped_quickly(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _sparse(tmp_path / "train-1-node1.out", 10 * 1024**3)
    started = time.monotonic()
    code, _, err = run(capsys, "analyze", str(path))
    assert time.monotonic() - started < 15
    assert_one_line_error(code, err, "only NUL bytes")


def test_ten_gigabyte_hole_after_real_lines_is_jumped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A node that died while writing leaves its log NUL-padded (a hole): the lines before and
    after the hole are read, the hole is skipped and said so, in seconds."""
    path = _sparse(tmp_path / "train-1-node1.out", 10 * 1024**3, head=GOOD.encode(),
                   tail=b"[default1]:RuntimeError: after the hole\n")
    started = time.monotonic()
    code, out, err = run(capsys, "analyze", str(path), "--format", "json")
    assert time.monotonic() - started < 30
    assert code == 1, err
    data = json.loads(out)
    assert data["job"]["lines_read"] == 3  # two lines, then the hole and the last line on the third
    assert data["job"]["lines_recognised"] == 3  # the step line, the ValueError, the RuntimeError
    assert any("NUL bytes skipped" in w for w in data["warnings"])


def test_single_fifty_megabyte_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = inputs(tmp_path) / "train-1-node1.out"
    with path.open("wb") as f:
        f.write(b"[default0]:ValueError: before\n")
        f.write(b"<" * (50 * 1024 * 1024))
        f.write(b"\n[default1]:RuntimeError: after\n")
    started = time.monotonic()
    code, out, err = run(capsys, "analyze", str(path), "--format", "json")
    assert time.monotonic() - started < 30
    assert code == 1, err
    data = json.loads(out)
    assert data["job"]["lines_read"] == 3 and data["job"]["lines_recognised"] == 2
    assert data["verdict"]["category"] == "crash"
    code, _, err = run(capsys, "report", str(path), "-o", str(tmp_path / "out" / "r.html"))
    assert code == 0, err  # written
    assert (tmp_path / "out" / "r.html").stat().st_size < 5_000_000  # the long line is clipped


# --- outputs ---------------------------------------------------------------------------------


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "train-1-node1.out").write_text(GOOD)
    return folder


def test_a_folder_given_for_a_file_output(capsys: pytest.CaptureFixture[str], tmp_path: Path, logs: Path) -> None:
    folder = tmp_path / "out.html"
    folder.mkdir()
    code, _, err = run(capsys, "report", str(logs), "-o", str(folder))
    assert_one_line_error(code, err, "is a folder")
    code, _, err = run(capsys, "report", str(logs), "-o", str(tmp_path))
    assert_one_line_error(code, err, "cannot tell the report format")
    code, _, err = run(capsys, "scan", str(logs), "-o", str(folder))
    assert_one_line_error(code, err, "is a folder")
    code, _, err = run(capsys, "scan", str(logs), "-o", str(tmp_path / "t.parquet"), "--cache", str(folder))
    assert_one_line_error(code, err, "is a folder")
    assert not (tmp_path / "t.parquet").exists()  # refused before any work


def test_a_file_given_for_the_charts_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path, logs: Path) -> None:
    blocker = tmp_path / "charts"
    blocker.write_text("I am a file")
    code, _, err = run(capsys, "analyze", str(logs), "--charts", str(blocker))
    assert_one_line_error(code, err, "wants a folder")
    code, _, err = run(capsys, "analyze", str(logs), "--charts", str(blocker / "sub"))
    assert_one_line_error(code, err, "cannot write the charts")
    code, _, err = run(capsys, "report", str(logs), "-o", str(blocker / "r.html"))
    assert_one_line_error(code, err, "cannot write")


@pytest.mark.parametrize("args", [
    ("report", "{logs}", "-o", "{logs}/r.html"),
    ("report", "{logs}/train-1-node1.out", "-o", "{logs}/r.md"),
    ("report", "{logs}", "-o", "{link}/r.html"),
    ("analyze", "{logs}", "--charts", "{logs}"),
    ("analyze", "{logs}", "--charts", "{link}/charts"),
    ("scan", "{logs}", "-o", "{logs}/deep/t.parquet"),
    ("scan", "{logs}", "-o", "{tmp}/t.parquet", "--cache", "{logs}/c.json"),
    ("scan", "{tmp}", "-o", "{logs}/t.csv"),
])
def test_outputs_inside_the_log_folder_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, logs: Path,
                                                    args: tuple[str, ...]) -> None:
    (tmp_path / "link").symlink_to(logs)  # a way into the logs that does not look like one
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code, _, err = run(capsys, *[a.format(logs=logs, link=tmp_path / "link", tmp=tmp_path) for a in args])
    assert_one_line_error(code, err, "inside the log folder")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


@pytest.mark.skipif(ROOT, reason="root writes into read-only folders")
def test_unwritable_output_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path, logs: Path) -> None:
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        code, _, err = run(capsys, "report", str(logs), "-o", str(out / "r.html"))
        assert_one_line_error(code, err, "cannot write")
        code, _, err = run(capsys, "scan", str(logs), "-o", str(out / "t.parquet"))
        assert_one_line_error(code, err, "cannot write")
    finally:
        out.chmod(0o755)


# --- hostile names and text ------------------------------------------------------------------


def test_file_names_with_newlines_and_bytes_that_are_not_utf8(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    logs = inputs(tmp_path)
    try:
        (logs / os.fsdecode(b"\xff\xfe-1-node1.out")).write_text(GOOD)
    except OSError:
        pytest.skip("this file system wants UTF-8 file names")
    (logs / "new\nline-1-node2.out").write_bytes(bytes(range(256)) * 10)
    script = logs / os.fsdecode(b"\xff-job.sbatch")
    script.write_bytes(b"#!/bin/bash\n#SBATCH -N 2\nsrun python train.py\n")
    out_dir = tmp_path / "out"
    code, out, _ = run(capsys, "analyze", str(logs))
    assert code == 1
    assert "\\xff\\xfe-1-node1.out:2" in out  # the name, escaped
    assert "new\nline" not in out  # the newline is escaped (rich may still wrap the long line)
    code, out, _ = run(capsys, "analyze", str(logs), "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["job"]["files"][0].endswith("\\xff\\xfe-1-node1.out")
    assert any(s["file"].endswith("new\\nline-1-node2.out") for s in data["skipped"])
    for name in ("r.html", "r.md"):
        code, _, err = run(capsys, "report", str(logs), "-o", str(out_dir / name))
        assert code == 0, err
        assert "\\xff\\xfe" in (out_dir / name).read_text(encoding="utf-8")
    code, out, err = run(capsys, "scan", str(logs), "-o", str(out_dir / "t.jsonl"), "-j", "1")
    assert code == 0, err
    row = json.loads((out_dir / "t.jsonl").read_text(encoding="utf-8"))
    assert row["job_name"] == "\\xff\\xfe" and row["category"] == "crash"
    code, out, _ = run(capsys, "lint", str(script), "--format", "json")
    assert json.loads(out)[0]["path"].endswith("\\xff-job.sbatch")
    (logs / "new\nline-1-node2.out").unlink()
    code, _, err = run(capsys, "analyze", str(logs / "gone\nfile-1-node1.out"))
    assert_one_line_error(code, err, "gone\\nfile")


def test_terminal_escapes_in_a_log_never_reach_the_terminal(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    """A logger's colours, or a hostile line that would clear the screen or retitle the window."""
    logs = inputs(tmp_path)
    (logs / "train-1-node1.out").write_bytes(
        b"2026-01-01 00:00:00,000 - \x1b[32mINFO\x1b[0m - step 1 loss 2.0\n"
        b"[default0]:ValueError: \x1b[2J\x1b]0;pwned\x07 bad \x0e\xc2\x9b31m batch \x1bc\x1b(B\n")
    code, out, _ = run(capsys, "analyze", str(logs), "--verbose")
    assert code == 1
    assert "ValueError:  bad 31m batch" in out
    assert not any(ch in out for ch in "\x1b\x07\x0e\x9b")
    code, out, _ = run(capsys, "analyze", str(logs), "--format", "json")
    data = json.loads(out)
    assert data["verdict"]["summary"].endswith("ValueError:  bad 31m batch")
    assert "\\u001b" not in out and "\\u009b" not in out


def test_tens_of_thousands_of_failure_lines_are_analysed_in_seconds(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    """A job that printed an error on every step: the detectors stay linear in the failure lines
    (comparing each with every other took minutes)."""
    logs = inputs(tmp_path)
    lines = []
    for i in range(5000):
        lines.append(f"socketProgressOpt: Call to recv from 10.0.0.{i % 250}<{i}> failed : Connection reset by peer")
        lines.append(f"ValueError: bad batch {i}")
        lines.append(f"slurmstepd: error: *** JOB {i} ON node1 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME LIMIT ***")
    (logs / "train-1-node1.out").write_text("\n".join(lines) + "\n")
    (logs / "train-1-node2.out").write_text("".join(
        f"[2026-01-01 00:00:00,000] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process {i} "
        f"closing signal SIGTERM\n[default{i % 8}]:RuntimeError: step {i}\n" for i in range(5000)))
    started = time.monotonic()
    code, _, err = run(capsys, "analyze", str(logs))
    assert code == 1, err
    assert time.monotonic() - started < 30


# --- lint on big and odd scripts (issue 16) --------------------------------------------------


def test_lint_of_a_big_script_is_linear(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """215 KB of assignments and sruns took 48 s when every command recomputed the assignments."""
    script = tmp_path / "huge.sbatch"
    lines = ["#!/bin/bash", "#SBATCH --nodes=4", "#SBATCH --output=%x-%j.out"]
    for i in range(2500):
        lines.append(f'export STAGE_{i}_ARGS="--stage {i} --data /lustre/shard-{i:05d}"')
        lines.append(f'srun --kill-on-bad-exit=1 -o %x-%j-%N.out bash -c "python prep.py $STAGE_{i}_ARGS"')
    script.write_text("\n".join(lines) + "\n")
    assert script.stat().st_size > 200_000
    started = time.monotonic()
    code, out, err = run(capsys, "lint", str(script))
    assert time.monotonic() - started < 5, "lint must be linear in the script's size"
    assert code == 0 and "All checks passed!" in out, err


# --- outputs: text stays text, files are whole and never a log (issue 16) -------------------

BIDI = "\u202e\u2066\u2067\u2068\u2069"
CRASH = Path(__file__).parent / "goldens" / "LS301-crash-two-nodes" / "logs"


def test_bidi_controls_reach_no_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    logs = inputs(tmp_path)
    (logs / "train-1-node1.out").write_text(
        f"2026-01-01 00:00:00,000 - INFO - step 1\n[default0]:ValueError: evil{BIDI}txt.exe\n", encoding="utf-8")
    outputs = {}
    for fmt in ("text", "json"):
        code, outputs[fmt], _ = run(capsys, "analyze", str(logs), "--format", fmt)
        assert code == 1
    for name in ("r.html", "r.md"):
        code, _, err = run(capsys, "report", str(logs), "-o", str(tmp_path / "out" / name))
        assert code == 0, err
        outputs[name] = (tmp_path / "out" / name).read_text(encoding="utf-8")
    for name, out in outputs.items():
        assert "evil" in out and not any(c in out for c in BIDI), name


def test_a_dollar_in_a_host_name_keeps_every_chart(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    logs = inputs(tmp_path)
    for source in CRASH.iterdir():
        text = source.read_text().replace("node02", "n$^{$02")
        (logs / source.name.replace("node02", "n$^{$02")).write_text(text)
    code, _, err = run(capsys, "analyze", str(logs), "--charts", str(tmp_path / "charts"))
    assert code == 1, err
    assert sorted(p.name for p in (tmp_path / "charts").glob("*.png")) == [
        "cascade.png", "failure_curve.png", "last_activity.png", "progress_strip.png", "swimlane.png"]


def test_a_full_disk_leaves_no_cut_short_report(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    import logscope.atomic

    out = tmp_path / "out"
    out.mkdir()
    (out / "r.html").write_text("the previous report")

    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(logscope.atomic.os, "fsync", full)
    for name in ("r.html", "r.md"):
        code, _, err = run(capsys, "report", str(CRASH), "-o", str(out / name))
        assert_one_line_error(code, err, "No space left on device")
    assert (out / "r.html").read_text() == "the previous report"  # not replaced by half a report
    assert not (out / "r.md").exists()
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["r.html"]  # no temporary file left


def test_report_never_overwrites_a_log_through_a_link(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    logs = inputs(tmp_path)
    log = logs / "train-1-node1.out"
    log.write_text(GOOD)
    out = tmp_path / "out"
    (out / "r_files").mkdir(parents=True)
    os.link(log, out / "hard.html")  # a hard link: another name, the same file
    (out / "soft.html").symlink_to(log)
    os.link(log, out / "r_files" / "swimlane.png")  # a chart file that is the log
    for args in (["report", str(logs), "-o", str(out / "hard.html")],
                 ["report", str(logs), "-o", str(out / "soft.html")],
                 ["report", str(log), "-o", str(out / "r.md")]):
        code, _, err = run(capsys, *args)
        assert code == 2 and err.startswith("Error: ") and "Traceback" not in err, (args, err)
    assert log.read_text() == GOOD
    code, _, err = run(capsys, "analyze", str(logs), "--charts", str(out / "r_files"))
    assert code == 2 and "logs this report reads" in err
    assert log.read_text() == GOOD


def test_report_refuses_a_charts_folder_that_is_the_logs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`report LOGS -o PARENT/r.md` where LOGS is PARENT/r_files: the charts would go into the logs."""
    logs = tmp_path / "r_files"
    logs.mkdir()
    (logs / "train-1-node1.out").write_text(GOOD)
    code, _, err = run(capsys, "report", str(logs), "-o", str(tmp_path / "r.md"))
    assert_one_line_error(code, err, "inside the log folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r_files"]
    assert sorted(p.name for p in logs.iterdir()) == ["train-1-node1.out"]


def test_brackets_in_host_names_are_not_rich_markup(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    logs = inputs(tmp_path)
    for source in CRASH.iterdir():
        (logs / source.name.replace("node02", "n[red]02")).write_text(source.read_text().replace("node02",
                                                                                                 "n[red]02"))
    code, out, err = run(capsys, "analyze", str(logs), "--color", "never")
    assert code == 1, err
    assert "n[red]02" in out and "n02" not in out.replace("n[red]02", "")  # nowhere read as markup


def test_small_zstd_inflating_to_hundreds_of_megabytes_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # 200 KB that inflate to 512 MB of long lines: inflated in pieces, never whole.
    line = b"[default0]:" + b"x" * 100_000 + b" NCCL WARN boom\n"
    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    path = tmp_path / "train-1-node1.out.zst"
    with path.open("wb") as out:
        block = line * (8 * 1024 * 1024 // len(line))
        for _ in range(64):
            out.write(compressor.compress(block))
        out.write(compressor.flush())
    assert path.stat().st_size < 1_000_000
    probe = PEAK_KIB + ("import sys\nfrom pathlib import Path\nfrom logscope.ingest import discover, read_file\n"
                        "r = read_file(discover([Path(sys.argv[1])])[0][0])\n"
                        "print(r.lines_read, peak_kib() // 1024)\n")
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True,
                         timeout=300).stdout.split()
    assert int(out[0]) == 64 * (8 * 1024 * 1024 // len(line))
    assert int(out[1]) < 800, f"peak {out[1]} MB for 512 MB inflated"  # it was 1.4 GB, growing with the size


def test_events_of_one_kind_are_bounded_across_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Thousands of processes printing one NCCL WARN each: thinning per process keeps them all.
    # Each on a host of its own: thousands of processes of one host (no rank said) are one rank's
    # attempts, bounded by PROCESS_KEEP first (the case after this one).
    from logscope.ingest import FileRead, discover, read_file, thinning

    monkeypatch.setattr(thinning, "KIND_KEEP", 200)
    path = tmp_path / "train-1-node1.out"
    path.write_text("".join(f"n{i}:{1000 + i}:{2000 + i} [0] misc/socket.cc:50 NCCL WARN socketProgress: "
                            f"Connection closed by remote peer node2<{i}>\n" for i in range(5000)) + "ValueError: x\n")
    result = read_file(discover([path])[0][0])
    assert isinstance(result, FileRead)
    assert result.lines_read == 5001 and result.lines_recognised == 5001  # counts stay exact
    warns = result.events.filter(result.events["event"] == "nccl_socket_error")
    assert warns.height == 200
    assert warns["line"].min() == 1 and warns["line"].max() == 5000  # the first and the last kept
    assert "exception" in result.events["event"].to_list()  # other kinds untouched


def test_processes_of_one_rank_saying_the_same_are_bounded(tmp_path: Path) -> None:
    # A restart loop: thousands of processes of one host, one after the other, each saying the
    # same words (numbers aside): the first and last PROCESS_KEEP // 2 processes' lines are kept.
    from logscope.ingest import FileRead, discover, read_file, thinning

    path = tmp_path / "train-1-node1.out"
    path.write_text("".join(f"node1:{1000 + i}:{2000 + i} [0] misc/socket.cc:50 NCCL WARN socketProgress: "
                            f"Connection closed by remote peer node2<{i}>\n" for i in range(5000)) + "ValueError: x\n")
    result = read_file(discover([path])[0][0])
    assert isinstance(result, FileRead)
    assert result.lines_read == 5001 and result.lines_recognised == 5001  # counts stay exact
    warns = result.events.filter(result.events["event"] == "nccl_socket_error")
    half = thinning.PROCESS_KEEP // 2
    assert warns["line"].to_list() == [*range(1, half + 1), *range(5001 - half, 5001)]
    assert "exception" in result.events["event"].to_list()  # other kinds untouched


# --- scan: one bad job, cache or table must not spoil the scan ------------------------------


def _jobs(root: Path, count: int) -> Path:
    for n in range(count):
        (root / f"train-{100 + n}-node1.out").write_text(GOOD)
    return root


def _kill_the_worker_of_job_103(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan's worker processes start with a sitecustomize: analysing job 103 kills its process,
    as the kernel's OOM killer would, whether it is analysed alone or in a batch of jobs. (This
    process started before it exists.)"""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import os\nimport logscope.analysis as a\nalone, together = a.analyze, a.analyze_jobs\n"
        "def kill_for(paths):\n"
        "    if any('train-103-' in str(p) for p in paths):\n        os._exit(9)\n"
        "def analyze(paths, **kw):\n    kill_for(paths)\n    return alone(paths, **kw)\n"
        "def analyze_jobs(inputs, **kw):\n    kill_for([p for paths in inputs for p in paths])\n"
        "    return together(inputs, **kw)\n"
        "a.analyze, a.analyze_jobs = analyze, analyze_jobs\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(hooks), *sys.path]))


def test_a_worker_killed_costs_only_its_own_job(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _kill_the_worker_of_job_103(tmp_path, monkeypatch)
    (tmp_path / "logs").mkdir()
    logs = _jobs(tmp_path / "logs", 16)  # two workers: batches of two jobs
    out_table = tmp_path / "out" / "t.jsonl"
    code, _, err = run(capsys, "scan", str(logs), "-j", "2", "-o", str(out_table))
    assert code == 0, err
    rows = [json.loads(line) for line in out_table.read_text().splitlines()]
    assert len(rows) == 16
    bad = [r for r in rows if r["error"]]
    assert [r["job_id"] for r in bad] == ["103"], bad
    assert "died" in bad[0]["error"]
    assert all(r["category"] == "crash" for r in rows if r["job_id"] != "103")


def test_jobs_left_when_workers_stop_starting_are_analysed_here_but_not_those_a_worker_died_on(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As above, job 103 kills the worker analysing it; then no new worker can start (no process
    # left). The jobs not yet started are analysed in the scan's own process; those that were
    # running when the worker died (one of them kills its process) get an error row, not a try here.
    from logscope import scan as scan_module

    _kill_the_worker_of_job_103(tmp_path, monkeypatch)
    pools: list[int] = []
    first_pool = scan_module.new_pool

    def only_one_pool(count: int) -> object:
        pools.append(count)
        if len(pools) > 1:
            raise OSError(11, "Resource temporarily unavailable")
        return first_pool(count)

    monkeypatch.setattr(scan_module, "new_pool", only_one_pool)
    (tmp_path / "logs").mkdir()
    logs = _jobs(tmp_path / "logs", 16)  # two workers: batches of two jobs
    out_table = tmp_path / "out" / "t.jsonl"
    code, _, err = run(capsys, "scan", str(logs), "-j", "2", "-o", str(out_table))
    assert code == 0, err
    assert "Warning: worker processes could not start" in err
    rows = [json.loads(line) for line in out_table.read_text().splitlines()]
    assert len(rows) == 16
    bad = [r for r in rows if r["error"]]
    assert "103" in [r["job_id"] for r in bad] and len(bad) <= 4, bad
    assert all("died" in r["error"] for r in bad)
    assert all(r["category"] == "crash" for r in rows if not r["error"])


@pytest.mark.parametrize("cache", [
    '{"jobs": []}', '{"version": 2, "jobs": []}', '"just a string"', "not json", "string entries", "damaged row",
])
def test_a_damaged_cache_costs_a_rescan(capsys: pytest.CaptureFixture[str], tmp_path: Path, cache: str) -> None:
    (tmp_path / "logs").mkdir()
    logs = _jobs(tmp_path / "logs", 2)
    table, cache_file = tmp_path / "t.csv", tmp_path / "c.json"
    code, _, err = run(capsys, "scan", str(logs), "-j", "1", "-o", str(table), "--cache", str(cache_file))
    assert code == 0, err
    if cache in ("damaged row", "string entries"):  # a well-formed cache holding what no scan writes
        data = json.loads(cache_file.read_text())
        for key, entry in data["jobs"].items():
            if cache == "string entries":
                data["jobs"][key] = "a string"
            else:  # a bad date and wrong types
                entry["row"].update(newest_file="not a date", files="many")
        cache_file.write_text(json.dumps(data))
    else:
        cache_file.write_text(cache)
    code, out, err = run(capsys, "scan", str(logs), "-j", "1", "-o", str(table), "--cache", str(cache_file),
                         "--format", "json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["analysed"], summary["cached"], summary["unreadable"]) == (2, 0, 0)
    code, out, err = run(capsys, "scan", str(logs), "-j", "1", "-o", str(table), "--cache", str(cache_file),
                         "--format", "json")
    assert json.loads(out)["cached"] == 2  # and the cache written again is whole


def test_a_cache_that_is_a_fifo_is_refused_not_waited_on(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    logs = _jobs(tmp_path / "logs", 1)
    os.mkfifo(tmp_path / "cache.fifo")
    code, _, err = run(capsys, "scan", str(logs), "-j", "1", "--cache", str(tmp_path / "cache.fifo"))
    assert_one_line_error(code, err, "not a regular file")


@pytest.mark.parametrize("since", ["2000-01-01T00:00+02:00", "2000-01-01T00:00:00Z", "2999-01-01T00:00-05:00"])
def test_scan_since_with_a_utc_offset(capsys: pytest.CaptureFixture[str], tmp_path: Path, since: str) -> None:
    (tmp_path / "logs").mkdir()
    logs = _jobs(tmp_path / "logs", 1)
    code, out, err = run(capsys, "scan", str(logs), "-j", "1", "--since", since, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["summary"]["jobs"] == (0 if since.startswith("2999") else 1)


def test_merge_of_a_table_with_the_right_columns_and_wrong_types(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path) -> None:
    import polars as pl

    from logscope.scan import SCAN_SCHEMA

    bad = tmp_path / "bad.parquet"
    pl.DataFrame({name: ["x"] for name in SCAN_SCHEMA}).write_parquet(bad)
    code, _, err = run(capsys, "merge", str(bad), "-o", str(tmp_path / "m.parquet"))
    assert_one_line_error(code, err, "not a logscope scan table")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc to see the scan's workers start")
@pytest.mark.usefixtures("sigint_heard")
def test_ctrl_c_during_a_scan_is_one_line_and_exit_130(tmp_path: Path) -> None:
    import signal
    import subprocess

    # The scan's processes start with this sitecustomize: the worker that analyses job 100, alone
    # or in a batch, stalls, so the scan is still running whenever Ctrl-C comes (however fast the
    # other jobs go).
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import time\nimport logscope.analysis as a\nalone, together = a.analyze, a.analyze_jobs\n"
        "def stall_for(paths):\n"
        "    if any('train-100-' in str(p) for p in paths):\n        time.sleep(3600)\n"
        "def analyze(paths, **kw):\n    stall_for(paths)\n    return alone(paths, **kw)\n"
        "def analyze_jobs(inputs, **kw):\n    stall_for([p for paths in inputs for p in paths])\n"
        "    return together(inputs, **kw)\n"
        "a.analyze, a.analyze_jobs = analyze, analyze_jobs\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    for n in range(40):
        (logs / f"train-{100 + n}-node1.out").write_text(GOOD)
    # As from a terminal: Ctrl-C's default action, whatever this test run inherited (sigint_heard).
    proc = subprocess.Popen([sys.executable, "-m", "logscope", "scan", str(logs), "-j", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(hooks), *sys.path])})
    try:
        # Once the workers run (children of the scan), the stalled job keeps the scan from ending.
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(children.read_text().split()) < 2:
            time.sleep(0.2)
        time.sleep(1)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: every process of the group
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # never leave the stalled scan behind
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, (out, err)
    assert err == "Interrupted.\n", (out[-500:], err)  # one line: no traceback from the workers


# --- outputs reached through links never overwrite a log -------------------------------------


@pytest.mark.parametrize("link", ["table symlink", "table hard link", "cache hard link", "cache temporary symlink"])
def test_scan_outputs_through_links_never_overwrite_a_log(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          link: str) -> None:
    (tmp_path / "logs").mkdir()
    logs = _jobs(tmp_path / "logs", 2)
    log = logs / "train-100-node1.out"
    before = log.read_bytes()
    out = tmp_path / "out"
    out.mkdir()
    table, cache = out / "t.csv", out / "c.json"
    if link == "table symlink":
        table.symlink_to(log)
    elif link == "table hard link":
        os.link(log, table)
    elif link == "cache hard link":
        os.link(log, cache)
    else:  # the temporary file a cache used to be written to first
        (out / "c.json.tmp").symlink_to(log)
    code, _, err = run(capsys, "scan", str(logs), "-j", "1", "-o", str(table), "--cache", str(cache))
    assert log.read_bytes() == before
    if link == "cache temporary symlink":
        assert code == 0, err
        assert json.loads(cache.read_text())["version"] == 2
    else:
        assert_one_line_error(code, err)
        assert "log" in err


# --- a full disk, Ctrl-C: one line --------------------------------------------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["analyze", str(CRASH)], ["analyze", str(CRASH), "--format", "json"],
                                  ["scan", str(CRASH), "-j", "1"]])
def test_standard_output_on_a_full_disk(args: list[str]) -> None:
    with open("/dev/full", "w") as full:  # noqa: PTH123 - a device, not a path to build
        done = subprocess.run([sys.executable, "-m", "logscope", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "Error: cannot write the output: No space left on device\n", done.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("table_format", ["parquet", "csv", "jsonl"])
def test_scan_table_to_a_full_disk(capsys: pytest.CaptureFixture[str], table_format: str) -> None:
    code, _, err = run(capsys, "scan", str(CRASH), "-j", "1", "-o", "/dev/full", "--table-format", table_format)
    assert_one_line_error(code, err, "cannot write the table /dev/full")


def test_ctrl_c_during_analyze(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import logscope.analysis

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(logscope.analysis, "analyze", interrupted)
    code, out, err = run(capsys, "analyze", str(CRASH))
    assert (code, out, err) == (130, "", "Interrupted.\n")


@pytest.mark.parametrize("how", ["sparse 4 GB", "written NUL bytes", "gz"])
def test_a_file_that_starts_with_a_hole_is_read_after_it(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                         how: str) -> None:
    # logrotate's copytruncate: the file is truncated while its writer keeps its offset, so what it
    # writes next lands after a hole as long as the old file was.
    path = tmp_path / "train-1-node1.out"
    if how == "sparse 4 GB":
        _sparse(path, 4 * 1024**3 + len(GOOD), tail=GOOD.encode())
    elif how == "written NUL bytes":
        path.write_bytes(bytes(3 * 1024 * 1024 + 7) + GOOD.encode())
    else:
        path = tmp_path / "train-1-node1.out.gz"
        path.write_bytes(gzip.compress(bytes(100_000) + GOOD.encode()))
    started = time.monotonic()
    code, out, err = run(capsys, "analyze", str(path), "--format", "json")
    assert time.monotonic() - started < 30
    assert code == 1, err
    data = json.loads(out)
    assert data["job"]["lines_read"] == 2 and data["verdict"]["category"] == "crash"
    assert any("NUL bytes at its start skipped" in w for w in data["warnings"]), data["warnings"]


# --- the same files, however they are given -----------------------------------------------------

LOG_DIR = Path(__file__).parent / "goldens" / "LS302-log-dir-attempts" / "logs"


def test_a_torchrun_log_dir_gives_one_verdict_however_it_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p) for p in LOG_DIR.rglob("*") if p.is_file())
    attempts = sorted(str(p) for p in LOG_DIR.glob("*/attempt_*"))
    outputs = []
    for given in ([str(LOG_DIR)], files, attempts):
        code, out, err = run(capsys, "analyze", *given, "--format", "json")
        assert code == 0, err  # attempt_0 failed, attempt_1 ran to its last step: recovered
        data = json.loads(out)
        data["job"].pop("files")  # named as given
        outputs.append(data)
    assert outputs[0]["verdict"]["category"] == "healthy"
    assert any(f["code"] == "LS301" and f["role"] == "context" for f in outputs[0]["findings"])
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]  # error.json read as one, not as text


def test_scan_takes_a_torchrun_log_dir_as_one_job(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "scan", str(LOG_DIR), "-j", "1", "-o", str(tmp_path / "t.jsonl"))
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["files"] == 9 and rows[0]["category"] == "healthy", rows


@pytest.mark.parametrize("nodes", ["n[0-300000000]", "gpu[01-", "gpu[a-b]"])
def test_a_hostile_node_list_in_a_log_names_nobody(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    nodes: str) -> None:
    # srun's "Node failure on <hostlist>": a range of 300 million names was expanded in full (the
    # analysis never ended); a garbled list named made-up hosts
    (tmp_path / "train-1-n1.out").write_text(
        f"2026-01-01 00:00:00,000 - INFO - step 1/10 loss 2.0\nsrun: error: Node failure on {nodes}\n")
    code, out, err = run(capsys, "analyze", str(tmp_path), "--format", "json")
    assert code == 1 and not err
    verdict = json.loads(out)["verdict"]
    assert verdict["category"] == "hardware" and verdict["root_cause"] is None


def test_a_node_list_in_a_log_is_expanded_as_slurm_does() -> None:
    from logscope.accounting.hostlist import hosts_named

    assert hosts_named("a[1-2]-ib[0-1],gpu07") == ["a1-ib0", "a1-ib1", "a2-ib0", "a2-ib1", "gpu07"]
    assert hosts_named("gpu[01-03,07]") == ["gpu01", "gpu02", "gpu03", "gpu07"]
