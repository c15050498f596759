"""The verdict's outcomes and the evidence each needs (README "Outcomes"), on small built logs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from logscope.analysis import analyze
from logscope.errors import InputError
from logscope.parsers import lines as lines_module
from logscope.parsers.lines import parse_chunk
from logscope.parsers.prefixes import strip_prefixes


def job(tmp_path: Path, text: str, name: str = "train-7-node1.out") -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path


def verdict_of(tmp_path: Path, text: str) -> tuple[str, str]:
    result = analyze([job(tmp_path, text)])
    return result.verdict.category.value, result.verdict.summary


@pytest.mark.parametrize("end", [
    ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_END", "key": "run_stop", "value": null, '
    '"metadata": {"file": "run.py", "lineno": 9, "status": "success"}}',
    "[INFO|trainer_pt_utils.py:907] 2021-05-25 07:09:47,832 >> ***** train metrics *****",
    "`Trainer.fit` stopped: `max_epochs=3` reached.",
    "[after training is done] datetime: 2024-05-01 12:00:00",
    "2026-01-01 00:00:09,000 - INFO - step 10/10 loss 1.0",
])
def test_healthy_needs_a_clean_end(tmp_path: Path, end: str) -> None:
    category, _ = verdict_of(tmp_path, f"2026-01-01 00:00:00,000 - INFO - step 1/10 loss 2.0\n{end}\n")
    assert category == "healthy"


def test_no_failure_and_no_clean_end_is_incomplete(tmp_path: Path) -> None:
    category, summary = verdict_of(tmp_path, "2026-01-01 00:00:00,000 - INFO - step 1/10 loss 2.0\n")
    assert category == "incomplete"
    assert "after step 1" in summary


@pytest.mark.parametrize("failure", [
    "/var/spool/slurmd/job7/slurm_script: line 41:  2222 Segmentation fault      (core dumped) python train.py",
    "node1:12:34 [0] misc/socket.cc:50 NCCL WARN something NCCL says went wrong",
    "[rank3]:[E1115 16:42:37.909000893 ProcessGroupNCCL.cpp:1753] [PG ID 0 PG GUID 0 Rank 3] something failed",
    "[node1:227  :0:227] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)",
    "terminate called after throwing an instance of 'std::runtime_error'",
])
def test_a_failure_line_no_detector_claims_is_at_least_unknown(tmp_path: Path, failure: str) -> None:
    category, _ = verdict_of(tmp_path, f"2026-01-01 00:00:00,000 - INFO - step 1/10 loss 2.0\n{failure}\n")
    assert category not in ("healthy", "incomplete")


def test_a_failure_before_the_run_completed_is_context(tmp_path: Path) -> None:
    text = ("2026-01-01 00:00:00,000 - INFO - step 1/2 loss 2.0\n"
            "AttributeError: module 'fused' has no attribute 'quick_gelu'\n"
            "2026-01-01 00:00:05,000 - INFO - step 2/2 loss 1.0\n")
    assert verdict_of(tmp_path, text)[0] == "healthy"


def test_a_failure_after_the_run_completed_still_counts(tmp_path: Path) -> None:
    text = ("2026-01-01 00:00:05,000 - INFO - step 2/2 loss 1.0\n"
            "2026-01-01 00:00:06,000 - INFO - x\n"
            "[rank1]: ValueError: teardown went wrong\n"
            "2026-01-01 00:00:07,000 - INFO - y\n")
    assert verdict_of(tmp_path, text)[0] == "crash"


def test_no_job_log_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no line of a training job's log"):
        analyze([job(tmp_path, "# How to run\n\nsbatch job.slurm\n", "notes.txt")])


def test_a_document_named_on_the_command_line_is_no_job_log(tmp_path: Path) -> None:
    """A README that quotes a failure line is a README: named explicitly, it is still refused."""
    readme = tmp_path / "README.md"
    readme.write_text("The job failed with:\n\n    node1:12:34 [0] NCCL WARN Cuda failure 'out of memory'\n")
    with pytest.raises(InputError, match=r"README\.md: a \.md file by its name, not a log"):
        analyze([readme])


@pytest.mark.parametrize(("raw", "column", "value"), [
    ("10.223.9.146:   File \"x.py\", line 1", "p_host", "10.223.9.146"),
    ("[1,3]<stderr>:Traceback (most recent call last):", "p_task", 3),  # mpirun's process number, as srun's task
    ("(RayWorker pid=207931, ip=10.0.1.75) x", "p_host", "10.0.1.75"),
    ("[trainer0|0]:x", "p_local_rank", 0),
    ("2025-08-12 09:37:03.463948 worker-9 >> x", "p_host", "worker-9"),
    ("[gpu-node01:12345:0:12400] Caught signal 11", "p_host", "gpu-node01"),
])
def test_launcher_prefixes(raw: str, column: str, value: object) -> None:
    assert strip_prefixes(pl.DataFrame({"raw": [raw]}))[column][0] == value


def test_a_tag_without_its_colon_is_no_torchrun_prefix() -> None:
    """An NCCL build's "[host-0][pid:tid]" head is not "[role0]:"."""
    row = strip_prefixes(pl.DataFrame({"raw": ["[master-0][16101:17880][0][init.cc:1815] NCCL WARN x"]})).row(
        0, named=True)
    assert row["prefix"] is None and row["p_local_rank"] is None


def paste(lines: list[str]) -> list[str]:
    return [e for e in parse_chunk(pl.DataFrame({"line": range(1, len(lines) + 1), "raw": lines}), 2024,
                                   None).events["event"].to_list()]


def test_a_hard_wrapped_paste_is_joined() -> None:
    width = 100
    message = ("[E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to connect to "
               "(172.17.0.2, 44737).")
    other = "(Actor pid=7) Some weights of the model checkpoint were not used when initializing the model: " \
            "['value_head.weight']"
    filler = [f"(Actor pid={n}) {'x' * (width - 17)}"[:width] for n in range(1000, 1003)]
    lines = [*filler, other[:width], other[width:], message[:width], message[width:]]
    assert len({line for line in lines if len(line) == width}) >= 4
    assert "store_error" in paste(lines)
    # cut at the same place but followed by a line that starts a record: not joined
    assert "store_error" not in paste([*filler, other[:width], other[width:], message[:width], "[rank0]: y"])


def _glog_paste(width: int) -> list[str]:
    """torchrun's closing signals and its failure report, pasted from a terminal ``width`` wide."""
    records = [f"W0424 01:17:26.4{n}0000 521279 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] "
               f"Sending process 54132{n} closing signal SIGTERM" for n in range(6)]
    records.append("E0424 01:17:26.952000 521279 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] "
                   "failed (exitcode: -6) local_rank: 6 (pid: 541332) of binary: /usr/bin/python")
    return [record[i:i + width] for record in records for i in range(0, len(record), width)]


@pytest.mark.parametrize("head", ["{n}:", "logs/train-0.out:{n}:", "[pod/trainer-0/main] ",
                                  "Dec 06 10:00:00 login01 bash[4242]: ", "\u00a0\u00a0"])
def test_a_hard_wrapped_paste_is_joined_behind_a_head_on_each_physical_line(head: str) -> None:
    """grep -n numbered (or kubectl, journald, a web page indented) the paste after the terminal cut
    it: the cut lines no longer share one width, or their continuations start with the tool's head.
    The paste is joined behind the heads, as reading takes them off: the failure report says its
    local rank and its exit code."""
    physical = _glog_paste(137)
    wrapped = [head.format(n=n) + line for n, line in enumerate(physical, start=1)]
    found = parse_chunk(pl.DataFrame({"line": range(1, len(wrapped) + 1), "raw": wrapped}), 2024, None).events
    failed = found.filter(pl.col("event") == "worker_failed").row(0, named=True)
    assert (failed["local_rank"], failed["fields"]["exit_code"]) == (6, -6)
    assert found.filter(pl.col("event") == "closing_signal").height == 6


@pytest.mark.parametrize("wrapper", ["", "Dec 06 10:00:00 login01 bash[4242]: "])
def test_time_stamped_records_of_one_width_are_no_hard_wrapped_paste(wrapper: str) -> None:
    """Megatron's progress lines are all one width, and what follows each one's logger head reads
    as no record start: a line the logger stamped at another time is a record of its own, not the
    continuation of the line above (the sample jobs' progress lines were joined in pairs)."""
    progress = [f"{wrapper}[default7]:2026-11-03 11:06:{10 + 8 * n},232 - INFO - iteration {10 * n + 10:>8}/   10000 | "
                f"consumed samples: {5120 * n + 2560:>12} | lm loss: 7.1E+00 | number of nan iterations:   0 |"
                for n in range(6)]
    assert len({len(line) for line in progress}) == 1
    found = parse_chunk(pl.DataFrame({"line": range(1, 7), "raw": progress}), 2026, None).events
    assert found.filter(pl.col("event") == "progress").height == 6


@pytest.mark.parametrize("label", ["[default{r}]:", "{r}: ", ""])
def test_one_record_printed_by_every_rank_at_once_is_no_hard_wrapped_paste(label: str) -> None:
    """A trainer that logs on every rank prints the same progress line on each at the same second:
    lines of one width, one stamp, wrappers alike but for the rank's digit. The next rank's line
    says again what this one said behind that wrapper: it is a record of its own, not the rest of
    this one cut at the width (pairs of them were joined: half the steps lost in a small file)."""
    stamp = "2026-11-03 11:06:{ss:02d},232 - INFO - "
    progress = [f"{label.format(r=r)}{stamp.format(ss=10 + step)}iteration {step:>8}/   10000 | consumed samples: "
                f"{5120 * step:>12} | lm loss: 7.1E+00 | number of nan iterations:   0 |"
                for step in range(1, 4) for r in range(4)]
    assert len({len(line) for line in progress}) == 1
    found = parse_chunk(pl.DataFrame({"line": range(1, len(progress) + 1), "raw": progress}), 2026, None).events
    assert found.filter(pl.col("event") == "progress").height == len(progress)


_paste_line = st.sampled_from(["(Actor pid=7) ", "x" * 40, "y " * 20, "[rank0]: ", "Z", "lower text", " "])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(_paste_line, min_size=0, max_size=8), st.integers(58, 62)), min_size=2, max_size=5))
def test_files_pasted_together_are_joined_as_each_alone(files: list[tuple[list[str], int]]) -> None:
    # A pool's files are tested for the cut together (lines._joined_hard_wraps): each must be
    # joined exactly when _join_hard_wraps alone joins it, at the width and cut-count edges too.
    frames = []
    for pieces, width in files:
        text = "".join(f"{piece}{n}" for n, piece in enumerate(pieces * 3))
        raw = [text[i:i + width] for i in range(0, len(text), width)] or [""]
        frames.append(pl.DataFrame({"line": range(1, len(raw) + 1), "raw": raw}, schema={"line": pl.Int64,
                                                                                         "raw": pl.String}))
    together = lines_module._joined_hard_wraps(frames, [True] * len(frames))
    for frame, got in zip(frames, together, strict=True):
        assert_frame_equal(got, lines_module._join_hard_wraps(frame))
