"""Regression tests for the line patterns the failure-taxonomy detectors rely on.

Every line is a real one quoted in ``shared/formats.md`` or ``docs/log-sources.md`` (source named next
to it), or the exact format string of the source filled in where the docs found no real example
(marked "src"). Each must become the expected event with the expected fields and identity.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import polars as pl
import pytest

from logscope.parsers.lines import parse_chunk

CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    # ---- CUDA OOM, every generation (log-sources.md section 1)
    ("oom-2019", "RuntimeError: CUDA out of memory. Tried to allocate 1024.00 KiB (GPU 0; 11.17 GiB total "
     "capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)",
     "cuda_oom", {"error_type": "RuntimeError", "value": "1024.00 KiB", "cuda_dev": 0}),
    ("oom-2.1-typo", "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a "
     "total capacty of 14.75 GiB of which 235.06 MiB is free. Process 20398 has 14.52 GiB memory in use.",
     "cuda_oom", {"error_type": "torch.cuda.OutOfMemoryError", "value": "496.00 MiB", "cuda_dev": 0}),
    ("oom-2.5", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 164.00 MiB. GPU 0 has a total "
     "capacity of 15.61 GiB of which 82.88 MiB is free.",
     "cuda_oom", {"error_type": "torch.OutOfMemoryError", "value": "164.00 MiB", "cuda_dev": 0}),
    ("oom-rank-prefixed", "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 3 "
     "has a total capacity of 79.10 GiB of which 1.12 GiB is free.",
     "cuda_oom", {"value": "2.50 GiB", "cuda_dev": 3, "_rank": 3}),
    ("nccl-oom", "ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'",
     "nccl_cuda_failure", {"message": "out of memory", "_host": "ng30903", "_pid": 3063028}),
    ("nccl-last-error", "[rank7]: Cuda failure 1 'invalid argument'",
     "nccl_cuda_failure", {"message": "invalid argument", "_rank": 7}),
    # ---- host OOM (log-sources.md 4.4, formats.md 5)
    ("slurm-oom-old", "slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your "
     "processes may have been killed by the cgroup out-of-memory handler.",
     "host_oom", {"count": 1, "job_id": "3495064", "step_id": "0"}),
    ("slurm-oom-new", "slurmstepd: error: Detected 1 oom_kill event in StepId=6959634.0. Some of the step tasks "
     "have been OOM Killed.", "host_oom", {"count": 1, "job_id": "6959634"}),
    ("srun-oom", "srun: error: holy8a24101: task 0: Out Of Memory",
     "host_oom", {"tasks": "0", "_host": "holy8a24101"}),
    ("jobacct", "slurmstepd: error: StepId=7.batch exceeded memory limit (734003200 > 52428800), being killed",
     "host_oom", {"job_id": "7", "step_id": "batch", "value": "734003200 > 52428800"}),
    ("kernel-oom", "Out of memory: Killed process 4321 (python) total-vm:1234kB, anon-rss:99kB",
     "host_oom", {"target_pid": 4321, "value": "python"}),
    # ---- GPU / driver (log-sources.md section 3)
    ("xid63", "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to "
     "activate.", "xid", {"xid": 63, "bus_id": "PCI:0000:10:1c"}),
    ("xid13-dmesg", "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, "
     "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter",
     "xid", {"xid": 13, "_time": datetime(2024, 8, 30, 11, 43, 9)}),
    ("ecc-cuda", "RuntimeError: CUDA error: uncorrectable ECC error encountered",
     "ecc_error", {"message": "uncorrectable ECC error encountered"}),
    ("slurm-ume", "slurmstepd: error: *** JOB 12 ON node3 UNCORRECTABLE MEMORY ERROR AT 2024-04-20T09:09:37 ***",
     "ecc_error", {"message": "UNCORRECTABLE MEMORY ERROR", "_host": "node3"}),
    ("illegal-access", "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
     "cuda_error", {"error_type": "torch.AcceleratorError", "message": "an illegal memory access was encountered"}),
    ("unknown-error-watchdog", "[default3]:  what():  CUDA error: unknown error",
     "cuda_error", {"message": "unknown error", "_local_rank": 3}),
    ("node-failure", "srun: error: Node failure on jean-zay-iam37", "node_failure", {"_host": "jean-zay-iam37"}),
    # ---- NCCL network (log-sources.md 2.4-2.7, formats.md 1)
    ("ib-old", "H100-2:19989:20082 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
     "fe80::966d:ae03:8b:df78%ib0<53249> with error 4, opcode 32564, len 32564, vendor err 81 (Send)",
     "nccl_net_error", {"value": "4", "peer": "fe80::966d:ae03:8b:df78%ib0", "_host": "H100-2"}),
    ("ib-middle", "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
     "10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
     "fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f",
     "nccl_net_error", {"reason": "12", "peer": "10.216.210.236", "_host": "kp-ddp-worker-0"}),
    ("ib-ibp-plugin", "NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=0 len=0 vendor err "
     "129 (Send)", "nccl_net_error", {"reason": "12", "peer": "7.6.13.83"}),
    ("socket-reset", "socketProgressOpt: Call to recv from 172.31.8.153<33759> failed : Connection reset by peer",
     "nccl_socket_error", {"peer": "172.31.8.153", "message": "Connection reset by peer"}),
    ("socket-closed", "host:22337:22400 [6] misc/socket.cc:521 NCCL WARN Net : Connection closed by remote peer "
     "10.104.148.191<37877>", "nccl_socket_error", {"peer": "10.104.148.191", "_host": "host"}),
    ("bootstrap-old", "[0] node0:13571:13571 [0] NCCL INFO Bootstrap : Using enp10s0:10.10.7.107<0>",
     "nccl_net_device", {"key": "Bootstrap", "value": "enp10s0:10.10.7.107<0>", "_host": "node0"}),
    ("bootstrap-new", "lccn19:2471271:2471271 [4] NCCL INFO Bootstrap: Using bond0:192.168.11.19<0>",
     "nccl_net_device", {"key": "Bootstrap", "_host": "lccn19"}),
    ("version-mismatch-src", "n1:1:1 [0] init.cc:1 NCCL WARN Mismatched NCCL version detected : rank 3 version 22705 "
     "rank 0 version 21805", "nccl_version_mismatch", {"comm_rank": 3, "version": "22705", "value": "21805"}),
    ("duplicate-gpu", "Duplicate GPU detected : rank 2 and rank 10 both on CUDA device 50000",
     "nccl_duplicate_gpu", {"comm_rank": 2, "value": "10", "bus_id": "50000"}),
    # ---- store / rendezvous (log-sources.md 5.5)
    ("client-timeout", "[E521 15:43:02.707733876 socket.cpp:1023] [c10d] The client socket has timed out after "
     "600000ms while trying to connect to (172.18.21.4, 37907).",
     "store_error", {"peer": "172.18.21.4", "master_port": 37907}),
    ("client-failed-v6", "trainer/0 [1]:[W socket.cpp:558] [c10d] The client socket has failed to connect to "
     "[::ffff:0.0.0.5]:40323 (errno: 110 - Connection timed out).",
     "store_error", {"peer": "::ffff:0.0.0.5", "master_port": 40323}),
    ("client-any-address", "RuntimeError: The client socket has failed to connect to any network address of "
     "(localhost, 29400). The client socket cannot be initialized to connect to localhost:29400 (errno: 1 - "
     "Operation not permitted).", "store_error", {"peer": "localhost", "master_port": 29400}),
    ("tcp-client", "[E521 15:43:02.707888867 TCPStore.cpp:318] [c10d] TCP client failed to connect/validate to host "
     "172.18.21.4:37907 - timed out (try=1, timeout=600000ms)", "store_error",
     {"peer": "172.18.21.4", "master_port": 37907}),
    ("rdzv-timeout-bare", "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError", "store_error",
     {"error_type": "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"}),
    # ---- SLURM cancellations and requeue (log-sources.md 4.3, formats.md 5)
    ("time-limit", "slurmstepd: error: *** STEP 494583.0 ON host1 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME "
     "LIMIT ***", "cancelled", {"reason": "TIME LIMIT", "key": "STEP", "_time": datetime(2024, 4, 20, 9, 9, 37)}),
    ("node-failure-cancel", "slurmstepd: error: *** STEP 1943824.0 ON jean-zay-iam17 CANCELLED AT "
     "2023-03-06T03:17:51 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***", "cancelled",
     {"reason": "NODE FAILURE", "_host": "jean-zay-iam17"}),
    ("scancel", "slurmstepd: error: *** JOB 25428400 ON node022 CANCELLED AT 2023-05-30T19:46:40 ***",
     "cancelled", {"reason": None, "key": "JOB", "job_id": "25428400"}),
    ("requeue-src", "slurmstepd: error: *** JOB 8401 ON node02 CANCELLED AT 2026-11-04T23:00:09 DUE TO JOB "
     "REQUEUE ***", "cancelled", {"reason": "JOB REQUEUE"}),
    ("lightning-requeue", "requeing job 1234...", "requeue", {"job_id": "1234"}),
    ("scontrol-requeue", "+ scontrol requeue 5517045", "requeue", {"job_id": "5517045"}),
    ("slurm-nnodes", "+ export SLURM_NNODES=4", "launch_command", {"key": "SLURM_NNODES", "value": "4"}),
]


def parse_one(line: str) -> dict[str, Any]:
    frame = pl.DataFrame({"line": [1], "raw": [line]}, schema={"line": pl.Int64, "raw": pl.String})
    events = parse_chunk(frame, 2024, None).events
    assert events.height == 1, f"expected one event from {line!r}, got {events.height}"
    return events.to_dicts()[0]


@pytest.mark.parametrize(("line", "event", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_line_becomes_event(line: str, event: str, expected: dict[str, Any]) -> None:
    row = parse_one(line)
    assert row["event"] == event
    for key, value in expected.items():
        got = row[key[1:]] if key.startswith("_") else row["fields"][key]
        assert got == value, (key, got)


@pytest.mark.parametrize("line", [
    "gpu-healthcheck: 8 GPUs OK, Xid errors since boot: 0",
    "            DRAM Uncorrectable            : 0",
    "[I1105 09:40:00.000000000 socket.cpp:787] [c10d] No socket on (node01, 29500) is listening yet, will retry.",
    "SLURM_JOB_REQUEUE=0",
    "Loading checkpoint bigscience/bloom-560m",
])
def test_lookalike_lines_are_not_failures(line: str) -> None:
    frame = pl.DataFrame({"line": [1], "raw": [line]}, schema={"line": pl.Int64, "raw": pl.String})
    events = parse_chunk(frame, 2024, None).events
    assert events.filter(pl.col("severity").is_in(["error", "critical"])).height == 0, events.to_dicts()
