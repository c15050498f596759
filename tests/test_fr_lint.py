"""LL008: Flight Recorder dumps written to a node's own disk."""

from __future__ import annotations

import pytest

from logscope.lint import lint_script, parse_script

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --output=%x-%j.out\n"
LAUNCH = "srun --kill-on-bad-exit=1 --output=%x-%j-%N.out torchrun --nnodes $SLURM_NNODES train.py\n"


def ll008(text: str) -> list[str]:
    return [p.message for p in lint_script(parse_script(HEAD + text + LAUNCH)) if p.code == "LL008"]


@pytest.mark.parametrize("prefix", ["/tmp/fr_trace_", "$TMPDIR/fr_", "${SLURM_TMPDIR}/trace_", "/dev/shm/fr_",
                                    "~/.cache/torch/trace_", "\"/tmp/fr\""])
def test_a_node_local_prefix_is_flagged(prefix: str) -> None:
    assert ll008(f"export TORCH_FR_DUMP_TEMP_FILE={prefix}\n") == [
        f"TORCH_FR_DUMP_TEMP_FILE={prefix} writes the Flight Recorder dumps to each node's own disk"]


def test_the_older_variable_too() -> None:
    assert ll008("export TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/tmp/nccl_trace_rank_\n")


def test_a_prefix_through_a_variable() -> None:
    assert ll008("DUMPS=/tmp/dumps\nexport TORCH_FR_DUMP_TEMP_FILE=$DUMPS/trace_\n")


@pytest.mark.parametrize("prefix", ["$SLURM_SUBMIT_DIR/fr/trace_", "/lustre/proj/fr/trace_", "/shared/fr_"])
def test_a_shared_prefix_is_not_flagged(prefix: str) -> None:
    assert ll008(f"export TORCH_NCCL_DUMP_ON_TIMEOUT=1\nexport TORCH_FR_DUMP_TEMP_FILE={prefix}\n") == []


def test_the_recorder_on_without_a_folder_writes_to_the_default() -> None:
    assert ll008("export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1\n") == [
        "the Flight Recorder is on, and its dumps go to PyTorch's default on each node's own disk "
        "(~/.cache/torch/comm_lib_trace_rank_<rank>, before: /tmp/nccl_trace_rank_<rank>)"]


def test_the_recorder_off_or_not_mentioned_is_not_flagged() -> None:
    assert ll008("export TORCH_FR_BUFFER_SIZE=0\n") == []
    assert ll008("") == []


def test_noqa_silences_it() -> None:
    assert ll008("export TORCH_FR_DUMP_TEMP_FILE=/tmp/fr_  # logscope: noqa: LL008\n") == []
