"""The lines a restart loop repeats, set aside before parsing (logscope.parsers.repeats).

Positive: a loop's middle attempts go, its first and last stay, every line is still counted and
the verdict is the one reading every line gives. Negative: what tells ranks, hosts, steps and
records apart is never merged, progress lines are never set aside, and a log without a loop is not
compared at all.
"""

from __future__ import annotations

import random
import re
from array import array
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reading_support import jobsim, without_repeats

from logscope.analysis import analyze
from logscope.ingest import blocks, compiled, discover, read_file, reading
from logscope.ingest.reading import FileRead
from logscope.ingest.repeat_prefilter import RepeatsFound
from logscope.parsers import lines as engine
from logscope.parsers.repeats import (
    CONTINUATION,
    MASKED,
    SAMPLE_LINES,
    TIME_OF_DAY,
    VARYING,
    Repeats,
    Wordings,
    line_facts,
    repeat_surplus,
)


def _wording(text: str) -> str:
    """A line's wording, as polars masks it (Python's ``re`` reads the same regex alike)."""
    return pl.Series([text]).str.replace_all(VARYING, MASKED)[0]


@pytest.mark.parametrize(("one", "other"), [
    ("I1103 14:00:06.332000 37738 torch/run.py:793] x", "I1103 19:10:06.445000 80628 torch/run.py:793] x"),
    ("[default3]:gpu-node01:37793:37994 [3] NCCL INFO comm 0x55d0c3a0 rank 3",
     "[default3]:gpu-node01:81002:81230 [3] NCCL INFO comm 0x7f00aa10 rank 3"),
    ("  time      : 2026-11-03_14:02:13", "  time      : 2026-11-05_19:12:16"),  # days apart
    ("I1103 23:59:59.1 7001 x.py:3] a", "I1105 00:00:01.9 8002 x.py:3] a"),
    ("slurmstepd: error: *** STEP 42.0 ON n1 CANCELLED AT 2026-11-03T14:02:13 ***",
     "slurmstepd: error: *** STEP 42.0 ON n1 CANCELLED AT 2026-11-03T19:02:14 ***"),
    ("ts=1730642406.332 msg=bye", "ts=1730649999.5 msg=bye"),
    ("The node 'gpu-node01_81002_0' attempts to join", "The node 'gpu-node01_68712_0' attempts to join"),
])
def test_what_changes_from_one_attempt_to_the_next_is_masked(one: str, other: str) -> None:
    assert _wording(one) == _wording(other)


@pytest.mark.parametrize(("one", "other"), [
    ("[default3]:[rank11]: ValueError: bad", "[default3]:[rank12]: ValueError: bad"),  # ranks
    ("gpu-node01:37738:37900 [3] NCCL INFO Init COMPLETE", "gpu-node02:37738:37900 [3] NCCL INFO Init COMPLETE"),
    ("gpu-node01:37738:37900 [3] NCCL INFO Init COMPLETE", "gpu-node01:37738:37900 [4] NCCL INFO Init COMPLETE"),
    ("srun: error: n1: task 3: Exited with exit code 1", "srun: error: n1: task 3: Exited with exit code 2"),
    ("lm loss: 2.345678E+00", "lm loss: 2.345679E+00"),  # decimals
    ("rank1023: x", "rank1022: x"),  # a number inside a word
    ("I1103 14:00:06.1 7 x.py:3] a", "W1103 14:00:06.1 7 x.py:3] a"),  # glog's levels
], ids=["ranks", "hosts", "devices", "exit codes", "decimals", "in a word", "levels"])
def test_what_tells_lines_apart_is_kept(one: str, other: str) -> None:
    assert _wording(one) != _wording(other)


def test_four_digits_standing_alone_are_taken_for_a_pid() -> None:
    # The mask's limit: "rank 1023" and "rank 1022" read alike, so such lines of big jobs are told
    # apart only by their launcher label or the line before them (and set aside only past the
    # first and last 8 of them in a chunk).
    assert _wording("rank 1023 failed") == _wording("rank 1022 failed")


@pytest.mark.parametrize(("line", "continues"), [
    ("  exitcode  : 1 (pid: 5)", True), ("3:   exitcode  : 1 (pid: 5)", True),
    ('[default3]:[rank11]:   File "train.py", line 3, in <module>', True), ("\tat x", True),
    ("srun: error: n1: task 3: Exited", False), ("3: Exited", False), ("[1]:", False),
    ("I1103 14:00:06.332000 1 torch/run.py:1]   log_dir : /tmp/x", False),
])
def test_a_line_that_goes_on_the_one_before_is_told_by_its_indent(line: str, continues: bool) -> None:
    assert bool(re.search(CONTINUATION, line)) is continues


def _loop(tmp_path: Path, attempts: int, nodes: int = 2) -> Path:
    """A crash-restart loop: jobsim's crash cascade ``attempts`` times, each with its own pids and
    10 minutes after the one before, appended to the same per-node files (as bench.py builds it)."""
    sim = jobsim()
    base = sim.JobSpec(scenario="crash-cascade", nodes=nodes, coll=False)
    folder = tmp_path / "loop"
    folder.mkdir()
    one = tmp_path / "one"
    for attempt in range(attempts):
        sim.write_job(replace(base, seed=attempt, start=base.start + timedelta(minutes=10 * attempt)), one)
        for path in sorted(one.iterdir()):
            with (folder / path.name).open("ab") as out:
                out.write(path.read_bytes())
        for path in one.iterdir():
            path.unlink()
    return folder


def _frame(path: Path) -> pl.DataFrame:
    raw = path.read_text().split("\n")
    return pl.DataFrame({"line": pl.int_range(1, len(raw) + 1, eager=True), "raw": raw})


def test_a_loops_middle_attempts_are_set_aside_in_whole_groups(tmp_path: Path) -> None:
    folder = _loop(tmp_path, attempts=40)
    lines = _frame(sorted(folder.glob("*node01*"))[0])
    found = repeat_surplus(lines, 8, 8)
    assert found is not None
    assert found.surplus.len() > lines.height // 2  # most of the loop
    aside = pl.Series(pl.repeat(False, lines.height, eager=True)).scatter(found.surplus, True)
    # The first attempt and the last are whole (the first and last 8 of every wording stay).
    starts = lines.with_row_index("at").filter(pl.col("raw").str.contains("Starting elastic_operator"))["at"]
    assert starts.len() == 40
    assert not aside[: starts[1]].any()
    assert not aside[starts[-1]:].any()
    # A record (a line and the indented lines under it) is set aside whole or kept whole.
    group = (~lines["raw"].str.contains(CONTINUATION)).cum_sum()
    mixed = pl.DataFrame({"group": group, "aside": aside}).group_by("group").agg(pl.col("aside").n_unique())
    assert mixed["aside"].max() == 1
    # Every line set aside is counted once, against a line that stays.
    assert found.counted["count"].sum() == found.surplus.len()
    counted_at = lines.with_row_index("at").filter(pl.col("line").is_in(found.counted["line"].implode()))["at"]
    assert not aside.gather(counted_at).any()


def test_an_untimed_line_kept_next_to_a_run_set_aside_keeps_its_own_attempts_time(tmp_path: Path) -> None:
    # In each run of groups set aside, the first and the last with a time of day stay where a line
    # kept next to the run needs them: an untimed line kept takes its time from the timed lines kept
    # nearest it (lines.py), and those are of its own attempt (10 minutes from the next), as the
    # nearest among all the lines are. A run's end whose kept neighbour holds a time itself goes: the
    # line after the one a loop's attempt says in words of its own (a temporary directory).
    folder = _loop(tmp_path, attempts=40)
    lines = _frame(sorted(folder.glob("*node01*"))[0])
    found = repeat_surplus(lines, 8, 8)
    assert found is not None
    clock = lines["raw"].str.extract(r"(\d\d):(\d\d):(\d\d)", 0).to_list()
    minutes = [None if c is None else int(c[:2]) * 60 + int(c[3:5]) for c in clock]
    timed = lines["raw"].str.contains(TIME_OF_DAY).to_list()
    aside = set(found.surplus.to_list())
    kept = [n for n in range(lines.height) if n not in aside]

    def nearest(rows: list[int]) -> tuple[dict[int, int | None], dict[int, int | None]]:
        above: dict[int, int | None] = {}
        below: dict[int, int | None] = {}
        last = None
        for n in rows:
            above[n], last = last, (n if timed[n] and minutes[n] is not None else last)
        last = None
        for n in reversed(rows):
            below[n], last = last, (n if timed[n] and minutes[n] is not None else last)
        return above, below

    def minute(n: int | None) -> int | None:
        return None if n is None else minutes[n]

    every_above, every_below = nearest(list(range(lines.height)))
    kept_above, kept_below = nearest(kept)
    untimed = [n for n in kept if not timed[n]]
    assert untimed
    for n in untimed:
        for mine, every in ((kept_above[n], every_above[n]), (kept_below[n], every_below[n])):
            assert (mine is None) == (every is None)
            if mine is not None:
                assert abs(minute(mine) - minute(every)) < 5, (n, mine, every)  # type: ignore[operator]
    log_dirs = [n for n in kept if "log_dir" in lines["raw"][n]]
    assert len(log_dirs) == 40  # the temporary directory differs in every attempt
    middle = log_dirs[9:-9]  # (the first and last 8 attempts are kept whole)
    assert middle and all(timed[n] and n + 1 in aside for n in middle)


def test_lines_that_tell_ranks_apart_are_never_set_aside(tmp_path: Path) -> None:
    # One file holding 512 ranks' start-up once (#SBATCH --output names one file): same words,
    # other ranks.
    raw = [f"gpu-node{r // 8:02d}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO comm 0x{r:x}55d0 rank {r} nranks 512"
           for r in range(512)]
    raw += [f"[rank{r}]: ValueError: sample {r} is bad" for r in range(512)]
    lines = pl.DataFrame({"line": pl.int_range(1, len(raw) + 1, eager=True), "raw": raw})
    assert repeat_surplus(lines, 8, 8) is None


def test_progress_lines_are_never_set_aside() -> None:
    # Megatron's progress line, its numbers past what the mask keeps apart: the same wording again
    # and again. The progress rule keeps their ends (progress_aside); here none goes.
    raw = [f"[default0]: iteration {1000 + n:8d}/ 500000 | consumed samples: {64 * n:10d} | lm loss: 2.500000E+00 |"
           for n in range(SAMPLE_LINES)]
    lines = pl.DataFrame({"line": pl.int_range(1, len(raw) + 1, eager=True), "raw": raw})
    assert repeat_surplus(lines, 8, 8) is None


def test_a_log_without_a_loop_is_not_compared_whole() -> None:
    # A warning said again and again in a log otherwise all its own: under the share of the sample
    # that makes a loop, nothing is set aside (and the chunk is not masked whole).
    def name(n: int) -> str:
        return "".join(chr(97 + n // 26 ** k % 26) for k in range(4))

    raw = [f"loaded shard {name(n)}.bin" if n % 50 else f"W1103 14:{n // 60 % 60:02d}:{n % 60:02d}.000 1 x.py:2] slow"
           for n in range(SAMPLE_LINES * 2)]
    lines = pl.DataFrame({"line": pl.int_range(1, len(raw) + 1, eager=True), "raw": raw})
    assert repeat_surplus(lines, 8, 8) is None


def _long_attempts(attempts: int, lines_each: int) -> pl.DataFrame:
    """A loop whose attempts are longer than the gate's sample would make them count: each rank's
    NCCL start-up said once an attempt (its own words: ``item123`` keeps its digits), with the
    attempt's own pid and thread id."""
    raw = [f"gpu-node{n % 16:02d}:{40_000 + 7 * a}:{50_000 + 7 * a} [{n % 8}] NCCL INFO Channel item{n} via P2P/IPC"
           for a in range(attempts) for n in range(lines_each)]
    return pl.DataFrame({"line": pl.int_range(1, len(raw) + 1, eager=True), "raw": raw})


def test_a_loop_whose_attempts_are_longer_than_the_sample_is_found_by_its_far_end() -> None:
    # 2,500 lines an attempt: the sample's 16,384 lines hold six attempts and a half, each line's
    # wording at most 7 times (fewer than head + tail: the sample alone shows no loop), and the
    # chunk's last 16,384 lines are all worded as the sample's.
    lines = _long_attempts(20, 2_500)
    assert lines.height >= 2 * SAMPLE_LINES
    found = repeat_surplus(lines, 8, 8)
    assert found is not None
    aside = pl.Series(pl.repeat(False, lines.height, eager=True)).scatter(found.surplus, True)
    assert not aside[: 8 * 2_500].any() and not aside[12 * 2_500:].any()  # the first and last 8 attempts stay
    assert aside[8 * 2_500: 12 * 2_500].sum() == 4 * 2_500  # the 4 between go (none of them holds a time)
    assert found.counted["count"].sum() == found.surplus.len()


def test_a_long_chunk_whose_far_end_says_other_things_is_not_compared_whole() -> None:
    # The same start-up once, then as many lines of other words (a training run's own lines): the
    # far end recurs under the share; and a chunk of under twice the sample is never looked at there.
    once = _long_attempts(1, 2 * SAMPLE_LINES)["raw"].to_list()
    raw = once + [f"epoch item{n} done" for n in range(2 * SAMPLE_LINES)]
    assert repeat_surplus(pl.DataFrame({"line": pl.int_range(1, len(raw) + 1, eager=True), "raw": raw}), 8, 8) is None
    short = _long_attempts(2 * SAMPLE_LINES // 2_500, 2_500)
    assert short.height < 2 * SAMPLE_LINES
    assert repeat_surplus(short, 8, 8) is None


class _SetAside:
    """The rule on a block's bytes (repeat_prefilter.reduce_repeats) and in its frame
    (repeat_surplus), counting the lines they set aside (``lines``) as the reading calls them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lines = 0
        surplus, on_bytes = engine.repeat_surplus, reading.reduce_repeats

        def counted(lines: pl.DataFrame, head: int, tail: int, wordings: Wordings | None = None) -> Repeats | None:
            found = surplus(lines, head, tail, wordings)
            self.lines += 0 if found is None else found.surplus.len()
            return found

        def counted_on_bytes(*args: Any, **kwargs: Any) -> RepeatsFound | None:
            found = on_bytes(*args, **kwargs)
            self.lines += 0 if found is None or found.kept is None else found.lines_read - found.kept_count
            return found

        monkeypatch.setattr(engine, "repeat_surplus", counted)
        monkeypatch.setattr(reading, "reduce_repeats", counted_on_bytes)


def test_a_loop_read_with_repeats_set_aside_counts_every_line_and_keeps_its_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _loop(tmp_path, attempts=40)
    aside = _SetAside(monkeypatch)
    sources = [source for source in discover([folder])[0]]
    fast = [read_file(source) for source in sources]
    fast_analysis = analyze([folder])
    assert aside.lines > 10_000
    without_repeats(monkeypatch)
    plain = [read_file(source) for source in sources]
    plain_analysis = analyze([folder])
    for a, b in zip(plain, fast, strict=True):
        assert isinstance(a, FileRead) and isinstance(b, FileRead)
        assert (a.lines_read, a.lines_recognised, a.warnings) == (b.lines_read, b.lines_recognised, b.warnings)
        assert b.events.height < a.events.height
    assert fast_analysis.verdict == plain_analysis.verdict
    assert [f.code for f in fast_analysis.findings] == [f.code for f in plain_analysis.findings]
    assert fast_analysis.verdict.root_cause is not None


@pytest.mark.parametrize("chunk", [256 * 1024, 1024 * 1024])
def test_which_repeats_are_parsed_depends_on_the_blocks_the_verdict_and_counts_do_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    # Repeats are set aside per block (a file is not read twice to count its wordings first): a
    # file cut into other blocks, or read without the compiled scanner, parses other repeats of
    # the same lines. What the job is said to be, and every line's count, stay.
    folder = _loop(tmp_path, attempts=40)
    aside = _SetAside(monkeypatch)
    whole = analyze([folder])
    assert aside.lines > 0
    before = aside.lines
    monkeypatch.setattr(blocks, "CHUNK_BYTES", chunk)
    cut = analyze([folder])
    # Blocks of 1 MiB (~14,000 lines) have repeats set aside too, others than the whole file's;
    # blocks of 256 KiB are under the size whose lines are compared at all.
    assert (aside.lines > before) is (chunk > 256 * 1024)
    monkeypatch.setattr(compiled, "COMPILED", False)
    plain = analyze([folder])
    for other in (cut, plain):
        assert other.verdict == whole.verdict
        assert [f.code for f in other.findings] == [f.code for f in whole.findings]
        assert (other.job.lines_read, other.job.lines_recognised) == (whole.job.lines_read, whole.job.lines_recognised)


_PIECES = ["_81002_", "_12345", "__", "_1234x", "I1105 14:02:13.5", "E1103", "W1234  12:34:56", "2026-11-05",
           "1105", "-", "14:00:06", "4:00:06.332", "T14:02:13", "_14:02:13", "1730642406", "1730642406.5", "2.3456",
           "0x7f3a", "0xZZ", "37738", "123", "12345x", "node01", "rank1023", " ", "  ", "\t", ":", "]", "[", ".", ",",
           "x", "_", "T", "0", "9", "é", "\u00a0", "a1", "1:2:3", "12:34:56,789", "99.", ".5", "0x", "00:00:00",
           "#", "##", "x#y", "1.x", "Epoch ",
           # the same masks with other digits: lines that differ in them alone are one wording
           "T09:15:27", "_23:59:59", "I1231 01:02:03.7", "W0101  23:11:00", "2025-01-31", "0x1b2c", "98765", "_99999_"]


@pytest.mark.skipif(not compiled.COMPILED, reason="no compiled scanner: polars alone reads wordings")
@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=9).map("".join), min_size=1, max_size=300))
def test_the_scanner_reads_wordings_as_polars_does(texts: list[str]) -> None:
    lines = pl.DataFrame({"raw": texts})
    fast = line_facts(lines, compiled.scanner.wordings)
    plain = line_facts(lines)
    assert fast["_continues"].to_list() == plain["_continues"].to_list()
    assert fast["_timed"].to_list() == plain["_timed"].to_list()
    # The same partition of the lines: equal wordings hash alike in each, whatever the hash.
    pairs = set(zip(fast["_wording"].to_list(), plain["_wording"].to_list(), strict=True))
    assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs})


# Pieces that read alike once masked, and some that do not (a letter before the digits, a
# decimal's other digits): lines made of one or the other of each pair are one wording, or not,
# as polars reads them.
_TWIN_PIECES = [("T14:02:13", "T09:15:27"), ("_14:02:13", "_23:59:59"), ("I1105 14:02:13.5", "I1231 01:02:03.7"),
                ("W1234  12:34:56", "W0101  23:11:00"), ("2026-11-05", "2025-01-31"), ("0x7f3a", "0x1b2c"),
                ("37738", "98765"), ("_81002_", "_99999_"), ("1730642406", "1799999999.5"), ("14:00:06", "3:01:59"),
                ("x14:00:06", "x03:01:59"), ("2.5", "2.6"), ("rank12", "rank13"), ("F1234 1", "F4321 1"),
                ("E1103", "E1104"), ("a", "a"), ("INFO ", "INFO "), (" ", " "), ("T", "T"), ("_", "_"),
                ("node01:", "node01:"), ("#", "#"), ("0", "0"), ("Iteration ", "Iteration ")]


@pytest.mark.skipif(not compiled.COMPILED, reason="no compiled scanner: polars alone reads wordings")
@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_TWIN_PIECES), min_size=1, max_size=40), min_size=1, max_size=20))
def test_the_scanner_reads_lines_alike_but_for_their_masks_as_polars_does(templates: list[list[tuple[str, str]]],
                                                                          ) -> None:
    # Each template gives two lines, of the first and of the second of each pair: lines longer
    # than the scanner's buffer of masked text (64 bytes, hashed as it fills) and shorter ones,
    # their masks anywhere in a run of 16 bytes the scanner reads at once.
    texts = [line for pairs in templates for line in ("".join(a for a, _ in pairs), "".join(b for _, b in pairs))]
    lines = pl.DataFrame({"raw": texts})
    fast, plain = line_facts(lines, compiled.scanner.wordings), line_facts(lines)
    pairs = set(zip(fast["_wording"].to_list(), plain["_wording"].to_list(), strict=True))
    assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs})


# The test below changes the digits of _PIECES and these, and the letters of their hex numbers: a
# '0' before an 'x' starts a hex number, another digit there does not; one after a decimal's '.' or
# a time's ',' may be taken with it; a backtrace's addresses vary from line to line.
_SHAPED_PIECES = [*_PIECES, "0x1f", "9x1f", "10x", "0xdeadBEEF", " + 0x5e (0x7f3a9c in libc10.so)", "(0xa",
                  "1.0x5f", "12:34:56,0xab", "0xE", "0xF1105 14:02:13", "0x12:34:56", "a0xbc", "0x"]


@pytest.mark.skipif(not compiled.COMPILED, reason="no compiled scanner: polars alone reads wordings")
@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_SHAPED_PIECES), min_size=1, max_size=25).map("".join),
                min_size=1, max_size=8), st.integers(0, 2**32))
def test_lines_of_one_shape_are_worded_as_each_alone(templates: list[str], seed: int) -> None:
    # In a big text, a line of a shape seen before (its digits alone differ, but for a '0' before
    # an 'x', and the digits and letters of a hex number) is written by the plan of the first: its
    # hash and flags are those it gets alone.
    rng = random.Random(seed)
    lines: list[bytes] = []
    size = 0

    def hex_digits(match: re.Match[str]) -> str:
        return match.group(1) + "".join(rng.choice("0123456789abcdefABCDEF") for _ in match.group(2))

    while size < 80 * 1024:  # past the size below which a text is worded line by line
        line = re.sub(r"(0x)([0-9a-fA-F]+)", hex_digits, rng.choice(templates))
        lines.append(re.sub(r"[0-9]", lambda _: rng.choice("0123456789"), line).encode())
        size += len(lines[-1]) + 1
    text = b"\n".join(lines)
    hashes, flags, _, _ = compiled.scanner.wordings(text, (), 3)
    alone = [compiled.scanner.wordings(line, (), 3) for line in lines]
    assert list(array("Q", hashes)) == [array("Q", one[0])[0] for one in alone]
    assert list(flags) == [one[1][0] for one in alone]


@pytest.mark.skipif(not compiled.COMPILED, reason="no compiled scanner: polars alone reads wordings")
@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(max_size=30).map(lambda line: line.replace(b"\n", b"")), min_size=1, max_size=60),
       st.data())
def test_lines_found_from_their_starts_are_the_lines_found_by_reading(lines: list[bytes], data: st.DataObject) -> None:
    # lines_of given where each line starts (as shapes gives them) copies the same lines as when it
    # reads the block to them: empty lines, the last line, no line at all.
    body = b"\n".join(lines)
    rows = sorted(data.draw(st.sets(st.integers(0, len(lines) - 1))))
    wanted = array("I", rows).tobytes()
    starts = compiled.scanner.shapes(body)[2]
    found = compiled.scanner.lines_of(body, wanted, False, 0, starts)
    assert found == compiled.scanner.lines_of(body, wanted, False, 0)


_NEEDLES = [b"tep", b"te", b"iter", b"Iter", b" NCCL INFO ", b": opCount ", b"'loss': ", b"ab", b"abc", b"b\n"]


@pytest.mark.skipif(not compiled.COMPILED, reason="no compiled scanner: polars alone reads wordings")
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"step", b"te", b"t", b"iteration", b"Iter ", b" NCCL INFO ", b": opCount 1",
                                 b"'loss': ", b"a", b"b", b"ab", b"abc", b"\n", b"x" * 13, b"0", b" "]),
                max_size=80).map(b"".join),
       st.lists(st.sampled_from(_NEEDLES), min_size=1, max_size=8, unique=True))
def test_the_scanner_finds_each_needle_within_its_line(text: bytes, needles: list[bytes]) -> None:
    # Needles are looked for 16 places at a time over the whole text; each is found within a line
    # only (b"b\n" never is), lines near the text's end included.
    _, _, held, _ = compiled.scanner.wordings(text, needles)
    lines = text.split(b"\n")
    assert list(array("I", held)) == [sum(1 << i for i, needle in enumerate(needles) if needle in line)
                                      for line in lines]
    _, _, unhashed, _ = compiled.scanner.wordings(text, needles, 0, 0, False)
    assert unhashed == held


@pytest.mark.skipif(not compiled.COMPILED, reason="no compiled scanner: polars alone reads wordings")
@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from([b"step", b"Epoch ", b"DLL ", b"ITER", b" 0x", b"0x", b"x", b"a", b"E", b"D",
                                          b"f", b"1", b"9", b" ", b"_", b"'loss': ", b"12:34:56"]),
                         min_size=1, max_size=12).map(b"".join), min_size=1, max_size=12),
       st.lists(st.sampled_from([b"tep", b"Epoch ", b"DLL ", b"ITER", b"'loss': ", b"aE", b"fD", b"x1", b"9 "]),
                min_size=1, max_size=6, unique=True),
       st.integers(0, 2**32))
def test_lines_of_one_shape_are_searched_for_each_needle_alike(lines: list[bytes], needles: list[bytes],
                                                                seed: int) -> None:
    # A text beyond 64 KB is worded by plans, one per shape (a line with its digits read as '0'),
    # and the needles found in a shape's first line are those of the others where they differ in
    # their digits alone: a hex number's letters ("0xDLL " and "0xALL " are of one shape, only the
    # first holds "DLL ") or a needle with a digit in it are looked for in each line.
    rnd = random.Random(seed)

    def varied(line: bytes) -> bytes:
        return bytes(rnd.choice(b"0123456789") if c in b"0123456789" else
                     rnd.choice(b"abcdefABCDEF0123456789") if c in b"aEDf" and rnd.random() < 0.3 else c for c in line)

    count = 70_000 // (sum(map(len, lines)) // len(lines) + 1) + 2000
    text = b"\n".join(varied(lines[n % len(lines)]) for n in range(count))
    assert len(text) > 64 * 1024
    # (A needle with a digit has every line searched: the others are asked alone too.)
    for asked in (needles, [needle for needle in needles if not re.search(rb"\d", needle)] or [b"DLL "]):
        _, _, held, _ = compiled.scanner.wordings(text, asked)
        assert list(array("I", held)) == [sum(1 << i for i, needle in enumerate(asked) if needle in line)
                                          for line in text.split(b"\n")]


@pytest.mark.skipif(not compiled.COMPILED, reason="no compiled scanner: polars alone reads wordings")
@pytest.mark.parametrize("text", [b"", b"\n", b"a\n", b"\n\n", b"12:34:5", b"12:34:56.", b"T12:34", b"0x", b"1.", b"9",
                                  b"1:", b":", b"\xff\xfe12:34:56 \xc3", b"[x]:", b"[x]: ", b"3:  ", b"\t",
                                  b"x" * 100_000 + b" 12:00:00", b"1" * 100_000])
def test_the_scanner_reads_any_bytes_to_their_end(text: bytes) -> None:
    # Patterns cut off by the end of a line or of the text, bytes that are not UTF-8: every line
    # gets a hash and a flag, nothing is read past the text (.ci/run runs this under ASan and UBSan).
    hashes, flags, held, end = compiled.scanner.wordings(text, [b"12", b"x\n", b"\xc3\xa9", b"\t\t"], 3)
    assert len(flags) == len(held) // 4 == text.count(b"\n") + 1 and len(hashes) == 8 * len(flags) and end == len(text)
    pieces = text.split(b"\n")
    assert [bool(f & 4) for f in flags] == [len(piece) > 3 for piece in pieces]
    # Each needle found within a line only (b"x\n" never is), by its bit.
    assert list(array("I", held)) == [(b"12" in p) | (b"\xc3\xa9" in p) << 2 | (b"\t\t" in p) << 3 for p in pieces]
    decoded = text.decode("utf-8", "strict") if text.isascii() else None
    if decoded is not None:
        lines = pl.DataFrame({"raw": decoded.split("\n")})
        plain = line_facts(lines)
        assert [bool(f & 1) for f in flags] == plain["_continues"].to_list()
        assert [bool(f & 2) for f in flags] == plain["_timed"].to_list()
