#!/usr/bin/env python3
"""A throw-away SLURM cluster on localhost, for running real torchrun jobs.

Stdlib only. Use it as a context manager::

    with SlurmLab(nodes=2) as lab:
        job_id = lab.sbatch(script, workdir)
        info = lab.wait_job(job_id)

or from the command line::

    python tests/integration/lab.py run healthy raise --out /tmp/lab-captures
    python tests/integration/lab.py run all --out /tmp/lab-captures
    python tests/integration/lab.py up          # start a lab, print how to use it, wait for Ctrl-C

What it builds (README.md next to this file says why each piece is the way it is, and what failed):

* a temp dir holding every config, key, socket, pid, log, spool, state and temp file;
* ``munged`` in the foreground on a private socket with a freshly generated key;
* ``slurmctld`` and N ``slurmd`` (``slurmd -N nodeNN``: Debian's build supports several slurmd per host);
* network (``network=``), picked automatically, best first:
  - ``netns``: each node gets its own network namespace with ``eth0`` = 10.213.X.N/24 on a private
    bridge whose root-namespace side (10.213.X.254) carries slurmctld; no default route, nothing beyond
    the bridge is reachable.  Every node has its own ports (slurmd on 6818 everywhere, torchrun's
    29500 on every node), exactly as on N separate hosts.
  - ``loopback``: shared network, node N is 127.0.1.N, every slurmd on its own port.  Works for the c10d
    scenarios; a second TCPStore server on the same port (static rendezvous) collides, unlike real hosts.
  - ``plain``: no namespaces at all; srun works but every node has the machine's hostname and node
    names do not resolve, so torchrun jobs cannot use MASTER_ADDR=node01.
* in ``netns`` and ``loopback`` every slurmd also runs in its own UTS + mount namespace: its hostname is
  nodeNN and a private bind-mount of the lab's hosts file over /etc/hosts maps the node names.  Jobs
  inherit both, so ``hostname -s``, ``scontrol show hostnames`` + name resolution, torchrun's rendezvous
  host check and gloo's address choice behave as on N hosts.  The machine's /etc/hosts is never touched.

On exit every process the lab started is killed - daemons, slurmstepd and job processes (found via a
marker environment variable) - and checked by scanning /proc; the namespaces, the bridge and the temp
dir are removed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOBS_DIR = HERE / "jobs"
REPO = HERE.parent.parent

TERMINAL_STATES = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE",
}

MARKER_VAR = "SLURMLAB_ID"

@dataclass(frozen=True)
class Scenario:
    """One job of the lab: its sbatch script, how long to wait for it, and what shows that it
    happened as set up.

    ``shows`` are lines the scenario's own programs (train.py, the batch script) print when the
    set-up happened: the injected fault's own line on the failing rank's node, or every rank's last
    line for a job meant to finish. They never describe torch's or SLURM's reaction, which varies
    from run to run. ``job_state`` is the JobState the set-up forces (a time limit, a scancel, a
    lost node).

    ``action`` is what the lab itself does to the running job once ``when`` (node, regex) shows in
    the job's output: ``"scancel"`` (the user cancels it) or ``"lose-node02"`` (node02 is lost for
    good: its network goes down and every process in it is killed, slurmd included, as in a power
    loss; slurmctld then declares it down after SlurmdTimeout, which the lab makes short for it).
    """

    script: str
    limit: int
    shows: tuple[tuple[str, str], ...] = ()  # (node, regex) the capture must hold
    job_state: str | None = None
    action: str | None = None
    when: tuple[str, str] | None = None


def _rank_line(node: str, rank: int, text: str) -> tuple[str, str]:
    """train.py's log line of one rank (its format: ``[nodeNN rank R/4 local L] text``)."""
    return node, rf"\[{node} rank {rank}/4 local {rank % 2}\] {text}"


RANK_3_TRAINS = _rank_line("node02", 3, r"step 3/\d+ loss")  # training runs on both nodes
RANK_3_HANGS = _rank_line("node02", 3, "injecting hang: sleeping \\d+s before the all_reduce of step 4")
ALL_RANKS_DONE = tuple(_rank_line(f"node0{1 + r // 2}", r, "training done after 8 steps") for r in range(4))

SCENARIOS: dict[str, Scenario] = {
    "healthy": Scenario("healthy.sbatch", 180, ALL_RANKS_DONE),
    "raise": Scenario("raise.sbatch", 180,
                      (_rank_line("node02", 3, "injecting failure: raising RuntimeError at step 4"),)),
    "hang": Scenario("hang.sbatch", 240, (RANK_3_HANGS,)),
    # hang with every rank's Flight Recorder dump kept in the job's folder (fr_trace_<rank>)
    "fr-hang": Scenario("fr-hang.sbatch", 240,
                        (RANK_3_HANGS,
                         _rank_line("node02", 3, "Finished writing Flight Recorder debug info to"))),
    "procid-unescaped": Scenario("procid-unescaped.sbatch", 180,
                                 (("node01", r"LAUNCHER as expanded on the batch host: .*--node_rank 0 "),)),
    "procid-unescaped-c10d": Scenario(
        "procid-unescaped-c10d.sbatch", 180,
        (("node01", r"LAUNCHER as expanded on the batch host: .*--node_rank 0 "), *ALL_RANKS_DONE)),
    "timelimit": Scenario("timelimit.sbatch", 240, job_state="TIMEOUT"),
    # hang with no collective timeout before the 1-minute time limit: the time limit ends it
    "hang-timelimit": Scenario("hang-timelimit.sbatch", 240, (RANK_3_HANGS,), job_state="TIMEOUT"),
    "sigkill": Scenario("sigkill.sbatch", 180,
                        (_rank_line("node02", 3, r"injecting failure: SIGKILL to self \(pid \d+\) at step 4"),)),
    "nnodes-mismatch": Scenario("nnodes-mismatch.sbatch", 180),
    "port-in-use": Scenario("port-in-use.sbatch", 180, (("node01", r"stale listener on port 29500: listening"),)),
    "segfault": Scenario("segfault.sbatch", 180,
                         (_rank_line("node02", 3, r"injecting failure: reading address 0 \(pid \d+\) at step 4"),)),
    "endpoint-per-node": Scenario("endpoint-per-node.sbatch", 180),
    "restart": Scenario("restart.sbatch", 180,
                        (_rank_line("node02", 3, "injecting failure: raising RuntimeError at step 4"),)),
    # the batch script ends with srun, so the job fails with the failing rank's exit status
    "rank-exit": Scenario("rank-exit.sbatch", 180,
                          (_rank_line("node02", 3, "injecting failure: raising RuntimeError at step 4"),)),
    "scancel": Scenario("scancel.sbatch", 180, (RANK_3_TRAINS,), job_state="CANCELLED", action="scancel",
                        when=RANK_3_TRAINS),
    "node-lost": Scenario("node-lost.sbatch", 240, (RANK_3_TRAINS,), job_state="NODE_FAIL",
                          action="lose-node02", when=RANK_3_TRAINS),
}
# The scenarios whose accounting record (sacct, scontrol) the lab also keeps as test data
# (tests/data/accounting/lab/), and the JobState each one ends in.
ACCOUNTING_SCENARIOS = {"timelimit": "TIMEOUT", "scancel": "CANCELLED", "rank-exit": "FAILED",
                        "node-lost": "NODE_FAIL"}


class LabError(RuntimeError):
    pass


def _free_port_block(count: int, start: int = 17000, stop: int = 60000) -> int:
    """First port p >= start such that p..p+count-1 are all free on 0.0.0.0."""
    p = start
    while p + count < stop:
        ok = True
        for q in range(p, p + count):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("0.0.0.0", q))
                except OSError:
                    ok = False
                    p = q + 1
                    break
        if ok:
            return p
    raise LabError("no free port block")


def missing_requirements() -> list[str]:
    """What this machine lacks to run a lab (empty list: all there)."""
    missing = []
    for tool in ("munged", "slurmctld", "slurmd", "slurmstepd", "sbatch", "srun", "sinfo", "scontrol"):
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            missing.append(tool)
    if os.geteuid() != 0:
        missing.append("root (slurmd must run as root)")
    return missing


ACCOUNTING_TOOLS = ("mariadbd", "mariadb-install-db", "mariadb", "slurmdbd", "sacctmgr", "sacct")


def accounting_missing() -> list[str]:
    """What this machine lacks to give a lab accounting (slurmdbd on a private MariaDB); empty: all there."""
    missing = [tool for tool in ACCOUNTING_TOOLS
               if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists()]
    if not _slurm_plugin_installed("accounting_storage_mysql"):
        missing.append("SLURM's accounting_storage/mysql plugin")
    return missing


def _slurm_plugin_installed(name: str) -> bool:
    """Is SLURM's plugin `name` (e.g. accounting_storage_mysql) installed where Debian or a source build puts it?"""
    patterns = ("/usr/lib/*/slurm-wlm/", "/usr/lib/*/slurm/", "/usr/lib/slurm*/", "/usr/lib64/slurm*/",
                "/usr/local/lib/slurm/")
    return any(next(Path("/").glob(f"{pattern.lstrip('/')}{name}.so"), None) for pattern in patterns)


def skip_reason() -> str | None:
    """Why the lab's tests cannot run their jobs here (None: they can)."""
    missing = missing_requirements()
    if missing:
        return "SLURM lab unavailable: missing " + ", ".join(missing) + " (apt-get install slurm-wlm munge)"
    if importlib.util.find_spec("torch") is None:
        return f"torch is not installed for {sys.executable} (pip install torch==2.13.0, the CPU wheel)"
    return None


def _which(tool: str) -> str:
    found = shutil.which(tool)
    if found:
        return found
    if Path("/usr/sbin", tool).exists():
        return str(Path("/usr/sbin", tool))
    raise LabError(f"{tool} not found (apt-get install slurm-wlm munge)")


def _namespaces_work() -> bool:
    """Can we give a process its own hostname and its own /etc/hosts (UTS + mount namespace)?"""
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(
        ["unshare", "--uts", "--mount", "--propagation", "private", "--", "sh", "-c",
         "hostname lab-probe && test \"$(hostname)\" = lab-probe && mount --bind /etc/hosts /etc/hosts"],
        capture_output=True, check=False,
    )
    return r.returncode == 0


def _netns_work() -> bool:
    """Can we make network namespaces joined by a bridge (iproute2, veth + bridge in the kernel)?"""
    if shutil.which("ip") is None or not _namespaces_work():
        return False
    tag = uuid.uuid4().hex[:6]
    br, ns, veth = f"slbp{tag}", f"slurmlab-probe-{tag}", f"slvp{tag}"
    cmds = [
        ["ip", "link", "add", br, "type", "bridge"],
        ["ip", "netns", "add", ns],
        ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns],
        ["ip", "link", "set", veth, "master", br],
    ]
    ok = all(subprocess.run(c, capture_output=True, check=False).returncode == 0 for c in cmds)
    for c in (["ip", "link", "del", veth], ["ip", "netns", "del", ns], ["ip", "link", "del", br]):
        subprocess.run(c, capture_output=True, check=False)
    return ok


def _pick_network() -> str:
    if _netns_work():
        return "netns"
    if _namespaces_work():
        return "loopback"
    return "plain"


def _free_subnet() -> int:
    """Third octet X such that 10.213.X.0/24 is not on any interface or route here."""
    used = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True,
                          check=False).stdout
    used += subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True, check=False).stdout
    for x in range(10, 250):
        if f"10.213.{x}." not in used:
            return x
    raise LabError("no free 10.213.X.0/24")


def _read_environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def _all_pids() -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]


def _net_namespace(pid: int) -> int | None:
    """The inode of the network namespace of process pid (None when it is gone)."""
    try:
        return Path(f"/proc/{pid}/ns/net").stat().st_ino
    except OSError:
        return None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


class SlurmLab:
    def __init__(
        self,
        nodes: int = 2,
        cpus_per_node: int = 2,
        base_dir: str | os.PathLike[str] | None = None,
        keep: bool = False,
        debug: str = "info",
        network: str | None = None,
        kill_wait: int = 30,
        verbose: bool = False,
        extra_conf: str = "",
        accounting: bool | None = None,
        slurmd_timeout: int = 60,
    ) -> None:
        if not 1 <= nodes <= 9:
            raise ValueError("1..9 nodes")
        self.nodes = nodes
        self.cpus = cpus_per_node
        self.base_dir = base_dir
        self.keep = keep
        self.debug = debug
        self.kill_wait = kill_wait
        self.verbose = verbose
        self.extra_conf = extra_conf
        # slurmdbd on a private MariaDB: on by default where the machine has them (accounting_missing()).
        self.accounting = not accounting_missing() if accounting is None else accounting
        self.slurmd_timeout = slurmd_timeout
        if network not in (None, "netns", "loopback", "plain"):
            raise ValueError("network: netns | loopback | plain")
        self.network = network or _pick_network()
        self.short = uuid.uuid4().hex[:6]
        self.id = f"lab-{self.short}"
        self.bridge = f"slb{self.short}"
        self.netns_names: list[str] = []
        self.links: list[str] = []
        self.subnet = 0
        self.dir: Path = Path()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.node_names = [f"node{i:02d}" for i in range(1, nodes + 1)]
        self.conf = Path()
        self._venv_bin = Path(sys.executable).parent
        self._reaper: subprocess.Popen[bytes] | None = None
        self._reaper_pipe: int | None = None

    # ------------------------------------------------------------------ setup
    def __enter__(self) -> SlurmLab:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log(self, msg: str) -> None:
        if self.verbose:
            print(f"[lab {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    def node_addr(self, name: str) -> str:
        i = self.node_names.index(name) + 1
        if self.network == "netns":
            return f"10.213.{self.subnet}.{i}"
        return f"127.0.1.{i}"

    @property
    def ctl_addr(self) -> str:
        return f"10.213.{self.subnet}.254" if self.network == "netns" else "127.0.0.1"

    def netns_of(self, name: str) -> str:
        return f"slurmlab-{self.short}-{name}"

    def start(self) -> None:
        missing = missing_requirements() + (accounting_missing() if self.accounting else [])
        if missing:
            raise LabError("missing: " + ", ".join(missing))
        self.dir = Path(tempfile.mkdtemp(prefix="slurmlab-", dir=self.base_dir))
        self._start_reaper()
        self.dir.chmod(0o755)  # munged refuses group/other-writable dirs; jobs run as root anyway
        for sub in ("munge", "state", "run", "log", "etc", "jobs", "tmp", "db"):
            (self.dir / sub).mkdir(mode=0o755)
        for n in self.node_names:
            (self.dir / "spool" / n).mkdir(parents=True, mode=0o755)
        self._start_munge()
        if self.network == "netns":
            self._setup_netns()
        self._write_conf()
        if self.accounting:
            self._start_database()
            self._start_slurmdbd()
        self._start_slurmctld()
        self._start_slurmds()
        self.wait_idle()

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        e = dict(os.environ)
        e["SLURM_CONF"] = str(self.conf)
        e[MARKER_VAR] = self.id
        # Jobs find the venv's python (with torch) first.
        e["PATH"] = f"{self._venv_bin}:/usr/sbin:/usr/bin:/sbin:/bin"
        # torchrun's /tmp/torchelastic_* dirs (and any other temp file a job makes) land in the lab dir.
        if self.dir != Path():
            e["TMPDIR"] = str(self.dir / "tmp")
        for k in list(e):
            # Don't leak an outer job's SLURM_* settings into ours.
            if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and k != "SLURM_CONF":
                del e[k]
        if extra:
            e.update(extra)
        return e

    def _spawn(self, name: str, argv: list[str], log_name: str | None = None) -> subprocess.Popen[bytes]:
        logf = (self.dir / "log" / (log_name or f"{name}.stdout")).open("ab")
        self.log("start " + " ".join(argv))
        p = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
            env=self.env(), start_new_session=True, cwd=self.dir,
        )
        logf.close()
        self.procs[name] = p
        return p

    def _start_munge(self) -> None:
        m = self.dir / "munge"
        key = m / "munge.key"
        key.touch(mode=0o600)
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self.munge_socket = m / "munge.socket"
        self._spawn("munged", [
            _which("munged"), "--foreground", "--force",
            f"--socket={self.munge_socket}", f"--key-file={key}",
            f"--log-file={m / 'munged.log'}", f"--pid-file={m / 'munged.pid'}",
            f"--seed-file={m / 'munged.seed'}", "--num-threads=4",
        ])
        deadline = time.monotonic() + 15
        while not self.munge_socket.exists():
            if self.procs["munged"].poll() is not None or time.monotonic() > deadline:
                raise LabError("munged did not start:\n" + self._tail(m / "munged.log")
                               + self._tail(self.dir / "log" / "munged.stdout"))
            time.sleep(0.1)

    def _ip(self, *args: str) -> None:
        r = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise LabError(f"ip {' '.join(args)}: {r.stderr.strip()}")

    def _setup_netns(self) -> None:
        """One network namespace per node, each with eth0 on a private bridge; the bridge itself
        (root namespace) carries the controller address.  No default route anywhere: the nodes reach
        each other and slurmctld, nothing else."""
        self.subnet = _free_subnet()
        self._ip("link", "add", self.bridge, "type", "bridge")
        self.links.append(self.bridge)
        self._ip("addr", "add", f"{self.ctl_addr}/24", "dev", self.bridge)
        self._ip("link", "set", self.bridge, "up")
        for i, n in enumerate(self.node_names, 1):
            ns = self.netns_of(n)
            self._ip("netns", "add", ns)
            self.netns_names.append(ns)
            veth = f"slv{self.short}{i}"
            self._ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            self.links.append(veth)
            self._ip("link", "set", veth, "master", self.bridge)
            self._ip("link", "set", veth, "up")
            self._ip("-n", ns, "link", "set", "lo", "up")
            self._ip("-n", ns, "addr", "add", f"{self.node_addr(n)}/24", "dev", "eth0")
            self._ip("-n", ns, "link", "set", "eth0", "up")
        self.log(f"netns up: bridge {self.bridge} {self.ctl_addr}/24, nodes "
                 + ", ".join(f"{n}={self.node_addr(n)}" for n in self.node_names))

    def _teardown_netns(self) -> None:
        for ns in self.netns_names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        for link in self.links:
            subprocess.run(["ip", "link", "del", link], capture_output=True, check=False)
        self.netns_names.clear()
        self.links.clear()

    def _write_conf(self) -> None:
        d = self.dir
        base = _free_port_block(4 + self.nodes)
        self.ctld_port = base
        self.db_port = base + 2 + self.nodes  # MariaDB, on 127.0.0.1 only
        self.dbd_port = base + 3 + self.nodes
        if self.network == "netns":
            # Every node has its own network stack: the same slurmd port everywhere, as on a cluster.
            slurmd_port = 6818
            self.node_ports = {n: slurmd_port for n in self.node_names}
            ctl_host = f"labctl({self.ctl_addr})"
        else:
            slurmd_port = base + 1
            self.node_ports = {n: base + 2 + i for i, n in enumerate(self.node_names)}
            ctl_host = "localhost"
        hosts = ["127.0.0.1 localhost", f"{self.ctl_addr} labctl"]
        hosts += [f"{self.node_addr(n)} {n}" for n in self.node_names]
        (d / "etc" / "hosts").write_text("\n".join(hosts) + "\n")
        node_lines = []
        for n in self.node_names:
            node_lines.append(
                f"NodeName={n} NodeHostname={n} NodeAddr={self.node_addr(n)} Port={self.node_ports[n]} "
                f"CPUs={self.cpus} Boards=1 SocketsPerBoard=1 CoresPerSocket={self.cpus} ThreadsPerCore=1 "
                f"RealMemory=2000 State=UNKNOWN"
            )
        conf = f"""\
# generated by tests/integration/lab.py ({self.id})
ClusterName=lab
SlurmctldHost={ctl_host}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
SlurmUser=root
SlurmdUser=root
SlurmctldPort={self.ctld_port}
SlurmdPort={slurmd_port}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
SlurmctldDebug={self.debug}
SlurmdDebug={self.debug}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
{self._accounting_conf()}
JobCompType=jobcomp/none
SwitchType=switch/none
# keep finished jobs visible to `scontrol show job` for an hour
MinJobAge=3600
KillWait={self.kill_wait}
SlurmdTimeout={self.slurmd_timeout}
InactiveLimit=0
{chr(10).join(node_lines)}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
{self.extra_conf}
"""
        self.conf = d / "etc" / "slurm.conf"
        self.conf.write_text(conf)

    def _accounting_conf(self) -> str:
        if not self.accounting:
            return "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none"
        # slurmdbd listens on every address of the root namespace: slurmctld, sacct and the nodes reach it
        # at the controller's address. No AccountingStorageEnforce: jobs need no association.
        return f"""\
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost={self.ctl_addr}
AccountingStoragePort={self.dbd_port}
# the munge socket for slurmdbd connections: clients take it from here, not from AuthInfo
# (SLURM_GLOBAL_AUTH_KEY messages, src/common/slurm_protocol_api.c _global_auth_key)
AccountingStoragePass=socket={self.munge_socket}
AccountingStoreFlags=job_script
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=10"""

    def _start_database(self) -> None:
        """A private MariaDB: its own datadir, socket and port (127.0.0.1 only), run as root like the
        rest of the lab; no system service and no option file of the machine is read (--no-defaults)."""
        db = self.dir / "db"
        self.db_socket = db / "mariadb.sock"
        server_opts = ["--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M"]
        r = subprocess.run(
            [_which("mariadb-install-db"), "--no-defaults", f"--datadir={db / 'data'}", "--user=root",
             "--auth-root-authentication-method=normal", "--skip-test-db", *server_opts],
            capture_output=True, text=True, check=False, env=self.env(), cwd=self.dir,
        )
        if r.returncode != 0:
            raise LabError(f"mariadb-install-db failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        self._spawn("mariadbd", [
            _which("mariadbd"), "--no-defaults", f"--datadir={db / 'data'}", f"--socket={self.db_socket}",
            f"--port={self.db_port}", "--bind-address=127.0.0.1", "--skip-name-resolve", "--user=root",
            f"--pid-file={self.dir / 'run' / 'mariadbd.pid'}", f"--log-error={self.dir / 'log' / 'mariadbd.log'}",
            "--innodb-lock-wait-timeout=900", *server_opts,
        ])
        self.db_password = uuid.uuid4().hex
        sql = (f"CREATE DATABASE slurm_acct_db; CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{self.db_password}'; "
               "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
        deadline = time.monotonic() + 60
        while True:
            r = self.cmd([_which("mariadb"), "--no-defaults", f"--socket={self.db_socket}", "-u", "root",
                          "-e", "SELECT 1"], check=False)
            if r.returncode == 0:
                break
            if self.procs["mariadbd"].poll() is not None or time.monotonic() > deadline:
                raise LabError("mariadbd did not start:\n" + r.stderr + self._tail(self.dir / "log" / "mariadbd.log"))
            time.sleep(0.3)
        self.cmd([_which("mariadb"), "--no-defaults", f"--socket={self.db_socket}", "-u", "root", "-e", sql])

    def _start_slurmdbd(self) -> None:
        """slurmdbd in the foreground on the lab's MariaDB, then the cluster registered in it."""
        conf = self.dir / "etc" / "slurmdbd.conf"  # slurmdbd reads it beside $SLURM_CONF's slurm.conf
        conf.touch(mode=0o600)  # it holds the database password: SlurmUser's (root's) only
        conf.write_text(f"""\
# generated by tests/integration/lab.py ({self.id})
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
DbdHost=localhost
DbdAddr={self.ctl_addr}
DbdPort={self.dbd_port}
SlurmUser=root
DebugLevel={self.debug}
LogFile={self.dir}/log/slurmdbd.log
PidFile={self.dir}/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.db_port}
StorageUser=slurm
StoragePass={self.db_password}
StorageLoc=slurm_acct_db
""")
        conf.chmod(0o600)
        self._spawn("slurmdbd", [_which("slurmdbd"), "-D"])
        deadline = time.monotonic() + 60
        while True:
            r = self.cmd(["sacctmgr", "-i", "add", "cluster", "lab"], check=False, timeout=30)
            listed = self.cmd(["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster"], check=False)
            if "lab" in listed.stdout.split():
                return
            if self.procs["slurmdbd"].poll() is not None or time.monotonic() > deadline:
                raise LabError("slurmdbd did not come up:\n" + r.stdout + r.stderr
                               + self._tail(self.dir / "log" / "slurmdbd.log")
                               + self._tail(self.dir / "log" / "slurmdbd.stdout"))
            time.sleep(0.5)

    def _start_slurmctld(self) -> None:
        argv = [_which("slurmctld"), "-D", "-i", "-f", str(self.conf)]
        if self.network == "netns":
            # slurmctld insists that its hostname is the one named in SlurmctldHost.
            argv = ["unshare", "--uts", "--", "sh", "-c", "hostname labctl && exec " + " ".join(argv)]
        self._spawn("slurmctld", argv)
        deadline = time.monotonic() + 30
        while True:
            r = self.cmd(["scontrol", "ping"], check=False)
            if "UP" in r.stdout:
                return
            if self.procs["slurmctld"].poll() is not None or time.monotonic() > deadline:
                raise LabError("slurmctld did not come up:\n" + r.stdout + r.stderr
                               + self._tail(self.dir / "log" / "slurmctld.log"))
            time.sleep(0.3)

    def _start_slurmds(self) -> None:
        for n in self.node_names:
            self._start_slurmd(n)

    def _start_slurmd(self, n: str) -> None:
        argv = [_which("slurmd"), "-D", "-N", n, "-f", str(self.conf)]
        if self.network in ("netns", "loopback"):
            # Own hostname + own view of /etc/hosts for this "node" and everything it launches.
            inner = (f"hostname {n} && mount --bind {self.dir}/etc/hosts /etc/hosts && exec "
                     + " ".join(argv))
            argv = ["unshare", "--uts", "--mount", "--propagation", "private", "--", "sh", "-c", inner]
        if self.network == "netns":
            # nsenter, not `ip netns exec`: the latter remounts /sys, hiding /sys/fs/cgroup from slurmd.
            argv = ["nsenter", f"--net=/run/netns/{self.netns_of(n)}", "--", *argv]
        self._spawn(f"slurmd-{n}", argv)

    def wait_idle(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise LabError(f"{name} exited ({p.returncode}) during start-up:\n"
                                   + self._tail(self.dir / "log" / f"{name}.stdout")
                                   + self._tail(self.dir / "log" / f"{name}.log"))
            r = self.cmd(["sinfo", "-h", "-N", "-o", "%N %T"], check=False)
            states = dict(line.split() for line in r.stdout.splitlines() if line.strip())
            if len(states) == self.nodes and all(s == "idle" for s in states.values()):
                self.log(f"nodes idle: {states}")
                return
            time.sleep(0.5)
        raise LabError(f"nodes not idle after {timeout}s: {states}\n"
                       + self._tail(self.dir / "log" / "slurmctld.log"))

    # ------------------------------------------------------------------ use
    def cmd(self, argv: Sequence[str], check: bool = True, timeout: float = 60,
            cwd: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(list(argv), capture_output=True, text=True, env=self.env(), timeout=timeout,
                           cwd=cwd, check=False)
        if check and r.returncode != 0:
            raise LabError(f"{' '.join(argv)} -> {r.returncode}\n{r.stdout}{r.stderr}")
        return r

    def sbatch(self, script: str | os.PathLike[str], workdir: str | os.PathLike[str],
               extra_args: Sequence[str] = ()) -> int:
        r = self.cmd(["sbatch", "--parsable", f"--chdir={workdir}", *extra_args, str(script)], cwd=workdir)
        return int(r.stdout.strip().split(";")[0])

    def show_job(self, job_id: int) -> dict[str, str]:
        r = self.cmd(["scontrol", "show", "job", "-o", str(job_id)], check=False)
        return parse_scontrol(r.stdout)

    def wait_job(self, job_id: int, timeout: float = 300) -> tuple[dict[str, str], str]:
        """Poll until the job is in a terminal state; return (fields, raw `scontrol show job` text)."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.show_job(job_id)
            state = info.get("JobState", "")
            if state in TERMINAL_STATES:
                # slurmctld marks the job done before every step's epilogue ran; give stray output a moment.
                time.sleep(2)
                raw = self.cmd(["scontrol", "show", "job", str(job_id)], check=False).stdout
                return self.show_job(job_id) or info, raw
            if time.monotonic() > deadline:
                self.cmd(["scancel", str(job_id)], check=False)
                time.sleep(3)
                raw = self.cmd(["scontrol", "show", "job", str(job_id)], check=False).stdout
                info = self.show_job(job_id)
                info["lab_note"] = f"lab timeout after {timeout}s; scancel sent"
                return info, raw
            time.sleep(1)

    def reconfigure(self, **settings: int) -> None:
        """Change slurm.conf settings of the running lab (e.g. SlurmdTimeout=10) and tell every daemon."""
        text = self.conf.read_text()
        for key, value in settings.items():
            text, n = re.subn(rf"^{key}=.*$", f"{key}={value}", text, flags=re.M)
            if n != 1:
                raise LabError(f"slurm.conf has no single {key} line")
        self.conf.write_text(text)
        self.cmd(["scontrol", "reconfigure"])

    def lose_node(self, name: str) -> list[int]:
        """Node `name` is lost for good, as in a power loss: its network goes down first (no peer sees a
        connection closed), then every process in its network namespace is SIGKILLed (slurmd,
        slurmstepd, the job's processes). netns mode only. Returns the pids killed."""
        if self.network != "netns":
            raise LabError("losing a node needs the netns network (a namespace per node)")
        ns = self.netns_of(name)
        self._ip("-n", ns, "link", "set", "eth0", "down")
        inode = Path(f"/run/netns/{ns}").stat().st_ino
        killed = []
        for _ in range(20):  # a dying process may still fork: repeat until the namespace is empty
            pids = [pid for pid in _all_pids() if _net_namespace(pid) == inode]
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed += pids
            time.sleep(0.2)
        self.log(f"lost {name}: killed {sorted(set(killed))}")
        return sorted(set(killed))

    def revive_node(self, name: str, timeout: float = 60) -> None:
        """Bring a lost node back: network up, a fresh slurmd, the node resumed and idle again."""
        self._ip("-n", self.netns_of(name), "link", "set", "eth0", "up")
        self._start_slurmd(name)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.cmd(["scontrol", "update", f"nodename={name}", "state=resume"], check=False)
            r = self.cmd(["sinfo", "-h", "-n", name, "-o", "%T"], check=False)
            if r.stdout.strip() == "idle":
                return
            time.sleep(1)
        raise LabError(f"{name} not idle {timeout}s after its revival\n"
                       + self._tail(self.dir / "log" / "slurmctld.log"))

    # ------------------------------------------------------------------ accounting
    def sacct(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.cmd(["sacct", *args], check=check, timeout=60)

    def wait_accounted(self, job_id: int, timeout: float = 60) -> dict[str, str]:
        """Poll sacct until the job and each of its steps have a terminal state there (slurmctld sends
        the record to slurmdbd after the job ends); return {JobID: State} as sacct prints them."""
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while True:
            r = self.sacct("-n", "-P", "-j", str(job_id), "--format=JobID,State", check=False)
            states = dict(line.split("|", 1) for line in r.stdout.splitlines() if "|" in line)
            job = states.get(str(job_id), "")
            if job.split(" ")[0] in TERMINAL_STATES and all(
                    v.split(" ")[0] in TERMINAL_STATES for v in states.values()):
                return states
            if time.monotonic() > deadline:
                raise LabError(f"sacct has no final record of job {job_id} after {timeout}s: {states}\n"
                               + r.stderr + self._tail(self.dir / "log" / "slurmdbd.log"))
            time.sleep(1)

    def save_accounting(self, job_id: int, dest: Path) -> dict[str, str]:
        """What sacct holds about the job, in the forms a user saves it: ``sacct --json``, ``sacct -P``
        (the fields logscope reads, and ``--format=ALL``) and ``sacct -B`` (the batch script), as
        files in dest (ACCOUNTING_FILES). Returns {JobID: State} from sacct."""
        states = self.wait_accounted(job_id)
        j = str(job_id)
        for name, argv in accounting_commands(j).items():
            (dest / name).write_text(self.sacct(*argv[1:]).stdout)
        return states

    # ------------------------------------------------------------------ teardown
    def lab_pids(self) -> list[int]:
        """Every live process carrying this lab's marker in its environment, or its dir in its cmdline."""
        me = os.getpid()
        marker = f"{MARKER_VAR}={self.id}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid == me:
                continue
            env = _read_environ(pid)
            if marker in env.split(b"\0") or (str(self.dir) != "." and str(self.dir) in _cmdline(pid)):
                # skip zombies (already dead, waiting to be reaped)
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                    if stat.rsplit(")", 1)[1].split()[0] == "Z":
                        continue
                except OSError:
                    continue
                found.append(pid)
        return found

    def _start_reaper(self) -> None:
        """A watchdog that tears the lab down if this process dies without stop() (SIGKILL, a killed
        test run): it waits for the end of a pipe only this process holds. stop() tells it to go."""
        read_end, self._reaper_pipe = os.pipe()  # not inherited by the lab's other children
        env = {k: v for k, v in os.environ.items() if k != MARKER_VAR}
        self._reaper = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "reap", "--id", self.short, "--dir", str(self.dir)],
            stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
            start_new_session=True,  # Ctrl-C in the terminal reaches the test run, not the watchdog
        )
        os.close(read_end)

    def _dismiss_reaper(self) -> None:
        if self._reaper_pipe is not None:
            with contextlib.suppress(OSError):
                os.write(self._reaper_pipe, REAPER_DISMISSED)
            os.close(self._reaper_pipe)
            self._reaper_pipe = None
        if self._reaper is not None:
            try:
                self._reaper.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._reaper.kill()
                self._reaper.wait()
            self._reaper = None

    def stop(self) -> None:
        self._dismiss_reaper()
        if not self.procs and self.dir == Path() and not self.links and not self.netns_names:
            return
        # 1. cancel whatever still runs, while slurmctld is alive to do it.
        ctld = self.procs.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            with contextlib.suppress(Exception):
                self.cmd(["scancel", "--user=root"], check=False, timeout=15)
                time.sleep(1)
        # 2. daemons: slurmd first, then slurmctld, munged last.
        order = [k for k in self.procs if k.startswith("slurmd-")] + ["slurmctld", "slurmdbd", "mariadbd", "munged"]
        for name in order:
            p = self.procs.get(name)
            if p is not None and p.poll() is None:
                p.terminate()
        for name in order:
            p = self.procs.get(name)
            if p is None:
                continue
            try:
                p.wait(timeout=30 if name == "mariadbd" else 10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        # 3. everything else that carries our marker (slurmstepd, job shells, torchrun, workers).
        for _ in range(20):
            pids = self.lab_pids()
            if not pids:
                break
            for pid in pids:
                self.log(f"kill leftover {pid}: {_cmdline(pid)[:120]}")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.3)
        left = self.lab_pids()
        self.procs.clear()
        self._teardown_netns()
        if self.dir != Path() and self.dir.exists() and not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        if left:
            raise LabError(f"processes survived teardown: {[(p, _cmdline(p)) for p in left]}")

    @staticmethod
    def _tail(path: Path, n: int = 40) -> str:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return f"--- {path.name}\n" + "\n".join(lines[-n:]) + "\n"


# The fields of `sacct -P` that logscope reads (sacct 22.05 has no StdOut/StdErr field: scontrol has them).
SACCT_FIELDS = ("JobID,JobIDRaw,JobName,State,ExitCode,DerivedExitCode,Reason,NodeList,NNodes,"
                "Start,End,Elapsed,Timelimit,MaxRSS,MaxRSSNode,MaxRSSTask,User,UID,WorkDir,SubmitLine")


def accounting_commands(job_id: str) -> dict[str, list[str]]:
    """The file each accounting capture is saved as, and the command that prints it."""
    return {
        "sacct.json": ["sacct", "--json", "-j", job_id],
        "sacct-parsable2.txt": ["sacct", "-P", "-j", job_id, f"--format={SACCT_FIELDS}"],
        "sacct-parsable2-all.txt": ["sacct", "-P", "-j", job_id, "--format=ALL"],
        "sacct-batch-script.txt": ["sacct", "-B", "-j", job_id],
    }


def parse_scontrol(text: str) -> dict[str, str]:
    """`scontrol show job -o` line -> {key: value}.  Values never contain spaces in -o output,
    except Command/WorkDir/StdOut paths with spaces, which the lab never uses."""
    out: dict[str, str] = {}
    for tok in text.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out.setdefault(k, v)
    return out


REAPER_DISMISSED = b"stopped"  # what stop() writes to the watchdog's pipe: the lab is taken down already


def reap(short: str, lab_dir: Path) -> int:
    """The watchdog (`lab.py reap`): wait for the end of standard input, the pipe from the process
    that started lab `short`; unless that process said it stopped the lab itself, stop it here:
    every process of the lab (marker or lab dir), its namespaces and bridge, its temp dir."""
    said = sys.stdin.buffer.read()
    if said == REAPER_DISMISSED:
        return 0
    orphan = SlurmLab(network="plain", accounting=False)
    orphan.short, orphan.id, orphan.bridge, orphan.dir = short, f"lab-{short}", f"slb{short}", lab_dir
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    orphan.netns_names = [line.split()[0] for line in listed.splitlines()
                          if line.startswith(f"slurmlab-{short}-")]
    orphan.links = [orphan.bridge]
    try:
        orphan.stop()
    except LabError as e:
        print(f"lab.py reap: {e}", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------- runner
@dataclass(frozen=True)
class LabRun:
    """Every scenario's capture in `out` (out/<scenario>/); `live` is the lab that ran them, still up
    (None when the captures were made earlier, e.g. reused from LAB_CAPTURES)."""

    out: Path
    live: SlurmLab | None


RECAPTURES = 2  # a capture that does not show its scenario is taken again at most this often
RECAPTURE_LOG = "_recaptures.json"


def capture_problem(name: str, dest: Path) -> str | None:
    """Why the capture in dest does not show scenario `name` as it was set up; None when it does.

    The job must have run (a terminal JobState reached before the lab's limit, one output file per
    node) and the scenario's own programs must have printed what shows the set-up happened
    (``Scenario.shows``). Nothing here looks at how torch or SLURM reacted.
    """
    scenario = SCENARIOS[name]
    meta = json.loads((dest / "meta.json").read_text())
    if meta.get("lab_note"):
        return f"{meta['lab_note']} (JobState {meta.get('job_state')})"
    if meta.get("job_state") not in TERMINAL_STATES:
        return f"the job did not end (JobState {meta.get('job_state')})"
    if scenario.job_state is not None and meta["job_state"] != scenario.job_state:
        return f"JobState {meta['job_state']}, the scenario sets up {scenario.job_state}"
    texts = {}
    for node in meta["nodes"]:
        path = dest / f"{meta['job_name']}-{meta['job_id']}-{node}.out"
        if not path.is_file():
            return f"no output file for {node}: the job step did not start there"
        texts[node] = path.read_text(errors="replace")
    for node, pattern in scenario.shows:
        if not re.search(pattern, texts[node], re.M):
            return f"{node}'s file lacks the scenario's own line /{pattern}/"
    return None


def capture(lab: SlurmLab, name: str, dest: Path) -> dict[str, object]:
    """Run one scenario's sbatch script in the lab and copy what it wrote into dest (replaced)."""
    scenario = SCENARIOS[name]
    script = JOBS_DIR / scenario.script
    work = lab.dir / "jobs" / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    shutil.copy(script, work / scenario.script)
    shutil.copy(HERE / "train.py", work / "train.py")
    if scenario.action == "lose-node02" and lab.network != "netns":
        raise LabError(f"{name} needs the netns network (a namespace per node to lose), not {lab.network}")
    t0 = time.monotonic()
    action: dict[str, object] | None = None
    if scenario.action == "lose-node02":
        lab.reconfigure(SlurmdTimeout=LOST_NODE_SLURMD_TIMEOUT)
    try:
        job_id = lab.sbatch(work / scenario.script, work, extra_args=[f"--job-name={name}"])
        if scenario.action is not None:
            action = _act(lab, scenario, name, job_id, work, deadline=t0 + scenario.limit)
        info, raw = lab.wait_job(job_id, timeout=max(1.0, t0 + scenario.limit - time.monotonic()))
    finally:
        if scenario.action == "lose-node02":
            # the other scenarios need node02, and the lab's usual SlurmdTimeout
            lab.revive_node("node02")
            lab.reconfigure(SlurmdTimeout=lab.slurmd_timeout)
    wall = time.monotonic() - t0
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    files = []
    for f in sorted(work.iterdir()):
        if f.name in (scenario.script, "train.py") or not f.is_file():
            continue
        shutil.copy(f, dest / f.name)
        files.append(f.name)
    shutil.copy(script, dest / scenario.script)
    (dest / "scontrol-show-job.txt").write_text(raw)
    accounting = lab.save_accounting(job_id, dest) if lab.accounting else None
    meta = {
        "scenario": name,
        "job_id": job_id,
        "job_name": info.get("JobName", name),
        "job_state": info.get("JobState"),
        "exit_code": info.get("ExitCode"),
        "derived_exit_code": info.get("DerivedExitCode"),
        "reason": info.get("Reason"),
        "node_list": info.get("NodeList"),
        "time_limit": info.get("TimeLimit"),
        "run_time": info.get("RunTime"),
        "start_time": info.get("StartTime"),
        "end_time": info.get("EndTime"),
        "wall_seconds": round(wall, 1),
        "files": files,
        "nodes": lab.node_names,
        "node_addrs": {n: lab.node_addr(n) for n in lab.node_names},
        "lab_network": lab.network,
        "lab_note": info.get("lab_note"),
        "lab_action": action,
        "accounting": accounting,  # {JobID: State} as sacct printed them; None: the lab had no slurmdbd
    }
    (dest / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


LOST_NODE_SLURMD_TIMEOUT = 10  # seconds; slurmctld declared the lost node down ~28 s after it went


def _act(lab: SlurmLab, scenario: Scenario, name: str, job_id: int, work: Path,
         deadline: float) -> dict[str, object]:
    """Wait for the scenario's `when` line in the job's output, then do its `action` to the job."""
    assert scenario.when is not None
    node, pattern = scenario.when
    path = work / f"{name}-{job_id}-{node}.out"
    while not (path.is_file() and re.search(pattern, path.read_text(errors="replace"), re.M)):
        if time.monotonic() > deadline or lab.show_job(job_id).get("JobState") in TERMINAL_STATES:
            return {"action": scenario.action, "done": False, "why": f"{node} never printed /{pattern}/"}
        time.sleep(0.5)
    at = time.strftime("%Y-%m-%dT%H:%M:%S")
    if scenario.action == "scancel":
        lab.cmd(["scancel", str(job_id)])
        return {"action": "scancel", "done": True, "at": at, "uid": os.getuid()}
    if scenario.action == "lose-node02":
        return {"action": "lose-node02", "done": True, "at": at, "killed": lab.lose_node("node02")}
    raise LabError(f"unknown action {scenario.action!r}")


def run_scenarios(names: Sequence[str], out: Path, nodes: int = 2, verbose: bool = True,
                  keep_lab: bool = False, network: str | None = None, recaptures: int = RECAPTURES,
                  on_recapture: Callable[[str], None] | None = None,
                  accounting: bool | None = None) -> dict[str, dict[str, object]]:
    """Run each scenario's sbatch script in a new lab, copy what it wrote into out/<scenario>/
    (`capture_in`); the lab is stopped after."""
    for n in names:
        if n not in SCENARIOS:
            raise LabError(f"unknown scenario {n!r}; known: {', '.join(SCENARIOS)}")
    t_all = time.monotonic()
    with SlurmLab(nodes=nodes, verbose=verbose, keep=keep_lab, network=network, accounting=accounting) as lab:
        if verbose:
            print(f"lab up in {time.monotonic() - t_all:.1f}s at {lab.dir} "
                  f"(network={lab.network}, accounting={'on' if lab.accounting else 'off'})", file=sys.stderr)
        results = capture_in(lab, names, out, verbose=verbose, recaptures=recaptures, on_recapture=on_recapture)
    if verbose:
        print(f"total {time.monotonic() - t_all:.1f}s", file=sys.stderr)
    return results


def capture_in(lab: SlurmLab, names: Sequence[str], out: Path, verbose: bool = False,
               recaptures: int = RECAPTURES,
               on_recapture: Callable[[str], None] | None = None) -> dict[str, dict[str, object]]:
    """Run each scenario's sbatch script in the running lab, copy what it wrote into out/<scenario>/.

    A capture that does not show its scenario as set up (`capture_problem`) is moved to
    out/_invalid/<scenario>-<n>/ and taken again, at most `recaptures` times; each recapture is
    reported through `on_recapture` (and stderr when verbose) and listed in out/_recaptures.json.
    The last capture stays in out/<scenario>/ whatever it shows, with its problem in meta.json
    (``capture_problem``), so the caller decides.
    """
    for n in names:
        if n not in SCENARIOS:
            raise LabError(f"unknown scenario {n!r}; known: {', '.join(SCENARIOS)}")
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, object]] = {}
    retried: list[dict[str, object]] = []
    for name in names:
        dest = out / name
        for attempt in range(recaptures + 1):
            meta = capture(lab, name, dest)
            problem = capture_problem(name, dest)
            meta["capture_attempt"] = attempt + 1
            meta["capture_problem"] = problem
            (dest / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
            if verbose:
                print(f"{name:21s} job {meta['job_id']:<4d} {meta['job_state']!s:10s} "
                      f"exit={meta['exit_code']} {meta['wall_seconds']:6.1f}s "
                      f"{'INVALID: ' + problem if problem else 'ok'}", file=sys.stderr, flush=True)
            if problem is None or attempt == recaptures:
                break
            kept = out / "_invalid" / f"{name}-{attempt + 1}"
            if kept.exists():
                shutil.rmtree(kept)
            kept.parent.mkdir(exist_ok=True)
            shutil.move(str(dest), str(kept))
            message = (f"recapture {attempt + 1}/{recaptures} of {name}: job {meta['job_id']} did not "
                       f"show the scenario ({problem}); that capture is kept in {kept}")
            retried.append({"scenario": name, "job_id": meta["job_id"], "problem": problem,
                            "kept": str(kept)})
            if on_recapture is not None:
                on_recapture(message)
            if verbose:
                print(message, file=sys.stderr, flush=True)
        results[name] = meta
    # slurmd logs are useful when a scenario looks odd
    logs = out / "_lab-logs"
    if logs.exists():
        shutil.rmtree(logs)
    shutil.copytree(lab.dir / "log", logs)
    (out / RECAPTURE_LOG).write_text(json.dumps(retried, indent=2) + "\n")
    return results


def _cli(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run scenarios, capture their output")
    r.add_argument("scenarios", nargs="+", help=f"'all' or some of: {', '.join(SCENARIOS)}")
    r.add_argument("--out", required=True, type=Path)
    r.add_argument("--nodes", type=int, default=2)
    r.add_argument("--keep-lab", action="store_true", help="leave the lab temp dir in place")
    r.add_argument("--network", choices=["netns", "loopback", "plain"], default=None,
                   help="default: netns if it works here, else loopback, else plain")
    r.add_argument("--no-accounting", action="store_true",
                   help="no slurmdbd/MariaDB even where they are installed")
    u = sub.add_parser("up", help="start a lab and wait (Ctrl-C stops it)")
    u.add_argument("--nodes", type=int, default=2)
    u.add_argument("--keep", action="store_true", help="leave the lab temp dir in place on exit")
    u.add_argument("--extra-conf", default="", help="lines appended to slurm.conf (use \\n)")
    u.add_argument("--network", choices=["netns", "loopback", "plain"], default=None)
    u.add_argument("--no-accounting", action="store_true",
                   help="no slurmdbd/MariaDB even where they are installed")
    g = sub.add_parser("reap", help="(internal) the watchdog that stops a lab whose process died")
    g.add_argument("--id", required=True)
    g.add_argument("--dir", required=True, type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "reap":
        return reap(args.id, args.dir)

    # Turn SIGTERM/SIGHUP into KeyboardInterrupt so the context manager cleans up.
    def _interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)

    if args.cmd == "run":
        names = list(SCENARIOS) if args.scenarios == ["all"] else args.scenarios
        res = run_scenarios(names, args.out, nodes=args.nodes, keep_lab=args.keep_lab, network=args.network,
                            accounting=False if args.no_accounting else None)
        print(json.dumps({k: {kk: v[kk] for kk in ("job_id", "job_state", "exit_code", "wall_seconds",
                                                     "capture_attempt", "capture_problem")}
                          for k, v in res.items()}, indent=2))
        return 0
    with SlurmLab(nodes=args.nodes, verbose=True, keep=args.keep,
                  extra_conf=args.extra_conf.replace("\\n", "\n"),
                  network=args.network, accounting=False if args.no_accounting else None) as lab:
        print(f"export SLURM_CONF={lab.conf}\n# lab dir: {lab.dir}\n# Ctrl-C to stop", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
