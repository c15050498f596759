"""Prints the lab's recaptures in the test output (see test_slurm_lab.py's `captures` fixture)."""

from __future__ import annotations

import pytest

LAB_REPORT = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[LAB_REPORT] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(LAB_REPORT, [])
    if lines:
        terminalreporter.section("SLURM lab captures")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def lab_report(request: pytest.FixtureRequest) -> list[str]:
    """Lines for the "SLURM lab captures" section at the end of the test output."""
    return request.config.stash[LAB_REPORT]
