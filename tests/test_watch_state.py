"""The watch's picture of a running job (logscope/watch/state.py), driven by a clock the test sets:
when a stall is said and whom it names, recovery, the learnt threshold, errors said once, the end
read from the logs, memory bounded over a long job. No test here waits for real time."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from logscope.ingest.discovery import discover
from logscope.watch import state
from logscope.watch.events import ERROR, RECOVERED, STALL, WatchEvent
from logscope.watch.follow import Follower
from logscope.watch.state import MIN_STALL_S, Watch

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
STOP = re.compile(r"Watchdog caught|CANCELLED AT|Job step aborted|SignalException")


class Replay:
    """A sample job's files written into a folder a few lines at a time, looked at by a watch whose
    clock the test moves."""

    def __init__(self, sample: str, folder: Path, *, stop_at: re.Pattern[str] | None = None,
                 stall: float | None = 5.0) -> None:
        self.lines: dict[str, list[bytes]] = {}
        for path in sorted((SAMPLES / sample).glob("*.out")):
            lines = path.read_bytes().splitlines(keepends=True)
            if stop_at is not None:
                cut = next((n for n, line in enumerate(lines) if stop_at.search(line.decode(errors="replace"))),
                           len(lines))
                lines = lines[:cut]
            self.lines[path.name] = lines
        self.folder = folder
        self.now = 1_000.0
        self.follower = Follower(lambda: discover([folder])[0], lambda: self.now)
        self.watch = Watch(stall)
        self.events: list[tuple[float, WatchEvent]] = []
        self.at = 0

    def write(self, lines: int) -> bool:
        """About the next ``lines`` lines of the longest file, and as far into each of the others (the
        nodes of a job write side by side); False when all were written."""
        longest = max(len(v) for v in self.lines.values())
        for name, all_lines in self.lines.items():
            start, end = (len(all_lines) * at // longest for at in (self.at, min(self.at + lines, longest)))
            with (self.folder / name).open("ab") as out:
                out.write(b"".join(all_lines[start:end]))
        self.at = min(self.at + lines, longest)
        return self.at < longest

    def look(self, seconds: float) -> list[WatchEvent]:
        self.now += seconds
        self.watch.take(self.follower.look())
        said = self.watch.check(self.now)
        self.events.extend((self.now, event) for event in said)
        return said

    def play(self, lines: int = 20, seconds: float = 0.5) -> None:
        while self.write(lines):
            self.look(seconds)
        self.look(seconds)

    def kinds(self) -> list[str]:
        return [event.kind for _, event in self.events]


def test_the_quiet_rank_is_named_once_the_stall_threshold_passes(tmp_path: Path) -> None:
    replay = Replay("hang-quiet-rank", tmp_path, stop_at=STOP)
    replay.play()
    assert replay.kinds() == []  # every look saw progress
    stopped = replay.watch.last_progress
    assert stopped is not None
    replay.now = stopped + 4.9
    assert replay.look(0) == []
    said = replay.look(0.2)
    assert [e.kind for e in said] == [STALL]
    stall = said[0]
    assert (stall.rank, stall.host, stall.ranks) == (13, "gpu-node02", (13,))
    assert stall.seconds_quiet is not None and stall.seconds_quiet >= 5.0
    assert stall.evidence is not None and "opCount 26" in stall.evidence.text
    assert "rank(s) 13 stopped at NCCL opCount 0x26" in stall.summary
    assert replay.look(60) == []  # said once


def test_a_stall_with_no_rank_behind_is_job_wide(tmp_path: Path) -> None:
    replay = Replay("silent-hang", tmp_path, stop_at=STOP)
    replay.play()
    said = replay.look(10)
    assert [e.kind for e in said] == [STALL]
    assert said[0].rank is None and said[0].host is None and said[0].ranks == ()
    assert "job-wide, no rank behind" in said[0].summary


@pytest.mark.parametrize("lines", [3, 50, 400], ids=lambda n: f"{n}-lines-a-look")
def test_a_healthy_job_raises_no_alert_and_ends(tmp_path: Path, lines: int) -> None:
    replay = Replay("healthy", tmp_path)
    replay.play(lines=lines, seconds=1.0)
    assert replay.kinds() == []
    assert replay.watch.end_row is not None  # every agent finished
    replay.look(600)
    assert replay.kinds() == []  # a job that ended does not stall
    assert not replay.watch.failed


def test_progress_after_a_stall_is_a_recovery(tmp_path: Path) -> None:
    replay = Replay("hang-quiet-rank", tmp_path, stop_at=STOP)
    while replay.write(20) and replay.watch.last_progress is None:
        replay.look(0.5)
    replay.write(60)
    replay.look(0.5)
    said = replay.look(6)  # a pause: no line for 6 s
    assert [e.kind for e in said] == [STALL]
    replay.write(60)
    said = replay.look(1)
    assert [e.kind for e in said] == [RECOVERED]
    assert said[0].seconds_quiet is not None and said[0].seconds_quiet >= 6
    assert replay.watch.stall is None


def test_the_threshold_is_learnt_from_the_rhythm(tmp_path: Path) -> None:
    watch = Watch()
    assert watch.threshold == MIN_STALL_S
    watch._gaps.extend([2.0] * 50)
    assert watch.threshold == MIN_STALL_S  # 10 x 2 s is less than a minute
    watch._gaps.extend([30.0] * 50)
    assert watch.threshold == pytest.approx(300.0)  # 10 x the usual (90th percentile) wait
    watch._longest_recovered = 400.0
    assert watch.threshold == pytest.approx(600.0)  # beyond a stall the job recovered from
    assert Watch(stall=7).threshold == 7


def test_each_kind_of_error_is_said_once_with_its_rank(tmp_path: Path) -> None:
    replay = Replay("crash-cascade", tmp_path)
    replay.play(lines=40)
    errors = [event for _, event in replay.events if event.kind == ERROR]
    assert errors
    first = next(e for e in errors if "ValueError" in e.summary)
    assert (first.rank, first.host) == (11, "gpu-node02") and "ValueError" in first.summary
    kinds = [(e.extra["event"], e.extra["message"], e.summary.split(":", 1)[0]) for e in errors]
    assert len(kinds) == len(set(kinds))
    assert STALL not in replay.kinds()
    assert replay.watch.failed and replay.watch.end_row is not None


def test_memory_is_bounded_over_a_long_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long COLL-heavy job: what the watch keeps of each file stops growing (thinned every
    THIN_FROM rows, here 200, to a few rows a process)."""
    monkeypatch.setattr(state, "THIN_FROM", 200)
    log = tmp_path / "train-1-node01.out"
    init = "".join(f"node01:{100 + r}:{160 + r} [{r}] NCCL INFO ncclCommInitRank comm 0x55000{r}0 rank {r} nranks 8 "
                   f"cudaDev {r} busId {r}000 commId 0xabc - Init COMPLETE\n" for r in range(8))
    log.write_text(init)
    now = [0.0]
    follower = Follower(lambda: discover([tmp_path])[0], lambda: now[0])
    watch = Watch(stall=60)
    kept: list[int] = []
    op = 0
    for look in range(120):
        with log.open("a") as out:
            for _ in range(25):
                op += 1
                out.write("".join(f"node01:{100 + r}:{100 + r} [{r}] NCCL INFO AllReduce: opCount {op:x} sendbuff 0x1 "
                                  f"recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x55000{r}0 [nranks=8] stream "
                                  f"0x1\n" for r in range(8)))
            out.write(f"[rank0]: step {look} loss 0.5\n")
        now[0] += 1.0
        watch.take(follower.look())
        assert watch.check(now[0]) == []
        kept.append(sum(f.kept.height for f in watch._files.values() if f.kept is not None))
    assert max(kept) <= 200 + 9  # one look's rows past the bound
    assert min(kept[40:]) <= 60  # each thinning keeps a few rows a process: init, 2 COLL lines, progress
    assert watch.lines_read == 8 + 120 * (25 * 8 + 1)
