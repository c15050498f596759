"""SLURM output filename patterns (``--output``/``--error``) and the names they give a job's files.

The expansion follows SchedMD/slurm src/common/print_fields.c (``expand_stdio_fields``, called by
``fname_create`` in src/slurmd/common/fname.c for each step's processes): ``%%`` is ``%``, ``%A``
the array's job id (the job id outside an array), ``%a`` the array task, ``%j`` the job id, ``%J``
``jobid.stepid``, ``%s`` the step, ``%N`` the (first step) node's short name, ``%n`` the node's
index in the step, ``%t`` the task (rank), ``%u`` the user, ``%x`` the job name, and in newer
releases ``%b`` (the array task modulo 10), ``%r`` (the restart count) and ``%S`` (the SLUID); a
number after ``%`` zero-pads (at most 10); an unknown letter is kept with its ``%``; a ``\\`` anywhere turns
expansion off; a relative path is relative to the job's working directory. Nothing else is special:
SLURM opens the name it made, so ``[``, ``]``, ``*`` and ``?`` are the file name's own characters.

What the record does not say (a task id, the step an srun ran as, a shell variable of the batch
script) may stand for any value, but only in the file's name: a folder must be known whole, so that
looking for a job's files reads one folder, never a walk. ``%N``/``%n`` without a node stand for
any node of the job (each name found is checked against the job's nodes), so a pattern is one rule
whatever the number of nodes; a folder that holds ``%N`` is one folder per node.
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass

_FIELD = re.compile(r"%(\d*)([%AabJjrSsNntux])|%(\d*)(.)", re.DOTALL)
# Unknown values, as regexes over a file name: numbers where SLURM prints numbers.
_DIGITS = r"\d+"
_ANY = r"[^/]*"
_UNKNOWN = {"A": _DIGITS, "a": _DIGITS, "b": r"\d", "j": _DIGITS, "r": _DIGITS, "S": r"[0-9A-Za-z]+",
            "s": r"(?:\d+|batch|extern|interactive)", "t": _DIGITS, "u": r"[^/]+", "x": _ANY}
# Where a shell variable of the batch script stood (srun_output_patterns): any text.
SHELL_VALUE = "\x00"
_MAX_WIDTH = 10
# The most nodes a %N of a name is matched as alternatives of (a regex of 4,096 names compiles in
# 0.1 s; 16,384 in 0.3 s, once per pattern).
MAX_NODE_ALTERNATIVES = 4096


@dataclass(frozen=True)
class PatternContext:
    """What is known of the process whose output a pattern names; None is unknown."""

    job_id: str
    array_job_id: str | None = None
    array_task_id: str | None = None
    step: str | None = None
    node: str | None = None
    node_index: int | None = None
    task: int | None = None
    user: str | None = None
    job_name: str | None = None


@dataclass(frozen=True)
class NameRule:
    """Where a pattern puts a job's files: a folder (made of known values only) and a rule for the
    names of the files in it. ``problem`` says why its files are not looked for."""

    pattern: str  # as SLURM (or the batch script) has it
    shown: str  # the expansion, unknown parts as '*'
    folder: str  # as expanded: absolute when the pattern is or a working directory was given
    name: re.Pattern[str]  # fullmatch over a file's name; groups N (%N) and n (%n) name its node
    relative: bool  # relative to the job's working directory
    problem: str | None = None
    # ``name`` with %N as the job's nodes' names (see _node_regex), for a name ``name`` split at
    # another place than a node; compiled only then
    exact: str | None = None

    def matches(self, file_name: str, nodes: tuple[str, ...]) -> bool:
        """Whether ``file_name`` is one this rule gives a node of the job (``nodes``)."""
        match = self.name.fullmatch(file_name)
        if match is None:
            return False
        if self.node_fits(match, nodes):
            return True
        exact = _compiled(self.exact).fullmatch(file_name) if self.exact is not None else None
        return exact is not None and self.node_fits(exact, nodes)

    def node_fits(self, match: re.Match[str], nodes: tuple[str, ...]) -> bool:
        """Whether the node a matched name holds (``%N``, ``%n``) is one of the job's."""
        groups = match.groupdict()
        node, index = groups.get("N"), groups.get("n")
        if index is not None and int(index) >= len(nodes):
            return False
        if node is not None and node not in nodes:
            return False
        return node is None or index is None or nodes[int(index)] == node


def expand_pattern(pattern: str, context: PatternContext, work_dir: str | None = None) -> str:
    """The name ``pattern`` gives ``context``'s file, what is unknown shown as ``*``."""
    rule = name_rule(pattern, context, work_dir)
    return rule.shown


def name_rule(pattern: str, context: PatternContext, work_dir: str | None = None,
              nodes: tuple[str, ...] = ()) -> NameRule:
    """The folder and the file-name rule ``pattern`` gives ``context``'s files (see the module);
    ``nodes``: the job's, which an unknown ``%N`` of the name stands for."""
    relative = not pattern.startswith("/")
    if "\\" in pattern:  # expansion off; SLURM drops the backslashes (remove_path_slashes)
        literal = pattern.replace("\\", "")
        folder, _, name = literal.rpartition("/")
        return _rule(pattern, folder, name, re.escape(name), relative, work_dir, None)
    folder_part, slash, name_part = pattern.rpartition("/")
    unknown: list[str] = []
    folder = _expand(folder_part, context, unknown, regex=False) if slash else ""
    if SHELL_VALUE in folder_part:
        unknown.append("a shell variable of the batch script")
    problem = None
    if unknown:
        problem = (f"its folder depends on {', '.join(dict.fromkeys(unknown))}, which SLURM's record does not say: "
                   "it is not looked for")
    name_shown = _expand(name_part, context, [], regex=False)
    name_regex = _expand(name_part, context, [], regex=True)
    exact = _expand(name_part, context, [], regex=True, nodes=nodes) if nodes and "(?P<N>" in name_regex else None
    if slash and not folder:
        folder = "/"
    return _rule(pattern, folder, name_shown, name_regex, relative, work_dir, problem, exact)


def _rule(pattern: str, folder: str, shown_name: str, name_regex: str, relative: bool, work_dir: str | None,
          problem: str | None, exact: str | None = None) -> NameRule:
    if relative and work_dir:
        folder = posixpath.join(work_dir, folder) if folder else work_dir
    shown = posixpath.join(folder, shown_name) if folder else shown_name
    if problem is None and ".." in folder.split("/"):
        problem = "its folder climbs out of where it names with '..': it is not looked for"
    if problem is None and relative and not work_dir:
        problem = "a relative name, and SLURM's record gives no working directory: it is not looked for"
    return NameRule(pattern, shown, folder, re.compile(name_regex, re.DOTALL), relative, problem, exact)


@functools.lru_cache(maxsize=64)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex, re.DOTALL)


def _expand(text: str, context: PatternContext, unknown: list[str], regex: bool, nodes: tuple[str, ...] = ()) -> str:
    """``text`` with its fields replaced: known values as they are (regex-escaped for a regex),
    unknown ones as ``*`` or a regex of what they may be (their letters added to ``unknown``)."""
    out: list[str] = []
    groups: set[str] = set()
    at = 0
    for match in _FIELD.finditer(text):
        out.append(_literal(text[at:match.start()], regex))
        at = match.end()
        if match.group(2) is None:  # not a field: kept as it is, '%' and all
            out.append(_literal(match.group(0), regex))
            continue
        width = min(int(match.group(1)[:3]), _MAX_WIDTH) if match.group(1) else 0
        letter = match.group(2)
        value = _value(letter, context)
        if value is not None:
            shown = value.zfill(width) if value.isdigit() else value
            out.append(_literal(shown, regex))
            continue
        unknown.append(f"%{letter}")
        if not regex:
            out.append("*")
        elif letter in "Nn":  # any node of the job: checked against them (NameRule.node_fits)
            group = "N" if letter == "N" else "n"
            values = _node_regex(nodes) if letter == "N" else _DIGITS
            out.append(f"(?P={group})" if group in groups else f"(?P<{group}>{values})")
            groups.add(group)
        elif letter == "J":
            out.append(_DIGITS + r"(?:\." + _UNKNOWN["s"] + ")?")
        else:
            out.append(_UNKNOWN[letter])
    out.append(_literal(text[at:], regex))
    return "".join(out)


def _node_regex(nodes: tuple[str, ...]) -> str:
    """Any node of the job: their names as alternatives, so that a name with unknown text beside
    the node (``run-${TAG}-%N.log``) splits where a node is; past MAX_NODE_ALTERNATIVES nodes,
    any text (NameRule.node_fits checks it, and a name that splits elsewhere is missed)."""
    if not nodes or len(nodes) > MAX_NODE_ALTERNATIVES:
        return "[^/]+"
    # longest first: a node whose name starts another's is tried after it
    return "|".join(re.escape(node) for node in sorted(nodes, key=len, reverse=True))


def _literal(text: str, regex: bool) -> str:
    """Literal text of a pattern; a shell variable's place (SHELL_VALUE) is any text."""
    if not regex:
        return text.replace(SHELL_VALUE, "*")
    return _ANY.join(re.escape(part) for part in text.split(SHELL_VALUE))


def _value(letter: str, context: PatternContext) -> str | None:
    """A field's value for ``context``, or None when the record does not say."""
    if letter == "%":
        return "%"
    if letter == "A":
        return context.array_job_id or context.job_id.split("_")[0]
    if letter == "a":
        return context.array_task_id
    if letter == "b":
        return str(int(context.array_task_id) % 10) if context.array_task_id and context.array_task_id.isdigit() \
            else None
    if letter in "rS":  # the restart count and the SLUID: not in the record
        return None
    if letter == "j":
        return _raw_job(context)
    if letter == "J":
        job = _raw_job(context)
        if job is None or (context.step is None):
            return None
        return job if context.step == "batch" else f"{job}.{context.step}"
    values: dict[str, str | int | None] = {"s": context.step, "N": context.node, "n": context.node_index,
                                           "t": context.task, "u": context.user, "x": context.job_name}
    value = values[letter]
    return None if value is None else str(value)


def _raw_job(context: PatternContext) -> str | None:
    """%j: the job's own id; for an array task SLURM prints its own numeric id, which the record
    of the task (``12345_7``) does not carry: unknown then."""
    return context.job_id if "_" not in context.job_id else None


__all__ = ["SHELL_VALUE", "NameRule", "PatternContext", "expand_pattern", "name_rule"]
