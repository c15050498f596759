"""`logscope lint`: each rule on a bad and a good script, quoting and continuation handling, the CLI."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path

import pytest

from logscope.cli import main
from logscope.lint import RULES, explain, lint_script, parse_script

HEADER = "#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --output=%x-%j-%N.out\n"
GOOD_SRUN = "srun --kill-on-bad-exit=1 --output=%x-%j-%N.out bash -c \"$LAUNCHER train.py\"\n"


def codes(text: str) -> list[str]:
    return [p.code for p in lint_script(parse_script(text))]


@pytest.mark.parametrize(("body", "expected"), [
    ('LAUNCHER="torchrun --node_rank $SLURM_PROCID --nnodes $SLURM_NNODES"\n' + GOOD_SRUN, ["LL001"]),
    ('LAUNCHER="torchrun --node_rank ${SLURM_PROCID} --nnodes $SLURM_NNODES"\n' + GOOD_SRUN, ["LL001"]),
    ('srun --kill-on-bad-exit=1 -o %x-%j-%N.out torchrun --node_rank $SLURM_PROCID --nnodes $SLURM_NNODES t.py\n',
     ["LL001"]),
    ('LAUNCHER="torchrun --node_rank \\$SLURM_PROCID --nnodes $SLURM_NNODES"\n' + GOOD_SRUN, []),
    ("LAUNCHER='torchrun --node_rank $SLURM_PROCID --nnodes $SLURM_NNODES'\n" + GOOD_SRUN, []),
    ('# a comment mentioning $SLURM_PROCID\nLAUNCHER="torchrun --nnodes $SLURM_NNODES"\n' + GOOD_SRUN, []),
    ('LAUNCHER="torchrun \\\n  --nnodes 2 \\\n  --node_rank \\$SLURM_PROCID"\n' + GOOD_SRUN, ["LL003"]),
    # under sbatch, #SBATCH --output's %N is the first node only: one file for all (LL005)
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES"\nsrun bash -c "$LAUNCHER train.py"\n', ["LL005", "LL004"]),
    ('SRUN_ARGS="--kill-on-bad-exit=1 --output=%x-%j-%N.out"\nLAUNCHER="torchrun --nnodes $SLURM_NNODES"\n'
     'srun $SRUN_ARGS bash -c "$LAUNCHER train.py"\n', []),
    ('export MASTER_ADDR=localhost\nLAUNCHER="torchrun --nnodes $SLURM_NNODES"\n' + GOOD_SRUN, ["LL006"]),
    ('export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\n'
     'LAUNCHER="torchrun --nnodes $SLURM_NNODES"\n' + GOOD_SRUN, []),
    # --node_rank with c10d: ignored; per node (escaped) it is harmless, the same on every node it is LL007
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv_backend c10d --node_rank \\$SLURM_PROCID"\n' + GOOD_SRUN, []),
    ("LAUNCHER='torchrun --nnodes $SLURM_NNODES --rdzv_backend c10d --node_rank $SLURM_NODEID'\n" + GOOD_SRUN, []),
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv_backend c10d --node_rank 0"\n' + GOOD_SRUN, ["LL007"]),
    ('NODE_RANK=0\nLAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv_backend c10d --node-rank=$NODE_RANK"\n'
     + GOOD_SRUN, ["LL007"]),
    ('srun --kill-on-bad-exit=1 -o %x-%j-%N.out torchrun --nnodes $SLURM_NNODES --rdzv_backend=c10d '
     '--node_rank $SLURM_NODEID t.py\n', ["LL007"]),
    # with the static rendezvous --node_rank is what ranks the nodes: not LL007's
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --node_rank 0"\n' + GOOD_SRUN, []),
    # the endpoint on the launcher's command line: per node when escaped, shared when expanded once
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv_endpoint \\$(hostname -s):29500"\n' + GOOD_SRUN, ["LL006"]),
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv-endpoint=\\$SLURMD_NODENAME:29500"\n' + GOOD_SRUN, ["LL006"]),
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --master_addr \\${HOSTNAME}"\n' + GOOD_SRUN, ["LL006"]),
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv_endpoint localhost:29500"\n' + GOOD_SRUN, ["LL006"]),
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv_endpoint $(hostname -s):29500"\n' + GOOD_SRUN, []),
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv_endpoint $MASTER_ADDR:$MASTER_PORT"\n' + GOOD_SRUN, []),
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --master_addr node01 --master_port 29500"\n' + GOOD_SRUN, []),
])
def test_rules(body: str, expected: list[str]) -> None:
    assert codes(HEADER + body) == expected


def test_ntasks_per_node_and_single_output_file() -> None:
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --output=%x-%j.out\n"
            "srun --kill-on-bad-exit=1 torchrun --nnodes $SLURM_NNODES train.py\n")
    problems = lint_script(parse_script(text, "job.slurm"))
    assert [(p.code, p.line) for p in problems] == [("LL002", 3), ("LL005", 4)]


def test_single_node_jobs_need_no_per_node_files_or_kill_on_bad_exit() -> None:
    assert codes("#!/bin/bash\n#SBATCH --nodes=1\nsrun torchrun --nnodes 1 --nproc_per_node 8 t.py\n") == []


def test_locations_point_at_the_physical_line() -> None:
    text = HEADER + 'L="torchrun \\\n   --nnodes $SLURM_NNODES \\\n   --node_rank $SLURM_PROCID"\n' + GOOD_SRUN
    (problem,) = lint_script(parse_script(text))
    assert (problem.code, problem.line, problem.column) == ("LL001", 7, 16)


def test_every_rule_explains_itself() -> None:
    for code, name, _ in RULES:
        text = explain(code)
        assert text and text.startswith(f"{code} {name}") and len(text.splitlines()) > 3
    assert explain("LL999") is None


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.slurm"
    bad.write_text(HEADER + 'L="torchrun --node_rank $SLURM_PROCID --nnodes $SLURM_NNODES"\n' + GOOD_SRUN)
    good = tmp_path / "good.slurm"
    good.write_text(HEADER + 'L="torchrun --nnodes $SLURM_NNODES"\n' + GOOD_SRUN)
    assert main(["lint", str(good)]) == 0
    assert "All checks passed!" in capsys.readouterr().out
    assert main(["lint", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:5:" in out and "LL001" in out and "Found 1 problem." in out
    assert main(["lint", str(bad), "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)[0]["code"] == "LL001"
    assert main(["lint", "--explain", "LL004", str(bad)]) == 0
    assert main(["lint", "--explain", "LL006"]) == 0
    assert "every task expands" in capsys.readouterr().out
    assert main(["lint"]) == 2
    assert "give one or more job scripts" in capsys.readouterr().err
    assert main(["lint", str(tmp_path / "missing.slurm")]) == 2


def test_cli_reads_standard_input_and_pipes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    bad = HEADER + 'L="torchrun --node_rank $SLURM_PROCID --nnodes $SLURM_NNODES"\n' + GOOD_SRUN
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(bad.encode())))
    assert main(["lint", "-"]) == 1
    assert "<stdin>:5:" in capsys.readouterr().out
    # What `logscope lint <(sed ... job.slurm)` receives: /dev/fd/N, a pipe with a writer.
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(write_end, bad.encode()), os.close(write_end)))
    writer.start()
    try:
        assert main(["lint", f"/dev/fd/{read_end}"]) == 1
    finally:
        writer.join()
        os.close(read_end)
    assert "LL001" in capsys.readouterr().out
    # A named FIFO nobody writes to reads as empty at once instead of hanging.
    fifo = tmp_path / "job.fifo"
    os.mkfifo(fifo)
    assert main(["lint", str(fifo)]) == 2
    assert "nothing written" in capsys.readouterr().err


# --- precision on real scripts, and ruff's conveniences (issue 13) ---------------------------

MULTI = "#!/bin/bash\n#SBATCH --nodes=2\n"
LAUNCH = 'LAUNCHER="torchrun --nnodes $SLURM_NNODES --nproc_per_node 8"\n'


@pytest.mark.parametrize(("body", "expected"), [
    # under sbatch %N names the first node only: one file for all nodes
    ("#SBATCH --output=%x-%j-%N.out\n" + LAUNCH + 'srun --kill-on-bad-exit=1 bash -c "$LAUNCHER t.py"\n',
     ["LL005"]),
    # every line tagged with its host: torchrun --role $(hostname -s): --tee 3
    ("#SBATCH --output=%x-%j.out\n" + 'LAUNCHER="torchrun --nnodes $SLURM_NNODES --role \\$(hostname -s): --tee 3"\n'
     'srun --kill-on-bad-exit=1 bash -c "$LAUNCHER t.py"\n', []),
    # srun --label with a per-node output
    ("#SBATCH --output=%x-%j.out\n" + LAUNCH + 'srun --label --kill-on-bad-exit=1 --output=%x-%j-%N.out '
     'bash -c "$LAUNCHER t.py"\n', []),
    # a one-task srun has nothing to kill
    ("#SBATCH --output=%x-%j.out\nsrun -n1 hostname\nsrun --ntasks=1 nvidia-smi\n" + LAUNCH
     + 'srun --kill-on-bad-exit=1 -o %x-%j-%N.out bash -c "$LAUNCHER t.py"\n', []),
    # --node_rank with c10d through a $LAUNCHER variable: per node, harmless; the same everywhere, LL007
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv_backend c10d"\n'
     'srun --kill-on-bad-exit=1 -o %x-%j-%N.out bash -c "$LAUNCHER --node_rank \\$SLURM_PROCID t.py"\n', []),
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv_backend c10d"\n'
     'srun --kill-on-bad-exit=1 -o %x-%j-%N.out bash -c "$LAUNCHER --node_rank 0 t.py"\n', ["LL007"]),
    # the PyTorch docs' script: a variable holding a one-task srun's output says nothing about the next srun
    ('#SBATCH --output=%x-%j.out\nhead_node_ip=$(srun --nodes=1 --ntasks=1 -w "$head_node" hostname --ip-address)\n'
     'srun -o %x-%j-%N.out torchrun --nnodes $SLURM_NNODES --rdzv_endpoint $head_node_ip:29500 t.py\n', ["LL004"]),
    # srun's options through a quoted variable or an array
    ('#SBATCH --output=%x-%j.out\nSRUN_ARGS="--wait=60 --kill-on-bad-exit=1"\n'
     'srun "$SRUN_ARGS" -o %x-%j-%N.out torchrun --nnodes $SLURM_NNODES t.py\n', []),
    ('#SBATCH --output=%x-%j.out\nSRUN_ARGS=(--wait=60 -K1)\n'
     'srun "${SRUN_ARGS[@]}" -o %x-%j-%N.out torchrun --nnodes $SLURM_NNODES t.py\n', []),
    ('#SBATCH --output=%x-%j.out\nSRUN_ARGS=(--wait=60)\n'
     'srun "${SRUN_ARGS[@]}" -o %x-%j-%N.out torchrun --nnodes $SLURM_NNODES t.py\n', ["LL004"]),
    # a program's own "-n 1" is not srun's
    ("#SBATCH --output=%x-%j.out\nsrun -o %x-%j-%N.out python train.py -n 1\n", ["LL004"]),
    ("#SBATCH --output=%x-%j.out\nsrun -w node01 -n 1 -o %N.out hostname\n", []),
    # a hard-coded node count in a variable
    ('NNODES=128\nsrun --kill-on-bad-exit=1 -o %x-%j-%N.out torchrun --nnodes $NNODES t.py\n', ["LL003"]),
])
def test_precision_on_real_scripts(body: str, expected: list[str]) -> None:
    assert codes(MULTI + body) == expected


def test_nnodes_in_a_variable_points_at_the_option() -> None:
    (problem,) = lint_script(parse_script(MULTI + "NNODES=128\nsrun -K1 -o %N.out torchrun --nnodes $NNODES t.py\n"))
    assert (problem.code, problem.line, problem.column, problem.severity) == ("LL003", 4, 29, "error")
    assert "128" in problem.message and "#SBATCH --nodes is 2" in problem.message


def test_noqa_select_ignore() -> None:
    text = (MULTI + "#SBATCH --output=one.out  # logscope: noqa: LL005\n"
            "srun torchrun --nnodes 2 t.py  # logscope: noqa\n")
    assert codes(text) == []
    text = MULTI + "#SBATCH --output=one.out  # logscope: noqa: LL004\nsrun torchrun --nnodes 2 t.py\n"
    script = parse_script(text)
    assert [p.code for p in lint_script(script)] == ["LL005", "LL004", "LL003"]
    assert [p.code for p in lint_script(script, ignore={"LL00"})] == []
    assert [p.code for p in lint_script(script, select={"LL00"}, ignore={"LL004"})] == ["LL005", "LL003"]


def test_cli_formats_statistics_and_select(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "job.slurm"
    script.write_text(MULTI + "#SBATCH --output=one.out\nsrun torchrun --nnodes 2 t.py\nsrun python t.py\n")
    assert main(["lint", str(script), "--statistics"]) == 1
    assert capsys.readouterr().out.splitlines() == ["2  LL004  missing-kill-on-bad-exit",
                                                    "1  LL003  nnodes-not-from-slurm", "1  LL005  output-without-node"]
    assert main(["lint", str(script), "--ignore", "LL004,LL005", "--format", "json"]) == 1
    assert [p["code"] for p in json.loads(capsys.readouterr().out)] == ["LL003"]
    assert main(["lint", str(script), "--select", "LL004", "--format", "github"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"::warning file={script},line=4,col=1,title=LL004::LL004 srun without --kill-on-bad-exit "
                        "(fix: use srun --kill-on-bad-exit=1 so one failed node stops the job step)")
    assert len(lines) == 2
    assert main(["lint", str(script), "--format", "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["LL005", "LL004", "LL003", "LL004"]
    assert run["results"][2]["locations"][0]["physicalLocation"]["region"] == {"startLine": 4, "startColumn": 15}
    assert all("``" not in r["fullDescription"]["text"] for r in run["tool"]["driver"]["rules"])
    assert main(["lint", str(script), "--format", "yaml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and "'yaml' is not one of 'text', 'json', 'github', 'sarif'" in err


def test_cli_prints_brackets_in_paths_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A path holding [...] is not rich markup: no MarkupError, and the name is printed whole."""
    for name in ("train[v2].sbatch", "odd[bold]name[red].sbatch"):
        script = tmp_path / name
        script.write_text(MULTI + "#SBATCH --output=one.out\nsrun -K1 torchrun --nnodes $SLURM_NNODES t\n")
        assert main(["lint", str(script)]) == 1
        out = capsys.readouterr().out
        assert f"{script}:3:1: LL005" in out
