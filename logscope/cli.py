"""The ``logscope`` command: a thin typer layer over the library.

Exit codes (the same for every command):

* ``0`` — the job looks healthy (``analyze``), or the command did what it was asked;
* ``1`` — a failure was found (``analyze``), or lint problems were found (``lint``);
* ``2`` — usage error, unreadable or unusable input, or an internal error.

:func:`main` is the only place where exceptions become messages and exit codes: a
:class:`~logscope.errors.LogscopeError` prints one ``Error: ...`` line; anything else prints one
``internal error`` line (the traceback only with ``--debug`` or ``LOGSCOPE_DEBUG=1``).

No ``from __future__ import annotations`` here: typer reads the commands' annotations on every
run, and as strings it evaluates each of them twice (24 ms a run against 6 ms, measured).
"""

import contextlib
import errno
import json
import os
import sys
import traceback
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer

from logscope import __version__
from logscope.choices import (
    Color,
    LintFormat,
    OutputFormat,
    ScanFormat,
    TableFormat,
    WatchFormat,
    complete_codes,
    complete_detectors,
    complete_lint_rules,
)
from logscope.errors import LogscopeError, UsageError, printable

if TYPE_CHECKING:
    from rich.console import Console

    from logscope.analysis import Analysis
    from logscope.config import Settings
    from logscope.scan import ScanResult
    from logscope.watch.run import Target

app = typer.Typer(
    name="logscope",
    help="Find what failed first, on which node and rank, in a SLURM/torchrun/NCCL training job's logs.",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# The options with a fixed set of values are logscope.choices' Choices: --help lists the values, the
# shell completes them, anything else is refused with exit 2 before any log is read.
OutputFormatOption = Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.",
                                                          case_sensitive=False)]
PatternOption = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045 - typer needs Optional
    "--pattern", "-p", help="SLURM --output filename pattern of the logs (e.g. '%x-%j-%N.out'); repeatable. "
    "Default: the common SLURM patterns.")]
SelectOption = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--select", help="Run only detectors whose code or name starts with this (e.g. LS1, LS301); repeatable or "
    "comma-separated. One that names no detector is an error.", autocompletion=complete_detectors)]
ColorOption = Annotated[Optional[Color], typer.Option(  # noqa: UP045
    "--color", help="Colour: auto (when writing to a terminal). Default: the config file's, else auto.",
    case_sensitive=False, show_default=False)]
IgnoreOption = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--ignore", help="Skip detectors whose code or name starts with this; repeatable or comma-separated.",
    autocompletion=complete_detectors)]
ExitZeroOption = Annotated[bool, typer.Option(
    "--exit-zero", help="Exit 0 even when problems are found (2 still means the command could not run).")]
FrOption = Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
    "--fr", help="PyTorch Flight Recorder dumps: a dump, a folder of them or their prefix (/shared/fr/trace_); "
    "repeatable. Dumps among the job's files and at the paths its logs name are read too.")]


AgainstOption = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--against", help="Also compare with a run that worked: its folder, file or job id, or 'auto' (the last healthy "
    "run of this job name in --table).")]
TableOption = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--table", help="The `logscope scan` table (or its cache) that --against auto picks the run from.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"logscope {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--config", help="Read the settings from this file (.logscope.toml, or a pyproject.toml's "
        "[tool.logscope]) instead of the nearest one from the current folder upward.")] = None,
    isolated: Annotated[bool, typer.Option("--isolated", help="Read no config file.")] = False,
) -> None:
    if debug:
        os.environ["LOGSCOPE_DEBUG"] = "1"
    _ROOT["config"], _ROOT["isolated"] = config, isolated


_ROOT: dict[str, Any] = {}  # the root options of this run (main() clears them)


def _settings() -> "Settings":
    """The config file's settings (logscope.config), read once per run."""
    if "settings" not in _ROOT:
        from logscope.config import load

        _ROOT["settings"] = load(_ROOT.get("config"), isolated=bool(_ROOT.get("isolated")))
    settings: Settings = _ROOT["settings"]
    return settings


@app.command()
def analyze(
    paths: Annotated[list[Path], typer.Argument(
        help="Job folder(s) and/or log files, or a SLURM job id (12345, 12345_7, 12345.2): its record and logs "
        "come from sacct/scontrol, or from their outputs saved among the other arguments; - reads one log from "
        "standard input.", show_default=False)],
    output_format: OutputFormatOption = OutputFormat.TEXT,
    pattern: PatternOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show each finding's explanation and evidence.")]
    = False,
    charts: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--charts", help="Also save the charts (PNG and SVG) into this folder.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the one-line verdict.")] = False,
    color: ColorOption = None,
    save: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--save", help="Also gather the logs, SLURM's record and the batch script into this new folder, "
        "to attach to a ticket (logscope analyze FOLDER reads it again).")] = None,
    against: AgainstOption = None,
    table: TableOption = None,
    fr: FrOption = None,
    exit_zero: ExitZeroOption = False,
) -> int:
    """Analyse one job's logs and print the verdict.

    Example: logscope analyze job-12345/ --format json; logscope analyze 12345 --save ticket-12345/;
    zcat job.out.gz | logscope analyze -
    """
    select, ignore = _selection(select, ignore)  # checked before any input is read
    if any(str(p) == "-" for p in paths):
        from logscope.stdin import spooled_stdin

        if len(paths) > 1:
            raise UsageError("- (standard input) is one log: give it alone")
        with spooled_stdin(sys.stdin.buffer) as spooled:
            return analyze(paths=[spooled], output_format=output_format, pattern=pattern, select=select,
                           ignore=ignore, verbose=verbose, charts=charts, quiet=quiet, color=color, save=save,
                           against=against, table=table, fr=fr, exit_zero=exit_zero)
    from logscope.accounting.gather import gather_inputs
    from logscope.analysis import analyze as run_analysis

    fmt = output_format.value
    patterns = _patterns(pattern)
    paths, gathered = gather_inputs(paths)
    chart_dir = _output_dir(charts, paths) if charts is not None else None
    if chart_dir is not None and chart_dir.exists() and not chart_dir.is_dir():
        raise UsageError(f"--charts wants a folder; {chart_dir} is a file")
    saved_files = gathered.saved_files if gathered else []
    if save is not None:
        from logscope.accounting.bundle import check_target

        _output_dir(save, [*paths, *saved_files])
        check_target(save)
    with _progress(paths, patterns) as hook:
        result = run_analysis(paths, patterns=patterns, select=select, ignore=ignore, on_progress=hook,
                              accounting=gathered.record if gathered else None, exclude=saved_files, fr=fr or ())
    if gathered is not None:  # what SLURM's record named that is not the job's: listed, not read
        result.job.skipped.extend(gathered.refused)
    _compare_against(result, against, table, patterns, select, ignore)
    if chart_dir is not None:
        from logscope.report.charts import save_charts

        save_charts(result, chart_dir)
    if save is not None:
        from logscope.accounting.bundle import save_bundle

        written = save_bundle(save, [f.path for f in result.job.files], gathered.record if gathered else None,
                              gathered.texts if gathered else {}, saved_files,
                              gathered.identities if gathered else None)
        sys.stderr.write(f"Saved {len(written)} file(s) to {printable(str(save))}\n")
    if fmt == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=2, default=str) + "\n")
    else:
        from logscope.report.terminal import print_analysis

        print_analysis(result, _console(color), verbose=verbose, quiet=quiet)
        if result.comparison is not None and not quiet:
            from logscope.report.diff_terminal import print_comparison

            print_comparison(result.comparison, _console(color), verbose=verbose)
    return 0 if exit_zero else result.exit_code


app.command("analyse", hidden=True, help="Same as analyze.")(analyze)


@app.command()
def explain(
    code: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="Detector code or name (LS101, collective-hang) or lint rule (LL004). Omit to list all.",
        autocompletion=complete_codes)] = None,
    color: ColorOption = None,
) -> int:
    """Print what a detector or lint rule flags, the evidence it reads, why it matters and what to do."""
    from rich.text import Text

    from logscope import lint as linter
    from logscope.detectors import REGISTRY, by_code
    from logscope.report.explain import plain_line, strip_markup

    console = _console(color)
    if code is None:
        for detector in REGISTRY:
            summary = detector.doc().splitlines()[0] if detector.doc() else ""
            line = plain_line(summary.split(":", 1)[-1].strip())
            console.print(Text.assemble((detector.code, "bold"),
                                        f" {detector.name:<28} {detector.category.value:<10} ", line), soft_wrap=True)
        for rule_code, name, fn in linter.RULES:
            summary = (fn.__doc__ or "").strip().splitlines()[0]
            console.print(Text.assemble((rule_code, "bold"), f" {name:<28} {'lint':<10} ", plain_line(summary)),
                          soft_wrap=True)
        return 0
    if code.upper().startswith("LL"):
        text = linter.explain(code)
        if text is None:
            raise UsageError(f"no lint rule {code!r}; run 'logscope explain' to list them")
        title, _, body = text.partition("\n")
        console.print(Text(title, style="bold"))
        console.print(strip_markup(body.strip("\n")), soft_wrap=True)
        return 0
    chosen = by_code(code)
    if chosen is None:
        raise UsageError(f"no detector {code!r}; run 'logscope explain' to list them")
    console.print(Text.assemble((f"{chosen.code} {chosen.name}", "bold"), f"  (category: {chosen.category.value})"))
    console.print(strip_markup(chosen.doc().split("\n", 1)[-1].strip()), soft_wrap=True)
    return 0


@app.command()
def report(
    paths: Annotated[list[Path], typer.Argument(help="Job folder(s) and/or log files, or a SLURM job id.",
                                                show_default=False)],
    output: Annotated[Path, typer.Option(
        "--output", "-o", show_default=False,
        help="Report file: .html (one self-contained page) or .md (images go to <name>_files/ beside it).")],
    pattern: PatternOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    against: AgainstOption = None,
    table: TableOption = None,
    fr: FrOption = None,
) -> int:
    """Write a post-mortem report (verdict, root cause, cascade, per-node tables, charts) to attach to a ticket.

    Example: logscope report job-12345/ -o postmortem.html
    """
    from logscope.accounting.gather import gather_inputs
    from logscope.analysis import analyze as run_analysis
    from logscope.report.postmortem import chart_folder, report_format, write_report

    fmt = report_format(output)
    select, ignore = _selection(select, ignore)
    paths, gathered = gather_inputs(paths)
    saved_files = gathered.saved_files if gathered else []
    _output_file(output, [*paths, *saved_files])
    if fmt == "md":  # its _files/ folder too: `report LOGS -o PARENT/r.md` with LOGS = PARENT/r_files
        _output_dir(chart_folder(output), [*paths, *saved_files])
    patterns = _patterns(pattern)
    with _progress(paths, patterns) as hook:
        result = run_analysis(paths, patterns=patterns, select=select, ignore=ignore, on_progress=hook,
                              accounting=gathered.record if gathered else None, exclude=saved_files, fr=fr or ())
    if gathered is not None:
        result.job.skipped.extend(gathered.refused)
    _compare_against(result, against, table, patterns, select, ignore)
    if result.comparison is not None:  # nor into the logs of the run it was compared with
        good = [f.path for f in result.comparison.good.job.files]
        _output_file(output, good)
        if fmt == "md":
            _output_dir(chart_folder(output), good)
    written = write_report(result, output)
    images = f" (charts in {chart_folder(output)}/)" if fmt == "md" and len(written) > 1 else ""
    typer.echo(f"Report written to {printable(str(output))}{images}")
    return 0  # written; the verdict is in the report (`analyze` exits 1 on a failure)


@app.command()
def watch(
    paths: Annotated[list[Path], typer.Argument(
        help="The running job's folder(s) or files, or its SLURM job id (its files are found as analyze JOBID "
        "finds them; folders given beside it are watched too).", show_default=False)],
    output_format: Annotated[WatchFormat, typer.Option("--format", "-f", help="text (a live view) or jsonl (one "
                                                       "JSON object per event).", case_sensitive=False)]
    = WatchFormat.TEXT,
    stall: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--stall", help="Seconds without any rank advancing that make a stall (default: learnt from the job's "
        "rhythm, at least 60).", min=0.1)] = None,
    once: Annotated[bool, typer.Option("--once", help="Look once, print the state and exit: 0 progressing, "
                                       "1 stalled or failed.")] = False,
    interval: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--interval", help="Seconds between looks (default: a tenth of --stall, 0.5 to 5).", min=0.05)] = None,
    pattern: PatternOption = None,
    color: ColorOption = None,
) -> int:
    """Follow a running job's logs; name the rank that stalls while the job runs, and the verdict when it ends.

    Example: logscope watch $SLURM_JOB_ID --format jsonl > watch.jsonl &   (or: logscope watch job-12345/)
    """
    from logscope.watch.run import Jsonl, Terminal
    from logscope.watch.run import once as look_once
    from logscope.watch.run import watch as follow

    fmt = output_format.value
    stall = stall if stall is not None else _settings().stall
    interval = interval if interval is not None else _settings().interval
    _color_choice(color)
    patterns = _patterns(pattern)
    target = _watch_target(paths, patterns)
    output = Jsonl() if fmt == "jsonl" else Terminal(_console(color), target.name, once=once)
    if once:
        return look_once(target, output, stall=stall)
    return follow(target, output, stall=stall, interval=interval)


def _watch_target(paths: list[Path], patterns: tuple[str, ...]) -> "Target":
    """What ``watch`` follows: a job id's files (SLURM's record names them), or the paths given."""
    from logscope.accounting.gather import from_cluster, job_id_argument
    from logscope.watch.run import Paths, SlurmJob

    refs = [(p, ref) for p in paths if (ref := job_id_argument(p)) is not None]
    if len(refs) > 1:
        raise UsageError(f"give one job id at a time (got {', '.join(str(r) for _, r in refs)})")
    rest = [p for p in paths if not refs or p is not refs[0][0]]
    for path in rest:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
    if refs:
        return SlurmJob(refs[0][1], from_cluster(refs[0][1]), rest, patterns)
    return Paths(rest, patterns)


@app.command()
def diff(
    good: Annotated[Path, typer.Argument(help="A run that worked: its folder, a log file, or its SLURM job id.",
                                         show_default=False)],
    bad: Annotated[Path, typer.Argument(help="The run to explain: its folder, a log file, or its SLURM job id.",
                                        show_default=False)],
    output_format: OutputFormatOption = OutputFormat.TEXT,
    pattern: PatternOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List every new template, not the first ten.")]
    = False,
    color: ColorOption = None,
) -> int:
    """Show what changed from a run that worked to one that did not: new log templates (ranked), configuration,
    performance, slowdowns. Exit 0 when BAD shows nothing new, 1 when it does.

    Example: logscope diff runs/4242001/ runs/4242004/; logscope diff 4242001 4242004 --format json
    """
    from logscope.diff import compare
    from logscope.diff.runs import analysed

    fmt = _format(output_format)
    _color_choice(color)
    patterns = _patterns(pattern)
    comparison = compare(analysed([good], patterns=patterns), analysed([bad], patterns=patterns))
    if fmt == "json":
        sys.stdout.write(json.dumps(comparison.to_json(), indent=2, default=str) + "\n")
    else:
        from logscope.report.diff_terminal import print_comparison

        print_comparison(comparison, _console(color), verbose=verbose)
    return comparison.exit_code


def _compare_against(result: "Analysis", against: str | None, table: Path | None, patterns: tuple[str, ...],
                     select: list[str] | None, ignore: list[str] | None) -> None:
    """--against: compare ``result`` with GOOD (a path, a job id, or auto: from --table)."""
    if against is None:
        if table is not None:
            raise UsageError("--table is read only with --against auto")
        return
    from logscope.diff import compare
    from logscope.diff.runs import baseline_of

    good, _ = baseline_of(result, against, table, patterns=patterns, select=select, ignore=ignore)
    result.comparison = compare(good, result)


@app.command()
def scan(
    roots: Annotated[Optional[list[Path]], typer.Argument(  # noqa: UP045
        help="Folders holding old job logs; none: the jobs SLURM's record lists (--user, --since, --state, "
        "--array).", show_default=False)] = None,
    output: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--output", "-o", help="Write the table here (.parquet default, .csv, .jsonl); - writes it to "
        "standard output (format: --table-format or --format parquet|csv|jsonl, default csv) and the summary "
        "to standard error. Default: none, only the summary is printed.")] = None,
    table_format: Annotated[Optional[TableFormat], typer.Option(  # noqa: UP045
        "--table-format", help="The table's format (default: from the output's extension).",
        case_sensitive=False, show_default=False)] = None,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="Parallel worker processes (0: one per core this process may use).")] = 0,
    since: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--since", help="Only jobs since this date (YYYY-MM-DD[THH:MM]) or this long ago (30m, 12h, 7d, 2w): "
        "a file modified since, or (without folders) started since (sacct's default: today).")] = None,
    user: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--user", "-u", help="The jobs of these users in SLURM's record (sacct); 'all' for everyone's; "
        "repeatable or comma-separated. Default: yours.")] = None,
    state: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--state", "-s", help="Only jobs in these SLURM states (FAILED, TIMEOUT, OUT_OF_MEMORY, ...; sacct "
        "--state); repeatable or comma-separated.")] = None,
    array: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--array", help="These jobs from SLURM's record, an array job as each of its tasks (12345, 12345_7); "
        "repeatable or comma-separated.")] = None,
    columns: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--columns", help="The table's columns (job_id,state,category,time_used,cpu_efficiency,mem_used,...); "
        "also a job a line on the terminal. A table of some columns is not one `merge` reads.")] = None,
    category: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--category", help="Keep only jobs with this verdict category in the table; repeatable.")] = None,
    shard: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--shard", help="K/N: scan only the K-th of N shards (0-based, for SLURM job arrays).")] = None,
    cache: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--cache", help="Cache file for incremental rescans (default: OUTPUT.cache.json beside the table).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Analyse every job again.")] = False,
    pattern: PatternOption = None,
    print_sbatch: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--print-sbatch", metavar="N",
        help="Print a SLURM job-array script that splits this scan into N shards, and exit.")] = None,
    output_format: Annotated[ScanFormat, typer.Option(
        "--format", "-f", help="The summary's format; with -o - a table format is the table's.",
        case_sensitive=False)] = ScanFormat.TEXT,
) -> int:
    """Analyse every job under the given folders and write one table of verdicts.

    Example: logscope scan /shared/logs/ -o jobs.parquet --since 2026-11-01 -j 8

    Example: logscope scan --user alice --since 7d --state FAILED,TIMEOUT
    """
    from logscope import scan as scanner
    from logscope import scan_pool
    from logscope.report import scan_output

    roots = roots or []
    from_record = bool(user or state or array) or not roots
    if from_record and roots:
        raise UsageError("give folders to scan, or the jobs of SLURM's record (--user, --state, --array), not both")
    if from_record and (shard or print_sbatch is not None):
        raise UsageError("--shard and --print-sbatch split a scan of folders; give the folders")
    chosen_columns = scan_output.columns(columns)
    to_stdout = output is not None and str(output) == "-"
    json_out = to_stdout and output_format == ScanFormat.JSON and table_format is None
    if to_stdout and not json_out:  # the table on standard output in --table-format or --format; summary on stderr
        if table_format is None:
            table_format = TableFormat(output_format.value) if output_format.value in scanner.TABLE_FORMATS \
                else TableFormat.CSV
        if output_format.value in scanner.TABLE_FORMATS:
            output_format = ScanFormat.TEXT
    fmt = _format(output_format.value)
    patterns = _patterns(pattern)
    if print_sbatch is not None:
        prefix = str(output.with_suffix("")) if output else "logscope-scan"
        extra = [f"--pattern={p}" for p in pattern or []]
        sys.stdout.write(scanner.sbatch_script(roots, print_sbatch, prefix, jobs if jobs > 0 else 4, extra))
        return 0
    parsed_shard = scanner.parse_shard(shard) if shard else None
    when = _date(since) if since else None
    listing = None
    if from_record:
        from logscope.accounting.listing import list_jobs, selection

        listing = list_jobs(selection(user or [], when, state or [], array or []))
    if output is not None and not to_stdout:
        _output_file(output, roots)
    default_cache = scan_pool.default_cache(output) if output is not None and not to_stdout else None
    cache_path = None if no_cache else (cache or default_cache)
    if cache_path is not None:
        _output_file(cache_path, roots)
    progress, on_total, on_done = _scan_progress()
    with progress:
        if listing is not None:
            from logscope.scan_slurm import scan_listing

            result = scan_listing(listing, patterns=patterns, workers=jobs, cache_path=cache_path,
                                  on_total=on_total, on_done=on_done)
        else:
            result = scanner.scan(roots, patterns=patterns, workers=jobs, since=when, shard=parsed_shard,
                                  cache_path=cache_path, on_total=on_total, on_done=on_done)
    table = result.table
    if category:
        table = table.filter(table["category"].is_in([c.lower() for c in category]))
    written = table.select(chosen_columns) if chosen_columns else table
    if to_stdout and not json_out:
        scanner.write_table_to(written, sys.stdout.buffer, (table_format or TableFormat.CSV).value)
    elif output is not None and not to_stdout:
        scanner.write_table(written, output, table_format.value if table_format else None, result.inputs)
    summary = scanner.summarise(table)
    if fmt == "json":  # the jobs' rows in the same document where no table holds them (-o -, none of SLURM's)
        with_rows = json_out or (output is None and listing is not None)
        document = scan_output.json_document(summary, result, str(output) if output else None,
                                             written if with_rows else None)
        (sys.stderr if to_stdout and not json_out else sys.stdout).write(
            json.dumps(document, indent=2, default=str) + "\n")
    else:
        if output is None and (listing is not None or chosen_columns):  # a job a line, its efficiency beside
            scan_output.print_jobs(table, _console(), chosen_columns)
        _print_scan_summary(summary, result, None if to_stdout else output, stderr=to_stdout)
        for message in result.messages:
            sys.stderr.write(f"Warning: {printable(message)}\n")
    return 0


@app.command()
def merge(
    tables: Annotated[list[Path], typer.Argument(help="Shard tables written by scan --shard.", show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="The merged table (.parquet, .csv, .jsonl); - writes "
                                         "CSV to standard output.")],
) -> int:
    """Join the tables of a sharded scan into one (a job scanned twice keeps its newest row).

    Example: logscope merge scan-*.parquet -o all-jobs.parquet
    """
    from logscope import scan as scanner

    table = scanner.merge_tables(tables)
    if str(output) == "-":  # as scan -o -: the table (CSV) on standard output, the summary on standard error
        scanner.write_table_to(table, sys.stdout.buffer, "csv")
        _print_scan_summary(scanner.summarise(table), None, None, stderr=True)
        return 0
    scanner.write_table(table, output)
    _print_scan_summary(scanner.summarise(table), None, output)
    return 0


@app.command()
def lint(
    scripts: Annotated[Optional[list[Path]], typer.Argument(  # noqa: UP045
        help="sbatch job scripts; - reads standard input.", show_default=False)] = None,
    select: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--select", help="Only rules whose code or name starts with this; repeatable or comma-separated. One that "
        "names no rule is an error.", autocompletion=complete_lint_rules)] = None,
    ignore: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--ignore", help="Skip rules whose code or name starts with this; repeatable or comma-separated.",
        autocompletion=complete_lint_rules)] = None,
    output_format: Annotated[LintFormat, typer.Option("--format", "-f", help="Output format.",
                                                      case_sensitive=False)] = LintFormat.TEXT,
    statistics: Annotated[bool, typer.Option("--statistics", help="Print how often each rule fired, not each "
                                             "problem.")] = False,
    explain_rule: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--explain", help="Print what a rule (LL001...) checks and why, and exit.",
        autocompletion=complete_lint_rules)] = None,
    color: ColorOption = None,
    exit_zero: ExitZeroOption = False,
) -> int:
    """Check sbatch scripts for launch mistakes that break multi-node torchrun jobs.

    A "# logscope: noqa: LL005" comment silences a rule on its line ("# logscope: noqa" all of them).

    Example: logscope lint train.slurm --ignore LL007
    """
    from logscope import lint as linter
    from logscope.choices import lint_keys, selectors
    from logscope.report import lint_output

    fmt = output_format.value
    settings = _settings()
    # the command line's selection replaces the config file's (as ruff's --select does)
    chosen = set(selectors(select, lint_keys(), "--select") if select is not None else settings.lint_select or ())
    skipped = set(selectors(ignore, lint_keys(), "--ignore") if ignore is not None else settings.lint_ignore or ())
    console = _console(color)
    if explain_rule:
        from logscope.report.explain import strip_markup

        text = linter.explain(explain_rule)
        if text is None:
            raise UsageError(f"no lint rule {explain_rule!r}")
        console.print(strip_markup(text), soft_wrap=True)
        return 0
    if not scripts:
        raise UsageError("give one or more job scripts to lint (or --explain CODE)")
    problems = [p for path in scripts for p in linter.lint_script(linter.read_script(path), chosen, skipped)]
    if statistics:
        if fmt == "json":
            sys.stdout.write(json.dumps([{"count": n, "code": code, "name": name}
                                         for n, code, name in lint_output.statistics(problems)], indent=2) + "\n")
        else:
            lint_output.print_statistics(problems, console)
    elif fmt == "json":
        sys.stdout.write(json.dumps([p.to_json() for p in problems], indent=2) + "\n")
    elif fmt == "github":
        sys.stdout.write(lint_output.github(problems))
    elif fmt == "sarif":
        sys.stdout.write(json.dumps(lint_output.sarif(problems), indent=2) + "\n")
    else:
        lint_output.text(problems, console)
    return 1 if problems and not exit_zero else 0


# ---------------------------------------------------------------------------------------------


def _date(text: str) -> datetime:
    """A --since date or span (7d), as the local time the files' modification times are compared in."""
    from logscope.scan_slurm import since_time

    relative = since_time(text)
    if relative is not None:
        return relative
    try:
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise UsageError(f"--since wants a date like 2026-11-01 or 2026-11-01T12:00, or a span like 7d "
                         f"(got {text!r})") from None
    return when.astimezone().replace(tzinfo=None) if when.tzinfo is not None else when


def _scan_progress() -> tuple[Any, Any, Any]:
    """A rich progress bar over jobs on stderr when it is a terminal, else nothing."""
    if not sys.stderr.isatty():
        return contextlib.nullcontext(), None, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    progress = Progress(TextColumn("scanning jobs"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                        console=Console(stderr=True), transient=True)
    task = progress.add_task("scan", total=None)
    return (progress, lambda total: progress.update(task, total=total),
            lambda row: progress.advance(task))


def _print_scan_summary(summary: dict[str, Any], result: "ScanResult | None", output: Path | None,
                        stderr: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=False, stderr=True) if stderr else _console()
    counts = Table(title=f"{summary['jobs']} job(s)", title_justify="left")
    counts.add_column("category")
    counts.add_column("jobs", justify="right")
    for row in summary["per_category"]:
        counts.add_row(row["category"], str(row["jobs"]))
    console.print(counts)
    hosts = summary["top_root_hosts"]
    if hosts:
        table = Table(title="hosts most often at the root of a failure", title_justify="left")
        for col in ("host", "jobs run", "at the root", "rate", "by category", ""):
            table.add_column(col)
        for row in hosts:
            rate = f"{row['rate']:.0%}" if row["rate"] is not None else ""
            table.add_row(row["root_host"], str(row["jobs_run"]), str(row["jobs"]), rate,
                          ", ".join(f"{c} {n}" for c, n in row["by_category"].items()),
                          "hardware suspect" if row["suspect"] else "")
        console.print(table)
    if result is not None:
        console.print(f"analysed {result.analysed}, from cache {result.cached}, "
                      f"unreadable {result.failed}", style="dim", highlight=False)
        unreadable = [r for r in result.table.select("job_key", "error").to_dicts() if r["error"]]
        for row in unreadable[:10]:  # what was skipped, and why
            console.print(f"unreadable {row['job_key']}: {row['error']}", style="dim", highlight=False,
                          markup=False, soft_wrap=True)
        if len(unreadable) > 10:
            console.print(f"... {len(unreadable) - 10} more unreadable", style="dim", highlight=False)
    if output is not None:
        console.print(f"table written to {output}", style="dim", highlight=False)


# ---------------------------------------------------------------------------------------------


def _format(value: str) -> str:
    fmt = value.lower()
    if fmt not in ("text", "json"):
        raise UsageError(f"unknown format {value!r}: use text or json")
    return fmt


def _selection(select: list[str] | None, ignore: list[str] | None) -> tuple[list[str], list[str]]:
    """--select/--ignore of detectors, checked before any log is read; where not given, the config
    file's (the command line's replaces it, as ruff's --select does)."""
    from logscope.choices import detector_keys, selectors

    settings = _settings()
    return (selectors(select, detector_keys(), "--select") if select is not None else list(settings.select or ()),
            selectors(ignore, detector_keys(), "--ignore") if ignore is not None else list(settings.ignore or ()))


def _patterns(given: list[str] | None) -> tuple[str, ...]:
    from logscope.parsers.filenames import DEFAULT_PATTERNS, compile_pattern

    given = given or list(_settings().pattern)
    if not given:
        return DEFAULT_PATTERNS
    for pattern in given:
        compile_pattern(pattern)  # raises UsageError with the reason
    return tuple(given)


def _color_choice(color: Color | None) -> Color:
    """--color, else the config file's, else auto (typer has refused any other value)."""
    return color if color is not None else (_settings().color or Color.AUTO)


def _console(color: Color | None = None) -> "Console":
    """The terminal console; ``color`` is auto (a terminal gets colour, NO_COLOR is honoured),
    always or never."""
    # Imported here: rich costs ~0.1 s to import, and JSON output never needs it.
    from rich.console import Console

    choice = _color_choice(color)
    if choice == "always":
        return Console(highlight=False, soft_wrap=False, force_terminal=True, no_color=False,
                       color_system="standard")
    if choice == "never":
        return Console(highlight=False, soft_wrap=False, no_color=True, color_system=None)
    return Console(highlight=False, soft_wrap=False)


def _output_dir(target: Path, inputs: Sequence[Path]) -> Path:
    """Refuse to write into the analysed log folders: logscope never modifies them."""
    resolved = _resolve(target)
    for given in inputs:
        base = _resolve(given)
        folder = base if base.is_dir() else base.parent
        if resolved == folder or folder in resolved.parents:
            raise UsageError(f"{target} is inside the log folder {given}; write outputs elsewhere "
                             "(logscope never writes into the logs it reads)")
    return target


def _resolve(path: Path) -> Path:
    """The real path; a symbolic-link loop (which resolve() raises on) stands for itself in the
    real folder that holds it."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return _resolve(path.absolute().parent) / path.name


def _output_file(target: Path, inputs: Sequence[Path]) -> Path:
    """An output file: outside the log folders, and not an existing folder."""
    _output_dir(target, inputs)
    if target.is_dir():
        raise UsageError(f"{target} is a folder; give a file name to write to")
    return target


def _progress(paths: Sequence[Path], patterns: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """A rich progress bar on stderr for big inputs read from a terminal."""
    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from logscope.ingest import discover

    try:
        files, _ = discover(paths, patterns)
    except LogscopeError:
        return contextlib.nullcontext()
    total = sum(f.size for f in files)
    if total < 32 * 1024 * 1024:
        return contextlib.nullcontext()
    from contextlib import contextmanager

    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    @contextmanager
    def bar():  # type: ignore[no-untyped-def]
        progress = Progress(TextColumn("reading logs"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                            console=Console(stderr=True), transient=True)
        task = progress.add_task("read", total=total)
        with progress:
            yield lambda source, n: progress.advance(task, n)

    return bar()


def run() -> NoReturn:
    """The ``logscope`` command (and ``python -m logscope``): :func:`main`, then leave at once.

    Python's teardown of a process that ran polars (every module, frame and thread pool freed in
    turn) took ~40 ms of a ~0.5 s command on a sample job. By the time :func:`main` returns, the
    command has written its files and closed them (a read worker still waiting sees its input
    close and ends), so it leaves without the teardown (``os._exit``) once what is still
    buffered is flushed.
    """
    code = main()
    early = sys.modules.get("logscope.scan_pool")
    if early is not None:  # workers started for a scan that did not take them (see scan_pool.stop_unused)
        early.stop_unused()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass  # `logscope ... | head`: the reader went away (see main)
    except (OSError, ValueError) as error:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"Error: cannot write the output: {error}\n")
            sys.stderr.flush()
        code = code or 2
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code instead of exiting (tests call this)."""
    args = list(sys.argv[1:] if argv is None else argv)
    _ROOT.clear()
    try:
        result = app(args=args, prog_name="logscope", standalone_mode=False)
        code = int(result) if isinstance(result, int) else 0
        if code == 130:  # typer returns Ctrl-C (a KeyboardInterrupt) as 130, silently; no command does
            return _interrupted()
        sys.stdout.flush()  # a full disk says so here, not in a message at exit
        return code
    except typer.Exit as done:
        return int(done.exit_code)
    except typer.Abort:
        from logscope.signals import interrupted

        if interrupted()[1] != 130:  # SIGTERM or SIGHUP, which click took for Ctrl-C
            return _interrupted()
        sys.stderr.write("Aborted.\n")
        return 130
    except LogscopeError as error:
        sys.stderr.write(f"Error: {printable(str(error))}\n")  # one line, whatever the paths in it hold
        return error.exit_code
    except KeyboardInterrupt:  # Ctrl-C, and SIGTERM and SIGHUP (logscope.signals)
        return _interrupted()
    except BrokenPipeError:
        # `logscope ... | head`: the reader went away; that is not an error of ours.
        with contextlib.suppress(OSError):
            sys.stdout = Path(os.devnull).open("w")  # noqa: SIM115 - stays open until exit
        return 0
    except OSError as error:
        if error.errno not in _WRITE_ERRNOS:
            return _internal_error(error)
        # Standard output could not be written (a full disk, a file too big, a dead device):
        # what is still buffered goes nowhere, so that the exit says nothing more.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.stderr.write(f"Error: cannot write the output: {error.strerror or error}\n")
        return 2
    except Exception as error:
        if hasattr(error, "exit_code") and hasattr(error, "show"):
            # typer's (click's) own usage errors: bad option, missing argument, --help exits
            context = getattr(error, "ctx", None)
            if hasattr(error, "format_message") and error.exit_code == 2 and context is not None:
                # one line, as logscope's own (a value not among a Choice's: the values it takes)
                command = context.command_path
                sys.stderr.write(f"Error: {printable(error.format_message())} (see '{command} -h')\n")
                return 2
            error.show()
            return int(error.exit_code) if error.exit_code else 0
        return _internal_error(error)


def _interrupted() -> int:
    """One line saying the command was interrupted (Ctrl-C, SIGTERM, SIGHUP); its exit code."""
    from logscope.signals import interrupted

    line, code = interrupted()
    with contextlib.suppress(OSError, ValueError):  # the terminal may be gone (SIGHUP)
        sys.stderr.write(line + "\n")
    return code


_WRITE_ERRNOS = frozenset((errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO))


def _internal_error(error: BaseException) -> int:
    if os.environ.get("LOGSCOPE_DEBUG"):
        traceback.print_exception(error)
    first = str(error).splitlines()[0][:300] if str(error) else ""
    sys.stderr.write(f"Error: internal error ({type(error).__name__}: {first}); "
                     "rerun with --debug for details and report it\n")
    return 2


if __name__ == "__main__":  # pragma: no cover
    from logscope.command import run as run_command  # a big job's readers first, as the command does

    run_command()
