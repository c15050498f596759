"""torchrun's multi-line records folded into one event each (parsers/records.assemble_records): the
records of different files, srun tasks and hosts kept apart, each read in line order, whatever
order the events come in."""

from __future__ import annotations

import random
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from logscope.parsers.lines import parse_chunk
from logscope.parsers.records import _fold, _starts_record, _stated_times, assemble_records

# Two nodes' torchrun agents writing into one shared file through srun --label ("0: ", "1: "):
# their ChildFailedError records interleave line by line.
NODE = """\
{t}: [W1203 07:18:08.123000 1234 torch/distributed/elastic/multiprocessing/api.py:897] \
Sending process {pid} closing signal SIGTERM
{t}: torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
{t}: ============================================================
{t}: train.py FAILED
{t}: ------------------------------------------------------------
{t}: Failures:
{t}:   <NO_OTHER_FAILURES>
{t}: ------------------------------------------------------------
{t}: Root Cause (first observed failure):
{t}: [0]:
{t}:   time      : 2026-12-03_07:18:0{t}
{t}:   host      : node0{n}
{t}:   rank      : {rank} (local_rank: 0)
{t}:   exitcode  : {code} (pid: {pid})
{t}:   error_file: <N/A>
{t}:   traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
{t}: ============================================================
"""


def _shared_file_lines() -> list[str]:
    first = NODE.format(t=0, n=1, rank=0, code=1, pid=4001).splitlines()
    second = NODE.format(t=1, n=2, rank=4, code=-15, pid=5002).splitlines()
    return [line for pair in zip(first, second, strict=True) for line in pair]


def _events(lines: list[str]) -> pl.DataFrame:
    frame = pl.DataFrame({"line": list(range(1, len(lines) + 1)), "raw": lines},
                         schema={"line": pl.Int64, "raw": pl.String})
    events = parse_chunk(frame, 2026, None).events
    return events.with_columns(pl.lit(0, dtype=pl.UInt32).alias("_file"))


def _reference(events: pl.DataFrame, apart: list[str]) -> pl.DataFrame:
    """The records folded as polars grouped them before: groups in order of first appearance, each
    sorted by line."""
    said = pl.col("fields").struct
    records = events.filter(pl.col("event").is_in(["child_failure", "launch_config", "rendezvous"]))
    lines = records.select(pl.exclude("fields"), said.field("key").alias("_record_key"),
                           said.field("value").alias("_record_value"))
    built: list[dict[str, Any]] = []
    for _, group in lines.group_by([*apart, "task", "host"], maintain_order=True):
        rows = group.sort("line").to_dicts()
        built.extend(_fold([(r["line"], r["event"], r["_record_key"], r["_record_value"], n)
                            for n, r in enumerate(rows)],
                           {n: r for n, r in enumerate(rows) if _starts_record(r["event"], r["_record_key"])}))
    return _stated_times(pl.DataFrame(built, schema=events.schema))


def _line(row: dict[str, Any]) -> int:
    return int(row["line"])


def _folded(events: pl.DataFrame) -> list[dict[str, Any]]:
    out = assemble_records(events, apart=["_file"])
    return out.filter(pl.col("event").is_in(["child_failure", "launch_config", "rendezvous"])).to_dicts()


def test_records_of_two_srun_tasks_interleaved_in_one_file_are_folded_apart() -> None:
    events = _events(_shared_file_lines())
    folded = _folded(events)
    failures = sorted((r["task"], r["fields"]["exit_code"], r["rank"]) for r in folded if r["event"] == "child_failure")
    assert failures == [(0, 1, 0), (1, -15, 4)]
    assert_frame_equal(pl.DataFrame(folded, schema=events.schema), _reference(events, ["_file"]))


@pytest.mark.parametrize("seed", range(5))
def test_records_fold_the_same_whatever_order_their_lines_come_in(seed: int) -> None:
    events = _events(_shared_file_lines())
    order = list(range(events.height))
    random.Random(seed).shuffle(order)
    shuffled = events[order]
    assert sorted(_folded(shuffled), key=_line) == sorted(_folded(events), key=_line)
    assert _folded(shuffled) == _reference(shuffled, ["_file"]).to_dicts()
