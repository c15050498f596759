"""Thinning keeps what its docstring says, checked against a plain-Python reading of the rules
(logscope.ingest.thinning), with limits small enough that every rule bites."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Hashable
from itertools import pairwise
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from logscope.ingest import FileRead, reading, thinning
from logscope.limits import progress_sampled
from logscope.model import FIELD_SCHEMA, TIMELINE_SCHEMA, Event

LIMITS = {"COLL_HEAD": 1, "COLL_TAIL": 2, "PROGRESS_TAIL": 2, "REPEAT_KEEP": 2, "RECORD_KEEP": 3, "KIND_KEEP": 4,
          "PROCESS_KEEP": 2}
EVENTS = [Event.NCCL_COLL, Event.PROGRESS, Event.NCCL_CHANNEL, Event.CHILD_FAILURE, Event.EXCEPTION, Event.NCCL_WARN]
row = st.fixed_dictionaries({
    "event": st.sampled_from([e.value for e in EVENTS]),
    "host": st.sampled_from(["a", "b", None]),
    "pid": st.sampled_from([1, 2, 3, None]),
    "rank": st.sampled_from([0, None]),
    "comm": st.sampled_from(["0x1", "0x2", None]),
    "transport": st.sampled_from(["P2P", "NET"]),
    "comm_rank": st.sampled_from([0, 1]),
    "words": st.sampled_from(["lost", "lost 0x1f", "gone 7"]),  # two wordings (numbers masked)
})


def _frame(rows: list[dict[str, Any]], lines: list[int] | None = None) -> pl.DataFrame:
    """The rows as events, numbered 1, 2, ... unless ``lines`` numbers them; ``text`` (its words and
    the row's place: :func:`_place`) tells each row apart."""
    fields = {f: None for f in FIELD_SCHEMA}
    numbers = lines if lines is not None else [n + 1 for n in range(len(rows))]
    return pl.DataFrame([{**{c: None for c in TIMELINE_SCHEMA}, "file": "f", "line": numbers[n], "event": r["event"],
                          "host": r["host"], "pid": r["pid"], "rank": r["rank"],
                          "text": f"{r.get('words', 'lost')} {n}",
                          "fields": {**fields, "comm": r["comm"], "transport": r["transport"],
                                     "comm_rank": r["comm_rank"], "value": "1"}}
                         for n, r in enumerate(rows)], schema=TIMELINE_SCHEMA)


def _place(text: str) -> int:
    """The place in its rows of the row of this ``text`` (see _frame)."""
    return int(text.rsplit(" ", 1)[1])


def _ends(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], Hashable],
          limits: Callable[[dict[str, Any]], tuple[int, int]]) -> list[dict[str, Any]]:
    groups: dict[Hashable, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    kept = set()
    for members in groups.values():
        for position, r in enumerate(members):
            first, last = limits(r)
            if position < first or position >= len(members) - last:
                kept.add(id(r))
    return [r for r in rows if id(r) in kept]  # in the order they came


def _reference(rows: list[dict[str, Any]], lines: list[int] | None = None) -> list[int]:
    """The rows thinning keeps (their places in ``rows``), in the order it keeps them, by its
    docstring's rules, in plain Python: by line, the rows of one line as they came."""
    numbers = lines if lines is not None else [n + 1 for n in range(len(rows))]
    numbered = [{**r, "line": numbers[n], "at": n} for n, r in enumerate(rows)]
    process = lambda r: (r["host"], r["pid"], r["rank"], None, None)  # noqa: E731 - local_rank, task: null
    by_kind = lambda kind: [r for r in numbered if r["event"] == kind]  # noqa: E731
    coll = _ends(by_kind(Event.NCCL_COLL.value), lambda r: (r["host"], r["pid"], r["comm"]),
                 lambda r: (LIMITS["COLL_HEAD"], LIMITS["COLL_TAIL"]))
    # a process's first and last progress rows, and those of the file's sample (limits.progress_sampled)
    ends = {id(r) for r in _ends(by_kind(Event.PROGRESS.value), process,
                                 lambda r: (LIMITS["COLL_HEAD"], LIMITS["PROGRESS_TAIL"]))}
    progress = [r for r in by_kind(Event.PROGRESS.value) if id(r) in ends or progress_sampled(r["line"])]
    seen: set[Hashable] = set()
    channel = []
    for r in by_kind(Event.NCCL_CHANNEL.value):
        key = (r["host"], r["pid"], r["transport"], r["comm_rank"], "1")
        if key not in seen:
            seen.add(key)
            channel.append(r)
    special = {Event.NCCL_COLL.value, Event.PROGRESS.value, Event.NCCL_CHANNEL.value}

    def repeat_limits(r: dict[str, Any]) -> tuple[int, int]:
        limit = LIMITS["RECORD_KEEP"] if r["event"] == Event.CHILD_FAILURE.value else LIMITS["REPEAT_KEEP"]
        return limit, limit

    rest = _ends([r for r in numbered if r["event"] not in special], lambda r: (*process(r), r["event"]),
                 repeat_limits)
    kept = sorted([*rest, *coll, *progress, *channel], key=lambda r: (r["line"], r["at"]))
    if any(r["event"] not in special and r["event"] != Event.CHILD_FAILURE.value for r in rows) and len(
            {r["pid"] for r in rows}) > LIMITS["PROCESS_KEEP"]:
        # the rows of the first and last processes of a rank that said a line in the same words
        # (not a line of another rule, nor a record's)
        said: dict[Hashable, list[Hashable]] = defaultdict(list)  # its processes, as they came

        def words(r: dict[str, Any]) -> Hashable:
            if r["event"] in special or r["event"] == Event.CHILD_FAILURE.value:
                return r["at"]
            return r["event"], r["host"], r["rank"], re.sub(r"0x[0-9a-fA-F]+|[0-9]+", "#", f"{r['words']} {r['at']}")

        for r in sorted(kept, key=lambda r: r["at"]):
            if r["pid"] not in said[words(r)]:
                said[words(r)].append(r["pid"])
        half_processes = LIMITS["PROCESS_KEEP"] // 2
        kept = [r for r in kept if said[words(r)].index(r["pid"]) < half_processes
                or said[words(r)].index(r["pid"]) >= len(said[words(r)]) - half_processes]
    half = LIMITS["KIND_KEEP"] // 2
    if len(kept) > LIMITS["KIND_KEEP"]:
        kept = _ends(kept, lambda r: r["event"], lambda r: (half, half))
    return [r["at"] for r in kept]


@settings(max_examples=200, deadline=None)
@given(st.lists(row, max_size=80), st.sampled_from([1, 120, 1 << 20]))
def test_thinning_keeps_what_its_rules_say(rows: list[dict[str, Any]], first: int) -> None:
    # Numbered from ``first``: a file's first lines are all of its progress sample, its lines past
    # 2^20 one in 16,384; from 120 the sample thins out (every second line past 128).
    lines = list(range(first, first + len(rows)))
    with pytest.MonkeyPatch.context() as patch:
        for name, value in LIMITS.items():
            patch.setattr(thinning, name, value)
        kept = thinning.thin(_frame(rows, lines))
    assert [_place(text) for text in kept["text"]] == _reference(rows, lines)
    assert kept.schema == _frame(rows).schema


def test_a_process_keeps_its_ends_and_the_files_sample_of_its_progress_lines() -> None:
    rows = [{"event": Event.PROGRESS.value, "host": "a", "pid": 1, "rank": 0, "comm": None, "transport": "P2P",
             "comm_rank": 0, "words": "lost"}] * 300
    with pytest.MonkeyPatch.context() as patch:
        for name, value in LIMITS.items():
            patch.setattr(thinning, name, value)
        kept = thinning.thin_within_processes(_frame(rows))
    head, tail = LIMITS["COLL_HEAD"], LIMITS["PROGRESS_TAIL"]
    expected = sorted({*range(1, head + 1), *range(301 - tail, 301),
                       *(n for n in range(1, 301) if progress_sampled(n))})
    assert kept["line"].to_list() == expected
    # lines 1-128, every second line to 256, every fourth to 300 (11), and the tail's 299
    assert len(expected) == 128 + 64 + 11 + 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(row, st.booleans()), max_size=80))
def test_rows_of_one_line_are_kept_as_they_came(rows: list[tuple[dict[str, Any], bool]]) -> None:
    # A line cut at carriage returns gives several rows of one line number (``same``: this row is
    # on the line of the row before).
    lines: list[int] = []
    for _, same in rows:
        lines.append(lines[-1] if same and lines else len(lines) + 1)
    events = [r for r, _ in rows]
    with pytest.MonkeyPatch.context() as patch:
        for name, value in LIMITS.items():
            patch.setattr(thinning, name, value)
        kept = thinning.thin(_frame(events, lines))
    assert [_place(text) for text in kept["text"]] == _reference(events, lines)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(row, max_size=30), max_size=5))
def test_files_thinned_together_keep_what_each_keeps_alone(files: list[list[dict[str, Any]]]) -> None:
    frames = [_frame(rows) for rows in files]
    with pytest.MonkeyPatch.context() as patch:
        for name, value in LIMITS.items():
            patch.setattr(thinning, name, value)
        together = thinning.thin_each(frames)
        alone = [thinning.thin(frame) for frame in frames]
    assert len(together) == len(frames)
    for got, expected in zip(together, alone, strict=True):
        assert got.equals(expected)


@settings(max_examples=200, deadline=None)
@given(st.lists(row, max_size=80), st.lists(st.integers(0, 80), max_size=6), st.integers(4, 40))
def test_parts_thinned_as_one_frame_keep_what_it_keeps(rows: list[dict[str, Any]], cuts: list[int],
                                                       max_rows: int) -> None:
    # A file's parts, gathered part by part: the rows the rules for each process keep of them all,
    # or, beyond max_rows of those, the rows every rule keeps.
    frame = _frame(rows)
    bounds = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    parts = [frame[a:b] for a, b in pairwise(bounds)] or [frame]
    with pytest.MonkeyPatch.context() as patch:
        for name, value in LIMITS.items():
            patch.setattr(thinning, name, value)
        got = thinning.thin_parts(parts, max_rows)
        within = thinning.thin_within_processes(frame)
        expected = within if within.height <= max_rows else thinning.thin(frame)
    assert_frame_equal(got, expected)


def test_a_file_read_in_many_blocks_keeps_what_it_keeps_read_in_one(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Progress lines of enough ranks that they keep more lines by their own rule (COLL_HEAD +
    # PROGRESS_TAIL each) than KIND_KEEP, so the bound across processes drops rows in the middle.
    # Read in blocks (thinned in parts as they come) the file keeps the rows it keeps read in one block.
    from logscope.ingest import blocks, discover, read_file
    from logscope.limits import COLL_HEAD, PROGRESS_TAIL

    ranks = thinning.KIND_KEEP // (COLL_HEAD + PROGRESS_TAIL) + 2
    path = tmp_path / "train-9-node1.out"
    path.write_text("".join(f"[default{n % ranks}]:iteration {n // ranks:8d}/ 100000 | lm loss: 2.5E+00 |\n"
                            for n in range(ranks * (COLL_HEAD + PROGRESS_TAIL) * 9 // 5)))
    source = discover([path])[0][0]
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 64 * 1024 * 1024)
    whole = read_file(source)
    parts: list[int] = []
    add = reading._Reading.add

    def counted(self: reading._Reading, chunk: Any) -> None:
        add(self, chunk)
        parts.append(len(self.parts))

    # 8 blocks and a small ninth: after the 8th the parts are thinned, and the rows the whole keeps
    # are mostly of those 8, so where their middle is matters
    monkeypatch.setattr(blocks, "CHUNK_BYTES", int(path.stat().st_size / 8.6))
    monkeypatch.setattr(reading._Reading, "add", counted)
    in_blocks = read_file(source)
    assert isinstance(whole, FileRead) and isinstance(in_blocks, FileRead)
    assert len(parts) >= 9  # thinned in parts on the way (at the 8th)
    progress = whole.events.filter(pl.col("event") == Event.PROGRESS.value)
    assert progress.height == thinning.KIND_KEEP  # the bound bit
    assert (whole.lines_read, whole.lines_recognised) == (in_blocks.lines_read, in_blocks.lines_recognised)
    assert_frame_equal(whole.events, in_blocks.events)


def test_a_rank_whose_processes_say_the_same_keeps_its_first_and_last() -> None:
    # A crash-restart loop: each attempt's processes are new (other pids), so no process repeats a
    # line, but every attempt says the same words: the rows of the first and last PROCESS_KEEP // 2
    # processes are kept, and a line worded otherwise among them, and another rank's.
    rows = [{"event": Event.EXCEPTION.value, "host": "a", "pid": n, "rank": 5 if n == 30 else None, "comm": None,
             "transport": "P2P", "comm_rank": 0, "words": "gone 7" if n == 20 else "lost 0x1f"} for n in range(40)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(LIMITS, "KIND_KEEP", 100)  # the bound on a kind of event does not bite
        for name, value in LIMITS.items():
            patch.setattr(thinning, name, value)
        kept = thinning.thin(_frame(rows))
        expected = _reference(rows)
    assert [_place(text) for text in kept["text"]] == [0, 20, 30, 39] == expected
