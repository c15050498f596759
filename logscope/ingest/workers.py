"""Read a big job's files in worker processes, one per core, a file at a time.

Workers are plain ``python -c`` subprocesses fed pickled lists of sources on stdin, one list at a
time, and returning one pickled outcome per file on stdout; a file a worker did not return (it could
not start, or died) is read in this process. Files are handed out as the workers come free, the
biggest first (:func:`_units`): what a file costs is known only once it is read (a restart loop's
file of 358 MB took 6 s, a progress log's of the same size 10 s), so a share fixed in advance by
size left one core idle while the other read two files.

A worker first takes each of its files through the byte pass (:mod:`logscope.ingest.scanning`),
which loads no polars: a COLL-heavy file comes back as the few lines the pass kept, parsed here
with those of the job's other files. A file the pass cannot take is read by the worker the usual
way (it loads polars then, ~0.3 s), or, while such files are small, here. :func:`start_early`
lets a command start reading as soon as it knows its inputs are big, before it imports anything
heavy itself: it finds the files and hands them to the workers, which read them while the command
imports; :func:`read_files` then takes that read if it is of the files it is given (else stops it).
This module imports nothing heavy itself, so that it can be imported that early.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from logscope.cores import usable_cores
from logscope.errors import LogscopeError
from logscope.ingest.discovery import Skipped, SourceFile, discover
from logscope.ingest.pieces import LineCounts, Piece, plan_pieces, with_first_line
from logscope.walk import walk

if TYPE_CHECKING:
    from logscope.ingest.reading import FileRead, Pause, PieceRead
    from logscope.ingest.scanning import ScannedFile

    # What a worker returns for a file: its result, read there the usual way; what the byte pass
    # kept of it, to be parsed here; or None, for a file this process is to read itself. For a
    # piece of a file (logscope.ingest.pieces): what it read of it, or why the file cannot be read.
    Outcome = FileRead | Skipped | ScannedFile | PieceRead | None

# Jobs at least this big are read by several processes (read_files). A worker starts in ~0.1 s
# and costs ~30 MB while its files need no polars (~0.3 s more and ~130 MB when they do); below
# this, the gain is small.
PARALLEL_MIN_BYTES = 32 * 1024 * 1024
# A worker leaves the files its byte pass cannot take to this process while they add up to no
# more than this; beyond it, it reads them itself (and loads polars for them).
LEFT_HERE_MAX_BYTES = 16 * 1024 * 1024
# Files smaller than this are handed to a worker together, up to this much, in file order: a
# worker reads those it cannot leave here in one batch (polars frames small files together).
UNIT_BYTES = 64 * 1024 * 1024
MAX_WORKERS = 8
_WORKER_ENV = "LOGSCOPE_READ_WORKER"
# ``python -c`` puts the working folder first on sys.path: a folder holding another copy of
# logscope (a source checkout beside an installed package, as the README's quick start leaves
# one) would be imported instead of the package this process runs, which PYTHONPATH names
# (_worker_env). The worker takes it off first.
# Once worker_main has sent everything, the worker leaves without Python's teardown of polars
# (every module and thread pool freed in turn, ~0.1 s of a core), as the command does.
_WORKER_CODE = ("import sys; sys.path[:] = [p for p in sys.path if p]; "
                "from logscope.ingest.workers import worker_main; worker_main(); "
                "import os; sys.stderr.flush(); os._exit(0)")


def read_files(sources: Sequence[SourceFile],
               on_bytes: Callable[[SourceFile, int], None] | None = None) -> list[FileRead | Skipped]:
    """:func:`read_file` for each of ``sources``, results in the same order.

    A big job is read by one worker process per core, a file at a time (a file bigger than a
    worker's share, in pieces: logscope.ingest.pieces). Polars runs each string kernel of a chunk
    on one core, and Python threads calling it contend rather than scale, so files (and pieces of
    them) are the unit of parallelism. This process parses what the workers' byte pass kept of
    COLL-heavy files (all of them in one batch, while the workers read on) and reads the small
    files they leave to it; the rest the workers read themselves (see worker_main). Workers are
    plain ``python -c`` subprocesses, not multiprocessing, which re-imports the caller's
    ``__main__``: a library user's unguarded script would run again. A file a worker did not
    return (it could not start, or died) is read here. ``on_bytes`` gets each block read here, and
    a file's (a piece's) size when a worker returns it.
    """
    from logscope.ingest.reading import read_in_order

    workers = _take_early_read(sources)
    if workers is None:
        cores = min(usable_cores(), MAX_WORKERS)
        # A process that is itself a worker (ours, or one of scan's, which already fill the cores)
        # reads in-process.
        items = [] if cores < 2 or _nested() or sum(s.size for s in sources) < PARALLEL_MIN_BYTES \
            else plan_pieces(sources, cores)
        if len(items) < 2:
            _stop_early_workers()
            return list(read_in_order(sources, on_bytes))
        cores = min(cores, len(items))
        workers = _Workers(items, _units(items, cores), cores)
    results: list[FileRead | Skipped | None] = [None] * len(sources)
    handed: deque[int] = deque()  # files given to read_in_order here, in order
    for outcome in read_in_order(_to_read_here(sources, workers, results, handed, on_bytes), on_bytes):
        results[handed.popleft()] = outcome
    return [outcome for outcome in results if outcome is not None]


def _to_read_here(sources: Sequence[SourceFile], workers: _Workers, results: list[FileRead | Skipped | None],
                  handed: deque[int], on_bytes: Callable[[SourceFile, int], None] | None,
                  ) -> Iterator[SourceFile | ScannedFile | Pause]:
    """As the workers return their files: the results they read into ``results``, and the files to
    be parsed or read here yielded (their indexes appended to ``handed``), as they come, so that
    this process parses while the workers read; then the files no worker returned. Whenever no
    worker has returned anything more, a PAUSE: what this process took so far is finished then,
    not once the workers are done (a crash loop's 105 MB: the classifying, thinning and record
    folding of the five files of 6.5 MB left here waited ~0.45 s for the workers' last file, then
    ran on one core)."""
    from logscope.ingest.reading import PAUSE, PieceRead, merge_pieces  # (loaded: read_files reads with it)
    from logscope.ingest.scanning import ScannedFile

    given: set[int] = set()
    unfinished = False  # files to read here yielded since the last PAUSE
    # A file read in pieces: what each piece gave, until the last is in (merged then).
    in_pieces: dict[int, list[Outcome]] = {}
    owner = _owners(sources, workers.items)
    for n, got in workers.results():
        i, item = owner[n], workers.items[n]
        if isinstance(item, Piece):
            pieces = in_pieces.setdefault(i, [None] * item.count)
            pieces[item.index] = got
            if on_bytes is not None:
                on_bytes(sources[i], item.size)
            read = [piece for piece in pieces if piece is not None and not isinstance(piece, ScannedFile)]
            if len(read) == item.count:  # (a worker gives a piece what read_piece gives)
                results[i] = merge_pieces(sources[i], read)
            continue
        if got is None or isinstance(got, ScannedFile):
            handed.append(i)
            given.add(i)
            # (a file of the byte pass is a few kept lines: those of every such file are parsed
            # together, at the end, in one batch; it is the files read here that cost)
            unfinished = unfinished or got is None
            yield sources[i] if got is None else got
        elif not isinstance(got, PieceRead):  # (never: a file's outcome)
            results[i] = got
        if got is not None and on_bytes is not None:
            on_bytes(sources[i], sources[i].size)
        if unfinished and workers.idle():
            unfinished = False
            yield PAUSE
    for i, source in enumerate(sources):
        if results[i] is None and i not in given:  # (a piece not returned: the file is read whole here)
            handed.append(i)
            yield source


def _owners(sources: Sequence[SourceFile], items: Sequence[SourceFile | Piece]) -> list[int]:
    """For each of ``items`` (sources and pieces of sources, in order), the index of its source."""
    out: list[int] = []
    i = -1
    for item in items:
        if not (isinstance(item, Piece) and item.index):  # (a later piece: its file's)
            i += 1
        out.append(i)
    assert i == len(sources) - 1
    return out


def _units(sources: Sequence[SourceFile | Piece], count: int) -> list[list[int]]:
    """The files as they are handed to ``count`` workers: each of UNIT_BYTES or more alone, the
    smaller ones together up to UNIT_BYTES (in file order), or less, so that each worker has two
    units at least; the biggest units first (of the longest, none is left to start last while the
    other workers have nothing left to read)."""
    most = max(1, min(UNIT_BYTES, sum(source.size for source in sources) // (2 * max(1, count))))
    units: list[list[int]] = []
    small: list[int] = []
    small_bytes = 0
    for i, source in enumerate(sources):
        if source.size >= most:
            units.append([i])
            continue
        if small and small_bytes + source.size > most:
            units.append(small)
            small, small_bytes = [], 0
        small.append(i)
        small_bytes += source.size
    if small:
        units.append(small)
    # Stable: file order among equals (a file's pieces count as equal, and go in order: the lines
    # before each are counted as it is handed out, on the way to the next).
    return sorted(units, key=lambda unit: -sum(_share(sources[i]) for i in unit))


def _share(item: SourceFile | Piece) -> int:
    return item.source.size // item.count if isinstance(item, Piece) else item.size


class _Workers:
    """``count`` worker processes reading ``units`` of ``items`` (files and pieces of files, see
    _units), each taking the next unit when it has returned the last; (index, result) per item. A
    piece is given its first line (its file's LineCounts, here) as it is handed out."""

    def __init__(self, items: Sequence[SourceFile | Piece], units: list[list[int]], count: int) -> None:
        self.items = items
        pieces: dict[SourceFile, list[Piece]] = {}
        for item in items:
            if isinstance(item, Piece):
                pieces.setdefault(item.source, []).append(item)
        self._counts = {source: LineCounts(of_it) for source, of_it in pieces.items()}
        self._units = deque(units)
        count = max(1, min(count, len(units)))
        self._returned: queue.SimpleQueue[tuple[int, Outcome] | None] = queue.SimpleQueue()
        self._running = count
        self._processes: list[subprocess.Popen[bytes]] = []  # as they start (see stop)
        self._stopped = False
        self._lock = threading.Lock()
        started = _take_early_workers(count)
        for proc in started + [None] * (count - len(started)):
            threading.Thread(target=self._run, args=(proc,), daemon=True).start()

    def stop(self) -> None:
        """End the workers now, whatever they are doing (a read started early for other files)."""
        with self._lock:
            self._stopped = True
            processes = list(self._processes)
        for proc in processes:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()

    def idle(self) -> bool:
        """Whether no outcome waits to be taken (the workers are reading)."""
        return self._returned.empty()

    def results(self) -> Iterator[tuple[int, Outcome]]:
        """Each file's outcome as a worker returns it, until all the workers are done."""
        while self._running:
            item = self._returned.get()
            if item is None:
                self._running -= 1
            else:
                yield item

    def _handed(self, item: SourceFile | Piece) -> SourceFile | Piece:
        return with_first_line(item, self._counts[item.source]) if isinstance(item, Piece) else item

    def _next_unit(self) -> list[int] | None:
        with self._lock:
            return self._units.popleft() if self._units and not self._stopped else None

    def _run(self, proc: subprocess.Popen[bytes] | None) -> None:
        # Whatever fails (no interpreter, a worker killed for memory), the files it did not
        # return are read by the caller (those of the units no worker took too).
        done = False
        try:
            with proc or _start_worker() as running:
                with self._lock:
                    self._processes.append(running)
                    if self._stopped:  # stopped while it started
                        running.kill()
                assert running.stdin is not None and running.stdout is not None
                while (unit := self._next_unit()) is not None:
                    running.stdin.write(pickle.dumps([self._handed(self.items[i]) for i in unit]))
                    running.stdin.flush()
                    for _ in unit:  # one outcome per file, with its place in the unit, as soon as it is read
                        place, outcome = pickle.load(running.stdout)
                        self._returned.put((unit[place], outcome))
                # Done before the process has ended (its stdin closed, it leaves; the with waits
                # for it): the caller goes on at once.
                done = True
                self._returned.put(None)
                running.stdin.close()
        except Exception:
            pass
        finally:
            if not done:
                self._returned.put(None)


def _worker_env() -> dict[str, str]:
    package_root = str(Path(__file__).resolve().parents[2])
    return {
        **os.environ, _WORKER_ENV: "1", "POLARS_MAX_THREADS": "1",  # the processes already fill the cores
        "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p),
        # Each block allocates a few buffers of CHUNK_BYTES (Python's bytes), freed at the end of
        # the block. By default glibc maps and unmaps them, so every block faults its memory in
        # again, page by page: a short-lived worker keeps and reuses them instead. Polars' memory
        # (jemalloc) is left to its default decay: kept for good (dirty_decay_ms:-1) it saved
        # 10-15% of the time of files read the usual way, but a worker kept the high-water mark
        # of every block it classified: ~1.25 GB each on a 1 GB crash loop, 3.2 GB over the
        # processes (0.7-0.9 GB each by default).
        "MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 32),
    }


def _start_worker() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", _WORKER_CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=_worker_env())


# Workers started by start_early, waiting for their files.
_EARLY: list[subprocess.Popen[bytes]] = []
# A read start_early began: the files it found, in order, and the workers reading them.
_EARLY_READ: list[tuple[list[SourceFile], _Workers]] = []


def start_early(inputs: Sequence[Path], exclude: Callable[[Sequence[Path]], Sequence[Path]] | None = None) -> None:
    """Start reading now when ``inputs`` (files and folders: the command line's arguments that are
    not options, a job id among them maybe) hold at least PARALLEL_MIN_BYTES: the workers scan the
    files while the caller imports (~0.4 s: a third of the time of a 1 GB job). Files are counted
    by their size on disk, up to that much. The files are found as the caller will find them (the
    inputs that exist, less ``exclude(inputs)``: the files the caller reads as something else);
    :func:`read_files` uses the read only if it is given the same files, in the same order, and
    else stops it and reads as if nothing had started. When the files cannot be found here, the
    workers are only started, and wait for read_files to give them their files."""
    cores = min(usable_cores(), MAX_WORKERS)
    if _EARLY or _EARLY_READ or cores < 2 or _nested():
        return
    if _size_at_least(inputs, PARALLEL_MIN_BYTES) < PARALLEL_MIN_BYTES:
        return
    atexit.register(_stop_early_read)  # a command that fails before it reads: no worker reads on
    try:
        _EARLY.extend(_start_worker() for _ in range(cores))  # they import while the files are found
    except OSError:  # no interpreter to start: read_files reads here
        _stop_early_workers()
        return
    sources = _found_early(inputs, exclude)
    if sources is None:
        return  # the workers wait for read_files to give them their files
    items = plan_pieces(sources, cores)
    count = min(cores, len(items))
    if count >= 2 and sum(source.size for source in sources) >= PARALLEL_MIN_BYTES:
        _EARLY_READ.append((sources, _Workers(items, _units(items, count), count)))  # the workers not needed stop
    else:  # too small to share: read_files reads it here, as it decides the same
        _stop_early_workers()


def _found_early(inputs: Sequence[Path], exclude: Callable[[Sequence[Path]], Sequence[Path]] | None,
                 ) -> list[SourceFile] | None:
    """The files of ``inputs`` as :func:`~logscope.ingest.discovery.discover` finds them, or None."""
    paths = [path for path in inputs if path.exists() or path.is_symlink()]  # a job id: its logs found later
    try:
        return discover(paths, exclude=exclude(paths) if exclude is not None else ())[0]
    except (LogscopeError, OSError, ValueError):
        return None


def _take_early_read(sources: Sequence[SourceFile]) -> _Workers | None:
    """The read start_early began, if it reads ``sources``; else it is stopped."""
    if not _EARLY_READ:
        return None
    found, workers = _EARLY_READ.pop()
    if found == list(sources):
        return workers
    workers.stop()
    return None


def _stop_early_read() -> None:
    """At exit: a read start_early began and no command took, and workers still waiting, stopped."""
    while _EARLY_READ:
        _EARLY_READ.pop()[1].stop()
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
                for folder, _, names in walk(given):
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
    # A multiprocessing child has the module loaded (its start-up imports it); importing it here
    # only to ask would cost every command ~10 ms.
    spawned = sys.modules.get("multiprocessing")
    return bool(os.environ.get(_WORKER_ENV)) or (spawned is not None and spawned.parent_process() is not None)


def worker_main() -> None:
    """A worker process of :func:`read_files`: pickled lists of sources on stdin, one after the
    other until it closes, and for each file of a list one pickled (its place in the list, its
    :data:`Outcome`) on stdout. The byte pass is imported first, before the sources arrive (see
    start_early); an empty stdin (a worker not needed) ends it.

    Every file of a list goes through the byte pass first; those it cannot take are left to the
    main process while they add up (over the lists) to at most LEFT_HERE_MAX_BYTES, and read here
    the usual way beyond that, all together at the end of the list (polars is loaded then, and only
    then). A piece of a file is read here the usual way (reading.read_piece): its file's steps
    are the main process's, once it has every piece."""
    from logscope.collector import collect_less_often
    from logscope.ingest import scanning  # noqa: F401  (imported while no source has come yet)

    collect_less_often()
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but outcomes may go into the outcomes stream

    def send(place: int, outcome: Outcome) -> None:
        pickle.dump((place, outcome), out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()

    left_here = 0
    while True:
        try:
            sources: list[SourceFile | Piece] = pickle.load(sys.stdin.buffer)
        except EOFError:
            return
        left_here = _read_unit(sources, send, left_here)


def _read_unit(sources: list[SourceFile | Piece], send: Callable[[int, Outcome], None], left_here: int) -> int:
    """worker_main's reading of one list of files and pieces; the bytes left to the main process so far."""
    from logscope.ingest.scanning import scan_file

    usual: list[int] = []
    for place, source in enumerate(sources):
        if isinstance(source, Piece):
            from logscope.ingest.reading import read_piece

            send(place, read_piece(source))
            continue
        scanned = scan_file(source)
        if scanned is not None:
            send(place, scanned)
        elif left_here + source.size <= LEFT_HERE_MAX_BYTES:
            left_here += source.size
            send(place, None)
        else:
            usual.append(place)
    if usual:
        from logscope.ingest.reading import read_in_order

        files = [source for n in usual if isinstance(source := sources[n], SourceFile)]
        for place, result in zip(usual, read_in_order(files), strict=True):
            send(place, result)
    return left_here
