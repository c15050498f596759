#!/usr/bin/env python3
"""Tiny torch.distributed (gloo, CPU) training program for the SLURM lab.

Launched by torchrun (it reads RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT from the env).
Every option can also come from the environment as LAB_<NAME> (e.g. LAB_MODE=raise), so an sbatch
script can choose the scenario without touching the launcher line.  Command-line flags win.

Modes:
  healthy  --steps steps of forward/backward (DDP all_reduce of grads) + an explicit all_reduce of the
           loss, one log line per step on every rank, clean exit.
  raise    rank --fail-rank raises RuntimeError at step --fail-step; the others then fail in their
           next collective (gloo: peer closed connection) -> torchrun ChildFailedError.
  hang     rank --fail-rank sleeps --hang-seconds before the collective at step --fail-step; the others
           time out after --timeout seconds (init_process_group(timeout=...)).
  sigkill  rank --fail-rank SIGKILLs itself at step --fail-step.
  segfault rank --fail-rank reads address 0 at step --fail-step (a real SIGSEGV; faulthandler reports it).
  slow     --steps steps with --step-sleep seconds each, meant to outlive a short `--time`.

--fr-dump (LAB_FR_DUMP=1): every rank writes its Flight Recorder to $TORCH_FR_DUMP_TEMP_FILE<rank>
when a collective fails (its exception handler) or when torchrun stops it (SIGTERM): gloo does not
dump on a timeout by itself, as NCCL's watchdog does.

--fail-step 0 with raise fails at start-up, before init_process_group.
--fail-attempts N injects the failure only in torchrun's first N attempts (TORCHELASTIC_RESTART_COUNT
< N; 0 = every attempt), so a job with --max_restarts >= N recovers.
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import signal
import socket
import sys
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("train")


def _env(name: str, default: str) -> str:
    return os.environ.get(f"LAB_{name.upper()}", default)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default=_env("mode", "healthy"),
                    choices=["healthy", "raise", "hang", "sigkill", "segfault", "slow"])
    ap.add_argument("--steps", type=int, default=int(_env("steps", "10")))
    ap.add_argument("--fail-rank", type=int, default=int(_env("fail_rank", "3")))
    ap.add_argument("--fail-step", type=int, default=int(_env("fail_step", "5")))
    ap.add_argument("--timeout", type=float, default=float(_env("timeout", "20")),
                    help="process-group timeout in seconds")
    ap.add_argument("--hang-seconds", type=float, default=float(_env("hang_seconds", "600")))
    ap.add_argument("--step-sleep", type=float, default=float(_env("step_sleep", "0.2")))
    ap.add_argument("--fail-attempts", type=int, default=int(_env("fail_attempts", "0")))
    ap.add_argument("--fr-dump", action="store_true", default=_env("fr_dump", "0") == "1")
    return ap.parse_args(argv)


def dump_flight_recorder(rank: int) -> None:
    """This rank's Flight Recorder, written where PyTorch's own writer would (<prefix><rank>)."""
    from torch._C._distributed_c10d import _dump_fr_trace

    target = f"{os.environ.get('TORCH_FR_DUMP_TEMP_FILE', '/tmp/nccl_trace_rank_')}{rank}"
    Path(target).write_bytes(_dump_fr_trace(True, True, False))
    log.info("Finished writing Flight Recorder debug info to %s", target)


@record
def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    host = socket.gethostname().split(".")[0]
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s %(levelname)s [{host} rank {rank}/{world} local {local_rank}] %(message)s",
        stream=sys.stdout,
    )
    torch.set_num_threads(1)
    torch.manual_seed(1234 + rank)

    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    failing_attempt = args.fail_attempts == 0 or attempt < args.fail_attempts
    if args.mode == "raise" and args.fail_step == 0 and rank == args.fail_rank and failing_attempt:
        # before the process group exists, as a start-up error (a config or data file) would
        log.error("injecting failure: raising RuntimeError before init_process_group (attempt %d)", attempt)
        raise RuntimeError(f"lab-injected start-up failure on rank {rank} in attempt {attempt}")
    log.info("init_process_group backend=gloo master=%s:%s timeout=%ss mode=%s",
             os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT"), args.timeout, args.mode)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    log.info("process group ready: rank %d of %d", dist.get_rank(), dist.get_world_size())
    if args.fr_dump:
        def on_sigterm(signum: int, frame: object) -> None:
            dump_flight_recorder(rank)
            sys.exit(128 + signum)

        signal.signal(signal.SIGTERM, on_sigterm)
        try:
            train(args, rank, world)
        except Exception:
            dump_flight_recorder(rank)
            raise
    else:
        train(args, rank, world)
    dist.barrier()
    log.info("training done after %d steps", args.steps)
    dist.destroy_process_group()


def train(args: argparse.Namespace, rank: int, world: int) -> None:
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    failing_attempt = args.fail_attempts == 0 or attempt < args.fail_attempts

    model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(256, 32)
    y = x.sum(dim=1, keepdim=True) * 0.1

    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        if rank == args.fail_rank and step == args.fail_step and failing_attempt:
            if args.mode == "raise":
                log.error("injecting failure: raising RuntimeError at step %d", step)
                raise RuntimeError(f"lab-injected failure on rank {rank} at step {step}")
            if args.mode == "sigkill":
                log.error("injecting failure: SIGKILL to self (pid %d) at step %d", os.getpid(), step)
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            if args.mode == "segfault":
                log.error("injecting failure: reading address 0 (pid %d) at step %d", os.getpid(), step)
                sys.stdout.flush()
                ctypes.string_at(0)  # a real SIGSEGV, as from a native extension's bug
            if args.mode == "hang":
                log.warning("injecting hang: sleeping %.0fs before the all_reduce of step %d",
                            args.hang_seconds, step)
                sys.stdout.flush()
                time.sleep(args.hang_seconds)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()  # DDP all_reduces the gradients here
        opt.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        mean_loss /= world
        if args.step_sleep:
            time.sleep(args.step_sleep)
        log.info("step %d/%d loss %.6f step_time %.3fs", step, args.steps, mean_loss.item(),
                 time.perf_counter() - t0)


if __name__ == "__main__":
    main()
