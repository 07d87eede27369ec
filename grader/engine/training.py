"""Judging a part that trains a model: by what the model learned, in the grader's process.

The child (grader.sandbox.child) builds and trains the submission's model on data the grader
made from its seed and returns plain arrays: the model's answers to the probes the grader made.
Here those arrays become checks: the accuracy on the held-out inputs, against the right answers
computed here (`Training.answers`, never sent to the child), and each of the part's gates
(`Training.gates`), each saying what the model does wrong when it fails. The reference solution
is not run for these cases: the task's answers are known without it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from grader.engine.results import PROPERTY, CheckResult
from grader.i18n import N_, _, tr
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import (
    ALONE,
    ALONE_ROWS,
    COUNTERFACTUAL,
    LEARNED_SLACK,
    MOVED,
    NUDGE,
    NUDGED,
    REDRAWN,
    RELEARN_CHANGES,
    RELEARN_FAILED,
    RELEARNED,
    RELEARNED_ALONE,
    RELEARNED_REDRAWN,
    RELEARNED_RESET,
    RESET,
    TRAINING_MODE,
    UNTRAINED,
    Case,
    GateFailure,
    Part,
)
from grader.vocabulary.status import CaseStatus
from grader.vocabulary.text import one_line

LEARNED_FROM_TRAINING = N_("the answers come from training on the grader's data")
# How far below the trained model's accuracy the same weights in a model built afresh may answer
# (a different rounding), and the nudged ones below the pass mark.
MOVED_SLACK, NUDGED_SLACK = 0.01, 0.05
# The share of the tokens a model asked one example at a time may answer otherwise than in the
# batch (one token at least): an honest model's answers differ only where two scores tie to a
# rounding, almost never.
ALONE_DIFFER = 0.02
NO_ANSWER = N_("no answer came back for {name}")
NO_FRESH_ANSWER = N_(
    "the grader could not ask a model built afresh, in a process of its own, with the trained "
    "model's weights (that process failed or gave no answer): build_model must build the same "
    "model every time, one that answers with any weights"
)


def expected_output(part: Part, case: Case) -> CaseOutput:
    """What stands for the reference's answer to a training case: the right tokens of its
    held-out inputs, -1 where a position is not scored."""
    return CaseOutput(CaseStatus.OK, output=np.asarray(part.training.answers(plain_view(case))))


def plain_view(case: Case) -> Case:
    """The case as the task orders it: every input array but the targets with its source (the
    first len(position_code) entries of axis 1) read back from the case's secret order
    (`Case.position_code`), so that the right answers, the probes and the gates are worked out
    as the task tells them. A case without that code comes back as it is."""
    order = case.position_code
    if order is None:
        return case
    inputs = {}
    for name, array in case.inputs.items():
        array = np.asarray(array)
        if name != "targets" and array.ndim >= 2 and array.shape[1] >= len(order):
            array = _source_in_task_order(array, order, axis=1)
        inputs[name] = array
    return dataclasses.replace(case, inputs=inputs, position_code=None)


def _source_in_task_order(array: np.ndarray, order, axis: int) -> np.ndarray:
    """A copy of `array` with the first len(order) entries of `axis` (the source, in the data's
    secret order `Case.position_code`) read back into the task's order."""
    back = np.argsort(order)
    array = np.array(array, copy=True)
    source = [slice(None)] * array.ndim
    source[axis] = slice(0, len(back))
    array[tuple(source)] = np.take(array, back, axis=axis)
    return array


# Every model a training case's answers come from: the trained one (its probes' own names), and
# each stage's (`<stage>/<probe>`, and `<stage>` alone for the first probe).
STAGES = (
    COUNTERFACTUAL,
    UNTRAINED,
    RESET,
    ALONE,
    REDRAWN,
    MOVED,
    NUDGED,
    TRAINING_MODE,
    RELEARNED,
    RELEARNED_RESET,
    RELEARNED_REDRAWN,
    RELEARNED_ALONE,
)


def read_back(case: Case, got: CaseOutput) -> CaseOutput:
    """`got` with every answer of the case's models read back from its answer code
    (`Case.answer_code`) into the task's own tokens, and every attention probe's source keys
    from its position code (`Case.position_code`) into the task's order, so that everything
    judged after compares with the task's right answers and positions (on `plain_view(case)`);
    the records as they came. A case without codes comes back as it is."""
    probes = case.training.get("probes") or []
    if (case.answer_code is None and case.position_code is None) or not probes:
        return got
    answering = probes[0][1]  # the function whose probes answer with the tokens' scores
    every = probes + (case.training.get("run_probes") or [])
    names = {name for name, function, _source in every if function == answering}
    others = {name for name, function, _source in every if function != answering}

    def is_answer(key: str) -> bool:
        stage, _slash, name = key.rpartition("/")
        return key in STAGES or (name in names and stage in ("", *STAGES))

    def is_attention(key: str) -> bool:
        stage, _slash, name = key.rpartition("/")
        return name in others and stage in ("", *STAGES)

    def back(value):
        if value is None or case.answer_code is None:
            return value
        return _in_plain_tokens(case.answer_code, value)

    def keys_back(value):
        return _keys_in_task_order(case.position_code, value) if value is not None else None

    grads = {
        key: back(value) if is_answer(key) else keys_back(value) if is_attention(key) else value
        for key, value in got.grads.items()
    }
    return dataclasses.replace(got, output=back(got.output), grads=grads)


def _keys_in_task_order(order, weights):
    """Attention weights (…, keys) over data in the secret order of the source positions
    (`Case.position_code`) with their source keys read back into the task's order; anything
    else (no order, a shape the checks refuse) as it came. Only the keys: the queries of a
    self-attention stay in the data's order, in which its causal mask holds."""
    if order is None:
        return weights
    array = np.asarray(weights)
    if array.ndim < 2 or array.shape[-1] < len(order) or array.dtype.kind not in "fc":
        return weights
    return _source_in_task_order(array, order, axis=-1)


def _in_plain_tokens(code, answer) -> np.ndarray:
    """A model's answer in the code read back in the task's own tokens: scores (…, vocabulary)
    by the token each stands for, tokens by their name; anything else (a shape the checks
    refuse) as it came."""
    code = np.asarray(code)
    answer = np.asarray(answer)
    if answer.ndim and answer.shape[-1] == len(code) and answer.dtype.kind in "fc":
        return answer[..., code]
    if answer.dtype.kind in "iu" and answer.size and answer.min() >= 0 and answer.max() < len(code):
        return np.argsort(code)[answer].astype(answer.dtype)
    return answer


# How far attention weights must differ between inputs, at some entry, to be computed from them
# (float32 rounding moves a weight by about 1e-7).
COMPUTED_FROM_INPUTS = 1e-5


def attention_refused(weights: np.ndarray, axes: dict[int, str]) -> GateFailure | None:
    """What every attention gate asks before it reads where the weights look: rows that are
    distributions over the keys (`rows_not_distributions`, `axes` as there) and weights
    computed from the inputs (`not_from_the_inputs`); the first failure, or None."""
    return rows_not_distributions(weights, axes) or not_from_the_inputs(weights)


def not_from_the_inputs(weights: np.ndarray) -> GateFailure | None:
    """None where attention weights (examples, …) differ between the examples, or where every
    row spreads its weight evenly over the keys it weighs (scores that are all alike, masked or
    not: the gates that read the weights tell what that misses); else the failure: weights
    the same for every input do not read its queries and keys (a table, numbers read out of
    the model's parameters, scores of constants), so they do not say what the model looks at."""
    if len(weights) < 2:
        return None
    spread = float(np.abs(weights - weights[:1]).max())
    if spread >= COMPUTED_FROM_INPUTS:
        return None
    # Even over the keys each row weighs (all of them, or those a causal mask leaves, read back
    # from the data's order or not): scores all alike. A row that weighs one key alone is even
    # too, so at most one such row per attention map (a causal mask's first) counts as that.
    weighed = weights > 1e-12
    highest = np.where(weighed, weights, -np.inf).max(axis=-1)
    lowest = np.where(weighed, weights, np.inf).min(axis=-1)
    single_rows = (weighed.sum(axis=-1) == 1).sum(axis=-1)
    if np.all(highest - lowest <= 1e-6) and np.all(single_rows <= 1):
        return None
    return GateFailure.structural(
        _(
            "attention_weights returned the same weights for every held-out input (they differ "
            "by at most {spread:.1g} from one input to another): they do not depend on the "
            "input, so they were not computed from its queries and keys. An attention's scores "
            "read the query and each key; weights that do not (a table, queries and keys made "
            "from the positions alone, numbers read out of the model's parameters, scores of "
            "constants) are not the model's attention. "
            "Return the weights the model's attention computes for these inputs",
            spread=spread,
        )
    )


def rows_not_distributions(weights: np.ndarray, axes: dict[int, str]) -> GateFailure | None:
    """None where every row of attention weights (…, keys) is a distribution over the keys
    (no negative weight, summing to 1); else the failure, naming the axis the weights do sum to
    1 over where one does (`axes`: the words of each axis by index, "the examples of the batch"
    for 0), the one mistake that evidence leaves; without it, the causes the symptom has."""
    sums = weights.sum(axis=-1)
    if not (np.any(weights < -1e-6) or np.abs(sums - 1).max() > 1e-3):
        return None
    row = float(sums.flat[np.abs(sums - 1).argmax()])
    if weights.min() >= -1e-6:
        for axis, words in axes.items():
            if weights.shape[axis] > 1 and np.abs(weights.sum(axis=axis) - 1).max() <= 1e-3:
                return GateFailure.structural(
                    _(
                        "the attention's softmax ran over {axis} (axis {index}), not over the "
                        "keys: its weights sum to 1 over that axis, and a row over the keys sums "
                        "to {sum:.3g}. Take the softmax over the last axis (axis=-1)",
                        axis=tr(words),
                        index=axis,
                        sum=row,
                    )
                )
        return GateFailure.structural(
            _(
                "attention_weights returned rows that are not distributions over the keys (a "
                "row sums to {sum:.3g}): a softmax over another axis, or weights taken before "
                "the softmax (or masked after it). Return the softmax over the last axis",
                sum=row,
            )
        )
    return GateFailure.structural(
        _(
            "attention_weights returned negative weights (a row sums to {sum:.3g}): those are "
            "scores, taken before the softmax. Return the weights after the softmax",
            sum=row,
        )
    )


BATCH_AXIS = N_("the examples of the batch")


def predicted_tokens(answer: np.ndarray, truth: np.ndarray) -> np.ndarray | str:
    """The tokens an answer predicts (the argmax of scores over the last axis, or the tokens
    themselves), or what is wrong with its shape or values."""
    answer = np.asarray(answer)
    if answer.ndim == truth.ndim + 1 and answer.shape[:-1] == truth.shape:
        if not np.all(np.isfinite(answer)):
            return _("the model's scores hold NaN or infinite values: training diverged?")
        return np.argmax(answer, axis=-1)
    if answer.shape == truth.shape and answer.dtype.kind in "biu":
        return answer
    return _(
        "the predictions have shape {shape}; expected scores of shape {scores} (one per token "
        "of the vocabulary) or tokens of shape {tokens}",
        shape=answer.shape,
        scores=(*truth.shape, "vocabulary"),
        tokens=truth.shape,
    )


def accuracy(answer: np.ndarray, truth: np.ndarray) -> float | str:
    """The share of the scored positions (truth ≥ 0) answered right, or what is wrong with
    the answer."""
    tokens = predicted_tokens(answer, truth)
    if isinstance(tokens, str):
        return tokens
    scored = truth >= 0
    return float(np.mean(tokens[scored] == truth[scored]))


def chance(truth: np.ndarray) -> float:
    """The accuracy of the best answer that reads no input: at each scored position (each
    column of `truth`, or all of a 1-D `truth`), its most frequent right token."""
    truth = np.asarray(truth)
    columns = truth.reshape(len(truth), -1)
    hits = scored = 0
    for column in columns.T:
        kept = column[column >= 0]
        if kept.size:
            hits += np.bincount(kept).max()
            scored += kept.size
    return float(hits / scored) if scored else 0.0


# What each piece of evidence is, where a learned gate already holds on it.
ALREADY = {
    UNTRAINED: N_(
        "before its training, the model already passes the check “{gate}”: that does not come "
        "from training. What it looks at must be the model's own doing, learned: an attention "
        "or an answer computed by rule from the inputs (a layer that reads the tokens, not the "
        "model's scores) gets no points"
    ),
    COUNTERFACTUAL: N_(
        "a fresh model trained on data whose answers were shuffled between examples (nothing "
        "there to learn) passes the check “{gate}”: that does not come from training on the "
        "grader's data"
    ),
    RESET: N_(
        "with its trainable weights put back to their values before training, the model still "
        "passes the check “{gate}”: that does not come from the weights training changed"
    ),
    REDRAWN: N_(
        "a model built afresh after the training, its initial weights drawn again, passes the "
        "check “{gate}”: that does not come from training"
    ),
}


def halfway(part: Part, base: float) -> float:
    """Halfway from chance (`base`) to the part's pass mark: what a model that did not learn
    must not answer better than."""
    return base + (part.training.pass_at - base) / 2


def learned_without_training(part: Part, case: Case, got: CaseOutput) -> str | None:
    """None unless a gate of what only a trained model does (`Gate.learned`) already holds on
    a model that was not trained on the grader's data (the same three as `from_training`);
    else what was seen."""
    for stage in (UNTRAINED, COUNTERFACTUAL, RESET, REDRAWN):
        answers = stage_answers(case, got, stage)
        if answers is None:
            continue  # the untrained model may answer nothing: no evidence either way
        gate = learned_gate_holding(part, case, answers)
        if gate is not None:
            return _(ALREADY[stage], gate=tr(gate.name))
    return None


def stage_answers(case: Case, got: CaseOutput, stage: str = "") -> dict | None:
    """A stage's answers to every probe of `case`, by probe (the trained model's without a
    stage); None where any is missing."""
    probes = [answer for answer, _function, _source in case.training.get("probes", [])]
    prefix = f"{stage}/" if stage else ""
    answers = {name: got.grads.get(prefix + name) for name in probes}
    if not probes or any(answer is None for answer in answers.values()):
        return None
    return answers


def learned_gate_holding(part: Part, case: Case, answers: dict):
    """The first gate of what only a trained model does (`Gate.learned`) that holds on
    `answers`, or None."""
    learned = (gate for gate in part.training.gates if gate.learned)
    return next((gate for gate in learned if gate.check(case, answers) is None), None)


def from_training(
    part: Part, truth: np.ndarray, got: CaseOutput, case: Case | None = None
) -> str | None:
    """None when what the trained model answers came from its training, else what was seen.

    A model passes only if, on the held-out probe, (1) the model before its training, (2) a
    fresh model trained on the same kind of data with its answers shuffled between examples and
    (3) the trained model with its trainable weights put back to their values before training
    all answer no better than halfway from chance to the pass mark; and, with `case`, no
    learned gate holds on any of them (`learned_without_training`). A layer that computes the
    answer by rule fails (1); weights set by hand in train_model, or a rule switched on by it
    without looking at the data, fail (2); what the trained weights do not hold, (3) takes
    away."""
    base = chance(truth)
    bar = halfway(part, base)
    evidence = (
        (
            UNTRAINED,
            N_(
                "the untrained model already answers {found:.0%} of the held-out tokens right "
                "(chance is {chance:.0%}): the answers do not come from training. build_model "
                "must return a model that still has everything to learn"
            ),
        ),
        (
            COUNTERFACTUAL,
            N_(
                "a fresh model trained on data whose answers were shuffled between examples "
                "(nothing there to learn) answers {found:.0%} of the held-out tokens right "
                "(chance is {chance:.0%}): the answers do not come from training. The model "
                "must learn the task from the data train_model is given; a layer that computes "
                "the answer by rule, weights set by hand or a predict that answers by itself "
                "get no points"
            ),
        ),
        (
            RESET,
            N_(
                "with its trainable weights put back to their values before training, the "
                "trained model still answers {found:.0%} of the held-out tokens right (chance "
                "is {chance:.0%}): the answers do not come from the weights training changed. "
                "The answer must flow through weights that train_model learns"
            ),
        ),
        (
            REDRAWN,
            N_(
                "a model built afresh in a process of its own, its weights moved from their "
                "first values as far as the training moved them but in other directions, "
                "answers {found:.0%} of the held-out tokens right (chance is {chance:.0%}): the "
                "answers do not come from training. Something kept outside the weights (a flag, "
                "a count, a check of the weights' values) must not decide what the model answers"
            ),
        ),
    )
    for name, words in evidence:
        answer = got.grads.get(name)
        if answer is None:
            if name == UNTRAINED:  # a model that answers only once trained: no evidence
                continue
            return _(NO_FRESH_ANSWER) if name == REDRAWN else _(NO_ANSWER, name=name)
        found = accuracy(answer, truth)
        if isinstance(found, str):
            if name == UNTRAINED:
                continue
            return found
        if found > bar:
            return _(words, found=found, chance=base)
    trained = accuracy(got.output, truth)
    # A model that does not pass is told so by the accuracy check, not by where its weights went.
    if not isinstance(trained, str) and trained >= part.training.pass_at:
        moved = _held_in_weights(part, trained, truth, got) or _answered_alone(truth, got)
        if moved is not None:
            return moved
    unearned = learned_without_training(part, case, got) if case is not None else None
    if unearned is None and case is not None and case.training.get("relearn"):
        if not isinstance(trained, str) and trained >= part.training.pass_at:
            return learned_by_gradient_descent(part, case, truth, got, trained)
    return unearned


def _child_text(value) -> str:
    """A line of text a child reported as UTF-8 bytes, on one line; what is not such bytes is
    not read."""
    value = np.asarray(value)
    if value.dtype != np.uint8 or value.ndim != 1:
        return "?"
    return one_line(bytes(value[:RELEARN_TEXT]).decode("utf-8", "replace"), RELEARN_TEXT)


# How far below its mark a learned gate may hold on the copy the grader trained itself: its one
# recipe leaves some honest models a little short of where their own schedules took them.
RELEARNED_GATE_SLACK = 0.1

# The most of a child's reason a failed training of the grader's is shown with.
RELEARN_TEXT = 300

RELEARN_FORM = N_(
    "The grader trains the model build_model returns, without train_model, from its first "
    "weights: only a switch your train_model flips (a weight that is not trainable and 0 or 1, "
    "at most two of them, such as a linear start's mode) is taken as your training left it; any "
    "other mode or frozen layer must be built in the form the training ends in"
)

RELEARN_RECIPE = N_(
    "Adam, the learning rate and epochs of the lab's reference, from the same first weights"
)


def learned_by_gradient_descent(
    part: Part, case: Case, truth: np.ndarray, got: CaseOutput, trained: float
) -> str | None:
    """None when a copy of the model built afresh and trained by the grader's own gradient
    descent on the same data (`RELEARNED`, grader.sandbox.relearn) learns too: it answers better
    than halfway from chance to the pass mark, as it does in the batch when asked one example at
    a time, and every learned gate the student's model passes holds on it (within
    `RELEARNED_GATE_SLACK` of its mark); with its trainable weights put back or its change
    shuffled (`RELEARNED_RESET`, `RELEARNED_REDRAWN`) neither holds; and most of its change lies
    in weights the student's training moved too (`_left_where_they_were`). Else what was seen:
    what a lab credits must be learned by gradient descent on the grader's data, which no
    train_model (a rule, counts written into the weights, a callback, an optimizer or a
    gradient of the student's) can stand in for."""
    recipe = _(RELEARN_RECIPE)
    failed = got.grads.get(RELEARN_FAILED)
    if failed is not None:
        why = _child_text(failed)
        return _(
            "the grader could not train a fresh copy of the model by its own gradient descent "
            "({recipe}): {why}. The lab's model must train with Keras's ordinary gradients",
            recipe=recipe,
            why=why,
        )
    answer = got.grads.get(RELEARNED)
    if answer is None:
        return _(NO_ANSWER, name=RELEARNED)
    base = chance(truth)
    bar = halfway(part, base)
    found = accuracy(answer, truth)
    if isinstance(found, str):
        return found
    if found <= bar:
        said = _(
            "your training reached {trained:.0%}, but a fresh copy of the model trained by the "
            "grader's own gradient descent on the same data ({recipe}) answers only {found:.0%} "
            "of the held-out tokens right (chance is {chance:.0%}): what the model answers must "
            "be learned by gradient descent on the grader's data. Weights written by a rule or "
            "from counts, a callback, an optimizer or a gradient of your own are not learning; a "
            "model that needs a gentler learning rate must be made to train with the lab's",
            trained=trained,
            recipe=recipe,
            found=found,
            chance=base,
        )
        return f"{said}. {_(RELEARN_FORM)}"
    alone = _answered_alone(truth, got, relearned=True)
    if alone is not None:
        return alone
    relearned = stage_answers(case, got, RELEARNED)
    if relearned is None:
        return _(NO_ANSWER, name=RELEARNED)
    trained_answers = stage_answers(case, got) or {}
    for gate in part.training.gates:
        # A gate the student's trained model fails tells its own mistake, in its own line.
        if not gate.learned or gate.check(case, trained_answers) is not None:
            continue
        slack = LEARNED_SLACK.set(RELEARNED_GATE_SLACK)
        try:
            broken = gate.check(case, relearned)
        finally:
            LEARNED_SLACK.reset(slack)
        if broken is not None:
            said = _(
                "a fresh copy of the model trained by the grader's own gradient descent on the "
                "same data ({recipe}) answers {found:.0%} of the held-out tokens right but fails "
                "the check “{gate}”: {why}. What the check sees must be learned with the "
                "answers, by gradient descent on the grader's data: an attention fitted apart "
                "from the answers (to labels of your own, or set by a rule) is not",
                recipe=recipe,
                found=found,
                gate=tr(gate.name),
                why=broken.message,
            )
            return f"{said}. {_(RELEARN_FORM)}"
    for stage in (RELEARNED_RESET, RELEARNED_REDRAWN):
        answers = stage_answers(case, got, stage)
        if answers is None:
            continue  # a model that cannot answer without its training: no evidence either way
        again = accuracy(next(iter(answers.values())), truth)  # the first probe's
        held = learned_gate_holding(part, case, answers)
        if (not isinstance(again, str) and again > bar) or held is not None:
            return _(
                "a fresh copy of the model trained by the grader's own gradient descent still "
                "answers {found:.0%} of the held-out tokens right (chance is {chance:.0%}) with "
                "the weights that training changed {how}: what it answers is not held in the "
                "weights gradient descent learned (something else, a count or a flag kept outside "
                "the weights, decides it)",
                found=0.0 if isinstance(again, str) else again,
                chance=base,
                how=_("put back")
                if stage == RELEARNED_RESET
                else _("moved as far in other directions"),
            )
    return _left_where_they_were(got) or _written_over_their_first_values(got)


# Gradient descent moves weights from their first random values: over every honest training
# file of the held-out sets the trained weights' cosine with their first values was 0.29 or more
# (benchmarks/results/first_values_kept_2026-11-30.md); weights written by a rule or from counts
# over them keep almost none (0.03 or less).
KEPT_AT = 0.1


def first_values_kept(changes) -> float | None:
    """The cosine of the student's trained weights with their first values, over every weight
    whose first value was drawn (not zeros) together, from `RELEARN_CHANGES`' rows (first
    value's norm, the student's change's norm, the grader's, the first value's inner product
    with the student's change); None where no weight was drawn."""
    first, theirs, _ours, along = np.asarray(changes, dtype="float64").T
    drawn = first > 0
    first, theirs, along = first[drawn], theirs[drawn], along[drawn]
    # |first + change|^2, summed: the trained weights' squared norm.
    trained = float(np.maximum(first**2 + 2 * along + theirs**2, 0.0).sum())
    scale = float(np.sqrt((first**2).sum() * trained))
    return float(((first**2).sum() + along.sum()) / scale) if scale > 0 else None


def _written_over_their_first_values(got: CaseOutput) -> str | None:
    """None unless the student's trained weights, those whose first values were drawn, keep
    almost nothing of those values (`first_values_kept` below KEPT_AT): then they were written
    over, not learned from where they began. Weights that start at zeros say nothing."""
    kept = first_values_kept(got.grads.get(RELEARN_CHANGES))  # checked before this runs
    if kept is None or kept >= KEPT_AT:
        return None
    return _(
        "the weights your training left keep almost nothing of the random values they started "
        "from (their cosine with them is {kept:.2f}): gradient descent moves weights from where "
        "they start, and these were written over them, by a rule, from counts or by an "
        "optimizer of your own, not learned",
        kept=kept,
    )


# A weight the student's training moved by less than this share of what the grader's training
# moved it was left where it was; the grader's change may lie there at most up to
# UNTRAINED_SHARE of it (squared), as in an honest model, whose training moves every weight.
LEFT_AT, UNTRAINED_SHARE = 0.01, 0.5


def _left_where_they_were(got: CaseOutput) -> str | None:
    """None unless most of what the grader's training changed (`RELEARN_CHANGES`) lies in
    weights the student's training left where they were: then the model graded answers by a
    path its own training never trained (a rule beside a network only the grader trains)."""
    changes = got.grads.get(RELEARN_CHANGES)
    changes = None if changes is None else np.asarray(changes)
    if (
        changes is None
        or changes.ndim != 2
        or changes.shape[1] != 4
        or changes.dtype.kind != "f"
        or not np.all(np.isfinite(changes))
        or np.any(changes[:, :3] < 0)
    ):
        return _(NO_ANSWER, name=RELEARN_CHANGES)
    _first, theirs, ours, _kept = changes.T
    total = float((ours**2).sum())
    left = float((ours[theirs < LEFT_AT * ours] ** 2).sum())
    if total <= 0 or left <= UNTRAINED_SHARE * total:
        return None
    return _(
        "{share:.0%} of what the grader's own training changed in a fresh copy of the model lies "
        "in weights your training left where they were: the model you trained answers by "
        "something its training did not learn, beside a part only the grader's training taught",
        share=left / total,
    )


def _answered_alone(truth: np.ndarray, got: CaseOutput, relearned: bool = False) -> str | None:
    """None unless the trained model's weights (the model passes), asked one example at a time
    in a process of their own (`ALONE`), answer otherwise than the trained model did for those
    examples in the batch: then what it answers for an example comes from the other examples
    (in a task whose inputs hold earlier answers, the code can be counted from a batch). With
    `relearned`, the same of the copy the grader trained itself (`RELEARNED_ALONE`)."""
    alone = got.grads.get(RELEARNED_ALONE if relearned else ALONE)
    rows = min(ALONE_ROWS, len(truth))
    in_batch = got.grads.get(RELEARNED) if relearned else got.output
    batch = predicted_tokens(np.asarray(in_batch)[:rows], truth[:rows])
    found = None if alone is None else predicted_tokens(np.asarray(alone), truth[:rows])
    if found is None or isinstance(found, str) or isinstance(batch, str):
        if relearned:
            return _(
                "the copy of the model the grader trained itself gave no answer when asked "
                "one example at a time: a model must answer any number of examples, one too"
            )
        return _(
            "the trained model's weights, given to a model build_model made afresh, gave no "
            "answer when asked one example at a time: a model must answer any number of "
            "examples, one too"
        )
    scored = truth[:rows] >= 0
    differ = int(np.sum(found[scored] != batch[scored]))
    if differ <= max(1, int(ALONE_DIFFER * scored.sum())):
        return None
    agree = 1.0 - differ / scored.sum()
    if relearned:
        return _(
            "asked one example at a time, the copy of the model the grader trained itself "
            "gives the answer it gives in the batch for only {agree:.0%} of the held-out tokens: "
            "what the model answers for an example comes from the other examples it is asked "
            "with, not from what it learned. A model's answer must depend on its own example "
            "alone",
            agree=agree,
        )
    return _(
        "asked one example at a time, in a process of its own, the trained model's weights "
        "give the answer they give in the batch for only {agree:.0%} of the held-out tokens: "
        "what the model answers for an example comes from the other examples it is asked "
        "with, not from what it learned. A model's answer must depend on its own example alone",
        agree=agree,
    )


def _held_in_weights(part: Part, trained: float, truth: np.ndarray, got: CaseOutput):
    """None unless the trained model's weights (the model passes, answering `trained` of the
    held-out tokens), given to a model `build_model` made afresh in another process, answer
    worse than it does (or cannot be given to it), or fall far below the pass mark once nudged
    a little: then what it answers is not held in its weights, or only in their exact values."""
    moved = got.grads.get(MOVED)
    if moved is None:
        return _(
            "the trained model's weights could not be given to a model build_model made afresh "
            "(its weights differ in number or shape): build_model must build the same model "
            "every time, and what the model answers must be held in its weights"
        )
    found = accuracy(moved, truth)
    # The same model with the same weights: it answers as the trained one (up to a rounding).
    if isinstance(found, str) or found < trained - MOVED_SLACK:
        return _(
            "the trained model answers {trained:.0%} of the held-out tokens right, but its "
            "weights, given to a model build_model made afresh, answer {found:.0%}: what the "
            "model answers is not held in the weights training changed (something else, a flag "
            "or a count kept on the model, decides it)",
            trained=trained,
            found=0.0 if isinstance(found, str) else found,
        )
    nudged = got.grads.get(NUDGED)
    found = None if nudged is None else accuracy(nudged, truth)
    # A nudge moves an honest model's answers a little: it may fall a little below the pass
    # mark, not to what a rule that is off leaves.
    if (
        found is None
        or isinstance(found, str)
        or found < min(trained, part.training.pass_at) - NUDGED_SLACK
    ):
        return _(
            "the trained model answers {trained:.0%} of the held-out tokens right, but with "
            "its weights nudged by {nudge:.0%} of their size it answers {found:.0%}: an honest "
            "model barely changes, as what it computes is a smooth function of its weights. "
            "Something that acts only on the exact trained values (a check of the weights, a "
            "fingerprint) must not decide what the model answers",
            trained=trained,
            nudge=NUDGE,
            found=0.0 if found is None or isinstance(found, str) else found,
        )
    return _answers_only_at_inference(part, trained, truth, got)


def _answers_only_at_inference(
    part: Part, trained: float, truth: np.ndarray, got: CaseOutput
) -> str | None:
    """None unless the trained weights, called as in training (`TRAINING_MODE`: dropout on,
    batch statistics), answer no better than halfway from chance to the pass mark: then what
    the model answers at inference comes from a path that is off while it trains. A model that
    cannot be called so says nothing (the grader's own training would not run either)."""
    answer = got.grads.get(TRAINING_MODE)
    found = None if answer is None else accuracy(answer, truth)
    if found is None or isinstance(found, str):
        return None
    base = chance(truth)
    if found > halfway(part, base):
        return None
    return _(
        "the trained model answers {trained:.0%} of the held-out tokens right, but called as in "
        "training (training=True: dropout on, batch statistics) it answers {found:.0%} (chance "
        "is {chance:.0%}): what it answers at inference comes from a path that is off while it "
        "trains, which gradient descent never trained",
        trained=trained,
        found=found,
        chance=base,
    )


def checks(part: Part, case: Case, want: CaseOutput, got: CaseOutput, prefix: str, label: str):
    """The checks of one training case: that its answers come from training, its accuracy, then
    each gate (named as a mistake where its failure is evidence of one, see `GateFailure`)."""
    # Here, not at the top: grader.engine.training_run reads this module's measures.
    from grader.engine.training_run import CAUSES, diagnosis, diverged

    truth = np.asarray(want.output)
    got = read_back(case, got)
    case = plain_view(case)
    unearned = from_training(part, truth, got, case)
    integrity = CheckResult(
        f"{prefix}{tr(LEARNED_FROM_TRAINING)}, {label}",
        unearned is None,
        unearned or "",
        None if unearned is None else PROPERTY + LEARNED_FROM_TRAINING,
    )
    if unearned is not None:  # no later line is read as advice for a model that did not learn
        return [integrity]
    found = accuracy(got.output, truth)
    name = prefix + _("accuracy on held-out inputs, {label}", label=label)
    if isinstance(found, str):
        result = [CheckResult(name, False, found)]
    else:
        needed = part.training.pass_at
        message = ""
        if found < needed:
            message = _(
                "the trained model answered {found:.1%} of the {count} held-out tokens right; "
                "at least {needed:.0%} is needed: it has not learned the task.",
                found=found,
                count=int(np.sum(truth >= 0)),
                needed=needed,
            )
            # What the run shows leads (it is the line a student reads first); the accuracy
            # follows it. Without such evidence, the causes follow the accuracy.
            shown = diagnosis(part, case, got, truth)
            message = f"{shown} — {message}" if shown else f"{message} {_(CAUSES)}"
        result = [CheckResult(name, found >= needed, message)]
    learned = result[0].passed
    result.insert(0, integrity)
    run_diverged = diverged(got.grads)
    for gate in part.training.gates:
        broken = gate.check(case, got.grads)
        if broken is not None and not isinstance(broken, GateFailure):
            raise TypeError(f"gate {gate.name!r} returned {broken!r}, not a GateFailure")
        # A structural failure names its mistake, so it is told before the accuracy: a model
        # that cannot learn the task (no positions, a decoder that peeks) fails both, and the
        # gate says why. A learned behaviour fails for every model that has not learned, so
        # while the accuracy fails it names nothing and is read after the accuracy's line,
        # which sends the student to the training first.
        named = None
        # A training that diverged breaks every gate (NaN weights, rows of zeros): that is the
        # accuracy's line to tell, not a gate's mistake.
        if broken is not None and run_diverged:
            broken = GateFailure.unlearned(broken.message)
        if broken is not None and (learned or not broken.needs_learning):
            named = PROPERTY + gate.name
        message = broken.message if broken else ""
        result.append(
            CheckResult(f"{prefix}{tr(gate.name)}, {label}", broken is None, message, named)
        )
    return result
