#!/usr/bin/env python3
"""Speed and memory of ``logscope analyze`` on big job folders, next to cat, grep and a line loop.

For each size it generates (once, cached under ``--workdir``) a job folder with ``tools/jobsim.py``:
16 nodes x 8 ranks, NCCL INFO with COLL lines (``NCCL_DEBUG_SUBSYS=INIT,ENV,COLL``), torchrun and
training-step lines, and a crash on one rank that takes the job down. ``--shape progress`` measures
the other shape big logs take instead: 16 nodes x 8 ranks each logging a Megatron-style progress line
every iteration, and nothing else (:func:`progress_folder`); ``--shape crash-loop`` a job whose
crash repeats in the same files, as a retry loop in the batch script leaves them
(:func:`crash_loop_folder`); ``--shape real`` the long real logs of ``../shared/real_logs``
repeated as later attempts (:func:`real_folder`), and ``--shape real-one-file`` one of them so in a
single file, as ``#SBATCH --output`` without ``%N`` leaves a job (:func:`real_one_file_folder`).
It runs each tool in a fresh subprocess, ``--repeat`` times,
interleaved, reading every file just before each run (page cache warm):

* ``cat FILES > /dev/null``                 the cost of reading the bytes;
* ``grep -c 'NCCL INFO' FILES``              a memchr-driven substring count in C;
* ``python bench/line_loop.py FILES``        a plain Python line-by-line ``re`` parser;
* ``logscope analyze DIR --format json``     the whole analysis, from reading to the verdict.

Two measures of the fixed cost per job come after (``--small``, on by default; ``--small-only`` for
them alone), each also run in fresh processes, interleaved:

* a shipped sample job (``sample_logs/crash-cascade``, 116 KB) analysed end to end, next to
  ``python -c "import polars"`` (the least any polars program pays to start);
* ``logscope scan`` of ``--scan-jobs`` copies of the shipped sample jobs (each in a folder of its
  own, a fresh table and no cache each run), as jobs per second: wall time of the whole command.

Wall time is the median of the repeats. Peak RSS is the largest of the tool's own peak (GNU
``time -f %M`` when installed, else ``ru_maxrss`` from ``os.wait4``, which also counts the
benchmark's own ~35 MB since Linux keeps the high-water mark across fork and exec) and of the RSS
summed over the tool and its worker processes, sampled every 20 ms.

Usage: ``python bench/bench.py [--sizes 100M,1G] [--workdir /tmp/logscope-bench] [--repeat 1] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TOOLS = ("cat", "grep", "line-loop", "analyze", "base")  # base: analyze from --base's tree
NODES = 16
SCENARIO = "crash-cascade"
SAMPLE_JOB = REPO / "sample_logs" / "crash-cascade"
GNU_TIME = Path("/usr/bin/time")


@dataclass
class Run:
    size: str
    tool: str
    mb: float
    lines: int
    seconds: float
    peak_rss_mb: float
    runs: list[float]
    note: str = ""

    @property
    def mb_s(self) -> float:
        return self.mb / self.seconds

    @property
    def lines_s(self) -> float:
        return self.lines / self.seconds


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def _jobsim_digest() -> str:
    """The generator's own fingerprint, in every cached folder's stamp: another jobsim, another folder."""
    return hashlib.sha256((REPO / "tools" / "jobsim.py").read_bytes()).hexdigest()


def _cached(folder: Path, stamp: dict[str, Any]) -> bool:
    """Whether ``folder`` already holds the input ``stamp`` describes. The stamp lives next to the
    folder, not in it: logscope reads every file of the folder."""
    stamp_file = folder.with_name(f"{folder.name}.json")
    return folder.is_dir() and stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp


def _start(folder: Path, label: str, *scratch: Path) -> Path:
    """Say that ``folder`` is being generated, remove what an earlier run left of it (the folder,
    its ``.partial`` and the ``scratch`` folders) and return the ``.partial`` folder to write in."""
    print(f"generating {folder} ({label}) ...", file=sys.stderr, flush=True)
    partial = folder.with_name(f"{folder.name}.partial")
    for stale in (partial, folder, *scratch):
        shutil.rmtree(stale, ignore_errors=True)
    return partial


def _publish(partial: Path, folder: Path, stamp: dict[str, Any]) -> Path:
    """``partial`` becomes ``folder``, complete, with its stamp beside it."""
    partial.rename(folder)
    folder.with_name(f"{folder.name}.json").write_text(json.dumps(stamp))
    return folder


def job_folder(workdir: Path, label: str, size: int, nccl_timestamps: bool = False) -> Path:
    """The cached job folder for ``size`` bytes, generated when missing or made by another jobsim."""
    sys.path.insert(0, str(REPO))
    from tools.jobsim import JobSpec, write_job

    spec = JobSpec(scenario=SCENARIO, nodes=NODES, coll=True, size_bytes=size, nccl_timestamps=nccl_timestamps)
    stamp = {
        "spec": repr(spec),
        "jobsim": _jobsim_digest(),
    }
    folder = workdir / f"{SCENARIO}-{NODES}n-coll{'-stamped' if nccl_timestamps else ''}-{label}"
    if _cached(folder, stamp):
        return folder
    partial = _start(folder, label)
    started = time.perf_counter()
    write_job(spec, partial)
    _publish(partial, folder, stamp)
    print(f"  done in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return folder


def progress_folder(workdir: Path, label: str, size: int) -> Path:
    """A job folder of ``size`` bytes of training-progress lines: 16 per-node files, 8 ranks each
    (torchrun's ``--tee`` prefixes), one Megatron-style line per rank and iteration. Written once,
    cached under ``workdir`` (a stamp of the format next to it)."""
    folder = workdir / f"progress-{NODES}n-{label}"
    line = ("[default{rank}]:2026-11-03 {hour:02d}:{minute:02d}:{second:02d},532 - INFO - iteration {step:8d}/  "
            "1000000 | consumed samples: {samples:12d} | elapsed time per iteration (ms): 6707.5 | learning rate: "
            "1.500E-04 | global batch size:    64 | lm loss: 2.5{digit}E+00 | grad norm: 0.512 |\n")
    stamp = {"format": line, "size": size}
    if _cached(folder, stamp):
        return folder
    partial = _start(folder, label)
    partial.mkdir(parents=True)
    for node in range(1, NODES + 1):
        with (partial / f"train-4243001-gpu-node{node:02d}.out").open("w") as out:
            written, step = 0, 0
            while written < size // NODES:
                step += 1
                seconds = 2 + step * 7  # an iteration every ~7 s
                chunk = "".join(line.format(rank=rank, hour=14 + seconds // 3600 % 10, minute=seconds // 60 % 60,
                                            second=seconds % 60, step=step, samples=step * 64, digit=step % 10)
                                for rank in range(8))
                out.write(chunk)
                written += len(chunk)
    return _publish(partial, folder, stamp)


def crash_loop_folder(workdir: Path, label: str, size: int) -> Path:
    """A job folder of about ``size`` bytes in which the same crash repeats: a jobsim crash job
    without COLL lines (torchrun's launch, NCCL's set-up, training steps, a crash and the ranks
    killed after it), each node's file written again and again, as ``for attempt in ...; do srun
    ...; done`` appending to the same ``--output`` files leaves it. Thousands of failure records:
    what the detectors' per-row rules cost. Cached under ``workdir``."""
    sys.path.insert(0, str(REPO))
    from tools.jobsim import JobSpec, write_job

    spec = JobSpec(scenario=SCENARIO, nodes=NODES, coll=False)
    stamp = {"spec": repr(spec), "size": size,
             "jobsim": _jobsim_digest()}
    folder = workdir / f"crash-loop-{NODES}n-{label}"
    if _cached(folder, stamp):
        return folder
    one = workdir / f"{folder.name}.one"
    partial = _start(folder, label, one)
    write_job(spec, one)
    attempt = {path.name: path.read_bytes() for path in sorted(one.iterdir()) if path.is_file()}
    repeats = max(1, size // max(1, sum(len(text) for text in attempt.values())))
    partial.mkdir(parents=True)
    for name, text in attempt.items():
        (partial / name).write_bytes(text * repeats)
    shutil.rmtree(one)
    return _publish(partial, folder, stamp)


def realistic_loop_folder(workdir: Path, label: str, size: int) -> Path:
    """A job folder of about ``size`` bytes in which a crash-restart loop ran: jobsim's 16-node
    crash cascade again and again, each attempt with its own pids (``JobSpec.seed``) and 10
    minutes after the one before (``JobSpec.start``), appended to the same per-node files, as a
    requeue or a ``for`` loop around ``srun --open-mode=append`` leaves them. Cached under
    ``workdir``."""
    sys.path.insert(0, str(REPO))
    from tools.jobsim import JobSpec, write_job

    base = JobSpec(scenario=SCENARIO, nodes=NODES, coll=False)
    stamp = {"spec": repr(base), "size": size, "gap_min": LOOP_GAP_MIN,
             "jobsim": _jobsim_digest()}
    folder = workdir / f"crash-restarts-{NODES}n-{label}"
    if _cached(folder, stamp):
        return folder
    one = workdir / f"{folder.name}.one"
    partial = _start(folder, label, one)
    partial.mkdir(parents=True)
    written, attempt = 0, 0
    while written < size:
        spec = replace(base, seed=attempt, start=base.start + timedelta(minutes=LOOP_GAP_MIN * attempt))
        write_job(spec, one)
        for path in sorted(one.iterdir()):
            with (partial / path.name).open("ab") as out:
                written += out.write(path.read_bytes())
        shutil.rmtree(one)
        attempt += 1
    return _publish(partial, folder, stamp)


LOOP_GAP_MIN = 10  # minutes between the starts of two attempts of the realistic crash loop

# The long real logs the `real` shape is built from (``../shared/real_logs``): BigScience's
# Megatron-DeepSpeed on 16 nodes (NCCL set-up of many communicators, progress lines; ends mid-run,
# healthy), MLPerf RNN-T on 16 nodes (MLLOG lines, NCCL set-up, SHARP warnings; healthy) and MLPerf
# R-GAT (per-iteration DLL lines, tracebacks, the watchdog's timeouts: a CUDA OOM on rank 7).
REAL_LOGS = Path(os.environ.get("LOGSCOPE_REAL_LOGS", REPO.parent / "shared" / "real_logs"))
REAL_SOURCES = (
    "43-bigscience-meg-ds-3d-n16-log-ends-mid-run/meg_ds_3d_gpt2_perf_n16.out",
    "101-mlperf-azure-16node-rnnt-healthy-benign-sharp-warn/result_0.txt",
    "108-mlperf-dell-rgat-rank7-cuda-oom-then-watchdog-timeouts/result_7.txt",
)
# What `real` must conclude at every size: the one failure in it, case 108's (its expected.json).
REAL_VERDICT = ("oom", 7)
_ISO = re.compile(rb"(\d{4}-\d\d-\d\d)([ T])(\d\d:\d\d:\d\d)")
_GLOG = re.compile(rb"(?<![\w.])([IWEF])(\d\d)(\d\d) (\d\d:\d\d:\d\d)")
_TIME_MS = re.compile(rb'("time_ms": )(\d{13})')
_NCCL_PID = re.compile(rb"(?m)^((?:\d+: )?[\w.-]+):(\d+):(\d+) \[")


def shifted(text: bytes, copy: int, hours: int) -> bytes:
    """``text`` with its times ``copy * hours`` hours later (ISO date-times, glog's ``E1003
    22:09:50``, MLLOG's ``time_ms``) and its NCCL lines' pids and thread ids shifted by ``copy``:
    one more attempt of the same job, later, by other processes."""
    if copy == 0:
        return text
    delta = timedelta(hours=copy * hours)
    year = int(m.group(1)[:4]) if (m := _ISO.search(text)) else 2026

    def iso(m: re.Match[bytes]) -> bytes:
        when = datetime.strptime((m.group(1) + b" " + m.group(3)).decode(), "%Y-%m-%d %H:%M:%S") + delta
        return f"{when:%Y-%m-%d}".encode() + m.group(2) + f"{when:%H:%M:%S}".encode()

    def glog(m: re.Match[bytes]) -> bytes:
        try:
            when = datetime.strptime(f"{year}{m.group(2).decode()}{m.group(3).decode()} {m.group(4).decode()}",
                                     "%Y%m%d %H:%M:%S") + delta
        except ValueError:
            return m.group(0)
        return m.group(1) + f"{when:%m%d %H:%M:%S}".encode()

    def pid(m: re.Match[bytes]) -> bytes:
        return m.group(1) + b":%d:%d [" % (int(m.group(2)) + 7 * copy, int(m.group(3)) + 7 * copy)

    text = _ISO.sub(iso, text)
    text = _GLOG.sub(glog, text)
    text = _TIME_MS.sub(lambda m: m.group(1) + str(int(m.group(2)) + int(delta.total_seconds() * 1000)).encode(),
                        text)
    return _NCCL_PID.sub(pid, text)


def real_folder(workdir: Path, label: str, size: int, names: tuple[str, ...] = REAL_SOURCES,
                kind: str = "real") -> Path:
    """A job folder of about ``size`` bytes built from the long real logs ``names``: each in a
    file of its own, repeated as later attempts of its job (:func:`shifted`: each copy a day later
    per 24 hours the log spans, other pids), in equal shares of ``size``. Cached under
    ``workdir``."""
    sources = [REAL_LOGS / name for name in names]
    if missing := [str(path) for path in sources if not path.is_file()]:
        raise SystemExit(f"the real logs of --shape real are missing: {', '.join(missing)} (LOGSCOPE_REAL_LOGS)")
    stamp = {"sources": [hashlib.sha256(path.read_bytes()).hexdigest() for path in sources], "size": size,
             "bench": hashlib.sha256(inspect.getsource(shifted).encode()).hexdigest()}
    folder = workdir / f"{kind}-{label}"
    if _cached(folder, stamp):
        return folder
    partial = _start(folder, label)
    partial.mkdir(parents=True)
    for path in sources:
        text = path.read_bytes()
        times = sorted(datetime.strptime((m.group(1) + b" " + m.group(3)).decode(), "%Y-%m-%d %H:%M:%S")
                       for m in _ISO.finditer(text))
        hours = 1 + int((times[-1] - times[0]).total_seconds() // 3600) if times else 1
        copies = max(1, size // len(sources) // len(text))
        with (partial / f"{path.parent.name.split('-')[0]}-{path.name}").open("wb") as out:
            for copy in range(copies):
                out.write(shifted(text, copy, hours))
    return _publish(partial, folder, stamp)


def real_one_file_folder(workdir: Path, label: str, size: int) -> Path:
    """A job of one file of about ``size`` bytes (``#SBATCH --output`` without ``%N``: every node's
    output in it): case 108's log (MLPerf R-GAT: DLL progress lines, the OOM on rank 7, the
    watchdog's timeouts) repeated as later attempts, as :func:`real_folder` repeats it."""
    return real_folder(workdir, label, size, REAL_SOURCES[2:], "real-one-file")


def warm(files: list[Path]) -> tuple[int, int]:
    """Read every file once (page cache) and count its bytes and lines."""
    size = lines = 0
    for path in files:
        with path.open("rb") as fh:
            while block := fh.read(1 << 24):
                size += len(block)
                lines += block.count(b"\n")
    return size, lines


def run_once(argv: list[str], capture: bool, tree: Path = REPO) -> tuple[float, float, int, bytes]:
    """Wall seconds, peak RSS (MB), exit status and stdout of one fresh process."""
    # A child's ru_maxrss starts at the RSS of the process that forked it (Linux keeps the
    # high-water mark across exec), so a tiny launcher forks the tool when there is one: GNU time.
    rss_file = None
    if GNU_TIME.is_file():
        fd, rss_file = tempfile.mkstemp(prefix="bench-rss-")
        os.close(fd)
        argv = [str(GNU_TIME), "-f", "%M", "-o", rss_file, *argv]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=tree,
                            env=os.environ | {"PYTHONPATH": str(tree)} if tree != REPO else None)
    sampler = TreeRss(proc.pid, skip_root=rss_file is not None)
    sampler.start()
    out = proc.stdout.read() if proc.stdout is not None else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    sampler.stop()
    peak_kb = usage.ru_maxrss
    if rss_file is not None:
        peak_kb = int(Path(rss_file).read_text().split()[-1])
        Path(rss_file).unlink()
    # ru_maxrss is the largest single process; a tool with worker processes holds their sum.
    return wall, max(peak_kb / 1024, sampler.peak / 2**20), os.waitstatus_to_exitcode(status), out


class TreeRss(threading.Thread):
    """Samples the summed RSS of a process and all its descendants (not the process itself with
    ``skip_root``: GNU time) every 20 ms."""

    def __init__(self, root: int, skip_root: bool) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.skip_root = skip_root
        self.peak = 0
        self._done = threading.Event()

    def stop(self) -> None:
        self._done.set()
        self.join()

    def run(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        # The tree is walked through each task's children list where the kernel keeps one (a few
        # reads a sample); scanning every process's stat costs ~4 ms a sample, a fifth of a core
        # taken from the tool measured on a 2-core machine.
        listed = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists()
        while not self._done.wait(0.02):
            children = _children_listed if listed else _children_scanned()
            total, todo = 0, children(self.root) if self.skip_root else [self.root]
            while todo:
                pid = todo.pop()
                try:
                    total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
                except (OSError, IndexError, ValueError):
                    continue
                todo += children(pid)
            self.peak = max(self.peak, total)


def _children_listed(pid: int) -> list[int]:
    """A process's children, from its tasks' ``children`` lists (Linux with CONFIG_PROC_CHILDREN)."""
    found: list[int] = []
    try:
        tasks = [entry.name for entry in os.scandir(f"/proc/{pid}/task")]
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except (OSError, ValueError):
            continue
    return found


def _children_scanned() -> Callable[[int], list[int]]:
    """Children by process, from every process's parent in ``/proc/PID/stat`` (read once a sample)."""
    by_parent: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            by_parent.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    return lambda pid: by_parent.get(pid, [])


@dataclass(frozen=True)
class Shape:
    """A shape of big log: how its job folder is made, the most common form of its lines (what
    ``grep -c`` counts beside it), and the verdict every run must reach (category, root rank)."""

    folder: Callable[[Path, str, int], Path]
    grep: str
    verdict: tuple[str, int | None]


SHAPES = {
    "coll": Shape(job_folder, "NCCL INFO", ("crash", 11)),
    "progress": Shape(progress_folder, "iteration", ("incomplete", None)),
    "crash-loop": Shape(realistic_loop_folder, "NCCL INFO", ("crash", 11)),
    "crash-repeat": Shape(crash_loop_folder, "NCCL INFO", ("crash", 11)),
    "real": Shape(real_folder, "NCCL INFO", REAL_VERDICT),
    "real-one-file": Shape(real_one_file_folder, "DLL", REAL_VERDICT),
}


def commands(tool: str, folder: Path, files: list[str], grep: str = "NCCL INFO") -> list[str]:
    if tool == "cat":
        return ["cat", *files]  # > /dev/null
    if tool == "grep":
        return ["grep", "-c", grep, *files]
    if tool == "line-loop":
        return [sys.executable, str(REPO / "bench" / "line_loop.py"), *files]
    return [sys.executable, "-m", "logscope", "analyze", str(folder), "--format", "json"]  # analyze, base


def check(tool: str, code: int, out: bytes, lines: int, verdict: tuple[str, int | None] | None = None) -> str:
    """A short note on the output, and a hard stop if the tool did not do its job."""
    if tool == "cat":
        return ""
    if tool == "grep":
        hits = sum(int(row.rsplit(b":", 1)[-1]) for row in out.splitlines())
        return f"{hits} matches"
    if tool == "line-loop":
        found = json.loads(out)
        if code != 0 or found["lines"] != lines:
            raise SystemExit(f"line loop failed: exit {code}, {found}")
        return f"{found['coll_lines']} COLL lines"
    found = json.loads(out)
    if code not in (0, 1, 3) or found["job"]["lines_read"] != lines:  # a verdict (3: incomplete), every line read
        raise SystemExit(f"logscope analyze failed: exit {code}, lines_read {found['job']['lines_read']}")
    said = found["verdict"]
    root = said.get("root_cause") or {}
    if verdict is not None and (said["category"], root.get("rank")) != verdict:
        raise SystemExit(f"logscope analyze got the verdict wrong: {said['category']} rank {root.get('rank')}, "
                         f"not {verdict[0]} rank {verdict[1]}")
    return f"{said['category']} {said['finding']} rank {root.get('rank')}"


def bench_size(workdir: Path, label: str, repeat: int, tools: tuple[str, ...],
               nccl_timestamps: bool = False, shape: str = "coll", base: Path | None = None) -> list[Run]:
    if shape == "coll":
        folder = job_folder(workdir, label, parse_size(label), nccl_timestamps)
    else:
        folder = SHAPES[shape].folder(workdir, label, parse_size(label))
    files = sorted(p for p in folder.iterdir() if p.is_file())
    size, lines = warm(files)
    names = [str(p) for p in files]
    samples: dict[str, list[tuple[float, float, str]]] = {t: [] for t in tools}
    for _ in range(repeat):
        for tool in tools:
            # Again before each run: this machine's page cache does not keep a few GB for long
            # (seen: a 1 GB folder read from disk again a minute later), and a tool that paid
            # for the disk would be measured against one that did not.
            warm(files)
            wall, rss, code, out = run_once(commands(tool, folder, names, SHAPES[shape].grep), capture=tool != "cat",
                                            tree=base if tool == "base" and base is not None else REPO)
            samples[tool].append((wall, rss, check(tool, code, out, lines, SHAPES[shape].verdict)))
            print(f"  {label:>5} {tool:<10} {wall:7.2f} s  {rss:7.0f} MB", file=sys.stderr, flush=True)
    return [
        Run(label, tool, size / 1e6, lines, statistics.median(s[0] for s in got), max(s[1] for s in got),
            [round(s[0], 3) for s in got], got[-1][2])
        for tool, got in samples.items()
    ]


@dataclass
class SmallRun:
    what: str
    seconds: float
    runs: list[float]
    note: str = ""


def scan_root(workdir: Path, jobs: int) -> tuple[Path, int]:
    """``jobs`` sample jobs (the shipped ones, copied round-robin, one folder each) under one root."""
    samples = sorted(p for p in (REPO / "sample_logs").iterdir() if p.is_dir())
    root = workdir / f"scan-{jobs}-sample-jobs"
    if not root.is_dir() or sum(1 for _ in root.iterdir()) != jobs:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for n in range(jobs):
            sample = samples[n % len(samples)]
            shutil.copytree(sample, root / f"{n:05d}-{sample.name}", ignore=shutil.ignore_patterns("*.md", "*.json"))
    warm([p for p in root.rglob("*") if p.is_file()])
    return root, jobs


def bench_small(workdir: Path, repeat: int, scan_jobs: int) -> list[SmallRun]:
    """The fixed cost per job: a sample job end to end next to importing polars, and the scan rate."""
    warm([p for p in SAMPLE_JOB.iterdir() if p.is_file()])
    root, jobs = scan_root(workdir, scan_jobs)
    polars_cmd = [sys.executable, "-c", "import polars"]
    sample_cmd = [sys.executable, "-m", "logscope", "analyze", str(SAMPLE_JOB), "--format", "json"]
    got: dict[str, list[float]] = {"import polars": [], "sample job": [], "scan": []}
    note = ""
    for _ in range(repeat):
        got["import polars"].append(run_once(polars_cmd, capture=False)[0])
        wall, _rss, code, out = run_once(sample_cmd, capture=True)
        if code != 1 or json.loads(out)["verdict"]["category"] != "crash":
            raise SystemExit(f"logscope analyze {SAMPLE_JOB} failed: exit {code}")
        got["sample job"].append(wall)
        with tempfile.TemporaryDirectory(prefix="bench-scan-") as out_dir:
            table = Path(out_dir) / "jobs.csv"
            wall, _rss, code, _out = run_once([sys.executable, "-m", "logscope", "scan", str(root), "-o", str(table),
                                               "--no-cache", "--jobs", str(os.cpu_count() or 1)], capture=False)
            rows = table.read_text().count("\n") - 1 if table.is_file() else 0
            if code not in (0, 1) or rows != jobs:
                raise SystemExit(f"logscope scan failed: exit {code}, {rows} rows of {jobs} jobs")
            note = f"{jobs} jobs"
        got["scan"].append(wall)
        print(f"  small: polars {got['import polars'][-1]:.2f} s, sample job {got['sample job'][-1]:.2f} s, "
              f"scan of {jobs} jobs {got['scan'][-1]:.2f} s", file=sys.stderr, flush=True)
    return [SmallRun(what, statistics.median(times), [round(t, 3) for t in times], note if what == "scan" else "")
            for what, times in got.items()]


def small_table(runs: list[SmallRun], scan_jobs: int) -> str:
    by = {r.what: r for r in runs}
    polars, sample, scan = by["import polars"], by["sample job"], by["scan"]
    return (
        "| measure | s | result |\n|---|---:|---|\n"
        f"| `python -c \"import polars\"` | {polars.seconds:.3f} | |\n"
        f"| `logscope analyze sample_logs/crash-cascade` | {sample.seconds:.3f} | "
        f"{sample.seconds / polars.seconds:.1f}x import polars |\n"
        f"| `logscope scan` of {scan_jobs} sample jobs | {scan.seconds:.2f} | "
        f"{scan_jobs / scan.seconds:.1f} jobs/s |"
    )


def table(runs: list[Run]) -> str:
    head = ("| size | tool | MB | lines | s | MB/s | lines/s | peak RSS MB | × grep | vs line loop |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    rows = []
    for run in runs:
        same = {r.tool: r for r in runs if r.size == run.size}
        grep, loop = same.get("grep"), same.get("line-loop")
        ratio = f"{run.seconds / grep.seconds:.1f}" if grep else ""
        speedup = f"{loop.seconds / run.seconds:.1f}×" if loop else ""
        rows.append(f"| {run.size} | {run.tool} | {run.mb:.0f} | {run.lines:,} | {run.seconds:.2f} | {run.mb_s:.0f} | "
                    f"{run.lines_s / 1e6:.2f} M | {run.peak_rss_mb:.0f} | {ratio} | {speedup} |")
    return head + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100M,1G", help="comma-separated, e.g. 100M,1G,2G,4G")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/logscope-bench"),
                    help="where generated job folders are cached (outside the repository)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool and size; the median is reported")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"a subset of {','.join(TOOLS)}")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--base", type=Path, help="another source tree of logscope (`git archive REV | tar -x -C DIR`, "
                    "its compiled scanner copied in) whose analyze the `base` tool runs, interleaved with this one's")
    ap.add_argument("--nccl-timestamps", action="store_true",
                    help="jobs logged with NCCL_DEBUG_TIMESTAMP_LEVELS=ALL: a time in front of every NCCL line")
    ap.add_argument("--shape", choices=tuple(SHAPES), default="coll",
                    help="coll: jobsim jobs, mostly NCCL COLL lines; progress: only training-progress lines; "
                         "crash-loop: a crash-restart loop, each attempt with new pids, 10 minutes later; "
                         "crash-repeat: one crash job's files repeated as they are; real: the long real logs "
                         "of ../shared/real_logs repeated as later attempts; real-one-file: one of them so, "
                         "in one file (#SBATCH --output without %%N)")
    ap.add_argument("--small", action=argparse.BooleanOptionalAction, default=True,
                    help="also measure the fixed cost per job: a sample job against importing polars, the scan rate")
    ap.add_argument("--small-only", action="store_true", help="only the fixed cost per job (no big folders)")
    ap.add_argument("--scan-jobs", type=int, default=200, help="sample jobs in the scan-rate measure")
    args = ap.parse_args(argv)
    tools = tuple(t for t in args.tools.split(",") if t and (t != "base" or args.base is not None))
    if unknown := set(tools) - set(TOOLS):
        ap.error(f"unknown tool(s): {', '.join(sorted(unknown))}")
    workdir = args.workdir.resolve()
    if workdir == REPO or REPO in workdir.parents:
        ap.error("--workdir must be outside the repository (generated logs are never committed)")
    workdir.mkdir(parents=True, exist_ok=True)
    # The modules' bytecode, as `pip install .` leaves it: an editable install run where
    # PYTHONDONTWRITEBYTECODE is set (this workplace sets it) compiles every module at every start
    # (~0.1 s a command), which no installed copy pays.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "logscope")], check=False)
    runs: list[Run] = []
    if not args.small_only:
        for label in args.sizes.split(","):
            runs += bench_size(workdir, label.strip(), max(1, args.repeat), tools, args.nccl_timestamps, args.shape,
                               args.base)
    small: list[SmallRun] = []
    if args.small or args.small_only:
        small = bench_small(workdir, max(3, args.repeat), args.scan_jobs)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").is_file() else "?"
    print(f"{datetime.now(timezone.utc):%Y-%m-%d}, {machine}, median of {args.repeat}, load average {load}\n")
    if runs:
        print(table(runs))
        print()
        for run in runs:
            if run.note:
                print(f"{run.size} {run.tool}: {run.note}")
    if small:
        print(f"\nFixed cost per job (median of {max(3, args.repeat)}):\n")
        print(small_table(small, args.scan_jobs))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "date": f"{datetime.now(timezone.utc):%Y-%m-%d}",
                                         "load": load,
                                         "runs": [asdict(r) | {"mb_s": r.mb_s, "lines_s": r.lines_s} for r in runs],
                                         "small": [asdict(r) for r in small]},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
