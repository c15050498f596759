"""The verdict survives how a log was written or pasted (metamorphic tests).

Every real third-party log of ``../shared/real_logs`` and every sample job is analysed as it is and
after each harmless rewrite of :mod:`rewrites` (quoted, indented, coloured, CRLF, tagged by a
launcher or a log shipper, time-stamped by a logger, renamed): the verdict's category and its root
cause (host, rank, local rank) must be the same. Two parts of the root cause are not held where a
rewrite itself says something of them: a tag that states a rank or a local rank (``[1,0]<stderr>:``,
``[default3]:``) may give the verdict one, and a rename drops a host the original knew only from
its file's name (not one its lines name). A case the rewrites still change is listed in
:data:`KNOWN_MISSES` with the reason; a listed case that starts passing fails (strict xfail) until
it is taken off.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from rewrites import REWRITES, Rewrite

from logscope.analysis import analyze
from logscope.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
REAL_LOGS = ROOT.parent / "shared" / "real_logs"
SAMPLES = ROOT / "sample_logs"
NOT_LOGS = {"SOURCE.md", "expected.json", "README.md"}

# (case, rewrite) -> why the verdict still changes. Only shrinks. Empty since hard-wrapped pastes
# are joined behind the heads a tool put on each physical line (parsers.lines._joined_behind_wrappers):
# its last 11 entries were cases 33 and 159 under grep-n, grep-rn, docker-json, html-escaped,
# kubectl-prefix, journald and nbsp-indent.
KNOWN_MISSES: dict[tuple[str, str], str] = {}


def _cases() -> list[tuple[str, Path]]:
    cases = [(f"sample:{folder.name}", folder) for folder in sorted(SAMPLES.iterdir()) if folder.is_dir()]
    if REAL_LOGS.is_dir():
        cases += [(folder.name, folder) for folder in sorted(REAL_LOGS.iterdir()) if folder.is_dir()]
    return cases


CASES = _cases()


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name not in NOT_LOGS}


def _verdict(paths: list[Path]) -> tuple[Any, ...]:
    try:
        analysis = analyze(paths)
    except InputError as error:
        return ("refused", str(error).split(":")[-1])
    root = analysis.verdict.root_cause
    return (analysis.verdict.category.value,
            root.host if root else None, root.rank if root else None, root.local_rank if root else None)


@cache
def _original(folder: Path) -> tuple[Any, ...]:
    return _verdict(sorted(p for p in folder.iterdir() if p.is_file() and p.name not in NOT_LOGS))


def _differences(original: tuple[Any, ...], rewritten: tuple[Any, ...], rewrite: Rewrite,
                 files: dict[str, bytes]) -> list[str]:
    if original[0] == "refused" or rewritten[0] == "refused":
        return [] if original == rewritten else [f"{original} became {rewritten}"]
    found = []
    if original[0] != rewritten[0]:
        found.append(f"category {original[0]} became {rewritten[0]}")
    for index, part in ((1, "host"), (2, "rank"), (3, "local_rank")):
        if part in rewrite.carries:
            continue
        if part == "host" and rewrite.renames and original[1] is not None and not any(
                str(original[1]).encode() in data for data in files.values()):
            continue  # known only from a file name the rename took away
        if original[index] != rewritten[index]:
            found.append(f"root {part} {original[index]!r} became {rewritten[index]!r}")
    return found


def _params() -> list[Any]:
    return [pytest.param(name, folder, rewrite, id=f"{name}-{rewrite.name}",
                         marks=[pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[(name, rewrite.name)])]
                         if (name, rewrite.name) in KNOWN_MISSES else [])
            for name, folder in CASES for rewrite in REWRITES]


@pytest.mark.parametrize(("name", "folder", "rewrite"), _params())
def test_a_harmless_rewrite_keeps_the_verdict(name: str, folder: Path, rewrite: Rewrite, tmp_path: Path) -> None:
    files = _files(folder)
    for new_name, data in rewrite.apply(files).items():
        (tmp_path / new_name).write_bytes(data)
    original = _original(folder)
    rewritten = _verdict(sorted(tmp_path.iterdir()))
    wrong = _differences(original, rewritten, rewrite, files)
    assert not wrong, f"{name} under {rewrite.name}: {'; '.join(wrong)}"


def test_known_misses_name_real_cases_and_rewrites() -> None:
    """Every known miss names a rewrite and a case there is (a real log's only where
    ``../shared/real_logs`` is: a fresh clone has the samples alone)."""
    names = {name for name, _ in CASES}
    rewrites = {rewrite.name for rewrite in REWRITES}
    assert all(rewrite in rewrites for _, rewrite in KNOWN_MISSES)
    assert all(case in names for case, _ in KNOWN_MISSES if case.startswith("sample:") or REAL_LOGS.is_dir())


def test_each_rewrite_changes_the_bytes_of_a_log() -> None:
    """A rewrite that left every file as it was would prove nothing (on a log that carries none of
    the tags a rewrite adds only where absent)."""
    files = {"train-7-node1.out":
             b"ValueError: bad batch \"<7>\"\nsrun: error: node1: task 0: Exited with exit code 1\n"}
    for rewrite in REWRITES:
        assert rewrite.apply(files) != files, rewrite.name
