"""The two engines that run the line patterns (logscope.parsers.classify) agree.

Python's ``re`` runs a pattern on few lines of plain ASCII, polars (Rust's ``regex``) on the others:
for every pattern, every plain line of the shipped samples, of the real-log corpus and of the
catalogue's examples that holds its trigger gets the same match and the same groups from both; and
a job's events, or those of lines beyond ASCII, are the same whichever engine runs the patterns.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from logscope.ingest import FileRead, discover, read_file
from logscope.knowledge import RECOGNISERS
from logscope.knowledge.catalogue import CATALOGUE
from logscope.parsers import classify
from logscope.parsers import lines as engine
from logscope.parsers.classify import _compiled, _extract
from logscope.parsers.prefixes import split_prefix
from logscope.parsers.regex_ascii import plain_text

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
REAL_LOGS = ROOT.parent / "shared" / "real_logs"
# Lines where the two engines' classes part (digits, word characters and spaces of other scripts, a
# combining mark, the controls Python counts as spaces): they are never given to Python's re.
ODD_LINES = ["٣: ValueError: x", "rank ٣ NCCL INFO comm 0x1 rank ٣ nranks 2", "Ｅrror: wide", "é\u0301Error: mark",
             "srun: error: node\u00a01: task 0: Exited with exit code 1", "iteration\u2003 5/ 10 | loss: 1.0",
             "KeyboardInterrupt\u000b", "RuntimeError: tab\tand\u0085next", "RuntimeError: x\x1c",
             "RuntimeError: x\x1f ",
             "[PG 0 Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=٣, OpType=X"]


def corpus_lines() -> list[str]:
    paths = [p for p in SAMPLES.rglob("*") if p.is_file() and p.suffix not in (".md", ".json")]
    if REAL_LOGS.is_dir():
        paths += [p for p in REAL_LOGS.rglob("*") if p.is_file() and p.name not in ("SOURCE.md", "expected.json")]
    lines = {line for p in paths for line in p.read_text(errors="replace").splitlines()}
    lines.update(m.example for m in CATALOGUE)
    lines.update(ODD_LINES)
    raw = pl.DataFrame({"raw": sorted(lines)}, schema={"raw": pl.String})
    bodies = split_prefix(raw)["body"]  # the line without launcher prefixes, as lines read alone
    return sorted(lines | set(bodies.to_list()))


def test_python_and_polars_give_every_pattern_the_same_groups_on_plain_lines() -> None:
    lines = pl.DataFrame({"body": [line for line in corpus_lines() if plain_text(line)]})
    tried = 0
    for pattern in RECOGNISERS:
        assert pattern.match is not None
        rows = lines.filter(pl.col("body").str.contains_any(list(pattern.triggers)))
        if rows.height == 0:
            continue
        tried += 1
        polars_groups = rows.select(_extract(pattern.match))["g"].to_list()
        search = _compiled(pattern.match).search
        for body, in_polars in zip(rows["body"].to_list(), polars_groups, strict=True):
            found = search(body)
            in_python = None if found is None else {"__m": found.group(0), **found.groupdict()}
            if in_polars is not None and in_polars["__m"] is None:
                in_polars = None
            assert in_python == in_polars, (pattern.match, body)
    assert tried > len(RECOGNISERS) // 2  # the corpus reaches most recognisers


@pytest.mark.parametrize("job", ["crash-cascade", "hang-quiet-rank", "ib-network-error", "oom", "time-limit"])
def test_a_jobs_events_are_the_same_whichever_engine_runs_the_patterns(monkeypatch: pytest.MonkeyPatch,
                                                                       job: str) -> None:
    files, _ = discover([SAMPLES / job])
    monkeypatch.setattr(classify, "FEW_LINES", 10**9)  # every plain line in Python, whatever the count
    in_python = [read_file(f) for f in files]
    monkeypatch.setattr(classify, "FEW_LINES", 0)  # every pattern in polars
    in_polars = [read_file(f) for f in files]
    for a, b in zip(in_python, in_polars, strict=True):
        assert isinstance(a, FileRead) and isinstance(b, FileRead)
        assert a.lines_recognised == b.lines_recognised
        assert_frame_equal(a.events, b.events)


def test_lines_beyond_ascii_are_read_as_polars_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = pl.DataFrame({"line": range(1, len(ODD_LINES) + 1), "raw": ODD_LINES},
                         schema={"line": pl.Int64, "raw": pl.String})
    mixed = engine.parse_chunk(lines, 2026, None)
    monkeypatch.setattr(classify, "FEW_LINES", 0)
    in_polars = engine.parse_chunk(lines, 2026, None)
    assert mixed.lines_recognised == in_polars.lines_recognised > 0
    assert_frame_equal(mixed.events, in_polars.events)
    # the information separators are no spaces to polars: the message keeps them
    assert "x\x1c" in mixed.events["fields"].struct.field("message").to_list()


@pytest.mark.parametrize("few", [0, 256])
def test_patterns_run_alone_without_the_lines_claimed_before_them_give_the_same_events(
        monkeypatch: pytest.MonkeyPatch, few: int) -> None:
    # MANY_LINES 0: every pattern run by polars runs alone, on the lines no earlier pattern
    # claimed; 10**9: all side by side on every line holding their triggers (the reference).
    corpus = corpus_lines()
    lines = pl.DataFrame({"line": range(1, len(corpus) + 1), "raw": corpus},
                         schema={"line": pl.Int64, "raw": pl.String})
    monkeypatch.setattr(classify, "FEW_LINES", few)
    monkeypatch.setattr(classify, "MANY_LINES", 10**9)
    side_by_side = engine.parse_chunk(lines, 2026, None)
    monkeypatch.setattr(classify, "MANY_LINES", 0)
    alone = engine.parse_chunk(lines, 2026, None)
    assert alone.lines_recognised == side_by_side.lines_recognised > 1000
    assert_frame_equal(alone.events, side_by_side.events)
