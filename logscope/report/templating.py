"""The post-mortem's templates: Jinja2, autoescaped for HTML, shipped in logscope/report/templates.

``postmortem.html`` and ``postmortem.md`` lay out the page; ``blocks.html`` and ``blocks.md`` draw
each kind of block of a :class:`~logscope.report.postmortem.Document` (the templates test a block's
kind with ``is paragraph``, ``is bullets``, ``is table``, ``is log_lines``, ``is figures``, and a
table cell with ``is code_cell``). To change how a section looks, change its template; what a
section says is built in :mod:`logscope.report.postmortem`.

HTML: every value is escaped by Jinja2's autoescape (no ``|safe`` anywhere: a hostile log line
stays text). Markdown: not autoescaped (HTML entities would show as text); every value goes
through the ``md_text``, ``md_code`` or ``md_block`` filter (:mod:`logscope.report.markdown`).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from logscope.model import Evidence
from logscope.report.markdown import MAX_TEXT, md_block, md_code, md_text
from logscope.report.markdown import _clip as clip
from logscope.report.times import window


def short_file(path: str) -> str:
    """A log file's name without its folders."""
    return path.rsplit("/", 1)[-1]


def _time_window(earliest: datetime | None, latest: datetime | None) -> str:
    return window(earliest, latest, note=False)


def _evidence_lines(lines: Sequence[Evidence]) -> list[str]:
    return [f"{short_file(ev.file)}:{ev.line}  {ev.text}" for ev in lines]


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _html_escaped(value: Any) -> Any:
    """Each value printed in an HTML template, escaped as :func:`html.escape` does (``&quot;``,
    ``&#x27;``: the page reads as it did before it was templated); autoescape would give the same
    text as ``&#34;``/``&#39;``. Markup (a block macro's output) is already escaped."""
    return value if isinstance(value, Markup) else Markup(html.escape(str(value), quote=True))


@cache
def environment(kind: str = "html") -> Environment:
    """The templates' environment for ``html`` (autoescaped) or ``md`` (escaped by filters)."""
    from logscope.report import charts
    from logscope.report.postmortem import Bullets, Code, Figures, LogLines, Paragraph, Table

    env = Environment(
        loader=PackageLoader("logscope.report", "templates"),
        autoescape=kind == "html", finalize=_html_escaped if kind == "html" else None,
        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )
    kinds: dict[str, Any] = {"paragraph": Paragraph, "bullets": Bullets, "table": Table, "log_lines": LogLines,
                             "figures": Figures, "code_cell": Code}
    for name, kind_class in kinds.items():
        env.tests[name] = lambda value, kind_class=kind_class: isinstance(value, kind_class)
    env.filters.update(md_text=md_text, md_code=md_code, md_block=md_block, short_file=short_file, base64=_base64,
                       clip=lambda text, limit=MAX_TEXT: clip(text, limit), evidence_lines=_evidence_lines,
                       chart_title=lambda name: charts.CHART_TITLES.get(name, name))
    env.globals.update(time_window=_time_window)
    return env


def render(name: str, **values: Any) -> str:
    """Render the template ``name`` (``postmortem.html``, ``postmortem.md``) with ``values``."""
    kind = "html" if name.endswith(".html") else "md"
    return environment(kind).get_template(name).render(**values)


__all__ = ["environment", "render", "short_file"]
