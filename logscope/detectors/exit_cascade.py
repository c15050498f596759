"""LS301 exit-cascade: the one process that failed first, and the ones killed because of it.

What it detects
    A job where one process failed (exception, segfault, OOM, GPU error, non-zero exit) and the
    launcher then tore everything else down. It names the root failure across all nodes and lists
    the rest as victims: processes that received SIGTERM/SIGKILL from torchrun or srun
    (``Sending process N closing signal SIGTERM``, exit -15/-9/143), that lost their peer
    (``remote process exited``, ``Connection reset by peer``), or whose collectives timed out
    after the root had already died.

Why it matters
    With ``srun --kill-on-bad-exit=1`` and torchrun, one rank's exception produces hundreds of
    error lines on every node within seconds. The last lines of every log look alike (tracebacks,
    NCCL errors, ChildFailedError), and torchrun's "Root Cause (first observed failure)" block
    only names the first failure *on its own node*. The true root is the earliest failure across
    nodes that was not itself a reaction to another.

Evidence
    Python exception lines, ``terminate called ... what():``, CUDA and OOM errors, fatal
    signals, torchrun ``failed (exitcode: N) local_rank: L`` and ChildFailedError records (their
    ``time`` field is compared across nodes), srun ``task N: Exited with exit code`` lines; as
    victims: closing signals, SIGTERM exits, watchdog timeouts, peer-loss errors, step
    cancellations. Times come from the lines; untimed lines are ordered by their neighbours.
    Victims are counted as processes, each once (a rank, its local rank and its pid are one),
    never the root, at most the world size less one.

Example
    ::

        [host2:3]:RuntimeError: CUDA error: an illegal memory access was encountered
        E0801 13:23:20.000000 4411 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 3 (pid: 4514) of binary: /usr/bin/python
        srun: error: host1: tasks 0: Terminated

False positives
    When no line carries a time and each node writes its own file, "first" across nodes falls
    back to torchrun's ChildFailedError times (1 s resolution) or file order; two failures in the
    same second are told apart by preferring a real error over a signal exit. A process that
    fails with a message logscope does not know as a consequence (a custom "peer gone" error) can
    be named as the root.

Advice
    Fix the root failure named here and ignore the victims' errors. To make the next post-mortem
    exact: write one file per node (``#SBATCH --output=%x-%j-%N.out``), prefix lines with host and
    rank (``torchrun --role $(hostname -s): --tee 3``), and log with timestamps.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, ClassVar, NamedTuple

import polars as pl

from logscope.detectors.base import (
    Detector,
    JobView,
    culprit_of,
    event_of,
    field_of,
    order_key,
    says_victim,
    when,
    who,
    window_of,
)
from logscope.detectors.worker_restart import job_recovered
from logscope.knowledge import by_id
from logscope.knowledge.xids import xid_is_a_cause
from logscope.model import Category, Event, Finding, Role, Severity

# Detailed failures: they say what went wrong in the failing process itself.
DETAIL_EVENTS = (Event.EXCEPTION, Event.CUDA_ERROR, Event.CUDA_OOM, Event.FATAL_SIGNAL, Event.NCCL_CUDA_FAILURE,
                 Event.ERROR_FILE, Event.XID, Event.ECC_ERROR, Event.GPU_LOST, Event.CPP_EXCEPTION)
# Summaries: a launcher reporting that a process ended badly.
SUMMARY_EVENTS = (Event.WORKER_FAILED, Event.CHILD_FAILURE, Event.SRUN_TASK_EXIT, Event.HOST_OOM,
                  Event.NODE_FAILURE)
# Reactions to someone else's failure. Launch failures (a rendezvous nobody answers, a port in
# use) are here too: the launch detectors (LS2xx) name them, and a process that hit one exits
# because of it, not because it crashed.
VICTIM_EVENTS = (Event.WATCHDOG_TIMEOUT, Event.WATCHDOG_STATUS, Event.TEARDOWN, Event.CLOSING_SIGNAL,
                 Event.AGENT_SIGNAL, Event.NCCL_ABORT, Event.NCCL_SOCKET_ERROR, Event.CANCELLED,
                 Event.STEP_ABORTED, Event.DIST_ERROR, Event.STORE_ERROR, Event.PORT_IN_USE)

# Lines saying a process itself failed. Without one there is no cascade to explain: an Xid, an
# ECC report, an oom-kill count or a node failure alone are for their own detectors to judge.
PROCESS_FAILURES = (Event.EXCEPTION, Event.CUDA_ERROR, Event.CUDA_OOM, Event.FATAL_SIGNAL, Event.NCCL_CUDA_FAILURE,
                    Event.ERROR_FILE, Event.CPP_EXCEPTION, Event.WORKER_FAILED, Event.CHILD_FAILURE,
                    Event.SRUN_TASK_EXIT)

# The launcher's reports that a process it watched has exited.
EXIT_REPORTS = (Event.WORKER_FAILED, Event.CHILD_FAILURE)

SIGNAL_EXIT = {-15, -9, -1, 143, 137, 15, 9}
# SIGABRT: how c10d takes a process down after its watchdog failed (ProcessGroupNCCL.cpp: "To avoid
# data inconsistency, we are taking the entire process down", then std::abort through terminate).
ABORT_EXIT = {-6, 134, 6}
# A Signalled key's pid for "c10d announced it takes a process of this place down" (which one, the
# line may not say).
TEARDOWN_ANNOUNCED = -2
ROOT_CATEGORY = {
    Event.CUDA_OOM: Category.OOM,
    Event.HOST_OOM: Category.OOM,
    Event.XID: Category.HARDWARE,
    Event.ECC_ERROR: Category.HARDWARE,
    Event.GPU_LOST: Category.HARDWARE,
    Event.NODE_FAILURE: Category.HARDWARE,
}
_HARDWARE_CUDA = re.compile(r"unknown error|uncorrectable ECC|ECC error|fallen off|GPU is lost|"
                            r"illegal memory access|unspecified launch failure|hardware", re.IGNORECASE)
_OOM = re.compile(r"out of memory", re.IGNORECASE)


# The records that can say a process was told to stop (ExitCascade._signalled).
_MARKING = frozenset(e.value for e in (Event.CLOSING_SIGNAL, Event.AGENT_SIGNAL, Event.CANCELLED, Event.TEARDOWN))


class Signalled(dict[tuple[str, int], "datetime | None"]):
    """When each (place, pid) was told to stop (pid -1: the whole place), and the line that said so."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[str, int], dict[str, Any]] = {}
RECORD_RESOLUTION = timedelta(seconds=1)  # ChildFailedError times are truncated to the second


def is_victim(row: dict[str, Any], signalled: Signalled | None = None) -> bool:
    """True when a failure row is a reaction to another process's failure.

    ``signalled`` holds the (place, pid) pairs the launcher (or SLURM) told to stop: a SIGTERM or
    SIGKILL exit of such a process is a consequence; the same exit of a process nobody signalled
    (the OOM killer, a kill from outside) is a failure of its own. Without it, every signal exit
    counts as a consequence.
    """
    event = event_of(row)
    if event in VICTIM_EVENTS or witnesses(row):
        return True
    text = str(row.get("text") or "")
    message = str(field_of(row, "message") or "")
    error_type = str(field_of(row, "error_type") or "")
    if event in (Event.WORKER_FAILED, Event.CHILD_FAILURE, Event.SRUN_TASK_EXIT):
        if event == Event.SRUN_TASK_EXIT and re.search(r"Terminated|Killed", message):
            return True
        code = field_of(row, "exit_code")
        by_signal = code is not None and int(code) in SIGNAL_EXIT
        if signalled is None:
            return by_signal or field_of(row, "signal") in ("SIGTERM", "SIGKILL", "SIGHUP")
        place = process_key(row)[0]
        latest = (window_of(row)[1] or datetime.max.replace(year=9998)) + RECORD_RESOLUTION

        def told(key: tuple[str, int]) -> bool:
            if key in signalled.rows and _bounded_by(row, signalled.rows[key]):
                return False  # written above the very line that told it to stop
            return key in signalled and (signalled[key] is None or signalled[key] <= latest)  # type: ignore[operator]

        if told((place, -1)):  # the whole node was told to stop: any exit after that follows from it
            return True
        pid = row.get("pid") or field_of(row, "target_pid")
        if code is not None and int(code) in ABORT_EXIT and (
                told((place, TEARDOWN_ANNOUNCED)) or (pid is not None and told((place, int(pid))))):
            return True  # the abort c10d announced on that place, after its watchdog failed
        if not by_signal:
            return False
        # A signal exit nobody asked for (OOM killer, kill from outside) is a failure of its own;
        # srun's task lines carry no pid to check, so they stay consequences.
        return event == Event.SRUN_TASK_EXIT or pid is None or told((place, int(pid)))
    if event == Event.XID:  # an Xid that stops nothing by itself (63, 92) or follows another error (45)
        return not xid_is_a_cause(int(field_of(row, "xid") or 0))
    if event == Event.CPP_EXCEPTION:  # what its what() said (logscope.parsers.terminations)
        return "DistBackendError" in error_type or says_victim(message)
    return says_victim(message) or says_victim(error_type) or (event == Event.EXCEPTION and says_victim(text))


# The exit reports whose is_victim, given the signals sent, reads the process, its times and those
# signals; of every other row it reads the row's words alone (event, text, fields).
_REACTIONS = frozenset(e.value for e in VICTIM_EVENTS)
_EXIT_RULED = frozenset(e.value for e in (Event.WORKER_FAILED, Event.CHILD_FAILURE, Event.SRUN_TASK_EXIT))


class Victims:
    """:func:`is_victim` of a view's rows, judged once per (event, text, fields) where the rule
    reads nothing else: a crash loop repeats ~1,100 different failure lines over ~96,000 rows, and
    the rules asked of each ~2 times (~3 us each). Rows with equal fields share one dict
    (base.dicts), whose identity is the key; the memo holds each dict it keys by, so an identity is
    never that of another dict. Shared by every detector of the view."""

    def __init__(self, job: JobView) -> None:
        self._memo: dict[tuple[Any, Any, int], tuple[Any, bool]] = job.remember("victims", dict)

    def __call__(self, row: dict[str, Any], signalled: Signalled | None = None) -> bool:
        event = row["event"]
        if event in _REACTIONS:
            return True  # is_victim's first rule (most rows of a crash loop)
        if signalled is not None and event in _EXIT_RULED:
            return is_victim(row, signalled)
        fields = row.get("fields")
        key = (event, row.get("text"), id(fields))
        found = self._memo.get(key)
        if found is None or found[0] is not fields:
            found = self._memo[key] = (fields, is_victim(row))
        return found[1]


def witnesses(row: dict[str, Any]) -> bool:
    """Whether the catalogue says a row's message witnesses someone else's failure (blame "none":
    ncclSystemError, a watchdog timeout, a peer gone), rather than a failure of its printer's."""
    message = by_id(field_of(row, "message_id"))
    return message is not None and message.blame == "none"


def category_of(row: dict[str, Any]) -> Category:
    event = event_of(row)
    if event in ROOT_CATEGORY:
        return ROOT_CATEGORY[event]
    message = f"{field_of(row, 'message') or ''} {row.get('text') or ''}"
    if _OOM.search(message):
        return Category.OOM
    if event in (Event.CUDA_ERROR, Event.EXCEPTION, Event.CPP_EXCEPTION) and _HARDWARE_CUDA.search(message):
        return Category.HARDWARE
    return Category.CRASH


def same_process(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two rows are about the same process, by the most specific identity both carry."""
    if process_key(a)[0] != process_key(b)[0]:
        return False
    for key in ("rank", "local_rank", "pid"):
        if a.get(key) is not None and b.get(key) is not None:
            return bool(a[key] == b[key])
    return False


_IDENTITY = ("rank", "local_rank", "pid")


class _ProcessIndex:
    """Rows by place and identity: the earliest time among the rows :func:`same_process` pairs
    with a given row, in constant time (same_process compares the first identity key both rows
    carry, so rows are filed under each key they have, per set of keys present)."""

    def __init__(self) -> None:
        self._by_place: dict[str, dict[tuple[str, ...], dict[str, dict[Any, datetime]]]] = {}

    def add(self, row: dict[str, Any], place: str, when: datetime) -> None:
        """File ``row`` (about ``place``, its process_key's first part) at ``when``."""
        keys = tuple(k for k in _IDENTITY if row.get(k) is not None)
        if not keys:
            return  # a row that names no process is never the same process as another
        slot = self._by_place.setdefault(place, {}).setdefault(keys, {})
        for key in keys:
            values = slot.setdefault(key, {})
            if row[key] not in values or when < values[row[key]]:
                values[row[key]] = when

    def earliest(self, row: dict[str, Any], place: str) -> datetime | None:
        """The earliest time filed for a row of ``place`` that is the same process as ``row``."""
        best: datetime | None = None
        for keys, slot in self._by_place.get(place, {}).items():
            key = next((k for k in keys if row.get(k) is not None), None)
            if key is None:
                continue
            when = slot[key].get(row[key])
            if when is not None and (best is None or when < best):
                best = when
        return best


def _bounded_by(row: dict[str, Any], later: dict[str, Any]) -> bool:
    """An untimed line above ``later`` in the same file whose latest time is ``later``'s own: it
    was written before that line (the timed line that bounds it is ``later`` itself)."""
    return (bool(row.get("time_inferred")) and not later.get("time_inferred")
            and row.get("file") == later.get("file") and int(row.get("line") or 0) < int(later.get("line") or 0)
            and row.get("time_latest") is not None and row.get("time_latest") == later.get("time"))


def process_key(row: dict[str, Any]) -> tuple[str, str]:
    """Who a row is about, as precisely as the line allows: (place, process)."""
    place = row.get("node") or row.get("host") or row.get("file") or "?"
    if row.get("rank") is not None:
        return str(place), f"r{row['rank']}"
    if row.get("local_rank") is not None:
        return str(place), f"l{row['local_rank']}"
    if row.get("pid") is not None:
        return str(place), f"p{row['pid']}"
    if row.get("task") is not None:
        return str(place), f"t{row['task']}"
    return str(place), "?"


def _distinct_processes(job: JobView, row_keys: list[tuple[str, str]],
                        root_key: tuple[str, str]) -> set[tuple[str, str]]:
    """The processes of rows whose process keys are ``row_keys`` (see process_key), each counted
    once and the root's (``root_key``) never.

    A process appears under several keys (its rank on one line, its local rank or pid on another):
    lines carrying two of them tie the keys together, and each process counts under one. A row
    that names no process (``?``), or only an srun task on a node whose processes are known, is
    not a process the timeline can tell apart from the others: it is left out. The count never
    exceeds the world size less the root, when the logs state the world size.
    """
    canonical = _process_aliases(job)
    root_key = canonical.get(root_key, root_key)
    keys = {canonical.get(key, key) for key in row_keys} - {root_key}
    keys = {k for k in keys if k[1] != "?"}
    known_places = {k[0] for k in keys if not k[1].startswith("t")} | {root_key[0]}
    keys = {k for k in keys if not (k[1].startswith("t") and k[0] in known_places)}
    world = job.world_size
    if world is not None and len(keys) > world - 1:
        # More keys than processes: some of them are one process the lines could not tie together.
        # Keep the ranks (they are unique), then the rest, up to the world size.
        ordered = sorted(keys, key=lambda k: (not k[1].startswith("r"), k))
        keys = set(ordered[:max(0, world - 1)])
    return keys


def _process_aliases(job: JobView) -> dict[tuple[str, str], tuple[str, str]]:
    """(place, key) -> the (place, key) its process is counted under: a local rank or a pid that
    the lines of that place tie to exactly one rank count under the rank, a pid tied to exactly
    one local rank under the local rank (and its rank)."""
    def compute() -> dict[tuple[str, str], tuple[str, str]]:
        local_rank, pid_rank, pid_local = _ties(job.events)
        out: dict[tuple[str, str], tuple[str, str]] = {}
        for (place, local), rank in local_rank.items():
            out[(place, f"l{local}")] = (place, f"r{rank}")
        for (place, pid), local in pid_local.items():
            out[(place, f"p{pid}")] = out.get((place, f"l{local}"), (place, f"l{local}"))
        for (place, pid), rank in pid_rank.items():
            out[(place, f"p{pid}")] = (place, f"r{rank}")
        return out

    found: dict[tuple[str, str], tuple[str, str]] = job.remember("process_aliases", compute)
    return found


# Up to this many rows in the timeline, its process ties are found in Python (one select, ~0.3 ms a
# small job) rather than by three polars group_bys (~0.8 ms).
TIES_IN_PYTHON_UP_TO = 4096


def _ties(events: pl.DataFrame) -> list[dict[tuple[str, int], int]]:
    """Per place, the local ranks that the lines tie to exactly one rank, the pids tied to exactly
    one rank, the pids tied to exactly one local rank: ``{(place, key): value}`` each."""
    place = pl.coalesce("node", "host", "file").alias("place")
    pairs = (("local_rank", "rank"), ("pid", "rank"), ("pid", "local_rank"))
    if events.height <= TIES_IN_PYTHON_UP_TO:
        seen: list[dict[tuple[str, int], set[int]]] = [{}, {}, {}]  # as ``pairs``
        for at, rank, local_rank, pid in events.select(place, "rank", "local_rank", "pid").rows():
            for found, key, target in ((seen[0], local_rank, rank), (seen[1], pid, rank), (seen[2], pid, local_rank)):
                if key is not None and target is not None:
                    found.setdefault((str(at), int(key)), set()).add(int(target))
        return [{key: next(iter(to)) for key, to in found.items() if len(to) == 1} for found in seen]
    lazy = events.lazy().select(place, "rank", "local_rank", "pid")

    def unique_pairs(key: str, target: str) -> pl.LazyFrame:
        return (lazy.filter(pl.col(key).is_not_null() & pl.col(target).is_not_null())
                .group_by("place", key).agg(pl.col(target).unique().alias("_to"))
                .filter(pl.col("_to").list.len() == 1))

    # The three ties in one call (seven eager queries cost ~0.6 ms a small job).
    return [{(str(at), int(key)): int(to[0]) for at, key, to in tied.iter_rows()}
            for tied in pl.collect_all([unique_pairs(key, target) for key, target in pairs], engine="in-memory")]


def _failure_records(job: JobView) -> list[dict[str, Any]]:
    """Every failure, reaction and launcher-report row, in failure order."""
    return job.rows_in_order(*DETAIL_EVENTS, *SUMMARY_EVENTS, *VICTIM_EVENTS)


def root_failure(job: JobView) -> dict[str, Any] | None:
    """The job's first failure that was not a reaction, by LS301's rules (None when every failure
    line is a reaction). Other detectors use it to tell whether their evidence may be a
    consequence. Unlike LS301 itself, it also answers when no process failed (an Xid or a node
    failure alone), since those can still be what a peer's error reacts to."""
    root = _failures(job).root
    return None if root is None else dict(root)  # a copy: callers may annotate their row


class _Failures(NamedTuple):
    """The failure records in failure order and, by position, what LS301 asks of each one: its
    process_key and whether it is a reaction (is_victim, given ``signalled``); the signal exits
    someone asked for; the root failure. A 100 MB crash loop leaves ~95,000 records: each was
    keyed ~4 times and judged up to 3 times before (~0.4 s of the ~4.5 s its detectors take)."""

    records: list[dict[str, Any]]
    keys: list[tuple[str, str]]
    victim: list[bool]
    signalled: Signalled
    root: dict[str, Any] | None


def _failures(job: JobView) -> _Failures:
    """:class:`_Failures`, worked out once per view (LS301 and every detector asking for
    root_failure share it)."""
    def compute() -> _Failures:
        records = _failure_records(job)
        keys = [process_key(r) for r in records]
        signalled = ExitCascade._signalled(records, keys)
        judge = Victims(job)
        victim = [judge(r, signalled) for r in records]
        root = ExitCascade._root(records, keys, victim) if records else None
        return _Failures(records, keys, victim, signalled, root)

    found: _Failures = job.remember("failures", compute)
    return found


class ExitCascade(Detector):
    code = "LS301"
    name = "exit-cascade"
    category = Category.CRASH
    requires: ClassVar[frozenset[Event]] = frozenset(DETAIL_EVENTS + SUMMARY_EVENTS)
    specificity = 40

    def detect(self, job: JobView) -> list[Finding]:
        failures = _failures(job)
        records, root = failures.records, failures.root
        if not any(event_of(r) in PROCESS_FAILURES for r in records):
            return []
        if root is None:
            return []
        root_key = process_key(root)
        after = self._after(root, failures)
        victims = [records[n] for n in after]
        victim_procs = _distinct_processes(job, [failures.keys[n] for n in after], root_key)
        victim_places = {k[0] for k in victim_procs}
        # Everything on the root process that tells the same story (its summary lines).
        own = [r for r, key, victim in zip(records, failures.keys, failures.victim, strict=True)
               if key == root_key and not victim]
        culprit = culprit_of(root)
        culprit = self._refine(culprit, [*own, *self._its_exit_report(root, failures)], records)
        if self._tied(root, failures):
            # Other processes' exits were reported at the same second, none of them a reaction,
            # and no line says which came first: the logs name a node, not a process.
            culprit = replace(culprit, rank=None, local_rank=None)
        detail = self._describe(root)
        category = category_of(root)
        title = f"{who(culprit)} failed first: {detail}"
        if victim_procs:
            title += f"; {len(victim_procs)} other process(es) on {len(victim_places)} node(s) went down after it"
        explanation = (
            f"The earliest failure that was not a reaction to another process is {detail} from "
            f"{who(culprit)} at {when(culprit.time)}"
            + (" (time inferred from neighbouring lines)" if root.get("time_inferred") else "")
            + ". "
            + (f"After it, {len(victim_procs)} other process(es) failed or were killed "
               f"(SIGTERM from the launcher, lost peers, collective timeouts): they are consequences, "
               f"not causes." if victim_procs else "No other process failed after it.")
        )
        # torchrun restarted the workers and every agent finished: a failure the job survived
        # is worth knowing, not the job's verdict.
        recovered = job_recovered(job)
        if recovered:
            title = f"Recovered: {title}"
            explanation += (" The job then ran again (a torchrun restart or a new launch) and every agent finished "
                            "(LS302): it recovered from this failure.")
        evidence_rows = [root, *[r for r in own if r is not root][:2], *victims[:4]]
        return [self.finding(
            title=title,
            explanation=explanation,
            advice=("Fix the failure on the root process; the errors on the other ranks are the "
                    "launcher cleaning up. If the root error is an exception, its traceback is above "
                    "the evidence line in the same file."),
            rows=evidence_rows,
            culprit=culprit,
            category=category,
            severity=Severity.WARNING if recovered else Severity.CRITICAL,
            role=Role.CONTEXT if recovered else Role.ROOT,
            ranks=[culprit.rank] if culprit.rank is not None else [],
            hosts=[culprit.node or culprit.host] if (culprit.node or culprit.host) else [],
            ordered=True,
        )]

    @staticmethod
    def _after(root: dict[str, Any], failures: _Failures) -> list[int]:
        """The positions of the records from the root's moment on (order_key) about another
        process that are reactions, summaries or detailed failures. The records are in
        order_key's order: those are a tail, found by bisection (a crash loop's ~96,000 records
        were each given their order_key again)."""
        records, keys, victim = failures.records, failures.keys, failures.victim
        root_key = process_key(root)
        start = bisect_left(records, order_key(root), key=order_key)
        return [n for n in range(start, len(records)) if keys[n] != root_key
                and (victim[n] or event_of(records[n]) in SUMMARY_EVENTS or event_of(records[n]) in DETAIL_EVENTS)]

    @staticmethod
    def _signalled(records: list[dict[str, Any]], keys: list[tuple[str, str]]) -> Signalled:
        """When each process was told to stop (``keys``: each record's process_key): (place, pid)
        for a closing signal, (place, -1) when the node's agent got a death signal, every place
        when SLURM cancelled the job for a reason (time limit, preemption...). A reasonless
        cancellation is usually srun's own --kill-on-bad-exit reacting to a failure, so it marks
        nobody. c10d's teardown announcement marks its process (place, pid), or the place
        (TEARDOWN_ANNOUNCED) when the line names no pid: a SIGABRT exit there follows from it."""
        out = Signalled()

        def mark(key: tuple[str, int], row: dict[str, Any]) -> None:
            when = window_of(row)[0]
            if key not in out or (when is not None and (out[key] is None or when < out[key])):  # type: ignore[operator]
                out[key] = when
                out.rows[key] = row

        places = list(dict.fromkeys(key[0] for key in keys))
        for r, (place, _) in zip(records, keys, strict=True):
            if r["event"] not in _MARKING:
                continue  # most records: nobody was told to stop by them
            event = event_of(r)
            if event == Event.CLOSING_SIGNAL and field_of(r, "target_pid") is not None:
                mark((place, int(field_of(r, "target_pid"))), r)
            elif event == Event.AGENT_SIGNAL:
                mark((place, -1), r)
            elif event == Event.CANCELLED and field_of(r, "reason"):
                for every in places:
                    mark((every, -1), r)
            elif event == Event.TEARDOWN:
                mark((place, int(r["pid"]) if r.get("pid") is not None else TEARDOWN_ANNOUNCED), r)
        return out

    @classmethod
    def _root(cls, records: list[dict[str, Any]], keys: list[tuple[str, str]],
              victim: list[bool]) -> dict[str, Any] | None:
        """The earliest non-victim failure, preferring detailed lines over launcher summaries
        (``records`` in order_key's order, as _failure_records gives them; ``keys`` and
        ``victim``: each record's process_key and is_victim, as in _Failures).

        A process whose first failure line is a reaction (lost peer, timeout, SIGTERM) reacted to
        something else: its later lines, and the launcher's reports about it, are consequences.
        """
        scheduler = (Event.CANCELLED, Event.STEP_ABORTED, Event.SRUN_TASK_EXIT, Event.NODE_FAILURE, Event.HOST_OOM)
        events = [event_of(r) for r in records]
        # A process's first failure line is the one that can have been written earliest. The
        # launcher's reports on its exit (failed (exitcode), ChildFailedError) come after anything
        # the process wrote itself, whatever their second-truncated time says, so they only count
        # for a process that wrote no failure line of its own. ``records`` come in order_key's
        # order and the sort keeps the order of equals: they stay in it where the rest ties.
        # (A row's earliest time, window_of(row)[0], is its ``time``, inferred or not.)
        own_lines = sorted((n for n, event in enumerate(events) if event not in scheduler),
                           key=lambda n: (events[n] in EXIT_REPORTS, records[n].get("time") or datetime.max))
        # Indexed, not compared pairwise: a log with thousands of failure lines stays linear.
        seen = _ProcessIndex()
        # The identities (place, rank, local rank, pid) of rows already taken that name a process:
        # the index would find a later row with the same one seen (a crash loop repeats a few
        # hundred identities over ~90,000 lines), so it is not asked again.
        taken: set[tuple[Any, ...]] = set()
        reacting = _ProcessIndex()
        reacting_on: dict[str, datetime] = {}  # per place, the earliest reaction
        reaction_rows: dict[str, dict[str, Any]] = {}  # and its line
        for n in own_lines:
            r, place = records[n], keys[n][0]
            identity = (place, r.get("rank"), r.get("local_rank"), r.get("pid"))
            if identity in taken:
                continue
            if identity[1:] != (None, None, None):
                taken.add(identity)
            if seen.earliest(r, place) is not None:
                continue
            seen.add(r, place, datetime.min)
            if victim[n]:
                first_time = window_of(r)[0] or datetime.min
                reacting.add(r, place, first_time)
                if place not in reacting_on or first_time < reacting_on[place]:
                    reacting_on[place], reaction_rows[place] = first_time, r

        def reacted(row: dict[str, Any], place: str) -> bool:
            # The reaction may have come first as soon as its earliest time is not after the row's
            # latest (second-resolution records included).
            latest = (window_of(row)[1] or datetime.max.replace(year=9998)) + RECORD_RESOLUTION
            # srun's task lines name a node, not a process: any reaction on that node counts.
            if event_of(row) == Event.SRUN_TASK_EXIT and place in reacting_on:
                if _bounded_by(row, reaction_rows[place]):
                    return False
                return reacting_on[place] <= latest
            first_time = reacting.earliest(row, place)
            return first_time is not None and first_time <= latest

        # Judged only where what follows reads it: the rows that are no reaction themselves, and
        # torchrun's "Root Cause" records (_root_by_childfailed reads no other). A crash loop
        # leaves ~95,000 records, ~85,000 of them reactions: reacted cost ~10 us each (~0.8 s).
        react = [(not victim[n] or (events[n] == Event.CHILD_FAILURE and field_of(r, "key") == "root"))
                 and reacted(r, key[0]) for n, (r, key) in enumerate(zip(records, keys, strict=True))]
        detailed = [n for n, event in enumerate(events) if event in DETAIL_EVENTS
                    and event != Event.CPP_EXCEPTION and not victim[n] and not react[n]]
        summaries = [records[n] for n, event in enumerate(events) if event in SUMMARY_EVENTS and not victim[n]
                     and (not react[n] or event in (Event.NODE_FAILURE, Event.HOST_OOM))]
        # A terminate on a process that had already reacted to another's failure (a lost peer) is
        # its teardown, as its other lines after the reaction are.
        cpp = [records[n] for n, event in enumerate(events)
               if event == Event.CPP_EXCEPTION and not victim[n] and not react[n]]
        by_node_time = cls._root_by_childfailed([r for n, r in enumerate(records) if not react[n]])
        if detailed:
            if by_node_time is not None:
                on_node = [n for n in detailed if keys[n][0] == by_node_time]
                if on_node and len({keys[n][0] for n in detailed}) > 1:
                    return records[on_node[0]]
            return records[detailed[0]]
        if cpp:
            return cpp[0]
        if summaries:
            # The launcher's report about one process says more than srun's line about a node,
            # which srun prints later, after it noticed.
            return min(summaries, key=lambda r: (event_of(r) == Event.SRUN_TASK_EXIT, order_key(r)))
        return None

    @staticmethod
    def _tied(root: dict[str, Any], failures: _Failures) -> bool:
        """Whether the root is a launcher's exit report (no line of its own) with another process's
        non-reaction exit report of the same exit code at the same moment, and torchrun's own "Root
        Cause" names neither."""
        if event_of(root) not in EXIT_REPORTS or field_of(root, "key") == "root":
            return False
        at = window_of(root)[0]
        if at is None:
            return False
        code = field_of(root, "exit_code")
        root_key = process_key(root)
        for r, key, victim in zip(failures.records, failures.keys, failures.victim, strict=True):
            if event_of(r) not in EXIT_REPORTS or key == root_key or victim:
                continue
            if field_of(r, "exit_code") != code:
                continue  # another kind of exit (a SIGTERM beside a SIGKILL) is another story
            when = window_of(r)[0]
            if when is not None and abs(when - at) <= RECORD_RESOLUTION:
                return True
        return False

    @staticmethod
    def _root_by_childfailed(records: list[dict[str, Any]]) -> str | None:
        """torchrun's per-node "Root Cause" records, compared across nodes by their time. The
        caller leaves out records about a process that had already reacted to someone else: such
        a record says that node's first observed failure came from elsewhere."""
        best: tuple[datetime, int, str] | None = None
        for r in records:
            if event_of(r) != Event.CHILD_FAILURE or field_of(r, "key") != "root":
                continue
            if r.get("time") is None or r.get("time_inferred"):
                continue
            code = field_of(r, "exit_code")
            signal_rank = 1 if code is not None and int(code) in SIGNAL_EXIT else 0
            place = process_key(r)[0]
            candidate = (r["time"], signal_rank, place)
            if best is None or candidate < best:
                best = candidate
        return best[2] if best else None

    @staticmethod
    def _its_exit_report(root: dict[str, Any], failures: _Failures) -> list[dict[str, Any]]:
        """The launcher's report on the root process's exit when the lines cannot tie it to the
        root by identity (the exception names a rank, torchrun's report a local rank and a pid):
        the one report of an exit that was no reaction, at the root's place, after it, for a root
        that is a process's own failure line naming its rank. Several such reports say several
        processes failed: none is taken."""
        if event_of(root) in SUMMARY_EVENTS or root.get("rank") is None or root.get("local_rank") is not None:
            return []
        place, at = process_key(root)[0], order_key(root)
        reports = [r for r, key, victim in zip(failures.records, failures.keys, failures.victim, strict=True)
                   if event_of(r) in EXIT_REPORTS and not victim and key[0] == place and order_key(r) >= at]
        return reports if len(reports) == 1 else []

    @staticmethod
    def _refine(culprit: Any, own: list[dict[str, Any]], records: list[dict[str, Any]]) -> Any:
        """Fill the culprit's global rank / local rank from its own summary lines."""
        from dataclasses import replace

        rank, local = culprit.rank, culprit.local_rank
        for r in own:
            if rank is None and r.get("rank") is not None:
                rank = r["rank"]
            if local is None and r.get("local_rank") is not None:
                local = r["local_rank"]
        if rank is None and local is not None:
            place = culprit.node or culprit.host
            for r in records:
                if (event_of(r) == Event.CHILD_FAILURE and r.get("local_rank") == local
                        and (r.get("node") or r.get("host")) == place and r.get("rank") is not None):
                    rank = r["rank"]
                    break
        return replace(culprit, rank=rank, local_rank=local)

    @staticmethod
    def _describe(row: dict[str, Any]) -> str:
        event = event_of(row)
        error_type = field_of(row, "error_type")
        message = field_of(row, "message")
        if event in (Event.EXCEPTION, Event.ERROR_FILE, Event.CUDA_OOM, Event.CUDA_ERROR):
            head = f"{error_type}: " if error_type else ""
            body = message or row.get("text") or ""
            if event == Event.CUDA_ERROR and not str(body).startswith("CUDA"):
                body = f"CUDA error: {body}"
            return f"{head}{body}"[:200]
        if event == Event.WORKER_FAILED:
            return f"worker exited with code {field_of(row, 'exit_code')}"
        if event == Event.CHILD_FAILURE:
            return f"exit code {field_of(row, 'exit_code')} (torchrun ChildFailedError record)"
        if event == Event.FATAL_SIGNAL:
            return str(field_of(row, "signal") or field_of(row, "message") or row.get("text"))[:200]
        if event == Event.CPP_EXCEPTION:
            return f"C++ exception {error_type}" if error_type else f"C++ terminate {message or ''}".strip()
        return str(row.get("text") or "")[:200]


__all__ = ["ExitCascade", "Victims", "category_of", "is_victim", "process_key", "root_failure", "same_process"]
