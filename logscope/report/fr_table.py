"""The Flight Recorder table every output shows (terminal, Markdown and HTML reports): one row per
rank, from the one model (:mod:`logscope.detectors.fr_facts`); the JSON has the same in
``flight_recorder``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from logscope.detectors.base import compact_ranks

if TYPE_CHECKING:
    from logscope.analysis import Analysis
    from logscope.detectors.fr_facts import FlightRecorder

COLUMNS = ("rank", "host", "dump", "entries", "state", "arrival lag")
MAX_ROWS = 32


def fr_rows(fr: FlightRecorder, places: dict[int, str]) -> list[list[str]]:
    """One row per rank that wrote a dump or should have: the lagging first, then the missing,
    then the others in rank order (MAX_ROWS at most)."""
    files = {int(f["rank"]): f for f in fr.files if f.get("rank") is not None}
    lagging: dict[int, list[str]] = {}
    for lag in fr.lagging:
        lagging.setdefault(lag.rank, []).append(
            f"{'never issued' if lag.how == 'issue' else 'never saw complete'} #{lag.seq}"
            + (f" {lag.op}" if lag.op else "") + f" in {lag.pg_desc or 'pg ' + lag.pg}")
    waiting = {lag.rank for lag in fr.waiting_lags}
    mismatched = {rank: m for m in fr.mismatches for rank in m.minority}
    order = [*lagging, *(r for r in fr.missing_ranks if r not in lagging),
             *(r for r in sorted(files) if r not in lagging)]
    rows = []
    for rank in list(dict.fromkeys(order))[:MAX_ROWS]:
        dump = files.get(rank)
        if rank in lagging:
            state = "LAGGING: " + lagging[rank][0] + (
                f" (+{len(lagging[rank]) - 1} group(s))" if len(lagging[rank]) > 1 else "")
        elif rank in mismatched:
            m = mismatched[rank]
            state = f"MISMATCH: ran {m.ranks.get(rank)} as #{m.seq} of {m.pg_desc or 'pg ' + m.pg}"
        elif dump is None:
            state = "no dump"
        elif rank in waiting:
            state = "waiting (lags only because it waits elsewhere)"
        else:
            state = "waiting" if fr.lagging or fr.missing_ranks else ""
        late = fr.arrival_lag_ms.get(rank)
        rows.append([str(rank), places.get(rank, ""), dump["file"].rsplit("/", 1)[-1] if dump else "",
                     str(dump["entries"]) if dump else "", state, f"{late:.1f} ms median" if late is not None else ""])
    return rows


def fr_note(fr: FlightRecorder) -> str:
    """The facts beside the table: how many dumps, who is missing, how times were aligned."""
    parts = [f"{len(fr.files)} dump(s) of {len(fr.expected_ranks) or len(fr.files)} rank(s)"]
    if fr.missing_ranks:
        parts.append(f"no dump from rank(s) {compact_ranks(fr.missing_ranks)}")
    if len(fr.files) > MAX_ROWS:
        parts.append(f"{MAX_ROWS} ranks shown, every one in --format json")
    parts.append(fr.alignment)
    return "; ".join(parts)


def places_of(analysis: Analysis) -> dict[int, str]:
    """rank -> its node (else host), as the model knows them."""
    fr = analysis.flight_recorder
    out: dict[int, str] = {}
    if fr is None:
        return out
    for lag in [*fr.lagging, *fr.waiting_lags]:
        if lag.node or lag.host:
            out[lag.rank] = str(lag.node or lag.host)
    rows = analysis.view.events.filter(analysis.view.events["source"] == "fr").select("rank", "node", "host")
    for rank, node, host in rows.unique(subset="rank", keep="first").iter_rows():
        if rank is not None and (node or host):
            out.setdefault(int(rank), str(node or host))
    return out


__all__ = ["COLUMNS", "MAX_ROWS", "fr_note", "fr_rows", "places_of"]
