"""Find a job's log files: folders walked in a stable order, files named on the command line,
and the files met in a folder that are not logs by their names.

* inputs are folders (walked recursively, symbolic links to folders not followed, so a link loop
  cannot trap the walk), files, or both; a file reached twice is read once;
* documents, configs, code, images and checkpoints met in a folder are skipped by name
  (:data:`NOT_LOG_SUFFIXES`); a file named on the command line is always read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from logscope.errors import InputError, printable
from logscope.parsers.filenames import DEFAULT_PATTERNS, NameInfo, describe, strip_compression
from logscope.stdin import display_name
from logscope.walk import walk

# Met while walking a folder, these are not logs: documents, configs, code, images, checkpoints.
# A file named on the command line is always read, whatever its name.
NOT_LOG_SUFFIXES = frozenset((
    ".md", ".rst", ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".py", ".ipynb", ".sh",
    ".slurm", ".sbatch", ".csv", ".tsv", ".html", ".htm", ".js", ".css", ".png", ".jpg", ".jpeg", ".gif",
    ".svg", ".pdf", ".pt", ".pth", ".ckpt", ".bin", ".safetensors", ".npy", ".npz", ".pkl", ".pickle",
    ".parquet", ".arrow", ".h5", ".tar", ".zip", ".so", ".o", ".pyc", ".whl", ".lock",
))


@dataclass(frozen=True)
class SourceFile:
    path: Path
    display: str  # how the file is named in output: the input path joined with the relative path
    info: NameInfo
    compression: str | None
    size: int


@dataclass(frozen=True)
class Skipped:
    display: str
    reason: str


def discover(inputs: Sequence[Path], patterns: tuple[str, ...] = DEFAULT_PATTERNS,
             exclude: Sequence[Path] = ()) -> tuple[list[SourceFile], list[Skipped]]:
    """List the files under ``inputs`` in a stable order; raise InputError if none exist.

    Files in ``exclude`` (SLURM's record saved beside the logs, read by logscope.accounting) are
    neither logs nor skipped: they are left out of both lists."""
    left_out = {p.resolve() for p in exclude}
    found: list[SourceFile] = []
    skipped: list[Skipped] = []
    ignored: list[str] = []
    seen: set[tuple[int, int]] = set()
    for given in inputs:
        if not given.exists() and not given.is_symlink():
            raise InputError(f"{given}: no such file or directory")
        if given.is_dir():
            walk_errors: list[OSError] = []
            for root, dirs, files in walk(given, onerror=walk_errors.append):
                dirs.sort()
                for name in sorted(files):
                    if left_out and (Path(root) / name).resolve() in left_out:
                        continue
                    if is_not_a_log(name):
                        ignored.append(str(Path(root) / name))
                        continue
                    _add(Path(root) / name, given, found, skipped, seen, patterns)
            for error in walk_errors:
                skipped.append(Skipped(printable(str(error.filename)), f"cannot list folder ({error.strerror})"))
        elif left_out and given.resolve() in left_out:
            continue
        elif Path(strip_compression(given.name)[0]).suffix.lower() in NOT_LOG_SUFFIXES and is_not_a_log(given.name):
            # named on the command line, but its name says what it is: a document, a config, a
            # script (a README quoting a log line is still no job log)
            skipped.append(Skipped(printable(str(given)), f"a {Path(given.name).suffix} file by its name, not a log"))
        else:
            _add(given, None, found, skipped, seen, patterns)
    if ignored:
        shown = ", ".join(printable(Path(p).name) for p in ignored[:4]) + (" ..." if len(ignored) > 4 else "")
        skipped.append(Skipped(f"{len(ignored)} file(s)", f"not logs by their names ({shown})"))
    return found, skipped


def is_not_a_log(name: str) -> bool:
    """Whether a file met while walking a folder is skipped by its name (see NOT_LOG_SUFFIXES)."""
    plain, _ = strip_compression(name)
    if plain.endswith("error.json"):
        return False  # torchrun's per-worker error file
    return name.startswith(".") or Path(plain).suffix.lower() in NOT_LOG_SUFFIXES


def _add(path: Path, base: Path | None, found: list[SourceFile], skipped: list[Skipped],
         seen: set[tuple[int, int]], patterns: tuple[str, ...]) -> None:
    display = display_name(path) or printable(str(path))  # a name may hold a newline, or bytes that are not UTF-8
    try:
        stat = path.stat()
    except OSError as error:
        skipped.append(Skipped(display, f"cannot read ({error.strerror or error})"))
        return
    if not path.is_file():
        skipped.append(Skipped(display, "not a regular file"))
        return
    key = (stat.st_dev, stat.st_ino)
    if key in seen:
        return
    seen.add(key)
    _, compression = strip_compression(path.name)
    found.append(SourceFile(path, display, describe(Path(printable(str(named_path(path, base)))), patterns),
                            compression, stat.st_size))


def named_path(path: Path, base: Path | None = None) -> Path:
    """The part of ``path`` whose names say what the file is: its path below ``base`` (the folder
    given), and at least its last three names, so that a torchrun ``attempt_N/<local_rank>/`` file
    is known as such whether its folder, a folder inside its tree, or the file itself was given."""
    below = len(path.relative_to(base).parts) if base is not None else 1
    return Path(*path.parts[-max(3, below):])
