"""The two runs of a comparison, read as ``logscope analyze`` reads one: a folder, files or a
SLURM job id (its record and logs from sacct/scontrol, or saved beside the logs); and GOOD for
``--against``: a path or job id, or ``auto`` (:mod:`logscope.diff.baseline`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from logscope.analysis import Analysis, analyze
from logscope.errors import UsageError
from logscope.parsers.filenames import DEFAULT_PATTERNS

AUTO = "auto"


def analysed(inputs: Sequence[Path], *, patterns: tuple[str, ...] = DEFAULT_PATTERNS,
             select: Iterable[str] | None = None, ignore: Iterable[str] | None = None) -> Analysis:
    """One run, analysed from its folder(s), files or job id, with SLURM's record where there is one."""
    from logscope.accounting.gather import gather_inputs

    paths, gathered = gather_inputs(inputs)
    return analyze(paths, patterns=patterns, select=select, ignore=ignore,
                   accounting=gathered.record if gathered else None,
                   exclude=gathered.saved_files if gathered else [])


def baseline_of(bad: Analysis, against: str, table: Path | None, *, patterns: tuple[str, ...] = DEFAULT_PATTERNS,
                select: Iterable[str] | None = None, ignore: Iterable[str] | None = None) -> tuple[Analysis, str]:
    """GOOD for ``--against``, analysed, and how it was chosen (for the output's first lines)."""
    if against == AUTO:
        if table is None:
            raise UsageError("--against auto needs --table: the `logscope scan` table (or its cache) to pick the "
                             "last healthy run of this job from")
        from logscope.diff.baseline import last_healthy

        chosen = last_healthy(table, bad, patterns)
        return analysed(list(chosen.paths), patterns=patterns, select=select, ignore=ignore), chosen.describe()
    if table is not None:
        raise UsageError("--table is read only with --against auto")
    return analysed([Path(against)], patterns=patterns, select=select, ignore=ignore), against


__all__ = ["AUTO", "analysed", "baseline_of"]
