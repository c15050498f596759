"""Performance drift: how fast two runs of a job trained, and what changed beyond their jitter.

Each run's figures (:func:`performance_of`), from its timeline:

* **time per step**: the median and the spread (interquartile range over the median) of the step
  times of :func:`logscope.detectors.step_times.step_series`, the first logged step of each
  attempt left out (it carries start-up: compilation, warm-up, data loading); also per node,
  where several nodes print progress lines;
* **throughput**: the median of what the trainer prints of it (``samples per second``,
  ``tokens per second``, ``TFLOP/s``), where it does;
* **time to first step**: from the first line of the logs to the first logged step;
* **NCCL init**: from the first ``Init START`` (or NCCL's first line) to the last ``Init COMPLETE``
  of the job's largest communicator, where those lines carry their own time (NCCL >= 2.23 with
  ``NCCL_DEBUG_TIMESTAMP_LEVELS``, a log shipper's stamp). Untimed NCCL lines only lie between
  the timed lines around them (the README's time model): that window is no duration, and the
  figure is left out.

A figure **changed** (:func:`compare_performance`) when it moved by more than its threshold, both
relative and absolute (:data:`THRESHOLDS`): time per step and throughput 10% (and more than
three times the runs' own spread over the square root of their steps), time to first step 50%
and 60 s, NCCL init 50% and 10 s. Two runs of one configuration differ by their jitter only, and
give no change.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from statistics import median
from typing import TYPE_CHECKING, Any

import polars as pl

from logscope.detectors.step_times import step_series
from logscope.model import Event

if TYPE_CHECKING:
    from logscope.analysis import Analysis

# metric -> (relative change, absolute change in its unit)
THRESHOLDS: dict[str, tuple[float, float]] = {
    "step_time_median_s": (0.10, 0.0),
    "throughput": (0.10, 0.0),
    "time_to_first_step_s": (0.50, 60.0),
    "nccl_init_s": (0.50, 10.0),
}
LABELS = {
    "step_time_median_s": "time per step (median)",
    "step_time_spread": "time per step (spread, IQR / median)",
    "throughput": "throughput",
    "time_to_first_step_s": "time to first step",
    "nccl_init_s": "NCCL init",
}
NOISE_SIGMAS = 3.0
_THROUGHPUT = re.compile(
    r"(?i)(samples per second|samples/s(?:ec)?|tokens per second|tokens/s(?:ec)?|tok/s"
    r"|TFLOP/s/GPU\)?|TFLOPs|TFLOPS)\s*[:=]?\s*([0-9]+(?:\.[0-9]+)?)")


@dataclass(frozen=True)
class Figures:
    """One run's performance figures; None where its logs do not tell."""

    step_time_median_s: float | None = None
    step_time_spread: float | None = None
    steps: int = 0  # logged steps with a time (the first of each attempt left out)
    throughput: float | None = None
    throughput_unit: str | None = None
    time_to_first_step_s: float | None = None
    nccl_init_s: float | None = None
    per_node: tuple[tuple[str, float], ...] = ()  # (node, median time per step), where several nodes print

    def to_json(self) -> dict[str, Any]:
        return {"step_time_median_s": _round(self.step_time_median_s),
                "step_time_spread": _round(self.step_time_spread),
                "steps": self.steps, "throughput": _round(self.throughput), "throughput_unit": self.throughput_unit,
                "time_to_first_step_s": _round(self.time_to_first_step_s), "nccl_init_s": _round(self.nccl_init_s),
                "per_node": [{"node": n, "step_time_median_s": _round(v)} for n, v in self.per_node]}


@dataclass(frozen=True)
class Change:
    """One figure of both runs, and whether it changed beyond its threshold."""

    metric: str
    node: str | None
    good: float | None
    bad: float | None
    changed: bool
    unit: str = "s"

    @property
    def ratio(self) -> float | None:
        if self.good is None or self.bad is None or not self.good:
            return None
        return self.bad / self.good

    def describe(self) -> str:
        label = LABELS.get(self.metric, self.metric) + (f" on {self.node}" if self.node else "")
        ratio = f" ({self.ratio:.2f}x)" if self.ratio is not None else ""
        return f"{label}: {_show(self.good, self.unit)} -> {_show(self.bad, self.unit)}{ratio}"

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "node": self.node, "good": _round(self.good), "bad": _round(self.bad),
                "ratio": _round(self.ratio), "unit": self.unit, "changed": self.changed}


def performance_of(analysis: Analysis) -> Figures:
    """The run's figures (see the module docstring)."""
    view = analysis.view
    series = _settled(step_series(view))
    times = [float(v) for v in series.get_column("step_time_s").drop_nulls().to_list() if v > 0]
    med = median(times) if times else None
    spread = None
    if med and len(times) >= 4:
        quartiles = pl.Series(times).quantile(0.75), pl.Series(times).quantile(0.25)
        spread = ((quartiles[0] or 0.0) - (quartiles[1] or 0.0)) / med
    per_node: list[tuple[str, float]] = []
    by_node = _settled(step_series(view, by_node=True))
    if by_node.height and by_node.get_column("node").n_unique() > 1:
        medians = (by_node.filter(pl.col("step_time_s") > 0).group_by("node")
                   .agg(pl.col("step_time_s").median()).sort("node"))
        per_node = [(str(n), float(v)) for n, v in medians.rows() if v is not None]
    throughput, unit = _throughput(analysis)
    return Figures(med, spread, len(times), throughput, unit, _to_first_step(analysis), _nccl_init(analysis),
                   tuple(per_node))


def _settled(series: pl.DataFrame) -> pl.DataFrame:
    """The series without the first logged step of each attempt (of each node's)."""
    if series.height == 0:
        return series
    group = ["node", "attempt"] if "node" in series.columns else ["attempt"]
    return series.filter(pl.int_range(pl.len()).over(group) > 0)


def _throughput(analysis: Analysis) -> tuple[float | None, str | None]:
    progress = analysis.view.of(Event.PROGRESS)
    if progress.height == 0:
        return None, None
    found = progress.select(pl.col("text").str.extract_groups(_THROUGHPUT.pattern).alias("g")).unnest("g")
    found = found.drop_nulls()
    if found.height == 0:
        return None, None
    found = found.with_columns(pl.col(found.columns[0]).str.strip_chars(")"))
    unit = str(found.get_column(found.columns[0]).mode().first())
    values = found.filter(pl.col(found.columns[0]) == unit).get_column(found.columns[1]).cast(pl.Float64)
    return (float(values.median()) if values.len() else None), unit  # type: ignore[arg-type]


def _seen() -> pl.Expr:
    return (pl.when(pl.col("time_inferred").fill_null(False)).then(pl.coalesce("time_latest", "time"))
            .otherwise(pl.col("time")))


def _to_first_step(analysis: Analysis) -> float | None:
    """From the logs' first timed line to the first logged step, when that step's line carries its
    own time (an untimed one only lies between the timed lines around it)."""
    view = analysis.view
    if not view.has(Event.PROGRESS):
        return None
    timed = ~pl.col("time_inferred").fill_null(False) & pl.col("time").is_not_null()
    start = view.events.filter(timed & (pl.col("event") != Event.ACCOUNTING.value)).select(pl.col("time").min()).item()
    first = view.of(Event.PROGRESS).sort(_seen(), "file", "line", nulls_last=True).head(1)
    if first.height == 0 or not first.select(timed).item():
        return None
    when = first.select("time").item()
    if not isinstance(start, datetime) or not isinstance(when, datetime):
        return None
    return (when - start).total_seconds()


def _nccl_init(analysis: Analysis) -> float | None:
    """From the first Init START (or NCCL's first line) to the last Init COMPLETE of the largest
    communicator, where those lines carry their own time (NCCL_DEBUG_TIMESTAMP_LEVELS, a log
    shipper's stamp); None otherwise: the window of untimed lines is no duration."""
    view = analysis.view
    timed = ~pl.col("time_inferred").fill_null(False) & pl.col("time").is_not_null()
    done = view.of(Event.NCCL_INIT).filter(timed)
    if done.height == 0:
        return None
    nranks = pl.col("fields").struct.field("nranks")
    end = done.filter(nranks == done.select(nranks.max()).item()).select(pl.col("time").max()).item()
    starts = view.of(Event.NCCL_INIT_START).filter(timed)
    if starts.height == 0:
        starts = view.of(Event.NCCL_VERSION, Event.NCCL_DRIVER, Event.NCCL_NET_DEVICE, Event.NCCL_PLUGIN).filter(timed)
    begin = starts.select(pl.col("time").min()).item() if starts.height else None
    if not isinstance(begin, datetime) or not isinstance(end, datetime) or end < begin:
        return None
    return (end - begin).total_seconds()


def compare_performance(good: Figures, bad: Figures) -> list[Change]:
    """Each figure both runs have, GOOD against BAD, and whether it changed (see THRESHOLDS)."""
    out: list[Change] = []
    for metric in ("step_time_median_s", "step_time_spread", "throughput", "time_to_first_step_s", "nccl_init_s"):
        g, b = getattr(good, metric), getattr(bad, metric)
        if g is None or b is None:
            continue
        unit = "" if metric == "step_time_spread" else (good.throughput_unit or "") if metric == "throughput" else "s"
        if metric == "throughput" and good.throughput_unit != bad.throughput_unit:
            continue
        out.append(Change(metric, None, g, b, _changed(metric, g, b, good, bad), unit))
    good_nodes = dict(good.per_node)
    for node, value in bad.per_node:
        if node in good_nodes:
            before = good_nodes[node]
            out.append(Change("step_time_median_s", node, before, value,
                              _changed("step_time_median_s", before, value, good, bad)))
    return out


def _changed(metric: str, good: float, bad: float, good_run: Figures, bad_run: Figures) -> bool:
    if metric not in THRESHOLDS:
        return False  # the spread is shown, not judged: too few steps make it noise
    relative, absolute = THRESHOLDS[metric]
    if not good or abs(bad - good) <= absolute or abs(math.log(bad / good)) < math.log1p(relative):
        return False
    if metric == "step_time_median_s":
        # beyond the runs' own jitter: the medians' uncertainty, from their spreads
        noise = math.hypot(_uncertainty(good_run), _uncertainty(bad_run))
        return abs(math.log(bad / good)) > NOISE_SIGMAS * noise
    return True


def _uncertainty(figures: Figures) -> float:
    """Relative uncertainty of a run's median time per step: its spread over the root of its steps
    (an IQR is ~1.35 standard deviations)."""
    if figures.step_time_spread is None or figures.steps < 2:
        return 0.0
    return figures.step_time_spread / 1.35 / math.sqrt(figures.steps)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _show(value: float | None, unit: str) -> str:
    if value is None:
        return "?"
    text = f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return f"{text} {unit}".strip() if unit else text


__all__ = ["LABELS", "THRESHOLDS", "Change", "Figures", "compare_performance", "performance_of"]
