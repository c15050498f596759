"""``sacct --json``: every data_parser version's shape, read into :class:`AccountingRecord`.

Two families, read from SchedMD/slurm's sources:

* 22.05 (``src/plugins/openapi/dbv0.0.38/parse.c``, ``parse_job``/``parse_job_step``): the job's
  ``state`` is ``{"current": "FAILED", "reason": "None"}``, ``exit_code`` is ``{"status": "ERROR",
  "return_code": 1}`` (``"signal": {"signal_id": 9, "name": ...}`` when signalled; ``SUCCESS 0`` for
  any exit, so a failed step's code is unknown there: :func:`~logscope.accounting.values.exit_json`),
  times are plain
  epochs, a step's ``state`` is a string and its id ``{"job_id": 12345, "id": "batch"}``, its nodes
  ``{"count": 2, "range": "gpu[01-02]"}``;
* 23.02 to 25.x (``src/plugins/data_parser/v0.0.39``...``v0.0.4x/parsers.c``, ``PARSER_ARRAY(JOB)``
  and ``PARSER_ARRAY(STEP)``): ``state.current`` and a step's ``state`` are lists, ``exit_code`` is
  ``{"status": ["SIGNALED"], "return_code": {"set", "infinite", "number"}, "signal": {"id": {...},
  "name": "KILL"}}``, a step's times are ``{"set", "infinite", "number"}``, its id ``"12345.batch"``,
  its nodes also ``"list": [...]``; the job has ``stdout``/``stderr`` (the pattern as submitted,
  kept: its ``%N`` names every node's file) and ``*_expanded`` (v0.0.42+, expanded for the batch
  host only), ``script`` (with ``sacct -B``), ``failed_node`` and ``kill_request_user``.

Anything that is not such a document is an :class:`AccountingError` (one line, exit code 2).
"""

from __future__ import annotations

import json
from typing import Any

from logscope.accounting.hostlist import NodeNames
from logscope.accounting.record import AccountingRecord, StepRecord
from logscope.accounting.values import epoch_time, exit_json, number, state_of
from logscope.errors import AccountingError
from logscope.textsafe import drop_controls

NO_VAL = 0xFFFFFFFE  # SLURM's "not set" for a 32-bit field (slurm.h NO_VAL)


def parse_sacct_json(text: str, source: str) -> list[AccountingRecord]:
    """The jobs of a ``sacct --json`` document. Raises AccountingError when it is not one."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise AccountingError(f"{source}: not valid sacct --json output ({_short(error)})") from None
    if not isinstance(document, dict) or not isinstance(document.get("jobs"), list):
        raise AccountingError(f"{source}: not sacct --json output (no \"jobs\" list)")
    _raise_reported_errors(document, source)
    records = []
    names = NodeNames(source)
    for index, job in enumerate(document["jobs"]):
        if not isinstance(job, dict):
            raise AccountingError(f"{source}: job {index + 1} of \"jobs\" is not an object")
        try:
            records.append(_record(job, source, names))
        except (TypeError, AttributeError, ValueError) as error:
            raise AccountingError(f"{source}: job {index + 1} of \"jobs\" is malformed ({_short(error)})") from None
    return records


def _raise_reported_errors(document: dict[str, Any], source: str) -> None:
    """sacct --json reports its own failures in an ``errors`` list (data_parser v0.0.39+)."""
    errors = document.get("errors")
    if isinstance(errors, list) and errors and not document["jobs"]:
        first = errors[0]
        what = first.get("description") or first.get("error") if isinstance(first, dict) else str(first)
        raise AccountingError(f"{source}: sacct reported an error: {what}")


def _record(job: dict[str, Any], source: str, names: NodeNames) -> AccountingRecord:
    job_id = _job_id(job)
    state = job.get("state") or {}
    current = state.get("current") if isinstance(state, dict) else state
    base, by = state_of(current)
    code, sig = exit_json(job.get("exit_code"), base)
    times = job.get("time") or {}
    killer = job.get("kill_request_user")
    if base == "CANCELLED" and by is None and killer not in (None, "", NO_VAL):
        by = str(killer)
    record = StepRecord(
        job_id=job_id, step=None, state=base, name=_text(job.get("name")), cancelled_by=by,
        exit_code=code, signal=sig, reason=_text(state.get("reason")) if isinstance(state, dict) else None,
        nodes=names.expand(_text(job.get("nodes")) or ""),
        start=epoch_time(times.get("start")), end=epoch_time(times.get("end")))
    steps = tuple(_step(step, job_id, names) for step in job.get("steps") or [])
    user = job.get("user")
    array = job.get("array") or {}
    return AccountingRecord(
        job=record, steps=steps,
        user=_text(user.get("name")) if isinstance(user, dict) else _text(user),
        work_dir=_text(job.get("working_directory")),
        stdout=_text(job.get("stdout")) or _text(job.get("stdout_expanded")),
        stderr=_text(job.get("stderr")) or _text(job.get("stderr_expanded")),
        failed_node=_text(job.get("failed_node")),
        array_job_id=_set_id(array.get("job_id")), array_task_id=_set_id(array.get("task_id")),
        script=_text(job.get("script")), sources=(source,))


def _job_id(job: dict[str, Any]) -> str:
    raw = number(job.get("job_id"))
    if raw is None:
        raise AccountingError("a job of sacct --json has no job_id")
    array = job.get("array") or {}
    array_job, task = _set_id(array.get("job_id")), _set_id(array.get("task_id"))
    if array_job and task is not None:
        return f"{array_job}_{task}"
    return str(raw)


def _set_id(value: Any) -> str | None:
    """An id that is set: not 0 for a job id, not NO_VAL/INFINITE for a task id."""
    found = number(value)
    if found is None or found >= NO_VAL:
        return None
    return str(found)


def _step(step: dict[str, Any], job_id: str, names: NodeNames) -> StepRecord:
    ident = step.get("step") or {}
    raw = str(ident.get("id")) if isinstance(ident, dict) and ident.get("id") is not None else ""
    name = raw.rsplit(".", 1)[-1] if "." in raw else raw  # "12345.batch" (v0.0.39+) or "batch" (0.0.38)
    if not name:
        raise AccountingError(f"a step of job {job_id} has no id")
    base, by = state_of(step.get("state"))
    code, sig = exit_json(step.get("exit_code"), base)
    killer = step.get("kill_request_user")
    if base == "CANCELLED" and by is None and killer not in (None, "", NO_VAL):
        by = str(killer)
    nodes_part = step.get("nodes") or {}
    listed = nodes_part.get("list") if isinstance(nodes_part, dict) else None
    nodes = names.listed([drop_controls(str(n)) for n in listed]) if isinstance(listed, list) and listed else \
        names.expand(_text(nodes_part.get("range")) or "" if isinstance(nodes_part, dict) else "")
    times = step.get("time") or {}
    rss, rss_node = _max_rss(step)
    return StepRecord(
        job_id=job_id, step=name, state=base, name=_text(ident.get("name")) if isinstance(ident, dict) else None,
        cancelled_by=by, exit_code=code, signal=sig, nodes=nodes,
        start=epoch_time(times.get("start")), end=epoch_time(times.get("end")), max_rss=rss, max_rss_node=rss_node)


def _max_rss(step: dict[str, Any]) -> tuple[str | None, str | None]:
    """MaxRSS and its node: the ``mem`` entry of ``tres.requested.max`` (usage in, as sacct's MaxRSS)."""
    tres = step.get("tres") or {}
    requested = tres.get("requested") if isinstance(tres, dict) else None
    highest = requested.get("max") if isinstance(requested, dict) else None
    for entry in highest if isinstance(highest, list) else []:
        if isinstance(entry, dict) and entry.get("type") == "mem":
            count = number(entry.get("count"))
            node = entry.get("node")
            return (f"{count // 1024}K" if count is not None else None), (str(node) if node else None)
    return None, None


def _text(value: Any) -> str | None:
    """A JSON string as text (its \\u001b escapes decoded by json: dropped here)."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = drop_controls(str(value)).strip()
    return text or None


def _short(error: BaseException) -> str:
    return str(error).splitlines()[0][:120] if str(error) else type(error).__name__


__all__ = ["parse_sacct_json"]
