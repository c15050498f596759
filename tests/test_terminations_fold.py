"""fold_terminations finds each terminate line's what() by bisection: the same pairs as the plain
scan it replaced (every what() and teardown of the writer tried), on random files."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from logscope.model import FIELD_SCHEMA, TIMELINE_SCHEMA, Event
from logscope.parsers.terminations import WHAT_WITHIN, fold_terminations

KINDS = {
    "terminate": (Event.CPP_EXCEPTION.value, "terminate called after throwing an instance of 'c10::Error'"),
    "what_unknown": (Event.EXCEPTION.value, "  what():  something odd"),
    "what_known": (Event.KNOWN_MESSAGE.value, "  what():  CUDA error: an illegal memory access"),
    "teardown": (Event.TEARDOWN.value, "To avoid data inconsistency, we are taking the entire process down."),
    "other": (Event.EXCEPTION.value, "RuntimeError: boom"),
}
row = st.tuples(st.sampled_from(sorted(KINDS)), st.integers(0, 2), st.sampled_from(["a", "b"]), st.booleans())


def _events(rows: list[tuple[str, int, str, bool]]) -> pl.DataFrame:
    fields = dict.fromkeys(FIELD_SCHEMA)
    line = 0
    built: list[dict[str, Any]] = []
    for kind, step, host, typed in rows:
        line += step  # 0: several rows of one line
        event, text = KINDS[kind]
        built.append({**dict.fromkeys(TIMELINE_SCHEMA), "file": "f", "line": line, "event": event, "host": host,
                      "text": text, "fields": {**fields, "message": text.strip(),
                                               "error_type": "c10::Error" if typed else None}})
    return pl.DataFrame(built, schema=TIMELINE_SCHEMA)


def _plain(events: pl.DataFrame) -> tuple[set[int], dict[int, str], dict[int, str]]:
    """The rows dropped, the messages and types given, by the scan over every what() and teardown."""
    indexed = events.with_row_index("_r").to_dicts()
    keys = ("task", "host")
    whats = [r for r in indexed if "what():" in (r["text"] or "") and r["event"] != Event.CPP_EXCEPTION.value]
    drop: set[int] = set()
    messages: dict[int, str] = {}
    types: dict[int, str] = {}
    for r in indexed:
        if r["event"] != Event.CPP_EXCEPTION.value:
            continue
        writer, line = tuple(r[k] for k in keys), r["line"]
        what = next((w for w in whats if tuple(w[k] for k in keys) == writer
                     and line < w["line"] <= line + WHAT_WITHIN and w["_r"] not in drop), None)
        if what is None:
            if any(t["event"] == Event.TEARDOWN.value and tuple(t[k] for k in keys) == writer
                   and line - WHAT_WITHIN <= t["line"] < line for t in indexed):
                drop.add(r["_r"])
            continue
        if what["event"] == Event.EXCEPTION.value:
            messages[r["_r"]] = what["fields"]["message"]
            drop.add(what["_r"])
        else:
            if r["fields"]["error_type"]:
                types[what["_r"]] = r["fields"]["error_type"]
            drop.add(r["_r"])
    return drop, messages, types


@settings(max_examples=200, deadline=None)
@given(st.lists(row, max_size=40))
def test_the_pairs_are_the_plain_scans(rows: list[tuple[str, int, str, bool]]) -> None:
    events = _events(rows)
    drop, messages, types = _plain(events)
    folded = fold_terminations(events)
    kept = [n for n in range(events.height) if n not in drop]
    assert folded.height == len(kept)
    for at, got in zip(kept, folded.to_dicts(), strict=True):
        original = events.row(at, named=True)
        assert got["line"] == original["line"] and got["event"] == original["event"]
        assert got["fields"]["message"] == messages.get(at, original["fields"]["message"])
        assert got["fields"]["error_type"] == (original["fields"]["error_type"] or types.get(at))

