"""The ``logscope`` command's entry point (and ``python -m logscope``'s): a big job's readers
first, then the CLI.

Importing typer, the CLI and the analysis takes ~0.35 s. A command that reads a job's logs
(``analyze``, ``report``) starts reading before that import, from a rough look at its arguments
(:func:`logscope.ingest.workers.start_early` counts the bytes of those that are files or folders,
starts nothing below its threshold, and hands the files it finds to its reader processes), so that
the reading overlaps the import. The CLI then parses the arguments properly and decides; a read of
other files than those it reads is stopped.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

_READING_COMMANDS = frozenset({"analyze", "analyse", "report"})
# The options of the reading commands that take a value (cli.analyze, cli.report; a test holds this
# to the CLI): their values are not inputs. (``report -o out.html`` run again: taken for an input,
# the existing out.html would make the files found early differ from the command's, and the early
# read would be wasted.)
VALUE_OPTIONS = frozenset({"--format", "-f", "--pattern", "-p", "--select", "--ignore", "--charts", "--color",
                           "--save", "--output", "-o"})


def run() -> NoReturn:
    """Start a big job's readers, then run the CLI (:func:`logscope.cli.run`)."""
    from logscope.collector import collect_less_often

    collect_less_often()
    start_readers(sys.argv[1:])
    from logscope.cli import run as run_cli

    run_cli()


def start_readers(args: list[str]) -> None:
    """Start the read workers early when ``args`` are a reading command's and name big inputs."""
    command, inputs = _command_and_inputs(args)
    if command not in _READING_COMMANDS:
        return
    from logscope.ingest.workers import start_early

    try:
        start_early([Path(word) for word in inputs], exclude=_saved_records)
    except (OSError, ValueError):  # an argument no path can be: the CLI will say what is wrong
        return


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
    """The files among ``inputs`` that hold SLURM's record saved beside the logs: the CLI reads
    them as the record, not as logs (accounting.gather.gather_inputs)."""
    from logscope.accounting.saved import saved_files

    return saved_files(inputs)


__all__ = ["VALUE_OPTIONS", "run", "start_readers"]
