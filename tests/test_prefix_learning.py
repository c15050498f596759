"""A file's wrapper heads and line-number heads are learned from its first lines
(logscope/parsers/prefixes.py), and remembered by those lines: a remembered answer is the answer,
and what is remembered stays small whatever is read."""

from __future__ import annotations

import polars as pl
from polars.testing import assert_frame_equal

from logscope.parsers import prefixes
from logscope.parsers.prefixes import split_prefix_learning, split_prefix_of_files


def _grep_n(lines: int, file: str = "train.out") -> list[str]:
    # `grep -n` over a torchrun log: a file name and a line number in front of each line
    return [f"{file}:{n}:[default{n % 8}]:iteration {n}/ 1000 | lm loss: 2.5E+00 |" for n in range(1, lines + 1)]


def test_heads_learned_again_from_the_same_lines_are_the_same() -> None:
    frame = pl.DataFrame({"raw": _grep_n(300)})
    prefixes._LEARNED.clear()
    first, learned = split_prefix_learning(frame)
    again, learned_again = split_prefix_learning(frame)  # from what was remembered
    prefixes._LEARNED.clear()
    fresh, learned_fresh = split_prefix_learning(frame)
    assert learned.rounds and learned == learned_again == learned_fresh
    assert_frame_equal(first, again)
    assert_frame_equal(first, fresh)
    assert first["body"][0] == "iteration 1/ 1000 | lm loss: 2.5E+00 |"


def test_many_files_read_together_are_not_remembered() -> None:
    # A scan frames the files of many jobs at once: each batch's lines are its own, never asked
    # again; remembering their samples would hold megabytes for nothing.
    files = [f"job{j}/train.out" for j in range(40)]
    frame = pl.DataFrame({"raw": [line for file in files for line in _grep_n(300, file)],
                          "file": [file for file in files for _ in range(300)]})
    prefixes._LEARNED.clear()
    split = split_prefix_of_files(frame, by="file")
    assert not prefixes._LEARNED
    assert split.filter(pl.col("file") == files[-1])["body"][0] == "iteration 1/ 1000 | lm loss: 2.5E+00 |"
