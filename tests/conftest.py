"""Shared test options and fixtures."""

from __future__ import annotations

import io
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from rich.console import Console

# A test asserts what the product must do, never how fast a loaded machine runs it: hypothesis's
# 200 ms deadline per example failed property tests whose example ran slow beside other work. Its
# examples are also derandomized, so a run fails or passes the same way each time.
settings.register_profile("logscope", deadline=None, derandomize=True)
settings.load_profile("logscope")

PROJECT = Path(__file__).resolve().parent.parent
SHARED = PROJECT.parent / "shared"
REAL_LOGS = SHARED / "real_logs"
SAMPLES = PROJECT / "sample_logs"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="Rewrite tests/goldens/*/expected.json from the detectors' current output.")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


@pytest.fixture
def plain_console() -> tuple[Console, io.StringIO]:
    """A deterministic, colourless console writing into a buffer (Rich's own test setup)."""
    buffer = io.StringIO()
    console = Console(width=120, force_terminal=False, file=buffer, color_system=None, _environ={},
                      legacy_windows=False, highlight=False)
    return console, buffer


@pytest.fixture
def sigint_heard() -> Iterator[None]:
    """SIGINT not ignored by the processes the test starts, whatever this run inherited: a shell's
    background job (``pytest ... &`` in a script) starts with SIGINT ignored, and a process keeps
    an ignored signal ignored across exec, so the watch or scan a test sends Ctrl-C's SIGINT would
    never see it (a handler, unlike SIG_IGN, is reset to the default in the child)."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
