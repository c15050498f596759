"""The watch loop: look at the job's files, take what they gained, say what there is to say, until
the job ends; then the post-mortem verdict, as ``analyze`` gives it.

* A folder or files (:class:`Paths`): the job has ended when its logs say so (a clean end, SLURM
  cancelling it, every torchrun agent's last word) and its files stayed quiet for
  :data:`END_GRACE_S`; until then, or Ctrl-C.
* A SLURM job id (:class:`SlurmJob`): its files are the ones ``analyze JOBID`` reads (the output
  patterns of its record), found again at each look; it has ended when SLURM says so (asked every
  :data:`STATE_EVERY_S`), and the files get one last look.

SIGTERM (what SLURM sends a watch started in the batch script when the job ends) ends the watch as
the job's end does: one last look, then the verdict.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

from logscope.accounting.gather import Gathered, files_of, from_cluster
from logscope.accounting.jobid import JobRef
from logscope.accounting.states import state_info
from logscope.errors import AccountingError, InputError
from logscope.ingest.discovery import SourceFile, discover
from logscope.parsers.filenames import DEFAULT_PATTERNS
from logscope.watch.events import END, STATUS, WatchEvent
from logscope.watch.follow import Follower
from logscope.watch.state import Watch

if TYPE_CHECKING:
    from rich.console import Console

    from logscope.analysis import Analysis

END_GRACE_S = 3.0  # a job whose logs say it ended: its files quiet this long, and the watch ends
STATE_EVERY_S = 10.0  # SLURM is asked for the job's state at most this often
MAX_INTERVAL_S = 5.0
MIN_INTERVAL_S = 0.5


def interval_for(stall: float | None) -> float:
    """Seconds between looks: a tenth of the stall threshold, between the bounds (5 s by default:
    the learnt threshold is at least a minute)."""
    if stall is None:
        return MAX_INTERVAL_S
    return min(MAX_INTERVAL_S, max(MIN_INTERVAL_S, stall / 10))


class Target(Protocol):
    """What is watched."""

    @property
    def name(self) -> str: ...

    def find(self) -> list[SourceFile]: ...

    def ended(self, watch: Watch, now: float, quiet_since: float) -> bool: ...

    def analysed(self) -> Analysis: ...


@dataclass
class Paths:
    """Folders and files given on the command line."""

    inputs: list[Path]
    patterns: tuple[str, ...] = DEFAULT_PATTERNS

    @property
    def name(self) -> str:
        return ", ".join(str(p) for p in self.inputs[:3]) + (" ..." if len(self.inputs) > 3 else "")

    def find(self) -> list[SourceFile]:
        return discover(self.inputs, self.patterns)[0]

    def ended(self, watch: Watch, now: float, quiet_since: float) -> bool:
        return watch.end_row is not None and now - quiet_since >= END_GRACE_S

    def analysed(self) -> Analysis:
        from logscope.analysis import analyze

        return analyze(self.inputs, patterns=self.patterns)


@dataclass
class SlurmJob:
    """A SLURM job by its id (and folders of its logs given beside it)."""

    ref: JobRef
    gathered: Gathered
    extra: list[Path] = field(default_factory=list)
    patterns: tuple[str, ...] = DEFAULT_PATTERNS
    state: str | None = None
    _asked: float = 0.0
    ask: Callable[[JobRef], str | None] | None = None

    def __post_init__(self) -> None:
        self.state = self.gathered.record.job.state

    @property
    def name(self) -> str:
        return f"job {self.ref}" + (f" ({self.state})" if self.state else "")

    def find(self) -> list[SourceFile]:
        paths = [*files_of(self.gathered.record).logs, *self.extra]
        return discover(paths, self.patterns)[0] if paths else []

    def ended(self, watch: Watch, now: float, quiet_since: float) -> bool:
        if now - self._asked < STATE_EVERY_S:
            return False
        self._asked = now
        ask = self.ask
        if ask is None:
            from logscope.accounting.query import live_state

            ask = live_state
        state = ask(self.ref)
        if state is None:
            return False
        if state != self.state and not files_of(self.gathered.record).logs:
            # the job started (or moved): its record names its nodes now, and so its files (a record
            # that does not answer yet, as sacct's of a job just started, is asked again later)
            with contextlib.suppress(AccountingError):
                self.gathered = from_cluster(self.ref)
        self.state = state
        return state_info(state).role in ("root", "end", "clean")

    def analysed(self) -> Analysis:
        from logscope.analysis import analyze

        gathered = from_cluster(self.ref)
        return analyze([*gathered.logs, *self.extra], patterns=self.patterns, accounting=gathered.record)


class Output(Protocol):
    """Where the watch says what it says."""

    def said(self, events: Sequence[WatchEvent]) -> None: ...

    def update(self, watch: Watch, now: float) -> None: ...

    def finished(self, event: WatchEvent, analysis: Analysis | None) -> None: ...

    def live(self) -> Any: ...


class Jsonl:
    """``--format jsonl``: one JSON object per event, flushed as it is said."""

    def __init__(self, stream: Any = None) -> None:
        self._stream = stream

    def _write(self, event: WatchEvent) -> None:
        stream = self._stream or sys.stdout
        stream.write(json.dumps(event.to_json(), default=str) + "\n")
        stream.flush()

    def said(self, events: Sequence[WatchEvent]) -> None:
        for event in events:
            self._write(event)

    def update(self, watch: Watch, now: float) -> None:
        pass

    def finished(self, event: WatchEvent, analysis: Analysis | None) -> None:
        self._write(event)

    @contextmanager
    def live(self) -> Iterator[None]:
        yield


class Terminal:
    """The live view (rich) on a terminal; elsewhere, one line per event. The verdict at the end."""

    def __init__(self, console: Console, target: str, *, once: bool = False) -> None:
        self._console = console
        self._target = target
        self._once = once  # --once: the view printed once, as it is
        self._recent: list[WatchEvent] = []
        self._live: Any = None

    def said(self, events: Sequence[WatchEvent]) -> None:
        from logscope.watch.view import event_line

        for event in events:
            self._recent.append(event)
            del self._recent[:-20]
            (self._live.console if self._live is not None else self._console).print(event_line(event), soft_wrap=True)

    def update(self, watch: Watch, now: float) -> None:
        if self._live is None and not self._once:
            return
        from logscope.watch.view import render

        view = render(watch, now, self._target, [])
        if self._live is not None:
            self._live.update(render(watch, now, self._target, self._recent), refresh=True)
        else:
            self._console.print(view)

    def finished(self, event: WatchEvent, analysis: Analysis | None) -> None:
        from logscope.watch.view import event_line

        self._console.print(event_line(event), soft_wrap=True)
        if analysis is not None:
            from logscope.report.terminal import print_analysis

            print_analysis(analysis, self._console)

    @contextmanager
    def live(self) -> Iterator[None]:
        if not self._console.is_terminal:
            yield
            return
        from rich.live import Live

        with Live(console=self._console, auto_refresh=False, transient=True) as live:
            self._live = live
            try:
                yield
            finally:
                self._live = None


class _Stopped(Exception):
    """SIGTERM: the job is ending (SLURM stops a watch started in its batch script)."""


@dataclass
class _Termination:
    """SIGTERM, as the watch takes it: asked for (at any time), and stopping the loop at once while
    it runs (``armed``); a SIGTERM outside the loop (before it, or again while the verdict is made)
    only asks."""

    asked: bool = False
    armed: bool = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.asked = True
        if self.armed:
            self.armed = False
            raise _Stopped


@contextmanager
def _sigterm_ends(termination: _Termination) -> Iterator[None]:
    try:
        previous = signal.signal(signal.SIGTERM, termination)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def watch(target: Target, output: Output, *, stall: float | None = None, interval: float | None = None,
          clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep) -> int:
    """Follow ``target`` until it ends; return the exit code of its verdict (``analyze``'s)."""
    termination = _Termination()
    with _sigterm_ends(termination):
        follower = Follower(target.find, clock)
        state = Watch(stall)
        every = interval if interval is not None else interval_for(stall)
        quiet_since = clock()
        try:
            with output.live():
                try:
                    termination.armed = not termination.asked
                    while termination.armed:
                        looked = follower.look()
                        now = clock()
                        if looked.pieces:
                            quiet_since = now
                        state.take(looked)
                        output.said(state.check(now))
                        output.update(state, now)
                        if target.ended(state, now, quiet_since):
                            break
                        if not looked.behind:  # else the files hold more than a look takes: at once
                            sleep(every)
                except _Stopped:
                    pass
                termination.armed = False
                state.take(follower.look())  # the last lines
                output.said(state.check(clock()))
        finally:
            follower.close()
        return _end(target, output, state, clock(), termination.asked)


def _end(target: Target, output: Output, state: Watch, now: float, stopped: bool) -> int:
    """The end event and the verdict; the verdict's exit code."""
    why = "the watch was stopped (SIGTERM)" if stopped else (
        "SLURM says the job ended" if isinstance(target, SlurmJob) else "the logs say the job ended")
    try:
        analysis = target.analysed()
    except InputError as error:
        output.finished(WatchEvent(END, now, f"{why}; no verdict: {error}", seconds_quiet=state.quiet(now),
                                   extra={"verdict": None}), None)
        raise
    verdict = analysis.verdict
    root = verdict.root_cause
    output.finished(WatchEvent(
        END, now, f"{why}: {verdict.category.value.upper()} {verdict.summary}",
        rank=root.rank if root else None, host=(root.node or root.host) if root else None,
        seconds_quiet=state.quiet(now), evidence=root.evidence if root else None,
        extra={"verdict": verdict.to_json()}), analysis)
    return analysis.exit_code


def once(target: Target, output: Output, *, stall: float | None = None, clock: Callable[[], float] = time.time
         ) -> int:
    """One look: what the files say now (their lines taken as written by their modification time).
    0 when the job is progressing (or ended cleanly), 1 when it is stalled or failed."""
    follower = Follower(target.find, clock)
    state = Watch(stall)
    try:
        while True:
            looked = follower.look()
            state.take(looked)
            if not looked.behind:
                break
    finally:
        follower.close()
    now = clock()
    events = state.check(now)
    output.said(events)
    stalled = state.stall is not None
    what = ("failed" if state.failed else "stalled" if stalled else "ended" if state.end_row is not None
            else "progressing" if state.advancing else "no progress seen yet")
    quiet = state.quiet(now)
    summary = f"{what}: " + (f"last progress {quiet:.0f} s ago" if quiet is not None else "no progress line yet") + (
        f", stall threshold {state.threshold:.0f} s" if state.advancing else "")
    status = WatchEvent(STATUS, now, summary, seconds_quiet=quiet, extra={"state": what})
    output.said([status])
    output.update(state, now)
    return 1 if state.failed or stalled else 0


__all__ = ["END_GRACE_S", "STATE_EVERY_S", "Jsonl", "Output", "Paths", "SlurmJob", "Target", "Terminal", "interval_for",
           "once", "watch"]
