"""Lab train-seq2seq: an encoder–decoder with Bahdanau's additive attention trained in the
sandbox to rewrite dates, graded by what it learned: held-out accuracy, a causal decoder, an
attention query that knows the step (the decoder's state), and a monotone alignment."""

from __future__ import annotations

import numpy as np

from grader.engine.training import BATCH_AXIS, attention_refused
from grader.engine.training_run import barely_moved, unchanged_when_swapped
from grader.i18n import N_, _
from grader.reference import tasks
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import (
    MODEL_OUTPUT_0,
    MODEL_OUTPUT_1,
    RUN_PROBES,
    SOURCE_SHUFFLED,
    TRAIN,
    Case,
    Exercise,
    Gate,
    GateFailure,
    Part,
    Training,
    learned_mark,
)

# The words of this record's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(N_("dates to digits"), N_("{count} training dates"), N_("seed {seed}"))

TRAIN_COUNT = 3000
HELD_OUT_COUNT = 500
# The grader's own training of the model (grader.sandbox.relearn): the reference's recipe; a
# gentler one where it leaves the training rows' answers below "retry_below".
RELEARN = {
    "epochs": 3,
    "batch_size": 64,
    "rate": 1e-2,
    "cosine": False,
    "answers_from": None,
    "retry_below": 0.99,
}
PASS_AT = 0.95
# The share of target steps whose largest attention weight must be on their source token.
ALIGNED_AT = 0.8
CAUSAL_TOLERANCE = 1e-4
# How far apart a step's largest and smallest weight must be, on average, for the weights to pick
# source tokens (uniform weights pick none: the alignment gate tells those).
PICKS_BY = 0.05
# How far two attention rows may differ and still count as the same (float32 rounding).
SAME_TO = 1e-5
SOURCE, TARGET = tasks.DATE_SOURCE, tasks.DATE_TARGET

PROBES = [
    ["held_out", MODEL_OUTPUT_0, "held_out"],
    ["later_changed", MODEL_OUTPUT_0, "later_changed"],
    ["attention", MODEL_OUTPUT_1, "held_out"],
]


def date_cases(rng, hidden=False):
    """One training case: the dates to train on, the held-out ones and their variant with the
    decoder's later inputs changed, all drawn from `rng`, and the seed Keras is given."""
    seed = int(rng.integers(2**31))
    inputs, targets = tasks.dates_data(rng, TRAIN_COUNT)
    held_out = tasks.dates_data(rng, HELD_OUT_COUNT)[0]
    arrays = {
        "inputs": inputs,
        "targets": targets,
        "held_out": held_out,
        "later_changed": tasks.decoder_inputs_changed(rng, held_out).astype("int32"),
    }
    arrays |= tasks.run_probes(rng, inputs, held_out, slice(0, SOURCE))
    code = tasks.answer_code(rng, tasks.DATE_VOCABULARY, np.arange(10))
    # The digits: every target, the decoder's inputs after its start token.
    arrays = tasks.answers_in_code(code, arrays, 0, SOURCE + 1)
    # The source's seven tokens in a secret order, the same in every date.
    order = tasks.position_code(rng, SOURCE)
    arrays = tasks.positions_in_code(order, arrays)
    label = f"dates to digits, {TRAIN_COUNT} training dates, seed {seed}"
    plan = {
        "build": "build_model",
        "train": "train_model",
        "seed": seed,
        "probes": PROBES,
        "run_probes": RUN_PROBES,
        "relearn": RELEARN,
    }
    params = {
        "vocab_size": tasks.DATE_VOCABULARY,
        "source_length": SOURCE,
        "target_length": TARGET,
    }
    codes = {"answer_code": code, "position_code": order}  # the grader's, never the child's
    return [Case("build_model", TRAIN, label, arrays, params, training=plan, **codes)]


def date_answers(case):
    return tasks.dates_answers(case.inputs["held_out"])


def causal(case, answers):
    held_out, changed = case.inputs["held_out"], case.inputs["later_changed"]
    shape = (len(held_out), TARGET, tasks.DATE_VOCABULARY)
    outputs, changed_outputs = answers.get("held_out"), answers.get("later_changed")
    if any(np.shape(found) != shape for found in (outputs, changed_outputs)):
        return GateFailure.structural(
            _(
                "predict returned shape {shape}: expected {expected}",
                shape=np.shape(changed_outputs),
                expected=shape,
            )
        )
    leak, (sequence, step, first) = tasks.causal_leak(
        outputs, changed_outputs, held_out[:, SOURCE:], changed[:, SOURCE:]
    )
    if leak <= CAUSAL_TOLERANCE:
        return None
    seen = _(
        "the output of step {step} changed (by {leak:.3g}) when only the decoder's inputs from "
        "step {first} on were changed (held-out date {sequence}): the decoder reads later inputs",
        step=step,
        leak=leak,
        first=first,
        sequence=sequence,
    )
    weights = np.asarray(answers.get("attention", []), dtype=float)
    over_steps = (
        weights.shape == (len(held_out), TARGET, SOURCE)
        and np.all(np.isfinite(weights))
        and tasks.normalised_over_queries(weights)
    )
    unread = unchanged_when_swapped(answers, date_answers(case), SOURCE_SHUFFLED)
    generic = not over_steps and unread is None
    if unread is not None:
        cause = _(
            "The digits come from the decoder's later inputs, not from the source: either the "
            "encoder reads the decoder's inputs (inputs[:, {source}:]) instead of the source "
            "(inputs[:, :{source}]), or the decoder reads its inputs in both directions "
            "(Bidirectional, go_backwards). With each held-out date's source swapped for "
            "another's, {share:.0%} of its answers stayed the same. Encode the source, and run "
            "the decoder forward only",
            share=unread,
            source=SOURCE,
        )
    elif over_steps:
        cause = _(
            "Its attention weights sum to 1 over the target steps, not over the source tokens: "
            "a softmax over the wrong axis normalises each step's weights with the later steps' "
            "scores. Take the softmax over the source tokens (the last axis)"
        )
    else:
        cause = _(
            "With teacher forcing the next digit is among them, so such a decoder fits its data "
            "and still cannot translate; run the decoder forward only (no Bidirectional, no "
            "go_backwards), and let nothing mix the target steps"
        )
    return GateFailure.structural(
        _("{seen}. {cause}", seen=seen, cause=cause)
        if generic
        else _("{cause} ({seen})", seen=seen, cause=cause)
    )


def query_knows_the_step(case, answers):
    """Structural: Bahdanau's query is the decoder's state, which carries what was written so
    far. A query made from the decoder's input alone gives two steps that read the same input
    token the same attention, trained or not, though they translate different source tokens."""
    count = len(case.inputs["held_out"])
    weights = answers.get("attention")
    if weights is None or np.shape(weights) != (count, TARGET, SOURCE):
        return None  # the alignment gate tells what is wrong with the weights
    weights = np.asarray(weights, dtype=float)
    if not np.all(np.isfinite(weights)):
        return None
    steady = _the_same_at_every_step(weights)
    if steady is not None:
        return steady
    reads = case.inputs["held_out"][:, SOURCE:]  # (N, T) the decoder's input at each step
    same = {True: [], False: []}  # by whether the two steps read the same input
    for first in range(TARGET):
        for second in range(first + 1, TARGET):
            if tasks.DATE_ALIGNMENT[first] == tasks.DATE_ALIGNMENT[second]:
                continue  # both steps rightly look at one source token
            gap = np.abs(weights[:, first] - weights[:, second]).max(axis=-1)
            equal = reads[:, first] == reads[:, second]
            same[True].append(gap[equal] <= SAME_TO)
            same[False].append(gap[~equal] <= SAME_TO)
    alike, apart = (np.concatenate(same[key]) for key in (True, False))
    # Weights that are the same at every step (uniform, or from the source alone) do not come
    # from the input either: the alignment gate tells them.
    if not len(alike) or alike.mean() <= 0.5 or apart.mean() > 0.5:
        return None
    # A decoder whose weights barely moved answers as it was drawn: its recurrent state may
    # not carry the history yet, whatever the design (the accuracy's line tells first).
    failure = (
        GateFailure.unlearned if barely_moved(answers, unknown=False) else GateFailure.structural
    )
    return failure(
        _(
            "two steps of a date that read the same decoder input but translate different "
            "source tokens got the same attention weights (to 1e-5) in {share:.0%} of such "
            "pairs: the attention's query is made from the decoder's input alone, so it cannot "
            "know which step it is at. Make the query from the decoder's state s_t (its "
            "recurrent layer's output at the step), which carries what was written so far",
            share=float(alike.mean()),
        )
    )


def _the_same_at_every_step(weights) -> GateFailure | None:
    """Structural where every step of most dates attends alike (to 1e-5) while the weights do
    pick source tokens (not uniform): the score does not depend on the decoder's state. In
    vᵀ tanh(W s_t + U h_j) the tanh is what lets s_t change which token wins; without it, vᵀ W s_t
    adds the same to every source token's score and the softmax cancels it."""
    alike = np.abs(weights - weights[:, :1]).max(axis=(1, 2)) <= SAME_TO  # (N,)
    picks = (weights.max(axis=-1) - weights.min(axis=-1)).mean(axis=1) > PICKS_BY  # (N,)
    if alike.mean() <= 0.9 or picks.mean() <= 0.5:
        return None
    return GateFailure.structural(
        _(
            "The score misses its tanh, or the decoder's state s_t: without the tanh of "
            "vᵀ tanh(W s_t + U h_j), vᵀ W s_t adds the same to every source token's score and "
            "the softmax cancels it, so the attention weights were the same at every target "
            "step of {share:.0%} of the dates (to 1e-5), though they differ between source "
            "tokens",
            share=float(alike.mean()),
        )
    )


def monotone_alignment(case, answers):
    count = len(case.inputs["held_out"])
    weights = answers.get("attention")
    shape = (count, TARGET, SOURCE)
    if weights is None or np.shape(weights) != shape:
        return GateFailure.structural(
            _(
                "attention_weights returned shape {shape}: expected finite weights of shape "
                "{expected} (target steps, source tokens)",
                shape=None if weights is None else np.shape(weights),
                expected=shape,
            )
        )
    weights = np.asarray(weights, dtype=float)
    # Weights that are not finite come from a training that diverged, which the accuracy tells.
    if not np.all(np.isfinite(weights)):
        return GateFailure.unlearned(
            _(
                "attention_weights returned shape {shape}: expected finite weights of shape "
                "{expected} (target steps, source tokens)",
                shape=np.shape(weights),
                expected=shape,
            )
        )
    refused = attention_refused(weights, {0: BATCH_AXIS, 1: N_("the target steps")})
    if refused is not None:
        return refused
    aligned = weights.argmax(axis=-1) == tasks.DATE_ALIGNMENT  # (N, T)
    if aligned.mean() >= learned_mark(ALIGNED_AT):
        return None
    worst = int(np.argmin(aligned.mean(axis=0)))
    return GateFailure.unlearned(
        _(
            "the largest attention weight was on the source token a step translates in only "
            "{share:.0%} of the steps (at least {needed:.0%} needed; step {step}, which translates "
            "source token {token}, only {worst:.0%}): the rewriting is monotone, step t reads "
            "source token 0, 1, 2, 2, 3, 4, 5, 6, and an attention that looks there is what lets "
            "the decoder copy and convert",
            share=float(aligned.mean()),
            needed=learned_mark(ALIGNED_AT),
            step=worst,
            token=int(tasks.DATE_ALIGNMENT[worst]),
            worst=float(aligned[:, worst].mean()),
        )
    )


RECORD = Exercise(
    id="train-seq2seq",
    title="Lab: train an encoder–decoder with Bahdanau attention to rewrite dates",
    file="lab_train_seq2seq.py",
    section="NNDL 8.2 (attention in seq2seq); Bahdanau 2015 (additive attention)",
    timeout=150.0,
    summary=(
        "Build an encoder–decoder with Bahdanau's additive attention and train it to rewrite "
        "dates as digits. The grader trains it in the sandbox on dates from its own seed and "
        "grades what it learned on held-out dates: accuracy, that the decoder is causal, that "
        "its attention's query knows the step, and that its attention follows the monotone "
        "alignment."
    ),
    parts=(
        Part(
            name="train",
            points=10,
            make_cases=date_cases,
            targets=("build_model", "train_model", MODEL_OUTPUT_0, "attention_weights"),
            description="train: build_model and train_model; graded on held-out accuracy "
            f"(≥ {PASS_AT:.0%}) and three gates.",
            training=Training(
                answers=date_answers,
                pass_at=PASS_AT,
                truth=tasks.dates_answers,
                source=N_("source date"),
                epochs=3,
                gates=(
                    Gate(
                        N_("causal: later decoder inputs leave earlier outputs unchanged"), causal
                    ),
                    Gate(
                        N_("the attention's query knows the step (the decoder's state)"),
                        query_knows_the_step,
                    ),
                    Gate(N_("monotone alignment"), monotone_alignment, learned=True),
                ),
            ),
        ),
    ),
)
