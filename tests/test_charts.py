"""Chart data (what is plotted), aggregation above 64 ranks, untimed jobs, and that files are written.

The synthetic job builder here is also used by ``test_report.py``: a timeline built directly as a
polars frame, ``per_node`` ranks per node, every rank advancing ``steps`` steps except
``quiet_rank``, which stops at step 7; the others then time out in the watchdog and tear down.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import matplotlib
import polars as pl
import pytest

from logscope.analysis import Analysis, analyze, analyze_job
from logscope.model import FIELD_SCHEMA, TIMELINE_SCHEMA
from logscope.report import charts
from logscope.timeline import Job

CRASH = Path(__file__).parent / "goldens" / "LS301-crash-two-nodes" / "logs"
REAL_LOGS = Path(__file__).resolve().parent.parent.parent / "shared" / "real_logs"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def synthetic_analysis(n_ranks: int = 16, per_node: int = 8, quiet_rank: int = 5, steps: int = 10, *,
                       timed: bool = True, hostile: str = "",
                       config: dict[str, dict[str, str]] | None = None, coll: bool = True,
                       progress: bool = True) -> Analysis:
    """A job whose ``quiet_rank`` stops at step 7 while the others reach ``steps`` and then time out.

    ``config`` maps a node to its ``NCCL_*`` variables (one NCCL_ENV line per variable);
    ``coll``/``progress``: whether the ranks print NCCL COLL lines / step lines.
    """
    t0 = datetime(2026, 1, 5, 10, 0, 0)
    rows: list[dict[str, Any]] = []

    def add(rank: int | None, node: str, t: datetime, event: str, source: str, severity: str, text: str,
            **fields: Any) -> None:
        rows.append({"file": f"logs/job-{node}.out", "line": len(rows) + 1, "node": node, "host": node,
                     "pid": None if rank is None else 1000 + rank,
                     "local_rank": None if rank is None else rank % per_node, "rank": rank, "task": None,
                     "time": t if timed else None, "time_inferred": False, "source": source, "event": event,
                     "severity": severity, "fields": {k: fields.get(k) for k in FIELD_SCHEMA}, "prefix": "",
                     "text": text})

    def node_of(rank: int) -> str:
        return f"node{rank // per_node:03d}"

    for node, variables in (config or {}).items():
        for key, value in variables.items():
            add(None, node, t0, "nccl_env", "nccl", "info", f"{key} set by environment to {value}.",
                key=key, value=value)
    for r in range(n_ranks):
        add(r, node_of(r), t0, "nccl_init", "nccl", "info", f"comm 0x1 rank {r} nranks {n_ranks} - Init COMPLETE",
            comm_rank=r, nranks=n_ranks, cuda_dev=r % per_node)
        for s in range(1, (7 if r == quiet_rank else steps) + 1):
            if progress:
                add(r, node_of(r), t0 + timedelta(seconds=10 * s), "progress", "app", "info",
                    f"step {s} loss 2.0", step=s)
            if coll:
                add(r, node_of(r), t0 + timedelta(seconds=10 * s, milliseconds=5), "nccl_coll", "nccl", "info",
                    f"AllReduce: opCount {s:x}", op="AllReduce", op_count=s, nranks=n_ranks)
    hang = t0 + timedelta(seconds=10 * steps + 600)
    for r in range(n_ranks):
        if r == quiet_rank:
            continue
        add(r, node_of(r), hang, "watchdog_timeout", "c10d", "error",
            f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={steps + 1}, "
            f"OpType=ALLREDUCE, Timeout(ms)=600000) {hostile}".rstrip(),
            seq=steps + 1, op="ALLREDUCE", timeout_ms=600000)
        add(r, node_of(r), hang + timedelta(seconds=1), "teardown", "c10d", "warning",
            "To avoid data inconsistency, we are taking the entire process down.")
    frame = pl.DataFrame(rows, schema=TIMELINE_SCHEMA).sort(["time", "file", "line"], nulls_last=True,
                                                            maintain_order=True)
    nodes = sorted(frame["node"].unique().to_list())
    job = Job(timeline=frame, files=[], nodes=nodes, lines_read=len(rows), lines_recognised=len(rows),
              job_id="777", job_name="synth")
    return analyze_job(job)


@pytest.fixture(scope="module")
def crash() -> Analysis:
    return analyze([CRASH])


@pytest.fixture(scope="module")
def big() -> Analysis:
    return synthetic_analysis(n_ranks=1024, per_node=8, quiet_rank=517)


def test_backend_is_agg() -> None:
    assert matplotlib.get_backend().lower() == "agg"


def test_swimlane_marks_the_root_failure_and_the_kills(crash: Analysis) -> None:
    data = charts.swimlane_data(crash)
    root = data.filter(pl.col("is_root"))
    assert root.height == 1
    assert root.row(0, named=True)["lane"] == "rank 3 · node02"
    assert root.row(0, named=True)["event"] == "exception"
    assert root.row(0, named=True)["seconds"] == 0.0  # the time axis is measured from the root failure
    kills = data.filter(pl.col("is_kill"))
    assert {"rank 0 · node01", "rank 3 · node02", "node01", "node02"} <= set(kills["lane"].to_list())
    # ChildFailedError records carry whole seconds, so a kill can seem up to 1 s before the root.
    assert (kills["seconds"] > -1.0).all()
    assert (kills.filter(pl.col("event") != "child_failure")["seconds"] >= 0).all()
    # ranks first (by number), then the launcher/SLURM lanes of each node
    lanes = data.select("lane", "lane_order").unique().sort("lane_order")["lane"].to_list()
    assert lanes == ["rank 0 · node01", "rank 3 · node02", "node01", "node02"]


def test_progress_strip_shows_the_quiet_rank() -> None:
    analysis = synthetic_analysis(n_ranks=16, quiet_rank=5)
    data = charts.progress_strip_data(analysis)
    assert not charts.by_node(analysis)
    assert set(data["metric"]) == {"step", "NCCL opCount", "c10d SeqNum"}
    for metric in ("step", "NCCL opCount"):
        quiet = data.filter((pl.col("metric") == metric) & pl.col("quiet"))
        assert quiet["lane"].to_list() == ["rank 5 · node000"]
        assert quiet["behind"].to_list() == [3]
        assert data.filter(pl.col("metric") == metric)["leader"].unique().to_list() == [10]
    # rank 5 never reached the watchdog: it has no SeqNum, the others agree, nobody is "quiet" there
    seq = data.filter(pl.col("metric") == "c10d SeqNum")
    assert seq.filter(pl.col("missing"))["lane"].to_list() == ["rank 5 · node000"]
    assert not seq["quiet"].any()


def test_last_activity_and_failure_curve() -> None:
    analysis = synthetic_analysis(n_ranks=16, quiet_rank=5)
    last = charts.last_activity_data(analysis)
    assert last.filter(pl.col("earliest"))["lane"].to_list() == ["rank 5 · node000"]
    assert last.height == 16
    curve = charts.failure_curve_data(analysis)
    assert curve.height == 15  # the quiet rank itself never logged an error
    assert curve["cumulative"].to_list() == list(range(1, 16))
    assert curve["total_lanes"].unique().to_list() == [16]
    assert (curve["seconds"] > 0).all()


def test_failure_curve_starts_at_the_root(crash: Analysis) -> None:
    curve = charts.failure_curve_data(crash)
    first = curve.row(0, named=True)
    assert first["is_root"] and first["lane"] == "rank 3 · node02" and first["seconds"] == 0.0
    assert curve["cumulative"].to_list() == list(range(1, curve.height + 1))


@pytest.mark.parametrize(("n_ranks", "aggregated"), [(64, False), (72, True)])
def test_aggregation_kicks_in_above_64_ranks(n_ranks: int, aggregated: bool) -> None:
    analysis = synthetic_analysis(n_ranks=n_ranks, quiet_rank=9)
    assert charts.by_node(analysis) is aggregated
    lanes = charts.progress_strip_data(analysis)["lane"].unique().to_list()
    if aggregated:
        assert all(lane.startswith("node") for lane in lanes) and len(lanes) == n_ranks // 8
    else:
        assert all(lane.startswith("rank ") for lane in lanes) and len(lanes) == n_ranks


def test_thousand_ranks_aggregate_by_node(big: Analysis) -> None:
    assert charts.by_node(big)
    strip = charts.progress_strip_data(big)
    assert strip["lane"].n_unique() == 128
    assert strip.filter(pl.col("quiet"))["lane"].unique().to_list() == ["node064"]  # rank 517 is on node064
    assert charts.last_activity_data(big).filter(pl.col("earliest"))["lane"].to_list() == ["node064"]
    swim = charts.swimlane_data(big)
    assert swim["lane"].n_unique() == 128
    assert swim.height <= charts.MAX_SWIMLANE_POINTS  # routine points are thinned, failures kept
    assert swim.filter(pl.col("kind") == "error").height == 1023
    rendered = charts.render_charts(big, formats=("png",))
    assert all("aggregated by node" in chart.title for chart in rendered)
    assert any("aggregated by node" in note for note in charts.chart_notes(big))


def test_untimed_job_keeps_the_progress_strip_and_says_why_the_rest_is_missing(tmp_path: Path) -> None:
    analysis = synthetic_analysis(n_ranks=16, quiet_rank=5, timed=False)
    assert charts.swimlane_data(analysis).height == 0
    assert charts.last_activity_data(analysis).height == 0
    assert charts.failure_curve_data(analysis).height == 0
    assert charts.progress_strip_data(analysis).filter(pl.col("quiet")).height == 2
    written = charts.save_charts(analysis, tmp_path)
    assert sorted(p.name for p in written) == ["progress_strip.png", "progress_strip.svg"]
    assert any("no timestamps" in note for note in charts.chart_notes(analysis))


def test_empty_timeline_renders_nothing_and_does_not_crash(tmp_path: Path) -> None:
    analysis = analyze_job(Job(timeline=pl.DataFrame(schema=TIMELINE_SCHEMA), files=[]))
    assert charts.render_charts(analysis) == []
    assert charts.save_charts(analysis, tmp_path / "charts") == []
    assert charts.chart_notes(analysis)


def test_save_charts_writes_png_and_svg(crash: Analysis, tmp_path: Path) -> None:
    written = charts.save_charts(crash, tmp_path / "out")
    names = sorted(p.name for p in written)
    stems = ["cascade", "failure_curve", "last_activity", "progress_strip", "swimlane"]
    assert names == sorted(f"{s}.{ext}" for s in stems for ext in ("png", "svg"))
    for path in written:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) if path.suffix == ".png" else b"<svg" in data[:2000]


@pytest.mark.skipif(not REAL_LOGS.is_dir(), reason="shared real logs not present")
@pytest.mark.parametrize("case", sorted(p.name for p in REAL_LOGS.iterdir() if p.is_dir())
                         if REAL_LOGS.is_dir() else [])
def test_real_logs_never_crash_the_charts(case: str) -> None:
    analysis = analyze([REAL_LOGS / case])
    rendered = charts.render_charts(analysis, formats=("png",))
    assert all(chart.png.startswith(PNG_MAGIC) for chart in rendered)
    charts.chart_notes(analysis)


# --- the charts tell the verdict's story (issue 13) -----------------------------------------

SAMPLES = Path(__file__).parent.parent / "sample_logs"


@pytest.fixture(scope="module")
def node_failure() -> Analysis:
    return analyze([SAMPLES / "node-failure"])


@pytest.fixture(scope="module")
def cascade() -> Analysis:
    return analyze([SAMPLES / "crash-cascade"])


def test_the_dead_node_is_the_first_to_go_quiet_not_the_silent_healthy_one(node_failure: Analysis) -> None:
    """node01's ranks log nothing while training: their silence since init is how they always
    were. node02's rank 15 logged every 8.5 s, then nothing for 17 s before the node failure."""
    last = charts.last_activity_data(node_failure)
    assert last.filter(pl.col("earliest"))["lane"].to_list() == ["rank 15 · gpu-node02"]
    assert not last.filter(pl.col("lane").str.contains("gpu-node01"))["quiet"].any()


def test_a_rank_between_two_log_lines_is_not_quiet(cascade: Analysis) -> None:
    last = charts.last_activity_data(cascade)
    assert not last["quiet"].any() and not last["earliest"].any()


def test_no_invented_lanes(cascade: Analysis) -> None:
    """torchrun's "local_rank 11 FAILED" names a global rank: no "gpu-node02 local 11" lane."""
    assert charts.lanes(cascade).filter(pl.col("lane_kind") == "local").height == 0
    assert not any("local" in lane for lane in charts.swimlane_data(cascade)["lane"].to_list())


def test_the_cascade_is_zoomed_on_every_node(cascade: Analysis, node_failure: Analysis) -> None:
    data = charts.cascade_data(cascade)
    assert charts.cascade_lanes(cascade, data) == ["gpu-node01", "gpu-node02"]
    assert data["seconds"].min() >= -2.0 and data["seconds"].max() <= 1.5  # it happened within 1.3 s
    root = data.filter(pl.col("is_root"))
    assert root.height == 1 and root["lane"].to_list() == ["gpu-node02"] and root["seconds"].to_list() == [0.0]
    assert set(data.filter(pl.col("is_kill"))["lane"].to_list()) == {"gpu-node01", "gpu-node02"}
    # node-failure: the dead node has its (empty) lane, and the root line, untimed, is drawn at the
    # verdict's moment with its window kept
    dead = charts.cascade_data(node_failure)
    assert charts.cascade_lanes(node_failure, dead) == ["gpu-node01", "gpu-node02"]
    root = dead.filter(pl.col("is_root")).row(0, named=True)
    assert root["seconds"] == 0.0 and root["window_to_s"] > 200
    assert any(c.name == "cascade" for c in charts.render_charts(cascade, formats=("png",)))
