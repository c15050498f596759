"""The command line's conventions, as ruff, ripgrep and SLURM's tools have them: selectors checked,
fixed values as choices (in --help, completed by the shell), `analyze -`, a config file found from
the current folder upward, --exit-zero, lint's severity, and output that keeps paths whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from logscope.cli import main
from logscope.config import find, load

HERE = Path(__file__).parent
CRASH = HERE / "goldens" / "LS301-crash-two-nodes" / "logs"
MULTI = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --output=%x-%j-%N.out\n"
NO_KILL = MULTI + "srun -o %x-%j-%N.out torchrun --nnodes $SLURM_NNODES t.py\n"  # LL004 only


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "job.slurm"
    path.write_text(NO_KILL)
    return path


@pytest.fixture(autouse=True)
def _no_config_above(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in its own folder, so that no config file of the checkout is found."""
    monkeypatch.chdir(tmp_path)


# ------------------------------------------------------------------ selectors naming nothing


@pytest.mark.parametrize("args", [
    ("analyze", "--select", "LS9999", str(CRASH)),
    ("analyze", "--ignore", "LS1,nosuch", str(CRASH)),
    ("report", str(CRASH), "-o", "r.html", "--select", "LL004"),  # a lint rule is no detector
    ("lint", "--select", "LL9", "job.slurm"),
    ("lint", "--ignore", "LL004,XY", "job.slurm"),
])
def test_a_selector_naming_no_rule_is_a_usage_error(capsys: pytest.CaptureFixture[str], script: Path,
                                                    args: tuple[str, ...]) -> None:
    code, out, err = run(capsys, *args)
    assert (code, out) == (2, "")
    assert err.startswith("Error: --") and "matches no rule" in err and err.count("\n") == 1
    assert not Path("r.html").exists()


def test_selectors_checked_before_the_logs_are_read(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", "--select", "LS9999", "/no/such/logs")
    assert code == 2 and "LS9999" in err and "no such file" not in err


def test_selectors_by_prefix_name_and_comma(capsys: pytest.CaptureFixture[str], script: Path) -> None:
    assert run(capsys, "lint", "--select", "LL0", "job.slurm")[0] == 1
    assert run(capsys, "lint", "--ignore", "missing-kill-on-bad-exit", "job.slurm")[0] == 0
    code, out, _ = run(capsys, "analyze", "--select", "ls3,exit-cascade", "--format", "json", str(CRASH))
    assert code == 1 and {f["code"][:3] for f in json.loads(out)["findings"]} == {"LS3"}


# ------------------------------------------------------------------ choices


@pytest.mark.parametrize(("command", "values"), [
    ("analyze", ["--format <text|json>", "--color <auto|always|never>"]),
    ("lint", ["--format <text|json|github|sarif>", "--color <auto|always|never>"]),
    ("watch", ["--format <text|jsonl>"]),
    ("diff", ["--format <text|json>"]),
])
def test_help_lists_the_values(capsys: pytest.CaptureFixture[str], command: str, values: list[str]) -> None:
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert all(v in flat for v in values), flat


@pytest.mark.parametrize(("words", "expected"), [
    ("logscope lint --format ", {"text", "json", "github", "sarif"}),
    ("logscope analyze --color ", {"auto", "always", "never"}),
    ("logscope analyze --format ", {"text", "json"}),
    ("logscope lint --select LL00", {f"LL00{i}" for i in range(1, 9)}),
])
def test_the_shell_completes_values_and_codes(words: str, expected: set[str]) -> None:
    env = dict(os.environ, _LOGSCOPE_COMPLETE="complete_bash", COMP_WORDS=words,
               COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)))
    done = subprocess.run([sys.executable, "-m", "logscope"], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert set(done.stdout.split()) == expected, done.stderr


def test_explain_completes_detectors_and_rules() -> None:
    from logscope.choices import complete_codes

    assert "LS301" in complete_codes("ls3") and "LL004" in complete_codes("LL")


def test_a_value_not_among_the_choices_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "analyze", "--color", "sometimes", str(CRASH))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "'sometimes' is not one of 'auto', 'always', 'never'" in err


# ------------------------------------------------------------------ analyze -


def test_analyze_reads_a_log_from_standard_input(tmp_path: Path) -> None:
    """A single log piped in: the same verdict as the file; nothing left in the current folder nor
    in the temporary folder."""
    log = CRASH / "train-5001-node02.out"
    spool = tmp_path / "tmp"
    spool.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, TMPDIR=str(spool))
    piped = subprocess.run([sys.executable, "-m", "logscope", "analyze", "-", "--format", "json"], env=env,
                           stdin=log.open("rb"), capture_output=True, cwd=work, timeout=120, check=False)
    direct = subprocess.run([sys.executable, "-m", "logscope", "analyze", str(log), "--format", "json"],
                            capture_output=True, cwd=work, timeout=120, check=False)
    assert piped.returncode == direct.returncode == 1, piped.stderr
    got, want = json.loads(piped.stdout), json.loads(direct.stdout)
    assert got["verdict"]["category"] == want["verdict"]["category"]
    assert [f["code"] for f in got["findings"]] == [f["code"] for f in want["findings"]]
    # its evidence is named <stdin>, not by the temporary file it was spooled to
    assert {e["file"] for f in got["findings"] for e in f["evidence"]} == {"<stdin>"}
    assert list(work.iterdir()) == [] and list(spool.iterdir()) == []


def test_analyze_dash_with_nothing_piped_or_beside_other_paths(tmp_path: Path) -> None:
    empty = subprocess.run([sys.executable, "-m", "logscope", "analyze", "-"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False)
    assert empty.returncode == 2 and empty.stderr.startswith("Error: standard input: empty")
    both = subprocess.run([sys.executable, "-m", "logscope", "analyze", "-", str(CRASH)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False)
    assert both.returncode == 2 and "give it alone" in both.stderr


# ------------------------------------------------------------------ config file


def test_config_from_dot_logscope_toml_and_the_command_line_wins(capsys: pytest.CaptureFixture[str],
                                                                 script: Path) -> None:
    Path(".logscope.toml").write_text('[lint]\nignore = ["LL004"]\n')
    assert run(capsys, "lint", "job.slurm")[0] == 0
    assert run(capsys, "lint", "job.slurm", "--ignore", "LL003")[0] == 1  # replaces the file's
    assert run(capsys, "--isolated", "lint", "job.slurm")[0] == 1


def test_config_found_upward_in_pyproject(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.logscope.lint]\nselect = ["LL001"]\n')
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (inner / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.logscope]: passed over
    (inner / "job.slurm").write_text(NO_KILL)
    monkeypatch.chdir(inner)
    assert find(inner) == tmp_path / "pyproject.toml"
    assert run(capsys, "lint", "job.slurm")[0] == 0  # only LL001 selected
    assert run(capsys, "lint", "--select", "LL004", "job.slurm")[0] == 1


def test_config_sets_detectors_patterns_colour_and_watch_thresholds(tmp_path: Path) -> None:
    (tmp_path / "conf.toml").write_text('pattern = ["%x-%j-%N.out"]\nselect = ["LS3"]\nignore = ["ls301"]\n'
                                        'color = "NEVER"\n[watch]\nstall = 300\ninterval = 2.5\n')
    settings = load(tmp_path / "conf.toml")
    assert (settings.pattern, settings.select, settings.ignore) == (("%x-%j-%N.out",), ("LS3",), ("LS301",))
    assert (settings.color, settings.stall, settings.interval) == ("never", 300.0, 2.5)


def test_config_detector_selection_applies_to_analyze(capsys: pytest.CaptureFixture[str]) -> None:
    Path(".logscope.toml").write_text('select = ["LS3"]\n')
    _, out, _ = run(capsys, "analyze", "--format", "json", str(CRASH))
    assert {f["code"][:3] for f in json.loads(out)["findings"]} == {"LS3"}
    _, out, _ = run(capsys, "analyze", "--format", "json", "--select", "LS4", str(CRASH))
    assert {f["code"][:3] for f in json.loads(out)["findings"]} <= {"LS4"}


@pytest.mark.parametrize(("text", "message"), [
    ('[lint]\nselekt = ["LL004"]\n', "unknown setting lint.selekt"),
    ('colour = "never"\n', "unknown setting colour"),
    ('[lint]\nselect = ["LL9"]\n', "matches no rule"),
    ('color = "sometimes"\n', "unknown color"),
    ('[watch]\nstall = "long"\n', "watch.stall wants a number"),
    ('select = "LS1\n', "not valid TOML"),
])
def test_a_bad_config_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str], script: Path, text: str,
                                                message: str) -> None:
    Path(".logscope.toml").write_text(text)
    code, out, err = run(capsys, "lint", "job.slurm")
    assert (code, out) == (2, "")
    assert err.startswith("Error: ") and ".logscope.toml" in err and message in err and err.count("\n") == 1


def test_explicit_config_file(capsys: pytest.CaptureFixture[str], script: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.toml").write_text('[lint]\nignore = ["LL004"]\n')
    assert run(capsys, "--config", str(tmp_path / "elsewhere.toml"), "lint", "job.slurm")[0] == 0
    code, _, err = run(capsys, "--config", "missing.toml", "lint", "job.slurm")
    assert code == 2 and "missing.toml" in err


# ------------------------------------------------------------------ --exit-zero, severity


def test_exit_zero(capsys: pytest.CaptureFixture[str], script: Path) -> None:
    assert run(capsys, "lint", "job.slurm")[0] == 1
    code, out, _ = run(capsys, "lint", "--exit-zero", "job.slurm")
    assert code == 0 and "LL004" in out
    assert run(capsys, "analyze", "--quiet", str(CRASH))[0] == 1
    code, out, _ = run(capsys, "analyze", "--quiet", "--exit-zero", str(CRASH))
    assert code == 0 and "CRASH" in out
    assert run(capsys, "analyze", "--exit-zero", "/no/such/logs")[0] == 2  # still 2 when it cannot run


def test_lint_text_shows_severity(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "two.slurm"
    path.write_text(MULTI + "LAUNCHER=\"torchrun --node_rank $SLURM_PROCID\"\n"
                    "srun -o %x-%j-%N.out bash -c \"$LAUNCHER t.py\"\n")
    _, out, _ = run(capsys, "lint", "--color", "never", str(path))
    lines = out.splitlines()
    assert f"{path}:4:32: LL001 error: $SLURM_PROCID" in lines[0]
    assert f"{path}:5:1: LL004 warning: srun without --kill-on-bad-exit" in out


# ------------------------------------------------------------------ the terminal at 80 columns


def _terminal(*args: str, width: int = 80) -> str:
    from logscope.analysis import analyze
    from logscope.report.terminal import print_analysis

    console = Console(record=True, width=width, color_system=None)
    print_analysis(analyze([CRASH]), console, verbose="-v" in args)
    return console.export_text()


def test_paths_are_never_cut_at_80_columns() -> None:
    """The logs' paths here are longer than 80 columns: each is printed whole (a line running on),
    never folded into a cell nor cut; the root's location too."""
    import re

    folder = re.escape(str(CRASH))
    for verbose in ((), ("-v",)):
        text = _terminal(*verbose)
        starts = [m.start() for m in re.finditer(folder, text)]
        whole = [m.start() for m in re.finditer(folder + r"/train-5001-node0[12]\.out:\d+", text)]
        assert len(starts) >= 3 and starts == whole, text


def test_verbose_puts_the_explanation_below_not_into_table_cells() -> None:
    from logscope.analysis import analyze

    text = _terminal("-v")
    first = analyze([CRASH]).findings[0]
    sentence = " ".join(first.explanation.split()[:6])
    line = next(line for line in text.splitlines() if sentence.split()[0] in line and "│" not in line)
    assert line and "┃" not in text.split("per node")[0]  # no table before the per-node one
    assert sentence in " ".join(text.split())
