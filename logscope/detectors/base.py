"""What a detector is, what it sees, and the helpers every detector uses to cite evidence.

A detector is a class with a stable ``code`` (``LS101``), a kebab-case ``name`` naming the failure
(not the fix), a ``category`` from the output contract, the ``requires`` set of events without
which it cannot fire, and a pure :meth:`Detector.detect` that reads a :class:`JobView` and returns
findings. Detectors never print, never read files, and never mutate the timeline.

Each detector's module docstring is its user documentation (``logscope explain CODE``) and must
have the headings in :data:`DOC_HEADINGS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from itertools import accumulate, pairwise, repeat
from typing import Any, ClassVar

import polars as pl

from logscope.model import Category, Culprit, Event, Evidence, Finding, Role, Severity

DOC_HEADINGS = ("What it detects", "Why it matters", "Evidence", "Example", "False positives",
                "Advice")
MAX_EVIDENCE = 8


@dataclass(frozen=True)
class JobView:
    """What detectors read: the timeline plus facts about the job's files."""

    events: pl.DataFrame
    nodes: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    file_nodes: dict[str, str | None] = field(default_factory=dict)
    # Facts several detectors ask for (the root failure), worked out once per view. The view
    # never changes, so a remembered answer stays true.
    _remembered: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def remember(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, worked out the first time ``key`` is asked for on this view."""
        if key not in self._remembered:
            self._remembered[key] = compute()
        return self._remembered[key]

    def of(self, *events: Event) -> pl.DataFrame:
        """The rows of the given event kinds, in timeline order."""
        kinds = frozenset(e.value for e in events)
        # Detectors ask for the same kinds again and again (~65 times a job): each set is taken
        # once, by row position, not by a filter over the whole timeline each time.
        rows: pl.DataFrame = self.remember(f"of:{sorted(kinds)}", lambda: self._gathered(kinds))
        return rows

    def narrow_of(self, events: tuple[Event, ...], columns: tuple[str, ...],
                  fields: tuple[str, ...] = ()) -> pl.DataFrame:
        """:meth:`of` ``events`` with only ``columns`` and, of the ``fields`` struct, only
        ``fields`` (a struct of those; a row without fields has them null): a gather of what a
        rule reads, not kept. of() of a crash loop's 72,940 NCCL config lines gathered their 16
        columns and 48 fields (~37 MB, ~100 MB more at the peak) for the node table to read 8."""
        narrow = self.events.select(
            *columns, *([pl.struct([pl.col("fields").struct.field(name) for name in fields]).alias("fields")]
                        if fields else []))
        present = self._present(events)
        return take(narrow, self._positions(present)) if present else narrow.clear()

    def rows(self, *events: Event) -> list[dict[str, Any]]:
        """The rows of the given event kinds as dicts (:func:`dicts`), in timeline order.

        Each kind's rows become dicts once per view, shared by every caller: read them, never
        change them (copy a row to annotate it). A crash that loops leaves ~200,000 failure rows,
        and the detectors asked for them ~10 times, in overlapping sets of kinds: each time
        turning them into dicts again took a third of the detectors' time."""
        return list(self._rows(self._present(events)))

    def rows_where(self, events: tuple[Event, ...], condition: pl.Expr,
                   test: Callable[[dict[str, Any]], bool] | None = None, *,
                   apart: bool = False) -> list[dict[str, Any]]:
        """:meth:`rows` of ``events`` for which polars finds ``condition`` true (null: false):
        polars picks the rows, and the dicts are the shared ones, not converted again.

        ``test`` is the same condition read from a row in Python: it picks the rows instead when
        they are few (up to WHERE_IN_PYTHON_UP_TO: one polars query costs more than testing them
        here) and their message and text are plain ASCII, where the two regex engines agree (a
        case-blind pattern, say: polars and Python fold some non-ASCII letters differently).

        ``apart``: few of many rows are wanted, of kinds that hardly any other rule reads as dicts
        (a crash loop's ~33,000 NCCL plugin and catalogued lines, for LS209's few bootstrap errors):
        unless their dicts are made already, polars picks the rows and only those become dicts,
        their own (their ``fields`` narrowed to them: read a field with field_of)."""
        present = self._present(events)
        if not present:
            return []
        if apart and any(f"rows of:{kind}" not in self._remembered for kind in present):
            positions = self._positions(present)
            if positions.len() > WHERE_IN_PYTHON_UP_TO:
                return dicts(take(self.events, positions.filter(self._where(present, condition))))
        rows = self._rows(present)
        if test is not None and len(rows) <= WHERE_IN_PYTHON_UP_TO and all(_plain(row) for row in rows):
            return [row for row in rows if test(row)]
        wanted = self._where(present, condition)
        # (Series made lists first: iterating a Series yields its values ~1.5x slower.)
        return [row for row, keep in zip(rows, wanted.to_list(), strict=True) if keep]

    def _positions(self, present: list[str]) -> pl.Series:
        """The timeline positions of the rows of the kinds ``present``, in order."""
        positions = self._rows_by_event()
        return positions[present[0]] if len(present) == 1 else pl.concat([positions[k] for k in present]).sort()

    def _where(self, present: list[str], condition: pl.Expr) -> pl.Series:
        """``condition`` (null: false) of each row of the kinds ``present``, in timeline order, read
        from the columns it names alone (the whole rows of a crash loop's ~46,000 socket error,
        exception and NCCL WARN lines were gathered, and kept, for it to read three)."""
        names = list(dict.fromkeys(condition.meta.root_names()))
        frame = take(self.events.select(names), self._positions(present)) if names else self._gathered(
            frozenset(present))
        return frame.select(condition.fill_null(False)).to_series()

    def rows_in_order(self, *events: Event) -> list[dict[str, Any]]:
        """:meth:`rows` in :func:`order_key`'s order, as :func:`ordered_dicts` puts them (a big set
        sorted by polars, ties in timeline order)."""
        present = self._present(events)

        def ordered() -> list[dict[str, Any]]:
            kinds = frozenset(present)
            known: dict[frozenset[str], list[dict[str, Any]]] = self.remember("ordered kinds", dict)
            # The order is a stable sort from timeline order: the rows of fewer kinds are in the
            # same order within the rows of more. A crash loop's ~96,000 failure rows were put in
            # order for each set of kinds the detectors asked for; now once, then picked.
            wider = min((rows for other, rows in known.items() if kinds < other), key=len, default=None)
            if wider is not None:
                found = [row for row in wider if row["event"] in kinds]
            else:
                rows = self._rows(present)
                found = (sorted(rows, key=order_key) if len(rows) < SORT_IN_POLARS_FROM
                         else [rows[i] for i in positions_in_order(self._order_columns(present)).to_list()])
            known[kinds] = found
            return found

        rows: list[dict[str, Any]] = self.remember(f"rows in order:{present}", ordered)
        return list(rows)

    def _order_columns(self, present: list[str]) -> pl.DataFrame:
        """The columns order_key reads, of the rows of the kinds ``present``, in timeline order:
        what positions_in_order sorts (the whole rows of a crash loop's failure kinds took ~45 ms to
        gather, for five of their 65 columns and fields)."""
        return self.events.select(*ORDER_COLUMNS)[self._positions(present)]

    def _present(self, events: tuple[Event, ...]) -> list[str]:
        """The kinds among ``events`` that the timeline holds, sorted (a key for what is remembered)."""
        positions = self._rows_by_event()
        return sorted({e.value for e in events if e.value in positions})

    def _rows(self, present: list[str]) -> list[dict[str, Any]]:
        """The shared dicts of the kinds ``present`` (see _present), in timeline order: the
        remembered list itself, which callers copy before handing it out."""
        if len(present) <= 1:
            return self._kind_rows(present[0]) if present else []

        def merged() -> list[dict[str, Any]]:
            positions = self._rows_by_event()
            flat = [row for kind in present for row in self._kind_rows(kind)]
            if len(flat) < SORT_IN_POLARS_FROM:  # two polars calls cost more than sorting a few rows here
                at = [position for kind in present for position in positions[kind].to_list()]
                return [flat[i] for i in sorted(range(len(flat)), key=at.__getitem__)]
            return [flat[i] for i in pl.concat([positions[kind] for kind in present]).arg_sort().to_list()]

        rows: list[dict[str, Any]] = self.remember(f"rows:{present}", merged)
        return rows

    def _kind_rows(self, kind: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.remember(f"rows of:{kind}",
                                                   lambda: dicts(self._gathered(frozenset([kind]))))
        return rows

    def has(self, *events: Event) -> bool:
        rows = self._rows_by_event()
        return any(e.value in rows for e in events)

    def _gathered(self, kinds: frozenset[str]) -> pl.DataFrame:
        rows = self._rows_by_event()
        present = [kind for kind in kinds if kind in rows]
        if not present:
            no_rows: pl.DataFrame = self.remember("no rows", self.events.clear)
            return no_rows
        if len(present) == 1 and self.events.height <= KINDS_APART_UP_TO:
            by_kind, where = self._kinds_apart()
            return by_kind.slice(*where[present[0]])
        return take(self.events, rows[present[0]] if len(present) == 1 else pl.concat([rows[k] for k in present]).sort())

    def _kinds_apart(self) -> tuple[pl.DataFrame, dict[str, tuple[int, int]]]:
        """The timeline's rows kind after kind (each kind's in timeline order), and where each
        kind's rows start and how many there are: a kind's rows are then a slice, not a gather.
        A small job asks for ~21 kinds alone, and each gather (~50 us and a hand-off to polars'
        threads) cost more than this one gather of every row."""
        def compute() -> tuple[pl.DataFrame, dict[str, tuple[int, int]]]:
            rows = self._rows_by_event()
            bounds = pairwise(accumulate((positions.len() for positions in rows.values()), initial=0))
            where = {kind: (start, end - start) for kind, (start, end) in zip(rows, bounds, strict=True)}
            return self.events[pl.concat(list(rows.values()))], where
        apart: tuple[pl.DataFrame, dict[str, tuple[int, int]]] = self.remember("kinds apart", compute)
        return apart

    def _rows_by_event(self) -> dict[str, pl.Series]:
        """The row positions of each event kind in the timeline, in order."""
        def compute() -> dict[str, pl.Series]:
            positions = self.events.select("event", pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"))
            return {str(kind): frame.to_series() for (kind,), frame in
                    positions.partition_by("event", as_dict=True, include_key=False, maintain_order=True).items()}
        rows: dict[str, pl.Series] = self.remember("rows by event", compute)
        return rows

    @property
    def world_size(self) -> int | None:
        """The job's world size as the logs state it (largest NCCL nranks, torchrun's world)."""
        sizes: list[int] = []
        init = self.of(Event.NCCL_INIT, Event.NCCL_INIT_START)
        if init.height:
            value = init.select(pl.col("fields").struct.field("nranks").max()).item()
            if value is not None:
                sizes.append(int(value))
        rdzv = self.of(Event.RENDEZVOUS)
        if rdzv.height:
            value = rdzv.select(pl.col("fields").struct.field("world_size").max()).item()
            if value is not None:
                sizes.append(int(value))
        return max(sizes) if sizes else None


class Detector:
    """Base class; subclasses set the class attributes and implement :meth:`detect`."""

    code: ClassVar[str]
    name: ClassVar[str]
    category: ClassVar[Category]
    requires: ClassVar[frozenset[Event]] = frozenset()
    # How specific this detector's verdict is when it ties with another at the same moment.
    specificity: ClassVar[int] = 50
    # The culprit is a node's setup (its software, its network), not one of its processes: the
    # verdict reads no local rank from the culprit's line (local_rank_from_device).
    names_a_node: ClassVar[bool] = False

    def detect(self, job: JobView) -> list[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def doc(cls) -> str:
        import inspect
        import sys

        module = sys.modules[cls.__module__]
        return inspect.cleandoc(module.__doc__ or "")

    def finding(self, *, title: str, explanation: str, advice: str, rows: pl.DataFrame | list[dict[str, Any]],
                role: Role = Role.ROOT, severity: Severity = Severity.ERROR, culprit: Culprit | None = None,
                category: Category | None = None, ranks: list[int] | None = None,
                hosts: list[str] | None = None, specificity: int | None = None,
                reactive: bool = False, ordered: bool = False) -> Finding:
        """Build a Finding whose evidence, first_seen, ranks and hosts come from ``rows``.

        The rows are put in time order unless ``ordered`` says the caller already put the line
        that matters most first (the cascade's root, then its own reports, then the victims).
        """
        dicts = rows.to_dicts() if isinstance(rows, pl.DataFrame) else list(rows)
        if not ordered:
            dicts.sort(key=order_key)
        evidence = tuple(evidence_of(r) for r in dicts[:MAX_EVIDENCE])
        first = dicts[0] if dicts else None
        rank_set = ranks if ranks is not None else sorted({int(r["rank"]) for r in dicts if r.get("rank") is not None})
        host_set = hosts if hosts is not None else sorted({str(r["host"]) for r in dicts if r.get("host")})
        return Finding(
            code=self.code,
            name=self.name,
            category=category or self.category,
            severity=severity,
            title=title,
            explanation=explanation,
            advice=advice,
            role=role,
            ranks=tuple(rank_set),
            hosts=tuple(host_set),
            first_seen=seen_at(first) if first else None,
            evidence=evidence,
            culprit=culprit,
            specificity=self.specificity if specificity is None else specificity,
            order_key=(str(first["file"]), int(first["line"])) if first else None,
            window=window_of(first) if first else (None, None),
            reactive=reactive,
        )


# Frames of at least this many rows are turned into dicts column by column (each column made a
# Python list by polars, the dicts zipped from them), and their ``fields`` hold only the fields
# some row of the frame has. polars' own to_dicts costs ~16-20 us a row of the 43-field struct;
# this ~7-9 us a row of the usual 5-10 fields, for a fixed ~0.15 ms (a list per column): the two
# costs cross at ~15 rows (measured on 1 to 79,000 failure rows of a crash loop: 2-2.5x from 100).
COLUMNWISE_FROM = 16
# take() gathers a frame's fields struct field by field from this many rows (see take).
TAKE_FIELDWISE_FROM = 25_000
# Frames of at least this many rows are sorted by polars: the two queries cost ~1.5 ms whatever
# the rows, as much as sorting ~500 dicts by order_key in Python.
SORT_IN_POLARS_FROM = 512
# The rows of one kind are sliced from a copy of the timeline kind after kind up to this many rows
# (JobView._kinds_apart); above, each kind is gathered when asked (the copy would double a crash
# loop's timeline in memory, and a gather's fixed cost is nothing there).
KINDS_APART_UP_TO = 20_000
# last_in_order and ends_in_order sort in polars from this many rows: one query (~0.35 ms)
# against converting every row (~9 us a row) to pick a few.
LAST_IN_POLARS_FROM = 48
# JobView.rows_where tests up to this many rows in Python (given the test): a job's few NCCL
# WARN and exception rows (a crash loop's ~100,000 are left to polars).
WHERE_IN_PYTHON_UP_TO = 4096


def take(frame: pl.DataFrame, positions: pl.Series) -> pl.DataFrame:
    """``frame[positions]``, its ``fields`` struct gathered field by field and put together again
    where the frame has TAKE_FIELDWISE_FROM rows or more.

    polars (2.1) gathers a struct column of more than ~100,000 rows at a cost that grows with the
    column, not with the rows taken: ~30-45 ms a gather from the 49-field struct of a 238,000-row
    crash loop, for 92 rows as for 30,000 (a filter by mask ~17 ms); its fields gathered one by one
    and made a struct again, ~0.5 ms. A smaller frame is gathered as it is: a frame of 500 rows in
    0.06 ms against 0.41 ms field by field (reading the struct's type alone costs ~50 us), of 5,000
    in 0.22 against 0.46 ms; they cost the same near 25,000 rows (polars 2.2). A frame whose struct
    has null rows is gathered as it is."""
    if "fields" not in frame.columns or frame.height < TAKE_FIELDWISE_FROM:
        return frame[positions]
    fields = frame.get_column("fields")
    if not isinstance(fields.dtype, pl.Struct) or fields.null_count() or not fields.dtype.fields:
        return frame[positions]
    taken = frame.drop("fields")[positions]
    return taken.insert_column(frame.get_column_index("fields"),
                               fields.struct.unnest()[positions].to_struct("fields"))


def context_line() -> pl.Expr:
    """Rows of context lines (a C++ backtrace's header, a banner: known messages of severity info).
    Such a line takes the rank of whatever tag stands in front of it and says nothing of the job's
    ranks or nodes: counting who spoke leaves them out."""
    return (pl.col("event") == Event.KNOWN_MESSAGE.value) & (pl.col("severity") == Severity.INFO.value)


def dicts(rows: pl.DataFrame) -> list[dict[str, Any]]:
    """``rows`` as dicts. A row's ``fields`` may leave out a field that is null (in a frame of
    COLUMNWISE_FROM rows or more, those null in every row): read one with :func:`field_of`
    or ``.get``, never by index."""
    if rows.height < COLUMNWISE_FROM:
        return rows.to_dicts()
    names = rows.columns
    columns = [_narrowed_fields(rows.get_column(name)) if name == "fields" else rows.get_column(name).to_list()
               for name in names]
    # (map: ~15% less than a comprehension over 96,000 rows; the columns are a frame's, of one length)
    return list(map(dict, map(zip, repeat(names), zip(*columns, strict=True))))


def _narrowed_fields(fields: pl.Series) -> list[Any]:
    """A ``fields`` column as dicts of the fields some row has (at least one field), a null row as
    None, as to_dicts gives it. Rows with equal fields share one dict (never change it): a crash
    loop's ~96,000 failure rows hold ~190 different ones, and a dict a row cost more than the
    lookup of its values."""
    if not isinstance(fields.dtype, pl.Struct):
        return fields.to_list()
    height = fields.len()
    parts = fields.struct.unnest().get_columns()
    kept = [part for part in parts if part.null_count() < height] or parts[:1]
    names = [part.name for part in kept]
    shared: dict[tuple[Any, ...], dict[str, Any]] = {}

    def one(values: tuple[Any, ...]) -> dict[str, Any]:
        found = shared.get(values)
        if found is None:
            found = shared[values] = dict(zip(names, values, strict=True))
        return found

    out: list[Any] = [one(values) for values in zip(*(part.to_list() for part in kept), strict=True)]
    if fields.null_count():
        out = [None if missing else row for row, missing in zip(out, fields.is_null().to_list(), strict=True)]
    return out


def _plain(row: dict[str, Any]) -> bool:
    """Whether a row's text and message are plain ASCII (see JobView.rows_where)."""
    message = field_of(row, "message")
    return (row.get("text") or "").isascii() and (not isinstance(message, str) or message.isascii())


def message_and_text_of(row: dict[str, Any]) -> str:
    """:func:`message_and_text` of one row."""
    return f"{field_of(row, 'message') or ''} {row.get('text') or ''}"


def message_and_text() -> pl.Expr:
    """A row's message field and its text joined by a space, as ``f"{message or ''} {text or ''}"``
    reads them in Python: what a detector searches when polars picks its rows."""
    return pl.concat_str(pl.col("fields").struct.field("message").fill_null(""), pl.col("text").fill_null(""),
                         separator=" ")


def seen_at_expr() -> pl.Expr:
    """:func:`seen_at` in polars."""
    return (pl.when(pl.col("time_inferred").fill_null(False)).then(pl.coalesce("time_latest", "time"))
            .otherwise(pl.col("time")))


def in_order(rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` in :func:`order_key`'s order, sorted by polars (ties keep their order, as in
    ``sorted``)."""
    return rows.sort(seen_at_expr(), pl.col("file").fill_null(""), pl.col("line").fill_null(0),
                     nulls_last=True, maintain_order=True)


# The columns order_key reads (and in_order sorts by).
ORDER_COLUMNS = ("time", "time_inferred", "time_latest", "file", "line")


def positions_in_order(rows: pl.DataFrame) -> pl.Series:
    """The row positions of ``rows`` in :func:`in_order`'s order. The order's columns alone are
    sorted: sorting the rows themselves (the fields struct with them) cost ~0.2 s for LS103 on
    262,144 progress rows, to keep one."""
    keys = rows.select(*ORDER_COLUMNS, pl.int_range(pl.len(), dtype=pl.UInt32).alias("_at"))
    return in_order(keys)["_at"]


def ordered_dicts(rows: pl.DataFrame) -> list[dict[str, Any]]:
    """``sorted(dicts(rows), key=order_key)``; polars sorts a big frame (a query costs more than
    sorting a few dicts in Python)."""
    if rows.height < SORT_IN_POLARS_FROM:
        return sorted(dicts(rows), key=order_key)
    return dicts(in_order(rows))


def last_of(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last of ``rows`` in :func:`order_key`'s order (the last of equals), or None."""
    return max(reversed(rows), key=order_key, default=None)


def last_in_order(rows: pl.DataFrame) -> dict[str, Any] | None:
    """:func:`last_of` a frame's rows; of a big frame, one row is turned into a dict, not all of them."""
    if rows.height < LAST_IN_POLARS_FROM:
        return last_of(rows.to_dicts())
    at = int(positions_in_order(rows)[-1])
    return rows.slice(at, 1).to_dicts()[0]


def ends_in_order(rows: pl.DataFrame, count: int, *, last: bool = False) -> list[dict[str, Any]]:
    """The first (or, with ``last``, the last) ``count`` rows of ``ordered_dicts(rows)``, in that
    order; of a big frame, only those rows are turned into dicts (LS101 turned ~11,000 watchdog
    rows of a crash loop into dicts twice to cite three)."""
    if rows.height < LAST_IN_POLARS_FROM:
        ordered = ordered_dicts(rows)
        return ordered[-count:] if last and count else ordered[:count]
    at = positions_in_order(rows)
    return dicts(rows[at.tail(count) if last else at.head(count)])


def order_key(row: dict[str, Any]) -> tuple[datetime, str, int]:
    """Failure order for a row dict: its latest possible time (see TIMELINE_SCHEMA's
    ``time_latest``; unknown last), then file and line."""
    when = seen_at(row) or datetime.max
    return (when, str(row.get("file") or ""), int(row.get("line") or 0))


def window_of(row: dict[str, Any]) -> tuple[datetime | None, datetime | None]:
    """(earliest, latest) time a row's line can have been written."""
    if not row.get("time_inferred"):
        return row.get("time"), row.get("time")
    return row.get("time"), row.get("time_latest")  # never inverted (TIMELINE_SCHEMA)


def seen_at(row: dict[str, Any]) -> datetime | None:
    """When a row's line was written, as well as the logs tell: its own time, else the latest
    time it can have (the next timed line), else the nearest timed line above."""
    if not row.get("time_inferred"):
        return row.get("time")
    return row.get("time_latest") or row.get("time")


def evidence_of(row: dict[str, Any]) -> Evidence:
    prefix = row.get("prefix") or ""
    earliest, latest = window_of(row)
    return Evidence(str(row["file"]), int(row["line"]), (prefix + str(row.get("text") or ""))[:500],
                    earliest, latest or earliest)


def place_of(row: dict[str, Any]) -> str | None:
    """The node (else host) a row is about."""
    value = row.get("node") or row.get("host")
    return str(value) if value else None


def node_host_or_file(row: dict[str, Any]) -> Any:
    """A row's node, else its host, else its file: ``pl.coalesce("node", "host", "file")`` for one
    row (an empty name counts, as in polars)."""
    return next((row[name] for name in ("node", "host", "file") if row.get(name) is not None), None)


def culprit_of(row: dict[str, Any]) -> Culprit:
    return Culprit(
        host=row.get("host"),
        node=row.get("node"),
        rank=row.get("rank"),
        local_rank=row.get("local_rank"),
        time=seen_at(row),
        evidence=evidence_of(row),
    )


def local_rank_from_device(culprit: Culprit, view: JobView) -> Culprit:
    """The local rank of a culprit named by an NCCL line: the ``[N]`` of NCCL's prefix
    (``host:pid:tid [N]``) is the process's CUDA device, which torchrun and srun launches set from the
    local rank; unless another process of that node reports the same device (a narrowed
    CUDA_VISIBLE_DEVICES: every process sees device 0), or the process reports several devices."""
    place = culprit.node or culprit.host
    if culprit.local_rank is not None or culprit.evidence is None or place is None:
        return culprit
    line = view.events.filter((pl.col("file") == culprit.evidence.file) & (pl.col("line") == culprit.evidence.line))
    said = line.select("pid", pl.col("fields").struct.field("cuda_dev").alias("dev")).drop_nulls()
    if said.height == 0:
        return culprit
    pid, device = said.row(0)
    devices = view.events.filter(
        (pl.coalesce("node", "host") == place) & pl.col("pid").is_not_null()
        & pl.col("fields").struct.field("cuda_dev").is_not_null()
    ).select("pid", pl.col("fields").struct.field("cuda_dev").alias("dev")).unique()
    mine = devices.filter(pl.col("pid") == pid)["dev"].n_unique()
    shared = devices.filter((pl.col("dev") == device) & (pl.col("pid") != pid)).height
    if mine != 1 or shared:
        return culprit
    return replace(culprit, local_rank=int(device))


_EVENTS_BY_VALUE: dict[str, Event] = {event.value: event for event in Event}


def event_of(row: dict[str, Any]) -> Event:
    """A row's event as the enum member: ``Event(value)`` costs ~1 us in the enum machinery, a
    dict ~0.05 us, and per-row rules ask it of every failure row (a crash that loops: ~1 million)."""
    return _EVENTS_BY_VALUE[row["event"]]


def field_of(row: dict[str, Any], name: str) -> Any:
    fields = row.get("fields") or {}
    return fields.get(name)


def who(row: dict[str, Any] | Culprit) -> str:
    """A short human name for where a row comes from: ``rank 3 on node02`` / ``node02``."""
    if isinstance(row, Culprit):
        rank, local, host, node = row.rank, row.local_rank, row.host, row.node
    else:
        rank, local, host, node = row.get("rank"), row.get("local_rank"), row.get("host"), row.get("node")
    place = node or host
    parts = []
    if rank is not None:
        parts.append(f"rank {rank}")
    elif local is not None:
        parts.append(f"local rank {local}")
    if place:
        parts.append(f"on {place}" if parts else str(place))
    return " ".join(parts) if parts else "an unidentified process"


def when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "(time unknown)"


def when_row(row: dict[str, Any]) -> str:
    """When a row's line was written, as the timeline knows it (``time`` the earliest, ``time_latest``
    the latest): its own time, or for a line without one the window between the timed lines
    around it (``2026-11-03 16:41:53–16:43:56 (no timestamp on the line)``)."""
    earliest, latest = window_of(row)
    if earliest is None or latest is None or when(earliest) == when(latest):
        return when(earliest or latest)
    end = latest.strftime("%H:%M:%S") if latest.date() == earliest.date() else when(latest)
    return f"{when(earliest)}–{end} (no timestamp on the line)"


def compact_ranks(ranks: list[int] | tuple[int, ...]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0-2,5,7-8``."""
    values = sorted(set(ranks))
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(out)


# Messages that mean "I failed because someone else did": a process killed or disconnected by a
# peer's death, a collective that timed out waiting for it. Shared by the cascade detector and
# others that must not blame a victim.
VICTIM_MESSAGE = re.compile(
    r"remote process exited|Connection reset by peer|Connection closed by (?:remote )?peer|Broken pipe"
    r"|communicator was aborted|NCCL communicator .*abort|ProcessGroupNCCL is aborted|Watchdog caught"
    r"|collective operation timeout|Timeout at NCCL work|timed out|Socket Timeout|SIGTERM|got signal: ?(?:15|9)"
    r"|SignalException|Terminated|\bKilled\b|KeyboardInterrupt|ChildFailedError|unhandled system error"
    r"|ncclRemoteError|Software caused connection abort|Connection refused|failed to recv|recvBytes"
    r"|The client socket has|DistNetworkError|Stopping|shutting down|exit code 143|exitcode: -15",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def says_victim(text: str) -> bool:
    """Whether ``text`` holds a VICTIM_MESSAGE. Remembered per text: a cascade repeats the same few
    messages on every rank, and the cascade's rules ask of each row several times (3800 searches,
    60 ms, for 1600 failure rows of a 128-rank job)."""
    return VICTIM_MESSAGE.search(text) is not None
