"""Find a job's log files and read each one into event rows, in bounded memory.

Reading policy, the same for every file:

* inputs are folders (walked recursively, symbolic links to folders not followed, so a link loop
  cannot trap the walk), files, or both; a file reached twice is read once;
* ``.gz`` and ``.zst`` are decompressed on the fly; a corrupt or truncated archive keeps what was
  read before the damage and says where it stopped;
* a file whose first 8 KiB look binary is skipped with a reason, as is one that cannot be opened;
* bytes are decoded as UTF-8 with replacement characters, never rejected;
* files are read in blocks of :data:`CHUNK_BYTES` cut at a newline, so memory does not grow with
  the file; a "line" longer than :data:`MAX_LINE_BYTES` is cut there and counted as several;
* nothing is ever written: files are opened read-only and their times are not changed.

One concern per module: :mod:`.discovery` (finding files, names that are not logs),
:mod:`.compression` (gzip/zstd streams), :mod:`.blocks` (blocks cut at newlines, NUL holes),
:mod:`.line_frames` (a block as a frame of lines), :mod:`.coll_prefilter` and :mod:`.scanning` (the
byte pass that drops surplus NCCL COLL lines before polars sees them), :mod:`.reading` (the
per-file pipeline, batching, times), :mod:`.thinning` (events kept in bounded memory),
:mod:`.file_events` (a file's events made ready for its job: controls dropped, the file's own facts,
torchrun's records folded), :mod:`.workers` (worker processes) and :mod:`.pieces` (a big file cut
for several workers). The names below are re-exported for
callers; the settings are read where they are defined (patch ``logscope.ingest.blocks.CHUNK_BYTES``,
not this package's copy).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each name below is loaded from its module when first asked for, so that importing one light
# module of the package (discovery, workers' start-up) does not import polars with the rest.
_WHERE = {
    "CHUNK_BYTES": "blocks", "MAX_LINE_BYTES": "blocks", "NUL_RUN": "blocks", "SNIFF_BYTES": "blocks",
    "READ_ERRORS": "compression", "TruncatedArchive": "compression",
    "NOT_LOG_SUFFIXES": "discovery", "Skipped": "discovery", "SourceFile": "discovery", "discover": "discovery",
    "is_not_a_log": "discovery",
    "BATCH_BYTES": "reading", "BATCH_ROWS": "reading", "FileRead": "reading", "ProgressCallback": "reading",
    "read_file": "reading", "read_in_order": "reading",
    "KIND_KEEP": "thinning", "RECORD_KEEP": "thinning", "REPEAT_KEEP": "thinning",
    "COLL_HEAD": "limits", "COLL_TAIL": "limits", "PROGRESS_TAIL": "limits",
    "MAX_WORKERS": "workers", "PARALLEL_MIN_BYTES": "workers", "read_files": "workers",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = "logscope.limits" if _WHERE[name] == "limits" else f"{__name__}.{_WHERE[name]}"
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:
    from logscope.ingest.blocks import CHUNK_BYTES, MAX_LINE_BYTES, NUL_RUN, SNIFF_BYTES
    from logscope.ingest.compression import READ_ERRORS, TruncatedArchive
    from logscope.ingest.discovery import NOT_LOG_SUFFIXES, Skipped, SourceFile, discover, is_not_a_log
    from logscope.ingest.reading import BATCH_BYTES, BATCH_ROWS, FileRead, ProgressCallback, read_file, read_in_order
    from logscope.ingest.thinning import KIND_KEEP, RECORD_KEEP, REPEAT_KEEP
    from logscope.ingest.workers import MAX_WORKERS, PARALLEL_MIN_BYTES, read_files
    from logscope.limits import COLL_HEAD, COLL_TAIL, PROGRESS_TAIL

__all__ = [
    "BATCH_BYTES", "BATCH_ROWS", "CHUNK_BYTES", "COLL_HEAD", "COLL_TAIL", "KIND_KEEP", "MAX_LINE_BYTES", "MAX_WORKERS",
    "NOT_LOG_SUFFIXES", "NUL_RUN", "PARALLEL_MIN_BYTES", "PROGRESS_TAIL", "READ_ERRORS", "RECORD_KEEP",
    "REPEAT_KEEP", "SNIFF_BYTES", "FileRead", "ProgressCallback", "Skipped", "SourceFile", "TruncatedArchive",
    "discover", "is_not_a_log", "read_file", "read_files", "read_in_order",
]
