"""What a training run shows, when the trained model has not learned the task (issue 47).

The child reports, besides the trained model's answers, what the diagnosis reads: the loss of
each epoch its `fit` ran (`RUN_LOSS`), its answers on its first training rows
("training_rows") and on the held-out inputs with their source swapped between examples
("source_shuffled"; grader.reference.tasks.run_probes). Each rule below reads one piece of that
evidence and says what it shows and what can cause it; the first that applies is told, after
the accuracy's line. Where the evidence is missing (a training loop of the student's own has no
`fit` history) or points nowhere, the causes are listed as before.

The child's numbers are data: a loss that is not a 1-D array of numbers is not read.
"""

from __future__ import annotations

import numpy as np

from grader.engine.training import accuracy, chance, predicted_tokens
from grader.i18n import N_, _, tr
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import (
    FIT_COLUMNS,
    QUERY_SHUFFLED,
    QUERY_SHUFFLED_ATTENTION,
    RUN_FIT,
    RUN_FROZEN,
    RUN_LOSS,
    RUN_MOVED,
    SOURCE_SHUFFLED,
    TRAINING_ROWS,
    Case,
    Part,
)

# Answers that stay the same in at least this share of the scored positions when the source is
# swapped for another example's do not read the source (an honest model's agree by chance).
UNCHANGED_AT = 0.9
# A position is answered right at least this share of the time / no better than this above its
# chance, for "some positions fit, others not".
FITS_AT, CHANCE_MARGIN = 0.9, 0.15
# The training rows answered this much better than the held-out ones: learned by heart.
MEMORISED_GAP = 0.25
# The last epoch still took off at least this share of the loss: the loss was still falling.
STILL_FALLING = 0.02
# The loss at the end at least this share of the first epoch's: it barely moved.
FLAT_AT = 0.95
# A loss at the end at most this share of the first epoch's has fitted something.
LEARNED_AT = 0.9
# Trainable weights moved by less than this share of their size: not trained (an honest
# training moves them by 100% and more; Adam at 1e-4 for 70 steps, 3%).
MOVED_LITTLE = 0.05
# A loss that ended this many times its first epoch's grew: the training diverged.
GREW_BY = 1.5
# A final loss below this fits its targets (a cross-entropy near 0): not "still falling".
SMALL_LOSS = 0.05
# The answers that are the neighbour position's right answer: targets shifted by one.
SHIFTED_AT = 0.6
# A training on less than this share of the examples train_model was given left data out.
MOST_LEFT_OUT = 0.5
# Fewer optimisation steps than this in all cannot train the labs' models (the references
# take 140 to 940; one epoch of 64-example batches is 47 to 79).
FEW_STEPS = 30
# A first epoch's loss this many times a guess's (ln of the number of answers): thrown off.
THROWN_OFF = 5.0
# How far an output row may be from a distribution and still count as probabilities.
PROBABILITIES_WITHIN = 1e-3

CAUSES = N_(
    "The cause is in the model (what it can see: its positions, masks, the memories or context "
    "it reads) or in the training (enough epochs or steps, the learning rate, the loss, targets "
    "that line up with the inputs); the gates below tell what they can"
)


def diagnosis(part: Part, case: Case, got: CaseOutput, truth: np.ndarray) -> str:
    """What the run shows about why the trained model has not learned, in one or two
    sentences; "" where nothing in the run points at a cause (then `CAUSES` lists them)."""
    for rule in RULES:
        said = rule(part, case, got, truth)
        if said:
            return said
    return ""


def losses(grads: dict) -> np.ndarray | None:
    """The losses of the epochs the child recorded among a case's answers (`grads`), or None
    (none, or not numbers)."""
    value = grads.get(RUN_LOSS)
    if value is None:
        return None
    value = np.asarray(value)
    if value.ndim != 1 or not value.size or value.dtype.kind not in "fiu":
        return None
    return value.astype(float)


def weights_moved(grads: dict) -> float | None:
    """How far the training moved the trainable weights, relative to their first values, as
    the child recorded it; None where it did not (or reported something else)."""
    value = grads.get(RUN_MOVED)
    if value is None:
        return None
    value = np.asarray(value)
    if value.shape != (1,) or value.dtype.kind != "f" or not np.isfinite(value[0]):
        return None
    return float(value[0])


def fits_asked(grads: dict) -> np.ndarray | None:
    """What each `fit` of the training was asked, as the child recorded it: rows of (examples
    it trained on, batch size, epochs, trained the given model, weighed by sample_weight, share
    of its pairs kept; spec.RUN_FIT), NaN where unknown; None where not recorded (a loop of the
    student's own) or not such rows."""
    value = grads.get(RUN_FIT)
    if value is None:
        return None
    value = np.asarray(value)
    if value.ndim != 2 or value.shape[1] != FIT_COLUMNS or not len(value):
        return None
    if value.dtype.kind != "f":
        return None
    if np.any(value[np.isfinite(value)] < 0):
        return None
    return value.astype(float)


def _on_training_rows(part, case, got) -> tuple[np.ndarray, np.ndarray] | None:
    """The trained model's answers on its first training rows and their right tokens, or None
    where the case or the child has none."""
    rows, answer = case.inputs.get(TRAINING_ROWS), got.grads.get(TRAINING_ROWS)
    if rows is None or answer is None or part.training.truth is None:
        return None
    return answer, np.asarray(part.training.truth(rows))


def _diverged(part, case, got, truth) -> str:
    run = losses(got.grads)
    if run is None:
        return ""
    if np.all(np.isfinite(run)):
        if not _grew(run):
            return ""
        return _(
            "The training diverged: its loss grew from {first:.3g} to {last:.3g}. Lower the "
            "learning rate, and check that the loss matches the model's last layer "
            "(from_logits=True only for scores that are not probabilities)",
            first=float(run[0]),
            last=float(run[-1]),
        )
    epoch = int(np.argmin(np.isfinite(run))) + 1
    return _(
        "The training diverged: its loss became {value} at epoch {epoch}. Lower the learning "
        "rate, and check that the loss matches the model's last layer (from_logits=True only "
        "for scores that are not probabilities)",
        value=float(run[epoch - 1]),
        epoch=epoch,
    )


def _thrown_off(part, case, got, truth) -> str:
    """A first epoch's loss far above a guess's: steps so large that the weights were thrown
    far off at once (a learning rate of 1), whatever the loss did after."""
    run, answer = losses(got.grads), np.asarray(got.output)
    if run is None or not np.isfinite(run[0]) or answer.ndim != np.ndim(truth) + 1:
        return ""
    classes = answer.shape[-1]
    if classes < 2 or run[0] <= THROWN_OFF * np.log(classes):
        return ""
    return _(
        "Its loss began at {first:.3g} in its first epoch, far above the {guess:.2g} of a model "
        "that only guesses (ln {classes}): its first steps threw the weights far off, and the "
        "training did not recover. Lower the learning rate",
        first=float(run[0]),
        guess=float(np.log(classes)),
        classes=classes,
    )


def _not_probabilities(part, case, got, truth) -> str:
    """An answer that is not a distribution over the tokens, where the lab asks for the
    answer's probabilities: a loss for probabilities given scores fits something else."""
    answer = np.asarray(got.output)
    if answer.ndim != np.ndim(truth) + 1 or answer.dtype.kind != "f" or not answer.size:
        return ""
    with np.errstate(all="ignore"):
        sums = answer.astype(float).sum(axis=-1)
        low = float(np.nanmin(answer))
    off = np.abs(sums - 1.0)
    if not np.all(np.isfinite(off)):
        return ""
    worst = np.unravel_index(int(np.argmax(off)), off.shape)
    if off[worst] <= PROBABILITIES_WITHIN and low >= -PROBABILITIES_WITHIN:
        return ""
    return _(
        "Its first output is not probabilities (a row sums to {total:.3g}, values go down to "
        "{low:.3g}); the lab's first output is the answer's probabilities. A loss for "
        "probabilities (Keras's default, from_logits=False) given scores fits something else: "
        "end the model with a softmax",
        total=float(sums[worst]),
        low=low,
    )


def _fewer_examples(part, case, got, truth) -> str:
    """Its fit trained on well under the examples train_model was given."""
    asked, given = fits_asked(got.grads), case.inputs.get("inputs")
    if asked is None or given is None or not np.any(np.isfinite(asked[:, 0])):
        return ""
    used = int(np.nanmax(asked[:, 0]))
    if used >= MOST_LEFT_OUT * len(given):
        return ""
    return _(
        "Its fit trained on {used} of the {given} training examples train_model was given: a "
        "slice of them, or a validation_split that keeps only part of them for training (Keras "
        "trains on the first 1 − validation_split of them). Train on all of them",
        used=used,
        given=len(given),
    )


def _another_model(part, case, got, truth) -> str:
    """Every fit trained a model that holds none of the given model's weights, and the given
    one did not move: the model graded was never trained."""
    asked = fits_asked(got.grads)
    if asked is None or not np.all(asked[:, 3] == 0):
        return ""
    moved = weights_moved(got.grads)
    if moved is not None and moved >= MOVED_LITTLE:
        return ""
    return _(
        "train_model's fit trained a model that holds none of the weights of the model it was "
        "given (a model built again inside train_model, or a copy): the model graded was never "
        "trained. Train the model train_model is given, and return nothing else"
    )


def _frozen(part, case, got, truth) -> str:
    """train_model made most of the weights that were trainable untrainable: they kept their
    random first values."""
    value = np.asarray(got.grads.get(RUN_FROZEN, []))
    if value.shape != (2,) or value.dtype.kind != "f" or not np.all(np.isfinite(value)):
        return ""
    frozen, arrays = int(value[0]), int(value[1])
    if not 0 < frozen <= arrays or frozen < arrays / 2:
        return ""
    return _(
        "train_model made {frozen} of the model's {arrays} trainable weight arrays untrainable "
        "(trainable = False): they kept their random first values, and only the rest learned. "
        "Leave them trainable",
        frozen=frozen,
        arrays=arrays,
    )


def _pairs_apart(part, case, got, truth) -> str:
    """The targets its fit trained on are, for most of its examples, not the ones given with
    those inputs: shuffled apart, or changed."""
    asked = fits_asked(got.grads)
    if asked is None:
        return ""
    kept = asked[:, 5]
    if not np.any(np.isfinite(kept)) or np.nanmin(kept) >= 0.5:
        return ""
    return _(
        "For {apart:.0%} of the examples its fit trained on, the target is not the one "
        "train_model was given with that input: inputs and targets were shuffled apart (two "
        "different orders) or the targets changed. Keep each input with its own target",
        apart=1.0 - float(np.nanmin(kept)),
    )


def _weighed(grads: dict) -> bool:
    """Whether a fit of the training weighed its loss with sample_weight."""
    asked = fits_asked(grads)
    return asked is not None and bool(np.any(asked[:, 4] == 1))


def _few_steps(part, case, got, truth) -> str:
    """Its fits took too few optimisation steps in all to learn (a batch of all the examples,
    a handful of epochs)."""
    asked = fits_asked(got.grads)
    if asked is None:
        return ""
    asked = asked[:, :3]
    if not np.all(np.isfinite(asked)) or np.any(asked[:, 1] < 1):
        return ""
    batches = np.ceil(asked[:, 0] / asked[:, 1])
    steps = int(np.sum(batches * asked[:, 2]))
    if steps >= FEW_STEPS or steps < 1:
        return ""
    return _(
        "It took only {steps} optimisation steps in all ({epochs} epochs, {batches} per epoch, "
        "in batches of {batch} examples): too few for the weights to learn the task. Train in "
        "mini-batches (a batch_size of 32 to 128) or for more epochs",
        steps=steps,
        epochs=int(asked[-1, 2]),
        batches=int(batches[-1]),
        batch=int(asked[-1, 1]),
    )


def _barely_trained(part, case, got, truth) -> str:
    """The weights hardly moved: whatever the model does, it does as it was drawn."""
    moved = weights_moved(got.grads)
    if moved is None or moved >= MOVED_LITTLE:
        return ""
    run = losses(got.grads)
    said = _(
        "Its weights barely moved in training (by {moved:.1%} of their size): the model still "
        "answers about as it was drawn. The learning rate is far too small (plain SGD's default "
        "is, for this model), or there are far too few steps, or the gradients do not reach "
        "the weights (a stop_gradient, layers frozen)",
        moved=moved,
    )
    if run is not None and len(run) >= 2:
        said += _(" (loss {first:.3g} → {last:.3g})", first=float(run[0]), last=float(run[-1]))
    return said


def unchanged_when_swapped(answers: dict, truth, probe: str) -> float | None:
    """The share of the scored answers that stayed the same on the held-out inputs with a part
    swapped between examples (`probe`), where at least UNCHANGED_AT did; else None."""
    held, swapped = (predicted_tokens(answers.get(name), truth) for name in ("held_out", probe))
    if isinstance(held, str) or isinstance(swapped, str):
        return None
    scored = truth >= 0
    unchanged = float(np.mean(held[scored] == swapped[scored]))
    return unchanged if unchanged >= UNCHANGED_AT else None


def _source_unread(part, case, got, truth) -> str:
    unchanged = unchanged_when_swapped(got.grads, truth, SOURCE_SHUFFLED)
    if not part.training.source or unchanged is None:
        return ""
    source = tr(part.training.source)
    return _(
        "Its answers stayed the same in {share:.0%} of the answers when the {source} of each "
        "held-out example was swapped for another example's: the model does not read the "
        "{source}. What it computes from it (the context vector, the memory it reads, the "
        "attention's output) does not reach the answer, or the {source} never reaches that "
        "computation: follow that value to the output layer",
        share=unchanged,
        source=source,
    )


def _attention_unchanged(answers: dict) -> float:
    """The share of the held-out examples whose attention weights stayed the same (to 1e-5) with
    the question swapped, where most did; else 0."""
    before, after = (answers.get(name) for name in ("attention", QUERY_SHUFFLED_ATTENTION))
    if before is None or after is None:
        return 0.0
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if before.shape != after.shape or not before.size or not np.all(np.isfinite(before)):
        return 0.0
    same = float(np.mean(np.abs(before - after).reshape(len(before), -1).max(axis=1) <= 1e-5))
    return same if same >= UNCHANGED_AT else 0.0


def _attention_ignores_query(part, case, got, truth) -> str:
    """Attention weights that stay the same when the question is swapped: the attention's
    scores do not read the question, whatever else does."""
    share = _attention_unchanged(got.grads)
    if not part.training.query or not share:
        return ""
    return _(
        "Its attention does not read the {query}: its weights stayed the same (to 1e-5) for "
        "{share:.0%} of the held-out examples when the {query} was swapped for another "
        "example's. Either the {query} is not read at all (another column or row of the inputs "
        "taken for it, a constant), or the attention's scores leave it out: they must match "
        "the {query} against each memory (p_i = softmax(u · m_i), u the {query}'s embedding)",
        share=share,
        query=tr(part.training.query),
    )


def _query_unread(part, case, got, truth) -> str:
    """Answers that stay the same when the question asked of the source is swapped: the model
    answers without reading the question (the person asked)."""
    unchanged = unchanged_when_swapped(got.grads, truth, QUERY_SHUFFLED)
    if not part.training.query or unchanged is None:
        return ""
    query = tr(part.training.query)
    return _(
        "The {query} does not reach the answer: the answers stayed the same in {share:.0%} of "
        "the answers when the {query} of each held-out example was swapped for another "
        "example's. Either the model does not read it (another column or row of the inputs "
        "taken for it, a constant), or what it is matched against holds nothing of it (the "
        "memories leave out the token the {query} names)",
        share=unchanged,
        query=query,
    )


def _shifted(part, case, got, truth) -> str:
    """The answer at each position is the right answer of its neighbour: targets shifted."""
    tokens = predicted_tokens(got.output, truth)
    if isinstance(tokens, str) or truth.ndim != 2 or truth.shape[1] < 3:
        return ""
    right = accuracy(got.output, truth)
    for shift, side in ((1, N_("after")), (-1, N_("before"))):
        mine = tokens[:, :-1] if shift == 1 else tokens[:, 1:]
        theirs = truth[:, 1:] if shift == 1 else truth[:, :-1]
        scored = (theirs >= 0) & ((truth[:, :-1] if shift == 1 else truth[:, 1:]) >= 0)
        if scored.sum() < 10:
            continue
        shifted = float(np.mean(mine[scored] == theirs[scored]))
        if shifted >= SHIFTED_AT and shifted >= right + CHANCE_MARGIN:
            return _(
                "Its answer at a position is, in {share:.0%} of the held-out cases, the right "
                "answer of the position {side} it: the targets it was trained on are shifted by "
                "one against its outputs. Line them up: the output at position t is trained on "
                "the answer at t (the targets train_model is given already are)",
                share=shifted,
                side=_(side),
            )
    return ""


def _offset(part, case, got, truth) -> str:
    """The answers are the right tokens moved by one constant: labels changed in value."""
    tokens = predicted_tokens(got.output, truth)
    if isinstance(tokens, str):
        return ""
    scored = truth >= 0
    differences = (np.asarray(tokens)[scored] - truth[scored]).astype(int)
    if not differences.size:
        return ""
    values, counts = np.unique(differences, return_counts=True)
    best = int(np.argmax(counts))
    shift, share = int(values[best]), float(counts[best] / differences.size)
    if shift == 0 or share < SHIFTED_AT:
        return ""
    return _(
        "Its answers are the right tokens {shift:+d} in {share:.0%} of the held-out cases: the "
        "labels it was trained on were changed by {shift:+d} (made 0-based or 1-based, say). "
        "Train on the targets as train_model is given them: they are already the tokens to "
        "answer",
        shift=shift,
        share=share,
    )


def _positions_split(answer, truth) -> tuple[list[int], list[int]]:
    """The scored positions answered right (≥ FITS_AT), and those nearer chance than that."""
    tokens = predicted_tokens(answer, truth)
    if isinstance(tokens, str) or truth.ndim != 2:
        return [], []
    fitted, unfitted = [], []
    for column in range(truth.shape[1]):
        scored = truth[:, column] >= 0
        if not scored.any():
            continue
        right = float(np.mean(tokens[scored, column] == truth[scored, column]))
        kept = truth[scored, column]
        base = np.bincount(kept).max() / kept.size
        if right >= FITS_AT:
            fitted.append(column)
        elif right <= base + (FITS_AT - base) / 2:  # nearer chance than the others
            unfitted.append(column)
    return fitted, unfitted


def _some_positions(part, case, got, truth) -> str:
    fitted, unfitted = _positions_split(got.output, truth)
    if not fitted or not unfitted:
        return ""
    run = losses(got.grads)
    if run is not None and len(run) >= 2 and _last_drop(run) >= STILL_FALLING:
        if run[-1] >= SMALL_LOSS:  # still learning: some positions are learned before others
            return ""
    # The same positions left out on the rows it trained on: not what it saw too little of, but
    # what its loss never weighed.
    on_training_rows = _on_training_rows(part, case, got)
    if on_training_rows is None:
        return ""
    on_rows = _positions_split(*on_training_rows)
    if set(on_rows[1]) & set(unfitted) != set(unfitted):
        return ""
    return _(
        "The answers at positions {fitted} are right (at least {fits:.0%}) while those at "
        "positions {unfitted} stay nearer chance: the loss reaches only some answer positions. "
        "Check the sample weights or the loss mask (they must weigh every answer position) and "
        "that the targets line up with the outputs (not shifted by one)",
        fitted=", ".join(map(str, fitted)),
        fits=FITS_AT,
        unfitted=", ".join(map(str, unfitted)),
    )


def _still_falling(part, case, got, truth) -> str:
    run = losses(got.grads)
    if run is None or run[-1] < SMALL_LOSS:  # a loss near zero fits its targets already
        return ""
    if len(run) == 1:
        return _(
            "It was trained for one epoch only (loss {last:.3g}): train for more epochs",
            last=float(run[-1]),
        )
    drop = _last_drop(run)
    if drop < STILL_FALLING and not _steady(run):
        return ""
    if drop < STILL_FALLING:  # a slow and steady fall: each step too small
        return _(
            "Its training loss fell slowly and steadily to the end ({first:.3g} → {last:.3g} "
            "over {epochs} epochs, about as much each epoch): the steps are far too small. "
            "Raise the learning rate (then train for more epochs if it still falls)",
            first=float(run[0]),
            last=float(run[-1]),
            epochs=len(run),
        )
    # The epochs that ran (an early stop ends them before those asked): as many as the lab's
    # own model needs, and still falling, is a model that learns more slowly.
    if part.training.epochs and len(run) >= part.training.epochs:
        return _(
            "This model learns more slowly than the lab's: {epochs} epochs train the lab's own "
            "model, and its loss was still falling after them ({before:.3g} → {last:.3g} in the "
            "last). With the lab's learning rate, something in the model makes the task harder "
            "than it is (a nonlinearity or a scale missing from the scores, an input a layer does "
            "not get): find it before training longer",
            before=float(run[-2]),
            last=float(run[-1]),
            epochs=part.training.epochs,
        )
    return _(
        "Its training loss was still falling when the training stopped ({before:.3g} → "
        "{last:.3g} in the last of {epochs} epochs): it needs more training. Train for more "
        "epochs, or with a larger learning rate",
        before=float(run[-2]),
        last=float(run[-1]),
        epochs=len(run),
    )


def _flat(part, case, got, truth) -> str:
    run = losses(got.grads)
    if run is None or len(run) < 2 or run[-1] < FLAT_AT * run[0]:
        return ""
    moved = weights_moved(got.grads)
    if moved is not None and _weighed(got.grads):
        return _(
            "The sample_weight of its fit may sit on positions whose targets cannot be learned "
            "(the source's random tokens) rather than on the answers: its loss barely moved "
            "({first:.3g} → {last:.3g} over {epochs} epochs) while its weights moved (by "
            "{moved:.0%} of their size). Put the weight on the answer positions",
            moved=moved,
            first=float(run[0]),
            last=float(run[-1]),
            epochs=len(run),
        )
    if moved is not None:  # the weights moved (else _barely_trained told): the model cannot fit
        return _(
            "Its weights moved in training (by {moved:.0%} of their size) but its loss barely "
            "did ({first:.3g} → {last:.3g} over {epochs} epochs): the model cannot fit these "
            "targets. They may not belong to their inputs (inputs and targets shuffled apart, "
            "or taken from other rows), or the model may not see what the answer needs (the "
            "token it must copy, the fact's place, the source)",
            moved=moved,
            first=float(run[0]),
            last=float(run[-1]),
            epochs=len(run),
        )
    return _(
        "Its training loss barely moved ({first:.3g} → {last:.3g} over {epochs} epochs): the "
        "learning rate may be far too small, the gradients may not reach the weights (a "
        "stop_gradient, layers frozen), the loss may not match the targets (sparse or one-hot, "
        "from_logits), the targets may not belong to their inputs (shuffled apart), or the "
        "model may not see what the answer needs (the token it must copy, the fact's place)",
        first=float(run[0]),
        last=float(run[-1]),
        epochs=len(run),
    )


def _learned_other(part, case, got, truth) -> str:
    """The loss fell and settled, yet the answers stay at chance, on the training rows too: what
    the training fitted is not the answers."""
    run = losses(got.grads)
    found = accuracy(got.output, truth)
    if run is None or len(run) < 2 or isinstance(found, str) or run[-1] > LEARNED_AT * run[0]:
        return ""
    if _last_drop(run) >= STILL_FALLING or _steady(run):  # still learning: the next rule tells
        return ""
    base = chance(truth)
    on_training_rows = _on_training_rows(part, case, got)
    if on_training_rows is not None:
        answer, rows_truth = on_training_rows
        on_rows = accuracy(answer, rows_truth)
        if isinstance(on_rows, str) or on_rows > chance(rows_truth) + CHANCE_MARGIN:
            return ""
    if found > base + CHANCE_MARGIN:
        return ""
    return _(
        "Its training loss fell ({first:.3g} → {last:.3g}) and settled, but its answers stay "
        "at chance ({found:.0%}), on its own training examples too: what it fitted is not the "
        "answers. The loss may weigh other positions than the answers (sample weights, a "
        "mask), or the targets may not be the answers (shifted, taken from another array)",
        first=float(run[0]),
        last=float(run[-1]),
        found=found,
    )


def _grew(run: np.ndarray) -> bool:
    """Whether the loss ended well above where it began (a step too large for it)."""
    return len(run) >= 2 and bool(run[-1] > GREW_BY * max(run[0], 1e-12))


def _steady(run: np.ndarray) -> bool:
    """Whether the loss falls at about its own pace to the end (a learning rate far too small
    takes off a little each epoch): its last epoch took off at least half the mean epoch's,
    and the whole run at least 5%."""
    if len(run) < 3 or run[-1] > FLAT_AT * run[0]:
        return False
    mean_drop = (run[0] - run[-1]) / (len(run) - 1)
    return bool(run[-2] - run[-1] >= 0.5 * mean_drop > 0)


def _last_drop(run: np.ndarray) -> float:
    """The share of the loss the last epoch took off."""
    return float((run[-2] - run[-1]) / max(abs(run[-2]), 1e-12))


def _converged_short(part, case, got, truth) -> str:
    """The loss stopped falling, well above zero, and the training rows are answered no better
    than held-out ones: neither more training nor less memorising would help."""
    run = losses(got.grads)
    on_training_rows = _on_training_rows(part, case, got)
    if run is None or len(run) < 3 or on_training_rows is None:
        return ""
    if _last_drop(run) >= STILL_FALLING or _steady(run) or run[-1] < SMALL_LOSS:
        return ""
    fitted = accuracy(*on_training_rows)
    held = accuracy(got.output, truth)
    if isinstance(fitted, str) or isinstance(held, str) or fitted - held > MEMORISED_GAP / 2:
        return ""
    return _(
        "Its training converged (the loss no longer falls: {last:.3g} after {epochs} epochs) "
        "with its own training examples answered no better ({fitted:.0%}) than held-out ones "
        "({held:.0%}): more training will not help. The model cannot compute the answer: what "
        "the task needs (which fact or token to read, in what order) does not reach it; the "
        "gates below say what they can",
        last=float(run[-1]),
        epochs=len(run),
        fitted=fitted,
        held=held,
    )


def diverged(grads: dict) -> bool:
    """Whether the run's loss became NaN or infinite, or grew (every gate then fails for that
    reason)."""
    run = losses(grads)
    return run is not None and (not bool(np.all(np.isfinite(run))) or _grew(run))


def barely_moved(answers: dict, unknown: bool = True) -> bool:
    """Whether the training barely moved the model (its weights, where the child recorded how
    far; else its loss; `unknown` where neither is known): a gate that an untrained model fails
    too is then no evidence of a mistake in the model."""
    moved = weights_moved(answers)
    if moved is not None:
        return moved < MOVED_LITTLE
    run = losses(answers)
    if run is None:
        return unknown
    return len(run) >= 2 and run[-1] >= FLAT_AT * run[0]


def _memorised(part, case, got, truth) -> str:
    on_training_rows = _on_training_rows(part, case, got)
    if on_training_rows is None:
        return ""
    fitted = accuracy(*on_training_rows)
    held = accuracy(got.output, truth)
    if isinstance(fitted, str) or isinstance(held, str) or fitted - held < MEMORISED_GAP:
        return ""
    return _(
        "It answers {fitted:.0%} of its own training examples right but {held:.0%} of held-out "
        "ones: it learned its training examples by heart, not the task. It may have been "
        "trained on too few of them (train on all the data train_model is given), or it cannot "
        "see what the task needs (positions, the order of the facts, the source token a step "
        "translates) and memorises instead: check those, or train less",
        fitted=fitted,
        held=held,
    )


# In the order they are tried: the first that applies is told.
RULES = (
    _diverged,
    _another_model,
    _thrown_off,
    _fewer_examples,
    _few_steps,
    _frozen,
    _barely_trained,
    _not_probabilities,
    _shifted,
    _offset,
    _pairs_apart,
    _source_unread,
    _attention_ignores_query,
    _query_unread,
    _memorised,
    _some_positions,
    _learned_other,
    _still_falling,
    _flat,
    _converged_short,
)
