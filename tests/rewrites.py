"""Harmless rewrites of a job's log files: what users' tools do to a log before logscope reads it.

Each :class:`Rewrite` turns a job's files (name -> bytes) into the same job as another tool would
have handed it over: quoted in an e-mail or an issue (``> ``), indented in a Markdown code block,
coloured by a terminal, saved with Windows line ends, tagged by a launcher, a log shipper,
docker compose, kubectl or the journal, time-stamped by a logger or by ``ts``, numbered (``cat -n``,
``grep -n``, ``grep -rn``), padded with blanks, stored as Docker's JSON records, HTML-escaped, or
renamed.
None of them changes what the processes printed, so the verdict's category and its root cause
must not change (tests/test_metamorphic.py).

``carries`` names the identity a rewrite's tag itself states (an Open MPI ``[1,R]<stderr>:`` tag
says "rank R printed this"; a ``[defaultL]:`` tag "local rank L"): the verdict may learn that
from the rewritten log, so the test does not hold that part of the root cause to the original's.
``renames``: the rewrite drops the file names, so a host known *only* from a file name is gone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

Files = dict[str, bytes]

_LINE = re.compile(rb"[^\n]*\n|[^\n]+$")


def _lines(data: bytes) -> list[bytes]:
    """The lines of ``data``, each with its newline (the last one without, when it has none)."""
    return _LINE.findall(data)


def _per_line(change: Callable[[bytes], bytes]) -> Callable[[bytes, int], bytes]:
    def apply(data: bytes, _index: int) -> bytes:
        out = []
        for line in _lines(data):
            body, end = (line[:-1], b"\n") if line.endswith(b"\n") else (line, b"")
            out.append(change(body) + end)
        return b"".join(out)

    return apply


def _prefix(tag: bytes) -> Callable[[bytes, int], bytes]:
    return _per_line(lambda body: tag + body)


def _per_file_prefix(make: Callable[[int], bytes], absent: bytes | None = None) -> Callable[[bytes, int], bytes]:
    """Every line of the ``index``-th file gets ``make(index)``; where ``absent`` is given, a file
    whose lines already carry such a tag (the regex ``absent`` matches a line's start) is left as is."""
    def apply(data: bytes, index: int) -> bytes:
        if absent is not None and re.search(rb"(?m)^" + absent, data):
            return data
        return _prefix(make(index))(data, index)

    return apply


_ANSI_WORD = re.compile(rb"(\w+)")


def _colour(body: bytes) -> bytes:
    """An ANSI reset at the line's start, and its first word in bold red (codes inside the line)."""
    return b"\x1b[0m" + _ANSI_WORD.sub(lambda word: b"\x1b[1;31m" + word[1] + b"\x1b[0m", body, count=1)


def _crlf(data: bytes, _index: int) -> bytes:
    return data.replace(b"\n", b"\r\n")


def _grep_numbered(data: bytes, index: int, *, named: bool = False) -> bytes:
    """Each line behind its number (``grep -n``), and its file's name first (``grep -rn``)."""
    name = b"logs/train-%d.out:" % index if named else b""
    return b"".join(name + b"%d:" % (number + 1) + line for number, line in enumerate(_lines(data)))


def _docker_json(data: bytes, _index: int) -> bytes:
    """Each line as Docker's json-file log driver stores it (moby daemon/logger/jsonfilelog)."""
    records = []
    for line in _lines(data):
        body = line[:-1] if line.endswith(b"\n") else line
        record = {"log": body.decode("utf-8", "surrogateescape") + "\n", "stream": "stderr",
                  "time": "2024-05-01T10:00:00.123456789Z"}
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        records.append(text.encode("utf-8", "surrogateescape") + b"\n")
    return b"".join(records)


def _html_escaped(data: bytes, _index: int) -> bytes:
    """The text as a web page's source holds it."""
    return (data.replace(b"&", b"&amp;").replace(b"<", b"&lt;").replace(b">", b"&gt;")
            .replace(b'"', b"&quot;"))


def _numbered(data: bytes, _index: int) -> bytes:
    """Each line behind its number and a tab, as ``cat -n`` and ``nl`` print it."""
    return b"".join(b"%6d\t" % (number + 1) + line for number, line in enumerate(_lines(data)))


@dataclass(frozen=True)
class Rewrite:
    """One harmless rewrite of a job's files."""

    name: str
    content: Callable[[bytes, int], bytes] | None = None  # (file's bytes, file's index) -> bytes
    renames: bool = False
    carries: frozenset[str] = frozenset()  # root-cause fields ("rank", "local_rank", "host") the tag states

    def apply(self, files: Files) -> Files:
        out: Files = {}
        for index, (name, data) in enumerate(sorted(files.items())):
            new_name = f"fragment-{index + 1}.log" if self.renames else name
            out[new_name] = self.content(data, index) if self.content is not None else data
        return out


REWRITES: tuple[Rewrite, ...] = (
    Rewrite("quote", _prefix(b"> ")),
    Rewrite("quote-twice", _prefix(b"> > ")),
    Rewrite("indent", _prefix(b"    ")),
    Rewrite("ansi", _per_line(_colour)),
    Rewrite("crlf", _crlf),
    Rewrite("shipper-tag", _per_file_prefix(lambda i: b"job.node%d [stderr] " % (i + 1))),
    Rewrite("mpi-tag", _per_file_prefix(lambda i: b"[1,%d]<stderr>:" % i, rb"\[\d+,\d+\]<std"),
            carries=frozenset({"rank", "local_rank"})),
    Rewrite("srun-label", _per_file_prefix(lambda i: b"%d: " % i, rb" *\d{1,6}: ")),
    Rewrite("torchrun-tee", _per_file_prefix(lambda i: b"[default%d]:" % i, rb"\[default\d+\]:"),
            carries=frozenset({"rank", "local_rank"})),
    Rewrite("time-prefix", _prefix(b"2024-05-01 10:00:00,123 ")),
    Rewrite("iso-time-prefix", _prefix(b"2024-05-01T10:00:00.123+02:00 ")),
    Rewrite("renamed", renames=True),
    # beyond the list of issue 34: other tools a log goes through
    Rewrite("line-numbers", _numbered),
    Rewrite("compose-tag", _prefix(b"trainer-1  | ")),  # docker compose logs
    Rewrite("python-logging", _prefix(b"INFO:root:")),  # logging.basicConfig's default format
    Rewrite("epoch-stamp", _prefix(b"1714557600.123 ")),  # moreutils' ts %.s
    Rewrite("yearless-stamp", _prefix(b"Dec 06 10:00:00 ")),  # moreutils' ts
    Rewrite("trailing-blanks", _per_line(lambda body: body + b"   ")),  # a terminal's or an editor's padding
    Rewrite("grep-n", _grep_numbered),
    Rewrite("grep-rn", lambda data, index: _grep_numbered(data, index, named=True)),
    Rewrite("kubectl-prefix", _prefix(b"[pod/trainer-0/main] ")),  # kubectl logs --prefix
    Rewrite("journald", _prefix(b"Dec 06 10:00:00 login01 bash[4242]: ")),  # journalctl's short format
    Rewrite("nbsp-indent", _prefix("\u00a0\u00a0".encode())),  # indentation copied from a web page
    Rewrite("docker-json", _docker_json),
    Rewrite("html-escaped", _html_escaped),
    Rewrite("parallel-tag", _per_file_prefix(lambda i: b"attempt-%d\t" % (i + 1))),  # GNU parallel --tag
    Rewrite("syslog-5424", _prefix(b"<134>1 2024-05-01T10:00:00.000Z login01 train 4242 - - ")),  # RFC 5424
    Rewrite("box-quote", _prefix("\u2502 ".encode())),  # a box-drawing bar, as a chat client quotes
    Rewrite("clock-only", _prefix(b"[10:00:00] ")),  # a time of day without a date (ts '[%H:%M:%S]')
)

BY_NAME = {r.name: r for r in REWRITES}
