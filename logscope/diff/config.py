"""Configuration drift: the settings two runs of a job logged, and which ones changed.

What a job's logs say of its configuration (:func:`settings_of`), per node where NCCL prints it
per process, job-wide otherwise:

=============  ==================================================================================
group          settings
=============  ==================================================================================
versions       NCCL version (with its CUDA), CUDA driver (per node, from
               :func:`logscope.detectors.config_skew.node_config_table`); torch version where a
               recognised line names it
transport      the network NCCL chose, its net plugin, IB devices, channel transports, the
               interfaces of its bootstrap and sockets (per node). Rings and trees are not compared:
               the lines that list them (``Channel 00/04 :  0 1 2 ...``, ``Trees [0] ...``,
               ``4 coll channels``) are not among the recognised lines, and channel lines are
               kept one per (process, peer, transport), so the timeline cannot count channels
size           world size, number of nodes, the nodes themselves (new or missing ones)
environment    ``NCCL_*`` variables NCCL echoed (``set by environment to``), ``NCCL_*``/``TORCH_*``/
               ``CUDA_*`` assignments on a launch command line
launcher       torchrun's launch configuration (nnodes, nproc_per_node, rendezvous backend, entry
               point), the options of the ``srun``/``torchrun`` command lines the batch script traced
record         SLURM's record, when both runs have one: job name, user, working directory, output
               pattern, and the batch script's ``#SBATCH`` options and exported variables
=============  ==================================================================================

A value names no run: host and node names become ``<host>``, the job id ``<jobid>``, and what
changes every run (torchrun's ``--rdzv_id``, ``run_id``, ``log_dir``, the master port) is left out.

Only real differences count (:func:`compare_settings`). A per-node setting differs on a node of
BAD whose value no node of GOOD had; when every node of BAD that printed it moved to one value, it
is one job-wide change. A setting only some nodes print (NCCL's version, printed by rank 0) is
unknown elsewhere, not different, and a setting one run does not print at all is unknown there:
nothing is compared. Environment variables are the exception: in a run whose NCCL printed its
INFO lines, a variable it did not echo was not set. Two runs of one configuration give no drift.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from logscope.detectors.config_skew import node_config_table
from logscope.diff.templates import job_hosts  # one list of a job's own names, masked in both
from logscope.model import Event

if TYPE_CHECKING:
    from logscope.analysis import Analysis

GROUPS = ("versions", "transport", "size", "environment", "launcher", "record")
NOT_SET = "(not set)"

# node_config_table's columns: (setting, group)
_NODE_COLUMNS = {
    "nccl_version": ("NCCL version", "versions"),
    "cuda_driver": ("CUDA driver", "versions"),
    "network": ("NCCL network", "transport"),
    "net_plugin": ("NCCL net plugin", "transport"),
    "ib_devices": ("IB devices", "transport"),
    "transports": ("NCCL transports", "transport"),
}
_INTERFACE = re.compile(r"(?:\[\d+\])?([A-Za-z][\w.-]*):(?:\d{1,3}\.){3}\d{1,3}")
_ENV_ASSIGNMENT = re.compile(r"(?<![\w$])((?:NCCL|TORCH|CUDA|PYTORCH)_[A-Z0-9_]+)=([^\s'\";|&]+)")
_TORCH_VERSION = re.compile(
    r"(?i)\b(?:py)?torch(?:\s+version)?\s*(?:==|:|=|\s)\s*v?(\d+\.\d+(?:\.\d+)?(?:[+.][\w.]+)?)")
# within a group, these come first, in this order (what breaks jobs most often)
_FIRST = {name: order for order, name in enumerate((
    "NCCL version", "CUDA driver", "torch version", "NCCL network", "NCCL transports", "network interfaces",
    "IB devices", "NCCL net plugin", "world size", "nodes", "new nodes", "missing nodes"))}
# values that change every run, whatever the configuration
_RUN_SPECIFIC = frozenset({"--rdzv_id", "--rdzv-id", "--master_port", "--master-port", "--output", "--error",
                           "--job-name", "-J", "--log_dir", "--log-dir", "--run_id", "--run-id"})


@dataclass(frozen=True)
class Setting:
    """One setting of one run: job-wide (``node`` None) or one node's."""

    name: str
    group: str
    node: str | None
    value: str


@dataclass(frozen=True)
class Drift:
    """A setting that changed: job-wide (``node`` None) or on one node. ``good``/``bad`` None: the
    run did not have it (a variable not set, a node not in the job)."""

    setting: str
    group: str
    node: str | None
    good: str | None
    bad: str | None

    @property
    def scope(self) -> str:
        return "node" if self.node else "job"

    def describe(self) -> str:
        where = f" on {self.node}" if self.node else ""
        return f"{self.setting}{where}: {self.good if self.good is not None else NOT_SET} -> " \
               f"{self.bad if self.bad is not None else NOT_SET}"

    def to_json(self) -> dict[str, Any]:
        return {"setting": self.setting, "group": self.group, "scope": self.scope, "node": self.node,
                "good": self.good, "bad": self.bad}


def settings_of(analysis: Analysis) -> list[Setting]:
    """Every setting the job's logs show (see the module docstring)."""
    view = analysis.view
    job = analysis.job
    masker = _Masker(analysis)
    out: list[Setting] = []
    table = node_config_table(view)
    for row in table.to_dicts():
        for column, (name, group) in _NODE_COLUMNS.items():
            if row.get(column):
                value = str(row[column])
                if column == "ib_devices":  # the devices NCCL lists, in whatever order it found them
                    value = ",".join(sorted(" ".join(sorted(v.split())) for v in value.split(",")))
                out.append(Setting(name, group, str(row["node"]), masker(value)))
    out += _interfaces(analysis, masker)
    if view.world_size:
        out.append(Setting("world size", "size", None, str(view.world_size)))
    if job.nodes:
        out.append(Setting("nodes", "size", None, str(len(job.nodes))))
    out += _environment(analysis, table, masker)
    out += _launcher(analysis, masker)
    out += _torch(analysis)
    out += _record(analysis, masker)
    return out


class _Masker:
    """A value with the run's own names masked: its hosts and nodes, its job id."""

    def __init__(self, analysis: Analysis) -> None:
        names = sorted({h for h in job_hosts(analysis) if len(h) >= 3}, key=len, reverse=True)
        self.hosts = re.compile("|".join(re.escape(h) for h in names)) if names else None
        ids = [part for part in (analysis.job.job_id or "").split(",") if part]
        self.ids = re.compile(r"\b(?:" + "|".join(re.escape(i) for i in ids) + r")\b") if ids else None

    def __call__(self, value: str) -> str:
        if self.hosts is not None:
            value = self.hosts.sub("<host>", value)
        if self.ids is not None:
            value = self.ids.sub("<jobid>", value)
        return value


def _interfaces(analysis: Analysis, masker: _Masker) -> list[Setting]:
    rows = analysis.view.of(Event.NCCL_NET_DEVICE)
    found: dict[str, set[str]] = {}
    for node, text in rows.select(pl.coalesce("node", "host"), "text").rows():
        if node is None:
            continue
        found.setdefault(str(node), set()).update(_INTERFACE.findall(str(text or "")))
    return [Setting("network interfaces", "transport", node, masker(",".join(sorted(names))))
            for node, names in sorted(found.items()) if names]


def _environment(analysis: Analysis, table: pl.DataFrame, masker: _Masker) -> list[Setting]:
    values: dict[str, set[str]] = {}
    for cell in table.get_column("nccl_env").drop_nulls().to_list() if table.height else []:
        for pair in str(cell).split(","):
            key, _, value = pair.partition("=")
            if key:
                values.setdefault(key, set()).add(value)
    for text in _launch_texts(analysis):
        for key, value in _ENV_ASSIGNMENT.findall(text):
            values.setdefault(key, set()).add(value)
    return [Setting(key, "environment", None, masker(",".join(sorted(v)))) for key, v in sorted(values.items())]


def _launch_texts(analysis: Analysis) -> list[str]:
    rows = analysis.view.of(Event.LAUNCH_COMMAND)
    if rows.height == 0:
        return []
    texts = rows.select(pl.coalesce(pl.col("fields").struct.field("message"), pl.col("text"))).to_series()
    return [str(t) for t in texts.drop_nulls().to_list()]


def _launcher(analysis: Analysis, masker: _Masker) -> list[Setting]:
    out: list[Setting] = []
    config = analysis.view.of(Event.LAUNCH_CONFIG)
    if config.height:
        fields = pl.col("fields").struct
        said = config.select(fields.field("nnodes").alias("nnodes"),
                             fields.field("nproc_per_node").cast(pl.String).alias("nproc_per_node"),
                             fields.field("rdzv_backend").alias("rdzv_backend"),
                             fields.field("value").alias("entrypoint"))
        for name in said.columns:
            values = sorted({str(v) for v in said.get_column(name).drop_nulls().to_list()})
            if values:
                out.append(Setting(f"torchrun {name}", "launcher", None, masker(",".join(values))))
    options: dict[str, set[str]] = {}
    for text in _launch_texts(analysis):
        for name, value in command_options(text):
            if name not in _RUN_SPECIFIC:
                options.setdefault(name, set()).add(value)
    out += [Setting(f"command {name}", "launcher", None, masker(",".join(sorted(values))))
            for name, values in sorted(options.items())]
    return out


def command_options(command: str) -> list[tuple[str, str]]:
    """The ``--name value``/``--name=value`` options of a command line, also those of a command
    quoted inside it (``bash -c '... torchrun --nnodes 2 ...'``); a flag's value is ``true``."""
    try:
        words = shlex.split(command)
    except ValueError:  # an unbalanced quote: the words as they stand
        words = command.split()
    out: list[tuple[str, str]] = []
    index = 0
    while index < len(words):
        word = words[index]
        if " " in word.strip():
            out += command_options(word)
        elif word.startswith("--") and len(word) > 2:
            name, equals, value = word.partition("=")
            if not equals:
                following = words[index + 1] if index + 1 < len(words) else None
                if following is not None and _is_value(following):
                    value = following
                    index += 1
                else:
                    value = "true"
            out.append((name, value))
        index += 1
    return out


_SHELL_OPERATOR = re.compile(r"^[|&;<>()]+$")


def _is_value(word: str) -> bool:
    """Whether the word after an option is its value: not another option, a shell operator or a
    quoted command."""
    return not word.startswith("-") and not _SHELL_OPERATOR.match(word) and " " not in word.strip()


def _torch(analysis: Analysis) -> list[Setting]:
    events = analysis.view.events
    if events.height == 0:
        return []
    found = (events.select(pl.col("text").str.extract(_TORCH_VERSION.pattern, 1).alias("v"))
             .get_column("v").drop_nulls().unique().sort().to_list())
    return [Setting("torch version", "versions", None, ",".join(found))] if found else []


def _record(analysis: Analysis, masker: _Masker) -> list[Setting]:
    record = analysis.accounting
    if record is None:
        return []
    out = [Setting(f"SLURM {name}", "record", None, masker(str(value))) for name, value in (
        ("job name", record.job.name), ("user", record.user), ("work dir", record.work_dir),
        ("output", record.stdout)) if value]
    if record.script:
        for name, value in script_settings(record.script):
            if name not in _RUN_SPECIFIC:
                out.append(Setting(name, "record", None, masker(value)))
    return out


_SBATCH = re.compile(r"^\s*#SBATCH\s+(.*)$")
# sbatch's one-letter options take a value (-p gpu, -N2, -t 02:00:00)
_SHORT_OPTION = re.compile(r"(?:^|\s)-([A-Za-z])\s*([^\s-]\S*)")
_EXPORT = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*?)\s*$")


def script_settings(script: str) -> list[tuple[str, str]]:
    """A batch script's ``#SBATCH`` options (``#SBATCH --nodes``) and exported variables
    (``export NCCL_DEBUG``), with their values."""
    out: list[tuple[str, str]] = []
    for line in script.splitlines():
        directive = _SBATCH.match(line)
        if directive:
            options = directive.group(1).split("#")[0]
            out += [(f"#SBATCH {name}", value) for name, value in command_options(options)]
            out += [(f"#SBATCH -{short.group(1)}", short.group(2)) for short in _SHORT_OPTION.finditer(options)]
            continue
        export = _EXPORT.match(line)
        if export:
            out.append((f"export {export.group(1)}", export.group(2).strip("'\"")))
    return out


# --- comparison -------------------------------------------------------------------------------


def compare_settings(good: Analysis, bad: Analysis) -> list[Drift]:
    """The settings that changed from GOOD to BAD, most likely to matter first (by group, in
    :data:`GROUPS`' order; job-wide before per node)."""
    good_settings, bad_settings = settings_of(good), settings_of(bad)
    drifts: list[Drift] = []
    names = dict.fromkeys((s.name, s.group) for s in [*good_settings, *bad_settings])
    for name, group in names:
        g = [s for s in good_settings if s.name == name]
        b = [s for s in bad_settings if s.name == name]
        if group == "environment" or (group in ("launcher", "record") and _has(good, bad, group)):
            drifts += _presence_drift(name, group, g, b, good, bad)
        elif any(s.node for s in [*g, *b]):
            drifts += _node_drift(name, group, g, b)
        elif g and b and g[0].value != b[0].value:
            drifts.append(Drift(name, group, None, g[0].value, b[0].value))
    drifts += _node_names(good, bad)
    return sorted(drifts, key=lambda d: (GROUPS.index(d.group), _FIRST.get(d.setting, len(_FIRST)), d.node is not None,
                                         d.setting, d.node or ""))


def _has(good: Analysis, bad: Analysis, group: str) -> bool:
    """Whether both runs show the source of a launcher or record setting, so that a setting one of
    them lacks was not given there."""
    if group == "record":
        return good.accounting is not None and bad.accounting is not None
    return all(a.view.has(Event.LAUNCH_COMMAND) or a.view.has(Event.LAUNCH_CONFIG) for a in (good, bad))


def _presence_drift(name: str, group: str, good: list[Setting], bad: list[Setting], good_run: Analysis,
                    bad_run: Analysis) -> list[Drift]:
    """A job-wide setting whose absence means it was not set (see the module docstring)."""
    if group == "environment" and not (_nccl_speaks(good_run) and _nccl_speaks(bad_run)) and not (good and bad):
        return []
    g = good[0].value if good else None
    b = bad[0].value if bad else None
    return [] if g == b else [Drift(name, group, None, g, b)]


def _nccl_speaks(analysis: Analysis) -> bool:
    """Whether the run's NCCL printed its INFO lines (so its silence on a variable means unset)."""
    return analysis.view.has(Event.NCCL_INIT, Event.NCCL_INIT_START, Event.NCCL_ENV)


def _node_drift(name: str, group: str, good: list[Setting], bad: list[Setting]) -> list[Drift]:
    if not good or not bad:
        return []
    good_values = {s.value for s in good}
    moved = [s for s in bad if s.value not in good_values]
    if not moved:
        return []
    before = _majority(s.value for s in good)
    if len(moved) == len(bad) and len({s.value for s in moved}) == 1:
        return [Drift(name, group, None, before, moved[0].value)]
    mine = {s.node: s.value for s in good}
    return [Drift(name, group, s.node, mine.get(s.node, before), s.value) for s in moved]


def _majority(values: Iterable[str]) -> str:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return ",".join(sorted(v for v, n in counts.items() if n == max(counts.values())))


def _node_names(good: Analysis, bad: Analysis) -> list[Drift]:
    before, after = set(good.job.nodes), set(bad.job.nodes)
    if not before or not after or before == after:
        return []
    new, missing = sorted(after - before), sorted(before - after)
    out = []
    if new:
        out.append(Drift("new nodes", "size", None, None, ",".join(new)))
    if missing:
        out.append(Drift("missing nodes", "size", None, ",".join(missing), None))
    return out


__all__ = ["GROUPS", "Drift", "Setting", "command_options", "compare_settings", "script_settings", "settings_of"]
