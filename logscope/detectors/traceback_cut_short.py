"""LS303 traceback-cut-short: a Python traceback whose exception line never came.

What it detects
    A ``Traceback (most recent call last):`` and its frames with no exception line after them
    from that process before the log ends: the process was printing its crash when the log was
    cut (a paste that stops there, a node that died while writing, an excerpt).

Why it matters
    The exception line names the error, and without it no crash is recognised: the verdict would
    call a crashed job incomplete. A traceback going on at the end of a log is a failure, on the
    process that printed it, even when what failed is not in the log.

Evidence
    ``traceback`` events (the first line and the ``File "...", line N, in f`` frame lines) after
    which no ``exception`` or ``cpp_exception`` line of the same file follows. The process is the
    one the frame lines' launcher prefixes name: the first line is often glued behind a progress
    bar, without its prefix.

Example
    ::

          4%|▎         | 10/270 [07:16<2:55:33, 40.51s/it]Traceback (most recent call last):
        10.223.9.146:   File "/code/src/train_bash.py", line 14, in <module>
        10.223.9.146:     main()

False positives
    A traceback logged on purpose whose last line the logger dropped, at the very end of an
    excerpt. The finding says the exception is not in the log and names the deepest frame seen.

Advice
    Find the rest of this process's output (its own log file, ``--tee``, the error file of
    torchrun's ``--log-dir``); the exception line after the last frame is the error to fix.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, culprit_of, event_of, field_of, order_key, who
from logscope.detectors.exit_cascade import is_victim, process_key
from logscope.detectors.job_facts import capitalised
from logscope.model import Category, Culprit, Event, Finding, Severity

# Lines that end a traceback: its exception (Python or C++), or a fatal signal report.
_ENDINGS = (Event.EXCEPTION, Event.CPP_EXCEPTION, Event.CUDA_ERROR, Event.CUDA_OOM, Event.FATAL_SIGNAL,
            Event.ERROR_FILE, Event.KNOWN_MESSAGE, Event.STORE_ERROR, Event.WATCHDOG_TIMEOUT)


# Up to this many traceback and ending lines, each file's last traceback start is found in Python
# (two selects, ~0.2 ms a small job) rather than by a polars group_by and join (~0.5 ms).
ROWS_IN_PYTHON_UP_TO = 4096


def last_starts(job: JobView) -> tuple[list[tuple[str, int]], set[str]]:
    """Each file's last traceback start (a frame line carries its function in fields.key), by file,
    and the files among them with an ending on a later line, done with. (An ending on the start's
    own line, after a carriage return, is looked at by the caller.) What a file printed before its last traceback
    does not matter."""
    tracebacks, endings = job.of(Event.TRACEBACK), job.of(*_ENDINGS)
    is_start = pl.col("fields").struct.field("key").is_null()
    if tracebacks.height + endings.height <= ROWS_IN_PYTHON_UP_TO:
        last: dict[str, int] = {}
        for file, line, starts_one in tracebacks.select("file", "line", is_start).rows():
            if starts_one and line is not None and (file not in last or line > last[file]):
                last[file] = line
        done = {file for file, line in endings.select("file", "line").rows()
                if file in last and line is not None and line > last[file]}
        return sorted(last.items()), done
    # All files in one query (a crash job's every file holds a traceback and its exception: the
    # 16 files of the 1 GB bench job cost 32 queries a file at a time), both in one call.
    last_lines = tracebacks.lazy().filter(is_start).group_by("file").agg(pl.col("line").max().alias("_start"))
    starts, ended_files = pl.collect_all([
        last_lines,
        endings.lazy().select("file", "line").join(last_lines, on="file")
        .filter(pl.col("line") > pl.col("_start")).select("file"),
    ], engine="in-memory")
    return list(starts.sort("file").iter_rows()), set(ended_files["file"].to_list())


# Lines that say a process is being killed by whoever runs it: torchrun's and DeepSpeed's closing
# signals to their workers, srun aborting the step, SLURM cancelling it.
_KILLS = (Event.CLOSING_SIGNAL, Event.STEP_ABORTED, Event.CANCELLED)


def _killed_before(job: JobView, start: dict[str, Any]) -> dict[str, Any] | None:
    """The line written before ``start`` that said its process was being killed: one of the same
    place (node or host), or of the same file when the line names no place."""
    place = start.get("node") or start.get("host")
    for row in job.rows(*_KILLS):
        if row.get("file") == start.get("file"):
            before = (row.get("line") or 0) < (start.get("line") or 0)
        else:  # another file: by the clocks, when both lines have a time
            before = row.get("time") is not None and start.get("time") is not None and row["time"] <= start["time"]
        its_place = row.get("node") or row.get("host")
        if before and (its_place == place if its_place is not None else row.get("file") == start.get("file")):
            return row
    return None


class TracebackCutShort(Detector):
    code = "LS303"
    name = "traceback-cut-short"
    category = Category.CRASH
    requires: ClassVar[frozenset[Event]] = frozenset({Event.TRACEBACK})
    specificity = 20  # below every detector that read an actual error

    def detect(self, job: JobView) -> list[Finding]:
        starts, ended = last_starts(job)
        for file, start in starts:
            if file in ended:
                continue
            rows = (job.events.filter((pl.col("file") == file) & (pl.col("line") >= start))
                    .sort("line").to_dicts())
            at = next(i for i, r in enumerate(rows) if event_of(r) == Event.TRACEBACK
                      and field_of(r, "key") is None)  # another event may share its line (a \r)
            after = rows[at + 1:]
            if any(event_of(r) in _ENDINGS for r in after):
                continue
            frames = [r for r in after if event_of(r) == Event.TRACEBACK]
            killer = _killed_before(job, rows[at])
            if killer is not None:
                return [self._killed(rows[at], frames, killer)]
            return [self._finding(rows[at], frames, self._others_reacted(job, rows[at]))]  # one finding says it
        return []

    def _killed(self, start: dict[str, Any], frames: list[dict[str, Any]], killer: dict[str, Any]) -> Finding:
        """The traceback of a process its launcher (or SLURM) was killing: the kill's consequence,
        which names no culprit; what made the launcher kill is not in this process's lines."""
        place = killer.get("node") or killer.get("host") or start.get("node") or start.get("host")
        on = f" on {place}" if place else ""
        return self.finding(
            title=f"A process{on} was killed while it printed a traceback: what failed first is not in the log",
            explanation=("A Python traceback started after the launcher (or SLURM) announced that it was ending the "
                         f"processes{on}, and no exception line followed it: the process was being killed. The "
                         "kill is a consequence: what made the launcher stop its processes (another worker's "
                         "failure, a signal) is not in these lines."),
            advice=("Find the first failure in the other processes' output (their own files, torchrun --tee, the "
                    "--log-dir error files) or in the output of the node the job's rank 0 ran on."),
            rows=sorted([killer, start, *frames[:2]], key=order_key),
            culprit=None,
            severity=Severity.ERROR,
            reactive=True,
        )

    @staticmethod
    def _others_reacted(job: JobView, start: dict[str, Any]) -> bool:
        """Whether another process's failure line is a reaction (a peer gone, a network error, a
        timeout): the cut traceback, which cannot say what failed, may be one more of them."""
        me = process_key(start)
        return any(process_key(r) != me and is_victim(r)
                   for r in job.rows(Event.EXCEPTION, Event.CPP_EXCEPTION, Event.KNOWN_MESSAGE))

    def _finding(self, start: dict[str, Any], frames: list[dict[str, Any]], reactive: bool) -> Finding:
        culprit = culprit_of(start)
        places = {(r.get("node") or r.get("host")) for r in frames} - {None}
        if not (culprit.host or culprit.node) and len(places) == 1:
            place = next(iter(places))
            culprit = Culprit(host=place, node=place, rank=culprit.rank, local_rank=culprit.local_rank,
                              time=culprit.time, evidence=culprit.evidence)
        deepest = frames[-1] if frames else None
        where = (f"; the deepest frame seen is {field_of(deepest, 'key')} in {field_of(deepest, 'value')}"
                 if deepest is not None else "")
        return self.finding(
            title=capitalised(f"{who(culprit)} was printing a traceback when the log ends: the exception line is "
                              "not in the log"),
            explanation=("A Python traceback started and no exception line followed it before the end of the log: "
                         f"the process was failing when its output stops{where}."),
            advice=("Find the rest of this process's output (its own file, torchrun --tee, the --log-dir error file); "
                    "the exception after the last frame is the error to fix."),
            rows=sorted([start, *frames[:3]], key=order_key),
            culprit=culprit,
            severity=Severity.ERROR,
            reactive=reactive,
        )


__all__ = ["TracebackCutShort"]
