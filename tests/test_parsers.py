"""Example tests for the parser layer: prefixes, timestamps, file names, line patterns."""

from __future__ import annotations

import itertools
from datetime import datetime
from pathlib import PurePath

import polars as pl
import pytest

from logscope.errors import UsageError
from logscope.parsers.filenames import compile_pattern, describe
from logscope.parsers.lines import parse_chunk
from logscope.parsers.prefixes import strip_prefixes
from logscope.parsers.timestamps import leading_time, leading_times


def parse(*lines: str, year: int = 2026) -> pl.DataFrame:
    frame = pl.DataFrame({"line": list(range(1, len(lines) + 1)), "raw": list(lines)},
                         schema={"line": pl.Int64, "raw": pl.String})
    return parse_chunk(frame, year, None).events


def one(line: str) -> dict:
    events = parse(line)
    assert events.height == 1, f"expected one event from {line!r}, got {events.height}"
    return events.row(0, named=True)


@pytest.mark.parametrize(("raw", "body", "column", "value"), [
    (" 3: hello", "hello", "p_task", 3),
    ("12: hello", "hello", "p_task", 12),
    ("[default3]:x", "x", "p_local_rank", 3),
    ("[host1:0]AttributeError: x", "AttributeError: x", "p_host", "host1"),
    ("[rank11]:[E ProcessGroupNCCL.cpp:1537] y", "[E ProcessGroupNCCL.cpp:1537] y", "p_rank", 11),
    ("[rank7]: torch.distributed.DistBackendError: z", "torch.distributed.DistBackendError: z", "p_rank", 7),
    ("(RayWorkerWrapper pid=4009) [rank1]:w", "w", "p_pid", 4009),
    ("2026-09-18 19:29:24 [rank3]:[E918 19:29:24.4 P] v", "[E918 19:29:24.4 P] v", "p_rank", 3),
    ("node-7: pdsh output", "pdsh output", "p_host", "node-7"),
    ("[0] node0:13571:13571 [0] NCCL INFO Bootstrap", "node0:13571:13571 [0] NCCL INFO Bootstrap", "p_task", 0),
])
def test_prefixes_are_peeled_and_recorded(raw: str, body: str, column: str, value: object) -> None:
    out = strip_prefixes(pl.DataFrame({"raw": [raw]}).with_row_index("idx")).row(0, named=True)
    assert out["body"] == body
    assert out[column] == value


@pytest.mark.parametrize("raw", [
    "srun: error: node1: task 0: Exited with exit code 1",
    "r6i6n4:257714:257714 [0] NCCL INFO Using network IB",
    "frame #0: c10::Error::Error",
    "ValueError: bad value",
    "10:",
])
def test_non_prefixes_are_left_alone(raw: str) -> None:
    out = strip_prefixes(pl.DataFrame({"raw": [raw]}).with_row_index("idx")).row(0, named=True)
    assert out["body"] == raw
    assert out["prefix"] is None


@pytest.mark.parametrize(("body", "expected"), [
    ("[2026-05-05 06:16:47] node-01:1:1 [3] NCCL WARN x", datetime(2026, 5, 5, 6, 16, 47)),
    ("2024-05-08 08:47:31,261 - INFO - x", datetime(2024, 5, 8, 8, 47, 31, 261000)),
    ("[2024-05-08 08:47:31,261] torch.distributed.elastic", datetime(2024, 5, 8, 8, 47, 31, 261000)),
    ("E0801 13:23:20.000000 32974 torch/distributed/x.py:874] failed", datetime(2026, 8, 1, 13, 23, 20)),
    ("[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] x", datetime(2026, 12, 6, 18, 44, 12, 715298)),
    ("12/02/2026 15:12:00 - INFO - x", datetime(2026, 12, 2, 15, 12, 0)),
    ("Dec  2 15:12:00 gpu1 kernel: NVRM: Xid", datetime(2026, 12, 2, 15, 12, 0)),
    ("[Wed Dec  2 15:12:00 2025] NVRM: Xid", datetime(2025, 12, 2, 15, 12, 0)),
    # NVIDIA DLLogger's stdout prefix (dllogger/logger.py, MLPerf trainers) and a level name first.
    ("DLL 2025-10-03 22:16:01.389637 - Iteration 4027 | train_loss : 0.8257", datetime(2025, 10, 3, 22, 16, 1, 389637)),
    ("INFO 2024-05-08 08:47:31,261 train.py:12 x", datetime(2024, 5, 8, 8, 47, 31, 261000)),
    ("Saved 2024-05-08 08:47:31 checkpoint", None),  # a word that is no level: a date it talks about
    ("no time here", None),
    ("[E ProcessGroupNCCL.cpp:458] old format has no time", None),
])
def test_leading_timestamps(body: str, expected: datetime | None) -> None:
    got = pl.select(leading_time(pl.lit(body), 2026)).item()
    assert got == expected


@pytest.mark.parametrize(("name", "job_id", "job_name", "node"), [
    ("train-12345-gpu-node01.out", "12345", "train", "gpu-node01"),
    ("my-job-777-n01.out.gz", "777", "my-job", "n01"),
    ("slurm-4242.out", "4242", None, None),
    ("meg_gpt2_base_n64_dp1_tp4_pp64-1809655.out", "1809655", "meg_gpt2_base_n64_dp1_tp4_pp64", None),
    ("slurm-100_7.out", "100", None, None),
])
def test_slurm_file_names(name: str, job_id: str, job_name: str | None, node: str | None) -> None:
    info = describe(PurePath(name))
    assert (info.kind, info.job_id, info.job_name, info.node) == ("slurm", job_id, job_name, node)


def test_torchrun_and_nccl_file_names() -> None:
    worker = describe(PurePath("logs/run_abc/attempt_1/3/stdout.log"))
    assert (worker.kind, worker.attempt, worker.local_rank) == ("torchrun-worker", 1, 3)
    error = describe(PurePath("attempt_0/5/error.json"))
    assert (error.kind, error.local_rank) == ("torchrun-error", 5)
    nccl = describe(PurePath("nccl.gpu-node07.31337"))
    assert (nccl.kind, nccl.host, nccl.pid) == ("nccl-debug", "gpu-node07", 31337)


def test_user_pattern_and_bad_pattern() -> None:
    regex = compile_pattern("%x.%A_%4a.%N.log")
    m = regex.match("pretrain.99_0003.node12.log")
    assert m and m["array_task"] == "0003" and m["node"] == "node12"
    with pytest.raises(UsageError, match="%q"):
        compile_pattern("%x-%q.out")


def test_nccl_init_and_coll_lines() -> None:
    init = one("node1:4100:4180 [3] NCCL INFO comm 0x5621a0 rank 11 nranks 16 cudaDev 3 nvmlDev 3 busId 3b000 "
               "commId 0x7d1a5e - Init COMPLETE")
    assert init["event"] == "nccl_init"
    assert (init["host"], init["pid"]) == ("node1", 4100)
    fields = init["fields"]
    assert (fields["comm_rank"], fields["nranks"], fields["cuda_dev"], fields["comm_id"]) == (11, 16, 3, "0x7d1a5e")
    coll = one("node1:4100:4100 [3] NCCL INFO AllReduce: opCount 1f sendbuff 0x7f01 recvbuff 0x7f02 count 2 "
               "datatype 7 op 0 root 0 comm 0x5621a0 [nranks=16] stream 0x55")
    assert coll["event"] == "nccl_coll"
    assert coll["fields"]["op_count"] == 0x1F  # opCount is hex
    assert coll["fields"]["op"] == "AllReduce"


def test_watchdog_variants_give_seq_and_rank() -> None:
    events = parse(
        "[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, "
        "Timeout(ms)=600000) ran for 600061 milliseconds before timing out.",
        "[rank11]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 11] Timeout at NCCL work: 15734, last enqueued NCCL "
        "work: 15735, last completed NCCL work: 15733.",
        "[rank118]:[E603 17:48:01.005538748 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 118]  "
        "failure detected by watchdog at work sequence id: 2398459 PG status: last enqueued work: 2398578, "
        "last completed work: 2398458",
    )
    rows = events.to_dicts()
    assert [r["event"] for r in rows] == ["watchdog_timeout", "watchdog_status", "watchdog_status"]
    assert [r["rank"] for r in rows] == [0, 11, 118]
    assert rows[0]["fields"]["seq"] == 7753 and rows[0]["fields"]["timeout_ms"] == 600000
    assert rows[1]["fields"]["last_completed"] == 15733
    assert rows[2]["fields"]["last_enqueued"] == 2398578


def test_slurm_lines() -> None:
    rows = parse(
        "srun: error: taurusi2031: tasks 10-11: Exited with exit code 1",
        "slurmstepd: error: *** STEP 494583.0 ON host1 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***",
        "slurmstepd: error: Detected 2 oom_kill events in StepId=3495064.13. "
        "Some of the step tasks have been OOM Killed.",
        "srun: error: Node failure on jean-zay-iam37",
    ).to_dicts()
    assert [r["event"] for r in rows] == ["srun_task_exit", "cancelled", "host_oom", "node_failure"]
    assert rows[0]["fields"]["tasks"] == "10-11" and rows[0]["fields"]["exit_code"] == 1
    assert rows[1]["fields"]["reason"] == "TIME LIMIT"
    assert rows[1]["time"] == datetime(2024, 4, 20, 9, 9, 37) and rows[1]["time_inferred"] is False
    assert rows[2]["fields"]["count"] == 2
    assert rows[3]["host"] == "jean-zay-iam37"


def test_untimed_lines_take_the_time_above_and_are_marked() -> None:
    rows = parse("2026-01-02 03:04:05,000 - INFO - step 9 loss 2.5", "ValueError: boom").to_dicts()
    assert rows[1]["event"] == "exception"
    assert rows[1]["time"] == datetime(2026, 1, 2, 3, 4, 5) and rows[1]["time_inferred"] is True
    assert rows[0]["time_inferred"] is False


def test_a_dllogger_line_dates_the_untimed_failure_below_it_and_the_year_of_glog_lines() -> None:
    """An MLPerf log times its progress with DLLogger only: the OOM below one is dated by it, not
    by the watchdog's glog line ten minutes later, and that glog line takes the DLLogger year."""
    rows = parse("0: DLL 2025-10-03 22:16:01.676767 - Iteration 4031 | train_loss : 0.8359",
                 "7: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.16 GiB.",
                 "2: [rank2]:[E1003 22:26:03.467156987 ProcessGroupNCCL.cpp:633] [Rank 2] Watchdog caught "
                 "collective operation timeout: WorkNCCL(SeqNum=92, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                 "Timeout(ms)=600000) ran for 600011 milliseconds before timing out.").to_dicts()
    oom = next(r for r in rows if r["event"] == "cuda_oom")
    assert oom["time"] == datetime(2025, 10, 3, 22, 16, 1, 676767) and oom["time_inferred"] is True
    assert rows[-1]["time"] == datetime(2025, 10, 3, 22, 26, 3, 467156)


@pytest.mark.parametrize(("line", "step", "loss"), [
    # MLPerf's trainers: a step_format of their own, metrics joined by " | "
    ("0: DLL 2025-10-03 22:16:01.676767 - Iteration 4031 | train_acc : 0.7227 % | train_loss : 0.8359 ", 4031, 0.8359),
    # dllogger's own example (examples/example_stdout_log.txt): its steps as "Epoch: 0 Iteration: 3"
    ("DLL 2019-10-10 16:42:54.501328 - Epoch: 0 Iteration: 3  loss : 32.5 nat", 3, 32.5),
    # a validation pass names its own loss: the step is progress, val.loss is not the training loss
    ("DLL 2019-10-10 16:42:54.501355 - Epoch: 0 Iteration: 3 Validation Iteration: 0  val.loss : 57.5 nat", 3, None),
    ("[default0]:DLL 2024-01-02 03:04:05.000001 - step 12 | loss : 2.5", 12, 2.5),
])
def test_dllogger_progress_lines_are_progress_with_their_step_and_loss(line: str, step: int,
                                                                        loss: float | None) -> None:
    rows = parse(line).to_dicts()
    assert [(r["event"], r["fields"]["step"], r["fields"]["loss"]) for r in rows] == [("progress", step, loss)]


def test_dllogger_lines_of_no_step_are_no_progress() -> None:
    # PARAMETER, Init and an epoch's summary: DLLogger lines whose step names no iteration
    assert parse("DLL 2022-05-19 05:58:50.574254 - PARAMETER | epochs :  80",
                 "0: DLL 2025-10-03 22:09:50.047475 - Init | message : Start create feature storage ",
                 "DLL 2022-05-19 06:12:01.000000 - epoch   3 | avg train utts/s 5321 | took 330.1 s").height == 0


def test_a_capitalised_iteration_is_tried_by_the_iteration_and_loss_pattern() -> None:
    rows = parse("Iteration 4 | loss 2.3").to_dicts()
    assert [(r["event"], r["fields"]["step"], r["fields"]["loss"]) for r in rows] == [("progress", 4, 2.3)]


def test_carriage_returns_split_into_segments_on_the_same_line() -> None:
    rows = parse("progress 10%\rprogress 90%\rValueError: glued after tqdm").to_dicts()
    assert [(r["line"], r["event"]) for r in rows] == [(1, "exception")]


def test_unknown_lines_are_not_events() -> None:
    assert parse("hello world", "", "just some output").height == 0


def test_torchrun_no_error_file_line_names_a_global_rank() -> None:
    """errors/__init__.py logs ``"local_rank %s FAILED ..."`` with the rank of
    ``ChildFailedError.get_first_failure()``, whose failures are keyed by global rank."""
    row = one("I1103 11:06:48.637000 49063 torch/distributed/elastic/multiprocessing/errors/__init__.py:368] "
              "local_rank 11 FAILED with no error file. Decorate your entrypoint fn with @record for traceback "
              "info. See: https://pytorch.org/docs/stable/elastic/errors.html")
    assert row["event"] == "worker_failed"
    assert (row["rank"], row["local_rank"]) == (11, None)


def test_plain_times_read_by_one_strptime_are_the_times_leading_time_reads() -> None:
    # Every combination of the parts a plain form's regex (time_forms.PLAIN_TIMES) looks at, where
    # they fit it and where they do not: years out of range, other separators, fractions too long
    # or cut, a comma with other than 3 digits, text after the time, impossible dates and clocks;
    # and the other forms beside them.
    texts = [f"{year}-{date} {clock}{frac}{tail}".replace(" ", sep, 1)
             for year, date, clock, sep, frac, tail in itertools.product(
                 ["1899", "1900", "2025", "2999", "3000", "0001"], ["05-08", "02-30", "13-01", "00-10"],
                 ["10:13:05", "23:59:60", "24:00:00"], [" ", "T", "_"],
                 ["", ".5", ".630679", ".1234567", ".123456789", ",532", ",53", ",5321", "."], ["", " ", "Z", "]"])]
    texts += ["E1003 22:26:03.467156", "Dec  2 15:12:00", "12/02/2026 15:12:00", "1712345678.5",
              "[2024-05-08 08:47:31,261]", "DLL 2025-10-03 22:16:01.1"]
    series = pl.Series("t", texts)
    expected = series.to_frame().select(leading_time(pl.col("t"), 2026)).to_series()
    assert expected.drop_nulls().len() > 100  # the forms the fast path reads are among them
    assert leading_times(series, 2026).equals(expected)
