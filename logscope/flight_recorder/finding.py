"""Where a job's Flight Recorder dumps are: among its logs, where ``--fr`` says, where its logs say.

PyTorch writes one dump per rank, named ``<prefix><rank>``: the prefix is
``TORCH_FR_DUMP_TEMP_FILE`` (older releases ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE``), by default
``~/.cache/torch/comm_lib_trace_rank_`` in current releases and ``/tmp/nccl_trace_rank_`` before
(``torch/csrc/distributed/c10d/FlightRecorder.cpp``, ``DebugInfoWriter::getWriter``): a folder on
each node's own disk unless the job sets a shared one. Dumps are found

* in the job's folders, walked as the logs are (links to folders not followed): a file whose name
  ends with a number (or ``.json``, ``.pkl``, ``.pickle``) and whose first bytes are a pickle or a
  JSON object holding the dump's keys (a folder of dumps alone is a job too);
* at ``--fr PATH``: a dump, a folder of dumps, or a prefix (``/shared/fr/trace_`` reads
  ``trace_0``, ``trace_1`` ...);
* at the prefix the job's batch script sets (``TORCH_FR_DUMP_TEMP_FILE=/shared/fr/trace_``, when
  SLURM's record holds the script: ``logscope analyze JOBID``);
* at the paths the logs name: c10d's ``ProcessGroupNCCL dumping nccl trace to PATH`` and the
  writer's ``Finished writing NCCLPG debug info to PATH`` (``ProcessGroupNCCL.cpp``,
  ``FlightRecorder.cpp``), and a prefix set in the logs (``TORCH_FR_DUMP_TEMP_FILE=...`` echoed by
  ``set -x``): the message catalogue recognises those lines as ``fr_dump_named`` events while the
  logs are read (``c10d.fr.*``, ``torch.env.fr_dump_temp_file``), so no log is read twice for
  them. A path named there that is not on this machine (a node's ``/tmp``) is remembered: the
  "next time" hint names it.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from logscope.errors import UsageError, printable
from logscope.ingest.discovery import Skipped
from logscope.knowledge import by_id
from logscope.parsers.regex_ascii import ascii_classes
from logscope.walk import walk

DEFAULT_PREFIX = "~/.cache/torch/comm_lib_trace_rank_"
OLD_DEFAULT_PREFIX = "/tmp/nccl_trace_rank_"
SNIFF_BYTES = 512

_DUMP_NAME = re.compile(r"(?:\d+(?:\.json|\.pkl|\.pickle)?|\.json|\.pkl|\.pickle)$")
_PICKLE_KEYS = (b"pg_config", b"entries", b"pg_status")
_JSON_KEYS = (b'"comm_lib_version"', b'"entries"', b'"nccl_version"', b'"pg_config"', b'"pg_status"')
# The catalogue's message of a dump prefix set in an environment: a batch script sets it the same way.
PREFIX_MESSAGE = "torch.env.fr_dump_temp_file"


@dataclass
class Found:
    """The dumps found, what was passed over and why, and the dump paths the logs name that are
    not on this machine."""

    dumps: list[Path] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    named_elsewhere: list[str] = field(default_factory=list)
    # the dump prefixes the logs set (TORCH_FR_DUMP_TEMP_FILE=...)
    prefixes: list[str] = field(default_factory=list)

    def add(self, path: Path) -> None:
        if all(not _same(path, known) for known in self.dumps):
            self.dumps.append(path)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return a == b


def sniff(path: Path) -> str | None:
    """``"pickle"`` or ``"json"`` when the file's first bytes are those of a Flight Recorder dump."""
    try:
        with path.open("rb") as stream:
            head = stream.read(SNIFF_BYTES)
    except OSError:
        return None
    if len(head) > 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "pickle" if any(key in head for key in _PICKLE_KEYS) else None
    text = head.lstrip()
    if text.startswith(b"{") and any(key in text for key in _JSON_KEYS):
        return "json"
    return None


def could_be_dump(name: str) -> bool:
    """Whether a file met in a folder is worth sniffing: PyTorch names a dump ``<prefix><rank>``."""
    return bool(_DUMP_NAME.search(name))


def find_in_folders(inputs: Sequence[Path]) -> list[Path]:
    """The dumps among the job's inputs: files named on the command line that sniff as dumps, and
    those met walking its folders."""
    out: list[Path] = []
    for given in inputs:
        if given.is_dir():
            for root, dirs, files in walk(given):  # however deep (logscope.walk)
                dirs.sort()
                for name in sorted(files):
                    path = Path(root) / name
                    if could_be_dump(name) and path.is_file() and sniff(path):
                        out.append(path)
        elif given.is_file() and sniff(given):
            out.append(given)
    return out


def find_given(paths: Sequence[Path], found: Found) -> None:
    """The dumps at each ``--fr PATH``: a dump, a folder of them, or a prefix; UsageError when a
    path is none of these."""
    for given in paths:
        if given.is_dir():
            dumps = find_in_folders([given])
            if not dumps:
                found.skipped.append(Skipped(printable(str(given)), "no Flight Recorder dump in this folder"))
            for dump in dumps:
                found.add(dump)
        elif given.is_file():
            if sniff(given):
                found.add(given)
            else:
                found.skipped.append(Skipped(printable(str(given)), "not a Flight Recorder dump (pickle or JSON)"))
        else:
            matches = _with_prefix(str(given))
            if not matches:
                raise UsageError(f"--fr {printable(str(given))}: no such dump, folder of dumps or dump prefix")
            for dump in matches:
                found.add(dump)


def _with_prefix(prefix: str) -> list[Path]:
    """``PREFIX<rank>`` files (also ``.json``), in rank order, that sniff as dumps."""
    expanded = Path(prefix).expanduser()
    stem = expanded.name if not prefix.endswith("/") else ""
    folder = expanded.parent if stem else expanded
    out = []
    try:
        candidates = sorted(folder.glob(glob.escape(stem) + "*"))
    except OSError:
        return []
    for path in candidates:
        rest = path.name[len(stem):]
        if re.fullmatch(r"\d+(?:\.json|\.pkl|\.pickle)?", rest) and path.is_file() and sniff(path):
            out.append(path)
    from logscope.flight_recorder.dump import rank_from_name

    return sorted(out, key=lambda p: (rank_from_name(p.name) or 0, p.name))


def find_named(named: Iterable[tuple[Path, str | None, str]], found: Found) -> None:
    """The dumps at the paths the logs name, and the prefixes they set (see the module docstring):
    ``named`` holds, for each line that names one, its log file, the variable it sets (a prefix;
    None: the line names a dump) and the path or prefix, as the catalogue reads them."""
    for log, variable, value in named:
        if variable is None:
            path_named = value.rstrip(".,;:'\")]")
            path = _resolve(path_named, log)
            if path is not None and sniff(path):
                found.add(path)
            elif path_named not in found.named_elsewhere:
                found.named_elsewhere.append(path_named)
        elif value not in found.prefixes:
            found.prefixes.append(value)
            for dump in _with_prefix(value if Path(value).expanduser().is_absolute() else str(log.parent / value)):
                found.add(dump)


def prefixes_in_script(text: str) -> list[str]:
    """The dump prefixes a batch script sets (``export TORCH_FR_DUMP_TEMP_FILE=...``), absolute
    ones only (a relative one is relative to a working folder the script does not say)."""
    found = []
    for match in _prefix_set().finditer(text):
        prefix = match.group("value")
        if prefix.startswith("/") and prefix not in found:
            found.append(prefix)
    return found


@cache
def _prefix_set() -> re.Pattern[str]:
    """The catalogue's regex of a dump prefix set (:data:`PREFIX_MESSAGE`), for Python's re."""
    message = by_id(PREFIX_MESSAGE)
    assert message is not None and message.match is not None, PREFIX_MESSAGE
    return re.compile(ascii_classes(message.match))


def find_prefixed(prefixes: Sequence[str], found: Found) -> None:
    """The dumps named ``<prefix><rank>`` for each prefix (a prefix with no dump: none)."""
    for prefix in prefixes:
        if prefix not in found.prefixes:
            found.prefixes.append(prefix)
        for dump in _with_prefix(prefix):
            found.add(dump)


def _resolve(named: str, log: Path) -> Path | None:
    path = Path(named).expanduser()
    for candidate in ([path] if path.is_absolute() else [log.parent / path]):
        if candidate.is_file():
            return candidate
    return None


__all__ = ["DEFAULT_PREFIX", "OLD_DEFAULT_PREFIX", "PREFIX_MESSAGE", "Found", "could_be_dump", "find_given",
           "find_in_folders", "find_named", "find_prefixed", "prefixes_in_script", "sniff"]
