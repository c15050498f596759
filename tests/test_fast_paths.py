"""The shortcuts of the reading engine give what the plain way gives.

* the stacked-prefix match equals peeling one prefix at a time;
* COLL lines set aside before classification (``coll_keep``) leave the file's events unchanged;
* reading a job in worker processes gives what reading it in-process gives, and a worker that
  cannot start costs nothing but time.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from reading_support import assert_same_reads, coll_heavy_log, jobsim

from logscope import ingest
from logscope.ingest import (
    FileRead,
    Skipped,
    SourceFile,
    blocks,
    discover,
    read_file,
    read_files,
    reading,
    thinning,
    workers,
)
from logscope.parsers import lines as engine
from logscope.parsers.prefixes import MAX_PREFIXES, ONE_PREFIX, split_prefix

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
PIECES = [" 3: ", "12: ", "[0] ", "(RayWorkerWrapper pid=4009) ", "[default3]:", "[rank11]:", "[rank7]: ",
          "[host1:3]:", "[host13]:", "[worker:3]", "2026-09-18 19:29:24 [rank3]:", "node-7: ", "[rank", "3:", ": ",
          "[", "]", " ", "1", "é1: "]
BODIES = ["hello", "node0:13571:13571 [0] NCCL INFO Bootstrap", "", "10:", "[E ProcessGroupNCCL.cpp:1537] y", "é"]


def peel_one_at_a_time(line: str) -> str:
    for _ in range(MAX_PREFIXES):
        m = re.match(ONE_PREFIX, line)
        if m is None or not m.group("whole"):
            break
        line = line[m.end():]
    return line


def test_stacked_prefix_match_equals_peeling_one_at_a_time() -> None:
    rng = random.Random(7)
    lines = ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 7))) + rng.choice(BODIES) for _ in range(5000)]
    out = split_prefix(pl.DataFrame({"raw": lines}))
    assert out["body"].to_list() == [peel_one_at_a_time(line) for line in lines]
    assert out["prefix"].to_list() == [line[: len(line) - len(peel_one_at_a_time(line))] or None for line in lines]


def read_plainly(source: SourceFile, monkeypatch: pytest.MonkeyPatch) -> FileRead | Skipped:
    """read_file with no COLL line set aside before classification: neither by the compiled
    scanner (no block is prefiltered) nor by polars."""
    plain_prepare = engine.prepare_chunk
    with monkeypatch.context() as patch:
        patch.setattr(reading, "reduce_block", lambda block, first_line, controls: None)
        patch.setattr(reading, "prepare_chunk",
                      lambda lines, year, carry, coll_keep=None, **options: plain_prepare(lines, year, carry))
        return read_file(source)


def test_coll_lines_set_aside_early_leave_the_events_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Several chunks, each with more lines per process and comm than thinning keeps.
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 1024 * 1024)
    source = discover([coll_heavy_log(tmp_path / "coll-1-gpu0.out")])[0][0]
    fast = read_file(source)
    assert_same_reads([read_plainly(source, monkeypatch)], [fast])
    assert isinstance(fast, FileRead)
    # Thinned: COLL_HEAD + COLL_TAIL rows for each (host, pid, comm) of the main lines.
    comm = pl.col("fields").struct.field("comm")
    main = fast.events.filter((pl.col("event") == "nccl_coll") & pl.col("host").is_in(["gpu0", "gpu1", "gpu2"])
                              & comm.is_in(["0x55aa01", "0x55aa02", "(nil)"]))
    assert main.group_by("host", "pid", comm).len()["len"].to_list() == [ingest.COLL_HEAD + ingest.COLL_TAIL] * 9


@pytest.mark.parametrize("broken", [False, True])
def test_reading_in_workers_matches_reading_here(monkeypatch: pytest.MonkeyPatch, broken: bool) -> None:
    files, _ = discover([SAMPLES / "crash-cascade", SAMPLES / "oom"])
    here = [read_file(f) for f in files]
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    if broken:  # no worker can start: everything is read here
        monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    seen: list[str] = []
    there = read_files(files, lambda source, n: seen.append(source.display))
    assert len(here) == len(files) and set(seen) == {f.display for f in files}
    assert_same_reads(here, there)


def _early_read_of(monkeypatch: pytest.MonkeyPatch, inputs: list[Path],
                   exclude: Callable[[Sequence[Path]], Sequence[Path]] | None = None) -> list[subprocess.Popen[bytes]]:
    """start_early on ``inputs`` (as if big, on two cores); the processes of the read it began."""
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    workers.start_early(inputs, exclude=exclude)
    assert len(workers._EARLY_READ) == 1 and not workers._EARLY  # every worker started was given files
    early = workers._EARLY_READ[0][1]
    deadline = time.monotonic() + 30
    while len(early._processes) < 2 and time.monotonic() < deadline:  # noted as their threads take them
        time.sleep(0.01)
    return list(early._processes)


@pytest.mark.parametrize("same_files", [True, False])
def test_a_read_started_early_is_used_for_its_files_or_stopped(monkeypatch: pytest.MonkeyPatch,
                                                               same_files: bool) -> None:
    # start_early finds the files and the workers read them while the command imports; read_files
    # takes that read when it is given the same files, and else stops it and reads them as usual:
    # the same reads either way, and no worker started late nor left behind.
    inputs = [SAMPLES / "crash-cascade", SAMPLES / "oom"]
    files, _ = discover(inputs if same_files else inputs[:1])
    here = [read_file(f) for f in files]
    processes = _early_read_of(monkeypatch, [*inputs, Path("json")])  # an option's value is no input
    if not same_files:
        monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 10**15)  # read here: no worker may start
    started: list[object] = []
    monkeypatch.setattr(workers, "_start_worker", lambda: started.append(1) or pytest.fail("a worker started late"))
    early = workers._EARLY_READ[0][1]
    assert_same_reads(here, read_files(files))
    assert not workers._EARLY_READ and not workers._EARLY and not started
    assert early._stopped is not same_files
    for proc in processes:
        proc.wait(timeout=30)  # none left behind


def test_a_read_started_early_leaves_out_what_the_caller_reads_as_something_else(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # SLURM's record saved beside the logs is read as the record (command.py passes the finder):
    # found early as a log, the files would differ from the CLI's and the early read be wasted.
    inputs = [SAMPLES / "crash-cascade", SAMPLES / "oom"]
    left_out = [discover(inputs)[0][0].path]
    _early_read_of(monkeypatch, inputs, exclude=lambda _paths: left_out)
    found = workers._EARLY_READ[0][0]
    assert found == discover(inputs, exclude=left_out)[0] and left_out[0] not in [f.path for f in found]
    processes = workers._EARLY_READ[0][1]._processes
    workers._stop_early_read()  # what the exit handler does
    assert not workers._EARLY_READ
    for proc in processes:
        proc.wait(timeout=30)


def test_a_read_started_early_and_never_taken_is_stopped_at_exit(tmp_path: Path) -> None:
    # A command that fails after start_early (a wrong option, files of two jobs) reads nothing: the
    # exit handler start_early registers stops its workers rather than let them read on. Here the
    # workers never end by themselves (they sleep), so only that handler can end them.
    child = (
        "import time\nfrom pathlib import Path\nfrom logscope.ingest import workers\n"
        "workers.PARALLEL_MIN_BYTES = 1\nworkers.usable_cores = lambda: 2\n"
        "workers._WORKER_CODE = 'import time; time.sleep(600)'\n"
        f"workers.start_early([Path({str(SAMPLES / 'crash-cascade')!r}), Path({str(SAMPLES / 'oom')!r})])\n"
        "early = workers._EARLY_READ[0][1]\n"
        "while len(early._processes) < 2: time.sleep(0.01)\n"
        "print(' '.join(str(p.pid) for p in early._processes))\n")
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120, check=True)
    pids = done.stdout.split()
    assert len(pids) == 2
    deadline = time.monotonic() + 60
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids), "a worker started early outlived its command"


def _alive(pid: str) -> bool:
    """Whether process ``pid`` runs (a zombie waiting to be reaped has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state not in "ZX"


def test_a_worker_that_starts_after_its_read_was_stopped_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    # stop() may come while a worker is still starting (a read start_early began, for other files
    # than the command reads): that worker is stopped as soon as it has started.
    go = threading.Event()
    started: list[subprocess.Popen[bytes]] = []

    def start_late() -> subprocess.Popen[bytes]:
        go.wait(30)
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        return started[-1]

    monkeypatch.setattr(workers, "_start_worker", start_late)
    files, _ = discover([SAMPLES / "oom"])
    reading = workers._Workers(files, [[0]], 1)
    reading.stop()
    go.set()
    deadline = time.monotonic() + 30
    while not started and time.monotonic() < deadline:
        time.sleep(0.01)
    started[0].wait(timeout=30)
    assert list(reading.results()) == []  # it returned nothing: the file is read by the caller


def test_workers_started_early_wait_for_their_files_when_none_can_be_found_yet(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A job id among the inputs (its logs found later, through SLURM) or a folder that cannot be
    # walked: the workers only start, and read_files gives them their files, or stops them.
    files, _ = discover([SAMPLES / "crash-cascade", SAMPLES / "oom"])
    here = [read_file(f) for f in files]
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    monkeypatch.setattr(workers, "_found_early", lambda _inputs, _exclude: None)
    workers.start_early([SAMPLES / "crash-cascade", SAMPLES / "oom"])
    early = list(workers._EARLY)
    assert len(early) == 2 and not workers._EARLY_READ
    monkeypatch.setattr(workers, "_start_worker", lambda: pytest.fail("a worker started late"))
    assert_same_reads(here, read_files(files))
    assert not workers._EARLY
    assert all(proc.poll() is not None for proc in early)


def _sized(sizes: list[int]) -> list[SourceFile]:
    source = discover([SAMPLES / "oom"])[0][0]
    return [replace(source, display=f"f{n}", size=size) for n, size in enumerate(sizes)]


def test_files_are_handed_out_biggest_first_the_small_ones_together() -> None:
    mb = 1024 * 1024
    sources = _sized([70 * mb, 10 * mb, 20 * mb, 300 * mb, 40 * mb, 5 * mb, 64 * mb])
    units = workers._units(sources, 2)
    assert units == [[3], [0], [6], [4, 5], [1, 2]]  # 300, 70, 64 alone, then 45 and 30 together, in file order
    assert sorted(i for unit in units for i in unit) == list(range(len(sources)))
    # Small files only: each worker gets two units at least (a fixed 64 MB would leave one worker
    # a 60 MB job whole).
    small = workers._units(_sized([6 * mb] * 10), 2)
    assert len(small) >= 4 and all(len(unit) <= 3 for unit in small)
    assert workers._units(_sized([0, 0, 0]), 2) == [[0, 1, 2]]  # empty files: one list


# A stand-in worker: each list of sources it is given is answered at once (None for each file:
# read by the caller), but a list whose first file is named "slow" only once the file argv[1]
# exists, and one whose first file is named "die" never: the worker dies then.
_STAND_IN_WORKER = """
import os, pickle, sys, time
release = sys.argv[1]
while True:
    try:
        unit = pickle.load(sys.stdin.buffer)
    except EOFError:
        break
    if unit[0].display == "die":
        sys.exit(3)
    if unit[0].display == "slow":
        while not os.path.exists(release):
            time.sleep(0.01)
    for place in range(len(unit)):
        pickle.dump((place, None), sys.stdout.buffer)
        sys.stdout.buffer.flush()
"""


def _stand_in_workers(monkeypatch: pytest.MonkeyPatch, release: Path) -> None:
    monkeypatch.setattr(workers, "_start_worker", lambda: subprocess.Popen(
        [sys.executable, "-c", _STAND_IN_WORKER, str(release)], stdin=subprocess.PIPE, stdout=subprocess.PIPE))


def test_a_worker_free_takes_the_next_file_while_another_reads_a_long_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a file costs is known once it is read: the other worker reads every file left while one
    # is held by a long one, rather than a share fixed in advance.
    release = tmp_path / "release"
    _stand_in_workers(monkeypatch, release)
    sources = _sized([100, 50, 40, 30, 20])
    sources[0] = replace(sources[0], display="slow")
    reading_ = workers._Workers(sources, [[0], [1], [2], [3], [4]], 2)
    returned = reading_.results()
    first_four = sorted(next(returned)[0] for _ in range(4))
    assert first_four == [1, 2, 3, 4]  # all but the long one, while it is still being read
    release.touch()
    assert [index for index, _ in returned] == [0]


def test_the_files_a_dead_worker_held_are_not_returned_and_the_others_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Whichever worker takes the file it dies on, the other reads every other file; the one it held
    # is not returned, and read_files reads such a file in its own process.
    _stand_in_workers(monkeypatch, tmp_path / "release")
    sources = _sized([100, 50, 40])
    sources[0] = replace(sources[0], display="die")
    returned = sorted(index for index, _ in workers._Workers(sources, [[0], [1], [2]], 2).results())
    assert returned == [1, 2]


def test_every_name_the_ingest_package_exports_loads() -> None:
    # The package loads its names lazily (discovery and the workers' start-up import no polars).
    assert all(getattr(ingest, name) is not None for name in ingest.__all__)


def test_non_ascii_digits_in_a_prefix_are_not_fatal() -> None:
    # A Unicode \d matched "٣" (Arabic-Indic three), which stopped the whole chunk with a cast
    # error. The regexes now read \d as an ASCII digit (logscope.parsers.regex_ascii), as srun and
    # torchrun write their labels: such a line has no launcher prefix (no task), and the chunk reads
    # on. Its message is still found: what stands before a message never hides it.
    out = engine.parse_chunk(pl.DataFrame({"line": [1, 2, 3], "raw": ["٣: ValueError: x", "[default٣]:ValueError: y",
                                                                      "3: ValueError: z"]},
                                          schema={"line": pl.Int64, "raw": pl.String}), 2026, None)
    assert out.events.select("line", "event", "task").rows() == [
        (1, "exception", None), (2, "exception", None), (3, "exception", 3)]


@pytest.mark.parametrize("batch_rows", [1, 50, 10**9])
def test_classifying_blocks_of_several_files_together_matches_one_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_rows: int) -> None:
    coll_heavy_log(tmp_path / "coll-1-gpu0.out", 3000)
    files, _ = discover([SAMPLES / "crash-cascade", SAMPLES / "rank0-misresolution", tmp_path])
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 16 * 1024)  # files of several blocks
    alone = [read_file(f) for f in files]
    monkeypatch.setattr(reading, "BATCH_ROWS", batch_rows)  # 1: each block alone; 10**9: one batch
    assert len(alone) == len(files)
    assert_same_reads(alone, list(ingest.read_in_order(files)))


def test_a_pause_among_the_files_finishes_what_waits_and_changes_no_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # read_files pauses whenever the workers have returned nothing more: the files this process took
    # are classified and yielded then, not after the workers' last file.
    files, _ = discover([SAMPLES / "crash-cascade", SAMPLES / "rank0-misresolution", SAMPLES / "oom"])
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 16 * 1024)  # files of several blocks
    alone = list(ingest.read_in_order(files))
    yielded: list[int] = []

    def with_pauses() -> Iterator[SourceFile | reading.Pause]:
        for n, source in enumerate(files):
            yield source
            yielded.append(n)
            yield reading.PAUSE

    got: list[FileRead | Skipped] = []
    for result in ingest.read_in_order(with_pauses()):
        assert len(yielded) == len(got) + 1  # each file yielded at the pause after it, not at the end
        got.append(result)
    assert_same_reads(alone, got)


def test_coll_lines_with_nccl_timestamps_set_aside_early_leave_the_events_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # NCCL_DEBUG_TIMESTAMP_LEVELS=ALL: every COLL line has its own time. Lines set aside must not
    # take a time away from the lines around them.
    sim = jobsim()
    sim.write_job(sim.JobSpec(scenario="crash-cascade", nodes=2, coll=True, nccl_timestamps=True, steps=400), tmp_path)
    for path in tmp_path.iterdir():  # untimed events amid the COLL lines: they take their times from them
        lines = path.read_text().splitlines()
        path.write_text("\n".join(f"{line}\nValueError: odd sample {n}" if n % 500 == 250 else line
                                  for n, line in enumerate(lines)) + "\n")
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 256 * 1024)
    for source in discover([tmp_path])[0]:
        fast = read_file(source)
        assert_same_reads([read_plainly(source, monkeypatch)], [fast])
        assert isinstance(fast, FileRead) and fast.lines_read > 5 * fast.events.height  # most COLL lines thinned


def _progress_log(path: Path) -> Path:
    """Training-progress lines of several processes (torchrun's and srun's prefixes, none), in three
    styles, among lines that hold a progress trigger yet are something else or hold another
    pattern's trigger too, and lines of no progress at all."""
    rng = random.Random(11)
    prefixes = ["[default0]:", "[default1]:", "0: ", "1: [default0]:", ""]
    out = []
    for step in range(1, 6001):
        prefix = rng.choice(prefixes)
        stamp = f"2026-11-03 14:{step // 60 % 60:02d}:{step % 60:02d},532 - INFO - "
        out.append(rng.choice([
            f"{prefix}{stamp}iteration {step:8d}/  1000000 | consumed samples: {step * 64:12d} | elapsed time per "
            f"iteration (ms): 6707.5 | learning rate: 1.500E-04 | lm loss: 2.51E+00 | grad norm: 0.512 |",
            f"{prefix}{{'loss': 0.{step % 97:02d}11, 'grad_norm': 0.306, 'learning_rate': 4e-05, 'epoch': 0.4}}",
            f"{prefix}step {step} loss 1.{step % 89}",
            f"{prefix}iteration {step:8d}/  1000000 | NCCL WARN this line holds another pattern's trigger",
            f"{prefix}RuntimeError: failed at iteration {step}/ 10 | lm loss: nan",
            f"{prefix}{stamp}iteration {step}: the loader is slow",
            f"{prefix}{stamp}nothing to see {step}",
        ]))
    path.write_text("\n".join(out) + "\n")
    return path


def _read_counting_aside(source: SourceFile, monkeypatch: pytest.MonkeyPatch,
                         rule: str) -> tuple[FileRead | Skipped, int]:
    """read_file of ``source``, and how many lines the parser's ``rule`` (a ``*_surplus`` function
    of logscope.parsers.lines) set aside on the way."""
    aside = 0
    surplus = getattr(engine, rule)

    def counted(*args: Any) -> pl.Series | None:
        nonlocal aside
        found: pl.Series | None = surplus(*args)
        aside += 0 if found is None else found.len()
        return found

    monkeypatch.setattr(engine, rule, counted)
    return read_file(source), aside


def test_progress_lines_set_aside_early_leave_the_events_unchanged(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # Chunks of ~6,000 lines, more progress lines per prefix than the thinning keeps (lowered).
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 256 * 1024)
    monkeypatch.setattr(reading, "COLL_ASIDE_MIN_LINES", 500)
    monkeypatch.setattr(reading, "PROGRESS_TAIL", 40)
    monkeypatch.setattr(thinning, "PROGRESS_TAIL", 40)
    source = discover([_progress_log(tmp_path / "progress.out")])[0][0]
    fast, aside = _read_counting_aside(source, monkeypatch, "progress_surplus")
    assert aside > 500  # the shortcut was taken (a line holding an NCCL WARN too is that WARN, never set aside)
    assert_same_reads([read_plainly(source, monkeypatch)], [fast])
    assert isinstance(fast, FileRead)
    kinds = fast.events.group_by("event").len()
    assert kinds.filter(pl.col("event") == "progress")["len"].item() > 0


def _channel_log(path: Path) -> Path:
    """NCCL channel lines of several hosts, processes, threads and devices (P2P and NET, each
    connection several times over its channels), among lines that hold the channel pattern's
    trigger yet are something else or another pattern's first, lines a wrapper stamped with a time,
    and lines of no NCCL."""
    rng = random.Random(5)
    out = []
    for n in range(8000):
        host, pid, dev = rng.choice([("gpu-node01", 4242, 0), ("gpu-node01", 4243, 1), ("gpu-node02", 5150, 0)])
        tid = rng.choice([4300, 4301, 4377])
        head = f"{host}:{pid}:{tid} [{dev}] NCCL INFO"
        # Ranks in their communicators: processes of one host say the same but for their pid.
        rank, peer, channel = rng.randrange(2), rng.randrange(4), rng.randrange(16)
        out.append(rng.choice([
            f"{head} Channel {channel:02d}/0 : {rank}[{dev}] -> {peer}[{peer}] via P2P/IPC/read",
            f"[default{dev}]:{head} Channel {channel:02d}/0 : {rank}[{dev}] -> {peer}[{peer}] [send] via NET/IB/0",
            f"{head} Channel {channel:02d} : {rank}[1a000] -> {peer}[1a000] [receive] via NET/IB/3",
            f"{head} Channel {channel:02d}/02 :    0   1   2   3",
            f"[2026-11-03 14:00:{n % 60:02d}] {head} Channel {channel:02d}/0 : {rank}[{dev}] -> {peer}[{peer}] via SHM",
            # two processes' lines glued (interleaved output): NCCL's setting comes first in the table
            f"{head} NCCL_IB_HCA set by environment to mlx5{head} Channel {channel:02d}/0 : 0[0] -> 1[1] via P2P/IPC",
            f"step {n} shipped via the loader",
        ]))
    path.write_text("\n".join(out) + "\n")
    return path


def test_channel_lines_set_aside_early_leave_the_events_unchanged(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 256 * 1024)
    monkeypatch.setattr(reading, "COLL_ASIDE_MIN_LINES", 500)
    source = discover([_channel_log(tmp_path / "nccl.out")])[0][0]
    fast, aside = _read_counting_aside(source, monkeypatch, "channel_surplus")
    assert aside > 2000  # the shortcut was taken
    assert_same_reads([read_plainly(source, monkeypatch)], [fast])
    assert isinstance(fast, FileRead)
    channels = fast.events.filter(pl.col("event") == "nccl_channel")
    assert channels.height > 30
    assert channels["text"].str.contains("set by environment").sum() == 0  # an earlier pattern's lines
    assert fast.events.filter(pl.col("event") == "nccl_env").height > 0


REAL_LOGS = Path(__file__).resolve().parents[2] / "shared" / "real_logs"


def test_small_files_prepared_together_read_as_each_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # A small file read whole in one block joins the pool and is prepared with the others (one
    # call for many files); prepared alone, each gives the same reads: hard-wrapped pastes,
    # carriage returns and untimed lines included (the real third-party logs have all three).
    folders = [SAMPLES / "crash-cascade", SAMPLES / "oom", SAMPLES / "rank0-misresolution"]
    if REAL_LOGS.is_dir():
        folders += sorted(p for p in REAL_LOGS.iterdir() if p.is_dir())
    files = [f for folder in folders for f in discover([folder])[0]]
    assert len(files) > 3
    pooled: list[int] = []
    pool = reading._Batch._pool

    def counted(batch: reading._Batch, read: reading._Reading, framed: reading._Framed | reading._Whole) -> None:
        pooled.append(framed.lines if isinstance(framed, reading._Whole) else framed.lines.height)
        pool(batch, read, framed)

    def prepared_alone(batch: reading._Batch, read: reading._Reading,
                       framed: reading._Framed | reading._Whole) -> None:
        # a whole small file's lines split by a read of its own (lines_frame), as before the pool
        # read them together (line_frames.whole_files_lines)
        batch._prepare(read, reading._split_whole([(read, framed)])[0][1], None)

    with monkeypatch.context() as patch:
        patch.setattr(reading._Batch, "_pool", counted)
        together = list(reading.read_in_order(files))
    assert len(pooled) > 3
    with monkeypatch.context() as patch:  # each file read and prepared alone, as it comes
        patch.setattr(reading._Batch, "_pool", prepared_alone)
        patch.setattr(reading, "whole_files_lines", lambda blocks, counts: None)
        alone = list(reading.read_in_order(files))
    assert_same_reads([r for r in alone if isinstance(r, FileRead)], [r for r in together if isinstance(r, FileRead)])
    assert [type(r) for r in alone] == [type(r) for r in together]


def _nested_here() -> bool:
    return workers._nested()


def test_a_process_of_a_multiprocessing_pool_reads_in_process() -> None:
    # scan's workers already fill the cores: a job they read must not start read workers of its
    # own. They are multiprocessing children; this process is not.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    assert not workers._nested()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(_nested_here).result()
