"""The ``logscope`` command's entry point (and ``python -m logscope``'s): a big job's readers
first, then the CLI.

Importing typer, the CLI and the analysis takes ~0.35 s. A command that reads a job's logs
(``analyze``, ``report``) starts reading before that import, from a rough look at its arguments
(:func:`logscope.ingest.workers.start_early` counts the bytes of those that are files or folders,
starts nothing below its threshold, and hands the files it finds to its reader processes), so that
the reading overlaps the import. ``scan`` starts its worker processes then, when it will need them
(:func:`scan_workers`; :mod:`logscope.scan_pool`), so that they import polars and the analysis
meanwhile. The CLI then parses the arguments properly and decides; a read of other files than
those it reads is stopped, and workers a scan does not take.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

_READING_COMMANDS = frozenset({"analyze", "analyse", "report", "diff"})
# The options of the reading commands that take a value (cli.analyze, cli.report; a test holds this
# to the CLI): their values are not inputs. (``report -o out.html`` run again: taken for an input,
# the existing out.html would make the files found early differ from the command's, and the early
# read would be wasted.)
VALUE_OPTIONS = frozenset({"--format", "-f", "--pattern", "-p", "--select", "--ignore", "--charts", "--color",
                           "--save", "--output", "-o", "--against", "--table", "--fr"})
# scan's options that take a value and its flags (cli.scan; a test holds these to the CLI), the
# short names by their long ones.
SCAN_VALUE_OPTIONS = frozenset({"--output", "--table-format", "--jobs", "--since", "--category", "--shard", "--cache",
                                "--pattern", "--print-sbatch", "--format", "--user", "--state", "--array",
                                "--columns"})
SCAN_FLAGS = frozenset({"--no-cache", "--help"})
SCAN_SHORT = {"-o": "--output", "-j": "--jobs", "-p": "--pattern", "-f": "--format", "-u": "--user", "-s": "--state"}


def run() -> NoReturn:
    """Start a big job's readers, then run the CLI (:func:`logscope.cli.run`)."""
    from logscope.collector import collect_less_often
    from logscope.signals import end_on_termination, interrupted

    end_on_termination()  # SIGTERM, SIGHUP: as Ctrl-C, from the first moment
    collect_less_often()
    try:
        start_readers(sys.argv[1:])
        start_scan_workers(sys.argv[1:])
        from logscope.cli import run as run_cli
    except KeyboardInterrupt:  # Ctrl-C (SIGTERM, SIGHUP) before the CLI could say it: as it would
        line, code = interrupted()
        with contextlib.suppress(OSError):  # a terminal gone with SIGHUP
            sys.stderr.write(line + "\n")
        raise SystemExit(code) from None  # (workers started early are stopped at exit)
    run_cli()


def start_readers(args: list[str]) -> None:
    """Start the read workers early when ``args`` are a reading command's and name big inputs."""
    command, inputs = _command_and_inputs(args)
    if command not in _READING_COMMANDS:
        return
    if command == "diff":  # GOOD, read first; BAD's reading starts when GOOD's analysis is done
        inputs = inputs[:1]
    from logscope.ingest.workers import start_early

    try:
        start_early([Path(word) for word in inputs], exclude=_saved_records)
    except (OSError, ValueError):  # an argument no path can be: the CLI will say what is wrong
        return


def start_scan_workers(args: list[str]) -> None:
    """Start scan's workers early when ``args`` are a scan's that will need them."""
    count = scan_workers(args)
    if count:
        from logscope.scan_pool import start_early

        start_early(count)


def scan_workers(args: list[str]) -> int:
    """How many workers a scan run with ``args`` will want, if it reads no cache (0 otherwise, or
    for another command, or for arguments this rough look cannot follow: the CLI will decide).

    A scan that reads a cache (an existing ``--cache``, or the one beside ``--output``) is a rescan,
    whose jobs may all be in it: workers started for nothing would slow it (two more processes
    importing polars on a machine of two cores: 1.5x the time of a 200-job rescan)."""
    command: str | None = None
    values: dict[str, str] = {}
    flags: set[str] = set()
    roots: list[str] = []
    words = iter(args)
    for arg in words:
        if command is None:
            if not arg.startswith("-"):  # the root's options take no value
                command = arg
                if command != "scan":
                    return 0
        elif arg == "--":
            roots.extend(words)
        elif arg.startswith("-"):
            name, equals, value = arg.partition("=")
            name = SCAN_SHORT.get(name, name)
            if name in SCAN_VALUE_OPTIONS and equals and arg.startswith("--"):
                values[name] = value
            elif name in SCAN_VALUE_OPTIONS and not equals and (given := next(words, None)) is not None:
                values[name] = given
            elif arg in SCAN_FLAGS:
                flags.add(arg)
            else:  # a form this look does not read (-j4): the CLI will
                return 0
        else:
            roots.append(arg)
    if (command != "scan" or "--help" in flags or "--print-sbatch" in values
            or not any(Path(root).exists() for root in roots)):
        return 0
    # Only now: the pool's module imports multiprocessing (~20 ms), which no other command needs.
    from logscope.scan_pool import default_cache, worker_count

    try:
        count = worker_count(int(values.get("--jobs", "0")))
    except ValueError:
        return 0
    if "--no-cache" not in flags:
        output = values.get("--output")
        cache = values.get("--cache") or (default_cache(Path(output)) if output and output != "-" else None)
        if cache is not None and Path(cache).exists():
            return 0
    return count if count >= 2 else 0


def _command_and_inputs(args: list[str]) -> tuple[str | None, list[str]]:
    """The command ``args`` name and its arguments that are not options nor options' values (the
    root's options take no value)."""
    command: str | None = None
    inputs: list[str] = []
    value_next = options_end = False
    for arg in args:
        if value_next:
            value_next = False
        elif arg == "--" and not options_end:
            options_end = True
        elif arg.startswith("-") and not options_end:
            value_next = command is not None and arg in VALUE_OPTIONS
        elif command is None:
            command = arg
        else:
            inputs.append(arg)
    return command, inputs


def _saved_records(inputs: Sequence[Path]) -> list[Path]:
    """The files among ``inputs`` that hold SLURM's record saved beside the logs, and the Flight
    Recorder dumps among them: the CLI reads them as the record and as dumps, not as logs
    (accounting.gather.gather_inputs, flight_recorder.joining)."""
    from logscope.accounting.saved import saved_files
    from logscope.flight_recorder.finding import find_in_folders

    return [*saved_files(inputs), *find_in_folders(inputs)]


__all__ = ["SCAN_FLAGS", "SCAN_SHORT", "SCAN_VALUE_OPTIONS", "VALUE_OPTIONS", "run", "scan_workers",
           "start_readers", "start_scan_workers"]
