"""Post-mortem reports: content, escaping of hostile log text, Markdown images, size limits, the CLI."""

from __future__ import annotations

import dataclasses
import re
import shutil
import sys
from pathlib import Path

import pytest

from logscope.analysis import Analysis, analyze
from logscope.cli import main
from logscope.errors import UsageError
from logscope.report import charts, postmortem
from logscope.report.postmortem import md_code, render_html, render_markdown, report_format, write_report

sys.path.insert(0, str(Path(__file__).parent))
from test_charts import synthetic_analysis

CRASH = Path(__file__).parent / "goldens" / "LS301-crash-two-nodes" / "logs"
HOSTILE = "<script>alert(1)</script> <img src=x onerror=alert(2)> ``` `tick` | pipe & amp"


def hostile_job(tmp_path: Path) -> Path:
    """The golden crash with its root exception's message replaced by hostile text."""
    logs = tmp_path / "logs"
    shutil.copytree(CRASH, logs)
    node02 = logs / "train-5001-node02.out"
    node02.write_text(node02.read_text().replace("batch 57 has NaN labels", HOSTILE))
    return logs


@pytest.fixture(scope="module")
def crash() -> Analysis:
    return analyze([CRASH])


def test_html_has_verdict_root_cause_evidence_and_cascade(crash: Analysis) -> None:
    page = render_html(crash, charts.render_charts(crash, formats=("png",)))
    assert page.startswith("<!DOCTYPE html>")
    assert "CRASH" in page and "LS301" in page
    assert "rank 3 on node02 failed first: ValueError: batch 57 has NaN labels" in page
    assert '<span class="where">train-5001-node02.out:8</span>  [default1]:ValueError' in page  # file:line + text
    for section in ("Root cause", "Cascade", "Charts", "Per node", "Configuration and transport", "Advice"):
        assert f">{section}</h2>" in page
    # the cascade lists the findings root first; the failure sequence starts at the root (+0 s)
    cascade = page.split('id="cascade"')[1].split("</section>")[0]
    assert cascade.index("LS301 exit-cascade") < cascade.index("Failure sequence")
    assert re.search(r'<tr class="strong"><td class="nowrap">0 s</td>', cascade)
    assert cascade.index("rank 3 · node02") < cascade.index("rank 0 · node01")
    assert page.count('src="data:image/png;base64,') == 5


def test_html_is_self_contained_and_has_no_script(crash: Analysis) -> None:
    page = render_html(crash, charts.render_charts(crash, formats=("png",)))
    assert "<script" not in page.lower()
    references = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page)
    assert references and all(r.startswith(("#", "data:image/png;base64,")) for r in references)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert "Content-Security-Policy" in page


def test_hostile_log_text_is_escaped_in_html(tmp_path: Path) -> None:
    analysis = analyze([hostile_job(tmp_path)])
    assert HOSTILE in analysis.verdict.summary  # the detector quotes the message: it reaches the report
    page = render_html(analysis, charts.render_charts(analysis, formats=("png",)))
    assert "<script" not in page.lower()
    assert "<img src=x" not in page and "onerror=alert" not in page.replace("onerror=alert(2)&gt;", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(2)&gt;" in page
    assert "| pipe &amp; amp" in page


def test_hostile_log_text_stays_text_in_markdown(tmp_path: Path) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    analysis = analyze([hostile_job(tmp_path)])
    text = render_markdown(analysis)
    rendered = markdown_it.MarkdownIt("commonmark").enable("table").render(text)
    assert "<script" not in rendered.lower() and "<img src=x" not in rendered
    # the text survives intact: in code (evidence) and as escaped plain text (verdict)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(2)&gt; ``` `tick` | pipe" in rendered
    # fences are not broken by the backticks in the log line: every fence opened is closed
    code_blocks = re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", rendered, re.S)
    assert any("``` `tick` | pipe" in block for block in code_blocks)
    # the table rows that quote the line keep their column count (the | in the log is escaped)
    sequence_rows = [line for line in text.splitlines() if line.startswith("| 0 s") or line.startswith("| **0 s")]
    assert sequence_rows and all(line.count(" | ") == 5 for line in sequence_rows)


@pytest.mark.parametrize("text", ["plain", "a `b` c", "```", "`start", "end`", "x | y", "``a``"])
def test_md_code_cannot_be_closed_by_the_text(text: str) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark").render(md_code(text))
    match = re.fullmatch(r"<p><code>(.*)</code></p>\n", rendered, re.S)
    assert match is not None, rendered
    assert match.group(1).replace("&amp;", "&") == text


def test_markdown_links_images_beside_the_file(crash: Analysis, tmp_path: Path) -> None:
    out = tmp_path / "tickets" / "postmortem.md"
    written = write_report(crash, out)
    assert written[0] == out
    text = out.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links == [f"postmortem_files/{name}.png" for name in
                     ("swimlane", "cascade", "progress_strip", "last_activity", "failure_curve")]
    for link in links:
        assert (out.parent / link).read_bytes().startswith(b"\x89PNG")
    assert (out.parent / "postmortem_files" / "swimlane.svg").is_file()
    assert "```text\ntrain-5001-node02.out:8  [default1]:ValueError: batch 57 has NaN labels" in text
    assert text.startswith("# Post-mortem: job 5001 (train)\n\n**Verdict: CRASH** (LS301)")


def test_html_write_report_is_one_file(crash: Analysis, tmp_path: Path) -> None:
    out = tmp_path / "postmortem.html"
    assert write_report(crash, out) == [out]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["postmortem.html"]


@pytest.mark.parametrize(("name", "fmt"), [("a.html", "html"), ("a.HTM", "html"), ("a.md", "md")])
def test_report_format_from_extension(name: str, fmt: str) -> None:
    assert report_format(Path(name)) == fmt


@pytest.mark.parametrize("name", ["a.pdf", "a", "a.markdown.txt"])
def test_report_format_refuses_other_extensions(name: str) -> None:
    with pytest.raises(UsageError):
        report_format(Path(name))


def test_thousand_rank_job_renders_with_tables_by_node(tmp_path: Path) -> None:
    analysis = synthetic_analysis(n_ranks=1024, per_node=8, quiet_rank=517)
    # Its speed is measured in bench/, not asserted here: a timed unit test fails on a busy machine.
    html_paths = write_report(analysis, tmp_path / "big.html")
    md_paths = write_report(analysis, tmp_path / "big.md")
    page = html_paths[0].read_text()
    assert len(page) < 5_000_000
    assert "<script" not in page.lower()
    nodes = page.split('id="nodes"')[1].split("</section>")[0]
    assert nodes.count("<tr") == 1 + 128  # header + one row per node, not per rank
    assert "node064" in nodes and "512-519" in nodes
    sequence = page.split("Failure sequence")[1].split("</table>")[0]
    assert sequence.count("<tr") == 1 + postmortem.MAX_SEQUENCE
    assert f"{128 - postmortem.MAX_SEQUENCE} more node(s) not shown" in page
    text = md_paths[0].read_text()
    assert len(text) < 500_000 and "aggregated by node" in text


def test_config_section_shows_the_node_that_differs() -> None:
    config = {f"node{i:03d}": {"NCCL_IB_DISABLE": "0", "NCCL_SOCKET_IFNAME": "ib0"} for i in range(4)}
    config["node002"]["NCCL_IB_DISABLE"] = "1"
    analysis = synthetic_analysis(n_ranks=32, quiet_rank=5, config=config)
    page = render_html(analysis)
    section = page.split('id="config"')[1].split("</section>")[0]
    assert "2 different configurations across 4 node(s)" in section
    assert "≠" in section and "node002" in section


def test_config_fallback_tabulates_the_timeline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "logscope.detectors.config_skew", None)  # as if it did not exist
    config = {"node000": {"NCCL_IB_DISABLE": "0"}, "node001": {"NCCL_IB_DISABLE": "1"}}
    analysis = synthetic_analysis(n_ranks=16, quiet_rank=5, config=config)
    frame = postmortem.node_config_frame(analysis)
    assert frame.columns == ["node", "NCCL_IB_DISABLE"]
    assert frame.rows() == [("node000", "0"), ("node001", "1")]
    doc = postmortem.build_document(analysis)
    config_table = next(b for s in doc.sections if s.anchor == "config" for b in s.blocks
                        if isinstance(b, postmortem.Table))
    assert config_table.columns == ["nodes", "count", "NCCL_IB_DISABLE"] and config_table.flagged_columns == {2}


def test_hints_are_included_and_escaped(crash: Analysis) -> None:
    with_hints = dataclasses.replace(crash, hints=["Set NCCL_DEBUG=INFO <b>next time</b>"])
    page = render_html(with_hints)
    assert "Next time, to make the logs tell more:" in page
    assert "Set NCCL_DEBUG=INFO &lt;b&gt;next time&lt;/b&gt;" in page


def test_broken_hints_do_not_stop_the_analysis_or_the_report(crash: Analysis,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import logscope.analysis

    def broken(view: object, findings: object) -> list[str]:
        raise KeyError("rank")

    monkeypatch.setattr(logscope.analysis, "missing_evidence_hints", broken)
    again = logscope.analysis.analyze_job(crash.job)
    assert again.verdict == crash.verdict and again.hints == []
    assert any(e.startswith("hints failed: KeyError") for e in again.detector_errors)
    assert "hints failed: KeyError" in render_html(again)


def test_untimed_job_report(tmp_path: Path) -> None:
    analysis = synthetic_analysis(n_ranks=16, quiet_rank=5, timed=False)
    paths = write_report(analysis, tmp_path / "untimed.md")
    assert [p.name for p in paths[1:]] == ["progress_strip.png", "progress_strip.svg"]
    text = paths[0].read_text()
    assert "no timestamps" in text and "first event" not in text  # empty time columns are dropped


# --- CLI -------------------------------------------------------------------------------------


def test_cli_report_html(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "postmortem.html"
    code = main(["report", str(CRASH), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0  # written: `logscope report ... && upload` must work whatever the verdict
    assert captured.out == f"Report written to {out}\n"
    assert "ValueError: batch 57 has NaN labels" in out.read_text()


def test_cli_report_markdown(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "postmortem.md"
    assert main(["report", str(CRASH), "--output", str(out)]) == 0
    assert capsys.readouterr().out == f"Report written to {out} (charts in {tmp_path / 'postmortem_files'}/)\n"
    assert (tmp_path / "postmortem_files" / "progress_strip.png").is_file()


def test_cli_report_healthy_exits_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "ok-1-n1.out").write_text("2026-01-01 00:00:00,000 - INFO - step 1/1 loss 2.0\n")
    assert main(["report", str(logs), "-o", str(tmp_path / "ok.html")]) == 0
    assert "HEALTHY" in (tmp_path / "ok.html").read_text()


@pytest.mark.parametrize("target", ["postmortem.pdf", "logs/postmortem.html", "logs/sub/postmortem.md"])
def test_cli_report_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(CRASH, logs)
    before = sorted(p.name for p in logs.rglob("*"))
    code = main(["report", str(logs), "-o", str(tmp_path / target)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("Error: ") and "Traceback" not in err
    assert sorted(p.name for p in logs.rglob("*")) == before  # nothing written into the logs
    assert not (tmp_path / target).exists()


# --- every output tells the same story (issue 13) -------------------------------------------

SAMPLES = Path(__file__).parent.parent / "sample_logs"


@pytest.fixture(scope="module")
def samples() -> dict[str, Analysis]:
    return {name: analyze([SAMPLES / name]) for name in
            ("crash-cascade", "node-failure", "oom", "nccl-version-skew", "cancelled-by-user", "socket-fallback")}


def test_config_table_does_not_flag_a_version_only_rank_0_prints(samples: dict[str, Analysis]) -> None:
    section = postmortem._config_section(samples["crash-cascade"])
    lead, table = section.blocks[0], section.blocks[1]
    assert isinstance(lead, postmortem.Paragraph) and isinstance(table, postmortem.Table)
    assert lead.text.startswith("All 2 node(s) report the same") and not table.flagged_columns
    assert "nccl_version" in lead.text  # said to be printed by some nodes only
    skew = postmortem._config_section(samples["nccl-version-skew"]).blocks[1]
    assert isinstance(skew, postmortem.Table)
    assert skew.columns.index("nccl_version") in skew.flagged_columns  # a real difference still is one
    fallback = postmortem._config_section(samples["socket-fallback"]).blocks[1]
    assert isinstance(fallback, postmortem.Table)
    assert fallback.columns.index("nccl_version") not in fallback.flagged_columns
    assert "(not printed)" in [row[fallback.columns.index("nccl_version")] for row in fallback.rows]


def test_cancellation_evidence_starts_at_the_cancelled_line(samples: dict[str, Analysis]) -> None:
    for name in ("oom", "crash-cascade", "cancelled-by-user"):
        (finding,) = [f for f in samples[name].findings if f.code == "LS703"]
        assert "CANCELLED AT" in finding.evidence[0].text, (name, finding.evidence[0])


def test_one_time_model_in_every_output(samples: dict[str, Analysis], capsys: pytest.CaptureFixture[str]) -> None:
    """The OOM line has no timestamp: it lies between 16:41:53 (the timed line above) and
    16:43:56 (below). The root box, the detector's text, the JSON and the report all say so."""
    oom = samples["oom"]
    assert main(["analyze", str(SAMPLES / "oom"), "--color", "never"]) == 1
    out = capsys.readouterr().out
    box = next(line for line in out.splitlines() if " time " in line)
    assert "16:41:53" in box and "16:43:56" in box
    assert "16:41:53–16:43:56 (no timestamp on the line)" in oom.findings[0].explanation
    evidence = oom.verdict.root_cause.evidence if oom.verdict.root_cause else None
    assert evidence is not None and evidence.time is not None and evidence.time_latest is not None
    assert evidence.time < evidence.time_latest
    assert evidence.to_json()["time_latest"] == evidence.time_latest.isoformat()
    html = render_html(oom)
    assert "16:41:53.274 – 16:43:56.306" in html


def test_a_node_is_not_alive_after_its_own_last_line(samples: dict[str, Analysis]) -> None:
    """node-failure: node01's log says "Node failure on gpu-node02" at 04:19:17 and 04:24:10;
    node02's own log ends at 04:19:00.241, and that is its last event and its last line."""
    from logscope.analysis import node_summary

    nodes = {row["node"]: row for row in node_summary(samples["node-failure"])}
    assert nodes["gpu-node02"]["last_event"] == "2026-11-03T04:19:00.241000"
    last = nodes["gpu-node02"]["last_line"]
    assert last["file"].endswith("gpu-node02.out") and last["line"] == 265 and "iteration      410" in last["text"]
    html = render_html(samples["node-failure"])
    assert "its own log&#x27;s last line" in html and "train-4242015-gpu-node02.out:265" in html


def test_the_per_node_table_shows_the_real_last_line(tmp_path: Path) -> None:
    """node02's log ends with a line logscope does not recognise (cut short by the crash)."""
    logs = tmp_path / "logs"
    shutil.copytree(CRASH, logs)
    with (logs / "train-5001-node02.out").open("a") as f:
        f.write("[default1]:half a line written when the node went dow")
    nodes = postmortem._nodes_section(analyze([logs])).blocks[0]
    assert isinstance(nodes, postmortem.Table)
    column = nodes.columns.index("its own log's last line")
    cells = {row[0]: row[column] for row in nodes.rows}
    cell = cells["node02"]
    assert isinstance(cell, postmortem.Code)
    assert cell.text == "train-5001-node02.out, end of file:  [default1]:half a line written when the node went dow"


def test_report_shows_the_root_traceback_and_the_lines_around_it(samples: dict[str, Analysis]) -> None:
    html_page = render_html(samples["crash-cascade"])
    root = html_page.split('id="root-cause"')[1].split("</section>")[0]
    assert "<details open><summary>Traceback of rank 11" in root
    # the frames are not in the timeline (unrecognised lines): read again from the file
    assert "packed_dataset.py&quot;, line 97, in _collate" in root
    assert "Lines around the root failure (train-4242004-gpu-node02.out:231-255, every process)" in root
    markdown = render_markdown(samples["oom"])
    assert "**Traceback of rank 5**" in markdown and "in forward" in markdown


def test_the_findings_table_shows_the_same_window_as_the_root_box(samples: dict[str, Analysis]) -> None:
    section = postmortem._cascade_section(samples["oom"])
    table = section.blocks[0]
    assert isinstance(table, postmortem.Table)
    root_row = table.rows[0]
    assert "LS501 cuda-oom" in root_row and "2026-11-03 16:41:53.274 – 16:43:56.306" in root_row


def test_no_process_traceback_for_a_node_failure_and_the_root_row_is_at_zero(samples: dict[str, Analysis]) -> None:
    """node-failure: the root is a node, not a process; torchrun's traceback above the root line is a
    victim's. The root finding's row is at 0 s: its line's window holds the verdict's moment."""
    analysis = samples["node-failure"]
    summaries = [b.summary for b in postmortem._root_section(analysis).blocks if isinstance(b, postmortem.LogLines)]
    assert not any(s.startswith("Traceback") for s in summaries)
    assert any(s.startswith("Lines around the root failure") for s in summaries)
    table = postmortem._cascade_section(analysis).blocks[0]
    assert isinstance(table, postmortem.Table)
    assert table.rows[0][:2] == ["1", "0 s"] and "LS604 node-failure" in table.rows[0]


def test_failure_sequence_says_how_long_before_the_root_a_line_was(samples: dict[str, Analysis]) -> None:
    """node-failure: node01's closing signals at 04:19:16.689 are 0.819 s before the root's moment,
    and the sequence says so (it read 0 s beside that time)."""
    tables = [b for b in postmortem._cascade_section(samples["node-failure"]).blocks if isinstance(b, postmortem.Table)]
    sequence = tables[1]
    assert ["−0.819 s", "2026-11-03 04:19:16.689"] in [row[:2] for row in sequence.rows]


def test_a_recovered_job_gets_no_advice_for_what_it_recovered_from() -> None:
    """The report advises as the terminal does: on the verdict's finding. A job that failed once and
    ran again to the end is healthy; its earlier crash is told as context, with nothing to fix."""
    analysis = analyze([Path(__file__).resolve().parent / "goldens" / "LS301-recovered-after-restart" / "logs"])
    assert analysis.verdict.category.value == "healthy" and analysis.findings and analysis.root_finding is None
    text = render_markdown(analysis)
    advice = text[text.index("## Advice"):text.index("## About this report")]
    assert all(f.advice not in advice for f in analysis.findings) and "LS301" not in advice
