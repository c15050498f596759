"""Reading a Flight Recorder dump never runs code from it and stays bounded: planted pickles are
skipped with their reason."""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import pickletools
from pathlib import Path
from typing import Any

import pytest
from fr_support import fr_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from logscope.flight_recorder import safe_load
from logscope.flight_recorder.dump import MAX_ENTRIES, NotADump, read_dump
from logscope.flight_recorder.reading import read_one
from logscope.flight_recorder.safe_load import UnsafeDump, load_json, load_pickle, prescan
from logscope.ingest.discovery import Skipped

MARKER = "logscope-fr-planted"


class WritesAFile:
    """Unpickled by a trusting loader, this writes a file (os.system would do anything)."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.target, MARKER))


def planted(target: Path, protocol: int) -> bytes:
    data = fr_writer().dump(entries=[])
    data["entries"] = [WritesAFile(target)]
    return pickle.dumps(data, protocol=protocol)


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_a_reduce_that_writes_a_file_runs_nothing_and_is_skipped(tmp_path: Path, protocol: int) -> None:
    target = tmp_path / "written"
    dump = tmp_path / "nccl_trace_rank_0"
    dump.write_bytes(planted(target, protocol))
    # a trusting loader would run it: the test's own proof that the planted file is armed
    pickle.loads(dump.read_bytes())
    assert target.read_text() == MARKER
    target.unlink()
    outcome = read_one(dump)
    assert isinstance(outcome, Skipped)
    assert "refused: pickle opcode" in outcome.reason and ("GLOBAL" in outcome.reason)
    assert not target.exists()


@pytest.mark.parametrize("opcode", [b"R", b"b", b"\x81", b"\x92", b"i", b"o", b"P", b"Q", b"\x82", b"\x93"])
def test_every_opcode_that_reaches_outside_plain_data_is_refused_by_the_prescan(opcode: bytes) -> None:
    data = b"\x80\x02}q\x00" + opcode + b"."
    with pytest.raises(UnsafeDump, match="refused: pickle opcode"):
        prescan(data)


def test_the_unpickler_refuses_every_class_even_past_the_prescan(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """Each guard holds alone: with the prescan let through, the loader still looks up no class."""
    target = tmp_path / "written"
    monkeypatch.setattr(safe_load, "prescan", lambda data: len(data))
    with pytest.raises(UnsafeDump, match="refused: class"):
        load_pickle(planted(target, 2))
    assert not target.exists()


def test_a_persistent_id_is_refused() -> None:
    class Persisting(pickle.Pickler):
        def persistent_id(self, obj: Any) -> Any:
            return "outside" if obj == "x" else None

    stream = io.BytesIO()
    Persisting(stream, protocol=2).dump({"version": "2.10", "entries": ["x"]})
    with pytest.raises(UnsafeDump, match=r"PERSID|BINPERSID"):
        load_pickle(stream.getvalue())


def test_deep_aliasing_is_read_in_bounded_work(tmp_path: Path) -> None:
    """A structure whose every level refers twice to the level below (2**60 paths, a few hundred
    bytes) is never walked whole: only the fields the format names are read, each bounded."""
    bomb: list[Any] = [[1, 2]]
    for _ in range(60):
        bomb = [bomb, bomb]
    writer = fr_writer()
    data = writer.dump(entries=[writer.entry(record_id=0, pg_id=0, pg="0", desc="default_pg", seq=1,
                                             op="all_reduce", created_ns=writer.BASE_NS)])
    entry = data["entries"][0]
    entry["input_sizes"] = bomb
    entry["frames"] = [bomb] * 1000
    entry["process_group"] = ("0", "x" * 10_000_000)
    data["entries"] = [entry] * 1000
    raw = pickle.dumps(data, protocol=2)
    assert len(raw) < 11_000_000
    dump = read_dump(load_pickle(raw), file="f", name="trace_0", fmt="pickle")
    assert dump.entry_count == 1000
    assert dump.entries["shape"][0].startswith("? ")
    assert {len(d) for d in dump.entries["pg_desc"]} == {256}


def test_a_huge_file_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("logscope.flight_recorder.reading.MAX_DUMP_BYTES", 1024)
    dump = tmp_path / "nccl_trace_rank_0"
    with dump.open("wb") as stream:
        stream.write(b"\x80\x02}q\x00(X\x07\x00\x00\x00version" + b"\x00" * 4096)
    outcome = read_one(dump)
    assert isinstance(outcome, Skipped) and "above the 1024 read" in outcome.reason


def test_a_dump_cut_short_is_skipped_with_its_reason(tmp_path: Path) -> None:
    writer = fr_writer()
    whole = pickle.dumps(writer.simulate(writer.Plan(world=2, groups={"0": ("default_pg", [0, 1])},
                                                     step_ops=[("0", "all_reduce")], steps=50))[0], protocol=2)
    for cut in (len(whole) // 3, len(whole) - 1):
        dump = tmp_path / "nccl_trace_rank_0"
        dump.write_bytes(whole[:cut])
        outcome = read_one(dump)
        assert isinstance(outcome, Skipped) and "cut short" in outcome.reason, outcome


def test_bad_json_and_deep_json_are_skipped(tmp_path: Path) -> None:
    for name, text in (("trace_0.json", b'{"version": "2.10", "entries": ['), ("trace_1.json", b"[" * 100_000)):
        (tmp_path / name).write_bytes(text)
        outcome = read_one(tmp_path / name)
        assert isinstance(outcome, Skipped) and "not read" in outcome.reason, outcome


def test_plain_data_that_is_no_dump_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "trace_0").write_bytes(pickle.dumps({"something": "else"}, protocol=2))
    outcome = read_one(tmp_path / "trace_0")
    assert isinstance(outcome, Skipped) and "not a Flight Recorder dump" in outcome.reason
    with pytest.raises(NotADump):
        read_dump([1, 2], file="f", name="trace_0", fmt="pickle")


def test_entries_beyond_the_bound_are_dropped_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("logscope.flight_recorder.dump.MAX_ENTRIES", 10)
    writer = fr_writer()
    one = writer.entry(record_id=0, pg_id=0, pg="0", desc="default_pg", seq=1, op="all_reduce",
                       created_ns=writer.BASE_NS)
    dump = read_dump(writer.dump(entries=[one] * 25 + ["not an entry"]), file="f", name="trace_0", fmt="pickle")
    assert dump.entry_count == 10 and dump.dropped == 16
    assert MAX_ENTRIES > 2000


def test_the_prescan_walks_every_opcode_of_a_real_shape_dump() -> None:
    """Every plain-data opcode PyTorch's and Python's picklers write passes, at each protocol."""
    writer = fr_writer()
    plan = writer.Plan(world=2, groups={"0": ("default_pg", [0, 1])}, step_ops=[("0", "all_reduce")], steps=5,
                       frames=True)
    data = writer.simulate(plan)[0]
    data["entries"][0]["duration_ms"] = 1.25
    data["entries"][0]["long"] = "y" * 300  # a long string and int, walked one opcode at a time
    data["entries"][0]["big"] = 2**80
    for protocol in (2, 3, 4, 5):
        if protocol >= 3:  # (protocol 2 writes bytes as a call of _codecs.encode: refused)
            data["entries"][0]["blob"] = b"\x00" * 300
        raw = pickle.dumps(data, protocol=protocol)
        assert prescan(raw) == len(raw)
        names = {op.name for op, _, _ in pickletools.genops(raw)}
        assert names.isdisjoint({"GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD"})
        assert load_pickle(raw) == pickle.loads(raw)
    del data["entries"][0]["blob"]
    assert load_json(writer.to_json(data))["version"] == "2.10"


def test_protocols_outside_2_to_5_are_refused() -> None:
    with pytest.raises(UnsafeDump, match="protocol 2 to 5"):
        prescan(pickle.dumps({"version": "2.10"}, protocol=1))
    assert os.environ.get("LOGSCOPE_FR_WORKER") is None


def test_a_dump_cut_at_any_byte_is_refused_never_a_crash() -> None:
    writer = fr_writer()
    whole = pickle.dumps(writer.simulate(writer.Plan(world=2, groups={"0": ("default_pg", [0, 1])},
                                                     step_ops=[("0", "all_reduce")], steps=3, frames=True))[0],
                         protocol=2)
    for cut in range(len(whole)):
        with pytest.raises(UnsafeDump):
            load_pickle(whole[:cut])




@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_any_bytes_are_a_dump_or_a_reason(data: bytes) -> None:
    for prefix in (b"", b"\x80\x02", b"\x80\x04\x95"):
        with contextlib.suppress(UnsafeDump, NotADump):
            read_dump(load_pickle(prefix + data), file="f", name="trace_0", fmt="pickle")


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0), st.integers(min_value=0, max_value=255))
def test_a_dump_with_any_byte_changed_is_read_or_refused(where: int, value: int) -> None:
    writer = fr_writer()
    whole = bytearray(pickle.dumps(writer.simulate(writer.Plan(world=2, groups={"0": ("default_pg", [0, 1])},
                                                               step_ops=[("0", "all_reduce")], steps=2))[0],
                                   protocol=2))
    whole[where % len(whole)] = value
    with contextlib.suppress(UnsafeDump, NotADump):
        read_dump(load_pickle(bytes(whole)), file="f", name="trace_0", fmt="pickle")
