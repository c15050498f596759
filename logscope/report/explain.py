"""``logscope explain``: detector and lint-rule documentation as terminal text.

The documentation lives in docstrings written in reStructuredText (the detectors' module
docstrings, the lint rules' function docstrings). A terminal shows it without the markup:
````code```` becomes the code itself (styled), ``*emphasis*`` its words, and a literal-block
marker ``::`` a plain colon (or nothing, on a line of its own).
"""

from __future__ import annotations

import re

from rich.text import Text

_LITERAL = re.compile(r"``((?:(?!\n\s*\n).)+?)``", re.S)
_EMPHASIS = re.compile(r"(?<![\w*`])\*([^*\s][^*]*?)\*(?![\w*])")


def plain_line(line: str) -> str:
    """One docstring line without reST inline markup (for tests and plain output)."""
    return strip_markup(line).plain


def strip_markup(text: str) -> Text:
    """``text`` (a docstring) as rich Text: code spans styled, markup gone."""
    kept = []
    for line in text.splitlines():
        if line.strip() == "::":
            continue  # a literal-block marker alone: the indented block follows
        if line.rstrip().endswith("::"):
            line = line.rstrip()[:-1]  # "Example::" -> "Example:"
        kept.append(_EMPHASIS.sub(r"\1", line))
    joined = "\n".join(kept)
    out = Text()
    position = 0
    for match in _LITERAL.finditer(joined):  # a code span may run over a line break
        out.append(joined[position:match.start()])
        out.append(match.group(1), style="cyan")
        position = match.end()
    out.append(joined[position:])
    return out
