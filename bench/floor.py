#!/usr/bin/env python3
"""The least any polars reader of these logs must do, timed: what bounds ``logscope analyze``.

Reads every file of a job folder the way logscope's workers do (one process per core, files
split between them, blocks of ``CHUNK_BYTES`` cut at a newline) and, per block, does only:

* ``lines``: split it into lines with polars (``read_csv``, one field per line);
* ``finds``: that, plus the three substring searches that tell an NCCL COLL line and where its
  communicator is (`` NCCL INFO ``, ``: opCount ``, ``comm ``), without using the results;
* ``scan``: no polars at all: the compiled scanner's two passes over the bytes
  (``logscope/ingest/_collscan.c``: which control bytes the block holds, then its COLL lines found
  and grouped), what ``analyze`` pays per block before anything is framed. Its blocks are the
  file's pages mapped, as the workers' byte pass reads them (``blocks(..., mapped=True)``).

No pattern, no grouping, no detector: any reader that looks at every line of the file in polars
pays at least ``lines``, plus starting Python and polars. Compare with the ``analyze`` row of
``bench.py`` on the same folder.

Usage: ``python bench/floor.py DIR [--stage lines|finds|scan] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def work(paths: list[str], stage: str) -> int:
    """Read ``paths`` in this process; return the number of lines."""
    sys.path.insert(0, str(REPO))
    from logscope.ingest.compiled import scanner

    lines = 0
    if stage == "scan":  # no polars loaded, as in a read worker
        from logscope.ingest.blocks import blocks

        for path in paths:
            with Path(path).open("rb") as stream:
                for block in blocks(stream, Path(path), [], mapped=True):
                    scanner.controls(block)
                    lines += scanner.scan(block, False, 4096)[0]
        return lines
    import polars as pl

    from logscope.ingest import CHUNK_BYTES

    raw = pl.col("raw")
    for path in paths:
        pending = b""
        with Path(path).open("rb") as stream:
            while data := stream.read(CHUNK_BYTES):
                data = pending + data
                cut = data.rfind(b"\n") + 1
                block, pending = data[:cut], data[cut:]
                if not block:
                    continue
                frame = pl.read_csv(block, has_header=False, separator="\x1f", quote_char=None, new_columns=["raw"],
                                    schema_overrides={"raw": pl.String}, infer_schema=False, encoding="utf8-lossy",
                                    truncate_ragged_lines=True)
                if stage == "finds":
                    frame.select(raw.str.find(" NCCL INFO ", literal=True).alias("a"),
                                 raw.str.find(": opCount ", literal=True).alias("b"),
                                 raw.str.find("comm ", literal=True).alias("c"))
                lines += frame.height
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--stage", choices=("lines", "finds", "scan"), default="finds")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(work(args.worker, args.stage))
        return 0
    files = sorted((p for p in args.folder.iterdir() if p.is_file()), key=lambda p: -p.stat().st_size)
    cores = len(os.sched_getaffinity(0))
    groups: list[list[str]] = [[] for _ in range(cores)]
    load = [0] * cores
    for path in files:  # biggest first, to the least loaded worker
        i = load.index(min(load))
        groups[i].append(str(path))
        load[i] += path.stat().st_size
    # The settings logscope's workers run with (see ingest.workers._Workers).
    env = {**os.environ, "POLARS_MAX_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": str(1 << 30),
           "MALLOC_TRIM_THRESHOLD_": str(1 << 32)}
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, __file__, str(args.folder), "--stage", args.stage, "--worker", *g],
                                  stdout=subprocess.PIPE, text=True, env=env) for g in groups if g]
        lines = sum(int(p.communicate()[0]) for p in procs)
        times.append(time.perf_counter() - start)
    size = sum(p.stat().st_size for p in files) / 1e6
    wall = statistics.median(times)
    print(f"{args.stage}: {size:.0f} MB, {lines:,} lines, {len(groups)} processes: {wall:.2f} s "
          f"(median of {args.repeat}), {size / wall:.0f} MB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
