"""``logscope diff`` on pairs of jobs made by tools/jobsim.py: one healthy run, and the same job with
one injected change (a failure, a configuration change or a slowdown). The change must be ranked
first or in the top 3 of its section (new templates, configuration drift, performance and
fail-slow); two healthy runs of one configuration (other seeds, pids, times, lengths) must show no
change at all.

30 pairs (16 failures, 10 configuration changes, 4 slowdowns), each a test: every injected change
is expected in the top 3 (the issue asks for 90% of at least 20). The pairs are generated at test
time (a 2-node job of 300 steps takes ~0.1 s to write and read).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from reading_support import jobsim

from logscope.analysis import Analysis, analyze
from logscope.diff import Comparison, compare

TOP = 3

# scenario -> what the injected failure's own line says (a regex on the example line of a new template)
FAILURES: dict[str, str] = {
    "crash-cascade": r"ValueError: sample",
    "oom": r"CUDA out of memory",
    "gpu-xid": r"NVRM: Xid",
    "ecc-error": r"uncorrectable ECC error",
    "ib-network-error": r"NET/IB : Got completion from peer",
    "host-oom": r"oom_kill event|Out Of Memory",
    "node-failure": r"Node failure on",
    "hang-quiet-rank": r"Watchdog caught collective operation timeout",
    "time-limit": r"CANCELLED AT .* DUE TO TIME LIMIT",
    "preempted": r"CANCELLED AT .* DUE TO PREEMPTION",
    "cancelled-by-user": r"CANCELLED AT [0-9T:-]+ \*\*\*",
    "silent-hang": r"CANCELLED AT .* DUE TO TIME LIMIT",
    "rendezvous-unreachable": r"client socket has (?:failed to connect|timed out)",
    "port-in-use": r"server socket has failed to bind",
    "rank0-misresolution": r"Bootstrap Root",
    "nccl-version-skew": r"Mismatched NCCL version",
}
# a changed setting -> the drift that names it
CONFIGS: dict[str, tuple[dict[str, Any], str]] = {
    "nccl-version": ({"nccl_version": "2.23.4"}, "NCCL version"),
    "cuda-driver": ({"driver": 12080}, "CUDA driver"),
    "socket-network": ({"network": "Socket"}, "NCCL network"),
    "socket-fallback": ({"scenario": "socket-fallback"}, "NCCL network"),  # one node: a failure too
    "nccl-env": ({"nccl_env": ("NCCL_ALGO=Ring",)}, "NCCL_ALGO"),
    "nccl-env-value": ({"nccl_env": ("NCCL_IB_TIMEOUT=14",)}, "NCCL_IB_TIMEOUT"),
    "four-nodes": ({"nodes": 4}, "world size"),
    "four-gpus": ({"gpus": 4}, "world size"),
    "max-restarts": ({"max_restarts": 3}, "command --max_restarts"),
    "other-nodes": ({"node_offset": 4}, "new nodes"),
}
# a slowdown -> (slowdown, from step); 0: the whole run slower (iter_time_s 1.2 s, not 0.85 s)
SLOWDOWNS: dict[str, tuple[float, int]] = {
    "slower-throughout": (1.41, 0),
    "slower-from-150": (1.4, 150),
    "slower-from-100-ib-port-error": (1.3, 100),
    "slower-from-211": (1.5, 211),
}

STEPS = 300


@pytest.fixture(scope="module")
def sim() -> Any:
    return jobsim()


@pytest.fixture(scope="module")
def good(sim: Any, tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    folder = tmp_path_factory.mktemp("good")
    sim.write_job(sim.JobSpec(seed=11, job_id=5000001, steps=STEPS), folder)
    return analyze([folder])


def _bad(sim: Any, tmp_path_factory: pytest.TempPathFactory, name: str, **spec: Any) -> Analysis:
    folder = tmp_path_factory.mktemp(name)
    sim.write_job(sim.JobSpec(**spec), folder)
    return analyze([folder])


@pytest.mark.parametrize("scenario", sorted(FAILURES))
def test_an_injected_failure_is_among_the_first_new_templates(
        sim: Any, good: Analysis, tmp_path_factory: pytest.TempPathFactory, scenario: str) -> None:
    index = sorted(FAILURES).index(scenario)
    bad = _bad(sim, tmp_path_factory, scenario, scenario=scenario, seed=20 + index, job_id=5001000 + index)
    comparison = compare(good, bad)
    top = comparison.new_templates[:TOP]
    assert any(re.search(FAILURES[scenario], t.example.text) for t in top), [t.template for t in top]
    assert comparison.exit_code == 1


@pytest.mark.parametrize("change", sorted(CONFIGS))
def test_a_changed_setting_is_among_the_first_drifts(
        sim: Any, good: Analysis, tmp_path_factory: pytest.TempPathFactory, change: str) -> None:
    index = sorted(CONFIGS).index(change)
    knobs, setting = CONFIGS[change]
    bad = _bad(sim, tmp_path_factory, change, seed=40 + index, job_id=5002000 + index, steps=STEPS, **knobs)
    comparison = compare(good, bad)
    top = [d.setting for d in comparison.config_drift[:TOP]]
    assert setting in top, [d.describe() for d in comparison.config_drift]
    assert comparison.exit_code == 1
    if "scenario" not in knobs:  # the same healthy job: nothing else is new about its speed
        assert not comparison.performance_changes and not comparison.fail_slow


@pytest.mark.parametrize("change", sorted(SLOWDOWNS))
def test_a_slowdown_is_a_performance_change(
        sim: Any, good: Analysis, tmp_path_factory: pytest.TempPathFactory, change: str) -> None:
    index = sorted(SLOWDOWNS).index(change)
    factor, step = SLOWDOWNS[change]
    knobs: dict[str, Any] = ({"iter_time_s": 0.85 * factor} if not step else
                             {"slowdown": factor, "slowdown_step": step, "slowdown_event": "ib" in change})
    bad = _bad(sim, tmp_path_factory, change, seed=60 + index, job_id=5003000 + index, steps=STEPS, **knobs)
    comparison = compare(good, bad)
    if step:  # slower from a step on: BAD's fail-slow, where it starts (the median may not move)
        assert len(comparison.fail_slow) == 1 and comparison.new_fail_slow
        found = re.search(r"from step (\d+)", comparison.fail_slow[0].title)
        assert found is not None and abs(int(found.group(1)) - step) <= 0.05 * step
    else:  # slower from the start: the median time per step changed, nothing inside the run
        changed = [c.metric for c in comparison.performance_changes][:TOP]
        assert "step_time_median_s" in changed, [c.describe() for c in comparison.performance]
        assert not comparison.fail_slow
    assert comparison.exit_code == 1 and not comparison.config_drift


@pytest.mark.parametrize("seed", [81, 82, 83, 84, 85])
def test_two_healthy_runs_of_one_configuration_show_no_change(
        sim: Any, good: Analysis, tmp_path_factory: pytest.TempPathFactory, seed: int) -> None:
    bad = _bad(sim, tmp_path_factory, f"healthy-{seed}", seed=seed, job_id=5004000 + seed,
               steps=STEPS + 40 * (seed - 81))
    comparison = compare(good, bad)
    assert _nothing(comparison), comparison.to_json()


def test_two_healthy_runs_with_host_prefixes_show_no_change(sim: Any, tmp_path_factory: pytest.TempPathFactory
                                                           ) -> None:
    runs = [_bad(sim, tmp_path_factory, f"prefixed-{seed}", seed=seed, job_id=5005000 + seed, steps=200,
                 prefix="host", coll=True) for seed in (1, 2)]
    assert _nothing(compare(*runs))


def _nothing(comparison: Comparison) -> bool:
    return (not comparison.changed and not comparison.new_templates and not comparison.config_drift
            and not comparison.performance_changes and not comparison.fail_slow)

