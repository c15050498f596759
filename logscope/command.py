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


def run() -> NoReturn:
    """Start a big job's readers, then run the CLI (:func:`logscope.cli.run`)."""
    start_readers(sys.argv[1:])
    from logscope.cli import run as run_cli

    run_cli()


def start_readers(args: list[str]) -> None:
    """Start the read workers early when ``args`` are a reading command's and name big inputs."""
    words = [arg for arg in args if not arg.startswith("-")]  # the root's options take no value
    if not words or words[0] not in _READING_COMMANDS:
        return
    from logscope.ingest.workers import start_early

    try:
        start_early([Path(word) for word in words[1:]], exclude=_saved_records)
    except (OSError, ValueError):  # an argument no path can be: the CLI will say what is wrong
        return


def _saved_records(inputs: Sequence[Path]) -> list[Path]:
    """The files among ``inputs`` that hold SLURM's record saved beside the logs: the CLI reads
    them as the record, not as logs (accounting.gather.gather_inputs)."""
    from logscope.accounting.saved import saved_files

    return saved_files(inputs)


__all__ = ["run", "start_readers"]
