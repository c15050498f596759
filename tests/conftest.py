"""Shared test options and fixtures."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

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
