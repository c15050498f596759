"""Which of a few patterns claim which candidate lines, as :mod:`logscope.parsers.classify` tries
them: a pattern is tried on a line only when the line holds one of its triggers, and claims it when
its regex matches. The rules that set lines aside before classification (progress_aside,
channel_aside) ask it whether a line is certainly of their kind (:func:`certain`): no earlier
pattern of the table claims it, and one of theirs does.
"""

from __future__ import annotations

import polars as pl

from logscope.knowledge import RECOGNISERS, Message
from logscope.parsers.regex_ascii import ascii_classes


def holds(triggers: list[str]) -> pl.Expr:
    """Whether a candidate line (``kw``: the triggers it holds) holds one of ``triggers``."""
    return pl.col("kw").list.eval(pl.element().is_in(triggers)).list.any()


def claimed(lines: pl.DataFrame, patterns: tuple[Message, ...]) -> pl.Series:
    """``_at`` of the ``lines`` (``_at``, ``raw``, ``kw``) one of ``patterns`` claims. Only the
    patterns whose triggers some line holds are tried, each on the lines holding them, all in one
    polars call."""
    held = set(lines["kw"].explode().unique().drop_nulls().to_list()) if lines.height else set()
    queries = [lines.lazy().filter(holds(list(p.triggers)) & pl.col("raw").str.contains(regex(p))).select("_at")
               for p in patterns if held.intersection(p.triggers)]
    if not queries:
        return pl.Series("_at", [], dtype=pl.UInt32)
    return pl.concat(pl.collect_all(queries)).to_series().unique()


def certain(lines: pl.DataFrame, mine: tuple[Message, ...], others: tuple[Message, ...]) -> pl.DataFrame:
    """The ``lines`` (``_at``, ``raw``, ``kw``) classification certainly gives to one of ``mine``:
    one of them claims the line, and none of ``others`` (the patterns before the last of them:
    :func:`others_before`) does."""
    kept = lines.filter(pl.col("_at").is_in(claimed(lines, mine).implode()))
    taken = claimed(kept, others)
    return kept.filter(~pl.col("_at").is_in(taken.implode())) if taken.len() else kept


def others_before(mine: tuple[Message, ...]) -> tuple[Message, ...]:
    """Every pattern of the table up to the last of ``mine`` that is not one of them: those that
    could claim a line before one of ``mine`` does."""
    last = max((n for n, p in enumerate(RECOGNISERS) if p in mine), default=-1)
    return tuple(p for p in RECOGNISERS[:last + 1] if p not in mine)


def regex(pattern: Message) -> str:
    """A pattern's regex as polars runs it (ASCII classes, as classify's)."""
    return ascii_classes(str(pattern.match))


__all__ = ["certain", "claimed", "holds", "others_before", "regex"]
