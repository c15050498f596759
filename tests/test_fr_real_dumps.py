"""Real Flight Recorder dumps (../shared/fr, skipped where it is absent): NVIDIA's four labelled
16-rank fault-injection sets and a gloo hang written as pickle and JSON."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fr_support import SHARED_FR, analysed

NVRX = SHARED_FR / "nvrx"
SETS = sorted(p.name for p in NVRX.iterdir()) if NVRX.is_dir() else []
GLOO = SHARED_FR / "gloo" / "hang-pickle-and-json"

pytestmark = pytest.mark.skipif(not SHARED_FR.is_dir(), reason="../shared/fr is not available")


def injected(folder: Path) -> set[int]:
    first = (folder / "fault_injection.log").read_text().splitlines()[0]  # "Fault ranks: [12, 14]"
    return {int(r) for r in re.findall(r"\d+", first)}


@pytest.mark.parametrize("name", SETS)
def test_nvrx_the_injected_ranks_lag_and_no_innocent_one(name: str) -> None:
    folder = NVRX / name
    result = analysed([folder])
    fr = result.to_json()["flight_recorder"]
    assert len(fr["files"]) == 16 and fr["missing_ranks"] == []
    named = {lag["rank"] for lag in fr["lagging"]}
    assert named == injected(folder)
    assert result.verdict.finding == "LS106" and result.verdict.category.value == "hang"
    assert result.verdict.root_cause is not None and result.verdict.root_cause.rank in injected(folder)


def test_nvrx_all_sets_together() -> None:
    """The issue's measure: of the 8 injected ranks, how many `lagging` names, and how many
    innocent ranks with them (PyTorch's fr_trace: 7 and 20; NVRx's analyser: 7 and 0)."""
    if len(SETS) != 4:
        pytest.skip("the four NVRx sets are not all there")
    found = innocent = total = 0
    for name in SETS:
        truth = injected(NVRX / name)
        named = {lag["rank"] for lag in analysed([NVRX / name]).to_json()["flight_recorder"]["lagging"]}
        total += len(truth)
        found += len(truth & named)
        innocent += len(named - truth)
    assert (found, innocent, total) == (8, 0, 8)


def test_gloo_pickle_and_json_of_one_hang() -> None:
    """Ranks 0, 1 and 3 wrote their dumps twice (pickle and JSON); rank 2 never issued step 3's
    all_reduce and wrote none: the dumps say it is missing, the logs (LS101) name it."""
    result = analysed([GLOO])
    fr = result.to_json()["flight_recorder"]
    assert fr["ranks"] == [0, 1, 3] and fr["missing_ranks"] == [2] and fr["lagging"] == []
    assert sorted(s["file"].rsplit("/", 1)[1] for s in result.to_json()["skipped"]) == [
        "trace_0.json", "trace_1.json", "trace_3.json"]
    assert result.verdict.root_cause is not None and result.verdict.root_cause.rank == 2
    json_only = analysed([GLOO / "torchrun.log"], fr=sorted(GLOO.glob("*.json")))
    assert json_only.to_json()["flight_recorder"]["ranks"] == [0, 1, 3]
    assert [f["format"] for f in json_only.to_json()["flight_recorder"]["files"]] == ["json"] * 3
