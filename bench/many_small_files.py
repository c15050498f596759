"""The fixed cost per file of reading a job of many small files.

    python bench/many_small_files.py [--files 2000]

Writes a job of N two-line files (a python-logging step line and an NCCL INFO line, one host
each) into a temporary folder and times ``logscope.analysis.analyze`` on it, in this process
(interpreter start and imports excluded); prints seconds and milliseconds per file.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from logscope.analysis import analyze


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for n in range(args.files):
            (root / f"train-7-node{n}.out").write_text(
                f"2026-01-01 00:00:00,000 - INFO - step 1 loss 2.0\nnode{n}:{n}:{n} [0] NCCL INFO hello\n")
        analyze([root / "train-7-node0.out"])  # warm: first calls compile patterns
        started = time.perf_counter()
        result = analyze([root])
        took = time.perf_counter() - started
    print(f"{args.files} files, {result.job.lines_read} lines: {took:.2f} s, "
          f"{took / args.files * 1000:.2f} ms per file")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
