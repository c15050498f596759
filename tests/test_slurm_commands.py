"""``sacct``/``scontrol`` as logscope runs them: output read with a size cap, and the whole process group
killed on timeout or overflow (a command that never stops printing, or whose child holds the pipe)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from logscope.accounting import query
from logscope.errors import AccountingError

# The hang guard of the tests that run logscope in a process of its own (not a timing assertion:
# without the fix, the command waits on a pipe until the child holding it ends).
GUARD_S = 120


def script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not reaped by whoever adopted it, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return "\nState:\tZ" not in status


def test_a_command_that_never_stops_printing_is_cut_off(tmp_path: Path) -> None:
    endless = script(tmp_path, "sacct", """
        import sys
        line = b"4242|train|FAILED|" + b"x" * 1000 + b"\\n"
        while True:
            sys.stdout.buffer.write(line)
    """)
    with pytest.raises(AccountingError, match="printed more than 1 MiB"):
        query.run_capped([str(endless)], 60, 1024 * 1024)


def test_the_cap_is_per_stream_and_output_within_it_is_whole(tmp_path: Path) -> None:
    chatty = script(tmp_path, "sacct", """
        import sys
        sys.stdout.write("o" * 700000)
        sys.stderr.write("e" * 700000)
        sys.exit(3)
    """)
    code, out, err = query.run_capped([str(chatty)], 60, 1024 * 1024)
    assert (code, out, err) == (3, b"o" * 700000, b"e" * 700000)


def test_a_command_whose_child_holds_the_pipe_is_killed_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script(tmp_path, "sacct", f"""
        import os, subprocess, sys, time
        # a child that inherits standard output and outlives its parent (a wrapper's helper)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        sys.stdout.write("JobID|JobName|State\\n")
        sys.stdout.flush()
        time.sleep(600)
    """)
    driver = textwrap.dedent("""
        import sys
        from logscope.accounting import query
        query.TIMEOUT_S = 2
        from logscope.cli import main
        sys.exit(main(["analyze", "4242"]))
    """)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, env=env, timeout=GUARD_S,
                          check=False, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Error: sacct -j 4242 ") and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.endswith("did not answer in 2 s\n")
    child = int(pid_file.read_text())
    assert not alive(child), f"the sacct's child {child} still runs"


def test_a_command_not_on_path_or_not_runnable(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        query.run_capped([str(tmp_path / "missing")], 5, 1024)
    text = tmp_path / "sacct"
    text.write_text("not a program")
    text.chmod(0o644)
    with pytest.raises(PermissionError):
        query.run_capped([str(text)], 5, 1024)
