"""``logscope scan``'s worker processes and helpers end with it, whatever signal ends it: SIGTERM and
SIGHUP as Ctrl-C (one line, exit 128 + the signal, no "leaked semaphore" warning), a signal to the
whole process group, and ``kill -9`` of the scan itself (the workers notice their parent is gone).

The workers are made to stall on their first batch (a sitecustomize that only they load replaces
the batch's analysis with a sleep, and says so in a file), so that the scan is surely still running,
its workers started, when it is signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from accounting_support import job_folder

pytestmark = [pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc"),
              pytest.mark.usefixtures("sigint_heard")]  # the scan hears the SIGINT sent to it

# Hang guards, not timing assertions: how long the test waits for what must happen.
GUARD_S = 60.0

STALL = textwrap.dedent("""
    import os, sys, time
    if os.environ.get("LOGSCOPE_TEST_STALL") and "spawn_main" in " ".join(getattr(sys, "orig_argv", [])):
        import logscope.scan

        def stalled(jobs, patterns):
            open(os.path.join(os.environ["LOGSCOPE_TEST_STALL"], str(os.getpid())), "w").close()
            time.sleep(3600)

        logscope.scan.analyse_batch = stalled
""")


def group(pgid: int) -> dict[int, str]:
    """The live processes of process group ``pgid``: pid -> command line (zombies left out)."""
    out: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out[int(entry.name)] = command
    return out


def until(condition: object, what: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {GUARD_S:g} s: {what}")
        time.sleep(0.05)


@pytest.fixture
def stalled_scan(tmp_path: Path) -> subprocess.Popen[str]:
    """A ``logscope scan -j 2`` of a few jobs, in a session (and process group) of its own, whose two
    workers have started and stall; killed with its group at the end whatever happened."""
    logs = tmp_path / "logs"
    for n in range(4):
        job_folder(logs / f"job-{n}", "crash-cascade")
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(STALL)
    stalled = tmp_path / "stalled"  # a file per worker that took its batch and stalls
    stalled.mkdir()
    env = {**os.environ, "LOGSCOPE_TEST_STALL": str(stalled),
           "PYTHONPATH": os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])}
    scan = subprocess.Popen([sys.executable, "-m", "logscope", "scan", str(logs), "-j", "2", "--no-cache", "-o",
                             str(tmp_path / "t.csv")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True, cwd=tmp_path)
    try:
        # Both workers started and took a batch: signalled while one still starts, a worker would
        # print multiprocessing's own start-up traceback, which is not what these tests are about.
        until(lambda: len(list(stalled.iterdir())) == 2, "the scan's two workers start and take a batch each")
        yield scan
    finally:
        for pid in group(scan.pid):
            os.kill(pid, signal.SIGKILL)
        scan.kill()
        scan.communicate()


def ended_alone(scan: subprocess.Popen[str]) -> tuple[int, str]:
    """Wait for the scan to end and every process of its group with it; its exit code and stderr."""
    _, err = scan.communicate(timeout=GUARD_S)
    until(lambda: not group(scan.pid), f"the scan's workers and helpers end with it: {group(scan.pid)}")
    return scan.returncode, err


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_a_signal_to_the_scan_ends_it_and_its_workers(stalled_scan: subprocess.Popen[str], signum: int,
                                                      code: int) -> None:
    os.kill(stalled_scan.pid, signum)
    returncode, err = ended_alone(stalled_scan)
    assert returncode == code
    line = "Interrupted." if signum == signal.SIGINT else f"Interrupted ({signal.Signals(signum).name})."
    assert err == line + "\n"


def test_sigterm_to_the_process_group_says_nothing_of_leaked_semaphores(
        stalled_scan: subprocess.Popen[str]) -> None:
    os.killpg(stalled_scan.pid, signal.SIGTERM)
    returncode, err = ended_alone(stalled_scan)
    assert returncode == 143
    assert err == "Interrupted (SIGTERM).\n"  # no "leaked semaphore objects", no worker's traceback


def test_kill_9_of_the_scan_leaves_no_worker_behind(stalled_scan: subprocess.Popen[str]) -> None:
    os.kill(stalled_scan.pid, signal.SIGKILL)
    returncode, err = ended_alone(stalled_scan)
    assert returncode == -signal.SIGKILL
    assert err == ""  # the resource tracker cleans up quietly
