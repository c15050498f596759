"""Which ranks are behind their peers: the rule ``logscope watch`` alerts with while a job runs and
the LS104 detector (``rank-behind``) applies to logs that stop, one rule in one place.

A collective completes only when every rank of its communicator has entered it, and a rank logs
its progress counters as it goes: NCCL's ``opCount`` of each communicator at enqueue
(``NCCL_DEBUG_SUBSYS=COLL``), c10d's sequence numbers (``last enqueued NCCL work``), the training
loop's step. When a job stops advancing, the ranks still counting agree on the highest value; a
rank that stopped before the others shows a lower one. That is evidence only where it is:

* counters are compared within their scope: the opCount of one communicator (NCCL's ``commId``,
  from the Init lines that tie each process's ``comm`` pointer to it; without them, communicators
  of the same size), the sequence numbers of one process group, the step of the training loop;
* the ranks named are those at the lowest value, fewer than the ranks ahead of them and at most a
  quarter of the ranks of the scope (:data:`MAX_BEHIND_FRACTION`; one of three): a spread over many
  ranks singles out none, and of two ranks apart neither is singled out (the one behind may wait
  for a collective the other should not have entered);
* each of them has a *witness*: a peer's higher count that was written after the behind rank's last
  one, so the behind rank's log was not merely cut short: a later line of the same file (a node's
  file holds its ranks' lines in the order they were written), or, in a live watch, a line seen
  arriving later (:attr:`Mark.seen`);
* opCount decides first, then sequence numbers, then steps; where the scopes of one kind name
  different ranks, their union counts only within the same bound.

A live watch has one more kind of evidence (:func:`silent_ranks`): while no rank advances, the
ranks that still write lines (waiting, warning, heartbeat) are alive; a rank that wrote nothing
since progress stopped, when all the others did, is silent while its peers wait.

Nothing here reads files or knows the time: the marks come from a timeline (:func:`marks_of`),
the watcher adds when it saw them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from logscope.detectors.base import compact_ranks, dicts, field_of
from logscope.model import Event

# At most this fraction of the ranks of a scope may be named behind (at least one).
MAX_BEHIND_FRACTION = 0.25
# The kinds of counters, in the order they decide.
OP_COUNT, SEQUENCE, STEP = "opcount", "seq", "step"
KINDS = (OP_COUNT, SEQUENCE, STEP)


@dataclass(frozen=True)
class Mark:
    """A rank's last progress counter in one scope, and the row that says it."""

    rank: int
    kind: str  # OP_COUNT, SEQUENCE or STEP
    scope: str  # the communicator, process group or loop the counter belongs to
    value: tuple[int, ...]  # compared as a tuple: (epoch, step) for epoch-wise steps
    row: dict[str, Any]  # the timeline row (file, line, text, host, node, ...)
    # A live watch's window for when the line was written (epoch seconds): after ``written_after``
    # (a look that did not find it yet; None: not known), by ``seen``. Both None offline.
    written_after: float | None = None
    seen: float | None = None

    @property
    def host(self) -> str | None:
        value = self.row.get("node") or self.row.get("host")
        return str(value) if value else None

    def said(self) -> str:
        """The counter as the logs print it."""
        if self.kind == OP_COUNT:
            return f"NCCL opCount {self.value[-1]:#x}"
        if self.kind == SEQUENCE:
            return f"c10d sequence number {self.value[-1]}"
        return f"step {self.value[-1]}" if self.value[0] == 0 else f"epoch {self.value[0]} step {self.value[-1]}"


@dataclass(frozen=True)
class Behind:
    """The ranks the evidence singles out, and what it is."""

    ranks: tuple[int, ...]
    marks: tuple[Mark, ...]  # the last mark of each rank named
    ahead: tuple[Mark, ...]  # a witness for each (a peer's higher count, written later)
    peers: int  # ranks compared
    reason: str  # one sentence: what the counters say

    @property
    def first(self) -> Mark:
        return self.marks[0]


def marks_of(events: pl.DataFrame) -> list[Mark]:
    """Each rank's last counter per scope, from timeline rows (any rows; those of other kinds, or
    of no known rank, are left out)."""
    kinds = [Event.NCCL_COLL.value, Event.PROGRESS.value, Event.WATCHDOG_STATUS.value]
    rows = events.filter(pl.col("event").is_in(kinds) & pl.col("rank").is_not_null())
    if rows.height == 0:
        return []
    said = pl.col("fields").struct
    comm_ids = _comm_ids(events)
    counted = rows.select(
        pl.all(),
        pl.when(pl.col("event") == Event.NCCL_COLL.value).then(pl.lit(OP_COUNT))
        .when(pl.col("event") == Event.WATCHDOG_STATUS.value).then(pl.lit(SEQUENCE))
        .otherwise(pl.lit(STEP)).alias("_kind"),
        pl.when(pl.col("event") == Event.NCCL_COLL.value).then(said.field("op_count"))
        .when(pl.col("event") == Event.WATCHDOG_STATUS.value).then(said.field("last_enqueued"))
        .otherwise(said.field("step")).alias("_count"),
        # an epoch-wise step counts within its epoch (mmcv's "Epoch [3][450/1833]")
        pl.when(pl.col("event") == Event.PROGRESS.value).then(said.field("value").cast(pl.Int64, strict=False))
        .otherwise(None).fill_null(0).alias("_epoch"),
    ).filter(pl.col("_count").is_not_null())
    if counted.height == 0:
        return []
    counted = counted.with_columns(said.field("comm").alias("_comm"))
    if comm_ids is not None:
        counted = counted.join(comm_ids, on=["host", "pid", "_comm"], how="left", maintain_order="left")
    else:
        counted = counted.with_columns(pl.lit(None, dtype=pl.String).alias("_comm_id"))
    scope = (pl.when(pl.col("_kind") == OP_COUNT)
             .then(pl.coalesce(pl.format("comm {}", "_comm_id"),
                               pl.format("communicators of {} ranks", said.field("nranks")),
                               pl.lit("communicators")))
             .when(pl.col("_kind") == SEQUENCE).then(pl.format("process group {}", said.field("pg").fill_null("0")))
             .otherwise(pl.lit("training steps")))
    last = (counted.with_columns(scope.alias("_scope"))
            .sort("_epoch", "_count", "file", "line", nulls_last=False, maintain_order=True)
            .group_by("_kind", "_scope", "rank", maintain_order=True).last())
    out = []
    for row in dicts(last):
        kind, scope_name = row.pop("_kind"), row.pop("_scope")
        epoch, count = row.pop("_epoch"), row.pop("_count")
        row.pop("_comm_id", None)
        row.pop("_comm", None)
        value = (int(count),) if kind != STEP else (int(epoch or 0), int(count))
        out.append(Mark(int(row["rank"]), kind, scope_name, value, row))
    return out


def _comm_ids(events: pl.DataFrame) -> pl.DataFrame | None:
    """(host, pid, comm pointer) -> NCCL commId, from the Init lines that say both."""
    said = pl.col("fields").struct
    init = events.filter(pl.col("event").is_in([Event.NCCL_INIT.value, Event.NCCL_INIT_START.value])).select(
        "host", "pid", said.field("comm").alias("_comm"), said.field("comm_id").alias("_comm_id"),
    ).drop_nulls().unique(subset=["host", "pid", "_comm"], keep="first", maintain_order=True)
    return init if init.height else None


def ranks_behind(marks: Iterable[Mark], *, peers_waited: bool = False) -> Behind | None:
    """The ranks the counters single out as behind their peers (see the module docstring), or None.

    ``peers_waited``: other lines already prove that the ranks ahead waited for the others (their
    collective timed out: LS101). The counts then need no witness, and any ranks below the highest
    count but not all of them are named (a whole node behind the other of a two-node job, say)."""
    by_kind: dict[str, dict[str, dict[int, Mark]]] = {}
    for mark in marks:
        scope = by_kind.setdefault(mark.kind, {}).setdefault(mark.scope, {})
        held = scope.get(mark.rank)
        if held is None or mark.value > held.value:
            scope[mark.rank] = mark
    for kind in KINDS:
        found = [behind for marks_of_scope in by_kind.get(kind, {}).values()
                 if (behind := _behind_in_scope(marks_of_scope, peers_waited)) is not None]
        if not found:
            continue
        ranks = sorted({rank for behind in found for rank in behind.ranks})
        compared = {rank for scope in by_kind[kind].values() for rank in scope}
        if len(ranks) > _bound(len(compared), peers_waited):
            return None  # the scopes of this kind name too many ranks between them: no one stands out
        if len(found) == 1:
            return found[0]
        marks_named = {mark.rank: mark for behind in found for mark in behind.marks}
        witnesses = {mark.rank: witness for behind in found for mark, witness in zip(behind.marks, behind.ahead,
                                                                                       strict=True)}
        return Behind(tuple(ranks), tuple(marks_named[r] for r in ranks), tuple(witnesses[r] for r in ranks),
                      len(compared), "; ".join(behind.reason for behind in found))
    return None


def _bound(ranks: int, peers_waited: bool = False) -> int:
    """How many of ``ranks`` may be named: fewer than the others, at most a quarter (at least one);
    when the peers are known to have waited, any but all."""
    if peers_waited:
        return ranks - 1
    return min(max(1, int(ranks * MAX_BEHIND_FRACTION)), (ranks - 1) // 2)


def _behind_in_scope(marks: Mapping[int, Mark], peers_waited: bool = False) -> Behind | None:
    """The ranks of one scope at its lowest count, when they are few and each has a witness."""
    if len(marks) < 2:
        return None
    top = max(mark.value for mark in marks.values())
    low = min(mark.value for mark in marks.values())
    if top == low:
        return None
    behind = sorted(rank for rank, mark in marks.items() if mark.value == low)
    if len(behind) > _bound(len(marks), peers_waited):
        return None
    ahead = sorted((mark for mark in marks.values() if mark.value > low), key=lambda m: m.rank)
    witnesses = []
    for rank in behind:
        witness = next((peer for peer in ahead if peers_waited or _written_after(peer, marks[rank])), None)
        if witness is None:
            return None  # its log may just stop earlier: nothing shows the peers went on after it
        witnesses.append(witness)
    lowest = marks[behind[0]]
    highest = max(ahead, key=lambda m: m.value)
    others = len(marks) - len(behind)
    reason = (f"rank(s) {compact_ranks(behind)} stopped at {lowest.said()} while the {others} other rank(s) "
              f"of {lowest.scope} reached {highest.said()}")
    return Behind(tuple(behind), tuple(marks[r] for r in behind), tuple(witnesses), len(marks), reason)


def _written_after(peer: Mark, mark: Mark) -> bool:
    """Whether ``peer``'s line was certainly written after ``mark``'s: later in the same file, or,
    in a live watch, not there yet when ``mark``'s had been seen."""
    if peer.row.get("file") is not None and peer.row.get("file") == mark.row.get("file"):
        return int(peer.row.get("line") or 0) > int(mark.row.get("line") or 0)
    return peer.written_after is not None and mark.seen is not None and peer.written_after >= mark.seen


def silent_ranks(last_written_after: Mapping[int, float | None], progress_seen: float,
                 last_marks: Mapping[int, Mark]) -> Behind | None:
    """A live watch's evidence: the ranks none of whose lines was certainly written after the job
    last advanced (``last_written_after``: for each rank, the latest time a look had not found one
    of its lines yet; ``progress_seen``: when the last progress had been seen), while every other
    rank wrote one; at most a quarter of them, fewer than the others. ``last_marks``: each rank's
    last line, cited; None when the evidence singles out no one."""
    if len(last_written_after) < 3:
        return None
    silent = sorted(rank for rank, after in last_written_after.items() if after is None or after < progress_seen)
    if not silent or len(silent) > _bound(len(last_written_after)):
        return None
    named = tuple(last_marks[rank] for rank in silent if rank in last_marks)
    if len(named) != len(silent):
        return None  # a rank with no line to cite is named by nothing
    others = len(last_written_after) - len(silent)
    reason = (f"rank(s) {compact_ranks(silent)} wrote nothing since the job last advanced, while the {others} "
              "other rank(s) kept writing as they waited")
    return Behind(tuple(silent), named, (), len(last_written_after), reason)


def located(behind: Behind) -> list[str]:
    """The hosts of the ranks named, in rank order, once each."""
    return list(dict.fromkeys(host for mark in behind.marks if (host := mark.host)))


def counter_text(row: dict[str, Any]) -> str:
    """A row's counter as the logs print it (a mark's row)."""
    if row.get("event") == Event.NCCL_COLL.value:
        return f"opCount {int(field_of(row, 'op_count') or 0):#x}"
    if row.get("event") == Event.WATCHDOG_STATUS.value:
        return f"last enqueued work {field_of(row, 'last_enqueued')}"
    return f"step {field_of(row, 'step')}"


__all__ = ["KINDS", "MAX_BEHIND_FRACTION", "OP_COUNT", "SEQUENCE", "STEP", "Behind", "Mark", "counter_text",
           "located", "marks_of", "ranks_behind", "silent_ranks"]
