"""bench.py's shapes: a later attempt of a real log is the same log later, by other processes, and
a run with the wrong verdict stops the bench."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_under_test", REPO / "bench" / "bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_later_attempt_is_shifted_in_time_and_pids() -> None:
    bench = _bench()
    text = (b"[2021-05-27 19:49:22,389] INFO step\n"
            b"r6i4n5:37339:37340 [0] NCCL INFO Bootstrap : Using ib0\n"
            b"7: [rank7]:[E1003 22:09:50.047475 651 ProcessGroupNCCL.cpp:632] timeout\n"
            b':::MLLOG {"time_ms": 1652939925123, "key": "run_start"}\n'
            b"CANCELLED AT 2021-05-27T21:52:36 DUE TO TIME LIMIT\n")
    assert bench.shifted(text, 0, 13) == text
    assert bench.shifted(text, 2, 13) == (
        b"[2021-05-28 21:49:22,389] INFO step\n"
        b"r6i4n5:37353:37354 [0] NCCL INFO Bootstrap : Using ib0\n"
        b"7: [rank7]:[E1005 00:09:50.047475 651 ProcessGroupNCCL.cpp:632] timeout\n"
        b':::MLLOG {"time_ms": 1653033525123, "key": "run_start"}\n'
        b"CANCELLED AT 2021-05-28T23:52:36 DUE TO TIME LIMIT\n")


def test_a_wrong_verdict_stops_the_bench() -> None:
    bench = _bench()
    out = json.dumps({"job": {"lines_read": 10},
                      "verdict": {"category": "crash", "finding": "LS301", "root_cause": {"rank": 3}}}).encode()
    assert bench.check("analyze", 1, out, 10, ("crash", 3)) == "crash LS301 rank 3"
    with pytest.raises(SystemExit, match="verdict wrong"):
        bench.check("analyze", 1, out, 10, ("crash", 11))
    with pytest.raises(SystemExit):
        bench.check("analyze", 1, out, 11, ("crash", 3))  # a line not read
