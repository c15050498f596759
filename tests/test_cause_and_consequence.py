"""Cause before consequence: what a message says decides what failed (issue 34).

Each test is a small job whose verdict turns on one rule, and fails without it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from logscope.analysis import Analysis, analyze
from logscope.parsers import lines as engine


def job(tmp_path: Path, **files: str) -> Analysis:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return analyze([tmp_path])


def test_a_terminate_whose_what_is_the_watchdogs_timeout_is_that_timeout(tmp_path: Path) -> None:
    analysis = job(tmp_path, **{"train-9-node1.out": (
        "[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, "
        "OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800081 milliseconds before timing out.\n"
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=ALLGATHER, "
        "Timeout(ms)=1800000) ran for 1800081 milliseconds before timing out.\n")})
    assert analysis.verdict.category.value == "hang"
    assert analysis.job.timeline.filter(pl.col("event") == "cpp_exception").height == 0


def test_a_terminate_whose_what_is_no_known_message_carries_it() -> None:
    frame = pl.DataFrame({"line": [1, 2], "raw": ["terminate called after throwing an instance of 'c10::Error'",
                                                  "  what():  the frobnicator jammed"]})
    from logscope.ingest.discovery import SourceFile
    from logscope.ingest.file_events import completed
    from logscope.parsers.filenames import describe

    read = engine.parse_chunk(frame, 2026, None).events
    source = SourceFile(Path("x.out"), "x.out", describe(Path("x.out")), None, 0)
    (folded,) = completed([read], [source])
    assert folded.select("event").to_series().to_list() == ["cpp_exception"]
    assert folded["fields"].struct.field("message").item() == "the frobnicator jammed"


def test_a_terminate_cut_after_c10ds_teardown_is_that_teardown(tmp_path: Path) -> None:
    analysis = job(tmp_path, **{"train-9-node1.out": (
        "[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, "
        "OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800081 milliseconds before timing out.\n"
        "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down.\n"
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 0 (pid: 95313) of "
        "binary: /usr/bin/python\n")})
    # the abort (-6) is the teardown c10d announced: the timeout is the story
    assert analysis.verdict.category.value == "hang"


def test_ranks_missing_from_the_timeouts_are_the_quiet_ones_only_in_a_known_world(tmp_path: Path) -> None:
    analysis = job(tmp_path, **{"excerpt.log": (
        "[rank7]:[E626 05:14:36.393067540 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 7] "
        "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
        "collectives.\n"
        "[rank2]:[E626 05:06:30.929096625 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=120049, OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1800065 milliseconds "
        "before timing out.\n")})
    assert analysis.verdict.category.value == "hang"
    assert analysis.verdict.root_cause is None or analysis.verdict.root_cause.rank is None


def test_a_rank_the_bootstrap_root_names_is_the_culprit_not_the_root(tmp_path: Path) -> None:
    analysis = job(tmp_path, **{"combined.log": (
        "hpc-25-14:18569:18835 [0] bootstrap.cc:131 NCCL WARN Bootstrap Root : rank 1 of 8 ranks has already "
        "checked in\n")})
    root = analysis.verdict.root_cause
    assert analysis.verdict.category.value == "launch"
    assert root is not None and (root.rank, root.local_rank) == (1, None)


def test_ncclsystemerror_is_the_consequence_of_the_refused_connect_that_names_the_peer(tmp_path: Path) -> None:
    analysis = job(tmp_path, **{
        "nccl-debug.log": "r11i6n2:486514:486651 [1] include/socket.h:403 NCCL WARN Connect to 10.148.3.247<56821> "
                          "failed : Connection refused\n",
        "traceback.log": "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version "
                         "2.7.8\nncclSystemError: System call (socket, malloc, munmap, etc) failed.\n"})
    root = analysis.verdict.root_cause
    assert analysis.verdict.category.value == "network"
    assert root is not None and root.host == "10.148.3.247"


def test_a_reset_connection_names_no_end(tmp_path: Path) -> None:
    analysis = job(tmp_path, **{"excerpt.log": (
        "node1:1:2 [0] misc/socket.cc:538 NCCL WARN socketProgressOpt: Call to recv from 172.16.0.9<33759> failed : "
        "Connection reset by peer\n")})
    assert analysis.verdict.category.value == "network"
    assert analysis.verdict.root_cause is None or analysis.verdict.root_cause.host is None


def test_gloos_address_family_mismatch_is_the_jobs_configuration(tmp_path: Path) -> None:
    analysis = job(tmp_path, **{"combined.log": (
        "[rank0]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:276] "
        "ss1.ss_family == ss2.ss_family. 2 vs 10\n"
        "[rank1]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:276] "
        "ss1.ss_family == ss2.ss_family. 10 vs 2\n")})
    assert analysis.verdict.category.value == "launch"
    assert analysis.verdict.root_cause is None


def test_an_xid_that_stops_nothing_is_the_verdict_only_when_nothing_else_failed(tmp_path: Path) -> None:
    xid = ("[Wed Nov  4 13:00:00 2026] NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for "
           "remapping, reset gpu to activate.\n")
    (tmp_path / "alone").mkdir()
    alone = job(tmp_path / "alone", **{"train-3-node5.out": xid})
    assert alone.verdict.category.value == "hardware"
    (tmp_path / "crash").mkdir()
    beside = job(tmp_path / "crash", **{"train-3-node5.out": xid + "[rank2]: ValueError: bad batch\n"})
    assert beside.verdict.category.value == "crash"


def test_a_cut_traceback_is_a_reaction_when_the_others_reacted(tmp_path: Path) -> None:
    analysis = job(tmp_path, **{"combined.log": (
        "[rank3]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3763, remote process exited "
        "or there was a network error, NCCL version 2.28.8\n"
        "[rank3]: Last error:\n"
        "[rank3]: NET/OFI Request 0x7f14cc5b60c0 completed with error. RC: 113. Error: 2 (UNDELIVERABLE). Completed "
        "length: 0\n"
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/x/bench.py", line 301, in <module>\n'
        "[rank2]:     main()\n")})
    assert analysis.verdict.category.value == "network"


def test_the_one_exit_report_after_a_ranks_exception_gives_its_local_rank(tmp_path: Path) -> None:
    analysis = job(tmp_path, **{"combined.log": (
        "[rank1]: KeyError: 'schema'\n"
        "E0703 17:24:37.265000 13995 torch/distributed/elastic/multiprocessing/api.py:826] failed (exitcode: 1) "
        "local_rank: 0 (pid: 8731) of binary: /usr/bin/python\n")})
    root = analysis.verdict.root_cause
    assert root is not None and (root.rank, root.local_rank) == (1, 0)



def test_a_lone_teardown_terminate_is_unknown_and_says_it_witnesses(tmp_path: Path) -> None:
    """'terminate called without an active exception' names no error: alone, it is no culprit's
    crash, and the verdict says it witnesses a failure the logs do not show."""
    analysis = job(tmp_path, **{"train-4242-node1.out": (
        "2026-12-06 10:00:00,000 - INFO - step 1 loss 2.0\n"
        "terminate called without an active exception\n")})
    assert analysis.verdict.category.value == "unknown"
    assert analysis.verdict.root_cause is None
    assert "witnesses a failure" in analysis.verdict.summary
