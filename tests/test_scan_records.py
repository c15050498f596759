"""`logscope scan` reads SLURM's record saved beside a job's logs as `logscope analyze` does (README,
"Away from the cluster"): each job's row holds the verdict analyze gives that job's folder, a
record of other jobs is not this job's, and a saved file that is no record is refused as analyze
refuses it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from accounting_support import DATA, job_folder, utc  # noqa: F401 - the utc fixture
from test_accounting_verdicts import CASES

from logscope.cli import main
from logscope.scan import find_jobs, scan


def analyze_verdict(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str | None, str | None]:
    """(category, finding, root node) of ``logscope analyze FOLDER``."""
    main(["analyze", str(folder), "--format", "json"])
    verdict = json.loads(capsys.readouterr().out)["verdict"]
    return verdict["category"], verdict["finding"], (verdict["root_cause"] or {}).get("node")


def rows_by_folder(table: pl.DataFrame) -> dict[str, dict[str, object]]:
    return {Path(str(row["location"])).name: row for row in table.to_dicts()}


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("workers", [1, 2])
def test_each_job_gets_the_verdict_analyze_gives_its_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            workers: int) -> None:
    root = tmp_path / "archive"
    for case, (sample, drop, record, _, _) in CASES.items():
        job_folder(root / case, sample, drop=drop, record=record)
    rows = rows_by_folder(scan([root], workers=workers).table)
    assert set(rows) == set(CASES)
    for case, (_, _, _, expected, _) in CASES.items():
        row = rows[case]
        assert row["error"] is None, (case, row["error"])
        scanned = (row["category"], row["finding"], row["root_node"])
        assert scanned == expected == analyze_verdict(root / case, capsys), case


@pytest.mark.usefixtures("utc")
def test_a_record_of_other_jobs_is_not_this_jobs(tmp_path: Path) -> None:
    """One sacct listing beside the logs of several jobs: the job it lists gets its record, the
    others are analysed from their logs alone, without an error."""
    folder = tmp_path / "logs"
    job_folder(folder, "host-oom", drop=r"oom_kill|oom-kill|Killed process|Out Of Memory",
               record={"sacct.txt": "sacct-P-oom.txt"})
    job_folder(folder, "healthy")
    rows = {row["job_id"]: row for row in scan([folder], workers=1).table.to_dicts()}
    assert len(rows) == 2
    oom = rows[next(i for i in rows if i != "4242001")]
    assert (oom["category"], oom["finding"], oom["root_node"]) == ("oom", "LS503", "gpu-node02")
    assert (rows["4242001"]["category"], rows["4242001"]["error"]) == ("healthy", None)


@pytest.mark.usefixtures("utc")
def test_a_saved_file_that_is_no_record_is_refused_as_analyze_refuses_it(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = job_folder(tmp_path / "logs" / "job", "healthy")
    (folder / "sacct.txt").write_text("not what sacct prints\n")
    assert main(["analyze", str(folder)]) == 2
    refusal = capsys.readouterr().err
    row = scan([tmp_path / "logs"], workers=1).table.row(0, named=True)
    assert row["category"] == "unreadable"
    assert "sacct.txt: named like a saved SLURM record" in str(row["error"])
    assert "sacct.txt: named like a saved SLURM record" in refusal


@pytest.mark.usefixtures("utc")
def test_a_record_saved_after_a_scan_makes_the_rescan_read_the_job_again(tmp_path: Path) -> None:
    folder = job_folder(tmp_path / "logs" / "job", "healthy",
                        drop=r"worker group successfully finished|WorkerState.SUCCEEDED|iteration +\d+/|train metrics")
    cache = tmp_path / "scan.cache.json"
    first = scan([tmp_path / "logs"], workers=1, cache_path=cache)
    assert first.table["category"].to_list() == ["incomplete"]
    (folder / "scontrol.json").write_text((DATA / "scontrol-24.11-completed.json").read_text())
    again = scan([tmp_path / "logs"], workers=1, cache_path=cache)
    assert (again.analysed, again.cached) == (1, 0)
    assert again.table["category"].to_list() == ["healthy"]
    assert scan([tmp_path / "logs"], workers=1, cache_path=cache).cached == 1


def test_records_are_those_directly_in_the_jobs_folder_and_never_its_logs(tmp_path: Path) -> None:
    folder = job_folder(tmp_path / "logs" / "job", "healthy", record={"sacct.txt": "sacct-P-oom.txt"})
    (folder / "sub").mkdir()
    (folder / "sub" / "scontrol.txt").write_text("JobId=1\n")
    (folder / "sacct-missing.json").symlink_to(folder / "nowhere.json")  # a broken link is nobody's record
    os.mkfifo(folder / "scontrol-pipe")  # nor a pipe: reading it would wait for a writer forever
    jobs = {job.location.name: job for job in find_jobs([tmp_path / "logs"])}
    assert [path.name for path, _, _ in jobs["job"].records] == ["sacct.txt"]
    assert all(not path.name.startswith("sacct") for path in jobs["job"].files)
    # A file given alone is read alone, as `logscope analyze FILE` reads it: no record beside it.
    alone = find_jobs([next(folder.glob("*.out"))])
    assert alone[0].records == ()
