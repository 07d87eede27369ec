"""The files that grade a class in shards somewhere else: a Slurm array and the gather job that
waits for it, a Kubernetes Indexed Job and its gather Job, a GitHub Actions workflow with one
matrix job per shard and a gather job. Each shard runs `grader batch --shard K/N`, K from the
scheduler (Slurm's SLURM_ARRAY_TASK_ID, Kubernetes' JOB_COMPLETION_INDEX, the matrix's value),
with one seed for all; the gather runs `grader gather` into OUT.

Text only: `ShardPlan` says what to run with which resources (grader.instructor.cluster makes
it); nothing here runs anything.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field

from grader.vocabulary.spec import Exercise

# What a task needs besides its submissions' children: the grader's own process (TensorFlow
# loaded; 763 MB measured on a 100-student run, issue 31) and its helper, rounded up.
GRADER_MB = 1024
# A task's time besides grading: Python and TensorFlow starting, the references computed.
START_MINUTES = 5
GATHER_MINUTES = 15
GATHER_MB = 2048
SHARDS_FOLDER = "shards"


@dataclass
class ShardPlan:
    """One class graded in `shards` shards; paths as the jobs see them."""

    submissions: str
    out: str
    exercises: list[str]
    seed: int
    shards: int
    jobs: int  # submissions graded at once in a task: its cores
    memory_mb: int  # what one submission may use (`grader batch --memory`)
    minutes: int  # a task's time limit
    batch_options: list[str] = field(default_factory=list)  # --timeout, --memory, ...
    gather_options: list[str] = field(default_factory=list)  # --no-similarity, --written, ...
    grader: list[str] = field(default_factory=lambda: ["grader"])  # how a job runs the grader

    @property
    def task_memory_mb(self) -> int:
        return GRADER_MB + self.jobs * self.memory_mb

    def shard_folder(self, index: str) -> str:
        return f"{self.out}/{SHARDS_FOLDER}/shard-{index}"

    def batch_words(self, index: str) -> list[str]:
        """The shard's command; `index` may be a shell variable ("$SLURM_ARRAY_TASK_ID"), left
        for the shell to expand."""
        words = [*self.grader, "batch", self.submissions]
        for exercise in self.exercises:
            words += ["-e", exercise]
        words += ["--seed", str(self.seed), "--jobs", str(self.jobs), *self.batch_options]
        return [*words, "--shard", f"{index}/{self.shards}", "--out", self.shard_folder(index)]

    def gather_words(self) -> list[str]:
        folders = [self.shard_folder(str(k)) for k in range(self.shards)]
        return [*self.grader, "gather", *folders, "--out", self.out, self.submissions] + list(
            self.gather_options
        )


def task_minutes(records: list[Exercise], students: int, jobs: int, timeout: float | None) -> int:
    """A task's time limit: every part of every student's exercises running to its time limit
    (`timeout` if given, else the exercise's own), `jobs` students at once, plus the start."""
    per_student = sum(len(r.parts) * (timeout or r.timeout) for r in records)
    return START_MINUTES + math.ceil(math.ceil(students / jobs) * per_student / 60)


def _shell(words: list[str], variable: str) -> str:
    """`words` quoted for a shell, each `$variable` in them left for the shell to expand."""
    quoted = []
    for word in words:
        pieces = word.split(f"${variable}")
        quoted.append(
            f'"${variable}"'.join(shlex.quote(piece) if piece else "" for piece in pieces)
        )
    return " ".join(quoted)


def _key_lines(logs: str) -> list[str]:
    """The shards sign their results, and the gather checks them, with the key `grader slurm`
    wrote beside the scripts (readable by the instructor alone; docs/cluster.md)."""
    key = shlex.quote(f"{logs}/shard.key")
    return [
        "# The course's key: shards sign their results with it, the gather refuses any other.",
        f'if [ -z "${{GRADER_SHARD_KEY:-}}" ] && [ -r {key} ]; then',
        f'  GRADER_SHARD_KEY="$(cat {key})"; export GRADER_SHARD_KEY',
        "fi",
    ]


def slurm_array(plan: ShardPlan, workdir: str, logs: str) -> str:
    """The sbatch script of the shards: one array task per shard."""
    command = _shell(plan.batch_words("$SLURM_ARRAY_TASK_ID"), "SLURM_ARRAY_TASK_ID")
    return "\n".join(
        [
            "#!/bin/bash",
            "# Made by `grader slurm`: one array task per shard of the class, each running",
            "# `grader batch --shard K/N` with the same seed. Rerun failed tasks with",
            f"#   sbatch --array=K,L {logs}/shards.sbatch",
            "#SBATCH --job-name=grader-shards",
            f"#SBATCH --array=0-{plan.shards - 1}",
            "#SBATCH --ntasks=1",
            f"#SBATCH --cpus-per-task={plan.jobs}",
            f"#SBATCH --mem={plan.task_memory_mb}M",
            f"#SBATCH --time={plan.minutes}",
            f"#SBATCH --output={logs}/shard-%a.log",
            "set -euo pipefail",
            *_key_lines(logs),
            f"cd {shlex.quote(workdir)}",
            f"exec {command}",
            "",
        ]
    )


def slurm_gather(plan: ShardPlan, workdir: str, logs: str) -> str:
    """The sbatch script of the gather, submitted with --dependency=afterok on the array (and
    cancelled, not left pending, when a shard fails: --kill-on-invalid-dep)."""
    return "\n".join(
        [
            "#!/bin/bash",
            "# Made by `grader slurm`: the shards' folders into one gradebook in OUT, once every",
            "# array task has succeeded (sbatch --dependency=afterok:ARRAY_JOB_ID).",
            "#SBATCH --job-name=grader-gather",
            "#SBATCH --ntasks=1",
            "#SBATCH --cpus-per-task=1",
            f"#SBATCH --mem={GATHER_MB}M",
            f"#SBATCH --time={GATHER_MINUTES}",
            "#SBATCH --kill-on-invalid-dep=yes",
            f"#SBATCH --output={logs}/gather.log",
            "set -euo pipefail",
            *_key_lines(logs),
            f"cd {shlex.quote(workdir)}",
            f"exec {shlex.join(plan.gather_words())}",
            "",
        ]
    )


def _yaml(value) -> str:
    """A YAML scalar (a JSON string is a valid YAML one)."""
    return json.dumps(value, ensure_ascii=False)


def kubernetes_jobs(plan: ShardPlan, image: str, claim: str, name: str = "grader") -> str:
    """Two Jobs in one file: an Indexed Job of `plan.shards` pods (JOB_COMPLETION_INDEX is the
    shard), and the gather Job to apply once it has completed. The class and the results live
    on the PersistentVolumeClaim `claim`, mounted at /class; paths are relative to it."""
    command = _shell(plan.batch_words("$JOB_COMPLETION_INDEX"), "JOB_COMPLETION_INDEX")
    cpu, memory = str(plan.jobs), f"{plan.task_memory_mb}Mi"

    def pod(container: str, words: str, cpu: str, memory: str) -> list[str]:
        return [
            "  template:",
            "    metadata:",
            f"      labels: {{grader-step: {container}}}",
            "    spec:",
            "      restartPolicy: Never",
            "      containers:",
            f"        - name: {container}",
            f"          image: {_yaml(image)}",
            "          workingDir: /class",
            f'          command: ["sh", "-c", {_yaml("exec " + words)}]',
            "          resources:",
            f"            requests: {{cpu: {_yaml(cpu)}, memory: {_yaml(memory)}}}",
            f"            limits: {{cpu: {_yaml(cpu)}, memory: {_yaml(memory)}}}",
            "          volumeMounts:",
            "            - {name: class, mountPath: /class}",
            "      volumes:",
            f"        - {{name: class, persistentVolumeClaim: {{claimName: {_yaml(claim)}}}}}",
        ]

    return "\n".join(
        [
            "# Made by `grader kubernetes`. The shards first, the gather once they are done:",
            "#   kubectl apply -f THIS_FILE -l grader-step=shards",
            f"#   kubectl wait --for=condition=complete --timeout=-1s job/{name}-shards",
            "#   kubectl apply -f THIS_FILE -l grader-step=gather",
            "# A failed shard is retried once on its own (backoffLimitPerIndex); one that failed",
            "# twice is named by the gather; delete both Jobs and apply again: the finished",
            "# shards skip every student they already graded.",
            "apiVersion: batch/v1",
            "kind: Job",
            "metadata:",
            f"  name: {name}-shards",
            "  labels: {grader-step: shards}",
            "spec:",
            "  completionMode: Indexed",
            f"  completions: {plan.shards}",
            f"  parallelism: {plan.shards}",
            "  backoffLimitPerIndex: 1",
            f"  activeDeadlineSeconds: {plan.minutes * 60 * 2}",
            *pod("shards", command, cpu, memory),
            "---",
            "apiVersion: batch/v1",
            "kind: Job",
            "metadata:",
            f"  name: {name}-gather",
            "  labels: {grader-step: gather}",
            "spec:",
            "  backoffLimit: 0",
            f"  activeDeadlineSeconds: {GATHER_MINUTES * 60}",
            *pod("gather", shlex.join(plan.gather_words()), "1", f"{GATHER_MB}Mi"),
            "",
        ]
    )


def actions_matrix(plan: ShardPlan, python: str = "3.11") -> str:
    """A workflow (run by hand: workflow_dispatch) in the private repository that holds the kit
    and the class: one matrix job per shard, each uploading its folder as an artifact, then a
    gather job that downloads them all and uploads the gradebook."""
    shard = "${{ matrix.shard }}"
    setup = [
        "      - uses: actions/checkout@v4",
        "      - uses: actions/setup-python@v5",
        "        with:",
        f"          python-version: {_yaml(python)}",
        "      - run: python -m pip install -e .",
    ]
    return "\n".join(
        [
            "# Made by `grader actions-matrix`: put it in .github/workflows/ of the private",
            "# repository that holds the kit and the class, then run it from the Actions tab.",
            "name: Grade the class in shards",
            "'on':",
            "  workflow_dispatch: {}",
            "permissions:",
            "  contents: read",
            "jobs:",
            "  shard:",
            "    runs-on: ubuntu-latest",
            f"    timeout-minutes: {plan.minutes}",
            "    strategy:",
            "      fail-fast: false",
            "      matrix:",
            f"        shard: {json.dumps(list(range(plan.shards)))}",
            "    steps:",
            *setup,
            f"      - run: {_yaml(shlex.join(plan.batch_words(shard)))}",
            "      - uses: actions/upload-artifact@v4",
            "        with:",
            f"          name: shard-{shard}",
            f"          path: {_yaml(plan.shard_folder(shard))}",
            "  gather:",
            "    needs: shard",
            "    runs-on: ubuntu-latest",
            f"    timeout-minutes: {GATHER_MINUTES}",
            "    steps:",
            *setup,
            "      - uses: actions/download-artifact@v4",
            "        with:",
            "          pattern: shard-*",
            f"          path: {_yaml(f'{plan.out}/{SHARDS_FOLDER}')}",
            f"      - run: {_yaml(shlex.join(plan.gather_words()))}",
            "      - uses: actions/upload-artifact@v4",
            "        with:",
            "          name: gradebook",
            f"          path: {_yaml(plan.out)}",
            "",
        ]
    )
