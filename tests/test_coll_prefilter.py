"""The compiled COLL scanner gives what the polars path gives.

``logscope.ingest.coll_prefilter`` drops, from a big block's bytes, the NCCL COLL lines the thinning
would drop (``_collscan.c`` finds and groups them, ``coll_groups.group_keys`` checks the groups).
The polars path (``coll_aside.coll_surplus``) is the reference: a file read with the scanner and
without it has the same line counts, warnings and events, whatever its lines hold.
"""

from __future__ import annotations

import array
import random
import shutil
import sysconfig
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reading_support import assert_same_reads, coll_heavy_log, jobsim, read_without_setting_aside, without_repeats

from logscope.ingest import FileRead, blocks, coll_prefilter, compiled, discover, read_file, reading
from logscope.ingest.line_frames import lines_frame
from logscope.ingest.scanning import scan_file
from logscope.limits import WRAP_MAX_LINES

needs_scanner = pytest.mark.skipif(not compiled.COMPILED, reason="the compiled scanner is not built")


def test_the_scanner_is_built_where_a_compiler_is() -> None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}): logscope reads with polars alone")
    assert compiled.COMPILED, "a C compiler is here, yet logscope.ingest._collscan was not built or not loaded"


def read_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FileRead, FileRead, int]:
    """The file read with the scanner and without it, and how many lines the scanner set aside.
    When a read worker's byte pass takes the file whole, what it kept, parsed here, must read as
    the scanner's read too."""
    without_repeats(monkeypatch)
    source = discover([path])[0][0]
    aside = 0
    reduce_block = coll_prefilter.reduce_block

    def counted(block: bytes, first_line: int, controls: blocks.Controls) -> coll_prefilter.Reduced | None:
        nonlocal aside
        got = reduce_block(block, first_line, controls)
        aside += 0 if got is None else got.set_aside
        return got

    with monkeypatch.context() as patch:
        patch.setattr(reading, "reduce_block", counted)
        fast = read_file(source)
    scanned = scan_file(source)
    if scanned is not None:
        assert_same_reads([fast], list(reading.read_in_order([scanned])))
    with monkeypatch.context() as patch:
        patch.setattr(compiled, "COMPILED", False)
        plain = read_file(source)
    assert isinstance(fast, FileRead) and isinstance(plain, FileRead)
    return fast, plain, aside


@needs_scanner
def test_coll_lines_behind_other_scripts_read_the_same_with_the_scanner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Letters of two bytes before NCCL's own timestamp and in the operation's line: the heads are
    # cut in bytes (polars 2.2's str.find counts characters, 2.1's bytes: the offsets are bytes).
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    line = "{front}gpu0:100:101 [0] NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f count 9 comm 0x55aa01 [nranks=8]"
    rows = [line.format(front="\u00e9[2026-05-05 06:16:47] " if n % 7 == 3 else "\u00fc " if n % 11 == 5 else "", n=n)
            for n in range(6500)]
    path = tmp_path / "coll-1-gpu0.out"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    fast, plain, aside = read_both_ways(path, monkeypatch)
    assert_same_reads([plain], [fast])
    assert aside > 0


@needs_scanner
@pytest.mark.parametrize("chunk", [1024 * 1024, 4 * 1024 * 1024])
def test_odd_coll_lines_read_the_same_with_the_scanner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    # Lines that look like COLL lines but are not (no pointer, not hex, glued, UTF-8 in odd places,
    # a timestamp where the pattern does not read one) amid many real ones, in blocks of several sizes.
    monkeypatch.setattr(blocks, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    fast, plain, aside = read_both_ways(coll_heavy_log(tmp_path / "coll-1-gpu0.out", 40000), monkeypatch)
    assert_same_reads([plain], [fast])
    assert aside > 10000  # the scanner did the work (a third of the lines), not the polars path after it


@needs_scanner
def test_coll_lines_with_nccl_timestamps_read_the_same_with_the_scanner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every COLL line has its own time (NCCL_DEBUG_TIMESTAMP_LEVELS=ALL), untimed events amid them
    # take their times from them: the lines that give those times must stay.
    sim = jobsim()
    sim.write_job(sim.JobSpec(scenario="crash-cascade", nodes=2, coll=True, nccl_timestamps=True, steps=600), tmp_path)
    for path in tmp_path.iterdir():
        lines = path.read_text().splitlines()
        path.write_text("\n".join(f"{line}\nValueError: odd sample {n}" if n % 500 == 250 else line
                                  for n, line in enumerate(lines)) + "\n")
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 4 * 1024 * 1024)  # a file is one block of 10,000 lines
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    for path in sorted(tmp_path.iterdir()):
        fast, plain, aside = read_both_ways(path, monkeypatch)
        assert_same_reads([plain], [fast])
        assert aside > fast.lines_read // 2


@needs_scanner
@pytest.mark.parametrize("stamp", ["[2026-05-05 06:16: 43] ", "[2026-05-05 06:1\u00e96:43] ", "[2026-02-30 06:16:43] ",
                                   "[2026-05-05 24:16:43] ", "[2026-05-05 06:16:43.1234567890] ",
                                   "[2026-05-05 06:16:43 UTC] "])
def test_a_coll_line_whose_stamp_reads_as_no_time_is_never_set_aside(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stamp: str) -> None:
    # NCCL's stamp is left out of the grouping (one group per process and communicator, not per
    # second), so a group may hold a line whose stamp is damaged (a byte lost or changed in a
    # crash) and reads as no time. Were it set aside first or last of a run, the untimed events
    # around would take their times from it, that is from a line further on: it stays (both ways).
    rows = []
    for n in range(8000):
        second = 10 + n // 200
        head = f"[2026-05-05 06:16:{second:02d}] " if n % 250 else stamp  # after the untimed line
        if n % 250 == 0:
            rows.append("ValueError: boom")  # untimed: its time from the lines around it
        rows.append(f"[default0]:{head}gpu0:100:101 [0] NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f count 9 "
                    "comm 0x55aa01 [nranks=8]")
    path = tmp_path / "coll-1-gpu0.out"
    path.write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    truth = read_without_setting_aside(path, monkeypatch)
    fast, plain, aside = read_both_ways(path, monkeypatch)
    assert aside > 6000
    assert_same_reads([truth], [plain])
    assert_same_reads([truth], [fast])


# Pieces of lines: COLL lines of a few processes and communicators, with and without NCCL's own
# timestamp and launcher prefixes, and what can break a byte-level reading of them.
PROCESSES = ["gpu0:100:101 [0]", "gpu1:200:201 [1]", "gpu0:100:102 [0]", "n-é:300:301 [2]", "gpu0:0100:101 [0]"]
COMMS = ["0x55aa01 [nranks=8]", "0x55aa02", "(nil) [nranks=2]", "0x55aa0123456789abcdef0123", "zz", "0x5\u00e9"]
FRONTS = ["", "[default0]:", "3: ", "[2026-05-05 06:16:47] ", "[default1]:[2026-05-05 06:16:4{s}] ",
          "2026-09-18 19:29:2{s} [rank3]:", "\ufeff", "x"]
BREAKS = ["", "", "", "", "\r", "\x1f", "\0", "é", " comm 0x1", ": opCount 3 ", "\r\n"]
OTHERS = ["ValueError: boom", "", "   ", "[rank0]: Traceback (most recent call last):",
          "2026-11-03 14:00:0{s},532 - INFO - iteration 5/ 100 | lm loss: 2.5E+00 |", "x" * 5000]


@st.composite
def coll_block(draw: st.DrawFn, lines: int = WRAP_MAX_LINES + 1500) -> str:
    """A block of more than WRAP_MAX_LINES lines (``lines`` of them), from a drawn set of line
    templates."""
    templates = draw(st.lists(st.tuples(
        st.sampled_from(FRONTS), st.sampled_from(PROCESSES), st.sampled_from(["AllReduce", "Broadcast", "All Reduce"]),
        st.sampled_from(["{n:x} ", "{n} ", "zz ", "{n:x}"]), st.sampled_from(COMMS), st.sampled_from(BREAKS),
        st.integers(0, 3)), min_size=1, max_size=12))
    others = draw(st.lists(st.sampled_from(OTHERS), max_size=4))
    seed = draw(st.integers(0, 2**16))
    rng = random.Random(seed)
    rows = []
    for n in range(lines):
        if others and rng.random() < 0.05:
            rows.append(rng.choice(others).format(s=n % 10))
            continue
        front, process, op, count, comm, brk, where = rng.choice(templates)
        line = (f"{front.format(s=n // 700 % 10)}{process} NCCL INFO {op}: opCount {count.format(n=n)}sendbuff 0x7f "
                f"count 9 comm {comm}")
        cut = len(line) * where // 4
        rows.append(line[:cut] + brk + line[cut:])
    ending = draw(st.sampled_from(["\n", "", "\n\n"]))
    return "\n".join(rows) + ending


@needs_scanner
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(text=coll_block())
def test_any_block_reads_the_same_with_the_scanner(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "coll-1-gpu0.out"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        for chunk in (256 * 1024, 32 * 1024 * 1024):
            monkeypatch.setattr(blocks, "CHUNK_BYTES", chunk)
            fast, plain, _ = read_both_ways(path, monkeypatch)
            assert_same_reads([plain], [fast])


@needs_scanner
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(text=coll_block(lines=3 * (WRAP_MAX_LINES + 800)))
def test_any_file_of_several_blocks_reads_the_same_with_the_scanner(monkeypatch: pytest.MonkeyPatch,
                                                                   text: str) -> None:
    # Three blocks each of which the scanner reduces: once a read worker's byte pass has scanned
    # them all, it drops what each kept of a group that the others make surplus (those of its
    # coll_prefilter.drop_surplus_across).
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    data = text.encode("utf-8", "surrogatepass")
    monkeypatch.setattr(blocks, "CHUNK_BYTES", len(data) // 3 + 1)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "coll-1-gpu0.out"
        path.write_bytes(data)
        fast, plain, _ = read_both_ways(path, monkeypatch)
        assert_same_reads([plain], [fast])


@needs_scanner
@pytest.mark.parametrize("text", [b"", b"a", b"a\n", b"a\n\nb", b"\n\n\n", b"a\r\nb\rc\n", "é\n\n".encode() * 3])
def test_the_scanner_counts_the_lines_the_reader_frames(text: bytes) -> None:
    from logscope.ingest import _collscan

    lines, pairs, groups = _collscan.scan(text, True, 4096)
    assert lines == (lines_frame(text, 0).height if text else 0)
    assert pairs == b"" and groups == []


@pytest.mark.parametrize("text", [b"", b"plain", b"a\rb", b"x" * 40 + b"\x1f", b"\0", b"\r\0\x1f" + b"y" * 33,
                                  b"\x1b[0m", b"z" * 40 + b"\x1b", b"\x1b" + b"w" * 17 + b"\r"])
def test_control_bytes_are_found_the_same_either_way(monkeypatch: pytest.MonkeyPatch, text: bytes) -> None:
    found = blocks.control_bytes(text)
    monkeypatch.setattr(compiled, "COMPILED", False)
    assert blocks.control_bytes(text) == found == (b"\0" in text, b"\r" in text, b"\x1f" in text, b"\x1b" in text)


@needs_scanner
def test_the_scanner_groups_no_more_than_its_table_holds() -> None:
    # A block with more distinct (head, comm) groups than MAX_GROUPS: the lines of the further
    # groups are left to polars (not in the pairs), never merged into another group.
    from logscope.ingest import _collscan

    text = "".join(f"h:1:1 [0] NCCL INFO AllReduce: opCount 1 comm 0x{n:x}\n" for n in range(70000)).encode()
    lines, pairs, groups = _collscan.scan(text, False, 4096)
    numbers = array.array("I", pairs)
    assert lines == 70000 and len(groups) == 65536
    assert list(numbers[0::4]) == list(range(65536)) and list(numbers[1::4]) == list(range(65536))


@needs_scanner
@pytest.mark.parametrize("process", ["gpu0:100:101 [0]: opCount", "gpu0:100:101 [0]: opCount x", "gpu0:1 [0]: opCoun"])
def test_an_opcount_just_before_nccl_info_is_seen_either_way(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, process: str) -> None:
    # The first ": opCount " of a COLL line follows " NCCL INFO ". One whose last byte is the space
    # that starts " NCCL INFO " stands before it: no COLL line (the first two heads); one byte short
    # of that, the line is one (the third). The scanner looks for it only up to that space.
    from logscope.ingest import _collscan

    rows = [f"{process} NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f comm 0x55aa01 [nranks=8]"
            for n in range(WRAP_MAX_LINES + 300)]
    _, pairs, _ = _collscan.scan(rows[0].encode(), False, 4096)
    assert (pairs != b"") == process.endswith("opCoun")
    path = tmp_path / "coll-1-gpu0.out"
    path.write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    fast, plain, _ = read_both_ways(path, monkeypatch)
    assert_same_reads([plain], [fast])


@needs_scanner
def test_the_scanner_refuses_pairs_that_do_not_fit_the_block() -> None:
    from logscope.ingest import _collscan

    coll = b"h:1:1 [0] NCCL INFO AllReduce: opCount 1 comm 0x1"
    text = coll + b"\n" + coll + b"\nplain\n" + coll + b"\n" + coll
    lines, pairs, _ = _collscan.scan(text, False, 4096)
    # Each COLL line: its index, its group, and its span (the '\n' left out; the last line has none).
    starts = [0, len(coll) + 1, 2 * len(coll) + 8, 3 * len(coll) + 9]
    fields = [[n, 0, start, start + len(coll)] for n, start in zip([0, 1, 3, 4], starts, strict=True)]
    assert lines == 5 and list(array.array("I", pairs)) == [f for pair in fields for f in pair]
    merged, timed = array.array("i", [0]).tobytes(), b"\0"
    # The first and the last COLL line stay; the two between are stepped over by their spans.
    assert _collscan.reduce(text, lines, pairs, merged, timed, 1, 1, 40) == (
        b"41\x1f" + coll + b"\n43\x1fplain\n45\x1f" + coll, 3, 2)
    assert _collscan.reduce(text, lines, pairs, merged, timed, 2, 2, 40) == (b"", 5, 0)  # nothing dropped

    def changed(pair: int, field: int, value: int) -> bytes:
        numbers = array.array("I", pairs)
        numbers[4 * pair + field] = value
        return numbers.tobytes()

    swapped = array.array("I", fields[0] + fields[2] + fields[1] + fields[3]).tobytes()
    for bad_pairs in [swapped, pairs[:-1],
                      changed(1, 2, starts[1] + 1),  # a span that starts inside a line
                      changed(1, 3, starts[1] + len(coll) - 1),  # one that ends before its line's end
                      changed(1, 3, starts[2] - 1),  # one that hides a line break (and "plain")
                      changed(2, 2, starts[1] + len(coll)),  # one that starts where the one before ends
                      changed(3, 3, len(text) + 1),  # one past the block
                      changed(2, 0, 2)]:  # a line index the lines between do not come to
        with pytest.raises(ValueError):
            _collscan.reduce(text, lines, bad_pairs, merged, timed, 1, 1, 40)
    for bad in [(text, lines, pairs, merged, b""), (text, 4, pairs, merged, timed),
                (text[: len(text) // 3], lines, pairs, merged, timed)]:
        with pytest.raises(ValueError):
            _collscan.reduce(*bad, 1, 1, 0)


@needs_scanner
def test_the_scanner_drops_across_blocks_only_what_fits_them() -> None:
    from logscope.ingest import _collscan

    line = b"h:1:1 [0] NCCL INFO AllReduce: opCount 1 comm 0x1\n"
    text = line * 3
    lines, pairs, _ = _collscan.scan(text, False, 4096)
    merged, timed = array.array("i", [0]).tobytes(), b"\0"
    kept, _, _, coll_lines, _ = _collscan.reduce(text, lines, pairs, merged, timed, 1, 1, 40, True)
    assert kept == b"41\x1f" + line + b"43\x1f" + line
    everything, nothing = array.array("q", [0, 9]).tobytes(), array.array("q", [0, 0]).tobytes()
    assert _collscan.drop_across([kept, kept], [coll_lines, coll_lines], [everything, nothing]) == \
        [(b"", 2), (kept, 0)]
    out_of_range = array.array("I", [0, 1, 0, len(kept) + 1]).tobytes()
    backwards = array.array("I", [0, 1, 4, 4, 0, 1, 0, 4]).tobytes()
    for bad in [([kept], [coll_lines], []), ([kept], [coll_lines], [everything[:-1]]),
                ([kept], [coll_lines[:-1]], [everything]), ([kept], [out_of_range], [everything]),
                ([kept], [backwards], [everything]), ([kept], [coll_lines], [b""])]:
        with pytest.raises(ValueError):
            _collscan.drop_across(*bad)


@pytest.mark.parametrize("use_scanner", [False, pytest.param(True, marks=needs_scanner)])
def test_a_character_cut_by_the_byte_windows_is_no_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_scanner: bool) -> None:
    # The 20 bytes read after "opCount " and after "comm " end inside "é" here. polars 2 raises on
    # such a slice cast to text (it gave null before): the whole read stopped with a traceback.
    op_cut = "sendbuff 0x7f abcé comm 0x55aa01 [nranks=8]"
    comm_cut = "comm 0x55aa01 [nranks=8]é"
    rows = [f"gpu0:100:101 [0] NCCL INFO AllReduce: opCount {n:x} {op_cut if n % 2 else comm_cut}"
            for n in range(WRAP_MAX_LINES + 100)]
    path = tmp_path / "coll-1-gpu0.out"
    path.write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    monkeypatch.setattr(compiled, "COMPILED", use_scanner and compiled.COMPILED)
    read = read_file(discover([path])[0][0])
    assert isinstance(read, FileRead) and read.lines_read == len(rows) == read.lines_recognised
    assert set(read.events["event"]) == {"nccl_coll"} and read.events.height < 300


@needs_scanner
def test_the_scanner_leaves_nccls_own_timestamp_out_of_a_group() -> None:
    # NCCL_DEBUG_TIMESTAMP_LEVELS: a new head every second. The stamp is left out of the group
    # (handed on as "[0000-00-00] ", where coll_aside splits the head as at the real one); "]"
    # without a space after it ends no stamp.
    from logscope.ingest import _collscan

    rest = "gpu0:1:2 [0] NCCL INFO AllReduce: opCount 5 comm 0x1 [nranks=2]"
    lines = [f"[default0]:[2026-05-05 06:16:{s:02d}] {rest}" for s in range(60)]
    lines += [f"[default0]:[2026-05-05 06:16:47]x {rest}", f"[default0]:[٢٠٢٦-05-05 06:16:47] {rest}"]
    _, pairs, groups = _collscan.scan("\n".join(lines).encode(), False, 4096)
    assert groups == [(b"[default0]:[0000-00-00] gpu0:1:2 [0]", b"0x1 [nranks=2]"),
                      (b"[default0]:[2026-05-05 06:16:47]x gpu0:1:2 [0]", b"0x1 [nranks=2]"),
                      ("[default0]:[٢٠٢٦-05-05 06:16:47] gpu0:1:2 [0]".encode(), b"0x1 [nranks=2]")]
    assert list(array.array("I", pairs)[1::4]) == [0] * 60 + [1, 2]


@needs_scanner
def test_prefiltered_files_prepared_together_read_as_each_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Whole files whose every block was prefiltered are prepared together (lines.prepare_files):
    # times are taken within a file only, carriage returns split in each file's order, and each
    # file's counts and events are its own, whatever files are read with it.
    sim = jobsim()
    sim.write_job(sim.JobSpec(scenario="crash-cascade", nodes=3, coll=True, nccl_timestamps=True, steps=500), tmp_path)
    coll_heavy_log(tmp_path / "coll-1-gpu9.out", 12000)
    first = sorted(tmp_path.iterdir())[0]
    lines = first.read_text().splitlines()
    first.write_text("\n".join(f"{line}\rValueError: glued {n}" if n % 997 == 3 else line
                               for n, line in enumerate(lines)) + "\n")
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 4 * 1024 * 1024)
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    files, _ = discover([tmp_path])
    alone = [read_file(f) for f in files]
    pooled: list[int] = []
    flush = reading._Batch._flush_pool

    def spied(batch: reading._Batch) -> None:
        pooled.append(len(batch._pooled))
        flush(batch)

    monkeypatch.setattr(reading._Batch, "_flush_pool", spied)
    together = list(reading.read_in_order(files))
    assert max(pooled) == len(files) >= 4  # all were prepared in one call
    assert_same_reads(alone, together)


# Heads (the text before " NCCL INFO ") and comm slices as the scanner hands them over: launcher
# prefixes, NCCL's timestamp (canonical or not), NCCL heads of every shape, and text that is none.
HEAD_PARTS = ["", "[default0]:", "3: ", " 12: ", "[rank3]:", "[host1:3]:", "[trainer0|0]:", "(RayWorkerWrapper pid=9) ",
              "2026-09-18 19:29:24 [rank3]:", "2025-08-12 09:37:03.46 node7 >> ", "[0000-00-00] ",
              "[2026-05-05 06:16:47] ", "x ", "[", "]", "é", "\t", "I0506 01:02:03.000 12 f.cc:1] "]
NCCL_HEADS = ["gpu0:100:101 [0]", "gpu0:100:101", "node-7.cluster:0100:3 [7] enqueue.cc:12", "gpu0:100:101 [x]",
              "gpu0:abc:1 [0]", "a b:1:2 [0]", "2026-05-05T06:16:47 [1]", "[0000-00-00] gpu1:2:3 [1]",
              "2026-05-05 06:16:47 gpu1:2:3 [1]", ""]
COMM_SLICES = [b"0x55aa01 [nranks=8]", b"0x55aa02", b"(nil) [nranks=2]", b"0x55aa0123456789abcdef", b"zz",
               b"0x5\xc3\xa9", b"0x1f", b"(nil)", b"0xZ", b"0x55aa0123456789abcde"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(HEAD_PARTS), max_size=3), st.sampled_from(NCCL_HEADS),
                          st.sampled_from(COMM_SLICES)), min_size=1, max_size=12))
@example([(["[0000-00-00] "], "2026-05-05T06:16:47 [1]", b"0x55aa01"),  # a time after the stamp: not valid
          (["2026-09-18 19:29:24 [rank3]:"], "gpu0:100:101 [0]", b"0x55aa02"),  # a time in the prefix: timed
          (["[0000-00-00] "], "gpu0:100:101 [0]", b"0x55aa0123456789abcdef")])  # no room after the pointer
def test_the_few_groups_engine_answers_as_polars(groups: list[tuple[list[str], str, bytes]]) -> None:
    from logscope.parsers import coll_aside, coll_groups

    heads = [("".join(front) + head).encode() for front, head, _ in groups]
    comms = [comm for _, _, comm in groups]
    assert coll_groups.group_keys(heads, comms) == coll_aside.polars_group_keys(heads, comms)


def test_the_few_groups_engine_is_the_one_in_use_for_plain_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope.parsers import coll_aside, coll_groups

    monkeypatch.setattr(coll_aside, "polars_group_keys", lambda *_: pytest.fail("polars asked"))
    assert coll_groups.group_keys([b"[default0]:gpu0:100:101 [0]"], [b"0x55aa01 [nranks=8]"]) == [
        ("gpu0:100:101 [0] ", False)]
