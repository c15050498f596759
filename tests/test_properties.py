"""Property tests: every parser, on any input, never raises and never loses count of a line.

The "real lines" are the public log lines collected in ``../shared/formats.md`` (a fixed subset
of them when that file is not there). Noise, truncation, ``\\r``-glued lines, CRLF, NUL bytes,
invalid UTF-8, byte-order marks and 1 MB lines are mixed in around them.
"""

from __future__ import annotations

import contextlib
import gzip
import html
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import zstandard
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from reading_support import PEAK_KIB

from logscope import ingest
from logscope.analysis import analyze
from logscope.errors import InputError, UsageError
from logscope.ingest import FileRead, Skipped, blocks, discover, read_file
from logscope.lint import lint_script, parse_script
from logscope.parsers.filenames import DEFAULT_PATTERNS, compile_pattern, describe
from logscope.parsers.lines import parse_chunk
from logscope.parsers.prefixes import strip_prefixes
from logscope.parsers.timestamps import leading_time, parse_event_time
from logscope.report.postmortem import render_html, render_markdown
from logscope.textsafe import drop_controls

FORMATS = Path(__file__).resolve().parents[2] / "shared" / "formats.md"
FALLBACK = [  # verbatim from formats.md, for a checkout without ../shared
    "[2026-05-05 06:16:47] node-01:189884:189884 [3] plugin/net.cc:334 NCCL WARN Failed to initialize any NET plugin",
    "node-01:1895902:1895913 [0] NCCL INFO [Rank 0] ncclCommInitRankConfig comm 0x... rank 0 nranks 2 cudaDev 0 "
    "nvmlDev 0 busId XXXX commId 0x... - Init START",
    "liangxianchen-funasr-15wh-train-lxc0-m-0:14054:14825 [3] NCCL INFO comm 0x9bc5a80 rank 11 nranks 16 cudaDev 3 "
    "busId 4e000 - Abort COMPLETE",
    "node-01:1896279:1896279 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x... recvbuff 0x... count 2 datatype 7 op 0 "
    "root 0 comm 0x... [nranks=2] stream 0x...",
    "ip-172-31-12-21:45361:45361 [0] NCCL INFO NET/IB : No device found.",
    "[0] node0:13571:13571 [0] NCCL INFO Bootstrap : Using enp10s0:10.10.7.107<0>",
    "[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, "
    "Timeout(ms)=600000) ran for 600061 milliseconds before timing out.",
    "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=158046, OpType=GATHER, ...",
    "2026-09-18 19:29:24 [rank3]:[E918 19:29:24.436955737 ProcessGroupNCCL.cpp:689] [Rank 3] Watchdog caught "
    "collective operation timeout: ...",
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
    "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
    "W0801 13:23:17.366000 32974 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 33051 closing "
    "signal SIGTERM",
    "E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) "
    "local_rank: 3 (pid: 33054) of binary: /home/ubuntu/pythonn3.11/bin/python3",
    "[default3]:Fatal Python error: Segmentation fault",
    "srun: error: taurusi2031: tasks 10-11: Exited with exit code 1",
    "slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your processes may have been "
    "killed by the cgroup out-of-memory handler.",
    "slurmstepd: error: *** JOB 494583 ON ... CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***",
    "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
    "Duplicate GPU detected : rank 2 and rank 10 both on CUDA device 50000",
]


def _real_lines() -> list[str]:
    if not FORMATS.is_file():
        return FALLBACK
    blocks = re.findall(r"```\n(.*?)```", FORMATS.read_text(encoding="utf-8"), re.S)
    lines = [line for block in blocks for line in block.splitlines()
             if line.strip() and not line.startswith("Src:")]
    return lines or FALLBACK


REAL_LINES = _real_lines()
HOSTILE_BITS = ["<", ">", "&", '"', "'", "</code>", "<script>", "</pre>", "<!--", "&amp;", "]]>", "`", "|", "*"]

real_line = st.sampled_from(REAL_LINES)
# Line text of every kind: printable, control characters (no newline), NUL, surrogates excluded.
any_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=120)
noise_text = st.one_of(
    any_text,
    st.builds(lambda a, b: a + b, st.sampled_from(["INFO ", "step ", "loss=", "  ", "\t", "#", "[", "0: "]), any_text),
)
years = st.integers(min_value=1, max_value=9999)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def physical_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def frame(lines: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"line": list(range(1, len(lines) + 1)), "raw": lines},
                        schema={"line": pl.Int64, "raw": pl.String})


EVENT_KEYS = ("event", "source", "severity", "fields", "host", "pid", "rank", "local_rank", "task", "prefix", "text")


def events_of(lines: list[str]) -> list[tuple[int, tuple[Any, ...]]]:
    """(line number, what the line says) for every event parse_chunk finds in ``lines``."""
    events = parse_chunk(frame(lines), 2026, None).events
    return [(row["line"], tuple(repr(row[k]) for k in EVENT_KEYS)) for row in events.to_dicts()]


@cache
def alone(line: str) -> tuple[tuple[Any, ...], ...]:
    """What one line says when it is parsed on its own."""
    return tuple(e for _, e in events_of([line]))


@cache
def unrecognised(line: str) -> bool:
    return not alone(line)


@contextmanager
def log_file(data: bytes, name: str = "job-1-node1.out") -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        yield path


def read(path: Path) -> FileRead | Skipped:
    files, _ = discover([path])
    assert len(files) == 1
    return read_file(files[0])


def assert_balanced(result: FileRead, data: bytes | None) -> None:
    assert 0 <= result.lines_recognised <= result.lines_read
    if data is not None:
        assert result.lines_read == physical_lines(data)
    lines = result.events["line"]
    if lines.len():
        assert 1 <= lines.min() <= lines.max() <= result.lines_read  # type: ignore[operator]
        assert lines.n_unique() <= result.lines_recognised


# --- bytes -> lines: ingest ------------------------------------------------------------------

line_ending = st.sampled_from([b"\n", b"\r\n", b"\r", b"\n\n", b""])  # "" glues two lines together
byte_piece = st.one_of(
    real_line.map(lambda s: s.encode()),
    real_line.flatmap(lambda s: st.integers(0, len(s)).map(lambda n: s.encode()[:n])),  # truncated
    st.binary(max_size=40),
    st.sampled_from([b"\x00", b"\x00" * 5000, b"\xff\xfe", b"\xef\xbb\xbf", b"\x1f", b"\xe9", b"\x1b[31m", b"\t"]),
    noise_text.map(lambda s: s.encode("utf-8", "surrogatepass")),
)
log_bytes = st.lists(st.tuples(byte_piece, line_ending), max_size=40).map(
    lambda parts: b"".join(p + e for p, e in parts))


@FAST
@given(data=st.one_of(st.binary(max_size=3000), log_bytes),
       chunk=st.sampled_from([16, 97, 4096, ingest.CHUNK_BYTES]))
@example(data=b"\xef\xbb\xbf", chunk=ingest.CHUNK_BYTES)  # a byte-order mark and nothing else
@example(data=b"\xef\xbb\xbf\xef\xbb\xbf", chunk=ingest.CHUNK_BYTES)
@example(data=b"ValueError: x\n\xef\xbb\xbf", chunk=16)  # ... at the start of a later block
@example(data=b"ValueError: x\n" + b"\x00" * 20000 + b"ValueError: y", chunk=4096)  # a hole
@example(data=b"\r\n\r\r\n\n\x1f\t", chunk=16)
@example(data=b"\n\n\n", chunk=16)  # empty lines only: no width to tell a paste's cut by
@example(data=b"x^\t ", chunk=16)  # a zlib header: polars' CSV reader took the block for zlib data
@example(data=b"x^\x96\t", chunk=16)
@example(data=b"ok\n\x28\xb5\x2f\xfd zstd magic at a block's start", chunk=4)
def test_any_bytes_read_without_error_and_every_line_is_counted(data: bytes, chunk: int) -> None:
    saved = blocks.CHUNK_BYTES
    blocks.CHUNK_BYTES = chunk  # small blocks: lines cut at every possible place
    try:
        with log_file(data) as path:
            result = read(path)
    finally:
        blocks.CHUNK_BYTES = saved
    if isinstance(result, Skipped):
        assert result.reason  # skipped, with the reason said
        return
    assert_balanced(result, data)


@SLOW
@given(lines=st.lists(real_line, min_size=1, max_size=30), compression=st.sampled_from(["gz", "zst"]),
       keep=st.floats(0, 1))
def test_cut_archives_keep_what_was_read(lines: list[str], compression: str, keep: float) -> None:
    body = ("\n".join(lines) + "\n").encode()
    blob = gzip.compress(body) if compression == "gz" else zstandard.ZstdCompressor().compress(body)
    cut = blob[: int(len(blob) * keep)]
    with log_file(cut, f"job-1-node1.out.{compression}") as path:
        result = read(path)
    if isinstance(result, Skipped):
        assert "cannot read" in result.reason or "binary" in result.reason
        return
    assert_balanced(result, None)
    assert result.lines_read <= physical_lines(body)
    if len(cut) < len(blob):
        assert any("truncated" in w or "stopped" in w for w in result.warnings) or result.lines_read == 0


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=st.lists(real_line, max_size=5), after=st.lists(real_line, min_size=1, max_size=5),
       size=st.integers(512 * 1024, 1024 * 1024), fill=st.sampled_from([b"x", b"<&>", b"0: ", "é".encode(), b"\t"]),
       newline=st.booleans())
def test_one_megabyte_lines_are_read_and_counted(before: list[str], after: list[str], size: int, fill: bytes,
                                                 newline: bool) -> None:
    def file_with(middle: bytes) -> bytes:
        data = "".join(f"{line}\n" for line in before).encode() + middle + b"\n" + "\n".join(after).encode()
        return data + (b"\n" if newline else b"")

    data = file_with((fill * size)[:size])
    with log_file(data) as path:
        result = read(path)
    with log_file(file_with(fill)) as path:
        short = read(path)
    assert not isinstance(result, Skipped) and not isinstance(short, Skipped), result
    assert_balanced(result, data)

    def others(events: pl.DataFrame) -> list[dict[str, Any]]:  # every line but the long one
        return events.filter(pl.col("line") != len(before) + 1).select("line", "event", "fields").to_dicts()

    assert others(result.events) == others(short.events)  # the long line changes nothing around it


# --- lines -> events: parse_chunk ------------------------------------------------------------


@FAST
@given(lines=st.lists(st.one_of(any_text, real_line), max_size=40), year=years,
       carry=st.none() | st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)))
def test_parse_chunk_never_raises_and_counts_lines(lines: list[str], year: int, carry: datetime | None) -> None:
    result = parse_chunk(frame(lines), year, carry)
    assert 0 <= result.lines_recognised <= len(lines)
    assert result.events["line"].n_unique() == result.lines_recognised
    assert result.events.columns[0] == "line"


@FAST
@given(real=st.lists(real_line, min_size=1, max_size=12), data=st.data())
def test_noise_between_real_lines_changes_no_event(real: list[str], data: st.DataObject) -> None:
    """sqlite-utils' "gaps": unrecognised lines anywhere do not change what the real lines say."""
    noisy: list[str] = []
    for line in real:
        noisy.extend(data.draw(st.lists(noise_text.filter(unrecognised), max_size=3)))
        noisy.append(line)
    noisy.extend(data.draw(st.lists(noise_text.filter(unrecognised), max_size=3)))
    clean_events = [e for _, e in events_of(real)]
    noisy_events = [e for _, e in events_of(noisy)]
    assert noisy_events == clean_events


@FAST
@given(picks=st.lists(st.tuples(real_line, real_line, st.sampled_from(["plain", "cr-glued", "crlf"])),
                      min_size=1, max_size=15),
       seed=st.randoms(use_true_random=False))
def test_interleaved_sources_parse_each_line_as_alone(picks: list[tuple[str, str, str]], seed: Any) -> None:
    """Lines of several nodes/ranks shuffled together, CRLF endings and tqdm-style ``\\r`` redraws
    that glue two lines: each physical line gives exactly what its parts give on their own."""
    seed.shuffle(picks)
    lines, parts = [], []
    for first, second, how in picks:
        if how == "cr-glued":
            lines.append(f"{first}\r{second}")
            parts.append([first, second])
        elif how == "crlf":
            lines.append(first + "\r")  # what a CRLF file's line looks like after the split on \n
            parts.append([first])
        else:
            lines.append(first)
            parts.append([first])
    got: dict[int, list[tuple[Any, ...]]] = {}
    for number, event in events_of(lines):
        got.setdefault(number, []).append(event)
    for number, segments in enumerate(parts, start=1):
        expected = [e for segment in segments for e in alone(segment)]
        assert got.get(number, []) == expected, lines[number - 1]
    assert parse_chunk(frame(lines), 2026, None).lines_recognised == sum(
        1 for segments in parts if any(alone(s) for s in segments))


# --- prefixes and timestamps -----------------------------------------------------------------

prefix = st.one_of(
    st.integers(0, 999999).map(lambda n: f"{n}: "),
    st.integers(0, 999).map(lambda n: f"{n:3d}: "),
    st.integers(0, 99).map(lambda n: f"[{n}] "),
    st.integers(0, 99999).map(lambda n: f"(RayWorkerWrapper pid={n}) "),
    st.integers(0, 99999).map(lambda n: f"(Worker pid={n}, ip=10.0.0.1) "),
    st.integers(0, 64).map(lambda n: f"[default{n}]:"),
    st.integers(0, 4096).map(lambda n: f"[rank{n}]:"),
    st.integers(0, 4096).map(lambda n: f"[rank{n}]: "),
    st.integers(0, 64).map(lambda n: f"[node-{n}:{n % 8}]:"),
    st.integers(0, 64).map(lambda n: f"[host{n}]:"),
    st.integers(0, 64).map(lambda n: f"node-{n}: "),
    st.just("2026-09-18 19:29:24 [rank3]:"),
    st.just("[2026-09-18 19:29:24,123] [rank3]:"),
)


@FAST
@given(raw=st.one_of(any_text, real_line,
                     st.builds(lambda ps, body: "".join(ps) + body, st.lists(prefix, max_size=7),
                               st.one_of(any_text, real_line))))
def test_prefix_stripping_then_readding_gives_back_the_line(raw: str) -> None:
    out = strip_prefixes(pl.DataFrame({"idx": [0], "raw": [raw]}, schema={"idx": pl.UInt32, "raw": pl.String}))
    row = out.row(0, named=True)
    assert (row["prefix"] or "") + row["body"] == raw
    assert row["prefix"] != ""  # no prefix is None, never an empty string


def stamp(value: datetime, form: str) -> str:
    y, mo, d, t = f"{value.year:04d}", f"{value.month:02d}", f"{value.day:02d}", value.strftime("%H:%M:%S")
    month = value.strftime("%b")
    return {
        "iso": f"{y}-{mo}-{d} {t},{value.microsecond // 1000:03d}",
        "bracket": f"[{y}-{mo}-{d} {t}]",
        "t": f"{y}-{mo}-{d}T{t}.{value.microsecond:06d}",
        "underscore": f"{y}-{mo}-{d}_{t}",
        "glog": f"E{mo}{d} {t}.{value.microsecond:06d}",
        "us": f"{mo}/{d}/{y} {t}",
        "syslog": f"{month} {value.day:2d} {t}",
        "dmesg": f"[Wed {month} {value.day:2d} {t} {y}]",
    }[form]


FORMS = ["iso", "bracket", "t", "underscore", "glog", "us", "syslog", "dmesg"]
# Shaped like a timestamp, with any digits: month 13, day 00, hour 25, Feb 30, year 0000...
digits = st.text("0123456789", min_size=1, max_size=4)
stamp_shaped = st.builds(
    lambda y, mo, d, h, mi, s, f, sep: f"{y}-{mo}-{d}{sep}{h}:{mi}:{s}.{f}",
    digits, digits, digits, digits, digits, digits, digits, st.sampled_from([" ", "T", "_", ""]),
) | st.builds(lambda mo, d, rest: f"E{mo}{d} {rest}", digits, digits, any_text) | st.builds(
    lambda m, d, rest: f"{m} {d} {rest}", st.sampled_from(["Jan", "Feb", "Xyz", "feb"]), digits, any_text)


@FAST
@given(texts=st.lists(st.one_of(any_text, stamp_shaped, real_line), min_size=1, max_size=20), year=years)
def test_timestamps_never_raise(texts: list[str], year: int) -> None:
    out = pl.DataFrame({"t": texts}).select(
        leading_time(pl.col("t"), year).alias("lead"), parse_event_time(pl.col("t")).alias("event"))
    assert out.schema["lead"] == pl.Datetime("us") and out.schema["event"] == pl.Datetime("us")


@FAST
@given(value=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
       form=st.sampled_from(FORMS), rest=any_text)
def test_timestamps_of_every_form_read_back(value: datetime, form: str, rest: str) -> None:
    got = pl.select(leading_time(pl.lit(stamp(value, form) + " " + rest), 2024)).item()
    precision = {"iso": 1000, "glog": 1, "t": 1}.get(form)
    expected: datetime | None = value.replace(
        microsecond=value.microsecond // precision * precision if precision else 0)
    plausible = 1900 <= value.year <= 2999
    if form in ("glog", "syslog") or (form == "dmesg" and not plausible):
        expected = expected.replace(year=2024)  # no year (or none plausible): the file's reference year
    elif not plausible:
        expected = None  # year 1 or 9999 is no time: arithmetic on it would overflow
    assert got == expected


# --- file names, job scripts -----------------------------------------------------------------


@FAST
@given(name=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1,
                    max_size=60).filter(lambda n: n not in (".", "..")), pattern=st.text(max_size=20))
@example(name=".zst", pattern="")  # a compression suffix alone: no name is left once it is taken off
@example(name=".gz", pattern="")
def test_file_names_and_patterns_never_raise(name: str, pattern: str) -> None:
    describe(Path(name), DEFAULT_PATTERNS)
    describe(Path("attempt_0") / "3" / name, DEFAULT_PATTERNS)
    with contextlib.suppress(UsageError):  # a bad pattern is a one-line usage error
        compile_pattern(pattern)


script_line = st.one_of(
    any_text,
    st.sampled_from(["#SBATCH --nodes=2", "#SBATCH -N 4", "#SBATCH --ntasks-per-node=8", "#SBATCH -o x-%j-%N.out",
                     "srun torchrun --nnodes=$SLURM_NNODES --node_rank=$SLURM_NODEID train.py \\",
                     "export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)",
                     'echo "unterminated', "cat <<EOF", "EOF", "  --rdzv_backend=c10d \\", "# comment ' quote"]),
)


@FAST
@given(lines=st.lists(script_line, max_size=25))
def test_job_script_parser_never_raises(lines: list[str]) -> None:
    script = parse_script("\n".join(lines), "job.sbatch")
    for problem in lint_script(script):
        assert problem.line >= 1 and problem.code.startswith("LL")


# --- whole pipeline: detectors and reports ---------------------------------------------------

odd_time = st.one_of(
    st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2026, 1, 2)),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.sampled_from([datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59, 999999), datetime(1970, 1, 1)]),
)
timed_line = st.tuples(st.none() | st.tuples(odd_time, st.sampled_from(FORMS)), real_line).map(
    lambda t: (stamp(*t[0]) + " " if t[0] else "") + t[1])


printable_noise = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=80)


@SLOW
@given(files=st.lists(st.lists(st.one_of(timed_line, real_line, printable_noise), min_size=1, max_size=25),
                      min_size=1, max_size=3))
def test_detectors_and_reports_never_fail_on_real_lines_in_any_order(files: list[list[str]]) -> None:
    """Real lines of every kind, shuffled across nodes, with clocks that jump (year 1, year 9999,
    backwards): no detector fails, and both reports render."""
    with tempfile.TemporaryDirectory() as folder:
        for i, lines in enumerate(files):
            (Path(folder) / f"job-7-node{i}.out").write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            analysis = analyze([Path(folder)])
        except InputError as error:
            # only for input with no recognisable line: that is no job log, not a verdict
            assert "no line of a training job's log was recognised" in str(error)
            return
    assert analysis.detector_errors == []
    job = analysis.job
    assert job.lines_read == job.lines_recognised + job.lines_unrecognised
    assert job.lines_read == sum(len(lines) for lines in files)
    assert job.lines_unrecognised >= 0
    render_html(analysis)
    render_markdown(analysis)


# --- hostile text in the HTML report ---------------------------------------------------------

hostile_text = st.lists(st.one_of(st.sampled_from(HOSTILE_BITS), st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\u2028\u2029\x85"), max_size=6)),
    min_size=1, max_size=12).map("".join)
OPEN, CLOSE = "QQZX", "XZQQ"
_ENTITY = re.compile(r"&(?:amp|lt|gt|quot|#x27|#\d+);")


@SLOW
@given(text=hostile_text, how=st.sampled_from([
    "[default1]:ValueError: {}",
    "RuntimeError: {}",
    "Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\nKeyError: {}",
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1333, {}",
    "srun: error: n1: task 0: Exited with exit code 1 {}",
    "slurmstepd: error: *** JOB 1 ON n1 CANCELLED AT 2026-01-01T00:00:01 DUE TO {} ***",
    "[rank0]:[E1206 18:44:12.7 ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600061 milliseconds before timing out. {}",
]))
def test_any_log_text_is_escaped_in_the_html_report(text: str, how: str) -> None:
    assume(text.strip())
    line = how.format(f"{OPEN}{text}{CLOSE}")
    data = f"2026-01-01 00:00:00,000 - INFO - step 1\n{line}\n".encode()
    with log_file(data, "job-9-node1.out") as path:
        analysis = analyze([path.parent])
    page = render_html(analysis)
    spans = re.findall(re.escape(OPEN) + r"(.*?)(?:" + re.escape(CLOSE) + r"|…|$)", page, re.S | re.M)
    assert spans, "the log text should reach the report"
    for span in spans:
        assert "<" not in span and ">" not in span and '"' not in span and "'" not in span, span
        assert "&" not in _ENTITY.sub("", span), span  # every & starts an entity
        assert html.unescape(span) in drop_controls(text)  # escaped, possibly clipped, bidi controls dropped


# --- bidi controls, rich markup, matplotlib math: text stays text (issue 16) -----------------

BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
bidi_text = st.lists(st.one_of(st.sampled_from(list(BIDI_CONTROLS)), st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\u2028\u2029\x85"), max_size=6)),
    min_size=1, max_size=10).map("".join)


@SLOW
@given(text=bidi_text)
def test_bidi_controls_never_reach_any_output(text: str) -> None:
    assume(any(c in BIDI_CONTROLS for c in text))
    from rich.console import Console

    from logscope.report.terminal import render

    data = f"2026-01-01 00:00:00,000 - INFO - step 1\n[default1]:ValueError: {text}\n".encode()
    with log_file(data, "job-9-node1.out") as path:
        analysis = analyze([path.parent])
    console = Console(record=True, width=120, color_system=None)
    console.print(render(analysis))
    outputs = {"html": render_html(analysis), "md": render_markdown(analysis), "terminal": console.export_text(),
               "json": str(analysis.to_json())}
    for name, out in outputs.items():
        assert not any(c in out for c in BIDI_CONTROLS), name


@settings(max_examples=60, deadline=None)
@given(name=st.text(st.sampled_from(list("[]/\\bold red:=ab1 ")), min_size=1, max_size=24))
def test_lint_prints_any_path_as_text(name: str) -> None:
    from rich.console import Console

    from logscope.errors import printable
    from logscope.report.lint_output import text as print_problems

    script = parse_script("#!/bin/bash\n#SBATCH --nodes=2\nsrun torchrun --nnodes $SLURM_NNODES t.py\n",
                          printable(name))
    console = Console(record=True, width=400, color_system=None)
    print_problems(lint_script(script), console)
    assert f"{printable(name)}:3:1: LL004" in console.export_text()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(host=st.text(st.sampled_from(list("$^_{}\\ab1")), min_size=1, max_size=10).map(lambda h: f"n{h}$"))
def test_dollars_in_host_names_are_not_math(host: str) -> None:
    import dataclasses
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_charts import synthetic_analysis

    from logscope.report import charts

    analysis = synthetic_analysis(n_ranks=4, per_node=2, quiet_rank=1)
    events = analysis.view.events.with_columns(pl.col("node").str.replace("node000", host, literal=True))
    odd = dataclasses.replace(analysis, view=dataclasses.replace(analysis.view, events=events))
    assert [c.name for c in charts.render_charts(odd, formats=("png",))] == [
        "swimlane", "cascade", "progress_strip", "last_activity", "failure_curve"]


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])


# --- memory: bounded whatever the content ------------------------------------------------------

_MEMORY_PROBE = PEAK_KIB + """
import sys
from pathlib import Path
from logscope.ingest import blocks, discover, read_file
blocks.CHUNK_BYTES = 1024 * 1024  # several blocks, as a big file has
base = peak_kib()
result = read_file(discover([Path(sys.argv[1])])[0][0])
print(result.lines_read, (peak_kib() - base) // 1024)
"""
# Literals of the catalogue's triggers (logscope/knowledge/messages.toml): one byte, short, long, and a prefix.
TRIGGERS = ["=", "+ ", " : ", "NCCL WARN ", "Error", ": opCount ", "[default0]:", "Traceback"]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.tuples(st.integers(0, 120_000), st.sampled_from(TRIGGERS), st.floats(0, 1)),
                      min_size=1, max_size=60))
def test_memory_is_bounded_whatever_the_line_lengths_and_trigger_density(
        lines: list[tuple[int, str, float]]) -> None:
    # Each trigger hit used to copy its whole line: one line of 80,000 "=" took 6 GB.
    rng = random.Random(len(lines))
    rows = []
    for length, trigger, density in lines:
        parts, size = [], 0
        while size < length:
            part = trigger if rng.random() < density else "x" * rng.randint(1, 40)
            parts.append(part)
            size += len(part)
        rows.append("".join(parts)[:length])
    data = ("\n".join(rows) + "\n").encode()
    with log_file(data) as path:
        out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(path)], capture_output=True, text=True,
                             check=True, timeout=120).stdout.split()
    lines_read, grown_mb = int(out[0]), int(out[1])
    assert lines_read == physical_lines(data)
    assert grown_mb < 40 * len(data) / 1e6 + 150, (grown_mb, len(data))


@given(st.text(max_size=300), st.integers(min_value=1, max_value=200))
def test_shortened_keeps_short_text_and_marks_every_cut(text: str, limit: int) -> None:
    from logscope.textsafe import shortened

    out = shortened(text, limit)
    assert len(out) <= limit
    assert out == text if len(text) <= limit else (out.endswith("…") and text.startswith(out[:-1]))
