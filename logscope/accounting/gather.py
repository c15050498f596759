"""Everything SLURM knows about one job, gathered: its record (from the cluster or saved files) and
the log files its output patterns name.

* :func:`from_cluster` asks ``sacct``/``scontrol`` (:mod:`~logscope.accounting.query`), then expands
  the job's StdOut/StdErr and each ``srun --output``/``--error`` of its batch script into name rules
  (:mod:`~logscope.accounting.stdio_patterns`) and lists the files they name that are the job's
  (:mod:`~logscope.accounting.confine`: its user's, in its folders); the others are listed as refused;
* :func:`from_saved` reads the outputs saved in the job's folder (:mod:`~logscope.accounting.saved`)
  and picks the job the logs belong to.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from logscope.accounting.confine import MAX_RULES, find_job_files, job_owner
from logscope.accounting.jobid import JobRef, parse_job_ref, select_job
from logscope.accounting.record import AccountingRecord, merged
from logscope.accounting.saved import SavedRecord, read_saved, saved_files
from logscope.accounting.stdio_patterns import SHELL_VALUE, NameRule, PatternContext, name_rule
from logscope.errors import AccountingError, UsageError, printable
from logscope.ingest.discovery import Skipped

# srun's output options in a batch script: --output=PAT, --output PAT, -o PAT, -oPAT (and --error/-e)
_SRUN = re.compile(r"(?:^|[\s;&|(])srun\s")
_OUTPUT_OPTION = re.compile(r"(?:--output|--error)(?:=|\s+)(\S+)|\s-[oe]\s*(\S+)")
_SHELL_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")
# The variables the batch shell sets that the record knows, as the fields of the same value (the
# batch shell expands them once, for the whole job: SLURM_PROCID and SLURMD_NODENAME there are the
# batch task's, not each task's, so they are not among them)
_KNOWN_VARIABLES = {"SLURM_JOB_ID": "%j", "SLURM_JOBID": "%j", "SLURM_JOB_NAME": "%x", "SLURM_ARRAY_JOB_ID": "%A",
                    "SLURM_ARRAY_TASK_ID": "%a", "USER": "%u", "LOGNAME": "%u"}
# A pattern whose folder holds %N makes a folder per node: looked in for this many nodes at most.
MAX_NODE_FOLDERS = 1024


@dataclass
class Gathered:
    """A job's record, its log files (from the record's patterns) and the raw outputs read."""

    record: AccountingRecord
    logs: list[Path] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)  # the names the logs were looked for under
    saved_files: list[Path] = field(default_factory=list)  # files read as the record, not as logs
    texts: dict[str, str] = field(default_factory=dict)  # file name -> what the command printed
    # what the record's patterns name that is not the job's (logscope.accounting.confine), with why
    refused: list[Skipped] = field(default_factory=list)
    # each log found through the record: its (device, inode) when it was found
    identities: dict[Path, tuple[int, int]] = field(default_factory=dict)


def gather_inputs(paths: Sequence[Path]) -> tuple[list[Path], Gathered | None]:
    """The log inputs of a command line and SLURM's record of the job, when there is one.

    An argument that is not an existing path and reads as a job id (``12345``, ``12345_7``,
    ``12345.2``) names a job: its record comes from the files saved among the other arguments
    when there are some, else from sacct/scontrol, whose output patterns name its logs. Without
    a job id, a record saved among the arguments is read when there is one.
    """
    refs = [(p, ref) for p in paths if (ref := job_id_argument(p)) is not None]
    if len(refs) > 1:
        raise UsageError(f"give one job id at a time (got {', '.join(str(r) for _, r in refs)})")
    rest = [p for p in paths if not refs or p is not refs[0][0]]
    if not refs:
        return rest, from_saved(rest, None)
    ref = refs[0][1]
    saved = from_saved(rest, str(ref)) if rest else None
    if saved is not None:
        return rest, saved
    gathered = from_cluster(ref)
    if not gathered.logs and not rest:
        looked = ", ".join(printable(g) for g in gathered.patterns[:3])
        refused = "; ".join(f"{s.display}: {s.reason}" for s in gathered.refused[:2])
        raise AccountingError(f"job {ref}: no log file of the job where SLURM says its output went ({looked}"
                              + (f"; {refused}" if refused else "") + f"); give the folder of its logs too: "
                              f"logscope analyze {ref} FOLDER")
    return [*gathered.logs, *rest], gathered


def job_id_argument(path: Path) -> JobRef | None:
    """The job id an argument names: not an existing path, and shaped like one."""
    if path.exists() or path.is_symlink():
        return None
    return parse_job_ref(str(path))


def from_cluster(ref: JobRef) -> Gathered:
    """The record of ``ref`` from sacct/scontrol and the log files it names."""
    from logscope.accounting.query import query  # the commands' runner: only for a job id

    record, outputs = query(ref)
    gathered = files_of(record)
    gathered.texts = dict(outputs.texts)
    return gathered


def files_of(record: AccountingRecord) -> Gathered:
    """The log files ``record``'s output patterns name that are the job's (logscope.accounting.confine),
    looked for now: a running job's files appear as its steps start."""
    rules, refused = output_rules(record)
    found = find_job_files(rules, record.job.nodes, job_owner(record), record.work_dir)
    return Gathered(record, found.files, [rule.shown for rule in rules], refused=[*refused, *found.refused],
                    identities=found.identities)


def from_saved(inputs: Sequence[Path], job_id: str | None) -> Gathered | None:
    """The record saved among ``inputs`` (None when there is none); ``job_id`` (from the logs'
    file names) picks the job when the saved output lists several."""
    files = saved_files(inputs)
    if not files:
        return None
    record = record_of(read_saved(files), files, job_id)
    return None if record is None else Gathered(record, saved_files=files)


def record_of(saved: SavedRecord, files: Sequence[Path], job_id: str | None) -> AccountingRecord | None:
    """The record of ``job_id`` (with no id, of the only job there is) among what ``files`` saved,
    sacct's completed from scontrol's and given the batch script; None when they hold no record.
    AccountingError when they hold another job's, several with no id to pick one, or a batch
    script alone."""
    shown = ", ".join(str(f) for f in files[:3])
    ref = parse_job_ref(job_id) if job_id else None
    if ref is not None and not knows(saved, ref):
        held = sorted({r.job_id for r in saved.sacct + saved.scontrol})
        raise AccountingError(f"{shown}: SLURM's record of job {', '.join(held[:4]) or '(none)'}, not of job {ref}")
    pick = ref
    record: AccountingRecord | None = None
    if saved.sacct:
        record = select_job(saved.sacct, pick, shown)
    if saved.scontrol:
        live = select_job(saved.scontrol, pick or (parse_job_ref(record.job_id) if record else None), shown)
        record = merged(record, live) if record is not None else live
    if record is None:
        if saved.scripts:
            raise AccountingError(f"{shown}: a batch script without the job's record (save sacct --json or "
                                  "scontrol show job output beside it)")
        return None
    if record.script is None and saved.scripts:
        script = saved.scripts.get(record.job_id) or saved.scripts.get("") or (
            next(iter(saved.scripts.values())) if len(saved.scripts) == 1 else None)
        if script is not None:
            record = dataclasses.replace(record, script=script)
    return record


def knows(saved: SavedRecord, ref: JobRef) -> bool:
    """Whether the saved files hold a record of ``ref``'s job."""
    return _knows(saved.sacct + saved.scontrol, ref)


def _knows(records: list[AccountingRecord], ref: JobRef) -> bool:
    return any(r.job_id == ref.job_id or r.job_id.split("_")[0] == ref.job for r in records)


def output_rules(record: AccountingRecord) -> tuple[list[NameRule], list[Skipped]]:
    """Where the job's processes wrote, as name rules (logscope.accounting.stdio_patterns): the
    batch step's StdOut/StdErr (SLURM's default ``slurm-%j.out``, ``slurm-%A_%a.out`` for an array
    task, when the record names none), and every ``srun --output/--error`` of the batch script.

    A ``%N``/``%n`` in a file's name stands for any of the job's nodes (one rule, however many
    nodes); in a folder it makes a folder per node, at most MAX_NODE_FOLDERS of them (the rest
    are listed as not looked in)."""
    job = record.job
    base = PatternContext(job_id=record.job_id, array_job_id=record.array_job_id,
                          array_task_id=record.array_task_id, user=record.user, job_name=job.name)
    rules: list[NameRule] = []
    refused: list[Skipped] = []
    default = "slurm-%A_%a.out" if record.array_task_id else "slurm-%j.out"
    batch_node = record.batch_host or (job.nodes[0] if job.nodes else None)
    for pattern in dict.fromkeys(p for p in (record.stdout or default, record.stderr) if p):
        if not _per_node(pattern):
            # SLURM writes the batch step's file for the batch host only
            batch = dataclasses.replace(base, step="batch", node=batch_node, node_index=0, task=0)
            rules.append(name_rule(pattern, batch, record.work_dir))
            continue
        # a pattern with %N used for srun's steps too (exported, or the same in --output) names
        # every node's file; the batch host's is among them
        rules.extend(_node_rules(pattern, base, job.nodes, record.work_dir, refused))
    for pattern in srun_output_patterns(record.script or ""):
        rules.extend(_node_rules(pattern, base, job.nodes, record.work_dir, refused))
    unique = {(rule.folder, rule.name.pattern, rule.problem): rule for rule in rules}
    return list(unique.values()), refused


def _per_node(pattern: str) -> bool:
    return "\\" not in pattern and bool(re.search(r"%\d*[Nn]", pattern))


def _node_rules(pattern: str, base: PatternContext, nodes: tuple[str, ...], work_dir: str | None,
                refused: list[Skipped]) -> list[NameRule]:
    """The rules of an srun pattern: one for any node, or one per node when its folder holds %N/%n."""
    folder = pattern.rpartition("/")[0]
    if not nodes or not _per_node(folder):
        return [name_rule(pattern, base, work_dir, nodes)]
    if len(nodes) > MAX_NODE_FOLDERS:
        refused.append(Skipped(printable(pattern), f"a folder per node: only those of its first {MAX_NODE_FOLDERS} "
                                                   f"nodes of {len(nodes)} are looked in"))
    return [name_rule(pattern, dataclasses.replace(base, node=name, node_index=index), work_dir)
            for index, name in enumerate(nodes[:MAX_NODE_FOLDERS])]


def _variable(match: re.Match[str]) -> str:
    return _KNOWN_VARIABLES.get(match.group(1) or match.group(2), SHELL_VALUE)


def srun_output_patterns(script: str) -> list[str]:
    """The ``--output``/``--error`` patterns of the script's srun commands, each once and at most
    MAX_RULES of them (a shell variable the record cannot resolve stands for any text: SHELL_VALUE;
    ``$SLURM_JOB_ID`` and the others of _KNOWN_VARIABLES are their fields; ``/dev/null`` and
    ``none`` are no file)."""
    out: dict[str, None] = {}
    for line in script.replace("\\\n", " ").splitlines():
        code = line.split("#", 1)[0]
        if not _SRUN.search(code):
            continue
        for match in _OUTPUT_OPTION.finditer(code):
            value = (match.group(1) or match.group(2) or "").strip("'\"")
            if not value or value.startswith("/dev/") or value.lower() == "none":
                continue
            out[_SHELL_VARIABLE.sub(_variable, value.replace(SHELL_VALUE, ""))] = None
            if len(out) >= MAX_RULES:
                return list(out)
    return list(out)


__all__ = ["Gathered", "files_of", "from_cluster", "from_saved", "gather_inputs", "job_id_argument", "knows",
           "output_rules", "record_of", "srun_output_patterns"]
