"""``logscope watch DIR --format jsonl --stall 5`` running beside a job: sample jobs are written into a
folder line by line while the command watches it.

* ``hang-quiet-rank`` up to its stall (before the first watchdog line): a ``stall`` event names rank 13
  on gpu-node02 within 30 s after the writes stop; Ctrl-C then ends the watch with exit code 130;
* ``silent-hang`` up to its stall: a ``stall`` event that names no rank (job-wide);
* ``healthy`` at several speeds: no alert, then ``end`` with the healthy verdict, exit code 0.

Real processes and real time: the bounds are generous (the stall is said ~5 s after the last progress
line; the test allows 30), and nothing is asserted about how fast the machine is within them.
"""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
pytestmark = pytest.mark.usefixtures("sigint_heard")  # the watch hears the Ctrl-C sent to it
STOP = re.compile(r"Watchdog caught|CANCELLED AT|Job step aborted|SignalException")
STALL_WITHIN_S = 30.0
END_WITHIN_S = 60.0


class Watching:
    """``logscope watch`` run on a folder, its JSON lines read as they come."""

    def __init__(self, folder: Path, *args: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "logscope", "watch", str(folder), "--format", "jsonl",
                                         *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def next_event(self, until: float) -> dict[str, Any] | None:
        """The next event said before ``until`` (time.monotonic()), or None."""
        while (left := until - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                return None
            event: dict[str, Any] = json.loads(line)
            self.events.append(event)
            return event
        return None

    def stop(self) -> tuple[int, str]:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        assert self.process.stderr is not None
        return code, self.process.stderr.read()


@contextmanager
def watching(folder: Path, *args: str) -> Iterator[Watching]:
    watch = Watching(folder, *args)
    try:
        yield watch
    finally:
        if watch.process.poll() is None:
            watch.process.kill()
            watch.process.wait()


def replay(sample: str, folder: Path, *, lines_a_write: int, pause: float, stop_at: re.Pattern[str] | None = None
           ) -> float:
    """Write the sample's files into ``folder``, each as far as the others (nodes write side by side),
    ``lines_a_write`` lines of the longest at a time with ``pause`` seconds between; return
    time.monotonic() after the last write."""
    files: dict[str, list[bytes]] = {}
    for path in sorted((SAMPLES / sample).glob("*.out")):
        lines = path.read_bytes().splitlines(keepends=True)
        if stop_at is not None:
            lines = lines[:next((n for n, line in enumerate(lines) if stop_at.search(line.decode(errors="replace"))),
                                len(lines))]
        files[path.name] = lines
    longest = max(len(lines) for lines in files.values())
    outs = {name: (folder / name).open("ab") for name in files}
    try:
        for at in range(0, longest, lines_a_write):
            for name, lines in files.items():
                start, end = (len(lines) * n // longest for n in (at, min(at + lines_a_write, longest)))
                outs[name].write(b"".join(lines[start:end]))
                outs[name].flush()
            if pause:
                time.sleep(pause)
    finally:
        for out in outs.values():
            out.close()
    return time.monotonic()


def following(watch: Watching, folder: Path, within: float = 60.0) -> None:
    """Wait until the watch holds the folder's files open: its first look is under way, and its
    SIGTERM handler set (it is set before the first look)."""
    deadline = time.monotonic() + within
    fds = Path(f"/proc/{watch.process.pid}/fd")
    while time.monotonic() < deadline:
        try:
            if any(str(fd.readlink()).startswith(str(folder)) for fd in fds.iterdir()):
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"the watch did not open the files of {folder} within {within:.0f} s")


def stall_after_writes_stop(watch: Watching, stopped: float) -> dict[str, Any]:
    deadline = stopped + STALL_WITHIN_S
    while (event := watch.next_event(deadline)) is not None:
        assert event["kind"] != "end", event
        if event["kind"] == "stall":
            return event
    raise AssertionError(f"no stall event within {STALL_WITHIN_S:.0f} s after the writes stopped: {watch.events}")


def test_the_quiet_rank_is_named_while_the_job_hangs(tmp_path: Path) -> None:
    with watching(tmp_path, "--stall", "5") as watch:
        stopped = replay("hang-quiet-rank", tmp_path, lines_a_write=5, pause=0.01, stop_at=STOP)
        stall = stall_after_writes_stop(watch, stopped)
        assert (stall["rank"], stall["host"], stall["ranks"]) == (13, "gpu-node02", [13])
        assert stall["seconds_quiet"] >= 5
        assert stall["evidence"]["file"].endswith("train-4242002-gpu-node02.out")
        assert "opCount 26" in stall["evidence"]["text"]
        assert [e["kind"] for e in watch.events] == ["stall"]  # nothing else: no error, no second stall
        code, stderr = watch.stop()  # Ctrl-C
    assert code == 130 and "Interrupted." in stderr and "Traceback" not in stderr


def test_a_silent_hang_is_job_wide(tmp_path: Path) -> None:
    with watching(tmp_path, "--stall", "5") as watch:
        stopped = replay("silent-hang", tmp_path, lines_a_write=5, pause=0.01, stop_at=STOP)
        stall = stall_after_writes_stop(watch, stopped)
        assert stall["rank"] is None and stall["host"] is None and stall["ranks"] == []
        assert "job-wide, no rank behind" in stall["summary"]
        watch.stop()


@pytest.mark.parametrize(("lines_a_write", "pause"), [(100_000, 0.0), (1, 0.002), (25, 0.05)],
                         ids=["all-at-once", "line-by-line", "bursts"])
def test_a_healthy_job_raises_no_alert(tmp_path: Path, lines_a_write: int, pause: float) -> None:
    with watching(tmp_path, "--stall", "5") as watch:
        replay("healthy", tmp_path, lines_a_write=lines_a_write, pause=pause)
        end = watch.next_event(time.monotonic() + END_WITHIN_S)
        assert end is not None and end["kind"] == "end", watch.events
        assert end["verdict"]["category"] == "healthy"
        assert watch.process.wait(timeout=30) == 0
        assert watch.next_event(time.monotonic() + 1) is None  # nothing after the end


def test_sigterm_ends_the_watch_with_the_verdict(tmp_path: Path) -> None:
    """What SLURM sends a watch started in the batch script when the job ends: the last look, then
    the verdict (here: the logs stop with rank 13 behind, LS104), its exit code."""
    replay("hang-quiet-rank", tmp_path, lines_a_write=100_000, pause=0.0, stop_at=STOP)
    with watching(tmp_path) as watch:
        following(watch, tmp_path)  # (the default stall is a minute away)
        watch.process.send_signal(signal.SIGTERM)
        code = watch.process.wait(timeout=120)
        assert watch.process.stderr is not None
        stderr = watch.process.stderr.read()
        end = watch.next_event(time.monotonic() + 10)
    assert end is not None and end["kind"] == "end", (code, stderr, watch.events)
    assert "stopped (SIGTERM)" in end["summary"]
    assert end["verdict"]["finding"] == "LS104" and (end["rank"], end["host"]) == (13, "gpu-node02")
    assert code == 1
