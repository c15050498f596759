"""Identity from the line, not the file name: a file named after one node may hold every node's output.

``#SBATCH --output=%x-%j-%N.out`` without ``srun --output`` makes SLURM write ONE file, named after the
job's first node, with the output of all nodes. Each line's host comes from the line itself (NCCL
``host:pid``, a ``--role host:`` tag) or from what ties it to such a line (its pid, its rank through
NCCL's rank map, its srun task label); the file name's node is the fallback only.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterator
from pathlib import Path

from logscope.analysis import analyze
from logscope.hints import HINT_SPLIT_OUTPUT
from logscope.timeline import load_job

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
GOLDENS = Path(__file__).resolve().parent / "goldens"
_TIME = re.compile(r"\b(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?")


def _keyed(path: Path, index: int) -> Iterator[tuple[float, int, int, str]]:
    """Each line with the time it was written at the latest: its own, else that of the next timed
    line of its file (an untimed line was written before it)."""
    lines = path.read_text().splitlines()
    keys: list[float] = []
    following = float("inf")
    for line in reversed(lines):
        if m := _TIME.search(line):
            hours, minutes, seconds, fraction = m.groups()
            following = int(hours) * 3600 + int(minutes) * 60 + int(seconds) + float("0." + (fraction or "0"))
        keys.append(following)
    keys.reverse()
    running = 0.0
    for number, (key, line) in enumerate(zip(keys, lines, strict=True)):
        running = max(running, key)  # a file's lines keep their order
        yield running, index, number, line


def interleave(job: Path, into: Path) -> Path:
    """What SLURM writes with %N in #SBATCH --output: every node's lines, by time, in one file named
    after the first node."""
    files = sorted(job.glob("*.out"))
    merged = heapq.merge(*(_keyed(f, i) for i, f in enumerate(files)))
    into.mkdir(parents=True, exist_ok=True)
    out = into / files[0].name
    out.write_text("\n".join(row[3] for row in merged) + "\n")
    return out


def test_crash_cascade_in_one_file_blames_the_node_the_lines_name(tmp_path: Path) -> None:
    shared = interleave(SAMPLES / "crash-cascade", tmp_path / "job")
    assert shared.name.endswith("-gpu-node01.out")
    result = analyze([shared.parent])
    root = result.verdict.root_cause
    assert root is not None and (root.rank, root.host, root.node) == (11, "gpu-node02", "gpu-node02"), \
        result.verdict.summary
    assert result.verdict.finding == "LS301"
    assert "gpu-node01" not in result.verdict.summary
    warnings = [w for w in result.job.warnings if "holds the output of 2 nodes (gpu-node01, gpu-node02)" in w]
    assert len(warnings) == 1 and "%N is the first node" in warnings[0]
    # how to get one file per node is said once, by the "next time" hint, not by the warning too
    assert "srun --output" not in warnings[0] and HINT_SPLIT_OUTPUT in result.hints
    assert result.job.nodes == ["gpu-node01", "gpu-node02"]
    # every output is computed from the same model, and the warning reaches the JSON
    out = result.to_json()
    assert out["verdict"]["root_cause"]["host"] == "gpu-node02"
    assert any("holds the output of 2 nodes" in w for w in out["warnings"])
    json.dumps(out, default=str)
    # the torchrun agent's lines on gpu-node02 name its workers by pid (NCCL tied them to gpu-node02)
    timeline = result.job.timeline.to_dicts()
    signalled = [r for r in timeline if r["event"] == "closing_signal" and r["pid"] in range(49125, 49133)]
    assert signalled and {r["node"] for r in signalled} == {"gpu-node02"}
    assert {r["rank"] for r in signalled} <= set(range(8, 16))
    # and its own lines by the pid in their glog head, the one that names those workers
    rendezvous = {r["fields"]["group_rank"]: r["node"] for r in timeline if r["event"] == "rendezvous"}
    assert rendezvous == {0: "gpu-node01", 1: "gpu-node02"}


def test_per_node_files_get_no_warning() -> None:
    result = analyze([SAMPLES / "crash-cascade"])
    assert not [w for w in result.job.warnings if "holds the output" in w]


def test_srun_task_labels_and_role_tags_place_lines(tmp_path: Path) -> None:
    """srun --label: lines carrying a task label and an NCCL host show the task layout, so a line
    with the label only is that node's; a --role host: tag names its host itself."""
    log = tmp_path / "train-77-nodeA1.out"
    log.write_text(
        "0: nodeA1:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x7 - "
        "Init COMPLETE\n"
        "1: nodeB2:200:200 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x7 - "
        "Init COMPLETE\n"
        "1: ValueError: batch 3 has NaN labels\n"
        "[nodeB2:0]:RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "0: RuntimeError: something on A\n"
    )
    job = load_job([tmp_path])
    errors = job.timeline.filter(job.timeline["event"].is_in(["exception", "cuda_error"])).to_dicts()
    placed = {(r["text"][:20], r["node"], r["rank"]) for r in errors}
    assert placed == {("ValueError: batch 3 ", "nodeB2", 1), ("RuntimeError: CUDA e", "nodeB2", None),
                      ("RuntimeError: someth", "nodeA1", 0)}
    assert any("holds the output of 2 nodes (nodeA1, nodeB2)" in w for w in job.warnings)


def test_a_node_whose_hostname_differs_from_its_slurm_name_is_not_a_shared_file(tmp_path: Path) -> None:
    """One host in the lines, another in the file name (cloud hostnames): one node, no warning."""
    log = tmp_path / "train-78-gpu-node07.out"
    log.write_text(
        "ip-10-0-1-7:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 1000 commId 0x7 - "
        "Init COMPLETE\n"
        "[rank0]: ValueError: boom\n"
    )
    job = load_job([tmp_path])
    assert set(job.timeline["node"].to_list()) == {"gpu-node07"}
    assert not job.warnings


def _victims(title: str) -> int | None:
    m = re.search(r"(\d+) other process\(es\)", title)
    return int(m.group(1)) if m else None


def test_victims_are_counted_once_and_never_the_root() -> None:
    """16 ranks, rank 11 fails, the 15 others are torn down: 15 victims, not 18."""
    result = analyze([SAMPLES / "crash-cascade"])
    ls301 = next(f for f in result.findings if f.code == "LS301")
    assert _victims(ls301.title) == 15, ls301.title


def test_victims_never_exceed_the_world_less_the_root() -> None:
    cases = [c for c in sorted(GOLDENS.glob("LS301-*")) if (c / "logs").is_dir()]
    cases += [SAMPLES / name for name in ("crash-cascade", "oom", "ecc-error", "gpu-xid", "host-oom")]
    checked = 0
    for case in cases:
        result = analyze([case / "logs" if (case / "logs").is_dir() else case])
        world = result.view.world_size
        for finding in result.findings:
            count = _victims(finding.title)
            if finding.code == "LS301" and count is not None and world is not None:
                assert count <= world - 1, (case.name, finding.title, world)
                checked += 1
    assert checked >= 5
