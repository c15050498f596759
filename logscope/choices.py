"""The fixed sets of values logscope's options take, and the rule selectors, each defined once.

Every option with a fixed set of values (``--format``, ``--color``...) is a :class:`Choice`: the
command line lists its values in ``--help``, completes them in the shell and refuses any other
(exit 2), and the library compares against the same members. ``--select``/``--ignore`` take rule
codes, code prefixes or names, as ruff's do: :func:`selectors` splits and checks them, so a
selector that names no rule is a usage error instead of silently selecting nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum

from logscope.errors import UsageError


class Choice(str, Enum):
    """One value of a fixed set; compares and prints as its value (``Color.AUTO == "auto"``)."""

    def __str__(self) -> str:
        return str(self.value)


class Color(Choice):
    AUTO = "auto"  # colour when writing to a terminal (NO_COLOR honoured)
    ALWAYS = "always"
    NEVER = "never"


class OutputFormat(Choice):
    TEXT = "text"
    JSON = "json"


class LintFormat(Choice):
    TEXT = "text"
    JSON = "json"
    GITHUB = "github"
    SARIF = "sarif"


class TableFormat(Choice):
    """How ``scan`` and ``merge`` write a table (logscope.scan.TABLE_FORMATS)."""

    PARQUET = "parquet"
    CSV = "csv"
    JSONL = "jsonl"


class ScanFormat(Choice):
    """``scan --format``: the summary's (text, json); with ``-o -`` also the table's on standard output."""

    TEXT = "text"
    JSON = "json"
    PARQUET = "parquet"
    CSV = "csv"
    JSONL = "jsonl"


class WatchFormat(Choice):
    TEXT = "text"
    JSONL = "jsonl"


def choice(kind: type[Choice], value: str | Choice, option: str) -> Choice:
    """``value`` as a member of ``kind`` (any case), for values that do not come through the
    command line's own check (a config file, a library caller)."""
    if isinstance(value, kind):
        return value
    for member in kind:
        if member.value == str(value).lower():
            return member
    raise UsageError(f"unknown {option} {value!r}: use {', '.join(m.value for m in kind)}")


def selectors(given: Iterable[str] | None, known: Sequence[tuple[str, str]], option: str) -> list[str]:
    """The selectors of repeated and/or comma-separated ``given`` values, upper-cased; each must be
    a prefix of a code or a name of ``known`` (``(code, name)`` pairs), else a UsageError names it
    and what there is."""
    chosen = [s.strip().upper() for value in given or [] for s in value.split(",") if s.strip()]
    for selector in chosen:
        if not any(key.upper().startswith(selector) for pair in known for key in pair):
            codes = sorted(code for code, _ in known)
            raise UsageError(f"{option} {selector!r} matches no rule (known: {codes[0]} to {codes[-1]}); "
                             "run 'logscope explain' to list them")
    return chosen


def detector_keys() -> list[tuple[str, str]]:
    """``(code, name)`` of every detector (``LS101``, ``collective-hang``)."""
    from logscope.detectors import REGISTRY

    return [(d.code, d.name) for d in REGISTRY]


def lint_keys() -> list[tuple[str, str]]:
    """``(code, name)`` of every lint rule (``LL004``, ``missing-kill-on-bad-exit``)."""
    from logscope.lint import RULES

    return [(code, name) for code, name, _ in RULES]


def complete_detectors(incomplete: str) -> list[str]:
    """Shell completion of ``--select``/``--ignore`` for detectors."""
    return [code for code, _ in detector_keys() if code.startswith(incomplete.upper())]


def complete_lint_rules(incomplete: str) -> list[str]:
    """Shell completion of ``lint --select``/``--ignore``."""
    return [code for code, _ in lint_keys() if code.startswith(incomplete.upper())]


def complete_codes(incomplete: str) -> list[str]:
    """Shell completion of ``explain CODE``: detectors and lint rules."""
    return complete_detectors(incomplete) + complete_lint_rules(incomplete)
