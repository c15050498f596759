"""The HTML report in a real browser (headless Chromium): it renders, and injected log text never runs.

Run with ``pytest -m browser tests/test_report_browser.py``; skipped when no Chromium is installed
(Debian: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from logscope.analysis import analyze
from logscope.report.postmortem import write_report

pytestmark = pytest.mark.browser

CRASH = Path(__file__).parent / "goldens" / "LS301-crash-two-nodes" / "logs"
INJECTED = ("<script>document.title='pwned'</script>"
            "<img src=x onerror=\"document.title='pwned-img'\">"
            "<svg onload=\"document.title='pwned-svg'\"></svg>")
CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def hostile_report(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    shutil.copytree(CRASH, logs)
    node02 = logs / "train-5001-node02.out"
    node02.write_text(node02.read_text().replace("batch 57 has NaN labels", INJECTED))
    out = tmp_path / "report" / "postmortem.html"
    write_report(analyze([logs]), out)
    return out


def test_report_renders_and_injected_script_does_not_run(tmp_path: Path) -> None:
    report = hostile_report(tmp_path)
    result = chromium(tmp_path, "--dump-dom", report.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    title = re.search(r"<title>(.*?)</title>", dom, re.S)
    assert title is not None
    assert "pwned" not in title.group(1) and html.unescape(title.group(1)).startswith("Post-mortem: job 5001")
    # the page is there: verdict badge and summary, sections, five charts (the zoomed cascade too)
    assert ">CRASH</span>" in dom and "rank 3 on node02 failed first: ValueError:" in dom
    assert 'id="cascade"' in dom and dom.count("data:image/png;base64,") == 5
    assert 'id="chart-cascade"' in dom and "The cascade, zoomed" in dom
    # the injected markup is text: escaped in the DOM, no element was created from it
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom
    assert "<img src=\"x\"" not in dom and "<svg onload" not in dom
    assert not re.search(r"<script\b", dom, re.I)


def test_report_screenshot_is_not_blank(tmp_path: Path) -> None:
    out = tmp_path / "postmortem.html"
    write_report(analyze([CRASH]), out)
    shot = tmp_path / "shot.png"
    result = chromium(tmp_path, "--window-size=1280,2400", f"--screenshot={shot}", out.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.read_bytes().startswith(b"\x89PNG")
    image = pytest.importorskip("PIL.Image").open(shot).convert("L")
    colours = image.getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 50  # text, tables and charts, not an empty page


def test_the_check_would_catch_a_script_that_ran(tmp_path: Path) -> None:
    """Control: the same check on a page that does run the injected markup sees it."""
    page = tmp_path / "unsafe.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>Post-mortem</title></head><body>{INJECTED}</body></html>")
    result = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    title = re.search(r"<title>(.*?)</title>", result.stdout, re.S)
    assert title is not None and "pwned" in title.group(1)


def test_new_charts_render_in_the_browser(tmp_path: Path) -> None:
    """node-failure: the zoomed cascade and the last-activity chart are on the page and drawn."""
    out = tmp_path / "nf.html"
    write_report(analyze([Path(__file__).parent.parent / "sample_logs" / "node-failure"]), out)
    result = chromium(tmp_path, "--dump-dom", out.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    for name in ("cascade", "last_activity", "swimlane"):
        assert f'id="chart-{name}"' in result.stdout, name
    shot = tmp_path / "nf.png"
    result = chromium(tmp_path, "--window-size=1280,6000", f"--screenshot={shot}", out.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    image = pytest.importorskip("PIL.Image").open(shot).convert("RGB")
    reds = sum(count for count, (r, g, b) in image.getcolors(maxcolors=1 << 20) or [] if r > 180 and g < 60 and b < 60)
    assert reds > 100  # the root stars and the first quiet lane are drawn in red


def test_the_page_blames_no_process_the_verdict_does_not_name(tmp_path: Path) -> None:
    """silent-hang names no culprit: as Chromium renders it, the page has no highlighted node or
    sequence row, no ★ in a caption and no "root failure" heading; crash-cascade, which names rank
    11, has them all (the check sees marks where they are)."""
    from test_report_templates import blame_marks

    samples = Path(__file__).parent.parent / "sample_logs"
    dumped = {}
    for name in ("silent-hang", "crash-cascade"):
        out = tmp_path / f"{name}.html"
        analysis = analyze([samples / name])
        write_report(analysis, out)
        result = chromium(tmp_path, "--dump-dom", out.as_uri())
        assert result.returncode == 0, result.stderr[-2000:]
        dumped[name] = (analysis, result.stdout)
    hang, page = dumped["silent-hang"]
    assert hang.verdict.root_cause is None and ">HANG</span>" in page
    assert 'id="chart-swimlane"' in page and blame_marks(page) == []
    crash, page = dumped["crash-cascade"]
    assert crash.verdict.root_cause is not None
    marks = blame_marks(page)
    assert "highlighted row in the nodes table" in marks and any("★" in m for m in marks), marks
