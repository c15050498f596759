"""Launcher prefixes: which ones launchers stack in front of a line, and the regexes that read them.

Launchers stack prefixes in front of what a process printed (formats.md, "Parser traps" 1):

====================================  ========================================  =================
prefix                                who adds it                               recorded as
====================================  ========================================  =================
``12: `` (padded: `` 3: ``)            ``srun --label``                          ``task``
``[0] ``                              mpirun-style task label                   ``task``
``(RayWorkerWrapper pid=4009) ``      Ray actor output                          ``pid``
``[default3]:``                       torchrun ``--tee 3`` (role ``default``)   ``local_rank``
``[host1:3]:`` / ``[host13]:``        torchrun ``--role host1:`` / templates    ``local_rank``,
                                                                                ``prefix_host``
``[rank3]:``                          PyTorch's own rank prefix                 ``rank``
``node-7: `` / ``10.0.0.7: ``          pdsh                                      ``prefix_host``
``[1,3]<stderr>:``                    Open MPI ``--tag-output``                 ``task``
``(Actor pid=4009, ip=10.0.1.75) ``   Ray actor output                          ``pid``, ``prefix_host``
``[host:pid:0:tid] ``                 UCX's own head                            ``prefix_host``, ``pid``
``[trainer0|0]:``                     a launcher's role rank and local rank     ``local_rank``
``2025-08-12 09:37:03.46 node >> ``   a log shipper's time and host             ``app_time``, ``prefix_host``
``2026-09-18 19:29:24 [rank3]:``      an app timestamp before a rank tag        ``app_time``
====================================  ========================================  =================

The prefixes are peeled one at a time, outermost first, by one anchored regex of alternatives
(:data:`ONE_PREFIX`), at most :data:`MAX_PREFIXES` times; :data:`PREFIX_STACK` matches the whole
stack at once. The regexes are plain text, no polars: :mod:`logscope.parsers.prefixes` runs them in
polars on a chunk's lines, and a read worker's byte pass (which never imports polars) asks
:func:`stack_has_time` of the heads of NCCL COLL lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from logscope.parsers.regex_ascii import ascii_classes

MAX_PREFIXES = 8

# A time that a logger, a log shipper or a launcher wrote in front of a line, capture-free (the
# datetime is read from its text by logscope.parsers.timestamps, whose forms are those of
# logscope.parsers.time_forms): ISO 8601 and python logging's asctime ("T", "_" or a space between
# date and time, "," or "." before the fraction, a zone or none, bracketed or not),
# HF/accelerate's "%m/%d/%Y %H:%M:%S", syslog and ``dmesg -T`` ("Dec  2 15:12:00", "[Wed Dec  2
# 15:12:00 2026]"), seconds since the epoch ("1714557600.123"). glog's head ("E0801 13:23:20.000000
# 32974 file.py:874] ") is no wrapper: its level is part of the message (an error line of a C++
# logger), and its time is read where the line's body starts with it.
TIME_TEXT = (
    r"\[?(?:19|2\d)\d\d-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?: ?(?:Z|[+-]\d\d:?\d\d|UTC|GMT))?\]?"
    r"|\d\d/\d\d/(?:19|2\d)\d\d \d\d:\d\d:\d\d"
    r"|(?:\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) )?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} "
    r"\d\d:\d\d:\d\d(?: (?:19|2\d)\d\d\])?"
    # seconds since the epoch (moreutils' `ts %.s`, loggers' `%(created)f`), 2017-07 to 2033-05:
    # ten digits, a fraction or not
    r"|1[5-9]\d{8}(?:\.\d{1,9})?"
)
# A logger's level, alone or leading a bracketed tag ("INFO", "[WARNING]", "[INFO|trainer.py:907]").
_LEVEL = r"(?:DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL|TRACE)"

# One prefix, anchored. Alternatives are tried left to right at position 0 (leftmost-first), so
# the specific launcher forms come before the generic ones. ``whole`` is the matched prefix.
#
# Launchers' prefixes say who printed the line (recorded: task, rank, local rank, pid, host); the
# generic wrappers after them say nothing of it, and are peeled so that the prefixes behind them
# are found: a time (recorded as the line's time), a logger's level, a separator, a quote mark
# (an e-mail or an issue: "> "), indentation (a Markdown code block), a log shipper's stream tag
# ("job.node1 [stderr] ", "<stderr>:"). None of them decides whether a line is a message: the
# patterns look for their message anywhere in the line (logscope.parsers.classify).
_HOSTNAME = r"[A-Za-z][A-Za-z0-9-]*[0-9][A-Za-z0-9.-]*"
_ALTERNATIVES = (
    r"[ \t]*(?P<task>\d{1,6}): "  # srun --label
    r"|\[(?P<task_b>\d{1,6})\] "  # mpirun-style label "[0] "
    r"|[ \t]*\d{1,9}\t"  # a line-number column: `cat -n`, `nl`, an editor's or a pager's numbers
    r"|\[\d{1,6},(?P<mpi_rank>\d{1,6})\]<std(?:out|err)>: ?"  # Open MPI --tag-output "[1,3]<stderr>:"
    r"|\((?:[A-Za-z_][\w]*) pid=(?P<ray_pid>\d+)(?:, ip=(?P<ray_ip>[^)]*))?\) ?"  # Ray
    r"|\[default(?P<tee_local>\d+)\]:"  # torchrun --tee, default role
    r"|\[rank(?P<rank>\d+)\]: ?"  # PyTorch rank prefix (torch>=2.2 adds a space before tracebacks)
    # UCX's own head "[host:pid:0:tid]" (its "Caught signal" reports)
    r"|\[(?P<ucx_host>[A-Za-z][\w.-]*):(?P<ucx_pid>\d+) *:\d+:\d+\] +"
    # --role host: / templates; "[trainer0|0]:" is role rank 0, local rank 0
    r"|\[(?P<role>[A-Za-z][A-Za-z0-9_.-]*?)(?:(?P<role_colon>:)(?P<role_local_c>\d+)\]:?"
    r"|(?P<role_local>\d+)(?:\|(?P<role_local_b>\d+))?\]:)"
    # a log shipper's "<time> <host> >> " in front of what the host wrote
    r"|(?:(?P<ship_time>" + TIME_TEXT + r") )?(?P<ship_host>[A-Za-z][\w.-]*) >> "
    r"|(?P<time>" + TIME_TEXT + r")(?::?[ \t]+|:)"  # a time
    r"|(?:[\w.@/-]+[ \t]+)?[\[<]std(?:out|err)[\]>]:?[ \t]*"  # a stream tag: "job.node1 [stderr] ", "<stderr>:"
    r"|std(?:out|err) [FP] "  # a Kubernetes node's CRI log: "<time> stderr F <line>" (kubelet's logs.go)
    r"|[A-Za-z][\w.-]*[ \t]+\|[ \t]+"  # a name and a pipe: `docker compose logs` ("trainer-1  | ")
    r"|\[" + _LEVEL + r"(?:[|:,][^\]\[]{0,80})?\](?:[ \t]*[:|-])?[ \t]*"  # "[INFO|trainer.py:907] "
    r"|" + _LEVEL + r":[\w.]*:[ \t]*"  # python logging's default format: "INFO:root:", "WARNING:torch.distributed.run:"
    r"|" + _LEVEL + r"(?:[ \t]*[:|-])?[ \t]+"  # a logger's level: "INFO - ", "WARNING: "
    r"|(?:-|\||>>|::?)[ \t]+"  # a separator
    r"|>[ \t]?"  # a quote mark
    r"|[ \t]+"  # indentation
    r"|(?P<pdsh>" + _HOSTNAME + r"|\d{1,3}(?:\.\d{1,3}){3}): "  # pdsh (a host name or an address)
)
ONE_PREFIX = ascii_classes(r"^(?P<whole>" + _ALTERNATIVES + r")")
# A time as the stack's time alternative takes it, capture-free: what a stack without its times
# keeps (logscope.parsers.prefixes.timeless) is who wrote the line, the same on each of its lines.
TIME_LEAD = ascii_classes(r"(?:" + TIME_TEXT + r")(?::?[ \t]+|:)")
# The whole stack in one match. Leftmost-first matching of a repeated group takes, at each
# repetition, the alternative (and the length) the one-at-a-time peeling takes, since every later
# repetition is optional: the span is exactly the prefixes that peeling removes. No capture
# groups, so the regex engine finds the span with its DFA alone. Both read \d and \w as ASCII
# (logscope.parsers.regex_ascii): with Unicode classes this one took 17-36 ms to compile.
PREFIX_STACK = ascii_classes(
    r"^(?:" + re.sub(r"\(\?P<\w+>", "(?:", _ALTERNATIVES) + r"){1," + str(MAX_PREFIXES) + r"}")


# What starts a process's own output on a line, whatever a tool put in front of it: a launcher's
# tag that says who printed it, a logger's time, NCCL's host:pid:tid head, glog's head. A tool
# that wrapped every line of a file in a head the stack does not know (a line number, a file name
# and a line number from `grep -n`, a pod or a unit name) leaves the same head in front of these on
# every line: logscope.parsers.prefixes learns it per file from HEAD_BEFORE_OWN_OUTPUT.
# (Not an srun label: "Epoch " in front of "1: 100%|" on every line of a progress log is no wrapper.)
OWN_OUTPUT = (
    r"\[default\d+\]:|\[rank\d+\]:|\[\d{1,6},\d{1,6}\]<std(?:out|err)>:"
    r"|\[[A-Za-z][\w.-]*:\d+\]:"  # torchrun --role host:
    r"|\[[A-Za-z][\w.-]*:\d+ *:\d+:\d+\] "  # UCX's head
    r"|\([A-Za-z_]\w* pid=\d+"  # Ray's actor tag
    r"|(?:" + TIME_TEXT + r")(?::?[ \t]+|:)"
    r"|(?:" + _HOSTNAME + r"|\d{1,3}(?:\.\d{1,3}){3}): "  # pdsh
    r"|[A-Za-z][\w.-]*:\d+:\d+ (?:\[\d+\] )?\S"  # NCCL's host:pid:tid
    r"|\[?[IWEF]\d{3,4} \d\d:\d\d:\d\d"  # glog
)
WRAPPER_HEAD_MAX = 48  # the longest head a tool's wrapper is taken to be
# the head ends where a word cannot go on: "g" is no head of "gpu0:100:101 [0] NCCL ..."
HEAD_BEFORE_OWN_OUTPUT = ascii_classes(
    r"^(.{0," + str(WRAPPER_HEAD_MAX - 1) + r"}?[^\w])(?:" + OWN_OUTPUT + r")")
# A line that starts with a process's own output has no head in front of it ("gpu-" is no head of
# "gpu-node03:51430:51430 [3] NCCL ...", although NCCL's host:pid:tid head matches behind it).
STARTS_WITH_OWN_OUTPUT = ascii_classes(r"^(?:" + OWN_OUTPUT + r")")
# A head in front of an srun label counts where it is more than words ("123:" of `grep -n` in
# front of "7: "; not "Epoch " in front of "1: 100%|").
HEAD_BEFORE_TASK_LABEL = ascii_classes(r"^(.{0," + str(WRAPPER_HEAD_MAX - 1) + r"}?[^\w])[ \t]*\d{1,6}: ")
WORDS_ONLY = r"^[A-Za-z \t]*$"
# Numbered lines (`grep -n`, `cat -n`, an editor's numbers): a number in front of each line, one
# more than the line above's.
LINE_NUMBER = ascii_classes(r"^[ \t]*(\d{1,9})[:\t-]")


def stack_has_time(stack: str) -> bool:
    """Whether a stack of prefixes (a :data:`PREFIX_STACK` match) holds a time (``time`` or
    ``ship_time``): peeled as :func:`logscope.parsers.prefixes.prefix_fields` peels it, whose
    ``p_time`` is then not null. In Python's ``re``, for text of printable ASCII
    (:func:`logscope.parsers.regex_ascii.plain_text`), which both engines read alike."""
    one = _one_prefix()
    for _ in range(MAX_PREFIXES):
        found = one(stack)
        if found is None or not found.group("whole"):
            return False
        if found.group("time") is not None or found.group("ship_time") is not None:
            return True
        stack = stack[len(found.group("whole")):]
    return False


@cache
def _one_prefix() -> Callable[[str], re.Match[str] | None]:
    return re.compile(ONE_PREFIX).match


__all__ = ["HEAD_BEFORE_OWN_OUTPUT", "HEAD_BEFORE_TASK_LABEL", "LINE_NUMBER", "MAX_PREFIXES", "ONE_PREFIX",
           "PREFIX_STACK", "STARTS_WITH_OWN_OUTPUT", "TIME_LEAD", "TIME_TEXT", "WORDS_ONLY", "WRAPPER_HEAD_MAX",
           "stack_has_time"]
