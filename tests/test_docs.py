"""Docs are checked by tests: the README's detector table and command help (sqlite-utils style)."""

from __future__ import annotations

import re
from pathlib import Path

from logscope.cli import app
from logscope.detectors import REGISTRY

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- detectors:start -->", "<!-- detectors:end -->"


def detector_table() -> str:
    rows = ["| code | name | category | what it flags |", "|---|---|---|---|"]
    for detector in REGISTRY:
        summary = detector.doc().splitlines()[0].split(":", 1)[-1].strip()
        rows.append(f"| {detector.code} | `{detector.name}` | {detector.category.value} | {summary} |")
    return "\n".join(rows)


def test_readme_lists_every_detector(update_goldens: bool) -> None:
    text = README.read_text()
    assert START in text and END in text
    table = detector_table()
    current = text.split(START, 1)[1].split(END, 1)[0].strip()
    if update_goldens:
        README.write_text(text.replace(current, table) if current else text.replace(START, f"{START}\n{table}"))
        return
    assert current == table, "README detector table is stale: run pytest --update-goldens tests/test_docs.py"


def test_every_command_has_help() -> None:
    import typer.main

    command = typer.main.get_command(app)
    for name, sub in command.commands.items():  # type: ignore[attr-defined]
        assert sub.help and sub.help.strip(), f"command {name} has no help"


def test_readme_quick_start_commands_exist() -> None:
    text = README.read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert any("pip install" in b and "logscope analyze sample_logs/" in b for b in blocks)
    assert any("pytest" in b for b in blocks)
    sample = re.search(r"logscope analyze (sample_logs/[\w./-]+)", text)
    assert sample and (README.parent / sample.group(1)).is_dir(), "the README's sample folder must exist"
