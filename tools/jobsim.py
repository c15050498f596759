#!/usr/bin/env python3
"""jobsim: a deterministic simulator of the logs of one SLURM + torchrun + NCCL training job.

Stdlib only. It writes one file per node, named the way ``srun --output=%x-%j-%N.out`` names them
(``train-4242001-gpu-node01.out``); the first node's file is the batch host's, so it also holds the
batch script's own output (``set -x`` trace) and every ``srun:`` / ``slurmstepd:`` line.

One job = one consistent software stack, modelled on torch 2.6 (+cu124) with its bundled NCCL 2.21.5:

* torchrun's own logger in the glog style of torch >= 2.4 (``I1103 14:00:05.123000 48213
  torch/distributed/...py:NNN] msg``, every line of a multi-line message prefixed);
* worker output prefixed by ``--tee 3`` (``[default3]:``, or ``[gpu-node02:3]:`` with
  ``--role $(hostname -s):``), Python tracebacks prefixed ``[rank11]: `` by torch;
* c10d glog lines ``[rank3]:[E1103 14:12:11.715298746 ProcessGroupNCCL.cpp:616] ...``;
* NCCL 2.21 ``NCCL_DEBUG=INFO`` lines (no timestamp on INFO or WARN; WARN preceded by an empty line);
* Slurm >= 22 wording (``srun: Terminating StepId=...``, ``oom_kill event in StepId=...``).

Formats follow /work/shared/formats.md and docs/log-sources.md. Everything is derived from
``JobSpec.seed`` with string-seeded ``random.Random`` instances, so the output is byte-identical
from run to run and independent of PYTHONHASHSEED.

API::

    from tools.jobsim import JobSpec, write_job
    write_job(JobSpec(scenario="crash-cascade", fail_rank=11, fail_step=57), Path("out/crash"))
    write_job(JobSpec(nodes=16, coll=True, size_bytes=1 << 30), Path("/tmp/bench-1g"))

CLI: ``python tools/jobsim.py OUT_DIR --scenario oom --nodes 4 --size 100M``.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

__all__ = ["SCENARIOS", "JobSpec", "build_sim", "job_files", "render_job", "write_job"]

SCENARIOS: tuple[str, ...] = (
    "healthy",
    "hang-quiet-rank",
    "rank0-misresolution",
    "crash-cascade",
    "oom",
    "time-limit",
    "gpu-xid",
    "ecc-error",
    "ib-network-error",
    "socket-fallback",
    "nccl-version-skew",
    "host-oom",
    "preempted",
    "cancelled-by-user",
    "node-failure",
    "rendezvous-unreachable",
    "port-in-use",
    "silent-hang",
)


@dataclass(frozen=True)
class JobSpec:
    """Everything that shapes one simulated job. All fields have working defaults."""

    nodes: int = 2
    gpus: int = 8
    job_name: str = "train"
    job_id: int = 4242001
    start: datetime = datetime(2026, 11, 3, 14, 0, 2)
    steps: int = 100  # healthy: iterations run; failures: the step the failure happens in (default)
    seed: int = 0
    coll: bool = False  # NCCL_DEBUG_SUBSYS=INIT,ENV,COLL: one COLL line per collective per rank
    coll_per_step: int = 2  # collectives per training step (gradient buckets + loss all-reduce)
    # NCCL_DEBUG_TIMESTAMP_LEVELS=ALL (NCCL >= 2.23): "[2026-11-03 14:00:02] " in front of every
    # NCCL line, in the default NCCL_DEBUG_TIMESTAMP_FORMAT ("[%F %T] ").
    nccl_timestamps: bool = False
    prefix: str = "default"  # "default" -> [default3]: ; "host" -> [gpu-node01:3]: (--role $(hostname -s):)
    scenario: str = "healthy"
    fail_rank: int | None = None  # global rank that fails first (scenario default when None)
    fail_step: int | None = None  # step the failure happens in (default: steps)
    train_iters: int | None = None  # the "/ N" of the progress line (default: steps if healthy)
    iter_time_s: float = 0.85
    log_interval: int = 10
    progress_style: str = "logging"  # logging: "2026-.. ,532 - INFO - iteration ..." | megatron | none
    time_limit_s: int | None = None  # sbatch --time, for the time-limit style scenarios
    size_bytes: int | None = None  # grow the job (more steps) until all files together reach this
    node_prefix: str = "gpu-node"
    partition: str = "gpu"
    channels: int = 2  # NCCL channels shown per rank
    master_port: int = 29500
    entrypoint: str = "train.py"
    python: str = "/opt/conda/envs/train/bin/python"
    # A fail-slow: from step ``slowdown_step`` on, every step takes ``slowdown`` times as long (1.0: none);
    # ``slowdown_event`` makes the last node's NCCL log an IB port error as it begins.
    slowdown: float = 1.0
    slowdown_step: int | None = None
    slowdown_event: bool = False
    # One configuration, changed as a whole (for `logscope diff` pairs): NCCL's version and CUDA, the
    # driver, the network every node uses ("IB" or "Socket"), NCCL_* variables exported by the batch
    # script (NCCL echoes each), torchrun's --max_restarts, and the first node's number (another
    # allocation: node_offset=4 runs on gpu-node05, gpu-node06 ...). None: the stack's own.
    nccl_version: str | None = None
    nccl_cuda: str | None = None
    driver: int | None = None
    network: str = "IB"
    nccl_env: tuple[str, ...] = ()
    max_restarts: int = 0
    node_offset: int = 0


# --------------------------------------------------------------------------------------------
# constants of the simulated software stack (torch 2.6.0+cu124, NCCL 2.21.5)

TORCH_SITE = "/opt/conda/envs/train/lib/python3.11/site-packages/torch"
APP_DIR = "/workspace/gpt"
NCCL_VERSION = "2.21.5"
NCCL_CUDA = "12.4"
DRIVER = 12040
BUS_IDS = (0x19, 0x3B, 0x4C, 0x5D, 0x9B, 0xB3, 0xCB, 0xDB)
OMP_BANNER = (
    "",
    "*****************************************",
    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
    "system being overloaded, please further tune the variable for optimal performance in your "
    "application as needed.",
    "*****************************************",
)
PG = "PG ID 0 PG GUID 0(default_pg)"
BORDER_EQ = "=" * 60
BORDER_DASH = "-" * 60
TIMEOUT_MS = 600000
GRAD_NUMEL = 6553600


# c10 "Exception raised from" frame symbols, per kind of failure (between c10::Error and libc)
CPP_FRAMES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "timeout": (
        ("c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
         "std::ratio<1l, 1000l> > >)", "0x2b4", "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::watchdogHandler()", "0x890", "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "0x14d", "libtorch_cuda.so"),
    ),
    "nccl": (
        ("c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::NCCLComm>&)", "0x220",
         "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException()", "0x7c", "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::watchdogHandler()", "0x213", "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "0x14d", "libtorch_cuda.so"),
    ),
    "cuda": (
        ("c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&)", "0x64",
         "libc10.so"),
        ("c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)", "0x118",
         "libc10_cuda.so"),
        ("c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const", "0x50", "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::WorkNCCL::isCompleted()", "0x58", "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::watchdogHandler()", "0x1f8", "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "0x14d", "libtorch_cuda.so"),
    ),
    "outer": (("<unknown function>", "0xe5c6fc", "libtorch_cuda.so"),),
}


def _nccl_code(version: str) -> int:
    major, minor, patch = (int(x) for x in version.split("."))
    return major * 10000 + minor * 100 + patch


# --------------------------------------------------------------------------------------------
# the simulation


@dataclass
class _Proc:
    """One worker process (a rank)."""

    rank: int  # the global rank this process believes it has
    node: int
    local: int
    host: str
    pid: int
    dev: int
    bus: int
    comm: str
    comm_id: str
    tid_init: int
    tid_proxy: int
    prefix: str
    world: int
    stream: str
    buffers: tuple[str, ...]
    dead: float | None = None
    code: int | None = None
    term: float | None = None  # when it received SIGTERM
    reported: bool = False  # its own failure lines were written


@dataclass
class _Agent:
    node: int
    pid: int
    detect: float | None = None  # when it noticed a failed worker
    exit: float | None = None
    exit_code: int = 0
    signalled: float | None = None


Record = tuple[float, int, str]


class _Sim:
    """Builds the records of every node file for one JobSpec."""

    def __init__(self, spec: JobSpec) -> None:
        if spec.scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {spec.scenario!r}; choose from {', '.join(SCENARIOS)}")
        if not 1 <= spec.nodes <= 128:
            raise ValueError("nodes must be between 1 and 128")
        if spec.scenario != "healthy" and spec.nodes < 2:
            raise ValueError(f"scenario {spec.scenario} needs at least 2 nodes")
        if spec.scenario == "rank0-misresolution" and spec.gpus < 2:
            raise ValueError("rank0-misresolution needs at least 2 GPUs per node")
        self.spec = spec
        self.rng = self._rng("main")
        self.hosts = [f"{spec.node_prefix}{i + 1 + spec.node_offset:02d}" for i in range(spec.nodes)]
        self.ips = [f"10.0.{1 + i // 200}.{11 + i % 200}" for i in range(spec.nodes)]
        self.eth_ips = [f"10.0.{100 + i // 200}.{11 + i % 200}" for i in range(spec.nodes)]
        self.world = spec.nodes * spec.gpus
        self.head: list[list[Record]] = [[] for _ in self.hosts]
        self.tail: list[list[Record]] = [[] for _ in self.hosts]
        self._n = 0
        self.rdzv = "c10d"
        self.rdzv_host = 0  # node index hosting the rendezvous store
        self.claimed_rank_base = [n * spec.gpus for n in range(spec.nodes)]
        self.nccl_version = [spec.nccl_version or NCCL_VERSION] * spec.nodes
        self.nccl_cuda = [spec.nccl_cuda or NCCL_CUDA] * spec.nodes
        self.driver = [spec.driver or DRIVER] * spec.nodes
        self.net = [spec.network] * spec.nodes
        self.extra_env: list[str] = list(spec.nccl_env)
        self.launcher_extra = ""
        self.wrap_dmesg = False
        self.agents = [_Agent(n, self.rng.randint(31000, 96000)) for n in range(spec.nodes)]
        self.procs: list[_Proc] = []
        self.first_kill: float | None = None
        self.srun_lines_done = False
        self.cancelled = False
        self._setup_scenario_knobs()
        self._make_procs()
        self.fail_step = spec.fail_step or spec.steps
        self.train_iters = spec.train_iters or (spec.steps if spec.scenario == "healthy"
                                                else max(10000, 4 * spec.steps))
        self.stream_steps = 0  # steps written by the streaming part (set by the scenario)
        self.quiet: _Proc | None = None
        self.no_save_step = -1
        self.facts: dict[str, object] = {}  # what happened, for READMEs and tests (times are offsets in s)

    # ------------------------------------------------------------------ helpers: randomness/time
    def _rng(self, purpose: str) -> random.Random:
        s = self.spec
        return random.Random(f"jobsim/{s.seed}/{s.job_id}/{s.scenario}/{purpose}")

    def at(self, t: float) -> datetime:
        return self.spec.start + timedelta(seconds=t)

    def ts_glog(self, t: float) -> str:  # python TorchLogsFormatter: %m%d %H:%M:%S.msecs*1000
        d = self.at(t)
        return f"{d:%m%d %H:%M:%S}.{d.microsecond // 1000 * 1000:06d}"

    def ts_c10(self, t: float, salt: int) -> str:  # c10 logging: month unpadded, nanoseconds
        d = self.at(t)
        ns = d.microsecond * 1000 + (salt * 7919) % 1000
        return f"{d.month}{d.day:02d} {d:%H:%M:%S}.{ns:09d}"

    def ts_py(self, t: float) -> str:
        d = self.at(t)
        return f"{d:%Y-%m-%d %H:%M:%S},{d.microsecond // 1000:03d}"

    def ts_slurm(self, t: float) -> str:
        return f"{self.at(t):%Y-%m-%dT%H:%M:%S}"

    def ts_date(self, t: float) -> str:
        d = self.at(t)
        return f"{d:%a %b} {d.day:2d} {d:%H:%M:%S} UTC {d.year}"

    def ts_dmesg(self, t: float) -> str:
        d = self.at(t)
        return f"[{d:%a %b} {d.day:2d} {d:%H:%M:%S} {d.year}]"

    def ts_elastic_failure(self, t: float) -> str:
        return f"{self.at(t):%Y-%m-%d_%H:%M:%S}"

    # ------------------------------------------------------------------ helpers: output
    def out(self, node: int, t: float, text: str, head: bool = False) -> None:
        self._n += 1
        (self.head if head else self.tail)[node].append((t, self._n, text))

    def agent_log(self, node: int, t: float, level: str, src: str, msg: str, head: bool = False) -> None:
        """torchrun's logger, torch >= 2.4 glog style: every line of the message is prefixed."""
        pre = f"{level}{self.ts_glog(t)} {self.agents[node].pid} torch/distributed/{src}]"
        for line in msg.split("\n"):
            self.out(node, t, f"{pre} {line}" if line else pre, head)

    def plain(self, node: int, t: float, lines: list[str] | tuple[str, ...] | str, head: bool = False) -> None:
        if isinstance(lines, str):
            lines = lines.split("\n")
        for line in lines:
            self.out(node, t, line, head)

    def w(self, p: _Proc, t: float, text: str, head: bool = False) -> None:
        """A line a worker printed (stdout or stderr), with torchrun's --tee prefix."""
        self.out(p.node, t, p.prefix + text, head)

    def wlines(self, p: _Proc, t: float, lines: list[str], head: bool = False) -> None:
        for line in lines:
            self.w(p, t, line, head)

    def wrank(self, p: _Proc, t: float, lines: list[str]) -> None:
        """An uncaught Python exception: torch's excepthook prefixes each line with [rankN]: ."""
        for line in lines:
            self.w(p, t, f"[rank{p.rank}]: {line}")

    def c10d(self, p: _Proc, t: float, level: str, src: str, msg: str) -> None:
        """A c10d C++ log message: glog header on its first line only."""
        first, *rest = msg.split("\n")
        self.w(p, t, f"[rank{p.rank}]:[{level}{self.ts_c10(t, p.pid + len(first))} {src}] {first}")
        for line in rest:
            self.w(p, t, line)

    def ts_nccl(self, t: float) -> str:
        """NCCL's own timestamp in front of its lines, when the spec asks for it ("" otherwise)."""
        return f"[{self.at(t):%Y-%m-%d %H:%M:%S}] " if self.spec.nccl_timestamps else ""

    def nccl(self, p: _Proc, t: float, msg: str, tid: int | None = None, head: bool = False) -> None:
        self.w(p, t, f"{self.ts_nccl(t)}{p.host}:{p.pid}:{tid or p.pid} [{p.dev}] NCCL INFO {msg}", head)

    def nccl_warn(self, p: _Proc, t: float, loc: str, msg: str, tid: int | None = None) -> None:
        self.w(p, t, "")  # src/debug.cc prints an empty line before every WARN
        self.w(p, t, f"{self.ts_nccl(t)}{p.host}:{p.pid}:{tid or p.pid} [{p.dev}] {loc} NCCL WARN {msg}")

    def pylog(self, p: _Proc, t: float, msg: str, level: str = "INFO", head: bool = False) -> None:
        self.w(p, t, f"{self.ts_py(t)} - {level} - {msg}", head)

    def srun(self, t: float, text: str) -> None:
        self.out(0, t, text)

    # ------------------------------------------------------------------ processes
    def _setup_scenario_knobs(self) -> None:
        s = self.spec
        sc = s.scenario
        if sc == "rank0-misresolution":
            self.rdzv = "static"
            self.claimed_rank_base = [0] * s.nodes
            self.extra_env.append("TORCH_ELASTIC_WORKER_IDENTICAL=1")
        elif sc == "port-in-use":
            self.rdzv_host = s.nodes - 1
            self.extra_env.append("USE_LIBUV=0")
        elif sc == "socket-fallback":
            self.net[1] = "Socket"
        elif sc == "nccl-version-skew":
            self.nccl_version[1] = "2.18.6"
            self.nccl_cuda[1] = "12.2"
            self.driver[1] = 12020
        elif sc == "gpu-xid":
            self.wrap_dmesg = True

    def _make_procs(self) -> None:
        s = self.spec
        rng = self._rng("procs")
        for node, host in enumerate(self.hosts):
            base_pid = self.agents[node].pid + rng.randint(40, 90)
            for local in range(s.gpus):
                pid = base_pid + local
                rank = self.claimed_rank_base[node] + local
                world = self.world
                prefix = f"[default{local}]:" if s.prefix == "default" else f"[{host}:{local}]:"
                comm = f"0x55{rng.getrandbits(36):09x}0"
                stream = f"0x55{rng.getrandbits(36):09x}0"
                bufs = tuple(f"0x7f{rng.getrandbits(28):07x}00000" for _ in range(max(1, s.coll_per_step) + 1))
                self.procs.append(_Proc(
                    rank=rank, node=node, local=local, host=host, pid=pid, dev=local,
                    bus=(BUS_IDS[local % 8] + 0x100 * (local // 8)) << 12, comm=comm, comm_id="",
                    tid_init=pid + rng.randint(60, 140), tid_proxy=pid + rng.randint(150, 260),
                    prefix=prefix, world=world, stream=stream, buffers=bufs,
                ))
        comm_id = f"0x{self._rng('commid').getrandbits(64):016x}"
        for p in self.procs:
            p.comm_id = comm_id

    def pick_rank(self, node: int, local: int) -> int:
        """The scenario's failing rank: JobSpec.fail_rank, else (node, local) clamped to the job's shape."""
        if self.spec.fail_rank is not None:
            if not 0 <= self.spec.fail_rank < self.world:
                raise ValueError(f"fail_rank {self.spec.fail_rank} is outside 0..{self.world - 1}")
            return self.spec.fail_rank
        return min(node, self.spec.nodes - 1) * self.spec.gpus + min(local, self.spec.gpus - 1)

    def node_procs(self, node: int) -> list[_Proc]:
        g = self.spec.gpus
        return self.procs[node * g:(node + 1) * g]

    def proc_of_rank(self, rank: int) -> _Proc:
        return self.procs[rank]

    # ------------------------------------------------------------------ timeline anchors
    def build(self) -> None:
        s = self.spec
        rng = self._rng("anchors")
        self.t_srun = 1.4
        self.t_agent = [3.6 + rng.uniform(0.0, 0.9) for _ in self.hosts]
        self.t_rdzv = max(self.t_agent) + 0.35 + rng.uniform(0, 0.2)
        self.t_workers = self.t_rdzv + 0.06
        self.t_nccl = self.t_workers + 24.0 + rng.uniform(0, 4)
        self.t_train = self.t_nccl + 14.0 + rng.uniform(0, 3)
        self._jit = [rng.uniform(-0.08, 0.08) for _ in range(97)]
        self._preamble()
        getattr(self, "_sc_" + s.scenario.replace("-", "_"))()
        if s.slowdown_event and s.slowdown_step is not None and self.stream_steps >= s.slowdown_step:
            # the link of one HCA port of the last node drops as the steps slow down
            p = self.node_procs(s.nodes - 1)[0]
            self.nccl_warn(p, self.step_t(s.slowdown_step) + 0.2, "transport/net_ib.cc:101",
                           f"NET/IB : mlx5_{p.dev}:1 Got async event : port error", tid=p.tid_proxy)

    def step_t(self, i: int) -> float:
        """End time of training step i (step 0 = start of training)."""
        if i <= 0:
            return self.t_train
        s = self.spec
        done = float(i)  # steps' worth of time at the normal pace
        if s.slowdown != 1.0 and s.slowdown_step is not None and i > s.slowdown_step:
            done = s.slowdown_step + (i - s.slowdown_step) * s.slowdown
        return self.t_train + s.iter_time_s * (done + self._jit[i % 97])

    def seq_of(self, step: int, j: int) -> int:
        """c10d SeqNum of collective j of a step (SeqNum 1 is DDP's initial parameter broadcast)."""
        return 1 + (step - 1) * self.spec.coll_per_step + j + 1

    # ------------------------------------------------------------------ common phases
    def _launcher_cmd(self) -> str:
        s = self.spec
        role = " --role $(hostname -s): --tee 3" if s.prefix == "host" else " --tee 3"
        if self.rdzv == "static":
            # $SLURM_PROCID was expanded on the batch host (SLURM_PROCID=0 there)
            return (f"python -u -m torch.distributed.run --nproc_per_node {s.gpus} --nnodes {s.nodes} "
                    f"--node_rank 0 --master_addr {self.hosts[0]} --master_port 6000{role} {s.entrypoint}")
        cmd = (f"python -u -m torch.distributed.run --nproc_per_node {s.gpus} --nnodes {s.nodes} "
               f"--rdzv_id {s.job_id} --rdzv_backend c10d --rdzv_endpoint "
               f"{self.hosts[self.rdzv_host]}:{s.master_port} --max_restarts {s.max_restarts}{role} {s.entrypoint} "
               f"--config configs/gpt-1p3b.yaml")
        if self.wrap_dmesg:
            cmd = f"(dmesg --ctime --follow | grep --line-buffered NVRM) & {cmd}"
        return cmd

    def _preamble(self) -> None:
        s = self.spec
        master = self.hosts[self.rdzv_host]
        lines = ["++ date", f"+ echo 'START TIME: {self.ts_date(0)}'", f"START TIME: {self.ts_date(0)}"]
        nodelist = (f"{s.node_prefix}[{1 + s.node_offset:02d}-{s.nodes + s.node_offset:02d}]" if s.nodes > 1
                    else self.hosts[0])
        pick = "tail -n 1" if self.rdzv_host else "head -n 1"
        lines += [f"++ scontrol show hostnames '{nodelist}'", f"++ {pick}",
                  f"+ export MASTER_ADDR={master}", f"+ MASTER_ADDR={master}"]
        env = ["OMP_NUM_THREADS=1", "LOGLEVEL=INFO", "NCCL_DEBUG=INFO",
               "NCCL_DEBUG_SUBSYS=INIT,ENV,COLL" if s.coll else "NCCL_DEBUG_SUBSYS=INIT,ENV",
               "NCCL_IB_TIMEOUT=22", "NCCL_IB_HCA=mlx5", *self.extra_env]
        for kv in env:
            lines += [f"+ export {kv}", f"+ {kv}"]
        srun_opts = "--kill-on-bad-exit=1" if s.scenario == "rank0-misresolution" else (
            "--wait=60 --kill-on-bad-exit=1 --output=%x-%j-%N.out --open-mode=append")
        lines.append(f"+ srun {srun_opts} bash -c '{self._launcher_cmd()}'")
        self.plain(0, 0.0, lines[:3], head=True)
        self.plain(0, 0.02, lines[3:], head=True)

    def _agent_start(self, node: int) -> None:
        """torchrun start-up up to the rendezvous result (head part)."""
        s = self.spec
        t = self.t_agent[node]
        self.agent_log(node, t, "W", "run.py:793", "\n".join(OMP_BANNER), head=True)
        if self.rdzv == "static":
            endpoint = f"{self.hosts[0]}:6000"
            configs = "{'rank': 0, 'timeout': 900}"
            run_id = "none"
        else:
            endpoint = f"{self.hosts[self.rdzv_host]}:{s.master_port}"
            configs = "{'timeout': 900}"
            run_id = str(s.job_id)
        tmp = self._rng(f"tmp{node}")
        log_dir = "/tmp/torchelastic_" + "".join(tmp.choice("abcdefghijklmnopqrstuvwxyz0123456789_")
                                                 for _ in range(8))
        cfg = ["Starting elastic_operator with launch configs:",
               f"  entrypoint       : {s.entrypoint}",
               f"  min_nodes        : {s.nodes}",
               f"  max_nodes        : {s.nodes}",
               f"  nproc_per_node   : {s.gpus}",
               f"  run_id           : {run_id}",
               f"  rdzv_backend     : {self.rdzv}",
               f"  rdzv_endpoint    : {endpoint}",
               f"  rdzv_configs     : {configs}",
               f"  max_restarts     : {s.max_restarts}",
               "  monitor_interval : 0.1",
               f"  log_dir          : {log_dir}",
               "  metrics_cfg      : {}",
               ""]
        self.agent_log(node, t + 0.001, "I", "launcher/api.py:194", "\n".join(cfg), head=True)

    def _agent_rendezvous(self, node: int, head: bool = True) -> None:
        s = self.spec
        t = self.t_agent[node] + 0.16
        pid = self.agents[node].pid
        self.agent_log(node, t, "I", "elastic/agent/server/api.py:845",
                       "[default] starting workers for entrypoint: python", head)
        self.agent_log(node, t, "I", "elastic/agent/server/api.py:662",
                       "[default] Rendezvous'ing worker group", head)
        nd = f"{self.hosts[node]}_{pid}_0"
        if self.rdzv == "c10d":
            self.agent_log(node, t + 0.01, "I", "elastic/rendezvous/dynamic_rendezvous.py:1162",
                           f"The node '{nd}' attempts to join the next round of the rendezvous '{s.job_id}'.",
                           head)
            self.agent_log(node, self.t_rdzv - 0.02, "I", "elastic/rendezvous/dynamic_rendezvous.py:1192",
                           f"The node '{nd}' has joined round 0 of the rendezvous '{s.job_id}' as rank "
                           f"{node} in a world of size {s.nodes}.", head)
        group_rank = 0 if self.rdzv == "static" else node
        base = self.claimed_rank_base[node]
        ranks = list(range(base, base + s.gpus))
        if self.rdzv == "static":
            master_addr, master_port = self.hosts[0], 6000
        else:
            master_addr, master_port = self.hosts[self.rdzv_host], s.master_port
        res = ["[default] Rendezvous complete for workers. Result:",
               "  restart_count=0",
               f"  master_addr={master_addr}",
               f"  master_port={master_port}",
               f"  group_rank={group_rank}",
               f"  group_world_size={s.nodes}",
               f"  local_ranks={list(range(s.gpus))}",
               f"  role_ranks={ranks}",
               f"  global_ranks={ranks}",
               f"  role_world_sizes={[self.world] * s.gpus}",
               f"  global_world_sizes={[self.world] * s.gpus}",
               ""]
        tr = self.t_rdzv
        self.agent_log(node, tr, "I", "elastic/agent/server/api.py:525", "\n".join(res), head)
        self.agent_log(node, tr, "I", "elastic/agent/server/api.py:670", "[default] Starting worker group", head)
        self.agent_log(node, tr, "I", "elastic/agent/server/local_elastic_agent.py:291",
                       "use_agent_store: True", head)
        self.agent_log(node, tr, "I", "elastic/agent/server/local_elastic_agent.py:192",
                       "Environment variable 'TORCHELASTIC_ENABLE_FILE_TIMER' not found. Do not start "
                       "FileTimerServer.", head)
        self.agent_log(node, tr + 0.001, "I", "elastic/agent/server/local_elastic_agent.py:236",
                       "Environment variable 'TORCHELASTIC_HEALTH_CHECK_PORT' not found. Do not start "
                       "health check.", head)

    def _app_start(self, p: _Proc, nccl: bool = True, complete: bool = True, stop_after_start: bool = False) -> None:
        """A worker's start-up: app logging (rank 0), NCCL init of the world communicator."""
        s = self.spec
        t = self.t_workers + 9.0 + p.local * 0.013
        if p.rank == 0 and p.node == 0:
            msgs = [
                f"torch 2.6.0+cu124, CUDA {NCCL_CUDA}, world size {self.world} "
                f"({s.nodes} nodes x {s.gpus} GPUs), job {s.job_id}",
                "> initializing torch distributed (backend nccl, timeout 0:10:00)",
                "> building GPT model: 24 layers, hidden 2048, 16 heads, 1.34B parameters",
                "> loading dataset index /lustre/data/pile-gpt2/train_text_document.idx",
                f"> setting number of micro-batches to constant 4, global batch size {self.gbs}",
            ]
            for i, msg in enumerate(msgs):
                self.pylog(p, t + i * 1.7, msg, head=True)
        if nccl:
            self._nccl_init(p, self.t_nccl + self._rng(f"ni{p.rank}{p.node}").uniform(0, 0.6), complete,
                            stop_after_start=stop_after_start)
        if p.rank == 0 and p.node == 0 and complete:
            self.pylog(p, self.t_train - 1.2, f"> training for {self.train_iters} iterations "
                                              f"(log interval {s.log_interval})", head=True)

    @property
    def gbs(self) -> int:
        return 16 * self.world

    def _nccl_init(self, p: _Proc, t: float, complete: bool = True, nranks: int | None = None,
                   stop_after_start: bool = False) -> None:
        s = self.spec
        node = p.node
        ver = self.nccl_version[node]
        old = _nccl_code(ver) < 21900
        nranks = nranks or self.world
        dt = 0.0019
        lines_main = [f"cudaDriverVersion {self.driver[node]}"]
        if self.net[node] == "IB":
            lines_main.append(f"Bootstrap : Using ib0:{self.ips[node]}<0>")
        else:
            lines_main.append(f"Bootstrap : Using eno1:{self.eth_ips[node]}<0>")
        lines_main += [
            "NET/Plugin: No plugin found (libnccl-net.so)",
            "NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: No such "
            "file or directory : when loading libnccl-net.so",
            "NET/Plugin: Using internal network plugin.",
        ]
        k = 0
        for msg in lines_main:
            self.nccl(p, t + k * dt, msg, head=True)
            k += 1
        if p.rank == 0:  # showVersion(): only rank 0 of a communicator, bare printf
            self.w(p, t + k * dt, f"NCCL version {ver}+cuda{self.nccl_cuda[node]}", head=True)
        ti = p.tid_init
        init = []
        if self.net[node] == "IB":
            devs = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(min(s.gpus, 8)))
            init += ["NCCL_IB_TIMEOUT set by environment to 22.",
                     "NCCL_IB_HCA set by environment to mlx5", *self._env_echo(),
                     f"NET/IB : Using {devs} [RO]; OOB ib0:{self.ips[node]}<0>"]
        else:
            init += ["NCCL_IB_TIMEOUT set by environment to 22.",
                     "NCCL_IB_HCA set by environment to mlx5", *self._env_echo(),
                     "NET/IB : No device found.",
                     f"NET/Socket : Using [0]eno1:{self.eth_ips[node]}<0>"]
        init += ["Using non-device net plugin version 0", f"Using network {self.net[node]}"]
        api = "" if old else "ncclCommInitRank "
        ident = (f"comm {p.comm} rank {p.rank} nranks {nranks} cudaDev {p.dev} nvmlDev {p.dev} "
                 f"busId {p.bus:x} commId {p.comm_id}")
        init.append(f"{api}{ident} - Init START")
        if stop_after_start:
            for msg in init:
                self.nccl(p, t + k * dt, msg, tid=ti, head=True)
                k += 1
            return
        aff = "ffffffff,00000000,ffffffff" if p.local < s.gpus // 2 else "ffffffff,00000000,ffffffff,00000000"
        init.append(f"Setting affinity for GPU {p.dev} to {aff}")
        nn = nranks // s.gpus if nranks >= s.gpus else 1
        init.append(f"comm {p.comm} rank {p.rank} nRanks {nranks} nNodes {nn} localRanks {s.gpus} "
                    f"localRank {p.local} MNNVL 0")
        if p.rank == 0:
            ring = "".join(f"{r:4d}" for r in range(nranks))
            for c in range(s.channels):
                init.append(f"Channel {c:02d}/{s.channels:02d} : {ring}")
        init.append("P2P Chunksize set to 524288")
        init += self._channel_lines(p, nranks)
        for msg in init:
            self.nccl(p, t + k * dt, msg, tid=ti, head=True)
            k += 1
        if not complete:
            return
        fin = ["Connected all rings", "Connected all trees", "threadThresholds 8/8/64 | 128/8/64 | 512 | 512",
               f"{s.channels} coll channels, {s.channels} collnet channels, 0 nvls channels, "
               f"{2 * s.channels} p2p channels, {2 * s.channels} p2p channels per peer",
               "TUNER/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: No such "
               "file or directory : when loading libnccl-tuner.so",
               "TUNER/Plugin: Using internal tuner plugin.",
               f"{api}{ident} - Init COMPLETE"]
        for msg in fin:
            self.nccl(p, t + 1.4 + k * dt, msg, tid=ti, head=True)
            k += 1

    def _env_echo(self) -> list[str]:
        """NCCL's echo of the NCCL_* variables JobSpec.nccl_env exported (src/misc/param.cc)."""
        return [f"{key} set by environment to {value}." for key, _, value in
                (kv.partition("=") for kv in self.spec.nccl_env) if key.startswith("NCCL_")]

    def _channel_lines(self, p: _Proc, nranks: int) -> list[str]:
        s = self.spec
        g = s.gpus
        out = []
        nxt = (p.rank + 1) % nranks
        prv = (p.rank - 1) % nranks
        net = self.net[p.node]
        for c in range(s.channels):
            if p.local == 0 and nranks > g:
                suffix = f"NET/IB/{p.dev % 8}/GDRDMA" if net == "IB" else "NET/Socket/0"
                out.append(f"Channel {c:02d}/0 : {prv}[{g - 1}] -> {p.rank}[{p.dev}] [receive] via {suffix}")
            if p.local == g - 1 and nranks > g:
                suffix = f"NET/IB/{p.dev % 8}/GDRDMA" if net == "IB" else "NET/Socket/0"
                out.append(f"Channel {c:02d}/0 : {p.rank}[{p.dev}] -> {nxt}[0] [send] via {suffix}")
            else:
                out.append(f"Channel {c:02d}/0 : {p.rank}[{p.dev}] -> {nxt}[{(p.dev + 1) % g}] via P2P/CUMEM/read")
        return out

    def _init_broadcast(self, p: _Proc) -> None:
        """DDP's initial parameter broadcast: c10d SeqNum 1, NCCL opCount 0."""
        if self.spec.coll:
            self.nccl(p, self.t_nccl + 2.1 + p.local * 0.0007,
                      f"Broadcast: opCount 0 sendbuff {p.buffers[-1]} recvbuff {p.buffers[-1]} count 1342177280 "
                      f"datatype 9 op 0 root 0 comm {p.comm} [nranks={self.world}] stream {p.stream}", head=True)

    def _all_start(self, nccl: bool = True, complete: bool = True) -> None:
        for node in range(self.spec.nodes):
            self._agent_start(node)
            self._agent_rendezvous(node)
        for p in self.procs:
            self._app_start(p, nccl=nccl, complete=complete)
            if nccl and complete:
                self._init_broadcast(p)

    # ------------------------------------------------------------------ the streamed training part
    def stream(self, node: int) -> Iterator[tuple[float, str]]:
        """Training steps 1..stream_steps for one node, generated lazily (big jobs stay in O(1) memory)."""
        s = self.spec
        procs = self.node_procs(node)
        last_node = (self.world - 1) // s.gpus
        rng = self._rng(f"stream{node}")
        k = s.coll_per_step
        pre = [f"{p.host}:{p.pid}:{p.pid} [{p.dev}] NCCL INFO AllReduce: opCount " for p in procs]
        suf = []
        for p in procs:
            row = []
            for j in range(k):
                count = GRAD_NUMEL if j < k - 1 else 1
                buf = p.buffers[j]
                row.append(f" sendbuff {buf} recvbuff {buf} count {count} datatype 7 op 0 root 0 "
                           f"comm {p.comm} [nranks={self.world}] stream {p.stream}")
            suf.append(row)
        order = list(range(len(procs)))
        last = procs[-1] if node == last_node else None
        for step in range(1, self.stream_steps + 1):
            t = self.step_t(step)
            if s.coll:
                t_coll = self.step_t(step - 1)
                stamp = self.ts_nccl(t_coll)
                for j in range(k):
                    op = f"{self.seq_of(step, j) - 1:x}"
                    rng.shuffle(order)
                    for i in order:
                        yield t_coll, procs[i].prefix + stamp + pre[i] + op + suf[i][j]
            if last is not None and s.progress_style != "none" and step % s.log_interval == 0:
                yield t, last.prefix + self.progress_line(step)
            if node == 0 and step % 500 == 0 and step != self.no_save_step:
                p0 = procs[0]
                yield t, p0.prefix + f"{self.ts_py(t)} - INFO - saving checkpoint at iteration {step:7d} to " \
                                     f"/lustre/ckpt/gpt-1p3b/{s.job_id}"
                yield t + 3.1, p0.prefix + f"{self.ts_py(t + 3.1)} - INFO -   successfully saved checkpoint from " \
                                           f"iteration {step:7d} to /lustre/ckpt/gpt-1p3b/{s.job_id}"

    def progress_line(self, step: int) -> str:
        s = self.spec
        t = self.step_t(step)
        n = min(s.log_interval, step)
        ms = (t - self.step_t(step - n)) / n * 1000
        loss = 2.05 + 8.8 * math.exp(-step / 220.0) + 0.03 * math.sin(step * 0.37)
        lr = 3.0e-4 * min(1.0, step / 200.0)
        tflops = 6 * 1.34e9 * self.gbs * 2048 / (ms / 1000) / self.world / 1e12
        body = (f"iteration {step:8d}/{self.train_iters:8d} | consumed samples: {step * self.gbs:12d} | "
                f"elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | "
                f"learning rate: {lr:.6E} | global batch size: {self.gbs:5d} | lm loss: {loss:.6E} | "
                f"loss scale: 1.0 | grad norm: {0.25 + 0.6 * math.exp(-step / 400):.3f} | "
                f"number of skipped iterations:   0 | number of nan iterations:   0 |")
        if s.progress_style == "megatron":
            return f" [{self.at(t):%Y-%m-%d %H:%M:%S}] {body}"
        return f"{self.ts_py(t)} - INFO - {body}"

    # ------------------------------------------------------------------ failure building blocks
    def frames_cpp(self, kind: str) -> list[str]:
        """A c10 'Exception raised from ...' frame list (addresses random but deterministic per kind)."""
        rng = self._rng(f"frames{kind}")
        libc = "/lib/x86_64-linux-gnu/libc.so.6"
        frames = [("c10::Error::Error(c10::SourceLocation, std::string)", "0x96", "libc10.so"),
                  *CPP_FRAMES[kind],
                  ("<unknown function>", "0x145c0", "libtorch.so"),
                  ("<unknown function>", "0x94ac3", libc),
                  ("<unknown function>", "0x126850", libc)]
        out = []
        for i, (sym, off, lib) in enumerate(frames):
            path = lib if lib.startswith("/") else f"{TORCH_SITE}/lib/{lib}"
            out.append(f"frame #{i}: {sym} + {off} (0x7f{rng.getrandbits(40):010x} in {path})")
        return out

    def _watchdog_teardown(self, p: _Proc, t: float, reason: str, raised_from: str, kind: str) -> float:
        """Lines 'Some NCCL operations...' to the abort; returns the time the process dies (SIGABRT)."""
        pg = f"[{PG} Rank {p.rank}]"
        self.c10d(p, t + 0.001, "E", "ProcessGroupNCCL.cpp:668",
                  f"[Rank {p.rank}] Some NCCL operations have failed or timed out. Due to the asynchronous nature "
                  "of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.")
        self.c10d(p, t + 0.001, "E", "ProcessGroupNCCL.cpp:682",
                  f"[Rank {p.rank}] To avoid data inconsistency, we are taking the entire process down.")
        where = f"Exception raised from {raised_from} (most recent call first):"
        body = reason.split("\n")
        self.c10d(p, t + 0.003, "E", "ProcessGroupNCCL.cpp:1834",
                  "\n".join([f"{pg} Process group watchdog thread terminated with exception: {body[0]}", *body[1:],
                             where, *self.frames_cpp(kind), ""]))
        self.wlines(p, t + 0.004, ["terminate called after throwing an instance of 'c10::DistBackendError'",
                                   f"  what():  {pg} Process group watchdog thread terminated with exception: "
                                   f"{body[0]}", *body[1:], where, *self.frames_cpp(kind), "",
                                   "Exception raised from ncclCommWatchdog at /pytorch/torch/csrc/distributed/c10d/"
                                   "ProcessGroupNCCL.cpp:1840 (most recent call first):",
                                   *self.frames_cpp("outer"), ""])
        return t + 0.12

    def remote_error(self, p: _Proc, t: float, seq: int, peer_node: int, last_error: str | None = None,
                     warn: bool = True) -> tuple[float, int]:
        """A peer vanished: NCCL socket WARN, then the watchdog takes the process down (-6)."""
        peer = self.hosts[peer_node]
        port = 40000 + (p.pid * 37 + peer_node) % 20000
        if last_error is None:
            last_error = f"socketProgress: Connection closed by remote peer {peer}<{port}>"
            if warn:
                self.nccl_warn(p, t, "misc/socket.cc:50", last_error, tid=p.tid_proxy)
                self.nccl(p, t, "misc/socket.cc:752 -> 6", tid=p.tid_proxy)
                self.nccl(p, t, "proxy.cc:1432 -> 6 [Progress Thread]", tid=p.tid_proxy)
        t += 0.05 + (p.pid % 7) * 0.015
        self.c10d(p, t, "E", "ProcessGroupNCCL.cpp:1785",
                  f"[{PG} Rank {p.rank}] Exception (either an error or timeout) detected by watchdog at work: "
                  f"{seq}, last enqueued NCCL work: {seq + 1}, last completed NCCL work: {seq - 1}.")
        reason = (f"NCCL error: remote process exited or there was a network error, NCCL version {NCCL_VERSION}\n"
                  "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                  f"prematurely.\nLast error:\n{last_error}")
        return self._watchdog_teardown(
            p, t, reason,
            "checkForNCCLErrorsInternal at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2027",
            "nccl"), -6

    def remote_error_python(self, p: _Proc, t: float, peer_node: int) -> tuple[float, int]:
        """The main thread blocked in a synchronous op gets the NCCL error as a Python exception (exit 1)."""
        peer_ip = self.ips[peer_node]
        port = 40000 + (p.pid * 31 + peer_node) % 20000
        err = f"socketProgressOpt: Call to recv from {peer_ip}<{port}> failed : Connection reset by peer"
        self.nccl_warn(p, t, "misc/socket.cc:541", err, tid=p.tid_proxy)
        self.nccl(p, t, "misc/socket.cc:752 -> 6", tid=p.tid_proxy)
        t += 0.05 + (p.pid % 5) * 0.02
        tb = [
            *self.py_frames_train(p.rank),
            f"  File \"{TORCH_SITE}/distributed/c10d_logger.py\", line 81, in wrapper",
            "    return func(*args, **kwargs)",
            "           ^^^^^^^^^^^^^^^^^^^^^",
            f"  File \"{TORCH_SITE}/distributed/distributed_c10d.py\", line 2806, in all_reduce",
            "    work.wait()",
            "torch.distributed.DistBackendError: NCCL error in: "
            "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
            f"remote process exited or there was a network error, NCCL version {NCCL_VERSION}",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:",
            err,
        ]
        self.wrank(p, t, ["Traceback (most recent call last):", *tb])
        self.c10d(p, t + 0.15, "W", "ProcessGroupNCCL.cpp:1496",
                  "Warning: WARNING: destroy_process_group() was not called before program exit, which can leak "
                  "resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown "
                  "(function operator())")
        return t + 0.25, 1

    def timeout(self, p: _Proc, t: float, seq: int, numel: int, op: str = "ALLREDUCE") -> tuple[float, int]:
        """The collective SeqNum=seq never completed: watchdog timeout, abort (-6)."""
        ran = TIMEOUT_MS + int((t % 1.0) * 900) + (p.pid % 89)
        work = (f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, "
                f"Timeout(ms)={TIMEOUT_MS})")
        msg = f"[Rank {p.rank}] Watchdog caught collective operation timeout: {work} ran for {ran} milliseconds " \
              "before timing out."
        self.c10d(p, t, "E", "ProcessGroupNCCL.cpp:616", msg)
        self.c10d(p, t + 0.002, "E", "ProcessGroupNCCL.cpp:1785",
                  f"[{PG} Rank {p.rank}] Exception (either an error or timeout) detected by watchdog at work: "
                  f"{seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}.")
        self.c10d(p, t + 0.002, "E", "ProcessGroupNCCL.cpp:1634",
                  "Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. "
                  "You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.")
        return self._watchdog_teardown(
            p, t + 0.003, msg, "checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:619",
            "timeout"), -6

    def py_frames_train(self, rank: int) -> list[str]:
        return [
            f"  File \"{APP_DIR}/train.py\", line 412, in <module>",
            "    main()",
            f"  File \"{APP_DIR}/train.py\", line 398, in main",
            "    train(model, optimizer, scheduler, train_loader, args)",
            f"  File \"{APP_DIR}/train.py\", line 301, in train",
            "    loss = train_step(model, optimizer, batch, args)",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            f"  File \"{APP_DIR}/train.py\", line 247, in train_step",
            "    dist.all_reduce(loss_sum, op=dist.ReduceOp.SUM)",
        ]

    def torchrun_traceback(self, tail: list[str]) -> list[str]:
        base = f"{TORCH_SITE}/distributed"
        return [
            "Traceback (most recent call last):",
            "  File \"<frozen runpy>\", line 198, in _run_module_as_main",
            "  File \"<frozen runpy>\", line 88, in _run_code",
            f"  File \"{base}/run.py\", line 923, in <module>",
            "    main()",
            f"  File \"{base}/elastic/multiprocessing/errors/__init__.py\", line 355, in wrapper",
            "    return f(*args, **kwargs)",
            "           ^^^^^^^^^^^^^^^^^^",
            f"  File \"{base}/run.py\", line 919, in main",
            "    run(args)",
            f"  File \"{base}/run.py\", line 910, in run",
            "    elastic_launch(",
            f"  File \"{base}/launcher/api.py\", line 138, in __call__",
            "    return launch_agent(self._config, self._entrypoint, list(args))",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            *tail,
        ]

    # ------------------------------------------------------------------ the agent / srun cascade
    def run_cascade(self, fates: dict[int, tuple[float, Callable[[_Proc, float], tuple[float, int]]]],
                    silent_deaths: dict[int, tuple[float, int]] | None = None,
                    srun_first: Callable[[float, int], None] | None = None) -> None:
        """Play out failures: worker deaths -> agent teardown -> srun kill-on-bad-exit -> SIGTERM elsewhere.

        ``fates``: global-rank index -> (time, fn) where fn(proc, time) writes the process's last lines and
        returns (death time, exit code); skipped if the process was SIGTERMed before ``time``.
        ``silent_deaths``: processes that die without printing (SIGKILL by the OOM killer...).
        """

        s = self.spec
        q: list[tuple[float, int, str, int]] = []
        n = 0

        def push(t: float, kind: str, who: int) -> None:
            nonlocal n
            n += 1
            heapq.heappush(q, (t, n, kind, who))

        for idx, (t, _fn) in fates.items():
            push(t, "fate", idx)
        for idx, (t, code) in (silent_deaths or {}).items():
            p = self.procs[idx]
            p.dead, p.code = t, code
            push(t, "death", idx)
        while q:
            t, _, kind, who = heapq.heappop(q)
            if kind == "fate":
                p = self.procs[who]
                if p.dead is not None or (p.term is not None and p.term <= t):
                    continue
                td, code = fates[who][1](p, t)
                p.dead, p.code, p.reported = td, code, True
                push(td, "death", who)
            elif kind == "death":
                p = self.procs[who]
                a = self.agents[p.node]
                if a.detect is None and a.signalled is None and p.code != 0:
                    push(t + 0.05 + (p.pid % 5) * 0.012, "detect", p.node)
            elif kind == "detect":
                a = self.agents[who]
                if a.detect is not None or a.signalled is not None:
                    continue
                a.detect = t
                texit = self._agent_fail(who, t)
                push(texit, "exit", who)
            elif kind == "exit":
                a = self.agents[who]
                first = min((p for p in self.node_procs(who) if p.dead is not None and p.code),
                            key=lambda p: (p.dead, p.local), default=None)
                self.facts.setdefault("agents", {})[self.hosts[who]] = {
                    "outcome": "sigterm" if a.signalled is not None else "child_failed",
                    "t_exit": t,
                    "first_rank": None if a.signalled is not None or first is None else first.rank,
                    "first_code": None if a.signalled is not None or first is None else first.code,
                    "t_first": None if a.signalled is not None or first is None else first.dead,
                    "reported": sum(1 for p in self.node_procs(who) if p.reported),
                }
                if self.first_kill is None:
                    tk = t + 0.04
                    self.first_kill = tk
                    if srun_first is not None:
                        srun_first(t, who)
                    else:
                        self.srun(t + 0.02, f"srun: error: {self.hosts[who]}: task {who}: Exited with exit code "
                                            f"{a.exit_code}")
                    self.srun(tk, f"srun: Terminating StepId={s.job_id}.0")
                    self.srun(tk + 0.01, f"slurmstepd: error: *** STEP {s.job_id}.0 ON {self.hosts[0]} "
                                         f"CANCELLED AT {self.ts_slurm(tk)} ***")
                    self.cancelled = True
                    for other in self.agents:
                        if other.detect is None and other.signalled is None:
                            other.signalled = tk + 0.02
                            tx = self._agent_sigterm(other.node, tk + 0.02)
                            push(tx, "exit", other.node)
                else:
                    self.srun(t + 0.02, f"srun: error: {self.hosts[who]}: task {who}: Exited with exit code "
                                        f"{a.exit_code}")

    def _close_workers(self, node: int, t: float) -> float:
        """SubprocessContext.close(): SIGTERM to every running worker of the node."""
        alive = [p for p in self.node_procs(node) if p.dead is None or p.dead > t]
        for i, p in enumerate(alive):
            self.agent_log(node, t + i * 0.0004, "W", "elastic/multiprocessing/api.py:897",
                           f"Sending process {p.pid} closing signal SIGTERM")
            p.term = t
            if p.dead is None or p.dead > t + 0.3:
                p.dead, p.code = t + 0.3, -15
        return t + 0.6 + 0.03 * len(alive)

    def _agent_fail(self, node: int, t: float) -> float:
        """A worker failed: close the rest, log the first failure, raise ChildFailedError."""
        s = self.spec
        a = self.agents[node]
        failures = [p for p in self.node_procs(node) if p.dead is not None and p.dead <= t and p.code]
        tclose = self._close_workers(node, t)
        first = min(failures, key=lambda p: (int(p.dead or 0), p.local))
        self.agent_log(node, tclose, "E", "elastic/multiprocessing/api.py:869",
                       f"failed (exitcode: {first.code}) local_rank: {first.local} (pid: {first.pid}) of binary: "
                       f"{s.python}")
        self.agent_log(node, tclose + 0.01, "I", "elastic/multiprocessing/errors/__init__.py:368",
                       f"local_rank {first.rank} FAILED with no error file. Decorate your entrypoint fn with @record "
                       "for traceback info. See: https://pytorch.org/docs/stable/elastic/errors.html")
        base = f"{TORCH_SITE}/distributed"
        tb = self.torchrun_traceback([
            f"  File \"{base}/launcher/api.py\", line 269, in launch_agent",
            "    raise ChildFailedError(",
        ])
        block = [*tb, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                 BORDER_EQ, f"{s.entrypoint} FAILED", BORDER_DASH, "Failures:"]
        others = [p for p in failures if p is not first]
        idx = {p.local: i for i, p in enumerate(sorted(failures, key=lambda q: q.local))}
        if not others:
            block.append("  <NO_OTHER_FAILURES>")
        for p in sorted(others, key=lambda q: q.local):
            block += self._failure_record(idx[p.local], p)
        block += [BORDER_DASH, "Root Cause (first observed failure):", *self._failure_record(idx[first.local], first),
                  BORDER_EQ]
        self.plain(node, tclose + 0.05, block)
        a.exit, a.exit_code = tclose + 0.1, 1
        return tclose + 0.1

    def _failure_record(self, i: int, p: _Proc) -> list[str]:
        code = p.code or 0
        if code < 0:
            sig = {6: "SIGABRT", 9: "SIGKILL", 15: "SIGTERM", 11: "SIGSEGV", 7: "SIGBUS"}[-code]
            tb = f"Signal {-code} ({sig}) received by PID {p.pid}"
        else:
            tb = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
        return [f"[{i}]:", f"  time      : {self.ts_elastic_failure(p.dead or 0)}", f"  host      : {p.host}",
                f"  rank      : {p.rank} (local_rank: {p.local})", f"  exitcode  : {code} (pid: {p.pid})",
                "  error_file: <N/A>", f"  traceback : {tb}"]

    def _agent_sigterm(self, node: int, t: float, run_frame: bool = True) -> float:
        """The agent itself got SIGTERM (srun/slurmstepd): shut workers down, die with SignalException."""
        a = self.agents[node]
        a.signalled = t
        self.agent_log(node, t, "W", "elastic/agent/server/api.py:704",
                       "Received Signals.SIGTERM death signal, shutting down workers")
        tc = self._close_workers(node, t + 0.001)
        base = f"{TORCH_SITE}/distributed"
        if run_frame:
            inner = [
                f"  File \"{base}/elastic/agent/server/api.py\", line 870, in _invoke_run",
                "    time.sleep(monitor_interval)",
            ]
        else:
            inner = [
                f"  File \"{base}/elastic/agent/server/api.py\", line 862, in _invoke_run",
                "    self._initialize_workers(self._worker_group)",
                f"  File \"{base}/elastic/metrics/api.py\", line 137, in wrapper",
                "    result = f(*args, **kwargs)",
                "             ^^^^^^^^^^^^^^^^^^",
                f"  File \"{base}/elastic/agent/server/api.py\", line 683, in _initialize_workers",
                "    self._rendezvous(worker_group)",
                f"  File \"{base}/elastic/rendezvous/dynamic_rendezvous.py\", line 1116, in next_rendezvous",
                "    self._op_executor.run(join_op, deadline, self._get_deadline)",
                f"  File \"{base}/elastic/rendezvous/dynamic_rendezvous.py\", line 675, in run",
                "    time.sleep(action_duration)",
            ]
        tb = self.torchrun_traceback([
            f"  File \"{base}/launcher/api.py\", line 260, in launch_agent",
            "    result = agent.run()",
            "             ^^^^^^^^^^^",
            f"  File \"{base}/elastic/metrics/api.py\", line 137, in wrapper",
            "    result = f(*args, **kwargs)",
            "             ^^^^^^^^^^^^^^^^^^",
            f"  File \"{base}/elastic/agent/server/api.py\", line 711, in run",
            "    result = self._invoke_run(role)",
            "             ^^^^^^^^^^^^^^^^^^^^^^",
            *inner,
            f"  File \"{base}/elastic/multiprocessing/api.py\", line 84, in _terminate_process_handler",
            "    raise SignalException(f\"Process {os.getpid()} got signal: {sigval}\", sigval=sigval)",
            f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {a.pid} got signal: 15",
        ])
        self.plain(node, tc + 0.02, tb)
        a.exit, a.exit_code = tc + 0.05, 1
        return tc + 0.05

    def _finish_success(self) -> None:
        s = self.spec
        tend = self.step_t(self.stream_steps)
        p0 = self.procs[0]
        self.pylog(p0, tend + 0.6, f"training finished after {self.stream_steps} iterations", )
        for p in self.procs:
            tp = tend + 1.2 + p.local * 0.003
            self.nccl(p, tp, f"comm {p.comm} rank {p.rank} nranks {self.world} cudaDev {p.dev} busId {p.bus:x} - "
                             "Destroy COMPLETE")
        for node in range(s.nodes):
            t = tend + 2.6 + node * 0.07
            self.agent_log(node, t, "I", "elastic/agent/server/api.py:864",
                           "[default] worker group successfully finished. Waiting 300 seconds for other agents to "
                           "finish.")
            self.agent_log(node, t, "I", "elastic/agent/server/api.py:918",
                           "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other "
                           "agents to finish")
            self.agent_log(node, t + 0.1, "I", "elastic/agent/server/api.py:932",
                           f"Done waiting for other agents. Elapsed: {0.0007 + 0.07 * (s.nodes - 1 - node):.4f} "
                           "seconds")
        te = tend + 3.4
        self.plain(0, te, ["++ date", f"+ echo 'END TIME: {self.ts_date(te)}'", f"END TIME: {self.ts_date(te)}"])

    def _scheduler_cancel(self, t: float, reason: str | None, job_line_first: bool, aborted_line: bool = True) -> None:
        """slurmctld cancels the job (time limit, preemption, scancel): stepd lines, every agent SIGTERMed."""
        s = self.spec
        suffix = f" DUE TO {reason}" if reason else ""
        job = f"slurmstepd: error: *** JOB {s.job_id} ON {self.hosts[0]} CANCELLED AT {self.ts_slurm(t)}{suffix} ***"
        step = (f"slurmstepd: error: *** STEP {s.job_id}.0 ON {self.hosts[0]} CANCELLED AT {self.ts_slurm(t)}"
                f"{suffix} ***")
        if aborted_line:
            self.srun(t + 0.01, "srun: Job step aborted: Waiting up to 62 seconds for job step to finish.")
        if job_line_first:
            self.srun(t + 0.02, job)
            self.srun(t + 0.03, step)
        else:
            self.srun(t + 0.02, step)
        for node in range(s.nodes):
            self._agent_sigterm(node, t + 0.05 + node * 0.013)
        if not job_line_first:
            self.srun(t + 0.9, job)

    # ------------------------------------------------------------------ scenarios
    def _sc_healthy(self) -> None:
        self._all_start()
        self.stream_steps = self.spec.steps
        self._finish_success()

    def _crash_like(self, root_rank: int, root_fn: Callable[[_Proc, float], tuple[float, int]],
                    victim: str = "watchdog", victim_delay: float = 1.3) -> None:
        """Common shape: everybody trains to fail_step-1, root rank fails in fail_step, peers follow."""
        self._all_start()
        s = self.spec
        self.stream_steps = self.fail_step - 1
        t0 = self.step_t(self.fail_step - 1) + s.iter_time_s * 0.55
        root = self.procs[root_rank]
        seq = self.seq_of(self.fail_step, 0)
        self.facts.update(root_rank=root_rank, root_host=root.host, root_local=root.local, t_root=t0,
                          step=self.fail_step, seq=seq)
        fates: dict[int, tuple[float, Callable[[_Proc, float], tuple[float, int]]]] = {root_rank: (t0, root_fn)}
        rng = self._rng("victims")
        for p in self.procs:
            if p.node == root.node:
                continue
            tv = t0 + victim_delay + rng.uniform(0.0, 0.15)
            if victim == "watchdog":
                fates[p.rank] = (tv, lambda q, tt, n=root.node: self.remote_error(q, tt, seq, n))
            else:
                fates[p.rank] = (tv, lambda q, tt, n=root.node: self.remote_error_python(q, tt, n))
        self.run_cascade(fates)

    def _sc_crash_cascade(self) -> None:
        rank = self.pick_rank(1, 3)
        step = self.fail_step

        def raise_value_error(p: _Proc, t: float) -> tuple[float, int]:
            tb = [
                "Traceback (most recent call last):",
                f"  File \"{APP_DIR}/train.py\", line 412, in <module>",
                "    main()",
                f"  File \"{APP_DIR}/train.py\", line 398, in main",
                "    train(model, optimizer, scheduler, train_loader, args)",
                f"  File \"{APP_DIR}/train.py\", line 288, in train",
                "    batch = next(data_iter)",
                "            ^^^^^^^^^^^^^^^",
                f"  File \"{APP_DIR}/data/packed_dataset.py\", line 131, in __next__",
                "    return self._collate(self._next_samples())",
                "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                f"  File \"{APP_DIR}/data/packed_dataset.py\", line 97, in _collate",
                "    raise ValueError(",
                f"ValueError: sample 18342{step:03d} in shard /lustre/data/pile-gpt2/shard-00417.bin has 2049 tokens, "
                "more than seq_length=2048 (corrupt index?)",
            ]
            self.wrank(p, t, tb)
            self.c10d(p, t + 0.5, "W", "ProcessGroupNCCL.cpp:1496",
                      "Warning: WARNING: destroy_process_group() was not called before program exit, which can leak "
                      "resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown "
                      "(function operator())")
            return t + 0.9, 1

        self._crash_like(rank, raise_value_error)

    def _sc_oom(self) -> None:
        rank = self.pick_rank(0, 5)

        def cuda_oom(p: _Proc, t: float) -> tuple[float, int]:
            tb = [
                "Traceback (most recent call last):",
                *self.py_frames_train(p.rank)[:8],
                "    loss = model(batch[\"tokens\"], labels=batch[\"labels\"]).loss",
                "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                f"  File \"{TORCH_SITE}/nn/modules/module.py\", line 1739, in _wrapped_call_impl",
                "    return self._call_impl(*args, **kwargs)",
                "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                f"  File \"{TORCH_SITE}/nn/modules/module.py\", line 1750, in _call_impl",
                "    return forward_call(*args, **kwargs)",
                "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                f"  File \"{APP_DIR}/model/gpt.py\", line 214, in forward",
                "    logits = self.lm_head(hidden).float()",
                "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {p.dev} has a total "
                "capacity of 79.11 GiB of which 1.19 GiB is free. Including non-PyTorch memory, this process has "
                "77.90 GiB memory in use. Of the allocated memory 74.12 GiB is allocated by PyTorch, and 2.31 GiB "
                "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
            ]
            self.wrank(p, t, tb)
            self.c10d(p, t + 0.6, "W", "ProcessGroupNCCL.cpp:1496",
                      "Warning: WARNING: destroy_process_group() was not called before program exit, which can leak "
                      "resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown "
                      "(function operator())")
            return t + 1.1, 1

        self._crash_like(rank, cuda_oom, victim="python")

    def _sc_ecc_error(self) -> None:
        rank = self.pick_rank(0, 6)

        def ecc(p: _Proc, t: float) -> tuple[float, int]:
            tb = [
                "Traceback (most recent call last):",
                *self.py_frames_train(p.rank)[:8],
                "    loss.backward()",
                f"  File \"{TORCH_SITE}/_tensor.py\", line 626, in backward",
                "    torch.autograd.backward(",
                f"  File \"{TORCH_SITE}/autograd/__init__.py\", line 347, in backward",
                "    _engine_run_backward(",
                f"  File \"{TORCH_SITE}/autograd/graph.py\", line 823, in _engine_run_backward",
                "    return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the "
                "backward pass",
                "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
                "might be incorrect.",
                "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                "",
            ]
            self.wrank(p, t, tb)
            return t + 0.7, 1

        self._crash_like(rank, ecc)

    def _sc_gpu_xid(self) -> None:
        rank = self.pick_rank(1, 5)
        p = self.procs[rank]
        bus = p.bus >> 12

        def xid(q: _Proc, t: float) -> tuple[float, int]:
            # the dmesg follower started by the launcher prints the kernel's message into this node's file
            self.out(q.node, t - 0.8, f"{self.ts_dmesg(t - 0.8)} NVRM: Xid (PCI:0000:{bus:02x}:00): 79, "
                                      "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
            self.out(q.node, t - 0.8, f"{self.ts_dmesg(t - 0.8)} NVRM: GPU 0000:{bus:02x}:00.0: GPU has fallen off "
                                      "the bus.")
            self.nccl_warn(q, t - 0.3, "proxy.cc:1522", "Cuda failure 'unspecified launch failure'", tid=q.tid_proxy)
            self.nccl(q, t - 0.3, "proxy.cc:1604 -> 1 [Progress Thread]", tid=q.tid_proxy)
            where = ("Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 "
                     "(most recent call first):")
            self.wlines(q, t, ["terminate called after throwing an instance of 'c10::Error'",
                               "  what():  CUDA error: unspecified launch failure",
                               "CUDA kernel errors might be asynchronously reported at some other API call, so the "
                               "stacktrace below might be incorrect.",
                               "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                               "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                               "", where, *self.frames_cpp("cuda"), ""])
            return t + 0.3, -6

        self._crash_like(rank, xid)

    def _sc_ib_network_error(self) -> None:
        s = self.spec
        self._all_start()
        self.stream_steps = self.fail_step - 1
        t0 = self.step_t(self.fail_step - 1) + s.iter_time_s * 0.4
        bad_node = 1
        seq = self.seq_of(self.fail_step, 0)
        rng = self._rng("ib")
        # gpu-node02's IB ports stop passing traffic (switch-side link problem): the two ranks that carry the
        # inter-node ring traffic (local 7 sends, local 0 receives) get retry-exceeded completions first
        first = self.node_procs(bad_node)[-1]  # local 7 sends to the next node over NET/IB
        hit = [first, self.node_procs(bad_node)[0]]
        fates: dict[int, tuple[float, Callable[[_Proc, float], tuple[float, int]]]] = {}
        peer_node = (bad_node + 1) % s.nodes
        prev_node = (bad_node - 1) % s.nodes

        def ib_fail(p: _Proc, t: float, peer: int, direction: str) -> tuple[float, int]:
            port = 38000 + p.pid % 1000
            lgid = f"::ffff:{self.ips[p.node]}"
            rgid = f"::ffff:{self.ips[peer]}"
            err = (f"NET/IB : Got completion from peer {self.ips[peer]}<{port}> with status=12 opcode=0 len=0 "
                   f"vendor err 129 ({direction}) localGid {lgid} remoteGids{rgid}")
            self.nccl_warn(p, t, "transport/net_ib.cc:1696", err, tid=p.tid_proxy)
            self.nccl(p, t, "transport/net.cc:1302 -> 6", tid=p.tid_proxy)
            self.nccl(p, t, "proxy.cc:698 -> 6", tid=p.tid_proxy)
            self.nccl(p, t, "proxy.cc:878 -> 6 [Progress Thread]", tid=p.tid_proxy)
            return self.remote_error(p, t + 0.05, seq, peer, last_error=err)

        self.facts.update(root_rank=first.rank, root_host=first.host, t_root=t0, step=self.fail_step, seq=seq,
                          peer_ip=self.ips[peer_node], ranks=[first.rank, hit[1].rank])
        fates[first.rank] = (t0, lambda p, t: ib_fail(p, t, peer_node, "Send"))
        fates[hit[1].rank] = (t0 + 0.03, lambda p, t: ib_fail(p, t, prev_node, "Recv"))
        for p in self.procs:
            if p.node == bad_node:
                continue
            tv = t0 + 2.0 + rng.uniform(0, 0.6)
            fates[p.rank] = (tv, lambda q, t, n=bad_node: self.remote_error(q, t, seq, n))
        self.run_cascade(fates)

    def _sc_host_oom(self) -> None:
        s = self.spec
        self._all_start()
        self.stream_steps = self.fail_step - 1
        rank = self.pick_rank(1, 4)
        victim = self.procs[rank]
        t0 = self.step_t(self.fail_step - 1) + s.iter_time_s * 0.3
        seq = self.seq_of(self.fail_step, 0)
        self.facts.update(root_rank=rank, root_host=victim.host, root_local=victim.local, t_root=t0,
                          step=self.fail_step, pid=victim.pid)
        rng = self._rng("hostoom")
        fates: dict[int, tuple[float, Callable[[_Proc, float], tuple[float, int]]]] = {}
        for p in self.procs:
            if p.node != victim.node:
                fates[p.rank] = (t0 + 1.7 + rng.uniform(0, 0.5),
                                 lambda q, t, n=victim.node: self.remote_error(q, t, seq, n))

        def srun_first(t: float, node: int) -> None:
            if node == victim.node:
                self.out(victim.node, t + 0.01, f"slurmstepd: error: Detected 1 oom_kill event in StepId={s.job_id}.0. "
                                                "Some of the step tasks have been OOM Killed.")
                self.srun(t + 0.02, f"srun: error: {self.hosts[node]}: task {node}: Out Of Memory")
            else:
                self.srun(t + 0.02, f"srun: error: {self.hosts[node]}: task {node}: Exited with exit code 1")

        self.run_cascade(fates, silent_deaths={rank: (t0, -9)}, srun_first=srun_first)

    def _sc_hang_quiet_rank(self) -> None:
        s = self.spec
        self._all_start()
        rank = self.pick_rank(1, 5)
        quiet = self.procs[rank]
        self.quiet = quiet
        self.stream_steps = self.fail_step - 1
        t_enq = self.step_t(self.fail_step - 1) + 0.05
        seq = self.seq_of(self.fail_step, 0)
        self.facts.update(root_rank=rank, root_host=quiet.host, root_local=quiet.local, t_root=t_enq,
                          step=self.fail_step, seq=seq, op_hex=f"{seq - 1:x}", last_op_hex=f"{seq - 2:x}",
                          t_timeout=t_enq + TIMEOUT_MS / 1000)
        for p in self.procs:
            if p is quiet:
                continue
            if s.coll:
                self.nccl(p, t_enq + p.local * 0.0003,
                          f"AllReduce: opCount {seq - 1:x} sendbuff {p.buffers[0]} recvbuff {p.buffers[0]} count "
                          f"{GRAD_NUMEL} datatype 7 op 0 root 0 comm {p.comm} [nranks={self.world}] stream {p.stream}")
        rng = self._rng("timeouts")
        fates: dict[int, tuple[float, Callable[[_Proc, float], tuple[float, int]]]] = {}
        for p in self.procs:
            if p is quiet:
                continue
            tt = t_enq + TIMEOUT_MS / 1000 + rng.uniform(0.02, 0.11)
            fates[p.rank] = (tt, lambda q, t: self.timeout(q, t, seq, GRAD_NUMEL))
        self.run_cascade(fates)

    def _sc_time_limit(self) -> None:
        s = self.spec
        self._all_start()
        limit = s.time_limit_s or 3600
        t_cancel = limit + 0.4
        self.stream_steps = max(1, int((t_cancel - self.t_train) / s.iter_time_s))
        while self.step_t(self.stream_steps) >= t_cancel:
            self.stream_steps -= 1
        self.facts.update(t_cancel=t_cancel, last_step=self.stream_steps, t_last_step=self.step_t(self.stream_steps))
        self._scheduler_cancel(t_cancel, "TIME LIMIT", job_line_first=True)

    def _sc_preempted(self) -> None:
        s = self.spec
        self._all_start()
        self.stream_steps = self.fail_step
        t = self.step_t(self.fail_step) + s.iter_time_s * 0.6
        self.facts.update(t_cancel=t, last_step=self.fail_step, t_last_step=self.step_t(self.fail_step))
        self._scheduler_cancel(t, "PREEMPTION", job_line_first=True)

    def _sc_cancelled_by_user(self) -> None:
        s = self.spec
        self._all_start()
        self.stream_steps = self.fail_step
        t = self.step_t(self.fail_step) + s.iter_time_s * 0.3
        self.facts.update(t_cancel=t, last_step=self.fail_step, t_last_step=self.step_t(self.fail_step))
        self._scheduler_cancel(t, None, job_line_first=False)

    def _sc_silent_hang(self) -> None:
        s = self.spec
        self._all_start()
        self.stream_steps = self.fail_step
        t_hang = self.step_t(self.fail_step) + 0.2
        self.no_save_step = self.fail_step
        p0 = self.procs[0]
        self.pylog(p0, t_hang, f"saving checkpoint at iteration {self.fail_step:7d} to /lustre/ckpt/gpt-1p3b/"
                               f"{s.job_id}")
        limit = s.time_limit_s or 8 * 3600
        t_cancel = limit + 0.6
        self.facts.update(t_cancel=t_cancel, last_step=self.fail_step, t_last_step=self.step_t(self.fail_step),
                          t_hang=t_hang)
        # an external cron job appends a status line to the job's main log every hour
        first = 3600.0 - 0.0
        k = 0
        while first + k * 3600 + 11.0 + k * 0.37 < t_cancel:
            t = first + k * 3600 + 11.0 + k * 0.37
            run = int(t)
            hms = f"{run // 3600}:{run % 3600 // 60:02d}:{run % 60:02d}"
            stamp = f"[{self.at(t):%Y-%m-%d %H:%M:%S}]"
            self.out(0, t, f"{stamp} PULSE: {s.job_name} is waiting to be scheduled ({s.job_id + 1}_[1-3%1] on "
                           f"'{s.partition}' partition)")
            self.out(0, t, f"{stamp} PULSE: {s.job_name} is running for {hms} since {self.ts_slurm(0)} ({s.job_id} "
                           f"on '{s.partition}' partition ({s.node_prefix}[01-{s.nodes:02d}])")
            k += 1
        self._scheduler_cancel(t_cancel, "TIME LIMIT", job_line_first=True)

    def _sc_node_failure(self) -> None:
        s = self.spec
        self._all_start()
        self.stream_steps = self.fail_step - 1
        dead_node = 1
        t_dead = self.step_t(self.fail_step - 1) + s.iter_time_s * 0.7
        seq = self.seq_of(self.fail_step, 0)
        self.facts.update(root_host=self.hosts[dead_node], t_root=t_dead, step=self.fail_step,
                          t_node_failure=t_dead + 301.7, peer_ip=self.ips[dead_node])
        # gpu-node02 goes down (kernel panic): its file just stops, its processes never exit cleanly
        for p in self.node_procs(dead_node):
            p.dead, p.code = t_dead, None
        self.agents[dead_node].signalled = t_dead  # it will never report anything
        rng = self._rng("nodefail")
        fates: dict[int, tuple[float, Callable[[_Proc, float], tuple[float, int]]]] = {}

        def ib_retry(p: _Proc, t: float) -> tuple[float, int]:
            port = 38000 + p.pid % 1000
            err = (f"NET/IB : Got completion from peer {self.ips[dead_node]}<{port}> with status=12 opcode=0 len=0 "
                   f"vendor err 129 (Send) localGid ::ffff:{self.ips[p.node]} remoteGids::ffff:{self.ips[dead_node]}")
            self.nccl_warn(p, t, "transport/net_ib.cc:1696", err, tid=p.tid_proxy)
            self.nccl(p, t, "transport/net.cc:1302 -> 6", tid=p.tid_proxy)
            self.nccl(p, t, "proxy.cc:878 -> 6 [Progress Thread]", tid=p.tid_proxy)
            return self.remote_error(p, t + 0.05, seq, dead_node, last_error=err)

        for p in self.procs:
            if p.node == dead_node:
                continue
            sender = p.local == s.gpus - 1 or p.local == 0
            tv = t_dead + (7.6 if sender else 9.0) + rng.uniform(0, 0.4)
            fates[p.rank] = (tv, ib_retry)
        self.run_cascade(fates)
        # slurmctld declares the node dead after SlurmdTimeout; srun is still waiting for its step daemon
        tn = t_dead + 301.7
        self.srun(tn, f"srun: error: Node failure on {self.hosts[dead_node]}")
        self.srun(tn + 0.01, "srun: Job step aborted: Waiting up to 62 seconds for job step to finish.")
        # the step itself was already cancelled by kill-on-bad-exit; the batch step now goes DUE TO NODE FAILURE
        self.srun(tn + 0.4, f"slurmstepd: error: *** JOB {s.job_id} ON {self.hosts[0]} CANCELLED AT "
                            f"{self.ts_slurm(tn)} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")

    def _sc_socket_fallback(self) -> None:
        s = self.spec
        for node in range(s.nodes):
            self._agent_start(node)
            self._agent_rendezvous(node)
        for p in self.procs:
            self._app_start(p, nccl=True, complete=False)  # mixed IB/Socket transports: init never completes
        self.stream_steps = 0
        limit = s.time_limit_s or 3600
        self.facts.update(root_host=self.hosts[1], t_root=self.t_nccl, t_cancel=limit + 0.5)
        self._scheduler_cancel(limit + 0.5, "TIME LIMIT", job_line_first=True)

    def _sc_rank0_misresolution(self) -> None:
        s = self.spec
        for node in range(s.nodes):
            self._agent_start(node)
            self._agent_rendezvous(node)
        # Both "rank 0" processes created a bootstrap root and stored its id under the same TCPStore key; the
        # second write won for most of gpu-node02, but its local ranks 1-3 had already read gpu-node01's id.
        other_id = f"0x{self._rng('commid2').getrandbits(64):016x}"
        for p in self.procs:
            if p.node > 0 and not 1 <= p.local <= 3:
                p.comm_id = other_id
            self._app_start(p, nccl=True, complete=False, stop_after_start=True)
        root = self.procs[0]
        dup = self.procs[s.gpus + 1]
        self.nccl_warn(root, self.t_nccl + 0.9, "bootstrap.cc:335",
                       f"Bootstrap Root : rank {dup.rank} of {self.world} ranks has already checked in",
                       tid=root.tid_proxy)
        self.stream_steps = 0
        self.facts.update(t_root=self.t_nccl, t_warn=self.t_nccl + 0.9, dup_rank=dup.rank)
        limit = s.time_limit_s or 1800
        self._scheduler_cancel(limit + 0.3, "TIME LIMIT", job_line_first=True)

    def _sc_nccl_version_skew(self) -> None:
        s = self.spec
        for node in range(s.nodes):
            self._agent_start(node)
            self._agent_rendezvous(node)
        # the tensor-parallel group (8 ranks, one node) initialises first and works on both nodes
        for p in self.procs:
            self._app_start(p, nccl=False, complete=False)
        tp_ids = [f"0x{self._rng(f'tp{n}').getrandbits(64):016x}" for n in range(s.nodes)]
        for p in self.procs:
            world_rank = p.rank
            saved = (p.rank, p.comm, p.comm_id)
            p.rank, p.comm_id = p.local, tp_ids[p.node]
            p.comm = f"0x55{self._rng(f'tpc{world_rank}').getrandbits(40):010x}"
            self._nccl_init(p, self.t_nccl + self._rng(f"tpi{world_rank}").uniform(0, 0.5), True, nranks=s.gpus)
            p.rank, p.comm, p.comm_id = saved
        # then the data-parallel world communicator: every rank sees the other node's NCCL version code
        t = self.t_nccl + 6.0
        self.facts.update(root_host=self.hosts[1], t_root=t)
        fates: dict[int, tuple[float, Callable[[_Proc, float], tuple[float, int]]]] = {}
        for p in self.procs:
            def world_init(q: _Proc, tt: float) -> tuple[float, int]:
                node = q.node
                other = 1 if node == 0 else 0
                peer_rank = other * s.gpus
                mine, theirs = _nccl_code(self.nccl_version[node]), _nccl_code(self.nccl_version[other])
                ident = (f"comm {q.comm} rank {q.rank} nranks {self.world} cudaDev {q.dev} nvmlDev {q.dev} "
                         f"busId {q.bus:x} commId {q.comm_id}")
                api = "" if mine < 21900 else "ncclCommInitRank "
                self.nccl(q, tt, f"{api}{ident} - Init START", tid=q.tid_init)
                self.nccl_warn(q, tt + 0.02, "init.cc:743",
                               f"Mismatched NCCL version detected : rank {peer_rank} version {theirs} rank {q.rank} "
                               f"version {mine}", tid=q.tid_init)
                self.nccl(q, tt + 0.02, "init.cc:1331 -> 5", tid=q.tid_init)
                self.nccl(q, tt + 0.02, "init.cc:1628 -> 5", tid=q.tid_init)
                tb = [
                    *self.py_frames_train(q.rank)[:4],
                    f"  File \"{APP_DIR}/train.py\", line 196, in setup_data_parallel",
                    "    dist.barrier(group=dp_group, device_ids=[local_rank])",
                    f"  File \"{TORCH_SITE}/distributed/c10d_logger.py\", line 81, in wrapper",
                    "    return func(*args, **kwargs)",
                    "           ^^^^^^^^^^^^^^^^^^^^^",
                    f"  File \"{TORCH_SITE}/distributed/distributed_c10d.py\", line 4551, in barrier",
                    "    work = group.barrier(opts=opts)",
                    "           ^^^^^^^^^^^^^^^^^^^^^^^^",
                    "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
                    f"ProcessGroupNCCL.cpp:2797, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version "
                    f"{self.nccl_version[node]}",
                    "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
                    "Last error:",
                    f"Mismatched NCCL version detected : rank {peer_rank} version {theirs} rank {q.rank} "
                    f"version {mine}",
                ]
                self.wrank(q, tt + 0.05, ["Traceback (most recent call last):", *tb])
                return tt + 0.6, 1

            fates[p.rank] = (t + p.local * 0.011 + p.node * 0.09, world_init)
        self.run_cascade(fates)

    def _sc_rendezvous_unreachable(self) -> None:
        s = self.spec
        master = self.rdzv_host
        for node in range(s.nodes):
            self._agent_start(node)
        # the store host starts its store and waits in the rendezvous
        t0 = self.t_agent[master] + 0.16
        pid = self.agents[master].pid
        self.agent_log(master, t0, "I", "elastic/agent/server/api.py:845",
                       "[default] starting workers for entrypoint: python")
        self.agent_log(master, t0, "I", "elastic/agent/server/api.py:662", "[default] Rendezvous'ing worker group")
        self.agent_log(master, t0 + 0.01, "I", "elastic/rendezvous/dynamic_rendezvous.py:1162",
                       f"The node '{self.hosts[master]}_{pid}_0' attempts to join the next round of the rendezvous "
                       f"'{s.job_id}'.")
        endpoint = f"{self.hosts[master]}:{s.master_port}"
        exits = []
        for node in range(s.nodes):
            if node == master:
                continue
            ta = self.t_agent[node] + 0.02
            for k, dt in enumerate((21.3, 42.6)):
                self.out(node, ta + dt, f"[W{self.ts_c10(ta + dt, node + k)} socket.cpp:752] [c10d] The client socket "
                                        f"has failed to connect to {endpoint} (errno: 110 - Connection timed out).")
            te = ta + 60.0
            msg = (f"The client socket has timed out after 60000ms while trying to connect to "
                   f"({self.hosts[master]}, {s.master_port}).")
            self.out(node, te, f"[E{self.ts_c10(te, node)} socket.cpp:1019] [c10d] {msg}")
            self.out(node, te, f"[E{self.ts_c10(te + 0.0001, node)} TCPStore.cpp:331] [c10d] TCP client failed to "
                               f"connect/validate to host {endpoint} - timed out (try=1, timeout=60000ms): {msg}")
            self._rdzv_store_traceback(node, te + 0.01, f"torch.distributed.DistNetworkError: {msg}")
            exits.append((te + 0.08, node))
            self.facts.setdefault("t_root", ta + 21.3)
            self.facts.setdefault("root_host", self.hosts[node])
        self._launch_failure_exits(exits)

    def _rdzv_store_traceback(self, node: int, t: float, inner: str) -> None:
        base = f"{TORCH_SITE}/distributed/elastic/rendezvous"
        tb = [
            "Traceback (most recent call last):",
            f"  File \"{base}/c10d_rendezvous_backend.py\", line 159, in _create_tcp_store",
            "    store = TCPStore(",
            "            ^^^^^^^^^",
            inner,
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            *self.torchrun_traceback([
                f"  File \"{TORCH_SITE}/distributed/launcher/api.py\", line 233, in launch_agent",
                "    rdzv_handler=rdzv_registry.get_rendezvous_handler(rdzv_parameters),",
                "                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                f"  File \"{base}/registry.py\", line 89, in get_rendezvous_handler",
                "    return handler_registry.create_handler(params)",
                "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
                f"  File \"{base}/api.py\", line 367, in create_handler",
                "    handler = creator(params)",
                "              ^^^^^^^^^^^^^^^",
                f"  File \"{base}/registry.py\", line 41, in _create_c10d_handler",
                "    backend, store = create_backend(params)",
                "                     ^^^^^^^^^^^^^^^^^^^^^^",
                f"  File \"{base}/c10d_rendezvous_backend.py\", line 263, in create_backend",
                "    store = _create_tcp_store(params)",
                "            ^^^^^^^^^^^^^^^^^^^^^^^^^",
                f"  File \"{base}/c10d_rendezvous_backend.py\", line 183, in _create_tcp_store",
                "    raise RendezvousConnectionError(",
            ]),
            "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store "
            "has failed. See inner exception for details.",
        ]
        self.plain(node, t, tb)

    def _launch_failure_exits(self, exits: list[tuple[float, int]]) -> None:
        """torchrun processes that died before starting workers; srun kills the others."""
        s = self.spec
        exits.sort()
        tfirst, nfirst = exits[0]
        for t, node in exits:
            self.agents[node].exit, self.agents[node].exit_code = t, 1
        self.srun(tfirst + 0.02, f"srun: error: {self.hosts[nfirst]}: task {nfirst}: Exited with exit code 1")
        tk = tfirst + 0.04
        self.srun(tk, f"srun: Terminating StepId={s.job_id}.0")
        self.srun(tk + 0.01, f"slurmstepd: error: *** STEP {s.job_id}.0 ON {self.hosts[0]} CANCELLED AT "
                             f"{self.ts_slurm(tk)} ***")
        for t, node in exits[1:]:
            self.srun(t + 0.02, f"srun: error: {self.hosts[node]}: task {node}: Exited with exit code 1")
        for a in self.agents:
            if a.exit is None:
                tx = self._agent_sigterm(a.node, tk + 0.02, run_frame=False)
                self.srun(tx + 0.02, f"srun: error: {self.hosts[a.node]}: task {a.node}: Exited with exit code 1")

    def _sc_port_in_use(self) -> None:
        s = self.spec
        host = self.rdzv_host  # the store host is the last node (MASTER_ADDR picked with tail -n 1)
        for node in range(s.nodes):
            self._agent_start(node)
        exits = []
        for node in range(s.nodes):
            ta = self.t_agent[node] + 0.03
            if node == host:
                self.facts.update(root_host=self.hosts[node], t_root=ta)
                for k, addr in enumerate((f"[::]:{s.master_port}", f"0.0.0.0:{s.master_port}")):
                    self.out(node, ta, f"[W{self.ts_c10(ta + k * 1e-4, 5 + k)} socket.cpp:464] [c10d] The server "
                                       f"socket has failed to bind to {addr} (errno: 98 - Address already in use).")
                self.out(node, ta, f"[E{self.ts_c10(ta + 2e-4, 9)} socket.cpp:500] [c10d] The server socket has "
                                   "failed to listen on any local network address.")
            # c10d then retries as a client of host:29500, where the stale process accepts but never answers
            te = ta + 60.0 + (0.31 if node == host else 0.0) - node * 0.05
            self._rdzv_store_traceback(node, te + 0.01, "torch.distributed.DistNetworkError: Socket Timeout")
            exits.append((te + 0.07, node))
        self._launch_failure_exits(exits)

    # ------------------------------------------------------------------ output
    def node_lines(self, node: int) -> Iterator[str]:
        """The node's file: start-up records, then the streamed steps merged by time with everything else."""
        for _, _, text in sorted(self.head[node]):
            yield text
        tail = ((t, text) for t, _, text in sorted(self.tail[node]))
        for _, text in heapq.merge(self.stream(node), tail, key=lambda rec: rec[0]):
            yield text


# --------------------------------------------------------------------------------------------
# public API


def _file_name(spec: JobSpec, host: str) -> str:
    return f"{spec.job_name}-{spec.job_id}-{host}.out"


def _count_bytes(spec: JobSpec) -> int:
    sim = _Sim(spec)
    sim.build()
    return sum(len(line.encode()) + 1 for node in range(spec.nodes) for line in sim.node_lines(node))


def _resolve_size(spec: JobSpec) -> JobSpec:
    """Turn ``size_bytes`` into a step count: measure two small runs and extrapolate linearly."""
    if not spec.size_bytes:
        return spec
    if spec.scenario in ("socket-fallback", "rank0-misresolution", "rendezvous-unreachable", "port-in-use",
                         "nccl-version-skew"):
        raise ValueError(f"scenario {spec.scenario} never trains, size_bytes cannot be reached")
    if spec.scenario == "time-limit":
        raise ValueError("time-limit derives its steps from time_limit_s; use cancelled-by-user or preempted")
    probe = replace(spec, size_bytes=None, fail_step=None, train_iters=spec.train_iters or 10_000_000)
    a, b = 2 * spec.log_interval + 2, 6 * spec.log_interval + 2
    ba = _count_bytes(replace(probe, steps=a))
    bb = _count_bytes(replace(probe, steps=b))
    per_step = max(1.0, (bb - ba) / (b - a))
    fixed = ba - a * per_step
    steps = max(spec.log_interval + 2, int((spec.size_bytes - fixed) / per_step))
    return replace(spec, steps=steps, fail_step=None, size_bytes=None,
                   train_iters=spec.train_iters or (steps if spec.scenario == "healthy" else None))


def build_sim(spec: JobSpec) -> _Sim:
    """The simulation of ``spec``, built; ``.facts``, ``.hosts``, ``.at()`` describe what happened."""
    sim = _Sim(_resolve_size(spec))
    sim.build()
    return sim


def render_job(spec: JobSpec) -> dict[str, Iterator[str]]:
    """file name -> iterator over its lines (no newlines). Memory stays small for big jobs."""
    spec = _resolve_size(spec)
    sim = _Sim(spec)
    sim.build()
    return {_file_name(spec, host): sim.node_lines(i) for i, host in enumerate(sim.hosts)}


def job_files(spec: JobSpec) -> list[str]:
    return [_file_name(spec, f"{spec.node_prefix}{i + 1:02d}") for i in range(spec.nodes)]


def write_job(spec: JobSpec, out_dir: Path | str) -> list[Path]:
    """Write one file per node into ``out_dir`` (created); returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, lines in render_job(spec).items():
        path = out / name
        with path.open("w", encoding="utf-8", newline="\n") as fh:
            buf: list[str] = []
            for line in lines:
                buf.append(line)
                if len(buf) >= 8192:
                    fh.write("\n".join(buf))
                    fh.write("\n")
                    buf.clear()
            if buf:
                fh.write("\n".join(buf))
                fh.write("\n")
        written.append(path)
    return written


def _parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--scenario", default="healthy", choices=SCENARIOS)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--job-id", type=int, default=4242001)
    ap.add_argument("--job-name", default="train")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--fail-rank", type=int)
    ap.add_argument("--fail-step", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--coll", action="store_true", help="NCCL_DEBUG_SUBSYS=COLL lines")
    ap.add_argument("--prefix", choices=("default", "host"), default="default")
    ap.add_argument("--progress", choices=("logging", "megatron", "none"), default="logging")
    ap.add_argument("--size", type=_parse_size, help="total bytes to reach, e.g. 100M or 1G (adds steps)")
    args = ap.parse_args(argv)
    spec = JobSpec(nodes=args.nodes, gpus=args.gpus, job_id=args.job_id, job_name=args.job_name, steps=args.steps,
                   fail_rank=args.fail_rank, fail_step=args.fail_step, seed=args.seed, coll=args.coll,
                   prefix=args.prefix, progress_style=args.progress, scenario=args.scenario, size_bytes=args.size)
    for path in write_job(spec, args.out_dir):
        print(f"{path}  {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
