#!/usr/bin/env python3
"""CPU and memory of ``logscope watch`` beside a running job, next to ``tail -F`` on the same files.

A job of ``--ranks`` ranks (default 64), each writing its own file (NCCL's ``NCCL_DEBUG_FILE``
``%h.%p``: its Init line, then per training step ``--colls`` NCCL COLL lines and one progress line),
one step every ``--step`` seconds of the job's time, is written into a fresh folder while
``logscope watch FOLDER --format jsonl`` and ``tail -q -F FILES > /dev/null`` follow it. Two runs:

* ``realtime``: the job at its own pace for ``--realtime`` seconds: the watch's CPU share is what it
  costs beside a job (its default interval, 5 s);
* ``hour``: one hour of the job replayed ``--speed`` times faster: the watch's memory (RSS, sampled
  every second) over the hour, which must stay flat (bounded: the watch keeps the last lines of each
  process and communicator, and what identifies them).

The watch must see every line written (its ``status``-free run ends with Ctrl-C: exit 130) and raise
no alert (the job never stalls). CPU is user + system time of the process (``/proc/PID/stat``), over
the wall time of the run.

Usage: ``python bench/watch.py [--ranks 64] [--realtime 120] [--speed 60] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


def init_line(rank: int, ranks: int) -> str:
    host, pid = f"gpu-node{rank // 8 + 1:02d}", 40000 + rank
    return (f"{host}:{pid}:{pid + 100} [{rank % 8}] NCCL INFO ncclCommInitRank comm 0x55{rank:08x}0 rank {rank} "
            f"nranks {ranks} cudaDev {rank % 8} nvmlDev {rank % 8} busId {rank % 8}9000 commId 0x15f5c7e4c444e4cc "
            f"localSize 8 used 1208 bytes - Init COMPLETE\n")


def step_lines(rank: int, step: int, colls: int) -> str:
    host, pid = f"gpu-node{rank // 8 + 1:02d}", 40000 + rank
    out = [f"{host}:{pid}:{pid} [{rank % 8}] NCCL INFO AllReduce: opCount {step * colls + n:x} "
           f"sendbuff 0x7f{rank:06x}00 recvbuff 0x7f{rank:06x}00 count 6553600 datatype 7 op 0 root 0 "
           f"comm 0x55{rank:08x}0 [nranks=64] stream 0x55{rank:08x}f\n" for n in range(colls)]
    out.append(f"[rank{rank}]: step {step} loss {2.0 / (1 + step * 0.01):.6f} lr 3.0e-04\n")
    return "".join(out)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run(name: str, ranks: int, colls: int, step_s: float, job_seconds: float, speed: float) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"logscope-watch-bench-{name}-"))
    try:
        files = [folder / f"nccl-debug.gpu-node{r // 8 + 1:02d}.{40000 + r}" for r in range(ranks)]
        for rank, path in enumerate(files):
            path.write_text(init_line(rank, ranks))
        watch = subprocess.Popen([sys.executable, "-m", "logscope", "watch", str(folder), "--format", "jsonl"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        tail = subprocess.Popen(["tail", "-q", "-F", *map(str, files)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        events: list[dict[str, Any]] = []
        reader = threading.Thread(target=lambda: events.extend(json.loads(line) for line in watch.stdout or []),
                                  daemon=True)
        reader.start()
        time.sleep(2.0)  # both started (the watch imports polars: ~1 s), their start-up not counted
        cpu0, tail0 = cpu_seconds(watch.pid), cpu_seconds(tail.pid)
        samples: list[tuple[float, float]] = []
        outs = [path.open("a") for path in files]
        start = time.monotonic()
        steps = int(job_seconds / step_s)
        lines = ranks
        next_sample = start
        for step in range(1, steps + 1):
            due = start + step * step_s / speed
            while (now := time.monotonic()) < due:
                if now >= next_sample:
                    samples.append((now - start, rss_mb(watch.pid)))
                    next_sample += 1.0
                time.sleep(min(0.05, due - now))
            for rank, out in enumerate(outs):
                out.write(step_lines(rank, step, colls))
                out.flush()
            lines += ranks * (colls + 1)
        for out in outs:
            out.close()
        time.sleep(6.0)  # the watch's last look
        wall = time.monotonic() - start
        samples.append((wall, rss_mb(watch.pid)))
        cpu, tail_cpu = cpu_seconds(watch.pid) - cpu0, cpu_seconds(tail.pid) - tail0
        watch.send_signal(signal.SIGINT)
        code = watch.wait(timeout=60)
        tail.terminate()
        tail.wait()
        reader.join(timeout=5)
        size = sum(path.stat().st_size for path in files)
        rss = [value for _, value in samples]
        quarter = max(1, len(rss) // 4)
        return {
            "run": name, "ranks": ranks, "files": len(files), "job_seconds": job_seconds, "speed": speed,
            "wall_s": round(wall, 1), "lines": lines, "bytes": size,
            "watch_cpu_s": round(cpu, 2), "watch_cpu_pct": round(100 * cpu / wall, 2),
            "tail_cpu_s": round(tail_cpu, 2), "tail_cpu_pct": round(100 * tail_cpu / wall, 2),
            "rss_mb_first_quarter_max": round(max(rss[:quarter]), 1),
            "rss_mb_last_quarter_max": round(max(rss[-quarter:]), 1),
            "rss_mb_max": round(max(rss), 1), "rss_mb_samples": [(round(t), round(v, 1)) for t, v in samples[::10]],
            "alerts": [event["kind"] for event in events], "exit_code": code,
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--colls", type=int, default=20, help="NCCL COLL lines per rank and step")
    parser.add_argument("--step", type=float, default=2.0, help="seconds of the job's time per step")
    parser.add_argument("--realtime", type=float, default=120.0, help="seconds of the job at its own pace")
    parser.add_argument("--speed", type=float, default=60.0, help="how much faster the hour is replayed")
    parser.add_argument("--runs", default="realtime,hour")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = []
    for name in args.runs.split(","):
        if name == "realtime":
            results.append(run(name, args.ranks, args.colls, args.step, args.realtime, 1.0))
        elif name == "hour":
            results.append(run(name, args.ranks, args.colls, args.step, 3600.0, args.speed))
        result = results[-1]
        print(f"{result['run']:8s} {result['files']} files, {result['lines']:,} lines ({result['bytes'] / 1e6:.0f} MB) "
              f"in {result['wall_s']} s: watch CPU {result['watch_cpu_s']} s = {result['watch_cpu_pct']}% of a core "
              f"(tail -F {result['tail_cpu_pct']}%); RSS max {result['rss_mb_max']} MB (first quarter "
              f"{result['rss_mb_first_quarter_max']}, last quarter {result['rss_mb_last_quarter_max']}); alerts "
              f"{result['alerts'] or 'none'}; exit {result['exit_code']}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"machine": os.uname().nodename, "cpus": os.cpu_count(),
                                         "when": time.strftime("%Y-%m-%d %H:%M"), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
