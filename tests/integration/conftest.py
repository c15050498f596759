"""The one lab run of the integration suite, shared by its test files, and the "SLURM lab captures"
section it prints at the end of the test output."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lab  # noqa: E402

LAB_REPORT = pytest.StashKey[list[str]]()
SCENARIOS = list(lab.SCENARIOS)


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


@pytest.fixture(scope="session")
def lab_run(tmp_path_factory: pytest.TempPathFactory, lab_report: list[str]) -> Iterator[lab.LabRun]:
    """One lab runs every scenario once (recaptures aside) and stays up until the suite ends, so the
    tests can also ask it (sacct, `logscope analyze JOBID`); it is stopped and removed after."""
    reuse = os.environ.get("LAB_CAPTURES")
    if reuse and all((Path(reuse) / s / "meta.json").exists() for s in SCENARIOS):
        out = Path(reuse)
        lab_report.append(f"reused the captures in {out} (LAB_CAPTURES); no live lab")
        log = out / lab.RECAPTURE_LOG
        for entry in json.loads(log.read_text()) if log.exists() else []:
            lab_report.append(f"  recaptured then: {entry['scenario']} (job {entry['job_id']}: {entry['problem']})")
        yield lab.LabRun(out, None)
        return
    reason = lab.skip_reason()
    if reason:
        pytest.skip(reason)
    out = Path(reuse) if reuse else tmp_path_factory.mktemp("lab-captures")
    t0 = time.monotonic()
    recaptures: list[str] = []
    with lab.SlurmLab(nodes=2) as live:
        lab.capture_in(live, SCENARIOS, out, on_recapture=recaptures.append)
        accounting = "with accounting (slurmdbd on MariaDB)" if live.accounting else (
            "without accounting: missing " + ", ".join(lab.accounting_missing()))
        lab_report.append(f"{len(SCENARIOS)} scenarios captured in {time.monotonic() - t0:.0f} s into {out}, "
                          f"{accounting}; {len(recaptures)} recapture(s)")
        lab_report.extend(recaptures)
        yield lab.LabRun(out, live)
