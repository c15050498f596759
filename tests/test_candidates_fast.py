"""The per-line steps before classification, made cheaper, give what their plain form gives.

* the lines that only quote (under a traceback's frame line, inside torchrun's reprinted traceback)
  are the ones the whole-frame expression finds, with and without a file column;
* times parsed once per distinct text, and a body's only where a form starts it, are the times of
  every line;
* a progress line under a launcher prefix that holds another pattern's trigger (``[default0]:``
  holds torchrun's failure index ``]:``) is set aside when no other pattern's regex matches it,
  and kept when one does.
"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from logscope.ingest import discover
from logscope.ingest.line_frames import lines_frame
from logscope.parsers import lines as engine
from logscope.parsers import prefixes
from logscope.parsers.prefixes import split_prefix_of_files, timeless
from logscope.parsers.progress_aside import progress_surplus
from logscope.parsers.timestamps import leading_time
from logscope.stacking import positions, stacked

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
REAL_LOGS = Path(__file__).resolve().parents[2] / "shared" / "real_logs"


def _quoted_plainly(by: str | None) -> pl.Expr:
    """The rule of lines._without_quoted as one expression over every row (its form before it was
    narrowed to the rows near frame lines)."""
    frame_line = pl.col("raw").str.contains(engine._FRAME_LINE)
    writer = pl.col("who").fill_null("").str.replace_all(r"\s", "")
    prefix = pl.col("prefix").fill_null("")
    text = pl.col("body").str.replace(engine._LOGGER_HEAD, "")
    indent = (prefix.str.len_chars() - prefix.str.strip_chars_end().str.len_chars()
              + text.str.len_chars() - text.str.strip_chars_start().str.len_chars())
    under_frame = (frame_line.shift(1).fill_null(False) & (writer == writer.shift(1)) & ~frame_line
                   & (indent > indent.shift(1)))
    reprint: pl.Expr = (pl.when(pl.col("raw").str.contains(engine._REPRINT_START)).then(True)
                        .when(pl.col("body").str.contains(engine._REPORT_END)).then(False))
    if by is not None:
        under_frame, reprint = under_frame.over(by), reprint.over(by)
    inside_reprint = reprint.forward_fill().fill_null(False) & ~pl.col("raw").str.contains(engine._REPRINT_START)
    return under_frame | inside_reprint


def _split(frame: pl.DataFrame, by: str | None = None) -> pl.DataFrame:
    split = split_prefix_of_files(frame.with_row_index("idx"), "raw", by)
    return split.with_columns(timeless(pl.col("prefix")).alias("who"))


def _traceback_log(seed: int) -> str:
    """Tracebacks (indented source lines, one under another writer, one not indented deeper),
    torchrun's reprint of one, and lines of neither, under a few prefixes."""
    rng = random.Random(seed)
    out = []
    for n in range(400):
        prefix = rng.choice(["[default0]:", "[default1]:", "0: ", "", "[rank3]: "])
        out.append(rng.choice([
            f'{prefix}  File "/opt/train.py", line {n}, in main',
            f"{prefix}    raise RendezvousClosedError()",
            f"{prefix}raise RendezvousClosedError()",
            f"{prefix}  traceback : Traceback (most recent call last):",
            f"{prefix}{'=' * 40}",
            f"{prefix}{'-' * 30}",
            f"{prefix}iteration {n}/ 100 | lm loss: 2.5",
            f"{prefix}I1105 14:02:13.934000 1234 train.py:12]     x = y",
            f"{prefix}NCCL WARN Call to connect returned Connection refused",
            f"{prefix}{1712345678 + n}.5 a body that starts with epoch seconds",
            f"{prefix}2026-11-03 14:{n % 60:02d}:09,532 - INFO - a body that starts with its time",
            "",
        ]))
    return "\n".join(out) + "\n"


def _frames() -> list[pl.DataFrame]:
    texts = [_traceback_log(seed) for seed in range(6)]
    folders = [SAMPLES / "crash-cascade", SAMPLES / "oom"]
    if REAL_LOGS.is_dir():
        folders += sorted(p for p in REAL_LOGS.iterdir() if p.is_dir())[:60]
    for folder in folders:
        for source in discover([folder])[0]:
            texts.append(Path(source.path).read_bytes()[:2_000_000].decode("utf-8", "replace"))
    return [lines_frame(text.encode(), 0) for text in texts]


@pytest.mark.parametrize("by_file", [False, True])
def test_lines_that_only_quote_are_those_the_whole_frame_expression_finds(by_file: bool) -> None:
    frames = _frames()
    assert len(frames) > 6
    groups = [frames[n:n + 5] for n in range(0, len(frames), 5)] if by_file else [[f] for f in frames]
    quoted = 0
    for group in groups:
        by = "_file" if by_file else None
        frame = stacked(group, {"_file": positions(len(group))}) if by_file else group[0]
        split = _split(frame, by)
        fast = engine._without_quoted(split, by)
        plain = split.filter(~_quoted_plainly(by))
        # An empty line (null) the plain expression may drop too: it holds no time and no trigger.
        assert fast.filter(pl.col("raw").is_not_null()).equals(plain.filter(pl.col("raw").is_not_null()))
        quoted += split.height - fast.height
    assert quoted > 50  # the rule acted


def test_times_parsed_once_per_text_are_every_lines_times() -> None:
    frames = _frames()
    for frame in frames:
        split = _split(frame)
        fast = engine._leading_times(split, 2026)
        # The plain way: every line's own texts parsed (see _leading_times' docstring).
        bodies = split.select(leading_time(pl.col("body").fill_null(""), 2026)).to_series()
        assert engine._body_times(split["body"], 2026).equals(bodies, check_names=False)
        prefixes = split.select(leading_time(pl.col("prefix").fill_null(""), 2026)).to_series()
        # Two columns' texts parsed once together: each column gets its own texts' times.
        once = engine._each_parsed_once([split["prefix"], split["body"]], 2026)
        assert once[0].equals(prefixes, check_names=False) and once[1].equals(bodies, check_names=False)
        assert fast.len() == split.height
    assert sum(engine._body_times(_split(f)["body"], 2026).null_count() < f.height for f in frames) >= 6


def _candidates(lines: list[str]) -> pl.DataFrame:
    # numbered far into a file (from line 2^20 + 1), where the file's progress sample
    # (limits.progress_sampled: one line in 16,384 there) holds none of them
    frame = lines_frame(("\n".join(lines) + "\n").encode(), 1 << 20)
    candidates, _, _ = engine._candidates(frame, 2026, None)
    return candidates


def test_progress_lines_under_a_prefix_holding_another_trigger_are_set_aside() -> None:
    lines = [f"[default{n % 2}]:iteration {n:8d}/  1000000 | lm loss: 2.51E+00 |" for n in range(200)]
    candidates = _candidates(lines)
    assert "]:" in candidates["kw"][0].to_list()  # torchrun's failure index trigger, held by the prefix
    surplus = progress_surplus(candidates, 2, 10)
    assert surplus is not None and surplus.len() == 200 - 2 * (2 + 10)


def test_a_line_another_pattern_matches_is_never_set_aside() -> None:
    lines = []
    for n in range(300):
        lines.append(f"[default0]:iteration {n:8d}/  1000000 | lm loss: 2.51E+00 |")
        if n % 10 == 5:  # a progress regex matches it too, but NCCL's WARN comes first in the table
            lines.append(f"[default0]:iteration {n:8d}/  1000000 | NCCL WARN Call to connect returned refused")
    candidates = _candidates(lines)
    surplus = progress_surplus(candidates, 2, 10)
    assert surplus is not None
    aside = candidates[surplus]["raw"]
    assert aside.len() > 200
    assert not aside.str.contains("NCCL WARN").any()


@pytest.mark.parametrize("files", [1, 3, 12])
def test_heads_a_tool_put_on_every_line_come_off_as_each_rows_own_regex_takes_them(
        files: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # grep -r's file names: one head a file, each its own regex. Taken off with one pass per
    # distinct head (a constant regex) or, beyond DISTINCT_HEADS_MAX, with each row's own.
    names = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta", "zeta", "iota", "eta", "mu"]
    rows = [(k, f"{names[k]}.log:[default{n % 4}]:2026-11-03 14:00:{n % 60:02d},532 - INFO - step {n} loss 2.5")
            for k in range(files) for n in range(40)]
    frame = pl.DataFrame({"_file": [k for k, _ in rows], "raw": [raw for _, raw in rows]},
                         schema={"_file": pl.UInt32, "raw": pl.String})
    one_pass_a_head = _split(frame, "_file")
    monkeypatch.setattr(prefixes, "DISTINCT_HEADS_MAX", 0)
    regex_a_row = _split(frame, "_file")
    assert one_pass_a_head.equals(regex_a_row)
    assert one_pass_a_head["prefix"].str.starts_with("[default").all()  # the launcher's tag read behind the head
