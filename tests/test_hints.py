"""missing_evidence_hints: each hint appears when its evidence is absent, and only then."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from logscope.detectors.base import JobView
from logscope.hints import (
    HINT_DESYNC,
    HINT_KERNEL_LOG,
    HINT_NCCL_DEBUG,
    HINT_NCCL_TIMESTAMPS,
    HINT_PROGRESS_TIMESTAMPS,
    HINT_ROLE_PREFIX,
    HINT_SPLIT_OUTPUT,
    HINT_TRACEBACK,
    missing_evidence_hints,
)
from logscope.model import Category, Finding, Role, Severity
from logscope.timeline import load_job

LAUNCH = """\
I1104 09:00:01.000000 7100 torch/distributed/launcher/api.py:188] Starting elastic_operator with launch configs:
I1104 09:00:01.000000 7100 torch/distributed/launcher/api.py:188]   min_nodes        : 2
I1104 09:00:01.000000 7100 torch/distributed/launcher/api.py:188]   max_nodes        : 2
I1104 09:00:01.000000 7100 torch/distributed/launcher/api.py:188]   rdzv_endpoint    : node01:29500
"""
NCCL_UNTIMED = "node01:4201:4280 [0] NCCL INFO Using network IB\nnode02:4301:4380 [0] NCCL INFO Using network IB\n"
NCCL_TIMED = ("[2026-11-04 09:00:02] node01:4201:4280 [0] NCCL INFO Using network IB\n"
              "[2026-11-04 09:00:02] node02:4301:4380 [0] NCCL INFO Using network IB\n")
PROGRESS_TIMED = "[default0]:2026-11-04 09:10:00,000 - INFO - step 10 loss 2.0\n"
PROGRESS_UNTIMED = " iteration       90/    1000 | lm loss: 7.912E+00 |\n"


def view_of(tmp_path: Path, files: dict[str, str]) -> JobView:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    job = load_job([tmp_path])
    return JobView(job.timeline, tuple(job.nodes), tuple(f.display for f in job.files),
                   {f.display: f.info.node for f in job.files})


def finding(category: Category, code: str = "LS999") -> Finding:
    return Finding(code=code, name="test", category=category, severity=Severity.ERROR, title="t",
                   explanation="e", advice="a")


def complete_job() -> dict[str, str]:
    """Per-node files, timed NCCL and progress lines, host prefixes: nothing to ask for."""
    return {
        "train-1-node01.out": LAUNCH + NCCL_TIMED.splitlines(True)[0] + PROGRESS_TIMED,
        "train-1-node02.out": NCCL_TIMED.splitlines(True)[1] + PROGRESS_TIMED,
    }


def test_a_complete_job_gets_no_hint(tmp_path: Path) -> None:
    assert missing_evidence_hints(view_of(tmp_path, complete_job()), [finding(Category.OOM)]) == []


def test_a_healthy_job_gets_no_hint_even_with_poor_logs(tmp_path: Path) -> None:
    view = view_of(tmp_path, {"slurm-1.out": LAUNCH + LAUNCH + NCCL_UNTIMED + PROGRESS_UNTIMED})
    assert missing_evidence_hints(view, []) == []


def test_no_nccl_lines_in_a_distributed_job(tmp_path: Path) -> None:
    view = view_of(tmp_path, {"train-1-node01.out": LAUNCH + PROGRESS_TIMED})
    assert HINT_NCCL_DEBUG in missing_evidence_hints(view, [finding(Category.HANG)])


def test_no_nccl_hint_when_nccl_lines_exist(tmp_path: Path) -> None:
    assert HINT_NCCL_DEBUG not in missing_evidence_hints(view_of(tmp_path, complete_job()), [finding(Category.HANG)])


def test_no_nccl_hint_for_a_job_that_is_not_distributed(tmp_path: Path) -> None:
    view = view_of(tmp_path, {"train-1-node01.out": PROGRESS_TIMED})
    assert HINT_NCCL_DEBUG not in missing_evidence_hints(view, [finding(Category.CRASH)])


def test_hang_without_desync_report(tmp_path: Path) -> None:
    view = view_of(tmp_path, complete_job())
    assert HINT_DESYNC in missing_evidence_hints(view, [finding(Category.HANG)])
    assert HINT_DESYNC not in missing_evidence_hints(view, [finding(Category.CRASH)])
    # a hang that is only a consequence of a crash does not call for desync debugging
    consequence = dataclasses.replace(finding(Category.HANG), role=Role.CONSEQUENCE)
    assert HINT_DESYNC not in missing_evidence_hints(view, [finding(Category.CRASH), consequence])


def test_hang_with_desync_report_needs_no_desync_hint(tmp_path: Path) -> None:
    files = complete_job()
    files["train-1-node01.out"] += ("[rank0]:[E1104 09:30:00.000000000 ProcessGroupNCCL.cpp:1] ranks [3] are the "
                                    "lagging ranks\n")
    view = view_of(tmp_path, files)
    assert HINT_DESYNC not in missing_evidence_hints(view, [finding(Category.HANG)])


def test_untimed_nccl_lines(tmp_path: Path) -> None:
    files = {"train-1-node01.out": LAUNCH + NCCL_UNTIMED.splitlines(True)[0] + PROGRESS_TIMED,
             "train-1-node02.out": NCCL_UNTIMED.splitlines(True)[1] + PROGRESS_TIMED}
    assert HINT_NCCL_TIMESTAMPS in missing_evidence_hints(view_of(tmp_path, files), [finding(Category.HANG)])


def test_timed_nccl_lines_need_no_timestamp_hint(tmp_path: Path) -> None:
    view = view_of(tmp_path, complete_job())
    assert HINT_NCCL_TIMESTAMPS not in missing_evidence_hints(view, [finding(Category.HANG)])


def test_local_rank_only_prefixes_in_a_combined_multi_node_log(tmp_path: Path) -> None:
    view = view_of(tmp_path, {"slurm-1.out": LAUNCH + LAUNCH + NCCL_TIMED
                              + "[default3]:2026-11-04 09:10:00,000 - INFO - step 10 loss 2.0\n"})
    hints = missing_evidence_hints(view, [finding(Category.HANG)])
    assert HINT_ROLE_PREFIX in hints
    assert HINT_SPLIT_OUTPUT in hints


def test_host_prefixes_need_no_role_hint(tmp_path: Path) -> None:
    view = view_of(tmp_path, {"slurm-1.out": LAUNCH + LAUNCH + NCCL_TIMED
                              + "[node01:3]:2026-11-04 09:10:00,000 - INFO - step 10 loss 2.0\n"})
    assert HINT_ROLE_PREFIX not in missing_evidence_hints(view, [finding(Category.HANG)])


def test_single_node_job_in_one_file_needs_no_split_hint(tmp_path: Path) -> None:
    view = view_of(tmp_path, {"slurm-1.out": NCCL_TIMED.splitlines(True)[0] + PROGRESS_TIMED})
    hints = missing_evidence_hints(view, [finding(Category.HANG)])
    assert HINT_SPLIT_OUTPUT not in hints and HINT_ROLE_PREFIX not in hints


def test_untimed_progress_lines(tmp_path: Path) -> None:
    files = complete_job()
    files["train-1-node01.out"] = LAUNCH + NCCL_TIMED.splitlines(True)[0] + PROGRESS_UNTIMED
    files["train-1-node02.out"] = NCCL_TIMED.splitlines(True)[1] + PROGRESS_UNTIMED
    assert HINT_PROGRESS_TIMESTAMPS in missing_evidence_hints(view_of(tmp_path, files), [finding(Category.HANG)])


@pytest.mark.parametrize(("extra", "wanted"), [
    ("", True),
    ("[Wed Nov  4 09:20:03 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
     "off the bus.\n", False),
])
def test_hardware_failure_without_kernel_log(tmp_path: Path, extra: str, wanted: bool) -> None:
    files = complete_job()
    files["train-1-node02.out"] += extra
    hints = missing_evidence_hints(view_of(tmp_path, files), [finding(Category.HARDWARE)])
    assert (HINT_KERNEL_LOG in hints) is wanted


@pytest.mark.parametrize(("extra", "wanted"), [
    ("E1104 09:20:00.000000 7100 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
     "local_rank: 0 (pid: 4201) of binary: /usr/bin/python3\n", True),
    ("[default0]:Traceback (most recent call last):\n[default0]:ValueError: bad batch\n", False),
])
def test_crash_without_traceback(tmp_path: Path, extra: str, wanted: bool) -> None:
    files = complete_job()
    files["train-1-node01.out"] += extra
    hints = missing_evidence_hints(view_of(tmp_path, files), [finding(Category.CRASH, "LS301")])
    assert (HINT_TRACEBACK in hints) is wanted


def test_the_untimed_share_counts_as_a_filter_of_the_rows_would() -> None:
    # The hints count rows in polars instead of copying them (a crash loop's ~100,000 error rows):
    # a row with a time and no time_inferred counts as timed, as a filter would drop its null.
    from datetime import datetime

    import polars as pl

    from logscope.hints import _untimed_share

    at = datetime(2026, 1, 1)
    rows = pl.DataFrame({"time": [None, at, at, at, None, at], "time_inferred": [None, None, False, True, False, True]},
                        schema={"time": pl.Datetime("us"), "time_inferred": pl.Boolean})
    filtered = rows.filter(pl.col("time").is_null() | pl.col("time_inferred")).height
    assert filtered == 4 and _untimed_share(rows) == filtered / rows.height
