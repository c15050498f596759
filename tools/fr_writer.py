"""Write PyTorch Flight Recorder dumps in pure Python (no torch): schema variants for tests.

A dump is the dict PyTorch's FlightRecorder writes (``torch/csrc/distributed/c10d/
FlightRecorder.hpp``, ``FlightRecorderDetail.hpp``: ``dump_dict`` pickled at protocol 2, or
``dump_json``), for format versions 2.3 to 2.10. What differs between them, as read in those
sources at 2.3, 2.4, 2.7, 2.9 (NVIDIA's real dumps) and 2.10 (torch 2.13/2.14): the library
version's key (none before 2.5 here, ``nccl_version`` up to 2.9, ``comm_lib_version`` from 2.10)
and the entries' ``thread_id``/``thread_name`` (from 2.8). The boundaries at 2.5 and 2.8 are
where this writer puts them; the keys themselves are PyTorch's. Coalesced collectives (several
entries sharing one ``collective_seq_id``, each its own ``op_id``), p2p entries (``is_p2p``, their
own ``p2p_seq_id``), an empty ``pg_config`` (as torch 2.14's gloo writes it, with an empty name),
a wrapped ring buffer (the oldest entries gone) and files cut short are all writable.

:func:`simulate` plays a job: ranks issuing the same collectives step after step on their groups,
one of them stopping (never issuing, or never completing), issuing a different collective,
or arriving late; it returns each rank's dump.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BASE_NS = 1_796_511_500_000_000_000  # 2026-12-05 22:58:20 UTC
# Equal values written as one object, which Python's pickler then writes once and refers back to,
# as PyTorch's pickler does (it memoizes strings by value).
_SAME: dict[Any, Any] = {}


def _has_threads(version: str) -> bool:
    major, minor = (int(x) for x in version.split("."))
    return (major, minor) >= (2, 8)


def library_key(version: str) -> str | None:
    major, minor = (int(x) for x in version.split("."))
    if (major, minor) >= (2, 10):
        return "comm_lib_version"
    return "nccl_version" if (major, minor) >= (2, 5) else None


def entry(*, record_id: int, pg_id: int, pg: str, desc: str, seq: int, op: str, created_ns: int,
          p2p_seq: int = 0, op_id: int | None = None, is_p2p: bool = False, state: str = "completed",
          sizes: list[list[int]] | None = None, dtype: str = "Float", out_sizes: list[list[int]] | None = None,
          timeout_ms: int = 600_000, duration_ms: float | None = None, version: str = "2.10",
          frames: list[dict[str, Any]] | None = None, backend: str = "nccl") -> dict[str, Any]:
    """One entry as PyTorch writes it (keys in its order)."""
    sizes = sizes if sizes is not None else [[4, 8]]
    started = created_ns + 1_000 if state in ("started", "completed") else None
    completed = created_ns + 2_000_000 if state == "completed" else None
    out: dict[str, Any] = {}
    if frames is not None:
        out["frames"] = frames
    out.update({"record_id": record_id, "pg_id": pg_id, "process_group": _SAME.setdefault((pg, desc), (pg, desc))})
    if _has_threads(version):
        out.update({"thread_name": "pt_main_thread", "thread_id": "140000000000000"})
    out.update({"collective_seq_id": seq, "p2p_seq_id": p2p_seq, "op_id": op_id if op_id is not None else seq,
                "profiling_name": _SAME.setdefault(f"{backend}:{op}", f"{backend}:{op}"),
                "time_created_ns": created_ns})
    if duration_ms is not None:
        out["duration_ms"] = duration_ms
    out.update({"input_sizes": sizes, "input_dtypes": [_SAME.setdefault(dtype, dtype)] * len(sizes),
                "output_sizes": out_sizes if out_sizes is not None else sizes,
                "output_dtypes": [dtype] * len(out_sizes if out_sizes is not None else sizes),
                "state": state, "time_discovered_started_ns": started, "time_discovered_completed_ns": completed,
                "retired": state == "completed", "timeout_ms": timeout_ms, "is_p2p": is_p2p})
    return out


def dump(*, version: str = "2.10", groups: dict[str, tuple[str, list[int]]] | None = None,
         status: dict[int, tuple[int, int, int]] | None = None, entries: list[dict[str, Any]] | None = None,
         library: str = "2.27.3", empty_pg_config: bool = False) -> dict[str, Any]:
    """A whole dump: ``groups`` name -> (desc, ranks); ``status`` pg_id -> (enqueued, started,
    completed). ``empty_pg_config``: one group with an empty name, as torch 2.14's gloo writes."""
    config: dict[str, Any] = {}
    if empty_pg_config:
        config[""] = {"name": "", "desc": "", "ranks": "[]"}
    else:
        for name, (desc, ranks) in (groups or {}).items():
            config[name] = {"name": name, "desc": desc, "ranks": "[" + ", ".join(str(r) for r in ranks) + "]"}
    out: dict[str, Any] = {"version": version, "pg_config": config}
    key = library_key(version)
    if key:
        out[key] = library
    out["pg_status"] = {str(pg_id): {"last_enqueued_collective": e, "last_started_collective": s,
                                     "last_completed_collective": c}
                        for pg_id, (e, s, c) in (status or {}).items()}
    out["entries"] = list(entries or [])
    return out


def to_json(data: dict[str, Any]) -> bytes:
    """The dump as ``dump_json`` writes it: sorted keys, groups as lists, pg_status numbers as
    text, an unknown time as 0, no ``entries`` when there are none, no frames."""
    out = {k: v for k, v in data.items() if k != "entries"}
    out["pg_status"] = {k: {kk: str(vv) for kk, vv in v.items()} for k, v in data.get("pg_status", {}).items()}
    entries = []
    for e in data.get("entries", []):
        j = {k: v for k, v in e.items() if k != "frames"}
        j["process_group"] = list(e["process_group"])
        j["time_discovered_started_ns"] = e.get("time_discovered_started_ns") or 0
        j["time_discovered_completed_ns"] = e.get("time_discovered_completed_ns") or 0
        entries.append(j)
    if entries:
        out["entries"] = entries
    return json.dumps(out, sort_keys=True).encode()


def write(path: Path, data: dict[str, Any], *, fmt: str = "pickle", protocol: int = 2) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(data, protocol=protocol) if fmt == "pickle" else to_json(data))
    return path


@dataclass
class Plan:
    """A job to play: groups (name -> (desc, ranks)), the collectives each step issues (group
    name, op), and what goes wrong."""

    world: int
    groups: dict[str, tuple[str, list[int]]]
    step_ops: list[tuple[str, str]]
    steps: int = 10
    step_ns: int = 100_000_000
    version: str = "2.10"
    buffer: int = 2000
    only_active: bool = False
    backend: str = "nccl"
    # rank -> the step at which it stops issuing (it issues nothing of that step)
    stops_issuing: dict[int, int] = field(default_factory=dict)
    # rank -> the step from which its collectives never complete (its GPU stopped; it still issues)
    stops_completing: dict[int, int] = field(default_factory=dict)
    # (rank, step, index in step_ops) -> the op that rank issues instead
    mismatch: dict[tuple[int, int, int], str] = field(default_factory=dict)
    # (rank, step, index in step_ops) -> the size that rank issues instead
    size_mismatch: dict[tuple[int, int, int], list[list[int]]] = field(default_factory=dict)
    # rank -> how late (ns) it enters every collective
    late_ns: dict[int, int] = field(default_factory=dict)
    # indexes of step_ops issued as one coalesced group with the op before them
    coalesced_with_previous: set[int] = field(default_factory=set)
    # p2p: (index in step_ops) -> (src rank, dst rank) of a send/recv pair instead of a collective
    p2p: dict[int, tuple[int, int]] = field(default_factory=dict)
    frames: bool = False
    # a rank's CPU thread waits in the first collective that does not complete and issues nothing
    # after it (gloo; NCCL issues asynchronously and goes on until a synchronisation)
    blocking: bool = False


def simulate(plan: Plan) -> dict[int, dict[str, Any]]:
    """Each rank's dump after playing ``plan`` until every rank stopped or the steps ran out.

    Equal strings and frames are the same objects, so that Python's pickler refers back to them
    as PyTorch's does (its pickler memoizes strings by value and the frames by identity): the
    files have PyTorch's size and opcodes, ~70 a collective."""
    same: dict[Any, Any] = {}

    def shared(value: Any) -> Any:
        return same.setdefault(value if not isinstance(value, list) else repr(value), value)
    # the step where the job stops: the first rank that stops issuing blocks every group; a rank
    # whose GPU stops completing still takes part for two more steps (its peers complete them,
    # its own watchdog no longer sees them complete)
    halt = min([*plan.stops_issuing.values(), *(s + 2 for s in plan.stops_completing.values()), plan.steps])
    dumps = {}
    for rank in range(plan.world):
        # a process numbers the groups it belongs to in the order it creates them (pg_id)
        group_ids = {name: pg_id for pg_id, name in enumerate(g for g, (_, ranks) in plan.groups.items()
                                                              if rank in ranks)}
        seq: dict[str, int] = dict.fromkeys(plan.groups, 0)
        p2p_seq: dict[str, int] = dict.fromkeys(plan.groups, 0)
        op_id: dict[str, int] = dict.fromkeys(plan.groups, 0)
        enqueued: dict[str, int] = dict.fromkeys(plan.groups, 0)
        completed: dict[str, int] = dict.fromkeys(plan.groups, 0)
        entries: list[dict[str, Any]] = []
        record = 0
        stop_issue = plan.stops_issuing.get(rank)
        stop_complete = plan.stops_completing.get(rank)
        blocked = False
        for step in range(min(plan.steps, halt + 1)):
            if (stop_issue is not None and step >= stop_issue) or blocked:
                break
            for index, (group, op) in enumerate(plan.step_ops):
                if blocked:
                    break
                desc, members = plan.groups[group]
                if rank not in members:
                    continue
                pair = plan.p2p.get(index)
                if pair is not None and rank not in pair:
                    continue
                coalesced = index in plan.coalesced_with_previous and entries and \
                    entries[-1]["process_group"][0] == group
                if pair is not None:
                    p2p_seq[group] += 1
                    name = f"send {members.index(pair[0])}->{members.index(pair[1])}" if rank == pair[0] else \
                        f"recv {members.index(pair[1])}<-{members.index(pair[0])}"
                elif not coalesced:
                    seq[group] += 1
                op_id[group] += 1
                # state: the job halts at `halt`; what was issued at or after it never completes
                done = step < halt and (stop_complete is None or step < stop_complete)
                blocked = plan.blocking and step >= halt
                created = plan.step_ns * step + index * 1_000_000 + plan.late_ns.get(rank, 0)
                kind = plan.mismatch.get((rank, step, index), name if pair is not None else op)
                sizes = plan.size_mismatch.get((rank, step, index))
                frames = shared([shared(("c10d", op)) and {"name": op, "filename": "/opt/venv/lib/python3.11/"
                                 "site-packages/torch/distributed/distributed_c10d.py", "line": 2800},
                                 {"name": "train_step", "filename": "/workspace/train.py", "line": 40 + index}]) \
                    if plan.frames else None
                entries.append(entry(record_id=record, pg_id=group_ids[group], pg=shared(group), desc=shared(desc),
                                     seq=seq[group], p2p_seq=p2p_seq[group], op_id=op_id[group],
                                     is_p2p=pair is not None, op=shared(kind), created_ns=BASE_NS + created,
                                     state="completed" if done else "scheduled", sizes=sizes,
                                     version=plan.version, frames=frames, backend=plan.backend,
                                     duration_ms=1.5 if done else None))
                record += 1
                counter = p2p_seq[group] if pair is not None else seq[group]
                enqueued[group] = counter
                if done:
                    completed[group] = counter
        status = {group_ids[g]: (enqueued[g], -1, completed[g]) for g in plan.groups if rank in plan.groups[g][1]
                  and (enqueued[g] or completed[g])}
        kept = entries[-plan.buffer:] if plan.buffer else []
        if plan.only_active:
            kept = [e for e in kept if e["state"] != "completed"]
        mine = {g: v for g, v in plan.groups.items() if rank in v[1]}
        dumps[rank] = dump(version=plan.version, groups=mine, status=status, entries=kept)
    return dumps


def write_job(folder: Path, dumps: dict[int, dict[str, Any]], *, prefix: str = "nccl_trace_rank_",
              fmt: str = "pickle", protocol: int = 2, skip: tuple[int, ...] = ()) -> list[Path]:
    """Write each rank's dump as ``folder/<prefix><rank>`` (``.json`` for JSON)."""
    out = []
    for rank, data in sorted(dumps.items()):
        if rank in skip:
            continue
        name = f"{prefix}{rank}" + (".json" if fmt == "json" else "")
        out.append(write(folder / name, data, fmt=fmt, protocol=protocol))
    return out


__all__ = ["BASE_NS", "Plan", "dump", "entry", "library_key", "simulate", "to_json", "write", "write_job"]
