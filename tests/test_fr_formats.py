"""Every schema variant reads to the same columns: format versions 2.3 to 2.10, pickle protocols
2 to 5 and JSON, a wrapped ring buffer, coalesced collectives, p2p, an empty pg_config, dumps of
one rank twice, a rank known from the groups alone."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from fr_support import four_ranks, fr_writer

from logscope.flight_recorder.dump import rank_from_name, read_dump
from logscope.flight_recorder.finding import find_in_folders, sniff
from logscope.flight_recorder.reading import read_dumps, read_one
from logscope.flight_recorder.safe_load import load_json, load_pickle

VERSIONS = ["2.3", "2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10"]
W = fr_writer()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("form", ["pickle-2", "pickle-3", "pickle-4", "pickle-5", "json"])
def test_every_version_and_form_reads_to_the_same_columns(tmp_path: Path, version: str, form: str) -> None:
    dumps = W.simulate(four_ranks(W, steps=4, version=version, stops_issuing={2: 3}, frames=True))
    fmt, _, protocol = form.partition("-")
    path = W.write(tmp_path / ("nccl_trace_rank_1" + (".json" if fmt == "json" else "")), dumps[1], fmt=fmt,
                   protocol=int(protocol or 2))
    assert sniff(path) == fmt
    dump = read_one(path)
    assert not isinstance(dump, type(None)) and hasattr(dump, "entries"), dump
    assert dump.rank == 1 and dump.version == version and dump.format == fmt
    assert dump.comm_lib_version == (None if W.library_key(version) is None else "2.27.3")
    assert dump.entries["seq"] == [1, 1, 2, 2, 3, 3, 4, 4]
    assert dump.entries["pg"] == ["0", "1"] * 4 and dump.entries["pg_desc"][:2] == ["default_pg", "TP"]
    assert dump.entries["op"][0] == "nccl:all_reduce" and dump.entries["shape"][0] == "[[4, 8]] Float -> [[4, 8]] Float"
    assert dump.entries["state"] == ["completed"] * 6 + ["scheduled"] * 2
    assert dump.entries["completed_ns"][-1] is None and dump.entries["completed_ns"][0] is not None
    assert dump.entries["thread"][0] == ("pt_main_thread" if version in ("2.8", "2.9", "2.10") else None)
    assert dump.entries["frame"][0] == (None if fmt == "json" else "/workspace/train.py:40 in train_step")
    assert [(s.pg_id, s.last_enqueued, s.last_completed) for s in dump.status] == [(0, 4, 3), (1, 4, 3)]
    assert [(g.name, g.desc, g.ranks) for g in dump.groups] == [("0", "default_pg", (0, 1, 2, 3)), ("1", "TP", (0, 1))]


def test_a_wrapped_ring_buffer_keeps_its_newest_entries() -> None:
    dumps = W.simulate(four_ranks(W, steps=40, buffer=50))
    dump = read_dump(load_pickle(pickle.dumps(dumps[0], protocol=2)), file="f", name="trace_0", fmt="pickle")
    assert dump.entry_count == 50 and dump.entries["seq"][-1] == 40 and dump.entries["index"][0] == 1


def test_coalesced_and_p2p_entries() -> None:
    plan = W.Plan(world=2, groups={"0": ("default_pg", [0, 1])},
                  step_ops=[("0", "all_reduce"), ("0", "all_reduce"), ("0", "send/recv")], steps=3,
                  coalesced_with_previous={1}, p2p={2: (0, 1)})
    dump = read_dump(W.simulate(plan)[1], file="f", name="trace_1", fmt="pickle")
    assert dump.entries["seq"][:3] == [1, 1, 1]  # two ops coalesced share one collective id, then a recv
    assert dump.entries["op_id"][:3] == [1, 2, 3]
    assert dump.entries["is_p2p"][:3] == [False, False, True]
    assert dump.entries["p2p_seq"][:3] == [None, None, 1]
    assert dump.entries["op"][2] == "nccl:recv 1<-0"


def test_an_empty_pg_config_and_groups_from_entries(tmp_path: Path) -> None:
    """torch 2.14's gloo writes one group with an empty name: the groups come from the entries."""
    plan = four_ranks(W, steps=3, backend="gloo")
    data = W.simulate(plan)[3]
    data["pg_config"] = {"": {"name": "", "desc": "", "ranks": "[0, 1]"}}
    W.write(tmp_path / "trace_3", data)
    dump = read_one(tmp_path / "trace_3")
    assert dump.rank == 3 and dump.rank_from == "name"
    assert [g.name for g in dump.groups] == [""]


def test_the_rank_from_the_name_else_from_the_groups(tmp_path: Path) -> None:
    assert [rank_from_name(n) for n in ("nccl_trace_rank_12", "_dump_3", "trace_7.json", "comm_lib_trace_rank_0",
                                        "fr.pkl")] == [12, 3, 7, 0, None]
    data = W.simulate(four_ranks(W, steps=2))[2]
    data["pg_config"]["9"] = {"name": "9", "desc": "EXPERT_DATA_PARALLEL_GROUP", "ranks": "[2]"}
    W.write(tmp_path / "fr.pkl", data)
    dump = read_one(tmp_path / "fr.pkl")
    assert dump.rank == 2 and dump.rank_from == "groups"
    del data["pg_config"]["9"]
    W.write(tmp_path / "other.pkl", data)
    assert "no rank" in read_one(tmp_path / "other.pkl").reason


def test_one_dump_per_rank_the_pickle_of_a_pickle_and_json_pair(tmp_path: Path) -> None:
    dumps = W.simulate(four_ranks(W, steps=3, stops_issuing={2: 2}))
    W.write_job(tmp_path, dumps, prefix="trace_")
    W.write_job(tmp_path, dumps, prefix="trace_", fmt="json")
    found = find_in_folders([tmp_path])
    assert len(found) == 8
    read, skipped = read_dumps(found, lambda dump: dump.entry_count)
    assert [(d.rank, d.format, count) for d, count in read] == [(r, "pickle", 6 if r != 2 else 4) for r in range(4)]
    assert len(skipped) == 4 and all("another copy of rank" in s.reason for s in skipped)


def test_json_counters_are_text_and_unknown_times_zero() -> None:
    dumps = W.simulate(four_ranks(W, steps=2, stops_issuing={1: 1}))
    raw = load_json(W.to_json(dumps[0]))
    assert raw["pg_status"]["0"]["last_enqueued_collective"] == "2"
    dump = read_dump(raw, file="f", name="trace_0.json", fmt="json")
    assert dump.status[0].last_enqueued == 2 and dump.entries["completed_ns"][-1] is None
    empty = W.dump(groups={"0": ("default_pg", [0, 1])})
    assert "entries" not in load_json(W.to_json(empty))
    assert read_dump(load_json(W.to_json(empty)), file="f", name="trace_0.json", fmt="json").entry_count == 0


def test_the_reader_keeps_what_is_in_flight_and_each_groups_last_entries(tmp_path: Path) -> None:
    """A long run's buffer: the entries still in flight and each group's last 64 are read into
    columns; the count is of every entry."""
    dumps = W.simulate(four_ranks(W, steps=300, stops_issuing={2: 298}, buffer=2000))
    W.write(tmp_path / "nccl_trace_rank_0", dumps[0])
    dump = read_one(tmp_path / "nccl_trace_rank_0")
    assert dump.entry_count == 2 * 299
    assert dump.entries["pg"].count("0") == 64 and dump.entries["pg"].count("1") == 64
    assert dump.entries["seq"][-1] == 299 and dump.entries["state"][-1] == "scheduled"
    assert dump.entries["index"][0] == 2 * 299 - 128 + 1  # the places in the dump are kept
