"""``logscope diff``: what changed from a run that worked (GOOD) to one that did not (BAD).

:func:`compare` takes the two runs' analyses (:func:`logscope.analysis.analyze`) and returns a
:class:`Comparison`: the new line templates, ranked; the templates printed far more often; the
configuration drift; the performance drift; BAD's fail-slow findings. :mod:`logscope.diff.baseline`
finds GOOD for ``--against auto`` (the last healthy run of the same job name in a scan table).
"""

from __future__ import annotations

from logscope.diff.comparison import SCHEMA, Comparison, compare

__all__ = ["SCHEMA", "Comparison", "compare"]
