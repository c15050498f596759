"""End-to-end: the verdict on each public real log in ``shared/real_logs`` matches its expected.json.

Each case folder holds the log file(s), ``SOURCE.md`` and ``expected.json``. The log files (not the
folder) are analysed; the verdict's category must map from ``failure_class``/``subclass``, and the
root cause's host, global rank and local rank must equal ``root_cause_host``, ``root_cause_rank`` and
``root_cause_local_rank`` where expected.json states them (null included: a tool must not invent a
culprit the logs do not name).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from logscope.analysis import analyze

REAL_LOGS = Path(__file__).resolve().parents[2] / "shared" / "real_logs"
CASES = sorted(p for p in REAL_LOGS.iterdir() if p.is_dir()) if REAL_LOGS.is_dir() else []
NOT_LOGS = {"SOURCE.md", "expected.json"}


def expected_category(expected: dict[str, Any]) -> str:
    """expected.json's failure_class (and subclass) -> logscope's category."""
    failure = expected["failure_class"]
    subclass = str(expected.get("subclass") or "")
    if failure == "time_limit":
        return "scheduler"
    if failure == "other":
        if subclass == "cancelled_by_user":
            return "scheduler"
        if subclass == "node_failure" or subclass.startswith("gpu_"):
            return "hardware"
        raise AssertionError(f"unmapped subclass {subclass!r}")
    return {"network": "network", "hang": "hang", "healthy": "healthy"}[failure]


@pytest.mark.skipif(not CASES, reason="../shared/real_logs is not available")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_real_log_verdict(case: Path) -> None:
    expected = json.loads((case / "expected.json").read_text())
    files = [p for p in sorted(case.iterdir()) if p.is_file() and p.name not in NOT_LOGS]
    assert files, f"{case.name}: no log file"
    analysis = analyze(files)
    verdict = analysis.verdict
    assert verdict.category.value == expected_category(expected), verdict.summary
    root = verdict.root_cause
    for key, attribute in (("root_cause_host", "host"), ("root_cause_rank", "rank"),
                           ("root_cause_local_rank", "local_rank")):
        if key not in expected:
            continue
        got = getattr(root, attribute) if root is not None else None
        assert got == expected[key], f"{case.name}: {attribute} {got!r} != {expected[key]!r} ({verdict.summary})"


def test_category_mapping() -> None:
    assert expected_category({"failure_class": "time_limit"}) == "scheduler"
    assert expected_category({"failure_class": "other", "subclass": "cancelled_by_user"}) == "scheduler"
    assert expected_category({"failure_class": "other", "subclass": "gpu_or_node_hardware_failure"}) == "hardware"
    assert expected_category({"failure_class": "other", "subclass": "node_failure"}) == "hardware"
    with pytest.raises(AssertionError):
        expected_category({"failure_class": "other", "subclass": "mystery"})
