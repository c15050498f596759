"""The rule that names the ranks behind their peers (logscope/detectors/behind.py), shared by LS104,
LS101's counter fallback and ``logscope watch``: what singles a rank out, and what does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from logscope.analysis import analyze
from logscope.detectors.behind import OP_COUNT, STEP, Mark, marks_of, ranks_behind, silent_ranks

GOLDENS = Path(__file__).parent / "goldens"


def mark(rank: int, value: int, *, file: str = "node.out", line: int | None = None, scope: str = "comm A",
         kind: str = OP_COUNT, after: float | None = None, seen: float | None = None) -> Mark:
    row: dict[str, Any] = {"file": file, "line": line if line is not None else 100 + value * 10 + rank,
                           "host": f"host{rank // 8}", "node": f"host{rank // 8}", "rank": rank, "text": "..."}
    return Mark(rank, kind, scope, (value,) if kind != STEP else (0, value), row, after, seen)


def test_the_one_rank_a_collective_behind_in_the_same_file_is_named() -> None:
    marks = [mark(r, 27) for r in range(16) if r != 13] + [mark(13, 26, line=5)]
    behind = ranks_behind(marks)
    assert behind is not None and behind.ranks == (13,)
    assert behind.first.host == "host1"
    assert "rank(s) 13 stopped at NCCL opCount 0x1a" in behind.reason


@pytest.mark.parametrize(("ranks", "low"), [(2, [0]), (4, [0, 1]), (16, [0, 1, 2, 3, 4])],
                         ids=["one of two", "half", "more than a quarter"])
def test_no_rank_is_singled_out_when_the_low_ones_are_not_few(ranks: int, low: list[int]) -> None:
    marks = [mark(r, 5 if r in low else 6, line=1 if r in low else 2 + r) for r in range(ranks)]
    assert ranks_behind(marks) is None


def test_a_file_cut_short_is_no_witness() -> None:
    """Rank 3's count is lower, but in its own file, and no look saw a peer's line after it."""
    marks = [mark(r, 9, file=f"rank{r}.log") for r in range(3)] + [mark(3, 8, file="rank3.log")]
    assert ranks_behind(marks) is None


def test_a_watch_that_saw_the_peers_later_is_a_witness() -> None:
    """Lines of different files are ordered by what a live watch saw: a peer's line not there yet
    when the behind rank's had been seen was written after it."""
    marks = [mark(r, 9, file=f"rank{r}.log", after=20.0, seen=25.0) for r in range(3)]
    marks.append(mark(3, 8, file="rank3.log", after=None, seen=10.0))
    behind = ranks_behind(marks)
    assert behind is not None and behind.ranks == (3,)
    # seen in the same look (not there at 5, there by 25): not ordered
    same_look = [*(mark(r, 9, file=f"rank{r}.log", after=5.0, seen=25.0) for r in range(3)),
                 mark(3, 8, file="rank3.log", after=5.0, seen=25.0)]
    assert ranks_behind(same_look) is None


def test_counters_are_compared_within_their_communicator_only() -> None:
    """Tensor-parallel groups run different numbers of collectives: each group agrees within itself,
    so no one is behind, though the highest counts differ between groups."""
    marks = [mark(r, 40 if r < 4 else 12, scope="comm TP0" if r < 4 else "comm TP1") for r in range(8)]
    assert ranks_behind(marks) is None
    marks[5] = mark(5, 11, scope="comm TP1", line=1)
    behind = ranks_behind(marks)
    assert behind is not None and behind.ranks == (5,)


def test_opcount_decides_before_steps() -> None:
    marks = [mark(r, 30) for r in range(4) if r != 2] + [mark(2, 29, line=1)]
    marks += [mark(r, 7 if r != 0 else 6, kind=STEP, scope="training steps", line=1 if r == 0 else 900)
              for r in range(4)]
    behind = ranks_behind(marks)
    assert behind is not None and behind.ranks == (2,)


def test_silent_while_peers_wait() -> None:
    last = {r: mark(r, 5, kind=STEP, scope="training steps") for r in range(4)}
    # ranks 0-2 wrote lines a look found only after the last progress had been seen (at 100); rank 3 did not
    assert silent_ranks({0: 130.0, 1: 130.0, 2: 125.0, 3: 90.0}, 100.0, last) is not None
    behind = silent_ranks({0: 130.0, 1: 130.0, 2: 125.0, 3: 90.0}, 100.0, last)
    assert behind is not None and behind.ranks == (3,)
    # everyone silent (the usual hang inside a collective): no one stands out
    assert silent_ranks({r: 90.0 for r in range(4)}, 100.0, last) is None
    # two of four silent: not few enough
    assert silent_ranks({0: 130.0, 1: 130.0, 2: 90.0, 3: 90.0}, 100.0, last) is None


def test_marks_of_reads_the_communicator_from_the_init_lines() -> None:
    analysis = analyze([GOLDENS / "LS104-quiet-rank-before-timeout" / "logs"])
    marks = marks_of(analysis.view.events)
    scopes = {m.scope for m in marks if m.kind == OP_COUNT}
    assert scopes == {"comm 0x15f5c7e4c444e4cc"}
    assert {m.rank for m in marks if m.kind == OP_COUNT} == set(range(16))
    behind = ranks_behind(marks)
    assert behind is not None and behind.ranks == (13,) and behind.first.host == "gpu-node02"


def test_analyze_names_the_rank_behind_where_it_said_incomplete() -> None:
    analysis = analyze([GOLDENS / "LS104-quiet-rank-before-timeout" / "logs"])
    assert analysis.verdict.finding == "LS104"
    root = analysis.verdict.root_cause
    assert root is not None and (root.rank, root.host, root.local_rank) == (13, "gpu-node02", 5)
    assert analysis.exit_code == 1


def test_when_the_peers_are_known_to_have_waited_a_whole_node_behind_is_named() -> None:
    """LS101: a collective timed out on the ranks ahead, so they waited; the two ranks of the node that
    stopped (one file, cut when the node died: no witness) are named, as they were before the rule was
    shared (tests/data/accounting/lab/node-lost)."""
    marks = [mark(r, 4, kind=STEP, scope="training steps", file="node01.out") for r in (0, 1)]
    marks += [mark(r, 3, kind=STEP, scope="training steps", file="node02.out") for r in (2, 3)]
    assert ranks_behind(marks) is None
    behind = ranks_behind(marks, peers_waited=True)
    assert behind is not None and behind.ranks == (2, 3)
    assert ranks_behind([mark(r, 4) for r in range(4)], peers_waited=True) is None  # all equal: no one
