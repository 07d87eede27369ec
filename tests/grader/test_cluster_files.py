"""The files `grader slurm`, `grader kubernetes` and `grader actions-matrix` write: valid for
their schedulers (the Kubernetes batch/v1 Job schema of kubernetes-validate, in strict mode;
SchemaStore's GitHub workflow schema as check-jsonschema ships it), and each shard's command,
expanded as the scheduler's shell expands it, is `grader batch --shard K/N` with the same seed,
into the folder the gather reads."""

import importlib.resources
import json
import math
import shlex
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from grader import cli
from grader.instructor.course.shards import shard_of
from grader.instructor.course.submissions import discover
from grader.kit import KIT
from grader.records import EXERCISES

CLASS = "examples/submissions"
SHARDS = 3
SEED = 77
KUBERNETES = "1.37.0"


@pytest.fixture(autouse=True)
def at_the_kit(monkeypatch):
    monkeypatch.chdir(KIT)  # the commands take paths relative to where they run


def invoke(*words):
    result = CliRunner().invoke(cli.main, [str(w) for w in words])
    assert result.exit_code == 0, result.output
    return result.output


def common(*extra):
    return [CLASS, "-e", "8-1", "-e", "8-2", "--shards", SHARDS, "--seed", SEED, *extra]


def parsed_batch(words: list[str]) -> dict:
    """`grader batch` words as the CLI parses them (without running them)."""
    assert words[:2] == ["grader", "batch"], words
    return cli.main.commands["batch"].make_context("batch", list(words[2:])).params


def parsed_gather(words: list[str]) -> dict:
    assert words[:2] == ["grader", "gather"], words
    return cli.main.commands["gather"].make_context("gather", list(words[2:])).params


def expanded(command: str, variable: str, value: int, shell: str = "sh") -> list[str]:
    """The words the shell passes to `grader` when `variable` is `value`."""
    script = 'grader() { printf "%s\\n" "$@"; }\n' + command.removeprefix("exec ")
    done = subprocess.run(
        [shell, "-c", script], env={variable: str(value)}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return ["grader", *done.stdout.splitlines()]


def check_shards(commands: dict[int, list[str]], out: str) -> list[str]:
    """Each shard's words: shard K of N, one seed and exercise set, its own folder."""
    folders = []
    for index, words in commands.items():
        params = parsed_batch(words)
        assert params["shard"] == (index, SHARDS)
        assert params["seed"] == SEED and params["exercise_ids"] == ("8-1", "8-2")
        folders.append(str(params["out_dir"]))
    assert folders == [f"{out}/shards/shard-{k}" for k in range(SHARDS)]
    return folders


def test_the_kubernetes_jobs_validate_and_each_index_grades_its_shard():
    text = invoke(
        "kubernetes", *common("--out", "results"), "--image", "reg/attnkit:1", "--claim", "cls"
    )
    shards, gather = list(yaml.safe_load_all(text))
    for job in (shards, gather):
        kubernetes_validate.validate(job, KUBERNETES, strict=True)
    assert shards["spec"]["completionMode"] == "Indexed"
    assert shards["spec"]["completions"] == shards["spec"]["parallelism"] == SHARDS
    assert (shards["metadata"]["labels"], gather["metadata"]["labels"]) == (
        {"grader-step": "shards"},
        {"grader-step": "gather"},
    )  # `kubectl apply -l grader-step=…` picks one
    pods = [job["spec"]["template"]["spec"] for job in (shards, gather)]
    for pod in pods:
        assert pod["restartPolicy"] == "Never"
        assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "cls"
        assert (
            pod["containers"][0]["workingDir"]
            == pod["containers"][0]["volumeMounts"][0]["mountPath"]
        )
    shell = pods[0]["containers"][0]["command"]
    assert shell[:2] == ["sh", "-c"]
    commands = {k: expanded(shell[2], "JOB_COMPLETION_INDEX", k) for k in range(SHARDS)}
    folders = check_shards(commands, "results")
    words = shlex.split(pods[1]["containers"][0]["command"][2].removeprefix("exec "))
    assert [str(f) for f in parsed_gather(words)["folders"]] == [*folders, CLASS]


def test_the_kubernetes_check_can_fail():
    """The schema check is not vacuous: a misspelt field and a wrong type are refused."""
    text = invoke("kubernetes", *common(), "--image", "reg/attnkit:1", "--claim", "cls")
    shards = next(yaml.safe_load_all(text))
    misspelt = json.loads(json.dumps(shards))
    misspelt["spec"]["template"]["spec"]["containers"][0]["comand"] = ["true"]
    wrong = json.loads(json.dumps(shards))
    wrong["spec"]["completions"] = "three"
    for job in (misspelt, wrong):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(job, KUBERNETES, strict=True)


def workflow_schema() -> dict:
    vendor = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    return json.loads(vendor.joinpath("github-workflows.json").read_text(encoding="utf-8"))


def test_the_actions_workflow_validates_and_each_matrix_job_grades_its_shard(tmp_path):
    path = tmp_path / "grade.yml"
    invoke("actions-matrix", *common("--out", "gradebook"), "--workflow", path)
    workflow = yaml.safe_load(path.read_text())
    validator = jsonschema.validators.validator_for(workflow_schema())(workflow_schema())
    assert [error.message for error in validator.iter_errors(workflow)] == []
    broken = {**workflow, "jobs": {**workflow["jobs"], "gather": {"needs": 3}}}
    assert list(validator.iter_errors(broken))  # the check can fail

    shard, gather = workflow["jobs"]["shard"], workflow["jobs"]["gather"]
    assert shard["strategy"]["matrix"]["shard"] == list(range(SHARDS))
    assert shard["strategy"]["fail-fast"] is False  # one failed shard stops no other
    assert gather["needs"] == "shard"
    runs = [s["run"] for s in shard["steps"] if "grader batch" in s.get("run", "")]
    commands = {
        k: shlex.split(runs[0].replace("${{ matrix.shard }}", str(k))) for k in range(SHARDS)
    }
    folders = check_shards(commands, "gradebook")
    upload = next(s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload"))
    download = next(s for s in gather["steps"] if "download-artifact" in s.get("uses", ""))
    # download-artifact puts each artifact matched by the pattern in PATH/<artifact name>.
    assert upload["with"]["name"] == "shard-${{ matrix.shard }}"
    assert upload["with"]["path"].replace("${{ matrix.shard }}", "0") == folders[0]
    assert download["with"]["pattern"] == "shard-*"
    assert [f"{download['with']['path']}/shard-{k}" for k in range(SHARDS)] == folders
    gathered = next(s["run"] for s in gather["steps"] if "grader gather" in s.get("run", ""))
    assert [str(f) for f in parsed_gather(shlex.split(gathered))["folders"]] == [*folders, CLASS]


def test_the_slurm_array_asks_for_what_its_largest_shard_can_take(tmp_path):
    out = tmp_path / "out"
    invoke("slurm", *common("--out", out, "--jobs", 3, "--memory", 512, "--timeout", 4))
    script = (out / "slurm" / "shards.sbatch").read_text()
    asked = dict(
        line.removeprefix("#SBATCH --").split("=", 1)
        for line in script.splitlines()
        if line.startswith("#SBATCH --")
    )
    assert asked["array"] == f"0-{SHARDS - 1}" and asked["cpus-per-task"] == "3"
    assert asked["mem"] == f"{1024 + 3 * 512}M"  # the grader's own, and 3 submissions at once
    largest = max(
        [shard_of(s.id, SHARDS) for s in discover(KIT / CLASS)].count(k) for k in range(SHARDS)
    )
    parts = len(EXERCISES["8-1"].parts) + len(EXERCISES["8-2"].parts)
    worst = math.ceil(largest / 3) * parts * 4 / 60  # every part of every student timing out
    assert worst <= int(asked["time"]) <= worst + 10
    command = next(line for line in script.splitlines() if line.startswith("exec "))
    # The task runs this environment's Python: `python -m grader`, here the printing stand-in.
    command = command.replace(shlex.join([sys.executable, "-m", "grader"]), "grader", 1)
    commands = {k: expanded(command, "SLURM_ARRAY_TASK_ID", k, "bash") for k in range(SHARDS)}
    check_shards(commands, str(out.resolve()))
    gather = (out / "slurm" / "gather.sbatch").read_text()
    assert "#SBATCH --kill-on-invalid-dep=yes" in gather  # a failed shard cancels it


def test_paths_a_container_cannot_see_are_refused():
    result = CliRunner().invoke(
        cli.main,
        ["kubernetes", str(KIT / CLASS), "-e", "8-1", "--shards", "2", "--image", "i"]
        + ["--claim", "c"],
    )
    assert result.exit_code == 2 and "relative" in result.output
    result = CliRunner().invoke(cli.main, ["slurm", CLASS, "-e", "8-1", "--shards", "0"])
    assert result.exit_code == 2 and "--shards" in result.output


def test_a_seed_is_drawn_once_for_every_shard(tmp_path):
    out = tmp_path / "out"
    printed = invoke("slurm", CLASS, "-e", "8-1", "--shards", SHARDS, "--out", out)
    seed = int(printed.split("Hidden-check seed ")[1].split(".")[0])
    command = next(
        line
        for line in (out / "slurm" / "shards.sbatch").read_text().splitlines()
        if line.startswith("exec ")
    )
    assert shlex.split(command)[shlex.split(command).index("--seed") + 1] == str(seed)
    assert Path(out / "slurm" / "gather.sbatch").is_file()


def test_a_timeout_that_no_lab_can_train_in_is_refused_before_anything_is_written(tmp_path):
    """`--timeout` replaces every exercise's own limit: shorter than what a lab that trains a
    model gives its part, every student's lab would time out. Refused, with what to do, by the
    cluster files and by `grader batch` alike; a timeout that leaves the labs their time, or a
    course without them, is taken."""
    lab = EXERCISES["train-memn2n"]
    out = tmp_path / "out"
    short = ["-e", "8-1", "-e", lab.id, "--timeout", "10"]
    for command in (["slurm", CLASS, "--shards", SHARDS], ["batch", CLASS, "--seed", SEED]):
        result = CliRunner().invoke(cli.main, [*command, *short, "--out", str(out)])
        assert result.exit_code != 0, result.output
        assert "--timeout 10 is shorter than" in result.output and lab.id in result.output
        assert "Leave --timeout out" in result.output
        assert not out.exists()
    long_enough = ["-e", lab.id, "--timeout", f"{lab.timeout:g}", "--out", out]
    invoke("slurm", CLASS, "--shards", SHARDS, *long_enough)
    invoke("slurm", CLASS, "--shards", SHARDS, "-e", "8-1", "--timeout", "10", "--out", out)
