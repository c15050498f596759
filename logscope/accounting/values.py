"""The small value shapes SLURM's outputs share, read the same way by every parser here.

* numbers: a plain integer (22.05's dbv0.0.38, and data_parser's plain ``UINT32``/``TIMESTAMP``)
  or data_parser v0.0.39+'s ``{"set": true, "infinite": false, "number": N}`` (``*_NO_VAL``
  types, SchedMD/slurm src/plugins/data_parser/v0.0.4x/parsers.c);
* states: a string (``"FAILED"``, dbv0.0.38) or a list of the base state and its flags
  (``["FAILED"]``, ``["CANCELLED", "REQUEUED"]``, data_parser ``JOB_STATE``); sacct's text prints
  ``CANCELLED by 1000`` (src/sacct/print.c);
* times: UNIX epochs in JSON (0 for "not yet"), ``2026-11-03T14:05:00`` in sacct/scontrol text
  (``Unknown``/``None``/``N/A`` for none), both taken as the cluster's local time like the logs;
* exit codes: ``1:0`` (return code, signal) in text; JSON objects with ``return_code`` and
  ``signal`` (``signal_id`` in 22.05, ``id`` later).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from logscope.accounting.states import state_table
from logscope.errors import AccountingError
from logscope.textsafe import drop_controls

# SLURM's numbers are 64-bit at most (uint64 and int64 fields, NO_VAL64): anything beyond is no
# value of its (and polars, which holds them, refuses it).
_LOWEST, _HIGHEST = -(2**63), 2**63 - 1
# A time outside these years is taken as no time, as for the logs' timestamps.
_FIRST_YEAR, _LAST_YEAR = 1900, 2999


def number(value: Any) -> int | None:
    """An integer from a plain number or a ``{set, infinite, number}`` struct; None if unset/infinite,
    and for what no 64-bit field holds (``1e400`` reads as an infinite float, ``NaN`` as none)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = int(value)
    if isinstance(value, int):
        return value if _LOWEST <= value <= _HIGHEST else None
    if isinstance(value, dict):
        if value.get("set") is False or value.get("infinite") is True:
            return None
        inner = value.get("number")
        return None if isinstance(inner, dict) else number(inner)  # a number is no struct: no recursion
    if isinstance(value, str) and 0 < len(value.strip()) <= 20 and value.strip().lstrip("-").isdigit():
        return number(int(value))
    return None


def epoch_time(value: Any) -> datetime | None:
    """A JSON time (UNIX epoch, either number shape) as a naive local datetime; 0 is no time, and
    so is a time outside the years 1900-2999."""
    seconds = number(value)
    if not seconds or seconds <= 0:
        return None
    try:
        when = datetime.fromtimestamp(seconds)
    except (OverflowError, OSError, ValueError):
        return None
    return when if _FIRST_YEAR <= when.year <= _LAST_YEAR else None


def text_time(value: str | None) -> datetime | None:
    """A sacct/scontrol time (``2026-11-03T14:05:00``); None for Unknown/None/N/A/empty."""
    if not value or value.strip() in ("Unknown", "None", "N/A", "(null)", ""):
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return when if _FIRST_YEAR <= when.year <= _LAST_YEAR else None


def state_of(value: Any) -> tuple[str, str | None]:
    """(base state, cancelling uid) from any shape: ``"CANCELLED by 1000"``, ``["FAILED"]``,
    ``["CANCELLED", "REQUEUED"]`` (the base state is the one the state table knows as a base;
    a flag such as REQUEUED is the state only when alone)."""
    if isinstance(value, list):
        names = [drop_controls(str(v)).upper() for v in value if v]
        bases = [n for n in names if n in state_table() and n not in _FLAGS]
        chosen = bases[0] if bases else (names[0] if names else "")
        return chosen, None
    if not isinstance(value, str) or not value.strip():
        raise AccountingError(f"a job or step has no state ({value!r})")
    words = drop_controls(value).split()
    base = words[0].upper()
    if len(words) >= 3 and words[1] == "by":
        return base, words[2]
    return base, None


_FLAGS = frozenset({"REQUEUED", "COMPLETING"})


def exit_text(value: str | None) -> tuple[int | None, int | None]:
    """``1:0`` -> (1, 0); anything else -> (None, None) (a part no exit status holds is None)."""
    if not value or ":" not in value:
        return None, None
    code, _, sig = value.strip().partition(":")
    return _status_part(number(code) if code.isdigit() else None), _status_part(number(sig) if sig.isdigit() else None)


def _status_part(value: int | None) -> int | None:
    """A return code or signal as a process's exit status holds it (32 bits), else None."""
    return value if value is not None and 0 <= value < 2**32 else None


def exit_json(value: Any, state: str | None = None) -> tuple[int | None, int | None]:
    """(return code, signal) from an ``exit_code`` object of any version, or a plain number.

    22.05's ``sacct --json`` (dbv0.0.38 ``_dump_job_exit_code``) writes ``"status": "SUCCESS",
    "return_code": 0`` for every process that exited, whatever its code (a FAILED step with ExitCode
    1:0 in ``sacct -P`` reads SUCCESS 0 there; seen in the lab's real records,
    tests/data/accounting/lab/README.md): for a ``state`` other than COMPLETED that code is unknown."""
    if value is None:
        return None, None
    if isinstance(value, dict) and value.get("status") == "SUCCESS" and state not in (None, "COMPLETED"):
        return None, None
    if not isinstance(value, dict):
        raw = number(value)
        if raw is None:
            return None, None
        return (raw >> 8) & 0xFF, raw & 0x7F  # a wait() status (scontrol's dbv0.0.38 exit_code)
    code = _status_part(number(value.get("return_code")))
    signal_part = value.get("signal") or {}
    sig = _status_part(number(signal_part.get("id", signal_part.get("signal_id")))) if isinstance(signal_part, dict) \
        else None
    return code, sig if sig is not None else (0 if code is not None else None)


__all__ = ["epoch_time", "exit_json", "exit_text", "number", "state_of", "text_time"]
