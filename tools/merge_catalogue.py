"""Merge research catalogue fragments into logscope/knowledge/messages.toml (a maintenance tool).

Each fragment is a TOML file of [[message]] entries read from upstream sources (id, project, file,
commit, format, example, level, event, severity, category, meaning). For each entry this adds what the
catalogue needs: the timeline ``source``, whom it ``blame``s, and, for a message whose meaning only the
catalogue carries (an NCCL WARN, a generic failure line, a DistBackendError text with a category), a
``trigger`` literal and an unanchored ``match`` regex built from the format string's literal parts.
It marks as a ``gap`` every entry whose example line logscope does not yet record as its event, so the
coverage test (tests/test_catalogue.py) can hold the line: gaps only shrink.

    python tools/merge_catalogue.py FRAGMENT.toml ... --into logscope/knowledge/messages.toml
    python tools/merge_catalogue.py --mark-gaps --into logscope/knowledge/messages.toml

Entries already in the catalogue (same id, or a handwritten entry with the same format) are kept as they are.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import tomllib

# Events whose meaning (the category) only the catalogue carries: recognised from the catalogue.
CATALOGUE_KINDS = {"nccl_warn", "failure_line", "dist_error"}
# What a line may be recorded as for the catalogue to take it: nothing, or a catch-all. A line that a
# Python exception pattern records stays an exception (the crash and socket detectors read those).
GENERIC_EVENTS = {None, "nccl_warn", "failure_line", "srun_error", "traceback"}
HOLE = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcspn]|\{[^{}]*\}|%%")
META = set("\\.+*?()|[]{}^$")


def escape(text: str) -> str:
    return "".join("\\" + c if c in META else c for c in text)


def source_of(entry: dict) -> str:
    project, path = entry["project"], entry["file"]
    if project == "NVIDIA/nccl":
        return "nccl"
    if project == "pytorch/pytorch":
        if "csrc/distributed" in path:
            return "c10d"
        if "elastic" in path or path.endswith("run.py"):
            return "torchrun"
        if path.startswith("c10/cuda") or "cuda" in path.lower():
            return "cuda"
        return "python"
    if project == "SchedMD/slurm":
        return "slurm"
    if project in ("NVIDIA/open-gpu-kernel-modules", "torvalds/linux"):
        return "kernel"
    if project == "python/cpython":
        return "python"
    return "app"


def blame_of(entry: dict) -> str:
    return "none" if entry["category"] in ("hang", "network", "scheduler", "none", "clean_end") else "self"


def literal_parts(fmt: str) -> list[str]:
    parts: list[str] = []
    for line in fmt.splitlines():
        parts.extend(p.strip() for p in HOLE.split(line))
    return [p for p in parts if p]


def build_match(fmt: str, example: str) -> tuple[str, str] | None:
    """(trigger, regex) from the format line holding the longest literal, if the example matches."""
    best = None
    for line in fmt.splitlines():
        pieces = HOLE.split(line)
        literal = max((p.strip() for p in pieces), key=len, default="")
        if len(literal) >= 10 and (best is None or len(literal) > len(best[0])):
            best = (literal, line)
    if best is None:
        return None
    trigger, line = best
    pieces = [p for p in HOLE.split(line)]
    regex = ".*?".join(escape(p) for p in pieces).strip()
    regex = re.sub(r"(?:\.\*\?)+$", "", regex)  # a trailing hole adds nothing
    regex = re.sub(r"^(?:\.\*\?)+", "", regex)
    if trigger not in example:
        return None
    try:
        if not re.search(regex, example):
            return None
    except re.error:
        return None
    return trigger, regex


def toml_str(value: str) -> str:
    if "'" not in value and "\n" not in value:
        return f"'{value}'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def recognised(example: str) -> tuple[str | None, str | None]:
    import polars as pl

    from logscope.parsers.lines import parse_chunk

    result = parse_chunk(pl.DataFrame({"line": [1], "raw": [example]}), 2024, None)
    if result.events.height == 0:
        return None, None
    row = result.events.row(0, named=True)
    return row["event"], (row["fields"] or {}).get("key")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("fragments", nargs="*", type=Path)
    parser.add_argument("--into", type=Path, required=True)
    parser.add_argument("--mark-gaps", action="store_true", help="only mark the gaps of --into")
    args = parser.parse_args()
    if args.mark_gaps:
        return mark_gaps(args.into)
    existing = tomllib.loads(args.into.read_text())["message"]
    have_ids = {m["id"] for m in existing}
    have_formats = {m["format"].strip() for m in existing}
    out = [args.into.read_text().rstrip() + "\n"]
    added = 0
    for fragment in args.fragments:
        entries = tomllib.loads(fragment.read_text())["message"]
        out.append(f"\n# ------------------------------------------------------------------------------------------- "
                   f"from {fragment.stem}\n")
        for entry in entries:
            if entry["id"] in have_ids or entry["format"].strip() in have_formats:
                continue
            if entry["event"] in ("clean_end", "agent_finished") or entry["category"] == "clean_end":
                continue  # clean ends are handwritten above: each one's scope (job or process) matters
            event = entry["event"]
            found, _ = recognised(entry["example"])
            match = None
            if event in CATALOGUE_KINDS and found in GENERIC_EVENTS:
                match = build_match(entry["format"], entry["example"])
                if match is not None:
                    event = "known_message" if entry["category"] != "none" else "failure_line"
            fields = {
                "id": entry["id"], "project": entry["project"], "file": entry["file"],
                "commit": entry.get("commit", ""), "format": entry["format"], "example": entry["example"],
                "event": event, "severity": entry["severity"], "category": entry["category"],
                "blame": blame_of(entry), "source": source_of(entry), "meaning": entry["meaning"],
            }
            if match is not None:
                fields["trigger"], fields["match"] = match
            lines = ["[[message]]"] + [f"{k} = {toml_str(str(v))}" for k, v in fields.items()]
            out.append("\n".join(lines) + "\n\n")
            added += 1
    args.into.write_text("".join(out).rstrip() + "\n")
    # What logscope records for each example is asked in a fresh process: this one's pattern
    # table was built from the catalogue as it was before the merge.
    subprocess.run([sys.executable, __file__, "--mark-gaps", "--into", str(args.into)], check=True)
    print(f"added {added} entries", file=sys.stderr)
    return 0


def mark_gaps(path: Path) -> int:
    """Mark (anew) every entry whose example logscope does not record as its event."""
    text = re.sub(r"^gap = .*\n", "", path.read_text(), flags=re.MULTILINE)
    gaps = 0
    for entry in tomllib.loads(text)["message"]:
        found, key = recognised(entry["example"])
        ok = found == entry["event"] and (entry["event"] not in ("known_message", "clean_end", "failure_line")
                                          or key == entry["id"])
        if not ok:
            gaps += 1
            marker = f'id = {toml_str(entry["id"])}\n'
            text = text.replace(marker, marker + f"gap = {toml_str('recorded as ' + (found or 'nothing'))}\n", 1)
    path.write_text(text)
    print(f"{gaps} gap(s) marked", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
