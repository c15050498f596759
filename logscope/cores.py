"""The cores this process may run on: a SLURM allocation or a container may grant fewer than the
machine has (``os.cpu_count()`` counts the machine's), and a process per core beyond them would
only take turns."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """How many cores this process may run on (at least one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity where the platform has none (macOS)
        return os.cpu_count() or 1


__all__ = ["usable_cores"]
