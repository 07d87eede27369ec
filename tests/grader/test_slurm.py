"""`grader slurm` on a real Slurm: a single-node cluster (Debian's slurmctld, slurmd and munge)
started and stopped here. The array and its gather job write the unsharded gradebook byte for
byte; an array task cancelled with scancel is named by `grader gather`, and resubmitting just
that task, as `grader slurm` says, completes the gradebook.

Needs root (slurmd runs jobs as their user) and `apt-get install slurmctld slurmd munge
slurm-client`; skipped with the reason where they are missing, a failure in CI (CI=1)."""

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader import cli
from grader.instructor.batch import BatchOptions, run_batch
from grader.instructor.course.shards import shard_of
from grader.instructor.course.stubs import package_dir
from grader.kit import KIT

pytestmark = pytest.mark.ex8_1

SEED = 31
SHARDS = 2
# Two students per shard (the split is a hash of the id: tests/grader/test_shards.py).
CLASS = {"ann": "solution", "ben": "stub", "cat": "missing", "dan": "solution"}
OPTIONS = ["--seed", str(SEED), "--jobs", "1", "--memory", "256", "--timeout", "10"]


def need_slurm() -> None:
    missing = [p for p in ("slurmctld", "slurmd", "sbatch", "munged") if not _which(p)]
    reason = None
    if missing:
        reason = f"needs Slurm and munge ({', '.join(missing)} not found): apt-get install " + (
            "slurmctld slurmd munge slurm-client"
        )
    elif os.geteuid() != 0:
        reason = "needs root: slurmd runs each job as its user"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI runs this test (.ci/run installs them)")
        pytest.skip(reason)


def _which(program: str) -> str | None:
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, seconds: float, what: str, logs=()):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    shown = "\n".join(f"--- {p}\n{Path(p).read_text()[-3000:]}" for p in logs if Path(p).exists())
    pytest.fail(f"{what} after {seconds} s\n{shown}")


def munge_works() -> bool:
    done = subprocess.run(["munge", "-n"], capture_output=True, check=False)
    return done.returncode == 0


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A Slurm of this machine alone: its conf in SLURM_CONF for sbatch, squeue and scancel."""
    need_slurm()
    root = tmp_path_factory.mktemp("slurm")
    started = []
    if not munge_works():  # munged as the munge user, as Debian runs it
        Path("/run/munge").mkdir(exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        munged = [_which("munged"), "--foreground"]
        started.append(subprocess.Popen(["runuser", "-u", "munge", "--", *munged]))
        wait_for(munge_works, 10, "munged did not start")
    host = socket.gethostname().split(".")[0]
    memory = int(Path("/proc/meminfo").read_text().split()[1]) // 1024 * 3 // 4
    conf = root / "slurm.conf"
    conf.write_text(
        "\n".join(
            [
                "ClusterName=grader-test",
                f"SlurmctldHost={host}",
                "SlurmUser=root",
                "AuthType=auth/munge",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SchedulerType=sched/builtin",
                # Pending jobs (a gather whose dependency just became true) are looked at every
                # second, not every minute (the default).
                "SchedulerParameters=sched_interval=1",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core_Memory",
                "JobAcctGatherType=jobacct_gather/none",
                "AccountingStorageType=accounting_storage/none",
                "ReturnToService=2",
                f"SlurmctldPort={free_port()}",
                f"SlurmdPort={free_port()}",
                f"StateSaveLocation={root / 'state'}",
                f"SlurmdSpoolDir={root / 'spool'}",
                f"SlurmctldPidFile={root / 'slurmctld.pid'}",
                f"SlurmdPidFile={root / 'slurmd.pid'}",
                f"SlurmctldLogFile={root / 'slurmctld.log'}",
                f"SlurmdLogFile={root / 'slurmd.log'}",
                f"NodeName={host} CPUs={os.cpu_count()} RealMemory={memory} State=UNKNOWN",
                "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )
    )
    (root / "state").mkdir()
    (root / "spool").mkdir()
    environment = {**os.environ, "SLURM_CONF": str(conf)}
    logs = [root / "slurmctld.log", root / "slurmd.log"]
    for daemon in ("slurmctld", "slurmd"):
        flags = ["-D", "-f", str(conf)] + (["-c"] if daemon == "slurmctld" else [])
        started.append(subprocess.Popen([_which(daemon), *flags], env=environment))

    def idle():
        done = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], env=environment, capture_output=True, text=True
        )
        return done.stdout.strip() == "idle"

    wait_for(idle, 30, "the node did not come up", logs)
    try:
        yield environment
    finally:
        for process in reversed(started):
            process.terminate()
        for process in reversed(started):
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


def make_class(folder: Path) -> Path:
    for student, kind in CLASS.items():
        (folder / student).mkdir(parents=True)
        if kind == "missing":
            (folder / student / "notes.txt").write_text("I will hand it in tomorrow\n")
            continue
        source = package_dir("solutions" if kind == "solution" else "exercises") / "ex8_1.py"
        shutil.copy(source, folder / student / "ex8_1.py")
    return folder


def queue_empty(environment, *jobs: str) -> bool:
    done = subprocess.run(
        ["squeue", "-h", "-j", ",".join(jobs)], env=environment, capture_output=True, text=True
    )
    return done.returncode == 0 and not done.stdout.strip()


def sbatch(environment, *words: str) -> str:
    done = subprocess.run(
        ["sbatch", "--parsable", *words], env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split(";")[0]


def test_a_slurm_array_grades_the_class_and_a_cancelled_task_is_named_and_rerun(
    slurm, tmp_path, monkeypatch
):
    assert sorted({shard_of(s, SHARDS) for s in CLASS}) == list(range(SHARDS))
    students = make_class(tmp_path / "class")
    # The jobs run `python -m grader` in this folder: this checkout's grader.
    monkeypatch.chdir(KIT)
    monkeypatch.setenv("SLURM_CONF", slurm["SLURM_CONF"])
    out = tmp_path / "out"
    words = ["slurm", students, "-e", "8-1", "--shards", SHARDS, "--out", out, *OPTIONS]
    result = CliRunner().invoke(cli.main, [str(w) for w in words] + ["--submit"])
    assert result.exit_code == 0, result.output
    array, gather = re.search(r"submitted: shards (\d+), gather (\d+)", result.output).groups()
    script = out / "slurm" / "shards.sbatch"
    assert f"#SBATCH --array=0-{SHARDS - 1}" in script.read_text()
    assert "#SBATCH --cpus-per-task=1" in script.read_text()
    assert f"--array=K,L {script}" in result.output  # how to rerun failed tasks
    logs = [out / "slurm" / f"shard-{k}.log" for k in range(SHARDS)] + [out / "slurm/gather.log"]

    # Task 1 cancelled (before or while it runs): the gather that needs it never runs.
    subprocess.run(["scancel", f"{array}_1"], env=slurm, check=True)
    # The unsharded batch, graded here while the cluster works.
    whole = run_batch(
        students,
        BatchOptions(["8-1"], tmp_path / "whole", jobs=1, memory_mb=256, timeout=10, seed=SEED),
    )
    assert sorted(whole.graded) == sorted(CLASS)
    expected = (tmp_path / "whole" / "grades.csv").read_bytes()
    wait_for(lambda: queue_empty(slurm, array, gather), 300, "the jobs did not end", logs)
    assert not (out / "grades.csv").exists()
    folders = [out / "shards" / f"shard-{k}" for k in range(SHARDS)]
    named = CliRunner().invoke(cli.main, ["gather", *map(str, folders), "--out", str(out)])
    assert named.exit_code == 1
    assert re.search(rf"(missing|unfinished) shards: 1/{SHARDS}\b", named.output), named.output
    command = next(line for line in named.output.splitlines() if " batch " in line)
    rerun = shlex.split(command)
    assert rerun[rerun.index("--shard") + 1] == f"1/{SHARDS}"
    assert rerun[rerun.index("--out") + 1] == str(folders[1])

    # Just the failed task again, then the gather, as `grader slurm` printed.
    again = sbatch(slurm, "--array=1", str(script))
    gathered = sbatch(slurm, f"--dependency=afterok:{again}", str(out / "slurm/gather.sbatch"))
    wait_for(lambda: queue_empty(slurm, again, gathered), 300, "the rerun did not end", logs)
    assert (out / "grades.csv").exists(), "\n".join(p.read_text() for p in logs if p.exists())
    assert (out / "grades.csv").read_bytes() == expected
    # The shards signed their results with the key `grader slurm` made, the instructor's alone,
    # and the gather took them with it (it refuses unsigned shards when it has the key).
    key = out / "slurm" / "shard.key"
    assert key.stat().st_mode & 0o777 == 0o600
    for folder in folders:
        assert json.loads((folder / "shard.json").read_text())["signed"] is True
        assert list((folder / "results").glob("*.json.sig"))
