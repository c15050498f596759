"""The watch's picture of a running job, kept in bounded memory, and what it has to say.

What the files gained at each look (:mod:`logscope.watch.follow`) is recognised by the one
recognition path (:func:`logscope.parsers.lines.prepare_files` and ``finish_chunks``, the COLL lines
no rank needs set aside first by ``coll_aside``), and kept thinned as ``analyze`` thins a file
(:func:`logscope.ingest.thinning.thin`; progress lines: the last :data:`PROGRESS_KEEP` of each
process). Each row keeps the window a look gives for when it was written (``_after``, ``_seen``).
When there is something new, the kept rows become a timeline as ``analyze`` builds one
(:func:`logscope.timeline.build_job`: ranks and hosts resolved, records folded), and then:

* **progress** is any rank's counter moving (an NCCL COLL line, a training step): the job last
  advanced when the newest of those lines had been seen;
* **rhythm**: the waits between looks that saw the job advance, kept (:data:`GAPS_KEPT`); the stall
  threshold is ``--stall``, else :data:`STALL_RHYTHMS` times the usual wait (its 90th percentile),
  at least :data:`MIN_STALL_S`, and more than the longest stall the job already recovered from;
* **stall**: no rank advanced for the threshold, once the job had advanced at all and while its logs
  show no end; who is behind is :mod:`logscope.detectors.behind`'s rule (counters, then ranks
  silent while their peers still write), else "job-wide, no rank behind";
* **recovered**: a counter moved again after a stall;
* **errors**: each new kind of failure line (its event and message key), once.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import quantiles
from typing import Any

import polars as pl

from logscope.detectors.base import JobView, compact_ranks, event_of, evidence_of, order_key, who
from logscope.detectors.behind import Behind, Mark, counter_text, located, marks_of, ranks_behind, silent_ranks
from logscope.detectors.completion import run_completed
from logscope.detectors.worker_restart import last_states
from logscope.ingest.blocks import SNIFF_BYTES
from logscope.ingest.discovery import SourceFile
from logscope.ingest.file_events import completed
from logscope.ingest.line_frames import line_count, lines_frame, whole_files_lines
from logscope.ingest.reading import FileRead
from logscope.ingest.scanning import reference_year
from logscope.ingest.thinning import thin
from logscope.model import Event
from logscope.parsers.coll_aside import coll_surplus
from logscope.parsers.lines import finish_chunks, prepare_files
from logscope.stacking import frame_of_row, positions, stacked, unstacked
from logscope.timeline import build_job
from logscope.watch.events import ERROR, RECOVERED, STALL, WatchEvent
from logscope.watch.follow import Looked, Piece

MIN_STALL_S = 60.0
STALL_RHYTHMS = 10
RECOVERY_MARGIN = 1.5  # the threshold stays this much above the longest stall the job recovered from
GAPS_KEPT = 256
RANK_GAPS_KEPT = 32
PROGRESS_KEEP = 16  # progress lines kept per process of a file (the last ones)
THIN_FROM = 256  # a file's rows are thinned once they are this many (then twice what was left)
COLL_KEEP = 2  # NCCL COLL lines kept per process and communicator of a file (the last ones)
ERROR_KINDS_SAID = 200  # error alerts said at most (a crash loop's kinds are few; its lines are not)

_PROGRESS = (Event.NCCL_COLL.value, Event.PROGRESS.value)
_FAILED = ("error", "critical")
# The lines that say a job ended (with _ended_in_logs): SLURM cancelling it, srun aborting its step.
_ENDINGS = (Event.CANCELLED, Event.STEP_ABORTED, Event.NODE_FAILURE)
# The agent states that end an agent: its workers finished, or it reports their failure and exits.
_FINAL_STATES = (Event.AGENT_FINISHED, Event.CHILD_FAILURE)
_WINDOW = ("_after", "_seen")


@dataclass
class _File:
    """One followed file: its rows kept so far (thinned) and those of the last looks."""

    source: SourceFile
    year: int
    kept: pl.DataFrame | None = None
    pending: list[pl.DataFrame] = field(default_factory=list)
    thin_at: int = 0  # thinned again once it holds this many rows (and THIN_FROM)
    lines: int = 0
    recognised: int = 0


@dataclass(frozen=True)
class RankView:
    """A rank as the live view shows it."""

    rank: int
    place: str | None  # its node (else host)
    counter: str  # its last progress counter, as the logs print it ("step 20", "opCount 0x27")
    progress_seen: float | None  # when its last progress had been seen
    usual_gap: float | None  # its usual wait between two looks that saw it advance


class Watch:
    """A running job's picture (see the module docstring). ``stall``: the threshold in seconds;
    None learns it from the job's rhythm."""

    def __init__(self, stall: float | None = None) -> None:
        self.stall_given = stall
        self._files: dict[int, _File] = {}
        self._dirty = False
        self.view: JobView | None = None
        self.timeline: pl.DataFrame | None = None
        self._progress_seen: float | None = None  # the newest progress line had been seen by then
        self._last_row: dict[str, Any] | None = None  # that line
        self.last_progress: float | None = None  # as of the last check
        self._gaps: deque[float] = deque(maxlen=GAPS_KEPT)
        self._rank_gaps: dict[int, deque[float]] = {}
        self._rank_seen: dict[int, float] = {}
        self.ranks: list[RankView] = []
        self._longest_recovered = 0.0
        self.stall: WatchEvent | None = None  # the stall going on, if any
        self.end_row: dict[str, Any] | None = None  # the line saying the job ended, once the logs say so
        self._errors_said: set[tuple[str, int]] = set()
        self._error_kinds: set[tuple[Any, ...]] = set()
        self.failed = False
        self._marks: list[Mark] = []
        self._written_after: dict[int, float | None] = {}

    # -- what the files gained ----------------------------------------------------------------

    @property
    def lines_read(self) -> int:
        return sum(f.lines for f in self._files.values())

    @property
    def files(self) -> int:
        return len(self._files)

    def take(self, looked: Looked) -> None:
        """Recognise what a look found, and keep it."""
        for file_id, source in looked.renamed.items():
            if file_id in self._files:
                self._files[file_id].source = source
                self._dirty = True
        pieces = [piece for piece in looked.pieces if piece.data]
        if not pieces:
            return
        for piece in pieces:
            known = self._files.get(piece.file_id)
            if known is None:
                self._files[piece.file_id] = _File(piece.source, reference_year(piece.data[:SNIFF_BYTES],
                                                                                piece.source.path))
            else:
                known.source = piece.source
        by_year: dict[int, list[Piece]] = {}
        for piece in pieces:
            by_year.setdefault(self._files[piece.file_id].year, []).append(piece)
        for year, of_year in by_year.items():
            self._recognise(of_year, year)
        self._dirty = True

    def _recognise(self, pieces: list[Piece], year: int) -> None:
        frames, aside = _without_spare_coll(_lines_of(pieces), len(pieces))
        prepared = prepare_files(frames, aside, year, carriage_returns=any(b"\r" in p.data for p in pieces),
                                 join_wraps=None)
        for piece, result in zip(pieces, finish_chunks(prepared), strict=True):
            kept = self._files[piece.file_id]
            kept.lines = piece.first_line + piece.data.count(b"\n")
            kept.recognised += result.lines_recognised
            if result.events.height:
                kept.pending.append(result.events.with_columns(
                    pl.lit(piece.written_after, dtype=pl.Float64).alias("_after"),
                    pl.lit(piece.seen, dtype=pl.Float64).alias("_seen")))

    # -- what it means --------------------------------------------------------------------------

    @property
    def threshold(self) -> float:
        """The stall threshold in seconds (see the module docstring)."""
        if self.stall_given is not None:
            return self.stall_given
        usual = quantiles(self._gaps, n=10)[-1] if len(self._gaps) >= 3 else 0.0
        return max(MIN_STALL_S, STALL_RHYTHMS * usual, RECOVERY_MARGIN * self._longest_recovered)

    @property
    def advancing(self) -> bool:
        """Whether any rank was seen advancing at all."""
        return self.last_progress is not None

    def check(self, now: float) -> list[WatchEvent]:
        """What there is to say at ``now`` (seconds since the epoch), given what was taken."""
        if self._dirty:
            self._rebuild()
            self._dirty = False
        said: list[WatchEvent] = []
        seen = self._progress_seen
        if seen is not None and (self.last_progress is None or seen > self.last_progress):
            if self.last_progress is not None:
                self._gaps.append(seen - self.last_progress)
            if self.stall is not None:
                lasted = seen - (self.last_progress or seen)
                self._longest_recovered = max(self._longest_recovered, lasted)
                said.append(WatchEvent(RECOVERED, now, f"progress resumed after {lasted:.0f} s without any rank "
                                       f"advancing: {who(self._last_row or {})} at "
                                       f"{counter_text(self._last_row or {})}",
                                       seconds_quiet=lasted, evidence=_evidence(self._last_row)))
                self.stall = None
            self.last_progress = seen
        said.extend(self._new_errors(now))
        if self.last_progress is not None and self.stall is None and self.end_row is None:
            quiet = now - self.last_progress
            if quiet >= self.threshold:
                self.stall = self._stalled(now, quiet)
                said.append(self.stall)
        return said

    def quiet(self, now: float) -> float | None:
        """Seconds since any rank last advanced (None before any did)."""
        return None if self.last_progress is None else max(0.0, now - self.last_progress)

    def _rebuild(self) -> None:
        with_rows: list[_File] = []
        for kept in self._files.values():
            if kept.pending:
                kept.kept = pl.concat([*([kept.kept] if kept.kept is not None else []), *kept.pending], rechunk=True)
                kept.pending = []
                if kept.kept.height >= max(THIN_FROM, kept.thin_at):
                    kept.kept = _thinned(kept.kept)
                    kept.thin_at = 2 * kept.kept.height
            if kept.kept is not None and kept.kept.height:
                with_rows.append(kept)
        if not with_rows:
            return
        joined = stacked([kept.kept for kept in with_rows if kept.kept is not None],
                         {"_file": positions(len(with_rows))})
        frames = completed(unstacked(joined.drop(*_WINDOW), "_file", len(with_rows)),
                           [kept.source for kept in with_rows])
        job = build_job([FileRead(kept.source, events, kept.lines, kept.recognised)
                         for kept, events in zip(with_rows, frames, strict=True)])
        names = pl.Series([kept.source.display for kept in with_rows], dtype=pl.String)
        windows = joined.select(pl.lit(names).gather(pl.col("_file")).alias("file"), "line",
                                *_WINDOW).unique(["file", "line"], keep="last")
        timeline = job.timeline.join(windows, on=["file", "line"], how="left", maintain_order="left")
        self.timeline = timeline
        self.view = JobView(timeline, tuple(job.nodes), tuple(f.display for f in job.files),
                            {f.display: f.info.node for f in job.files})
        self._read_progress(timeline)
        self.end_row = _ended_in_logs(self.view)
        self._marks = [dataclasses.replace(mark, written_after=mark.row.get("_after"), seen=mark.row.get("_seen"))
                       for mark in marks_of(timeline)]
        ranked = timeline.filter(pl.col("rank").is_not_null())
        self._written_after = dict(ranked.group_by("rank").agg(pl.col("_after").max()).iter_rows())

    def _read_progress(self, timeline: pl.DataFrame) -> None:
        progress = timeline.filter(pl.col("event").is_in(_PROGRESS) & pl.col("_seen").is_not_null())
        if progress.height == 0:
            return
        newest = progress.sort("_seen", "file", "line", maintain_order=True).tail(1).to_dicts()[0]
        self._progress_seen, self._last_row = float(newest["_seen"]), newest
        last = (progress.filter(pl.col("rank").is_not_null()).sort("_seen", "file", "line", maintain_order=True)
                .group_by("rank", maintain_order=True).last())
        views = []
        for row in last.to_dicts():
            rank, seen = int(row["rank"]), float(row["_seen"])
            before = self._rank_seen.get(rank)
            if before is not None and seen > before:
                self._rank_gaps.setdefault(rank, deque(maxlen=RANK_GAPS_KEPT)).append(seen - before)
            self._rank_seen[rank] = seen
            gaps = self._rank_gaps.get(rank)
            views.append(RankView(rank, row.get("node") or row.get("host"), counter_text(row), seen,
                                  sorted(gaps)[len(gaps) // 2] if gaps else None))
        self.ranks = sorted(views, key=lambda view: view.rank)

    def _stalled(self, now: float, quiet: float) -> WatchEvent:
        """The stall event: who is behind, as the evidence tells."""
        behind: Behind | None = ranks_behind(self._marks)
        if behind is None and self.last_progress is not None:
            last_marks = {mark.rank: mark for mark in sorted(self._marks, key=lambda m: (m.seen or 0.0))}
            behind = silent_ranks(self._written_after, self.last_progress, last_marks)
        if behind is None:
            return WatchEvent(STALL, now, f"stalled: no rank advanced for {quiet:.0f} s; job-wide, no rank behind "
                              f"(last progress: {who(self._last_row or {})} at {counter_text(self._last_row or {})})",
                              seconds_quiet=quiet, evidence=_evidence(self._last_row))
        first = behind.first
        ranks = list(behind.ranks)
        return WatchEvent(
            STALL, now,
            f"stalled: no rank advanced for {quiet:.0f} s; rank {compact_ranks(ranks)} "
            f"{'is' if len(ranks) == 1 else 'are'} behind on {', '.join(located(behind)) or 'an unknown host'}: "
            f"{behind.reason}",
            rank=first.rank, host=first.host, seconds_quiet=quiet, evidence=_evidence(first.row),
            ranks=tuple(ranks), hosts=tuple(located(behind)))

    def _new_errors(self, now: float) -> list[WatchEvent]:
        if self.timeline is None:
            return []
        failed = self.timeline.filter(pl.col("severity").is_in(_FAILED))
        if failed.height == 0:
            return []
        self.failed = True
        rows = failed.to_dicts()
        fresh = [row for row in rows if (row["file"], row["line"]) not in self._errors_said]
        # the lines kept now, all said: a line thinned away is not remembered (a crash loop's are many)
        self._errors_said = {(row["file"], row["line"]) for row in rows}
        said = []
        by_kind: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for row in fresh:
            fields = row.get("fields") or {}
            by_kind.setdefault(_error_kind(row["event"], fields), []).append(row)
        for kind, alike in sorted(by_kind.items(), key=lambda item: min(_error_order(r) for r in item[1])):
            if kind in self._error_kinds or len(self._error_kinds) >= ERROR_KINDS_SAID:
                continue
            self._error_kinds.add(kind)
            first = min(alike, key=_error_order)
            ranks = sorted({int(r["rank"]) for r in alike if r.get("rank") is not None})
            hosts = sorted({str(place) for r in alike if (place := r.get("node") or r.get("host"))})
            others = ""
            if len(alike) > 1:
                others = f" (and {len(alike) - 1} more line(s) like it" + (
                    f": ranks {compact_ranks(ranks)})" if ranks else ")")
            said.append(WatchEvent(
                ERROR, now, f"{event_of(first).value} on {who(first)}: {str(first.get('text') or '').strip()[:200]}"
                f"{others}", rank=first.get("rank"), host=first.get("node") or first.get("host"),
                seconds_quiet=self.quiet(now), evidence=_evidence(first), ranks=tuple(ranks), hosts=tuple(hosts),
                extra={"event": first["event"], "message": kind[1], "count": len(alike)}))
        return said


def _error_kind(event: str, fields: dict[str, Any]) -> tuple[Any, ...]:
    """What the catalogue says a line is (two teardown messages are two kinds, the watchdog's death
    logged and its what() one); the exception's type only where the message is any exception."""
    message = fields.get("message_id")
    generic = message is None or message == "python.exception"
    return event, message, fields.get("key"), fields.get("error_type") if generic else None


def _lines_of(pieces: Sequence[Piece]) -> pl.DataFrame:
    """The lines of every piece in one frame (``_piece``: its place in ``pieces``; ``line``: its
    number in its file), split by one call of the CSV reader (a call a piece cost ~1 ms: 64 files,
    ~70 ms a look)."""
    counts = [line_count(piece.data) for piece in pieces]
    which = frame_of_row(counts)
    joined = whole_files_lines([piece.data for piece in pieces], counts)
    if joined is None:  # never seen: each piece alone, as the reader splits it
        alone = [lines_frame(piece.data, piece.first_line) for piece in pieces]
        return stacked(alone, {"_piece": positions(len(pieces))})
    first = pl.Series([piece.first_line for piece in pieces], dtype=pl.Int64)
    return joined.with_columns(pl.col("line") + pl.lit(first).gather(which), which.alias("_piece"))


def _without_spare_coll(lines: pl.DataFrame, count: int) -> tuple[list[pl.DataFrame], list[int]]:
    """Each piece's lines (``lines``: of ``count`` pieces, :func:`_lines_of`) without the NCCL COLL
    lines the watch never needs: all but the last of each process and communicator in this look
    (:func:`~logscope.parsers.coll_aside.coll_surplus` over all of them at once), and how many each
    lost."""
    spare = coll_surplus(lines, 0, 1)
    if spare is None:
        return unstacked(lines, "_piece", count), [0] * count
    lost = lines["_piece"].gather(spare).value_counts()
    counts = dict(zip(lost["_piece"].to_list(), lost["count"].to_list(), strict=True))
    kept = lines.filter(pl.repeat(True, lines.height, eager=True).scatter(spare, False))
    return unstacked(kept, "_piece", count), [int(counts.get(n, 0)) for n in range(count)]


def _thinned(rows: pl.DataFrame) -> pl.DataFrame:
    """A file's kept rows thinned as ``analyze`` thins them, then fewer of the lines the watch
    reads only the last of: :data:`COLL_KEEP` COLL lines of each process and communicator,
    :data:`PROGRESS_KEEP` progress lines of each process."""
    rows = thin(rows)
    said = pl.col("fields").struct
    process = [pl.col(name) for name in ("host", "pid", "rank", "local_rank", "task", "prefix")]
    coll = pl.col("event") == Event.NCCL_COLL.value
    progress = pl.col("event") == Event.PROGRESS.value
    group = pl.when(coll).then(said.field("comm")).when(progress).then(pl.lit("progress"))
    keep = pl.when(coll).then(COLL_KEEP).when(progress).then(PROGRESS_KEEP)
    from_end = pl.int_range(pl.len(), 0, -1).over([*process, "event", group.alias("_group")])
    return rows.filter(~(coll | progress) | (from_end <= keep))


def _ended_in_logs(view: JobView) -> dict[str, Any] | None:
    """The line saying the job ended, when its logs say so: the run's own last line (a catalogue
    clean-end line, the last step of a known total), SLURM cancelling it or srun aborting its step,
    or every torchrun agent's last state final (its workers finished, or it reported their failure),
    one for each node whose agent joined the rendezvous: an agent that finished first does not end
    a job whose other agents still run."""
    end = run_completed(view)
    if end is not None:
        return end
    endings = view.rows_in_order(*_ENDINGS)
    if endings:
        return endings[-1]
    states = last_states(view)
    if not states:
        return None
    agents = {str(row.get("node") or row.get("host") or row.get("file")) for row in view.rows(Event.RENDEZVOUS)}
    if agents - set(states):
        return None
    if all(event_of(row) in _FINAL_STATES for row in states.values()):
        return max(states.values(), key=lambda row: (row.get("_seen") or 0.0))
    return None


def _error_order(row: dict[str, Any]) -> tuple[float, Any]:
    """Failure lines in the order a look saw them, then in the timeline's failure order."""
    return (row.get("_seen") or 0.0, order_key(row))


def _evidence(row: dict[str, Any] | None) -> Any:
    return evidence_of(row) if row else None


__all__ = ["GAPS_KEPT", "MIN_STALL_S", "PROGRESS_KEEP", "STALL_RHYTHMS", "RankView", "Watch"]
