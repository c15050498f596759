"""The charts say what the verdict says and what the logs print (issue 39, "charts that blame").

* no root-failure star on any lane when the verdict names no culprit (a silent hang);
* NCCL's opCount drawn in hex, as NCCL and the evidence print it;
* aggregated by node, a rank lacking a metric most ranks report makes its node's value missing
  (the node's minimum over its other ranks hid the quiet rank);
* last-activity labels: readable event names, and by node the rank whose line it is;
* titles wrap instead of running off the figure; SVG text is text (searchable), not paths.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from test_charts import synthetic_analysis

from logscope.analysis import Analysis, analyze
from logscope.report import charts

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


@pytest.fixture(scope="module")
def silent_hang() -> Analysis:
    return analyze([SAMPLES / "silent-hang"])


@pytest.fixture(scope="module")
def wide_hang() -> Analysis:
    """256 ranks, no COLL and no step lines: only the watchdog's SeqNum, which rank 77 never reports."""
    return synthetic_analysis(n_ranks=256, per_node=8, quiet_rank=77, coll=False, progress=False)


def test_no_star_without_a_culprit(silent_hang: Analysis) -> None:
    assert silent_hang.verdict.root_cause is None and silent_hang.verdict.finding  # a hang naming nobody
    assert charts.root_lines(silent_hang) == set()
    for data in (charts.swimlane_data(silent_hang), charts.cascade_data(silent_hang),
                 charts.failure_curve_data(silent_hang)):
        assert not data["is_root"].any()
    rendered = charts.render_charts(silent_hang, formats=("svg",))
    assert rendered and all("★" not in chart.title for chart in rendered)
    swimlane = next(chart for chart in rendered if chart.name == "swimlane").svg.decode()
    assert "root failure" not in swimlane  # no legend entry for a star that is not drawn


def test_a_named_culprit_keeps_its_star() -> None:
    crash = analyze([SAMPLES / "crash-cascade"])
    assert crash.verdict.root_cause is not None
    assert charts.swimlane_data(crash)["is_root"].sum() == 1
    swimlane = next(c for c in charts.render_charts(crash, formats=("svg",)) if c.name == "swimlane")
    assert "★ root failure" in swimlane.title and "root failure" in swimlane.svg.decode()


def test_op_count_is_drawn_in_hex() -> None:
    assert charts.value_text("NCCL opCount", 27) == "0x1b"
    assert charts.value_text("step", 27) == "27" and charts.value_text("c10d SeqNum", 27) == "27"
    analysis = synthetic_analysis(n_ranks=8, per_node=4, quiet_rank=5, steps=30)
    strip = next(c for c in charts.render_charts(analysis, formats=("svg",)) if c.name == "progress_strip")
    texts = set(re.findall(r"<text[^>]*>([^<]*)</text>", strip.svg.decode()))
    assert {"0x1e", "0x7"} <= texts  # opCount: the leaders' and the quiet rank's, as NCCL prints them
    assert {"30", "7"} <= texts  # steps stay decimal


def test_a_rank_without_the_metric_makes_its_node_missing(wide_hang: Analysis) -> None:
    assert charts.by_node(wide_hang)
    strip = charts.progress_strip_data(wide_hang)
    assert set(strip["metric"]) == {"c10d SeqNum"}
    missing = strip.filter(pl.col("missing"))
    assert missing["lane"].to_list() == ["node009"]  # rank 77's node: not the other ranks' SeqNum 11
    assert strip.filter(~pl.col("missing"))["value"].unique().to_list() == [11]


def test_a_metric_few_ranks_report_keeps_the_nodes_values() -> None:
    """Steps logged by one rank per node are not expected of the others: the node keeps that value."""
    analysis = synthetic_analysis(n_ranks=72, per_node=8, quiet_rank=77, coll=False)
    base = charts.lanes(analysis)
    assert charts.by_node(analysis) and base.height
    strip = charts.progress_strip_data(analysis)
    assert not strip.filter(pl.col("metric") == "step")["missing"].any()


def _annotations(figure: object) -> list[str]:
    return [text.get_text() for ax in figure.axes for text in ax.texts]  # type: ignore[attr-defined]


def test_last_activity_labels_name_the_rank_and_a_readable_event(wide_hang: Analysis) -> None:
    data = charts.last_activity_data(wide_hang)
    node = data.filter(pl.col("lane") == "node009").row(0, named=True)
    assert node["last_rank"] == 77 and node["last_normal_event"] == "nccl_init"
    labels = _annotations(charts.plot_last_activity(data, "t", "the root failure"))
    assert any(label.startswith(" rank 77: NCCL init complete") for label in labels), labels
    assert all("_" not in label for label in labels), labels  # no internal event names


def test_last_activity_per_rank_labels_have_no_rank_prefix() -> None:
    analysis = synthetic_analysis(n_ranks=16, quiet_rank=5)
    labels = _annotations(charts.plot_last_activity(charts.last_activity_data(analysis), "t", "the root failure"))
    assert labels and not any(label.lstrip().startswith("rank ") for label in labels)
    assert any("training step" in label or "NCCL collective" in label for label in labels)
    assert charts.event_label("watchdog_timeout") == "watchdog timeout"
    assert charts.event_label("nccl_something_new") == "NCCL something new"


def test_long_titles_stay_inside_the_figure(wide_hang: Analysis) -> None:
    title = ("The cascade, zoomed (256 ranks, aggregated by node): every node from 30 s before the root "
             "failure to 66 s after; ★ root, × kills and exits")
    figures = [charts.plot_cascade(charts.cascade_data(wide_hang), title,
                                   charts.cascade_lanes(wide_hang, charts.cascade_data(wide_hang)), (30.0, 66.0)),
               charts.plot_last_activity(charts.last_activity_data(wide_hang), title, "the root failure")]
    for figure in figures:
        renderer = FigureCanvasAgg(figure).get_renderer()
        figure.draw_without_rendering()
        left_title = figure.axes[0]._left_title  # what set_title(loc="left") draws
        box = left_title.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= figure.bbox.x1, (box, figure.bbox)
        assert "\n" in figure.axes[0].get_title(loc="left")


def test_svg_text_is_searchable(wide_hang: Analysis) -> None:
    rendered = charts.render_charts(wide_hang, formats=("svg",))
    assert rendered
    for chart in rendered:
        svg = chart.svg.decode()
        assert "<text" in svg, chart.name
        first_word = chart.title.split()[0]
        assert first_word in svg, (chart.name, first_word)
