"""Timestamps at the start of a line, in every format seen in the job logs we read.

=========================================  ===================================================
format                                     example (source)
=========================================  ===================================================
ISO / python logging ``asctime``           ``2024-05-08 08:47:31,261`` or ``[2024-05-08 08:47:31,261]``
NCCL WARN / NCCL_DEBUG_TIMESTAMP           ``[2026-05-05 06:16:47] node-01:189884:...``
glog (c10d, torch>=2.4 elastic)            ``E0801 13:23:20.000000 32974 torch/...``, ``[E1206 18:44:12.71 ...]``
HF/accelerate ``%m/%d/%Y %H:%M:%S``        ``12/02/2026 15:12:00 - INFO - ...``
syslog / ``dmesg -T``                      ``Dec  2 15:12:00 host kernel: ...``, ``[Wed Dec  2 15:12:00 2026]``
=========================================  ===================================================

Timestamps written *inside* a message (``CANCELLED AT 2024-04-20T09:09:37``, torchrun's
``time : 2023-05-19_16:39:58``) are captured by the event patterns as ``event_time`` and parsed
with :func:`parse_event_time`.

glog and syslog carry no year: it is taken from ``reference_year`` (the file's first full date, else
its modification time), which keeps the result deterministic for a given file.
"""

from __future__ import annotations

import re

import polars as pl

from logscope.parsers.regex_ascii import ascii_classes

_MONTHS = {m: i for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], start=1)}

# Anchored forms, tried in order; each yields year/month/day/time/fraction groups.
_ISO = ascii_classes(r"^ ?\[?(?P<y>(?:19|2\d)\d\d)-(?P<mo>\d{2})-(?P<d>\d{2})[ T_](?P<t>\d{2}:\d{2}:\d{2})(?:[.,](?P<f>\d{1,9}))?")
_GLOG = ascii_classes(r"^\[?[IWEF](?P<mo>\d{2})(?P<d>\d{2}) (?P<t>\d{2}:\d{2}:\d{2})(?:\.(?P<f>\d{1,9}))?")
_US = ascii_classes(r"^(?P<mo>\d{2})/(?P<d>\d{2})/(?P<y>(?:19|2\d)\d\d) (?P<t>\d{2}:\d{2}:\d{2})")
_SYSLOG = ascii_classes(r"^(?:\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) )?(?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) (?P<t>\d{2}:\d{2}:\d{2})(?: (?P<y>(?:19|2\d)\d\d)\])?")

FULL_DATE = r"\d{4}-\d{2}-\d{2}[ T_]\d{2}:\d{2}:\d{2}"
# Years are 1900-2999: a line dated year 1 or 9999 is taken as untimed, as times that close to
# datetime's limits would overflow the moment anything adds a second to them.

# Any of the leading forms, without captures: a DFA-only test of which lines can hold a leading
# time, so the four extractions below run on those lines only. A line it rejects gets null from
# :func:`leading_time` too (same anchored regexes).
ANY_LEADING_TIME = "|".join(re.sub(r"\(\?P<\w+>", "(?:", form) for form in (_ISO, _GLOG, _US, _SYSLOG))


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
        frac.fill_null("0").str.slice(0, 6).str.pad_end(6, "0"),
    )


def leading_time(body: pl.Expr, reference_year: int) -> pl.Expr:
    """An expression giving the datetime at the start of ``body`` (null where there is none)."""
    year = pl.lit(str(reference_year))
    iso = body.str.extract_groups(_ISO)
    glog = body.str.extract_groups(_GLOG)
    us = body.str.extract_groups(_US)
    sys = body.str.extract_groups(_SYSLOG)
    sys_month = sys.struct.field("mon").replace_strict(
        {k: str(v) for k, v in _MONTHS.items()}, default=None, return_dtype=pl.String
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
    return text.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")


def parse_event_time(text: pl.Expr) -> pl.Expr:
    """Parse a timestamp captured inside a message (``2024-04-20T09:09:37``, ``2023-05-19_16:39:58``)."""
    iso = text.str.extract_groups(_ISO)
    return _assemble(
        iso.struct.field("y"), iso.struct.field("mo"), iso.struct.field("d"), iso.struct.field("t"),
        iso.struct.field("f"),
    ).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")


# A quick look at the start of a file for any full date, to give glog/syslog lines their year.
FULL_DATE_BYTES = rb"(?<!\d)(19[7-9]\d|20\d\d)-(0[1-9]|1[0-2])-([0-2]\d|3[01])[ T_]\d\d:\d\d:\d\d"
