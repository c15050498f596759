"""Whether files in which no known message stands are still a training job's output.

A log holding none of the catalogue's messages (logscope/knowledge/messages.toml) gets a verdict
when its lines speak of training (logscope/knowledge/job_words.toml: a user's own prints between
which nothing upstream printed); text that does not (an empty file, a note, a config) is no log,
and logscope says so instead of giving a verdict about a job nobody saw. Only the first
:data:`HEAD_BYTES` of each file are read: the question is asked of files where no line was
recognised, and a log speaks of training from its first lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from importlib import resources

from logscope.ingest.compression import READ_ERRORS, open_source
from logscope.ingest.discovery import SourceFile

try:
    import tomli as tomllib
except ImportError:  # pragma: no cover - an install without tomli
    import tomllib  # type: ignore[no-redef]

HEAD_BYTES = 64 * 1024


@cache
def _vocabulary() -> tuple[re.Pattern[str], int, int]:
    text = resources.files("logscope.knowledge").joinpath("job_words.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text)
    terms = sorted(table["terms"], key=len, reverse=True)
    words = "|".join(re.escape(term).replace(r"\ ", r"\s+") for term in terms)
    return re.compile(rf"(?<![A-Za-z])({words})(?![A-Za-z])", re.IGNORECASE), table["min_lines"], table["min_terms"]


def speaks_of_training(lines: Sequence[str]) -> bool:
    """Whether ``lines`` name the vocabulary's words as a job's log does: at least ``min_lines``
    lines naming one, and ``min_terms`` different ones in all."""
    words, min_lines, min_terms = _vocabulary()
    naming = 0
    named: set[str] = set()
    for line in lines:
        found = {m.group(1).lower() for m in words.finditer(line)}
        if found:
            naming += 1
            named |= found
    return naming >= min_lines and len(named) >= min_terms


def job_text_in(sources: Sequence[SourceFile]) -> bool:
    """Whether the head of any of ``sources`` speaks of training (:func:`speaks_of_training`)."""
    for source in sources:
        try:
            with open_source(source) as stream:
                head = stream.read(HEAD_BYTES)
        except READ_ERRORS:
            continue
        if speaks_of_training(head.decode("utf-8", "replace").splitlines()):
            return True
    return False


__all__ = ["HEAD_BYTES", "job_text_in", "speaks_of_training"]
