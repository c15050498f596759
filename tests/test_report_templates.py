"""The post-mortem from templates (issue 39): Jinja2 templates shipped in the package, autoescaped
HTML, and a page that blames no process the verdict does not name.

What the page may show as blame: a highlighted (``class="strong"``) row of the per-node table or
of the failure sequence (rows that name a node or a rank), a ★ in a chart's caption, and "root
failure" in a heading, a caption or a folded block's summary. Without a named culprit (the
silent-hang sample: every rank waits, none is known to have stopped first) there is none of them;
with one (crash-cascade) they are all there. ``tests/test_report_browser.py`` checks the same on
the page as Chromium renders it.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from logscope.analysis import Analysis, analyze
from logscope.report import charts, postmortem, templating
from logscope.report.postmortem import render_html, render_markdown

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
TEMPLATES = ("postmortem.html", "blocks.html", "postmortem.md", "blocks.md", "postmortem.css")


def blame_marks(page: str) -> list[str]:
    """Every mark on an HTML page (as written or as a browser dumps it) that points at a process
    as the origin of the failure."""
    marks = []
    for anchor in ("nodes", "cascade"):
        section = re.search(rf'<section id="{anchor}">(.*?)</section>', page, re.S)
        for table in re.findall(r"<table.*?</table>", section.group(1) if section else "", re.S):
            header = re.search(r"<thead>(.*?)</thead>", table, re.S)
            names_a_process = header is not None and re.search(r"<th>(node|rank|event)</th>", header.group(1))
            if names_a_process and 'class="strong"' in table:
                marks.append(f"highlighted row in the {anchor} table")
    marks += [f"caption: {c}" for c in re.findall(r"<figcaption>([^<]*)</figcaption>", page)
              if "★" in c or "root failure" in c]
    marks += [f"heading: {h}" for h in re.findall(r"<(?:summary|h2|strong)>([^<]*)</", page) if "root failure" in h]
    return marks


@pytest.fixture(scope="module")
def silent_hang() -> Analysis:
    return analyze([SAMPLES / "silent-hang"])


@pytest.fixture(scope="module")
def crash() -> Analysis:
    return analyze([SAMPLES / "crash-cascade"])


def test_templates_are_package_data() -> None:
    folder = resources.files("logscope.report") / "templates"
    for name in TEMPLATES:
        assert (folder / name).is_file(), name
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert '"report/templates/*"' in pyproject and '"jinja2' in pyproject


def test_the_page_is_the_template(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, crash: Analysis) -> None:
    """A newcomer changes a section in the template: a copy of the templates with one changed line
    changes the page, and nothing else is needed."""
    import jinja2

    for name in TEMPLATES:
        text = (resources.files("logscope.report") / "templates" / name).read_text(encoding="utf-8")
        (tmp_path / name).write_text(text.replace("<h2>{{ section.title }}</h2>",
                                                  "<h2 class=\"changed\">{{ section.title }}</h2>"))
    templating.environment.cache_clear()
    monkeypatch.setattr(templating, "PackageLoader", lambda *_: jinja2.FileSystemLoader(tmp_path))
    try:
        page = render_html(crash)
    finally:
        monkeypatch.undo()
        templating.environment.cache_clear()
    assert '<h2 class="changed">Root cause</h2>' in page
    assert '<h2 class="changed">' not in render_html(crash)


def test_log_text_is_escaped_by_the_html_template(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for source in (SAMPLES / "crash-cascade").iterdir():
        text = source.read_text()
        (logs / source.name).write_text(text.replace("ValueError:", "ValueError: <b onclick=x>{{ 7*7 }}</b> &amp;"))
    analysis = analyze([logs])
    page = render_html(analysis)
    assert "<b onclick" not in page and "&lt;b onclick=x&gt;{{ 7*7 }}&lt;/b&gt; &amp;amp;" in page
    markdown = render_markdown(analysis)
    assert "\\<b onclick=x\\>{{ 7\\*7 }}\\</b\\> \\&amp;" in markdown  # escaped, never evaluated


def test_no_blame_on_the_page_without_a_named_culprit(silent_hang: Analysis) -> None:
    assert silent_hang.verdict.root_cause is None and silent_hang.verdict.finding == "LS103"
    page = render_html(silent_hang, charts.render_charts(silent_hang, formats=("png",)))
    assert blame_marks(page) == []
    assert "Lines around the finding&#x27;s first line" in page
    markdown = render_markdown(silent_hang)
    assert "root failure" not in markdown


def test_a_named_culprit_is_marked_on_the_page(crash: Analysis) -> None:
    assert crash.verdict.root_cause is not None
    marks = blame_marks(render_html(crash, charts.render_charts(crash, formats=("png",))))
    assert "highlighted row in the nodes table" in marks and "highlighted row in the cascade table" in marks
    assert any(m.startswith("caption: Timeline per rank") and "★" in m for m in marks)
    assert any("Lines around the root failure" in m for m in marks)


def test_block_kinds_have_a_drawing_in_both_formats() -> None:
    """Every kind of block of the document is drawn by blocks.html and blocks.md."""
    for name in ("blocks.html", "blocks.md"):
        text = (resources.files("logscope.report") / "templates" / name).read_text(encoding="utf-8")
        for kind in ("paragraph", "bullets", "table", "log_lines"):
            assert f"is {kind}" in text, (name, kind)
    assert {"Paragraph", "Bullets", "Table", "LogLines", "Figures"} <= set(dir(postmortem))
