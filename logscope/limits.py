"""Numbers that the polars steps of reading and the byte pass of a read worker must agree on.

Each is explained where it acts; it is defined here, in a module that imports nothing, because the
byte pass (:mod:`logscope.ingest.scanning`, :mod:`logscope.ingest.coll_prefilter`) runs in worker
processes that never load polars, and so cannot import the modules that act on these numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:  # (never imported here: the byte pass's workers load neither)
    import numpy as np
    import polars as pl

# logscope.ingest.thinning: the first and last NCCL COLL lines kept per (file, host, pid, comm).
COLL_HEAD = 2
COLL_TAIL = 64
# logscope.ingest.thinning: the first COLL_HEAD and last PROGRESS_TAIL progress lines kept per
# process of a file (logscope.parsers.progress_aside sets the others aside before classifying):
# its last steps and the rhythm they kept (LS105 needs 8 steps, LS103 the last), and with the
# progress lines at the file's sampled line numbers (progress_sampled), the rhythm of the whole run.
# Each line kept costs ~10 us to classify: 4096 kept every line of a 105 MB progress log, and 1024
# (before the sample) a third of the time of one of 16 files (1024 -> 256: 3.3 -> 2.1 s).
PROGRESS_TAIL = 256
# The sample of a file's progress lines kept whatever the ends of their process (progress_sampled):
# its first PROGRESS_SAMPLE lines, then PROGRESS_SAMPLE // 2 lines evenly spread over each doubling
# of the lines read (every second line up to twice PROGRESS_SAMPLE, every fourth up to four times
# ...): ~900 line numbers of a 67 MB file of 620,000 lines, ~1,100 of 10 million. A slowdown long
# before a process's last PROGRESS_TAIL steps is still seen (LS105), and the run's rhythm charted.
PROGRESS_SAMPLE = 128


@overload
def progress_sampled(line: int) -> bool: ...
@overload
def progress_sampled(line: np.ndarray) -> np.ndarray: ...
@overload
def progress_sampled(line: pl.Expr) -> pl.Expr: ...
def progress_sampled(line: Any) -> Any:
    """Whether the file's line number ``line`` (from 1) is in the progress sample: it is a
    multiple of the smallest power of two above ``(line - 1) // PROGRESS_SAMPLE`` (1 for the first
    PROGRESS_SAMPLE lines), that is its lowest set bit is above that quotient. A rule of the line's
    number alone, so that every path that sets progress lines aside (the byte pass on a block, polars
    on a chunk, the thinning of a file's parts and of the whole) keeps the same lines, wherever the
    blocks were cut. The same arithmetic on an int, a numpy array of signed ints (the byte pass:
    logscope.ingest.progress_prefilter) or a polars expression of a signed column (logscope.parsers.
    progress_aside, logscope.ingest.thinning); tests/test_progress_sample.py holds them alike."""
    return (line >= 1) & ((line & -line) > (line - 1) // PROGRESS_SAMPLE)

# logscope.ingest.matching: a longer line is matched on its first (and last) MATCH_CHARS characters.
MATCH_CHARS = 4096
# logscope.parsers.lines: hard-wrapped pastes are joined only in a chunk of at most this many lines.
WRAP_MAX_LINES = 5000

__all__ = ["COLL_HEAD", "COLL_TAIL", "MATCH_CHARS", "PROGRESS_SAMPLE", "PROGRESS_TAIL", "WRAP_MAX_LINES",
           "progress_sampled"]
