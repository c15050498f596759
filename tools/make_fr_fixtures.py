#!/usr/bin/env python3
"""Generate the gloo Flight Recorder fixtures under tests/goldens/ with torch on CPU.

Each scenario of tools/fr_gloo_job.py is run once with ``torchrun --nproc_per_node 4`` on this
machine (``--standalone``, gloo), its output captured as the job's log (``torchrun.log``) and its
dumps written beside it (``TORCH_FR_DUMP_TEMP_FILE=<case>/logs/trace_``): a golden case of the
detector that must name it. Paths in the log are rewritten to /workspace so the fixtures do not
depend on where they were made. The expected answers are the cases' case.json (detector, verdict)
and expected.json (``pytest --update-goldens`` after a regeneration, reviewed).

    .venv/bin/pip install torch==2.13.0   # the CPU wheel
    .venv/bin/python tools/make_fr_fixtures.py [--only NAME]
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
    "LS104-gloo-rank-stops-issuing": ["--scenario", "stop-issuing", "--rank-at-fault", "2", "--step", "3"],
    "LS105-gloo-broadcast-instead-of-all-reduce": ["--scenario", "mismatch", "--rank-at-fault", "1", "--step", "3"],
    "LS106-gloo-straggler": ["--scenario", "straggler", "--rank-at-fault", "3", "--steps", "20"],
}


def run(name: str, args: list[str]) -> None:
    logs = GOLDENS / name / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir(parents=True)
    env = {**os.environ, "TORCH_FR_DUMP_TEMP_FILE": str(logs / "trace_"), "TORCH_FR_BUFFER_SIZE": "2000",
           "OMP_NUM_THREADS": "1"}
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
    args = ap.parse_args()
    for name, job_args in SCENARIOS.items():
        if args.only is None or args.only in name:
            run(name, job_args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
