"""What each SLURM job/step state means: loads ``logscope/knowledge/slurm_states.toml``.

The table is data (reviewable, with the SLURM sources it was read from); this module only reads it
and answers questions about a state name.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class StateInfo:
    """One row of the state table."""

    name: str
    meaning: str
    category: str  # a logscope.model.Category value, or "" for none
    severity: str  # a logscope.model.Severity value
    role: str  # root | end | clean | running
    detector: str  # the accounting detector's code, or ""
    happened: str = ""  # LS705's states: what the job or step did ("reached its time limit")
    advice: str = ""  # LS705's states: what to do about it


@cache
def state_table() -> dict[str, StateInfo]:
    """Every state of the table, by name."""
    text = resources.files("logscope.knowledge").joinpath("slurm_states.toml").read_text(encoding="utf-8")
    rows = tomllib.loads(text).get("state", [])
    return {row["name"]: StateInfo(row["name"], row["meaning"], row["category"], row["severity"], row["role"],
                                   row["detector"], row.get("happened", ""), row.get("advice", "")) for row in rows}


def state_info(name: str) -> StateInfo:
    """The table's row for ``name`` (``CANCELLED by 1000`` is ``CANCELLED``); an unknown state
    (a newer SLURM's) is an error-free, role-less row so that it is shown but judged by nobody."""
    base = name.split(" ", 1)[0].upper()
    known = state_table().get(base)
    return known or StateInfo(base, "a state this version of logscope does not know", "", "warning", "", "")


__all__ = ["StateInfo", "state_info", "state_table"]
