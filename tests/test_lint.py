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
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES"\nsrun bash -c "$LAUNCHER train.py"\n', ["LL004"]),
    ('SRUN_ARGS="--kill-on-bad-exit=1 --output=%x-%j-%N.out"\nLAUNCHER="torchrun --nnodes $SLURM_NNODES"\n'
     'srun $SRUN_ARGS bash -c "$LAUNCHER train.py"\n', []),
    ('export MASTER_ADDR=localhost\nLAUNCHER="torchrun --nnodes $SLURM_NNODES"\n' + GOOD_SRUN, ["LL006"]),
    ('export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\n'
     'LAUNCHER="torchrun --nnodes $SLURM_NNODES"\n' + GOOD_SRUN, []),
    ('LAUNCHER="torchrun --nnodes $SLURM_NNODES --rdzv_backend c10d --node_rank \\$SLURM_PROCID"\n' + GOOD_SRUN,
     ["LL007"]),
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
