"""A message is found wherever it stands in a line; wrappers only say who wrote it and when.

Each test holds one rule of the recognition path (logscope/parsers/lines.py, prefix_stack.py,
prefixes.py, the message catalogue) to a line or a small job, and fails without it.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from logscope.analysis import analyze
from logscope.errors import InputError
from logscope.ingest import blocks
from logscope.parsers import lines as engine
from logscope.parsers.filenames import describe
from logscope.parsers.prefixes import strip_prefixes
from logscope.timeline import load_job


def events(*raw: str, year: int = 2026) -> pl.DataFrame:
    frame = pl.DataFrame({"line": list(range(1, len(raw) + 1)), "raw": list(raw)},
                         schema={"line": pl.Int64, "raw": pl.String})
    return engine.parse_chunk(frame, year, None).events


@pytest.mark.parametrize("wrapper", ["> ", "> > ", "    ", "job.node1 [stderr] ", "2024-05-01 10:00:00,123 ",
                                     "2024-05-01T10:00:00.123+02:00 ", "[1,0]<stderr>:", "some tool says: ",
                                     "INFO - ", "| "])
def test_a_message_behind_any_wrapper_is_that_message(wrapper: str) -> None:
    found = events(wrapper + "[default3]:[rank11]: ValueError: sample 7 has 2049 tokens")
    assert found.select("event").item() == "exception"
    assert found["fields"].struct.field("error_type").item() == "ValueError"


@pytest.mark.parametrize("wrapper", ["> ", "    ", "job.node1 [stderr] ", "2024-05-01 10:00:00,123 ", "[1,0]<stderr>:"])
def test_launcher_prefixes_behind_known_wrappers_still_say_who_wrote_the_line(wrapper: str) -> None:
    row = strip_prefixes(pl.DataFrame({"raw": [wrapper + "[default3]:[rank11]: ValueError: x"]})).row(0, named=True)
    assert (row["p_local_rank"], row["p_rank"], row["body"]) == (3, 11, "ValueError: x")


def test_the_innermost_prefix_of_a_kind_wins() -> None:
    row = strip_prefixes(pl.DataFrame({"raw": ["7: [rank11]: x"]})).row(0, named=True)
    assert (row["p_task"], row["p_rank"]) == (7, 11)
    # Open MPI's tag numbers mpirun's processes: a task, as srun's label
    row = strip_prefixes(pl.DataFrame({"raw": ["[1,4]<stderr>:[rank11]: x"]})).row(0, named=True)
    assert (row["p_task"], row["p_rank"]) == (4, 11)


def test_terminal_escapes_are_dropped_from_a_block_before_it_is_read() -> None:
    block = b"\x1b[0m\x1b[1;31m[default3]\x1b[0m:ValueError: x\n\x1b]0;title\x07plain\n"
    controls = blocks.control_bytes(block)
    assert controls.escape
    assert blocks.without_escapes(block) == b"[default3]:ValueError: x\nplain\n"


def test_a_traceback_source_line_quotes_code_and_is_no_message() -> None:
    found = events('  File "/x/dynamic_rendezvous.py", line 677, in run',
                   "    raise RendezvousClosedError",
                   "torch.distributed.elastic.rendezvous.api.RendezvousClosedError")
    assert found.select("line", "event").rows() == [(1, "traceback"), (3, "store_error")]


def test_the_traceback_torchrun_reprints_in_its_report_is_no_message_of_its_own() -> None:
    found = events("  traceback : Traceback (most recent call last):",
                   '    File "/x/train.py", line 3, in main',
                   "  RuntimeError: Connection reset by peer",
                   "------------------------------------------------------------",
                   "RuntimeError: a line of its own")
    assert [line for line, event in found.select("line", "event").rows() if event == "exception"] == [5]


def test_the_ncclsystemerror_line_is_a_witness_and_the_ncclversion_tail_is_no_version_line() -> None:
    found = events("[rank0]: ncclSystemError: System call (e.g. socket, malloc) or external library call",
                   "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970,"
                   " unhandled system error, NCCL version 2.21.5",
                   "[default0]:NCCL version 2.21.5+cuda12.4")
    ids = found["fields"].struct.field("message_id").to_list()
    assert ids == ["c10d.nccl.result_of_a_failed_call", "python.exception", "nccl.version"]


def test_an_outer_time_that_never_changes_is_no_clock() -> None:
    stamp = "2024-05-01 10:00:00,123 "
    found = events(stamp + "2026-11-03 11:00:00,000 - INFO - step 1 loss 2.0",
                   stamp + "ValueError: x",
                   stamp + "2026-11-03 11:00:05,000 - INFO - step 2 loss 2.0",
                   stamp + "2026-11-03 11:00:09,000 - INFO - step 3 loss 2.0")
    times = dict(found.select("line", "time").rows())
    assert times[1] == datetime(2026, 11, 3, 11, 0, 0)
    assert times[2] == datetime(2026, 11, 3, 11, 0, 0)  # its neighbour's, not the wrapper's 2024
    assert found.filter(pl.col("line") == 2)["time_inferred"].item()


def test_an_outer_clock_that_agrees_up_to_an_offset_times_the_lines_it_alone_stamps() -> None:
    found = events("2026-11-03 09:00:00,000 2026-11-03 11:00:00,000 - INFO - step 1 loss 2.0",
                   "2026-11-03 09:00:07,000 ValueError: x",
                   "2026-11-03 09:00:09,000 2026-11-03 11:00:09,000 - INFO - step 2 loss 2.0")
    times = dict(found.select("line", "time").rows())
    assert times[2] == datetime(2026, 11, 3, 11, 0, 7)  # the wrapper's time, on the processes' clock


def test_a_yearless_time_takes_the_year_of_the_files_own_dates() -> None:
    found = events("2024-05-01 10:00:00,123 E1103 14:05:03.000000 41 torch/x.py:1] failed (exitcode: 1) "
                   "local_rank: 0 (pid: 4)",
                   "[2025-11-03 14:05:00] node1:1:1 [0] NCCL WARN x", year=2031)
    assert found.filter(pl.col("line") == 1)["time"].item() == datetime(2025, 11, 3, 14, 5, 3)


def test_a_file_with_no_date_of_its_own_takes_the_year_of_the_jobs_other_files(tmp_path: Path) -> None:
    """torchrun's glog lines carry no year; a file with nothing else took its modification year (a
    log copied today: this year). The job's other file, dated, says the year they were written,
    so the failure is ordered and timed with the training lines it followed."""
    (tmp_path / "train-77-node01.out").write_text("2024-12-03 16:08:40,000 - INFO - step 1 loss 2.5\n"
                                                  "2024-12-03 16:08:45,000 - INFO - step 2 loss 2.4\n")
    (tmp_path / "train-77-node02.out").write_text(
        "[default0]:W1203 16:08:46.192515 609112 torch/distributed/run.py:793] Setting OMP_NUM_THREADS\n"
        "E1203 16:08:47.639000 609112 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 0 (pid: 609177) of binary: /usr/bin/python\n")
    os.utime(tmp_path / "train-77-node02.out", (time.time(), time.time()))
    timeline = load_job([tmp_path]).timeline
    failed = timeline.filter(pl.col("event") == "worker_failed").row(0, named=True)
    assert (failed["time"], failed["time_latest"]) == (datetime(2024, 12, 3, 16, 8, 47, 639000),) * 2


def test_a_job_with_no_dated_line_keeps_the_year_it_was_given(tmp_path: Path) -> None:
    """Nothing in the job says its year: the files keep theirs (each its modification year)."""
    (tmp_path / "train-77-node02.out").write_text(
        "E1203 16:08:47.639000 609112 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 0 (pid: 609177) of binary: /usr/bin/python\n")
    stamp = datetime(2023, 6, 1).timestamp()
    os.utime(tmp_path / "train-77-node02.out", (stamp, stamp))
    assert load_job([tmp_path]).timeline["time"].dt.year().to_list() == [2023]


def test_an_mllog_time_gives_the_year_to_a_files_glog_lines(tmp_path: Path) -> None:
    """MLPerf's compliance lines carry the time as milliseconds since the epoch (time_ms): the
    file's glog lines were written in that year, not in the year it was copied."""
    (tmp_path / "bert-77-node01.out").write_text(
        ':::MLLOG {"namespace": "", "time_ms": 1701617310000, "event_type": "INTERVAL_START", "key": "init_start", '
        '"value": null, "metadata": {"file": "/workspace/bert/run_pretraining.py", "lineno": 1033}}\n'
        "E1203 16:08:47.639000 609112 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 0 (pid: 609177) of binary: /usr/bin/python\n")
    stamp = datetime(2026, 6, 1).timestamp()
    os.utime(tmp_path / "bert-77-node01.out", (stamp, stamp))
    failed = load_job([tmp_path]).timeline.filter(pl.col("event") == "worker_failed").row(0, named=True)
    assert failed["time"] == datetime(2023, 12, 3, 16, 8, 47, 639000)


def test_c10s_logger_writes_a_month_without_its_zero() -> None:
    # c10/util/Logging.cpp: (tm_mon + 1) * 100 + tm_mday, so September 9 is "909"
    found = events("[rank3]:[E909 09:55:46.996672294 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 3] "
                   "Timeout at NCCL work: 2070, last enqueued NCCL work: 2082, last completed NCCL work: 2069.")
    row = found.row(0, named=True)
    assert (row["event"], row["rank"], row["time"]) == ("watchdog_status", 3, datetime(2026, 9, 9, 9, 55, 46, 996672))


def test_a_watchdog_report_cut_by_a_paste_is_still_a_timeout() -> None:
    found = events("[rank14]:[E909 09:55:29.30 ProcessGroupNCCL.cpp:607] [Rank 14] Watchdog caught collective "
                   "operation timeout: ")
    assert found.select("event", "rank").rows() == [("watchdog_timeout", 14)]


def test_a_hard_wrapped_paste_quoted_line_by_line_is_joined_without_its_quotes(tmp_path: Path) -> None:
    width = 80
    record = ("The client socket has timed out after 1800s while trying to connect to (172.17.0.2, 44737). "
              "This is what the store said.")
    cut = [record[:width], record[width:]]
    body = [*cut, "x" * width, "y" * (width - 1) + "z", "w" * width, "v" * width, "plain"]
    (tmp_path / "paste.log").write_text("".join(f"> {line}\n" for line in body))
    job = load_job([tmp_path])
    assert "(172.17.0.2, 44737)" in job.timeline.filter(pl.col("event") == "store_error")["text"].item()


def test_a_bare_name_and_a_small_number_is_a_part_not_a_job_id() -> None:
    assert describe(Path("fragment-1.log")).job_id is None
    assert describe(Path("part-02.out")).job_id is None
    assert describe(Path("train-4242-node1.out")).job_id == "4242"
    assert describe(Path("slurm-7.out")).job_id == "7"
    assert describe(Path("train-123.out")).job_id == "123"


def test_files_of_one_paste_are_one_job(tmp_path: Path) -> None:
    for n in (1, 2):
        (tmp_path / f"fragment-{n}.log").write_text(f"node{n}:1:1 [0] NCCL INFO NCCL version 2.21.5\nValueError: x\n")
    assert analyze([tmp_path]).verdict.category.value == "crash"


def test_a_file_whose_lines_name_one_host_is_that_hosts_file(tmp_path: Path) -> None:
    (tmp_path / "node-a.txt").write_text("gpu7:10:10 [0] NCCL INFO NCCL version 2.21.5\n[rank3]: ValueError: x\n")
    root = analyze([tmp_path]).verdict.root_cause
    assert root is not None and (root.host, root.rank) == ("gpu7", 3)


def test_a_jobs_own_prints_get_a_verdict_and_a_note_does_not(tmp_path: Path) -> None:
    prints = tmp_path / "prints" / "main_log_tail.log"
    prints.parent.mkdir()
    prints.write_text("".join(f"PID {pid}:  After clip in _do_batch\nPID {pid}:  Before sync_gradients in _do_batch\n"
                              for pid in (101, 102, 103)))
    assert analyze([prints.parent]).verdict.category.value == "incomplete"
    note = tmp_path / "note" / "notes.txt"
    note.parent.mkdir()
    note.write_text("lr: 0.1\nbatch: 8\n")
    with pytest.raises(InputError, match="no line of a training job's log"):
        analyze([note.parent])


# --- wrappers nobody listed: learned per file (logscope.parsers.prefixes) --------------------------

TRAINING = [f"[default3]:[rank11]:2024-05-01 10:00:0{n},000 - INFO - step {n} loss 2.5" for n in range(1, 8)]
FAILED = "[default3]:[rank11]: ValueError: sample 7 has 2049 tokens"


@pytest.mark.parametrize("head", ["{n}:", "logs/train-0.out:{n}:", "[pod/trainer-0/main] ", "\u00a0\u00a0",
                                  "Dec 06 10:00:00 login01 bash[4242]: ", "{n:6d}\t"])
def test_a_head_a_tool_put_on_every_line_hides_no_tag_and_no_time(head: str) -> None:
    """A line number, a grep file name, a pod's or a unit's name: the same head on every line of
    a file is taken off, and the launcher's tags and the logger's time behind it are read."""
    lines = [head.format(n=n) + text for n, text in enumerate([*TRAINING, FAILED], start=1)]
    found = events(*lines)
    failed = found.filter(pl.col("event") == "exception").row(0, named=True)
    assert (failed["rank"], failed["local_rank"]) == (11, 3)
    steps = found.filter(pl.col("event") == "progress")
    assert steps["time"].to_list()[-1] == datetime(2024, 5, 1, 10, 0, 7)


def test_words_in_front_of_numbers_are_no_wrapper() -> None:
    """Every line of a progress log starts with "Epoch ": the "1: " behind it is no srun label."""
    found = events(*[f"Epoch {n}: 100%|##########| 50/50 [00:0{n}<00:00, loss={n}.0]" for n in range(1, 8)])
    assert found["task"].drop_nulls().len() == 0


def test_a_hyphenated_host_in_front_of_nccls_head_is_no_wrapper() -> None:
    """NCCL's head matches behind "gpu-" in "gpu-node03:51430:51430 [3] NCCL ...": a line that
    starts with a process's own output has no head, so none is learned and taken off every line
    (a 100 MB crash loop spent 0.8 s taking "gpu-" off its lines)."""
    from logscope.parsers.prefixes import split_prefix_of_files

    bodies = [f"gpu-node03:51430:5143{n} [3] NCCL INFO Channel 0{n}/0 : 3[3] -> 4[4] via P2P/IPC" for n in range(8)]
    split = split_prefix_of_files(pl.DataFrame({"raw": [f"[default3]:{b}" for b in bodies]}))
    assert split["body"].to_list() == bodies


def test_a_clock_in_front_of_a_headless_nccl_line_is_no_host() -> None:
    found = events("Dec 06 10:00:00 transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'")
    assert found["host"].to_list() == [None]


def test_docker_json_records_are_read_as_the_lines_they_carry(tmp_path: Path) -> None:
    """Docker's json-file driver escapes quotes: the traceback's frame line is read unescaped, and
    the record's time is the line's."""
    import json
    lines = ["[default0]:Traceback (most recent call last):", '[default0]:  File "train.py", line 3, in <module>',
             "[default0]:ValueError: bad batch"]
    (tmp_path / "train-7-node1.log").write_text("".join(
        json.dumps({"log": line + "\n", "stream": "stderr", "time": f"2024-05-01T10:00:0{n}.5Z"},
                   separators=(",", ":")) + "\n" for n, line in enumerate(lines)))
    timeline = load_job([tmp_path]).timeline
    failed = timeline.filter(pl.col("event") == "exception").row(0, named=True)
    assert failed["text"] == "ValueError: bad batch" and failed["time"] == datetime(2024, 5, 1, 10, 0, 2, 500000)


def test_html_escaped_text_is_read_as_its_characters() -> None:
    found = events("[1,3]&lt;stderr&gt;:RuntimeError: CUDA error: an illegal memory access was encountered",
                   "[1,3]&lt;stderr&gt;:x", "[1,3]&lt;stderr&gt;:y")
    first = found.row(0, named=True)
    assert (first["prefix"], first["task"]) == ("[1,3]<stderr>:", 3)


def test_seconds_since_the_epoch_date_a_line() -> None:
    found = events("1714557600.250 [rank2]: ValueError: x")
    assert found["time"].to_list() == [datetime(2024, 5, 1, 10, 0, 0, 250000)]
