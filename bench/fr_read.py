#!/usr/bin/env python3
"""Benchmark: reading Flight Recorder dumps (64 ranks x 2000 entries) with logscope's safe reader.

Writes, once, 64 dumps of 2000 entries each (tools/fr_writer.py: PyTorch's format 2.10 as its
pickler writes it, protocol 2, strings and stack frames referred back to, ~330 KB a dump, ~21 MB
in all) into ``--workdir`` (default /tmp/logscope-bench/fr64, never the repository). Then, each in
a fresh process, ``--repeat`` times, the median reported:

* ``cat``: the bytes read (the floor);
* ``pickle.load``: Python's own unpickler, which trusts the files (what NVRx's analyser does);
* ``logscope read``: logscope.flight_recorder's finding and reading (the opcode pre-scan, the
  unpickler that refuses every class, the columns; one worker process per core above 8 dumps),
  each dump made a polars frame as it arrives;
* ``logscope timeline``: the same and the dumps' rows on a job's timeline (aligned, groups tied,
  thinned to what is in flight and each group's last 64 entries);
* ``logscope analyze``: the whole command on the folder (dumps alone), JSON out.

Memory: the peak RSS of the process over the same process having imported what it needs and read
nothing (``+MB``), the peak its worker processes report (``workers MB``: a worker forked from a
process that has polars loaded counts those pages until it execs, so this overstates), and one
worker's own peak reading half the dumps, started from a small process. The target (issue 35):
read in under 1 s on 2 cores, under 100 MB more.

    .venv/bin/python bench/fr_read.py [--repeat 5] [--ranks 64] [--entries 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

READ = """
import gc, resource, sys, time
from pathlib import Path
from logscope.collector import collect_less_often
collect_less_often()  # as the command does (logscope.command)
from logscope.flight_recorder.finding import find_in_folders
from logscope.flight_recorder.reading import read_dumps
from logscope.flight_recorder.rows import entry_frame
from logscope.flight_recorder.joining import add_to_job, dumps_only_job, find_dumps
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
cpu_start = cpu()
folder = Path(sys.argv[1])
start = time.perf_counter()
if sys.argv[2] == "read":
    read, skipped = read_dumps(find_in_folders([folder]), entry_frame)
    count = sum(d.entry_count for d, _ in read)
elif sys.argv[2] == "timeline":
    job = dumps_only_job([folder]); add_to_job(job, find_dumps([folder])); count = job.timeline.height
else:
    import pickle
    count = sum(len(pickle.loads(p.read_bytes())["entries"]) for p in sorted(folder.glob("nccl_trace_rank_*")))
took = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(took, (peak - base) / 1024, children / 1024, count, cpu() - cpu_start)
"""


def make(folder: Path, ranks: int, entries: int) -> None:
    stamp = folder / ".stamp"
    spec = f"{ranks}x{entries}"
    if stamp.exists() and stamp.read_text() == spec:
        return
    sys.path.insert(0, str(REPO / "tools"))
    import fr_writer as w

    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("nccl_trace_rank_*"):
        old.unlink()
    groups = {"0": ("default_pg", list(range(ranks)))}
    for t in range(ranks // 8):
        groups[str(1 + t)] = ("TENSOR_MODEL_PARALLEL_GROUP", list(range(8 * t, 8 * t + 8)))
    for d in range(8):
        groups[str(100 + d)] = ("DATA_PARALLEL_GROUP", list(range(d, ranks, 8)))
    ops = [("0", "all_reduce")] + [(str(1 + t), "_all_gather_base") for t in range(ranks // 8)] + \
        [(str(100 + d), "_reduce_scatter_base") for d in range(8)]
    # each rank is in the world, one TP and one DP group: 3 entries a step
    steps = entries // 3 + 2
    plan = w.Plan(world=ranks, groups=groups, step_ops=ops, steps=steps, frames=True, buffer=entries,
                  stops_issuing={ranks // 2 + 5: steps - 1})
    w.write_job(folder, w.simulate(plan))
    stamp.write_text(spec)


def run(args: list[str]) -> tuple[float, float, float, int, float]:
    out = subprocess.run([sys.executable, "-c", READ, *args], capture_output=True, text=True, check=True,
                         cwd=REPO).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), int(out[3]), float(out[4])


WORKER = """
import pickle, resource, subprocess, sys, os
from pathlib import Path
paths = [str(p) for p in sorted(Path(sys.argv[1]).glob("nccl_trace_rank_*"))]
half = paths[: (len(paths) + 1) // 2]
bare = subprocess.run([sys.executable, "-c", "pass"]).returncode
base = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
worker = subprocess.Popen([sys.executable, "-c", "from logscope.flight_recorder.reading import worker_main; "
                           "worker_main()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          env={**os.environ, "LOGSCOPE_FR_WORKER": "1"})
worker.stdin.write(pickle.dumps(half)); worker.stdin.close()
count = 0
while True:
    try:
        pickle.load(worker.stdout); count += 1
    except EOFError:
        break
worker.wait()
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, base / 1024, count)
"""


def worker_memory(folder: Path) -> tuple[float, float]:
    """A read worker's own peak RSS reading half the dumps, and a bare interpreter's, both started
    from a small process (a worker forked from the command counts the command's pages as its own
    until it execs: the "workers MB" column, an overstatement)."""
    out = subprocess.run([sys.executable, "-c", WORKER, str(folder)], capture_output=True, text=True, check=True,
                         cwd=REPO).stdout.split()
    return float(out[0]), float(out[1])


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=False, cwd=REPO)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/logscope-bench/fr64"))
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--entries", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path)
    options = ap.parse_args()
    make(options.workdir, options.ranks, options.entries)
    files = sorted(options.workdir.glob("nccl_trace_rank_*"))
    size = sum(p.stat().st_size for p in files) / 1e6
    logscope = str(Path(sys.executable).with_name("logscope"))
    results: dict[str, list[tuple[float, float, float, int, float]]] = {"pickle.load": [], "logscope read": [],
                                                                   "logscope timeline": []}
    cat, analyze = [], []
    for _ in range(options.repeat):  # interleaved, the page cache warm for each
        cat.append(timed(["cat", *map(str, files)]))
        results["pickle.load"].append(run([str(options.workdir), "pickle"]))
        results["logscope read"].append(run([str(options.workdir), "read"]))
        results["logscope timeline"].append(run([str(options.workdir), "timeline"]))
        analyze.append(timed([logscope, "analyze", str(options.workdir), "--format", "json"]))
    print(f"{len(files)} dumps, {size:.1f} MB, {os.cpu_count()} cores, median of {options.repeat}")
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} (on a busy machine the wall times stretch; CPU seconds less)")
    print(f"{'':22}{'seconds':>9}{'CPU s':>8}{'+MB':>8}{'workers MB':>12}{'entries':>10}")
    print(f"{'cat':22}{statistics.median(cat):9.3f}")
    summary: dict[str, object] = {"dumps": len(files), "mb": size, "cat_s": statistics.median(cat), "load": load}
    for name, rows in results.items():
        seconds = statistics.median(r[0] for r in rows)
        extra = statistics.median(r[1] for r in rows)
        workers = statistics.median(r[2] for r in rows)
        used = statistics.median(r[4] for r in rows)
        print(f"{name:22}{seconds:9.3f}{used:8.3f}{extra:8.0f}{workers:12.0f}{rows[0][3]:10d}")
        summary[name] = {"s": seconds, "cpu_s": used, "extra_mb": extra, "workers_mb": workers}
    print(f"{'logscope analyze':22}{statistics.median(analyze):9.3f}   (the command: start, read, detectors, JSON)")
    worker, bare = worker_memory(options.workdir)
    print(f"one read worker, half the dumps: peak RSS {worker:.0f} MB (a bare interpreter: {bare:.0f} MB)")
    summary["worker_mb"], summary["bare_python_mb"] = worker, bare
    summary["analyze_s"] = statistics.median(analyze)
    if options.json:
        options.json.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
