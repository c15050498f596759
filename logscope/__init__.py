"""logscope: what happened, on which node and rank, first — from a SLURM training job's logs alone.

Library use::

    from logscope import analyze
    result = analyze([Path("job-12345/")])
    print(result.verdict.category, result.verdict.summary)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from logscope.analysis import Analysis, analyze

__all__ = ["Analysis", "__version__", "analyze"]


def __getattr__(name: str) -> Any:
    # Keep `import logscope` cheap (the CLI's --version must not load polars).
    if name in ("analyze", "Analysis"):
        from logscope import analysis

        return getattr(analysis, name)
    raise AttributeError(name)
