"""What the reading tests share: comparing two reads of the same files, and COLL-heavy logs."""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest
from polars.testing import assert_frame_equal

from logscope.ingest import FileRead, Skipped, compiled, discover, read_file, reading
from logscope.parsers import lines as engine

# For a test's subprocess that measures its own peak memory: ``peak_kib()``, the high-water mark of
# the process's own pages since it started (/proc's VmHWM), in KiB. Not ``ru_maxrss``: Linux carries a
# process's high-water mark across exec, so a subprocess's ``ru_maxrss`` starts at the peak of the test
# process that started it (in CI, a pytest process grown to 2.1 GB by the tests before made a 450 MB
# read measure 2.1 GB, and a probe that subtracts its first reading from its last measures nothing).
PEAK_KIB = """
def peak_kib():
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""


def assert_same_reads(expected: Sequence[FileRead | Skipped], got: Sequence[FileRead | Skipped]) -> None:
    """The same files read, with the same line counts, warnings and events."""
    assert len(got) == len(expected)
    for a, b in zip(expected, got, strict=True):
        assert isinstance(a, FileRead) and isinstance(b, FileRead)
        assert (a.source, a.lines_read, a.lines_recognised, a.warnings) == (b.source, b.lines_read, b.lines_recognised,
                                                                             b.warnings)
        assert_frame_equal(a.events, b.events)


def without_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    """No line a loop repeats set aside before parsing, neither on a block's bytes
    (logscope.ingest.repeat_prefilter) nor in its frame (logscope.parsers.repeats), for a test that
    compares two ways of cutting a file into blocks: repeats are set aside per block, and across a
    file's consecutive blocks, so which of them are parsed depends on the blocks
    (tests/test_repeats.py holds the verdict and the counts to not depending on them)."""
    monkeypatch.setattr(reading, "looks_for_repeats", lambda *_: False)
    monkeypatch.setattr(engine, "repeat_surplus", lambda *_, **__: None)


def read_without_setting_aside(path: Path, monkeypatch: pytest.MonkeyPatch) -> FileRead:
    """The file read with no COLL line set aside anywhere: what every way of setting them aside
    must give."""
    prepare_chunk = reading.prepare_chunk
    with monkeypatch.context() as patch:
        patch.setattr(compiled, "COMPILED", False)
        patch.setattr(reading, "prepare_chunk", lambda *args, **kwargs: prepare_chunk(
            *args, **{**kwargs, "coll_keep": None}))
        truth = read_file(discover([path])[0][0])
    assert isinstance(truth, FileRead)
    return truth


def coll_heavy_log(path: Path, count: int = 24000) -> Path:
    rng = random.Random(3)
    rows = []
    for n in range(count):
        host, pid = f"gpu{n % 3}", 100 + n % 3
        # The same process written three ways, and a time in front of the host (never set aside).
        stamp = rng.choice(["", "", "[2026-05-05 06:16:47] ", "2026-09-18 19:29:24 [rank3]:"])
        pid_text = f"0{pid}" if rng.random() < 0.1 else str(pid)
        comm = rng.choice(["0x55aa01", "0x55aa02", "(nil)"])
        # Odd lines share the head and the bytes after "comm " of a main line, so that any check
        # the fast path skipped would put them in a main line's group.
        head = f"[default{pid % 8}]:{host}:{pid}:{pid + 1} [0] NCCL INFO"
        rest = f"comm {comm} [nranks=8]"
        if rng.random() < 0.8:
            rows.append(f"[default{pid % 8}]:{stamp}{host}:{pid_text}:{pid + 1} [0] NCCL INFO AllReduce: opCount "
                        f"{n:x} sendbuff 0x7f recvbuff 0x7f count 9 datatype 7 op 0 root 0 {rest}")
        else:
            rows.append(rng.choice([
                f"x: opCount 5 {rest} not an NCCL line",
                f"{head} AllReduce: opCount 1 comm zz no pointer",
                f"{head} AllReduce: opCount zz sendbuff 0x7f {rest}",  # not hex
                f"{head} AllReduce: opCount {n:x}",  # no comm
                f"{head} All Reduce: opCount 5 {rest}",
                f"{head} AllReduce: opCount 1f2{head} AllReduce: opCount 5 {rest}",  # two writes glued
                f"{head} AllReduce: opCount 5 sendbuff é0x7f {rest}",  # UTF-8 before comm
                f"{head} AllReduce: opCount 5 comm 0x55aa0123456789abcdef0123 [nranks=8]",  # longer than a slice
                f"{head} AllReduce: opCount 5 comm {comm}",  # the line ends with the pointer
                f"{head} AllReduce: opCount 5 comm 0x55aa01zz [nranks=8]",
                f"é{head} AllReduce: opCount {n:x} {rest}",
                # an NCCL timestamp where the pattern does not read one, and one followed by a non-head
                f"[default{pid % 8}]:x[2026-05-05 06:16:47] {host}:{pid}:{pid + 1} [0] NCCL INFO AllReduce: "
                f"opCount {n:x} {rest}",
                f"[default{pid % 8}]:[2026-05-05 06:16:47] node-7: {host}:{pid}:{pid + 1} [0] NCCL INFO AllReduce: "
                f"opCount {n:x} {rest}",
                f"[default{pid % 8}]:{host}:{pid}:{pid + 1} [0] NCCL WARN AllReduce: opCount 5 {rest}",
                f"2026-11-03 14:{n % 60:02d}:00,532 - INFO - iteration {n:8d}/  100000 | lm loss: 2.5E+00 |",
                "ValueError: boom",
            ]))
    # Many odd lines of one key in a row: a check skipped would set the middle ones aside.
    rows += [f"[default0]:[2026-05-05 06:16:47] node-7: gpu0:100:101 [0] NCCL INFO AllReduce: opCount {n:x} "
             f"comm 0x55aa01 [nranks=8]" for n in range(300)]
    path.write_text("\n".join(rows) + "\n")
    return path


def jobsim() -> ModuleType:
    """tools/jobsim.py, loaded from its file (tools/ is not an installed package)."""
    spec = importlib.util.spec_from_file_location("jobsim", Path(__file__).resolve().parents[1] / "tools" / "jobsim.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["jobsim"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module
