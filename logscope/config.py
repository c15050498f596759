"""Settings from a config file, found as ruff finds its own.

From the current folder upward, the first folder holding ``.logscope.toml`` (settings at its top
level) or a ``pyproject.toml`` with a ``[tool.logscope]`` table gives the settings; a
``pyproject.toml`` without that table is passed over. ``logscope --config FILE`` names the file
instead, ``logscope --isolated`` reads none. Options given on the command line override the file::

    [tool.logscope]                 # or, in .logscope.toml, the same keys at the top level
    pattern = ["%x-%j-%N.out"]      # the logs' SLURM --output pattern(s) (--pattern)
    select = ["LS1", "LS2"]         # detectors analyze/report run (--select)
    ignore = ["LS305"]              # detectors they skip (--ignore)
    color = "never"                 # auto, always or never (--color)

    [tool.logscope.lint]
    select = ["LL"]                 # lint rules (lint --select)
    ignore = ["LL003"]              # (lint --ignore)

    [tool.logscope.watch]
    stall = 300                     # seconds without progress that make a stall (watch --stall)
    interval = 5                    # seconds between looks (watch --interval)

A key logscope does not know, or a value of the wrong kind, is a usage error naming the file (a
typo must not be silently ignored).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logscope.choices import Color, choice, detector_keys, lint_keys, selectors
from logscope.errors import UsageError, printable

try:
    import tomli as tomllib
except ImportError:  # pragma: no cover - an install without tomli (Python 3.11+ has tomllib)
    import tomllib  # type: ignore[no-redef]

FILE_NAMES = (".logscope.toml", "pyproject.toml")


@dataclass(frozen=True)
class Settings:
    """What a config file says; empty (``Settings()``) where there is none."""

    path: Path | None = None
    pattern: tuple[str, ...] = ()
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    color: Color | None = None
    lint_select: tuple[str, ...] | None = None
    lint_ignore: tuple[str, ...] | None = None
    stall: float | None = None
    interval: float | None = None


def find(start: Path) -> Path | None:
    """The config file for ``start`` (a folder): the nearest ``.logscope.toml``, or
    ``pyproject.toml`` with ``[tool.logscope]``, in it or a folder above it."""
    start = start.absolute()
    for folder in (start, *start.parents):
        for name in FILE_NAMES:
            candidate = folder / name
            if not candidate.is_file():
                continue
            if name == "pyproject.toml" and "logscope" not in _read(candidate).get("tool", {}):
                continue
            return candidate
    return None


def load(explicit: Path | None = None, *, isolated: bool = False, start: Path | None = None) -> Settings:
    """The settings of ``explicit``, else of the file :func:`find` finds from ``start`` (the
    current folder); none with ``isolated``."""
    if isolated:
        return Settings()
    path = explicit if explicit is not None else find(start or Path.cwd())
    if path is None:
        return Settings()
    if not path.is_file():
        raise UsageError(f"--config {printable(str(path))}: no such file")
    data = _read(path)
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("logscope", {})
    return parse(data, path)


def parse(data: Mapping[str, Any], path: Path) -> Settings:
    """Settings from a config table; ``path`` names the file in messages."""
    where = printable(str(path))
    _known(data, {"pattern", "select", "ignore", "color", "lint", "watch"}, where, "")
    lint = _table(data, "lint", where)
    watch = _table(data, "watch", where)
    _known(lint, {"select", "ignore"}, where, "lint.")
    _known(watch, {"stall", "interval"}, where, "watch.")
    color = data.get("color")
    if color is not None and not isinstance(color, str):
        raise UsageError(f"{where}: color wants auto, always or never (got {color!r})")
    return Settings(
        path=path,
        pattern=tuple(_strings(data, "pattern", where) or ()),
        select=_selection(data, "select", where, detector_keys()),
        ignore=_selection(data, "ignore", where, detector_keys()),
        color=choice(Color, color, f"color in {where}") if color is not None else None,  # type: ignore[arg-type]
        lint_select=_selection(lint, "select", where, lint_keys(), "lint."),
        lint_ignore=_selection(lint, "ignore", where, lint_keys(), "lint."),
        stall=_seconds(watch, "stall", where),
        interval=_seconds(watch, "interval", where),
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"{printable(str(path))}: cannot read ({error.strerror or error})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{printable(str(path))}: not valid TOML ({error})") from None


def _known(table: Mapping[str, Any], keys: set[str], where: str, prefix: str) -> None:
    unknown = sorted(set(table) - keys)
    if unknown:
        raise UsageError(f"{where}: unknown setting {prefix}{unknown[0]} (known: "
                         f"{', '.join(prefix + k for k in sorted(keys))})")


def _table(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise UsageError(f"{where}: {key} wants a table ([tool.logscope.{key}])")
    return value


def _strings(table: Mapping[str, Any], key: str, where: str, prefix: str = "") -> list[str] | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: {prefix}{key} wants a list of strings (got {value!r})")
    return value


def _selection(table: Mapping[str, Any], key: str, where: str, known: list[tuple[str, str]],
               prefix: str = "") -> tuple[str, ...] | None:
    value = _strings(table, key, where, prefix)
    return None if value is None else tuple(selectors(value, known, f"{prefix}{key} in {where}:"))


def _seconds(table: Mapping[str, Any], key: str, where: str) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise UsageError(f"{where}: watch.{key} wants a number of seconds above 0 (got {value!r})")
    return float(value)
