"""SLURM's record and the logs on one clock: a record hours behind or ahead of the logs (SLURM in local
time, the logs in UTC) is moved onto the logs' clock, and the logs win where they say more, whatever
the clocks: a CUDA OOM they show stays the verdict."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from accounting_support import job_folder, utc  # noqa: F401 - the utc fixture

from logscope.accounting.clock import clock_shift
from logscope.accounting.record import AccountingRecord, StepRecord
from logscope.cli import main

# The oom sample's job: its logs run from 16:41:07 to 16:43:57 (UTC), rank 5's CUDA OOM at 16:43.
START, END, STEP_END = "2026-11-03T16:41:05", "2026-11-03T16:44:00", "2026-11-03T16:43:59"


def sacct_text(shift: timedelta) -> str:
    def at(text: str) -> str:
        return (datetime.fromisoformat(text) + shift).isoformat()

    return "\n".join([
        "JobID|JobName|State|ExitCode|Reason|NodeList|Start|End|MaxRSS|MaxRSSNode|User|WorkDir",
        f"4242005|train|FAILED|1:0|NonZeroExitCode|gpu-node[01-02]|{at(START)}|{at(END)}|||alice|/lustre/alice/llm",
        f"4242005.batch|batch|FAILED|1:0||gpu-node01|{at(START)}|{at(END)}|10512K|gpu-node01||",
        f"4242005.0|torchrun|FAILED|1:0||gpu-node[01-02]|{at(START)}|{at(STEP_END)}|1017502364K|gpu-node02||",
    ]) + "\n"


def analysed(tmp_path: Path, capsys: pytest.CaptureFixture[str], shift: timedelta) -> dict[str, object]:
    folder = job_folder(tmp_path / "job", "oom")
    (folder / "sacct.txt").write_text(sacct_text(shift))
    code, out = main(["analyze", str(folder), "--format", "json"]), capsys.readouterr().out
    assert code == 1
    data: dict[str, object] = json.loads(out)
    return data


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("hours", [-5, -3.5, 5, 11])
def test_a_record_on_another_clock_is_moved_onto_the_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          hours: float) -> None:
    data = analysed(tmp_path, capsys, timedelta(hours=hours))
    verdict = data["verdict"]
    assert isinstance(verdict, dict) and verdict["finding"] == "LS501", verdict  # was LS305 "no log line says why"
    accounting = data["accounting"]
    assert isinstance(accounting, dict) and accounting["start"] == START
    minutes = round(abs(hours) * 60)
    assert any(f"is {minutes // 60}:{minutes % 60:02d} {'behind' if hours < 0 else 'ahead of'} the logs' clock" in w
               for w in data["warnings"]), data["warnings"]  # type: ignore[attr-defined]


@pytest.mark.usefixtures("utc")
def test_a_record_on_the_logs_clock_is_left_as_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = analysed(tmp_path, capsys, timedelta(0))
    assert data["verdict"]["finding"] == "LS501"  # type: ignore[index]
    assert data["accounting"]["start"] == START  # type: ignore[index]
    assert not any("clock" in w for w in data["warnings"])  # type: ignore[attr-defined]


@pytest.mark.usefixtures("utc")
def test_the_logs_win_whatever_the_clocks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 30 hours behind: no time zone is that far, the record is left on its clock; the OOM the
    # logs show still explains the FAILED it recorded
    data = analysed(tmp_path, capsys, timedelta(hours=-30))
    assert data["verdict"]["finding"] == "LS501"  # type: ignore[index]
    assert not any("clock" in w for w in data["warnings"])  # type: ignore[attr-defined]
    codes = {f["code"]: f["role"] for f in data["findings"]}  # type: ignore[attr-defined]
    assert codes["LS305"] == "consequence"


@pytest.mark.usefixtures("utc")
def test_a_failed_record_no_log_explains_is_still_the_root(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # the healthy sample's logs cut before their clean end (09:12:53 on), on a record 5 hours behind
    # that says the step FAILED: no log line says why, the record stays the root on the logs' clock
    folder = job_folder(tmp_path / "job", "healthy")
    for log in folder.glob("*.out"):
        log.write_text("".join(log.read_text().splitlines(keepends=True)[:150]))
    text = sacct_text(timedelta(hours=-12, minutes=-28)).replace("4242005", "4242001")
    (folder / "sacct.txt").write_text(text)
    code, out = main(["analyze", str(folder), "--format", "json"]), capsys.readouterr().out
    data = json.loads(out)
    assert code == 1 and data["verdict"]["finding"] == "LS305", data["verdict"]
    assert any("5:00 behind" in w for w in data["warnings"])


def record(start: str, end: str | None) -> AccountingRecord:
    return AccountingRecord(StepRecord("1", None, "FAILED", start=datetime.fromisoformat(start),
                                       end=datetime.fromisoformat(end) if end else None))


def test_clock_shift() -> None:
    first, last = datetime(2026, 1, 1, 16, 41), datetime(2026, 1, 1, 16, 44)
    assert clock_shift(record("2026-01-01T11:40:50", "2026-01-01T11:44:10"), first, last) == timedelta(hours=5)
    assert clock_shift(record("2026-01-01T22:10:55", None), first, last) == timedelta(hours=-5, minutes=-30)
    # within the slack: the same clock
    assert clock_shift(record("2026-01-01T16:43:00", "2026-01-01T16:43:30"), first, last) == timedelta(0)
    # logs longer than the job (an earlier run in the same file): no shift fits both ends
    assert clock_shift(record("2026-01-01T16:30:00", "2026-01-01T16:31:00"), datetime(2026, 1, 1, 10), last) \
        == timedelta(0)
    assert clock_shift(record("2026-01-01T16:41:00", None), None, None) == timedelta(0)
