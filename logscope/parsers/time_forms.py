"""Timestamps at the start of a line, in every format seen in the job logs we read: their regexes.

=========================================  ===================================================
format                                     example (source)
=========================================  ===================================================
ISO / python logging ``asctime``           ``2024-05-08 08:47:31,261`` or ``[2024-05-08 08:47:31,261]``
  behind a level name or DLLogger's tag      ``INFO 2024-05-08 08:47:31,261 ...`` (a logging format that puts
                                           ``%(levelname)s`` first), ``DLL 2025-10-03 22:16:01.389637 - ...``
                                           (NVIDIA/dllogger, dllogger/logger.py: ``default_prefix_format``
                                           writes ``"DLL {} - ".format(datetime.now())``, MLPerf's trainers)
NCCL WARN / NCCL_DEBUG_TIMESTAMP           ``[2026-05-05 06:16:47] node-01:189884:...``
glog (c10d, torch>=2.4 elastic)            ``E0801 13:23:20.000000 32974 torch/...``, ``[E1206 18:44:12.71 ...]``,
                                           ``[E909 09:55:46.99 ...]`` (c10's own logger, c10/util/Logging.cpp,
                                           writes ``(tm_mon + 1) * 100 + tm_mday``: September is ``909``)
HF/accelerate ``%m/%d/%Y %H:%M:%S``        ``12/02/2026 15:12:00 - INFO - ...``
syslog / ``dmesg -T``                      ``Dec  2 15:12:00 host kernel: ...``, ``[Wed Dec  2 15:12:00 2026]``
=========================================  ===================================================

Timestamps written *inside* a message (``CANCELLED AT 2024-04-20T09:09:37``, torchrun's
``time : 2023-05-19_16:39:58``) are captured by the event patterns as ``event_time`` and parsed
with :func:`logscope.parsers.timestamps.parse_event_time`.

The regexes are plain text (no polars here): :mod:`logscope.parsers.timestamps` turns them into
polars expressions, and a read worker's byte pass (which never imports polars) tests heads with them.
"""

from __future__ import annotations

import re

from logscope.parsers.regex_ascii import ascii_classes

MONTHS = {m: i for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], start=1)}

# Anchored forms, tried in order; each yields year/month/day/time/fraction groups.
ISO_FORM = ascii_classes(r"^ ?(?:(?:DLL|DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL):? +)?\[?(?P<y>(?:19|2\d)\d\d)-(?P<mo>\d{2})-(?P<d>\d{2})[ T_](?P<t>\d{2}:\d{2}:\d{2})(?:[.,](?P<f>\d{1,9}))?")
GLOG_FORM = ascii_classes(r"^\[?[IWEF](?P<mo>\d{1,2})(?P<d>\d{2}) (?P<t>\d{2}:\d{2}:\d{2})(?:\.(?P<f>\d{1,9}))?")
US_FORM = ascii_classes(r"^(?P<mo>\d{2})/(?P<d>\d{2})/(?P<y>(?:19|2\d)\d\d) (?P<t>\d{2}:\d{2}:\d{2})")
# Seconds since the epoch, as a tool stamps a line with them (moreutils' `ts %.s`); in a stack of
# prefixes only (logscope.parsers.prefix_stack.TIME_TEXT), never at the start of a message.
EPOCH_FORM = ascii_classes(r"^(?P<s>1[5-9]\d{8})(?:\.(?P<f>\d{1,9}))?")
SYSLOG_FORM = ascii_classes(r"^(?:\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) )?(?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) (?P<t>\d{2}:\d{2}:\d{2})(?: (?P<y>(?:19|2\d)\d\d)\])?")

FULL_DATE = r"\d{4}-\d{2}-\d{2}[ T_]\d{2}:\d{2}:\d{2}"
# Years are 1900-2999: a line dated year 1 or 9999 is taken as untimed, as times that close to
# datetime's limits would overflow the moment anything adds a second to them.

# Any of the leading forms, without captures: a DFA-only test of which lines can hold a leading
# time, so the four extractions (logscope.parsers.timestamps.leading_time) run on those lines only.
# A line it rejects gets null from them too (same anchored regexes).
ANY_LEADING_TIME = "|".join(re.sub(r"\(\?P<\w+>", "(?:", form) for form in (ISO_FORM, GLOG_FORM, US_FORM, SYSLOG_FORM))

# What a message's body may start with that is read as its time (logscope.parsers.lines' _body_times):
# a leading form, or epoch seconds; capture-free, both anchored.
BODY_TIME_START = ANY_LEADING_TIME + "|" + re.sub(r"\(\?P<\w+>", "(?:", EPOCH_FORM)

# The forms that carry no year (glog; syslog without the year ``dmesg -T`` adds), capture-free: a
# time read from one of them was given a reference year (logscope.parsers.lines reads the year
# from the file's own dated lines instead, where it has some).
YEARLESS_TIME = (re.sub(r"\(\?P<\w+>", "(?:", GLOG_FORM) + "|" + ascii_classes(
    r"^(?:\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) )?[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}(?:$|[^ ]| [^12]| [12][^0-9])"))

# A glog or syslog time anywhere in a line (behind any wrapper), capture-free: with no four-digit
# year beside it, the line's time was given a year that is not its own (a file with no dated line
# takes its modification year; logscope.timeline moves such a file into the job's year).
YEARLESS_TIME_ANYWHERE = ascii_classes(
    r"(?:^|[^\w])[IWEF]\d{4} \d{2}:\d{2}:\d{2}|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} "
    r"\d{2}:\d{2}:\d{2}")

# The two forms most prefix times take, each a whole text (Python logging's asctime, DLLogger's and
# NCCL's datetime), with the strptime format that reads them as ISO_FORM does (a year of 1900-2999,
# a fraction truncated to microseconds: 1-6 digits, or logging's 3 after a comma): one strptime
# each where leading_time runs five extractions (logscope.parsers.timestamps.leading_times).
PLAIN_TIMES = (
    (r"^(?:19|2[0-9])[0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]{1,6}$",
     "%Y-%m-%d %H:%M:%S%.f"),
    (r"^(?:19|2[0-9])[0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9],[0-9]{3}$",
     "%Y-%m-%d %H:%M:%S,%3f"),
)

# A quick look at the start of a file for any full date, to give glog/syslog lines their year.
FULL_DATE_BYTES = rb"(?<!\d)(19[7-9]\d|20\d\d)-(0[1-9]|1[0-2])-([0-2]\d|3[01])[ T_]\d\d:\d\d:\d\d"
# MLPerf's compliance lines (mlcommons/logging, mlperf_logging/mllog/mllog.py: _encode_log writes
# ':::MLLOG ' and the JSON of namespace, time_ms, event_type, key, value, metadata, in that order;
# time_ms is int(time.time() * 1e3), milliseconds since the epoch): a date too, for that same look.
# Only the year is read from it (a UTC clock beside the lines' local ones orders nothing).
MLLOG_TIME_MS_BYTES = rb':::MLLOG \{"namespace": "(?:[^"\\]|\\.)*", "time_ms": (1\d{12})(?!\d)'

__all__ = [
    "ANY_LEADING_TIME",
    "BODY_TIME_START",
    "EPOCH_FORM",
    "FULL_DATE",
    "FULL_DATE_BYTES",
    "GLOG_FORM",
    "ISO_FORM",
    "MLLOG_TIME_MS_BYTES",
    "MONTHS",
    "PLAIN_TIMES",
    "SYSLOG_FORM",
    "US_FORM",
    "YEARLESS_TIME",
    "YEARLESS_TIME_ANYWHERE",
]
