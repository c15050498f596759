"""The jobs SLURM's record lists for a selection (``logscope scan --user/--since/--state/--array``):
one ``sacct -P`` for the jobs, their steps and the fields of their efficiency
(:mod:`~logscope.accounting.efficiency`), completed from one ``sacct --json`` of the same selection
(the ``--output`` patterns, the batch scripts, the array ids: what ``-P`` of SLURM 22.05 lacks), as
``logscope analyze JOBID`` completes one job's (:mod:`~logscope.accounting.query`).

Array jobs are listed task by task (``12345_0``, ``12345_1``, ...: sacct's own lines); a task that
has not started yet (sacct's ``12345_[4-9]``) and every job that never started is left out: it has
no log and no use of anything.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from logscope.accounting.efficiency import FIELDS as EFFICIENCY_FIELDS
from logscope.accounting.efficiency import Efficiency, efficiency_of
from logscope.accounting.record import AccountingRecord
from logscope.accounting.sacct_json import parse_sacct_json
from logscope.accounting.sacct_parsable import parse_batch_script, parse_sacct_parsable
from logscope.accounting.saved import folded
from logscope.errors import AccountingError, UsageError

# What logscope reads of each job (accounting.query's fields) and its efficiency's
LISTING_FIELDS = ("JobID,JobName,State,ExitCode,Reason,NodeList,Start,End,MaxRSS,MaxRSSNode,User,WorkDir,"
                  + ",".join(EFFICIENCY_FIELDS) + ",ReqTRES")
_JOB_IDS = re.compile(r"^\d+(?:_\d+)?(?:,\d+(?:_\d+)?)*$")
_NOT_STARTED = re.compile(r"_\[")  # a pending array's tasks, folded into one line by sacct
# sbatch's own --output/--error in the script's #SBATCH lines (or its command line): where the batch
# step wrote when the record does not say (sacct --json of 22.05 has no stdout; scontrol forgets the
# job after MinJobAge)
_SBATCH_OUTPUT = re.compile(r"(?:^|\s)(?:--(output|error)(?:=|\s+)|-([oe])\s*)(\S+)")
SCRIPTS_AT_ONCE = 200  # job ids a `sacct -B -j` is asked for at once


@dataclass(frozen=True)
class Selection:
    """Which jobs sacct lists: its ``--user``/``--allusers``, ``--starttime``/``--endtime``,
    ``--state`` and ``--jobs`` options."""

    users: tuple[str, ...] = ()  # none: sacct's default, the caller's own jobs; "all": everyone's
    since: datetime | None = None
    until: datetime | None = None
    states: tuple[str, ...] = ()
    job_ids: tuple[str, ...] = ()  # array job ids (every task) or jobs/tasks

    def arguments(self) -> list[str]:
        """sacct's options for this selection (never a shell: each value is one argument)."""
        args: list[str] = []
        if "all" in self.users:
            args.append("--allusers")
        elif self.users:
            args.append("--user=" + ",".join(self.users))
        if self.since is not None:
            args.append("--starttime=" + self.since.strftime("%Y-%m-%dT%H:%M:%S"))
        if self.until is not None:
            args.append("--endtime=" + self.until.strftime("%Y-%m-%dT%H:%M:%S"))
        if self.states:
            args.append("--state=" + ",".join(self.states))
        if self.job_ids:
            args.append("--jobs=" + ",".join(self.job_ids))
        return args

    def shown(self) -> str:
        return " ".join(self.arguments()) or "(sacct's defaults)"


def selection(users: Sequence[str] = (), since: datetime | None = None, states: Sequence[str] = (),
              arrays: Sequence[str] = (), now: datetime | None = None) -> Selection:
    """A checked :class:`Selection` from the command line's values (comma lists allowed). sacct
    shows only jobs *running now* for ``--state`` without a start time (its man page): a state asks
    from midnight today, as sacct does without ``--state``, unless a time or job ids are given."""
    def split(values: Sequence[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.strip() for value in values for v in value.split(",") if v.strip()))

    user_names, state_names, ids = split(users), tuple(s.upper() for s in split(states)), split(arrays)
    for name in user_names:
        if not re.fullmatch(r"[\w.@-]+", name):
            raise UsageError(f"--user wants user names (got {name!r})")
    for state in state_names:
        if not re.fullmatch(r"[A-Z_]+", state):
            raise UsageError(f"--state wants SLURM job states such as FAILED,TIMEOUT (got {state!r})")
    if ids and not _JOB_IDS.match(",".join(ids)):
        raise UsageError(f"--array wants job ids such as 12345 or 12345_7 (got {','.join(ids)!r})")
    now = now or datetime.now()
    if since is None and not ids:
        since = now.replace(hour=0, minute=0, second=0, microsecond=0)
    until = now if since is not None else None
    return Selection(user_names, since, until, state_names, ids)


@dataclass
class Listing:
    """The jobs a selection names: their records (steps included) and efficiency, by job id."""

    records: list[AccountingRecord] = field(default_factory=list)
    efficiency: dict[str, Efficiency] = field(default_factory=dict)
    not_started: int = 0
    messages: list[str] = field(default_factory=list)


def parse_listing(parsable: str, json_text: str | None, source: str) -> Listing:
    """The jobs of ``sacct -P`` output (with LISTING_FIELDS, or any fields including JobID and
    State), completed from ``sacct --json`` output of the same selection when given."""
    lines = [line for line in parsable.splitlines() if line.strip()]
    listing = Listing()
    if len(lines) < 2:
        return listing
    header = [name.strip() for name in lines[0].rstrip("|").split("|")]
    column = header.index("JobID") if "JobID" in header else None
    kept = [lines[0]]
    for line in lines[1:]:  # a pending array's folded tasks are no job yet
        values = line.split("|")
        job_id = values[column] if column is not None and column < len(values) else ""
        if _NOT_STARTED.search(job_id):
            listing.not_started += job_id.count(".") == 0
            continue
        kept.append(line)
    if len(kept) < 2:
        return listing
    records = parse_sacct_parsable("\n".join(kept), source)
    if json_text is not None:
        listed = {record.job_id for record in records}
        try:
            records = folded([*records, *(r for r in parse_sacct_json(json_text, source + " --json")
                                           if r.job_id in listed)])
        except AccountingError as error:
            listing.messages.append(f"{error}: the jobs' output patterns are SLURM's defaults")
    rows = _rows(kept)
    records = [_with_array_ids(r) for r in records]
    for record in records:
        # never ran (pending, or cancelled before it started: sacct gives it a Start but no node)
        if record.job.start is None or not (record.job.nodes or record.steps):
            listing.not_started += 1
            continue
        listing.records.append(record)
        steps = [rows[s.step_id] for s in record.steps if s.step_id in rows]
        listing.efficiency[record.job_id] = efficiency_of(rows.get(record.job_id, {}), steps)
    return listing


def with_scripts(listing: Listing, scripts: dict[str, str]) -> None:
    """Give the listed jobs that lack one their batch script (``sacct -B`` output, by job id), and
    the output patterns its ``#SBATCH`` lines name where the record names none."""
    for index, record in enumerate(listing.records):
        script = record.script or scripts.get(record.job_id)
        if script is None:
            continue
        stdout, stderr = record.stdout, record.stderr
        options = sbatch_outputs(script)
        listing.records[index] = dataclasses.replace(record, script=script, stdout=stdout or options.get("output"),
                                                     stderr=stderr or options.get("error"))


def sbatch_outputs(script: str) -> dict[str, str]:
    """The ``--output``/``--error`` patterns of a batch script's ``#SBATCH`` lines (those before its
    first command, as sbatch reads them)."""
    found: dict[str, str] = {}
    for line in script.splitlines()[1:] if script.startswith("#!") else script.splitlines():
        text = line.strip()
        if not text or (text.startswith("#") and not text.startswith("#SBATCH")):
            continue
        if not text.startswith("#SBATCH"):
            break  # sbatch stops reading options at the first command
        for match in _SBATCH_OUTPUT.finditer(text[len("#SBATCH"):]):
            kind = match.group(1) or {"o": "output", "e": "error"}[match.group(2)]
            found[kind] = match.group(3).strip("'\"")
    return found


def _rows(lines: list[str]) -> dict[str, dict[str, str]]:
    header = [name.strip() for name in lines[0].rstrip("|").split("|")]
    out = {}
    for line in lines[1:]:
        values = line.split("|")
        if len(values) == len(header) + 1 and values[-1] == "":
            values = values[:-1]
        if len(values) == len(header):
            row = dict(zip(header, values, strict=True))
            out[row["JobID"].strip()] = row
    return out


def _with_array_ids(record: AccountingRecord) -> AccountingRecord:
    """An array task's record knows its array's id and its own (``12345_7``): its default output
    file is ``slurm-%A_%a.out``, and %A/%a in its patterns are those ids."""
    job, _, task = record.job_id.partition("_")
    if not task or record.array_task_id is not None:
        return record
    return dataclasses.replace(record, array_job_id=record.array_job_id or job, array_task_id=task)


def list_jobs(chosen: Selection) -> Listing:
    """The jobs sacct lists for ``chosen``. AccountingError when sacct is missing or fails."""
    import shutil

    from logscope.accounting.query import _first_error, _run

    if shutil.which("sacct") is None:
        raise AccountingError("sacct is not on PATH: scan --user/--state/--array asks SLURM's accounting; run it "
                              "on a SLURM login node, or scan the folders of the logs")
    fields = LISTING_FIELDS + ",FailedNode"
    code, out, err = _run(["sacct", "--parsable2", f"--format={fields}", *chosen.arguments()])
    if code != 0 and "FailedNode" in err:  # a sacct before 23.02
        code, out, err = _run(["sacct", "--parsable2", f"--format={LISTING_FIELDS}", *chosen.arguments()])
    if code != 0:
        raise AccountingError(f"sacct {chosen.shown()}: {_first_error(err)}")
    json_text: str | None = None
    listing_messages: list[str] = []
    try:
        code, text, err = _run(["sacct", "--json", *chosen.arguments()])
        if code == 0 and text.lstrip().startswith("{"):
            json_text = text
        else:
            listing_messages.append(f"sacct --json: {_first_error(err)}: the jobs' output patterns are SLURM's "
                                    "defaults")
    except AccountingError as error:  # too much to read at once (every job's script): -P alone
        listing_messages.append(f"{error}: the jobs' output patterns are SLURM's defaults")
    listing = parse_listing(out, json_text, f"sacct {chosen.shown()}")
    listing.messages[:0] = listing_messages
    lacking = [r.job_id for r in listing.records if r.script is None]
    scripts: dict[str, str] = {}
    for start in range(0, len(lacking), SCRIPTS_AT_ONCE):
        try:
            batch = lacking[start:start + SCRIPTS_AT_ONCE]
            code, text, _ = _run(["sacct", "--batch-script", "--jobs=" + ",".join(batch)])
        except AccountingError as error:
            listing.messages.append(f"sacct --batch-script: {error}")
            break
        if code == 0:
            scripts.update({k: v for k, v in parse_batch_script(text).items() if k})
    with_scripts(listing, scripts)
    return listing


__all__ = ["LISTING_FIELDS", "Listing", "Selection", "list_jobs", "parse_listing", "sbatch_outputs", "selection",
           "with_scripts"]
