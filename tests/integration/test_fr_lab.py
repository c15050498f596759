"""The lab's fr-hang job (tests/integration/jobs/fr-hang.sbatch): a real SLURM + torchrun job whose
ranks write their Flight Recorder dumps beside the logs; logscope joins them to the logs.

What is asserted is what the dumps must say of what the job did (rank 3 on node02 never issued
step 4's collectives), never their incidental shape.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lab  # noqa: E402

from logscope.analysis import analyze  # noqa: E402

pytestmark = pytest.mark.integration
SCENARIO = "fr-hang"


@pytest.fixture(scope="session")
def capture(lab_run: lab.LabRun) -> Path:
    folder = lab_run.out / SCENARIO
    problem = lab.capture_problem(SCENARIO, folder)
    if problem is not None:
        pytest.skip(f"the capture does not show the scenario: {problem}")
    return folder


def test_every_rank_wrote_its_dump(capture: Path) -> None:
    assert sorted(p.name for p in capture.glob("fr_trace_*")) == [f"fr_trace_{r}" for r in range(4)]


def test_the_dumps_with_the_logs_name_rank_3_on_node02(capture: Path) -> None:
    result = analyze([capture])
    fr = result.to_json()["flight_recorder"]
    assert fr["ranks"] == [0, 1, 2, 3] and fr["missing_ranks"] == [] and fr["lagging_ranks"] == [3]
    assert result.verdict.category.value == "hang" and result.verdict.finding == "LS106"
    root = result.verdict.root_cause
    assert root is not None and root.rank == 3 and "node02" in (root.host, root.node)
    assert {lag["host"] for lag in fr["lagging"]} == {"node02"}


def test_the_dumps_alone_name_the_same_rank(capture: Path) -> None:
    result = analyze(sorted(capture.glob("fr_trace_*")))
    assert result.flight_recorder is not None and result.flight_recorder.lagging_ranks == [3]
    assert result.verdict.root_cause is not None and result.verdict.root_cause.rank == 3
