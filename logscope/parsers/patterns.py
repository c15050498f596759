"""Every line pattern logscope recognises, in one reviewable table.

Each :class:`LinePattern` names the event it produces, the literal ``trigger`` that must occur in
a line before its regex is tried, and a Rust-syntax regex (polars runs it) whose named groups
become fields. Group names are :data:`logscope.model.FIELD_SCHEMA` keys, or the identity groups
``host``, ``pid``, ``dev`` (CUDA device of an NCCL line), ``rank`` (global), ``pg_rank`` (rank in
the process group the line names), ``local_rank``. ``op_count_hex`` is decoded from hex into
``op_count``. A name ending in ``__2`` (``__3``...) is an alternative spelling of the same field.

Patterns are tried in table order and the first match wins, so specific forms come before
general ones (``CUDA out of memory`` before ``CUDA error``, the watchdog's "thread terminated"
teardown before the timeout it quotes). Sources are cited next to each group; the lines themselves
are in ``shared/formats.md`` and ``docs/log-sources.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from logscope.knowledge import catalogue_patterns
from logscope.model import Event, Severity

I, W, E, C = Severity.INFO, Severity.WARNING, Severity.ERROR, Severity.CRITICAL


@dataclass(frozen=True)
class LinePattern:
    """One recognisable line shape."""

    event: Event
    source: str
    severity: Severity
    trigger: str | tuple[str, ...]  # literal substring(s); the regex runs on lines holding one
    regex: str
    key: str | None = None  # a constant ``fields.key`` (the catalogue id of a catalogue message)

    @property
    def triggers(self) -> tuple[str, ...]:
        return (self.trigger,) if isinstance(self.trigger, str) else self.trigger


# An NCCL debug line: optional "[timestamp] ", then "host:pid:tid [cudaDev] [file.cc:NN ]NCCL ".
_NCCL = (
    # (found anywhere in a line: a quote, a backtick or a wrapper a paste left before the host is
    # not part of it)
    r"(?:\[\d{4}-\d{2}-\d{2}[^\]]*\] )?[`'\"]?(?P<host>[^\s:\[\]`'\"<>|()=,]+):(?P<pid>\d+):\d+ "
    r"(?:\[(?P<dev>\d+)\] )?(?:[\w./-]+:\d+ (?:\(\w+\) )?)?NCCL "
)
# NCCL's head alone, optional, for messages found anywhere in a line: captures host/pid/dev when present.
# (What follows it must follow it directly: after "(?:X)?.*?", the leftmost match starts at the line's
# start and never holds X.)
_NCCL_HEAD_OPT = r"(?:" + _NCCL[:-len("NCCL ")] + r")?"
# The same prefix, optional, in front of a WARN whose text is matched anywhere in the line (the
# WARN may also be quoted inside a Python exception): captures host/pid/dev when present.
_NCCL_WARN_OPT = r"(?:" + _NCCL + r"WARN .*?)?"
# c10d's log prefix: "[PG 1 Rank 11]", "[PG ID 0 PG GUID 0(default_pg) Rank 1]", "[PG 0 (default_pg) Rank 3]",
# "[Rank 0]".
_PG = r"\[(?:PG (?:ID )?(?P<pg>\S+) (?:PG GUID \S+ |\([^)\]]*\) )?)?Rank (?P<pg_rank>\d+)\]\s+"
_EXC_TYPE = r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure|Timeout)"
# torch>=2.1 puts its logging prefix on every line of a multi-line message (glog style since 2.4,
# "[time] logger: [LEVEL]" before); torch 1.x prints the continuation lines bare.
_LOGPFX = (r"(?:^|\s|\] ?)")
# The fields of torchrun's rendezvous result block (torch/distributed/elastic/agent/server/api.py).
_RENDEZVOUS_KEYS = ("restart_count", "master_addr", "master_port", "group_rank", "group_world_size", "local_ranks",
                    "role_ranks", "global_ranks", "role_world_sizes", "global_world_sizes")
# c10d's watchdog timeout report, and the head of the watchdog's last word (ProcessGroupNCCL.cpp).
# The work it names may be cut off by a paste's line break after "timeout: ": the head alone is the
# report.
_WORK_TIMEOUT = (r"Watchdog caught collective operation timeout(?:: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)"
                 r"(?:.*?Timeout\(ms\)=(?P<timeout_ms>\d+)\))?)?")
_WATCHDOG_DIED = r"(?:" + _PG + r")?(?:NCCL|Process group) watchdog thread terminated with exception: "
_NCCL_EXC = r"nccl(?:InvalidUsage|InvalidArgument|InternalError|SystemError|UnhandledCudaError|RemoteError|InProgress)"
# A field that runs to the end of the line, its trailing blanks left out: followed by r"\s*$", it
# takes the same text as a lazy ".*?" would (the line up to its last non-blank character), which
# polars' regex engine ran 2-4x slower on long lines (a C++ "what():" line 7.7 against 2.1 us).
_TO_END = r"(?:.*\S)?"



def _from_catalogue(*, override: bool) -> list[LinePattern]:
    """The messages recognised from the catalogue (logscope/knowledge/messages.toml), in its order:
    those marked ``override`` before NCCL's WARN lines and everything after (they refine a specific
    form below), the others after every specific form and before Python's generic forms and the
    catch-alls."""
    return [LinePattern(event, source, severity, trigger, regex, key)
            for event, source, severity, trigger, regex, key in catalogue_patterns(override=override)]


PATTERNS: tuple[LinePattern, ...] = (
    # ---------------------------------------------------------------- NCCL INFO (logging.rst)
    LinePattern(Event.NCCL_COLL, "nccl", I, ": opCount ",
                _NCCL + r"INFO (?P<op>[A-Za-z]+): opCount (?P<op_count_hex>[0-9a-fA-F]+) .*?"
                r"comm (?P<comm>0x[0-9a-fA-F]+|\(nil\))(?: \[nranks=(?P<nranks>\d+)\])?"),
    LinePattern(Event.NCCL_INIT, "nccl", I, "Init COMPLETE",
                _NCCL + r"INFO (?:\[Rank \d+\] )?(?:\w+ )?comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<comm_rank>\d+) "
                r"nranks (?P<nranks>\d+) cudaDev (?P<cuda_dev>\d+)(?: nvmlDev \d+)? busId (?P<bus_id>[0-9a-fA-Fx]+)"
                r"(?:.*?commId (?P<comm_id>0x[0-9a-fA-F]+))?.* - Init COMPLETE"),
    LinePattern(Event.NCCL_INIT_START, "nccl", I, "Init START",
                _NCCL + r"INFO (?:\[Rank \d+\] )?(?:\w+ )?comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<comm_rank>\d+) "
                r"nranks (?P<nranks>\d+) cudaDev (?P<cuda_dev>\d+)(?: nvmlDev \d+)? busId (?P<bus_id>[0-9a-fA-Fx]+)"
                r"(?:.*?commId (?P<comm_id>0x[0-9a-fA-F]+))?.* - Init START"),
    LinePattern(Event.NCCL_ABORT, "nccl", W, " COMPLETE",
                _NCCL + r"INFO comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<comm_rank>\d+) nranks (?P<nranks>\d+) "
                r"cudaDev (?P<cuda_dev>\d+) busId (?P<bus_id>[0-9a-fA-Fx]+) - (?P<op>Abort|Destroy) COMPLETE"),
    LinePattern(Event.NCCL_COMM_INFO, "nccl", I, " nNodes ",
                _NCCL + r"INFO comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<comm_rank>\d+) nRanks (?P<nranks>\d+) "
                r"nNodes (?P<nnodes>\d+) localRanks \d+ localRank (?P<local_rank>\d+)"),
    LinePattern(Event.NCCL_NETWORK, "nccl", I, "Using network",
                _NCCL + r"INFO Using (?:network |non-device net plugin version \d+,? ?)(?P<transport>\S+)"),
    LinePattern(Event.NCCL_NET_DEVICE, "nccl", I, "NET/IB",
                _NCCL + r"INFO NET/IB ?: ?(?:Using (?P<value>.*?)(?: ?; OOB (?P<peer>\S+))?|(?P<message>No device found\.?.*))$"),
    LinePattern(Event.NCCL_NET_DEVICE, "nccl", I, "NET/Socket",
                _NCCL + r"INFO NET/Socket ?: ?Using (?P<value>.*)$"),
    LinePattern(Event.NCCL_NET_DEVICE, "nccl", I, "libibverbs",
                _NCCL + r"INFO (?P<message>Failed to open libibverbs.*)$"),
    # "Bootstrap : Using enp10s0:10.10.7.107<0>" (old) / "Bootstrap: Using bond0:192.168.11.19<0>" (2.26):
    # the interface and address a host bootstraps on; ties peer addresses in errors to hosts.
    LinePattern(Event.NCCL_NET_DEVICE, "nccl", I, "Bootstrap",
                _NCCL + r"INFO (?P<key>Bootstrap) ?: ?Using (?P<value>.*)$"),
    LinePattern(Event.NCCL_PLUGIN, "nccl", I, "NET/Plugin",
                _NCCL + r"INFO NET/Plugin ?: ?(?P<message>.*)$"),
    LinePattern(Event.NCCL_PLUGIN, "nccl", I, "plugin",
                _NCCL + r"INFO (?P<message>(?:Loaded|Successfully loaded) (?:net|coll|tuner|profiler)? ?plugin.*)$"),
    LinePattern(Event.NCCL_ENV, "nccl", I, "set by environment to",
                _NCCL + r"INFO (?P<key>[A-Z][A-Z0-9_]*) set by environment to (?P<value>.*?)\.?$"),
    LinePattern(Event.NCCL_CHANNEL, "nccl", I, " via ",
                _NCCL + r"INFO Channel (?P<key>\d+)(?:/\d+)? : (?P<comm_rank>\d+)\[[^\]]*\] -> (?P<value>\d+)\[[^\]]*\]"
                r"(?: \[(?:send|receive)\])? via (?P<transport>[\w/]+)"),
    LinePattern(Event.NCCL_DRIVER, "nccl", I, "cudaDriverVersion",
                _NCCL + r"INFO cudaDriverVersion (?P<version>\d+)"),
    # NCCL's own line, bare or after its head; never the ", NCCL version X" that ends PyTorch's NCCL
    # errors (c10d's NCCLUtils: what failed is said before it).
    LinePattern(Event.NCCL_VERSION, "nccl", I, "NCCL version",
                r"(?:" + _NCCL + r"INFO |^|[^,\s]|[^,]\s)NCCL version (?P<version>[\w.+-]+)\s*$"),
    LinePattern(Event.NCCL_RAS, "nccl", W, "ranks have launched up to operation",
                r"(?P<count>\d+) ranks? ha(?:ve|s) launched up to operation (?P<op_count>\d+)"),
    # ---------------------------------------------------------------- the message catalogue
    *_from_catalogue(override=True),
    # ---------------------------------------------------------------- NCCL WARN
    LinePattern(Event.NCCL_DUPLICATE_GPU, "nccl", C, "Duplicate GPU detected",
                _NCCL_WARN_OPT + r"Duplicate GPU detected : rank (?P<comm_rank>\d+) and rank (?P<value>\d+) both on "
                r"CUDA device (?P<bus_id>[0-9a-fA-Fx]+)"),
    # net_ib.cc (old): "with error 4, opcode 32564, len 32564, vendor err 81 (Send)"; plugins/middle:
    # "with status=12 opcode=0 len=0 vendor err 129 (Recv)"; p2p.cc (current): "NET/IB: ... with
    # status=IBV_WC_RETRY_EXC_ERR(12) opcode=... vendor_err=129 ... hca mlx5_0"; "NET/IBP:" (another plugin).
    LinePattern(Event.NCCL_NET_ERROR, "nccl", E, "Got completion from peer",
                _NCCL_WARN_OPT + r"NET/IB\w* ?: ?Got completion from peer (?P<peer>[^\s<,]+)(?:<\d+>)? with "
                r"(?:error (?P<value>\d+)|status=(?P<reason>[^\s(,]+))"),
    LinePattern(Event.NCCL_NET_ERROR, "nccl", E, "async fatal event",
                _NCCL_WARN_OPT + r"NET/IB\w* ?: ?(?P<peer>\S+?):\d+ async fatal event: (?P<reason>.*)$"),
    LinePattern(Event.NCCL_VERSION_MISMATCH, "nccl", E, "version mismatch with remote peer",
                _NCCL_WARN_OPT + r"NCCL version mismatch with remote peer (?P<peer>\S+) \(local: (?P<version>[^,]+), "
                r"remote (?P<value>[^)]+)\)"),
    # init.cc: "Mismatched NCCL version detected : rank %d version %d rank %d version %d" (peer, then self).
    LinePattern(Event.NCCL_VERSION_MISMATCH, "nccl", E, "Mismatched NCCL version",
                _NCCL_WARN_OPT + r"Mismatched NCCL version detected : rank (?P<comm_rank>\d+) version (?P<version>\d+) "
                r"rank \d+ version (?P<value>\d+)"),
    # socket.cc: "Call to recv from %s failed : %s"; "socketStartConnect: Connect to %s failed : %s".
    LinePattern(Event.NCCL_SOCKET_ERROR, "nccl", E, "failed : ",
                _NCCL_WARN_OPT + r"(?:Call to (?:recv|send) (?:from|to)|[Cc]onnect to) (?P<peer>[^\s<]+)(?:<\d+>)? "
                r"failed ?: (?P<message>.+?)\s*$"),
    LinePattern(Event.NCCL_SOCKET_ERROR, "nccl", E, "Connection closed by remote peer",
                _NCCL_WARN_OPT + r"(?P<message>Connection closed by remote peer) (?P<peer>\S+?)(?:<\d+>)?\s*$"),
    LinePattern(Event.NCCL_CUDA_FAILURE, "nccl", E, "Cuda failure",
                _NCCL + r"WARN .*?Cuda failure (?:\d+ )?'(?P<message>[^']+)'"),
    # The same text after "Last error:" in a PyTorch DistBackendError, without NCCL's prefix.
    LinePattern(Event.NCCL_CUDA_FAILURE, "nccl", E, "Cuda failure",
                r"\bCuda failure (?:\d+ )?'(?P<message>[^']+)'"),
    LinePattern(Event.NCCL_PLUGIN, "nccl", W, "NET plugin",
                _NCCL + r"WARN (?P<message>Failed to initialize any NET plugin.*)$"),
    # ---------------------------------------------------------------- c10d ProcessGroupNCCL
    # The watchdog's last word quotes why it stopped (ProcessGroupNCCL.cpp). A quoted collective
    # timeout is that rank's timeout report (torch 2.2+ prints no separate "Watchdog caught" line
    # before it); a quoted CUDA error is the GPU failing under the watchdog thread.
    LinePattern(Event.WATCHDOG_TIMEOUT, "c10d", E, "watchdog thread terminated",
                _WATCHDOG_DIED + r"(?:\[Rank \d+\] )?" + _WORK_TIMEOUT),
    LinePattern(Event.CUDA_ERROR, "cuda", E, "watchdog thread terminated",
                _WATCHDOG_DIED + r"(?:(?P<error_type>" + _EXC_TYPE + r"): )?CUDA error: (?P<message>" + _TO_END + r")\s*$"),
    LinePattern(Event.TEARDOWN, "c10d", E, "watchdog thread terminated", _WATCHDOG_DIED + r"(?P<message>.*)$"),
    LinePattern(Event.WATCHDOG_TIMEOUT, "c10d", E, "Watchdog caught collective operation timeout",
                r"(?:" + _PG + r")?" + _WORK_TIMEOUT),
    # gloo has no watchdog: a rank waiting for a peer that never comes raises this instead.
    LinePattern(Event.WATCHDOG_TIMEOUT, "gloo", E, "Timed out waiting",
                r"(?:(?P<error_type>" + _EXC_TYPE + r"): .*?)?Timed out waiting (?P<timeout_ms>\d+)ms for (?P<op>recv|send) "
                r"operation to complete"),
    LinePattern(Event.WATCHDOG_STATUS, "c10d", E, "last enqueued",
                _PG + r"(?:Exception \(either an error or timeout\) detected by watchdog at work|Timeout at NCCL work):"
                r" (?P<seq>\d+), last enqueued(?: NCCL work: (?P<last_enqueued>-?\d+), "
                r"last completed NCCL work: (?P<last_completed>-?\d+))?"),
    LinePattern(Event.WATCHDOG_STATUS, "c10d", E, "failure detected by watchdog",
                _PG + r"failure detected by watchdog at work sequence id: (?P<seq>\d+) PG status: "
                r"last enqueued work: (?P<last_enqueued>-?\d+), last completed work: (?P<last_completed>-?\d+)"),
    LinePattern(Event.TEARDOWN, "c10d", W, "taking the entire process down",
                r"(?:" + _PG + r")?(?P<message>To avoid data inconsistency, we are taking the entire process down)"),
    LinePattern(Event.DESYNC_REPORT, "c10d", E, "didn't join collective",
                r"\[(?P<rank>\d+)\] finished collective #(?P<seq>\d+), but didn't join collective #(?P<value>\d+)"),
    LinePattern(Event.DESYNC_REPORT, "c10d", E, "are the lagging ranks",
                r"ranks \[(?P<value>[\d, ]*)\] are the lagging ranks"),
    LinePattern(Event.DESYNC_REPORT, "c10d", E, "Timeout at collective:",
                r"\[(?P<rank>\d+)\] Timeout at collective: (?P<op>\w+), #(?P<seq>\d+)"),
    LinePattern(Event.DESYNC_REPORT, "c10d", E, "missing ranks:",
                r"\bmissing ranks: \{(?P<value>[\d, ]*)\}"),
    LinePattern(Event.PORT_IN_USE, "c10d", E, "ddress already in use",
                r"(?:bind to \[?(?P<peer>[^\]\s]*)\]?:(?P<master_port>\d+).*?)?(?P<message>(?:errno: 98 - )?[Aa]ddress already in use)"),
    LinePattern(Event.STORE_ERROR, "c10d", E, "store based barrier",
                r"Timed out initializing process group in store based barrier on rank:? (?P<rank>\d+), for key: "
                r"(?P<key>\S+) \(world_size=(?P<world_size>\d+), worker_count=(?P<count>\d+), "
                r"timeout=(?P<value>[^)]+)\)"),
    # socket.cpp: "has timed out after 600000ms while trying to connect to (172.18.21.4, 37907)",
    # "has failed to connect to any network address of (localhost, 29400)", "has failed to connect to
    # [::ffff:0.0.0.5]:40323 (errno: 110 ...)", "cannot be initialized to connect to localhost:29400".
    LinePattern(Event.STORE_ERROR, "c10d", E, "socket",
                r"(?P<message>The client socket has (?:timed out after \S+ while trying to connect to "
                r"\((?P<peer>[^,()]+), (?P<master_port>\d+)\)|failed to connect to (?:any network address of "
                r"\((?P<peer__2>[^,()]+), (?P<master_port__2>\d+)\)|\[(?P<peer__3>[^\]]+)\]:(?P<master_port__3>\d+)"
                r"|(?P<peer__4>[^\s:\[]+):(?P<master_port__4>\d+))).*"
                r"|The client socket cannot be initialized to connect to (?:\[(?P<peer__5>[^\]]+)\]|(?P<peer__6>[^\s:\[]+))"
                r":(?P<master_port__5>\d+).*"
                r"|The server socket has failed to listen.*)$"),
    # TCPStore.cpp: "TCP client failed to connect/validate to host 172.18.21.4:37907 - timed out (try=1, ...)".
    LinePattern(Event.STORE_ERROR, "c10d", E, "TCP client failed",
                r"TCP client failed to connect/validate to host (?P<peer>[^\s:]+):(?P<master_port>\d+) - (?P<message>.*)$"),
    LinePattern(Event.STORE_ERROR, "torchrun", E, "Rendezvous",
                r"(?P<error_type>(?:[\w.]+\.)?Rendezvous(?:Connection|Timeout|Closed|State)Error): ?(?P<message>.*)$"),
    # dynamic_rendezvous.py raises RendezvousTimeoutError/ClosedError with no message: a bare last line.
    LinePattern(Event.STORE_ERROR, "torchrun", E, "Rendezvous",
                r"\b(?P<error_type>(?:[\w.]+\.)?Rendezvous(?:Connection|Timeout|Closed|State)Error)\s*$"),
    LinePattern(Event.STORE_ERROR, "c10d", E, "DistStoreError",
                r"(?P<error_type>(?:[\w.]+\.)?DistStoreError): ?(?P<message>.*)$"),
    # ---------------------------------------------------------------- torch.distributed.elastic
    LinePattern(Event.WORKER_FAILED, "torchrun", E, "failed (exitcode:",
                r"failed \(exitcode: (?P<exit_code>-?\d+)\) local_rank: (?P<local_rank>\d+) \(pid: (?P<target_pid>\d+)\)"
                r"(?: of binary: (?P<value>\S+))?"),
    LinePattern(Event.CLOSING_SIGNAL, "torchrun", W, "closing signal",
                r"Sending process (?P<target_pid>\d+) closing signal (?P<signal>SIG\w+|\d+)"),
    LinePattern(Event.AGENT_SIGNAL, "torchrun", W, "death signal",
                r"Received (?:Signals\.)?(?P<signal>SIG\w+|\d+) death signal, shutting down workers"),
    LinePattern(Event.AGENT_SIGNAL, "torchrun", W, "Main process received",
                r"\bMain process received (?P<signal>SIG\w+|\d+), exiting"),
    LinePattern(Event.AGENT_SIGNAL, "torchrun", W, "Killing subprocess",
                r"\bKilling subprocess (?P<target_pid>\d+)\s*$"),
    LinePattern(Event.LAUNCH_CONFIG, "torchrun", I, "Starting elastic_operator",
                r"(?P<message>Starting elastic_operator with launch configs):?\s*$"),
    LinePattern(Event.LAUNCH_CONFIG, "torchrun", I, " : ",
                _LOGPFX + r"  (?P<key>entrypoint|min_nodes|max_nodes|nproc_per_node|run_id|rdzv_backend|rdzv_endpoint"
                r"|rdzv_configs|max_restarts|monitor_interval|log_dir|metrics_cfg|event_log_handler)\s*: (?P<value>" + _TO_END + r")\s*$"),
    LinePattern(Event.RENDEZVOUS, "torchrun", I, "Rendezvous complete",
                r"(?P<message>Rendezvous complete for workers)\. Result:"),
    # Triggered by the keys themselves, not by "=": a one-character trigger is found thousands of
    # times in a line of "=====" (every hit costs memory before the regex runs).
    LinePattern(Event.RENDEZVOUS, "torchrun", I, tuple(f"{key}=" for key in _RENDEZVOUS_KEYS),
                _LOGPFX + r"  (?P<key>" + "|".join(_RENDEZVOUS_KEYS) + r")=(?P<value>" + _TO_END + r")\s*$"),
    LinePattern(Event.RENDEZVOUS, "torchrun", I, "has joined round",
                r"The node '(?P<value>[^']*)' has joined round (?P<seq>\d+) of the (?:(?P<rdzv_backend>\S+) )?rendezvous "
                r"'(?P<key>[^']*)' as rank (?P<group_rank>\d+) in a world of size (?P<group_world_size>\d+)"),
    LinePattern(Event.AGENT_FINISHED, "torchrun", I, "finished",
                r"(?P<message>worker group successfully finished|Local worker group finished \(WorkerState\.SUCCEEDED\))"),
    # The agent restarts its workers after a failure (it counts against --max_restarts) or when
    # a node joins (it does not): torch/distributed/elastic/agent/server/api.py _invoke_run.
    LinePattern(Event.WORKER_RESTART, "torchrun", W, "will restart worker group",
                r"Worker group (?P<key>FAILED|UNHEALTHY)\. (?P<value>\d+/\d+) attempts left; will restart worker group"),
    LinePattern(Event.WORKER_RESTART, "torchrun", I, "will restart worker group",
                r"Detected (?P<value>\d+) (?P<key>new nodes) from group_rank=(?P<group_rank>\d+); will restart worker group"),
    LinePattern(Event.WORKER_FAILED, "torchrun", E, "FAILED with no error file",
                r"local_rank (?P<rank>\d+) FAILED with no error file"),
    LinePattern(Event.CHILD_FAILURE, "torchrun", E, "ChildFailedError",
                r"(?P<message>(?:torch\.distributed\.elastic\.multiprocessing\.errors\.)?ChildFailedError):?\s*$"),
    LinePattern(Event.CHILD_FAILURE, "torchrun", E, "Root Cause",
                r"\b(?P<key>Root Cause) \(first observed failure\):"),
    LinePattern(Event.CHILD_FAILURE, "torchrun", E, "Failures:",
                r"(?:^|\s)(?P<key>Failures):\s*$"),
    LinePattern(Event.CHILD_FAILURE, "torchrun", E, "]:",
                r"(?:^|[\s:>])\[(?P<key>\d+)\]:\s*$"),
    LinePattern(Event.CHILD_FAILURE, "torchrun", E, " : ",
                r"(?:^|\s)(?P<key>time|host|rank|exitcode|error_file|traceback)\s*: (?P<value>" + _TO_END + r")\s*$"),
    LinePattern(Event.CHILD_FAILURE, "torchrun", E, "error_file:",
                r"(?:^|\s)(?P<key>error_file): (?P<value>" + _TO_END + r")\s*$"),
    # ---------------------------------------------------------------- SLURM (srun / slurmstepd)
    LinePattern(Event.HOST_OOM, "slurm", C, "oom",
                r"Detected (?P<count>\d+) oom[-_]kill events?(?:\(s\))? in (?:step |StepId=)?(?P<job_id>\w+)"
                r"(?:\.(?P<step_id>[\w]+))?"),
    LinePattern(Event.HOST_OOM, "slurm", C, "Out Of Memory",
                r"\bsrun: error: (?P<host>[^:\s]+): tasks? (?P<tasks>[\d,\-]+): (?P<message>Out Of Memory)"),
    # jobacct_gather: "StepId=7.batch exceeded memory limit (734003200 > 52428800), being killed".
    LinePattern(Event.HOST_OOM, "slurm", C, "exceeded memory limit",
                r"(?:StepId=|[Ss]tep )?(?P<job_id>\d+)\.(?P<step_id>\w+) (?P<message>exceeded memory limit "
                r"\((?P<value>\d+ > \d+)\)), being killed"),
    # Kernel OOM killer (dmesg/journal): "Out of memory: Killed process 123 (python) total-vm:...",
    # "Memory cgroup out of memory: Killed process 123 (python) ...", older "Kill process 123 (python)".
    LinePattern(Event.HOST_OOM, "kernel", C, "of memory: Kill",
                r"(?P<message>(?:Memory cgroup out of memory|Out of memory): Kill(?:ed)? process (?P<target_pid>\d+) "
                r"\((?P<value>[^)]+)\)" + _TO_END + r")\s*$"),
    LinePattern(Event.NODE_FAILURE, "slurm", C, "Node failure on",
                r"\bsrun: error: Node failure on (?P<host>\S+)"),
    LinePattern(Event.SRUN_TASK_EXIT, "slurm", E, "srun: error:",
                r"\bsrun: error: (?P<host>[^:\s]+): tasks? (?P<tasks>[\d,\-]+): (?P<message>Exited with exit code "
                r"(?P<exit_code>\d+)|[A-Z][\w ]*?)\s*$"),
    LinePattern(Event.STEP_ABORTED, "slurm", W, "Job step aborted",
                r"\bsrun: Job step aborted: (?P<message>Waiting up to (?P<value>\d+) seconds for job step to finish)"),
    LinePattern(Event.CANCELLED, "slurm", E, "CANCELLED AT",
                r"\*\*\* (?P<key>JOB|STEP) (?:StepId=)?(?P<job_id>\d+)(?:_\d+)?(?:\.(?P<step_id>\w+))?(?: ON (?P<host>\S+))?"
                r" CANCELLED AT (?P<event_time>\S+)(?: DUE TO (?P<reason>[A-Z][A-Z ]*?))?(?:,[^*]*)?"
                r"(?: BY (?P<value>\S+))? \*\*\*"),
    LinePattern(Event.REQUEUE, "slurm", W, "REQUEUE",
                r"(?P<message>(?:JOB|job) \S+ (?:REQUEUED|requeued)|\bREQUEUE[DS]?\b.*|DUE TO JOB REQUEUE.*)"),
    # A batch script requeueing its own job, traced by set -x: "+ scontrol requeue 1234".
    LinePattern(Event.REQUEUE, "slurm", W, "scontrol requeue",
                r"(?:^|\s)\++ (?P<message>scontrol requeue(?:hold)? (?P<job_id>\S+).*)$"),
    # PyTorch Lightning's SLURM auto-requeue (signal_connector.py): "Handling auto-requeue signal: 10",
    # then "requeing job 1234..." and "requeued exp 1234" (or "requeue failed...").
    LinePattern(Event.REQUEUE, "app", W, "auto-requeue signal",
                r"(?P<message>[Hh]andling auto-requeue signal(?:: ?(?P<signal>\d+))?)"),
    LinePattern(Event.REQUEUE, "app", W, "requeing job",
                r"(?P<message>requeing job (?P<job_id>[\w]+)\.*)"),
    LinePattern(Event.REQUEUE, "app", W, "requeued exp",
                r"(?P<message>requeued exp (?P<job_id>[\w]+))"),
    # req.c (SIG_UME): "*** JOB 12 ON node3 UNCORRECTABLE MEMORY ERROR AT 2024-04-20T09:09:37 ***".
    LinePattern(Event.ECC_ERROR, "slurm", C, "UNCORRECTABLE MEMORY ERROR",
                r"\*\*\* (?P<key>JOB|STEP) (?:StepId=)?(?P<job_id>\d+)\S* ON (?P<host>\S+) (?P<message>UNCORRECTABLE MEMORY "
                r"ERROR) AT (?P<event_time>\S+) \*\*\*"),
    LinePattern(Event.SRUN_ERROR, "slurm", E, "srun: error:", r"\bsrun: error: (?P<message>.*)$"),
    LinePattern(Event.SRUN_ERROR, "slurm", E, "slurmstepd", r"\bslurmstepd(?:-[\w.-]+)?: error: (?P<message>.*)$"),
    LinePattern(Event.SRUN_ERROR, "slurm", W, "srun: ",
                r"\bsrun: (?P<message>(?:forcing job termination|Terminating (?:job step \S+|StepId=\S+)|got SIGCONT"
                r"|Cancelled pending job step|launch/slurm: _step_signal: Terminating StepId=\S*|"
                r"error: \S+: task \d+: .*))\s*$"),
    # The job's node count as the batch script shows it (an env dump or a set -x trace).
    LinePattern(Event.LAUNCH_COMMAND, "slurm", I, "SLURM_NNODES=",
                r"(?:^|\s)(?:\++ )?(?:export )?(?P<key>SLURM_NNODES)=['\"]?(?P<value>\d+)['\"]?\s*$"),
    LinePattern(Event.LAUNCH_COMMAND, "slurm", I, "SLURM_JOB_NUM_NODES=",
                r"(?:^|\s)(?:\++ )?(?:export )?(?P<key>SLURM_JOB_NUM_NODES)=['\"]?(?P<value>\d+)['\"]?\s*$"),
    # An MLPerf system description printed into the log: '"number_of_nodes": "1"'.
    LinePattern(Event.LAUNCH_COMMAND, "app", I, "number_of_nodes",
                r'"(?P<key>number_of_nodes)": ?"?(?P<value>\d+)"?'),
    LinePattern(Event.LAUNCH_COMMAND, "slurm", I, "+ ",
                r"(?:^|\s)\++ (?P<message>(?:srun|torchrun|accelerate launch|deepspeed|(?:\S*/)?python[\d.]* (?:-u )?-m "
                r"torch\.distributed\.(?:run|launch))\b.*)$"),
    # ---------------------------------------------------------------- GPU / kernel / CUDA
    LinePattern(Event.XID, "kernel", C, "Xid",
                r"NVRM: Xid \((?P<bus_id>[^)]+)\): (?P<xid>\d+),\s*(?P<message>.*)$"),
    LinePattern(Event.GPU_LOST, "kernel", C, "fallen off the bus",
                r"(?P<message>(?:GPU has )?fallen off the bus.*)$"),
    LinePattern(Event.ECC_ERROR, "cuda", C, "ECC",
                r"(?P<message>(?:uncorrectable ECC error|[Dd]ouble [Bb]it ECC|ECC error|DBE).*)$"),
    # CUDACachingAllocator.cpp, every generation: "(GPU 0; 11.17 GiB total capacity; ...)" (<=2.0),
    # "GPU 0 has a total capacty of" (2.1 typo), "GPU 0 has a total capacity of" (2.2+); the XPU/NPU/
    # MUSA/MLU forks write their device name in place of CUDA.
    LinePattern(Event.CUDA_OOM, "cuda", E, "out of memory",
                r"(?:(?P<error_type>" + _EXC_TYPE + r"): )?(?P<message>(?:CUDA|XPU|NPU|MUSA|MLU|HIP) (?:error: )?out of "
                r"memory\.?(?: Tried to allocate (?P<value>[\d.]+ (?:[KMGT]i?B|bytes)))?"
                r"(?:.*?\(?GPU (?P<cuda_dev>\d+)(?: has a total capac|;))?.*)$"),
    # The device-generic wording of newer builds: "Out of memory. Tried to allocate 1.95 GiB. ..."
    LinePattern(Event.CUDA_OOM, "cuda", E, "Out of memory. Tried to allocate",
                r"(?:(?P<error_type>" + _EXC_TYPE + r"): )?(?P<message>Out of memory\. Tried to allocate "
                r"(?P<value>[\d.]+ (?:[KMGT]i?B|bytes))(?:.*?GPU (?P<cuda_dev>\d+) has a total capac)?.*)$"),
    LinePattern(Event.CUDA_ERROR, "cuda", E, "CUDA error",
                r"(?:(?P<error_type>" + _EXC_TYPE + r"): )?(?:what\(\):\s+)?CUDA error: (?P<message>" + _TO_END + r")\s*$"),
    LinePattern(Event.CPP_EXCEPTION, "cpp", E, "terminate called",
                r"terminate called after throwing an instance of '(?P<error_type>[\w:.<>]+)'"),
    LinePattern(Event.FATAL_SIGNAL, "python", C, "Fatal Python error",
                r"Fatal Python error: (?P<signal>Segmentation fault|Aborted|Bus error|Floating point exception|.*)"),
    LinePattern(Event.FATAL_SIGNAL, "torchrun", C, "received by PID",
                r"Signal (?P<value>\d+) \((?P<signal>SIG\w+)\) received by PID (?P<target_pid>\d+)"),
    LinePattern(Event.FATAL_SIGNAL, "app", C, "Assertion",
                r"(?P<message>.*Assertion `.*' failed\.)"),
    LinePattern(Event.FATAL_SIGNAL, "app", C, "core dumped",
                r"(?P<signal>Segmentation fault|Aborted|Bus error|Illegal instruction) \(core dumped\)"),
    # ---------------------------------------------------------------- the rest of the catalogue
    # After every specific form of NCCL, c10d, torchrun, SLURM and CUDA, before Python's generic
    # forms: a catalogue message quoted in an exception or after what() is that message.
    *_from_catalogue(override=False),
    # ---------------------------------------------------------------- Python
    # Anywhere in the line: a traceback's first line is often glued behind a progress bar.
    LinePattern(Event.TRACEBACK, "python", I, "Traceback", r"Traceback \(most recent call last\):"),
    # A traceback's frame line (CPython traceback.c / traceback.py: '  File "%s", line %d, in %s'):
    # it carries the printing process's launcher prefix where the first line may not (glued to a
    # progress bar), and shows a traceback going on where its exception line never came.
    LinePattern(Event.TRACEBACK, "python", I, 'File "',
                r'\bFile "(?P<value>[^"]+)", line (?P<count>\d+), in (?P<key>\S+)'),
    LinePattern(Event.EXCEPTION, "python", E, "what():", r"\bwhat\(\):\s+(?P<message>" + _TO_END + r")\s*$"),
    LinePattern(Event.EXCEPTION, "python", E, ("Error", "Exception", "Exit", "Failure", "Timeout"),
                r"\b(?P<error_type>" + _EXC_TYPE + r"): ?(?P<message>" + _TO_END + r")\s*$"),
    LinePattern(Event.EXCEPTION, "python", E, "KeyboardInterrupt", r"\b(?P<error_type>KeyboardInterrupt)\s*$"),
    LinePattern(Event.EXCEPTION, "nccl", E, "nccl", r"\b(?P<error_type>" + _NCCL_EXC + r"): ?(?P<message>" + _TO_END + r")\s*$"),
    LinePattern(Event.TEARDOWN, "c10d", E, "Some NCCL operations have failed or timed out",
                r"(?:" + _PG + r")?(?P<message>Some NCCL operations have failed or timed out)"),
    LinePattern(Event.DUPLICATE_RANK_BANNER, "app", I, "GLOBAL_RANK",
                r"initializing ddp: GLOBAL_RANK: (?P<rank>\d+), MEMBER: (?P<value>\d+)/(?P<world_size>\d+)"),
    # ---------------------------------------------------------------- training progress / status
    LinePattern(Event.PROGRESS, "app", I, "iteration",
                r"\biteration:?\s+(?P<step>\d+)\s*/\s*(?P<step_total>\d+)\s*\|"
                r"(?:.*?elapsed time per iteration \((?P<key>ms|s)\):\s*(?P<iteration_time_s>[\d.]+))?"
                r"(?:.*?(?:lm |per_token_)?loss:\s*(?P<loss>[\d.]+(?:[eE][+-]?\d+)?))?"),
    LinePattern(Event.PROGRESS, "app", I, "tep",
                r"(?i)\b(?:global[_ ]?step|step|steps)\b\s*[=:]?\s*\[?(?P<step>\d+)(?:\s*/\s*(?P<step_total>\d+))?\]?"
                r"[^\n]*?\bloss\b\s*[=:]?\s*(?P<loss>[\d.]+(?:[eE][+-]?\d+)?)"),
    LinePattern(Event.PROGRESS, "app", I, "iter",
                r"(?i)\biter(?:ation)?\b\s*[=:]?\s*\[?(?P<step>\d+)(?:\s*/\s*(?P<step_total>\d+))?\]?"
                r"[^\n]*?\bloss\b\s*[=:]?\s*(?P<loss>[\d.]+(?:[eE][+-]?\d+)?)"),
    # mmcv/mmdet's text logger: "Epoch [1][450/1833]\tlr: 2.000e-02, ..., loss: 1.4512" (the count is
    # per epoch, so it says nothing about the end of the run).
    LinePattern(Event.PROGRESS, "app", I, "Epoch [",
                r"\bEpoch \[(?P<value>\d+)\]\[(?P<step>\d+)/\d+\].*?\bloss: (?P<loss>[\d.]+(?:[eE][+-]?\d+)?)"),
    # The Hugging Face Trainer's logging dict: "{'loss': 0.2411, 'grad_norm': 0.306, ..., 'epoch': 0.4}".
    LinePattern(Event.PROGRESS, "app", I, "'loss': ",
                r"\{'loss': (?P<loss>[\d.]+(?:[eE][+-]?\d+)?),.*'epoch': [\d.]+\}"),
    LinePattern(Event.HEARTBEAT, "app", I, "PULSE:",
                r"PULSE: (?P<message>.* is running for (?P<value>\S+) since (?P<event_time>\S+).*)$"),
)


# What a shell, a runtime or a library prints when a process dies, and the error lines of C++
# loggers: failures a person reads as such, whose meaning is no more specific. The verdict is
# then at least "unknown" (LS301 takes the fatal signals as process failures). Last in the table:
# every specific form above wins.
GENERIC_FAILURES: tuple[LinePattern, ...] = (
    # Any other NCCL WARN, with NCCL's head, with another build's head ("[host][pid:tid][dev][file:line]"),
    # or none (a retyped or quoted line): NCCL warns where something went wrong, so an unknown WARN
    # counts as an error; the benign ones (a fallback it announces) are catalogue messages.
    LinePattern(Event.NCCL_WARN, "nccl", E, "NCCL WARN", _NCCL_HEAD_OPT + r"NCCL WARN (?P<message>.*)$"),
    # bash's job report (execute_cmd.c / jobs.c: the signal's description, then " (core dumped)"):
    # "slurm_script: line 41:  2222 Segmentation fault      (core dumped) python train.py".
    LinePattern(Event.FATAL_SIGNAL, "app", C, "line ",
                r"\bline \d+: +(?P<target_pid>\d+) (?P<signal>Killed|Segmentation fault|Bus error|Aborted"
                r"|Illegal instruction|Floating point exception)\b"),
    # UCX (ucs/debug/debug.c): "Caught signal 11 (Segmentation fault: address not mapped to object ...)".
    LinePattern(Event.FATAL_SIGNAL, "app", C, "Caught signal",
                r"Caught signal (?P<value>\d+) \((?P<signal>[^:)]+)"),
    # glog-style error lines of C++ code (c10d and friends): "[E1115 16:42:37.909 ... ProcessGroupNCCL.cpp:1753] ...",
    # torch 1.x "[E ProcessGroupNCCL.cpp:737] ...".
    LinePattern(Event.FAILURE_LINE, "c10d", E, (".cpp:", ".cc:", ".hpp:"),
                r"(?:^|[\s\[])E(?:\d{3,4} \d\d:\d\d:\d\d(?:\.\d+)?)?(?: +\d+)? +[\w./-]+\.(?:cpp|cc|hpp|h):\d+\] "
                r"(?P<message>.*)$"),
)
PATTERNS = (*PATTERNS, *GENERIC_FAILURES)

# Events whose text names the failing process, as opposed to the process that printed the line.
SUBJECT_IS_TARGET: frozenset[Event] = frozenset({Event.WORKER_FAILED, Event.CLOSING_SIGNAL})
