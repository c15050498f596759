"""Numbers that the polars steps of reading and the byte pass of a read worker must agree on.

Each is explained where it acts; it is defined here, in a module that imports nothing, because the
byte pass (:mod:`logscope.ingest.scanning`, :mod:`logscope.ingest.coll_prefilter`) runs in worker
processes that never load polars, and so cannot import the modules that act on these numbers.
"""

from __future__ import annotations

# logscope.ingest.thinning: the first and last NCCL COLL lines kept per (file, host, pid, comm).
COLL_HEAD = 2
COLL_TAIL = 64
# logscope.ingest.thinning: the first COLL_HEAD and last PROGRESS_TAIL progress lines kept per
# process of a file (logscope.parsers.progress_aside sets the others aside before classifying): a
# trainer's rhythm, its last steps and a slowdown among them (LS105 needs 8 steps, LS103 the last).
# Each line kept costs ~10 us to classify: 4096 kept every line of a 105 MB progress log.
PROGRESS_TAIL = 1024
# logscope.ingest.matching: a longer line is matched on its first (and last) MATCH_CHARS characters.
MATCH_CHARS = 4096
# logscope.parsers.lines: hard-wrapped pastes are joined only in a chunk of at most this many lines.
WRAP_MAX_LINES = 5000

__all__ = ["COLL_HEAD", "COLL_TAIL", "MATCH_CHARS", "PROGRESS_TAIL", "WRAP_MAX_LINES"]
