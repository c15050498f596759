"""``logscope diff`` and ``--against``: new templates ranked, configuration and performance drift,
exit codes, the outputs of one model, and ``--against auto`` from a scan table."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from reading_support import jobsim

from logscope.analysis import analyze
from logscope.cli import main
from logscope.diff import compare
from logscope.diff.config import command_options, script_settings
from logscope.diff.templates import mask

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def healthy() -> object:
    return analyze([SAMPLES / "healthy"])


# --- templates ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "template"), [
    ("gpu-node02:46578:46674 [2] NCCL INFO comm 0x551650cd1360 rank 10 nranks 16 cudaDev 2 busId 4c000",
     "<host>:<n>:<n> [<n>] NCCL INFO comm <hex> rank <n> nranks <n> cudaDev <n> busId <hex>"),
    ("ValueError: sample 18342057 in shard /lustre/data/shard-00417.bin has 2049 tokens",
     "ValueError: sample <n> in shard <path> has <n> tokens"),
    ("commId 0xd5fbd648b2b764b3 digest 3f2a9c1d7e5b", "commId <hex> digest <hex>"),
    # a rank's GPU on a channel line: its bus on one machine, its device on another
    ("NCCL INFO Channel 00 : 28[88000] -> 29[8b000] via P2P/IPC/read",
     "NCCL INFO Channel <n> : <n>[<gpu>] -> <n>[<gpu>] via P<n>P<path>"),
    ("socketProgress: Connection closed by remote peer 10.0.1.12<42192>",
     "socketProgress: Connection closed by remote peer <ip>"),
    ("2026-11-03 11:06:41,260 - INFO - iteration      500/    1000 | loss 2.1",
     "<time> - INFO - iteration <n...> | loss <n>"),
    ("I1103 11:06:48.627000 49063 torch/distributed/elastic/api.py:869] failed",
     "I<time> <n> torch<path>:<n>] failed"),
    ("terminate called after throwing an instance of 'c10::DistBackendError'",
     "terminate called after throwing an instance of 'c<n>::DistBackendError'"),
])
def test_a_template_masks_what_changes_from_run_to_run(text: str, template: str) -> None:
    got = pl.select(mask(pl.lit(text), ["gpu-node01", "gpu-node02"])).item()
    assert got == template


def test_the_root_failure_of_crash_cascade_is_the_first_new_template(healthy: object) -> None:
    comparison = compare(healthy, analyze([SAMPLES / "crash-cascade"]))  # type: ignore[arg-type]
    top = comparison.new_templates[:3]
    assert any("ValueError: sample" in t.example.text for t in top)
    first = comparison.new_templates[0]
    assert first.root and first.ranks == (11,) and first.hosts == ("gpu-node02",) and first.count == 1
    assert first.example.file.endswith("train-4242004-gpu-node02.out") and first.example.line == 243
    assert first.after_failure_s == 0.0
    # no line of the healthy run is new, and the cascade's consequences come after the root
    assert not comparison.config_drift and not comparison.performance_changes
    assert all(t.after_failure_s is None or t.after_failure_s > -5 for t in comparison.new_templates)
    # a count is of lines: the frame `File ".../packed_dataset.py", line 97, in _collate` is one line
    # (its line number is a field of the event, not how many lines it stands for)
    collate = next(t for t in comparison.new_templates if t.template.endswith("in _collate"))
    assert collate.count == 1 and collate.example.text.endswith('line 97, in _collate')


def test_a_catalogue_message_is_its_id(healthy: object) -> None:
    comparison = compare(healthy, analyze([SAMPLES / "crash-cascade"]))  # type: ignore[arg-type]
    known = [t for t in comparison.new_templates if t.catalogue_id]
    assert known and all(t.key == f"catalogue:{t.catalogue_id}" for t in known)


def test_nccl_version_skew_names_the_version_drift(healthy: object) -> None:
    comparison = compare(healthy, analyze([SAMPLES / "nccl-version-skew"]))  # type: ignore[arg-type]
    drift = {(d.setting, d.node): (d.good, d.bad) for d in comparison.config_drift}
    assert drift[("NCCL version", "gpu-node02")] == ("2.21.5+cuda12.4", "2.18.6+cuda12.2")
    assert drift[("CUDA driver", "gpu-node02")] == ("12040", "12020")
    assert comparison.config_drift[0].setting == "NCCL version"
    assert "Mismatched NCCL version" in comparison.new_templates[0].example.text


def test_a_run_against_itself_shows_nothing(healthy: object) -> None:
    comparison = compare(healthy, healthy)  # type: ignore[arg-type]
    assert not comparison.changed and comparison.exit_code == 0
    assert not comparison.new_templates and not comparison.volume_changes and not comparison.config_drift
    assert comparison.performance and not comparison.performance_changes


def test_a_warning_printed_far_more_often_is_listed_apart(tmp_path: Path) -> None:
    """Volume: the same warning, 2 times in GOOD and 40 times in BAD, is not new but louder."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for folder, repeats in ((good, 2), (bad, 40)):
        shutil.copytree(SAMPLES / "healthy", folder)
        log = folder / "train-4242001-gpu-node01.out"
        warning = ("[default0]:gpu-node01:80191:80293 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got "
                   "async event : port error\n")
        lines = log.read_text().splitlines(keepends=True)
        log.write_text("".join(lines[:230] + [w.replace("port error", f"port error {i}")
                                              for i, w in enumerate([warning] * repeats)] + lines[230:]))
    comparison = compare(analyze([good]), analyze([bad]))
    louder = [v for v in comparison.volume_changes if "async event" in v.template]
    assert louder and louder[0].good_count == 2 and louder[0].bad_count == 40
    assert not any("async event" in t.template for t in comparison.new_templates)


# --- configuration --------------------------------------------------------------------------------


def test_command_options_read_a_launch_line() -> None:
    line = ("srun --wait=60 --kill-on-bad-exit=1 bash -c 'python -u -m torch.distributed.run --nproc_per_node 8 "
            "--rdzv_endpoint node01:29500 --standalone --max_restarts=0 train.py | tee log'")
    assert dict(command_options(line)) == {"--wait": "60", "--kill-on-bad-exit": "1", "--nproc_per_node": "8",
                                           "--rdzv_endpoint": "node01:29500", "--standalone": "true",
                                           "--max_restarts": "0"}


def test_a_batch_script_gives_its_sbatch_options_and_exports() -> None:
    script = ("#!/bin/bash\n#SBATCH --nodes=4  # four\n#SBATCH --time 02:00:00\n#SBATCH -p gpu\n#SBATCH -N2\n"
              "export NCCL_DEBUG=INFO\nsrun x\n")
    assert script_settings(script) == [("#SBATCH --nodes", "4"), ("#SBATCH --time", "02:00:00"), ("#SBATCH -p", "gpu"),
                                       ("#SBATCH -N", "2"), ("export NCCL_DEBUG", "INFO")]


def test_ib_devices_listed_in_another_order_are_no_drift(tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    shutil.copytree(SAMPLES / "healthy", good)
    shutil.copytree(SAMPLES / "healthy", bad)
    for log in bad.glob("*.out"):
        log.write_text(log.read_text().replace("[0]mlx5_0:1/IB [1]mlx5_1:1/IB", "[0]mlx5_1:1/IB [1]mlx5_0:1/IB"))
    assert not compare(analyze([good]), analyze([bad])).config_drift


def test_untimed_step_lines_give_no_time_to_first_step(tmp_path: Path) -> None:
    """A step line without its own time only lies between the timed lines around it."""
    from logscope.diff.performance import performance_of

    log = tmp_path / "train.log"
    steps = "".join(f" iteration {s}/100 | elapsed time per iteration (ms): 850.0 |\n" for s in range(10, 110, 10))
    log.write_text("2026-11-03 10:00:00,000 - INFO - starting\n" + steps + "2026-11-03 10:05:00,000 - INFO - done\n")
    figures = performance_of(analyze([log]))
    assert figures.time_to_first_step_s is None and figures.step_time_median_s == pytest.approx(0.85)


# --- the command ----------------------------------------------------------------------------------


def test_diff_exits_1_and_names_the_root(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, err = run(capsys, "diff", str(SAMPLES / "healthy"), str(SAMPLES / "crash-cascade"), "--color", "never")
    assert code == 1, err
    assert out.index("new templates") < out.index("configuration drift") < out.index("performance") \
        < out.index("fail-slow")
    assert "ValueError: sample <n> in shard <path>" in out and "the root failure's line" in out


def test_diff_of_a_copy_of_a_job_exits_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(SAMPLES / "healthy", copy)
    code, out, err = run(capsys, "diff", str(SAMPLES / "healthy"), str(copy), "--color", "never")
    assert code == 0, err
    assert "Nothing new in BAD" in out


def test_diff_json_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "diff", str(SAMPLES / "healthy"), str(SAMPLES / "nccl-version-skew"), "-f", "json")
    data = json.loads(out)
    assert code == 1
    assert data["schema"] == "logscope.diff/1" and data["changed"] is True
    assert {"new_templates", "config_drift", "performance", "fail_slow", "volume_changes"} <= set(data)
    assert data["bad"]["verdict"]["finding"] == "LS802" and data["good"]["verdict"]["category"] == "healthy"
    assert {"template", "severity", "count", "first_seen", "ranks", "hosts", "example", "catalogue_id"} \
        <= set(data["new_templates"][0])
    assert {"setting": "NCCL version", "group": "versions", "scope": "node", "node": "gpu-node02",
            "good": "2.21.5+cuda12.4", "bad": "2.18.6+cuda12.2"} in data["config_drift"]


def test_diff_of_a_missing_run_is_one_error_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "diff", str(SAMPLES / "healthy"), str(tmp_path / "nowhere"))
    assert code == 2 and err.startswith("Error:") and len(err.strip().splitlines()) == 1


def test_analyze_against_adds_the_comparison(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, _ = run(capsys, "analyze", str(SAMPLES / "crash-cascade"), "--against", str(SAMPLES / "healthy"),
                       "--format", "json")
    data = json.loads(out)
    assert code == 1  # analyze's own exit code: the verdict's
    assert data["verdict"]["finding"] == "LS301"
    assert data["comparison"]["new_templates"][0]["root"] is True
    code, out, _ = run(capsys, "analyze", str(SAMPLES / "crash-cascade"), "--against", str(SAMPLES / "healthy"),
                       "--color", "never")
    assert out.index("root cause") < out.index("What changed from GOOD to BAD")


def test_diff_starts_reading_good_before_the_cli_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope import command
    from logscope.ingest import workers

    asked: list[list[Path]] = []
    monkeypatch.setattr(workers, "start_early", lambda inputs, **_: asked.append(list(inputs)))
    command.start_readers(["diff", "--format", "json", "good/", "bad/"])
    command.start_readers(["analyze", "bad/", "--against", "good/", "--table", "t.parquet"])
    assert asked == [[Path("good/")], [Path("bad/")]]


def test_against_auto_needs_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", str(SAMPLES / "crash-cascade"), "--against", "auto")
    assert code == 2 and "--table" in err
    code, _, err = run(capsys, "analyze", str(SAMPLES / "crash-cascade"), "--table", "x.parquet")
    assert code == 2 and "--against auto" in err


def test_report_has_a_what_changed_section(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    code, _, err = run(capsys, "report", str(SAMPLES / "nccl-version-skew"), "--against", str(SAMPLES / "healthy"),
                       "-o", str(out))
    assert code == 0, err
    text = out.read_text()
    section = text.split("## What changed", 1)[1].split("\n## ", 1)[0]
    assert "Mismatched NCCL version" in section and "2.18.6+cuda12.2" in section
    assert "**Configuration drift.**" in section


def test_report_against_never_writes_into_good_s_logs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = tmp_path / "good"
    shutil.copytree(SAMPLES / "healthy", good)
    before = sorted(p.name for p in good.iterdir())
    code, _, err = run(capsys, "report", str(SAMPLES / "crash-cascade"), "--against", str(good),
                       "-o", str(good / "r.md"))
    assert code == 2 and "log folder" in err
    assert sorted(p.name for p in good.iterdir()) == before


def test_against_auto_takes_the_last_healthy_run_of_the_job_from_a_scan_table(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    sim = jobsim()
    logs = tmp_path / "logs"
    runs = {"older": (5100001, "healthy", datetime(2026, 11, 1, 10)),
            "newer": (5100002, "healthy", datetime(2026, 11, 2, 10)),
            "crashed": (5100003, "crash-cascade", datetime(2026, 11, 2, 20)),
            "later": (5100004, "healthy", datetime(2026, 11, 4, 10))}  # after BAD: not its baseline
    for name, (job_id, scenario, start) in runs.items():
        sim.write_job(sim.JobSpec(scenario=scenario, job_id=job_id, start=start, steps=60, seed=job_id),
                      logs / name)
    other = sim.JobSpec(job_name="other", job_id=5100005, start=datetime(2026, 11, 2, 12), steps=60)
    sim.write_job(other, logs / "other")  # another job's name: not a baseline
    table = tmp_path / "jobs.parquet"
    assert run(capsys, "scan", str(logs), "-o", str(table))[0] == 0
    for given in (table, tmp_path / "jobs.parquet.cache.json"):
        assert given.exists()
        code, out, err = run(capsys, "analyze", str(logs / "crashed"), "--against", "auto", "--table", str(given),
                             "--format", "json")
        assert code == 1, err
        assert json.loads(out)["comparison"]["good"]["id"] == "5100002"
    code, _, err = run(capsys, "analyze", str(logs / "older"), "--against", "auto", "--table", str(table))
    assert code == 2 and "no healthy run of job 'train'" in err


def _with_record(folder: Path, work_dir: str, script: str) -> Path:
    shutil.copytree(SAMPLES / "healthy", folder)
    (folder / "sacct.txt").write_text(
        "JobID|JobName|State|ExitCode|Reason|NodeList|Start|End|MaxRSS|MaxRSSNode|User|WorkDir\n"
        f"4242001|train|COMPLETED|0:0|None|gpu-node[01-02]|2026-11-03T09:12:39|2026-11-03T09:16:21|||alice|{work_dir}\n"
        "4242001.0|torchrun|COMPLETED|0:0||gpu-node[01-02]|2026-11-03T09:12:41|2026-11-03T09:16:21||||\n")
    (folder / "batch-script.sh").write_text("Batch Script for 4242001\n" + "-" * 80 + "\n" + script)
    return folder


def test_slurm_s_record_of_both_runs_is_compared(tmp_path: Path) -> None:
    from logscope.diff.runs import analysed

    script = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --output=%x-%j-%N.out\nexport NCCL_DEBUG=INFO\nsrun x\n"
    good = analysed([_with_record(tmp_path / "good", "/lustre/alice/llm", script)])
    same = analysed([_with_record(tmp_path / "same", "/lustre/alice/llm", script)])
    changed = script.replace("NCCL_DEBUG=INFO", "NCCL_DEBUG=WARN").replace("--nodes=2", "--nodes=2\n#SBATCH -p x\n"
                                                                                      "#SBATCH --exclusive")
    bad = analysed([_with_record(tmp_path / "bad", "/lustre/alice/llm-v2", changed)])
    assert good.accounting is not None and bad.accounting is not None
    assert not compare(good, same).config_drift
    drift = {d.setting: (d.good, d.bad) for d in compare(good, bad).config_drift if d.group == "record"}
    assert drift == {"SLURM work dir": ("/lustre/alice/llm", "/lustre/alice/llm-v2"),
                     "export NCCL_DEBUG": ("INFO", "WARN"), "#SBATCH --exclusive": (None, "true"),
                     "#SBATCH -p": (None, "x")}


@pytest.mark.parametrize("which", ["good", "bad", "against"])
@pytest.mark.parametrize("case", ["empty folder", "missing path", "folder of binaries", "fifo", "corrupt gz"])
def test_an_unusable_run_is_one_error_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       case: str, which: str) -> None:
    from test_bad_input import UNUSABLE, assert_one_line_error, inputs

    build, message = UNUSABLE[case]
    target = str(build(inputs(tmp_path)))
    sample = str(SAMPLES / "healthy")
    args = {"good": ["diff", target, sample], "bad": ["diff", sample, target],
            "against": ["analyze", sample, "--against", target, "--format", "json"]}[which]
    code, out, err = run(capsys, *args)
    assert "Traceback" not in out + err
    assert_one_line_error(code, err, message)
    assert out == ""


def _progress_on_both_nodes(folder: Path, node01_factor: float) -> Path:
    """The healthy sample with node02's progress lines printed by node01 too (its own rank 0 line),
    node01's times per iteration multiplied by ``node01_factor``."""
    shutil.copytree(SAMPLES / "healthy", folder)
    node01, node02 = folder / "train-4242001-gpu-node01.out", folder / "train-4242001-gpu-node02.out"
    steps = [line.replace("[default7]:", "[default0]:") for line in node02.read_text().splitlines(keepends=True)
             if " iteration " in line]

    def slower(line: str) -> str:
        found = re.search(r"per iteration \(ms\): ([0-9.]+)", line)
        assert found is not None
        return line.replace(found.group(0), f"per iteration (ms): {float(found.group(1)) * node01_factor:.1f}")

    node01.write_text(node01.read_text() + "".join(slower(line) for line in steps))
    return folder


def test_performance_per_node_where_several_nodes_print_steps(tmp_path: Path) -> None:
    good = analyze([_progress_on_both_nodes(tmp_path / "good", 1.0)])
    bad = analyze([_progress_on_both_nodes(tmp_path / "bad", 1.5)])
    per_node = {c.node: c for c in compare(good, bad).performance if c.node}
    assert set(per_node) == {"gpu-node01", "gpu-node02"}
    assert per_node["gpu-node01"].changed and per_node["gpu-node01"].ratio == pytest.approx(1.5, rel=0.01)
    assert not per_node["gpu-node02"].changed
