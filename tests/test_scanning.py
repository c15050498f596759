"""The byte pass of a read worker (logscope.ingest.scanning) and the workers that run it.

A COLL-heavy file taken by the byte pass is parsed in the main process from the lines the pass
kept; it must give what reading the file there gives (``read_file``), block boundaries, NUL
holes, carriage returns, long lines, compression and read errors included. The pass loads no
polars, and a file it cannot take is read the usual way, by the worker or in the main process.
"""

from __future__ import annotations

import gzip
import io
import pickle
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from reading_support import assert_same_reads, coll_heavy_log, read_without_setting_aside, without_repeats

from logscope.ingest import (
    FileRead,
    Skipped,
    blocks,
    coll_prefilter,
    compiled,
    discover,
    read_file,
    reading,
    scanning,
    workers,
)
from logscope.ingest.scanning import MAX_KEPT_BYTES, ScannedFile, scan_file
from logscope.ingest.workers import worker_main

pytestmark = pytest.mark.skipif(not compiled.COMPILED, reason="the compiled scanner is not built")
SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"


def source_of(path: Path):  # type: ignore[no-untyped-def]
    return discover([path])[0][0]


def read_after_the_pass(path: Path) -> tuple[ScannedFile, FileRead | Skipped]:
    scanned = scan_file(source_of(path))
    assert scanned is not None, "the byte pass did not take the file"
    return scanned, next(reading.read_in_order([scanned]))


@pytest.mark.parametrize("change", ["none", "nul hole", "carriage returns", "long lines", "byte-order mark", "gzip",
                                    "no last newline"])
def test_a_file_the_pass_took_reads_as_read_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 1024 * 1024)  # several blocks, and a small last one
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 512 * 1024)
    path = coll_heavy_log(tmp_path / "coll-gpu0.out", 40000)
    text = path.read_bytes()
    middle = text.index(b"\n", len(text) // 2) + 1
    if change == "nul hole":  # a crash's hole in the middle of a block, and a NUL run at a block's start
        text = text[:middle] + b"\0" * 10000 + text[middle:]
    elif change == "carriage returns":
        text = text[:middle] + b"step 1\rstep 2\rValueError: boom\n" + text[middle:]
    elif change == "long lines":
        text = text[:middle] + b"ValueError: " + b"x" * 9000 + b"\n" + text[middle:]
    elif change == "byte-order mark":
        text = b"\xef\xbb\xbf" + text
    elif change == "no last newline":
        text = text.rstrip(b"\n")
    if change == "gzip":
        path.unlink()
        path = tmp_path / "coll-gpu0.out.gz"
        path.write_bytes(gzip.compress(text))
    else:
        path.write_bytes(text)
    scanned, parsed = read_after_the_pass(path)
    assert len(scanned.blocks) >= 2
    assert_same_reads([read_file(source_of(path))], [parsed])


@pytest.mark.parametrize("counted_otherwise", [False, True])
@pytest.mark.parametrize("held_bytes", [None, 1])
def test_the_kept_lines_of_files_read_together_read_as_each_file_read_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted_otherwise: bool, held_bytes: int | None) -> None:
    # read_in_order reads the kept lines of consecutive files of the byte pass in one call of the
    # CSV reader, up to SCANNED_HELD_BYTES of them (``held_bytes=1``: every file alone). A file
    # read the usual way between them, a file whose last line has no newline, and lines that do
    # not read back as the pass counted them (``counted_otherwise``: each block is then read
    # alone) change no file's events.
    if held_bytes is not None:
        monkeypatch.setattr(reading, "SCANNED_HELD_BYTES", held_bytes)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 1024 * 1024)
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 512 * 1024)
    paths = [coll_heavy_log(tmp_path / f"coll-gpu{n}.out", 30000 + 6000 * n) for n in range(3)]
    paths[1].write_bytes(paths[1].read_bytes().rstrip(b"\n"))
    other = tmp_path / "train-node1.out"
    other.write_text("ValueError: boom\n")
    expected = [read_file(source_of(path)) for path in (paths[0], other, paths[1], paths[2])]
    scanned = [scan_file(source_of(path)) for path in paths]
    assert all(file is not None and len(file.blocks) >= 2 for file in scanned)
    numbered_reads: list[int] = []
    lines_frame = reading.lines_frame

    def counted(block: bytes, first_line: int, numbered: bool = False, unit_separator: bool | None = None) -> Any:
        frame = lines_frame(block, first_line, numbered, unit_separator)
        if numbered:
            numbered_reads.append(frame.height)
            if counted_otherwise and len(numbered_reads) == 1:
                return frame.head(-1)  # one line fewer than the pass counted
        return frame

    monkeypatch.setattr(reading, "lines_frame", counted)
    got = list(reading.read_in_order([scanned[0], source_of(other), scanned[1], scanned[2]]))
    assert_same_reads(expected, got)
    # one read for the first file, one for the next two together (or one each); the first file's
    # blocks each read alone once its read is refused
    first_blocks = sum(block.reduced is not None for block in scanned[0].blocks)  # type: ignore[union-attr]
    later_reads = 1 if held_bytes is None else 2
    assert len(numbered_reads) == (1 + first_blocks if counted_otherwise else 1) + later_reads


def coll_log_in_blocks(path: Path, *, stamped: range) -> Path:
    """A COLL-heavy log in 5 blocks of 1 MiB: groups that run through every block (a process
    written two ways: two groups of the scanner, one of the thinning), one that ends in the second
    block, one that starts in the last, small groups around where blocks end, and timed and
    untimed lines of other kinds among them. The COLL lines numbered in ``stamped`` carry NCCL's
    timestamp (NCCL_DEBUG_TIMESTAMP_LEVELS), a second later every 40 lines: the untimed lines
    among them take their times from the COLL lines around them."""
    rng = random.Random(5)
    small = {start: f"0x66{start:04x}" for start in range(3000, 33000, 1700)}  # 70 lines from each start
    rows: list[str] = []
    for n in range(34500):
        stamp = f"[2026-05-05 06:{n // 2400:02d}:{n // 40 % 60:02d}] " if n in stamped else ""
        host, pid = f"gpu{n % 3}", 100 + n % 3
        pid_text = f"0{pid}" if rng.random() < 0.1 else str(pid)
        comm = "0x55aa01" if n % 2 else "0x55aa02"
        if n < 7000 and n % 20 == 0:
            host, pid, comm = "gpu9", 900, "0x77ee01"  # ends early
        elif n >= 32500 and n % 50 == 0:
            host, pid, comm = "gpu8", 800, "0x88ee01"  # starts late
        else:
            for start, small_comm in small.items():
                if start <= n < start + 700 and n % 10 == 3:
                    host, pid, comm = "gpu7", 700, small_comm
        if host in ("gpu7", "gpu8", "gpu9"):
            pid_text = str(pid)  # one head: the scanner's group is the thinning's
        if n % 97 == 0:
            rows.append(f"I1103 14:{n % 60:02d}:06.332000 37738 torch/distributed/run.py:793] step {n}")
        elif n % 131 == 0:
            rows.append("ValueError: boom")
        rows.append(f"[default{pid % 8}]:{stamp}{host}:{pid_text}:{pid + 1} [0] NCCL INFO AllReduce: opCount {n:x} "
                    f"sendbuff 0x7f recvbuff 0x7f count 9 comm {comm} [nranks=8]")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(("stamped", "at_most"), [(range(0), 0.7), (range(11000, 16000), 0.8),
                                                  (range(34500), 0.65)], ids=["untimed", "a timed stretch", "timed"])
def test_coll_lines_other_blocks_make_surplus_are_dropped_before_parsing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stamped: range, at_most: float) -> None:
    # A block keeps the first and last lines of each COLL group in it; once the file's blocks are
    # all scanned, those that are neither among the file's first nor its last lines of the group
    # are dropped (coll_prefilter.drop_surplus_across): the same events, fewer lines parsed. Of
    # lines with NCCL's time, those the untimed lines around take their times from stay.
    without_repeats(monkeypatch)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 1024 * 1024)
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 512 * 1024)
    path = coll_log_in_blocks(tmp_path / "coll-gpu0.out", stamped=stamped)
    scanned, parsed = read_after_the_pass(path)
    assert len(scanned.blocks) >= 4 and all(block.reduced is not None for block in scanned.blocks)
    assert_same_reads([read_file(source_of(path))], [parsed])
    assert_same_reads([read_without_setting_aside(path, monkeypatch)], [parsed])
    with monkeypatch.context() as undone:
        undone.setattr(scanning, "drop_surplus_across", lambda reduced: list(reduced))
        per_block = scan_file(source_of(path))
    assert per_block is not None

    def kept(file: ScannedFile) -> int:
        return sum(block.reduced.kept_count for block in file.blocks if block.reduced is not None)

    # Every group but the small ones spans blocks: most of what each block kept of it goes.
    assert kept(scanned) < kept(per_block) * at_most
    assert sum(block.reduced.set_aside for block in scanned.blocks if block.reduced is not None) == \
        sum(block.reduced.set_aside for block in per_block.blocks if block.reduced is not None) + \
        kept(per_block) - kept(scanned)


def test_a_block_whose_coll_lines_are_all_kept_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A block of COLL lines in so many groups that none is surplus in it (the scanner has nothing to
    # drop): the block is kept whole, as are those after it, and the file reads as here.
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 1024 * 1024)
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 512 * 1024)
    rows = [f"gpu{n % 3}:10{n % 3}:11 [0] NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f count 9 comm 0x55aa01 "
            "[nranks=8]" for n in range(8000)]
    rows += [f"gpu0:100:11 [0] NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f count 9 comm 0x6{n % 400:04x} "
             "[nranks=8]" for n in range(16000)]
    path = tmp_path / "coll-gpu0.out"
    path.write_text("\n".join(rows) + "\n")
    scanned, parsed = read_after_the_pass(path)
    assert scanned.blocks[0].reduced is not None and scanned.blocks[-1].reduced is None
    assert_same_reads([read_file(source_of(path))], [parsed])


def test_a_read_error_keeps_what_came_before_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 1024 * 1024)
    plain = coll_heavy_log(tmp_path / "plain.out", 40000).read_bytes()
    path = tmp_path / "coll-gpu0.out.gz"
    path.write_bytes(gzip.compress(plain)[:-4000])  # a truncated archive
    scanned, parsed = read_after_the_pass(path)
    assert scanned.error is not None
    here = read_file(source_of(path))
    assert_same_reads([here], [parsed])
    assert isinstance(here, FileRead) and any("stopped reading after line" in w for w in here.warnings)


def test_the_files_the_pass_cannot_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Blocks of 1 MiB, reduced from 512 KiB, kept whole up to 768 KiB: as in use, scaled down.
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 1024 * 1024)
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 512 * 1024)
    monkeypatch.setattr("logscope.ingest.scanning.WHOLE_MAX_BYTES", 768 * 1024)
    coll = coll_heavy_log(tmp_path / "coll.out", 40000).read_bytes()
    training = b"".join(b"2026-11-03 14:00:00,532 - INFO - iteration %8d/  100000 | lm loss: 2.5E+00 |\n" % n
                        for n in range(40000))
    (tmp_path / "small.out").write_bytes(coll[:100_000])  # below the scanner's block size
    (tmp_path / "training.out").write_bytes(training)  # no COLL line to drop
    (tmp_path / "then-training.out").write_bytes(coll + training)  # one block of it has none
    (tmp_path / "binary.out").write_bytes(bytes(range(256)) * 10000)
    (tmp_path / "hole-first.out").write_bytes(b"\0" * 20000 + coll)
    (tmp_path / "then-a-little.out").write_bytes(coll + training[:100_000])  # kept whole: a small end
    for name in ("small.out", "training.out", "then-training.out", "binary.out", "hole-first.out"):
        assert scan_file(source_of(tmp_path / name)) is None, name
    for name in ("coll.out", "then-a-little.out"):
        assert scan_file(source_of(tmp_path / name)) is not None, name
    monkeypatch.setattr("logscope.ingest.scanning.MAX_KEPT_BYTES", 1000)  # what it keeps is bounded
    assert scan_file(source_of(tmp_path / "coll.out")) is None
    assert MAX_KEPT_BYTES >= 1024 * 1024


def plain_coll_log(path: Path, count: int = 30000) -> Path:
    """NCCL COLL lines of four processes behind torchrun's prefixes, and a training line now and then."""
    rows = []
    for n in range(count):
        rank = n % 4
        rows.append(f"[default{rank}]:gpu1:{100 + rank}:{200 + rank} [{rank}] NCCL INFO AllReduce: opCount {n // 4:x} "
                    f"sendbuff 0x7f00 recvbuff 0x7f00 count 9 datatype 7 op 0 root 0 comm 0x55aa0{rank % 2} [nranks=4]"
                    if n % 100 else f"[default0]:iteration {n:8d}/  100000 | lm loss: 2.5E+00 |")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_the_byte_pass_loads_no_polars(tmp_path: Path) -> None:
    path = plain_coll_log(tmp_path / "coll-gpu0.out")
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from logscope.ingest.discovery import discover
        from logscope.ingest.scanning import scan_file
        from logscope.ingest.workers import worker_main
        scanned = scan_file(discover([Path({str(path)!r})])[0][0])
        assert scanned is not None and scanned.blocks, "not taken"
        assert "polars" not in sys.modules, "polars loaded"
    """)
    # Run from the file's folder: from the repository's, `python -c` would import its source tree,
    # which has no compiled scanner where the package was installed rather than linked.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def run_worker(sources: list[object], monkeypatch: pytest.MonkeyPatch) -> dict[int, object]:
    """worker_main in this process: the outcome it sends for each file, by place."""
    sent = io.BytesIO()
    given, taken = io.TextIOWrapper(io.BytesIO(pickle.dumps(sources))), io.TextIOWrapper(sent)
    monkeypatch.setattr(sys, "stdin", given)
    monkeypatch.setattr(sys, "stdout", taken)
    worker_main()
    sent.seek(0)
    outcomes: dict[int, object] = {}
    while sent.tell() < len(sent.getvalue()):
        place, outcome = pickle.load(sent)
        outcomes[place] = outcome
    return outcomes


def test_a_worker_takes_coll_heavy_files_leaves_small_ones_and_reads_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    coll = plain_coll_log(tmp_path / "coll-gpu0.out")
    files = [source_of(coll), *discover([SAMPLES / "crash-cascade"])[0]]
    outcomes = run_worker(files, monkeypatch)
    assert isinstance(outcomes[0], ScannedFile)
    assert all(outcomes[n] is None for n in range(1, len(files)))  # small: left to the main process
    monkeypatch.setattr(workers, "LEFT_HERE_MAX_BYTES", 0)
    outcomes = run_worker(files, monkeypatch)
    assert isinstance(outcomes[0], ScannedFile)
    read_there = [outcomes[n] for n in range(1, len(files))]
    assert all(isinstance(outcome, FileRead | Skipped) for outcome in read_there)  # read by the worker
    assert_same_reads([read_file(f) for f in files[1:]], read_there)  # type: ignore[arg-type]


def test_a_worker_reads_lists_of_files_one_after_the_other(monkeypatch: pytest.MonkeyPatch) -> None:
    # The files are handed out a list at a time as the worker comes free; what it leaves to the
    # main process is counted over the lists: past LEFT_HERE_MAX_BYTES, it reads them itself.
    files = discover([SAMPLES / "crash-cascade"])[0][:2]
    monkeypatch.setattr(workers, "LEFT_HERE_MAX_BYTES", files[0].size)
    sent = io.BytesIO()
    given = io.TextIOWrapper(io.BytesIO(pickle.dumps([files[0]]) + pickle.dumps([files[1]])))
    taken = io.TextIOWrapper(sent)  # (held: once collected, it would close ``sent``)
    monkeypatch.setattr(sys, "stdin", given)
    monkeypatch.setattr(sys, "stdout", taken)
    worker_main()
    sent.seek(0)
    first, second = pickle.load(sent), pickle.load(sent)
    assert sent.tell() == len(sent.getvalue())
    assert first == (0, None)  # left here
    assert second[0] == 0 and isinstance(second[1], FileRead)  # its place in its own list; read there
    assert_same_reads([read_file(files[1])], [second[1]])


def test_a_job_read_by_workers_reads_as_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(3):
        coll_heavy_log(tmp_path / f"coll-gpu{n}.out", 24000 + n)
    plain_coll_log(tmp_path / "coll-gpu3.out")
    (tmp_path / "crash.out").write_bytes((SAMPLES / "crash-cascade" / "train-4242004-gpu-node01.out").read_bytes())
    files, _ = discover([tmp_path])
    here = [read_file(f) for f in files]
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    monkeypatch.setattr(coll_prefilter, "_KNOWN", {})  # nothing remembered from reading here
    parsed: list[str] = []
    read_scanned = reading._Batch.read_scanned

    def spied(batch: reading._Batch, opened: reading._Reading, scanned: ScannedFile,
              kept: list[Any] | None = None) -> bool:
        parsed.append(scanned.source.display)
        return read_scanned(batch, opened, scanned, kept)

    monkeypatch.setattr(reading._Batch, "read_scanned", spied)
    # A copy of logscope that cannot be imported in the working folder: the workers must import the
    # package this process runs, not whatever the folder holds.
    (tmp_path / "elsewhere" / "logscope").mkdir(parents=True)
    (tmp_path / "elsewhere" / "logscope" / "__init__.py").write_text("raise ImportError('another copy')\n")
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert_same_reads(here, workers.read_files(files))
    assert len(parsed) == 4  # the COLL-heavy files came back from the byte pass


@pytest.mark.skipif(not compiled.COMPILED, reason="the byte pass needs the compiled scanner")
def test_lines_that_start_with_a_byte_order_mark_read_the_same_whatever_the_blocks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Files joined with `cat` leave a byte-order mark at the start of a line. Only a file's own
    # first one is dropped: one at the start of a later block is kept, as it is where no block
    # starts, so that a file of such lines reads the same in blocks of any size, by the usual way
    # and by the byte pass. It was dropped at every block's start: the events changed with the
    # blocks.
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 64 * 1024)
    bom = "\ufeff"
    lines = [bom + f"gpu0:100:101 [0] NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f count 9 comm 0x55aa01 "
                   "[nranks=8]" for n in range(12_000)]
    lines[7000] = bom + "[rank0]: ValueError: a line of its own"
    path = tmp_path / "coll-gpu0.out"
    path.write_text("\n".join(lines) + "\n")
    reads = []
    for size in (96 * 1024, 256 * 1024, 64 * 1024 * 1024):
        monkeypatch.setattr(blocks, "CHUNK_BYTES", size)
        reads.append(read_file(source_of(path)))
        scanned = scan_file(source_of(path))  # None where no block has a COLL line to drop
        if scanned is not None:
            reads.append(next(reading.read_in_order([scanned])))
    assert len(reads) > 3  # the pass took it in some blocks
    for other in reads[1:]:
        assert_same_reads([reads[0]], [other])
    assert isinstance(reads[0], FileRead) and reads[0].lines_read == 12_000
