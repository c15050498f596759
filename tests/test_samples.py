"""End to end: every shipped sample job gets the verdict its README promises (sample_logs/expected.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logscope.analysis import analyze

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
EXPECTED = json.loads((SAMPLES / "expected.json").read_text())
CASES = sorted(k for k in EXPECTED if not k.startswith("_"))


def test_every_sample_folder_has_an_expectation() -> None:
    folders = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir())
    assert folders == CASES


@pytest.mark.parametrize("name", CASES)
def test_sample_verdict(name: str) -> None:
    expected = EXPECTED[name]
    result = analyze([SAMPLES / name])
    verdict = result.verdict
    root = verdict.root_cause
    said = f"{verdict.category.value} {verdict.finding}: {verdict.summary}"
    assert verdict.category.value == expected["category"], said
    assert verdict.finding == expected["finding"], said
    if expected.get("host") is not None:
        assert root is not None and expected["host"] in (root.host, root.node), said
    elif "host" in expected:
        assert root is None or (root.host, root.node) == (None, None), said
    if "rank" in expected:
        assert (root.rank if root else None) == expected["rank"], said
    job = result.job
    assert job.lines_read == job.lines_recognised + job.lines_unrecognised
    assert len(job.nodes) >= 2 and result.view.world_size in (None, 16)


def test_samples_are_what_the_simulator_writes() -> None:
    """sample_logs/ is generated (tools/make_samples.py); hand edits would drift from the simulator."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(SAMPLES.parent / "tools" / "make_samples.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_analysis_is_deterministic() -> None:
    """Same logs, same answer: polars' group_by order must never leak into findings or evidence."""
    import json as _json

    for name in ("rank0-misresolution", "hang-quiet-rank", "crash-cascade"):
        outs = {_json.dumps(analyze([SAMPLES / name]).to_json(), sort_keys=True, default=str) for _ in range(4)}
        assert len(outs) == 1, name


def test_a_hang_cites_the_quiet_ranks_last_lines() -> None:
    """LS101's evidence starts from what the quiet rank wrote last, not from its first lines."""
    import polars as pl

    result = analyze([SAMPLES / "hang-quiet-rank"])
    finding = next(f for f in result.findings if f.code == "LS101")
    assert finding.culprit is not None and finding.culprit.rank is not None
    # its own lines: what the launcher wrote about it (a closing signal, a failure record) is not
    about_it = ["closing_signal", "child_failure", "worker_failed", "srun_task_exit", "error_file", "desync_report"]
    own = result.view.events.filter((pl.col("rank") == finding.culprit.rank) & ~pl.col("event").is_in(about_it))
    files = set(own["file"].to_list())
    cited = sorted((e.file, e.line) for e in finding.evidence if e.file in files
                   and e.line in set(own["line"].to_list()))
    last = own.sort("file", "line").tail(3)
    assert cited == sorted(zip(last["file"].to_list(), last["line"].to_list(), strict=True))
