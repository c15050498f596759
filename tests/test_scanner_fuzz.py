"""A fuzz corpus through the compiled scanner's four entry points: blocks made from COLL lines and
their near misses, mutated (bytes flipped, cut, duplicated; NUL, CR, newlines put in), each scanned
and reduced with the arguments the byte pass would derive and with arguments forged from them, and
the reduced blocks dropped across. Every call returns what fits its invariants or raises ValueError;
none may touch memory it does not own, which the build with ``-fsanitize=address,undefined`` in
``.ci/run`` (tools/sanitized_scanner.py) checks. The corpus is drawn from a fixed seed: the same
inputs every run."""

from __future__ import annotations

import array
import random

import pytest

from logscope.ingest.compiled import COMPILED

pytestmark = pytest.mark.skipif(not COMPILED, reason="the compiled scanner was not built here (no C compiler)")

SEED = 40
INPUTS = 400
SEEDS = [
    b"gpu-node01:12345:12400 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x7f00 recvbuff 0x7f10 count 4 "
    b"datatype 7 op 0 root 0 comm 0x55d0c3a0 [nranks=8] stream 0x1",
    b"[2026-11-03 04:12:30] gpu-node02:1:2 [3] NCCL INFO Broadcast: opCount 0 comm 0xabc [nranks=2]",
    b"[2026-02-30 25:61:61.1234567890] h:1:1 [0] NCCL INFO AllGather: opCount ff comm 0x1",
    b"h:1:1 [0] NCCL INFO AllReduce: opCount 1 comm 0x1",
    b"h:1:1 [0] NCCL INFO : opCount 1 comm 0x1",
    b"h:1:1 [0] NCCL INFO AllReduce: opCount  comm 0x1",
    b"h:1:1 [0]: opCount 1 NCCL INFO AllReduce: opCount 1 comm 0x1",
    b"[default3]:h:1:1 [3] NCCL INFO ReduceScatter: opCount 12345678901234567890123 comm",
    b"2026-11-03 04:12:30,123 - INFO - step 10 loss 2.5",
    b"\x00\x00\x00\x00",
    b"tqdm 10%|#\r20%|##\r30%",
    "é NCCL INFO AllReduce: opCount 1 comm 0xé".encode(),
]


def corpus() -> list[bytes]:
    rng = random.Random(SEED)
    blocks = []
    for _ in range(INPUTS):
        lines = [rng.choice(SEEDS) for _ in range(rng.randint(0, 40))]
        block = bytearray(b"\n".join(lines))
        for _ in range(rng.randint(0, 12)):
            if not block:
                break
            at = rng.randrange(len(block))
            action = rng.randrange(6)
            if action == 0:
                block[at] = rng.randrange(256)
            elif action == 1:
                block[at:at] = rng.choice([b"\n", b"\r", b"\x00", b"\x1f", b" comm ", b": opCount ", b" NCCL INFO "])
            elif action == 2:
                del block[at:at + rng.randint(1, 40)]
            elif action == 3:
                block[at:at] = block[at:at + rng.randint(1, 200)] * rng.randint(1, 4)
            elif action == 4:
                block = block[:at]
            else:
                block[at:at] = b"x" * rng.randint(1, 5000)  # a long line
        blocks.append(bytes(block))
    return blocks


def ints(values: list[int], code: str = "i") -> bytes:
    return array.array(code, values).tobytes()


def forged(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    mutable = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        mutable[rng.randrange(len(mutable))] = rng.randrange(256)
    return bytes(mutable[: rng.choice([len(mutable), max(0, len(mutable) - rng.randint(1, 8))])])


def test_the_corpus_through_every_entry_point() -> None:
    from logscope.ingest import _collscan as c

    rng = random.Random(SEED + 1)
    reduced = refused = 0
    for block in corpus():
        flags = c.controls(block)
        assert flags == (1 if b"\0" in block else 0) | (2 if b"\r" in block else 0) | (4 if b"\x1f" in block else 0)
        check_cr = rng.random() < 0.5
        lines, pairs, groups = c.scan(block, check_cr, rng.choice([0, 40, 200, 4096]))
        assert lines == (block.count(b"\n") + (0 if block.endswith(b"\n") else 1) if block else 0)
        n_groups = len(groups)
        merged = ints([rng.choice([-1, rng.randrange(n_groups)]) for _ in range(n_groups)]) if n_groups else b""
        timed = bytes(rng.randrange(2) for _ in range(n_groups))
        head, tail, first = rng.randint(0, 3), rng.randint(0, 3), rng.randint(0, 10**12)
        kept, kept_count, set_aside, coll_lines, counts = c.reduce(block, lines, pairs, merged, timed, head, tail,
                                                                   first, True)
        assert kept_count + set_aside == lines
        reduced += 1
        if kept:
            bounds = ints([rng.randint(-2, 6) for _ in range(2 * (len(counts) // 4))], "q")
            for out, dropped in c.drop_across([kept, kept], [coll_lines, coll_lines], [bounds, bounds]):
                assert len(out) <= len(kept) and 0 <= dropped <= kept_count
            try:
                c.drop_across([kept], [forged(coll_lines, rng)], [forged(bounds, rng)])
            except ValueError:
                refused += 1
        # the same call with one argument forged: an answer that fits, or ValueError
        arguments: list[object] = [block, lines, pairs, merged, timed, head, tail, first, True]
        which = rng.randrange(8)
        if which in (2, 3, 4):
            arguments[which] = forged(arguments[which], rng)  # type: ignore[arg-type]
        elif which == 0:
            arguments[0] = block[: rng.randrange(len(block) + 1)]
        else:
            arguments[which] = rng.choice([-1, 0, 1, lines + 1, 2**31, 2**32 + 1, 2**62, 2**63 - 1, -(2**63)])
        try:
            answer = c.reduce(*arguments)
            assert answer[1] + answer[2] == arguments[1]
        except ValueError:
            refused += 1
    assert reduced == INPUTS and refused > 0
