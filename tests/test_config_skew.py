"""The per-node NCCL table (logscope.detectors.config_skew): its odd nodes out (odd_nodes), which
LS802 names (the majority value and the nodes that differ from it, never a majority out of a tie),
and the table itself, the same whichever way its lines are read."""

from __future__ import annotations

import polars as pl
import pytest
from corpus_support import corpus_views, fresh
from polars.testing import assert_frame_equal

from logscope.detectors import config_skew
from logscope.detectors.config_skew import TABLE_SCHEMA, node_config_table, odd_nodes


def _table(versions: list[str | None]) -> pl.DataFrame:
    return pl.DataFrame([{"node": f"n{i}", "nccl_version": v} for i, v in enumerate(versions)],
                        schema={"node": TABLE_SCHEMA["node"], "nccl_version": TABLE_SCHEMA["nccl_version"]})


@pytest.mark.parametrize(("versions", "expected"), [
    (["2.18.1", "2.18.1", "2.19.3", None], ("2.18.1", {"n2": "2.19.3"})),  # a node that never said: not odd
    (["2.18.1", "2.19.3"], (None, {"n0": "2.18.1", "n1": "2.19.3"})),  # a tie: every node, no majority
    (["2.18.1", "2.18.1", "2.19.3", "2.19.3"], (None, {"n0": "2.18.1", "n1": "2.18.1", "n2": "2.19.3",
                                                       "n3": "2.19.3"})),
    (["2.18.1", "2.18.1"], ("2.18.1", {})),  # all alike
    (["2.18.1", None, None], (None, {})),  # fewer than two nodes said
    ([], (None, {})),
])
def test_odd_nodes_are_those_apart_from_a_strict_majority(versions: list[str | None],
                                                         expected: tuple[str | None, dict[str, str]]) -> None:
    assert odd_nodes(_table(versions), "nccl_version") == expected


def test_the_table_is_the_same_from_every_line_or_from_polars_reductions(monkeypatch: pytest.MonkeyPatch) -> None:
    # Up to CONFIG_ROWS_IN_PYTHON_UP_TO lines every line is read one by one; beyond, polars first
    # reduces the channel lines to one per (node, transport) and the others to one per (node,
    # event, text). The cells are sets of values: both give the same table, on every job the
    # tests know.
    tables = []
    for threshold in (config_skew.CONFIG_ROWS_IN_PYTHON_UP_TO, -1):
        monkeypatch.setattr(config_skew, "CONFIG_ROWS_IN_PYTHON_UP_TO", threshold)
        tables.append([node_config_table(fresh(view)) for _, view in corpus_views()])
    said = [table for table in tables[0] if table.height]
    # The sample jobs and goldens alone give 37 tables (a clone without ../shared), the real logs more.
    assert len(said) > 30 and any(table["transports"].is_not_null().any() for table in said)
    for python, reduced in zip(*tables, strict=True):
        assert_frame_equal(python, reduced)
