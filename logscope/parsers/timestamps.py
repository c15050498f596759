"""Timestamps at the start of a line as polars expressions: the datetime each form gives.

The forms, their regexes and where each comes from are in :mod:`logscope.parsers.time_forms`
(no polars there: the byte pass of a read worker tests heads with them too).

glog and syslog carry no year: it is taken from ``reference_year`` (the file's first full date, else
its modification time), which keeps the result deterministic for a given file.
"""

from __future__ import annotations

import polars as pl

from logscope.parsers.time_forms import (
    ANY_LEADING_TIME,
    EPOCH_FORM,
    FULL_DATE,
    FULL_DATE_BYTES,
    GLOG_FORM,
    ISO_FORM,
    MONTHS,
    PLAIN_TIMES,
    SYSLOG_FORM,
    US_FORM,
    YEARLESS_TIME,
)


def _assemble(year: pl.Expr, month: pl.Expr, day: pl.Expr, clock: pl.Expr, frac: pl.Expr) -> pl.Expr:
    """Build ``YYYY-MM-DD HH:MM:SS.ffffff`` from parts (microsecond precision)."""
    return pl.concat_str(
        year,
        pl.lit("-"),
        month.str.zfill(2),
        pl.lit("-"),
        day.str.zfill(2),
        pl.lit(" "),
        clock,
        pl.lit("."),
        _six_digits(frac),
    )


def _six_digits(frac: pl.Expr) -> pl.Expr:
    """A fraction of a second's digits as microseconds' six (none: zero)."""
    return frac.fill_null("0").str.slice(0, 6).str.pad_end(6, "0")


def leading_time(body: pl.Expr, reference_year: int) -> pl.Expr:
    """An expression giving the datetime at the start of ``body`` (null where there is none)."""
    year = pl.lit(str(reference_year))
    iso = body.str.extract_groups(ISO_FORM)
    glog = body.str.extract_groups(GLOG_FORM)
    us = body.str.extract_groups(US_FORM)
    sys = body.str.extract_groups(SYSLOG_FORM)
    sys_month = sys.struct.field("mon").replace_strict(
        {k: str(v) for k, v in MONTHS.items()}, default=None, return_dtype=pl.String
    )
    text = pl.coalesce(
        _assemble(iso.struct.field("y"), iso.struct.field("mo"), iso.struct.field("d"),
                  iso.struct.field("t"), iso.struct.field("f")),
        _assemble(year, glog.struct.field("mo"), glog.struct.field("d"), glog.struct.field("t"),
                  glog.struct.field("f")),
        _assemble(us.struct.field("y"), us.struct.field("mo"), us.struct.field("d"), us.struct.field("t"),
                  pl.lit(None, dtype=pl.String)),
        _assemble(pl.coalesce(sys.struct.field("y"), year), sys_month, sys.struct.field("d"),
                  sys.struct.field("t"), pl.lit(None, dtype=pl.String)),
    )
    epoch = body.str.extract_groups(EPOCH_FORM)
    micros = (epoch.struct.field("s").cast(pl.Int64) * 1_000_000
              + _six_digits(epoch.struct.field("f")).cast(pl.Int64))
    return pl.coalesce(text.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us"),
                       pl.from_epoch(micros, time_unit="us"))


def leading_times(texts: pl.Series, reference_year: int) -> pl.Series:
    """:func:`leading_time` of each of ``texts``, those of a plain form (time_forms.PLAIN_TIMES: a
    logger's or DLLogger's time, alone) read by one strptime: the same times (tests/test_parsers.py)
    at a third of the cost, on the distinct prefix times of a file (one a line, where a line's time
    has microseconds)."""
    rest = texts.to_frame("_text").with_row_index("_at")
    times = pl.repeat(None, texts.len(), dtype=pl.Datetime("us"), eager=True)
    for regex, strptime in PLAIN_TIMES:
        plain = rest["_text"].str.contains(regex).fill_null(False)
        if plain.any():
            read = rest.filter(plain).select("_at", pl.col("_text").str.to_datetime(
                strptime, strict=False, time_unit="us").alias("_time"))
            times = times.scatter(read["_at"], read["_time"])
            rest = rest.filter(~plain)
    if rest.height:
        read = rest.select("_at", leading_time(pl.col("_text"), reference_year).alias("_time"))
        times = times.scatter(read["_at"], read["_time"])
    return times.alias(texts.name)


def parse_event_time(text: pl.Expr) -> pl.Expr:
    """Parse a timestamp captured inside a message (``2024-04-20T09:09:37``, ``2023-05-19_16:39:58``)."""
    iso = text.str.extract_groups(ISO_FORM)
    return _assemble(
        iso.struct.field("y"), iso.struct.field("mo"), iso.struct.field("d"), iso.struct.field("t"),
        iso.struct.field("f"),
    ).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")


__all__ = ["ANY_LEADING_TIME", "FULL_DATE", "FULL_DATE_BYTES", "YEARLESS_TIME", "leading_time", "leading_times",
           "parse_event_time"]
