"""The per-node NCCL configuration table, and which nodes differ from the rest (a helper module).

:func:`node_config_table` is pure: it reads a :class:`JobView` and returns one row per node with
what NCCL said about its setup at init. LS801 (transport-fallback), LS802 (version-skew) and
LS803 (net-plugin-skew) use it to find the odd node out, and reports can show it as is.

=============  =================================================================================
column         from
=============  =================================================================================
node           the node (else the host) of the lines
nccl_version   ``NCCL version 2.18.1+cuda12.1`` (bare or prefixed)
cuda_driver    ``cudaDriverVersion 12020``
network        ``Using network IB`` / ``Socket`` / ``IBext`` / a plugin name
net_plugin     ``NET/Plugin`` lines and the RDMA/SHARP plugin's ``Plugin Path`` / ``P2P plugin``: the
               plugin loaded, ``none`` (NCCL's internal transports), or ``failed``
ib_devices     ``NET/IB : Using [0]mlx5_0:1/IB ...``; ``none`` for ``NET/IB : No device found``,
               ``no-verbs`` for ``Failed to open libibverbs``
transports     channel transports (``P2P``, ``SHM``, ``NET/IB``, ``NET/Socket``, ...)
nccl_env       ``NCCL_*`` variables NCCL echoed as ``set by environment to``
=============  =================================================================================

Each cell joins the distinct values seen on that node with ``,`` (sorted); it is null when the
node's lines never said. Lines without a node or host (a combined log with no prefixes) cannot be
placed and are left out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import polars as pl

from logscope.detectors.base import JobView, evidence_of
from logscope.model import Culprit, Event

CONFIG_COLUMNS = ("nccl_version", "cuda_driver", "network", "net_plugin", "ib_devices", "transports", "nccl_env")
TABLE_SCHEMA: dict[str, pl.DataType] = {"node": pl.String(), **{c: pl.String() for c in CONFIG_COLUMNS}}

_PLUGIN_LOADED = re.compile(
    r"(?:Loaded (?:net|coll)? ?plugin|Successfully loaded external network plugin|Initialized NET plugin"
    r"|Plugin Path :|P2P plugin(?: v\d+)?)"
    r"\s+(.+?)(?:\s*\(v\d+\))?\s*$", re.IGNORECASE)
# NCCL's loader found no external plugin and went on with its own transports
_PLUGIN_NONE = re.compile(r"No plugin found|using internal (?:implementation|net(?:work)? plugin)|Plugin load returned"
                          r"|Could not find", re.IGNORECASE)
_PLUGIN_FAILED = re.compile(r"Failed to initialize any NET plugin", re.IGNORECASE)
_IB_DEVICE = re.compile(r"\[\d+\]([\w.-]+:\d+/\w+)")


def _place() -> pl.Expr:
    return pl.coalesce("node", "host").alias("node")


def _transport(value: str) -> str:
    parts = value.split("/")
    if parts[0] == "NET" and len(parts) > 1:
        return f"NET/{parts[1]}"
    if parts[0] == "direct":  # old "via direct shared memory"
        return "SHM"
    return parts[0]


def _plugin(message: str) -> str | None:
    if _PLUGIN_FAILED.search(message):
        return "failed"
    m = _PLUGIN_LOADED.search(message)
    if m:
        return m.group(1).strip()
    if _PLUGIN_NONE.search(message):
        return "none"
    return None


def _ib(text: str) -> str | None:
    if "No device found" in text:
        return "none"
    if "libibverbs" in text:
        return "no-verbs"
    devices = _IB_DEVICE.findall(text)
    return " ".join(devices) if devices and "NET/IB" in text else None


def node_config_table(view: JobView) -> pl.DataFrame:
    """One row per node: NCCL version, driver, network, plugin, IB devices, transports, NCCL_* env."""
    # Worked out once per job: LS801, LS802 and the post-mortem report each read it.
    table: pl.DataFrame = view.remember("node config table", lambda: _node_config_table(view))
    return table


# Up to this many lines of these kinds, their rows are read one by one in Python: a small job's
# ~150 cost ~0.4 ms so, against ~1 ms for the two polars queries that reduce them first.
CONFIG_ROWS_IN_PYTHON_UP_TO = 2048
_CONFIG_FIELDS = ("version", "transport", "message", "key", "value")


def _node_config_table(view: JobView) -> pl.DataFrame:
    events = view.narrow_of((Event.NCCL_VERSION, Event.NCCL_DRIVER, Event.NCCL_NETWORK, Event.NCCL_PLUGIN,
                             Event.NCCL_NET_DEVICE, Event.NCCL_CHANNEL, Event.NCCL_ENV),
                            ("node", "host", "event", "text"), _CONFIG_FIELDS)
    if events.height == 0:
        return pl.DataFrame(schema=TABLE_SCHEMA)
    cells: dict[str, dict[str, set[str]]] = {}
    for node_name, kind, text, version, transport, message, key, value_field in _config_rows(events):
        if node_name is None:  # a line that cannot be placed
            continue
        node = str(node_name)
        event = Event(kind)
        column: str | None = None
        value: str | None = None
        if event == Event.NCCL_CHANNEL:
            if transport is not None:
                cells.setdefault(node, {}).setdefault("transports", set()).add(_transport(str(transport)))
            continue
        if event == Event.NCCL_VERSION:
            column, value = "nccl_version", version
        elif event == Event.NCCL_DRIVER:
            column, value = "cuda_driver", version
        elif event == Event.NCCL_NETWORK:
            column, value = "network", transport
        elif event == Event.NCCL_PLUGIN:
            column, value = "net_plugin", _plugin(str(message or text or ""))
        elif event == Event.NCCL_NET_DEVICE:
            if key == "Bootstrap":
                continue
            column, value = "ib_devices", _ib(str(text or ""))
        elif event == Event.NCCL_ENV and key:
            column, value = "nccl_env", f"{key}={value_field}"
        if column and value:
            cells.setdefault(node, {}).setdefault(column, set()).add(str(value))
    rows = [{"node": node, **{c: ",".join(sorted(values[c])) if c in values else None for c in CONFIG_COLUMNS}}
            for node, values in sorted(cells.items())]
    return pl.DataFrame(rows, schema=TABLE_SCHEMA)


def _config_rows(events: pl.DataFrame) -> list[tuple[Any, ...]]:
    """(node, event, text, and the fields of _CONFIG_FIELDS) of every line of ``events`` that can
    tell a cell of the table: all of them when they are few; else, in polars, channel lines made
    one row per (node, transport) and the others one per (node, event, text). The table's cells
    are sets of values: either way gives the same table."""
    said = pl.col("fields").struct
    columns = [_place(), "event", "text", *[said.field(name) for name in _CONFIG_FIELDS]]
    if events.height <= CONFIG_ROWS_IN_PYTHON_UP_TO:
        return events.select(columns).rows()
    placed = events.lazy().with_columns(_place()).filter(pl.col("node").is_not_null())
    is_channel = pl.col("event") == Event.NCCL_CHANNEL.value
    # Channel lines are by far the most numerous (ranks x channels x communicators): reduced to
    # one row per (node, transport) before rows are read one by one. Both in one call.
    channels, rest = pl.collect_all([
        placed.filter(is_channel).select("node", "event", pl.lit(None, dtype=pl.String).alias("text"),
                                         pl.lit(None, dtype=pl.String).alias("version"),
                                         said.field("transport").alias("transport")).drop_nulls("transport").unique(),
        placed.filter(~is_channel).unique(subset=["node", "event", "text"], maintain_order=True).select(columns),
    ], engine="in-memory")
    return [(node, kind, text, version, transport, None, None, None)
            for node, kind, text, version, transport in channels.iter_rows()] + rest.rows()


def node_culprit(node: str, rows: Sequence[dict[str, Any]]) -> Culprit:
    """The culprit a per-node configuration finding names: the node, at its first line among ``rows``
    (its evidence), if it has one there."""
    mine = next((r for r in rows if (r.get("node") or r.get("host")) == node), None)
    return Culprit(host=node, node=node, time=mine.get("time") if mine else None,
                   evidence=evidence_of(mine) if mine else None)


def odd_nodes(table: pl.DataFrame, column: str) -> tuple[str | None, dict[str, str]]:
    """The majority value of ``column`` and the nodes whose (known) value differs from it.

    With no strict majority (two nodes, two values) every node is returned against ``None``.
    """
    # A node's row each: a few rows, read in Python (a filter and its select cost ~0.1 ms a column;
    # a select alone ~75 us, taking the two columns ~3 us).
    known = [(node, value) for node, value in zip(table.get_column("node").to_list(),
                                                  table.get_column(column).to_list(), strict=True)
             if value is not None]
    if len(known) < 2:
        return None, {}
    counts = Counter(value for _, value in known)
    if len(counts) < 2:
        return counts.most_common(1)[0][0], {}
    (top, n_top), (_, n_next) = counts.most_common(2)
    if n_top == n_next:
        return None, {str(node): str(value) for node, value in known}
    return str(top), {str(node): str(value) for node, value in known if value != top}


def render_table(table: pl.DataFrame, columns: Sequence[str], nodes: list[str] | None = None,
                 limit: int = 12) -> str:
    """A plain-text table of ``columns`` per node (the odd nodes first when ``nodes`` is given)."""
    if table.height == 0:
        return ""
    order = [*(nodes or [])]
    order += [n for n in table["node"].to_list() if n not in order]
    by_node = {r["node"]: r for r in table.to_dicts()}
    header = ["node", *columns]
    body = [[str(n), *[str(by_node[n].get(c) or "-") for c in columns]] for n in order[:limit] if n in by_node]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *body]]
    if len(order) > limit:
        lines.append(f"... and {len(order) - limit} more node(s)")
    return "\n".join(lines)


__all__ = ["CONFIG_COLUMNS", "TABLE_SCHEMA", "node_config_table", "node_culprit", "odd_nodes", "render_table"]
