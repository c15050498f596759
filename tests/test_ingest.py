"""Reading files: chunking, compression, bad bytes, line accounting, folder walking."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest
import zstandard
from reading_support import without_repeats

from logscope import ingest
from logscope.errors import InputError
from logscope.ingest import Skipped, blocks, discover, read_file
from logscope.timeline import load_job

LINES = [
    "node1:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
    "some unrelated output",
    "[default0]:ValueError: boom",
    "",
]


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def only(path: Path) -> ingest.FileRead:
    files, _ = discover([path])
    result = read_file(files[0])
    assert not isinstance(result, Skipped), result
    return result


@pytest.mark.parametrize("compress", [None, "gz", "zst"])
def test_plain_and_compressed_files_read_the_same(tmp_path: Path, compress: str | None) -> None:
    data = ("\n".join(LINES) + "\n").encode()
    name = "job-1-node1.out"
    if compress == "gz":
        data, name = gzip.compress(data), name + ".gz"
    elif compress == "zst":
        data, name = zstandard.ZstdCompressor().compress(data), name + ".zst"
    result = only(write(tmp_path / name, data))
    assert result.lines_read == 4
    assert result.lines_recognised == 2
    assert result.events["event"].to_list() == ["nccl_init", "exception"]
    assert result.events["line"].to_list() == [1, 3]


def test_line_numbers_survive_chunking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 64)
    lines = [f"line {i}" for i in range(200)] + ["ValueError: at the end"]
    result = only(write(tmp_path / "x-1-n1.out", "\n".join(lines)))  # no trailing newline
    assert result.lines_read == 201
    assert result.events.row(0, named=True)["line"] == 201


@pytest.mark.parametrize("tail", ["", "x" * 70_000])
def test_blocks_cut_at_a_newline_before_reading_keep_every_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: str) -> None:
    # A plain file's blocks are cut at the last newline of their last 64 KiB before they are read;
    # lines longer than that (tail) leave the cut to after the read. Every line is counted once,
    # in its place, whatever the cut. (The same words with other numbers: a loop's repeats, which
    # are set aside per block; test_repeats holds what they change to not depending on the cut.)
    without_repeats(monkeypatch)
    lines = [f"ValueError: line {i} {tail if i % 97 == 0 else ''}" for i in range(8000)]
    path = write(tmp_path / "x-1-n1.out", "\n".join(lines) + "\n")
    whole = only(path)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 256 * 1024)
    cut = only(path)
    assert cut.lines_read == whole.lines_read == 8000 and cut.lines_recognised == whole.lines_recognised
    assert cut.events["line"].to_list() == whole.events["line"].to_list()
    assert cut.events["text"].to_list() == whole.events["text"].to_list()


def test_truncated_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    body = "\n".join(f"ValueError: number {i}" for i in range(5000)).encode()
    blob = gzip.compress(body)
    result = only(write(tmp_path / "t-1-n1.out.gz", blob[: len(blob) // 2]))
    assert result.warnings and "truncated" in result.warnings[0]
    assert 0 < result.lines_read < 5000
    # Repeated lines are thinned to their first and last ones: the last lines before the damage,
    # the ones a post-mortem needs, are always kept.
    assert 0 < result.events.height <= result.lines_recognised
    assert result.events["line"].max() == result.lines_read


def test_non_utf8_and_nul_bytes_are_replaced_not_fatal(tmp_path: Path) -> None:
    result = only(write(tmp_path / "b-1-n1.out", b"caf\xe9 ok\nValueError: \xff\xfe bad\x00 byte\n"))
    assert result.lines_read == 2
    assert result.events.height == 1
    assert "\ufffd" in result.events["text"][0]


def test_binary_and_empty_files(tmp_path: Path) -> None:
    files, _ = discover([write(tmp_path / "blob-1-n1.out", bytes(range(256)) * 64)])
    assert isinstance(read_file(files[0]), Skipped)
    empty = only(write(tmp_path / "e-1-n1.out", b""))
    assert empty.lines_read == 0 and empty.warnings == ["empty file"]


def test_folder_walk_skips_non_logs_and_follows_no_link_loops(tmp_path: Path) -> None:
    write(tmp_path / "job" / "train-9-n1.out", "ValueError: x\n")
    write(tmp_path / "job" / "README.md", "CANCELLED AT 2024-01-01T00:00:00 mention in docs\n")
    (tmp_path / "job" / "loop").symlink_to(tmp_path / "job")
    files, skipped = discover([tmp_path / "job"])
    assert [f.path.name for f in files] == ["train-9-n1.out"]
    assert any("README.md" in s.reason for s in skipped)


def test_missing_and_empty_inputs_raise_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_job([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no files found"):
        load_job([tmp_path / "empty"])


def test_job_facts_from_file_names(tmp_path: Path) -> None:
    write(tmp_path / "pretrain-4242-gpu01.out", LINES[0] + "\n")
    write(tmp_path / "pretrain-4242-gpu02.out", "hello\n")
    job = load_job([tmp_path])
    assert (job.job_id, job.job_name, job.nodes) == ("4242", "pretrain", ["gpu01", "gpu02"])
    assert job.lines_read == job.lines_recognised + job.lines_unrecognised == 2


def test_truncated_zstd_is_reported(tmp_path: Path) -> None:
    body = "\n".join(f"ValueError: number {i} {'x' * (i % 50)}" for i in range(20000)).encode()
    blob = zstandard.ZstdCompressor().compress(body)
    result = only(write(tmp_path / "t-1-n1.out.zst", blob[: len(blob) // 2]))
    assert result.warnings and "truncated" in result.warnings[0]
    assert 0 < result.lines_read < 20000


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_garbage_archives_are_skipped_with_a_reason(tmp_path: Path, suffix: str) -> None:
    files, _ = discover([write(tmp_path / f"c-1-n1.out{suffix}", b"this is not compressed at all" * 10)])
    result = read_file(files[0])
    assert isinstance(result, Skipped)
    assert "cannot read" in result.reason


def test_repeated_lines_keep_each_processes_first_and_last(tmp_path: Path) -> None:
    lines = []
    for i in range(1000):
        lines.append(f"node1:{100 + i % 2}:7 [0] NCCL WARN retry {i} failed")
    result = only(write(tmp_path / "r-1-n1.out", "\n".join(lines) + "\n"))
    assert result.lines_recognised == 1000
    per_pid = result.events.group_by("pid").agg(pl.col("line").min().alias("first"), pl.col("line").max().alias("last"),
                                                pl.len().alias("kept")).sort("pid").to_dicts()
    assert [(r["pid"], r["first"], r["last"]) for r in per_pid] == [(100, 1, 999), (101, 2, 1000)]
    assert all(r["kept"] == 2 * ingest.REPEAT_KEEP for r in per_pid)


def _blocks_of(path: Path, mapped: bool) -> list[tuple[type, bytes]]:
    warnings: list[str] = []
    with path.open("rb") as stream:
        blocks.peek(stream)  # as the readers do: the head read first, then read again
        out = [(type(block), bytes(block)) for block in blocks.blocks(stream, path, warnings, mapped=mapped)]
    return [*out, (list, "|".join(warnings).encode())]


@pytest.mark.parametrize("content", [
    pytest.param(b"".join(b"line %d of some text\n" % i for i in range(40_000)), id="plain"),
    pytest.param(b"".join(b"line %d\n" % i for i in range(30_000)) * 2, id="plain, a last block at 1.5x"),
    pytest.param(b"".join(b"line %d\n" % i for i in range(40_000)) + b"no newline at the end", id="unterminated"),
    pytest.param(b"head\n" + b"x" * 300_000 + b"\nnext\n" * 30_000, id="a line longer than the probe"),
    pytest.param(b"a\n" * 40_000 + b"\0" * 200_000 + b"b\n" * 40_000, id="a hole"),
    pytest.param(b"a\r\n" * 60_000 + b"\0\0c\x1f\n" * 10, id="controls"),
    pytest.param(b"tiny\n", id="small"),
])
def test_mapped_blocks_are_the_blocks_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes) -> None:
    # The byte pass maps a plain file's pages instead of copying them (blocks' mapped=True): the
    # same bytes, cut at the same places, the same warnings; a block that would need a change (a
    # hole at its start, no newline at its end) is read as before. Small blocks (not a multiple of
    # the page size) put the mappings at unaligned places.
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 100_003)
    monkeypatch.setattr(blocks, "PROBE_BYTES", 20_000)
    path = write(tmp_path / "x-1-n1.out", content)
    read = _blocks_of(path, mapped=False)
    mapped = _blocks_of(path, mapped=True)
    assert [data for _, data in mapped] == [data for _, data in read]
    assert {kind for kind, _ in read} <= {bytes, list}
    if content.startswith(b"line "):  # lines shorter than the probe: nothing copied but a last line cut short
        kinds = [kind for kind, _ in mapped[:-1]]
        assert len(kinds) > 2 and set(kinds[:-2]) == {memoryview}
        # a last block without a newline at its end is read, and its last line comes on its own
        assert kinds[-2:] == ([memoryview] * 2 if content.endswith(b"\n") else [bytes] * 2)


def test_a_file_that_shrinks_while_mapped_is_read_not_mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A mapped page the file no longer holds would kill the process (SIGBUS) when touched: a file
    # found shorter than its next block is read the usual way from there.
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 100_000)
    monkeypatch.setattr(blocks, "PROBE_BYTES", 20_000)
    path = write(tmp_path / "x-1-n1.out", b"".join(b"line %06d\n" % i for i in range(50_000)))
    with path.open("rb") as stream:
        produced = blocks.blocks(stream, path, [], mapped=True)
        first = next(produced)
        assert isinstance(first, memoryview)
        size = len(first)
        first.release()
        del first
        with path.open("r+b") as writer:
            writer.truncate(size + 50_000)  # less than the next block
        rest = [(type(block), len(block)) for block in produced]
    assert all(kind is bytes for kind, _ in rest)
    assert sum(n for _, n in rest) == 50_000


@pytest.mark.parametrize("use_scanner", [False, True])
def test_an_untimed_event_at_a_blocks_end_is_no_later_than_the_next_blocks_first_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_scanner: bool) -> None:
    # An untimed event lies between the timed lines around it. The last one of a block has no timed
    # line after it in its block: the next block's first line with a time is its latest time, even
    # when that line's own event is thinned away (a COLL line of a communicator far from its ends);
    # the next event kept is much later (found by the scanner's hypothesis test: the two ways of
    # reading COLL lines cut the file in different chunks).
    from logscope.ingest import coll_prefilter, compiled

    coll = "gpu0:100:101 [0] NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f count 9 comm 0x55aa01 [nranks=8]"
    first = [coll.format(n=n) for n in range(3000)] + ["ValueError: boom"]
    second = ["[2026-05-05 06:16:01] " + coll.format(n=3001)] + [coll.format(n=n) for n in range(3002, 7000)]
    second.append("[2026-05-05 07:00:00] " + coll.format(n=7000))
    head = ("\n".join(first) + "\n").encode()
    path = tmp_path / "train-1-node01.out"
    path.write_bytes(head + ("\n".join(second) + "\n").encode())
    monkeypatch.setattr(blocks, "CHUNK_BYTES", len(head))  # the first block ends with the ValueError
    monkeypatch.setattr(compiled, "COMPILED", use_scanner and compiled.COMPILED)
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    read = read_file(discover([path])[0][0])
    assert not isinstance(read, Skipped)
    boom = read.events.filter(pl.col("event") == "exception").row(0, named=True)
    assert boom["line"] == 3001
    assert (str(boom["time"]), str(boom["time_latest"])) == ("2026-05-05 06:16:01", "2026-05-05 06:16:01")


@pytest.mark.parametrize("first", [80, 8000, 80_517, 800_000, 81, 7])
def test_numbered_lines_read_whatever_their_first_number(first: int) -> None:
    # A numbered block (the lines the byte pass kept) starts with its first line's number: "80..."
    # is also a zlib header (0x38 0x30), which the CSV reader would inflate; shielded by a first
    # line of the block's own shape, it reads as any other.
    from logscope.ingest.line_frames import lines_frame

    block = f"{first}\x1fgpu0:1:1 [0] NCCL INFO x\n{first + 1}\x1f\n{first + 5}\x1fValueError: boom\n".encode()
    assert lines_frame(block, 0, numbered=True).rows() == [
        (first, "gpu0:1:1 [0] NCCL INFO x"), (first + 1, None), (first + 5, "ValueError: boom")]


def test_a_block_whose_first_kept_line_is_line_8000_reads_as_without_the_scanner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Found by the scanner's hypothesis test: the reader stopped with a SchemaError on such a block.
    from reading_support import assert_same_reads

    from logscope.ingest import coll_prefilter, compiled

    if not compiled.COMPILED:
        pytest.skip("the compiled scanner is not built")
    coll = "gpu0:100:101 [0] NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f count 9 comm 0x55aa01 [nranks=8]"
    first = ("\n".join(coll.format(n=n) for n in range(7999)) + "\n").encode()
    path = tmp_path / "train-1-node01.out"
    path.write_bytes(first + ("\n".join(coll.format(n=n) for n in range(7999, 16000)) + "\n").encode())
    monkeypatch.setattr(blocks, "CHUNK_BYTES", len(first))  # the second block starts at line 8000
    monkeypatch.setattr(coll_prefilter, "MIN_BLOCK_BYTES", 0)
    source = discover([path])[0][0]
    fast = read_file(source)
    monkeypatch.setattr(compiled, "COMPILED", False)
    assert_same_reads([read_file(source)], [fast])
