"""How logscope ends when it is told to, and how its worker processes end with it.

* SIGTERM (``kill``, a scheduler's time limit) and SIGHUP (an ssh session closed) end the command
  as Ctrl-C does: the exception they raise (:class:`Terminated`, a KeyboardInterrupt) unwinds
  through the same clean-up (a scan stops its workers and releases their queues, so that no
  "leaked semaphore" warning follows), then one ``Interrupted`` line and exit code 128 + the
  signal (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP). Once one arrived, more of them are
  ignored: the command is already ending, and a second one must not cut its clean-up short.
* A worker process (a scan's, :mod:`logscope.scan_pool`) ends when its parent does, however the
  parent ended, ``kill -9`` included: :func:`die_with_parent` asks Linux for a parent-death
  signal, and a thread of the worker watches its parent's pid (the only way elsewhere, and the
  answer to the race of a parent that died before the worker asked).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from types import FrameType

HANDLED = (signal.SIGTERM, signal.SIGHUP)
# Linux's prctl option that sends the caller a signal when its parent ends (linux/prctl.h)
_PR_SET_PDEATHSIG = 1
WATCH_INTERVAL_S = 0.5

_received: list[int] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C's KeyboardInterrupt would be."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def end_on_termination() -> None:
    """SIGTERM and SIGHUP raise :class:`Terminated` in the main thread from now on (a signal left
    ignored by whoever started logscope, ``nohup``'s SIGHUP, stays ignored)."""
    for signum in HANDLED:
        with contextlib.suppress(OSError, ValueError):  # not the main thread, or no such signal here
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, _terminate)


def _terminate(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    for other in HANDLED:  # the command is ending: a second signal must not cut its clean-up short
        signal.signal(other, signal.SIG_IGN)
    raise Terminated(signum)


def interrupted() -> tuple[str, int]:
    """The line and the exit code of a command ended by Ctrl-C, SIGTERM or SIGHUP."""
    if not _received:
        return "Interrupted.", 130
    signum = _received[0]
    return f"Interrupted ({signal.Signals(signum).name}).", 128 + signum


def die_with_parent(parent: int) -> None:
    """In a worker process: end (SIGKILL) when ``parent``, the process that started it, ends."""
    if sys.platform.startswith("linux"):
        import ctypes  # only in a worker, on Linux

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    threading.Thread(target=_watch, args=(parent,), name="logscope-parent-watch", daemon=True).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_INTERVAL_S)
    os._exit(0)  # adopted by another: the scan that wanted this worker's answers is gone


__all__ = ["HANDLED", "Terminated", "die_with_parent", "end_on_termination", "interrupted"]
