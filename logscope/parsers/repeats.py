"""Lines a restart loop repeats, set aside before they are parsed: each attempt's words once.

A job that restarts in a loop (torchrun's ``--max_restarts``, a retry loop in the batch script,
requeues writing to one file) prints the same start-up, the same failure and the same teardown in
every attempt, with other pids, thread ids, addresses, ports and times. After parsing, the
thinning keeps the first and last few processes of each rank that said a line in the same words
(:data:`logscope.ingest.thinning.PROCESS_KEEP`); parsing the attempts in between, only for the
thinning to drop them, was most of what such a log cost (a 105 MB loop of 93 attempts: ~1 s to
split its prefixes and times, ~1.5 s to classify, most of the detectors' time on the rows left).

Here a big chunk's lines are compared before anything else is done to them. A line's *wording* is
its text with what changes from one attempt to the next masked (:data:`VARYING`):

* a time of day (``14:02:13``, ``14:02:13.934000``, ISO's ``T14:02:13``, torchrun's
  ``_14:02:13``), a date (``2026-11-05``; a glog head's ``I1105`` with its time) and epoch seconds
  (ten digits or more, with a fraction or not): a loop that runs for days says each line in each;
* a hex number (``0x7f..``: addresses, communicators);
* a whole number of four digits or more standing alone (pids, thread ids, ports, sizes), or after an
  underscore in a name (c10d's rendezvous names a node ``gpu-node01_81002_0``: host, pid, local id);

and what stays is what tells one rank's line from another's and one failure from another: host
names (``node01``: the digits are part of a word), ranks, local ranks and devices (up to three
digits standing alone, or inside a word such as ``rank1023``), exit codes, signals, decimals
(``2.345678``: a loss, kept whole). A rank of four digits standing alone (``rank 1023``) reads as
a pid: such lines of big jobs are told apart by their launcher label or the line above them.

Lines are compared in *groups*: a line and the lines that go on it (:data:`CONTINUATION`: indented
after their launcher labels, as a record's ``  exitcode  : 1 (pid: N)`` rows under torchrun's
``[1]:``, a traceback's ``  File ...`` lines). A group is set aside or kept whole, so that no record
loses the rows that say whose it is; its key is the wordings of all its lines. A group is set aside
when at least ``head`` groups of its key came before it in the chunk and at least ``tail`` come
after it: the first and last attempts of a loop stay whole, the ones between go. Kept all the same:

* in each run of groups set aside back to back, the first and the last that hold a time of day, so
  that an untimed line kept after the run takes its time from its own attempt, not from one hours
  before (the lines around take their times from their timed neighbours, lines.py). Not where
  the group kept next to the run has a time on that side itself (it ends, or starts, in a line
  holding one), unless the run's other end stays with lines past its time that hold none: a loop
  whose every attempt says one line of its own (torchrun's ``log_dir`` names a new temporary
  directory) kept that line and the two around it of every attempt, now that line alone (a 1 GB
  loop: ~9,900 lines kept a 69 MB file, ~8,000);
* groups with a line another rule keeps the ends of: progress lines (their numbers are what
  changes; progress_aside and the thinning keep each process's) and NCCL COLL lines (coll_aside);
* every line of a chunk whose lines were split at carriage returns (a line is then several rows,
  and counting is by line): nothing is set aside there.

A line set aside is counted as recognised when the line at its place in the first group of its key
is (the same words, other numbers: it would have been classified alike), so every line is counted
as before. Only a chunk whose first :data:`SAMPLE_LINES` lines would have at least
:data:`SAMPLE_SHARE` of them set aside is compared whole, or a chunk of at least twice as many lines
whose last SAMPLE_LINES lines are at least SAMPLE_SHARE worded as lines of the first (:func:`far_recurs`:
a loop whose attempts are longer than the sample): a log without a loop pays the samples only
(~25 ms a chunk).

Where the compiled scanner was built, a big block without carriage returns is not framed first:
the same rule is applied to its bytes (:mod:`logscope.ingest.repeat_prefilter`), and then across
the consecutive such blocks of a file, so that a file keeps the first and last groups of a key of
those blocks together, as one chunk of them all would. Here, the rule acts per chunk: where the
scanner was not built, and on what the COLL byte pass left of a block; and it is the reference the
byte rule is held to (tests/test_repeat_prefilter.py). A file is never read twice: which repeats of
a line are parsed depends on where the blocks were cut (their size, whether the compiled scanner
read them); what the job is said to be and every line's count do not (tests/test_repeats.py). The
wordings are read by the compiled scanner (``_collscan.wordings``, ~2-4 ns a byte) where it was
built, else by polars (:func:`line_facts`: ~1 us a line), the reference both are held to.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import polars as pl

from logscope.knowledge import RECOGNISERS
from logscope.model import Event
from logscope.parsers.coll_groups import COLL_INFO, COLL_TRIGGER
from logscope.parsers.regex_ascii import ascii_classes

# What changes from one attempt of a loop to the next (see the module docstring), tried in this
# order at each place. Two alternatives put something back (the replacement is "${1}${2}#"): a
# glog head's level letter (group 1: ``I1105 14:02:13.934000`` reads "I#", its month and day
# with its time), and a decimal (group 2: a loss or a learning rate tells lines apart; without it
# its digits after the point, four or more, would be masked).
_TIME_OF_DAY = r"(?:(?-u:\b)|[T_])\d\d?:\d\d:\d\d(?:[.,]\d+)?"
VARYING = ascii_classes(
    r"(?-u:\b)([IWEF])\d{4} +\d\d:\d\d:\d\d(?:\.\d+)?"  # a glog head's date and time
    + "|" + _TIME_OF_DAY
    + r"|(?-u:\b)\d{4}-\d\d-\d\d"  # a date
    + r"|(?-u:\b)\d{10,}(?:\.\d+)?"  # epoch seconds
    + r"|(\d+\.\d+)"  # a decimal: kept
    + r"|(?-u:\b)0x[0-9a-fA-F]+"
    + r"|(?-u:\b)\d{4,}(?-u:\b)"
    + r"|_\d{4,}(?:_|(?-u:\b))"  # one inside a name, between underscores: c10d's node 'host_pid_n'
)
MASKED = "${1}${2}#"  # what VARYING's matches are replaced by
TIME_OF_DAY = ascii_classes(_TIME_OF_DAY)
# A line that goes on the one before it: after its launcher labels, if any, ending in ':' or ']'
# (``3:``, ``[default3]:[rank11]:``), it is indented by two spaces or a tab (a record's
# ``  exitcode  : 1``, a traceback's ``  File ...``; a label's own space is one). It is of the
# group of the line above it.
CONTINUATION = r"^(?:[^\t\n\x0B\f\r ]*[:\]])? ?(?:  |\t)"  # ASCII spaces, as the byte pass reads them
# The gate: the first SAMPLE_LINES lines of a chunk, of which at least SAMPLE_SHARE would be set
# aside were they the whole chunk.
SAMPLE_LINES = 16384
SAMPLE_SHARE = 0.25


@dataclass
class Repeats:
    """What :func:`repeat_surplus` found in a chunk."""

    surplus: pl.Series  # row positions of the lines set aside
    # For each line kept that lines set aside are counted against (the line at their place in the
    # first group of their key): its line number and how many (``line``, ``count``).
    counted: pl.DataFrame


# The compiled scanner's reading of lines (logscope.ingest._collscan.wordings): for the text of
# lines joined by newlines, a native uint64 hash of each line's wording and a byte of flags (1: it
# goes on the line before, 2: it holds a time of day); and two things asked only by the byte pass
# (logscope.ingest.repeat_prefilter): which needles each line holds, and where it stopped.
Wordings = Callable[[bytes], tuple[bytes, bytes, bytes, int]]


def repeat_surplus(lines: pl.DataFrame, head: int, tail: int, wordings: Wordings | None = None) -> Repeats | None:
    """The lines (``line``, ``raw``, in file order, one row a line) a restart loop repeats (see the
    module docstring), or None when none is set aside. ``wordings``: the compiled scanner's way to
    the lines' wordings and flags, ~5 times faster than polars' (which is the fallback, and the
    reference: tests/test_repeats.py holds the two to the same)."""
    if lines.height <= head + tail:
        return None
    sample = lines.head(SAMPLE_LINES)
    own = _own_rule_rows(sample)
    # A chunk of progress (or COLL) lines is not compared: too few of its lines could go.
    if sample.height - own.len() < SAMPLE_SHARE * sample.height:
        return None
    facts = line_facts(sample, wordings)
    # At most count - head - tail lines of a wording can go (a group that goes has head + tail
    # of its key kept, each with that wording): a log without a loop stops here, unsorted.
    bound = (facts["_wording"].value_counts()["count"].cast(pl.Int64) - (head + tail)).clip(lower_bound=0).sum()
    far = None  # the facts and own-rule rows of the chunk's last SAMPLE_LINES lines, when looked at
    if (bound < SAMPLE_SHARE * sample.height
            or _surplus(sample, head, tail, facts, own).height < SAMPLE_SHARE * sample.height):
        far = _far_sample(lines, wordings)
        if far is None or not far_recurs(facts["_wording"].to_list(), own.to_list(), far[0]["_wording"].to_list(),
                                         far[1].to_list()):
            return None
    if lines.height > sample.height:  # the sample's facts and own-rule rows are the first of the chunk's
        if far is None:
            rest = lines.slice(sample.height)
            rest_facts, rest_own = line_facts(rest, wordings), _own_rule_rows(rest) + sample.height
        else:  # and the far sample's its last (a line's facts are its own: read once)
            middle = lines.slice(sample.height, lines.height - 2 * SAMPLE_LINES)
            rest_facts = pl.concat([line_facts(middle, wordings), far[0]], how="vertical_relaxed")
            rest_own = pl.concat([_own_rule_rows(middle) + sample.height, far[1] + (lines.height - SAMPLE_LINES)])
        found = _surplus(lines, head, tail, pl.concat([facts, rest_facts], how="vertical_relaxed"),
                         pl.concat([own, rest_own]))
    else:
        found = _surplus(sample, head, tail, facts, own)
    if found.height == 0:
        return None
    counted = found.group_by("_first_row").len("count")
    counted = pl.DataFrame({"line": lines["line"].gather(counted["_first_row"]).cast(pl.Int64),
                            "count": counted["count"].cast(pl.Int64)})
    return Repeats(found["_row"], counted)


def _far_sample(lines: pl.DataFrame, wordings: Wordings | None) -> tuple[pl.DataFrame, pl.Series] | None:
    """The facts and own-rule rows of the chunk's last SAMPLE_LINES lines, for the gate's second
    look (:func:`far_recurs`); None when the chunk has fewer than twice as many lines."""
    if lines.height < 2 * SAMPLE_LINES:
        return None
    far = lines.tail(SAMPLE_LINES)
    return line_facts(far, wordings), _own_rule_rows(far)


def far_recurs(sample_words: Sequence[int], sample_own: Iterable[int], far_words: Sequence[int],
               far_own: Iterable[int]) -> bool:
    """Whether a big chunk whose first SAMPLE_LINES lines show no loop is compared whole all the
    same, its far end showing one: at least SAMPLE_SHARE of its last SAMPLE_LINES lines
    (``far_words``: the hashes of their wordings) are worded as a line of the sample
    (``sample_words``), own-rule lines aside (``sample_own``, ``far_own``: their rows). A loop
    whose attempts are longer than the sample says nothing twice in it (a 128-rank job's start-up
    under NCCL_DEBUG=INFO is ~14,000 lines, each rank's lines once, with its own pid); its last
    attempt says what its first did. Both the polars rule and the byte pass
    (logscope.ingest.repeat_prefilter) ask this, of their own hashes; what is set aside is then
    the rule's, over the whole chunk."""
    sample_own, far_own = set(sample_own), set(far_own)
    seen = {word for row, word in enumerate(sample_words) if row not in sample_own}
    recurring = sum(word in seen for row, word in enumerate(far_words) if row not in far_own)
    return recurring >= SAMPLE_SHARE * len(far_words)


def _surplus(lines: pl.DataFrame, head: int, tail: int, facts: pl.DataFrame,
             own: pl.Series | None = None) -> pl.DataFrame:
    """The rows set aside (``_row``: their positions, ``_first_row``: the position of the line at
    the same place in the first group of their key), in order. ``facts``: the lines' facts
    (:func:`line_facts`); ``own``: their own-rule rows (:func:`_own_rule_rows`), when known."""
    row = pl.int_range(pl.len(), dtype=pl.UInt32)
    own_rule = row.is_in((_own_rule_rows(lines) if own is None else own).implode())
    rows = (pl.concat([lines.select("line"), facts], how="horizontal").lazy()
            .select("line", row.alias("_row"), "_wording", (~pl.col("_continues")).cum_sum().alias("_group"),
                    "_timed", own_rule.alias("_own_rule"))
            .collect())
    # A line and the lines that go on it are one group, set aside or kept whole: its key is the
    # wording of all its lines, in order (null for a group with a line of another rule: never set
    # aside).
    groups = (rows.lazy().group_by("_group", maintain_order=True)
              .agg(pl.col("_wording"), pl.col("_own_rule").any(), pl.col("_timed").any(),
                   pl.col("_timed").first().alias("_starts_timed"), pl.col("_timed").last().alias("_ends_timed"),
                   pl.col("_row").first().alias("_start"))
              .select("_group", "_timed", "_starts_timed", "_ends_timed", "_start",
                      pl.when(~pl.col("_own_rule")).then(pl.col("_wording").hash()).alias("_key"))
              .with_columns(_aside(head, tail), pl.col("_start").first().over("_key").alias("_first_start"))
              # the groups of one run set aside back to back share a number
              .with_columns((~pl.col("_aside")).cum_sum().alias("_run"),
                            pl.int_range(pl.len(), dtype=pl.UInt32).alias("_nth"))
              # of which the first and the last with a time of day stay (see _ends_of_runs)
              .with_columns(_ends_of_runs().alias("_end"))
              .filter(pl.col("_aside") & ~pl.col("_end"))
              .select("_group", "_start", "_first_start"))
    # A line's own kind is that of the line at its place in the first group of its key.
    return (rows.lazy().join(groups, on="_group", how="inner", maintain_order="left")
            .select("_row", (pl.col("_first_start") + pl.col("_row") - pl.col("_start")).alias("_first_row"))
            .collect())


def _ends_of_runs() -> pl.Expr:
    """Whether a group is the first or the last with a time of day in its run of groups set aside,
    and kept: the first where the group kept before the run does not end in a line holding a time,
    the last where the group kept after it does not start with one, and each where the other is
    kept and its lines after (before) its time hold none (groups in order, ``_nth``)."""
    aside = pl.col("_aside")
    timed = pl.when(aside & pl.col("_timed")).then(pl.col("_nth"))
    first, last = timed.min().over("_run"), timed.max().over("_run")
    is_first, is_last = pl.col("_nth") == first, pl.col("_nth") == last
    # (a run's groups take the kept group's above them, and below them, each with a null where none is)
    before_timed = pl.when(~aside).then(pl.col("_ends_timed")).forward_fill().fill_null(False)
    after_timed = pl.when(~aside).then(pl.col("_starts_timed")).backward_fill().fill_null(False)
    first_ends_timed = pl.when(is_first).then(pl.col("_ends_timed")).any().over("_run")
    last_starts_timed = pl.when(is_last).then(pl.col("_starts_timed")).any().over("_run")
    keep_last = ~after_timed | (~before_timed & (first != last) & ~first_ends_timed)
    keep_first = ~before_timed | (keep_last & (first != last) & ~last_starts_timed)
    return ((is_first & keep_first) | (is_last & keep_last)).fill_null(False)


def _aside(head: int, tail: int) -> pl.Expr:
    """Whether a group (one row each, in order, ``_key``) is set aside: at least ``head`` groups of
    its key before it and ``tail`` after it."""
    position = pl.int_range(pl.len()).over("_key")
    count = pl.len().over("_key").cast(pl.Int64)
    return ((position >= head) & (position < count - tail) & pl.col("_key").is_not_null()).alias("_aside")


def line_facts(lines: pl.DataFrame, wordings: Wordings | None = None) -> pl.DataFrame:
    """For each line (``raw``): a hash of its wording (``_wording``, equal for equal wordings),
    whether it goes on the line before (``_continues``) and whether it holds a time of day
    (``_timed``); by the compiled scanner's ``wordings`` when given and the lines hold no newline,
    else by polars."""
    if wordings is not None and lines.height:
        hashes, flags, _, _ = wordings(lines["raw"].str.join("\n").cast(pl.Binary).item())
        if len(flags) == lines.height:  # else a line held a newline (or was null): polars reads them
            flag = _column(flags, "B", pl.UInt8)
            return pl.DataFrame({"_wording": _column(hashes, "Q", pl.UInt64),
                                 "_continues": (flag & 1) > 0, "_timed": (flag & 2) > 0})
    return lines.select(pl.col("raw").str.replace_all(VARYING, MASKED).hash().alias("_wording"),
                        pl.col("raw").str.contains(CONTINUATION).alias("_continues"),
                        pl.col("raw").str.contains(TIME_OF_DAY).alias("_timed"))


def _column(native: bytes, code: str, dtype: type[pl.DataType]) -> pl.Series:
    """A buffer of native numbers as a polars column: by numpy, without a copy, for a chunk's lines
    (a loop's), item by item for fewer (a sample's: 16,384 take ~1 ms, and a log without a loop does
    not pay numpy's import, ~0.1 s a process)."""
    if len(native) // array(code).itemsize <= SAMPLE_LINES:
        return pl.Series(array(code, native), dtype=dtype)
    import numpy as np

    return pl.Series(np.frombuffer(native, dtype=np.dtype(code)))


def _own_rule_rows(lines: pl.DataFrame) -> pl.Series:
    """The positions of the lines another rule keeps the ends of, never set aside here: progress
    lines (a progress pattern's regex matches them, tried on the lines holding one of its triggers
    only: a trigger such as "tep" is in "slurmstepd") and lines with the shape of an NCCL COLL line
    (coll_aside: per process and communicator)."""
    triggers, regexes = progress_patterns()
    holds = pl.col("raw").str.contains_any(triggers)
    coll = (pl.col("raw").str.contains(COLL_TRIGGER, literal=True)
            & pl.col("raw").str.contains(COLL_INFO, literal=True))
    return (lines.lazy().select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_at"), "raw")
            .filter(holds | coll)
            .filter(coll | pl.col("raw").str.contains(regexes))
            .collect()["_at"])


@cache
def progress_patterns() -> tuple[list[str], str]:
    """The triggers of the progress patterns, and one regex that matches where any of theirs does
    (their groups unnamed: one pass over a line, not one a pattern)."""
    patterns = [p for p in RECOGNISERS if p.event == Event.PROGRESS]
    either = "|".join(f"(?:{_NAMED_GROUP.sub('(', ascii_classes(str(p.match)))})" for p in patterns)
    return sorted({t for p in patterns for t in p.triggers}), either


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


__all__ = [
    "CONTINUATION",
    "MASKED",
    "SAMPLE_LINES",
    "SAMPLE_SHARE",
    "TIME_OF_DAY",
    "VARYING",
    "Repeats",
    "Wordings",
    "far_recurs",
    "line_facts",
    "progress_patterns",
    "repeat_surplus",
]
