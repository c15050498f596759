#!/usr/bin/env python3
"""Generate the Flight Recorder golden cases under tests/goldens/: gloo jobs run with torch on CPU,
and cases written by tools/fr_writer.py (pure Python, deterministic).

Each scenario of tools/fr_gloo_job.py is run once with ``torchrun --nproc_per_node 4`` on this
machine (``--standalone``, gloo), its output captured as the job's log (``torchrun.log``) and its
dumps written beside it (``TORCH_FR_DUMP_TEMP_FILE=<case>/logs/trace_``): a golden case of the
detector that must name it. Paths in the log are rewritten to /workspace so the fixtures do not
depend on where they were made. The expected answers are the cases' case.json (detector, verdict)
and expected.json (``pytest --update-goldens`` after a regeneration, reviewed).

Cases of ``WRITTEN`` need no torch: each is a simulated job's dumps (tools/fr_writer.py) and a
per-node log of NCCL's ``Init COMPLETE`` lines, which tie each rank to its host as a real job's
logs do.

    .venv/bin/pip install torch==2.13.0   # the CPU wheel
    .venv/bin/python tools/make_fr_fixtures.py [--only NAME] [--written-only]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDENS = ROOT / "tests" / "goldens"
JOB = ROOT / "tools" / "fr_gloo_job.py"

SCENARIOS = {
    "LS106-gloo-rank-stops-issuing": ["--scenario", "stop-issuing", "--rank-at-fault", "2", "--step", "3"],
    "LS107-gloo-broadcast-instead-of-all-reduce": ["--scenario", "mismatch", "--rank-at-fault", "1", "--step", "3"],
    "LS108-gloo-straggler": ["--scenario", "straggler", "--rank-at-fault", "3", "--steps", "20"],
}


def _writer():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "tools"))
    import fr_writer

    return fr_writer


def _four(w, **plan):  # type: ignore[no-untyped-def]
    return w.Plan(world=4, groups={"0": ("default_pg", [0, 1, 2, 3]), "1": ("TENSOR_MODEL_PARALLEL_GROUP", [0, 1]),
                                   "2": ("TENSOR_MODEL_PARALLEL_GROUP", [2, 3])},
                  step_ops=[("0", "all_reduce"), ("1", "all_gather"), ("2", "all_gather")], **plan)


# name -> (the plan's changes, ranks that wrote no dump)
WRITTEN = {
    "LS106-rank-stops-issuing": ({"steps": 8, "stops_issuing": {2: 5}, "frames": True}, ()),
    "LS106-gpu-stops-completing": ({"steps": 8, "stops_completing": {1: 4}}, ()),
    "LS106-ok-every-rank-level": ({"steps": 8}, ()),
    "LS106-known-miss-rank-without-dump": ({"steps": 8, "stops_issuing": {2: 5}}, (2,)),
    "LS107-broadcast-instead-of-all-reduce": ({"steps": 6, "mismatch": {(1, 3, 0): "broadcast"}, "frames": True}, ()),
    "LS107-ok-all-to-all-sizes-differ": ({"steps": 6, "size_mismatch": {(1, 3, 0): [[8, 8]]}, "all_to_all": True}, ()),
    "LS107-known-miss-oldest-entry-of-a-wrapped-buffer": (
        {"steps": 30, "buffer": 40, "mismatch": {(3, 10, 0): "broadcast"}}, ()),
    "LS108-rank-enters-late": ({"steps": 40, "late_ns": {3: 120_000_000}, "stops_issuing": {0: 39}}, ()),
    "LS108-ok-lag-within-noise": ({"steps": 40, "late_ns": {3: 2_000_000}, "stops_issuing": {0: 39}}, ()),
    "LS108-known-miss-too-few-collectives": ({"steps": 3, "late_ns": {3: 300_000_000}, "stops_issuing": {0: 2}}, ()),
}
NODE_OF_RANK = {0: "node01", 1: "node01", 2: "node02", 3: "node02"}


def write_case(name: str, changes: dict, missing: tuple[int, ...]) -> None:  # type: ignore[type-arg]
    w = _writer()
    logs = GOLDENS / name / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir(parents=True)
    changes = dict(changes)
    all_to_all = changes.pop("all_to_all", False)
    plan = _four(w, **changes)
    if all_to_all:
        plan.step_ops[0] = ("0", "all_to_all")
    w.write_job(logs, w.simulate(plan), skip=missing)
    for node in sorted(set(NODE_OF_RANK.values())):
        lines = [f"{node}:{4200 + rank}:{4200 + rank} [{rank % 2}] NCCL INFO ncclCommInitRankConfig "
                 f"comm 0x55d0a1b2c{rank}d0 rank {rank} nranks 4 cudaDev {rank % 2} nvmlDev {rank % 2} "
                 f"busId {rank % 2}b000 commId 0x5f3c2a1b9e8d7c6b - Init COMPLETE\n"
                 for rank, host in NODE_OF_RANK.items() if host == node]
        (logs / f"train-4242-{node}.out").write_text("".join(lines))
    print(f"{name}: {len(list(logs.glob('nccl_trace_rank_*')))} dumps")


def run(name: str, args: list[str]) -> None:
    logs = GOLDENS / name / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir(parents=True)
    env = {**os.environ, "TORCH_FR_DUMP_TEMP_FILE": str(logs / "trace_"), "TORCH_FR_BUFFER_SIZE": "2000",
           "OMP_NUM_THREADS": "1", "LOGLEVEL": "INFO"}  # torchrun's agent says how the job ended
    torchrun = Path(sys.executable).with_name("torchrun")
    command = [str(torchrun), "--standalone", "--nproc_per_node", "4", "--tee", "3", str(JOB), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=logs)
    text = done.stdout + done.stderr
    text = text.replace(str(logs), "/workspace/logs").replace(str(ROOT), "/workspace")
    text = re.sub(re.escape(str(Path(sys.executable).parents[1])), "/opt/venv", text)
    (logs / "torchrun.log").write_text(text)
    print(f"{name}: exit {done.returncode}, {len(list(logs.glob('trace_*')))} dumps")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--written-only", action="store_true", help="only the cases tools/fr_writer.py writes")
    args = ap.parse_args()
    for name, (changes, missing) in WRITTEN.items():
        if args.only is None or args.only in name:
            write_case(name, changes, missing)
    for name, job_args in SCENARIOS.items():
        if not args.written_only and (args.only is None or args.only in name):
            run(name, job_args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
