"""Line templates: what a timeline's lines say with what differs from run to run masked, and
which templates of a failed (or just newer) run its healthy predecessor never printed.

A line's **template** is its text (the launcher prefix already peeled) with the job's own host
and node names, timestamps, IP addresses, hex values and pointers, file paths and numbers (ranks,
pids, counts, sizes, versions) replaced by placeholders: ``<host>``, ``<time>``, ``<ip>``,
``<hex>``, ``<path>``, ``<n>`` (a run of numbers: ``<n...>``). A message the catalogue
(:mod:`logscope.knowledge`) knows (a ``known_message`` event) is its catalogue id instead, so the
same message with other words in its arguments stays one template. The event kind is part of the
key: the same text recognised as two events is two templates.

Only the lines logscope recognised are in the timeline (see docs/how-it-reads-logs.md):
templates are those of the recognised lines, and their counts those of the lines the timeline
kept: the repeats thinned away while reading (NCCL COLL lines, progress lines, a process's
repeats of one line beyond its first and last 64) are not counted.

**Ranking** the new templates (:func:`ranked_new`), most likely to matter first:

* a template holding a line the verdict cites as the root failure's evidence: +10;
* its highest severity: critical +6, error +4, warning +2, info 0;
* when the run failed, its first line relative to the failure (the root cause's time): at or
  before it (within five seconds) +3, within five minutes after +1, later 0; a run that did not
  fail adds nothing here;
* how many ranks print it: one rank +1, fewer than half the job's ranks +0.5 (a message every
  rank prints is more often a consequence, or a difference of version or configuration that the
  configuration section names);

ties go to the earlier first line, then the key. **Volume**: a template of both runs of at least
warning severity that BAD prints at least :data:`VOLUME_FACTOR` times as often (and at least
:data:`VOLUME_MIN` times more) is listed apart, not as new.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import polars as pl

from logscope.detectors.base import evidence_of
from logscope.model import Event, Evidence, Role

if TYPE_CHECKING:
    from logscope.analysis import Analysis

VOLUME_FACTOR = 10
VOLUME_MIN = 10
SAME_MOMENT = timedelta(seconds=5)
SOON_AFTER = timedelta(minutes=5)
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2, "critical": 3}
SEVERITY_SCORE = {0: 0.0, 1: 2.0, 2: 4.0, 3: 6.0}
ROOT_SCORE = 10.0
MIN_HOST_LENGTH = 3  # shorter host names are not masked (they would mask parts of words)

# The masks, in order: dates and clocks before numbers, addresses before numbers, paths before
# numbers (a path's digits are the path's). ASCII classes: polars' \d is Unicode.
_MASKS: tuple[tuple[str, str], ...] = (
    (r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T _][0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?",
     "<time>"),
    (r"\b([IWEF])[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+", "${1}<time>"),
    (r"\b[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?", "<time>"),
    (r"\b[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?:<[0-9]+>|:[0-9]+)?", "<ip>"),
    (r"\b0[xX][0-9a-fA-F]+\b", "<hex>"),
    (r"\b[0-9]{8,}\b", "<n>"),  # a long number is a number, not a digest
    (r"\b[0-9a-f]{8,}\b", "<hex>"),
    (r"\b(busId|busid|bus id|PCI:?) ?[0-9a-fA-F:.]*[0-9a-fA-F]", "${1} <hex>"),  # a GPU's bus (busId 4c000)
    # a rank's GPU on NCCL's channel lines: 28[88000] -> 29[8b000] (its bus), 13[5] -> 14[6] (its device)
    (r"\b([0-9]+)\[[0-9a-fA-F]+\]", "${1}[<gpu>]"),
    (r"(?:/[^\s/'\",:;()\[\]<>|]+){2,}/?", "<path>"),
    (r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?", "<n>"),
    (r"<n>(?:[ ,/]+<n>)+", "<n...>"),
    (r"\s{2,}|[\t\n\v\f\r]", " "),  # runs of spaces (only runs: most lines have single spaces)
)


def mask(text: pl.Expr, hosts: list[str]) -> pl.Expr:
    """``text`` as its template (see the module docstring); ``hosts``: the job's host and node
    names, masked first."""
    names = sorted({h for h in hosts if len(h) >= MIN_HOST_LENGTH}, key=len, reverse=True)
    if names:
        text = text.str.replace_many(names, ["<host>"] * len(names))
    for pattern, placeholder in _MASKS:
        text = text.str.replace_all(pattern, placeholder)
    return text.str.strip_chars()


def template_key(template: pl.Expr) -> pl.Expr:
    """A row's template key from its ``template`` (:func:`mask`): ``catalogue:<id>`` for a message
    the catalogue knows, else ``<event>:<template>``."""
    catalogue = pl.col("fields").struct.field("key")
    return (pl.when((pl.col("event") == Event.KNOWN_MESSAGE.value) & catalogue.is_not_null())
            .then(pl.concat_str(pl.lit("catalogue:"), catalogue))
            .otherwise(pl.concat_str(pl.col("event"), pl.lit(":"), template)))


def job_hosts(analysis: Analysis) -> list[str]:
    """The names a job's lines may hold of its own machines: its nodes and the hosts its lines name."""
    events = analysis.view.events
    named = events.select(pl.concat([pl.col("host"), pl.col("node")]).drop_nulls().unique()).to_series().to_list() \
        if events.height else []
    return sorted({*analysis.job.nodes, *(str(h) for h in named)})


TEMPLATE_SCHEMA: dict[str, pl.DataType] = {
    "key": pl.String(), "event": pl.String(), "catalogue_id": pl.String(), "template": pl.String(),
    "severity": pl.Int64(), "count": pl.Int64(), "first": pl.Datetime("us"), "ranks": pl.List(pl.Int64()),
    "hosts": pl.List(pl.String()), "_row": pl.UInt32(),
}


def template_table(analysis: Analysis) -> pl.DataFrame:
    """One row per template of the job's timeline (:data:`TEMPLATE_SCHEMA`; ``_row`` is the
    position of its first line in the timeline). SLURM's record rows are no lines."""
    events = analysis.view.events
    if events.height == 0:
        return pl.DataFrame(schema=TEMPLATE_SCHEMA)
    hosts = job_hosts(analysis)
    seen = (pl.when(pl.col("time_inferred").fill_null(False)).then(pl.coalesce("time_latest", "time"))
            .otherwise(pl.col("time")))
    rows = events.lazy().with_row_index("_row").filter(pl.col("event") != Event.ACCOUNTING.value).with_columns(
        mask(pl.col("text").fill_null(""), hosts).alias("template")).select(
        "_row", "event", "rank", pl.coalesce("node", "host").alias("_place"), "file", "line",
        template_key(pl.col("template")).alias("key"),
        pl.when(pl.col("event") == Event.KNOWN_MESSAGE.value).then(pl.col("fields").struct.field("key"))
        .alias("catalogue_id"), "template",
        pl.col("severity").replace_strict(SEVERITY_RANK, default=0, return_dtype=pl.Int64).alias("severity"),
        seen.alias("_seen"),
    )
    table = (rows.sort("_seen", "file", "line", nulls_last=True, maintain_order=True)
             .group_by("key", maintain_order=True).agg(
                 pl.col("event").first(), pl.col("catalogue_id").first(), pl.col("template").first(),
                 pl.col("severity").max(), pl.len().cast(pl.Int64).alias("count"), pl.col("_seen").min().alias("first"),
                 pl.col("rank").drop_nulls().unique().sort().alias("ranks"),
                 pl.col("_place").drop_nulls().unique().sort().alias("hosts"), pl.col("_row").first())
             .collect())
    return table.select(list(TEMPLATE_SCHEMA)).cast(TEMPLATE_SCHEMA)  # type: ignore[arg-type]


@dataclass(frozen=True)
class NewTemplate:
    """A template BAD printed that GOOD never did, with what makes it likely to matter."""

    key: str
    event: str
    catalogue_id: str | None
    template: str
    severity: str
    count: int
    first_seen: datetime | None
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]
    example: Evidence
    score: float
    root: bool  # it holds a line the verdict cites as the root failure's
    # seconds from the failure (the root cause's time) to its first line; None when BAD did not fail
    after_failure_s: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "template": self.template,
            "event": self.event,
            "catalogue_id": self.catalogue_id,
            "severity": self.severity,
            "count": self.count,
            "first_seen": self.first_seen.isoformat() if self.first_seen else None,
            "after_failure_s": self.after_failure_s,
            "ranks": list(self.ranks),
            "hosts": list(self.hosts),
            "root": self.root,
            "score": round(self.score, 2),
            "example": self.example.to_json(),
        }


@dataclass(frozen=True)
class VolumeChange:
    """A template of both runs that BAD prints far more often."""

    key: str
    template: str
    severity: str
    good_count: int
    bad_count: int
    example: Evidence

    @property
    def factor(self) -> float:
        return self.bad_count / max(self.good_count, 1)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "template": self.template, "severity": self.severity,
                "good_count": self.good_count, "bad_count": self.bad_count, "factor": round(self.factor, 1),
                "example": self.example.to_json()}


_SEVERITY_NAME = {rank: name for name, rank in SEVERITY_RANK.items()}


def failure_time(analysis: Analysis) -> datetime | None:
    """When the run failed, as its verdict says (None when it did not)."""
    if not analysis.failed:
        return None
    root = analysis.verdict.root_cause
    if root is not None and root.time is not None:
        return root.time
    first = next((f for f in analysis.findings if f.code == analysis.verdict.finding), None)
    return first.first_seen if first is not None else None


def root_lines(analysis: Analysis) -> list[tuple[str, int]]:
    """The (file, line) of the lines the verdict cites for the root failure: the root cause's
    evidence line, then the root finding's evidence in its order (of which :func:`ranked_new`
    takes the first error line: a hang's root cause is the rank that stopped, whose line says
    nothing; the timeouts it caused say the failure)."""
    places: list[tuple[str, int]] = []
    root = analysis.verdict.root_cause
    if root is not None and root.evidence is not None:
        places.append((root.evidence.file, root.evidence.line))
    for finding in analysis.findings:
        if finding.code == analysis.verdict.finding and finding.role == Role.ROOT:
            places += [(e.file, e.line) for e in finding.evidence]
            break
    return places


def compare_templates(good: Analysis, bad: Analysis) -> tuple[list[NewTemplate], list[VolumeChange]]:
    """BAD's templates GOOD never printed, ranked (see the module docstring), and those it
    prints far more often."""
    good_table, bad_table = template_table(good), template_table(bad)
    new = bad_table.join(good_table.select("key"), on="key", how="anti")
    both = bad_table.join(good_table.select("key", pl.col("count").alias("good_count")), on="key", how="inner")
    louder = both.filter((pl.col("severity") >= SEVERITY_RANK["warning"])
                         & (pl.col("count") >= VOLUME_FACTOR * pl.col("good_count"))
                         & (pl.col("count") - pl.col("good_count") >= VOLUME_MIN))
    rows = _examples(bad, [*new["_row"].to_list(), *louder["_row"].to_list()])
    volume = [VolumeChange(r["key"], r["template"], _SEVERITY_NAME[r["severity"]], int(r["good_count"]),
                           int(r["count"]), rows[r["_row"]])
              for r in louder.sort("count", descending=True).to_dicts()]
    return ranked_new(bad, new, rows), volume


def ranked_new(bad: Analysis, new: pl.DataFrame, examples: dict[int, Evidence]) -> list[NewTemplate]:
    """The new templates' rows (:func:`template_table`'s) as :class:`NewTemplate`, most likely to
    matter first."""
    failed_at = failure_time(bad)
    roots = root_lines(bad)
    root_keys = _keys_of_lines(bad, roots) if roots else set()
    world = bad.view.world_size or 0
    out = []
    for row in new.to_dicts():
        first: datetime | None = row["first"]
        after = (first - failed_at).total_seconds() if first is not None and failed_at is not None else None
        ranks = tuple(int(r) for r in row["ranks"])
        root = row["key"] in root_keys
        score = (ROOT_SCORE if root else 0.0) + SEVERITY_SCORE[int(row["severity"])] + _timing(after) \
            + _spread(len(ranks), world)
        out.append(NewTemplate(row["key"], row["event"], row["catalogue_id"], row["template"],
                               _SEVERITY_NAME[int(row["severity"])], int(row["count"]), first, ranks,
                               tuple(row["hosts"]), examples[row["_row"]], score, root, after))
    return sorted(out, key=lambda t: (-t.score, t.first_seen or datetime.max, t.key))


def _timing(after: float | None) -> float:
    if after is None:
        return 0.0
    if after <= SAME_MOMENT.total_seconds():
        return 3.0
    return 1.0 if after <= SOON_AFTER.total_seconds() else 0.0


def _spread(ranks: int, world: int) -> float:
    if ranks == 0:
        return 0.0
    if ranks == 1:
        return 1.0
    return 0.5 if world and ranks < world / 2 else 0.0


def _keys_of_lines(analysis: Analysis, places: list[tuple[str, int]]) -> set[str]:
    """The templates of the root failure's lines (:func:`root_lines`): the root cause's own line
    and the first error line the root finding cites."""
    wanted = pl.DataFrame({"file": [f for f, _ in places], "line": [n for _, n in places],
                           "_order": list(range(len(places)))},
                          schema={"file": pl.String, "line": pl.Int64, "_order": pl.Int64})
    rows = analysis.view.events.join(wanted, on=["file", "line"], how="inner").sort("_order")
    rows = rows.filter(pl.col("severity").is_in(["error", "critical"]))
    if rows.height == 0:
        return set()
    first_cited = int(rows["_order"].min())  # type: ignore[arg-type]
    rows = rows.filter((pl.col("_order") == 0) | (pl.col("_order") == first_cited))
    template = mask(pl.col("text").fill_null(""), job_hosts(analysis))
    return set(rows.select(template_key(template)).to_series().to_list())


def _examples(analysis: Analysis, positions: list[int]) -> dict[int, Evidence]:
    """The evidence of the timeline's rows at ``positions``."""
    if not positions:
        return {}
    rows = analysis.view.events.select("file", "line", "prefix", "text", "time", "time_latest",
                                       "time_inferred")[positions]
    return {position: evidence_of(row) for position, row in zip(positions, rows.to_dicts(), strict=True)}


__all__ = ["NewTemplate", "VolumeChange", "compare_templates", "failure_time", "mask", "ranked_new",
           "template_key", "template_table"]
