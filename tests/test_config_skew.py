"""The per-node NCCL table's odd nodes out (logscope.detectors.config_skew.odd_nodes), which LS802
names: the majority value and the nodes that differ from it, never a majority out of a tie."""

from __future__ import annotations

import polars as pl
import pytest

from logscope.detectors.config_skew import TABLE_SCHEMA, odd_nodes


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
