"""The readers of SLURM's outputs (sacct --json of 22.05 and 24.11, sacct -P/-B, scontrol show job
plain and --json), hostlists and --output patterns: golden records, and one clear error for
every kind of bad input."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from accounting_support import DATA, utc  # noqa: F401 - the utc fixture

from logscope.accounting.hostlist import MAX_HOSTS, expand_hostlist
from logscope.accounting.jobid import parse_job_ref
from logscope.accounting.record import AccountingRecord
from logscope.accounting.rows import accounting_rows
from logscope.accounting.sacct_json import parse_sacct_json
from logscope.accounting.sacct_parsable import parse_batch_script, parse_sacct_parsable
from logscope.accounting.saved import read_saved
from logscope.accounting.scontrol import parse_scontrol
from logscope.accounting.states import state_table
from logscope.accounting.stdio_patterns import PatternContext, expand_pattern
from logscope.errors import AccountingError
from logscope.model import TIMELINE_SCHEMA, Category, Severity

EXPECTED = DATA / "expected"
READERS = {
    "sacct-24.11-node-fail.json": parse_sacct_json,
    "sacct-22.05-crash-cascade.json": parse_sacct_json,
    "sacct-22.05-completed.json": parse_sacct_json,
    "sacct-P-timeout.txt": parse_sacct_parsable,
    "sacct-P-cancelled.txt": parse_sacct_parsable,
    "sacct-P-oom.txt": parse_sacct_parsable,
    "scontrol-show-job-cancelled.txt": parse_scontrol,
    "scontrol-24.11-completed.json": parse_scontrol,
}


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("fixture", list(READERS))
def test_golden_record(fixture: str, update_goldens: bool) -> None:
    records = READERS[fixture]((DATA / fixture).read_text(), fixture)
    got = [r.to_json() for r in records]
    golden = EXPECTED / (fixture + ".expected.json")
    if update_goldens:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps(got, indent=2) + "\n")
    assert got == json.loads(golden.read_text())


@pytest.mark.usefixtures("utc")
def test_both_json_shapes_read_the_same_facts() -> None:
    old = parse_sacct_json((DATA / "sacct-22.05-crash-cascade.json").read_text(), "old")[0]
    new = parse_sacct_json((DATA / "sacct-24.11-node-fail.json").read_text(), "new")[0]
    assert [(s.step_id, s.state, s.exit_text) for s in old.records] == [
        ("4242004", "FAILED", "1:0"), ("4242004.batch", "FAILED", "1:0"), ("4242004.extern", "COMPLETED", "0:0"),
        ("4242004.0", "FAILED", "1:0")]
    assert [(s.step_id, s.state, s.exit_text) for s in new.records] == [
        ("4242015", "NODE_FAIL", "0:0"), ("4242015.batch", "CANCELLED", "0:9"), ("4242015.extern", "NODE_FAIL", "0:0"),
        ("4242015.0", "NODE_FAIL", "0:9")]
    assert old.records[3].nodes == new.records[3].nodes == ("gpu-node01", "gpu-node02")
    assert str(new.records[3].start) == "2026-11-03 04:12:28" and str(old.records[3].end) == "2026-11-03 11:06:50"
    assert new.failed_node == "gpu-node02" and new.records[3].max_rss_node == "gpu-node02"


@pytest.mark.usefixtures("utc")
def test_rows_one_per_step_and_node() -> None:
    record = parse_sacct_parsable((DATA / "sacct-P-timeout.txt").read_text(), "sacct.txt")[0]
    rows = accounting_rows(record)
    assert rows.schema == TIMELINE_SCHEMA
    assert rows.height == 2 + 1 + 2 + 2  # job, batch, extern, step 0: 2, 1, 2, 2 nodes
    assert set(rows["source"]) == {"sacct"} and set(rows["event"]) == {"accounting"}
    step0 = rows.filter(rows["line"] == 4)
    assert step0["node"].to_list() == ["gpu-node01", "gpu-node02"]
    assert step0["fields"].struct.field("step_id").to_list() == ["0", "0"]
    assert rows.filter(rows["line"] == 1)["severity"].to_list() == ["critical", "critical"]  # TIMEOUT


def test_state_table_is_complete_and_valid() -> None:
    table = state_table()
    for name in ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                 "BOOT_FAIL", "REQUEUED", "DEADLINE"):
        assert name in table, name
    for info in table.values():
        assert info.category in {c.value for c in Category} | {""}
        assert info.severity in {s.value for s in Severity}
        assert info.role in ("root", "end", "clean", "running")
    from logscope.detectors import by_code

    assert all(by_code(info.detector) is not None for info in table.values() if info.detector)
    # LS705 reports its states in the table's own words: each says what happened and what to do
    from logscope.detectors.scheduler_end_recorded import STATES

    reported = {info.name for info in table.values() if info.detector == "LS705"}
    assert reported == set(STATES)
    assert all(table[name].happened and table[name].advice.endswith(".") for name in reported)
    assert not any(info.happened or info.advice for info in table.values() if info.detector != "LS705")


@pytest.mark.parametrize(("text", "hosts"), [
    ("gpu[01-03,07]", ["gpu01", "gpu02", "gpu03", "gpu07"]),
    ("a[1-2]-ib[0-1]", ["a1-ib0", "a1-ib1", "a2-ib0", "a2-ib1"]),
    ("n1,n2,gpu-node[09-10]", ["n1", "n2", "gpu-node09", "gpu-node10"]),
    ("node[008-010]", ["node008", "node009", "node010"]),
    ("None assigned", []),
    ("", []),
])
def test_hostlist(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("text", ["gpu[01-03", "gpu[3-1]", "gpu[a-b]", f"gpu[0-{MAX_HOSTS + 5}]"])
def test_bad_hostlist(text: str) -> None:
    with pytest.raises(AccountingError):
        expand_hostlist(text)


# SchedMD/slurm src/common/print_fields.c, expand_stdio_fields' own examples, and the other fields
@pytest.mark.parametrize(("pattern", "expanded"), [
    ("job%J.out", "job128.0.out"),
    ("job%4j.out", "job0128.out"),
    ("job%2j-%2t.out", "job128-03.out"),
    ("%x-%j-%N.out", "train-128-gpu02.out"),
    ("%u/%n-%s.out", "alice/1-0.out"),
    ("100%%-%q.out", "100%-%q.out"),
    ("slurm-%A_%a.out", "slurm-128_*.out"),
    ("/abs/a\\%j.out", "/abs/a%j.out"),
    ("%12j", "0000000128"),
    ("r%r-%S-%b.out", "r*-*-*.out"),
])
def test_stdio_patterns(pattern: str, expanded: str) -> None:
    context = PatternContext(job_id="128", step="0", node="gpu02", node_index=1, task=3, user="alice",
                             job_name="train")
    assert expand_pattern(pattern, context) == expanded


def test_relative_pattern_is_in_the_work_dir_and_unknowns_are_shown_as_stars() -> None:
    context = PatternContext(job_id="128_7", array_job_id="128", array_task_id="7")
    assert expand_pattern("slurm-%A_%a-%N-%t.out", context, "/w/d[1]") == "/w/d[1]/slurm-128_7-*-*.out"
    assert expand_pattern("%b.out", PatternContext(job_id="128_17", array_task_id="17")) == "7.out"


@pytest.mark.parametrize(("text", "ref"), [
    ("12345", ("12345", None, None)), ("12345_7", ("12345", "7", None)), ("12345.2", ("12345", None, "2")),
    ("12345_7.batch", ("12345", "7", "batch")), ("12345.extern", ("12345", None, "extern")),
    ("12x", None), ("12345.", None), ("job-12345", None),
])
def test_job_ids(text: str, ref: tuple[str, str | None, str | None] | None) -> None:
    parsed = parse_job_ref(text)
    assert (None if parsed is None else (parsed.job, parsed.task, parsed.step)) == ref


def test_batch_script() -> None:
    scripts = parse_batch_script((DATA / "sacct-B-procid.txt").read_text())
    assert list(scripts) == ["4242003"] and scripts["4242003"].startswith("#!/bin/bash\n")
    assert parse_batch_script("Batch Script for 1\n" + "-" * 80 + "\nNONE\n") == {}


BAD = {
    "truncated sacct --json": ("sacct.json", (DATA / "sacct-24.11-node-fail.json").read_text()[:3000],
                               "not valid JSON"),
    "JSON that is not sacct's": ("sacct.json", '{"items": []}', 'no "jobs" list'),
    "a job without an id": ("sacct.json", '{"jobs": [{"name": "x", "state": {"current": ["FAILED"]}}]}', "job_id"),
    "sacct reports its error": ("sacct.json", '{"jobs": [], "errors": [{"description": "Unable to contact '
                                "slurmdbd\"}]}", "Unable to contact slurmdbd"),
    "sacct -P without header": ("sacct.txt", "4242006|train|TIMEOUT|0:0\n", "neither sacct --json, sacct -P"),
    "sacct -P cut in a line": ("sacct.txt", (DATA / "sacct-P-timeout.txt").read_text()[:180],
                               "fields where the header has"),
    "scontrol cut before JobState": ("scontrol.txt", (DATA / "scontrol-show-job-cancelled.txt").read_text()[:120],
                                     "no JobState="),
    "scontrol of something else": ("scontrol.txt", "NodeName=gpu01 State=IDLE\n", "neither sacct"),
    "binary": ("sacct.out", "\x00\x01\x02", "binary data"),
    "a bad node list": ("sacct.txt", "JobID|State|NodeList\n1|FAILED|gpu[01-\n", "unbalanced brackets"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_saved_record_is_one_clear_error(case: str, tmp_path: Path) -> None:
    name, text, message = BAD[case]
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(AccountingError, match=message.replace("(", r"\(").replace("|", r"\|")):
        read_saved([path])


def test_not_utf8_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "scontrol.txt"
    path.write_bytes(b"JobId=1 JobState=FAILED \xff\xfe\n")
    with pytest.raises(AccountingError, match="not UTF-8"):
        read_saved([path])


def test_record_to_json_keys_are_stable() -> None:
    record = parse_scontrol((DATA / "scontrol-show-job-cancelled.txt").read_text(), "s")[0]
    assert isinstance(record, AccountingRecord)
    assert set(record.to_json()) == {"job_id", "name", "state", "cancelled_by", "exit_code", "reason", "user",
                                     "nodes", "start", "end", "failed_node", "stdout", "stderr", "work_dir", "steps",
                                     "script", "sources"}
    assert record.stdout == "/lustre/alice/llm/train-4242014-gpu-node01.out" and record.batch_host == "gpu-node01"


JSON_FIXTURES = ["sacct-24.11-node-fail.json", "sacct-22.05-crash-cascade.json", "scontrol-24.11-completed.json"]


def _paths(value: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(_paths(item, (*prefix, index)))
    return out


@pytest.mark.usefixtures("utc")
def test_any_damage_to_a_json_record_is_a_record_or_one_error(tmp_path: Path) -> None:
    """Every value of the JSON fixtures replaced by each other JSON type, or removed: the readers
    return records or raise AccountingError, never anything else."""
    replacements: list[object] = [None, True, -1, 2**40, 1.5, "", "x[", [], {}, [None], {"set": True}, "REMOVE"]
    target = tmp_path / "sacct.json"
    for fixture in JSON_FIXTURES:
        original = json.loads((DATA / fixture).read_text())
        for path in _paths(original)[1:]:
            for replacement in replacements:
                document = json.loads(json.dumps(original))
                parent = document
                for key in path[:-1]:
                    parent = parent[key]
                if replacement == "REMOVE":
                    del parent[path[-1]]
                else:
                    parent[path[-1]] = replacement
                target.write_text(json.dumps(document))
                with contextlib.suppress(AccountingError):
                    read_saved([target])


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("fixture", ["sacct-P-timeout.txt", "scontrol-show-job-cancelled.txt", "sacct-B-procid.txt",
                                     "sacct-24.11-node-fail.json"])
def test_cut_anywhere_is_a_record_or_one_error(fixture: str, tmp_path: Path) -> None:
    """A saved output cut short at any byte (a copy interrupted, a full disk) is read or refused."""
    data = (DATA / fixture).read_bytes()
    target = tmp_path / fixture
    for end in range(0, len(data), 7):
        target.write_bytes(data[:end])
        try:
            read_saved([target])
        except AccountingError as error:
            assert "\n" not in str(error)


ARRAY = """JobID|JobName|State|ExitCode|NodeList|Start|End
12345_7|sweep|FAILED|1:0|gpu01|2026-11-03T10:00:00|2026-11-03T10:05:00
12345_7.batch|batch|FAILED|1:0|gpu01|2026-11-03T10:00:00|2026-11-03T10:05:00
12345_7.0|python|FAILED|1:0|gpu01|2026-11-03T10:00:02|2026-11-03T10:05:00
12345_8|sweep|COMPLETED|0:0|gpu02|2026-11-03T10:00:00|2026-11-03T10:09:00
12345_8.batch|batch|COMPLETED|0:0|gpu02|2026-11-03T10:00:00|2026-11-03T10:09:00
"""


def test_array_tasks_and_steps_are_picked_by_id() -> None:
    from logscope.accounting.jobid import select_job

    records = parse_sacct_parsable(ARRAY, "sacct.txt")
    assert [r.job_id for r in records] == ["12345_7", "12345_8"]
    task = select_job(records, parse_job_ref("12345_7"), "sacct")
    assert (task.job.state, [s.step_id for s in task.steps]) == ("FAILED", ["12345_7.batch", "12345_7.0"])
    step = select_job(records, parse_job_ref("12345_7.0"), "sacct")
    assert [s.step_id for s in step.steps] == ["12345_7.0"]
    with pytest.raises(AccountingError, match="array of 2 tasks"):
        select_job(records, parse_job_ref("12345"), "sacct")
    with pytest.raises(AccountingError, match="no job 12345_9"):
        select_job(records, parse_job_ref("12345_9"), "sacct")
    with pytest.raises(AccountingError, match="has no step 3"):
        select_job(records, parse_job_ref("12345_8.3"), "sacct")
