"""``logscope watch JOBID`` beside a real SLURM job (two nodes, torchrun, gloo, a 10-minute process-group
timeout; ``jobs/watch.sbatch``), run on the lab's controller side as a user would run it from a login node:

* one rank stopped (SIGSTOP to rank 3, on node02, a second after it logged step 3): the watch says
  a ``stall`` naming rank 3 on node02 within 3 minutes of the stop, long before the timeout could fire;
  once the job is cancelled, SLURM says it ended and the watch ends with its verdict;
* the same job without the stop: no alert at all, then ``end`` with the healthy verdict, exit code 0.

The lab is this module's own (``lab.SlurmLab``, started once for both jobs). Each job's files and the
watch's events are kept in the test's tmp folder (the assertion messages name it).
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lab  # noqa: E402

pytestmark = pytest.mark.integration

LOGSCOPE = Path(sys.executable).parent / "logscope"
NAMED_WITHIN_S = 180.0  # the bound: the stopped rank named within 3 minutes
JOB_LIMIT_S = 300.0
STOP_AFTER_S = 1.0  # after rank 3 logged step 3; a step sleeps LAB_STEP_SLEEP=4 s (watch.sbatch)
STEP_3 = re.compile(r"\[node02 rank 3/4 local 1\] step 3/\d+ loss")


@pytest.fixture(scope="module")
def live() -> Iterator[lab.SlurmLab]:
    reason = lab.skip_reason()
    if reason:
        pytest.skip(reason)
    with lab.SlurmLab(nodes=2) as running:
        yield running


class Watch:
    """``logscope watch JOBID --format jsonl`` as a user of the lab's cluster runs it."""

    def __init__(self, live: lab.SlurmLab, job_id: int, cwd: Path) -> None:
        self.process = subprocess.Popen([str(LOGSCOPE), "watch", str(job_id), "--format", "jsonl"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=live.env(),
                                        cwd=cwd)
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.events: list[tuple[float, dict[str, Any]]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.queue.put(line)
        self.queue.put(None)

    def next_event(self, until: float) -> dict[str, Any] | None:
        left = until - time.monotonic()
        if left <= 0:
            return None
        try:
            line = self.queue.get(timeout=left)
        except queue.Empty:
            return None
        if line is None:
            return None
        event: dict[str, Any] = json.loads(line)
        self.events.append((time.monotonic(), event))
        return event

    def finish(self, timeout: float) -> tuple[int, str]:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        while self.next_event(time.monotonic() + 1) is not None:
            pass
        assert self.process.stderr is not None
        return code, self.process.stderr.read()


def submit(live: lab.SlurmLab, name: str) -> tuple[int, Path]:
    work = live.dir / "jobs" / name
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "jobs" / "watch.sbatch", work / "watch.sbatch")
    shutil.copy(HERE / "train.py", work / "train.py")
    return live.sbatch(work / "watch.sbatch", work, extra_args=[f"--job-name={name}"]), work


def keep(work: Path, watch: Watch, dest: Path) -> Path:
    """The job's files and the watch's events, kept for the assertion messages."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in work.glob("*.out"):
        shutil.copy(path, dest / path.name)
    (dest / "watch.jsonl").write_text("".join(json.dumps(event) + "\n" for _, event in watch.events))
    return dest


def worker_pid(live: lab.SlurmLab, rank: int) -> int | None:
    """The pid of the training process of global rank ``rank`` (torchrun's worker, not its agent)."""
    for pid in live.lab_pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if f"RANK={rank}".encode() in environ and b"train.py" in cmdline and b"torch.distributed.run" not in cmdline:
            return pid
    return None


def test_a_stopped_rank_is_named_while_the_job_hangs(live: lab.SlurmLab, tmp_path: Path) -> None:
    job_id, work = submit(live, "watch-stop")
    watch = Watch(live, job_id, tmp_path)
    node02 = work / f"watch-stop-{job_id}-node02.out"
    deadline = time.monotonic() + JOB_LIMIT_S
    while not (node02.is_file() and STEP_3.search(node02.read_text(errors="replace"))):
        assert time.monotonic() < deadline, f"rank 3 never logged step 3 (job {job_id}, {work})"
        time.sleep(0.1)
    seen = time.monotonic()
    pid = worker_pid(live, 3)
    assert pid is not None, f"no training process of rank 3 in the lab (job {job_id})"
    # A quarter of a step on: rank 3 has finished step 4's collectives (milliseconds) and sleeps before it
    # logs step 4, so the others log step 4 and it never does. The step's sleep (watch.sbatch) leaves
    # seconds either side for a loaded machine's delays in forwarding the line and scanning /proc.
    time.sleep(max(0.0, seen + STOP_AFTER_S - time.monotonic()))
    os.kill(pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        stall = None
        while (event := watch.next_event(stopped + NAMED_WITHIN_S)) is not None:
            if event["kind"] == "stall":
                stall = event
                break
        kept = keep(work, watch, tmp_path / "capture")
        if stall is None:
            code, stderr = watch.finish(timeout=5)
            raise AssertionError(f"no stall within {NAMED_WITHIN_S:.0f} s of the stop (the watch: exit {code}, "
                                 f"{stderr[-2000:]}); see {kept}")
        assert (stall["rank"], stall["host"]) == (3, "node02"), f"{stall['summary']}; see {kept}"
        assert stall["ranks"] == [3] and stall["hosts"] == ["node02"]
        assert stall["evidence"]["file"].endswith(node02.name)
    finally:
        live.cmd(["scancel", str(job_id)], check=False)
        os.kill(pid, signal.SIGCONT)
    code, stderr = watch.finish(timeout=JOB_LIMIT_S)
    kept = keep(work, watch, tmp_path / "capture")
    kinds = [event["kind"] for _, event in watch.events]
    assert kinds[-1] == "end", f"exit {code}, {kinds}; {stderr[-2000:]}; see {kept}"
    assert kinds.count("stall") == 1
    assert code in (1, 3), stderr[-2000:]  # the verdict's: the job was cancelled while it hung


def test_the_same_job_without_the_stop_raises_no_alert(live: lab.SlurmLab, tmp_path: Path) -> None:
    job_id, work = submit(live, "watch-healthy")
    watch = Watch(live, job_id, tmp_path)
    code, stderr = watch.finish(timeout=JOB_LIMIT_S)
    kept = keep(work, watch, tmp_path / "capture")
    kinds = [event["kind"] for _, event in watch.events]
    assert kinds == ["end"], f"{[e for _, e in watch.events]}; {stderr[-2000:]}; see {kept}"
    end = watch.events[-1][1]
    assert end["verdict"]["category"] == "healthy", f"{end['summary']}; see {kept}"
    assert code == 0, stderr[-2000:]
