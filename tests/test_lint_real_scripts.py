"""`logscope lint` on scripts nobody here wrote, and on the project's own lab scripts.

tests/data/lint_real/ holds real sbatch/launch scripts from public repositories, each with its
source URL and the rule codes a reader expects (labels.toml, written by reading the scripts, not
from the linter's output). Precision and recall are counted over (script, rule) pairs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tomli as tomllib

from logscope.lint import lint_script, read_script

REAL = Path(__file__).parent / "data" / "lint_real"
LABELS = tomllib.loads((REAL / "labels.toml").read_text())["script"]
LAB_JOBS = Path(__file__).parent / "integration" / "jobs"

# What each lab script is for; every other lab script is a correct launch (healthy, or broken by
# its program, not by its launch) and must lint clean.
LAB_MISTAKES = {
    "endpoint-per-node.sbatch": {"LL006"},
    "nnodes-mismatch.sbatch": {"LL003"},
    "procid-unescaped.sbatch": {"LL001"},
    "procid-unescaped-c10d.sbatch": {"LL001"},
}


def found(path: Path) -> set[str]:
    return {p.code for p in lint_script(read_script(path))}


@pytest.mark.parametrize("entry", LABELS, ids=[e["file"] for e in LABELS])
def test_real_script(entry: dict[str, object]) -> None:
    assert str(entry["url"]).startswith("https://github.com/")
    assert found(REAL / str(entry["file"])) == set(entry["expected"])  # type: ignore[arg-type]


@pytest.mark.parametrize("which", ["dev", "held-out"])
def test_precision_and_recall(which: str) -> None:
    hits = misses = false_alarms = 0
    for entry in (e for e in LABELS if e["set"] == which):
        expected, got = set(entry["expected"]), found(REAL / entry["file"])
        hits += len(expected & got)
        misses += len(expected - got)
        false_alarms += len(got - expected)
    assert hits > 0
    precision, recall = hits / (hits + false_alarms), hits / (hits + misses)
    assert (precision, recall) == (1.0, 1.0), f"{which}: precision {precision:.0%}, recall {recall:.0%}"


def test_every_labelled_file_is_there_and_every_file_labelled() -> None:
    labelled = {e["file"] for e in LABELS}
    assert labelled == {p.name for p in REAL.iterdir() if p.name != "labels.toml"}
    assert {e["set"] for e in LABELS} == {"dev", "held-out"}


@pytest.mark.parametrize("script", sorted(p.name for p in LAB_JOBS.glob("*.sbatch")))
def test_lab_scripts_flag_only_their_mistake(script: str) -> None:
    """The lab's scripts keep --node_rank \\$SLURM_PROCID beside c10d (harmless: each node expands
    its own, and c10d ignores it): LL007 fired on 11 of them, the healthy one included."""
    assert found(LAB_JOBS / script) == LAB_MISTAKES.get(script, set())
