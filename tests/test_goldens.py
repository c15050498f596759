"""Golden tests: one folder per detector case under tests/goldens/ (pylint-functional style).

Each ``tests/goldens/<CODE>-<case>/`` holds:

* ``logs/`` — the input log files, named as SLURM/torchrun/NCCL name them, and the Flight
  Recorder dumps beside them (read as ``logscope analyze`` reads them); a case built on a
  third-party log of ``../shared/real_logs`` names it in ``case.json``'s ``"shared_logs"`` instead
  of copying it (the case is skipped where ``../shared`` is absent);
* ``case.json`` — ``{"detector": "LS301", "kind": "positive" | "negative" | "known-miss",
  "verdict": {...optional end-to-end expectations: category, finding (the root's code), host, node,
  rank, local_rank...}}``;
* ``README.md`` — starts with ruff's "Should emit: ..." line, then the story;
* ``expected.json`` — the detector's findings, summarised; rewrite with
  ``pytest --update-goldens`` and review the diff.

``positive`` cases must produce a finding of the case's detector, ``negative`` ones must not,
and ``known-miss`` cases document a failure the detector does not catch yet (it must still not
fire; when it starts to, promote the case to positive).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from logscope.analysis import analyze_job, run_detectors
from logscope.detectors import by_code
from logscope.detectors.base import JobView
from logscope.flight_recorder.joining import load_job_with_dumps
from logscope.model import Finding
from logscope.parsers.filenames import DEFAULT_PATTERNS

GOLDENS = Path(__file__).parent / "goldens"
SHARED = Path(__file__).resolve().parents[2] / "shared"
CASES = sorted(p for p in GOLDENS.iterdir() if p.is_dir()) if GOLDENS.exists() else []


def summarise(finding: Finding, base: Path) -> dict[str, Any]:
    def rel(path: str) -> str:
        for root, shown in ((base, ""), (SHARED, "../shared/")):
            try:
                return shown + str(Path(path).relative_to(root))
            except ValueError:
                continue
        return path

    culprit = finding.culprit
    return {
        "code": finding.code,
        "role": finding.role.value,
        "category": finding.category.value,
        "severity": finding.severity.value,
        "ranks": list(finding.ranks),
        "hosts": list(finding.hosts),
        "culprit": None if culprit is None else {
            "host": culprit.host, "node": culprit.node, "rank": culprit.rank, "local_rank": culprit.local_rank,
        },
        "evidence": [f"{rel(e.file)}:{e.line}" for e in finding.evidence],
    }


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Path, update_goldens: bool) -> None:
    spec = json.loads((case / "case.json").read_text())
    detector_class = by_code(spec["detector"])
    assert detector_class is not None, f"{case.name}: unknown detector {spec['detector']}"
    assert case.name.startswith(detector_class.code + "-"), "golden folders are named <CODE>-<case>"
    assert (case / "README.md").read_text().splitlines()[0].startswith(("Should emit", "Should not emit",
                                                                         "Known miss"))
    logs = case / "logs"
    shared = [SHARED / name for name in spec.get("shared_logs", [])]
    if not all(path.is_file() for path in shared):
        pytest.skip(f"{case.name}: ../shared/real_logs is not available")
    job = load_job_with_dumps(([logs] if logs.is_dir() else []) + shared, DEFAULT_PATTERNS, None, (), ())
    view = JobView(job.timeline, tuple(job.nodes), tuple(f.display for f in job.files),
                   {f.display: f.info.node for f in job.files})
    findings, errors = run_detectors(view, [detector_class])
    assert not errors, errors
    got = [summarise(f, logs) for f in findings]

    kind = spec["kind"]
    if kind == "positive":
        assert got, f"{case.name}: {detector_class.code} should fire"
    else:
        assert not got, f"{case.name}: {detector_class.code} should not fire ({kind}), got {got}"

    expected_path = case / "expected.json"
    if update_goldens:
        expected_path.write_text(json.dumps(got, indent=2) + "\n")
    else:
        assert expected_path.exists(), f"{case.name}: run pytest --update-goldens and review expected.json"
        assert got == json.loads(expected_path.read_text())

    verdict = spec.get("verdict")
    if verdict:
        result = analyze_job(job)
        assert result.verdict.category.value == verdict["category"], result.verdict.summary
        if "finding" in verdict:
            assert result.verdict.finding == verdict["finding"], result.verdict.summary
        root = result.verdict.root_cause
        for key in ("host", "node", "rank", "local_rank"):
            if key in verdict:  # null: no culprit may be named (none at all, or none with that key)
                assert (getattr(root, key) if root is not None else None) == verdict[key], (key, root)
