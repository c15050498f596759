"""``logscope lint`` output formats, as ruff writes them: text, JSON, GitHub annotations, SARIF.

Nothing here checks anything: the problems come from :mod:`logscope.lint`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from logscope import __version__
from logscope.choices import LintFormat
from logscope.lint import RULES, Problem

FORMATS = tuple(f.value for f in LintFormat)
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def text(problems: Sequence[Problem], console: Console) -> None:
    """``path:line:col: CODE severity: message`` and its fix; paths and messages are printed as
    text (a ``[v2]`` in a file name is not markup)."""
    for p in problems:
        style = "red" if p.severity == "error" else "yellow"
        # One unwrapped line per problem, so editors and CI can jump to path:line:col; the severity
        # is written out, not only coloured (a log, a pipe or NO_COLOR shows no colour).
        console.print(Text.assemble((f"{p.path}:{p.line}:{p.column}:", "bold"), " ", (p.code, style), " ",
                                    (f"{p.severity}:", style), " ", p.message), soft_wrap=True)
        console.print(Text(f"    fix: {p.fix}", style="dim"), soft_wrap=True)
    noun = "problem" if len(problems) == 1 else "problems"
    console.print(Text(f"Found {len(problems)} {noun}." if problems else "All checks passed!"))


def statistics(problems: Sequence[Problem]) -> list[tuple[int, str, str]]:
    """(count, code, rule name), most frequent first, as ``ruff --statistics``."""
    names = {code: name for code, name, _ in RULES}
    counts = Counter(p.code for p in problems)
    return sorted(((n, code, names.get(code, "")) for code, n in counts.items()), key=lambda r: (-r[0], r[1]))


def print_statistics(problems: Sequence[Problem], console: Console) -> None:
    rows = statistics(problems)
    width = max((len(str(n)) for n, _, _ in rows), default=1)
    for n, code, name in rows:
        console.print(Text(f"{n:>{width}}  {code}  {name}"), soft_wrap=True)


def _annotation_escape(value: str, *, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return value.replace(":", "%3A").replace(",", "%2C") if prop else value


def github(problems: Sequence[Problem]) -> str:
    """GitHub Actions workflow commands: ``::error file=...,line=...,col=...,title=CODE::message``."""
    lines = []
    for p in problems:
        level = "error" if p.severity == "error" else "warning"
        props = (f"file={_annotation_escape(p.path, prop=True)},line={p.line},col={p.column},"
                 f"title={_annotation_escape(p.code, prop=True)}")
        lines.append(f"::{level} {props}::{_annotation_escape(f'{p.code} {p.message} (fix: {p.fix})')}")
    return "\n".join(lines) + ("\n" if lines else "")


def sarif(problems: Sequence[Problem]) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: the rules, and one result per problem."""
    import inspect

    from logscope.report.explain import strip_markup

    docs = {code: strip_markup(inspect.cleandoc(fn.__doc__ or name)).plain for code, name, fn in RULES}
    rules = [{"id": code, "name": name, "shortDescription": {"text": docs[code].splitlines()[0]},
              "fullDescription": {"text": docs[code]}} for code, name, _ in RULES]
    index = {code: i for i, (code, _, _) in enumerate(RULES)}
    results = [{
        "ruleId": p.code,
        "ruleIndex": index.get(p.code, -1),
        "level": "error" if p.severity == "error" else "warning",
        "message": {"text": f"{p.message} (fix: {p.fix})"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": p.path},
                                            "region": {"startLine": p.line, "startColumn": p.column}}}],
    } for p in problems]
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "logscope", "version": __version__, "rules": rules}},
        "results": results,
    }]}
