"""Read the dumps found: each safely (:mod:`.safe_load`), into columns (:mod:`.dump`), one per rank.

A bad dump is a skipped file with its reason (too big, not plain data, cut short, not a dump, no
rank), never an error of the whole analysis. Two dumps of one rank (the pickle and the JSON a job
wrote side by side, or dumps of two attempts) give one: the newest, the pickle of equals (it
carries the stack frames the JSON form leaves out).

Many dumps (a 64-rank job: 64 files of 2000 entries, ~20 MB) are read by one worker process per
core: loading a pickle is C, but its ~150,000 opcodes a file are still ~10 ms of one core, and the
columns as long again. Workers are plain ``python -c`` subprocesses (as the log readers'), handed
the paths on stdin and returning the dumps pickled on stdout; they import nothing but this
package. A dump a worker did not return is read here.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from logscope.cores import usable_cores
from logscope.errors import printable
from logscope.flight_recorder.dump import Dump, NotADump, read_dump
from logscope.flight_recorder.safe_load import MAX_DUMP_BYTES, UnsafeDump, load_json, load_pickle
from logscope.ingest.discovery import Skipped

# Below this many dumps or bytes, a worker's start (~0.1 s) costs more than it saves.
PARALLEL_MIN_DUMPS = 8
PARALLEL_MIN_BYTES = 2 * 1024 * 1024
MAX_WORKERS = 4
_WORKER_ENV = "LOGSCOPE_FR_WORKER"
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
        dump = read_dump(raw, file=display, name=path.name, fmt=fmt, size=size)
    except (UnsafeDump, NotADump) as error:
        return Skipped(display, f"Flight Recorder dump not read: {error}")
    if dump.rank is None:
        return Skipped(display, "Flight Recorder dump not read: its name ends with no rank, and its groups do not "
                                "say whose it is")
    return dump


def read_dumps(paths: Sequence[Path]) -> tuple[list[Dump], list[Skipped]]:
    """The dumps at ``paths``, one per rank in rank order, and those skipped with their reasons."""
    outcomes = _read_in_workers(paths) if _worth_workers(paths) else [read_one(p) for p in paths]
    dumps = [o for o in outcomes if isinstance(o, Dump)]
    skipped = [o for o in outcomes if isinstance(o, Skipped)]
    return _one_per_rank(dumps, skipped)


def _one_per_rank(dumps: list[Dump], skipped: list[Skipped]) -> tuple[list[Dump], list[Skipped]]:
    by_rank: dict[int, list[Dump]] = {}
    for dump in dumps:
        by_rank.setdefault(int(dump.rank or 0), []).append(dump)
    kept = []
    for rank in sorted(by_rank):
        candidates = sorted(by_rank[rank], key=lambda d: (-(d.latest_ns or 0), d.format != "pickle", d.file))
        best = candidates[0]
        kept.append(best)
        for other in candidates[1:]:
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


def _read_in_workers(paths: Sequence[Path]) -> list[Dump | Skipped]:
    """:func:`read_one` of each path, in order, by one worker per core (a share of the paths
    each, balanced by size); what a worker did not return is read here."""
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
    results: list[Dump | Skipped | None] = [None] * len(paths)
    workers = []
    for share in shares:
        try:
            worker = subprocess.Popen([sys.executable, "-c", _WORKER_CODE], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        except OSError:
            continue
        workers.append((worker, share))
        assert worker.stdin is not None
        try:
            worker.stdin.write(pickle.dumps([str(paths[n]) for n in share]))
            worker.stdin.close()
        except OSError:
            continue
    for worker, share in workers:
        try:
            assert worker.stdout is not None
            # Our own worker's output (dumps already read safely there), not a dump file.
            outcomes = pickle.load(worker.stdout)
            if isinstance(outcomes, list) and len(outcomes) == len(share):
                for place, outcome in zip(share, outcomes, strict=True):
                    results[place] = outcome
        except (EOFError, OSError, pickle.UnpicklingError):
            pass
        finally:
            worker.wait()
    return [outcome if outcome is not None else read_one(paths[n]) for n, outcome in enumerate(results)]


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
    pickle.dump([read_one(Path(p)) for p in paths], out, protocol=pickle.HIGHEST_PROTOCOL)
    out.flush()


__all__ = ["read_dumps", "read_one", "worker_main"]
