#!/usr/bin/env python3
"""A tiny torch.distributed job (gloo, CPU) that writes Flight Recorder dumps: the worker of
tools/make_fr_fixtures.py, started by torchrun.

Every rank runs ``--steps`` steps of an all_reduce on the world and one on its pair's group
("TP_A" = ranks 0-1, "TP_B" = ranks 2-3). Scenarios (``--scenario``):

* ``stop-issuing``: rank ``--rank-at-fault`` stops before step ``--step`` (sleeps, as a rank stuck
  in data loading or a deadlock does); the others time out in the world's all_reduce;
* ``mismatch``: rank ``--rank-at-fault`` calls broadcast where the others call all_reduce at step
  ``--step``;
* ``straggler``: rank ``--rank-at-fault`` sleeps ``--delay`` seconds before every collective; the
  job finishes.

gloo does not dump on a timeout by itself: every rank dumps from its exception handler, and from a
SIGTERM handler (torchrun's teardown of the ranks still running), with
``torch._C._distributed_c10d._dump_fr_trace``, to ``$TORCH_FR_DUMP_TEMP_FILE<rank>``, as PyTorch's
own writer names them. The straggler job dumps at its end.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _dump_fr_trace

log = logging.getLogger("train")


def dump(rank: int) -> None:
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE", "/tmp/nccl_trace_rank_")
    data = _dump_fr_trace(True, True, False)
    Path(f"{prefix}{rank}").write_bytes(data)
    print(f"[rank{rank}] Finished writing Flight Recorder debug info to {prefix}{rank}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=["stop-issuing", "mismatch", "straggler"], required=True)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--step", type=int, default=3)
    ap.add_argument("--rank-at-fault", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=8.0)
    ap.add_argument("--delay", type=float, default=0.15)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(message)s", stream=sys.stdout)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    pairs = [dist.new_group([0, 1], group_desc="TP_A"), dist.new_group([2, 3], group_desc="TP_B")]
    mine = pairs[rank // 2]
    signal.signal(signal.SIGTERM, lambda *_: (dump(rank), sys.exit(143)))
    t = torch.ones(4, 8)
    try:
        for step in range(args.steps):
            faulty = rank == args.rank_at_fault
            if args.scenario == "stop-issuing" and faulty and step == args.step:
                print(f"[rank{rank}] step {step}: waiting for data", flush=True)
                time.sleep(600)
            if args.scenario == "straggler" and faulty:
                time.sleep(args.delay)
            if args.scenario == "mismatch" and faulty and step == args.step:
                dist.broadcast(t, src=0)
            else:
                dist.all_reduce(t)
            dist.all_reduce(t, group=mine)
            log.info("step %d/%d loss %.1f rank %d", step, args.steps, float(t[0, 0]), rank)
    except Exception as error:  # a collective timed out or failed: dump, as NCCL's watchdog would
        print(f"[rank{rank}] {type(error).__name__}: {error}", flush=True)
        dump(rank)
        raise
    dist.barrier()
    if args.scenario == "straggler":
        dump(rank)
    dist.destroy_process_group()
    print(f"rank {rank} finished {args.steps} steps of {world}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
