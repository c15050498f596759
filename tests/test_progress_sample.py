"""The file's progress sample (logscope.limits.progress_sampled): progress lines kept at line numbers
spread over the whole run, whatever their place among their process's lines.

The thinning keeps each process's first COLL_HEAD and last PROGRESS_TAIL progress lines, and the
progress lines at the sample's line numbers. The rule reads a line's number alone, so that the
byte pass on a block (numpy), polars on a chunk and the thinning keep the same lines wherever the
blocks were cut: the rule on ints, numpy arrays and polars columns is held to its definition here,
the sample to its bound, a file read with the byte pass and without it to the same sample, and a
slowdown that began long before the last steps to LS105.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from logscope.analysis import analyze
from logscope.ingest import blocks as blocks_module
from logscope.ingest import compiled, discover, read_file, reading
from logscope.limits import COLL_HEAD, PROGRESS_SAMPLE, PROGRESS_TAIL, progress_sampled
from logscope.model import Event

# Megatron-LM's training_log line (megatron/training.py) behind torchrun's --tee prefix (each rank's
# at its own millisecond: lines of one width and one time read as a paste's hard-wrapped halves).
_MEGATRON = ("[default{r}]:2026-11-03 {hh:02d}:{mm:02d}:{ss:02d},{r:03d} - INFO - iteration {step:8d}/  1000000 | "
             "consumed samples: {samples:12d} | elapsed time per iteration (ms): {ms:.1f} | learning rate: "
             "1.500E-04 | global batch size:    64 | lm loss: {loss:.2E} | grad norm: 0.512 |")


def _numbers() -> list[int]:
    rng = random.Random(3)
    return [*range(0, 5000), *(rng.randrange(1, 1 << 40) for _ in range(5000)),
            *((1 << k) + d for k in range(8, 40) for d in (-1, 0, 1))]


def test_the_rule_reads_ints_numpy_arrays_and_polars_columns_alike() -> None:
    numbers = _numbers()
    expected = [progress_sampled(n) for n in numbers]
    # as its docstring says it: a multiple of the smallest power of two above (line - 1) // 128
    assert expected == [n >= 1 and n % (1 << ((n - 1) // PROGRESS_SAMPLE).bit_length()) == 0 for n in numbers]
    frame = pl.DataFrame({"line": numbers}, schema={"line": pl.Int64})
    assert frame.select(progress_sampled(pl.col("line"))).to_series().to_list() == expected
    # on a numpy array, as logscope.ingest.progress_prefilter asks it (rows of a block from first_line)
    assert progress_sampled(np.array(numbers, dtype=np.int64)).tolist() == expected


@pytest.mark.parametrize("lines", [PROGRESS_SAMPLE, 10_000, 620_000, 10_000_000])
def test_the_sample_is_bounded_and_reaches_the_end(lines: int) -> None:
    kept = np.flatnonzero([progress_sampled(n) for n in range(1, lines + 1)]) + 1
    doublings = max(0, math.ceil(math.log2(lines / PROGRESS_SAMPLE)))
    assert len(kept) <= PROGRESS_SAMPLE + PROGRESS_SAMPLE // 2 * doublings
    # the last half of the lines holds about PROGRESS_SAMPLE // 2 of them, evenly spread
    late = kept[kept > lines // 2]
    assert len(late) >= min(lines // 2, PROGRESS_SAMPLE // 2) - 1
    if len(late) > 2:
        gaps = np.diff(late)
        assert gaps.max() <= 2 * gaps.min()


def _progress_log(path: Path, steps: int, ranks: int, slow_from: int | None = None) -> Path:
    """A Megatron log of ``steps`` steps of ``ranks`` ranks, a step 1.0 s (1.5 s from ``slow_from``
    on, the trainer's own figure with 1% jitter), every line timed."""
    rng = random.Random(11)
    lines = []
    seconds = 0.0
    for step in range(1, steps + 1):
        slow = slow_from is not None and step >= slow_from
        ms = (1500.0 if slow else 1000.0) * (1 + rng.uniform(-0.01, 0.01))
        seconds += ms / 1000
        whole = int(seconds)
        when = {"hh": 10 + whole // 3600, "mm": whole // 60 % 60, "ss": whole % 60}
        lines += [_MEGATRON.format(r=r, step=step, samples=64 * step, ms=ms, loss=2.5 - step / 10000, **when)
                  for r in range(ranks)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _progress_lines(path: Path, monkeypatch: pytest.MonkeyPatch, prefiltered: bool) -> list[int]:
    """The line numbers of the progress events of ``path`` read in 1 MB blocks, with the byte pass
    or without it."""
    with monkeypatch.context() as patch:
        patch.setattr(blocks_module, "CHUNK_BYTES", 1024 * 1024)
        if not prefiltered:
            patch.setattr(reading, "reduce_progress", lambda *_, **__: None)
        read = [read_file(source) for source in discover([path])[0]]
    events = pl.concat([r.events for r in read if hasattr(r, "events")])
    return sorted(events.filter(pl.col("event") == Event.PROGRESS.value)["line"].to_list())


@pytest.mark.skipif(not compiled.COMPILED, reason="the compiled scanner was not built here")
def test_a_file_keeps_its_sample_with_the_byte_pass_and_without(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ranks, steps = 8, 2400
    path = _progress_log(tmp_path / "train-1-gpu-node01.out", steps, ranks)
    with_pass = _progress_lines(path, monkeypatch, prefiltered=True)
    without = _progress_lines(path, monkeypatch, prefiltered=False)
    assert with_pass == without
    # each rank's first and last lines, and every line of the sample (all are progress lines)
    ends = {step * ranks + r + 1 for r in range(ranks)
            for step in (*range(COLL_HEAD), *range(steps - PROGRESS_TAIL, steps))}
    sample = {n for n in range(1, steps * ranks + 1) if progress_sampled(n)}
    assert set(with_pass) == ends | sample
    assert len(with_pass) < steps * ranks // 4


def test_a_slowdown_long_before_the_last_steps_is_found(tmp_path: Path) -> None:
    # The last PROGRESS_TAIL steps of every rank are all slow: only the sample of the run before
    # them shows when it slowed down.
    steps = 4 * PROGRESS_TAIL
    job = tmp_path / "job"
    job.mkdir()
    _progress_log(job / "train-1-gpu-node01.out", steps, ranks=4, slow_from=steps // 4)
    found = [f for f in analyze([job]).findings if f.code == "LS105"]
    assert len(found) == 1
    assert "1.5" in found[0].title
    # (LS105 names the step after the last one logged at the old pace: the sample's lines there
    # are two steps apart)
    step = int(found[0].title.split("from step ")[1].split()[0])
    assert abs(step - steps // 4) <= 2
