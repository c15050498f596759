"""Shared test options and fixtures."""

from __future__ import annotations

import io
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
