"""Identity: torchrun --log-dir trees and error.json, NCCL debug files, interface-suffixed hosts."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from logscope.analysis import analyze
from logscope.ingest import FileRead, Skipped, discover, read_file
from logscope.model import Category
from logscope.timeline import build_job, build_jobs, load_job, node_of_host

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
GOLDENS = Path(__file__).resolve().parent / "goldens"


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


def _read_job(folder: Path) -> tuple[list[FileRead], list[Skipped]]:
    files, skipped = discover([folder])
    reads = [read_file(f) for f in files]
    return [r for r in reads if isinstance(r, FileRead)], [*skipped, *(r for r in reads if isinstance(r, Skipped))]


def test_jobs_built_together_are_the_jobs_built_alone(tmp_path: Path) -> None:
    # logscope scan builds the timelines of a batch of jobs together (build_jobs): every key that
    # groups or joins events holds the job, so that one job's hosts, pids, ranks and srun tasks
    # never resolve another's. A file's name shows its job's folder, but hosts, pids and ranks are
    # shared by jobs: beside the sample jobs, jobs that share them but not what they mean (the
    # ranks of a (host, pid), the largest communicator, a rank's host, a host's node, whether srun
    # tasks are ranks, local ranks: the test fails when any of those keys loses the job; checked):
    shared = GOLDENS / "LS301-shared-output-file-names-first-node" / "logs" / "train-5101-node01.out"
    text = shared.read_text()
    swapped = text.replace("node01", "@").replace("node02", "node01").replace("@", "node02")
    renumbered = text.replace("rank 0 nranks", "rank @ nranks").replace("rank 2 nranks", "rank 0 nranks").replace(
        "rank @ nranks", "rank 2 nranks")
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    init = "{host}:300:300 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 busId 1000 - Init COMPLETE\n"
    made = {
        "shared": ("train-5101-node01.out", text),  # a file holding two nodes' output: hosts from ties
        "shared-hosts-swapped": ("train-5101-node01.out", swapped),  # the same pids on the other hosts
        "shared-ranks-renumbered": ("train-5101-node01.out", renumbered),  # the same (host, pid), other ranks
        "suffixed-host": ("train-7-node1.out", init.format(host="node1-ib0")),  # node1's interface
        "suffixed-host-elsewhere": ("train-8-gpu7.out", init.format(host="node1-ib0")),  # not a node of its job
        "srun-tasks": ("train-9-node1.out", "srun: error: node1: tasks 0-1: Terminated\n0: RuntimeError: boom\n"),
        "srun-one-task": ("train-9-node1.out", "1: RuntimeError: other\n"),  # task 1 is not rank 1 here
        "task-is-rank-0": ("train-10-node1.out", f"0: {oom}\n0: [rank0]: RuntimeError: boom\n"),  # srun task 0
        "task-is-rank-5": ("train-10-node1.out", f"0: {oom}\n0: [rank5]: RuntimeError: boom\n"),  # is this job's rank 5
        "one-node-file": ("train-5101-node01.out", text.replace("node02", "node01")),  # not shared
    }
    folders = sorted(p for p in SAMPLES.iterdir() if p.is_dir())
    for name, (file, content) in made.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / file).write_text(content)
        folders.append(tmp_path / name)
    read = [_read_job(folder) for folder in folders]
    together = build_jobs(read)
    assert len(together) == len(folders)
    for folder, (reads, skipped), job in zip(folders, read, together, strict=True):
        alone = build_job(reads, list(skipped))
        assert job.timeline.equals(alone.timeline), folder.name
        assert (job.warnings, job.nodes, job.job_id, job.lines_read) == (
            alone.warnings, alone.nodes, alone.job_id, alone.lines_read), folder.name
    assert any("holds the output of" in w for job in together for w in job.warnings)


IB_FAILURE = ("{host}:{pid}:{tid} [{dev}] transport/net_ib.cc:180 NCCL WARN NET/IB : mlx5_ib0:1 async fatal event "
              "on QP (0x7f69f01519a8): local access violation work queue error\n")


def test_an_nccl_culprits_device_is_its_local_rank(tmp_path: Path) -> None:
    """NCCL's [N] is the process's CUDA device, which torchrun sets from the local rank: the root
    cause names it as the local rank where no other process of the node shows that device."""
    (tmp_path / "train-7-h100-28.out").write_text(
        "h100-28:240:240 [1] NCCL INFO Using network IB\n"
        + IB_FAILURE.format(host="h100-28", pid=238, tid=1219, dev=3))
    root = analyze([tmp_path]).verdict.root_cause
    assert root is not None and (root.host, root.local_rank) == ("h100-28", 3)


def test_a_device_every_process_shows_names_no_local_rank(tmp_path: Path) -> None:
    """With CUDA_VISIBLE_DEVICES narrowed to one GPU a process, every process of the node is device 0:
    the [0] of the failing line then tells no process from another, and no local rank is named."""
    (tmp_path / "train-7-h100-28.out").write_text(
        "h100-28:240:240 [0] NCCL INFO Using network IB\n"
        + IB_FAILURE.format(host="h100-28", pid=238, tid=1219, dev=0))
    root = analyze([tmp_path]).verdict.root_cause
    assert root is not None and (root.host, root.local_rank) == ("h100-28", None)
