"""Build a job's timeline: every file read, multi-line records assembled, ranks resolved.

The timeline is a polars DataFrame with :data:`logscope.model.TIMELINE_SCHEMA`, sorted by
``time`` (nulls last), then ``file`` and ``line``. Identity is resolved in this order, each step
only filling what is still unknown:

1. ``host`` from the line itself (NCCL ``host:pid:tid``, a ``--role host:`` tag, srun
   ``HOST: task``); for a line that names none, from what ties it to a host that another line
   names: its pid (a (host, pid) NCCL named; a torchrun agent's pid through the workers it names),
   its rank (NCCL's Init lines map each rank of the world to its host), its srun task label (lines
   carrying both a task label and a host);
2. ``node`` from the file name (``%N``), else from that host. A file named after a node is no
   proof that its lines come from that node: ``#SBATCH --output=%x-%j-%N.out`` makes SLURM write
   one file, named after the first node, holding every node's output. When the lines of one file
   name two or more nodes, each line's node is its host, the file name's node only a fallback,
   and the job gets a warning;
3. ``rank`` from ``[rankN]:`` prefixes and c10d's ``[Rank N]``, then from NCCL's Init lines,
   which tie (host, pid) to a rank in the largest communicator that process joined (its world);
4. multi-line records (torchrun's ChildFailedError entries, launch configs, rendezvous results)
   become one event each, carrying the fields of their lines: folded file by file as each file's
   reading ends (:mod:`logscope.ingest.file_events`, :mod:`logscope.parsers.records`), before the
   steps above, which read the events of every file.

A host with an interface suffix (``node1-ib0``, ``node1.ib``) is mapped to the SLURM node whose
name it starts with, so a node's NCCL lines and its SLURM file agree.

``logscope scan`` builds the timelines of a batch of jobs together (:func:`build_jobs`), each step
over all their events with the job in every key: a job's timeline is the same built alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from logscope.errors import InputError
from logscope.ingest import FileRead, Skipped, SourceFile, discover, read_files, read_in_order
from logscope.model import TIMELINE_SCHEMA, Event, empty_timeline
from logscope.parsers.filenames import DEFAULT_PATTERNS
from logscope.parsers.regex_ascii import ascii_classes
from logscope.parsers.time_forms import YEARLESS_TIME_ANYWHERE
from logscope.stacking import stacked, unstacked


@dataclass
class Job:
    """A job's timeline and what is known about its files."""

    timeline: pl.DataFrame
    files: list[SourceFile]
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lines_read: int = 0
    lines_recognised: int = 0
    job_id: str | None = None
    job_name: str | None = None
    nodes: list[str] = field(default_factory=list)

    @property
    def lines_unrecognised(self) -> int:
        return self.lines_read - self.lines_recognised


ProgressHook = Callable[[SourceFile, int], None]


def load_job(inputs: Sequence[Path], patterns: tuple[str, ...] = DEFAULT_PATTERNS,
             on_progress: ProgressHook | None = None, exclude: Sequence[Path] = ()) -> Job:
    """Discover and read ``inputs`` and build the job's timeline. Files in ``exclude`` (a saved
    SLURM record beside the logs, read by logscope.accounting) are not read as logs.

    Raises :class:`InputError` when nothing readable is found.
    """
    files, skipped = _discovered(inputs, patterns, exclude)
    return build_job(*_reads(inputs, skipped, read_files(files, on_progress)))


def load_jobs(inputs_of_jobs: Sequence[Sequence[Path]],
              patterns: tuple[str, ...] = DEFAULT_PATTERNS) -> list[Job | InputError]:
    """:func:`load_job` for each job's inputs, or the InputError it raises, in order. The files of
    all the jobs are read together, in this process: their candidate lines are classified in one
    batch and small files prepared together, whose costs are mostly fixed (~30 ms a small job
    read alone, ~13 ms in a batch of 16). For ``logscope scan``, whose workers fill the cores."""
    found: list[tuple[list[SourceFile], list[Skipped]] | InputError] = []
    for inputs in inputs_of_jobs:
        try:
            found.append(_discovered(inputs, patterns, ()))
        except InputError as error:
            found.append(error)
    outcomes = iter(read_in_order([f for item in found if not isinstance(item, InputError) for f in item[0]]))
    errors: dict[int, InputError] = {}
    read: list[tuple[list[FileRead], list[Skipped]]] = []
    for place, (inputs, item) in enumerate(zip(inputs_of_jobs, found, strict=True)):
        if isinstance(item, InputError):
            errors[place] = item
            continue
        files, skipped = item
        try:
            read.append(_reads(inputs, skipped, [next(outcomes) for _ in files]))
        except InputError as error:
            errors[place] = error
    built = iter(build_jobs(read))
    return [errors[place] if place in errors else next(built) for place in range(len(inputs_of_jobs))]


def _discovered(inputs: Sequence[Path], patterns: tuple[str, ...],
                exclude: Sequence[Path]) -> tuple[list[SourceFile], list[Skipped]]:
    """The log files of ``inputs`` and those skipped; InputError when they are of several jobs."""
    files, skipped = discover(inputs, patterns, exclude)
    _one_job(files)
    return files, skipped


def _reads(inputs: Sequence[Path], skipped: list[Skipped],
           outcomes: Iterable[FileRead | Skipped]) -> tuple[list[FileRead], list[Skipped]]:
    """The files read (and skipped) from ``inputs``; InputError when none could be read."""
    reads: list[FileRead] = []
    for outcome in outcomes:
        if isinstance(outcome, Skipped):
            skipped.append(outcome)
        else:
            reads.append(outcome)
    if not reads:
        if skipped:
            reasons = "; ".join(f"{s.display}: {s.reason}" for s in skipped[:3])
            more = f" (and {len(skipped) - 3} more)" if len(skipped) > 3 else ""
            raise InputError(f"no readable log file: {reasons}{more}")
        raise InputError(f"no files found in {', '.join(str(p) for p in inputs)}")
    return reads, skipped


def _one_job(files: Sequence[SourceFile]) -> None:
    """Refuse files of several SLURM jobs: merged, their failures would make one false story."""
    jobs: dict[str, list[str]] = {}
    for source in files:
        info = source.info
        if info.job_id is not None:
            job = f"{info.job_id}_{info.array_task}" if info.array_task is not None else info.job_id
            jobs.setdefault(job, []).append(source.display)
    if len(jobs) > 1:
        shown = ", ".join(sorted(jobs)[:6]) + (f" and {len(jobs) - 6} more" if len(jobs) > 6 else "")
        raise InputError(f"these files belong to {len(jobs)} SLURM jobs ({shown}): analyse one job at a time "
                         "(its folder or its files), or run `logscope scan` over them for a table of every job")


def build_job(reads: list[FileRead], skipped: list[Skipped] | None = None) -> Job:
    """Assemble the timeline from files already read."""
    return build_jobs([(reads, list(skipped or []))])[0]


# Each event's job, while the timelines of several jobs are built together (build_jobs).
_JOB = "_job"


def build_jobs(reads_of_jobs: Sequence[tuple[list[FileRead], list[Skipped]]]) -> list[Job]:
    """:func:`build_job` for each job's (files read, files skipped), in order. Their events are
    resolved together, the job in every key that groups or joins them, so that each step's
    queries run once for all the jobs rather than once a job (``logscope scan``'s batches: most of
    a small job's timeline is the fixed cost of its ~35 queries). A job's timeline is the same
    built alone or with others (``tests/test_identity.py``)."""
    jobs: list[Job] = []
    with_events: list[tuple[int, FileRead]] = []  # (its job, a file read) of the files with events
    for index, (reads, skipped) in enumerate(reads_of_jobs):
        job_ids = sorted({r.source.info.job_id for r in reads if r.source.info.job_id})
        names = sorted({r.source.info.job_name for r in reads if r.source.info.job_name})
        file_nodes = sorted({r.source.info.node for r in reads
                             if r.source.info.node and r.source.info.kind == "slurm"})
        jobs.append(Job(
            timeline=empty_timeline(),
            files=[r.source for r in reads],
            skipped=skipped,
            warnings=[f"{r.source.display}: {w}" for r in reads for w in r.warnings],
            lines_read=sum(r.lines_read for r in reads),
            lines_recognised=sum(r.lines_recognised for r in reads),
            job_id=",".join(job_ids) if job_ids else None,
            job_name=",".join(names) if names else None,
            nodes=file_nodes,  # the nodes its files name, until its timeline adds the others
        ))
        with_events.extend((index, read) for read in reads if read.events.height)
    if not with_events:
        return jobs
    # Each file's controls were dropped, its facts filled in and its records folded as its reading
    # ended (logscope.ingest.file_events).
    events = stacked([read.events for _, read in with_events], {
        "file": pl.Series([read.source.display for _, read in with_events], dtype=pl.String),
        "node": pl.Series([read.source.info.node for _, read in with_events], dtype=pl.String),
        _JOB: pl.Series([index for index, _ in with_events], dtype=pl.UInt32),
    })
    events, shared = _resolve_nodes(events, [job.nodes for job in jobs])
    for index, job in enumerate(jobs):
        if index in shared:
            job.warnings.extend(_shared_file_warnings(shared[index], {r.source.display: r.source.info.node
                                                                      for r in reads_of_jobs[index][0]}))
    events = _resolve_ranks(events)
    events = _in_the_jobs_year(events)
    timelines = unstacked(events.select(_JOB, *TIMELINE_SCHEMA).sort(
        [_JOB, "time", "file", "line"], nulls_last=True, maintain_order=True), _JOB, len(jobs))
    for job, timeline in zip(jobs, timelines, strict=True):
        if not timeline.height:  # a job none of whose files has an event keeps its empty timeline
            continue
        job.timeline = timeline
        job.nodes = sorted(set(timeline["node"].drop_nulls().to_list()) | set(job.nodes))
    return jobs


def _in_the_jobs_year(events: pl.DataFrame) -> pl.DataFrame:
    """Move each file whose times all come from forms without a year (glog, syslog) into the year of
    the job's dated lines. Such a file took its modification year (ingest.scanning.reference_year):
    a log copied or touched later would put its lines years after the job's other files (ISO
    times, MLLOG's time_ms, SLURM's record). The file moves by whole years, to the year that puts
    its median nearest the median of the job's dated lines, so its own order stays as it was."""
    said = pl.concat_str([pl.col("prefix").fill_null(""), pl.col("text").fill_null("")])
    timed = pl.col("time").is_not_null() & ~pl.col("time_inferred").fill_null(False)
    yearless = said.str.contains(YEARLESS_TIME_ANYWHERE) & ~said.str.contains(
        pl.col("time").dt.year().cast(pl.String), literal=True)
    rows = events.lazy().filter(timed).select(_JOB, "file", "time", yearless.fill_null(False).alias("_yearless"))
    files = rows.group_by(_JOB, "file").agg(
        pl.col("_yearless").all().alias("_unanchored"), pl.col("time").median().alias("_median"))
    anchors = rows.filter(~pl.col("_yearless")).group_by(_JOB).agg(pl.col("time").median().alias("_anchor"))
    days = (pl.col("_anchor") - pl.col("_median")).dt.total_seconds() / 86400
    shifts = (files.filter("_unanchored").join(anchors, on=_JOB)
              .select(_JOB, "file", (days / 365.2425).round().cast(pl.Int64).alias("_years"))
              .filter(pl.col("_years") != 0)).collect()
    if shifts.height == 0:
        return events
    by = (pl.col("_years").cast(pl.String) + "y")
    moved = events.join(shifts, on=[_JOB, "file"], how="left", maintain_order="left")
    return moved.with_columns(
        pl.when(pl.col("_years").is_not_null()).then(pl.col(c).dt.offset_by(by)).otherwise(pl.col(c)).alias(c)
        for c in ("time", "time_latest")).drop("_years")


# Lines whose host names the node they are about, not the one that wrote them (srun, slurmstepd).
_ABOUT_OTHER = (Event.SRUN_TASK_EXIT.value, Event.NODE_FAILURE.value, Event.HOST_OOM.value)
_SUBJECT_HOST = (*_ABOUT_OTHER, Event.CANCELLED.value, Event.ECC_ERROR.value)
_ADDRESS = ascii_classes(r"^\d{1,3}(?:\.\d{1,3}){3}$|^localhost$")


def _resolve_nodes(events: pl.DataFrame, file_nodes: Sequence[list[str]],
                   ) -> tuple[pl.DataFrame, dict[int, dict[str, list[str]]]]:
    """Fill ``host`` and ``node`` from the line's own evidence (see the module docstring), matching
    interface-suffixed hosts to their job's nodes (``file_nodes``: by job, those its files name).
    Returns the events and, for each job, each of its files whose lines name two or more nodes,
    with those nodes."""
    pairs = events.select(_JOB, "host").filter(pl.col("host").is_not_null() & (pl.col("host") != "")).unique()
    known_of = [sorted(nodes, key=len, reverse=True) for nodes in file_nodes]
    job_column, hosts = pairs[_JOB].to_list(), pairs["host"].to_list()
    mapping = pl.DataFrame(
        {_JOB: job_column, "host": hosts,
         "_node_host": [node_of_host(host, known_of[job]) for job, host in zip(job_column, hosts, strict=True)]},
        schema={_JOB: pl.UInt32, "host": pl.String, "_node_host": pl.String})
    # A host written with an interface suffix reads as its node, so hosts compare equal.
    events = (events.join(mapping, on=[_JOB, "host"], how="left", maintain_order="left")
              .with_columns(pl.col("_node_host").alias("host")).drop("_node_host"))
    events = _nodes_of_unnamed_files(events)
    shared = _shared_files(events)
    in_shared = pl.lit(False)
    if shared:
        shared_files = pl.DataFrame(
            {_JOB: [job for job, files in shared.items() for _ in files],
             "file": [file for files in shared.values() for file in files]},
            schema={_JOB: pl.UInt32, "file": pl.String})
        events = events.join(shared_files.with_columns(pl.lit(True).alias("_in_shared")), on=[_JOB, "file"],
                             how="left", maintain_order="left")
        in_shared = pl.col("_in_shared").fill_null(False)
        tied = _hosts_from_ties(events)["host"]
        events = events.with_columns(pl.when(in_shared).then(tied).otherwise(pl.col("host")).alias("host"))
    # A line in node A's own file that names host B (srun: error: B: task 3) is about B; in a file
    # holding several nodes' output, every line is about the host it names.
    # A line of a shared file that nothing ties to a host was written on one of its nodes: the
    # file's name (the first node, from #SBATCH --output's %N) does not say which, and naming it
    # would name a node the logs do not (nor would its local rank say its rank on that node).
    about_other = pl.col("event").is_in(_ABOUT_OTHER) | in_shared
    events = events.with_columns(
        pl.when(about_other & pl.col("host").is_not_null()).then(pl.col("host"))
        .when(in_shared).then(None)
        .otherwise(pl.coalesce("node", "host")).alias("node"),
    ).with_columns(pl.coalesce("host", "node").alias("host"))
    return events.drop("_in_shared", strict=False), shared


def _writers(events: pl.DataFrame) -> pl.DataFrame:
    """Per job and file, the hosts its lines were written on (by their own head or tag; not the
    hosts a line is about, nor addresses): ``_JOB``, ``file``, ``_hosts``."""
    return (events.select(_JOB, "file", "host", "event")
            .filter(pl.col("host").is_not_null() & ~pl.col("event").is_in(_SUBJECT_HOST)
                    & ~pl.col("host").str.contains(_ADDRESS))
            .group_by(_JOB, "file").agg(pl.col("host").unique().sort().alias("_hosts")))


def _nodes_of_unnamed_files(events: pl.DataFrame) -> pl.DataFrame:
    """A file whose name names no node (a paste, a renamed file) and whose lines were all written on
    one host is that host's file, as a file named after the node is: its lines that name no host
    were written there too."""
    if events.select(pl.col("node").is_not_null().all()).item():
        return events
    single = _writers(events).filter(pl.col("_hosts").list.len() == 1).select(
        _JOB, "file", pl.col("_hosts").list.first().alias("_file_host"))
    if single.height == 0:
        return events
    return (events.join(single, on=[_JOB, "file"], how="left", maintain_order="left")
            .with_columns(pl.coalesce("node", "_file_host").alias("node")).drop("_file_host"))


def _shared_files(events: pl.DataFrame) -> dict[int, dict[str, list[str]]]:
    """For each job, its files whose lines were written on two or more hosts (by their own head or
    tag), each with them."""
    writers = _writers(events).filter(pl.col("_hosts").list.len() >= 2)
    shared: dict[int, dict[str, list[str]]] = {}
    for row in writers.iter_rows(named=True):
        shared.setdefault(int(row[_JOB]), {})[str(row["file"])] = list(row["_hosts"])
    return shared


# The writer's pid in a glog head (torchrun's agent and workers): "I1103 11:05:16.120000 83798 torch/...".
_GLOG_PID = ascii_classes(r"^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+(\d+) ")


def _hosts_from_ties(events: pl.DataFrame) -> pl.DataFrame:
    """A host for lines that name none, from a line of their job that names it: the same (file,
    pid), the same world rank (NCCL Init lines), the same (file, srun task). Only ties to a single
    host count.

    A torchrun line's glog head names the pid that wrote it: a worker's pid is tied to its host by
    NCCL; the agent's by the lines on which it names its own workers (``failed ... (pid: N)``,
    ``Sending process N closing signal``), which run on its host."""
    def unique_host(frame: pl.DataFrame, keys: list[str], alias: str) -> pl.DataFrame:
        return (frame.filter(pl.col("host").is_not_null()).group_by(keys)
                .agg(pl.col("host").unique().alias("_h")).filter(pl.col("_h").list.len() == 1)
                .select(*keys, pl.col("_h").list.first().alias(alias)))

    by_pid = unique_host(events.select(_JOB, "file", "pid", "host").filter(pl.col("pid").is_not_null()),
                         [_JOB, "file", "pid"], "_pid_host")
    events = (events.join(by_pid, on=[_JOB, "file", "pid"], how="left", maintain_order="left")
              .with_columns(pl.coalesce("host", "_pid_host").alias("host")).drop("_pid_host"))
    writer = pl.col("text").str.extract(_GLOG_PID, 1).cast(pl.Int64, strict=False)
    events = events.with_columns(writer.alias("_writer"))
    writers = pl.concat([
        events.filter(pl.col("_writer").is_not_null()).select(_JOB, "file", pl.col("_writer").alias("pid"), "host"),
        by_pid.select(_JOB, "file", "pid", pl.col("_pid_host").alias("host")),
    ], how="vertical")
    by_writer = unique_host(writers, [_JOB, "file", "pid"], "_writer_host").rename({"pid": "_writer"})
    events = (events.join(by_writer, on=[_JOB, "file", "_writer"], how="left", maintain_order="left")
              .with_columns(pl.coalesce("host", "_writer_host").alias("host")).drop("_writer_host", "_writer"))
    init = events.filter((pl.col("event") == Event.NCCL_INIT.value) & pl.col("host").is_not_null()).select(
        _JOB, "host", "pid", pl.col("fields").struct.field("comm_rank").alias("rank"),
        pl.col("fields").struct.field("nranks").alias("_n"))
    if init.height:
        world = init.filter(pl.col("_n") == pl.col("_n").max().over(_JOB))
        by_rank = (world.group_by(_JOB, "rank").agg(pl.col("host").unique().alias("_h"))
                   .filter(pl.col("_h").list.len() == 1)
                   .select(_JOB, pl.col("rank").cast(pl.Int64), pl.col("_h").list.first().alias("_rank_host")))
        events = (events.join(by_rank, on=[_JOB, "rank"], how="left", maintain_order="left")
                  .with_columns(pl.coalesce("host", "_rank_host").alias("host")).drop("_rank_host"))
    # srun's task layout: labelled lines that name their host, and srun's own "HOST: task N" lines
    exits = (events.filter((pl.col("event") == Event.SRUN_TASK_EXIT.value) & pl.col("host").is_not_null())
             .select(_JOB, "file", pl.col("fields").struct.field("tasks").alias("_t"), "host")
             .filter(pl.col("_t").str.contains(r"^\d+$"))
             .select(_JOB, "file", pl.col("_t").cast(pl.Int64).alias("task"), "host"))
    labelled = (events.select(_JOB, "file", "task", "host")
                .filter(pl.col("task").is_not_null() & pl.col("host").is_not_null()))
    layout = (pl.concat([labelled, exits], how="vertical").group_by(_JOB, "file", "task")
              .agg(pl.col("host").unique().alias("_h")).filter(pl.col("_h").list.len() == 1)
              .select(_JOB, "file", "task", pl.col("_h").list.first().alias("_task_host")))
    if layout.height:
        events = (events.join(layout, on=[_JOB, "file", "task"], how="left", maintain_order="left")
                  .with_columns(pl.coalesce("host", "_task_host").alias("host")).drop("_task_host"))
    return events


def _shared_file_warnings(shared: dict[str, list[str]], file_nodes: dict[str, str | None]) -> list[str]:
    """One warning per file named after a node that holds the output of several nodes."""
    out = []
    for display, hosts in sorted(shared.items()):
        if file_nodes.get(display) is None:
            continue
        # What the file is and how its lines were placed; how to get one file per node is the
        # "next time" hint's (logscope.hints), not said twice.
        out.append(f"{display} holds the output of {len(hosts)} nodes ({', '.join(hosts)}), not of the node its name "
                   "says (#SBATCH --output's %N is the first node): each line is placed by the host it names, a line "
                   "that names none by no node")
    return out


def node_of_host(host: str, nodes: Sequence[str]) -> str:
    """``node1-ib0`` -> ``node1`` when ``node1`` is a known node; ``n1.cluster.org`` -> ``n1``."""
    lowered = host.lower()
    for node in nodes:
        n = node.lower()
        if lowered == n or (lowered.startswith(n) and lowered[len(n)] in "-._"):
            return node
    short = host.split(".")[0]
    for node in nodes:
        if short.lower() == node.lower():
            return node
    return short if not short.replace("-", "").isdigit() else host


def _resolve_ranks(events: pl.DataFrame) -> pl.DataFrame:
    """Give every (host, pid) of a job the rank NCCL reported for it in its largest communicator."""
    init = events.filter(pl.col("event") == Event.NCCL_INIT.value).select(
        _JOB, "host", "pid", pl.col("fields").struct.field("comm_rank").alias("r"),
        pl.col("fields").struct.field("nranks").alias("n"),
        pl.col("fields").struct.field("cuda_dev").alias("d"),
    )
    if init.height:
        world = (
            init.sort("n", descending=True, maintain_order=True)
            .group_by(_JOB, "host", "pid", maintain_order=True)
            .agg(pl.col("r").first().alias("_world_rank"), pl.col("d").first().alias("_dev"))
        )
        events = events.join(world, on=[_JOB, "host", "pid"], how="left", maintain_order="left")
        events = events.with_columns(
            pl.coalesce("rank", "_world_rank").alias("rank"),
        ).drop("_world_rank", "_dev")
    events = _ranks_from_local(events)
    events = _ranks_from_tasks(events)
    # rank prefixes seen on a process's other lines (e.g. [rank3]: with a Ray pid)
    by_pid = (
        events.select(_JOB, "host", "pid", "rank")
        .filter(pl.col("rank").is_not_null() & pl.col("pid").is_not_null() & pl.col("host").is_not_null())
        .group_by(_JOB, "host", "pid").agg(pl.col("rank").mode().first().alias("_pid_rank"))
    )
    if by_pid.height:
        events = events.join(by_pid, on=[_JOB, "host", "pid"], how="left", maintain_order="left").with_columns(
            pl.coalesce("rank", "_pid_rank").alias("rank")
        ).drop("_pid_rank")
    return events


def _ranks_from_local(events: pl.DataFrame) -> pl.DataFrame:
    """(node, local rank) -> global rank, from torchrun's rendezvous results (``global_ranks``,
    listed in local-rank order) and ChildFailedError records (``rank : 3 (local_rank: 1)``), for
    lines that only carry a ``[default1]:``/``[host:1]:`` prefix. Each job's own."""
    pairs: dict[tuple[int, str, int], int] = {}
    # (a shared file's line that nothing ties to a host has no node: it places nothing, and is not placed)
    rdzv = events.filter((pl.col("event") == Event.RENDEZVOUS.value)
                         & pl.col("fields").struct.field("value").is_not_null())
    for row in rdzv.select(_JOB, "node", "host", pl.col("fields").struct.field("value").alias("v")).to_dicts():
        place = row["node"] or row["host"]
        ranks = [int(x) for x in re.findall(r"-?\d+", row["v"] or "")]
        if place:
            for local, rank in enumerate(ranks):
                pairs.setdefault((row[_JOB], place, local), rank)
    records = events.filter((pl.col("event") == Event.CHILD_FAILURE.value) & pl.col("rank").is_not_null()
                            & pl.col("local_rank").is_not_null())
    for row in records.select(_JOB, "node", "host", "local_rank", "rank").to_dicts():
        place = row["node"] or row["host"]
        if place:
            pairs.setdefault((row[_JOB], place, int(row["local_rank"])), int(row["rank"]))
    if not pairs:
        return events
    mapping = pl.DataFrame(
        {_JOB: [j for j, _, _ in pairs], "_place": [p for _, p, _ in pairs], "local_rank": [lr for _, _, lr in pairs],
         "_mapped": list(pairs.values())},
        schema={_JOB: pl.UInt32, "_place": pl.String, "local_rank": pl.Int64, "_mapped": pl.Int64},
    )
    return (events.with_columns(pl.coalesce("node", "host").alias("_place"))
            .join(mapping, on=[_JOB, "_place", "local_rank"], how="left", maintain_order="left")
            .with_columns(pl.coalesce("rank", "_mapped").alias("rank"))
            .drop("_place", "_mapped"))


def _ranks_from_tasks(events: pl.DataFrame) -> pl.DataFrame:
    """srun task -> global rank, where lines carry both (``7: [rank7]: ...``) and each task of a
    file shows one rank only: srun launched one task per rank, so the task's other lines, which
    carry only its label (``7: torch.OutOfMemoryError ...``), are that rank's. Without such lines in
    a job, srun reporting several tasks of one node (``srun: error: node1: tasks 1-7: Terminated``)
    says the same: srun launched the ranks itself (a launcher like torchrun runs as one task per
    node), so task N is rank N, and srun's report on a single task names that rank."""
    both = (events.select(_JOB, "file", "task", "rank")
            .filter(pl.col("task").is_not_null() & pl.col("rank").is_not_null()))
    with_both = set(both[_JOB].unique().to_list())
    tasks_are_ranks = _tasks_are_processes(events) - with_both
    if tasks_are_ranks:
        events = _ranks_are_tasks(events, tasks_are_ranks)
    if not with_both:
        return events
    pairs = both.group_by(_JOB, "file", "task").agg(pl.col("rank").unique().alias("_ranks"))
    single = pairs.filter(pl.col("_ranks").list.len() == 1).select(
        _JOB, "file", "task", pl.col("_ranks").list.first().alias("_task_rank"))
    # and no rank held by two tasks of a file
    single = single.filter(pl.col("_task_rank").is_unique().over(_JOB, "file"))
    if single.height == 0:
        return events
    return (events.join(single, on=[_JOB, "file", "task"], how="left", maintain_order="left")
            .with_columns(pl.coalesce("rank", "_task_rank").alias("rank")).drop("_task_rank"))


def _tasks_are_processes(events: pl.DataFrame) -> set[int]:
    """The jobs whose srun task reports show a node running several tasks."""
    reports = events.filter(pl.col("event") == Event.SRUN_TASK_EXIT.value).select(
        _JOB, pl.col("fields").struct.field("tasks").alias("tasks")).drop_nulls("tasks")
    return {int(job) for job, tasks in reports.iter_rows() if "-" in str(tasks) or "," in str(tasks)}


def _ranks_are_tasks(events: pl.DataFrame, jobs: set[int]) -> pl.DataFrame:
    """Task N is rank N in ``jobs`` (see _ranks_from_tasks), for labelled lines and srun's
    one-task reports."""
    one_task = pl.col("fields").struct.field("tasks").str.extract(r"^(\d+)$", 1).cast(pl.Int64, strict=False)
    srun_task = pl.when(pl.col("event") == Event.SRUN_TASK_EXIT.value).then(one_task)
    return events.with_columns(
        pl.when(pl.col(_JOB).is_in(sorted(jobs))).then(pl.coalesce("rank", "task", srun_task))
        .otherwise(pl.col("rank")).alias("rank"))


__all__ = ["Job", "build_job", "build_jobs", "load_job", "load_jobs", "node_of_host"]
