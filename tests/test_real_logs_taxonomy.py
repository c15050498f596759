"""End-to-end: the verdict on each public real log in ``shared/real_logs`` against its expected.json.

Each case folder holds the log file(s), ``SOURCE.md`` and ``expected.json`` (the label schema is in
``shared/real_logs/README.md``). The log files (not the folder) are analysed, and a case is right when

* the verdict's category is the one ``failure_class`` (with ``subclass`` for ``other``) maps to, or
  one that an ``alt_acceptable_classes`` entry maps to; wherever ``healthy`` is right (a completed
  run, or a healthy start cut short), ``incomplete`` is right too: "no failure in these lines, but no
  clean end either" is the honest answer when the log shows no clean end;
* the root cause names the host (short name: ``node1`` matches ``node1.cluster``; addresses match
  exactly), global rank and local rank that ``root_cause_host``, ``root_cause_rank`` and
  ``root_cause_local_rank`` state; where a key is ``null`` the log does not name one, and the
  verdict must not invent one.

A case logscope cannot get right yet is listed in :data:`KNOWN_MISSES` with the reason. The list
only shrinks: a listed case that starts passing fails (strict xfail) until it is taken off. A
failed job is never called healthy (:func:`test_failed_job_never_called_healthy`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from logscope.analysis import Analysis, analyze

REAL_LOGS = Path(__file__).resolve().parents[2] / "shared" / "real_logs"
CASES = sorted(p for p in REAL_LOGS.iterdir() if p.is_dir()) if REAL_LOGS.is_dir() else []
NOT_LOGS = {"SOURCE.md", "expected.json"}

# failure_class -> category (README of shared/real_logs, "How the classes map").
CLASS_CATEGORY = {
    "healthy": "healthy",
    "timeout": "hang",
    "hang": "hang",
    "crash_cascade": "crash",
    "rank_collision": "launch",
    "config": "launch",
    "time_limit": "scheduler",
    "network": "network",
    "oom": "oom",
}
OTHER_HARDWARE = ("node_failure", "gpu_")
OTHER_SCHEDULER = ("cancelled_by_user", "preempted", "requeued")

# case -> why logscope gets it wrong today. Only shrinks: fix the cause (the general form of the
# message or of the reasoning, never the case), then take the case off.
KNOWN_MISSES: dict[str, str] = {
    "167-llamafactory-6201-browser-translated-log-exitcode-minus11": (
        "root local_rank None, expected 0 (the verdict is crash, LS303: torchrun's cut traceback; its report "
        "that local rank 0 failed with exit code -11 went through a browser translator, 失败（退出码：-11）, "
        "and a line break splits local_rank: no upstream message reads it)"
    ),
    "21-funasr-2006-oom-rank2-then-watchdog-timeouts": (
        "root host None, expected w-0 (the OOM line names rank 2 and no host; the label ties rank 2 to w-0 "
        "from NCCL's 'Connection closed by localRank 2' lines and the other pod holding ranks 8-15: an "
        "inference over two files that logscope does not make, as no line ties rank 2 to a host)"
    ),
    "25-lightning-8707-multinode-init-hang-half-ranks": (
        "incomplete, expected hang (4 of 8 members announce 'initializing ddp' and the excerpt ends: no time, "
        "no timeout, no error; the squeue beside it shows the job 25 s old. Silence alone, of unknown length, "
        "is what logscope calls incomplete; the ranks 4-7 that never appear are not a hang it can show)"
    ),
    "35-rccl-429-coll-mismatch-rank2-allgather-vs-allreduce": (
        "root rank None, expected rank 2 on h03r3n06 (LS102 finds the mismatch at opCount 0x28c, but only two "
        "of the 4 ranks' COLL lines are in the excerpt, one each side: which is the odd one out is the label's "
        "assumption about the unseen ranks, and the rank is read from NCCL's [cudaDev] field)"
    ),
    "39-myria3d-123-step-cancelled-during-rank0-data-prep": (
        "root None, expected rank 0 on DEL2212S020 (SLURM cancelled the step with no reason given while rank 0's "
        "progress bar still advanced; that the cancel was a 30-minute NCCL timeout of the waiting ranks is the "
        "maintainer's reading, not a line of the log)"
    ),
    "49-m4-idefics-64gpu-silent-hang-rank0-d-state": (
        "incomplete, expected hang (progress prints only, then silence, no timestamps: no line says the job "
        "hung rather than the excerpt ending; logscope says incomplete)"
    ),
    "51-litllama-380-ib-port-error-flapping-link-node48": (
        "root host None, expected node48 (the reporter redacted the host in the NCCL prefix to '...-48', which "
        "is no host name; the peer name node48 appears only in another node's completion error, which "
        "witnesses the link, it does not say whose port failed)"
    ),
}


def subclass_of(expected: dict[str, Any]) -> str:
    return str(expected.get("subclass") or expected.get("failure_subclass") or "")


def category_of(failure_class: str, subclass: str) -> str:
    """One label class (with the case's subclass, for ``other``) -> logscope's category."""
    if failure_class == "other":
        if subclass.startswith(OTHER_HARDWARE):
            return "hardware"
        if subclass.startswith(OTHER_SCHEDULER):
            return "scheduler"
        # "other" with a subclass outside the vocabulary (an alt class of a case whose own
        # subclass describes something else): an interruption that is not a failure of the job.
        return "scheduler"
    return CLASS_CATEGORY[failure_class]


def accepted_categories(expected: dict[str, Any]) -> set[str]:
    subclass = subclass_of(expected)
    accepted = {category_of(expected["failure_class"], subclass)}
    accepted |= {category_of(alt, subclass) for alt in expected.get("alt_acceptable_classes") or []}
    if "healthy" in accepted:
        accepted.add("incomplete")
    return accepted


def same_host(got: str | None, want: str | None) -> bool:
    """Host names match on their short name (``node1`` = ``node1.cm.cluster``); addresses exactly."""
    if got is None or want is None:
        return got == want
    if got == want:
        return True

    def short(name: str) -> str:
        return name if name.replace(".", "").isdigit() or ":" in name else name.split(".")[0].lower()

    return short(got) == short(want)


def problems(expected: dict[str, Any], analysis: Analysis) -> list[str]:
    """What is wrong with a verdict for this label; empty when it is right."""
    verdict = analysis.verdict
    found: list[str] = []
    accepted = accepted_categories(expected)
    if verdict.category.value not in accepted:
        found.append(f"category {verdict.category.value!r} not in {sorted(accepted)}")
    root = verdict.root_cause
    for key, attribute in (("root_cause_host", "host"), ("root_cause_rank", "rank"),
                           ("root_cause_local_rank", "local_rank")):
        if key not in expected:
            continue
        got = getattr(root, attribute) if root is not None else None
        want = expected[key]
        right = same_host(got, want) if attribute == "host" else got == want
        if not right:
            found.append(f"root {attribute} {got!r}, expected {want!r}")
    return found


def case_logs(case: Path) -> list[Path]:
    files = [p for p in sorted(case.iterdir()) if p.is_file() and p.name not in NOT_LOGS]
    assert files, f"{case.name}: no log file"
    return files


_ANALYSES: dict[Path, Analysis] = {}


def analysed(case: Path) -> Analysis:
    if case not in _ANALYSES:
        _ANALYSES[case] = analyze(case_logs(case))
    return _ANALYSES[case]


def _params() -> list[Any]:
    return [
        pytest.param(case, id=case.name,
                     marks=[pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[case.name])]
                     if case.name in KNOWN_MISSES else [])
        for case in CASES
    ]


@pytest.mark.skipif(not CASES, reason="../shared/real_logs is not available")
@pytest.mark.parametrize("case", _params())
def test_real_log_verdict(case: Path) -> None:
    expected = json.loads((case / "expected.json").read_text())
    analysis = analysed(case)
    wrong = problems(expected, analysis)
    assert not wrong, f"{case.name}: {'; '.join(wrong)} ({analysis.verdict.summary})"


@pytest.mark.skipif(not CASES, reason="../shared/real_logs is not available")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_failed_job_never_called_healthy(case: Path) -> None:
    expected = json.loads((case / "expected.json").read_text())
    if "healthy" in accepted_categories(expected):
        pytest.skip("healthy is an acceptable verdict for this log")
    verdict = analysed(case).verdict
    if verdict.category.value == "healthy" and case.name in KNOWN_MISSES:
        pytest.xfail(f"known miss: {KNOWN_MISSES[case.name]}")
    assert verdict.category.value != "healthy", f"{case.name}: a failed job called healthy ({verdict.summary})"


def test_known_misses_name_real_cases() -> None:
    if not CASES:
        pytest.skip("../shared/real_logs is not available")
    assert set(KNOWN_MISSES) <= {c.name for c in CASES}


def test_category_mapping() -> None:
    assert category_of("time_limit", "") == "scheduler"
    assert category_of("timeout", "") == "hang"
    assert category_of("crash_cascade", "") == "crash"
    assert category_of("rank_collision", "") == "launch"
    assert category_of("config", "") == "launch"
    assert category_of("other", "cancelled_by_user") == "scheduler"
    assert category_of("other", "preempted") == "scheduler"
    assert category_of("other", "gpu_or_node_hardware_failure") == "hardware"
    assert category_of("other", "node_failure") == "hardware"
    assert accepted_categories({"failure_class": "healthy"}) == {"healthy", "incomplete"}
    assert accepted_categories({"failure_class": "time_limit", "alt_acceptable_classes": ["healthy"]}) == {
        "scheduler", "healthy", "incomplete"}
    with pytest.raises(KeyError):
        category_of("mystery", "")


def test_host_names_match_on_short_name() -> None:
    assert same_host("workergpu008", "workergpu008.cm.cluster")
    assert same_host("node2", "node2")
    assert not same_host("node2", "node3")
    assert not same_host("10.0.0.1", "10.0.0")
    assert not same_host(None, "node2")
    assert same_host(None, None)
