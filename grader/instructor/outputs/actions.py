"""A GitHub Actions workflow that grades a student's repository (a student kit made with
`grader release student`), one graded test per part, for GitHub Classroom's reporter.

Each part's test is `grader check ID --part NAME --results FILE`, FILE in the runner's
temporary folder: the first test of an exercise grades all its parts once and keeps the
results there (grader.saved), the others report their part from them, so the helper that
imports Keras starts once per exercise, not once per part.

The reporter (classroom-resources/autograding-grading-reporter) uploads a score only when the
workflow is named "Autograding Tests" and its one job is `run-autograding-tests`; it reads each
test's result from an environment variable `<STEP ID IN CAPITALS>_RESULTS` and the step ids
from `runners`. The job skips the commits GitHub Classroom's bot makes when it creates the
repository (`github-classroom[bot]`), which would otherwise be graded as an empty submission.
"""

from __future__ import annotations

import json
import re

from grader.vocabulary.spec import Exercise

WORKFLOW_NAME = "Autograding Tests"
JOB_ID = "run-autograding-tests"
BOT_GUARD = "github.actor != 'github-classroom[bot]'"
COMMAND_GRADER = "classroom-resources/autograding-command-grader@v1"
REPORTER = "classroom-resources/autograding-grading-reporter@v1"
# Minutes a part may take, TensorFlow's start included. Each test may take as long as its
# exercise's parts together: the first grades them all.
PART_MINUTES = 10
RESULTS_FILE = "${{ runner.temp }}/attnkit-check-results.json"


def step_id(record: Exercise, part_name: str) -> str:
    """A step id GitHub accepts (a letter first; letters, digits, '-' and '_')."""
    return "ex" + re.sub(r"[^a-z0-9_-]+", "-", f"{record.id}-{part_name}".lower())


def part_command(record: Exercise, part_name: str) -> str:
    return f'grader check {record.id} --part {part_name} --results "{RESULTS_FILE}"'


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def actions_workflow(records: list[Exercise], python: str = "3.11") -> str:
    ids = {}
    for record in records:
        for part in record.parts:
            ids[step_id(record, part.name)] = (record, part)
    lines = [
        f"# Made by `grader release actions {' '.join('-e ' + r.id for r in records)}`.",
        "# Put it in .github/workflows/ of the assignment's template repository (a kit from",
        "# `grader release student`). Each part is one test: its points when `grader check`",
        "# passes it. The name, the job id and the guard below are what GitHub Classroom's",
        "# reporter requires; do not rename them.",
        f"name: {WORKFLOW_NAME}",
        "'on':",
        "  - push",
        "  - workflow_dispatch",
        "  - repository_dispatch",
        "permissions:",
        "  checks: write",
        "  actions: read",
        "  contents: read",
        "jobs:",
        f"  {JOB_ID}:",
        "    runs-on: ubuntu-latest",
        f"    if: {BOT_GUARD}",
        f"    timeout-minutes: {PART_MINUTES * len(ids) + 15}",
        "    steps:",
        "      - name: Checkout code",
        "        uses: actions/checkout@v4",
        "      - name: Set up Python",
        "        uses: actions/setup-python@v5",
        "        with:",
        f"          python-version: {_quoted(python)}",
        "      - name: Install the kit",
        "        run: python -m pip install -e .",
    ]
    for identifier, (record, part) in ids.items():
        lines += [
            f"      - name: {_quoted(f'{record.id} {part.name}')}",
            f"        id: {identifier}",
            f"        uses: {COMMAND_GRADER}",
            "        with:",
            f"          test-name: {_quoted(f'{record.id} {part.name}')}",
            f"          command: {_quoted(part_command(record, part.name))}",
            f"          timeout: {PART_MINUTES * len(record.parts)}",
            f"          max-score: {part.points:g}",
        ]
    lines += [
        "      - name: Autograding Reporter",
        f"        uses: {REPORTER}",
        "        env:",
        *(
            f'          {identifier.upper()}_RESULTS: "${{{{steps.{identifier}.outputs.result}}}}"'
            for identifier in ids
        ),
        "        with:",
        f"          runners: {','.join(ids)}",
    ]
    return "\n".join(lines) + "\n"
