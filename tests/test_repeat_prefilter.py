"""A restart loop's repeats set aside on a block's bytes (logscope.ingest.repeat_prefilter).

The rule is the polars rule's (logscope.parsers.repeats, the reference): the same lines kept, the
same lines counted against, on a real-shaped loop and on generated ones with progress lines, NCCL
COLL lines, records and tracebacks in them. Negative: a block without a loop, a small block and a
block with carriage returns are left as they are; a line too long to be matched whole is never
set aside.
"""

from __future__ import annotations

import gzip
import itertools
import random
import re
from array import array
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reading_support import without_repeats
from test_repeats import _loop

from logscope.ingest import blocks as blocks_module
from logscope.ingest import compiled, discover, read_file
from logscope.ingest.blocks import control_bytes
from logscope.ingest.line_frames import lines_frame
from logscope.ingest.reading import FileRead
from logscope.ingest.repeat_prefilter import (
    MIN_LINES,
    RepeatsFound,
    _needles,
    _progress_lines,
    decide_across,
    drop_across,
    reduce_repeats,
)
from logscope.limits import MATCH_CHARS
from logscope.parsers.repeats import CONTINUATION, progress_patterns, repeat_surplus

pytestmark = pytest.mark.skipif(not compiled.COMPILED, reason="the compiled scanner was not built here")


def _both(block: bytes, first_line: int = 0) -> tuple[RepeatsFound | None, list[int], pl.DataFrame | None]:
    """The byte rule's result, and the polars rule's on the same lines: the lines it keeps and what
    it counts against them (None: nothing set aside)."""
    found = reduce_repeats(block, first_line, control_bytes(block), 8, 8)
    lines = lines_frame(block, first_line)
    reference = repeat_surplus(lines, 8, 8)
    if reference is None:
        return found, lines["line"].to_list(), None
    kept = lines.filter(~pl.int_range(pl.len()).is_in(reference.surplus.implode()))["line"].to_list()
    return found, kept, reference.counted


def _assert_same(block: bytes, first_line: int = 0) -> RepeatsFound | None:
    found, kept, counted = _both(block, first_line)
    if counted is None:
        assert found is None or found.kept is None
        return found
    assert found is not None and found.kept is not None and found.counted is not None
    got = lines_frame(found.kept, first_line, numbered=True)
    assert got.height == found.kept_count and found.lines_read == lines_frame(block, first_line).height
    assert got["line"].to_list() == kept
    assert found.counted.sort("line").to_dicts() == counted.sort("line").to_dicts()
    return found


def test_a_loops_repeats_are_those_the_polars_rule_sets_aside(tmp_path: Path) -> None:
    folder = _loop(tmp_path, attempts=40)
    block = sorted(folder.glob("*node01*"))[0].read_bytes()
    found = _assert_same(block)
    assert found is not None and found.kept is not None
    assert found.kept_count < found.lines_read // 2  # 16 attempts of 40 stay, and the ends of runs
    assert _assert_same(block, first_line=123_456) is not None  # a later block's lines: numbered in the file


# One attempt of a generated loop: (line, how often it is left out of an attempt). Lines with what
# changes from one attempt to the next (pids, times, addresses), progress lines (their own rule:
# never set aside), NCCL COLL lines (likewise), a torchrun record and a traceback (lines that go on
# the one before), lines that are the same in every attempt but for the rank they name.
_ATTEMPT = [
    ("I1103 {hh}:{mm}:06.332000 {pid} torch/distributed/run.py:793] Starting elastic_operator", 0.0),
    ("[default{r}]:gpu-node01:{pid}:{tid} [{r}] NCCL INFO Init COMPLETE rank {r}", 0.1),
    ("[default{r}]:gpu-node01:{pid}:{tid} [{r}] NCCL INFO AllReduce: opCount {op:x} sendbuff 0x7f{tid} "
     "count 1 datatype 7 op 0 root 0 comm 0x55d0 [nranks=16] stream 0x1", 0.0),
    ("[default0]: iteration {op:8d}/ 500000 | consumed samples: {tid:10d} | lm loss: 2.5{r}0000E+00 |", 0.2),
    ("[default{r}]:Traceback (most recent call last):", 0.0),
    ('[default{r}]:  File "/opt/train.py", line {r}{r}, in <module>', 0.0),
    ("[default{r}]:ValueError: sample {tid} is bad", 0.0),
    ("Failures:", 0.3),
    ("[{r}]:", 0.0),
    ("  time      : 2026-11-03_{hh}:{mm}:13", 0.0),
    ("  host      : gpu-node01", 0.0),
    ("  rank      : {r} (local_rank: {r})", 0.0),
    ("  exitcode  : 1 (pid: {pid})", 0.0),
    ("srun: error: gpu-node01: task {r}: Exited with exit code 1", 0.5),
    ("untimed teardown of worker {r}", 0.4),
]


def _generated(seed: int, attempts: int, ranks: int) -> bytes:
    rng = random.Random(seed)
    out: list[str] = []
    for attempt in range(attempts):
        values = {"pid": 10_000 + rng.randrange(80_000), "tid": 10_000 + rng.randrange(80_000),
                  "hh": f"{attempt // 60 % 24:02d}", "mm": f"{attempt % 60:02d}", "op": attempt}
        for line, skipped in _ATTEMPT:
            for r in range(ranks if "{r}" in line else 1):
                if rng.random() >= skipped:
                    out.append(line.format(r=r, **values))
        if rng.random() < 0.2:
            out.append(f"a line said once: {rng.random()}")
    return ("\n".join(out) + "\n").encode()


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32), attempts=st.integers(450, 1200), ranks=st.integers(1, 4))
def test_generated_loops_keep_what_the_polars_rule_keeps(seed: int, attempts: int, ranks: int) -> None:
    found = _assert_same(_generated(seed, attempts, ranks))
    assert found is not None and found.kept is not None  # a loop: some were set aside


def test_a_loop_of_attempts_longer_than_the_sample_is_found_as_the_polars_rule_finds_it() -> None:
    # Each attempt 1,100 lines of each rank's own words (none comes in the sample more than
    # head + tail times): the chunk's far end is what shows the loop, on the bytes as in polars.
    lines_each = 1_100
    attempt = [f"gpu-node{n % 16:02d}:{{pid}}:{{tid}} [{n % 8}] NCCL INFO Channel item{n} via P2P/IPC"
               for n in range(lines_each)]
    block = "".join("\n".join(attempt).format(pid=40_000 + 7 * a, tid=50_000 + 7 * a) + "\n"
                    for a in range(40)).encode()
    found = _assert_same(block)
    assert found is not None and found.kept is not None and found.kept_count == 16 * lines_each
    # Twice the sample's lines: looked at there; one line fewer: not, on either side.
    lines = block.splitlines(keepends=True)
    found = _assert_same(b"".join(lines[: 2 * 16_384]))
    assert found is not None and found.kept is not None
    found = _assert_same(b"".join(lines[: 2 * 16_384 - 1]))
    assert found is not None and found.kept is None


def test_a_later_block_of_a_loops_file_is_compared_whole_without_the_gate(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # A block whose sample says nothing twice (a long stretch of its own words) and whose loop
    # comes after it: alone, the gate leaves it whole; in a file whose earlier block was a loop's,
    # it is compared whole (gated=False), its loop's middle attempts set aside. A block mostly of
    # progress lines is still left to the progress pass.
    own_words = [f"loaded shard {n:x} of the dataset" for n in range(20_000)]
    loop = [f"gpu-node01:{{pid}}:{{tid}} [{a}] NCCL INFO Channel {c:02d}/0 : {a}[{a}] -> {(a + 1) % 8}[{(a + 1) % 8}]"
            " via P2P/IPC" for a, c in (divmod(n, 32) for n in range(200))]
    later = "\n".join(own_words + ["\n".join(loop).format(pid=40_000 + 7 * a, tid=50_000 + 7 * a)
                                   for a in range(40)]).encode() + b"\n"
    gated = reduce_repeats(later, 0, control_bytes(later), 8, 8)
    assert gated is not None and gated.kept is None
    ungated = reduce_repeats(later, 0, control_bytes(later), 8, 8, gated=False)
    assert ungated is not None and ungated.kept is not None
    assert ungated.lines_read - ungated.kept_count >= 20 * 200  # attempts 9 to 32, but their runs' ends
    progress = "".join(f"[default0]: iteration {n:8d}/ 500000 | consumed samples: {64 * n:10d} | lm loss: 2.5E+00 |\n"
                       for n in range(20_000)).encode()
    found = reduce_repeats(progress, 0, control_bytes(progress), 8, 8, gated=False)
    assert found is not None and found.kept is None
    # Read as a file's second block, after a block of the loop: every line counted as without.
    from logscope.ingest import reading

    first = "\n".join("\n".join(loop).format(pid=30_000 + 7 * a, tid=31_000 + 7 * a) for a in range(60)).encode()
    path = tmp_path / "loop.out"
    path.write_bytes(first + b"\n" + later)
    monkeypatch.setattr(blocks_module, "CHUNK_BYTES", len(first) + 1)
    reduce, seen = reading.reduce_repeats, []

    def spy(*args, gated: bool = True, force: bool | None = None) -> RepeatsFound | None:
        found = reduce(*args, gated=gated if force is None else force)
        seen.append((gated, found is not None and found.kept is not None))
        return found

    monkeypatch.setattr(reading, "reduce_repeats", spy)
    looping = read_file(discover([path])[0][0])
    assert seen == [(True, True), (False, True)]  # the second block compared whole, its loop's repeats set aside
    seen.clear()
    monkeypatch.setattr(reading, "reduce_repeats", lambda *args, **kwargs: spy(*args, **kwargs, force=True))
    always_gated = read_file(discover([path])[0][0])
    assert seen == [(True, True), (False, False)]
    _counted_alike(always_gated, looping)
    assert isinstance(looping, FileRead) and looping.lines_recognised > 0


def test_a_block_without_a_loop_is_left_whole_and_a_small_one_unread() -> None:
    own = "\n".join(f"loaded shard {n:x}-{n * 7 % 13}.bin in {n % 97} s" for n in range(20_000)).encode()
    found = reduce_repeats(own, 0, control_bytes(own), 8, 8)
    assert found is not None and found.kept is None  # looked at: the polars rule does not look again
    small = _generated(1, 20, 1)
    assert lines_frame(small, 0).height <= MIN_LINES
    assert reduce_repeats(small, 0, control_bytes(small), 8, 8) is None  # left to the polars rule


@pytest.mark.skipif(not compiled.COMPILED, reason="no compiled scanner")
def test_the_scanner_takes_every_progress_trigger_of_the_catalogue() -> None:
    # The needles grow with the catalogue's progress patterns: one too many for the scanner would
    # stop every big block's reading (a ValueError where the block is read), so the table is held
    # to what the scanner takes here, and each needle is found by its own bit.
    needles = _needles()
    text = b"\n".join(b"<" + needle + b">" for needle in needles)
    _, flags, held, _ = compiled.scanner.wordings(text, needles)
    assert len(flags) == len(needles)
    assert all(bits >> n & 1 for n, bits in enumerate(array("I", held)))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_progress_lines_asked_once_a_shape_are_those_each_line_asked_finds(seed: int) -> None:
    # The progress regexes tell no digit from another: a line stands for every line of its shape.
    # Forms that match and near ones that do not, their digits drawn anew line by line.
    rng = random.Random(seed)
    forms = ["[default#]: iteration ##/ ### | lm loss: #.##E+## |", "#: DLL ####-##-## ##:##:##.### - Iteration # |"
             " train_loss : #.#", "Epoch [#/##] Step [##/###] loss: #.###", "step ## loss=#.#",
             "global_step: ##, loss ##", "Iter ## took #.#s", "iteration ## of the dataloader", "steps: #/# loss"]
    lines = ["".join(rng.choice("0123456789") if char == "#" else char for char in rng.choice(forms))
             for _ in range(400)]
    text = "\n".join(lines).encode()
    _, regexes = progress_patterns()
    got = _progress_lines(text, len(lines))
    assert got is not None and list(got) == [bool(re.search(regexes.replace("(?:(?i)", "(?i:"), line))
                                              for line in lines]
    assert any(got) and not all(got)


def test_a_line_too_long_to_match_whole_is_never_set_aside() -> None:
    # The caller counts the lines it cuts for matching among those it frames: one set aside here
    # would not be counted.
    long = "x" * (MATCH_CHARS + 1)
    block = _generated(3, 1000, 2).replace(b"Failures:", f"Failures: {long}".encode())
    found = reduce_repeats(block, 0, control_bytes(block), 8, 8)
    assert found is not None and found.kept is not None
    assert found.kept.count(long.encode()) == block.count(long.encode()) > 16


def _cut(block: bytes, parts: int) -> list[tuple[bytes, int]]:
    """``block`` cut into ``parts`` blocks at lines that start a group (none goes on the line
    before it), each with the number of lines before it."""
    lines = block.split(b"\n")[:-1]
    cuts = [0]
    for n in range(1, parts):
        at = len(lines) * n // parts
        while re.match(CONTINUATION.encode(), lines[at]):
            at += 1
        cuts.append(at)
    cuts.append(len(lines))
    return [(b"".join(line + b"\n" for line in lines[a:b]), a) for a, b in itertools.pairwise(cuts)]


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32), attempts=st.integers(2000, 3000), ranks=st.integers(1, 3),
       parts=st.integers(2, 4))
def test_blocks_of_a_file_keep_together_what_the_file_keeps_whole(seed: int, attempts: int, ranks: int,
                                                                  parts: int) -> None:
    # Each block keeps the first and last 8 groups of a key in the block; across the blocks, only
    # the first and last 8 of them all stay, as the polars rule on the whole file keeps them, and
    # every line set aside is counted against the same line.
    block = _generated(seed, attempts, ranks)
    blocks = [reduce_repeats(part, first, control_bytes(part), 8, 8) for part, first in _cut(block, parts)]
    assert all(found is not None and found.kept is not None for found in blocks)  # each a loop
    across = drop_across([found for found in blocks if found is not None], 8, 8)
    _, kept, counted = _both(block)
    assert counted is not None
    got = [lines_frame(found.kept, found.first_line, numbered=True) for found in across if found.kept is not None]
    assert sum(frame.height for frame in got) == sum(found.kept_count for found in across)
    assert pl.concat(got)["line"].to_list() == kept
    together = pl.concat([found.counted for found in across if found.counted is not None])
    assert together.sort("line").to_dicts() == counted.sort("line").to_dicts()
    # Each block is counted against lines of its own.
    for found in across:
        if found.counted is not None:
            assert found.counted["line"].is_between(found.first_line + 1, found.first_line + found.lines_read).all()


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32), attempts=st.integers(2000, 3000), ranks=st.integers(1, 3),
       parts=st.integers(3, 5))
def test_blocks_decided_a_few_at_a_time_keep_what_the_file_keeps_and_count_every_line(
        seed: int, attempts: int, ranks: int, parts: int) -> None:
    # As the reader holds them: each round decides the blocks held and frames all but the last,
    # which is decided again with the next, after the groups of each key framed before. The lines
    # kept are those the polars rule keeps on the whole file, but a few groups at each round's
    # edge (the timed ends of a run cut there); every line set aside is counted once, against a
    # line kept of its own block.
    block = _generated(seed, attempts, ranks)
    blocks = [reduce_repeats(part, first, control_bytes(part), 8, 8) for part, first in _cut(block, parts)]
    assert all(found is not None and found.kept is not None for found in blocks)
    held: list[RepeatsFound] = []
    before: pl.DataFrame | None = None
    framed: list[RepeatsFound] = []
    for n, found in enumerate(blocks):
        assert found is not None
        held.append(found)
        last = n == len(blocks) - 1
        if len(held) < 2 and not last:
            continue
        emit = len(held) if last else len(held) - 1
        decided, before = decide_across(held, 8, 8, before=before, emit=emit)
        framed += decided[:emit]
        held = decided[emit:]
    _, kept, _ = _both(block)
    got = pl.concat([lines_frame(found.kept, found.first_line, numbered=True) for found in framed if found.kept])
    assert set(kept) <= set(got["line"].to_list())
    assert got.height - len(kept) <= 4 * 2 * (parts - 1) * (len(_ATTEMPT) + 2 * ranks)  # a few groups a round
    counted = pl.concat([found.counted for found in framed if found.counted is not None])
    lines = lines_frame(block, 0).height
    assert counted["count"].sum() == lines - got.height
    assert counted["line"].is_in(got["line"].implode()).all()
    for found in framed:
        if found.counted is not None:
            assert found.counted["line"].is_between(found.first_line + 1, found.first_line + found.lines_read).all()


def _counted_alike(whole: FileRead | object, *others: FileRead | object) -> None:
    """Each of ``others`` read and recognised the lines ``whole`` did."""
    assert isinstance(whole, FileRead)
    for other in others:
        assert isinstance(other, FileRead)
        assert (other.lines_read, other.lines_recognised) == (whole.lines_read, whole.lines_recognised)


def test_a_file_whose_held_blocks_are_framed_in_rounds_counts_every_line_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The reader frames the blocks it holds once they keep REPEATS_HELD_BYTES, all but the last:
    # lines read and recognised are those of the file read in one block; fewer lines are parsed
    # than when each round forgot the ones before.
    from logscope.ingest import reading

    path = tmp_path / "loop.out"
    path.write_bytes(_generated(5, 6000, 2))
    whole = read_file(discover([path])[0][0])
    monkeypatch.setattr(blocks_module, "CHUNK_BYTES", 512 * 1024)
    monkeypatch.setattr(reading, "REPEATS_HELD_BYTES", 256 * 1024)
    rounds = read_file(discover([path])[0][0])
    monkeypatch.setattr(reading, "BEFORE_MAX_KEYS", 0)  # each round as if the file began there
    forgetting = read_file(discover([path])[0][0])
    _counted_alike(whole, rounds, forgetting)
    assert isinstance(rounds, FileRead) and isinstance(forgetting, FileRead)
    assert rounds.events.height < forgetting.events.height


def test_a_file_read_in_blocks_counts_every_line_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The reader holds a file's blocks with repeats set aside and frames them together: lines
    # read and recognised are those of the file read in one block, and of the file read without
    # the rule.
    path = tmp_path / "loop.out"
    path.write_bytes(_generated(7, 3000, 2))
    whole = read_file(discover([path])[0][0])
    monkeypatch.setattr(blocks_module, "CHUNK_BYTES", 1024 * 1024)
    cut = read_file(discover([path])[0][0])
    without_repeats(monkeypatch)
    plain = read_file(discover([path])[0][0])
    _counted_alike(whole, cut, plain)
    assert isinstance(plain, FileRead) and isinstance(cut, FileRead)
    assert cut.events.height < plain.events.height


def test_blocks_held_when_the_file_breaks_off_are_read_before_it_is_said(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # A compressed loop cut short: the blocks read before the error, held for their repeats, are
    # framed and counted, and the error is said after them, as without the rule.
    packed = gzip.compress(_generated(11, 3000, 2))
    path = tmp_path / "loop.out.gz"
    path.write_bytes(packed[: len(packed) * 3 // 4])
    monkeypatch.setattr(blocks_module, "CHUNK_BYTES", 1024 * 1024)
    held = read_file(discover([path])[0][0])
    without_repeats(monkeypatch)
    plain = read_file(discover([path])[0][0])
    assert isinstance(held, FileRead) and isinstance(plain, FileRead)
    assert (held.lines_read, held.lines_recognised, held.warnings) == (plain.lines_read, plain.lines_recognised,
                                                                        plain.warnings)
    assert any("stopped reading after line" in warning for warning in held.warnings)
    assert held.lines_read > 20_000 and held.events.height < plain.events.height


def test_kept_lines_read_back_in_python_as_the_reader_reads_them() -> None:
    # The fallback of reading._HeldRepeats when the reader's rows do not match the count (never
    # seen): the same lines and numbers as lines_frame gives.
    from logscope.ingest.reading import _numbered_lines

    kept = b'5\x1fa "quoted\n7\x1f\n9\x1f\xc3\xa9 x\n12\x1f  File "t.py", line 3\n'
    assert _numbered_lines(kept).rows() == lines_frame(kept, 0, numbered=True).rows()
    assert _numbered_lines(kept)["line"].to_list() == [5, 7, 9, 12]
