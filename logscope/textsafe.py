"""Log text made safe to show: the one place that says which characters never reach an output.

Terminal escape sequences (a logger's colours, or hostile: clear the screen, set the title),
other control characters, and Unicode bidirectional controls (U+202A-U+202E, U+2066-U+2069,
U+200E/U+200F, U+061C: "Trojan Source" text that displays in another order than it reads) are
dropped from log text as each file's events are completed (:data:`CONTROLS`,
:mod:`logscope.ingest.file_events`) and by anything else that shows log
lines (:func:`drop_controls`); :func:`logscope.errors.printable` escapes the same characters in
file names and messages.
"""

from __future__ import annotations

import re

BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# The characters themselves: every match of CONTROLS holds one (an escape sequence starts with ESC).
CONTROL_CHARACTER = rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI}]"
# A regex (Rust and Python syntax alike) for what is dropped from log text.
CONTROLS = (r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])"
            rf"|{CONTROL_CHARACTER}")
_CONTROLS = re.compile(CONTROLS)


def shortened(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking the cut: one log line quoted
    in a title or a summary stays readable whatever the line's length."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def drop_controls(text: str) -> str:
    """``text`` without escape sequences, control characters and bidi controls."""
    return _CONTROLS.sub("", text)
