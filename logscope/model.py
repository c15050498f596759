"""The typed data model shared by parsers, detectors and reports.

Two shapes live here:

* the **timeline**, a polars DataFrame with one row per recognised event and the columns of
  :data:`TIMELINE_SCHEMA` (the event vocabulary is :class:`Event`, the per-event payload the
  struct column ``fields`` described by :data:`FIELD_SCHEMA`);
* the **findings** a detector returns (:class:`Finding`, with :class:`Evidence` lines), and the
  :class:`Verdict` chosen from them.

Nothing in this module reads files or prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from functools import cache

import polars as pl


class Category(str, Enum):
    """What kind of failure a finding (or the whole job) belongs to; the JSON contract's values."""

    HEALTHY = "healthy"
    HANG = "hang"
    CRASH = "crash"
    OOM = "oom"
    HARDWARE = "hardware"
    NETWORK = "network"
    LAUNCH = "launch"
    SCHEDULER = "scheduler"
    UNKNOWN = "unknown"
    # No failure in the logs, and no evidence of a clean end either (a job still running, an
    # excerpt cut short, a silent stop): neither healthy nor failed.
    INCOMPLETE = "incomplete"


class Severity(str, Enum):
    """How bad a finding or an event is. Ordered: ``info < warning < error < critical``."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _SEVERITY_ORDER[self]


_SEVERITY_ORDER = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2, Severity.CRITICAL: 3}


class Role(str, Enum):
    """Where a finding sits in the story of the job.

    ``root``: a candidate for what went wrong first. ``consequence``: something that happened
    because of a root (killed ranks, timeouts after a crash). ``context``: worth knowing, not a
    failure by itself (a config difference, missing debug output).
    """

    ROOT = "root"
    CONSEQUENCE = "consequence"
    CONTEXT = "context"


class Event(str, Enum):
    """The event vocabulary of the timeline's ``event`` column.

    Each member's value is what appears in the column; the parser that emits it is noted.
    """

    # NCCL (NCCL_DEBUG=INFO/WARN)
    NCCL_VERSION = "nccl_version"  # "NCCL version 2.18.1+cuda12.1"
    NCCL_INIT_START = "nccl_init_start"
    NCCL_INIT = "nccl_init"  # "... rank R nranks N cudaDev D busId B ... - Init COMPLETE"
    NCCL_COMM_INFO = "nccl_comm_info"  # "comm 0x.. rank R nRanks N nNodes M localRanks L ..."
    NCCL_COLL = "nccl_coll"  # COLL lines with hex opCount
    NCCL_NETWORK = "nccl_network"  # "Using network IB|Socket"
    NCCL_NET_DEVICE = "nccl_net_device"  # "NET/IB : Using [0]mlx5_0:1/IB ..." / "NET/IB : No device found."
    NCCL_PLUGIN = "nccl_plugin"  # "NET/Plugin : ..."
    NCCL_ENV = "nccl_env"  # "NCCL_IB_DISABLE set by environment to 0."
    NCCL_CHANNEL = "nccl_channel"  # "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"
    NCCL_DRIVER = "nccl_driver"  # "cudaDriverVersion 12020"
    NCCL_ABORT = "nccl_abort"  # "... - Abort COMPLETE" / "Destroy COMPLETE"
    NCCL_WARN = "nccl_warn"  # any other "NCCL WARN"
    NCCL_NET_ERROR = "nccl_net_error"  # IB completion errors, async fatal events
    NCCL_SOCKET_ERROR = "nccl_socket_error"  # "Connection closed by remote peer", "reset by peer"
    NCCL_CUDA_FAILURE = "nccl_cuda_failure"  # "Cuda failure 'out of memory'"
    NCCL_DUPLICATE_GPU = "nccl_duplicate_gpu"  # "Duplicate GPU detected : rank 2 and rank 10 ..."
    NCCL_VERSION_MISMATCH = "nccl_version_mismatch"
    NCCL_RAS = "nccl_ras"  # RAS "N ranks have launched up to operation X"
    # PyTorch c10d
    WATCHDOG_TIMEOUT = "watchdog_timeout"  # "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=...)"
    WATCHDOG_STATUS = "watchdog_status"  # "... last enqueued NCCL work: A, last completed NCCL work: B"
    DESYNC_REPORT = "desync_report"  # TORCH_NCCL_DESYNC_DEBUG lines naming lagging ranks
    TEARDOWN = "teardown"  # "To avoid data inconsistency, we are taking the entire process down."
    DIST_ERROR = "dist_error"  # DistBackendError / NCCL error in: ... / gloo errors
    STORE_ERROR = "store_error"  # TCPStore / rendezvous connection errors
    PORT_IN_USE = "port_in_use"  # "errno: 98 - Address already in use"
    # torchrun / torch.distributed.elastic
    LAUNCH_CONFIG = "launch_config"  # "Starting elastic_operator with launch configs:" block fields
    RENDEZVOUS = "rendezvous"  # rendezvous result (group_rank, world sizes, master addr)
    WORKER_FAILED = "worker_failed"  # "failed (exitcode: N) local_rank: L (pid: P) of binary"
    CLOSING_SIGNAL = "closing_signal"  # "Sending process N closing signal SIGTERM"
    AGENT_SIGNAL = "agent_signal"  # "Received SIGTERM death signal" / "Main process received SIGTERM"
    CHILD_FAILURE = "child_failure"  # one entry of a ChildFailedError block (time, host, rank, exitcode)
    AGENT_FINISHED = "agent_finished"  # "worker group successfully finished" / "(WorkerState.SUCCEEDED)"
    WORKER_RESTART = "worker_restart"  # "Worker group FAILED. 1/3 attempts left; will restart worker group"
    ERROR_FILE = "error_file"  # torchrun error.json
    # Python / C++ / CUDA
    EXCEPTION = "exception"  # the final "SomeError: message" line of a traceback
    TRACEBACK = "traceback"  # "Traceback (most recent call last):"
    CPP_EXCEPTION = "cpp_exception"  # "terminate called after throwing an instance of 'X'" (+ what())
    CUDA_ERROR = "cuda_error"  # "CUDA error: unknown error" and friends
    CUDA_OOM = "cuda_oom"  # "CUDA out of memory. Tried to allocate ..."
    FATAL_SIGNAL = "fatal_signal"  # "Fatal Python error: Segmentation fault", "Signal 11 (SIGSEGV)"
    # GPU / kernel
    XID = "xid"  # "NVRM: Xid (PCI:...): 79, ..."
    ECC_ERROR = "ecc_error"  # uncorrectable ECC
    GPU_LOST = "gpu_lost"  # "fallen off the bus"
    # SLURM
    SRUN_TASK_EXIT = "srun_task_exit"  # "srun: error: HOST: tasks 0-3: Exited with exit code 1"
    NODE_FAILURE = "node_failure"  # "srun: error: Node failure on HOST"
    STEP_ABORTED = "step_aborted"  # "srun: Job step aborted: Waiting up to N seconds ..."
    CANCELLED = "cancelled"  # "*** STEP|JOB id ON host CANCELLED AT time [DUE TO reason] ***"
    HOST_OOM = "host_oom"  # "Detected N oom-kill event(s)" / "oom_kill events"
    SRUN_ERROR = "srun_error"  # other "srun: error:" lines
    REQUEUE = "requeue"
    LAUNCH_COMMAND = "launch_command"  # "+ srun ... torchrun ... --node_rank 0" (bash set -x trace)
    # SLURM's accounting record (sacct / scontrol show job, logscope.accounting): one row per job or
    # step and node; fields.key the state, fields.step_id the step, exit_code/signal its ExitCode
    ACCOUNTING = "accounting"
    # PyTorch's Flight Recorder (logscope.flight_recorder), source "fr": a dump read (file the dump,
    # line 0), one of its process groups with its counters (line 0), one entry of its ring buffer
    # (line: the entry's place in the dump)
    FR_DUMP = "fr_dump"
    FR_GROUP = "fr_group"
    FR_ENTRY = "fr_entry"
    # a log line saying where Flight Recorder dumps are written (c10d's "dumping nccl trace to
    # PATH", the writer's "Finished writing ... debug info to PATH", TORCH_FR_DUMP_TEMP_FILE=PREFIX
    # in an environment): ``fields.value`` the path or the prefix (logscope.flight_recorder.finding)
    FR_DUMP_NAMED = "fr_dump_named"
    # a message from the catalogue (logscope/knowledge/messages.toml) that no specific event
    # covers; ``fields.key`` is its catalogue id, which gives its category and who it blames
    KNOWN_MESSAGE = "known_message"
    # a line a person reads as a failure, with no more specific meaning: at least "unknown"
    FAILURE_LINE = "failure_line"
    # training progress and status
    CLEAN_END = "clean_end"  # proof the run finished: "run_stop ... success", "***** train metrics *****", ...
    PROGRESS = "progress"  # iteration/step lines
    HEARTBEAT = "heartbeat"  # external status lines ("PULSE: job is running for ...")
    DUPLICATE_RANK_BANNER = "duplicate_rank_banner"  # "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8"


# Events whose line is about the worker it names ("Sending process N closing signal", "failed
# (exitcode: 1) local_rank: 3 (pid: N)"), not about the agent that printed it: their process is
# the pid the line names.
SUBJECT_IS_TARGET: frozenset[Event] = frozenset({Event.WORKER_FAILED, Event.CLOSING_SIGNAL})

# The timeline's ``fields`` struct: every event's payload, typed. A field is null where an event
# does not carry it. Parsers fill these from named regex groups of the same name.
FIELD_SCHEMA: dict[str, pl.DataType] = {
    "comm": pl.String(),  # NCCL communicator pointer (per process), e.g. 0x55d0c3a0
    "comm_id": pl.String(),  # NCCL commId (same on every rank of one communicator)
    "comm_rank": pl.Int64(),  # rank inside the communicator
    "nranks": pl.Int64(),
    "cuda_dev": pl.Int64(),
    "bus_id": pl.String(),
    "op": pl.String(),  # collective (AllReduce, ALLREDUCE, ...)
    "op_count": pl.Int64(),  # NCCL opCount, decoded from hex
    "seq": pl.Int64(),  # c10d SeqNum / work sequence id
    "last_enqueued": pl.Int64(),
    "last_completed": pl.Int64(),
    "timeout_ms": pl.Int64(),
    "pg": pl.String(),  # process group id / name from c10d's log prefix
    "exit_code": pl.Int64(),
    "signal": pl.String(),
    "target_pid": pl.Int64(),  # the pid an event is about (closing signal, failed worker)
    "step": pl.Int64(),
    "step_total": pl.Int64(),
    "iteration_time_s": pl.Float64(),
    "loss": pl.Float64(),
    "peer": pl.String(),  # remote host/ip an error names
    "version": pl.String(),
    "transport": pl.String(),
    "key": pl.String(),  # NCCL_* variable, launch config key
    "value": pl.String(),
    "error_type": pl.String(),  # exception class
    "message": pl.String(),
    "tasks": pl.String(),  # srun task list "0-3,5"
    "job_id": pl.String(),
    "step_id": pl.String(),
    "reason": pl.String(),  # "TIME LIMIT", "PREEMPTION", "NODE FAILURE", ...
    "event_time": pl.String(),  # a timestamp written inside the message (CANCELLED AT ..., time : ...)
    "group_rank": pl.Int64(),
    "group_world_size": pl.Int64(),
    "world_size": pl.Int64(),
    "node_rank": pl.Int64(),
    "nnodes": pl.String(),
    "nproc_per_node": pl.Int64(),
    "master_addr": pl.String(),
    "master_port": pl.Int64(),
    "rdzv_backend": pl.String(),
    "xid": pl.Int64(),
    "count": pl.Int64(),  # a number the message states (a frame's line number, ranks launched, oom-kill events)
    "message_id": pl.String(),  # the catalogue entry that recognised the line (logscope/knowledge/messages.toml)
    # Flight Recorder rows (logscope.flight_recorder.rows): a group's description (TP, default_pg),
    # a p2p operation's own sequence id, an entry's state (scheduled, started, completed) and
    # duration
    "pg_desc": pl.String(),
    "p2p_seq": pl.Int64(),
    "state": pl.String(),
    "duration_ms": pl.Float64(),
}

# One row per recognised event. ``text`` is the line after the launcher prefix was removed;
# the prefix itself is recorded in ``prefix``.
TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String(),  # path as given on the command line, relative where possible
    "line": pl.Int64(),  # 1-based physical line number in the (decompressed) file
    "node": pl.String(),  # SLURM node name (from the file name, or the host's node)
    "host": pl.String(),  # host the line names (NCCL prefix, hostname fields)
    "pid": pl.Int64(),
    "local_rank": pl.Int64(),
    "rank": pl.Int64(),  # global rank
    "task": pl.Int64(),  # srun task id from an `srun --label` prefix
    "time": pl.Datetime("us"),
    "time_inferred": pl.Boolean(),  # True when ``time`` came from the timed lines around it
    # For an inferred time: the time of the next timed line in the file, the latest the line can
    # have been written (null when no timed line follows). Equal to ``time`` for timed lines.
    # Failures are ordered by it: an untimed error is printed just before the timed teardown
    # lines that follow it, while the timed line above it can be hours old. Never before ``time``:
    # where the file's times go backwards around a line, ``time`` is the earlier of its two
    # neighbours and ``time_latest`` the later (ingest.file_events._timed).
    "time_latest": pl.Datetime("us"),
    "source": pl.String(),  # nccl | c10d | torchrun | slurm | python | cuda | kernel | app | sacct | scontrol | fr
    "event": pl.String(),  # an Event value
    "severity": pl.String(),  # a Severity value
    "fields": pl.Struct(FIELD_SCHEMA),
    "prefix": pl.String(),
    "text": pl.String(),
}


def empty_timeline() -> pl.DataFrame:
    """A timeline with no rows and the full schema."""
    return _empty_timeline_template().clear()


@cache
def _empty_timeline_template() -> pl.DataFrame:
    # Building a frame of this schema (the fields struct's 43 columns) costs ~1 ms; a copy of it
    # costs nothing.
    return pl.DataFrame(schema=TIMELINE_SCHEMA)


@dataclass(frozen=True)
class Evidence:
    """One log line that supports a finding: where it is and what it says."""

    file: str
    line: int
    text: str
    # The timeline's time model (TIMELINE_SCHEMA): the earliest and the latest the line can have
    # been written; equal for a line with its own timestamp.
    time: datetime | None = field(default=None, compare=False)
    time_latest: datetime | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "text": self.text,
            "time": self.time.isoformat() if self.time else None,
            "time_latest": self.time_latest.isoformat() if self.time_latest else None,
        }


@dataclass(frozen=True)
class Culprit:
    """Who a finding points at: the process (or node) where the trouble started."""

    host: str | None = None
    node: str | None = None
    rank: int | None = None
    local_rank: int | None = None
    time: datetime | None = None
    evidence: Evidence | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "host": self.host,
            "node": self.node,
            "rank": self.rank,
            "local_rank": self.local_rank,
            "time": self.time.isoformat() if self.time else None,
            "evidence": self.evidence.to_json() if self.evidence else None,
        }


@dataclass(frozen=True)
class Finding:
    """What one detector concluded. Detectors return these and never print."""

    code: str
    name: str
    category: Category
    severity: Severity
    title: str
    explanation: str
    advice: str
    role: Role = Role.ROOT
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    first_seen: datetime | None = None
    evidence: tuple[Evidence, ...] = ()
    culprit: Culprit | None = None
    # How sure the detector is that this is the job's root cause when it is the earliest one;
    # breaks ties between findings about the same moment (e.g. an OOM beats the generic crash).
    specificity: int = 50
    # file order of the first evidence, used when times are missing
    order_key: tuple[str, int] | None = field(default=None, compare=False)
    # When the first evidence line was written: (earliest, latest). Untimed lines lie between the
    # timed lines above and below them; the verdict compares these windows, not points.
    window: tuple[datetime | None, datetime | None] = field(default=(None, None), compare=False)
    # True when this finding may itself be a reaction to another failure (a timeout with no
    # identified culprit, a peer's connection closing): it yields to a non-reactive root whose
    # window overlaps its own.
    reactive: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "name": self.name,
            "category": self.category.value,
            "severity": self.severity.value,
            "role": self.role.value,
            "title": self.title,
            "ranks": list(self.ranks),
            "hosts": list(self.hosts),
            "first_seen": self.first_seen.isoformat() if self.first_seen else None,
            "evidence": [e.to_json() for e in self.evidence],
            "culprit": self.culprit.to_json() if self.culprit else None,
            "explanation": self.explanation,
            "advice": self.advice,
        }


@dataclass(frozen=True)
class Verdict:
    """The one-line answer: what happened, and where it started."""

    category: Category
    finding: str | None  # code of the root finding
    summary: str
    root_cause: Culprit | None

    def to_json(self) -> dict[str, object]:
        return {
            "category": self.category.value,
            "finding": self.finding,
            "summary": self.summary,
            "root_cause": self.root_cause.to_json() if self.root_cause else None,
        }
