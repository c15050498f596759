"""Read a big job's files in worker processes, one per core, a file at a time.

Workers are plain ``python -c`` subprocesses fed pickled sources on stdin and returning one
pickled result per file on stdout; a file a worker did not return (it could not start, or died)
is read in this process.

A worker spends its first ~0.3 s importing polars and the parsers. :func:`start_early` lets a
command start them as soon as it knows its inputs are big, before it imports anything heavy
itself, so that both imports overlap; :func:`read_files` then hands them their files. This module
imports nothing heavy itself, so that it can be imported that early.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from logscope.ingest.discovery import Skipped, SourceFile

if TYPE_CHECKING:
    from logscope.ingest.reading import FileRead

# Jobs at least this big are read by several processes (read_files). Below it the gain is small
# (starting a worker takes ~0.3 s) and each worker costs ~130 MB (an interpreter with polars).
PARALLEL_MIN_BYTES = 128 * 1024 * 1024
MAX_WORKERS = 8
_WORKER_ENV = "LOGSCOPE_READ_WORKER"
_WORKER_CODE = "from logscope.ingest.workers import worker_main; worker_main()"


def read_files(sources: Sequence[SourceFile],
               on_bytes: Callable[[SourceFile, int], None] | None = None) -> list[FileRead | Skipped]:
    """:func:`read_file` for each of ``sources``, results in the same order.

    A big job is read by one worker process per core, a file at a time. Polars runs each string
    kernel of a chunk on one core, and Python threads calling it contend rather than scale, so
    files are the unit of parallelism. (This process waits rather than reads: it cannot have the
    workers' memory settings, see _worker_env, and reads ~15% slower.) Workers are plain
    ``python -c`` subprocesses, not multiprocessing, which re-imports the caller's ``__main__``: a
    library user's unguarded script would run again. A file a worker did not return (it could not
    start, or died) is read here. ``on_bytes`` gets each block read here, and a file's size when a
    worker returns it.
    """
    results: list[FileRead | Skipped | None] = [None] * len(sources)
    cores = min(_usable_cores(), len(sources), MAX_WORKERS)
    # A process that is itself a worker (ours, or one of scan's, which already fill the cores)
    # reads in-process.
    if cores >= 2 and not _nested() and sum(s.size for s in sources) >= PARALLEL_MIN_BYTES:
        for i, got in _Workers(sources, _balance(sources, cores)).results():
            results[i] = got
            if on_bytes is not None:
                on_bytes(sources[i], sources[i].size)
    else:
        _stop_early_workers()
    from logscope.ingest.reading import read_in_order

    left = [i for i, outcome in enumerate(results) if outcome is None]
    for i, outcome in zip(left, read_in_order([sources[i] for i in left], on_bytes), strict=True):
        results[i] = outcome
    return [outcome for outcome in results if outcome is not None]


def _usable_cores() -> int:
    """Cores this process may run on (a SLURM allocation or a container may grant fewer than the
    machine has)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _balance(sources: Sequence[SourceFile], count: int) -> list[list[int]]:
    """``count`` groups of file indexes of about equal total size (biggest first, to the least
    loaded group), each in file order."""
    groups: list[list[int]] = [[] for _ in range(count)]
    load = [0] * count
    for i in sorted(range(len(sources)), key=lambda i: -sources[i].size):
        smallest = load.index(min(load))
        groups[smallest].append(i)
        load[smallest] += sources[i].size
    return [sorted(group) for group in groups]


class _Workers:
    """Worker processes reading groups of files, each returning (index, result) per file."""

    def __init__(self, sources: Sequence[SourceFile], groups: list[list[int]]) -> None:
        self._sources = sources
        self._returned: queue.SimpleQueue[tuple[int, FileRead | Skipped] | None] = queue.SimpleQueue()
        self._running = len(groups)
        started = _take_early_workers(len(groups))
        for group, proc in zip(groups, started + [None] * (len(groups) - len(started)), strict=True):
            threading.Thread(target=self._run, args=(group, proc), daemon=True).start()

    def results(self) -> Iterator[tuple[int, FileRead | Skipped]]:
        """Each result as a worker returns it, until all the workers are done."""
        while self._running:
            item = self._returned.get()
            if item is None:
                self._running -= 1
            else:
                yield item

    def _run(self, group: list[int], proc: subprocess.Popen[bytes] | None) -> None:
        # Whatever fails (no interpreter, a worker killed for memory), the files it did not
        # return are read by the caller.
        try:
            with proc or _start_worker() as running:
                assert running.stdin is not None and running.stdout is not None
                running.stdin.write(pickle.dumps([self._sources[i] for i in group]))
                running.stdin.close()
                for i in group:  # one result per file, in order, as soon as it is read
                    self._returned.put((i, pickle.load(running.stdout)))
        except Exception:
            pass
        finally:
            self._returned.put(None)


def _worker_env() -> dict[str, str]:
    package_root = str(Path(__file__).resolve().parents[2])
    return {
        **os.environ, _WORKER_ENV: "1", "POLARS_MAX_THREADS": "1",  # the processes already fill the cores
        "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p),
        # Each block allocates a few buffers of CHUNK_BYTES, freed at the end of the block. By
        # default glibc maps and unmaps them (Python's) and jemalloc hands freed pages back to
        # the system (polars'), so every block faults its memory in again, page by page: ~10%
        # of a worker's time. A short-lived worker keeps and reuses its memory instead.
        "MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 32),
        "_RJEM_MALLOC_CONF": "dirty_decay_ms:-1,muzzy_decay_ms:-1",
    }


def _start_worker() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", _WORKER_CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=_worker_env())


# Workers started by start_early, waiting for their files.
_EARLY: list[subprocess.Popen[bytes]] = []


def start_early(inputs: Sequence[Path]) -> None:
    """Start the workers now when ``inputs`` (files and folders, as given on the command line)
    hold at least PARALLEL_MIN_BYTES: they import while the caller does. Files are counted by
    their size on disk, up to that much; :func:`read_files` decides on the files it is given and
    stops the workers it does not use."""
    cores = min(_usable_cores(), MAX_WORKERS)
    if _EARLY or cores < 2 or _nested() or _size_at_least(inputs, PARALLEL_MIN_BYTES) < PARALLEL_MIN_BYTES:
        return
    try:
        _EARLY.extend(_start_worker() for _ in range(cores))
    except OSError:  # no interpreter to start: read_files reads here
        _stop_early_workers()


def _take_early_workers(count: int) -> list[subprocess.Popen[bytes]]:
    taken, rest = _EARLY[:count], _EARLY[count:]
    _EARLY.clear()
    _EARLY.extend(rest)
    _stop_early_workers()
    return taken


def _stop_early_workers() -> None:
    """Workers started early and not needed: their closed stdin ends them."""
    for proc in _EARLY:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    _EARLY.clear()


def _size_at_least(inputs: Sequence[Path], enough: int) -> int:
    """The bytes of the files in ``inputs`` (folders walked, links to folders not followed), counted
    until they reach ``enough``."""
    total = 0
    for given in inputs:
        try:
            if given.is_file():
                total += given.stat().st_size
            elif given.is_dir():
                for folder, _, names in os.walk(given):
                    for name in names:
                        try:
                            total += os.stat(os.path.join(folder, name)).st_size  # noqa: PTH116, PTH118
                        except OSError:
                            continue
                        if total >= enough:
                            return total
        except OSError:
            continue
        if total >= enough:
            return total
    return total


def _nested() -> bool:
    """A process that is itself a worker (ours, or one of scan's, which already fill the cores)."""
    return bool(os.environ.get(_WORKER_ENV)) or multiprocessing.parent_process() is not None


def worker_main() -> None:
    """A worker process of :func:`read_files`: pickled sources on stdin, one pickled result per
    file on stdout. The reader is imported first, before the sources arrive (see start_early);
    an empty stdin (a worker not needed) ends it."""
    from logscope.ingest.reading import read_in_order

    try:
        sources = pickle.load(sys.stdin.buffer)
    except EOFError:
        return
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but results may go into the results stream
    for result in read_in_order(sources):
        pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()
