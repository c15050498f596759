"""``scontrol show job``: the plain ``Key=Value`` text and ``--json``, read into :class:`AccountingRecord`.

slurmctld keeps a job for ``MinJobAge`` (300 s by default) after it ends; until then ``scontrol
show job`` gives what sacct may lack (the expanded StdOut/StdErr, the batch host, the Reason).

Plain text (SchedMD/slurm src/scontrol/info_job.c, ``slurm_sprint_job_info``): ``Key=Value``
pairs, several per line, a job per paragraph; ``JobId=%u``, ``ArrayJobId=%u ArrayTaskId=%u``,
``JobName=``, ``UserId=%s(%u)``, ``JobState=%s`` (``job_state_string``), ``Reason=``,
``ExitCode=%u:%u``, ``StartTime=``/``EndTime=`` (``Unknown`` when unset), ``NodeList=``,
``BatchHost=``, and ``WorkDir=``, ``StdErr=``, ``StdOut=``, ``Command=`` each alone on their line
(their value is the rest of it, spaces included). ``-o`` (one line per job) is read too.

``--json`` (``{"jobs": [...]}``, data_parser ``JOB_INFO``): ``job_id``, ``name``, ``job_state``
(a string in 22.05's v0.0.38, a list later), ``state_reason``, ``exit_code``, ``nodes``,
``batch_host``, ``standard_output``, ``standard_error``, ``current_working_directory``,
``start_time``/``end_time`` (epochs, plain or ``{set, infinite, number}``), ``user_name``,
``array_job_id``/``array_task_id``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from logscope.accounting.hostlist import NodeNames
from logscope.accounting.record import AccountingRecord, StepRecord
from logscope.accounting.values import epoch_time, exit_json, exit_text, number, state_of, text_time
from logscope.errors import AccountingError
from logscope.textsafe import drop_controls

NO_VAL = 0xFFFFFFFE
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_/:]*=")
# keys whose value is the rest of their line (paths and commands may hold spaces)
_WHOLE_LINE = ("WorkDir=", "StdErr=", "StdIn=", "StdOut=", "Command=", "Comment=", "SubmitLine=")


def parse_scontrol(text: str, source: str) -> list[AccountingRecord]:
    """The jobs of ``scontrol show job`` output, plain or ``--json``."""
    if text.lstrip().startswith("{"):
        return _parse_json(text, source)
    jobs = [_pairs(block) for block in re.split(r"\n\s*\n", text) if block.strip()]
    jobs = [pairs for pairs in jobs if pairs]
    if not jobs or any("JobId" not in pairs for pairs in jobs):
        raise AccountingError(f"{source}: not scontrol show job output (no JobId=)")
    names = NodeNames(source)
    return [_record(pairs, source, names) for pairs in jobs]


def _pairs(block: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for line in block.splitlines():
        stripped = line.strip()
        if stripped.startswith(_WHOLE_LINE):
            key, _, value = stripped.partition("=")
            pairs[key] = value
            continue
        last: str | None = None
        for token in stripped.split():
            if _KEY.match(token):
                last, _, value = token.partition("=")
                pairs[last] = value
            elif last is not None:
                pairs[last] += " " + token  # a value with spaces (Reason=..., a one-liner's paths)
    return pairs


def _record(pairs: dict[str, str], source: str, names: NodeNames) -> AccountingRecord:
    if "JobState" not in pairs:
        raise AccountingError(f"{source}: job {pairs.get('JobId')} has no JobState= (truncated?)")
    raw_id = pairs["JobId"].strip()
    if not raw_id.isdigit():
        raise AccountingError(f"{source}: JobId={raw_id[:40]!r} is not a job id")
    array_job, task = pairs.get("ArrayJobId"), pairs.get("ArrayTaskId")
    job_id = f"{array_job}_{task}" if array_job and task and task.isdigit() else raw_id
    state, by = state_of(pairs["JobState"])
    code, sig = exit_text(pairs.get("ExitCode"))
    user = pairs.get("UserId", "")
    job = StepRecord(
        job_id=job_id, step=None, state=state, name=pairs.get("JobName") or None, cancelled_by=by,
        exit_code=code, signal=sig, reason=_none(pairs.get("Reason")),
        nodes=names.expand(_none(pairs.get("NodeList")) or ""),
        start=text_time(pairs.get("StartTime")), end=text_time(pairs.get("EndTime")))
    return AccountingRecord(
        job=job, user=user.split("(", 1)[0] or None, uid=_uid(user), work_dir=_none(pairs.get("WorkDir")),
        stdout=_none(pairs.get("StdOut")), stderr=_none(pairs.get("StdErr")),
        batch_host=_none(pairs.get("BatchHost")), failed_node=_none(pairs.get("FailedNode")),
        array_job_id=array_job if task else None,
        array_task_id=task if task and task.isdigit() else None, sources=(source,))


def _uid(user: str) -> int | None:
    """The uid of ``UserId=alice(1000)``."""
    match = re.fullmatch(r"[^(]*\((\d{1,10})\)", user.strip())
    return int(match.group(1)) if match else None


def _none(value: str | None) -> str | None:
    if value is None or value.strip() in ("", "(null)", "None", "None assigned"):
        return None
    return value.strip()


def _parse_json(text: str, source: str) -> list[AccountingRecord]:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise AccountingError(f"{source}: not valid scontrol --json output "
                              f"({str(error).splitlines()[0][:120]})") from None
    jobs = document.get("jobs") if isinstance(document, dict) else None
    if not isinstance(jobs, list) or not all(isinstance(j, dict) and "job_id" in j for j in jobs):
        raise AccountingError(f"{source}: not scontrol show job --json output (no \"jobs\" list of jobs)")
    try:
        names = NodeNames(source)
        return [_json_record(job, source, names) for job in jobs]
    except (TypeError, AttributeError, ValueError) as error:
        raise AccountingError(f"{source}: malformed scontrol --json job ({error})") from None


def _json_record(job: dict[str, Any], source: str, names: NodeNames) -> AccountingRecord:
    raw = number(job.get("job_id"))
    if raw is None:
        raise AccountingError(f"{source}: a job without job_id")
    array_job, task = number(job.get("array_job_id")), number(job.get("array_task_id"))
    has_task = bool(array_job) and task is not None and task < NO_VAL
    job_id = f"{array_job}_{task}" if has_task else str(raw)
    if "job_state" not in job:
        raise AccountingError(f"{source}: job {job_id} has no job_state (truncated?)")
    state, by = state_of(job.get("job_state"))
    code, sig = exit_json(job.get("exit_code"), state)
    record = StepRecord(
        job_id=job_id, step=None, state=state, name=_text(job.get("name")), cancelled_by=by,
        exit_code=code, signal=sig, reason=_none(_text(job.get("state_reason"))),
        nodes=names.expand(_text(job.get("nodes")) or ""),
        start=epoch_time(job.get("start_time")), end=epoch_time(job.get("end_time")))
    return AccountingRecord(
        job=record, user=_text(job.get("user_name")), uid=_json_uid(job.get("user_id")),
        work_dir=_text(job.get("current_working_directory")),
        stdout=_text(job.get("standard_output")), stderr=_text(job.get("standard_error")),
        batch_host=_text(job.get("batch_host")), failed_node=_text(job.get("failed_node")),
        array_job_id=str(array_job) if has_task else None,
        array_task_id=str(task) if has_task else None, sources=(source,))


def _json_uid(value: Any) -> int | None:
    found = number(value)
    return found if found is not None and 0 <= found < NO_VAL else None


def _text(value: Any) -> str | None:
    """A JSON string as text (its \\u001b escapes decoded by json: dropped here)."""
    if value is None or isinstance(value, (dict, list)):
        return None
    return drop_controls(str(value)).strip() or None


__all__ = ["parse_scontrol"]
