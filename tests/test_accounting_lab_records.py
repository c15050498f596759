"""Real records of four lab jobs (SLURM 22.05.8 with slurmdbd on MariaDB, captured by
tests/integration/lab.py into tests/data/accounting/lab/, see its README): every output read into
its golden record, and each job folder, logs and record together, analysed to its verdict."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from accounting_support import DATA, utc  # noqa: F401 - the utc fixture

from logscope.accounting.record import AccountingRecord
from logscope.accounting.sacct_json import parse_sacct_json
from logscope.accounting.sacct_parsable import parse_batch_script, parse_sacct_parsable
from logscope.accounting.scontrol import parse_scontrol
from logscope.cli import main

LAB = DATA / "lab"
JOBS = ("rank-exit", "scancel", "node-lost", "timelimit")
READERS: dict[str, Callable[[str, str], list[AccountingRecord]]] = {
    "sacct.json": parse_sacct_json,
    "sacct-parsable2.txt": parse_sacct_parsable,
    "sacct-parsable2-all.txt": parse_sacct_parsable,
    "scontrol-show-job.txt": parse_scontrol,
}
pytestmark = pytest.mark.skipif(not LAB.is_dir(), reason="the lab's records are not in this checkout")


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize("name", list(READERS))
def test_lab_record_golden(job: str, name: str, update_goldens: bool) -> None:
    records = READERS[name]((LAB / job / name).read_text(), name)
    got = [r.to_json() for r in records]
    golden = DATA / "expected" / f"lab-{job}-{name}.expected.json"
    if update_goldens:
        golden.write_text(json.dumps(got, indent=2) + "\n")
    assert got == json.loads(golden.read_text())


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("job", JOBS)
def test_the_outputs_agree(job: str) -> None:
    """sacct -P, --format=ALL and --json say the same states and nodes; 22.05's --json has no exit
    code for a step that failed (dbv0.0.38 writes SUCCESS 0 for any exit), -P has it."""
    parsable = parse_sacct_parsable((LAB / job / "sacct-parsable2.txt").read_text(), "p")[0]
    every = parse_sacct_parsable((LAB / job / "sacct-parsable2-all.txt").read_text(), "a")[0]
    as_json = parse_sacct_json((LAB / job / "sacct.json").read_text(), "j")[0]
    def facts(record: AccountingRecord) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(s.step_id, s.state, s.nodes) for s in record.records]

    assert facts(parsable) == facts(every) == facts(as_json)
    for text, js in zip(parsable.records, as_json.records, strict=True):
        assert js.exit_code in (None, text.exit_code), js.step_id
        if js.state == "FAILED" and js.signal in (None, 0):
            assert js.exit_code is None and text.exit_code == 1
    script = parse_batch_script((LAB / job / "sacct-batch-script.txt").read_text())
    assert list(script) == [parsable.job_id] and "srun" in script[parsable.job_id]


# job: (category, finding, root node, root rank, findings that must be consequences)
VERDICTS = {
    "rank-exit": ("crash", "LS301", "node02", 3, {"LS305"}),
    "scancel": ("scheduler", "LS703", None, None, {"LS705"}),
    "node-lost": ("hardware", "LS604", "node02", None, {"LS605", "LS101"}),
    "timelimit": ("scheduler", "LS701", None, None, {"LS705"}),
}


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("job", JOBS)
def test_lab_job_verdict(job: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", str(LAB / job), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    data = json.loads(out)
    category, finding, node, rank, consequences = VERDICTS[job]
    verdict = data["verdict"]
    root = verdict["root_cause"] or {}
    assert (verdict["category"], verdict["finding"], root.get("node"), root.get("rank")) == \
        (category, finding, node, rank), verdict["summary"]
    roles = {f["code"]: f["role"] for f in data["findings"]}
    assert all(roles.get(c) == "consequence" for c in consequences), roles
    steps = {s["id"]: (s["state"], s["exit_code"]) for s in data["accounting"]["steps"]}
    assert steps[f"{data['accounting']['job_id']}.0"] == ("FAILED", 1)  # -P's ExitCode, not 22.05 --json's


@pytest.mark.usefixtures("utc")
def test_node_lost_without_srun_line_names_the_stopped_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """22.05 records NODE_FAIL without FailedNode; with srun's "Node failure on node02" gone from the
    log, the rank that stopped advancing says which node of the job failed."""
    folder = tmp_path / "node-lost"
    shutil.copytree(LAB / "node-lost", folder)
    for log in folder.glob("*.out"):
        log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                               if "Node failure on" not in line))
    code = main(["analyze", str(folder), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    verdict = data["verdict"]
    assert (verdict["category"], verdict["finding"], verdict["root_cause"]["node"]) == ("hardware", "LS605", "node02")
    assert [f["code"] for f in data["findings"]].count("LS605") == 1
    for name in ("sacct.json", "sacct-parsable2.txt", "sacct-parsable2-all.txt", "scontrol-show-job.txt",
                 "sacct-batch-script.txt"):
        (folder / name).unlink()
    main(["analyze", str(folder), "--format", "json"])
    assert json.loads(capsys.readouterr().out)["verdict"]["category"] == "hang"  # the logs alone
