"""``logscope analyze JOBID`` reads only the job's own files: what SLURM's record and the batch script
name as its output is expanded with SLURM's rules (only ``%`` fields; ``[``, ``]``, ``*`` are the name's
own characters), looked for in folders known whole (never a walk), and read only when owned by the
job's user and inside its working directory or the folder an absolute pattern names; everything else
is listed as skipped with the reason, and never copied by ``--save``."""

from __future__ import annotations

import json
import os
import pwd
import sys
from pathlib import Path
from typing import Any

import pytest
from accounting_support import DATA, SAMPLES

from logscope.cli import main

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="files of another user are made with chown, which needs root")
JOB = "4242015"

FAKE = '''#!{python}
"""A stand-in for SLURM's sacct (and a scontrol that knows no job): sacct --json prints the test's record."""
import os, sys
if os.path.basename(sys.argv[0]) == "scontrol":
    sys.stderr.write("slurm_load_jobs error: Invalid job id specified\\n")
    sys.exit(1)
if "-B" in sys.argv:
    sys.stdout.write("Batch Script for {job}\\n" + "-" * 80 + "\\nNONE\\n")
elif "-P" in sys.argv:
    sys.stdout.write("JobID|JobName|State\\n")
else:
    sys.stdout.write(open(os.environ["FAKE_RECORD"]).read())
'''


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "internal error" not in err, err
    return code, out, err


class Cluster:
    """sacct and scontrol on PATH answering for job 4242015 (two nodes, gpu-node01 and 02), whose
    record the test writes: its user, working directory, StdOut pattern and batch script."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp = tmp_path
        self.work = tmp_path / "work"
        self.work.mkdir()
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        for name in ("sacct", "scontrol"):
            (bin_dir / name).write_text(FAKE.format(python=sys.executable, job=JOB))
            (bin_dir / name).chmod(0o755)
        self.record = tmp_path / "record.json"
        monkeypatch.setenv("PATH", str(bin_dir))
        monkeypatch.setenv("FAKE_RECORD", str(self.record))
        monkeypatch.setenv("TZ", "UTC")
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.uid = os.getuid()

    def job(self, stdout: str, script: str = "", user: str | None = None, work_dir: Path | None = None) -> None:
        document: dict[str, Any] = json.loads((DATA / "sacct-24.11-node-fail.json").read_text())
        job = document["jobs"][0]
        job.update(stdout=stdout, stderr=stdout, stdout_expanded="", stderr_expanded="", user=user or self.user,
                   working_directory=str(work_dir or self.work), script=script)
        self.record.write_text(json.dumps(document))

    def log(self, name: str, node: str = "gpu-node01", folder: Path | None = None, uid: int | None = None) -> Path:
        """A copy of the node-failure sample's log of ``node`` at ``folder/name`` (owned by ``uid``)."""
        path = (folder or self.work) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((SAMPLES / "node-failure" / f"train-{JOB}-{node}.out").read_text())
        if uid is not None:
            os.chown(path, uid, -1)
        return path


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cluster:
    return Cluster(tmp_path, monkeypatch)


def analyzed(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = run(capsys, "analyze", JOB, "--format", "json", *args)
    return code, (json.loads(out) if out else {}), err


@needs_root
def test_a_file_of_another_user_is_not_read(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    # StdOut=/etc/shadow: a job of nobody's names a file of root's; the administrator running
    # logscope could read it, nobody could not
    nobody = pwd.getpwnam("nobody")
    secret = cluster.tmp / "etc" / "shadow"
    secret.parent.mkdir()
    secret.write_text("root:$6$secret:19000:0:99999:7:::\n")
    cluster.job(str(secret), user="nobody")
    code, _, err = analyzed(capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "no log file of the job" in err and "owned by root (uid 0), not by the job's user nobody" in err
    # the job's own files, owned by nobody, are read; the secret is listed as skipped
    cluster.job("train-%j-%N.out", user="nobody",
                script=f"#!/bin/bash\nsrun --error={secret} python train.py\n")
    for node in ("gpu-node01", "gpu-node02"):
        cluster.log(f"train-{JOB}-{node}.out", node, uid=nobody.pw_uid)
    code, data, err = analyzed(capsys)
    assert code == 1, err
    assert sorted(Path(f).name for f in data["job"]["files"]) == [f"train-{JOB}-gpu-node01.out",
                                                                  f"train-{JOB}-gpu-node02.out"]
    assert {"file": str(secret), "reason": "owned by root (uid 0), not by the job's user nobody"} in data["skipped"]


def test_dot_dot_does_not_lead_out_of_the_working_directory(cluster: Cluster,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    outside = cluster.log("x", folder=cluster.tmp)  # the test's user's own file, beside the job's folder
    cluster.job("train-%j-%N.out", script="#!/bin/bash\nsrun --output=../x python train.py\n")
    for node in ("gpu-node01", "gpu-node02"):
        cluster.log(f"train-{JOB}-{node}.out", node)
    ticket = cluster.tmp / "ticket"
    code, data, err = analyzed(capsys, "--save", str(ticket))
    assert code == 1, err
    assert str(outside) not in data["job"]["files"] and len(data["job"]["files"]) == 2
    assert any(s["file"] == f"{cluster.work}/../x" and "'..'" in s["reason"] for s in data["skipped"]), data["skipped"]
    assert "x" not in {p.name for p in ticket.iterdir()}


def test_a_link_out_of_the_working_directory_is_not_read(cluster: Cluster,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = cluster.log("private.log", folder=cluster.tmp / "home")
    cluster.job("train-%j-%N.out")
    cluster.log(f"train-{JOB}-gpu-node01.out")
    (cluster.work / f"train-{JOB}-gpu-node02.out").symlink_to(elsewhere)
    code, data, err = analyzed(capsys)
    assert code == 1, err
    assert [Path(f).name for f in data["job"]["files"]] == [f"train-{JOB}-gpu-node01.out"]
    reasons = {s["file"]: s["reason"] for s in data["skipped"]}
    assert reasons[f"{cluster.work}/train-{JOB}-gpu-node02.out"].startswith(f"a link to {elsewhere}, outside ")


def test_stars_in_a_record_are_no_walk_of_the_file_system(cluster: Cluster,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # StdOut=/*/*/*/*/* walked / before, into an internal error; SLURM would write a file of that name
    cluster.job("/*/*/*/*/*")
    code, _, err = analyzed(capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"Error: job {JOB}: no log file of the job where SLURM says its output went (/*/*/*/*/*")


def test_brackets_and_stars_are_the_names_own_characters(cluster: Cluster,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # a real pattern with [ ] and *: taken as a glob before, so the logs were not found (and other
    # files were: out1-x-... matches the glob out[1]-*-...)
    cluster.job("out[1]-*-%j-%N.log")
    for node in ("gpu-node01", "gpu-node02"):
        cluster.log(f"out[1]-*-{JOB}-{node}.log", node)
    cluster.log(f"out1-x-{JOB}-gpu-node01.log")
    code, data, err = analyzed(capsys)
    assert code == 1, err
    assert sorted(Path(f).name for f in data["job"]["files"]) == [f"out[1]-*-{JOB}-gpu-node01.log",
                                                                  f"out[1]-*-{JOB}-gpu-node02.log"]


def test_a_shell_variable_in_a_folder_is_not_a_walk_of_other_folders(cluster: Cluster,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # srun --output=$OUT/... became */... : every folder's matching files were read
    cluster.job("train-%j-%N.out", script="#!/bin/bash\nsrun --output=$OUT/%j-%t.log python train.py\n")
    for node in ("gpu-node01", "gpu-node02"):
        cluster.log(f"train-{JOB}-{node}.out", node)
    other = cluster.log(f"{JOB}-0.log", folder=cluster.work / "another-job")
    code, data, err = analyzed(capsys)
    assert code == 1, err
    assert str(other) not in data["job"]["files"]
    assert any("shell variable" in s["reason"] for s in data["skipped"]), data["skipped"]


def test_a_shell_variable_in_a_name_stands_for_any_text(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.job("slurm-%j.out", script="#!/bin/bash\nsrun --output=logs/run-${TAG}-%N.log python train.py\n")
    for node in ("gpu-node01", "gpu-node02"):
        cluster.log(f"run-abc-{node}.log", node, folder=cluster.work / "logs")
    cluster.log("run-abc-gpu-node07.log", folder=cluster.work / "logs")  # no node of the job
    code, data, err = analyzed(capsys)
    assert code == 1, err
    assert sorted(Path(f).name for f in data["job"]["files"]) == ["run-abc-gpu-node01.log", "run-abc-gpu-node02.log"]


def test_a_node_field_stands_for_the_jobs_nodes_only(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.job("train-%j-%N-%n.out")
    cluster.log(f"train-{JOB}-gpu-node01-0.out", "gpu-node01")
    cluster.log(f"train-{JOB}-gpu-node02-1.out", "gpu-node02")
    cluster.log(f"train-{JOB}-gpu-node02-0.out", "gpu-node02")  # node02 is node 1, not 0
    cluster.log(f"train-{JOB}-gpu-node03-2.out", "gpu-node02")  # no node of the job
    code, data, err = analyzed(capsys)
    assert code == 1, err
    assert sorted(Path(f).name for f in data["job"]["files"]) == [f"train-{JOB}-gpu-node01-0.out",
                                                                  f"train-{JOB}-gpu-node02-1.out"]


def test_output_patterns_per_job_are_capped(cluster: Cluster, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope.accounting import confine, gather

    monkeypatch.setattr(confine, "MAX_RULES", 8)
    monkeypatch.setattr(gather, "MAX_RULES", 8)
    script = "#!/bin/bash\n" + "".join(f"srun --output=out-{n}-%N.log hostname\n" for n in range(20))
    cluster.job("train-%j-%N.out", script=script)
    for node in ("gpu-node01", "gpu-node02"):
        cluster.log(f"train-{JOB}-{node}.out", node)
    code, data, err = analyzed(capsys)
    assert code == 1, err
    assert len(data["job"]["files"]) == 2
    assert any("at most 8 patterns" in s["reason"] for s in data["skipped"]), data["skipped"]


def test_srun_patterns_of_a_big_job_are_one_rule_each() -> None:
    # 100,000 hosts times 20 srun --output patterns made 2 million globs, each a walk
    from logscope.accounting.gather import output_rules
    from logscope.accounting.record import AccountingRecord, StepRecord

    nodes = tuple(f"n{i:06d}" for i in range(100_000))
    script = "#!/bin/bash\n" + "".join(f"srun --output=o{n}-%N-%t.log x\n" for n in range(20))
    record = AccountingRecord(StepRecord(JOB, None, "FAILED", nodes=nodes), user="alice", work_dir="/w",
                              stdout="%x-%j-%N.out", script=script)
    rules, refused = output_rules(record)
    assert len(rules) == 21 and not refused
    per_node_folders = AccountingRecord(StepRecord(JOB, None, "FAILED", nodes=nodes), user="alice", work_dir="/w",
                                        script="srun --output=logs/%N/%t.log x\n")
    rules, refused = output_rules(per_node_folders)
    assert len(rules) == 1 + 1024 and "first 1024 nodes of 100000" in refused[0].reason


def test_a_job_of_a_user_this_machine_does_not_know(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.job("train-%j-%N.out", user="no-such-user-here")
    for node in ("gpu-node01", "gpu-node02"):
        cluster.log(f"train-{JOB}-{node}.out", node)
    code, _, err = analyzed(capsys)
    assert code == 2 and err.count("\n") == 1
    assert "the job's user no-such-user-here is not known on this machine" in err
    # the folder given by whoever runs logscope is read as given
    code, data, err = analyzed(capsys, str(cluster.work))
    assert code == 1, err
    assert len(data["job"]["files"]) == 2


def test_save_on_a_full_disk_leaves_nothing_and_a_rerun_works(cluster: Cluster, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # --save on a full disk left a folder with one log and no record, which the rerun then refused
    import errno
    import shutil

    from logscope.accounting import bundle

    cluster.job("train-%j-%N.out")
    for node in ("gpu-node01", "gpu-node02"):
        cluster.log(f"train-{JOB}-{node}.out", node)
    ticket = cluster.tmp / "tickets" / "t-1"
    copies: list[int] = []
    real_copy = shutil.copyfileobj

    def full_disk(reader: Any, writer: Any, length: int = 0) -> None:
        copies.append(1)
        if len(copies) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_copy(reader, writer, length)

    monkeypatch.setattr(bundle.shutil, "copyfileobj", full_disk)
    code, _, err = run(capsys, "analyze", JOB, "--save", str(ticket))
    assert code == 2 and err.count("\n") == 1 and "No space left on device" in err, err
    assert list((cluster.tmp / "tickets").iterdir()) == []  # neither the bundle nor its temporary folder
    monkeypatch.setattr(bundle.shutil, "copyfileobj", real_copy)
    code, _, err = run(capsys, "analyze", JOB, "--save", str(ticket))
    assert code == 1, err
    assert sorted(p.name for p in ticket.iterdir()) == ["sacct.json", f"train-{JOB}-gpu-node01.out",
                                                        f"train-{JOB}-gpu-node02.out"]
    assert [p.name for p in (cluster.tmp / "tickets").iterdir()] == ["t-1"]


def test_save_copies_the_file_that_was_read_and_no_other(tmp_path: Path) -> None:
    from logscope.accounting.bundle import save_bundle
    from logscope.errors import OutputError

    log = tmp_path / "job" / "train-1-n1.out"
    log.parent.mkdir()
    log.write_text("the job's log\n")
    read_as = (log.stat().st_dev, log.stat().st_ino)
    secret = tmp_path / "secret"
    secret.write_text("not the job's\n")
    log.unlink()
    log.symlink_to(secret)  # swapped for a link after it was found
    with pytest.raises(OutputError, match="not the file that was read"):
        save_bundle(tmp_path / "ticket", [log], None, {}, (), {log: read_as})
    assert not (tmp_path / "ticket").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job", "secret"]  # no temporary folder left


def test_save_writes_only_what_analyze_read(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.job("train-%j-%N.out")
    for node in ("gpu-node01", "gpu-node02"):
        cluster.log(f"train-{JOB}-{node}.out", node)
    cluster.log("notes.md")  # in the working directory, named by no pattern
    ticket = cluster.tmp / "ticket"
    code, _, err = run(capsys, "analyze", JOB, "--save", str(ticket))
    assert code == 1, err
    assert sorted(p.name for p in ticket.iterdir()) == ["sacct.json", f"train-{JOB}-gpu-node01.out",
                                                        f"train-{JOB}-gpu-node02.out"]
    assert oct(ticket.stat().st_mode & 0o777) == oct(0o777 & ~_umask())


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def test_the_batch_shells_own_variables_are_known(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    # a folder per job, named by the batch shell's $SLURM_JOB_ID: known, so looked in
    cluster.job("slurm-%j.out", script="#!/bin/bash\nsrun --output=logs/${SLURM_JOB_ID}/$USER-%N.log python t.py\n")
    for node in ("gpu-node01", "gpu-node02"):
        cluster.log(f"{cluster.user}-{node}.log", node, folder=cluster.work / "logs" / JOB)
    code, data, err = analyzed(capsys)
    assert code == 1, err
    assert sorted(Path(f).name for f in data["job"]["files"]) == [f"{cluster.user}-gpu-node01.log",
                                                                  f"{cluster.user}-gpu-node02.log"]


def test_the_kernels_files_are_no_jobs_output(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    # /proc/self/environ is a regular file of whoever reads it: a job of theirs could name it
    cluster.job("/proc/self/environ")
    code, _, err = analyzed(capsys)
    assert code == 2 and err.count("\n") == 1
    assert "a file of the kernel's, no job's output" in err
