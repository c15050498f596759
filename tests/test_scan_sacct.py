"""``logscope scan`` driven by SLURM's record (issue 39): ``--user/--since/--state/--array`` through
sacct, each job's logs found where its record says, its efficiency beside its verdict, ``--columns``;
and the scan's JSON on standard output.

The sacct outputs are the lab's real records (tests/data/accounting/lab: SLURM 22.05.8, ``--format=ALL``)
and, for what the lab cannot make (array tasks, GPUs, older ``ReqMem`` suffixes), lines written as
SchedMD/slurm src/sacct/print.c prints them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import pwd
import shutil
import sys
from datetime import datetime
from pathlib import Path

import pytest
from accounting_support import DATA, SAMPLES, utc  # noqa: F401 - the utc fixture

from logscope.accounting.efficiency import duration_s, efficiency_of, size_bytes
from logscope.accounting.listing import parse_listing, sbatch_outputs, selection, with_scripts
from logscope.accounting.sacct_parsable import parse_batch_script
from logscope.cli import main
from logscope.errors import UsageError
from logscope.scan import JobFiles
from logscope.scan_slurm import jobs_of, scan_listing, since_time

LAB = DATA / "lab"
LAB_WORKDIR = "/tmp/slurmlab-2wzyuwqj/jobs/"
ME = pwd.getpwuid(os.getuid()).pw_name


def lab_rows(scenario: str) -> dict[str, dict[str, str]]:
    header, *lines = (LAB / scenario / "sacct-parsable2-all.txt").read_text().splitlines()
    rows = [dict(zip(header.split("|"), line.split("|"), strict=True)) for line in lines if line]
    return {row["JobID"]: row for row in rows}


# --- efficiency ----------------------------------------------------------------------------------


def test_efficiency_of_the_labs_timed_out_job() -> None:
    rows = lab_rows("timelimit")
    got = efficiency_of(rows["4"], [rows["4.batch"], rows["4.0"]])
    # ElapsedRaw 69 s against a 1-minute limit; TotalCPU 00:14.093 on 2 CPUs
    assert (got.elapsed_s, got.time_limit_s, got.alloc_cpus) == (69, 60, 2)
    assert got.time_used == pytest.approx(69 / 60)
    assert got.cpu_efficiency == pytest.approx(14.093 / (69 * 2))
    # ReqMem 4000M (the job's mem TRES); step 0's tasks together peaked at mem=1699188K (TRESUsageInTot)
    assert got.mem_requested == 4000 << 20 and got.mem_peak == 1699188 << 10
    assert got.mem_used == pytest.approx((1699188 << 10) / (4000 << 20))
    assert (got.gpus, got.gpu_util, got.gpu_mem_peak) == (None, None, None)  # the lab has no GPU


def test_gpu_use_where_the_record_has_it() -> None:
    job = {"ElapsedRaw": "3600", "TimelimitRaw": "UNLIMITED", "AllocCPUS": "16", "TotalCPU": "8:00:00",
           "ReqMem": "64G", "AllocTRES": "billing=16,cpu=16,gres/gpu:a100=4,gres/gpu=4,mem=64G,node=1"}
    step = {"TRESUsageInTot": "cpu=08:00:00,gres/gpumem=40G,gres/gpuutil=300,mem=30G",
            "TRESUsageInAve": "cpu=02:00:00,gres/gpumem=10G,gres/gpuutil=75,mem=7680M",
            "TRESUsageInMax": "cpu=02:00:00,gres/gpumem=12G,gres/gpuutil=90,mem=8G"}
    got = efficiency_of(job, [step])
    assert (got.gpus, got.gpu_util, got.gpu_mem_peak) == (4, 0.75, 12 << 30)
    assert got.time_limit_s is None and got.time_used is None  # UNLIMITED: no limit to use up
    assert got.cpu_efficiency == pytest.approx(0.5) and got.mem_used == pytest.approx(30 / 64)
    # no GPU allocated: no GPU column, whatever a step says
    assert efficiency_of({**job, "AllocTRES": "cpu=16,mem=64G"}, [step]).gpu_util is None


def test_a_step_killed_before_its_first_memory_sample_has_no_peak() -> None:
    """jobacct_gather samples every JobAcctGatherFrequency seconds: a step cancelled sooner has empty
    MaxRSS and no mem in its TRES usage. The peak is unknown (None), never 0, and so is the share used."""
    job = {"ElapsedRaw": "7", "TimelimitRaw": "1", "AllocCPUS": "2", "TotalCPU": "00:01.500", "ReqMem": "4000M"}
    step = {"MaxRSS": "", "TRESUsageInTot": "", "TotalCPU": "00:01.500"}
    got = efficiency_of(job, [step, {"MaxRSS": "", "TRESUsageInTot": "cpu=00:00:01"}])
    assert (got.mem_requested, got.mem_peak, got.mem_used) == (4000 << 20, None, None)
    assert got.cpu_efficiency == pytest.approx(1.5 / 14)


@pytest.mark.parametrize(("req_mem", "expected"), [("4000Mn", 2 * 4000 << 20), ("2Gc", 8 * 2 << 30),
                                                   ("4000M", 4000 << 20), ("", None), ("0", None)])
def test_requested_memory_per_node_per_cpu_or_for_the_job(req_mem: str, expected: int | None) -> None:
    job = {"ReqMem": req_mem, "NNodes": "2", "AllocCPUS": "8"}
    assert efficiency_of(job).mem_requested == expected


def test_value_shapes() -> None:
    assert duration_s("00:14.093") == pytest.approx(14.093)
    assert duration_s("01:02:03") == 3723 and duration_s("2-00:00:01") == 172801
    assert duration_s("") is None and duration_s("Unknown") is None
    assert size_bytes("849594K") == 849594 * 1024 and size_bytes("12345") == 12345 and size_bytes("x") is None


# --- the listing ---------------------------------------------------------------------------------


ARRAY_LISTING = """\
JobID|JobName|State|ExitCode|NodeList|Start|End|User|WorkDir|ElapsedRaw|TimelimitRaw|AllocCPUS|TotalCPU|ReqMem
500_0|sweep|FAILED|1:0|node01|2026-12-01T10:00:00|2026-12-01T10:05:00|{user}|{work}|300|60|4|10:00.000|8G
500_0.batch|batch|FAILED|1:0|node01|2026-12-01T10:00:00|2026-12-01T10:05:00|||300||4|10:00.000|
500_1|sweep|COMPLETED|0:0|node02|2026-12-01T10:00:00|2026-12-01T10:20:00|{user}|{work}|1200|60|4|40:00.000|8G
500_1.batch|batch|COMPLETED|0:0|node02|2026-12-01T10:00:00|2026-12-01T10:20:00|||1200||4|40:00.000|
500_2|sweep|FAILED|1:0|node03|2026-12-01T10:00:00|2026-12-01T10:01:00|{user}|{work}|60|60|4|00:30.000|8G
500_[3-9]|sweep|PENDING|0:0|None assigned|Unknown|Unknown|{user}|{work}|0|60|0|00:00:00|8G
"""


def test_array_tasks_are_jobs_of_their_own_and_pending_ones_are_left_out() -> None:
    listing = parse_listing(ARRAY_LISTING.format(user=ME, work="/nowhere"), None, "sacct")
    assert [r.job_id for r in listing.records] == ["500_0", "500_1", "500_2"]
    assert [(r.array_job_id, r.array_task_id) for r in listing.records] == [("500", "0"), ("500", "1"), ("500", "2")]
    assert listing.not_started == 1
    assert listing.efficiency["500_1"].time_used == pytest.approx(20 / 60)
    assert listing.efficiency["500_0"].cpu_efficiency == pytest.approx(600 / (300 * 4))


def test_the_listing_is_completed_from_json_and_the_batch_scripts() -> None:
    listing = parse_listing((LAB / "timelimit" / "sacct-parsable2-all.txt").read_text(),
                            (LAB / "timelimit" / "sacct.json").read_text(), "sacct")
    (record,) = listing.records
    assert (record.job_id, record.job.state, record.work_dir) == ("4", "TIMEOUT", LAB_WORKDIR + "timelimit")
    assert record.stdout is None  # 22.05's --json has no stdout; scontrol has forgotten an old job
    with_scripts(listing, parse_batch_script((LAB / "timelimit" / "sacct-batch-script.txt").read_text()))
    assert listing.records[0].stdout == "%x-%j-%N.out" and listing.records[0].script is not None


def test_sbatch_outputs_are_read_from_the_scripts_options_only() -> None:
    script = ("#!/bin/bash\n#SBATCH -o logs/%x-%j.out\n# a comment\n#SBATCH --error=%j.err\necho hi\n"
              "#SBATCH --output=no\n")
    assert sbatch_outputs(script) == {"output": "logs/%x-%j.out", "error": "%j.err"}
    assert sbatch_outputs("#!/bin/bash\n#SBATCH --output %x.out --open-mode=append\n") == {"output": "%x.out"}


def test_selection_becomes_sacct_options() -> None:
    now = datetime(2026, 12, 6, 4, 30)
    chosen = selection(["alice,bob"], since_time("7d", now), ["failed", "TIMEOUT"], [], now=now)
    assert chosen.arguments() == ["--user=alice,bob", "--starttime=2026-11-29T04:30:00",
                                  "--endtime=2026-12-06T04:30:00", "--state=FAILED,TIMEOUT"]
    # sacct --state without a start time lists only jobs running now: from midnight, as sacct without --state
    assert "--starttime=2026-12-06T00:00:00" in selection([], None, ["FAILED"], now=now).arguments()
    assert selection(["all"], None, [], ["500"], now=now).arguments() == ["--allusers", "--jobs=500"]
    for bad in (lambda: selection(["a;rm"]), lambda: selection(states=["FAILED;x"]), lambda: selection(arrays=["x1"])):
        with pytest.raises(UsageError):
            bad()


def test_since_spans() -> None:
    now = datetime(2026, 12, 6, 12, 0)
    assert since_time("7d", now) == datetime(2026, 11, 29, 12, 0)
    assert since_time("12h", now) == datetime(2026, 12, 6, 0, 0)
    assert since_time("2w", now) == datetime(2026, 11, 22, 12, 0) and since_time("30m", now) == datetime(2026, 12, 6,
                                                                                                       11, 30)
    assert since_time("2026-11-01", now) is None and since_time("yesterday", now) is None


# --- scans of the listed jobs --------------------------------------------------------------------


def lab_copy(tmp_path: Path, scenario: str) -> Path:
    """The lab job's per-node logs in a working directory of the test's user."""
    work = tmp_path / "jobs" / scenario
    work.mkdir(parents=True)
    for log in (LAB / scenario).glob("*.out"):
        shutil.copy(log, work / log.name)
    return work


def as_mine(text: str, tmp_path: Path) -> str:
    """A lab record as if the test's user had run the job in tmp_path/jobs."""
    return (text.replace(LAB_WORKDIR, str(tmp_path / "jobs") + "/").replace("|root|", f"|{ME}|")
            .replace('"user": "root"', f'"user": "{ME}"'))


@pytest.mark.usefixtures("utc")
def test_scan_of_listed_jobs_finds_their_logs_and_puts_efficiency_beside_the_verdict(tmp_path: Path) -> None:
    for scenario in ("timelimit", "rank-exit"):
        lab_copy(tmp_path, scenario)
    parsable = "\n".join([as_mine((LAB / "timelimit" / "sacct-parsable2-all.txt").read_text(), tmp_path).rstrip(),
                          *as_mine((LAB / "rank-exit" / "sacct-parsable2-all.txt").read_text(),
                                   tmp_path).splitlines()[1:]])
    listing = parse_listing(parsable, None, "sacct")
    with_scripts(listing, {**parse_batch_script((LAB / "timelimit" / "sacct-batch-script.txt").read_text()),
                           **parse_batch_script((LAB / "rank-exit" / "sacct-batch-script.txt").read_text())})
    rows = {row["job_id"]: row for row in scan_listing(listing, workers=1).table.to_dicts()}
    assert set(rows) == {"1", "4"}
    timed_out, failed = rows["4"], rows["1"]
    assert (timed_out["files"], failed["files"]) == (2, 2)  # both nodes' files, from %x-%j-%N.out
    assert (timed_out["state"], failed["state"]) == ("TIMEOUT", "FAILED") and timed_out["user"] == ME
    assert timed_out["category"] == "scheduler"  # the record beside the logs: the job ran out of time
    assert timed_out["time_used"] == pytest.approx(69 / 60) and timed_out["cpu_efficiency"] == pytest.approx(
        14.093 / 138)
    assert failed["mem_used"] is not None and failed["error"] is None


def test_a_listed_job_without_logs_gets_a_row_saying_where_they_were_looked_for(tmp_path: Path) -> None:
    listing = parse_listing(ARRAY_LISTING.format(user=ME, work=tmp_path), None, "sacct")
    (tmp_path / "slurm-500_1.out").write_text((SAMPLES / "oom" / next(
        p.name for p in sorted((SAMPLES / "oom").glob("*.out")))).read_text())
    jobs, missing, messages = jobs_of(listing)
    assert [j.job_id for j in jobs] == ["500_1"] and jobs[0].files == (tmp_path / "slurm-500_1.out",)
    assert [row["job_id"] for row in missing] == ["500_0", "500_2"]
    assert all(row["category"] == "no-logs" and "slurm-500_0.out" in missing[0]["error"] for row in missing)
    assert messages == ["1 job(s) had not started: not in the table"]
    table = scan_listing(listing, workers=1).table
    assert table["job_id"].to_list() == ["500_0", "500_1", "500_2"]
    assert table["time_used"].to_list() == pytest.approx([300 / 3600, 1200 / 3600, 60 / 3600])  # of 60 minutes


def test_a_record_that_changed_makes_another_cache_signature(tmp_path: Path) -> None:
    import dataclasses

    listing = parse_listing(ARRAY_LISTING.format(user=ME, work=tmp_path), None, "sacct")
    record = listing.records[0]
    job = JobFiles("k", "500_0", tmp_path, (), (), (), record=record)
    ended = dataclasses.replace(record, job=dataclasses.replace(record.job, state="COMPLETED"))
    assert job.signature != dataclasses.replace(job, record=ended).signature


# --- the command line ----------------------------------------------------------------------------

FAKE_SACCT = '''#!{python}
"""A stand-in for SLURM's sacct answering a listing from the lab's records, as the real one prints."""
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_ARGS"], "a") as log:
    log.write(json.dumps(args) + "\\n")
data = os.environ["FAKE_DATA"]
work = os.environ["FAKE_WORK"]
user = os.environ["FAKE_USER"]
def mine(text):
    return (text.replace("/tmp/slurmlab-2wzyuwqj/jobs/", work + "/").replace("|root|", "|" + user + "|")
            .replace('"user": "root"', '"user": "' + user + '"'))
scenarios = ["timelimit", "rank-exit"]
if "--batch-script" in args:
    sys.stdout.write("".join(open(os.path.join(data, s, "sacct-batch-script.txt")).read() for s in scenarios))
elif "--json" in args:
    records = [json.loads(mine(open(os.path.join(data, s, "sacct.json")).read())) for s in scenarios]
    jobs = [job for record in records for job in record["jobs"]]
    sys.stdout.write(json.dumps({{"meta": {{}}, "errors": [], "jobs": jobs}}))
else:
    texts = [mine(open(os.path.join(data, s, "sacct-parsable2-all.txt")).read()).splitlines() for s in scenarios]
    sys.stdout.write("\\n".join([texts[0][0], *(line for t in texts for line in t[1:])]) + "\\n")
'''


@pytest.fixture
def fake_sacct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """sacct on PATH listing the lab's timelimit and rank-exit jobs, run by the test's user in
    tmp_path/jobs; returns the file each call's arguments are appended to (JSON, a line a call)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "sacct"
    script.write_text(FAKE_SACCT.format(python=sys.executable))
    script.chmod(0o755)
    for scenario in ("timelimit", "rank-exit"):
        lab_copy(tmp_path, scenario)
    calls = tmp_path / "sacct-calls.jsonl"
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_DATA", str(LAB))
    monkeypatch.setenv("FAKE_WORK", str(tmp_path / "jobs"))
    monkeypatch.setenv("FAKE_USER", ME)
    monkeypatch.setenv("FAKE_ARGS", str(calls))
    return calls


@pytest.mark.usefixtures("utc")
def test_scan_user_since_state_through_sacct(fake_sacct: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["scan", "--user", ME, "--since", "7d", "--state", "FAILED,TIMEOUT", "-j", "1", "-o", "-",
                 "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    jobs = {row["job_id"]: row for row in data["jobs"]}
    assert {k: (v["state"], v["files"]) for k, v in jobs.items()} == {"1": ("FAILED", 2), "4": ("TIMEOUT", 2)}
    assert jobs["4"]["category"] == "scheduler" and jobs["4"]["time_used"] == pytest.approx(1.15)
    calls = [json.loads(line) for line in fake_sacct.read_text().splitlines()]
    listing = calls[0]
    assert "--parsable2" in listing and f"--user={ME}" in listing and "--state=FAILED,TIMEOUT" in listing
    assert any(a.startswith("--starttime=") for a in listing)
    assert ["--batch-script", "--jobs=4,1"] in [c for c in calls if "--batch-script" in c] or \
        ["--batch-script", "--jobs=1,4"] in calls


@pytest.mark.usefixtures("utc")
def test_scan_of_the_record_prints_a_job_a_line_with_chosen_columns(fake_sacct: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "--array", "4", "-j", "1", "--columns", "job_id,state,time_used"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "job_id" in line)
    assert [cell.strip() for cell in header.strip("│┃ ").replace("┃", "│").split("│")] == ["job_id", "state", "time"]
    line = next(line for line in out.splitlines() if "TIMEOUT" in line)
    assert [cell.strip() for cell in line.strip("│ ").split("│")] == ["4", "TIMEOUT", "115%"]


def test_columns_choose_the_tables_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "jobs.csv"
    assert main(["scan", str(SAMPLES / "oom"), "-j", "1", "-o", str(out), "--columns", "job_id,category",
                 "--columns", "finding"]) == 0
    with out.open() as handle:
        assert next(csv.reader(handle)) == ["job_id", "category", "finding"]
    capsys.readouterr()
    assert main(["scan", str(SAMPLES / "oom"), "--columns", "job_id,verdict"]) == 2
    assert "unknown column 'verdict'" in capsys.readouterr().err


def test_folders_and_a_sacct_selection_are_not_mixed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(SAMPLES / "oom"), "--state", "FAILED"]) == 2
    assert "not both" in capsys.readouterr().err


def test_without_sacct_the_record_scan_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["scan", "--user", "alice"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: sacct is not on PATH") and err.count("\n") == 1


# --- issue 39: scan's JSON output ----------------------------------------------------------------


def test_json_to_standard_output_is_json(capfd: pytest.CaptureFixture[str]) -> None:
    """`scan -o - --format json` wrote CSV; it writes one JSON document: the summary and the jobs."""
    assert main(["scan", str(SAMPLES / "crash-cascade"), str(SAMPLES / "oom"), "-j", "1", "-o", "-",
                 "--format", "json"]) == 0
    out, _ = capfd.readouterr()
    data = json.loads(out)
    assert {row["finding"] for row in data["jobs"]} == {"LS301", "LS501"}
    assert data["summary"]["jobs"] == 2


def test_the_json_summary_counts_jobs_per_category_without_polars_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(SAMPLES / "oom"), "-j", "1", "--format", "json"]) == 0
    per_category = json.loads(capsys.readouterr().out)["summary"]["per_category"]
    assert per_category == [{"category": per_category[0]["category"], "jobs": 1}]


def test_the_table_on_standard_output_with_a_json_summary_keeps_them_apart(capfdbinary: pytest.CaptureFixture[bytes]
                                                                          ) -> None:
    assert main(["scan", str(SAMPLES / "oom"), "-j", "1", "-o", "-", "--table-format", "csv", "--format", "json"]) == 0
    out, err = capfdbinary.readouterr()
    assert next(csv.reader(io.StringIO(out.decode())))[0] == "job_key"
    assert json.loads(err)["summary"]["jobs"] == 1


@pytest.mark.usefixtures("utc")
def test_a_json_scan_of_the_record_without_a_table_holds_the_jobs(fake_sacct: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Without -o no table holds the rows: the JSON document does, as the terminal shows a job a line."""
    assert main(["scan", "--user", ME, "-j", "1", "--format", "json", "--columns", "job_id,state,mem_used"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sorted((row["job_id"], row["state"]) for row in data["jobs"]) == [("1", "FAILED"), ("4", "TIMEOUT")]
    assert all(set(row) == {"job_id", "state", "mem_used"} for row in data["jobs"])


def test_a_job_cancelled_before_it_started_is_no_job_to_scan() -> None:
    text = ("JobID|JobName|State|ExitCode|NodeList|Start|End|User|WorkDir\n"
            "77|train|CANCELLED by 1000|0:0|None assigned|2026-12-01T10:00:00|2026-12-01T10:00:00|alice|/w\n")
    listing = parse_listing(text, None, "sacct")
    assert (listing.records, listing.not_started) == ([], 1)
