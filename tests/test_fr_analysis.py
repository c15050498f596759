"""Flight Recorder dumps joined to a job: the lagging rank, mismatches by majority, arrival lag,
missing ranks never blamed, the time alignment, and where dumps are found (pure-Python dumps,
tools/fr_writer.py)."""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from fr_support import analysed, four_ranks, fr_writer

from logscope.detectors.base import JobView
from logscope.detectors.fr_facts import flight_recorder_of
from logscope.errors import UsageError
from logscope.flight_recorder.joining import load_job_with_dumps
from logscope.hints import HINT_FLIGHT_RECORDER
from logscope.model import Event

W = fr_writer()
UTC_START = datetime(2026, 12, 5, 22, 58, 20)  # W.BASE_NS


def job_of(folder: Path, **plan: object) -> Path:
    skip = tuple(plan.pop("skip", ()))  # type: ignore[arg-type]
    W.write_job(folder, W.simulate(four_ranks(W, **plan)), skip=skip)
    return folder


def codes(result: object) -> list[str]:
    return [f.code for f in result.findings]  # type: ignore[attr-defined]


def test_the_rank_that_stopped_issuing_is_named(tmp_path: Path) -> None:
    result = analysed([job_of(tmp_path, steps=6, stops_issuing={2: 3})])
    assert result.verdict.category.value == "hang" and result.verdict.finding == "LS106"
    assert result.verdict.root_cause is not None and result.verdict.root_cause.rank == 2
    fr = result.to_json()["flight_recorder"]
    assert fr["lagging_ranks"] == [2] and fr["missing_ranks"] == [] and fr["ranks"] == [0, 1, 2, 3]
    assert {(lag["rank"], lag["pg"], lag["seq"], lag["op"], lag["how"]) for lag in fr["lagging"]} == {
        (2, "0", 4, "all_reduce", "issue"), (2, "2", 4, "all_reduce", "issue")}
    own, peer = result.findings[0].evidence[:2]  # its own last collective, then a peer's it never issued
    assert own.file.endswith("nccl_trace_rank_2") and "collective #3" in own.text
    assert peer.file.endswith("nccl_trace_rank_0") and "collective #4" in peer.text
    assert result.exit_code == 1


def test_a_rank_whose_gpu_stopped_lags_on_completion(tmp_path: Path) -> None:
    result = analysed([job_of(tmp_path, steps=8, stops_completing={1: 3})])
    fr = result.flight_recorder
    assert fr is not None and fr.lagging_ranks == [1]
    assert {lag.how for lag in fr.lagging} == {"completion"} and fr.lagging[0].seq == 4
    assert result.verdict.root_cause is not None and result.verdict.root_cause.rank == 1


def test_gloo_completions_are_not_trusted(tmp_path: Path) -> None:
    result = analysed([job_of(tmp_path, steps=8, stops_completing={1: 3}, backend="gloo")])
    assert result.flight_recorder is not None and result.flight_recorder.lagging == []
    assert "LS106" not in codes(result)


def test_a_rank_waiting_in_another_group_is_a_consequence(tmp_path: Path) -> None:
    """Rank 0 stops; rank 1 waits in group A for it and so never issues its next collective in
    group B, where it lags behind rank 2: rank 1 is a consequence, rank 0 the root."""
    plan = W.Plan(world=3, groups={"A": ("GA", [0, 1]), "B": ("GB", [1, 2])},
                  step_ops=[("A", "all_reduce"), ("B", "all_reduce")], steps=6, stops_issuing={0: 3}, blocking=True)
    W.write_job(tmp_path, W.simulate(plan))
    fr = analysed([tmp_path]).flight_recorder
    assert fr is not None and fr.lagging_ranks == [0]
    assert [(lag.rank, lag.pg) for lag in fr.waiting_lags] == [(1, "B")]


def test_a_rank_without_a_dump_is_missing_not_blamed(tmp_path: Path) -> None:
    result = analysed([job_of(tmp_path, steps=6, stops_issuing={2: 3}, skip=(2,))])
    fr = result.to_json()["flight_recorder"]
    assert fr["missing_ranks"] == [2] and fr["lagging"] == []
    assert "LS106" not in codes(result)
    assert result.verdict.root_cause is None or result.verdict.root_cause.rank != 2


def test_dumps_of_in_flight_collectives_only(tmp_path: Path) -> None:
    """onlyActive dumps (as NVIDIA's are) hold no completed entry: a rank with nothing in flight
    completed all it issued."""
    result = analysed([job_of(tmp_path, steps=6, stops_issuing={3: 2}, only_active=True)])
    assert result.flight_recorder is not None and result.flight_recorder.lagging_ranks == [3]


def test_a_mismatch_names_the_minority_by_majority(tmp_path: Path) -> None:
    result = analysed([job_of(tmp_path, steps=5, mismatch={(1, 2, 0): "broadcast"})])
    fr = result.flight_recorder
    assert fr is not None and len(fr.mismatches) == 1
    mismatch = fr.mismatches[0]
    assert (mismatch.pg, mismatch.seq, mismatch.what, mismatch.majority, mismatch.minority) == (
        "0", 3, "op", "all_reduce", (1,))
    finding = next(f for f in result.findings if f.code == "LS107")
    assert finding.culprit is not None and finding.culprit.rank == 1
    assert finding.evidence[0].file.endswith("nccl_trace_rank_1")


def test_a_mismatch_between_two_has_no_culprit(tmp_path: Path) -> None:
    result = analysed([job_of(tmp_path, steps=5, mismatch={(1, 2, 1): "broadcast"})])
    finding = next(f for f in result.findings if f.code == "LS107")
    assert finding.culprit is None and finding.ranks == (0, 1) and "no majority" in finding.title


def test_a_size_mismatch_of_a_collective_whose_sizes_must_match(tmp_path: Path) -> None:
    result = analysed([job_of(tmp_path, steps=5, size_mismatch={(3, 2, 0): [[8, 8]]})])
    mismatch = result.flight_recorder.mismatches[0]  # type: ignore[union-attr]
    assert mismatch.what == "sizes/dtypes" and mismatch.minority == (3,)


def test_sizes_of_an_all_to_all_may_differ(tmp_path: Path) -> None:
    plan = four_ranks(W, steps=4, size_mismatch={(3, 2, 0): [[8, 8]]})
    plan.step_ops[0] = ("0", "all_to_all")
    W.write_job(tmp_path, W.simulate(plan))
    result = analysed([tmp_path])
    assert result.flight_recorder is not None and result.flight_recorder.mismatches == []


def test_a_straggler_is_context(tmp_path: Path) -> None:
    result = analysed([job_of(tmp_path, steps=30, late_ns={3: 200_000_000}, stops_issuing={0: 29})])
    fr = result.flight_recorder
    assert fr is not None and fr.arrival_lag_ms[3] == pytest.approx(200.0) and fr.arrival_lag_ms[1] == 0
    finding = next(f for f in result.findings if f.code == "LS108")
    assert finding.role.value == "context" and finding.ranks == (3,)
    assert result.verdict.finding == "LS106" and result.verdict.root_cause.rank == 0  # type: ignore[union-attr]


def test_no_straggler_below_the_threshold(tmp_path: Path) -> None:
    result = analysed([job_of(tmp_path, steps=30, late_ns={3: 5_000_000}, stops_issuing={0: 29})])
    assert "LS108" not in codes(result)


WATCHDOG = ("[rank{rank}]:[E{md} {hms}000 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=32, "
            "NumelOut=32, Timeout(ms)=600000) ran for 600082 milliseconds before timing out.\n")


def watchdog_log(local: datetime, rank: int, seq: int) -> str:
    return WATCHDOG.format(rank=rank, md=local.strftime("%m%d"), hms=local.strftime("%H:%M:%S.%f"), seq=seq)


def test_times_aligned_on_a_watchdog_line(tmp_path: Path) -> None:
    """The logs' clock is UTC+1 h: rank 0's watchdog line for SeqNum 4 is written 600 s after the
    entry's creation, on the logs' clock."""
    logs = tmp_path / "job"
    job_of(logs / "fr", steps=6, stops_issuing={2: 3})
    created = UTC_START + timedelta(milliseconds=300)  # step 3, the first op
    (logs / "train-7-node01.out").write_text(
        watchdog_log(created + timedelta(hours=1, seconds=600), 0, 4) + watchdog_log(
            created + timedelta(hours=1, seconds=600), 1, 4))
    result = analysed([logs])
    fr = result.to_json()["flight_recorder"]
    assert fr["alignment"].startswith("aligned on 2 watchdog timeout line(s)")
    entries = result.view.of(Event.FR_ENTRY)
    first = entries.filter((pl.col("rank") == 0) & (pl.col("line") == 1))["time"][0]
    assert abs(first - (UTC_START + timedelta(hours=1))) < timedelta(milliseconds=2)
    assert HINT_FLIGHT_RECORDER not in result.hints


def test_times_aligned_by_time_zone_without_a_watchdog_line(tmp_path: Path) -> None:
    logs = tmp_path / "job"
    job_of(logs, steps=6, stops_issuing={2: 3})
    failed = UTC_START + timedelta(hours=-5, seconds=612)  # the timeout, on a UTC-5 clock, 12 s late
    (logs / "train-7-node01.out").write_text(
        f"E{failed:%m%d %H:%M:%S}.000000 7100 torch/distributed/elastic/multiprocessing/api.py:869] failed "
        "(exitcode: 1) local_rank: 0 (pid: 7101) of binary: /usr/bin/python3\n")
    fr = analysed([logs]).to_json()["flight_recorder"]
    assert "UTC-05:00" in fr["alignment"]


def test_dumps_alone_are_a_job(tmp_path: Path) -> None:
    result = analysed([job_of(tmp_path, steps=6, stops_issuing={1: 3})])
    assert result.verdict.root_cause is not None and result.verdict.root_cause.rank == 1
    assert any("Flight Recorder dumps alone" in w for w in result.job.warnings)
    assert result.hints == [] and "not aligned" in result.to_json()["flight_recorder"]["alignment"]


def test_fr_option_takes_a_prefix_a_folder_or_a_file(tmp_path: Path) -> None:
    dumps = job_of(tmp_path / "elsewhere", steps=6, stops_issuing={2: 3})
    logs = tmp_path / "job"
    logs.mkdir()
    (logs / "train-7-node01.out").write_text("[rank0]: 2026-12-05 23:00:00,000 - INFO - step 1/10\n")
    for given in ([dumps / "nccl_trace_rank_"], [dumps], sorted(dumps.iterdir())):
        fr = analysed([logs], fr=given).flight_recorder
        assert fr is not None and fr.ranks == [0, 1, 2, 3] and fr.lagging_ranks == [2], given
    with pytest.raises(UsageError, match="no such dump"):
        analysed([logs], fr=[tmp_path / "nothing_"])


def test_dumps_the_logs_name(tmp_path: Path) -> None:
    elsewhere = job_of(tmp_path / "elsewhere", steps=6, stops_issuing={2: 3})
    logs = tmp_path / "job"
    logs.mkdir()
    started = UTC_START + timedelta(seconds=600)
    text = watchdog_log(started, 0, 4)
    text += (f"[rank0]:[I{started:%m%d %H:%M:%S}.100000000 ProcessGroupNCCL.cpp:1721] [PG ID 0 PG GUID 0(default_pg) "
             f"Rank 0] ProcessGroupNCCL dumping nccl trace to {elsewhere}/nccl_trace_rank_0\n")
    text += f"[rank1]:[I{started:%m%d %H:%M:%S}.100000000 FlightRecorder.cpp:99] Finished writing NCCLPG debug " \
            f"info to /tmp/nccl_trace_rank_1\n"
    text += f"+ export TORCH_FR_DUMP_TEMP_FILE={elsewhere}/nccl_trace_rank_\n"
    (logs / "train-7-node01.out").write_text(text)
    job = load_job_with_dumps([logs], ("%x-%j-%N.out",), None, (), ())
    fr = flight_recorder_of(JobView(job.timeline, files=tuple(f.display for f in job.files)))
    assert fr is not None and fr.ranks == [0, 1, 2, 3] and fr.lagging_ranks == [2]
    assert [w for w in job.warnings if "/tmp/nccl_trace_rank_1" in w] == [
        "the logs say a Flight Recorder dump was written to /tmp/nccl_trace_rank_1, which is not here (a node's own "
        "disk?): copy it beside the logs, or give its folder with --fr"]


def test_a_dump_prefix_named_anywhere_in_a_compressed_log_is_followed(tmp_path: Path) -> None:
    # The lines that name dumps are the catalogue's (fr_dump_named events): read with the rest of
    # the log, wherever they stand in it and whatever it is compressed with, never read again.
    job_of(tmp_path / "job" / "fr", steps=6, stops_issuing={2: 3})
    started = UTC_START + timedelta(seconds=600)
    text = "+ export TORCH_FR_DUMP_TEMP_FILE=fr/nccl_trace_rank_\n" + watchdog_log(started, 0, 4)
    text += "".join(f"[rank0]: 2026-12-05 23:{n // 60 % 60:02d}:{n % 60:02d},000 - INFO - step {n}/90000\n"
                    for n in range(2000))
    with gzip.open(tmp_path / "job" / "train-7-node01.out.gz", "wt") as stream:
        stream.write(text)
    job = load_job_with_dumps([tmp_path / "job" / "train-7-node01.out.gz"], ("%x-%j-%N.out",), None, (), ())
    named = job.timeline.filter(pl.col("event") == Event.FR_DUMP_NAMED.value)
    assert named["fields"].struct.field("value").to_list() == ["fr/nccl_trace_rank_"]
    fr = flight_recorder_of(JobView(job.timeline, files=tuple(f.display for f in job.files)))
    assert fr is not None and fr.ranks == [0, 1, 2, 3] and fr.lagging_ranks == [2]


def test_logs_without_dumps_are_analysed_as_before(tmp_path: Path) -> None:
    started = UTC_START + timedelta(seconds=600)
    (tmp_path / "train-7-node01.out").write_text(watchdog_log(started, 0, 4) + watchdog_log(started, 1, 4))
    result = analysed([tmp_path])
    data = result.to_json()
    assert data["flight_recorder"] is None and not result.view.has(Event.FR_DUMP)
    assert HINT_FLIGHT_RECORDER in result.hints
    assert json.loads(json.dumps(data, default=str))["verdict"]["finding"] == "LS101"


def test_the_json_contract(tmp_path: Path) -> None:
    data = analysed([job_of(tmp_path, steps=6, stops_issuing={2: 3})]).to_json()
    fr = data["flight_recorder"]
    assert {"files", "ranks", "missing_ranks", "lagging", "mismatches", "arrival_lag_ms", "alignment"} <= set(fr)
    assert fr["files"][0] == {"file": str(tmp_path / "nccl_trace_rank_0"), "rank": 0, "version": "2.10",
                              "format": "pickle", "entries": 8, "comm_lib_version": "2.27.3"}
    assert {"rank", "pg", "seq", "op"} <= set(fr["lagging"][0])
    assert set(fr["arrival_lag_ms"]) == {"0", "1", "2", "3"}
    json.dumps(data, default=str)


def test_the_prefix_the_batch_script_sets(tmp_path: Path) -> None:
    from logscope.flight_recorder.joining import find_dumps

    dumps = job_of(tmp_path / "shared", steps=4, stops_issuing={1: 2})
    script = f"#!/bin/bash\nexport TORCH_FR_DUMP_TEMP_FILE={dumps}/nccl_trace_rank_\nsrun torchrun train.py\n"
    found = find_dumps([tmp_path / "logs"], (), script)
    assert sorted(p.name for p in found.dumps) == [f"nccl_trace_rank_{r}" for r in range(4)]
    assert find_dumps([tmp_path / "logs"], (), "export TORCH_FR_DUMP_TEMP_FILE=fr/trace_\n").dumps == []


def test_the_dumps_name_the_rank_when_the_logs_infer_another(tmp_path: Path) -> None:
    """The logs (LS101) take rank 1 for the quiet rank: it never reported the timeout, and its last
    log line is a minute before the hang. The dumps show rank 2 never issued the collective the
    others wait in: the verdict is theirs, as the dumps alone say (a rank's entries are its own
    activity on the timeline: rank 1 was active after rank 2 stopped)."""
    logs = tmp_path / "job"
    job_of(logs, steps=6, stops_issuing={2: 3})
    started = UTC_START + timedelta(milliseconds=300, seconds=600)  # rank 0, 2, 3 time out in SeqNum 4
    text = (f"[rank1]:[I{UTC_START - timedelta(seconds=60):%m%d %H:%M:%S.%f}000 ProcessGroupNCCL.cpp:900] "
            "[PG ID 0 PG GUID 0(default_pg) Rank 1] ProcessGroupNCCL initialized with following options\n")
    text += "".join(watchdog_log(started, rank, 4) for rank in (0, 2, 3))
    (logs / "train-7-node01.out").write_text(text)
    result = analysed([logs])
    assert {f.code for f in result.findings} >= {"LS101", "LS106"}
    assert result.verdict.finding == "LS106" and result.verdict.root_cause.rank == 2  # type: ignore[union-attr]
    assert analysed(sorted(logs.glob("nccl_trace_rank_*"))).verdict.root_cause.rank == 2  # type: ignore[union-attr]
