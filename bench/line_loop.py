#!/usr/bin/env python3
"""The baseline logscope is measured against: a plain Python line-by-line ``re`` parser.

It is what one would write by hand to pull the main events out of a job's logs: read each file
line by line, peel the launcher prefixes, and run a compiled regex on the lines that hold its
keyword (a cheap ``in`` test first, as anyone would). It extracts the same fields logscope
extracts for those events:

* NCCL COLL lines: host, pid, CUDA device, operation, opCount, communicator; like logscope it keeps
  only the first and last ones per (file, host, pid, communicator), not all of them;
* the c10d watchdog timeout: SeqNum, operation, timeout;
* exit codes: torchrun's ``failed (exitcode: N) local_rank: L (pid: P)`` and srun's
  ``Exited with exit code N``;
* training progress: step, total steps and loss, with the line's leading timestamp.

Stdlib only; prints a JSON summary of what it found. Usage: ``line_loop.py FILE...``.
"""

from __future__ import annotations

import json
import re
import sys

# Launcher prefixes, outermost first: "3: " (srun --label), "[default3]:" (torchrun --tee),
# "[rank3]:" (PyTorch), "[host1:3]:" (torchrun --role).
PREFIX = re.compile(r"\s*\d{1,6}: |\[default(\d+)\]:|\[rank(\d+)\]: ?|\[[A-Za-z][\w.-]*?:?(\d+)\]:?")
LEAD_TIME = re.compile(r"\[?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)|[IWEF](\d{4} \d\d:\d\d:\d\d(?:\.\d+)?)")
COLL = re.compile(
    r"(?:\[\d{4}-\d{2}-\d{2}[^\]]*\] )?([^\s:\[\]]+):(\d+):\d+ (?:\[(\d+)\] )?(?:[\w./-]+:\d+ )?NCCL INFO "
    r"([A-Za-z]+): opCount ([0-9a-fA-F]+) .*?comm (0x[0-9a-fA-F]+|\(nil\))"
)
WATCHDOG = re.compile(
    r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)"
    r"(?:.*?Timeout\(ms\)=(\d+)\))?"
)
WORKER_EXIT = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
SRUN_EXIT = re.compile(r"srun: error: ([^:\s]+): tasks? ([\d,\-]+): Exited with exit code (\d+)")
PROGRESS = re.compile(r"\biteration:?\s+(\d+)\s*/\s*(\d+)\s*\|(?:.*?(?:lm )?loss:\s*([\d.]+(?:[eE][+-]?\d+)?))?")

COLL_HEAD, COLL_TAIL = 2, 64


def parse(paths: list[str]) -> dict[str, object]:
    lines = 0
    coll: dict[tuple[str, str, str, str], Comm] = {}
    timeouts: list[tuple[object, ...]] = []
    exits: list[tuple[object, ...]] = []
    progress: dict[str, tuple[object, ...]] = {}
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as fh:  # noqa: PTH123
            for number, raw in enumerate(fh, 1):
                lines += 1
                line = raw.rstrip("\n")
                for _ in range(5):
                    m = PREFIX.match(line)
                    if m is None:
                        break
                    line = line[m.end():]
                if "opCount" in line and (m := COLL.match(line)):
                    host, pid, dev, op, count, comm = m.groups()
                    key = (path, host, pid, comm)
                    entry = coll.get(key)
                    if entry is None:
                        entry = coll[key] = Comm(dev)
                    entry.add((number, op, int(count, 16)))
                elif "SeqNum=" in line and (m := WATCHDOG.search(line)):
                    timeouts.append((path, number, *m.groups()))
                elif ("exitcode" in line and (m := WORKER_EXIT.search(line))) or (
                        "Exited with exit code" in line and (m := SRUN_EXIT.search(line))):
                    exits.append((path, number, *m.groups()))
                elif "iteration" in line and (m := PROGRESS.search(line)):
                    t = LEAD_TIME.match(line)
                    stamp = (t.group(1) or t.group(2)) if t else None
                    progress[path] = (number, stamp, *m.groups())
    return {
        "lines": lines,
        "communicators": len(coll),
        "coll_lines": sum(c.n for c in coll.values()),
        "last_op_count": max((c.tail[-1][2] for c in coll.values()), default=None),
        "watchdog_timeouts": len(timeouts),
        "exits": len(exits),
        "last_progress": max(progress.values(), key=lambda p: (p[1] or "", p[0])) if progress else None,
    }


class Comm:
    """The first and last COLL lines of one communicator of one process."""

    __slots__ = ("dev", "head", "n", "tail")

    def __init__(self, dev: str | None) -> None:
        self.dev = dev
        self.n = 0
        self.head: list[tuple[int, str, int]] = []
        self.tail: list[tuple[int, str, int]] = []

    def add(self, row: tuple[int, str, int]) -> None:
        self.n += 1
        if len(self.head) < COLL_HEAD:
            self.head.append(row)
        self.tail.append(row)
        if len(self.tail) >= 2 * COLL_TAIL:
            del self.tail[:COLL_TAIL]


if __name__ == "__main__":
    print(json.dumps(parse(sys.argv[1:])))
