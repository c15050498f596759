"""What a job's Flight Recorder dumps say (the ``fr`` rows of its timeline), worked out once for every output.

:func:`flight_recorder_of` reads the ``fr`` rows of a :class:`~logscope.detectors.base.JobView`
(:mod:`logscope.flight_recorder.rows`) and returns a :class:`FlightRecorder`: the dumps read, the
ranks that wrote one and those that did not, and three answers the detectors ``LS106``-``LS108``,
the JSON's ``flight_recorder``, the terminal, the report and the charts all take from here:

Lagging ranks. Each process group (its name and members, as the dumps' ``pg_config`` state them)
is compared member by member, on collectives only (a p2p operation involves two members, and a
group that carries p2p operations counts them in ``pg_status`` too, so its counters are not used):

* *issued*: the newest collective the member enqueued (``pg_status``'s ``last_enqueued_collective``,
  or the newest of its entries);
* *completed*: the newest it saw complete (``last_completed_collective``, or its entries' states;
  a dump of only the collectives still in flight, as ``onlyActive`` writes, completed everything
  before its oldest entry). gloo dumps say nothing reliable here (their entries stay
  ``scheduled``, their counters count a timed-out collective as completed): not used.

A group with work in flight whose member issued less than the group's newest *lags on issue*: the
others wait in a collective it never entered (its Python thread stopped: a deadlock, a held GIL,
data loading). A member that saw fewer collectives complete than another member *lags on
completion*: a collective completes on a member only if every member took part, so that member's
own view stopped (its GPU stopped, or its watchdog cannot query it). A member with no dump is
listed (``missing_ranks``), never blamed: its dump may simply not have been collected.

A lagging rank that is itself waiting elsewhere (in flight in another group, level with its
newest, with a member there lagging or missing) lags *because* of that group: a consequence. The
others are the roots, ordered by when they stopped (their newest entry, or the first collective
they never completed).

Mismatches: the same group and sequence id with a different operation, or different sizes or
dtypes, on different members (each member's entries of that id in order, so a coalesced group is
compared whole). The minority is named by majority (more than half of the members compared);
with no majority, nobody is. Each member's oldest id in its buffer is left out (a wrapped ring
buffer may have cut a coalesced group there), and only each group's first mismatch is kept: the
later ones follow from it.

Arrival lag: for each collective at least two dumps hold, how long after the first member each
member created it; per rank and group, the median over them; a rank's lag (``arrival_lag_ms``) is
its largest median over its groups (a straggler is late where its peers wait for it, on time in the
next collective it enters with them). In synchronous training
the straggler is the rank that always arrives last, which step-time lines cannot show: every rank
waits for it and reports the same step time. (Across hosts this includes their clocks' offset.)
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

from logscope.detectors.base import JobView, evidence_of
from logscope.model import Event, Evidence

MIN_COMPARED = 2  # members of a group compared, at least
MIN_ARRIVALS = 3  # collectives of a group a rank's arrival lag there rests on, at least


@dataclass(frozen=True)
class Lag:
    """A member of a group behind the others."""

    rank: int
    pg: str
    pg_desc: str
    seq: int  # the first collective it did not issue (issue) or did not see complete (completion)
    op: str | None
    how: str  # "issue" or "completion"
    newest: int  # the group's newest issued (issue) or completed (completion) collective
    stopped: datetime | None  # when it stopped: its newest entry, or the first collective it did not complete
    evidence: tuple[Evidence, ...] = ()
    host: str | None = None
    node: str | None = None
    local_rank: int | None = None

    def to_json(self) -> dict[str, Any]:
        first = self.evidence[0] if self.evidence else None
        return {"rank": self.rank, "pg": self.pg, "pg_desc": self.pg_desc, "seq": self.seq, "op": self.op,
                "how": self.how, "group_newest": self.newest, "host": self.host or self.node,
                "file": first.file if first else None, "line": first.line if first else None}


@dataclass(frozen=True)
class Mismatch:
    """Members of one group that ran something else at the same sequence id."""

    pg: str
    pg_desc: str
    seq: int
    what: str  # "op" or "sizes/dtypes"
    majority: str | None  # what most members ran
    minority: tuple[int, ...]  # the ranks that ran something else (empty: no majority)
    ranks: dict[int, str]  # every compared rank -> what it ran
    evidence: tuple[Evidence, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"pg": self.pg, "pg_desc": self.pg_desc, "seq": self.seq, "what": self.what,
                "majority": self.majority, "minority": list(self.minority),
                "ranks": {str(r): v for r, v in sorted(self.ranks.items())}}


@dataclass
class FlightRecorder:
    """Everything logscope says about a job's Flight Recorder dumps (see the module docstring)."""

    files: list[dict[str, Any]]
    ranks: list[int]
    expected_ranks: list[int]
    alignment: str
    lagging: list[Lag] = field(default_factory=list)  # the roots, first the one that stopped first
    waiting_lags: list[Lag] = field(default_factory=list)  # lags explained by waiting elsewhere
    mismatches: list[Mismatch] = field(default_factory=list)
    arrival_lag_ms: dict[int, float] = field(default_factory=dict)
    arrival_counts: dict[int, int] = field(default_factory=dict)
    groups_compared: int = 0
    # rank -> (node, host, local rank), from the logs' rank map
    places: dict[int, tuple[Any, Any, Any]] = field(default_factory=dict)

    @property
    def missing_ranks(self) -> list[int]:
        return sorted(set(self.expected_ranks) - set(self.ranks))

    @property
    def lagging_ranks(self) -> list[int]:
        return list(dict.fromkeys(lag.rank for lag in self.lagging))

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files, "ranks": self.ranks, "missing_ranks": self.missing_ranks,
            "alignment": self.alignment, "lagging": [lag.to_json() for lag in self.lagging],
            "lagging_ranks": self.lagging_ranks,
            "waiting": [lag.to_json() for lag in self.waiting_lags],
            "mismatches": [m.to_json() for m in self.mismatches],
            "arrival_lag_ms": {str(r): round(v, 3) for r, v in sorted(self.arrival_lag_ms.items())},
        }


def flight_recorder_of(view: JobView) -> FlightRecorder | None:
    """The job's :class:`FlightRecorder`, worked out once per view; None without dumps."""
    result: FlightRecorder | None = view.remember("flight recorder", lambda: _work_out(view))
    return result


def _work_out(view: JobView) -> FlightRecorder | None:
    if not view.has(Event.FR_DUMP):
        return None
    said = pl.col("fields").struct
    dumps = view.of(Event.FR_DUMP).select("file", "rank", said.field("version"), said.field("key").alias("format"),
                                          said.field("count"), said.field("value").alias("library"),
                                          said.field("reason"))
    files = [{"file": f, "rank": r, "version": v, "format": fmt, "entries": n, "comm_lib_version": lib}
             for f, r, v, fmt, n, lib, _ in dumps.sort("rank").iter_rows()]
    ranks = sorted({int(r) for r in dumps["rank"].drop_nulls().to_list()})
    alignment = str(dumps["reason"].drop_nulls().first() or "")
    groups = view.of(Event.FR_GROUP).select(
        "rank", "file", "line", "time", "time_inferred", "time_latest", "text", "prefix", "node", "host",
        said.field("pg"), said.field("pg_desc"), said.field("value").alias("members"),
        said.field("last_enqueued"), said.field("last_completed"))
    entries = view.of(Event.FR_ENTRY).select(
        "rank", "file", "line", "time", "time_inferred", "time_latest", "text", "prefix", "node", "host", "local_rank",
        said.field("pg"), said.field("pg_desc"), said.field("seq"), said.field("p2p_seq"), said.field("op"),
        said.field("state"), said.field("value").alias("shape"), said.field("transport").alias("backend"))
    members = _members(groups)
    expected = set(ranks)
    for group_members in members.values():
        expected.update(group_members)
    world = view.world_size
    if world:
        expected.update(range(world))
    # the ranks the logs name (a launcher's failure records name every rank it started)
    logged = view.events.filter(pl.col("source") != "fr")["rank"].drop_nulls().unique().to_list()
    expected.update(int(r) for r in logged if r >= 0)
    summary = FlightRecorder(files, ranks, sorted(expected), alignment)
    places = _places(entries, groups)
    summary.places = places
    state = _group_state(entries, groups)
    _lags(summary, state, members, entries, groups, places)
    summary.mismatches = _mismatches(entries)
    summary.arrival_lag_ms, summary.arrival_counts = _arrival(entries)
    return summary


def _members(groups: pl.DataFrame) -> dict[str, tuple[int, ...]]:
    """group name -> its members, as the dumps state them (the longest statement of a name)."""
    out: dict[str, tuple[int, ...]] = {}
    for name, text in groups.select("pg", "members").drop_nulls().unique().iter_rows():
        ranks = tuple(int(r) for r in str(text).strip("[]").split(",") if r.strip().lstrip("-").isdigit())
        if len(ranks) > len(out.get(name, ())):
            out[name] = ranks
    return out


def _places(entries: pl.DataFrame, groups: pl.DataFrame) -> dict[int, tuple[Any, Any, Any]]:
    rows = pl.concat([entries.select("rank", "node", "host", "local_rank"),
                      groups.select("rank", "node", "host", pl.lit(None, dtype=pl.Int64).alias("local_rank"))])
    out: dict[int, tuple[Any, Any, Any]] = {}
    for rank, node, host, local in rows.unique(subset="rank", keep="first").iter_rows():
        if rank is not None:
            out[int(rank)] = (node, host, local)
    return out


@dataclass
class _Member:
    issued: int | None = None
    completed: int | None = None


def _group_state(entries: pl.DataFrame, groups: pl.DataFrame) -> dict[str, dict[int, _Member]]:
    """group name -> rank -> issued/completed (see the module docstring); groups that carry p2p
    operations, or whose members' dumps say nothing, are left out."""
    p2p_groups = set(entries.filter(pl.col("p2p_seq").is_not_null())["pg"].unique().to_list())
    gloo_groups = set(entries.filter(pl.col("backend") == "gloo")["pg"].unique().to_list())
    collectives = entries.filter(pl.col("p2p_seq").is_null())
    # a dump whose entries never show a completion holds only what was in flight (onlyActive)
    active_only = set(entries.group_by("rank").agg((pl.col("state") == "completed").any().alias("c"))
                      .filter(~pl.col("c"))["rank"].to_list())
    per = collectives.group_by("pg", "rank").agg(
        pl.col("seq").max().alias("issued"),
        pl.col("seq").filter(pl.col("state") == "completed").max().alias("completed"),
        pl.col("seq").filter(pl.col("state") != "completed").min().alias("oldest_in_flight"))
    state: dict[str, dict[int, _Member]] = {}
    for pg, rank, issued, completed, oldest in per.iter_rows():
        if pg in p2p_groups or rank is None:
            continue
        if completed is None and rank in active_only and oldest is not None:
            completed = oldest - 1
        state.setdefault(pg, {})[int(rank)] = _Member(issued, None if pg in gloo_groups else completed)
    for pg, rank, enqueued, completed in groups.select("pg", "rank", "last_enqueued", "last_completed").iter_rows():
        if pg in p2p_groups or rank is None or enqueued is None:
            continue
        member = state.setdefault(pg, {}).setdefault(int(rank), _Member())
        member.issued = max(enqueued, member.issued) if member.issued is not None else enqueued
        if pg not in gloo_groups and completed is not None:
            member.completed = max(completed, member.completed) if member.completed is not None else completed
    return state


def _lags(summary: FlightRecorder, state: dict[str, dict[int, _Member]], members: dict[str, tuple[int, ...]],
          entries: pl.DataFrame, groups: pl.DataFrame, places: dict[int, tuple[Any, Any, Any]]) -> None:
    have = set(summary.ranks)
    lags: list[Lag] = []
    waiting: set[int] = set()
    index = _EntryIndex(entries, groups)
    for pg, by_rank in sorted(state.items()):
        known = {r: m for r, m in by_rank.items() if m.issued is not None and (pg not in members or r in members[pg])}
        if len(known) < MIN_COMPARED:
            continue
        summary.groups_compared += 1
        newest = max(int(m.issued or 0) for m in known.values())
        completions = [m.completed for m in known.values() if m.completed is not None]
        most_completed = max(completions) if completions else None
        in_flight = any(m.completed is not None and (m.issued or 0) > m.completed for m in known.values()) or \
            any(m.issued != newest for m in known.values())
        if not in_flight:
            continue
        lagging_here: set[int] = set()
        desc = index.desc(pg)
        for rank, member in sorted(known.items()):
            issued = int(member.issued or 0)
            if issued < newest:
                lagging_here.add(rank)
                lags.append(_lag(rank, pg, desc, issued + 1, "issue", newest, index, places))
            elif (member.completed is not None and most_completed is not None and member.completed < most_completed
                  and issued > member.completed):
                lagging_here.add(rank)
                lags.append(_lag(rank, pg, desc, member.completed + 1, "completion", most_completed, index, places))
        absent = set(members.get(pg, ())) - have
        if lagging_here or absent:
            for rank, member in known.items():
                if rank in lagging_here:
                    continue
                busy = member.completed is None or (member.issued or 0) > member.completed
                if busy and member.issued == newest:
                    waiting.add(rank)
    roots = [lag for lag in lags if lag.rank not in waiting]
    summary.waiting_lags = [lag for lag in lags if lag.rank in waiting]
    first_stop: dict[int, datetime] = {}
    for lag in roots:
        if lag.stopped is not None and (lag.rank not in first_stop or lag.stopped < first_stop[lag.rank]):
            first_stop[lag.rank] = lag.stopped
    summary.lagging = sorted(roots, key=lambda lag: (first_stop.get(lag.rank) or datetime.max, lag.rank, lag.pg))


class _EntryIndex:
    """Entries and group rows looked up by (group, seq) and by rank, for evidence and times."""

    def __init__(self, entries: pl.DataFrame, groups: pl.DataFrame) -> None:
        collectives = entries.filter(pl.col("p2p_seq").is_null())
        self.by_seq: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for row in collectives.sort("rank", "line").to_dicts():
            self.by_seq.setdefault((row["pg"], row["seq"]), []).append(row)
        newest = entries.sort("line").group_by("rank", maintain_order=True).last()
        self.newest_of_rank = {int(r["rank"]): r for r in newest.to_dicts() if r["rank"] is not None}
        newest_in = collectives.sort("line").group_by("rank", "pg", maintain_order=True).last()
        self.newest_in_group = {(int(r["rank"]), r["pg"]): r for r in newest_in.to_dicts() if r["rank"] is not None}
        self.group_row = {(int(r["rank"]), r["pg"]): r for r in groups.to_dicts() if r["rank"] is not None}
        both = pl.concat([entries.select("pg", "pg_desc"), groups.select("pg", "pg_desc")])
        self.descs = dict(both.drop_nulls().unique(subset="pg", keep="first").iter_rows())

    def desc(self, pg: str) -> str:
        return str(self.descs.get(pg) or "")

    def at(self, pg: str, seq: int) -> list[dict[str, Any]]:
        return self.by_seq.get((pg, seq), [])


def _lag(rank: int, pg: str, desc: str, seq: int, how: str, newest: int, index: _EntryIndex,
         places: dict[int, tuple[Any, Any, Any]]) -> Lag:
    rows = index.at(pg, seq)
    own = [r for r in rows if r["rank"] == rank]
    peers = [r for r in rows if r["rank"] != rank]
    op = (own or peers or [{}])[0].get("op")
    evidence: list[dict[str, Any]] = []
    stopped: datetime | None = None
    if how == "issue":
        # its own last word in the group first (the culprit's line), then a peer's entry of the
        # collective it never issued
        mine = index.newest_in_group.get((rank, pg)) or index.group_row.get((rank, pg))
        if mine is not None:
            evidence.append(mine)
        if peers:
            evidence.append(peers[0])
        last = index.newest_of_rank.get(rank)
        stopped = last["time"] if last is not None else (peers[0]["time"] if peers else None)
    else:
        if own:
            evidence.append(own[0])
            stopped = own[0]["time"]
        group_row = index.group_row.get((rank, pg))
        if group_row is not None:
            evidence.append(group_row)
    node, host, local = places.get(rank, (None, None, None))
    return Lag(rank, pg, desc, seq, op, how, newest, stopped, tuple(evidence_of(r) for r in evidence), host, node,
               local)


# Collectives whose tensors have the same sizes on every member (c10d's ops and their NCCL names in
# profiling names). Others legitimately differ: all_to_all splits, gather/scatter/reduce's root.
SAME_SHAPE_OPS = frozenset({
    "all_reduce", "allreduce", "allreduce_coalesced", "broadcast", "all_gather", "allgather",
    "_all_gather_base", "all_gather_into_tensor", "allgather_into_tensor_coalesced", "reduce_scatter",
    "reduce_scatter_tensor", "_reduce_scatter_base", "reduce_scatter_tensor_coalesced", "barrier",
})


def _mismatches(entries: pl.DataFrame) -> list[Mismatch]:
    collectives = entries.filter(pl.col("p2p_seq").is_null() & pl.col("rank").is_not_null())
    # sizes are compared only where they must be equal (SAME_SHAPE_OPS)
    collectives = collectives.with_columns(
        pl.when(pl.col("op").is_in(sorted(SAME_SHAPE_OPS))).then(pl.col("shape")).otherwise(pl.lit("")).alias("shape"))
    if collectives.height == 0:
        return []
    # each member's oldest id in its buffer may be a coalesced group cut by the ring buffer
    oldest = pl.col("seq") == pl.col("seq").min().over("rank", "pg")
    signatures = (collectives.filter(~oldest).sort("line")
                  .group_by("pg", "seq", "rank", maintain_order=True)
                  .agg(pl.col("op").str.join("+").alias("ops"), pl.col("shape").str.join(" + ").alias("shapes"),
                       pl.col("file").first(), pl.col("line").first(), pl.col("time").first(),
                       pl.col("time_inferred").first(), pl.col("time_latest").first(), pl.col("text").first(),
                       pl.col("prefix").first(), pl.col("pg_desc").first()))
    differing = signatures.filter((pl.col("ops").n_unique().over("pg", "seq") > 1)
                                  | (pl.col("shapes").n_unique().over("pg", "seq") > 1))
    if differing.height == 0:
        return []
    first_seq = differing.group_by("pg").agg(pl.col("seq").min())
    differing = differing.join(first_seq, on=["pg", "seq"], how="inner").sort("pg", "rank")
    out = []
    for (pg, seq), frame in differing.group_by("pg", "seq", maintain_order=True):
        rows = frame.to_dicts()
        what = "op" if len({r["ops"] for r in rows}) > 1 else "sizes/dtypes"
        key = "ops" if what == "op" else "shapes"
        counts: dict[str, int] = {}
        for row in rows:
            counts[row[key]] = counts.get(row[key], 0) + 1
        top, top_count = max(counts.items(), key=lambda kv: kv[1])
        majority = top if top_count * 2 > len(rows) else None
        minority = tuple(sorted(int(r["rank"]) for r in rows if majority is not None and r[key] != majority))
        cited = [r for r in rows if int(r["rank"]) in minority] + [r for r in rows if int(r["rank"]) not in minority]
        out.append(Mismatch(str(pg), str(rows[0]["pg_desc"] or ""), int(seq), what, majority, minority,
                            {int(r["rank"]): str(r[key]) for r in rows},
                            tuple(evidence_of(r) for r in cited[:4])))
    return sorted(out, key=lambda m: (m.pg, m.seq))


def _arrival(entries: pl.DataFrame) -> tuple[dict[int, float], dict[int, int]]:
    """rank -> its arrival lag (ms) and how many collectives it rests on: per group, the median
    of how long after the group's first member the rank created each collective; the rank's lag is
    the largest of these medians over the groups where it has MIN_ARRIVALS collectives (else over
    all its groups). A straggler is late where its peers wait for it; in the groups it enters
    with the ranks that waited beside it (its pipeline or tensor-parallel peers), it is on time."""
    collectives = entries.filter(pl.col("p2p_seq").is_null() & pl.col("rank").is_not_null()
                                 & pl.col("time").is_not_null())
    if collectives.height == 0:
        return {}, {}
    arrived = collectives.group_by("pg", "seq", "rank").agg(pl.col("time").min())
    arrived = arrived.filter(pl.len().over("pg", "seq") >= MIN_COMPARED).with_columns(
        ((pl.col("time") - pl.col("time").min().over("pg", "seq")).dt.total_microseconds() / 1000).alias("lag"))
    per_group = arrived.group_by("rank", "pg").agg(pl.col("lag").median().alias("median"), pl.len().alias("n"))
    lags: dict[int, float] = {}
    counts: dict[int, int] = {}
    for rank, frame in per_group.group_by("rank"):
        enough = frame.filter(pl.col("n") >= MIN_ARRIVALS)
        top = (enough if enough.height else frame).sort("median", descending=True).row(0, named=True)
        lags[int(rank[0])] = float(top["median"])
        counts[int(rank[0])] = int(top["n"])
    return lags, counts


def median_of_others(lags: dict[int, float], rank: int) -> float:
    others = [v for r, v in lags.items() if r != rank]
    return statistics.median(others) if others else 0.0


__all__ = ["FlightRecorder", "Lag", "Mismatch", "flight_recorder_of", "median_of_others"]
