"""Real SLURM + torchrun jobs in a throw-away lab (tests/integration/lab.py): logscope's verdicts on them.

Run with:  pytest -m integration tests/integration      (5-7 minutes on 2 cores)

What is asserted is what logscope must conclude from what each scenario did (the injected fault, its
rank, its node), never the shape of torch's or SLURM's output, which changes from run to run on a
loaded machine. Whatever a capture holds, logscope's verdict must be the right one or an honestly
weaker one (`unknown`/`incomplete`, never another culprit): `verdict_problem` is that rule, for every
scenario.

A capture that does not show its scenario as set up (the injected fault's own line missing, the job
never started: `lab.capture_problem`) is taken again, at most twice; every recapture is listed in the
"SLURM lab captures" section at the end of the test output. A wrong verdict on a valid capture is a
failure and is never retried: the capture's folder is named in the failure, and a capture that shows a
new shape becomes a golden case (tests/goldens/).

LAB_CAPTURES=/some/dir reuses the captures there when every scenario has one (made earlier by
``python tests/integration/lab.py run all --out /some/dir`` or by this suite), and otherwise captures
into that folder, so the captures stay after the run.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lab  # noqa: E402

pytestmark = pytest.mark.integration

SCENARIOS = list(lab.SCENARIOS)


@pytest.fixture(scope="module")
def captures(lab_run: lab.LabRun) -> Path:
    return lab_run.out


def capture_problem(captures: Path, scenario: str) -> str | None:
    meta = json.loads((captures / scenario / "meta.json").read_text())
    attempts = meta.get("capture_attempt", 1)
    problem = lab.capture_problem(scenario, captures / scenario)
    return None if problem is None else f"{problem} (capture {attempts} of {lab.RECAPTURES + 1})"


# --------------------------------------------------------------------------- the scenario happened
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_capture_shows_the_scenario(captures: Path, scenario: str) -> None:
    """Each scenario happened as set up, in one of its captures (the job ran on both nodes, the
    injected fault printed its own line): otherwise the lab cannot stage it on this machine."""
    problem = capture_problem(captures, scenario)
    assert problem is None, f"{captures / scenario}: {problem}"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_node_file_is_that_nodes(captures: Path, scenario: str) -> None:
    """The lab's namespaces work: a node's file holds lines of that node's processes only."""
    meta = json.loads((captures / scenario / "meta.json").read_text())
    for node in meta["nodes"]:
        path = captures / scenario / f"{meta['job_name']}-{meta['job_id']}-{node}.out"
        if not path.exists():
            continue  # test_capture_shows_the_scenario says so
        text = path.read_text(errors="replace")
        for other in meta["nodes"]:
            if other != node:
                assert f"[{other} rank " not in text, f"{path.name} holds a line of a rank on {other}"
                assert f"[{other}:" not in text, f"{path.name} holds a line of {other}'s torchrun agent"


# --------------------------------------------------------------------------- logscope's verdicts
@dataclass(frozen=True)
class Expected:
    """What logscope must conclude: the category, the root finding's code (one of `findings`), and the
    culprit (`host`, `rank`); `host` None: no process or node is to blame."""

    category: str
    findings: frozenset[str] = frozenset()
    host: str | None = None
    rank: int | None = None


WEAKER = ("unknown", "incomplete")  # honest: "could not tell" / "no failure seen and no clean end"


def verdict_problem(verdict: dict[str, Any], expected: Expected) -> str | None:
    """Why logscope's verdict is neither the right one nor an honestly weaker one; None when it is.

    Right: the expected category, one of its expected findings and the expected culprit (or none, when
    none is expected). Honestly weaker: `unknown` or `incomplete`, naming the expected culprit or none.
    Never another rank or host, never another category.
    """
    culprit = verdict["root_cause"]
    if culprit is None:
        blamed = "none"
    elif (expected.host is not None and expected.host in (culprit.get("host"), culprit.get("node"))
          and culprit.get("rank") == expected.rank):
        blamed = "expected"
    else:
        blamed = "other"
    if verdict["category"] == expected.category:
        if expected.findings and verdict["finding"] not in expected.findings:
            return f"finding {verdict['finding']}, expected one of {sorted(expected.findings)}"
        if blamed == "other":
            return "it blames another culprit"
        if blamed == "none" and expected.host is not None:
            return "it names no culprit for a failure whose culprit is known"
        return None
    if verdict["category"] in WEAKER:
        return "it blames another culprit" if blamed == "other" else None
    return f"category {verdict['category']}, expected {expected.category} (or {'/'.join(WEAKER)})"


def analyze(capture: Path) -> tuple[int, dict[str, Any]]:
    """logscope's exit code and JSON analysis of one captured scenario's per-node files, through its CLI."""
    from logscope.cli import main

    files = sorted(str(p) for p in capture.glob("*.out"))
    assert files, f"no logs captured in {capture}"
    files += sorted(str(p) for p in capture.glob("fr_trace_*"))  # the Flight Recorder dumps fr-hang keeps
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["analyze", "--format", "json", *files])
    return code, json.loads(buffer.getvalue())


def recovered(capture: Path) -> bool:
    """Whether the restart scenario's job succeeded after its restart: the batch script's own line
    with srun's exit status, which is 0 only when every torchrun agent exited 0."""
    return any(re.search(r"^srun exit code: 0$", p.read_text(errors="replace"), re.M)
               for p in capture.glob("*-node01.out"))


CRASH_OF_RANK_3 = Expected("crash", frozenset({"LS301"}), "node02", 3)

# What really happened in each job (see jobs/*.sbatch and train.py's modes).
EXPECTED: dict[str, Expected] = {
    "healthy": Expected("healthy"),
    "raise": CRASH_OF_RANK_3,  # rank 3 raises RuntimeError at step 4
    "hang": Expected("hang", frozenset({"LS101"}), "node02", 3),  # rank 3 sleeps before a collective
    # the same with every rank's Flight Recorder dump beside the logs: they name rank 3 whichever
    # ranks' logs report the timeout (a peer's exit can reach a rank first: "Connection closed")
    "fr-hang": Expected("hang", frozenset({"LS106"}), "node02", 3),
    "sigkill": CRASH_OF_RANK_3,  # rank 3 SIGKILLs itself: no message, exit -9
    "timelimit": Expected("scheduler", frozenset({"LS701"})),
    # every rank waits on rank 3 until the time limit, and no line names it: a hang naming nobody
    "hang-timelimit": Expected("hang", frozenset({"LS103"})),
    "procid-unescaped": Expected("launch", frozenset({"LS201"})),  # both nodes launch as node 0 (static rdzv)
    "procid-unescaped-c10d": Expected("healthy"),  # c10d ignores --node_rank: harmless
    "nnodes-mismatch": Expected("launch", frozenset({"LS207"})),  # --nnodes 3 on 2 nodes: the join times out
    "port-in-use": Expected("launch", frozenset({"LS205"}), "node01"),  # a stale listener holds MASTER_PORT
    "segfault": CRASH_OF_RANK_3,  # rank 3 reads address 0: SIGSEGV
    "endpoint-per-node": Expected("launch", frozenset({"LS204"})),  # --rdzv_endpoint $(hostname): a store per node
    # rank 3 raises in attempt 0 only; torchrun restarts once: the restarted attempt fails on its own
    # (the first failure is still rank 3's) or the job recovers (see `expected_for`)
    "restart": Expected("crash", frozenset({"LS301", "LS302"}), "node02", 3),
    "rank-exit": CRASH_OF_RANK_3,  # as raise; the job itself ends FAILED with srun's exit code
    "scancel": Expected("scheduler", frozenset({"LS703"})),  # the lab scancels the job mid-training
    "node-lost": Expected("hardware", frozenset({"LS604"}), "node02"),  # node02 is lost for good mid-job
}


def expected_for(captures: Path, scenario: str) -> Expected:
    if scenario == "restart" and recovered(captures / scenario):
        return Expected("healthy")  # a failure the job recovered from stays as context
    return EXPECTED[scenario]


def test_every_scenario_has_an_expected_verdict() -> None:
    assert set(EXPECTED) == set(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_verdict(captures: Path, scenario: str) -> None:
    """logscope's verdict on the capture is the right one or an honestly weaker one (never retried)."""
    capture = captures / scenario
    if capture_problem(captures, scenario) is not None:
        pytest.skip("the capture does not show the scenario: see test_capture_shows_the_scenario")
    expected = expected_for(captures, scenario)
    code, data = analyze(capture)
    verdict = data["verdict"]
    culprit = verdict["root_cause"] or {}
    said = (f"{capture}: logscope said category={verdict['category']} finding={verdict['finding']} "
            f"host={culprit.get('host')} rank={culprit.get('rank')} ({verdict['summary']}); expected "
            f"{expected}. A valid capture with a new shape becomes a golden case (tests/goldens/).")
    problem = verdict_problem(verdict, expected)
    assert problem is None, f"{problem}: {said}"
    assert code == (0 if verdict["category"] == "healthy" else 1), said
    job = data["job"]
    assert job["lines_read"] == job["lines_recognised"] + job["lines_unrecognised"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_cascade_counts_each_other_process_once(captures: Path, scenario: str) -> None:
    """The lab runs 2 nodes x 2 ranks: a cascade's title says how many other processes went down
    after the root, each counted once whatever keys its lines carry (rank, local rank, pid, srun
    task), never more than the 3 others on the 2 nodes."""
    if capture_problem(captures, scenario) is not None:
        pytest.skip("the capture does not show the scenario: see test_capture_shows_the_scenario")
    _, data = analyze(captures / scenario)
    cascade = next((f for f in data["findings"] if f["code"] == "LS301" and f["role"] == "root"), None)
    if cascade is None:
        pytest.skip("no exit cascade in this scenario")
    counted = re.search(r"(\d+) other process\(es\) on (\d+) node\(s\)", cascade["title"])
    assert counted is None or (int(counted[1]) <= 3 and int(counted[2]) <= 2), cascade["title"]
    if scenario in ("raise", "rank-exit", "segfault", "sigkill"):  # every other rank is torn down
        assert counted is not None and (counted[1], counted[2]) == ("3", "2"), cascade["title"]


# --------------------------------------------------------------------------- the rule itself
def _verdict(category: str, finding: str | None = None, host: str | None = None,
             rank: int | None = None) -> dict[str, Any]:
    root = None if host is None else {"host": host, "node": host, "rank": rank}
    return {"category": category, "finding": finding, "root_cause": root}


@pytest.mark.parametrize(("verdict", "right"), [
    (_verdict("crash", "LS301", "node02", 3), True),
    (_verdict("unknown"), True),
    (_verdict("incomplete"), True),
    (_verdict("unknown", None, "node02", 3), True),
    (_verdict("incomplete", None, "node02", 3), True),
    (_verdict("crash", "LS301", "node02", 2), False),  # another rank
    (_verdict("crash", "LS301", "node01", 3), False),  # another host
    (_verdict("unknown", None, "node02", 2), False),  # weaker, but another rank
    (_verdict("incomplete", None, "node01", None), False),  # weaker, but another host
    (_verdict("crash", "LS301"), False),  # right category, no culprit: not what happened
    (_verdict("crash", "LS402", "node02", 3), False),  # another finding
    (_verdict("network", "LS402", "node02", 3), False),  # another category
    (_verdict("healthy"), False),
])
def test_verdict_rule_on_a_crash(verdict: dict[str, Any], right: bool) -> None:
    assert (verdict_problem(verdict, CRASH_OF_RANK_3) is None) is right


@pytest.mark.parametrize(("verdict", "right"), [
    (_verdict("healthy"), True),
    (_verdict("incomplete"), True),
    (_verdict("unknown"), True),
    (_verdict("incomplete", None, "node01", 0), False),  # a culprit where there is none
    (_verdict("crash", "LS301", "node02", 3), False),
])
def test_verdict_rule_on_a_healthy_job(verdict: dict[str, Any], right: bool) -> None:
    assert (verdict_problem(verdict, Expected("healthy")) is None) is right


# --------------------------------------------------------------------------- logscope lint
# What `logscope lint` must say about the scenarios' own job scripts.
LINT = {
    "procid-unescaped": {"LL001"},  # the unescaped $SLURM_PROCID that broke the job
    "procid-unescaped-c10d": {"LL001"},  # same mistake (harmless under c10d, which ignores --node_rank)
    "nnodes-mismatch": {"LL003"},  # --nnodes typed by hand
    "endpoint-per-node": {"LL006"},  # the rendezvous endpoint is each node's own host name
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_lint_on_the_real_job_scripts(scenario: str) -> None:
    from logscope.lint import lint_script, read_script

    script = HERE / "jobs" / lab.SCENARIOS[scenario].script
    codes = {p.code for p in lint_script(read_script(script)) if p.severity == "error"}
    assert codes == LINT.get(scenario, set()), [f"{p.line}: {p.code} {p.message}" for p in
                                                lint_script(read_script(script))]
