"""What start-up saves must not change what a line means: the shortcuts taken to start faster
give what the slow way gives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from logscope.knowledge import RECOGNISERS
from logscope.parsers.classify import _groups, _wrapped

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"


def test_group_names_from_the_schema_are_those_a_query_gives() -> None:
    assert RECOGNISERS
    for message in RECOGNISERS:
        assert message.match is not None
        struct = pl.Series(dtype=pl.String).str.extract_groups(_wrapped(message.match)).dtype
        assert isinstance(struct, pl.Struct)
        assert _groups(message.match) == tuple(f.name for f in struct.fields if f.name != "__m"), message.match


def test_the_catalogue_reads_the_same_without_tomli() -> None:
    # tomli is only faster; where it cannot be imported the standard library's tomllib reads it.
    from logscope.knowledge import catalogue
    from logscope.knowledge.catalogue import CATALOGUE

    assert catalogue.tomllib.__name__ == "tomli"  # a dependency: the fast parser is the one in use
    code = ("import sys; sys.modules['tomli'] = None\n"
            "from logscope.knowledge import catalogue as c\n"
            "assert c.tomllib.__name__ == 'tomllib', c.tomllib\n"
            "print(repr(c.CATALOGUE))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == repr(CATALOGUE)


def test_the_command_leaves_without_teardown_yet_writes_everything(tmp_path: Path) -> None:
    # `python -m logscope` (like the `logscope` script) runs cli.run: main, a flush, os._exit.
    # Output larger than any buffer must arrive whole, with the verdict's exit code.
    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "out.json"
    with out.open("w") as sink:
        done = subprocess.run([sys.executable, "-m", "logscope", "analyze", str(repo / "sample_logs" / "crash-cascade"),
                               "--format", "json", "--verbose"], stdout=sink, stderr=subprocess.PIPE, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert json.loads(out.read_text())["verdict"]["root_cause"]["rank"] == 11


def test_the_command_says_when_its_output_cannot_be_written() -> None:
    if not Path("/dev/full").exists():  # pragma: no cover - Linux has it
        return
    sample = Path(__file__).resolve().parents[1] / "sample_logs" / "crash-cascade"
    with Path("/dev/full").open("w") as full:
        done = subprocess.run([sys.executable, "-m", "logscope", "analyze", str(sample)],
                              stdout=full, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2 and "cannot write the output" in done.stderr


def test_the_commands_annotations_are_objects_not_strings() -> None:
    # typer evaluates string annotations twice on every run (24 ms against 6 ms): cli.py has no
    # `from __future__ import annotations`.
    from logscope import cli

    for command in cli.app.registered_commands:
        assert command.callback is not None
        assert not any(isinstance(a, str) for a in command.callback.__annotations__.values()), command.name


def test_a_reading_command_starts_its_readers_before_the_cli_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope import command
    from logscope.ingest import workers

    asked: list[list[Path]] = []
    monkeypatch.setattr(workers, "start_early", lambda inputs, **_: asked.append(list(inputs)))
    command.start_readers(["--debug", "analyze", "job-1/", "--format", "json", "-v", "x.out", "--color=never"])
    command.start_readers(["report", "-o", "out.html", "job-2/", "--", "-odd-name"])
    command.start_readers(["lint", "job.sbatch"])
    command.start_readers(["--version"])
    command.start_readers([])
    # the values of options are not inputs (an existing out.html would be found as a log)
    assert asked == [[Path("job-1/"), Path("x.out")], [Path("job-2/"), Path("-odd-name")]]


def test_the_options_whose_values_are_no_inputs_are_the_reading_commands_value_options() -> None:
    import typer.main

    from logscope import cli, command

    app = typer.main.get_command(cli.app)
    taking = {name for which in ("analyze", "analyse", "report") if which in app.commands  # type: ignore[attr-defined]
              for param in app.commands[which].params  # type: ignore[attr-defined]
              if param.param_type_name == "option" and not param.is_flag  # type: ignore[attr-defined]
              for name in (*param.opts, *param.secondary_opts)}
    assert taking == command.VALUE_OPTIONS


def test_readers_started_early_leave_out_slurms_saved_record(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    # The CLI reads sacct/scontrol output saved beside the logs as the job's record, not as a log
    # (accounting.gather): the files the readers start on must leave it out too, or the early read
    # is of other files than the command's, and wasted.
    from logscope import command
    from logscope.ingest import workers

    (tmp_path / "train-1-node01.out").write_text("x\n")
    (tmp_path / "sacct-1.json").write_text("{}\n")
    excluded: list[list[Path]] = []
    monkeypatch.setattr(workers, "start_early",
                        lambda inputs, exclude=None: excluded.append(list(exclude(inputs)) if exclude else []))
    command.start_readers(["analyze", str(tmp_path)])
    assert excluded == [[tmp_path / "sacct-1.json"]]


def test_the_entry_point_imports_no_cli_before_starting_readers() -> None:
    code = ("import sys\nfrom logscope import command\n"
            "assert 'typer' not in sys.modules and 'polars' not in sys.modules, sorted(sys.modules)\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])


def test_only_a_scan_loads_its_workers_module_before_the_cli() -> None:
    # scan_pool imports multiprocessing (~20 ms): no other command may pay for it.
    code = ("import sys\nfrom logscope import command\n"
            "command.start_scan_workers(['analyze', '.', '--format', 'json'])\n"
            "command.start_scan_workers(['--debug', 'lint', 'job.sbatch'])\n"
            "assert 'logscope.scan_pool' not in sys.modules, 'analyze'\n"
            "assert 'concurrent.futures.process' not in sys.modules, 'analyze'\n"
            "command.scan_workers(['scan', '.', '-j', '1'])\n"
            "assert 'logscope.scan_pool' in sys.modules, 'scan'\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])


def test_the_scan_options_the_entry_point_reads_are_the_clis() -> None:
    import typer.main

    from logscope import cli, command

    scan = typer.main.get_command(cli.app).commands["scan"]  # type: ignore[attr-defined]
    options = [param for param in scan.params if param.param_type_name == "option"]
    long_names = {name for param in options for name in param.opts if name.startswith("--")}
    assert {name for param in options if not param.is_flag for name in param.opts
            if name.startswith("--")} == command.SCAN_VALUE_OPTIONS
    assert {name for param in options if param.is_flag for name in param.opts} | {"--help"} == command.SCAN_FLAGS
    for short, long in command.SCAN_SHORT.items():
        assert any(short in param.opts and long in param.opts for param in options), short
    assert long_names <= command.SCAN_VALUE_OPTIONS | command.SCAN_FLAGS


def test_a_scan_starts_its_workers_before_the_cli_loads_unless_it_reads_a_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope import command

    monkeypatch.setattr("os.cpu_count", lambda: 64)  # a machine's cores, of which this process may use 4
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "old.csv.cache.json").write_text("{}")
    (tmp_path / "kept.json").write_text("{}")
    assert command.scan_workers(["scan", "logs"]) == 4
    assert command.scan_workers(["--debug", "scan", "logs", "-j", "3", "--format", "json"]) == 3
    assert command.scan_workers(["scan", "--jobs=2", "-o", "new.csv", "logs"]) == 2
    assert command.scan_workers(["scan", "logs", "-o", "-", "--since", "2026-01-01"]) == 4
    assert command.scan_workers(["scan", "--", "logs"]) == 4
    assert command.scan_workers(["scan", "logs", "-o", "old.csv", "--no-cache"]) == 4
    # a rescan: its jobs may all be in the cache, and need no worker
    assert command.scan_workers(["scan", "logs", "-o", "old.csv"]) == 0
    assert command.scan_workers(["scan", "logs", "--cache", "kept.json", "-o", "new.csv"]) == 0
    assert command.scan_workers(["scan", "logs", "--cache=kept.json"]) == 0
    # one worker (this process), nothing to scan, no scan, or a form the CLI is left to read
    for args in (["scan", "logs", "-j", "1"], ["scan", "missing"], ["scan"], ["scan", "logs", "--print-sbatch", "4"],
                 ["scan", "logs", "--help"], ["scan", "logs", "-j4"], ["scan", "logs", "-j", "many"],
                 ["scan", "logs", "--jobs"], ["analyze", "logs"], ["merge", "a.parquet"], []):
        assert command.scan_workers(args) == 0, args


def test_scans_take_the_workers_started_early_if_as_many() -> None:
    from logscope import scan_pool

    scan_pool.start_early(2)
    early = scan_pool._EARLY[0][1]
    with scan_pool.single_threaded_workers():
        taken = scan_pool.new_pool(2)
    assert taken is early and not scan_pool._EARLY
    assert taken.submit(sum, [1, 2]).result(timeout=120) == 3
    scan_pool.stop(taken)
    scan_pool.start_early(2)
    early = scan_pool._EARLY[0][1]
    with scan_pool.single_threaded_workers():
        other = scan_pool.new_pool(3)  # not as many: the early ones are stopped
    assert other is not early and not scan_pool._EARLY
    with pytest.raises(RuntimeError):
        early.submit(sum, [1])
    scan_pool.stop(other)


def test_workers_that_cannot_start_early_are_left_to_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing.context

    from logscope import scan_pool

    def cannot(self: object) -> None:
        raise OSError("Resource temporarily unavailable")

    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", cannot)
    scan_pool.start_early(2)  # says nothing: the scan will start its own, and say why it cannot
    assert not scan_pool._EARLY
    monkeypatch.undo()

    def no_semaphores(*args: object, **kwargs: object) -> None:
        raise OSError(38, "Function not implemented")  # no /dev/shm

    monkeypatch.setattr(multiprocessing.context.SpawnContext, "SimpleQueue", no_semaphores)
    try:
        scan_pool.start_early(2)
        assert not scan_pool._EARLY
    finally:
        scan_pool.stop_unused()


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")
@pytest.mark.parametrize("case", ["one job", "no logs"])
def test_workers_started_for_a_scan_that_does_not_take_them_are_stopped(tmp_path: Path, case: str) -> None:
    # A scan of one job runs it in the command's process; one that finds no logs stops at once:
    # either way the workers started before the CLI loaded must end with the command (which
    # leaves without Python's teardown), not wait on for work forever.
    logs = tmp_path / "logs"
    logs.mkdir()
    if case == "one job":
        for name in ("train-4242004-gpu-node01.out", "train-4242004-gpu-node02.out"):
            (logs / name).write_bytes((SAMPLES / "crash-cascade" / name).read_bytes())
    with (tmp_path / "err").open("w") as stderr:  # not a pipe: workers left behind would hold it open
        proc = subprocess.Popen([sys.executable, "-m", "logscope", "scan", str(logs), "-j", "2"],
                                stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True, cwd=tmp_path)
        proc.wait(timeout=300)
    err = (tmp_path / "err").read_text()
    assert proc.returncode == (0 if case == "one job" else 2), err
    assert "Traceback" not in err
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # what is left of the command's process group
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail("the scan's workers outlived it")


def test_ctrl_c_before_the_cli_loads_is_one_line_and_exit_130(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import types

    from logscope import command

    class Loading(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "logscope.cli", Loading("logscope.cli"))
    monkeypatch.setattr(sys, "argv", ["logscope", "lint", "job.sbatch"])
    with pytest.raises(SystemExit) as leaving:
        command.run()
    assert leaving.value.code == 130
    assert capsys.readouterr().err == "Interrupted.\n"
