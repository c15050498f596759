"""The shortcuts the detectors take on big timelines (a crash loop's ~96,000 failure rows) hold to
the plain rules they replace: a struct gathered field by field is the gather, an order picked from a
wider set's is the sort, a victim judged once per line's words is is_victim of each row, LS301's
tail of records by bisection is its filter, LS209's rows picked apart are the shared rows' values."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from logscope.detectors import base
from logscope.detectors.base import JobView, field_of, order_key, take
from logscope.detectors.exit_cascade import (
    DETAIL_EVENTS,
    SUMMARY_EVENTS,
    VICTIM_EVENTS,
    ExitCascade,
    Victims,
    _failures,
    is_victim,
    process_key,
)
from logscope.detectors.job_facts import FAILURE_EVENTS
from logscope.detectors.known_message import KnownMessage
from logscope.detectors.nccl_bootstrap_error import NcclBootstrapError
from logscope.model import FIELD_SCHEMA, TIMELINE_SCHEMA, Event
from logscope.timeline import load_job

ROOT = Path(__file__).parents[1]
BASE = datetime(2026, 12, 6, 8, 0, 0)
KINDS = [Event.EXCEPTION, Event.WORKER_FAILED, Event.CLOSING_SIGNAL, Event.XID, Event.NCCL_SOCKET_ERROR]
times = st.one_of(st.none(), st.integers(0, 5).map(lambda s: BASE + timedelta(seconds=s)))
rows = st.fixed_dictionaries({
    "file": st.sampled_from([None, "a.out", "b.out"]),
    "line": st.one_of(st.none(), st.integers(0, 4)),
    "time": times,
    "time_inferred": st.one_of(st.none(), st.booleans()),
    "time_latest": times,
    "rank": st.one_of(st.none(), st.integers(0, 3)),
    "event": st.sampled_from([kind.value for kind in KINDS]),
    "step": st.one_of(st.none(), st.integers(0, 3)),
    "no_fields": st.booleans(),
})


def _frame(data: list[dict[str, Any]], *, null_fields: bool = False) -> pl.DataFrame:
    said_here = ("step", "no_fields")
    full = [{**{c: None for c in TIMELINE_SCHEMA}, **{k: v for k, v in r.items() if k not in said_here},
             "fields": None if null_fields and r["no_fields"] else {**{f: None for f in FIELD_SCHEMA},
                                                                     "step": r["step"]}} for r in data]
    return pl.DataFrame(full, schema=TIMELINE_SCHEMA)


@settings(max_examples=60, deadline=None)
@given(st.lists(rows, max_size=30), st.lists(st.integers(0, 29), max_size=40), st.booleans())
def test_a_frame_taken_field_by_field_is_its_gather(data: list[dict[str, Any]], at: list[int],
                                                    null_fields: bool) -> None:
    frame = _frame(data, null_fields=null_fields)
    positions = pl.Series([n for n in at if n < frame.height], dtype=pl.UInt32)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "TAKE_FIELDWISE_FROM", 0)  # field by field whatever the rows (a crash loop's)
        for chosen in (positions, positions.unique().sort()):
            assert_frame_equal(take(frame, chosen), frame[chosen])
        assert_frame_equal(take(frame.drop("fields"), positions), frame.drop("fields")[positions])


def _seen(got: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["event"], r["file"], r["line"], r["rank"], field_of(r, "step")) for r in got]


@settings(max_examples=60, deadline=None)
@given(st.lists(rows, max_size=40), st.lists(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4),
                                              min_size=1, max_size=5),
       st.sampled_from([2, base.SORT_IN_POLARS_FROM]))
def test_rows_in_order_picked_from_a_wider_set_are_the_sorted_rows(
        data: list[dict[str, Any]], asked: list[list[Event]], sort_from: int) -> None:
    # Each set of kinds asked for, in any order (a wider set first, then fewer, or the other
    # way), comes in order_key's order with ties in timeline order: sorted() of its rows.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "SORT_IN_POLARS_FROM", sort_from)
        patch.setattr(base, "KINDS_APART_UP_TO", 0)  # the gather of big timelines (take)
        view = JobView(events=_frame(data))
        for kinds in [*asked, *reversed(asked)]:
            plain = sorted(base.dicts(view.events.filter(pl.col("event").is_in([k.value for k in kinds]))),
                           key=order_key)
            assert _seen(view.rows_in_order(*kinds)) == _seen(plain)


def _jobs() -> Iterator[tuple[str, JobView]]:
    folders = [p for p in sorted((ROOT / "sample_logs").iterdir()) if p.is_dir()]
    codes = ("LS301", "LS302", "LS402", "LS703", "LS209", "LS501", "LS901")
    folders += [p / "logs" for p in sorted((ROOT / "tests" / "goldens").iterdir())
                if p.name.startswith(codes) and (p / "logs").is_dir()]
    assert len(folders) > 20
    for folder in folders:
        job = load_job([folder])
        yield folder.parent.name if folder.name == "logs" else folder.name, JobView(
            job.timeline, tuple(job.nodes), tuple(f.display for f in job.files),
            {f.display: f.info.node for f in job.files})


@contextmanager
def _polars_paths() -> Iterator[None]:
    """The thresholds lowered: small jobs take the paths of big ones (columnwise dicts with shared
    fields, polars sorts, gathers by take)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "COLUMNWISE_FROM", 2)
        patch.setattr(base, "SORT_IN_POLARS_FROM", 2)
        patch.setattr(base, "KINDS_APART_UP_TO", 0)
        yield


@pytest.mark.parametrize("polars_paths", [False, True])
def test_victims_judged_once_per_line_are_is_victim_of_each_row(polars_paths: bool) -> None:
    with _polars_paths() if polars_paths else pytest.MonkeyPatch.context():
        judged = 0
        for name, view in _jobs():
            failures = _failures(view)
            assert failures.victim == [is_victim(r, failures.signalled) for r in failures.records], name
            judge = Victims(view)
            for row in view.rows_in_order(*FAILURE_EVENTS, Event.CANCELLED, *VICTIM_EVENTS):
                assert judge(row) == is_victim(row), (name, row)
                assert judge(row, failures.signalled) == is_victim(row, failures.signalled), (name, row)
                judged += 1
        assert judged > 500


@pytest.mark.parametrize("polars_paths", [False, True])
def test_ls301_records_after_the_root_are_its_plain_filter(polars_paths: bool) -> None:
    with _polars_paths() if polars_paths else pytest.MonkeyPatch.context():
        roots = 0
        for name, view in _jobs():
            failures = _failures(view)
            for root in [failures.root] if failures.root is not None else []:
                roots += 1
                root_key, at = process_key(root), order_key(root)
                plain = [n for n, (r, key, victim) in enumerate(zip(failures.records, failures.keys,
                                                                     failures.victim, strict=True))
                         if key != root_key and order_key(r) >= at
                         and (victim or Event(r["event"]) in SUMMARY_EVENTS or Event(r["event"]) in DETAIL_EVENTS)]
                assert ExitCascade._after(root, failures) == plain, name
        assert roots > 10


def test_ls209_rows_picked_apart_read_as_the_shared_rows() -> None:
    # Above WHERE_IN_PYTHON_UP_TO rows polars picks LS209's bootstrap lines and only those become
    # dicts: each reads every field as the shared row of the same line does.
    said = [("bootstrapRoot: no route", None), ("", "bootstrapNet: failed"), (None, "Bootstrap : refused"),
            ("nothing here", "bootstrapInit in the text only"), (None, None), ("fine", "fine")]
    data = [{**{c: None for c in TIMELINE_SCHEMA}, "file": "a.out", "line": n, "event": kind, "severity": severity,
             "text": text, "fields": {**{f: None for f in FIELD_SCHEMA}, "message": message, "count": n}}
            for n, (kind, severity, (message, text)) in enumerate(
                (kind, severity, pair) for kind in (Event.NCCL_WARN.value, Event.NCCL_PLUGIN.value,
                                                    Event.KNOWN_MESSAGE.value, Event.EXCEPTION.value)
                for severity in (None, "info", "warning") for pair in said for _ in range(3))]
    frame = pl.DataFrame(data, schema=TIMELINE_SCHEMA)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "WHERE_IN_PYTHON_UP_TO", 4)
        apart_view = JobView(events=frame)
        apart = NcclBootstrapError._bootstrap(apart_view)
        assert not any(key.startswith("rows of:") for key in apart_view._remembered)  # none made shared
        shared_view = JobView(events=frame)
        shared_view.rows(Event.NCCL_WARN, Event.NCCL_PLUGIN, Event.KNOWN_MESSAGE)  # made: shared ones used
        shared = NcclBootstrapError._bootstrap(shared_view)
    assert len(apart) == 54  # 3 kinds, 2 severities not info, 3 wordings, 3 times

    def read(got: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(*(r.get(c) for c in TIMELINE_SCHEMA if c != "fields"), *(field_of(r, f) for f in FIELD_SCHEMA))
                for r in got]

    assert read(apart) == read(shared)


@pytest.mark.parametrize("polars_paths", [False, True])
def test_ls901_passing_over_context_lines_in_polars_finds_what_it_found(polars_paths: bool) -> None:
    # LS901 leaves out in polars the lines of messages without a category (no finding comes of
    # them): its findings are those of every KNOWN_MESSAGE row in order, grouped in Python.
    with _polars_paths() if polars_paths else pytest.MonkeyPatch.context():
        compared = 0
        for name, view in _jobs():
            if not view.has(Event.KNOWN_MESSAGE):
                continue
            got = KnownMessage().detect(view)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(KnownMessage, "_rows", staticmethod(lambda job: job.rows_in_order(Event.KNOWN_MESSAGE)))
                assert got == KnownMessage().detect(view), name
            compared += bool(got)
        assert compared > 3


@settings(max_examples=60, deadline=None)
@given(st.lists(rows, max_size=30), st.lists(st.sampled_from(KINDS), min_size=1, max_size=3), st.booleans(),
       st.sampled_from([0, base.KINDS_APART_UP_TO]))
def test_narrow_of_and_where_read_what_of_gives(data: list[dict[str, Any]], kinds: list[Event], null_fields: bool,
                                                apart_up_to: int) -> None:
    # narrow_of is of() with fewer columns and fields; rows_where's condition, read from the
    # columns it names alone, picks what it picks of of()'s whole rows, on either path.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "KINDS_APART_UP_TO", apart_up_to)
        view = JobView(events=_frame(data, null_fields=null_fields))
        whole = view.of(*kinds)
        narrow = view.narrow_of(tuple(kinds), ("file", "rank"), ("step", "message"))
        assert narrow.columns == ["file", "rank", "fields"]
        assert_frame_equal(narrow.select("file", "rank", pl.col("fields").struct.unnest()),
                           whole.select("file", "rank", pl.col("fields").struct.field("step", "message")))
        assert view.narrow_of((Event.NCCL_INIT,), ("file",)).height == 0
        condition = (pl.col("fields").struct.field("step") >= 1) & (pl.col("rank") != 2)
        picked = whole.filter(condition.fill_null(False))
        assert _seen(view.rows_where(tuple(kinds), condition)) == _seen(base.dicts(picked))
        patch.setattr(base, "WHERE_IN_PYTHON_UP_TO", 0)
        apart = JobView(events=view.events).rows_where(tuple(kinds), condition, apart=True)
        assert _seen(apart) == _seen(base.dicts(picked))


def test_the_node_config_table_read_from_narrow_rows_is_the_table_of_whole_rows() -> None:
    from logscope.detectors import config_skew

    tables = 0
    for _name, view in _jobs():
        got = config_skew._node_config_table(view)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(JobView, "narrow_of", lambda self, events, columns, fields=(): self.of(*events))
            assert_frame_equal(got, config_skew._node_config_table(view))
            patch.setattr(config_skew, "CONFIG_ROWS_IN_PYTHON_UP_TO", 0)  # the polars reduction of big jobs
            assert_frame_equal(got, config_skew._node_config_table(view))
        tables += got.height > 0
    assert tables > 5
