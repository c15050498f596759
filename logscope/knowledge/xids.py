"""Load ``xids.toml``: what the NVIDIA driver's Xid numbers mean (its header gives the sources)."""

from __future__ import annotations

from functools import cache
from importlib import resources

try:
    import tomli as tomllib
except ImportError:  # pragma: no cover - an install without tomli
    import tomllib  # type: ignore[no-redef]

KINDS = ("hardware", "app", "consequence", "warning")
_UNKNOWN = ("see NVIDIA's Xid catalog", "hardware")


@cache
def _table() -> dict[int, tuple[str, str, bool]]:
    text = resources.files("logscope.knowledge").joinpath("xids.toml").read_text(encoding="utf-8")
    table: dict[int, tuple[str, str, bool]] = {}
    for number, entry in tomllib.loads(text)["xid"].items():
        if entry["kind"] not in KINDS:
            raise ValueError(f"Xid {number}: kind must be one of {KINDS}")
        table[int(number)] = (str(entry["meaning"]), str(entry["kind"]), bool(entry.get("critical", False)))
    return table


def xid_meaning(xid: int) -> tuple[str, str]:
    """(meaning, kind) of an Xid; an unknown one reads as hardware."""
    meaning, kind, _ = _table().get(xid, (*_UNKNOWN, False))
    return meaning, kind


def xid_is_critical(xid: int) -> bool:
    """Whether the GPU cannot be used until it is reset or serviced."""
    return _table().get(xid, (*_UNKNOWN, False))[2]


def xid_is_a_cause(xid: int) -> bool:
    """Whether an Xid can stop a job by itself (its kind is hardware or app)."""
    return xid_meaning(xid)[1] in ("hardware", "app")


def known_xids() -> dict[int, tuple[str, str]]:
    return {number: (meaning, kind) for number, (meaning, kind, _) in _table().items()}


__all__ = ["KINDS", "known_xids", "xid_is_a_cause", "xid_is_critical", "xid_meaning"]
