#!/usr/bin/env python3
"""Regenerate sample_logs/ deterministically from tools/jobsim.py.

    python tools/make_samples.py            # rewrite every sample folder under sample_logs/
    python tools/make_samples.py oom        # only the named ones
    python tools/make_samples.py --check    # exit 1 if a folder differs from what would be written

Each folder holds one ``train-<jobid>-<node>.out`` per node (srun --output=%x-%j-%N.out) and a
README.md whose first line says what logscope should conclude ("Should emit: ..."). Stdlib only.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobsim import JobSpec, build_sim, write_job

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = ROOT / "sample_logs"


@dataclass(frozen=True)
class Sample:
    name: str
    spec: JobSpec
    should: Callable[[object], str]  # sim -> the "Should emit:" sentence (without the prefix)
    story: Callable[[object], str]  # sim -> markdown body


def hm(sim, t: float) -> str:
    return f"{sim.at(t):%H:%M:%S}"


def day(h: int, m: int, s: int = 2) -> datetime:
    return datetime(2026, 11, 3, h, m, s)


COMMON = (
    "Stack: torch 2.6.0+cu124 (torchrun glog-style logger, `LOGLEVEL=INFO`), NCCL 2.21.5 with "
    "`NCCL_DEBUG=INFO`, Slurm `srun --kill-on-bad-exit=1 --output=%x-%j-%N.out`: one file per node; "
    "the batch host's file (`gpu-node01`) also carries the batch script's `set -x` trace and every "
    "`srun:` / `slurmstepd:` line. Worker lines carry torchrun's `--tee 3` prefix (`[defaultN]:` or "
    "`[gpu-nodeXX:N]:`, N = local rank)."
)


def cascade(sim, root_host: str, victim: str = "log NCCL WARN / c10d watchdog errors") -> str:
    """Describe what the other nodes did, from the simulation's record of each agent."""
    agents = sim.facts.get("agents", {})
    parts = []
    for host in sim.hosts:
        if host == root_host or host not in agents:
            continue
        a = agents[host]
        if a["outcome"] == "child_failed":
            parts.append(
                f"on {host} the ranks {victim} *after* the root; {host}'s "
                f"ChildFailedError names its own first failure, rank {a['first_rank']} (exitcode {a['first_code']}, "
                f"{hm(sim, a['t_first'])}), which is a victim, later than the root"
            )
        elif a["reported"]:
            parts.append(
                f"on {host} {a['reported']} rank(s) start logging NCCL/c10d errors, then srun's kill-on-bad-exit "
                "SIGTERMs the agent (`Received Signals.SIGTERM death signal`, SignalException, no ChildFailedError)"
            )
        else:
            parts.append(
                f"{host}'s agent is SIGTERMed by srun (kill-on-bad-exit) before any of its ranks notices: "
                "`Received Signals.SIGTERM death signal`, closing signals, SignalException traceback, "
                "no ChildFailedError"
            )
    root_agent = agents.get(root_host, {})
    first = f" at {hm(sim, root_agent['t_exit'])}" if root_agent else ""
    return (
        f"Cascade: {root_host}'s torchrun sees the failure, SIGTERMs its remaining workers (exitcode -15, not listed "
        f"as failures), prints a ChildFailedError and exits{first}; srun (gpu-node01's file) prints `srun: error: "
        f"{root_host}: task {sim.hosts.index(root_host)}: ...`, `srun: Terminating StepId=...` and the STEP "
        "CANCELLED line. Meanwhile " + "; ".join(parts) + "."
    )


def _crash_story(what: str) -> Callable[[object], str]:
    def story(sim) -> str:
        return f"{what}\n\n{cascade(sim, sim.facts['root_host'])}"

    return story


SAMPLES: list[Sample] = [
    Sample(
        "healthy",
        JobSpec(job_id=4242001, start=day(9, 12, 40), steps=200, scenario="healthy"),
        lambda sim: "category=healthy, no failure: 200/200 iterations, every rank's NCCL Init COMPLETE, clean exit",
        lambda sim: (
            "Two nodes x 8 GPUs train for 200 iterations and exit 0. Rendezvous (c10d, 2 nodes, ranks 0-7 on "
            "gpu-node01 and 8-15 on gpu-node02), 16 Init COMPLETE lines with nranks 16, progress printed by "
            "rank 15 every 10 iterations, `Destroy COMPLETE` per rank, each agent reports `WorkerState.SUCCEEDED`, "
            "and the batch script echoes END TIME. The OMP_NUM_THREADS banner and the NET/Plugin "
            "\"No plugin found\" lines are benign."
        ),
    ),
    Sample(
        "hang-quiet-rank",
        JobSpec(job_id=4242002, start=day(14, 0), steps=20, fail_step=20, fail_rank=13, coll=True,
                log_interval=5, scenario="hang-quiet-rank"),
        lambda sim: (
            f"category=hang, root cause rank 13 on gpu-node02 (never enqueued ALLREDUCE SeqNum="
            f"{sim.facts['seq']}: its last COLL opCount is {sim.facts['last_op_hex']} while the 15 other ranks "
            f"reached {sim.facts['op_hex']}; it never reports a timeout)"
        ),
        lambda sim: (
            f"NCCL_DEBUG_SUBSYS=INIT,ENV,COLL. At iteration {sim.facts['step']} (~{hm(sim, sim.facts['t_root'])}) "
            "rank 13 (gpu-node02, local rank 5) stops before its next collective (a Python-side deadlock), so "
            f"its COLL lines stop at opCount {sim.facts['last_op_hex']}. The 15 other ranks enqueue the "
            f"gradient ALLREDUCE (SeqNum={sim.facts['seq']}, opCount {sim.facts['op_hex']}) and wait. 600 s later "
            f"(~{hm(sim, sim.facts['t_timeout'])}) each of them logs `Watchdog caught collective operation "
            f"timeout: WorkNCCL(SeqNum={sim.facts['seq']}, OpType=ALLREDUCE, ...)`, the `[PG ID 0 PG GUID "
            "0(default_pg) Rank r] Exception (either an error or timeout) detected by watchdog at work: "
            f"{sim.facts['seq']}, last enqueued NCCL work: {sim.facts['seq']}, last completed NCCL work: "
            f"{sim.facts['seq'] - 1}.` line, `To avoid data inconsistency...`, and aborts (exitcode -6). Rank 13 "
            "prints nothing; it is only SIGTERMed (-15) by its agent. Both agents print ChildFailedError blocks "
            "with -6 root causes (neither is rank 13), then srun terminates the step.\n\n"
            "The culprit is the one rank that is *absent*: missing from the timeouts, behind on opCount."
        ),
    ),
    Sample(
        "rank0-misresolution",
        JobSpec(job_id=4242003, start=day(10, 30), scenario="rank0-misresolution", time_limit_s=1800),
        lambda sim: (
            "category=launch, $SLURM_PROCID expanded on the batch host: node_rank 0 / group_rank 0 on both "
            "gpu-node01 and gpu-node02, ranks 0-7 claimed twice, ranks 8-15 never exist; NCCL init hangs "
            "until the 30-minute time limit"
        ),
        lambda sim: (
            "The sbatch builds the launcher with `--node_rank $SLURM_PROCID` inside double quotes, so it is "
            "expanded once on the batch host (where SLURM_PROCID=0); the `set -x` trace in gpu-node01's file shows "
            "the expanded command `... --node_rank 0 --master_addr gpu-node01 --master_port 6000 train.py`. "
            "torchrun uses the static rendezvous: both launch configs show `rdzv_backend : static` and "
            "`rdzv_configs : {'rank': 0, 'timeout': 900}`, and both rendezvous results say `group_rank=0`, "
            "`global_ranks=[0, ..., 7]`. (The script also exports `TORCH_ELASTIC_WORKER_IDENTICAL=1`, which makes "
            "torch >= 2.4 compute ranks locally from group_rank; without it the two agents would block in "
            "the rank exchange instead of starting workers.)\n\n"
            "Each node then has a rank 0 (so `NCCL version` is printed twice, once per node) and the Init START "
            "lines show ranks 0-7 with `nranks 16` on both nodes, two different commIds, and no Init COMPLETE. "
            f"gpu-node01's bootstrap root logs `Bootstrap Root : rank {sim.facts['dup_rank']} of 16 ranks "
            "has already checked in` (the duplicate came from gpu-node02). Nothing else is printed until "
            "`CANCELLED AT ... DUE TO TIME LIMIT`, when both agents receive SIGTERM."
        ),
    ),
    Sample(
        "crash-cascade",
        JobSpec(job_id=4242004, start=day(11, 5, 12), steps=57, fail_step=57, fail_rank=11,
                scenario="crash-cascade"),
        lambda sim: (
            f"category=crash, root cause rank 11 on gpu-node02 (ValueError at step 57, "
            f"{hm(sim, sim.facts['t_root'])})"
        ),
        _crash_story(
            "Rank 11 (gpu-node02, local rank 3) raises `ValueError: sample ... has 2049 tokens, more than "
            "seq_length=2048` from the data loader while building iteration 57 (iterations 1-56 completed; "
            "progress is printed by rank 15 every 10). Its traceback lines are prefixed `[default3]:[rank11]: `."
        ),
    ),
    Sample(
        "oom",
        JobSpec(job_id=4242005, start=day(16, 41, 7), steps=143, fail_step=143, fail_rank=5, prefix="host",
                scenario="oom"),
        lambda sim: (
            f"category=oom, root cause rank 5 on gpu-node01 (torch.OutOfMemoryError: CUDA out of memory, tried "
            f"to allocate 2.00 GiB on GPU 5, step 143, {hm(sim, sim.facts['t_root'])})"
        ),
        lambda sim: (
            "Launched with `--role $(hostname -s): --tee 3`, so worker lines are prefixed `[gpu-node01:5]:`. Rank 5 "
            "(gpu-node01, GPU 5) raises `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
            "GPU 5 has a total capacity of 79.11 GiB of which 1.19 GiB is free. ...` in the LM head during "
            "iteration 143.\n\n"
            + cascade(sim, "gpu-node01", victim="(main threads blocked in `all_reduce`) get `socketProgressOpt: Call "
                      "to recv from 10.0.1.11<...> failed : Connection reset by peer` NCCL WARNs and Python "
                      "`torch.distributed.DistBackendError: NCCL error in: .../NCCLUtils.hpp:268, remote process "
                      "exited or there was a network error, NCCL version 2.21.5` tracebacks (exitcode 1)")
        ),
    ),
    Sample(
        "time-limit",
        JobSpec(job_id=4242006, start=day(8, 0, 4), steps=1, iter_time_s=6.9, log_interval=10,
                progress_style="megatron", time_limit_s=7200, scenario="time-limit"),
        lambda sim: (
            f"category=scheduler, job 4242006 cancelled DUE TO TIME LIMIT at {hm(sim, sim.facts['t_cancel'])} "
            f"(2:00:00 limit); healthy until then, last iteration {sim.facts['last_step']}; no rank at fault"
        ),
        lambda sim: (
            "Megatron-style progress lines (` [YYYY-MM-DD HH:MM:SS] iteration      N/ 10000 | ...`, the timestamp "
            "Megatron itself prints, after a leading space) every 10 iterations of ~6.9 s until the 2-hour limit. "
            "Then gpu-node01's file gets `srun: Job step aborted: Waiting up to 62 seconds for job step to "
            "finish.`, `slurmstepd: error: *** JOB 4242006 ON gpu-node01 CANCELLED AT ... DUE TO TIME LIMIT ***` "
            "and the matching STEP line; every torchrun agent logs `Received Signals.SIGTERM death signal, "
            "shutting down workers`, sends SIGTERM to its 8 workers and exits with a `SignalException: Process N "
            "got signal: 15` traceback. These are consequences of the cancellation, not a crash."
        ),
    ),
    Sample(
        "gpu-xid",
        JobSpec(job_id=4242007, start=day(3, 17, 55), steps=311, fail_step=311, fail_rank=13,
                scenario="gpu-xid"),
        lambda sim: (
            f"category=hardware, GPU 5 of gpu-node02 (PCI 0000:b3:00) fell off the bus (Xid 79) at "
            f"{hm(sim, sim.facts['t_root'] - 0.8)}; first failing rank 13 (CUDA error: unspecified launch failure)"
        ),
        lambda sim: (
            "The launcher runs `(dmesg --ctime --follow | grep --line-buffered NVRM) &` next to torchrun on every "
            "node, so kernel GPU messages land in the node's own file with `dmesg -T` timestamps. During "
            "iteration 311 gpu-node02 logs `NVRM: Xid (PCI:0000:b3:00): 79, pid='<unknown>', name=<unknown>, GPU "
            "has fallen off the bus.`; rank 13 (GPU 5, busId b3000 in its NCCL Init line) then gets an NCCL "
            "`Cuda failure 'unspecified launch failure'` WARN and its c10d watchdog dies with `terminate called "
            "after throwing an instance of 'c10::Error'` / `what():  CUDA error: unspecified launch failure` "
            "(exitcode -6).\n\n" + cascade(sim, "gpu-node02")
        ),
    ),
    Sample(
        "ecc-error",
        JobSpec(job_id=4242008, start=day(19, 2, 30), steps=77, fail_step=77, fail_rank=6,
                scenario="ecc-error"),
        lambda sim: (
            f"category=hardware, uncorrectable ECC error on GPU 6 of gpu-node01: root cause rank 6 "
            f"(RuntimeError: CUDA error: uncorrectable ECC error encountered, step 77, {hm(sim, sim.facts['t_root'])})"
        ),
        _crash_story(
            "Rank 6 (gpu-node01, local rank 6) raises `RuntimeError: CUDA error: uncorrectable ECC error "
            "encountered` in `loss.backward()` during iteration 77, with torch's usual `CUDA kernel errors might "
            "be asynchronously reported...` / `Compile with TORCH_USE_CUDA_DSA...` lines."
        ),
    ),
    Sample(
        "ib-network-error",
        JobSpec(job_id=4242009, start=day(22, 48, 19), steps=388, fail_step=388, prefix="host",
                scenario="ib-network-error"),
        lambda sim: (
            f"category=network, InfiniBand failure on gpu-node02: NET/IB completion errors status=12 (retry "
            f"exceeded) on ranks 15 and 8 at {hm(sim, sim.facts['t_root'])}, peer {sim.facts['peer_ip']} "
            "(gpu-node01); no rank is at fault"
        ),
        lambda sim: (
            "Prefix style `[gpu-node02:7]:`. During iteration 388 gpu-node02's IB ports stop passing traffic. "
            "The two ranks that carry the inter-node ring (rank 15 sends to gpu-node01, rank 8 receives from it) "
            "log `transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.1.11<...> with "
            "status=12 opcode=0 len=0 vendor err 129 (Send|Recv) localGid ... remoteGids...` (NCCL 2.21 wording) "
            "followed by `NCCL INFO ... -> 6` unwinding lines, then the c10d watchdog reports `NCCL error: remote "
            "process exited or there was a network error` with `ncclRemoteError` and the IB line as `Last error`, "
            "and aborts (-6).\n\n" + cascade(sim, "gpu-node02")
        ),
    ),
    Sample(
        "socket-fallback",
        JobSpec(job_id=4242010, start=day(13, 20), scenario="socket-fallback", time_limit_s=3600),
        lambda sim: (
            "category=network, gpu-node02 has no usable IB device (NET/IB : No device found., Using network "
            "Socket) while gpu-node01 uses IB: NCCL init hangs (no Init COMPLETE anywhere), job cancelled DUE TO "
            "TIME LIMIT after 1 h"
        ),
        lambda sim: (
            "gpu-node02's HCA driver did not come up: its NCCL lines say `NET/IB : No device found.`, "
            "`NET/Socket : Using [0]eno1:10.0.100.12<0>`, `Using network Socket`, and its bootstrap uses eno1, "
            "while gpu-node01 says `NET/IB : Using [0]mlx5_0:1/IB ...` and `Using network IB`. Chosen outcome "
            "(the realistic one for a mixed IB/Socket communicator, cf. NVIDIA/nccl#234 \"InfiniBand is picked "
            "for transport even if it is not available on the other nodes ... ncclCommInitRank hangs forever\"): "
            "every rank prints Init START and its channel lines (NET/IB on gpu-node01, NET/Socket on gpu-node02) "
            "but no rank reaches `Connected all rings` / Init COMPLETE. Torch 2.6 has no timeout on a blocking "
            "communicator init, so nothing more is logged until the 1-hour limit cancels the job (`DUE TO TIME "
            "LIMIT`, agents SIGTERMed). Not slow-but-healthy: mixed transports do not connect."
        ),
    ),
    Sample(
        "nccl-version-skew",
        JobSpec(job_id=4242012, start=day(12, 2, 41), scenario="nccl-version-skew"),
        lambda sim: (
            "category=launch, NCCL version skew: gpu-node02 runs NCCL 2.18.6+cuda12.2 (cudaDriverVersion 12020) "
            "while gpu-node01 runs 2.21.5+cuda12.4 (12040); the 16-rank communicator fails with `Mismatched NCCL "
            f"version detected` (ncclInvalidUsage) on every rank at {hm(sim, sim.facts['t_root'])}"
        ),
        lambda sim: (
            "gpu-node02 picks up a different libnccl (site module loaded on that node only) and runs an older CUDA "
            "driver. The per-node tensor-parallel groups (8 ranks, one node) initialise first and succeed: each "
            "node's local rank 0 prints its own bare `NCCL version` line (2.21.5+cuda12.4 on gpu-node01, "
            "2.18.6+cuda12.2 on gpu-node02; the 2.18 Init lines also lack the `ncclCommInitRank` prefix). Then the "
            "data-parallel world communicator is created: every rank logs Init START, an `init.cc:743 NCCL WARN "
            "Mismatched NCCL version detected : rank R version 21806 rank r version 22105`-style line and a "
            "`torch.distributed.DistBackendError: ... invalid usage (run with NCCL_DEBUG=WARN for details)` "
            "traceback ending in `ncclInvalidUsage` / `Last error:` / the same mismatch line. All workers exit 1; "
            "both agents print ChildFailedError; srun terminates the step."
        ),
    ),
    Sample(
        "host-oom",
        JobSpec(job_id=4242011, start=day(6, 55, 31), steps=95, fail_step=95, fail_rank=12, scenario="host-oom"),
        lambda sim: (
            f"category=oom, host memory (cgroup) OOM on gpu-node02: rank 12 SIGKILLed (exitcode -9) at "
            f"{hm(sim, sim.facts['t_root'])}, `Detected 1 oom_kill event in StepId=4242011.0`, srun `task 1: Out Of "
            "Memory`"
        ),
        lambda sim: (
            "During iteration 95 the kernel's cgroup OOM killer kills rank 12 (gpu-node02, local rank 4) with "
            "SIGKILL: the worker prints nothing. gpu-node02's agent logs `failed (exitcode: -9) local_rank: 4` and "
            "a ChildFailedError whose root cause says `Signal 9 (SIGKILL) received by PID ...`; the step daemon "
            "on gpu-node02 adds `slurmstepd: error: Detected 1 oom_kill event in StepId=4242011.0. Some of the "
            "step tasks have been OOM Killed.` to that node's file, and srun (gpu-node01's file) reports `srun: "
            "error: gpu-node02: task 1: Out Of Memory` before terminating the step.\n\n" + cascade(sim, "gpu-node02")
        ),
    ),
    Sample(
        "preempted",
        JobSpec(job_id=4242013, start=day(1, 4, 9), steps=260, fail_step=260, scenario="preempted"),
        lambda sim: (
            f"category=scheduler, job 4242013 CANCELLED DUE TO PREEMPTION at {hm(sim, sim.facts['t_cancel'])}; "
            f"healthy until then (last iteration {sim.facts['last_step']}); no rank at fault"
        ),
        lambda sim: (
            "Training is healthy; after iteration 260 a higher-priority job preempts this one. gpu-node01's file: "
            "`srun: Job step aborted: ...`, `slurmstepd: error: *** JOB 4242013 ON gpu-node01 CANCELLED AT ... "
            "DUE TO PREEMPTION ***` and the STEP line. Both agents then log `Received Signals.SIGTERM death "
            "signal`, SIGTERM their workers and exit via SignalException: consequences only."
        ),
    ),
    Sample(
        "cancelled-by-user",
        JobSpec(job_id=4242014, start=day(15, 33, 50), steps=90, fail_step=90, scenario="cancelled-by-user"),
        lambda sim: (
            f"category=scheduler, cancelled by the user (scancel: STEP/JOB CANCELLED AT "
            f"{sim.at(sim.facts['t_cancel']):%Y-%m-%dT%H:%M:%S} with no DUE TO reason); healthy until then, "
            f"last iteration {sim.facts['last_step']}"
        ),
        lambda sim: (
            "Healthy training, then `scancel`: `srun: Job step aborted`, `slurmstepd: error: *** STEP 4242014.0 ON "
            "gpu-node01 CANCELLED AT ... ***` (no `DUE TO`), agents SIGTERMed (SignalException tracebacks), then "
            "the `*** JOB 4242014 ... CANCELLED AT ... ***` line. Must not be read as a time limit (no DUE TO) nor "
            "as a crash (the SIGTERM lines follow the cancellation)."
        ),
    ),
    Sample(
        "node-failure",
        JobSpec(job_id=4242015, start=day(4, 12, 27), steps=420, fail_step=420, scenario="node-failure"),
        lambda sim: (
            f"category=hardware, node failure of gpu-node02 (its log stops at {hm(sim, sim.facts['t_root'])}; "
            "`srun: error: Node failure on gpu-node02`, JOB CANCELLED DUE TO NODE FAILURE); gpu-node01's IB "
            "errors and aborts are consequences"
        ),
        lambda sim: (
            "gpu-node02 dies (kernel panic / power) during iteration 420: its file simply ends, no error, no "
            "ChildFailedError. ~8 s later gpu-node01's ranks that were sending to it get `NET/IB : Got completion "
            f"from peer {sim.facts['peer_ip']}<...> with status=12 ... (Send)` retry-exceeded WARNs, the c10d "
            "watchdog aborts them (-6), gpu-node01's agent prints a ChildFailedError (root: a gpu-node01 rank, a "
            "*victim*) and exits; srun reports `gpu-node01: task 0: Exited with exit code 1`, `Terminating "
            "StepId=`, STEP CANCELLED (kill-on-bad-exit). srun then keeps waiting for gpu-node02's step daemon "
            f"until slurmctld declares the node down (SlurmdTimeout, ~5 min later, "
            f"{hm(sim, sim.facts['t_node_failure'])}): `srun: error: Node failure on gpu-node02`, `srun: Job step "
            "aborted: ...`, `*** JOB 4242015 ON gpu-node01 CANCELLED AT ... DUE TO NODE FAILURE, SEE SLURMCTLD LOG "
            "FOR DETAILS ***`. The earliest *error line* is on gpu-node01, but the cause is the node that went "
            "silent first."
        ),
    ),
    Sample(
        "rendezvous-unreachable",
        JobSpec(job_id=4242016, start=day(9, 58, 3), scenario="rendezvous-unreachable"),
        lambda sim: (
            "category=launch, rendezvous endpoint gpu-node01:29500 unreachable from gpu-node02 (client socket "
            "connect timed out, errno 110; RendezvousConnectionError); no worker ever started"
        ),
        lambda sim: (
            "torchrun on gpu-node02 cannot open a TCP connection to the c10d rendezvous store on gpu-node01:29500 "
            "(a host firewall drops the SYNs): `[W... socket.cpp:752] [c10d] The client socket has failed to "
            "connect to gpu-node01:29500 (errno: 110 - Connection timed out).` twice, then after the 60 s "
            "read_timeout `The client socket has timed out after 60000ms while trying to connect to (gpu-node01, "
            "29500).` (socket.cpp and TCPStore.cpp E lines) and a chained traceback: `torch.distributed."
            "DistNetworkError` -> `torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The "
            "connection to the C10d store has failed. See inner exception for details.`, exit 1. gpu-node01's "
            "agent, which hosts the store, waits in the rendezvous (`attempts to join the next round`) until srun "
            "kills the step, then exits with SignalException (its traceback shows it inside next_rendezvous). No "
            "NCCL line, no worker output."
        ),
    ),
    Sample(
        "port-in-use",
        JobSpec(job_id=4242017, start=day(17, 45, 50), scenario="port-in-use"),
        lambda sim: (
            "category=launch, port 29500 already in use on gpu-node02 (the rendezvous host): `The server socket "
            "has failed to bind ... (errno: 98 - Address already in use)`; both agents then fail to reach the "
            "store (Socket Timeout, RendezvousConnectionError); no worker started"
        ),
        lambda sim: (
            "The sbatch picks the last node as MASTER_ADDR (`scontrol show hostnames ... | tail -n 1`), so "
            "gpu-node02, not the batch host, is the c10d rendezvous host; `USE_LIBUV=0` selects the classic "
            "TCPStore backend. A wedged process left over from an earlier job still holds TCP port 29500 on "
            "gpu-node02. That node's torchrun logs `[W... socket.cpp:464] [c10d] The server socket has failed to "
            "bind to [::]:29500 (errno: 98 - Address already in use).` (and 0.0.0.0:29500) and `The server socket "
            "has failed to listen on any local network address.`, then, as c10d's rendezvous does, retries as a "
            "client of gpu-node02:29500: the stale listener accepts but never answers, so 60 s later both nodes' "
            "agents fail with `torch.distributed.DistNetworkError: Socket Timeout` -> `RendezvousConnectionError`. "
            "Trap: gpu-node01's torchrun exits a fraction of a second first, so srun's first error line names "
            "gpu-node01; the root cause is the bind failure on gpu-node02 a minute earlier."
        ),
    ),
    Sample(
        "silent-hang",
        JobSpec(job_id=4242018, start=day(0, 0, 6), steps=3000, fail_step=3000, iter_time_s=2.37, log_interval=50,
                progress_style="megatron", time_limit_s=8 * 3600, scenario="silent-hang"),
        lambda sim: (
            f"category=hang, silent: no progress after iteration 3000 ({hm(sim, sim.facts['t_last_step'])}, "
            "stuck saving a checkpoint), no error from any rank, job cancelled DUE TO TIME LIMIT at "
            f"{hm(sim, sim.facts['t_cancel'])} (~6 h later); no rank identifiable"
        ),
        lambda sim: (
            "Megatron-style progress every 50 iterations (~2.4 s each); checkpoints are saved every 500 "
            "iterations (`saving checkpoint at iteration` / `successfully saved checkpoint` from rank 0). At "
            "iteration 3000 rank 0 logs `saving checkpoint at iteration    3000 ...` and every rank blocks in "
            "file-system writes (stalled Lustre OST); no collective is pending, so no NCCL or c10d timeout ever "
            "fires. An external cron job appends hourly `PULSE: train is running for H:MM:SS since ...` lines "
            "(and a `waiting to be scheduled` line for the follow-up array job) to the batch host's file, before "
            "and after the hang. After the 8-hour limit: `DUE TO TIME LIMIT`, agents SIGTERMed. The only evidence "
            "is the gap between the last progress line and the PULSE lines that keep coming."
        ),
    ),
]


def render(sample: Sample, out_dir: Path) -> None:
    write_job(sample.spec, out_dir)
    sim = build_sim(sample.spec)
    spec = sample.spec
    files = ", ".join(f"`{spec.job_name}-{spec.job_id}-{h}.out`" for h in sim.hosts)
    text = (
        f"Should emit: {sample.should(sim)}\n\n"
        f"# {sample.name}\n\n"
        f"{sample.story(sim)}\n\n"
        f"Files: {files}. Job {spec.job_id} started {spec.start:%Y-%m-%d %H:%M:%S}, {spec.nodes} nodes x "
        f"{spec.gpus} GPUs.\n\n"
        f"{COMMON}\n\n"
        f"Generated by `tools/make_samples.py` with `tools/jobsim.py` "
        f"(`JobSpec(scenario={spec.scenario!r}, job_id={spec.job_id}, ...)`); do not edit by hand.\n"
    )
    (out_dir / "README.md").write_text(text, encoding="utf-8")


def index_text() -> str:
    lines = [
        "# sample_logs",
        "",
        "Simulated SLURM + torchrun + NCCL job folders, one per failure scenario: one `train-<jobid>-<node>.out` per",
        "node (`srun --output=%x-%j-%N.out`) and a README.md whose first line is what logscope should conclude.",
        "Generated by `python tools/make_samples.py` (deterministic; `--check` verifies this folder is current) from",
        "`tools/jobsim.py`. Formats follow shared/formats.md and docs/log-sources.md",
        "(torch 2.6, NCCL 2.21.5, Slurm 22+).",
        "",
        "| folder | should emit |",
        "|---|---|",
    ]
    for sample in SAMPLES:
        sim = build_sim(sample.spec)
        lines.append(f"| [{sample.name}]({sample.name}/README.md) | {sample.should(sim).replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="sample folders to regenerate (default: all)")
    ap.add_argument("--out", type=Path, default=SAMPLES_DIR)
    ap.add_argument("--check", action="store_true", help="compare with what is on disk; write nothing")
    args = ap.parse_args(argv)
    wanted = set(args.names) or {s.name for s in SAMPLES}
    unknown = wanted - {s.name for s in SAMPLES}
    if unknown:
        ap.error(f"unknown sample(s): {', '.join(sorted(unknown))}")
    differ = []
    for sample in SAMPLES:
        if sample.name not in wanted:
            continue
        target = args.out / sample.name
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = Path(tmp) / sample.name
                render(sample, fresh)
                a = sorted(p.name for p in fresh.iterdir())
                b = sorted(p.name for p in target.iterdir()) if target.is_dir() else []
                if a != b or any((fresh / n).read_bytes() != (target / n).read_bytes() for n in a):
                    differ.append(sample.name)
            continue
        if target.exists():
            shutil.rmtree(target)
        render(sample, target)
        size = sum(p.stat().st_size for p in target.iterdir())
        print(f"{sample.name:24s} {size / 1024:7.1f} KiB  {len(list(target.iterdir())) - 1} node files")
    if not args.names:
        index = args.out / "README.md"
        if args.check:
            if not index.is_file() or index.read_text(encoding="utf-8") != index_text():
                differ.append("README.md")
        else:
            index.write_text(index_text(), encoding="utf-8")
    if args.check:
        if differ:
            print("out of date: " + ", ".join(differ))
            return 1
        print("sample_logs/ is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
