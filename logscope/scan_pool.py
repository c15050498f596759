"""scan's worker processes: started by the scan itself, or by the ``logscope scan`` command before
it imports the CLI.

Each worker is a fresh interpreter (multiprocessing's spawn: polars' thread pool does not survive
``fork()``) that imports polars and the analysis (~0.3 s) before its first batch. Started by the
scan, they would begin importing only once the command has imported the CLI and polars (~0.35 s,
one of two cores idle meanwhile). The command starts them first thing instead (:func:`start_early`)
when the scan will need them (:func:`logscope.command.scan_workers` decides: not for a rescan,
whose jobs may all be in its cache), and :func:`new_pool` hands them to the scan if it wants as
many (else they are stopped, as they are when the command ends without taking them:
:func:`stop_unused`). This module imports multiprocessing (~20 ms) but not polars, so that it can
be imported that early.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from logscope.collector import collect_less_often
from logscope.cores import usable_cores
from logscope.signals import die_with_parent

# The pool start_early began, waiting for the scan: its worker count, the pool, and each worker's
# first task (importing the analysis).
_EARLY: list[tuple[int, ProcessPoolExecutor, list[Future[None]]]] = []


def worker_count(requested: int) -> int:
    """The workers a scan runs for ``requested`` (``--jobs``; 0 or less: one per core it may use)."""
    return requested if requested > 0 else usable_cores()


def default_cache(output: Path) -> Path:
    """Where a scan that writes its table to ``output`` keeps its cache, unless told."""
    return output.with_name(output.name + ".cache.json")


def start_early(count: int) -> None:
    """Start ``count`` workers now, each importing what a batch needs (none for fewer than two:
    such a scan runs in this process)."""
    if _EARLY or count < 2:
        return
    atexit.register(stop_unused)  # a command that raises before it scans: no worker imports on
    try:
        pool = _new(count)  # (its queues' semaphores need /dev/shm, which a container may lack)
    except (OSError, ImportError):  # the scan tries again, and says why
        return
    try:
        with single_threaded_workers(), ctrl_c_held():  # see new_pool
            # While no worker is idle, each submission starts one.
            imports = [pool.submit(_import_analysis) for _ in range(count)]
    except (OSError, RuntimeError):  # a process could not start: the scan tries again, and says why
        stop(pool)
        return
    except BaseException:  # Ctrl-C, held while they started: no worker is left importing
        stop(pool)
        raise
    _EARLY.append((count, pool, imports))


def new_pool(count: int) -> ProcessPoolExecutor:
    """A pool of ``count`` workers: those :func:`start_early` started, if as many and all alive,
    else new ones (the early ones are stopped).

    New workers start with the pool's first submissions, which must be made inside
    :func:`single_threaded_workers` and :func:`ctrl_c_held`: Ctrl-C reaches the whole process
    group, and the scan stops its workers itself, so none may print a traceback, even while it
    is still importing."""
    if _EARLY:
        early_count, pool, imports = _EARLY.pop()
        if early_count == count and not any(f.done() and f.exception() is not None for f in imports):
            return pool
        stop(pool)
    return _new(count)


# What multiprocessing's resource tracker (the helper process that removes a pool's semaphores
# once every process using them ended) says when a scan was killed (kill -9) before it could
# release them: it removes them, and its warning only tells the terminal of whoever killed the
# scan that it did. Passed to the helper (and the workers) as a -W option.
_QUIET_TRACKER = "ignore:resource_tracker:UserWarning"


def _new(count: int) -> ProcessPoolExecutor:
    import multiprocessing

    if _QUIET_TRACKER not in sys.warnoptions:  # before the pool starts the tracker
        sys.warnoptions.append(_QUIET_TRACKER)
    context = multiprocessing.get_context("spawn")  # polars' thread pool does not survive fork()
    return ProcessPoolExecutor(max_workers=count, mp_context=context, initializer=_worker_init,
                               initargs=(os.getpid(),))


def _worker_init(parent: int) -> None:
    # see new_pool: the scan stops its workers itself. The signal came blocked (ctrl_c_held); one
    # pending is dropped as it is ignored, before it is unblocked.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    die_with_parent(parent)  # a scan killed (kill -9) leaves no worker behind (logscope.signals)
    collect_less_often()


def _import_analysis() -> None:
    from logscope import analysis, scan  # noqa: F401 - loaded before the first batch


@contextlib.contextmanager
def single_threaded_workers() -> Iterator[None]:
    """Worker processes started meanwhile run polars on one thread, unless the user chose a count.

    Workers each analyse one job at a time, one per core; a polars thread pool per core in every
    one of them would oversubscribe the machine. It must be in their environment when they
    start: a worker imports polars (which sizes its pool) before any initializer runs."""
    if "POLARS_MAX_THREADS" in os.environ:
        yield
        return
    os.environ["POLARS_MAX_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("POLARS_MAX_THREADS", None)


@contextlib.contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Ctrl-C held back meanwhile, here and in the processes started: blocked, then ignored, so that
    they start with it ignored (a Ctrl-C to the process group while a worker still imports is no
    traceback there) and blocked (their initializer, _worker_init, unblocks it). Here it stays
    pending while it is blocked (Linux does not drop a blocked signal that is ignored), and is raised
    once the handler is back and it is unblocked: ignored alone, a Ctrl-C (or a SIGINT to the scan
    alone) that came meanwhile was lost, and the scan ran on."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def stop(pool: ProcessPoolExecutor) -> None:
    """End ``pool``'s workers now, whatever they are doing."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def stop_unused() -> None:
    """Stop the workers start_early started, if no scan took them. The command calls this before it
    leaves without Python's teardown (os._exit), which would leave them waiting for work forever."""
    while _EARLY:
        stop(_EARLY.pop()[1])


__all__ = ["ctrl_c_held", "default_cache", "new_pool", "single_threaded_workers", "start_early", "stop",
           "stop_unused", "worker_count"]
