"""The comparison of two runs of a job, GOOD (one that worked) and BAD, computed once and read by
every output (the terminal, ``--format json``, the report's section).

Its parts, in the order the outputs show them: the templates BAD printed that GOOD never did
(:mod:`logscope.diff.templates`), and those it printed far more often; the configuration that
changed (:mod:`logscope.diff.config`); performance (:mod:`logscope.diff.performance`); and BAD's
own fail-slow findings (LS105, :mod:`logscope.detectors.fail_slow`), which its analysis already
holds. BAD shows **something new** when any part holds a change (a fail-slow counts when GOOD had
none): ``logscope diff`` exits 1 then, 0 otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from logscope.analysis import Analysis
from logscope.diff.config import Drift, compare_settings
from logscope.diff.performance import Change, Figures, compare_performance, performance_of
from logscope.diff.templates import NewTemplate, VolumeChange, compare_templates
from logscope.model import Finding

SCHEMA = "logscope.diff/1"
FAIL_SLOW = "LS105"


@dataclass
class Comparison:
    """What changed from GOOD to BAD (see the module docstring)."""

    good: Analysis
    bad: Analysis
    new_templates: list[NewTemplate]
    volume_changes: list[VolumeChange]
    config_drift: list[Drift]
    good_figures: Figures
    bad_figures: Figures
    performance: list[Change]
    fail_slow: list[Finding]  # BAD's
    fail_slow_in_good: list[Finding]

    @property
    def performance_changes(self) -> list[Change]:
        return [c for c in self.performance if c.changed]

    @property
    def new_fail_slow(self) -> list[Finding]:
        """BAD's fail-slow findings when GOOD had none (a run compared with itself shows nothing new)."""
        return [] if self.fail_slow_in_good else self.fail_slow

    @property
    def changed(self) -> bool:
        return bool(self.new_templates or self.volume_changes or self.config_drift or self.performance_changes
                    or self.new_fail_slow)

    @property
    def exit_code(self) -> int:
        """0: BAD shows nothing new; 1: it does."""
        return 1 if self.changed else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "good": _run(self.good),
            "bad": _run(self.bad),
            "changed": self.changed,
            "new_templates": [t.to_json() for t in self.new_templates],
            "volume_changes": [v.to_json() for v in self.volume_changes],
            "config_drift": [d.to_json() for d in self.config_drift],
            "performance": {"good": self.good_figures.to_json(), "bad": self.bad_figures.to_json(),
                            "changes": [c.to_json() for c in self.performance]},
            "fail_slow": [f.to_json() for f in self.fail_slow],
        }


def compare(good: Analysis, bad: Analysis) -> Comparison:
    """GOOD against BAD, both analysed."""
    new, volume = compare_templates(good, bad)
    good_figures, bad_figures = performance_of(good), performance_of(bad)
    return Comparison(
        good=good, bad=bad, new_templates=new, volume_changes=volume, config_drift=compare_settings(good, bad),
        good_figures=good_figures, bad_figures=bad_figures,
        performance=compare_performance(good_figures, bad_figures),
        fail_slow=[f for f in bad.findings if f.code == FAIL_SLOW],
        fail_slow_in_good=[f for f in good.findings if f.code == FAIL_SLOW],
    )


def _run(analysis: Analysis) -> dict[str, Any]:
    job = analysis.job
    return {"id": job.job_id, "name": job.job_name, "nodes": job.nodes, "files": [f.display for f in job.files],
            "world_size": analysis.view.world_size, "verdict": analysis.verdict.to_json()}


__all__ = ["SCHEMA", "Comparison", "compare"]
