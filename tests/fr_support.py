"""Helpers for the Flight Recorder tests: tools/fr_writer.py loaded from its file, and a job read
from a folder the way ``logscope analyze`` reads it."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from logscope.analysis import Analysis, analyze

ROOT = Path(__file__).resolve().parents[1]
SHARED_FR = ROOT.parent / "shared" / "fr"


def fr_writer() -> ModuleType:
    """tools/fr_writer.py (tools/ is not an installed package), loaded once."""
    if "fr_writer" in sys.modules:
        return sys.modules["fr_writer"]
    spec = importlib.util.spec_from_file_location("fr_writer", ROOT / "tools" / "fr_writer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fr_writer"] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


def analysed(paths: Sequence[Path], fr: Sequence[Path] = ()) -> Analysis:
    return analyze(list(paths), fr=list(fr))


def four_ranks(writer: ModuleType, **plan: object) -> object:
    """A 4-rank job: the world and two pairs (TP ranks 0-1 and 2-3), an all_reduce on each per step."""
    return writer.Plan(world=4, groups={"0": ("default_pg", [0, 1, 2, 3]), "1": ("TP", [0, 1]), "2": ("TP", [2, 3])},
                       step_ops=[("0", "all_reduce"), ("1", "all_reduce"), ("2", "all_reduce")], **plan)
