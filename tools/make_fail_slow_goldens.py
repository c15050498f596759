#!/usr/bin/env python3
"""Regenerate the logs of the LS105 (fail-slow) golden cases from tools/jobsim.py, deterministically.

    python tools/make_fail_slow_goldens.py           # rewrite tests/goldens/LS105-*/logs/
    python tools/make_fail_slow_goldens.py --check   # exit 1 if a folder differs from what would be written

Each case is a 2-node job of 2 GPUs a node (small logs), one progress line every 10 steps at
0.85 s a step with jitter of up to 8% a step; the case's README says what is in it. Stdlib only.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobsim import JobSpec, write_job

GOLDENS = Path(__file__).resolve().parent.parent / "tests" / "goldens"
BASE = JobSpec(nodes=2, gpus=2, steps=300, seed=7)

CASES: dict[str, JobSpec] = {
    # 1.4x from step 150 on, an IB port error on gpu-node02 as it starts; the run completes
    "LS105-slowdown-from-step-150-ib-port-error": JobSpec(
        nodes=2, gpus=2, steps=300, seed=7, job_id=4310401, slowdown=1.4, slowdown_step=150, slowdown_event=True),
    # 1.5x from step 120, then rank 3 crashes at step 250: the verdict stays the crash
    "LS105-crash-after-slowdown": JobSpec(
        nodes=2, gpus=2, steps=250, seed=8, job_id=4310402, scenario="crash-cascade", slowdown=1.5,
        slowdown_step=120),
    # ordinary jitter only
    "LS105-ok-healthy-jitter": JobSpec(nodes=2, gpus=2, steps=400, seed=9, job_id=4310403),
    # faster from step 100 on (0.7x): a speed-up is never a fail-slow
    "LS105-ok-speed-up": JobSpec(nodes=2, gpus=2, steps=300, seed=10, job_id=4310404, slowdown=0.7,
                                 slowdown_step=100),
    # 1.15x from step 150: real, but below the 1.2x the detector reports
    "LS105-known-miss-slowdown-1p15x": JobSpec(nodes=2, gpus=2, steps=300, seed=11, job_id=4310405,
                                               slowdown=1.15, slowdown_step=150),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    stale = []
    for name, spec in CASES.items():
        target = GOLDENS / name / "logs"
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                write_job(spec, tmp)
                made = sorted(p.name for p in Path(tmp).iterdir())
                have = sorted(p.name for p in target.iterdir()) if target.is_dir() else []
                if made != have or not all(filecmp.cmp(Path(tmp) / n, target / n, shallow=False) for n in made):
                    stale.append(name)
            continue
        shutil.rmtree(target, ignore_errors=True)
        write_job(spec, target)
        print(f"wrote {target}")
    if stale:
        print("stale: " + ", ".join(stale) + " (run tools/make_fail_slow_goldens.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
