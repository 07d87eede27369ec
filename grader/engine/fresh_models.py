"""A trained model's weights, asked again in a model built afresh in a process of its own.

A training case's child (grader.sandbox.child._run_training) reports, besides the answers, the
trained model's weights. What a model answers must be held in those weights: a flag or a count
the submission kept in the child's process (a global, an attribute of a module, a variable
outside the model) must not answer for it. So the grader gives the weights, as data it checked
here, to another child of the same submission, which builds the model afresh with the case's
seed and answers the probes three ways (`_ask_fresh_model` there): with the training's change
shuffled (REDRAWN), with the trained weights (MOVED) and with them nudged (NUDGED); then it trains
a model built afresh by the grader's own recipe (RELEARNED, grader.sandbox.relearn). Their
answers are put into the first child's report as if it had given them, and
grader.engine.training judges them with the others.

`follow_up` is the hook grader.sandbox.processes.run_jobs calls for each finished job.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np

from grader.sandbox.processes import Job
from grader.vocabulary.bundle import BundleError, cases_from_bundle, load_bundle
from grader.vocabulary.protocol import Outcome, grad_key, output_key, refused_counts
from grader.vocabulary.spec import (
    ALONE,
    FRESH,
    MOVED,
    NUDGED,
    REDRAWN,
    RELEARN_CHANGES,
    RELEARN_FAILED,
    RELEARNED,
    RELEARNED_ALONE,
    RELEARNED_REDRAWN,
    RELEARNED_RESET,
    TRAIN,
    TRAINED,
    TRAINING_MODE,
    Case,
)
from grader.vocabulary.status import CaseStatus, RunState

# What the grader passes on of a child's weights: the labs' models hold well under a million
# numbers; a report beyond these is not a model's weights, and MOVED is then not asked (the
# engine says the weights could not be given to a fresh model).
MOST_WEIGHTS = 1000
MOST_NUMBERS = 20_000_000
FRESH_STAGES = (
    ALONE,
    REDRAWN,
    MOVED,
    NUDGED,
    TRAINING_MODE,
    RELEARNED,
    RELEARNED_ALONE,
    RELEARNED_RESET,
    RELEARNED_REDRAWN,
    RELEARN_FAILED,
    RELEARN_CHANGES,
)
_WEIGHT_NAME = re.compile(r"^\d{4}$")


def follow_up(job: Job, outcome: Outcome):
    """The job that asks fresh models with the weights of `job`'s trained models, and the
    function that merges its outcome into `outcome`; None when `job` trained no model whose
    weights came back."""
    if outcome.state != RunState.FINISHED:
        return None
    try:  # the grader's own file: the cases it made
        meta, arrays = load_bundle(job.cases)
        cases = cases_from_bundle(meta["cases"], arrays)
    except (BundleError, KeyError, OSError, ValueError):
        return None
    asked = {}
    for index, case in enumerate(cases):
        if case.kind != TRAIN or case.training.get("stage") == FRESH:
            continue
        weights = trained_weights(outcome, index)
        if weights is not None:
            asked[index] = fresh_case(case, weights)
    if not asked:
        return None
    from grader.engine.cases import save_cases

    home = fresh_home(job)
    if home is None:
        return None
    # Beside the grader's cases (never in the child's own folder, which it could have filled
    # with links): a file of this job's, which the child is allowed to read by its name.
    path = Path(job.cases).parent / f"fresh-{job.key}.npz"
    save_cases(path, list(asked.values()))
    group = f"{job.group or job.key}-fresh"
    fresh_job = replace(job, key=f"{job.key}-fresh", cases=path, group=group, **home)
    return fresh_job, lambda answered: merge(outcome, list(asked), answered)


def fresh_home(job: Job) -> dict | None:
    """The folder (and the module in it) the fresh model's child works in: a new one beside
    `job`'s, so that nothing the first child wrote (a file of counts, its own module rewritten)
    reaches the second. Where the module lay in the first child's folder, the second gets a new
    copy of the folder it was copied from (`job.origin`); None where there is none to copy."""
    directory = Path(job.directory)
    home = directory.with_name(f"{directory.name}-fresh")
    try:
        inside = Path(job.module).relative_to(directory)
    except ValueError:
        inside = None
    if inside is not None and job.origin is None:
        return None
    shutil.rmtree(home, ignore_errors=True)  # the grader's own, from an earlier try
    if inside is None:
        home.mkdir()
        return {"directory": home}
    shutil.copytree(job.origin, home)
    return {"directory": home, "module": home / inside}


def trained_weights(outcome: Outcome, index: int) -> dict[str, np.ndarray] | None:
    """The weights case `index` reported, by name, if they are what a model's weights can be:
    arrays of numbers, not too many; else None."""
    prefix = grad_key(index, TRAINED + "/")
    weights = {
        key[len(prefix) :]: value for key, value in outcome.arrays.items() if key.startswith(prefix)
    }
    if not weights or len(weights) > MOST_WEIGHTS:
        return None
    if not all(_WEIGHT_NAME.match(name) for name in weights):
        return None
    arrays = [np.asarray(value) for value in weights.values()]
    if any(array.dtype.kind not in "fiub" for array in arrays):
        return None
    if sum(array.size for array in arrays) > MOST_NUMBERS:
        return None
    return weights


def fresh_case(case: Case, weights: dict[str, np.ndarray]) -> Case:
    """The case that asks a fresh model: the probes' inputs, the trained weights, the stage
    FRESH; the training data only where the grader trains a model itself there (the plan's
    "relearn", grader.sandbox.relearn), after every stage of the trained weights."""
    plan = dict(case.training, stage=FRESH)
    probed = {source for _answer, _function, source in plan.get("probes", [])}
    if plan.get("relearn"):
        probed |= {"inputs", "targets"}
    inputs = {name: value for name, value in case.inputs.items() if name in probed}
    return replace(case, inputs=inputs, weights=dict(weights), training=plan)


def merge(outcome: Outcome, indices: list[int], answered: Outcome) -> Outcome:
    """`outcome` with the trained weights taken out of its report and, under each asked
    case's index, the stages the fresh model answered (none where its child failed: the engine
    then says that no answer came back). What the second child was refused counts too."""
    arrays = dict(outcome.arrays)
    reports = [dict(report) for report in outcome.meta.get("cases", [])]
    fresh_reports = answered.meta.get("cases") if answered.state == RunState.FINISHED else None
    for position, index in enumerate(indices):
        report = reports[index] if index < len(reports) else None
        if not isinstance(report, dict) or not isinstance(report.get("grads"), list):
            continue
        prefix = grad_key(index, TRAINED + "/")
        for key in [key for key in arrays if key.startswith(prefix)]:
            del arrays[key]
        names = [name for name in report["grads"] if not str(name).startswith(TRAINED + "/")]
        fresh = _fresh_answers(answered, fresh_reports, position)
        for name, value in fresh.items():
            arrays[grad_key(index, name)] = value
        report["grads"] = names + [name for name in fresh if name not in names]
        reports[index] = report
    refused, examples = refused_counts([outcome, answered])
    return replace(
        outcome,
        meta={**outcome.meta, "cases": reports},
        arrays=arrays,
        seconds=outcome.seconds + answered.seconds,
        refused=refused,
        refused_examples=examples,
    )


def _fresh_answers(answered: Outcome, reports, position: int) -> dict[str, np.ndarray]:
    """The stages' answers of the fresh model's case `position`, by name, where it answered."""
    if not isinstance(reports, list) or position >= len(reports):
        return {}
    report = reports[position]
    if not isinstance(report, dict) or report.get("status") != CaseStatus.OK:
        return {}
    if output_key(position) not in answered.arrays:
        return {}
    prefix = grad_key(position, "")
    # Only the fresh model's own stages: the other stages' answers are the first child's.
    return {
        key[len(prefix) :]: value
        for key, value in answered.arrays.items()
        if key.startswith(prefix) and _fresh_stage(key[len(prefix) :])
    }


def _fresh_stage(name: str) -> bool:
    """Whether an answer's name (`<stage>` or `<stage>/<probe>`) is a fresh model's stage."""
    return name.split("/")[0] in FRESH_STAGES


def in_one_process(run, module, case: Case, path: str):
    """`run(module, case, path)` (grader.sandbox.child._run_training) and then its fresh
    model's stages, both in this process, answered as one case: for benchmarks and tests of
    trusted models, where what the process keeps between the two is no one's trick."""
    from grader.sandbox import relearn

    if not relearn.remembered():
        relearn.remember_machinery()
    output, answers = run(module, case, path)
    marker = TRAINED + "/"
    weights = {
        name[len(marker) :]: value for name, value in answers.items() if name.startswith(marker)
    }
    answers = {name: value for name, value in answers.items() if not name.startswith(marker)}
    if weights:
        _output, fresh = run(module, fresh_case(case, weights), path)
        answers.update({name: value for name, value in fresh.items() if _fresh_stage(name)})
    return output, answers
