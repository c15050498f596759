"""Asking the cluster: ``sacct`` (slurmdbd's record) and ``scontrol show job`` (slurmctld's, while it
still holds the job). The commands run with a timeout and never through a shell; their failures are
one :class:`AccountingError` line (exit code 2).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from logscope.accounting.jobid import JobRef, select_job
from logscope.accounting.record import AccountingRecord, merged
from logscope.accounting.sacct_json import parse_sacct_json
from logscope.accounting.sacct_parsable import parse_batch_script, parse_sacct_parsable
from logscope.accounting.saved import MAX_BYTES, folded
from logscope.accounting.scontrol import parse_scontrol
from logscope.errors import AccountingError
from logscope.textsafe import drop_controls

TIMEOUT_S = 60
# The most a command may print (each stream): a job's record is kilobytes, its batch script and
# --json a few megabytes; a saved record is refused past the same size (saved.MAX_BYTES).
MAX_OUTPUT_BYTES = MAX_BYTES
# The fields `sacct -P` is asked for when --json is not available (SLURM before 20.11, or a
# build without the JSON serializer); src/sacct/sacct.c names them.
PARSABLE_FIELDS = "JobID,JobName,State,ExitCode,Reason,NodeList,Start,End,MaxRSS,MaxRSSNode,User,WorkDir"
# FailedNode is a field of sacct since 23.02 (src/sacct/sacct.c); older sacct refuses it
PARSABLE_FIELDS_NEW = PARSABLE_FIELDS + ",FailedNode"


@dataclass(frozen=True)
class Outputs:
    """The raw text each command printed (kept for ``--save``), by the file name it is saved as."""

    texts: dict[str, str]


def _run(command: Sequence[str]) -> tuple[int, str, str]:
    try:
        code, out, err = run_capped(command, TIMEOUT_S, MAX_OUTPUT_BYTES)
    except FileNotFoundError:
        raise AccountingError(f"{command[0]} is not on PATH: run logscope on a SLURM login node, or save the "
                              "job's record beside its logs (see the README, \"Away from the cluster\")") from None
    except OSError as error:
        raise AccountingError(f"cannot run {command[0]}: {error.strerror or error}") from None
    # what SLURM prints (job names, paths, Reason) reaches the outputs: never its escape sequences
    return code, drop_controls(out.decode("utf-8", "replace")), drop_controls(err.decode("utf-8", "replace"))


def run_capped(command: Sequence[str], timeout_s: float, max_bytes: int) -> tuple[int, bytes, bytes]:
    """Run ``command`` (no shell, no standard input) in a process group of its own and return its
    exit code, standard output and standard error, read as they come.

    AccountingError when it has not ended within ``timeout_s`` or prints more than ``max_bytes``
    (on either stream): the whole group is killed then, the processes it started too (one that
    still holds the pipe must not keep logscope waiting, nor run on), and what it printed is not
    read further. So is it when logscope is interrupted meanwhile."""
    process = subprocess.Popen(list(command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    shown = " ".join(command)
    deadline = time.monotonic() + timeout_s
    streams = [stream for stream in (process.stdout, process.stderr) if stream is not None]
    chunks: dict[int, list[bytes]] = {stream.fileno(): [] for stream in streams}
    sizes = dict.fromkeys(chunks, 0)
    code = None
    try:
        with selectors.DefaultSelector() as selector:
            for stream in streams:
                os.set_blocking(stream.fileno(), False)
                selector.register(stream.fileno(), selectors.EVENT_READ)
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AccountingError(f"{shown} did not answer in {timeout_s:g} s")
                for key, _ in selector.select(min(left, 1.0)):
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        selector.unregister(key.fd)
                        continue
                    sizes[key.fd] += len(data)
                    if sizes[key.fd] > max_bytes:
                        raise AccountingError(f"{shown} printed more than {max_bytes // (1024 * 1024)} MiB: not "
                                              "the record of one job")
                    chunks[key.fd].append(data)
        try:
            code = process.wait(max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            raise AccountingError(f"{shown} did not answer in {timeout_s:g} s") from None
    finally:
        if code is None:
            _kill_group(process)
        parts = [b"".join(chunks[stream.fileno()]) for stream in streams]
        for stream in streams:
            stream.close()
    return code, parts[0], parts[1]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process`` and every process of its group (it leads one: start_new_session), and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    process.wait()


def _first_error(stderr: str) -> str:
    """The line of a command's standard error that says why it failed, without its ``sacct: `` name."""
    lines = [re.sub(r"^(?:sacct|scontrol|slurm_load_jobs)(?::| error:)\s*", "", line.strip())
             for line in stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if "fatal" in line or "error" in line]
    return (fatal[-1] if fatal else lines[-1] if lines else "no message")[:200]


def query(ref: JobRef) -> tuple[AccountingRecord, Outputs]:
    """The job's record from sacct (and scontrol while slurmctld holds it), and the texts read.

    Raises AccountingError when neither command is available, sacct cannot reach the database
    and scontrol does not know the job, or the job id is unknown to both.
    """
    if shutil.which("sacct") is None and shutil.which("scontrol") is None:
        raise AccountingError("neither sacct nor scontrol is on PATH: run logscope on a SLURM login node, or "
                              "save the job's record beside its logs (see the README, \"Away from the cluster\")")
    texts: dict[str, str] = {}
    problems: list[str] = []
    record = _from_sacct(ref, texts, problems) if shutil.which("sacct") else None
    live = _from_scontrol(ref, texts, problems) if shutil.which("scontrol") else None
    if record is None and live is None:
        raise AccountingError(f"no record of job {ref}: " + "; ".join(problems))
    if record is not None and live is not None:
        record = merged(record, live)
    found = record if record is not None else live
    if found is None:  # pragma: no cover - both None was refused above
        raise AccountingError(f"no record of job {ref}")
    return found, Outputs(texts)


def _from_sacct(ref: JobRef, texts: dict[str, str], problems: list[str]) -> AccountingRecord | None:
    """sacct's record: ``-P`` (its ExitCode is right on every version; 22.05's ``--json`` loses it)
    completed from ``--json`` (the output patterns, the script, FailedNode on newer versions)."""
    name = ref.job_id
    code, out, err = _run(["sacct", "-j", name, "-P", f"--format={PARSABLE_FIELDS_NEW}"])
    if code != 0 and "FailedNode" in err:  # a sacct before 23.02
        code, out, err = _run(["sacct", "-j", name, "-P", f"--format={PARSABLE_FIELDS}"])
    if code != 0:
        problems.append(f"sacct: {_first_error(err)}")
        return None
    records: list[AccountingRecord] = []
    if len(out.strip().splitlines()) >= 2:
        records = parse_sacct_parsable(out, f"sacct -j {name} -P")
        texts["sacct.txt"] = out
    code, out, err = _run(["sacct", "-j", name, "--json"])
    if code == 0 and out.lstrip().startswith("{"):  # a sacct without --json says so and exits 1
        try:
            parsed = parse_sacct_json(out, f"sacct -j {name} --json")
        except AccountingError as error:  # "Nothing found": a job slurmdbd has no record of yet
            problems.append(str(error))
            parsed = []
        if parsed:
            texts["sacct.json"] = out
        records = folded([*records, *parsed])
    if not records:
        problems.append(f"sacct knows no job {name}")
        return None
    try:
        record = select_job(records, ref, "sacct")
    except AccountingError as error:
        problems.append(str(error))
        return None
    if record.script is None:
        code, out, _ = _run(["sacct", "-j", record.job_id, "-B"])
        scripts = parse_batch_script(out) if code == 0 else {}
        script = scripts.get(record.job_id) or (next(iter(scripts.values())) if len(scripts) == 1 else None)
        if script is not None:
            texts["batch-script.sh"] = script
            record = dataclasses.replace(record, script=script)
    elif "batch-script.sh" not in texts:
        texts["batch-script.sh"] = record.script
    return record


def _from_scontrol(ref: JobRef, texts: dict[str, str], problems: list[str]) -> AccountingRecord | None:
    code, out, err = _run(["scontrol", "show", "job", ref.job_id])
    if code != 0 or not out.strip():
        problems.append(f"scontrol: {_first_error(err)}")
        return None
    try:
        # scontrol lists no steps: the step of a JOBID.STEP is picked from sacct's record
        record = select_job(parse_scontrol(out, f"scontrol show job {ref.job_id}"), JobRef(ref.job, ref.task),
                            "scontrol")
    except AccountingError as error:
        problems.append(str(error))
        return None
    texts["scontrol.txt"] = out
    return record


def live_state(ref: JobRef) -> str | None:
    """The job's state now: slurmctld's (``scontrol show job``) while it holds the job, else what
    sacct recorded (``sacct -X -P``, the allocation's line); None when neither answers (``logscope
    watch JOBID`` asks again and again: two commands at most, never sacct's ``--json`` or ``-B``)."""
    try:
        if shutil.which("scontrol"):
            problems: list[str] = []
            record = _from_scontrol(ref, {}, problems)
            if record is not None:
                return record.job.state
        if shutil.which("sacct"):
            code, out, _ = _run(["sacct", "-j", ref.job_id, "-X", "-n", "-P", "--format=JobID,State"])
            for line in out.splitlines() if code == 0 else []:
                job_id, _, state = line.partition("|")
                if job_id.strip() == ref.job_id and state.strip():
                    return state.split()[0].upper()
    except AccountingError:
        return None
    return None


__all__ = ["PARSABLE_FIELDS", "PARSABLE_FIELDS_NEW", "Outputs", "live_state", "query"]
