"""Batch scans: job grouping, table contents, cache, shards and merge, the sbatch array script."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from logscope import scan as scan_module
from logscope.cli import main
from logscope.errors import UsageError
from logscope.parsers.filenames import DEFAULT_PATTERNS
from logscope.scan import (
    SCAN_SCHEMA,
    JobFiles,
    _batches,
    analyse_batch,
    analyse_one,
    find_jobs,
    merge_tables,
    parse_shard,
    read_table,
    sbatch_script,
    scan,
    shard_of,
    summarise,
    write_table,
)

GOLDENS = Path(__file__).parent / "goldens"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """Two jobs in one folder (per-node files sharing a job id), one job folder without ids."""
    root = tmp_path / "logs"
    shutil.copytree(GOLDENS / "LS301-crash-two-nodes" / "logs", root / "week1")
    shutil.copytree(GOLDENS / "LS301-ok-time-limit-sigterm" / "logs", root / "week1", dirs_exist_ok=True)
    (root / "loose").mkdir()
    (root / "loose" / "main_log.txt").write_text("srun: error: Node failure on gpu07\n")
    (root / "loose" / "notes.md").write_text("not a log\n")
    return root


def test_jobs_are_grouped_by_job_id_and_folder(archive: Path) -> None:
    jobs = find_jobs([archive])
    keys = sorted((j.job_id or "", len(j.files), j.location.name) for j in jobs)
    assert keys == [("", 1, "loose"), ("5001", 2, "week1"), ("5002", 2, "week1")]


def test_scan_table_names_each_jobs_verdict(archive: Path) -> None:
    result = scan([archive], workers=1)
    table = result.table
    assert table.schema == pl.Schema(SCAN_SCHEMA)
    rows = {r["job_id"]: r for r in table.to_dicts()}
    assert rows["5001"]["category"] == "crash"
    assert (rows["5001"]["root_host"], rows["5001"]["root_rank"]) == ("node02", 3)
    assert rows["5001"]["root_evidence"].endswith("train-5001-node02.out:8")
    assert rows["5002"]["category"] == "scheduler"
    assert rows[None]["category"] == "hardware" and rows[None]["root_host"] == "gpu07"
    assert all(r["lines_read"] > 0 for r in rows.values())


def test_parallel_and_serial_scans_agree(archive: Path) -> None:
    serial = scan([archive], workers=1).table
    parallel = scan([archive], workers=2).table
    assert serial.equals(parallel)


@pytest.mark.parametrize("fails", ["pool", "second worker"])
def test_a_scan_whose_workers_cannot_start_analyses_here_and_says_so(
        archive: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fails: str) -> None:
    # No /dev/shm for the pool's queues (a container), or no process left to start after the first.
    import multiprocessing.context

    serial = scan([archive], workers=1).table
    if fails == "pool":
        def no_pool(count: int) -> None:
            raise OSError(38, "Function not implemented")

        monkeypatch.setattr(scan_module, "new_pool", no_pool)
    else:
        started, starts = multiprocessing.context.SpawnProcess.start, []

        def second_fails(self: multiprocessing.context.SpawnProcess) -> None:
            starts.append(self)
            if len(starts) % 2 == 0:  # each scan's second worker
                raise OSError(11, "Resource temporarily unavailable")
            started(self)

        monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", second_fails)
    result = scan([archive], workers=2)
    assert result.table.equals(serial)
    assert len(result.messages) == 1 and "worker processes could not start" in result.messages[0]
    assert main(["scan", str(archive), "-j", "2"]) == 0
    err = capsys.readouterr().err
    assert "Warning: worker processes could not start" in err and "Traceback" not in err


def test_cache_rereads_only_changed_jobs(archive: Path, tmp_path: Path) -> None:
    cache = tmp_path / "out" / "scan.cache.json"
    first = scan([archive], workers=1, cache_path=cache)
    assert (first.analysed, first.cached) == (3, 0)
    again = scan([archive], workers=1, cache_path=cache)
    assert (again.analysed, again.cached) == (0, 3)
    assert again.table.equals(first.table)
    log = archive / "week1" / "train-5002-node02.out"
    log.write_text(log.read_text() + "[default1]:ValueError: appended later\n")
    third = scan([archive], workers=1, cache_path=cache)
    assert (third.analysed, third.cached) == (1, 2)
    assert not any(p.name.endswith(".json") for p in archive.rglob("*") if p.name != "notes.md")


def test_a_damaged_cache_costs_only_a_rescan(archive: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c.json"
    cache.write_text("{not json")
    assert scan([archive], workers=1, cache_path=cache).analysed == 3
    assert json.loads(cache.read_text())["version"] == 2


def test_shards_partition_the_jobs(archive: Path) -> None:
    everything = {j.key for j in find_jobs([archive])}
    parts = [{r["job_key"] for r in scan([archive], workers=1, shard=(k, 3)).table.to_dicts()} for k in range(3)]
    assert set().union(*parts) == everything
    assert sum(len(p) for p in parts) == len(everything)
    assert all(0 <= shard_of(k, 3) < 3 for k in everything)


@pytest.mark.parametrize("text", ["3/2", "x/4", "1/0", "-1/3"])
def test_bad_shard_specs(text: str) -> None:
    with pytest.raises(UsageError):
        parse_shard(text)


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_tables_round_trip_and_merge(archive: Path, tmp_path: Path, suffix: str) -> None:
    table = scan([archive], workers=1).table
    a, b = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    write_table(table.head(2), a)
    write_table(table.tail(2), b)  # one job in both shards
    assert read_table(a).equals(table.head(2))
    merged = merge_tables([a, b])
    assert merged.height == 3 and set(merged["job_key"]) == set(table["job_key"])


def _row(key: str, hosts: list[str], category: str | None = None, root: str | None = None) -> dict[str, object]:
    return dict.fromkeys(SCAN_SCHEMA) | {"job_key": key, "node_list": ",".join(hosts), "category": category or
                                         "healthy", "root_host": root}


def test_summary_per_host_and_hardware_suspects_by_their_share_of_the_jobs() -> None:
    # 20 hosts, 100 jobs of 4 hosts each: every host runs 20. gpu13 is at the root of 5 hardware
    # failures, five other hosts of one each; gpu02 of 3 crashes (the job's fault, not the host's).
    hosts = [f"gpu{n:02d}" for n in range(20)]
    rows = []
    for j in range(100):
        rows.append(_row(str(j), [hosts[(j + k * 5) % 20] for k in range(4)]))
    for root in ["gpu13"] * 5 + ["gpu01", "gpu03", "gpu05", "gpu07", "gpu09"]:
        job = next(r for r in rows if root in str(r["node_list"]) and r["root_host"] is None)
        job.update(category="hardware", root_host=root)
    for job in [r for r in rows if "gpu02" in str(r["node_list"]) and r["root_host"] is None][:3]:
        job.update(category="crash", root_host="gpu02")
    summary = summarise(pl.DataFrame(rows, schema=SCAN_SCHEMA))
    by_host = {h["root_host"]: h for h in summary["hosts"]}
    assert by_host["gpu13"]["jobs_run"] == 20 and by_host["gpu13"]["jobs"] == 5 and by_host["gpu13"]["rate"] == 0.25
    assert by_host["gpu13"]["by_category"] == {"hardware": 5}
    assert [h for h, row in by_host.items() if row["suspect"]] == ["gpu13"]
    assert by_host["gpu02"]["jobs"] == 3 and not by_host["gpu02"]["suspect"]  # three roots are not enough alone


def test_a_host_running_most_jobs_is_not_a_suspect_for_its_share_of_the_roots() -> None:
    # gpu00 runs every job; 6 hardware roots, 3 of them on gpu00: about its share.
    rows = [_row(str(j), ["gpu00", f"gpu{1 + j % 9:02d}"]) for j in range(60)]
    for j, root in enumerate(["gpu00"] * 3 + ["gpu01", "gpu02", "gpu03"]):
        rows[j * 9 + (root != "gpu00")].update(category="hardware", root_host=root)
    summary = summarise(pl.DataFrame(rows, schema=SCAN_SCHEMA))
    assert not any(h["suspect"] for h in summary["hosts"])


def test_sbatch_array_script() -> None:
    text = sbatch_script([Path("/logs/a b")], 8, "/out/scan", 4)
    assert "#SBATCH --array=0-7" in text and "#SBATCH --cpus-per-task=4" in text
    assert "'/logs/a b'" in text and '--shard "$shard/8"' in text
    assert "logscope merge /out/scan-*.parquet -o /out/scan.parquet" in text


def test_scan_and_merge_cli(archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "res" / "jobs.parquet"
    assert main(["scan", str(archive), "-o", str(out), "-j", "1", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["jobs"] == 3 and data["analysed"] == 3
    assert out.exists() and (tmp_path / "res" / "jobs.parquet.cache.json").exists()
    assert main(["scan", str(archive), "-o", str(out), "-j", "1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["cached"] == 3
    assert main(["merge", str(out), "-o", str(tmp_path / "all.csv")]) == 0
    assert (tmp_path / "all.csv").exists()
    assert main(["scan", str(archive), "-o", str(archive / "inside.parquet")]) == 2
    assert "inside the log folder" in capsys.readouterr().err
    assert main(["scan", str(archive), "--since", "yesterday"]) == 2


# --- issue 13: the job's span, last step and secondary findings; the table to standard output --

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"


def test_the_table_holds_the_jobs_span_last_step_and_secondary_findings(capsys: pytest.CaptureFixture[str],
                                                                         tmp_path: Path) -> None:
    job = SAMPLES / "crash-cascade"
    assert main(["analyze", str(job), "--format", "json"]) == 1
    analysis = json.loads(capsys.readouterr().out)
    row = scan([job], workers=1).table.row(0, named=True)
    starts = [n["first_event"] for n in analysis["nodes"] if n["first_event"]]
    ends = [n["last_event"] for n in analysis["nodes"] if n["last_event"]]
    assert row["job_start"].isoformat() == min(starts) and row["job_end"].isoformat() == max(ends)
    assert row["duration_s"] == (row["job_end"] - row["job_start"]).total_seconds() > 0
    assert row["last_step"] == max(n["last_step"] for n in analysis["nodes"] if n["last_step"] is not None)
    others = [f["code"] for f in analysis["findings"] if f["code"] != analysis["verdict"]["finding"]]
    assert row["secondary_findings"] == (",".join(dict.fromkeys(others)) or None)


@pytest.mark.parametrize("how", [["--format", "parquet"], ["--format", "csv"], ["--format", "jsonl"],
                                 ["--table-format", "jsonl"], []])
def test_the_table_to_standard_output(capfdbinary: pytest.CaptureFixture[bytes], tmp_path: Path,
                                      how: list[str]) -> None:
    import io

    assert main(["scan", str(SAMPLES / "crash-cascade"), str(SAMPLES / "oom"), "-j", "1", "-o", "-", *how]) == 0
    out, err = capfdbinary.readouterr()
    kind = how[1] if how else "csv"
    table = (pl.read_parquet(io.BytesIO(out)) if kind == "parquet" else
             pl.read_csv(io.BytesIO(out), schema=SCAN_SCHEMA) if kind == "csv" else
             pl.read_ndjson(io.BytesIO(out), schema=SCAN_SCHEMA))
    assert table.height == 2 and set(table["finding"]) == {"LS301", "LS501"}
    assert b"analysed 2" in err  # the summary goes to standard error
    assert not (SAMPLES / "crash-cascade" / "-").exists()


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_merge_reads_a_table_of_an_older_version(tmp_path: Path, suffix: str) -> None:
    old = tmp_path / f"old{suffix}"
    pl.DataFrame({name: [None] for name in SCAN_SCHEMA if name not in ("job_start", "job_end", "duration_s",
                                                                      "last_step", "secondary_findings")},
                 schema={k: v for k, v in SCAN_SCHEMA.items()
                         if k not in ("job_start", "job_end", "duration_s", "last_step", "secondary_findings")}
                 ).with_columns(pl.lit("a::1").alias("job_key")).pipe(
        lambda frame: frame.write_parquet(old) if suffix == ".parquet" else
        frame.write_csv(old) if suffix == ".csv" else frame.write_ndjson(old))
    merged = merge_tables([old])
    assert merged.columns == list(SCAN_SCHEMA) and merged["last_step"].to_list() == [None]


def _mixed_jobs(root: Path) -> list[JobFiles]:
    """The shipped sample jobs, a job logscope cannot read and one with no line of a job's log."""
    for sample in sorted(p for p in (GOLDENS.parent.parent / "sample_logs").iterdir() if p.is_dir()):
        shutil.copytree(sample, root / sample.name)
    (root / "binary").mkdir()
    (root / "binary" / "train-7001-node1.out").write_bytes(bytes(range(256)) * 64)
    (root / "readme").mkdir()
    (root / "readme" / "train-7002-node1.out").write_text("just some words\n")
    return find_jobs([root])


def test_jobs_analysed_together_give_the_rows_each_gives_alone(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = _mixed_jobs(tmp_path)
    assert len(jobs) > 10
    with monkeypatch.context() as patch:  # read together, not job by job
        patch.setattr(scan_module, "analyse_one", lambda *args: pytest.fail("a job was analysed alone"))
        together = analyse_batch(jobs, DEFAULT_PATTERNS)
    alone = [analyse_one(job, DEFAULT_PATTERNS) for job in jobs]
    assert together == alone
    assert {r["category"] for r in together} >= {"crash", "unreadable", "healthy"}


def test_scan_works_out_no_hints_and_its_rows_are_those_of_the_whole_analysis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The table has no column for the "next time" hints: scan leaves them out (~2 ms a job), and
    # every row is what the analysis with its hints gives.
    from logscope import analysis
    from logscope.errors import LogscopeError

    jobs = _mixed_jobs(tmp_path)
    whole: list[analysis.Analysis | Exception] = []
    for job in jobs:
        try:
            whole.append(analysis.analyze(list(job.files)))
        except LogscopeError as error:
            whole.append(error)
    assert any(isinstance(result, analysis.Analysis) and result.hints for result in whole)
    asked: list[bool] = []
    works_out = analysis.missing_evidence_hints
    monkeypatch.setattr(analysis, "missing_evidence_hints",
                        lambda *args: asked.append(True) or works_out(*args))  # type: ignore[func-returns-value]
    rows = [scan_module._row(job, result) for job, result in zip(jobs, whole, strict=True)]
    assert analyse_batch(jobs, DEFAULT_PATTERNS) == rows
    assert [analyse_one(job, DEFAULT_PATTERNS) for job in jobs[:2]] == rows[:2]
    assert not asked


def test_a_batch_that_cannot_be_read_together_is_analysed_job_by_job(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope import analysis

    jobs = _mixed_jobs(tmp_path)[:4]
    alone = [analyse_one(job, DEFAULT_PATTERNS) for job in jobs]

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in reading jobs together")

    monkeypatch.setattr(analysis, "analyze_jobs", broken)
    assert analyse_batch(jobs, DEFAULT_PATTERNS) == alone


def test_small_jobs_are_batched_and_big_ones_run_alone(tmp_path: Path) -> None:
    jobs = _mixed_jobs(tmp_path)
    sizes = [sum(job.sizes) for job in jobs]
    batches = _batches(jobs, range(len(jobs)), 1)
    assert sorted(i for batch in batches for i in batch) == list(range(len(jobs)))
    assert max(len(batch) for batch in batches) > 1
    with pytest.MonkeyPatch.context() as patch:  # every job big: each alone
        patch.setattr(scan_module, "SMALL_JOB_BYTES", min(sizes) - 1)
        assert _batches(jobs, range(len(jobs)), 1) == [[i] for i in range(len(jobs))]
    assert all(len(batch) == 1 for batch in _batches(jobs, range(len(jobs)), len(jobs)))  # a batch for each core
