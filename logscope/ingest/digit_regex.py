"""What a regex can tell of a line's digits: the facts the progress prefilter stands on.

The lines of a training loop's progress line differ in their digits alone (the step, the loss, the
time, the rank). :mod:`logscope.ingest.progress_prefilter` reads one line of each such shape with
polars and takes the others to read alike; these say when they must:

* :func:`digit_blind`: a regex that tells no digit from another matches every line of a shape
  alike;
* :func:`digit_relaxed`: a regex that matches wherever another does, and tells no digits apart;
* :func:`digit_reads`: the places of one line where a regex may tell one digit from another. Two
  lines of a shape with the same digits there are matched alike by it, whatever their other
  digits (a year's first two digits tell ``(?:19|2\\d)`` apart; the seconds of the time behind
  them are read by ``\\d\\d`` and never do).

Regexes are read with Python's own parser (the syntax Python's and polars' share).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from re import _constants as op  # type: ignore[attr-defined]
from typing import Any

try:
    from re import _parser as sre  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python before 3.11
    import sre_parse as sre

_DIGITS = frozenset(range(ord("0"), ord("9") + 1))
_ALL_DIGITS = {op.CATEGORY_DIGIT, op.CATEGORY_WORD, op.CATEGORY_NOT_SPACE}
_REPEATS = (op.MAX_REPEAT, op.MIN_REPEAT, getattr(op, "POSSESSIVE_REPEAT", op.MAX_REPEAT))


class _Unread(Exception):
    """A regex whose reading this module cannot follow (a back-reference)."""


def digit_blind(pattern: str) -> bool:
    """Whether ``pattern`` (a regex in the syntax Python's and polars' share) matches two texts that
    differ in their digits alone, digit for digit, at the same places: no literal digit, no class
    that holds some digits but not all. False when Python cannot read it."""
    parsed = _parsed(pattern)
    return parsed is not None and parsed.blind


def digit_relaxed(pattern: str) -> str | None:
    """``pattern`` with each literal digit read as any digit, and each class that holds a digit
    holding them all: a regex that matches wherever ``pattern`` does, and at every text that
    differs from one of those in its digits alone. None where it cannot say (a back-reference, a
    negated class with a digit in it)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 < n and pattern[i + 1].isdigit():
                return None
            out.append(pattern[i:i + 2])
            i += 2
        elif c == "{":  # a count, its digits no text's
            end = pattern.find("}", i)
            if end < 0:
                return None
            out.append(pattern[i:end + 1])
            i = end + 1
        elif pattern.startswith("(?P<", i):  # a group's name
            end = pattern.find(">", i)
            if end < 0:
                return None
            out.append(pattern[i:end + 1])
            i = end + 1
        elif c == "[":
            j = i + 1
            negated = j < n and pattern[j] == "^"
            j += 1 if negated else 0
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            if j >= n:
                return None
            inside = pattern[i + 1:j]
            if re.search(r"(?<!\\)[0-9]", inside):
                if negated:
                    return None
                inside += "0-9"
            out.append("[" + inside + "]")
            i = j + 1
        elif c.isdigit():
            out.append("[0-9]")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def digit_reads(pattern: str, text: str, starts: Iterable[int], begin: int = 0, end: int | None = None,
                any_digit: bool = False) -> frozenset[int] | None:
    """The places of ``text`` (as str indices) holding an ASCII digit that ``pattern`` may tell from
    another digit, matched at each of ``starts`` over ``text[begin:end]`` (the string it is asked
    of: ``^`` holds at ``begin``, ``$`` at ``end``): those where some way through the pattern, from
    some start, tests the digit there against a literal digit or a class that holds some digits but
    not all. Every text alike but for its digits elsewhere is matched alike: every way through the
    pattern tests its characters as it tests ``text``'s, so the same ways lead to the same ends.

    Taken wide wherever that is simpler, never narrow: every way is followed (whichever a match
    would take first), a count's upper bound past its lower is taken as none, and an assertion but
    ``^`` and ``$`` is taken to hold (a lookaround's tests count all the same); a character past
    ASCII passes every class. ``any_digit``: each digit of ``text`` is taken as whichever digit
    passes a test, so that the places hold for every text alike but for its digits (those a way
    through the pattern may test by any of them). None when the pattern holds what this cannot
    follow (a back-reference) or Python cannot read it."""
    parsed = _parsed(pattern)
    if parsed is None:
        return None
    tree, classes, loose = parsed.tree, parsed.classes, parsed.loose
    stop = len(text) if end is None else end
    told: set[int] = set()

    def tested(code: int, value: Any, at: int) -> bool:
        """Whether the character at ``at`` passes the test (noting the place where it tells)."""
        char = text[at]
        if "0" <= char <= "9":
            if code is op.IN:
                telling, some_digit = classes[id(value)]
            else:  # a literal tells, and is some digit's; another digit passes a negated one, any passes '.'
                telling, some_digit = value in _DIGITS, code is not op.LITERAL or value in _DIGITS
            if telling:
                told.add(at)
            if any_digit:
                return some_digit
        if code is op.LITERAL:
            return ord(char) == value or (loose and char.lower() == chr(value).lower())
        if code is op.NOT_LITERAL:
            return ord(char) != value or loose
        if code is op.ANY:
            return char != "\n" or bool(tree.state.flags & re.DOTALL)
        return ord(char) > 127 or loose or _in_class(value, char)

    def walk(items: Any, places: set[int]) -> set[int]:
        for code, value in items:
            if not places:
                break
            places = one(code, value, places)
        return places

    def one(code: int, value: Any, places: set[int]) -> set[int]:
        if code in (op.LITERAL, op.NOT_LITERAL, op.ANY, op.IN):
            return {at + 1 for at in places if at < stop and tested(code, value, at)}
        if code is op.SUBPATTERN:
            return walk(value[-1], places)
        if code is op.BRANCH:
            return set().union(*(walk(branch, places) for branch in value[1]))
        if code in _REPEATS:
            low, high, items = value
            for _ in range(low):
                places = walk(items, places)
            reached = set(places)
            frontier = places if high > low else set()
            while frontier:
                frontier = walk(items, frontier) - reached
                reached |= frontier
            return reached
        if code is op.AT:
            if value in (op.AT_BEGINNING, op.AT_BEGINNING_STRING):
                return {at for at in places if at == begin}
            if value in (op.AT_END, op.AT_END_STRING):
                return {at for at in places if at == stop}
            return places  # a word boundary: taken to hold
        if code in (op.ASSERT, op.ASSERT_NOT):
            direction, items = value
            if direction > 0:
                walk(items, places)
            else:  # a lookbehind's width is fixed: its tests are of the characters before
                width = items.getwidth()[0]
                walk(items, {at - width for at in places if at - width >= begin})
            return places
        if code is getattr(op, "ATOMIC_GROUP", None):
            return walk(value, places)
        raise _Unread(code)

    try:
        walk(tree, {at for at in starts if begin <= at <= stop})
    except (_Unread, RecursionError):
        return None
    return frozenset(told)


@dataclass(frozen=True)
class _Parsed:
    """A pattern as Python's parser reads it, and what the module asks of it."""

    tree: Any
    # of each class in it (by its ``id``: the tree is kept with it) whether it tells digits apart,
    # and whether some digit passes it
    classes: dict[int, tuple[bool, bool]]
    loose: bool  # whether a part of it ignores case (then taken to ignore it all: wide)
    blind: bool  # whether nothing in it tells one digit from another (digit_blind)


@lru_cache(maxsize=512)
def _parsed(pattern: str) -> _Parsed | None:
    """``pattern`` parsed (the prefix stack takes 2 ms) and walked once; None when Python cannot
    read it."""
    try:
        tree = sre.parse(_in_python(pattern))
    except (re.error, RecursionError):
        return None
    classes: dict[int, tuple[bool, bool]] = {}
    loose = bool(tree.state.flags & re.IGNORECASE)
    blind = True

    def note(items: Any) -> None:
        nonlocal loose, blind
        for code, value in items:
            if code in (op.LITERAL, op.NOT_LITERAL):
                blind = blind and not _telling(code, value)
            elif code is op.IN:
                classes[id(value)] = (_telling(code, value), any(_in_class(value, chr(d)) for d in sorted(_DIGITS)))
                blind = blind and not classes[id(value)][0]
            elif code is op.SUBPATTERN:
                loose = loose or bool(value[1] & re.IGNORECASE)
                note(value[-1])
            elif code in _REPEATS:
                note(value[2])
            elif code is op.BRANCH:
                for branch in value[1]:
                    note(branch)
            elif code in (op.ASSERT, op.ASSERT_NOT):
                note(value[1])
            elif code is getattr(op, "ATOMIC_GROUP", None):
                note(value)
            elif code in (op.GROUPREF, op.GROUPREF_EXISTS):
                blind = False

    note(tree)
    return _Parsed(tree, classes, loose, blind)


# A group opened by flags for the rest of it, ``(?:(?i)...)``: Python takes global flags only at
# the start of a pattern; polars (Rust's regex) takes them anywhere, for the rest of the group.
_FLAGS_OPENING = re.compile(r"\(\?:\(\?([aiLmsux]+)\)")


def _in_python(pattern: str) -> str:
    """``pattern`` as Python reads it: a group opened by its flags written as scoped to the group
    (``(?i:...)``), which it means."""
    return _FLAGS_OPENING.sub(r"(?\1:", pattern)


def _telling(code: int, value: object) -> bool:
    """Whether a one-character test tells some digit from another."""
    if code in (op.LITERAL, op.NOT_LITERAL):
        return value in _DIGITS
    if code is not op.IN:
        return False
    held: set[int] = set()
    for kind, item in value:  # type: ignore[attr-defined]
        if kind is op.LITERAL and item in _DIGITS:
            held.add(item)
        elif kind is op.RANGE:
            held |= _DIGITS & set(range(item[0], item[1] + 1))
        elif kind is op.CATEGORY and item in _ALL_DIGITS:
            held |= _DIGITS
    return bool(held) and held != _DIGITS


_CATEGORIES: dict[int, Callable[[str], bool]] = {
    op.CATEGORY_DIGIT: str.isdecimal,
    op.CATEGORY_SPACE: str.isspace,
    op.CATEGORY_WORD: lambda char: char.isalnum() or char == "_",
}
_NOT_CATEGORIES = {
    op.CATEGORY_NOT_DIGIT: op.CATEGORY_DIGIT,
    op.CATEGORY_NOT_SPACE: op.CATEGORY_SPACE,
    op.CATEGORY_NOT_WORD: op.CATEGORY_WORD,
}


def _in_class(items: object, char: str) -> bool:
    """Whether an ASCII ``char`` is in a class (``[...]``, parsed)."""
    code_point = ord(char)
    negated = False
    found = False
    for kind, item in items:  # type: ignore[attr-defined]
        if kind is op.NEGATE:
            negated = True
        elif kind is op.LITERAL:
            found |= code_point == item
        elif kind is op.RANGE:
            found |= item[0] <= code_point <= item[1]
        elif kind is op.CATEGORY:
            if item in _CATEGORIES:
                found |= _CATEGORIES[item](char)
            elif item in _NOT_CATEGORIES:
                found |= not _CATEGORIES[_NOT_CATEGORIES[item]](char)
            else:
                return True  # a category this does not know: taken to pass
        else:
            return True
    return found != negated


__all__ = ["digit_blind", "digit_reads", "digit_relaxed"]
