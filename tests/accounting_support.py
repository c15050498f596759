"""Helpers shared by the accounting tests: local time pinned to UTC (the fixtures' epochs are
UTC; SLURM prints and logscope reads local time), job folders built from the sample jobs."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "accounting"
SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


@pytest.fixture
def utc() -> Iterator[None]:
    """Local time is UTC for the test (restored after)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


def job_folder(target: Path, sample: str, drop: str | None = None, record: dict[str, str] | None = None) -> Path:
    """``target`` holding the logs of ``sample_logs/<sample>`` (lines matching ``drop`` removed)
    and the saved record files ``record`` (name -> fixture file under tests/data/accounting)."""
    target.mkdir(parents=True, exist_ok=True)
    for log in sorted((SAMPLES / sample).glob("*.out")):
        lines = log.read_text().splitlines(keepends=True)
        if drop is not None:
            lines = [line for line in lines if not re.search(drop, line)]
        (target / log.name).write_text("".join(lines))
    for name, fixture in (record or {}).items():
        (target / name).write_text((DATA / fixture).read_text())
    return target
