"""Folders walked without recursion, however deep they go.

Python 3.11's ``os.walk`` calls itself once per level: a tree 1,000 folders deep (a few bytes of
names each) raised RecursionError. :func:`walk` yields what ``os.walk(top, topdown=True,
followlinks=False)`` yields, in the same order, from a list of the folders still to visit: the
caller may sort or prune ``dirs`` in place, a symbolic link to a folder is listed among ``dirs``
but not entered, and a folder that cannot be listed goes to ``onerror``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

Walked = tuple[str, list[str], list[str]]


def walk(top: str | os.PathLike[str], onerror: Callable[[OSError], object] | None = None) -> Iterator[Walked]:
    """``os.walk(top, followlinks=False)``, top-down, on an explicit stack."""
    pending = [os.fspath(top)]
    while pending:
        folder = pending.pop()
        dirs: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else files).append(entry.name)
        except OSError as error:
            if onerror is not None:
                onerror(error)
            continue
        yield folder, dirs, files
        # in reverse, so that the first of ``dirs`` (as the caller left them) is visited next
        for name in reversed(dirs):
            path = os.path.join(folder, name)  # noqa: PTH118 - strings, as os.walk yields them
            if not os.path.islink(path):  # noqa: PTH114
                pending.append(path)


__all__ = ["walk"]
