"""``logscope lint``: a static check of sbatch scripts for the launch mistakes that break
multi-node torchrun jobs before they start.

The script is read as bash would read it, just enough to know, for every character, whether it
sits inside single quotes, double quotes or neither, and whether it is escaped; lines joined by
a trailing backslash form one command whose findings point at the physical line. Nothing is
executed. Each rule is a function with a stable code (``LL001``...) and a docstring that
``logscope lint --explain`` prints.

Exit codes follow ruff: 0 no problems, 1 problems found, 2 the script could not be read.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from logscope.errors import InputError, printable

LAUNCHERS = re.compile(r"\b(?:torchrun|torch\.distributed\.(?:run|launch)|accelerate\s+launch|deepspeed)\b")


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    column: int
    code: str
    message: str
    fix: str
    severity: str = "error"

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "column": self.column, "code": self.code,
                "severity": self.severity, "message": self.message, "fix": self.fix}


@dataclass
class Command:
    """One logical command: physical lines joined at trailing backslashes."""

    text: str
    first_line: int
    # for each character of text: its physical line, column, quote context and escaping
    lines: list[int] = field(default_factory=list)
    columns: list[int] = field(default_factory=list)
    quote: list[str] = field(default_factory=list)  # "'", '"' or ""
    escaped: list[bool] = field(default_factory=list)

    def where(self, index: int) -> tuple[int, int]:
        if not self.lines:
            return self.first_line, 1
        index = max(0, min(index, len(self.lines) - 1))
        return self.lines[index], self.columns[index] + 1


@dataclass
class Script:
    path: str
    text: str
    commands: list[Command]
    directives: dict[str, tuple[str, int]]  # #SBATCH option -> (value, line)
    # NAME -> value of the script's simple assignments, worked out once (every rule expands
    # variables on every command: recomputing them each time made lint quadratic)
    assignments: dict[str, str] = field(default_factory=dict)
    # physical line -> the codes a "# logscope: noqa[: CODE, ...]" comment silences there ("*": all)
    noqa: dict[int, set[str]] = field(default_factory=dict)

    @property
    def nodes(self) -> int | None:
        value = self.directives.get("nodes", ("", 0))[0]
        m = re.match(r"(\d+)(?:-(\d+))?$", value)
        return int(m.group(2) or m.group(1)) if m else None

    def multi_node(self) -> bool:
        """Whether the job may run on more than one node: ``#SBATCH --nodes`` above 1, or, without
        it (``sbatch -N`` on the command line, an ``salloc`` allocation), a node count taken from
        SLURM or a launcher's ``--nnodes`` whose least is above 1."""
        if self.nodes is not None:
            return self.nodes > 1
        if re.search(r"SLURM_NNODES|SLURM_JOB_NUM_NODES", self.text):
            return True
        return any(int(m.group(1)) > 1 for m in re.finditer(r"--nnodes[= ]['\"]?(\d+)", self.text))

    def uses_launcher(self) -> bool:
        return bool(LAUNCHERS.search(self.text))

    def expand(self, text: str, depth: int = 3) -> str:
        """``text`` with ``$NAME``/``${NAME}`` replaced by the script's own simple assignments
        (``NAME=...``/``export NAME=...``), a few levels deep: options often live in variables
        (``SRUN_ARGS="--kill-on-bad-exit=1 ..."; srun $SRUN_ARGS ...``)."""
        values = self.assignments
        if "$" not in text or not values:
            return text

        def value(m: re.Match[str]) -> str:
            found = values.get(m.group(1))
            # NAME=$(srun -n1 hostname): $NAME is that command's output, not its words (the PyTorch
            # docs' head_node_ip=$(srun --nodes=1 ...) made `srun torchrun --rdzv_endpoint
            # $head_node_ip:29500` look like a one-task srun)
            return m.group(0) if found is None or _SUBSTITUTION.match(found) else found

        for _ in range(depth):
            new = _VARIABLE.sub(value, text)
            if new == text:
                break
            text = new
        return text


_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w*)\}?")
_SUBSTITUTION = re.compile(r"\$\(|`")
_ASSIGNMENT = re.compile(r"\s*(?:export\s+)?([A-Za-z_]\w*)=(.*)$", re.S)
_NOQA = re.compile(r"#\s*logscope:\s*noqa\b(?::\s*([A-Za-z0-9_,\s]+))?", re.I)


def _assignments(commands: list[Command]) -> dict[str, str]:
    out: dict[str, str] = {}
    for command in commands:
        m = _ASSIGNMENT.match(command.text)
        if m:
            out[m.group(1)] = m.group(2).strip().strip("\"'")
    return out


def _noqa(text: str) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    if "noqa" not in text:
        return out
    for number, line in enumerate(text.splitlines(), start=1):
        m = _NOQA.search(line)
        if m:
            codes = {c.strip().upper() for c in re.split(r"[,\s]+", m.group(1) or "") if c.strip()}
            out[number] = codes or {"*"}
    return out


def read_script(path: Path) -> Script:
    """Read a job script: a file, ``-`` for standard input, or a pipe (``<(sed ... job.slurm)``)."""
    try:
        if str(path) == "-":
            data = sys.stdin.buffer.read()
            path = Path("<stdin>")
        elif path.is_fifo():
            data = _read_pipe(path)
            if not data:
                raise InputError(f"{path}: a pipe with nothing written to it")
        elif path.exists() and not path.is_file() and not path.is_dir():
            raise InputError(f"{path}: not a regular file or pipe")
        else:
            data = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    if b"\x00" in data[:4096]:
        raise InputError(f"{path}: binary file, not a job script")
    return parse_script(data.decode("utf-8", "replace"), printable(str(path)))


def _read_pipe(path: Path) -> bytes:
    """A pipe's whole content. Opened without blocking, so a named FIFO nobody writes to reads
    as empty instead of hanging; then read blocking, to wait for a writer that is still busy."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(descriptor, True)
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            return stream.read()
    finally:
        os.close(descriptor)


def parse_script(text: str, path: str = "<script>") -> Script:
    directives: dict[str, tuple[str, int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        m = re.match(r"\s*#SBATCH\s+(--?[\w-]+)(?:[= ]\s*(\S+))?", line)
        if m:
            name = m.group(1).lstrip("-")
            name = {"N": "nodes", "o": "output", "e": "error", "n": "ntasks", "J": "job-name", "t": "time"}.get(
                name, name)
            directives[name] = (m.group(2) or "", number)
    commands = list(_commands(text))
    return Script(path, text, commands, directives, _assignments(commands), _noqa(text))


def _commands(text: str) -> Iterator[Command]:
    """Split the script into logical commands, tracking quoting per character."""
    quote = ""
    current = Command("", 1)
    chars: list[str] = []
    line, column = 1, 0
    i = 0
    escaped_next = False
    in_comment = False
    while i < len(text):
        ch = text[i]
        if ch == "\n":
            continued = chars and chars[-1] == "\\" and not (current.escaped and current.escaped[-1]) and quote != "'"
            if continued:  # line continuation: drop the backslash, keep going
                chars.pop()
                for attr in (current.lines, current.columns, current.quote, current.escaped):
                    attr.pop()
            elif quote:
                chars.append(ch)
                current.lines.append(line)
                current.columns.append(column)
                current.quote.append(quote)
                current.escaped.append(False)
            else:
                current.text = "".join(chars)
                if current.text.strip():
                    yield current
                current, chars = Command("", line + 1), []
            in_comment = False
            line, column = line + 1, 0
            i += 1
            escaped_next = False
            continue
        if in_comment:
            i += 1
            column += 1
            continue
        is_escaped = escaped_next
        escaped_next = False
        if quote != "'" and ch == "\\" and not is_escaped:
            escaped_next = True
        elif quote == "" and ch == "#" and not is_escaped and (not chars or chars[-1].isspace()):
            in_comment = True
            i += 1
            column += 1
            continue
        elif ch == "'" and quote in ("", "'") and not is_escaped:
            quote = "" if quote == "'" else "'"
        elif ch == '"' and quote in ("", '"') and not is_escaped:
            quote = "" if quote == '"' else '"'
        chars.append(ch)
        current.lines.append(line)
        current.columns.append(column)
        current.quote.append(quote)
        current.escaped.append(is_escaped)
        i += 1
        column += 1
    current.text = "".join(chars)
    if current.text.strip():
        yield current


# ---------------------------------------------------------------------------------------------
# Rules


Rule = Callable[[Script], Iterator[Problem]]
RULES: list[tuple[str, str, Rule]] = []


def rule(code: str, name: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        RULES.append((code, name, fn))
        return fn
    return register


_PROCID = re.compile(r"\$(?:\{SLURM_PROCID\}|SLURM_PROCID\b)")


@rule("LL001", "procid-expanded-early")
def procid_expanded_early(script: Script) -> Iterator[Problem]:
    """``$SLURM_PROCID`` expanded by the batch script's shell instead of by each task.

    In ``srun bash -c "torchrun --node_rank $SLURM_PROCID ..."`` (or in a double-quoted
    ``LAUNCHER="..."`` used later) the batch shell expands the variable once, where it is 0 or
    empty, before srun starts a task per node: every node starts as node 0. Escape it
    (``\\$SLURM_PROCID``) or single-quote the launcher so each task expands its own value.
    """
    for command in script.commands:
        for m in _PROCID.finditer(command.text):
            start = m.start()
            if command.escaped[start] or command.quote[start] == "'":
                continue
            line, column = command.where(start)
            yield Problem(script.path, line, column, "LL001",
                          "$SLURM_PROCID is expanded by the batch shell (it is 0 there), so every node gets the "
                          "same value",
                          "escape it as \\$SLURM_PROCID inside double quotes, or put the launcher in single quotes")


@rule("LL002", "ntasks-per-node-with-torchrun")
def ntasks_per_node_with_torchrun(script: Script) -> Iterator[Problem]:
    """``--ntasks-per-node`` other than 1 with torchrun.

    torchrun starts ``--nproc_per_node`` workers itself; srun must start exactly one torchrun per
    node. With more tasks per node each task starts a full set of workers: duplicate ranks and
    GPUs (``Duplicate GPU detected``).
    """
    value, line = script.directives.get("ntasks-per-node", ("", 0))
    if value and value != "1" and script.uses_launcher():
        yield Problem(script.path, line, 1, "LL002",
                      f"--ntasks-per-node={value} with torchrun starts {value} launchers per node",
                      "use #SBATCH --ntasks-per-node=1 and let torchrun start --nproc_per_node workers")


_NNODES = re.compile(r"--nnodes[= ](\S+)")


@rule("LL003", "nnodes-not-from-slurm")
def nnodes_not_from_slurm(script: Script) -> Iterator[Problem]:
    """``--nnodes`` written as a number instead of taken from SLURM.

    A literal node count goes stale when the allocation changes (``sbatch -N 4`` on the command
    line overrides ``#SBATCH --nodes``); the rendezvous then waits for nodes that never come. A
    number kept in a variable (``NNODES=128`` ... ``--nnodes $NNODES``) is just as literal.
    """
    nodes = script.nodes
    for command in script.commands:
        if "nnodes" not in command.text:
            continue
        written = list(_NNODES.finditer(command.text))
        # through a variable too: NNODES=128 ... torchrun --nnodes $NNODES
        for index, m in enumerate(_NNODES.finditer(script.expand(command.text))):
            value = m.group(1).strip("'\"")
            if not re.fullmatch(r"\d+(?::\d+)?", value):
                continue
            line, column = command.where(written[index].start() if index < len(written) else 0)
            least, most = int(value.split(":")[0]), int(value.split(":")[-1])
            mismatch = nodes is not None and not least <= nodes <= most
            if not mismatch and least <= 1 and (nodes or 1) <= 1:
                continue  # a job on one node (sbatch's default) that --nnodes allows has nothing to go stale
            yield Problem(script.path, line, column, "LL003",
                          f"--nnodes {value} is hard-coded" + (f" but #SBATCH --nodes is {nodes}" if mismatch else ""),
                          "use --nnodes $SLURM_NNODES", "error" if mismatch else "warning")


_ONE_TASK = re.compile(r"(?:-n\s*1|--ntasks[= ]1|-N\s*1|--nodes[= ]1)$")
# srun options that take no value: anything else written without "=" takes the next word
_SRUN_FLAGS = frozenset(("-l", "--label", "-u", "--unbuffered", "-Q", "--quiet", "-v", "--verbose", "-X",
                         "--disable-status", "-Z", "--no-allocate", "--exclusive", "--overlap", "-O",
                         "--overcommit", "-E", "--preserve-env", "-k", "--no-kill", "-H", "--hold", "-s",
                         "--oversubscribe", "--pty", "--multi-prog", "--spread-job", "--test-only",
                         "--use-min-nodes", "-K", "--kill-on-bad-exit", "--exact", "--whole", "-I",
                         "--immediate", "--unbuffered"))
_WORD = re.compile(r"(?:\\.|\"[^\"]*\"|'[^']*'|[^\s;&|])+")


def srun_options(text: str) -> list[str]:
    """The options of the srun whose arguments ``text`` holds (what follows the word ``srun``), up
    to the program it starts: ``-n 1 -w "$head" hostname --ip-address`` gives ``-n 1 -w "$head"``,
    each option with its value as one item (``-n 1``). The program's own options (``hostname -n
    1``...) are not srun's."""
    options: list[str] = []
    words = iter(word for m in _WORD.finditer(text) for word in _unquoted(m.group(0)))
    for word in words:
        if not word.startswith("-"):
            break
        if "=" in word or word in _SRUN_FLAGS or (len(word) > 2 and not word.startswith("--")):
            options.append(word)  # --nodes=1, -l, -n1
        else:
            options.append(f"{word} {next(words, '')}")  # -n 1, --jobid $SLURM_JOB_ID
    return options


def _unquoted(word: str) -> list[str]:
    """A shell word as the words it stands for: ``"$SRUN_ARGS"`` expanded to ``"--wait=60
    --kill-on-bad-exit=1"`` and ``"${ARGS[@]}"`` expanded to ``"(-K -l)[@]}"`` are options."""
    inner = re.sub(r"\)?\[[@*]\]\}?(?=[\"']?$)", "", word)  # an array's [@]
    inner = re.sub(r"^[\"'(]+|[\"')]+$", "", inner)  # one layer of quotes, an array's parentheses
    return inner.split() or [""]


@rule("LL004", "missing-kill-on-bad-exit")
def missing_kill_on_bad_exit(script: Script) -> Iterator[Problem]:
    """``srun`` without ``--kill-on-bad-exit`` on a multi-node job.

    Without it, when one node's torchrun fails the others keep waiting in collectives until the
    NCCL timeout or the time limit, burning the allocation and burying the root failure. An srun
    of one task (``srun -n1 hostname``) has no other task to stop and is not flagged. Only srun's
    own options count, variables holding them included (``srun $SRUN_ARGS ...``); a variable
    holding a command's output (``head_node_ip=$(srun --nodes=1 ...)``) holds no srun options.
    """
    if (script.nodes or 1) <= 1 and "SLURM_NNODES" not in script.text:
        return
    for command in script.commands:
        for m in re.finditer(r"(?:^|[;&|(]\s*|\s)srun\s", command.text):
            if command.quote[m.end() - 1]:
                continue
            options = srun_options(script.expand(command.text[m.end():]))
            if any(re.match(r"--kill-on-bad-exit|-K(?:\d|$|\s)", option) for option in options):
                continue
            if any(_ONE_TASK.match(option) for option in options):
                continue  # one task (srun -n1 hostname): nothing else to kill
            line, column = command.where(m.end() - 5)
            yield Problem(script.path, line, column, "LL004", "srun without --kill-on-bad-exit",
                          "use srun --kill-on-bad-exit=1 so one failed node stops the job step", "warning")
            break


_SRUN_PER_NODE_OUTPUT = re.compile(r"\bsrun\b.*\s(?:--output[= ]|-o\s?)\S*%[Nt]")
_HOST_ROLE = re.compile(r"--role[= ]\S*?[$`]\S*?(?:hostname|HOSTNAME|SLURMD_NODENAME)")


@rule("LL005", "output-without-node")
def output_without_node(script: Script) -> Iterator[Problem]:
    """Multi-node job writing every node's output into one file, lines not tagged with their host.

    Under sbatch, ``#SBATCH --output`` is opened once, by the batch step on the first node: a
    ``%N`` there names that node only, and every node's srun output goes to that one file. All
    nodes' lines interleave, often without host names; finding which node failed first becomes
    guesswork. An srun ``--output=%x-%j-%N.out`` (or ``%t``) gives one file per node. Not flagged
    when every line carries its host anyway: torchrun ``--role $(hostname -s): --tee 3`` (each
    line starts with ``[host:rank]:``).
    """
    if (script.nodes or 1) <= 1:
        return
    value, line = script.directives.get("output", ("", 0))
    expanded = [script.expand(c.text) for c in script.commands if "srun" in c.text or "$" in c.text]
    if any(_SRUN_PER_NODE_OUTPUT.search(text) for text in expanded):
        return
    if any("--tee" in text for text in expanded) and any(_host_role(c) for c in script.commands):
        return
    if "%N" in value:
        message = (f"#SBATCH --output={value}: under sbatch %N is only the first node's name, so one file "
                   "holds every node's output")
    else:
        message = "logs of all nodes go to one file" + (f" ({value})" if value else "")
    yield Problem(script.path, line or 1, 1, "LL005", message,
                  "write one file per node: srun --output=%x-%j-%N.out", "warning")


def _host_role(command: Command) -> bool:
    """Whether ``command`` writes a torchrun ``--role`` that each node expands to its own host name:
    escaped (``--role \\$(hostname -s):``) or single-quoted. Expanded once by the batch shell
    (``--role `hostname -s`:`` inside a double-quoted launcher) it is the first node's name on
    every node's lines."""
    for m in _HOST_ROLE.finditer(command.text):
        at = m.start() + re.search(r"[$`]", m.group(0)).start()  # type: ignore[union-attr]
        if command.escaped[at] or command.quote[at] == "'":
            return True
    return False


_MASTER = re.compile(r"\bMASTER_ADDR=(\S+)|--(rdzv[_-]endpoint|master[_-]addr)[= ](\S+)")
# Expanded by each task's shell, not once by the batch shell: escaped inside a double-quoted launcher.
_PER_NODE = re.compile(r"\\\$\(hostname|\\`hostname|\\\$\{?(?:HOSTNAME|SLURMD_NODENAME)\b")
_FROM_ALLOCATION = "MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)"


@rule("LL006", "master-addr-not-from-nodelist")
def master_addr_not_from_nodelist(script: Script) -> Iterator[Problem]:
    r"""``MASTER_ADDR`` (or ``--rdzv_endpoint`` / ``--master_addr``) not taken from the job's node list.

    It must name the same host for every node: ``$(scontrol show hostnames $SLURM_JOB_NODELIST |
    head -n 1)``. ``localhost``/``127.0.0.1`` make every node its own master (split world);
    ``\$(hostname)``, ``\$HOSTNAME`` or ``\$SLURMD_NODENAME``, escaped so that every task expands
    it, do the same: each node hosts its own store and waits there for the others until the
    rendezvous times out.
    """
    for command in script.commands:
        for m in _MASTER.finditer(command.text):
            name, value = ("MASTER_ADDR", m.group(1)) if m.group(1) is not None else (f"--{m.group(2)}", m.group(3))
            line, column = command.where(m.start())
            if re.search(r"localhost|127\.0\.0\.1", value):
                if not script.multi_node():
                    continue  # one node: its own master is the only master
                yield Problem(script.path, line, column, "LL006",
                              f"{name} {value} makes every node its own master", _FROM_ALLOCATION)
            elif _PER_NODE.search(value):
                yield Problem(script.path, line, column, "LL006",
                              f"{name} from the host name evaluated on every node: each node its own master",
                              _FROM_ALLOCATION)
            elif name == "MASTER_ADDR" and not re.search(
                    r"scontrol|SLURM_JOB_NODELIST|SLURM_NODELIST|SLURM_LAUNCH_NODE|hostname|\$\{?\w+", value):
                yield Problem(script.path, line, column, "LL006",
                              f"MASTER_ADDR={value} is fixed, not taken from the allocation", _FROM_ALLOCATION,
                              "warning")


_NODE_RANK = re.compile(r"--node[_-]rank[= ]\s*")
_NODE_RANK_VALUE = re.compile(r"(?:\\.|\"[^\"]*\"|'[^']*'|[^\s;&|])+")


@rule("LL007", "node-rank-same-on-every-node")
def node_rank_same_on_every_node(script: Script) -> Iterator[Problem]:
    """``--node_rank`` that is the same on every node, with ``--rdzv_backend c10d``.

    The c10d rendezvous assigns node ranks itself and ignores ``--node_rank`` (torchrun reads it
    only for the static rendezvous), so a per-node value (``--node_rank \\$SLURM_PROCID``, expanded
    by each task) is harmless. A value that is the same on every node is a mistake waiting to
    happen: a number (``--node_rank 0``), or a variable the batch shell expands once for the whole
    job (``srun torchrun --node_rank $SLURM_NODEID``, 0 there). Nothing breaks while c10d ignores
    it; switch to the static rendezvous (or copy the line into a script that uses it) and every
    node starts as the same node, and the rendezvous waits for the others until it times out.
    ``$SLURM_PROCID`` expanded early is already LL001.
    """
    if not script.multi_node():
        return
    written = [c for c in script.commands if _NODE_RANK.search(c.text)]
    places: set[tuple[int, int]] = set()
    for command in script.commands:
        if "rdzv" not in command.text and "node" not in command.text and "$" not in command.text:
            continue
        expanded = script.expand(command.text)  # the launcher often lives in a variable: $LAUNCHER
        if not (re.search(r"--rdzv[_-]backend[= ]c10d", expanded) and _NODE_RANK.search(expanded)):
            continue
        # where --node_rank is written: this command, else the variable that brought it
        for where in [command] if _NODE_RANK.search(command.text) else written:
            for m in _NODE_RANK.finditer(where.text):
                if where.where(m.start()) in places or not _same_on_every_node(script, where, m.end()):
                    continue
                places.add(where.where(m.start()))
                line, column = where.where(m.start())
                value = _NODE_RANK_VALUE.match(where.text, m.end())
                shown = value.group(0) if value else ""
                yield Problem(script.path, line, column, "LL007",
                              f"--node_rank {shown} is the same on every node (c10d ignores it; the static "
                              "rendezvous would start every node as the same node)",
                              "drop --node_rank (c10d assigns node ranks), or pass \\$SLURM_NODEID expanded "
                              "by each task", "warning")


def _same_on_every_node(script: Script, command: Command, start: int) -> bool:
    """Whether the ``--node_rank`` value at ``start`` is one value for the whole job: a number
    (directly or through the script's own variable), or a variable expanded once by the batch
    shell. ``$SLURM_PROCID`` expanded there is LL001's; a script with no ``#SBATCH`` line may be
    what srun runs on every node, where variables are each task's own."""
    m = _NODE_RANK_VALUE.match(command.text, start)
    if m is None:
        return False
    value = m.group(0)
    if re.fullmatch(r"[\"']?\d+[\"']?", script.expand(value)):
        return True
    variable = re.match(r"[\"]?\$\{?(\w+)", value)
    if variable is None or command.escaped[start] or command.quote[start] == "'" or not script.directives:
        return False
    return variable.group(1).startswith("SLURM_") and variable.group(1) != "SLURM_PROCID"


_FR_PREFIX = re.compile(r"\b(TORCH_FR_DUMP_TEMP_FILE|TORCH_NCCL_DEBUG_INFO_TEMP_FILE)=(\S*)")
_FR_ON = re.compile(r"\b(?:TORCH_FR_BUFFER_SIZE|TORCH_NCCL_TRACE_BUFFER_SIZE|TORCH_FR_DUMP_ON_TIMEOUT"
                    r"|TORCH_NCCL_DUMP_ON_TIMEOUT)=[\"']?(\S*)")
# Folders on each node's own disk: gone, or out of reach, once the job's nodes are released.
_NODE_LOCAL = re.compile(r"^[\"']?(?:/tmp/|/tmp$|/var/tmp/|/dev/shm/|/local/|/scratch/local/|/raid/|/mnt/local"
                         r"|\$\{?(?:TMPDIR|SLURM_TMPDIR|TMP|LOCAL_SCRATCH|LOCALSCRATCH)\b|~/\.cache/"
                         r"|\$\{?HOME\}?/\.cache/)")
_SHARED_PREFIX = "TORCH_FR_DUMP_TEMP_FILE=$SLURM_SUBMIT_DIR/fr/trace_ (a folder every node shares)"


@rule("LL008", "flight-recorder-dumps-node-local")
def flight_recorder_dumps_node_local(script: Script) -> Iterator[Problem]:
    """Flight Recorder dumps written to a node's own disk.

    On a collective timeout PyTorch writes each rank's Flight Recorder (its last collectives,
    which name the rank the others waited for) to ``<prefix><rank>``: the prefix is
    ``TORCH_FR_DUMP_TEMP_FILE`` (``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` in older releases), by default
    ``~/.cache/torch/comm_lib_trace_rank_`` (``/tmp/nccl_trace_rank_`` before). A prefix in
    ``/tmp``, ``$TMPDIR``, ``/dev/shm`` or another node-local folder, or the default where the
    script turns the recorder on without choosing a folder, leaves the dumps on the compute nodes,
    where nobody collects them: set the prefix to a folder every node shares.
    """
    prefixes: list[tuple[Command, re.Match[str]]] = []
    enabled: list[tuple[Command, re.Match[str]]] = []
    for command in script.commands:
        if "TORCH_" not in command.text:
            continue
        prefixes += [(command, m) for m in _FR_PREFIX.finditer(command.text)]
        enabled += [(command, m) for m in _FR_ON.finditer(command.text) if m.group(1).strip("\"'") not in ("0", "")]
    for command, m in prefixes:
        value = script.expand(m.group(2))
        if _NODE_LOCAL.match(value) or value.strip("\"'") == "":
            line, column = command.where(m.start())
            yield Problem(script.path, line, column, "LL008",
                          f"{m.group(1)}={m.group(2)} writes the Flight Recorder dumps to each node's own disk",
                          f"set {_SHARED_PREFIX}", "warning")
    if enabled and not prefixes and script.uses_launcher():
        command, m = enabled[0]
        line, column = command.where(m.start())
        yield Problem(script.path, line, column, "LL008",
                      "the Flight Recorder is on, and its dumps go to PyTorch's default on each node's own disk "
                      "(~/.cache/torch/comm_lib_trace_rank_<rank>, before: /tmp/nccl_trace_rank_<rank>)",
                      f"also set {_SHARED_PREFIX}", "warning")


def lint_script(script: Script, select: set[str] | None = None, ignore: set[str] | None = None) -> list[Problem]:
    """The script's problems, sorted by place. ``select``/``ignore`` are upper-cased code prefixes
    or rule names (as ruff's; :func:`logscope.choices.selectors` checks them);
    a ``# logscope: noqa`` comment (``: LL005, LL004`` to name codes) silences its physical line."""
    problems: list[Problem] = []
    for code, name, fn in RULES:
        keys = (code, name.upper())
        if select and not any(k.startswith(s) for s in select for k in keys):
            continue
        if ignore and any(k.startswith(s) for s in ignore for k in keys):
            continue
        problems.extend(p for p in fn(script) if not _silenced(script, p))
    return sorted(problems, key=lambda p: (p.line, p.column, p.code))


def _silenced(script: Script, problem: Problem) -> bool:
    codes = script.noqa.get(problem.line)
    return codes is not None and ("*" in codes or problem.code in codes)


def explain(code: str) -> str | None:
    import inspect

    for rule_code, name, fn in RULES:
        if rule_code.lower() == code.lower() or name == code.lower():
            return f"{rule_code} {name}\n\n{inspect.cleandoc(fn.__doc__ or '')}"
    return None
