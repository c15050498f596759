"""Every job the tests know, loaded once per test process: the samples, the golden cases and the
real third-party logs, as views the detectors read."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from logscope.detectors.base import JobView
from logscope.errors import InputError
from logscope.timeline import load_job

ROOT = Path(__file__).resolve().parents[1]


def corpus() -> list[list[Path]]:
    """The paths of every job the tests know: the samples, the golden cases, the real third-party logs."""
    shared = ROOT.parent / "shared"
    cases = [[folder] for folder in sorted((ROOT / "sample_logs").iterdir()) if folder.is_dir()]
    if (shared / "real_logs").is_dir():
        cases += [[p for p in sorted(folder.iterdir()) if p.name not in ("SOURCE.md", "expected.json")]
                  for folder in sorted((shared / "real_logs").iterdir()) if folder.is_dir()]
    for folder in sorted((ROOT / "tests" / "goldens").iterdir()):
        spec = json.loads((folder / "case.json").read_text())
        named = [shared / name for name in spec.get("shared_logs", [])]
        if all(path.exists() for path in named):
            cases.append(([folder / "logs"] if (folder / "logs").is_dir() else []) + named)
    return cases


@cache
def corpus_views() -> tuple[tuple[str, JobView], ...]:
    """Each job of :func:`corpus` that reads (its first path, its view), loaded once a process.
    Views remember what detectors work out: a test that changes how something is worked out
    makes a fresh view of the timeline (:func:`fresh`)."""
    views = []
    for paths in corpus():
        try:
            job = load_job(paths)
        except InputError:
            continue
        views.append((str(paths[0]), JobView(job.timeline, tuple(job.nodes), tuple(f.display for f in job.files),
                                             {f.display: f.info.node for f in job.files})))
    return tuple(views)


def fresh(view: JobView) -> JobView:
    """A view of the same job that remembers nothing yet."""
    return JobView(view.events, view.nodes, view.files, view.file_nodes)
