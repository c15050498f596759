"""Identity: torchrun --log-dir trees and error.json, NCCL debug files, interface-suffixed hosts."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from logscope.analysis import analyze
from logscope.model import Category
from logscope.timeline import load_job, node_of_host


def test_torchrun_log_dir_tree_with_error_json(tmp_path: Path) -> None:
    """`torchrun --log-dir LOGS --redirects 3`: one folder per local rank, error.json for the failed one."""
    attempt = tmp_path / "logs" / "none_ab12cd" / "attempt_0"
    (attempt / "0").mkdir(parents=True)
    (attempt / "1").mkdir(parents=True)
    (attempt / "0" / "stdout.log").write_text("2026-12-01 10:00:00,000 - INFO - step 10 loss 2.5\n")
    (attempt / "0" / "stderr.log").write_text("")
    (attempt / "1" / "stdout.log").write_text("2026-12-01 10:00:00,010 - INFO - step 10 loss 2.6\n")
    (attempt / "1" / "stderr.log").write_text(
        "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
        "RuntimeError: shard 17 is corrupt\n")
    stamp = int(datetime(2026, 12, 1, 10, 0, 1, tzinfo=timezone.utc).timestamp())
    (attempt / "1" / "error.json").write_text(json.dumps({"message": {
        "message": "RuntimeError: shard 17 is corrupt",
        "extraInfo": {"py_callstack": "Traceback (most recent call last):\n ...", "timestamp": str(stamp)}}}))
    job = load_job([tmp_path / "logs"])
    kinds = {f.path.name: f.info.kind for f in job.files}
    assert kinds == {"stdout.log": "torchrun-worker", "stderr.log": "torchrun-worker", "error.json": "torchrun-error"}
    error = job.timeline.filter(job.timeline["event"] == "error_file").row(0, named=True)
    assert error["local_rank"] == 1 and error["fields"]["error_type"] == "RuntimeError"
    assert error["time"] == datetime(2026, 12, 1, 10, 0, 1)
    result = analyze([tmp_path / "logs"])
    assert result.verdict.category == Category.CRASH
    assert result.verdict.root_cause is not None and result.verdict.root_cause.local_rank == 1


def test_nccl_debug_files_name_their_host(tmp_path: Path) -> None:
    (tmp_path / "nccl.gpu-node07.31337").write_text(
        "gpu-node07:31337:31400 [2] NCCL INFO comm 0x55d0 rank 10 nranks 16 cudaDev 2 busId 41000 - Init COMPLETE\n")
    job = load_job([tmp_path])
    row = job.timeline.row(0, named=True)
    assert (row["host"], row["node"], row["pid"], row["rank"]) == ("gpu-node07", "gpu-node07", 31337, 10)


@pytest.mark.parametrize(("host", "expected"), [
    ("node1-ib0", "node1"),
    ("node1.ib", "node1"),
    ("node1", "node1"),
    ("node10", "node10"),  # not node1
    ("n136-117-136.byted.org", "n136-117-136"),
    ("other7", "other7"),
])
def test_hosts_with_interface_suffixes_map_to_their_node(host: str, expected: str) -> None:
    assert node_of_host(host, ["node10", "node1", "n136-117-136"]) == expected


def test_interface_host_and_node_file_agree(tmp_path: Path) -> None:
    """NCCL names the IB interface's host; the SLURM file names the node: both are one node."""
    (tmp_path / "train-77-node1.out").write_text(
        "node1-ib0:4100:4180 [0] NCCL INFO comm 0x5621 rank 0 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n")
    (tmp_path / "train-77-node2.out").write_text(
        "node2-ib0:5100:5180 [0] NCCL INFO comm 0x5622 rank 1 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n")
    job = load_job([tmp_path])
    assert job.nodes == ["node1", "node2"]
    assert sorted(job.timeline["host"].to_list()) == ["node1", "node2"]
    assert sorted(job.timeline["rank"].to_list()) == [0, 1]
