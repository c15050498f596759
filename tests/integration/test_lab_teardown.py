"""A lab whose process is killed (SIGKILL: a killed test run) still leaves nothing behind: its
watchdog (`lab.py reap`) stops every daemon (MariaDB and slurmdbd too), every job process, the
network namespaces, the bridge and the temp dir."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lab  # noqa: E402

pytestmark = pytest.mark.integration

STARTER = f"""
import sys, time
sys.path.insert(0, {str(HERE)!r})
import lab
running = lab.SlurmLab(nodes=1)
running.start()
print(running.short, running.dir, flush=True)
time.sleep(600)
"""


def leftovers(short: str, lab_dir: Path) -> list[str]:
    """What is left of lab `short`: its processes, namespaces, bridge and temp dir."""
    probe = lab.SlurmLab(network="plain", accounting=False)
    probe.id, probe.dir = f"lab-{short}", lab_dir
    left = [f"pid {pid}: {lab._cmdline(pid)[:100]}" for pid in probe.lab_pids()]
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    left += [line for line in netns.splitlines() if line.startswith(f"slurmlab-{short}-")]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=False).stdout
    left += [f"link slb{short}" for line in links.splitlines() if f" slb{short}:" in line]
    if lab_dir.exists():
        left.append(f"dir {lab_dir}")
    return left


def test_a_killed_lab_leaves_nothing() -> None:
    reason = lab.skip_reason()
    if reason:
        pytest.skip(reason)
    starter = subprocess.Popen([sys.executable, "-c", STARTER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        assert starter.stdout is not None
        line = starter.stdout.readline()  # once the lab is up
        assert line, f"the lab did not start: {starter.stderr.read() if starter.stderr else ''}"
        short, lab_dir = line.split()[0], Path(line.split()[1])
        assert leftovers(short, lab_dir), "the lab is up: it has processes and a dir"
    finally:
        starter.send_signal(signal.SIGKILL)
        starter.wait()
    deadline = time.monotonic() + 90
    while (left := leftovers(short, lab_dir)) and time.monotonic() < deadline:
        time.sleep(1)
    assert not left, f"left behind by the killed lab {short}: {left}"
