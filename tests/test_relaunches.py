"""LS302's relaunch check (worker_restart.relaunches) against a plain reading of its rule.

A torchrun start is a relaunch when the start before it on the same node ran the same entrypoint
and a worker failure on that node lies strictly between the two. The check is computed per node
with bisection (a job that crash-looped thousands of times stays linear); the reference compares
every start with every earlier start and every failure.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logscope.detectors import JobView
from logscope.detectors.base import dicts, field_of, order_key
from logscope.detectors.worker_restart import _place, relaunches
from logscope.model import Event
from logscope.timeline import load_job

_HEAD = "I1103 14:{:02d}:{:02d}.333000 37738 torch/distributed/launcher/api.py:194]"
_FAILED = ("E1103 14:{:02d}:{:02d}.944000 37738 torch/distributed/elastic/multiprocessing/api.py:869] failed "
           "(exitcode: 1) local_rank: 0 (pid: 37793) of binary: /usr/bin/python")


def launch(minute: int, second: int, entrypoint: str) -> list[str]:
    head = _HEAD.format(minute, second)
    return [f"{head} Starting elastic_operator with launch configs:", f"{head}   entrypoint       : {entrypoint}",
            f"{head}   nproc_per_node   : 8", f"{head}   max_restarts     : 0", head]


def reference(view: JobView) -> list[dict[str, Any]]:
    failures = dicts(view.of(Event.WORKER_FAILED, Event.CHILD_FAILURE))
    starts = sorted((r for r in dicts(view.of(Event.LAUNCH_CONFIG)) if field_of(r, "message") == "launch config"),
                    key=order_key)
    out = []
    for i, start in enumerate(starts):
        before = [s for s in starts[:i] if _place(s) == _place(start)]
        if not before or field_of(before[-1], "value") != field_of(start, "value"):
            continue
        if any(_place(f) == _place(start) and order_key(before[-1]) < order_key(f) < order_key(start)
               for f in failures):
            out.append(start)
    return out


# Per node, a run of attempts: (the entrypoint it starts, whether its workers then fail).
ATTEMPTS = st.lists(st.tuples(st.sampled_from(["train.py", "eval.py"]), st.booleans()), min_size=1, max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ATTEMPTS, min_size=1, max_size=3))
def test_relaunches_are_those_of_the_plain_rule(tmp_path_factory: Any, nodes: list[list[tuple[str, bool]]]) -> None:
    folder: Path = tmp_path_factory.mktemp("job")
    for n, attempts in enumerate(nodes):
        lines: list[str] = []
        for k, (entrypoint, fails) in enumerate(attempts):
            lines += launch(k, 0, entrypoint)
            if fails:
                lines.append(_FAILED.format(k, 30))
        (folder / f"train-77-gpu-node0{n + 1}.out").write_text("\n".join(lines) + "\n")
    job = load_job([folder])
    view = JobView(job.timeline, tuple(job.nodes), tuple(f.display for f in job.files),
                   {f.display: f.info.node for f in job.files})
    found = relaunches(view)
    assert [order_key(r) for r in found] == [order_key(r) for r in reference(view)]
    # Each node relaunched after every attempt that failed and was followed by one with its entrypoint.
    expected = sum(1 for attempts in nodes for (a, fails), (b, _) in pairwise(attempts) if fails and a == b)
    assert len(found) == expected
