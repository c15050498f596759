"""What a paged engineer must not read (issue 39, "Noise and wrong counts"): a line that says nothing
reported as a failure, advice for a failure the verdict does not rest on, a record's finding that
denies the log line beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accounting_support import job_folder, utc  # noqa: F401 - the utc fixture
from test_parsers import one

from logscope.analysis import analyze
from logscope.cli import main
from logscope.model import Category
from logscope.report.terminal import advice_panel

GOLDENS = Path(__file__).parent / "goldens"


def test_an_empty_nccl_last_error_line_is_context_not_a_network_failure(tmp_path: Path) -> None:
    # NCCLUtils.cpp writes "Last error:" and then NCCL's last WARN, which is often empty
    assert one("7: Last error:")["severity"] == "info"
    log = tmp_path / "train-77-node1.out"
    log.write_text("7: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, invalid usage\n"
                   "7: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
                   "7: Last error:\n")
    findings = analyze([log]).findings
    assert findings and not [f for f in findings if "Last error" in f.title or f.category == Category.NETWORK]


def test_a_healthy_verdict_gives_no_advice_for_its_context_findings() -> None:
    # a slowdown the job lived through (LS105): a finding of a HEALTHY job, not what it rests on
    analysis = analyze(sorted((GOLDENS / "LS105-slowdown-from-step-150-ib-port-error" / "logs").iterdir()))
    assert analysis.verdict.category == Category.HEALTHY and analysis.findings
    assert analysis.root_finding is None and advice_panel(analysis) is None


def test_a_failure_verdict_advises_on_its_root() -> None:
    analysis = analyze([Path(__file__).parent.parent / "sample_logs" / "crash-cascade"])
    assert analysis.root_finding is analysis.findings[0] and analysis.root_finding.code == "LS301"
    assert advice_panel(analysis) is not None


@pytest.mark.usefixtures("utc")
def test_a_failed_record_beside_a_logged_crash_does_not_say_no_line_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = job_folder(tmp_path / "job", "crash-cascade", record={"sacct.json": "sacct-22.05-crash-cascade.json"})
    main(["analyze", str(folder), "--format", "json"])
    recorded = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "LS305"]
    assert recorded and all("no log line says why" not in f["title"] for f in recorded)
    # the same record without the crash's lines: then nothing says why
    folder = job_folder(tmp_path / "silent", "crash-cascade", drop=r"^(?!START TIME)",
                        record={"sacct.json": "sacct-22.05-crash-cascade.json"})
    main(["analyze", str(folder), "--format", "json"])
    recorded = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "LS305"]
    assert recorded and "no log line says why" in recorded[0]["title"]


@pytest.mark.parametrize(("status", "advice"), [("4", "GPUDirect RDMA"), ("12", "Check the IB link")])
def test_ib_advice_follows_the_completion_status(tmp_path: Path, status: str, advice: str) -> None:
    # a protection error (4, LOC_PROT_ERR) is the HCA refusing registered memory, not a cable
    log = tmp_path / "train-62-h100-28.out"
    log.write_text("[2025-11-09 07:39:30] h100-28:238:1313 [0] transport/net_ib.cc:2451 NCCL WARN NET/IB: Got "
                   f"completion from peer 172.16.12.34<38081> with status={status} opcode=0 len=0 vendor err 83 "
                   "(Send) hca mlx5_ib0\n")
    found = [f for f in analyze([log]).findings if f.code == "LS401"]
    assert found and advice in found[0].advice
