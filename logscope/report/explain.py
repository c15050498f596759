"""``logscope explain``: detector and lint-rule documentation as terminal text.

The documentation lives in docstrings written in reStructuredText (the detectors' module
docstrings, the lint rules' function docstrings). A terminal shows it without the markup:
````code```` becomes the code itself (styled), ``*emphasis*`` its words, and a literal-block
marker ``::`` a plain colon (or nothing, on a line of its own).
"""

from __future__ import annotations

import re

from rich.text import Text

_LITERAL = re.compile(r"``(.+?)``")
_EMPHASIS = re.compile(r"(?<![\w*`])\*([^*\s][^*]*?)\*(?![\w*])")


def plain_line(line: str) -> str:
    """One docstring line without reST inline markup (for tests and plain output)."""
    return strip_markup(line).plain


def strip_markup(text: str) -> Text:
    """``text`` (a docstring) as rich Text: code spans styled, markup gone."""
    out = Text()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "::":
            continue  # a literal-block marker alone: the indented block follows
        if line.rstrip().endswith("::"):
            line = line.rstrip()[:-1]  # "Example::" -> "Example:"
        line = _EMPHASIS.sub(r"\1", line)
        position = 0
        for match in _LITERAL.finditer(line):
            out.append(line[position:match.start()])
            out.append(match.group(1), style="cyan")
            position = match.end()
        out.append(line[position:])
        if i < len(lines) - 1:
            out.append("\n")
    return out
