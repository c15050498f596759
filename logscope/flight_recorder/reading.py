"""Read the dumps found: each safely (:mod:`.safe_load`), into columns (:mod:`.dump`), one per rank.

A bad dump is a skipped file with its reason (too big, not plain data, cut short, not a dump, no
rank), never an error of the whole analysis. Two dumps of one rank (the pickle and the JSON a job
wrote side by side, or dumps of two attempts) give one: the newest, the pickle of equals (it
carries the stack frames the JSON form leaves out).

Of each dump, the entries still in flight and each group's last :data:`KEEP_PER_GROUP` become
columns (every entry is walked and loaded, and counted). Many dumps (a 64-rank job: 64 files of
2000 entries, ~20 MB) are read by one worker process per core: a dump of 2000 entries is ~150,000
opcodes, ~5 ms to walk and ~5 ms to load on one core. Workers are plain ``python -c`` subprocesses
(as the log readers'), handed the paths on stdin and returning each dump pickled on stdout as soon
as it is read (a thread per worker takes them, and the caller makes each a frame as it arrives);
they import neither polars nor torch. A dump a worker did not return is read here.
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from logscope.cores import usable_cores
from logscope.errors import printable
from logscope.flight_recorder.dump import Dump, NotADump, read_dump
from logscope.flight_recorder.safe_load import MAX_DUMP_BYTES, UnsafeDump, load_json, load_pickle
from logscope.ingest.discovery import Skipped

# Of each dump, the entries still in flight and each group's last KEEP_PER_GROUP are read into
# columns (logscope.flight_recorder.rows: the timeline's share of a dump).
KEEP_PER_GROUP = 64
# Below this many dumps or bytes, a worker's start (~0.1 s) costs more than it saves.
PARALLEL_MIN_DUMPS = 8
PARALLEL_MIN_BYTES = 2 * 1024 * 1024
MAX_WORKERS = 4
_WORKER_ENV = "LOGSCOPE_FR_WORKER"
T = TypeVar("T")
_WORKER_CODE = ("import sys; sys.path[:] = [p for p in sys.path if p]; "
                "from logscope.flight_recorder.reading import worker_main; worker_main()")


def read_one(path: Path) -> Dump | Skipped:
    """One dump, or why it was skipped."""
    display = printable(str(path))
    try:
        size = path.stat().st_size
        if size > MAX_DUMP_BYTES:
            return Skipped(display, f"Flight Recorder dump of {size} bytes, above the {MAX_DUMP_BYTES} read: not read")
        data = path.read_bytes()
    except OSError as error:
        return Skipped(display, f"cannot read ({error.strerror or error})")
    fmt = "pickle" if data[:1] == b"\x80" else "json"
    try:
        raw = load_pickle(data) if fmt == "pickle" else load_json(data)
        dump = read_dump(raw, file=display, name=path.name, fmt=fmt, size=size, keep_per_group=KEEP_PER_GROUP)
    except (UnsafeDump, NotADump) as error:
        return Skipped(display, f"Flight Recorder dump not read: {error}")
    if dump.rank is None:
        return Skipped(display, "Flight Recorder dump not read: its name ends with no rank, and its groups do not "
                                "say whose it is")
    return dump


def read_dumps(paths: Sequence[Path], convert: Callable[[Dump], T]) -> tuple[list[tuple[Dump, T]], list[Skipped]]:
    """The dumps at ``paths``, one per rank in rank order, each with what ``convert`` made of it as
    it was read (its columns are then dropped: 64 dumps of 2000 entries are ~130 MB as Python
    objects), and those skipped with their reasons."""
    read: list[tuple[Dump, T]] = []
    skipped: list[Skipped] = []
    for outcome in _outcomes(paths):
        if isinstance(outcome, Skipped):
            skipped.append(outcome)
        else:
            read.append((outcome, convert(outcome)))
            outcome.entries = {}
    return _one_per_rank(read, skipped)


def _outcomes(paths: Sequence[Path]) -> Iterator[Dump | Skipped]:
    if not _worth_workers(paths):
        for path in paths:
            yield read_one(path)
        return
    yield from _read_in_workers(paths)


def _one_per_rank(read: list[tuple[Dump, T]], skipped: list[Skipped]) -> tuple[list[tuple[Dump, T]], list[Skipped]]:
    by_rank: dict[int, list[tuple[Dump, T]]] = {}
    for item in read:
        by_rank.setdefault(int(item[0].rank or 0), []).append(item)
    kept = []
    for rank in sorted(by_rank):
        candidates = sorted(by_rank[rank], key=lambda i: (-(i[0].latest_ns or 0), i[0].format != "pickle", i[0].file))
        best = candidates[0][0]
        kept.append(candidates[0])
        for other, _ in candidates[1:]:
            same = other.latest_ns == best.latest_ns and other.entry_count == best.entry_count
            skipped.append(Skipped(other.file, f"another copy of rank {rank}'s dump, read from {best.file}" if same
                                   else f"an older dump of rank {rank} than {best.file}"))
    return kept, skipped


def _worth_workers(paths: Sequence[Path]) -> bool:
    if len(paths) < PARALLEL_MIN_DUMPS or usable_cores() < 2 or os.environ.get(_WORKER_ENV):
        return False
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            continue
        if total >= PARALLEL_MIN_BYTES:
            return True
    return False


def _read_in_workers(paths: Sequence[Path]) -> Iterator[Dump | Skipped]:
    """:func:`read_one` of each path by one worker per core (a share of the paths each, balanced
    by size), each outcome handed on as it arrives (a thread per worker takes its stream, so no
    worker waits for this process to read another's); what a worker did not return is read here."""
    count = min(usable_cores(), MAX_WORKERS, len(paths))
    shares: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for place in sorted(range(len(paths)), key=lambda n: -_size(paths[n])):
        least = loads.index(min(loads))
        shares[least].append(place)
        loads[least] += _size(paths[place])
    env = {**os.environ, _WORKER_ENV: "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2]),
                                                     os.environ.get("PYTHONPATH")) if p)}
    arrived: queue.Queue[tuple[int, Dump | Skipped] | None] = queue.Queue()
    threads = []
    done: set[int] = set()
    for share in shares:
        try:
            worker = subprocess.Popen([sys.executable, "-c", _WORKER_CODE], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        except OSError:
            continue
        thread = threading.Thread(target=_take, args=(worker, [str(paths[n]) for n in share], share, arrived),
                                  daemon=True)
        thread.start()
        threads.append(thread)
    finished = 0
    while finished < len(threads):
        item = arrived.get()
        if item is None:
            finished += 1
            continue
        place, outcome = item
        done.add(place)
        yield outcome
    for place, path in enumerate(paths):
        if place not in done:
            yield read_one(path)


def _take(worker: subprocess.Popen[bytes], paths: list[str], share: list[int],
          arrived: queue.Queue[tuple[int, Dump | Skipped] | None]) -> None:
    """Hand a worker its paths and put each outcome it returns on ``arrived``; None when it ends."""
    try:
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(pickle.dumps(paths))
        worker.stdin.close()
        for place in share:
            # our own worker's output (dumps it read safely), not a dump file
            outcome = pickle.load(worker.stdout)
            if not isinstance(outcome, (Dump, Skipped)):
                break
            arrived.put((place, outcome))
    except (EOFError, OSError, pickle.UnpicklingError):
        pass
    finally:
        worker.wait()
        arrived.put(None)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def worker_main() -> None:
    """A worker of :func:`_read_in_workers`: paths on stdin, their outcomes on stdout."""
    from logscope.collector import collect_less_often

    collect_less_often()
    try:
        paths = pickle.load(sys.stdin.buffer)
    except EOFError:
        return
    out = sys.stdout.buffer
    sys.stdout = sys.stderr
    for path in paths:  # one outcome at a time, as each is read
        pickle.dump(read_one(Path(path)), out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()


__all__ = ["read_dumps", "read_one", "worker_main"]
