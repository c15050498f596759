"""Expansion bounded before it starts: a hostlist's size is worked out from its ranges before any name
is made, a log line's list is expanded once for every detector, a record's node lists have a budget
and its timeline rows a ceiling (docs/guarantees.md)."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from pathlib import Path

import pytest
from accounting_support import SAMPLES, utc  # noqa: F401 - the utc fixture

from logscope.accounting import hostlist
from logscope.accounting.hostlist import MAX_HOSTS, expand_hostlist, hostlist_size, hosts_named
from logscope.cli import main
from logscope.errors import AccountingError


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_a_hostlist_is_sized_from_its_ranges() -> None:
    assert hostlist_size("gpu[01-03,07],a[1-2]-ib[0-1],n9") == 4 + 4 + 1
    with pytest.raises(AccountingError):
        hostlist_size("x[0-99998,0-99998]")  # 199,998 names: more than MAX_HOSTS
    with pytest.raises(AccountingError):
        hostlist_size("a[0-999]-b[0-999]")  # 1,000,000 names from two groups of 1,000


def test_an_oversized_hostlist_is_refused_before_a_name_is_made() -> None:
    # 3.2 KB of "0-99998," (the campaign's log line took 2.85 GB): refused from its ranges. Before,
    # each range was made in full (only one range longer than MAX_HOSTS was refused before).
    text = "gpu[" + ",".join(["0-99998"] * 400) + "]"
    tracemalloc.start()
    try:
        with pytest.raises(AccountingError, match="more than"):
            expand_hostlist(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024, peak
    assert hosts_named(text) == []


@pytest.mark.parametrize("text", ["n[" + "9" * 40 + "]", "n[1-" + "9" * 5000 + "]", "n[1-²]"])
def test_a_number_no_node_has_is_refused(text: str) -> None:
    with pytest.raises(AccountingError):
        expand_hostlist(text)


def test_a_list_within_the_limit_is_expanded_as_slurm_does() -> None:
    assert expand_hostlist("a[1-2]-ib[0-1],gpu[09-10]") == ["a1-ib0", "a1-ib1", "a2-ib0", "a2-ib1", "gpu09", "gpu10"]
    assert expand_hostlist("n[1-3]", limit=3) == ["n1", "n2", "n3"]
    with pytest.raises(AccountingError):
        expand_hostlist("n[1-3]", limit=2)


def node_failure_job(tmp_path: Path, *extra: str) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    for log in sorted((SAMPLES / "node-failure").glob("*.out")):
        shutil.copy(log, folder / log.name)
    with (folder / "train-4242015-gpu-node01.out").open("a") as out:
        out.writelines(line + "\n" for line in extra)
    return folder


@pytest.mark.usefixtures("utc")
def test_each_log_lines_hostlist_is_expanded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # LS604, the network detectors' failed nodes and the NODE_FAIL record's node all ask which hosts
    # srun's lines name; before, each expanded every line again (ten 4 KB lines: 212 s).
    folder = node_failure_job(tmp_path, "srun: error: Node failure on gpu-node[05-06]")
    calls: list[str] = []
    real = hostlist.expand_hostlist

    def counted(text: str, limit: int = MAX_HOSTS) -> list[str]:
        calls.append(text)
        return real(text, limit)

    monkeypatch.setattr(hostlist, "expand_hostlist", counted)
    code, _, _ = run(capsys, "analyze", str(folder), "--format", "json")
    assert code == 1
    assert sorted(calls) == sorted(set(calls)), calls  # no line twice
    assert "gpu-node[05-06]" in calls


@pytest.mark.usefixtures("utc")
def test_the_jobs_srun_lines_make_at_most_max_hosts_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from logscope.detectors import accounting_facts

    monkeypatch.setattr(accounting_facts, "MAX_HOSTS", 4)
    # n[1-3] makes 3 names; m[1-9] would make 9 more (12 > 4): it names nobody; k7 fits in what is left
    (tmp_path / "train-1-n1.out").write_text(
        "2026-01-01 00:00:00,000 - INFO - step 1/10 loss 2.0\n"
        + "".join(f"srun: error: Node failure on {hosts}\n" for hosts in ("n[1-3]", "m[1-9]", "k7")))
    code, out, _ = run(capsys, "analyze", str(tmp_path), "--format", "json")
    assert code == 1
    finding = next(f for f in json.loads(out)["findings"] if f["code"] == "LS604")
    assert finding["title"] == "SLURM lost nodes n1, n2, n3, k7: node failure"


@pytest.mark.usefixtures("utc")
def test_a_3_kb_log_line_of_ranges_costs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = node_failure_job(tmp_path, "srun: error: Node failure on gpu[" + ",".join(["0-99998"] * 400) + "]")
    code, out, _ = run(capsys, "analyze", str(folder), "--format", "json")
    verdict = json.loads(out)["verdict"]
    assert code == 1 and verdict["finding"] == "LS604" and verdict["root_cause"]["node"] == "gpu-node02"


def sacct_lines(steps: int, size: int) -> str:
    """sacct -P of job 4242015 whose job line and ``steps`` steps each run on ``size`` nodes of
    their own (distinct names: no list repeats another)."""
    rows = ["JobID|JobName|State|ExitCode|Reason|NodeList|Start|End|User|WorkDir",
            f"4242015|train|FAILED|1:0|None|a[1-{size}]|2026-11-03T04:12:20|2026-11-03T04:24:10|alice|/x"]
    rows += [f"4242015.{n}|s|FAILED|1:0||s{n}x[1-{size}]|2026-11-03T04:12:20|2026-11-03T04:24:10||"
             for n in range(steps)]
    return "\n".join(rows) + "\n"


def test_a_records_node_lists_have_a_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope.accounting.sacct_parsable import parse_sacct_parsable

    monkeypatch.setattr(hostlist, "MAX_RECORD_NODES", 1000)
    (record,) = parse_sacct_parsable(sacct_lines(3, 250), "sacct.txt")  # 1,000 names: within
    assert len(record.steps) == 3 and record.steps[2].nodes[-1] == "s2x250"
    with pytest.raises(AccountingError, match="more than 1000 nodes"):
        parse_sacct_parsable(sacct_lines(4, 250), "sacct.txt")  # 1,250
    # the same list again costs nothing more (the steps of a job repeat its nodes)
    same = sacct_lines(0, 250) + "".join(f"4242015.{n}|s|FAILED|1:0||a[1-250]|||||\n" for n in range(9))
    (record,) = parse_sacct_parsable(same, "sacct.txt")
    assert all(step.nodes is record.job.nodes for step in record.steps)


@pytest.mark.usefixtures("utc")
def test_a_record_beyond_the_budget_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 1.2 KB: a job line and 14 steps of 99,999 nodes each (an 800-byte one took 736 MB, this one 12 GB)
    folder = node_failure_job(tmp_path)
    (folder / "sacct.txt").write_text(sacct_lines(14, 99_999))
    code, out, err = run(capsys, "analyze", str(folder))
    assert (code, out) == (2, "")
    assert err.startswith("Error: ") and err.count("\n") == 1 and "nodes in all" in err


def test_a_records_rows_have_a_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope.accounting import rows
    from logscope.accounting.sacct_parsable import parse_sacct_parsable

    monkeypatch.setattr(rows, "MAX_ROWS", 500)
    (record,) = parse_sacct_parsable(sacct_lines(2, 200), "sacct.txt")
    frame = rows.accounting_rows(record)
    # the job and its first step a row per node (400), the second step one row naming none
    assert frame.height == 401
    assert frame.filter(frame["node"].is_null())["text"].to_list()[0].startswith("4242015.1 FAILED")
    assert "(200 nodes)" in frame["text"][-1]


def test_hostlist_size_needs_no_names(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_names(item: object) -> list[str]:
        raise AssertionError("a name was made")

    monkeypatch.setattr(hostlist, "_names", no_names)
    assert hostlist_size("gpu[0-99998]") == 99_999
    with pytest.raises(AccountingError):
        expand_hostlist("gpu[0-99998],cpu[0-99998]")
