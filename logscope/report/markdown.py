"""Escaping for the Markdown report: log text can never become Markdown markup.

Plain text is backslash-escaped (:func:`md_text`); log text goes in code spans (:func:`md_code`)
or fenced blocks (:func:`md_block`) whose backtick fence is longer than any backtick run inside.
The templates (logscope/report/templates/*.md) use these as filters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from logscope.textsafe import shortened

MAX_TEXT = 500


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return shortened(text.replace("\r", " ").replace("\n", " "), limit)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&!#])")


_MD_LEADING = re.compile(r"^(\s*)([-+=]|\d+(?=[.)]))")


def md_text(text: str) -> str:
    """Plain text for Markdown: one line, markup characters backslash-escaped.

    A leading ``-``, ``+``, ``=`` or ``1.`` is escaped too, so text placed at the start of a line
    or a list item cannot open a list or a heading underline.
    """
    escaped = _MD_SPECIAL.sub(r"\\\1", _clip(text, 4000))
    match = _MD_LEADING.match(escaped)
    if match is None:
        return escaped
    if match.group(2)[0].isdigit():  # "1." -> "1\."
        end = match.end()
        return escaped[:end] + "\\" + escaped[end:]
    return escaped[: match.start(2)] + "\\" + escaped[match.start(2):]


def md_code(text: str, *, in_table: bool = False) -> str:
    """An inline code span that no backtick in ``text`` can close (and no ``|`` can split a table)."""
    text = _clip(text)
    if not text:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    if in_table:
        text = text.replace("|", "\\|")
    return f"{fence}{pad}{text}{pad}{fence}"


def md_block(lines: Sequence[str]) -> str:
    """A fenced code block whose fence is longer than any backtick run inside."""
    body = "\n".join(_clip(line) for line in lines)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


__all__ = ["md_block", "md_code", "md_text"]
