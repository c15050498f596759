"""The log lines around the root failure, for the report: its traceback and its neighbourhood.

The timeline keeps recognised lines only; a traceback's frames and the lines around a failure are
read again from the root's file, once, streaming (compressed files too) and stopping at the last
line wanted. Text is cleaned as the timeline cleans it (:func:`logscope.textsafe.drop_controls`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import polars as pl

from logscope.analysis import Analysis
from logscope.ingest import SourceFile
from logscope.model import Event, Evidence
from logscope.textsafe import drop_controls

AROUND = 12  # lines before and after the root line
TRACEBACK_SEARCH = 400  # how far above the root line its "Traceback" line may be
MAX_TRACEBACK = 80
MAX_LINE = 2000
BLOCK = 1 << 20


TAIL = 64 * 1024


def last_line(source: SourceFile) -> str | None:
    """The last non-empty line of a plain (uncompressed) log file, read from its end; None for a
    compressed file (it would have to be read whole) or when it cannot be read."""
    if source.compression is not None:
        return None
    try:
        with source.path.open("rb") as stream:
            size = stream.seek(0, 2)
            stream.seek(max(0, size - TAIL))
            tail = stream.read(TAIL)
    except OSError:
        return None
    lines = [line for line in tail.split(b"\n") if line.strip(b"\r\t \x00")]
    return _clean(lines[-1]) if lines else None


@dataclass(frozen=True)
class RootContext:
    traceback: list[Evidence]  # the root process's traceback, up to the root line
    around: list[Evidence]  # every line from AROUND before to AROUND after the root line
    file: str
    note: str = ""


def root_context(analysis: Analysis) -> RootContext | None:
    """The root line's traceback and neighbourhood, or None (no root line, file unreadable)."""
    culprit = analysis.verdict.root_cause
    evidence = culprit.evidence if culprit is not None else None
    root = analysis.root_finding
    if evidence is None and root is not None and root.evidence:
        evidence = root.evidence[0]
    if evidence is None:
        return None
    source = next((f for f in analysis.job.files if f.display == evidence.file), None)
    if source is None:
        return None
    start = _traceback_start(analysis, evidence)
    first = min(start or evidence.line, evidence.line - AROUND)
    try:
        lines = dict(_read_lines(source, max(1, first), evidence.line + AROUND))
    except (OSError, EOFError, ValueError, zlib.error) as error:
        return RootContext([], [], evidence.file, f"could not read {evidence.file} again: {error}")
    around = [Evidence(evidence.file, n, text) for n, text in sorted(lines.items())
              if evidence.line - AROUND <= n <= evidence.line + AROUND]
    traceback: list[Evidence] = []
    if start is not None:
        prefix = _launcher_prefix(lines.get(evidence.line, ""))
        traceback = [Evidence(evidence.file, n, text) for n, text in sorted(lines.items())
                     if start <= n <= evidence.line and (not prefix or text.startswith(prefix))][-MAX_TRACEBACK:]
    return RootContext(traceback, around, evidence.file)


def _traceback_start(analysis: Analysis, evidence: Evidence) -> int | None:
    """The line of the nearest "Traceback (most recent call last):" above the root line, written
    by the same process (same file and prefix)."""
    events = analysis.view.events
    root = events.filter((pl.col("file") == evidence.file) & (pl.col("line") == evidence.line))
    prefix = root["prefix"].fill_null("").to_list()[0] if root.height else ""
    tracebacks = events.filter(
        (pl.col("file") == evidence.file) & (pl.col("event") == Event.TRACEBACK.value)
        & (pl.col("line") <= evidence.line) & (pl.col("line") >= evidence.line - TRACEBACK_SEARCH)
        & (pl.col("prefix").fill_null("") == prefix))
    if tracebacks.height == 0:
        return None
    return int(tracebacks["line"].max())  # type: ignore[arg-type]


def _launcher_prefix(text: str) -> str:
    """``[default3]:`` / ``3: `` / ``[host:3]:``: what interleaved processes' lines start with."""
    import re

    match = re.match(r"(\[[^\]]{1,64}\]:|\d{1,6}: )", text)
    return match.group(1) if match else ""


def _read_lines(source: SourceFile, first: int, last: int) -> Iterator[tuple[int, str]]:
    """Lines ``first``..``last`` (1-based) of a log file, cleaned and clipped."""
    from logscope.ingest.compression import open_source

    number = 0
    pending = b""
    with open_source(source) as stream:
        while number < last:
            block = stream.read(BLOCK)
            if not block:
                break
            parts = (pending + block).split(b"\n")
            pending = parts.pop()
            for raw in parts:
                number += 1
                if number >= first:
                    yield number, _clean(raw)
                if number >= last:
                    return
            if len(pending) > MAX_LINE * 4:  # a huge line: keep its start only
                pending = pending[: MAX_LINE * 4]
    if pending and number < last:
        number += 1
        if number >= first:
            yield number, _clean(pending)


def _clean(raw: bytes) -> str:
    text = raw[: MAX_LINE * 4].decode("utf-8", "replace").rstrip("\r")
    return drop_controls(text)[:MAX_LINE]
