"""The detector registry is explicit, complete, and every detector documents itself."""

from __future__ import annotations

import ast
import pkgutil
import re
from pathlib import Path

import pytest
from corpus_support import corpus_views

import logscope.detectors as detectors_package
from logscope.detectors import REGISTRY
from logscope.detectors.base import DOC_HEADINGS
from logscope.model import Category

PACKAGE = Path(detectors_package.__file__).parent
HELPERS = {"base", "__init__"}


def test_codes_and_names_are_unique_and_well_formed() -> None:
    codes = [d.code for d in REGISTRY]
    names = [d.name for d in REGISTRY]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    for detector in REGISTRY:
        assert re.fullmatch(r"LS[1-9]\d\d", detector.code), detector.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", detector.name), detector.name
        assert isinstance(detector.category, Category)


def test_every_detector_module_is_registered() -> None:
    registered = {d.__module__.rsplit(".", 1)[-1] for d in REGISTRY}
    modules = {m.name for m in pkgutil.iter_modules([str(PACKAGE)])} - HELPERS
    # modules holding shared helpers only (no Detector subclass) need not be registered
    detector_modules = set()
    for name in modules:
        tree = ast.parse((PACKAGE / f"{name}.py").read_text())
        if any(isinstance(n, ast.ClassDef) and any(getattr(b, "id", "") == "Detector" for b in n.bases)
               for n in tree.body):
            detector_modules.add(name)
    assert detector_modules == registered


@pytest.mark.parametrize("detector", REGISTRY, ids=[d.code for d in REGISTRY])
def test_docstring_has_every_heading(detector: type) -> None:
    doc = detector.doc()
    first = doc.splitlines()[0]
    assert first.startswith(f"{detector.code} {detector.name}:"), first
    for heading in DOC_HEADINGS:
        assert re.search(rf"^{heading}$", doc, re.MULTILINE), f"{detector.code} lacks '{heading}'"


def test_parsers_import_nothing_above_them() -> None:
    """logscope.parsers may use logscope.model, logscope.errors, the catalogue, logscope.limits and
    logscope.stacking (which import no logscope module) only (one-way layering)."""
    parsers = Path(detectors_package.__file__).parent.parent / "parsers"
    for path in parsers.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("logscope"):
                allowed = ("logscope.parsers", "logscope.model", "logscope.errors", "logscope.knowledge",
                           "logscope.limits", "logscope.stacking")
                assert node.module.startswith(allowed), (
                    f"{path.name} imports {node.module}")


def test_leaf_modules_import_no_logscope_module() -> None:
    """logscope.limits and logscope.stacking sit below every layer that imports them."""
    package = Path(detectors_package.__file__).parent.parent
    for name in ("limits.py", "stacking.py"):
        tree = ast.parse((package / name).read_text())
        imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
        imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        assert not [module for module in imported if module.startswith("logscope")], name


def test_a_detector_never_fires_without_the_events_it_requires() -> None:
    """``requires`` is a detector's contract (logscope.detectors.base), and run_detectors skips a
    detector whose events a job lacks: run anyway, on every job the tests know, it finds nothing."""
    fired: list[tuple[str, str]] = []
    for name, view in corpus_views():
        for detector in REGISTRY:
            if detector.requires and not view.has(*detector.requires) and detector().detect(view):
                fired.append((detector.code, name))
    assert not fired
