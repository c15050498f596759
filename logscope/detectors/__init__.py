"""The detector registry: every detector logscope runs, in one explicit table.

Codes are stable and grouped by family (ruff/pylint style):

======  ==========================================================
LS1xx   hangs, slowdowns and collective desynchronisation
LS2xx   launch and rank-identity mistakes
LS3xx   crashes and the cascades they cause
LS4xx   network
LS5xx   memory
LS6xx   GPU and node hardware
LS7xx   scheduler (time limit, preemption, cancellation)
LS8xx   configuration and version skew between nodes
LS9xx   messages of the catalogue (logscope/knowledge) that no specialised detector reads
======  ==========================================================

To add a detector: write ``detectors/<name>.py`` (module docstring with the headings in
``base.DOC_HEADINGS``), add its class here, and add golden cases under ``tests/goldens/``.
A test fails if a module in this package is not registered.
"""

from __future__ import annotations

from logscope.detectors.base import Detector, JobView
from logscope.detectors.cancelled import Cancelled
from logscope.detectors.collective_hang import CollectiveHang
from logscope.detectors.collective_mismatch import CollectiveMismatch
from logscope.detectors.cuda_oom import CudaOom
from logscope.detectors.duplicate_gpu import DuplicateGpu
from logscope.detectors.duplicate_rank import DuplicateRank
from logscope.detectors.ecc_error import EccError
from logscope.detectors.exit_cascade import ExitCascade
from logscope.detectors.fail_slow import FailSlow
from logscope.detectors.failure_recorded import FailureRecorded
from logscope.detectors.fr_arrival_lag import FrArrivalLag
from logscope.detectors.fr_collective_mismatch import FrCollectiveMismatch
from logscope.detectors.fr_lagging_rank import FrLaggingRank
from logscope.detectors.gpu_fault import GpuFault
from logscope.detectors.gpu_xid import GpuXid
from logscope.detectors.host_oom import HostOom
from logscope.detectors.ib_error import IbError
from logscope.detectors.known_message import KnownMessage
from logscope.detectors.master_addr_mismatch import MasterAddrMismatch
from logscope.detectors.nccl_bootstrap_error import NcclBootstrapError
from logscope.detectors.net_plugin_skew import NetPluginSkew
from logscope.detectors.nnodes_mismatch import NnodesMismatch
from logscope.detectors.node_fail_recorded import NodeFailRecorded
from logscope.detectors.node_failure import NodeFailure
from logscope.detectors.node_rank_collision import NodeRankCollision
from logscope.detectors.oom_recorded import OomRecorded
from logscope.detectors.preemption import Preemption
from logscope.detectors.progress_stall import ProgressStall
from logscope.detectors.rank_behind import RankBehind
from logscope.detectors.rendezvous_port_in_use import RendezvousPortInUse
from logscope.detectors.rendezvous_unreachable import RendezvousUnreachable
from logscope.detectors.requeue import Requeue
from logscope.detectors.scheduler_end_recorded import SchedulerEndRecorded
from logscope.detectors.socket_error import SocketError
from logscope.detectors.split_world import SplitWorld
from logscope.detectors.time_limit import TimeLimit
from logscope.detectors.traceback_cut_short import TracebackCutShort
from logscope.detectors.transport_fallback import TransportFallback
from logscope.detectors.version_skew import VersionSkew
from logscope.detectors.worker_restart import WorkerRestart

REGISTRY: tuple[type[Detector], ...] = (
    CollectiveHang,
    CollectiveMismatch,
    ProgressStall,
    RankBehind,
    FailSlow,
    FrLaggingRank,
    FrCollectiveMismatch,
    FrArrivalLag,
    NodeRankCollision,
    DuplicateRank,
    SplitWorld,
    MasterAddrMismatch,
    RendezvousPortInUse,
    DuplicateGpu,
    NnodesMismatch,
    RendezvousUnreachable,
    NcclBootstrapError,
    IbError,
    SocketError,
    CudaOom,
    HostOom,
    GpuXid,
    EccError,
    GpuFault,
    NodeFailure,
    TimeLimit,
    Preemption,
    Cancelled,
    Requeue,
    TransportFallback,
    VersionSkew,
    NetPluginSkew,
    ExitCascade,
    FailureRecorded,
    OomRecorded,
    NodeFailRecorded,
    SchedulerEndRecorded,
    TracebackCutShort,
    KnownMessage,
    WorkerRestart,
)


def by_code(code: str) -> type[Detector] | None:
    """The detector class with this code or name (case-insensitive), or None."""
    wanted = code.strip().lower()
    for detector in REGISTRY:
        if detector.code.lower() == wanted or detector.name == wanted:
            return detector
    return None


__all__ = ["REGISTRY", "Detector", "JobView", "by_code"]
