r"""``\d`` and ``\w`` read as ASCII in the regexes logscope hands its engines.

Rust's regex crate (polars' engine) reads ``\d`` and ``\w`` as Unicode classes, hundreds of ranges
each, and compiles them into automata of thousands of states. Measured on polars 2.1: the stack of
launcher prefixes (:data:`logscope.parsers.prefix_stack.PREFIX_STACK`, five repetitions of a dozen
alternatives) took 17-36 ms to compile, against 1.3 ms with ``[0-9]`` and ``[0-9A-Za-z_]``; the
whole table of patterns about three times less. Every process pays each compile once: a command,
each read worker, each scan worker.

What logs write in these places is ASCII: numbers, host names, identifiers, hex. The only lines
read otherwise are those with digits or letters of other scripts where a pattern wants a digit or
a word character: a digit such as "٣" did not convert to a number anyway (the cast gave null),
and host names (RFC 1123) are ASCII. Python's ``re`` reads the rewritten regex the same way, so the
two engines of :mod:`logscope.parsers.classify` still agree.

:func:`ascii_classes` rewrites the text of a regex: ``\d`` becomes ``[0-9]`` (``0-9`` inside a
class) and ``\w`` becomes ``[0-9A-Za-z_]``; escaped backslashes and everything else are left as
they are. The regexes are written with ``\d`` and ``\w`` where they are defined (the table of
patterns, the catalogue, the prefixes), since that reads best; they are rewritten where they are
handed to an engine.
"""

from __future__ import annotations

import re
from functools import cache

# Text both engines read alike, a regex rewritten by ascii_classes being given: printable ASCII and
# tabs. Beyond it their classes part (``\s`` and the controls ``\x1c``-``\x1f``, ``\b`` next to a
# letter of another script), so such text is left to polars (logscope.parsers.classify).
plain_text = re.compile(r"[\t -~]*").fullmatch

_OUTSIDE = {"d": "[0-9]", "w": "[0-9A-Za-z_]"}
_INSIDE = {"d": "0-9", "w": "0-9A-Za-z_"}


@cache
def ascii_classes(regex: str) -> str:
    r"""``regex`` with ``\d`` and ``\w`` spelled as their ASCII classes (see the module docstring)."""
    if "\\d" not in regex and "\\w" not in regex:
        return regex
    out: list[str] = []
    i, n = 0, len(regex)
    in_class = False
    while i < n:
        c = regex[i]
        if c == "\\" and i + 1 < n:
            escaped = regex[i + 1]
            table = _INSIDE if in_class else _OUTSIDE
            out.append(table.get(escaped, regex[i:i + 2]))
            i += 2
            continue
        out.append(c)
        i += 1
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            # A ']' first in a class (after an optional '^') is a literal, not its end.
            if i < n and regex[i] == "^":
                out.append("^")
                i += 1
            if i < n and regex[i] == "]":
                out.append("]")
                i += 1
    return "".join(out)


__all__ = ["ascii_classes", "plain_text"]
