"""The compiled scanner (``_collscan.c``), when it was built with the package.

It is optional: built where a C compiler is (``pyproject.toml``'s ext-modules, ``optional``), and
every caller has a pure-Python or polars way for when it is not. This is the one place that loads
it; callers ask :data:`COMPILED` first (tests turn it off to compare both ways).
"""

from __future__ import annotations

try:
    from logscope.ingest import _collscan as scanner

    COMPILED = True
except ImportError:  # not built where the package was installed (no C compiler)
    COMPILED = False

__all__ = ["COMPILED", "scanner"]
