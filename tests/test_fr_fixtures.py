"""The gloo jobs of tools/make_fr_fixtures.py (real torch 2.13 dumps, committed as golden cases):
the dumps alone name the same rank as the dumps with the logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from fr_support import analysed

GOLDENS = Path(__file__).parent / "goldens"
# case -> (the rank the dumps name, the detector, the category with the logs)
CASES = {
    "LS106-gloo-rank-stops-issuing": (2, "LS106", "hang"),
    "LS107-gloo-broadcast-instead-of-all-reduce": (1, "LS107", "hang"),
    "LS108-gloo-straggler": (3, "LS108", "healthy"),
}


def named(result: object, code: str) -> set[int]:
    return {r for f in result.findings if f.code == code for r in f.ranks}  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_dumps_alone_and_with_the_logs_name_the_same_rank(case: str) -> None:
    rank, code, category = CASES[case]
    logs = GOLDENS / case / "logs"
    dumps = sorted(logs.glob("trace_*"))
    assert len(dumps) == 4
    alone = analysed(dumps)
    joined = analysed([logs])
    assert named(alone, code) == named(joined, code) == {rank}
    assert joined.verdict.category.value == category
    if code != "LS108":
        assert alone.verdict.root_cause.rank == joined.verdict.root_cause.rank == rank  # type: ignore[union-attr]


def test_the_logs_alone_of_the_stopped_rank() -> None:
    """Without its dumps the hang is still found by the logs (LS101: the one rank that never timed out)."""
    logs = GOLDENS / "LS106-gloo-rank-stops-issuing" / "logs"
    result = analysed([logs / "torchrun.log"])
    assert result.flight_recorder is None and result.verdict.finding == "LS101"
    assert result.verdict.root_cause is not None and result.verdict.root_cause.rank == 2
