"""The compiled scanner's entry points check their arguments: what does not fit (a forged line count,
negative counts, a merged group id out of range) is a Python exception, never memory corruption.

Log bytes cannot reach these arguments (the byte pass computes them), but one caller's mistake must
not write past a buffer: ``reduce`` with a forged line count wrote past its buffer (a heap overflow
under ASan, ``double free`` in the installed build) and UBSan found two signed overflows (the kept
lines' buffer size, a group's count less ``tail``). The calls run in a process of their own: one that
corrupts memory may crash it, which fails the test instead of the test run. ``.ci/run`` runs this
file against a build with ``-fsanitize=address,undefined`` too (tools/sanitized_scanner.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from array import array
from pathlib import Path

import pytest

from logscope.ingest.compiled import COMPILED

pytestmark = pytest.mark.skipif(not COMPILED, reason="the compiled scanner was not built here (no C compiler)")

FORGED = {
    # reduce(block, lines, pairs, merged, timed, head, tail, first_line[, with_lines])
    "a line count near 2**62": "c.reduce(text, 2**62, pairs, merged, timed, 1, 1, 0)",
    "a line count whose buffer size wraps": "c.reduce(text, 838488366986797801, pairs, merged, timed, 1, 1, 0)",
    "the largest line count": "c.reduce(text, MAX, pairs, merged, timed, 1, 1, 0, True)",
    "more lines than the block has bytes": "c.reduce(text, len(text) + 2, pairs, merged, timed, 1, 1, 0)",
    "a negative line count": "c.reduce(text, -1, pairs, merged, timed, 1, 1, 0)",
    "the lowest tail": "c.reduce(text, lines, pairs, merged, timed, 1, -MAX - 1, 0)",
    "a negative tail": "c.reduce(text, lines, pairs, merged, timed, 1, -5, 0)",
    "a negative head": "c.reduce(text, lines, pairs, merged, timed, -1, 1, 0)",
    "a negative first line": "c.reduce(text, lines, pairs, merged, timed, 1, 1, -1)",
    "a first line whose numbers overflow": "c.reduce(text, lines, pairs, merged, timed, 1, 1, MAX)",
    "a merged id past the groups": "c.reduce(text, lines, pairs, ints([2**31 - 1]), timed, 1, 1, 0)",
    "a merged id below -1": "c.reduce(text, lines, pairs, ints([-7]), timed, 1, 1, 0)",
    "a negative max_line": "c.scan(text, False, -1)",
    # wordings(text[, needles, max_line, max_lines]), aside(hashes, flags, own, head, tail),
    # lines_of(block, rows, keep, first_line)
    "more needles than a line's 32 bits": "c.wordings(text, [b'ab'] * 33)",
    "an empty needle": "c.wordings(text, [b''])",
    "a needle of one byte": "c.wordings(text, [b'a'])",
    "a negative max_lines": "c.wordings(text, (), 0, -1)",
    "a wordings max_line below zero": "c.wordings(text, (), -1)",
    "fewer hashes than flags": "c.aside(hashes[:-8], flags, b'', 1, 1)",
    "own rows past the lines": "c.aside(hashes, flags, uints([6]), 1, 1)",
    "own rows not ascending": "c.aside(hashes, flags, uints([2, 1]), 1, 1)",
    "own rows cut short": "c.aside(hashes, flags, b'\\0\\0', 1, 1)",
    "a negative aside head": "c.aside(hashes, flags, b'', -1, 1)",
    "rows past the block": "c.lines_of(text, uints([6]), True, 0)",
    "rows past the block, joined": "c.lines_of(text, uints([2, 6]), False, 0)",
    "rows past an empty block": "c.lines_of(b'', uints([1]), False, 0)",
    "rows not ascending": "c.lines_of(text, uints([3, 3]), False, 0)",
    "a lines_of first line below zero": "c.lines_of(text, b'', True, -2)",
    "a lines_of first line whose numbers overflow": "c.lines_of(text, uints([0]), True, MAX)",
    "rows past the starts": "c.lines_of(text, uints([6]), False, 0, c.shapes(text)[2])",
    "rows not ascending with starts": "c.lines_of(text, uints([3, 3]), False, 0, c.shapes(text)[2])",
    "starts past the block": "c.lines_of(text, uints([0]), False, 0, array.array('Q', [0, 2**40]).tobytes())",
    "starts that go back": "c.lines_of(text, uints([0]), False, 0, array.array('Q', [9, 3]).tobytes())",
    "starts cut short": "c.lines_of(text, uints([0]), False, 0, b'\\0\\0\\0')",
    # shapes(text[, max_lines])
    "a negative shapes max_lines": "c.shapes(text, -1)",
}

DRIVER = textwrap.dedent("""
    import array, sys
    from logscope.ingest import _collscan as c
    MAX = 2**63 - 1
    def ints(values):
        return array.array("i", values).tobytes()
    coll = b"h:1:1 [0] NCCL INFO AllReduce: opCount 1 comm 0x1"
    text = b"\\n".join([coll] * 6)
    lines, pairs, _ = c.scan(text, False, 4096)
    merged, timed = ints([0]), b"\\0"
    def uints(values):
        return array.array("I", values).tobytes()
    hashes, flags, _, _ = c.wordings(text)
    for name, call in CALLS.items():
        try:
            eval(call)
            outcome = "returned"
        except Exception as error:
            outcome = type(error).__name__
        print(f"{name}: {outcome}", flush=True)
""")


def test_forged_arguments_are_refused_with_a_python_exception(tmp_path: Path) -> None:
    # (run elsewhere than the checkout: -c puts its folder first on the path, and the source tree
    # holds no build of the scanner where the package was installed from it)
    done = subprocess.run([sys.executable, "-c", f"CALLS = {FORGED!r}\n" + DRIVER], capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path)
    said = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert done.returncode == 0, f"the process died ({done.returncode}) after {said}: {done.stderr[-2000:]}"
    assert said == dict.fromkeys(FORGED, "ValueError"), said


def test_arguments_that_fit_are_still_taken() -> None:
    from logscope.ingest import _collscan as c

    coll = b"h:1:1 [0] NCCL INFO AllReduce: opCount 1 comm 0x1"
    text = b"\n".join([coll] * 6)
    lines, pairs, _ = c.scan(text, False, 4096)
    merged, timed = (0).to_bytes(4, sys.byteorder), b"\0"
    kept, kept_count, set_aside = c.reduce(text, lines, pairs, merged, timed, 1, 1, 2**40)
    assert (kept_count, set_aside) == (2, 4)
    assert kept.startswith(f"{2**40 + 1}\x1f".encode()) and kept.count(b"\n") == 1
    assert c.reduce(text, lines, pairs, merged, timed, 0, 0, 0, True)[1:3] == (0, 6)
    assert c.scan(text, False, 0)[1] == b""  # no line is that short: none is a COLL line
    hashes, flags, held, end = c.wordings(text, [b"NCCL", b"opCount"], 10, 4)
    assert (len(flags), set(array("I", held)), set(flags), end) == (4, {3}, {4}, 4 * (len(coll) + 1))
    unhashed = c.wordings(text, [b"NCCL", b"opCount"], 10, 4, False)  # what the lines hold, no wording
    assert (unhashed[0], unhashed[1:]) == (bytes(32), (flags, held, end))
    shapes, end, starts = c.shapes(text, 4)
    assert (len(shapes), end) == (32, 4 * (len(coll) + 1)) and len(set(array("Q", shapes))) == 1
    assert list(array("Q", starts)) == [n * (len(coll) + 1) for n in range(4)]
    assert (len(c.shapes(b"")[0]), c.shapes(b"")[1]) == (8, 0)  # one empty line, as wordings counts it
    hashes, flags, _, _ = c.wordings(text)
    assert c.aside(hashes, flags, b"", 1, 2**63 - 1) == (b"", b"", b"")  # no group has that many after it
    rows, counted, counts = c.aside(hashes, flags, b"", 1, 1)  # the 4 between the first and the last
    assert (len(rows), counted, counts) == (16, (0).to_bytes(4, sys.byteorder), (4).to_bytes(4, sys.byteorder))
    assert c.lines_of(text, rows, False, 0) == (b"\n".join([coll] * 4), 4)
    assert c.lines_of(text, rows, True, 9) == (b"10\x1f" + coll + b"\n15\x1f" + coll + b"\n", 2)
    assert c.lines_of(text, rows, True, -1) == (coll + b"\n" + coll + b"\n", 2)  # a text numbered already
    starts = c.shapes(text)[2]  # the lines found from where they start: the same lines
    assert c.lines_of(text, rows, False, 0, starts) == c.lines_of(text, rows, False, 0)
    assert c.lines_of(text, rows, True, 9, starts) == c.lines_of(text, rows, True, 9)  # (keep: starts unread)
    rows, counted, counts, groups = c.aside(hashes, flags, b"", 1, 1, True)
    # the groups kept: the first (its first line 0, 1 line, first kept, place 0 of 6) and the last
    records = [list(memoryview(groups).cast("I")[n:n + 6]) for n in range(0, len(groups) // 4, 8)]
    assert records == [[0, 1, 0, 0, 6, 0], [5, 1, 1, 5, 6, 0]]
    # Two wordings in turn: each group's flags carry its key's number from bit 4 on (0 for the
    # wording that came first, 1 for the other), for repeat_prefilter.decide_across.
    turns = b"\n".join([b"worker failed: connection reset", b"retrying the step"] * 4)
    hashes, flags, _, _ = c.wordings(turns)
    groups = c.aside(hashes, flags, b"", 1, 1, True)[3]
    records = [list(memoryview(groups).cast("I")[n:n + 6]) for n in range(0, len(groups) // 4, 8)]
    assert [(record[0], record[5] >> 4) for record in records] == [(0, 0), (1, 1), (6, 0), (7, 1)]


def test_aside_tells_many_keys_apart() -> None:
    # More wordings than aside's first table holds (it grows as keys come): three rounds of
    # 5,000 one-line groups, each of its own wording. With a head and a tail of one, the middle
    # round goes, each line counted against its wording's first; a kept group's flags carry its
    # key's number, the order its wording first came in.
    from logscope.ingest import _collscan as c

    keys = 5000
    hashes = array("Q", [0x9E3779B97F4A7C15 * (n + 1) % 2**64 for n in range(keys)] * 3).tobytes()
    flags = bytes(3 * keys)
    rows, counted, counts, groups = c.aside(hashes, flags, b"", 1, 1, True)
    assert list(array("I", rows)) == list(range(keys, 2 * keys))
    assert (list(array("I", counted)), set(array("I", counts))) == (list(range(keys)), {1})
    records = memoryview(groups).cast("I")
    assert [records[n + 5] >> 4 for n in range(0, len(records), 8)] == [*range(keys), *range(keys)]
