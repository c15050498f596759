"""The ``logscope`` command: a thin typer layer over the library.

Exit codes (the same for every command):

* ``0`` — the job looks healthy (``analyze``), or the command did what it was asked;
* ``1`` — a failure was found (``analyze``), or lint problems were found (``lint``);
* ``2`` — usage error, unreadable or unusable input, or an internal error.

:func:`main` is the only place where exceptions become messages and exit codes: a
:class:`~logscope.errors.LogscopeError` prints one ``Error: ...`` line; anything else prints one
``internal error`` line (the traceback only with ``--debug`` or ``LOGSCOPE_DEBUG=1``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from logscope import __version__
from logscope.errors import LogscopeError, UsageError

app = typer.Typer(
    name="logscope",
    help="Find what failed first, on which node and rank, in a SLURM/torchrun/NCCL training job's logs.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

FormatOption = Annotated[str, typer.Option("--format", "-f", help="Output format: text or json.",
                                           case_sensitive=False)]
PatternOption = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045 - typer needs Optional
    "--pattern", "-p", help="SLURM --output filename pattern of the logs (e.g. '%x-%j-%N.out'); repeatable. "
    "Default: the common SLURM patterns.")]
SelectOption = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--select", help="Run only detectors whose code or name starts with this (e.g. LS1, LS301); repeatable.")]
IgnoreOption = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--ignore", help="Skip detectors whose code or name starts with this; repeatable.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"logscope {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
) -> None:
    if debug:
        os.environ["LOGSCOPE_DEBUG"] = "1"


@app.command()
def analyze(
    paths: Annotated[list[Path], typer.Argument(help="Job folder(s) and/or log files.", show_default=False)],
    output_format: FormatOption = "text",
    pattern: PatternOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show each finding's explanation and evidence.")]
    = False,
    charts: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--charts", help="Also save the charts (PNG and SVG) into this folder.")] = None,
) -> int:
    """Analyse one job's logs and print the verdict.

    Example: logscope analyze job-12345/ --format json
    """
    from logscope.analysis import analyze as run_analysis

    fmt = _format(output_format)
    patterns = _patterns(pattern)
    chart_dir = _output_dir(charts, paths) if charts is not None else None
    with _progress(paths, patterns) as hook:
        result = run_analysis(paths, patterns=patterns, select=select, ignore=ignore, on_progress=hook)
    if chart_dir is not None:
        from logscope.report.charts import save_charts

        save_charts(result, chart_dir)
    if fmt == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=2, default=str) + "\n")
    else:
        from logscope.report.terminal import print_analysis

        print_analysis(result, _console(), verbose=verbose)
    return 1 if result.failed else 0


@app.command()
def explain(code: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="Detector code or name (LS101, collective-hang). Omit to list all.")] = None) -> int:
    """Print what a detector flags, the evidence it reads, why it matters and what to do."""
    from logscope.detectors import REGISTRY, by_code

    console = _console()
    if code is None:
        for detector in REGISTRY:
            summary = detector.doc().splitlines()[0] if detector.doc() else ""
            console.print(f"[bold]{detector.code}[/bold] {detector.name:<28} {detector.category.value:<10} "
                          f"{summary.split(':', 1)[-1].strip()}", highlight=False)
        return 0
    chosen = by_code(code)
    if chosen is None:
        raise UsageError(f"no detector {code!r}; run 'logscope explain' to list them")
    console.print(f"[bold]{chosen.code} {chosen.name}[/bold]  (category: {chosen.category.value})",
                  highlight=False)
    typer.echo(chosen.doc().split("\n", 1)[-1].strip())
    return 0


# ---------------------------------------------------------------------------------------------


def _format(value: str) -> str:
    fmt = value.lower()
    if fmt not in ("text", "json"):
        raise UsageError(f"unknown format {value!r}: use text or json")
    return fmt


def _patterns(given: list[str] | None) -> tuple[str, ...]:
    from logscope.parsers.filenames import DEFAULT_PATTERNS, compile_pattern

    if not given:
        return DEFAULT_PATTERNS
    for pattern in given:
        compile_pattern(pattern)  # raises UsageError with the reason
    return tuple(given)


def _console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def _output_dir(target: Path, inputs: Sequence[Path]) -> Path:
    """Refuse to write into the analysed log folders: logscope never modifies them."""
    resolved = target.resolve()
    for given in inputs:
        base = given.resolve()
        folder = base if base.is_dir() else base.parent
        if resolved == folder or folder in resolved.parents:
            raise UsageError(f"{target} is inside the log folder {given}; write outputs elsewhere "
                             "(logscope never writes into the logs it reads)")
    return target


class _NoProgress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _progress(paths: Sequence[Path], patterns: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """A rich progress bar on stderr for big inputs read from a terminal."""
    if not sys.stderr.isatty():
        return _NoProgress()
    from logscope.ingest import discover

    try:
        files, _ = discover(paths, patterns)
    except LogscopeError:
        return _NoProgress()
    total = sum(f.size for f in files)
    if total < 32 * 1024 * 1024:
        return _NoProgress()
    from contextlib import contextmanager

    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    @contextmanager
    def bar():  # type: ignore[no-untyped-def]
        progress = Progress(TextColumn("reading logs"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                            console=Console(stderr=True), transient=True)
        task = progress.add_task("read", total=total)
        with progress:
            yield lambda source, n: progress.advance(task, n)

    return bar()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code instead of exiting (tests call this)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = app(args=args, prog_name="logscope", standalone_mode=False)
        return int(result) if isinstance(result, int) else 0
    except typer.Exit as done:
        return int(done.exit_code)
    except typer.Abort:
        sys.stderr.write("Aborted.\n")
        return 130
    except LogscopeError as error:
        sys.stderr.write(f"Error: {error}\n")
        return error.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        return 130
    except BrokenPipeError:
        # `logscope ... | head`: the reader went away; that is not an error of ours.
        with contextlib.suppress(OSError):
            sys.stdout = Path(os.devnull).open("w")  # noqa: SIM115 - stays open until exit
        return 0
    except Exception as error:
        if hasattr(error, "exit_code") and hasattr(error, "show"):
            # typer's (click's) own usage errors: bad option, missing argument, --help exits
            error.show()
            return int(error.exit_code) if error.exit_code else 0
        if os.environ.get("LOGSCOPE_DEBUG"):
            traceback.print_exc()
        first = str(error).splitlines()[0][:300] if str(error) else ""
        sys.stderr.write(f"Error: internal error ({type(error).__name__}: {first}); "
                         "rerun with --debug for details and report it\n")
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
