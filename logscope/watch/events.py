"""What ``logscope watch`` reports while a job runs, one event at a time: the ``--format jsonl``
contract (``"schema": "logscope.watch/1"``, one JSON object per line) and the terminal's lines.

kinds:

* ``stall``: no rank advanced for ``seconds_quiet`` seconds (the stall threshold); ``rank`` and
  ``host`` name the rank the evidence singles out as behind (``ranks``/``hosts`` all of them), or
  are null with ``summary`` saying "job-wide, no rank behind";
* ``error``: a failure line of the catalogue's, the first of its kind (its message, its event),
  with the rank and host that logged it and how many ranks logged it in the same look;
* ``recovered``: progress resumed after a stall (``seconds_quiet``: how long it lasted);
* ``end``: the job ended (SLURM says so, or its logs do); ``verdict`` is the post-mortem verdict
  ``analyze`` gives (its JSON ``verdict``), ``rank``/``host`` its root cause;
* ``status`` (``--once`` only): the state the look found, progressing or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from logscope.model import Evidence

SCHEMA = "logscope.watch/1"
STALL, ERROR, RECOVERED, END, STATUS = "stall", "error", "recovered", "end", "status"


@dataclass(frozen=True)
class WatchEvent:
    """One thing the watch has to say."""

    kind: str
    time: float  # when the watch said it (seconds since the epoch)
    summary: str
    rank: int | None = None
    host: str | None = None
    seconds_quiet: float | None = None  # since any rank last advanced
    evidence: Evidence | None = None
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)  # verdict (end), state (status), count (error)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "kind": self.kind,
            "time": stamp(self.time),
            "rank": self.rank,
            "host": self.host,
            "ranks": list(self.ranks),
            "hosts": list(self.hosts),
            "seconds_quiet": round(self.seconds_quiet, 1) if self.seconds_quiet is not None else None,
            "summary": self.summary,
            "evidence": (None if self.evidence is None else
                         {"file": self.evidence.file, "line": self.evidence.line, "text": self.evidence.text}),
            **self.extra,
        }


def stamp(when: float) -> str:
    """A moment as ISO 8601 in local time, with its offset."""
    return datetime.fromtimestamp(when).astimezone().isoformat(timespec="seconds")


__all__ = ["END", "ERROR", "RECOVERED", "SCHEMA", "STALL", "STATUS", "WatchEvent", "stamp"]
