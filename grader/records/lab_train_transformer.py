"""Lab train-transformer: a small Transformer decoder trained in the sandbox to reverse
sequences, graded by what it learned: held-out accuracy, and gates a model that merely fits
cannot pass (causal, uses positions, attention on the anti-diagonal)."""

from __future__ import annotations

import numpy as np

from grader.engine.training import BATCH_AXIS, attention_refused
from grader.engine.training_run import barely_moved
from grader.i18n import N_, _
from grader.reference import tasks
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import (
    MODEL_OUTPUT_0,
    MODEL_OUTPUT_1,
    RUN_PROBES,
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
LABEL_TEXTS = label_texts(
    N_("reversal of {count} tokens"), N_("{count} training sequences"), N_("seed {seed}")
)

VOCAB_SIZE = 12
SOURCE_LENGTH = 6  # the model reads L = 2n = 12 positions
TRAIN_COUNT = 3000
HELD_OUT_COUNT = 500
PASS_AT = 0.95
# Of the answer rows, the share whose largest weight on a source token must be on the mirrored one.
ANTI_DIAGONAL_AT = 0.8
# A reordered source: the share of first answers that must follow the new last source token.
FOLLOWS_AT = 0.8
# How far an output before the first changed token may move (float32 rounding, batching).
CAUSAL_TOLERANCE = 1e-4

# The grader's own training of the model (grader.sandbox.relearn): the reference's recipe, the
# answers (positions n on) weighed.
RELEARN = {
    "epochs": 10,
    "batch_size": 64,
    "rate": 1e-2,
    "cosine": True,
    "answers_from": SOURCE_LENGTH,
    "retry_below": 0.99,
}

PROBES = [
    ["held_out", MODEL_OUTPUT_0, "held_out"],
    ["later_changed", MODEL_OUTPUT_0, "later_changed"],
    ["reordered", MODEL_OUTPUT_0, "reordered"],
    ["attention", MODEL_OUTPUT_1, "held_out"],
]


def reversal_cases(rng, hidden=False):
    """One training case: the training data, the held-out sequences and their two variants,
    all drawn from `rng`, and the seed Keras is given in the child."""
    seed = int(rng.integers(2**31))
    inputs, targets = tasks.reversal_data(rng, TRAIN_COUNT, VOCAB_SIZE, SOURCE_LENGTH)
    held_out, _unused = tasks.reversal_data(rng, HELD_OUT_COUNT, VOCAB_SIZE, SOURCE_LENGTH)
    arrays = {
        "inputs": inputs,
        "targets": targets,
        "held_out": held_out,
        "later_changed": tasks.later_changed(rng, held_out).astype("int32"),
        "reordered": tasks.reordered_sources(rng, held_out).astype("int32"),
    }
    arrays |= tasks.run_probes(rng, inputs, held_out, slice(0, SOURCE_LENGTH))
    code = tasks.answer_code(rng, VOCAB_SIZE, np.arange(1, VOCAB_SIZE))
    # The answers: the targets from position n on, the inputs' answers so far after the
    # separator (n + 1 on).
    arrays = tasks.answers_in_code(code, arrays, SOURCE_LENGTH, SOURCE_LENGTH + 1)
    # The source in a secret order; the targets before the separator are the next source token,
    # in the data's order too.
    order = tasks.position_code(rng, SOURCE_LENGTH)
    arrays = tasks.positions_in_code(order, arrays)
    arrays["targets"][:, : SOURCE_LENGTH - 1] = arrays["inputs"][:, 1:SOURCE_LENGTH]
    label = (
        f"reversal of {SOURCE_LENGTH} tokens, V={VOCAB_SIZE}, {TRAIN_COUNT} training sequences, "
        f"seed {seed}"
    )
    plan = {
        "build": "build_model",
        "train": "train_model",
        "seed": seed,
        "probes": PROBES,
        "run_probes": RUN_PROBES,
        "relearn": RELEARN,
    }
    params = {"vocab_size": VOCAB_SIZE, "length": 2 * SOURCE_LENGTH}
    codes = {"answer_code": code, "position_code": order}  # the grader's, never the child's
    return [Case("build_model", TRAIN, label, arrays, params, training=plan, **codes)]


def reversal_answers(case):
    return tasks.reversal_answers(case.inputs["held_out"])


def _answer(answers, name, expected_shape):
    """The named answer as an array of `expected_shape`'s rank and leading sizes, or why not."""
    found = answers.get(name)
    if found is None:
        return None, GateFailure.structural(_("no answer came back for {name}", name=name))
    found = np.asarray(found, dtype=float)
    problem = _(
        "{name}: expected finite values of shape {shape}, got shape {found}",
        name=name,
        shape=(*expected_shape, "…"),
        found=found.shape,
    )
    if found.shape[: len(expected_shape)] != expected_shape:
        return None, GateFailure.structural(problem)
    # Values that are not finite come from a training that diverged, which the accuracy tells.
    if not np.all(np.isfinite(found)):
        return None, GateFailure.unlearned(problem)
    return found, None


def causal(case, answers):
    held_out = case.inputs["held_out"]
    outputs, problem = _answer(answers, "held_out", held_out.shape)
    changed_outputs, problem = (
        (None, problem) if problem else _answer(answers, "later_changed", held_out.shape)
    )
    if problem:
        return problem
    leak, (sequence, position, first) = tasks.causal_leak(
        outputs, changed_outputs, held_out, case.inputs["later_changed"]
    )
    if leak <= CAUSAL_TOLERANCE:
        return None
    seen = _(
        "the output at position {position} changed (by {leak:.3g}) when only tokens from "
        "position {first} on were changed (held-out sequence {sequence}): the model looks at "
        "later tokens",
        position=position,
        leak=leak,
        first=first,
        sequence=sequence,
    )
    where = tasks.self_attention_leak(answers.get("attention", []))
    # What the weights single out leads; the mask, the usual cause, follows what was seen.
    generic = where not in ("over queries", "after softmax", "elsewhere")
    if where == "over queries":
        cause = _(
            "Its attention weights sum to 1 over the queries (each column), not over the keys: "
            "a softmax over the wrong axis divides each weight by the later positions' scores. "
            "Take the softmax over the keys (the last axis)"
        )
    elif where == "after softmax":
        cause = _(
            "Its attention gives later tokens no weight, but its rows sum to less than 1: the "
            "mask was applied after the softmax, whose sums still hold the later tokens' scores. "
            "Mask the scores before the softmax (−∞ or −1e9 above the diagonal)"
        )
    elif where == "elsewhere":
        cause = _(
            "Its attention gives later tokens no weight and its rows are distributions, so "
            "something else mixes the positions: a normalisation over the positions "
            "(LayerNormalization(axis=1) on (batch, positions, features) normalises each feature "
            "over the sequence), a pooling, or a layer that reads across positions. Normalise "
            "over the features (the last axis)"
        )
    else:
        cause = _(
            "With teacher forcing the next token is in the input, so a model that peeks fits its "
            "data and still cannot generate; mask the attention causally (use_causal_mask=True, "
            "or a mask with zeros above the diagonal)"
        )
    return GateFailure.structural(
        _("{seen}. {cause}", seen=seen, cause=cause)
        if generic
        else _("{cause} ({seen})", seen=seen, cause=cause)
    )


def uses_positions(case, answers):
    held_out, reordered = case.inputs["held_out"], case.inputs["reordered"]
    before, problem = _answer(answers, "held_out", held_out.shape)
    after, problem = (None, problem) if problem else _answer(answers, "reordered", held_out.shape)
    if problem:
        return problem
    first = SOURCE_LENGTH  # the position that predicts the first answer, the last source token
    rows = tasks.reordered_rows(held_out, reordered)
    before, after, reordered = before[rows, first], after[rows, first], reordered[rows]
    follows = float(np.mean(after.argmax(axis=-1) == reordered[:, first - 1]))
    if follows >= learned_mark(FOLLOWS_AT):
        return None
    unchanged = float(np.mean(np.abs(after - before).max(axis=-1) < 1e-5))
    # A model that gives every sequence the same first answer (one that collapsed while
    # training) is blind to more than order: that is the accuracy's to tell.
    reads_its_input = np.mean(np.abs(before - before[:1]).max(axis=-1) >= 1e-5) > 0.5
    # An attention still about uniform sums the source as a set, positions or not: evidence of
    # missing positions only once the training moved the loss.
    blind_untrained = _uniform_at(answers, first, rows) and barely_moved(answers)
    if unchanged > 0.5 and reads_its_input and not blind_untrained:
        return GateFailure.structural(
            _(
                "with the source tokens put in another order, the first answer did not change in "
                "{unchanged:.0%} of the held-out sequences: the model does not see order. "
                "Self-attention alone treats its inputs as a set (NNDL 8.3); add positions (a "
                "learned or sinusoidal encoding) to the embeddings",
                unchanged=unchanged,
            )
        )
    return GateFailure.unlearned(
        _(
            "with the source tokens put in another order, the first answer was the new last "
            "source token in only {follows:.0%} of the held-out sequences (at least {needed:.0%} "
            "needed): the model does not find the token by its position",
            follows=follows,
            needed=learned_mark(FOLLOWS_AT),
        )
    )


def _uniform_at(answers, query, rows) -> bool:
    """Whether the attention of position `query` is still about uniform over the tokens it may
    see (its largest weight under twice the uniform one, on average): an attention that weighs
    every token alike sums them as a set, so an untrained model with positions is blind to
    order too, and the gate's failure names no missing positions."""
    weights = answers.get("attention")
    if weights is None:
        return False
    weights = np.asarray(weights, dtype=float)
    if weights.ndim == 3:
        weights = weights[:, None]
    if weights.ndim != 4 or weights.shape[-2] <= query or not np.all(np.isfinite(weights)):
        return False
    largest = weights[rows][:, :, query, : query + 1].max(axis=-1)
    return float(np.mean(largest)) < 2.0 / (query + 1)


def anti_diagonal(case, answers):
    held_out = case.inputs["held_out"]
    count, length = held_out.shape
    weights = answers.get("attention")
    if weights is None:
        return GateFailure.structural(_("no answer came back for {name}", name="attention"))
    weights = np.asarray(weights, dtype=float)
    square = weights.shape[-2:] == (length, length) and weights.shape[0] == count
    if not square or weights.ndim not in (3, 4) or not np.all(np.isfinite(weights)):
        return GateFailure.structural(
            _(
                "attention_weights returned shape {shape}: expected finite weights of shape "
                "{heads} or {single} (queries, keys)",
                shape=weights.shape,
                heads=(count, "H", length, length),
                single=(count, length, length),
            )
        )
    refused = attention_refused(weights, {0: BATCH_AXIS, weights.ndim - 2: N_("the queries")})
    if refused is not None:
        return refused
    hits, mass = tasks.anti_diagonal_hits(weights)
    best = int(np.argmax(hits))
    # Heads may share the answers out (one looks for some positions, another for the rest):
    # their mean weight looks at the mirrored token too.
    together = tasks.anti_diagonal_hits(weights.mean(axis=1))[0][0] if weights.ndim == 4 else 0.0
    if max(hits[best], together) >= learned_mark(ANTI_DIAGONAL_AT):
        return None
    return GateFailure.unlearned(
        _(
            "at the answer positions p = n … 2n − 1, of the source tokens the one with the largest "
            "attention weight was the mirrored one (key 2n − 1 − p) in only {hits:.0%} of the rows "
            "(head {head}, mean weight there {mass:.2f}; at least {needed:.0%} needed): the answer "
            "at p is that token, so a model that reverses by attention looks there",
            hits=float(hits[best]),
            head=best,
            mass=float(mass[best]),
            needed=learned_mark(ANTI_DIAGONAL_AT),
        )
    )


RECORD = Exercise(
    id="train-transformer",
    title="Lab: train a Transformer decoder to reverse sequences",
    file="lab_train_transformer.py",
    section="NNDL 8.3 (self-attention); Vaswani 2017 (masked decoder self-attention)",
    timeout=150.0,
    summary=(
        "Build a small Transformer decoder (embeddings, positions, causal self-attention) and "
        "train it to reverse sequences. The grader trains it in the sandbox on data from its own "
        "seed and grades what it learned on held-out sequences: accuracy, that it is causal, "
        "that it uses positions, and that its attention looks at the mirrored token."
    ),
    parts=(
        Part(
            name="train",
            points=10,
            make_cases=reversal_cases,
            targets=("build_model", "train_model", MODEL_OUTPUT_0, "attention_weights"),
            description="train: build_model and train_model; graded on held-out accuracy "
            f"(≥ {PASS_AT:.0%}) and three gates.",
            training=Training(
                answers=reversal_answers,
                pass_at=PASS_AT,
                truth=tasks.reversal_answers,
                source=N_("source sequence"),
                epochs=10,
                gates=(
                    Gate(N_("causal: later tokens leave earlier outputs unchanged"), causal),
                    Gate(
                        N_("uses positions: the answer follows the source's order"),
                        uses_positions,
                        learned=True,
                    ),
                    Gate(N_("attention on the anti-diagonal"), anti_diagonal, learned=True),
                ),
            ),
        ),
    ),
)
