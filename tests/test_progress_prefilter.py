"""Training-progress lines set aside on a block's bytes (logscope.ingest.progress_prefilter).

The reference is the polars path (logscope.parsers.progress_aside, then the thinning): a file read
with the prefilter gives the same events, line counts and warnings as without it, on progress logs
of two trainers' forms with what a progress log also holds between its lines (untimed lines, a
traceback, NCCL lines, a line whose time is no time), cut into several blocks. Negative: a block
of few progress lines, or one where a trainer's clock stands behind another clock, is left as it
is. And the scanner's shapes (the regex facts it stands on: test_digit_regex.py).
"""

from __future__ import annotations

import random
import re
from array import array
from pathlib import Path

import polars as pl
import pytest
from reading_support import assert_same_reads

from logscope.ingest import FileRead, compiled, discover, read_file, reading, thinning
from logscope.ingest import blocks as blocks_module
from logscope.ingest import progress_prefilter as prefilter
from logscope.limits import MATCH_CHARS

pytestmark = pytest.mark.skipif(not compiled.COMPILED, reason="the compiled scanner was not built here")

# Megatron-LM's training_log line (megatron/training.py) behind torchrun's --tee prefix and a
# python logger's head; DLLogger's (NVIDIA/dllogger, dllogger/logger.py) behind srun --label.
_MEGATRON = ("[default{r}]:2026-11-03 {hh:02d}:{mm:02d}:{ss:02d},532 - INFO - iteration {step:8d}/  1000000 | "
             "consumed samples: {samples:12d} | elapsed time per iteration (ms): {ms:.1f} | learning rate: "
             "1.500E-04 | global batch size:    64 | lm loss: {loss:.2E} | grad norm: 0.512 |")
_DLL = ("{r}: DLL 2025-10-03 {hh:02d}:{mm:02d}:{ss:02d}.{us:06d} - Iteration {step} | train_acc : {acc:.1f} % | "
        "iteration_time : {ms:.1f} ms | train_loss : {loss:.4f}")


def _progress_log(path: Path, form: str, steps: int, ranks: int, seed: int = 7, extras: bool = True,
                  preamble: int = 0) -> Path:
    rng = random.Random(seed)
    lines = [f"{n % ranks}: loading shard {n} of the dataset" for n in range(preamble)]
    for step in range(1, steps + 1):
        seconds = 9 + 7 * step
        when = {"hh": 14 + seconds // 3600 % 10, "mm": seconds // 60 % 60, "ss": seconds % 60}
        for r in range(ranks):
            lines.append(form.format(r=r, step=step, samples=64 * step, ms=6000 + rng.random() * 2000,
                                     loss=2.5 - step / 10000, acc=rng.random() * 100, us=rng.randrange(10**6),
                                     **when))
        if not extras:
            continue
        # a line of its own words every third step: it holds no trigger, so the progress lines
        # around it go as if it were not there (it is kept)
        if step % 3 == 0 and form.startswith("{r}: DLL"):
            lines.append(f"{step % ranks}: prefetching shard {''.join(rng.choices('qwxyzjkv', k=8))}")
        if step % 97 == 0:  # an untimed line between them: its time is its neighbours'
            lines.append(f"[default{step % ranks}]:WARNING: gradient overflow, skipping step {step}")
        if step == steps // 3:  # a traceback, its source lines quoted text
            lines += ["[default1]:Traceback (most recent call last):",
                      '[default1]:  File "/workspace/train.py", line 88, in <module>',
                      f"[default1]:    iteration {step}/ 100 | lm loss: 1.0E+00 |",
                      "[default1]:RuntimeError: dataloader worker died"]
        if step == steps // 2:  # a line of the shape whose "time" is no time: read otherwise
            lines.append(form.format(r=0, step=step, samples=64 * step, ms=6000.0, loss=2.0, acc=1.0, us=0,
                                     hh=14, mm=0, ss=0).replace("2026-11-03", "1850-11-03").replace(
                                         "2025-10-03", "1850-10-03"))
        if step % 500 == 0:
            lines.append(f"gpu-node01:{1000 + step}:{2000 + step} [0] NCCL INFO comm 0x55d0 rank 0 nranks 16 "
                         "cudaDev 0 busId 1000 - Init COMPLETE")
    path.write_text("\n".join(lines) + "\n")
    return path


def _reads(path: Path, monkeypatch: pytest.MonkeyPatch, *, prefiltered: bool) -> tuple[list, list]:
    """The file read (cut into 2 MB blocks, 64 progress lines kept at the end of each process),
    with the prefilter or without it, and what the prefilter returned for each block."""
    found: list = []
    reduce = prefilter.reduce_progress

    def spy(*args, **kwargs):
        result = reduce(*args, **kwargs)
        found.append(result)
        return result

    with monkeypatch.context() as patch:
        patch.setattr(blocks_module, "CHUNK_BYTES", 2 * 1024 * 1024)
        patch.setattr(reading, "PROGRESS_TAIL", 64)
        patch.setattr(thinning, "PROGRESS_TAIL", 64)
        patch.setattr(reading, "reduce_progress", spy if prefiltered else lambda *_, **__: None)
        read = [read_file(source) for source in discover([path])[0]]
    return read, found


# (DLLogger's lines after a preamble: a log of nothing but them takes "DLL " for a wrapper every
# line carries, see below)
@pytest.mark.parametrize(("form", "ranks", "preamble"), [(_MEGATRON, 8, 0), (_DLL, 1, 300), (_DLL, 3, 300)])
def test_a_progress_log_reads_as_without_the_prefilter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       form: str, ranks: int, preamble: int) -> None:
    path = _progress_log(tmp_path / "train-1-gpu-node01.out", form, steps=30000 // ranks, ranks=ranks,
                         preamble=preamble)
    expected, _ = _reads(path, monkeypatch, prefiltered=False)
    got, found = _reads(path, monkeypatch, prefiltered=True)
    assert_same_reads(expected, got)
    reduced = [f for f in found if f is not None and f.kept is not None]
    assert len(reduced) >= 2  # blocks set aside, and held together across the file
    assert sum(f.kept_count for f in reduced) < sum(f.lines_read for f in reduced) // 2


def test_a_line_whose_time_is_no_time_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Its year is not one the time forms read: its prefix ends elsewhere than its shape's line's.
    path = _progress_log(tmp_path / "train-1-gpu-node01.out", _MEGATRON, steps=3000, ranks=8)
    _, found = _reads(path, monkeypatch, prefiltered=True)
    kept = b"".join(f.kept for f in found if f is not None and f.kept is not None)
    assert b"1850-11-03" in kept


def test_lines_read_behind_a_learned_wrapper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every line starts "<rank>: DLL <time> - ": "DLL " is taken off as a tool's wrapper, learned
    # from a block's first lines, and the prefixes behind it read; a block with a preamble learns
    # none. Each block is read as it is without the prefilter.
    path = _progress_log(tmp_path / "train-1-gpu-node01.out", _DLL, steps=20000, ranks=2, extras=False,
                         preamble=300)
    expected, _ = _reads(path, monkeypatch, prefiltered=False)
    got, found = _reads(path, monkeypatch, prefiltered=True)
    assert_same_reads(expected, got)
    assert sum(f is not None and f.kept is not None for f in found) >= 2


def test_lines_read_behind_line_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `cat -n` of a progress log: each line's number, learned from a block's first lines, taken off
    # before its prefixes are read (its digits differ from line to line, as a step's do).
    path = _progress_log(tmp_path / "train-1-gpu-node01.out", _MEGATRON, steps=2500, ranks=8, extras=False)
    lines = path.read_text().splitlines()
    path.write_text("".join(f"{n:6d}\t{line}\n" for n, line in enumerate(lines, 1)))
    expected, _ = _reads(path, monkeypatch, prefiltered=False)
    got, found = _reads(path, monkeypatch, prefiltered=True)
    assert_same_reads(expected, got)
    assert sum(f is not None and f.kept is not None for f in found) >= 2


@pytest.mark.parametrize(("form", "ranks", "preamble"), [(_MEGATRON, 8, 0), (_DLL, 2, 0)])
def test_a_shapes_lines_are_read_once_a_group_of_the_digits_its_regexes_tell(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str, ranks: int, preamble: int) -> None:
    # A year's first digits and a rank tell the prefix regexes apart, the steps, times and losses
    # do not: polars reads a few lines per shape and rank, never each line (nor every line of a
    # block once its lead learned "DLL " for a wrapper), and the file reads as without the pass.
    lines = 40000
    path = _progress_log(tmp_path / "train-1-gpu-node01.out", form, steps=lines // ranks, ranks=ranks,
                         extras=False, preamble=preamble)
    read: list[tuple[int, bool]] = []
    behind = prefilter._read_behind

    def spy(body, starts, rows, place, told, lead, readings=None):  # type: ignore[no-untyped-def]
        read.append((len(rows), readings is not None))
        return behind(body, starts, rows, place, told, lead, readings)

    expected, _ = _reads(path, monkeypatch, prefiltered=False)
    monkeypatch.setattr(prefilter, "_read_behind", spy)
    got, found = _reads(path, monkeypatch, prefiltered=True)
    assert_same_reads(expected, got)
    assert read and all(grouped for _, grouped in read)  # each block's lines read by groups
    assert sum(rows for rows, _ in read) * 100 < lines  # a few lines a shape, rank and block
    assert sum(f is not None and f.kept is not None for f in found) >= 2


def test_lines_whose_told_digits_change_mid_file_read_as_without_the_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The digits the prefix regexes tell apart change between lines of one shape: a year that turns
    # from 1999 to 2000 (the time forms read 19xx and 2xxx otherwise: a line of each is read), a
    # clock in epoch seconds behind the rank tag, and ranks of one and two digits.
    lines = []
    for step in range(1, 20001):
        year, day = ("1999", "12-31") if step < 10000 else ("2000", "01-01")
        for rank in (3, 11):
            lines.append(f"[default{rank}]:{year}-{day} 23:{step // 60 % 60:02d}:{step % 60:02d},532 - INFO - "
                         f"iteration {step:8d}/ 100000 | lm loss: 2.{step % 97:02d}E+00 |")
        lines.append(f"[rank7]: {1714557600 + step}.25 iteration {step:8d}/ 100000 | lm loss: 2.50E+00 |")
    path = tmp_path / "train-1-gpu-node01.out"
    path.write_text("\n".join(lines) + "\n")
    expected, _ = _reads(path, monkeypatch, prefiltered=False)
    got, found = _reads(path, monkeypatch, prefiltered=True)
    assert_same_reads(expected, got)
    assert sum(f is not None and f.kept is not None for f in found) >= 2


def test_few_progress_lines_or_two_clocks_are_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = tmp_path / "quiet-1-gpu-node01.out"
    quiet.write_text("".join(f"[default0]:loading shard {n} of the dataset\n" for n in range(20000)))
    _, found = _reads(quiet, monkeypatch, prefiltered=True)
    assert all(f is None for f in found)
    # A shipper's time in front of the logger's: the offset between the two clocks is taken over
    # the lines that carry both, these among them.
    shipped = _progress_log(tmp_path / "shipped.log", "2026-11-04T01:00:00Z " + _MEGATRON, steps=2500, ranks=8,
                            extras=False)
    expected, _ = _reads(shipped, monkeypatch, prefiltered=False)
    got, found = _reads(shipped, monkeypatch, prefiltered=True)
    assert_same_reads(expected, got)
    assert all(f is None for f in found)


def test_shapes_hash_lines_alike_when_they_differ_in_digits_alone() -> None:
    lines = [b"iteration 12 | loss 2.51", b"iteration 99 | loss 7.00", b"iteration 123 | loss 2.51",
             b"iteratiom 12 | loss 2.51", b"", b"\xff\xfe 0123456789 \x80", b"\xff\xfe 9876543210 \x80"]
    hashes, end, starts = compiled.scanner.shapes(b"\n".join(lines))
    got = array("Q", hashes)
    assert end == len(b"\n".join(lines)) and len(got) == len(lines)
    assert list(array("Q", starts)) == [len(b"\n".join(lines[:n])) + (n > 0) for n in range(len(lines))]
    assert got[0] == got[1] and got[5] == got[6]
    assert len({got[0], got[2], got[3], got[4], got[5]}) == 5
    rng = random.Random(3)
    alphabet = b"0123456789:/ ab\xb0\xb9\x3a\x2f"
    many = [bytes(rng.choice(alphabet) for _ in range(rng.randrange(40))) for _ in range(3000)]
    by_mask: dict[bytes, int] = {}
    for line, value in zip(many, array("Q", compiled.scanner.shapes(b"\n".join(many))[0]), strict=True):
        masked = bytes(0x30 if 0x30 <= c <= 0x39 else c for c in line)
        assert by_mask.setdefault(masked, value) == value
    assert len(set(by_mask.values())) == len(by_mask)


def test_the_needles_a_block_holds_are_asked_of_a_line_of_each_shape() -> None:
    # Lines alike but for their digits hold the same needles (none holds a digit): asking one line
    # of each shape gives what asking every line gives, a long line's flag, empty lines and lines
    # whose shape comes again after others included.
    import numpy as np

    needles, _ = prefilter._needles()
    rng = random.Random(11)
    pieces = [b"iteration ", b"iter", b"Iter 3", b"tep", b"te", b"'loss': 2.5", b"File \"", b"traceback",
              b": Traceback (most recent call last)", b"Epoch 12", b"DLL ", b"12", b"7", b" ",
              b"x" * (MATCH_CHARS // 3), b"\xff"]
    for _ in range(20):
        lines = [b"".join(rng.choices(pieces, k=rng.randrange(6))) for _ in range(rng.randrange(1, 400))]
        lines = [re.sub(rb"[0-9]", lambda _: rng.choice(b"0123456789").to_bytes(1, "big"), line) for line in lines]
        body = memoryview(b"\n".join(lines))
        hashes, _, starts = compiled.scanner.shapes(body)
        shapes, line_starts = np.frombuffer(hashes, dtype=np.uint64), np.frombuffer(starts, dtype=np.uint64)
        _, flags, held, _ = compiled.scanner.wordings(body, needles, MATCH_CHARS, 0, False)
        assert prefilter._held_by_shape(body, shapes, line_starts, needles) == (flags, held)


def test_a_block_of_few_lines_per_writer_is_not_worth_the_pass(tmp_path: Path) -> None:
    import numpy as np

    path = _progress_log(tmp_path / "train-1-gpu-node01.out", _MEGATRON, steps=500, ranks=8, extras=False)
    body = memoryview(path.read_bytes())[:-1]
    rows = np.arange(4000)
    # 500 lines of each of 8 ranks ([default0]: ... [default7]:, behind them a time of every second)
    assert prefilter._few_per_writer(body, rows, 500)
    assert not prefilter._few_per_writer(body, rows, 499)


def test_what_a_progress_block_keeps_is_looked_at_for_a_loops_repeats(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A restart loop whose attempts print their steps, then fail alike (MLPerf's DLLogger logs, a
    # data-loader thread's traceback each time, its thread id its own): the loop pass leaves the
    # block to this pass (its progress lines are most of its lines), and what this one keeps (the
    # tracebacks, the last steps) is compared for a loop's repeats, on its bytes as the polars rule
    # compares it in its frame: its middle attempts' tracebacks go, every line still counted; the
    # first failure is the same.
    from logscope.parsers import lines as engine

    rng = random.Random(3)
    lines: list[str] = []
    for attempt in range(160):
        for step in range(1, 151):
            seconds = 60 * attempt + step
            lines.append(_DLL.format(r=0, step=step, ms=600.0, loss=2.5, acc=rng.random() * 100,
                                     us=rng.randrange(10**6), hh=10 + seconds // 3600, mm=seconds // 60 % 60,
                                     ss=seconds % 60))
        thread = 40_000 + 7 * attempt
        lines += [f"0: Exception in thread Thread-{thread} (SamplingThread):", "0: Traceback (most recent call last):"]
        lines += [f'0:   File "/workspace/gnn/dataloading/loader{n}.py", line {10 + n}, in run' for n in range(24)]
        lines.append("0: RuntimeError: Time out when prefetcher wait for sample flag at 60 seconds.")
    path = tmp_path / "result_7.txt"
    path.write_text("\n".join(lines) + "\n")
    set_aside = []
    surplus, reduce = engine.repeat_surplus, reading.reduce_progress

    def spy(*args, **kwargs):
        found = surplus(*args, **kwargs)
        set_aside.append(0 if found is None else found.surplus.len())
        return found

    monkeypatch.setattr(engine, "repeat_surplus", spy)
    on_bytes = read_file(discover([path])[0][0])
    assert sum(set_aside) == 0  # the polars rule was not asked again
    with monkeypatch.context() as patch:  # what is kept left to the polars rule
        patch.setattr(reading, "reduce_progress",
                      lambda *args, **kwargs: reduce(*args, **{**kwargs, "loop_keep": None}))
        in_polars = read_file(discover([path])[0][0])
        assert sum(set_aside) > 100 * 27  # the middle attempts' tracebacks
        patch.setattr(engine, "repeat_surplus", lambda *_, **__: None)
        not_looked = read_file(discover([path])[0][0])
    assert_same_reads([in_polars], [on_bytes])
    assert isinstance(on_bytes, FileRead) and isinstance(not_looked, FileRead)
    assert (on_bytes.lines_read, on_bytes.lines_recognised) == (not_looked.lines_read, not_looked.lines_recognised)
    assert on_bytes.events.height < not_looked.events.height
    first = [read.events.filter(pl.col("event") == "exception").row(0, named=True) for read in (on_bytes, not_looked)]
    assert first[0]["line"] == first[1]["line"] and first[0]["text"] == first[1]["text"]
