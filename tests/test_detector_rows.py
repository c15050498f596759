"""The detectors' row helpers (logscope.detectors.base): the polars order is order_key's, the
narrowed dicts read every field alike, and the rows a view shares are those of its frames."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from logscope.analysis import run_detectors
from logscope.detectors import REGISTRY, base
from logscope.detectors.base import (
    COLUMNWISE_FROM,
    SORT_IN_POLARS_FROM,
    JobView,
    dicts,
    ends_in_order,
    field_of,
    in_order,
    last_in_order,
    order_key,
    ordered_dicts,
)
from logscope.model import FIELD_SCHEMA, TIMELINE_SCHEMA, Event
from logscope.timeline import load_job

BASE = datetime(2026, 12, 3, 21, 0, 0)
times = st.one_of(st.none(), st.integers(0, 5).map(lambda s: BASE + timedelta(seconds=s)))
rows = st.fixed_dictionaries({
    "file": st.sampled_from([None, "", "a.out", "b.out"]),
    "line": st.one_of(st.none(), st.integers(0, 4)),
    "time": times,
    "time_inferred": st.one_of(st.none(), st.booleans()),
    "time_latest": times,
    "rank": st.one_of(st.none(), st.integers(0, 3)),  # tells rows with equal keys apart
    "step": st.one_of(st.none(), st.integers(0, 9)),
})


def _frame(data: list[dict[str, Any]]) -> pl.DataFrame:
    full = [{**{c: None for c in TIMELINE_SCHEMA}, **{k: v for k, v in r.items() if k != "step"},
             "fields": {**{f: None for f in FIELD_SCHEMA}, "step": r["step"]}} for r in data]
    return pl.DataFrame(full, schema=TIMELINE_SCHEMA)


@settings(max_examples=60, deadline=None)
@given(st.lists(rows, max_size=40),
       st.sampled_from([(4, 4, 3), (COLUMNWISE_FROM, SORT_IN_POLARS_FROM, base.LAST_IN_POLARS_FROM)]))
def test_polars_order_is_order_key_order(data: list[dict[str, Any]], thresholds: tuple[int, int, int]) -> None:
    # With the thresholds lowered, small frames take the polars paths too.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "COLUMNWISE_FROM", thresholds[0])
        patch.setattr(base, "SORT_IN_POLARS_FROM", thresholds[1])
        patch.setattr(base, "LAST_IN_POLARS_FROM", thresholds[2])
        _check_order(_frame(data))


def _check_order(frame: pl.DataFrame) -> None:
    expected = sorted(frame.to_dicts(), key=order_key)
    assert [(r["file"], r["line"], r["rank"]) for r in in_order(frame).to_dicts()] == [
        (r["file"], r["line"], r["rank"]) for r in expected]
    got = ordered_dicts(frame)
    assert [(r["file"], r["line"], r["rank"], field_of(r, "step")) for r in got] == [
        (r["file"], r["line"], r["rank"], field_of(r, "step")) for r in expected]
    seen = [(r["file"], r["line"], r["rank"], field_of(r, "step")) for r in expected]
    for count in (1, 3):
        assert [(r["file"], r["line"], r["rank"], field_of(r, "step")) for r in ends_in_order(frame, count)] == \
            seen[:count]
        assert [(r["file"], r["line"], r["rank"], field_of(r, "step"))
                for r in ends_in_order(frame, count, last=True)] == seen[-count:]
    last = last_in_order(frame)
    if expected:
        assert last is not None
        assert (last["file"], last["line"], last["rank"]) == (expected[-1]["file"], expected[-1]["line"],
                                                              expected[-1]["rank"])
    else:
        assert last is None


def test_a_big_frame_gives_only_the_fields_it_has_and_every_field_reads_alike() -> None:
    data = [{"file": "a.out", "line": n, "time": BASE, "time_inferred": False, "time_latest": BASE,
             "rank": 0, "step": n if n % 2 else None} for n in range(COLUMNWISE_FROM)]
    frame = _frame(data)
    narrowed = dicts(frame)
    assert set(narrowed[1]["fields"]) == {"step"}
    full = frame.to_dicts()
    for name in FIELD_SCHEMA:
        assert [field_of(r, name) for r in narrowed] == [field_of(r, name) for r in full]
    assert dicts(frame.head(COLUMNWISE_FROM - 1)) == full[:COLUMNWISE_FROM - 1]  # small: as it is


values = st.fixed_dictionaries({
    "file": st.one_of(st.none(), st.text(max_size=5)),
    "line": st.one_of(st.none(), st.integers(-2**40, 2**40)),
    "time": times,
    "time_inferred": st.one_of(st.none(), st.booleans()),
    "rank": st.one_of(st.none(), st.integers(0, 3)),
    "loss": st.one_of(st.none(), st.floats(allow_nan=False)),
    "message": st.one_of(st.none(), st.text(max_size=5)),
    "no_fields": st.booleans(),
})


@settings(max_examples=40, deadline=None)
@given(st.lists(values, min_size=COLUMNWISE_FROM, max_size=COLUMNWISE_FROM + 8))
def test_dicts_made_column_by_column_read_as_polars_to_dicts(data: list[dict[str, Any]]) -> None:
    # Every column of every dtype the timeline has, a row without fields (None) and the fields
    # no row has (left out, read as None) read as polars' own to_dicts gives them.
    said_here = ("loss", "message", "no_fields")
    full = [{**{c: None for c in TIMELINE_SCHEMA}, **{k: v for k, v in r.items() if k not in said_here},
             "fields": None if r["no_fields"] else {**{f: None for f in FIELD_SCHEMA}, "loss": r["loss"],
                                                    "message": r["message"]}} for r in data]
    frame = pl.DataFrame(full, schema=TIMELINE_SCHEMA)
    expected, got = frame.to_dicts(), dicts(frame)
    assert [{k: v for k, v in r.items() if k != "fields"} for r in got] == [
        {k: v for k, v in r.items() if k != "fields"} for r in expected]
    assert [r["fields"] is None for r in got] == [r["no_fields"] for r in data]
    for name in FIELD_SCHEMA:
        assert [field_of(r, name) for r in got] == [field_of(r, name) for r in expected]
    said = {name for name in ("loss", "message") if any(r[name] is not None and not r["no_fields"] for r in data)}
    kept = said or {next(iter(FIELD_SCHEMA))}  # a frame with no field said keeps one, all null
    assert all(set(r["fields"]) == kept for r in got if r["fields"] is not None)
    assert dicts(frame.drop("fields")) == frame.drop("fields").to_dicts()


KINDS = [Event.EXCEPTION, Event.WORKER_FAILED, Event.CLOSING_SIGNAL, Event.XID]
event_rows = st.tuples(rows, st.sampled_from([kind.value for kind in KINDS]))


def _view(data: list[tuple[dict[str, Any], str]]) -> JobView:
    frame = _frame([row for row, _ in data]).with_columns(
        pl.Series("event", [kind for _, kind in data], dtype=pl.String))
    return JobView(events=frame)


def _seen(got: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["event"], r["file"], r["line"], r["rank"], field_of(r, "step")) for r in got]


def _interleaved() -> list[tuple[dict[str, Any], str]]:
    """Rows of two kinds, one after the other's: merged, they must keep the timeline's order."""
    row = {"file": "a.out", "time": None, "time_inferred": None, "time_latest": None, "rank": None, "step": None}
    return [({**row, "line": n}, kind.value) for n, kind in enumerate([Event.EXCEPTION, Event.XID, Event.EXCEPTION])]


@settings(max_examples=60, deadline=None)
@given(st.lists(event_rows, max_size=40), st.lists(st.sampled_from(KINDS), min_size=1, max_size=3),
       st.sampled_from([4, COLUMNWISE_FROM]))
@example(_interleaved(), [Event.EXCEPTION, Event.XID], COLUMNWISE_FROM)  # merged in Python (few rows)
@example(_interleaved(), [Event.EXCEPTION, Event.XID], 2)  # merged by polars
def test_a_views_shared_rows_are_the_rows_of_its_frames(data: list[tuple[dict[str, Any], str]], kinds: list[Event],
                                                        narrow_from: int) -> None:
    # rows / rows_in_order / rows_where give what dicts / ordered_dicts of the view's frame give (of
    # the rows a condition picks), asked in any order and any number of times; a caller changing
    # the list it got changes no other's.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "COLUMNWISE_FROM", narrow_from)
        patch.setattr(base, "SORT_IN_POLARS_FROM", narrow_from)
        view = _view(data)
        for _ in range(2):
            in_timeline = view.rows(*kinds)
            assert _seen(in_timeline) == _seen(dicts(view.of(*kinds)))
            ordered = view.rows_in_order(*kinds)
            assert _seen(ordered) == _seen(ordered_dicts(view.of(*kinds)))
            ranked = pl.col("rank") == 1  # null where a row has no rank: not taken
            assert _seen(view.rows_where(tuple(kinds), ranked)) == _seen(dicts(view.of(*kinds).filter(ranked)))
            in_timeline.clear()
            ordered.reverse()


@settings(max_examples=60, deadline=None)
@given(st.lists(event_rows, max_size=40), st.lists(st.lists(st.sampled_from([*KINDS, Event.NCCL_INIT]), min_size=1,
                                                           max_size=3), min_size=1, max_size=4),
       st.sampled_from([0, base.KINDS_APART_UP_TO]))
def test_a_views_frames_are_its_timelines_rows_of_those_kinds(data: list[tuple[dict[str, Any], str]],
                                                              asked: list[list[Event]], apart_up_to: int) -> None:
    # of(): a kind alone sliced from the timeline kind after kind (small jobs) or gathered, several
    # kinds gathered, a kind the job lacks none: each the timeline's own rows of those kinds, in order.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "KINDS_APART_UP_TO", apart_up_to)
        view = _view(data)
        for kinds in [*asked, *asked]:
            expected = view.events.filter(pl.col("event").is_in([kind.value for kind in kinds]))
            assert_frame_equal(view.of(*kinds), expected)


def test_detectors_leave_the_shared_rows_as_they_were() -> None:
    # The rows are shared between detectors: one that changed a row would change what the
    # others read. Every detector runs on the sample jobs; every row stays as converted.
    samples = sorted(p for p in (Path(__file__).parents[1] / "sample_logs").iterdir() if p.is_dir())
    assert samples
    for sample in samples:
        job = load_job([sample])
        view = JobView(job.timeline, tuple(job.nodes), tuple(f.display for f in job.files),
                       {f.display: f.info.node for f in job.files})
        every_kind = [Event(kind) for kind in job.timeline["event"].unique().to_list()]
        before = copy.deepcopy(view.rows(*every_kind))
        run_detectors(view, REGISTRY)
        assert view.rows(*every_kind) == before, sample.name


def test_the_bootstrap_detector_picks_in_polars_the_rows_its_python_rules_pick() -> None:
    # LS209 lets polars pick its rows among thousands (a crash loop's NCCL WARN and exception lines),
    # with the rules it applied row by row in Python: a severity other than "info" (none counts),
    # the message, else the line's text when the message is empty, and for invalid usage the
    # message and the text joined by a space (a match may span the two).
    from logscope.detectors.nccl_bootstrap_error import BOOTSTRAP, INVALID_USAGE, NcclBootstrapError

    said = [("bootstrapRoot: no route", None), ("", "bootstrapNet: failed"), (None, "Bootstrap : refused"),
            ("nothing here", "bootstrapInit in the text only"), ("ncclInvalidUsage", None), ("an invalid", "usage"),
            ("invalid", "usage of it"), (None, None), ("fine", "fine")]
    data = [{**{c: None for c in TIMELINE_SCHEMA}, "file": "a.out", "line": n, "event": kind, "severity": severity,
             "text": text, "fields": {**{f: None for f in FIELD_SCHEMA}, "message": message}}
            for n, (kind, severity, (message, text)) in enumerate(
                (kind, severity, pair) for kind in (Event.NCCL_WARN.value, Event.EXCEPTION.value)
                for severity in (None, "info", "warning") for pair in said)]
    view = JobView(events=pl.DataFrame(data, schema=TIMELINE_SCHEMA))
    bootstrap = [r for r in view.rows(Event.NCCL_WARN, Event.NCCL_PLUGIN, Event.KNOWN_MESSAGE)
                 if str(r.get("severity")) != "info"
                 and BOOTSTRAP.search(str(field_of(r, "message") or r.get("text") or ""))]
    invalid = [r for r in view.rows(Event.EXCEPTION, Event.CPP_EXCEPTION)
               if INVALID_USAGE.search(f"{field_of(r, 'message') or ''} {r.get('text') or ''}")]
    assert len(bootstrap) == 6 and len(invalid) == 9
    assert NcclBootstrapError._bootstrap(view) == bootstrap
    assert NcclBootstrapError._invalid_usage(view) == invalid  # no NCCL init line: none happened before
