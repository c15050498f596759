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


def parse_event_time(text: pl.Expr) -> pl.Expr:
    """Parse a timestamp captured inside a message (``2024-04-20T09:09:37``, ``2023-05-19_16:39:58``)."""
    iso = text.str.extract_groups(ISO_FORM)
    return _assemble(
        iso.struct.field("y"), iso.struct.field("mo"), iso.struct.field("d"), iso.struct.field("t"),
        iso.struct.field("f"),
    ).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")


__all__ = ["ANY_LEADING_TIME", "FULL_DATE", "FULL_DATE_BYTES", "YEARLESS_TIME", "leading_time", "parse_event_time"]
