"""Following a running job's files (logscope/watch/follow.py): growth, partial lines, new files,
rotation, truncation, compressed files written in pieces, every byte read once and nothing written."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from logscope.ingest.discovery import discover
from logscope.watch import follow
from logscope.watch.follow import Follower, Looked


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def follower(folder: Path) -> tuple[Follower, Clock]:
    clock = Clock()
    return Follower(lambda: discover([folder])[0], clock), clock


def data(looked: Looked) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for piece in looked.pieces:
        out[piece.source.display] = out.get(piece.source.display, b"") + piece.data
    return out


def test_growth_is_read_once_and_a_partial_line_waits_for_its_newline(tmp_path: Path) -> None:
    log = tmp_path / "train-1-node01.out"
    log.write_bytes(b"one\ntwo\nthr")
    watch, _ = follower(tmp_path)
    first = watch.look()
    assert data(first) == {str(log): b"one\ntwo\n"}
    assert first.pieces[0].first_line == 0 and first.pieces[0].written_after is None
    with log.open("ab") as out:
        out.write(b"ee\nfour\n")
    second = watch.look()
    assert data(second) == {str(log): b"three\nfour\n"}
    assert second.pieces[0].first_line == 2
    # this look knows the lines were not there at the previous one
    assert second.pieces[0].written_after is not None and second.pieces[0].written_after <= second.pieces[0].seen
    assert watch.look().pieces == []  # nothing new: nothing read


def test_every_byte_once_over_many_looks(tmp_path: Path) -> None:
    log = tmp_path / "train-1-node01.out"
    log.write_bytes(b"")
    watch, _ = follower(tmp_path)
    written = b""
    read = b""
    for n in range(50):
        line = f"line {n} ".encode() * (n % 7 + 1)
        with log.open("ab") as out:  # a line written in two halves, across looks
            out.write(line[: len(line) // 2])
        read += b"".join(p.data for p in watch.look().pieces)
        with log.open("ab") as out:
            out.write(line[len(line) // 2:] + b"\n")
        written += line + b"\n"
    read += b"".join(p.data for p in watch.look().pieces)
    assert read == written


def test_new_files_are_followed_from_their_first_byte(tmp_path: Path) -> None:
    watch, _ = follower(tmp_path)
    assert watch.look().pieces == []
    (tmp_path / "train-1-node01.out").write_bytes(b"a\n")
    (tmp_path / "train-1-node02.out").write_bytes(b"b\n")
    got = data(watch.look())
    assert got == {str(tmp_path / "train-1-node01.out"): b"a\n", str(tmp_path / "train-1-node02.out"): b"b\n"}
    assert watch.files == 2


def test_rotation_reads_the_old_file_to_its_end_and_the_new_one_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "train-1-node01.out"
    log.write_bytes(b"one\n")
    watch, _ = follower(tmp_path)
    watch.look()
    writer = log.open("ab")  # a writer that keeps its descriptor across the rotation
    writer.write(b"two\n")
    writer.flush()
    log.rename(tmp_path / "train-1-node01.out.1")
    log.write_bytes(b"new one\n")
    writer.write(b"three\n")  # still the old inode
    writer.flush()
    looked = watch.look()
    got = data(looked)
    assert got[str(tmp_path / "train-1-node01.out.1")] == b"two\nthree\n"
    assert got[str(log)] == b"new one\n"
    assert [p.first_line for p in looked.pieces if p.source.path == log] == [0]
    assert str(tmp_path / "train-1-node01.out.1") in {s.display for s in looked.renamed.values()}
    writer.close()


def test_truncation_starts_the_file_again_and_keeps_what_was_read_apart(tmp_path: Path) -> None:
    log = tmp_path / "train-1-node01.out"
    log.write_bytes(b"one\ntwo\nthree\n")
    watch, _ = follower(tmp_path)
    before = watch.look().pieces[0]
    with log.open("r+b") as out:  # logrotate's copytruncate, then the writer goes on
        out.truncate(0)
    with log.open("ab") as out:
        out.write(b"four\n")
    looked = watch.look()
    assert data(looked) == {str(log): b"four\n"}
    assert looked.pieces[0].first_line == 0 and looked.pieces[0].file_id != before.file_id
    assert looked.renamed[before.file_id].display == f"{log} (before truncation 1)"


def test_a_writer_without_append_leaves_a_hole_whose_nul_bytes_are_dropped(tmp_path: Path) -> None:
    log = tmp_path / "train-1-node01.out"
    log.write_bytes(b"one\n")
    watch, _ = follower(tmp_path)
    watch.look()
    with log.open("r+b") as out:
        out.truncate(0)
        out.seek(4)  # the writer's own offset, past the new end: a hole of NUL bytes before its line
        out.write(b"two\n")
    assert data(watch.look()) == {str(log): b"two\n"}


def test_a_compressed_file_is_read_once_when_it_is_complete(tmp_path: Path) -> None:
    whole = gzip.compress(b"".join(f"line {n}\n".encode() for n in range(2000)))
    archive = tmp_path / "train-1-node01.out.gz"
    archive.write_bytes(whole[: len(whole) // 2])  # still being written
    watch, _ = follower(tmp_path)
    assert watch.look().pieces == []
    assert watch.look().pieces == []  # same size, but it does not decompress to its end
    archive.write_bytes(whole)
    assert watch.look().pieces == []  # complete, but its size just changed: one more look
    got = b"".join(p.data for p in watch.look().pieces)
    assert got == gzip.decompress(whole)
    assert watch.look().pieces == []  # read once


def test_a_binary_file_is_skipped_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "core.1234").write_bytes(bytes(range(256)) * 64)
    watch, _ = follower(tmp_path)
    looked = watch.look()
    assert looked.pieces == [] and any("binary data" in note for note in looked.notes)
    assert watch.look().notes == []  # said once


def test_the_files_are_not_changed(tmp_path: Path) -> None:
    log = tmp_path / "train-1-node01.out"
    log.write_bytes(b"one\ntwo\n")
    os.utime(log, (1_000_000_000, 1_000_000_000))
    watch, _ = follower(tmp_path)
    watch.look()
    watch.look()
    watch.close()
    assert log.read_bytes() == b"one\ntwo\n"
    assert log.stat().st_mtime == 1_000_000_000


def test_a_look_reads_a_bounded_amount_and_the_files_take_turns(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(follow, "READ_BYTES", 1000)
    lines = {name: b"".join(f"{name} line {n:04d}\n".encode() for n in range(300)) for name in ("a.out", "b.out")}
    for name, text in lines.items():
        (tmp_path / name).write_bytes(text)
    watch, _ = follower(tmp_path)
    got: dict[str, bytes] = {}
    looks = 0
    while True:
        looked = watch.look()
        looks += 1
        for piece in looked.pieces:
            got[piece.source.path.name] = got.get(piece.source.path.name, b"") + piece.data
            assert len(piece.data) <= 1000
            # a piece whose file was not read to its end at the last look has no lower bound but
            # the last look that did
            assert piece.written_after is None or piece.first_line == 0 or piece.written_after > 0
        if not looked.behind:
            break
    assert got == lines  # every byte once, in order
    assert looks >= 2 * sum(len(text) for text in lines.values()) // 1000 // 2
