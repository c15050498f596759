"""One atomic writer for every output, readable as a plain write would make it (issue 39).

Scan tables and caches, ``merge`` tables, reports, charts and ``--save`` bundles were created 0600
(``mkstemp``'s mode) by two of the three copies of the write-and-rename helper; now they all go
through :mod:`logscope.atomic`, which gives the file 0666 less the umask. ``merge -o -`` writes
the table to standard output, not to a file named ``-``.
"""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from logscope.analysis import analyze
from logscope.atomic import atomic_write, plain_file_mode, write_atomically
from logscope.cli import main
from logscope.report.postmortem import write_report
from logscope.scan import SCAN_SCHEMA, scan, write_table

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
PACKAGE = Path(__file__).resolve().parent.parent / "logscope"


@pytest.fixture(params=[0o022, 0o027, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_helper_gives_the_mode_of_a_plain_write(tmp_path: Path, umask: int) -> None:
    atomic_write(tmp_path / "a.txt", b"x")
    (tmp_path / "plain.txt").write_bytes(b"x")
    assert mode(tmp_path / "a.txt") == mode(tmp_path / "plain.txt") == 0o666 & ~umask == plain_file_mode()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "t.csv"
    target.write_text("before")

    def fail(temporary: Path) -> None:
        temporary.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_atomically(target, fail)
    assert target.read_text() == "before" and sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


def test_scan_table_cache_and_merge_output_are_readable_by_the_group(tmp_path: Path, umask: int,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    table, cache, merged = tmp_path / "jobs.parquet", tmp_path / "jobs.cache.json", tmp_path / "all.csv"
    assert main(["scan", str(SAMPLES / "oom"), "-j", "1", "-o", str(table), "--cache", str(cache)]) == 0
    assert main(["merge", str(table), "-o", str(merged)]) == 0
    for path in (table, cache, merged):
        assert mode(path) == 0o666 & ~umask, path.name
    write_table(scan([SAMPLES / "oom"], workers=1).table, tmp_path / "t.jsonl")
    assert mode(tmp_path / "t.jsonl") == 0o666 & ~umask
    capsys.readouterr()


def test_report_and_its_charts_are_readable_by_the_group(tmp_path: Path, umask: int) -> None:
    written = write_report(analyze([SAMPLES / "oom"]), tmp_path / "report" / "postmortem.md")
    assert len(written) > 1
    for path in written:
        assert mode(path) == 0o666 & ~umask, path.name


def test_merge_to_standard_output_writes_no_file_named_dash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    shard = tmp_path / "shard.parquet"
    write_table(scan([SAMPLES / "oom"], workers=1).table, shard)
    monkeypatch.chdir(tmp_path)
    capfdbinary.readouterr()
    assert main(["merge", str(shard), "-o", "-"]) == 0
    out, err = capfdbinary.readouterr()
    assert not (tmp_path / "-").exists()
    table = pl.read_csv(io.BytesIO(out), schema=SCAN_SCHEMA)
    assert table.height == 1 and table["finding"].to_list() == ["LS501"]
    assert b"1 job(s)" in err  # the summary goes to standard error


def test_there_is_one_atomic_writer() -> None:
    """Only logscope/atomic.py creates temporary files for outputs (a second copy forgot the umask)."""
    makers = re.compile(r"\bmkstemp\(|NamedTemporaryFile\(|\.fchmod\(")
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if makers.search(p.read_text()))
    assert users == ["atomic.py"]
