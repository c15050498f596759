"""The message catalogue (logscope/knowledge/messages.toml) against the parser.

Every entry is an upstream message with the file it is printed from and a real-shaped example line.
An entry without ``gap`` must be recorded as its event (for catalogue messages, with its id, which
carries its category); an entry with ``gap`` must not be yet (strict: a gap that closes is taken off
the file, so the list only shrinks). The share of entries recognised is the catalogue's coverage,
reported in docs/how-it-reads-logs.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from logscope.analysis import analyze
from logscope.knowledge import CATALOGUE, Message
from logscope.knowledge.catalogue import KEYED_EVENTS
from logscope.model import Event, Severity
from logscope.parsers.lines import parse_chunk

COVERAGE_FLOOR = 1.0  # every entry recorded as its event; docs/how-it-reads-logs.md gives the figure


def recorded(message: Message) -> tuple[str | None, str | None]:
    result = parse_chunk(pl.DataFrame({"line": [1], "raw": [message.example]}), 2024, None)
    if result.events.height == 0:
        return None, None
    row = result.events.row(0, named=True)
    return row["event"], (row["fields"] or {}).get("key")


def recogniser_of(message: Message) -> str:
    """The id of the entry whose match recognises ``message``: its own, or the one it names."""
    return message.recognised_by or message.id


def is_recognised(message: Message) -> bool:
    event, key = recorded(message)
    return event == message.event.value and (message.event not in KEYED_EVENTS or key == recogniser_of(message))


@pytest.mark.parametrize("message", CATALOGUE, ids=[m.id for m in CATALOGUE])
def test_example_is_recorded_as_its_event(message: Message) -> None:
    if message.gap is None:
        assert is_recognised(message), f"{message.id}: {message.example!r} -> {recorded(message)}"
    else:
        assert not is_recognised(message), f"{message.id} is recognised now: take its gap off"


@pytest.mark.parametrize("message", CATALOGUE, ids=[m.id for m in CATALOGUE])
def test_entry_cites_its_upstream_source(message: Message) -> None:
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", message.project), message.project
    assert message.file and not message.file.startswith("/"), message.file
    assert message.format.strip() and message.meaning.strip()
    if message.match is not None:
        assert any(trigger in message.example for trigger in message.triggers), message.triggers


def test_ids_are_unique_and_coverage_holds() -> None:
    ids = [m.id for m in CATALOGUE]
    assert len(ids) == len(set(ids))
    covered = sum(m.gap is None for m in CATALOGUE) / len(CATALOGUE)
    assert covered >= COVERAGE_FLOOR, f"catalogue coverage {covered:.0%} fell below {COVERAGE_FLOOR:.0%}"


def test_catalogue_messages_are_found_wherever_they_stand() -> None:
    """After a prefix stack, quoted in an exception, glued behind a progress bar: a message that
    says something went wrong is that message wherever it stands (what an exception quotes is what
    failed). Informational lines, and the head of a C++ logger's error line, which wraps a message
    rather than being one, are left out."""
    matched = [m for m in CATALOGUE if m.match is not None and m.gap is None
               and m.severity != Severity.INFO and m.event != Event.FAILURE_LINE]
    assert matched
    for message in matched:
        body = message.example
        for line in (f"[rank3]: RuntimeError: {body}", f"  4%|▎  | 10/270 [07:16<2:55:33, 40.51s/it]{body}"):
            moved = Message(**{**message.__dict__, "example": line})
            assert is_recognised(moved), (message.id, line, recorded(moved))


def test_a_catalogue_id_given_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope.knowledge import catalogue

    text = catalogue.resources.files("logscope.knowledge").joinpath("messages.toml").read_text(encoding="utf-8")
    starts = [m.start() for m in re.finditer(r"^\[\[message\]\]$", text, re.MULTILINE)]
    first = text[starts[0]:starts[1]]  # the first entry, whole

    class Twice:
        def joinpath(self, _name: str) -> Twice:
            return self

        def read_text(self, encoding: str) -> str:
            return text + "\n" + first

    monkeypatch.setattr(catalogue.resources, "files", lambda _package: Twice())
    with pytest.raises(ValueError, match="duplicate catalogue ids"):
        catalogue._load.__wrapped__()


def test_a_sacct_row_pasted_into_a_log_is_read_as_slurms_record(tmp_path: Path) -> None:
    """A `sacct --parsable2` row in a job's output is SLURM's accounting record (slurm.state.*), read
    by the accounting detectors as they read sacct's own output: a time limit, not an unknown end."""
    log = tmp_path / "slurm-4815162.out"
    log.write_text("step 120/1000 loss 2.31\n4815162|train.sbatch|gpu|proj|64|TIMEOUT|0:0\n", encoding="utf-8")
    verdict = analyze([log]).verdict
    assert (verdict.category.value, verdict.finding) == ("scheduler", "LS705"), verdict


def test_an_hca_async_event_names_the_host_that_reported_it(tmp_path: Path) -> None:
    """NCCL's IB async events of every wording (nccl.ib.async_event.*) are network errors: the host
    whose HCA reported them is where the link failed, not an unknown WARN."""
    lines = [f"gpu-node05:1187{n}:1195{n} [{n}] transport/net_ib.cc:95 NCCL WARN NET/IB : Got async event : port error"
             for n in range(4)]
    log = tmp_path / "train-77-gpu-node05.out"
    log.write_text("\n".join(["iter 83594: loss 1.9491, time: 6235.95ms", *lines]) + "\n", encoding="utf-8")
    verdict = analyze([log]).verdict
    assert (verdict.category.value, verdict.finding) == ("network", "LS401"), verdict
    assert verdict.root_cause is not None and verdict.root_cause.host == "gpu-node05", verdict
