"""The declarative vocabulary of an exercise record.

An exercise is data: which file the student edits, its parts and points, how check cases are
made (pure NumPy, from a seeded generator) and which known mistakes to recognise. One generic
engine (`grader.engine`) grades every record; nothing here imports TensorFlow, so listing and
showing exercises stays fast.
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

LAYER = "layer"
FUNCTION = "function"
# A model the submission builds and trains in the child, then asks for answers on inputs the
# grader made (see `Training`).
TRAIN = "train"
# A probe of a training case that reads one of the model's own outputs (the model `build_model`
# returned, called by the grader's child), not an answer a function of the submission gives: a
# `predict` of the student's could answer by rule whatever the model learned.
MODEL_OUTPUT = "model output "
MODEL_OUTPUT_0, MODEL_OUTPUT_1 = MODEL_OUTPUT + "0", MODEL_OUTPUT + "1"
# The stages whose answers the child adds to every training case besides the trained model's
# (grader.sandbox.child._run_training), which grader.engine.training judges: the model trained on
# shuffled answers, the model before its training, the trained one with its weights put back;
# then, in a process of its own, a model built afresh with its weights moved as far as the
# training moved them in another direction, the same fresh model given the trained model's
# weights, and given them with a little noise.
COUNTERFACTUAL, UNTRAINED, RESET = "trained_on_shuffled", "untrained", "weights_reset"
REDRAWN, MOVED, NUDGED = "fresh_redrawn", "weights_moved", "weights_nudged"
# The fresh model with the trained weights asked, before anything else in its process, the
# first ALONE_ROWS held-out inputs of the first probe one at a time (model output 0): what it
# answers for an example must not come from the other examples it is asked with. Eight: each is
# a call of its own (64 ms of CPU for the reference seq2seq, whose recurrences run eagerly).
ALONE, ALONE_ROWS = "asked_alone", 8
# The fresh model with the trained weights called as in training (`training=True`: dropout on,
# batch statistics) on the first probe (model output 0): an honest model answers as it learned;
# a path that answers only at inference is one gradient descent never trained.
TRAINING_MODE = "called_as_in_training"
# The trained model's weights, as the child reports them (`<TRAINED>/<number>`), and the stage
# of a training case that asks a model built afresh in another process with them (`training`'s
# "stage"): grader.engine.fresh_models.
TRAINED, FRESH = "trained_weights", "fresh"
# In the same process, last: a model built afresh (the student's model before its training)
# trained by the grader's own gradient descent on the case's training data, by the recipe in
# `training["relearn"]` (grader.sandbox.relearn), and then with its trainable weights put back:
# what a lab credits must be learned by gradient descent on the grader's data, which no
# train_model of the student's (a rule, counts written into the weights, a callback, an
# optimizer or a gradient of its own) can stand in for.
RELEARNED, RELEARNED_RESET = "grader_trained", "grader_trained_reset"
# ... with the change its training made shuffled among each weight's elements (as REDRAWN), and,
# where the grader's training could not run, why (UTF-8 bytes, read as one line of text).
RELEARNED_REDRAWN, RELEARN_FAILED = "grader_trained_redrawn", "grader_training_failed"
# ... and its first ALONE_ROWS held-out inputs asked one example at a time, as ALONE.
RELEARNED_ALONE = "grader_trained_alone"
# For each trainable weight, the norms of its first value, of the student's training's change and
# of the grader's, and the inner product of the first value with the student's change (rows of
# four): the weights the grader's training moves must be ones the student's moved too, or the
# model graded answers by a path its training never trained; and the student's trained weights
# must keep their first random values as gradient descent does, not be written over them.
RELEARN_CHANGES = "grader_trained_changes"
# The loss of each epoch of the real training, as the child recorded it (for the diagnosis).
RUN_LOSS = "run_loss"
# The probes asked of the trained model alone, for the run's diagnosis (a case's
# `training["run_probes"]`, beside its "probes"; grader.engine.training_run): its first training
# rows, and the held-out inputs with their source swapped between examples
# (grader.reference.tasks.run_probes makes both). No other stage needs them.
TRAINING_ROWS, SOURCE_SHUFFLED = "training_rows", "source_shuffled"
QUERY_SHUFFLED = "query_shuffled"
# The model's attention weights on those inputs too (the question swapped): an attention that
# does not change with the question does not read it.
QUERY_SHUFFLED_ATTENTION = "query_shuffled_attention"
RUN_PROBES = [
    [TRAINING_ROWS, MODEL_OUTPUT_0, TRAINING_ROWS],
    [SOURCE_SHUFFLED, MODEL_OUTPUT_0, SOURCE_SHUFFLED],
]
# How far the training moved the trainable weights, relative to their first values (the same).
RUN_MOVED = "run_weights_moved"
# What each `fit` of the real training was asked, as the child recorded it (for the diagnosis):
# one row per call, (examples it trained on, batch size, epochs, whether it trained the model
# train_model was given (1) or one sharing none of its weights (0), whether it weighed the loss
# with sample_weight, the share of its examples whose target is the one given for that input),
# NaN where not known.
RUN_FIT = "run_fit"
FIT_COLUMNS = 6
# How many of the weight arrays trainable when the model was built train_model made untrainable,
# and how many there were (the same).
RUN_FROZEN = "run_frozen"
# How far NUDGED moves each trainable weight: this share of the weight's root mean square.
NUDGE = 0.01


# Compared by identity (eq=False): a case holds arrays, and `==` between two of them would ask
# NumPy for the truth of an elementwise comparison (a ValueError where two cases share their
# target and label), so a membership test on cases raised in the mistake search (r8 red team).
@dataclass(eq=False)
class Case:
    """One check case: what to call, with what, and what to pass back through it.

    `target` names a class (kind "layer") or a function (kind "function") of the submission.
    A layer is built with `dtype`, given `weights` by weight name, called with `inputs` in
    order, and its vector–Jacobian products with `upstream` are taken w.r.t. every input and
    weight. A function is called with `inputs` in order and `params` as keyword arguments.

    A case with `raises` (an exception's name, "ValueError") is a contract check: the call must
    raise it, and `promise` says, in the words of the docstring, what the student must do when
    it does not ("raise ValueError for a kind other than lstm, gru or simple_rnn").
    """

    target: str
    kind: str
    label: str
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    params: dict[str, float | int | str | bool] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    upstream: np.ndarray | None = None
    dtype: str = "float64"
    # Tolerances are relative to max(1, max |expected|); see grader.engine.compare.
    rtol: float | None = None
    atol: float | None = None
    hidden: bool = False
    raises: str = ""
    promise: str = ""
    # A variant of another case of its part (grader.engine.properties): the index of that case
    # in the part's cases, and the name of the relation that made it.
    variant_of: int = -1
    relation: str = ""
    # A layer's inputs of other sequence lengths, that the same layer object is called on first
    # (it builds the layer): a mask or a shape kept on the layer from its first call fails the
    # graded call. Empty: the layer is built on the case's own inputs.
    first_call: dict[str, np.ndarray] = field(default_factory=dict)
    # A case of kind "train": which of the submission's functions the child calls, as JSON:
    # {"build": name, "train": name, "seed": int, "probes": [[answer, function, input], ...]}.
    # The child seeds Keras with `seed`, builds `model = build(**params)`, calls
    # `train(model, inputs["inputs"], inputs["targets"])`, then for each probe
    # `function(model, inputs[input])`, and returns each answer by name (the first one is the
    # case's output too). Judged by the part's `Training`, in the grader's process. An optional
    # "run_probes" (RUN_PROBES) is asked of the trained model alone, for the run's diagnosis.
    training: dict = field(default_factory=dict)
    # A training case's secret renaming of the answer tokens (a permutation of the vocabulary,
    # grader.reference.tasks.answer_code), never sent to the child: the data the model trains
    # on answers in it, so an answer worked out by rule from the inputs (or a solution written
    # for the task as the docs tell it) is wrong there, and only a model that learns from the
    # data finds it. The grader reads the model's answers back through it before judging.
    answer_code: np.ndarray | None = None
    # A training case's secret order of the source positions (grader.reference.tasks
    # .position_code), never sent to the child either: data position j holds the task's source
    # position position_code[j] in every input array, so an attention drawn by hand for the
    # task's own positions looks at the wrong tokens. The grader judges in the task's order
    # (grader.engine.training.plain_view, read_back).
    position_code: np.ndarray | None = None


def call_with_case(function: Callable, case: Case, changed: Mapping | None = None):
    """`function(**arguments)`, each argument taken by its name from the case: its inputs, its
    weights, its params, in that order of precedence, unless `changed` gives it (a value, or a
    function of the case). A reference function of grader.reference whose parameters are named
    like the case's arrays is called this way, so a record names no array twice."""
    arguments = {
        name: value(case) if callable(value) else value for name, value in (changed or {}).items()
    }
    for name in inspect.signature(function).parameters:
        if name in arguments:
            continue
        for source in (case.inputs, case.weights, case.params):
            if name in source:
                arguments[name] = source[name]
                break
    return function(**arguments)


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer, recognised by recomputing it in NumPy from the case.

    `compute(case)` returns what the mistaken code would output for that case, or None where
    the mistake cannot be told apart on that case (for example a transposed square kernel on a
    non-square one, which would crash instead). `targets` limits it to those targets' cases
    and `when(case)` to the cases where it can be told apart.

    Most mistakes are declared, not written: `Mistake.of` is a reference function of
    grader.reference with an argument changed, `Mistake.scaled` the right answer times a
    factor, `Mistake.transposed` the right answer with a square weight transposed.
    """

    name: str
    explanation: str
    compute: Callable[[Case], np.ndarray | None]
    targets: tuple[str, ...] = ()
    when: Callable[[Case], bool] | None = None

    def output(self, case: Case) -> np.ndarray | None:
        """What the mistaken code outputs on `case`, or None where it cannot be told apart."""
        if self.targets and case.target not in self.targets:
            return None
        if self.when is not None and not self.when(case):
            return None
        return self.compute(case)

    @classmethod
    def of(cls, name, explanation, function, *, targets=(), when=None, **changed) -> Mistake:
        """The output of `function` (arguments by name from the case, see `call_with_case`)
        with the arguments in `changed` replaced: a value, or a function of the case."""
        return cls(
            name, explanation, lambda case: call_with_case(function, case, changed), targets, when
        )

    @classmethod
    def scaled(cls, name, explanation, function, factor, *, targets=(), when=None) -> Mistake:
        """`function`'s right answer times `factor` (a number, or a function of the case)."""

        def compute(case):
            times = factor(case) if callable(factor) else factor
            return np.asarray(call_with_case(function, case)) * times

        return cls(name, explanation, compute, targets, when)

    @classmethod
    def transposed(cls, name, explanation, function, weight, *, targets=()) -> Mistake:
        """`function` given the square weight (or input) `weight` transposed; told apart only
        where it is square (a non-square one would crash instead)."""

        def square(case):
            array = case.weights.get(weight, case.inputs.get(weight))
            return array is not None and array.shape[-1] == array.shape[-2]

        def swap(case):
            array = case.weights.get(weight, case.inputs.get(weight))
            return np.swapaxes(array, -1, -2)

        return cls.of(name, explanation, function, targets=targets, when=square, **{weight: swap})


@dataclass(frozen=True)
class Recompute:
    """How the grader recomputes a part's output in its own process, so that
    grader.engine.diagnosis can try its generic slips on it: `function` of grader.reference,
    its arguments by name from the case (`call_with_case`), and which of them are `weights`
    (a slip: one used transposed), the `scale` as (argument, the size it must be: "scale_dim",
    "key_dim"; a slip: scaled by the square root of another size of the case) and `lengths`
    (valid lengths; a slip: the mask off by one). Only for cases of `targets` (all if empty).
    """

    function: Callable
    weights: tuple[str, ...] = ()
    scale: tuple[str, str] | tuple[()] = ()
    lengths: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Property:
    """A property the submission's output must have, checked in the grader's process.

    `check(case, output)` returns None when it holds, else what is wrong, in plain words (for
    example: the energy rose between steps 3 and 4). Runs on every case of its part whose target
    is in `targets` (all targets when empty). With `gradients`, a layer's property: `check` is
    given the gradients the child returned, by name ("input:value", "weight:kernel"), in place
    of the output (see grader.engine.properties.gradients_sane).
    """

    name: str
    check: Callable[[Case, np.ndarray], str | None]
    targets: tuple[str, ...] = ()
    gradients: bool = False


@dataclass(frozen=True)
class Relation:
    """A property between two runs of the submission, checked in the grader's process.

    `vary(case, rng)` makes, in the grader's process, a variant of a case (its masked keys
    changed, its inputs permuted, one example of its batch alone), or None where the relation
    does not apply; the child runs it like any case (and it is compared with the reference
    too). `check(case, output, variant, variant_output)` returns None when the two outputs are
    related as they must be, else what is wrong in the words of the chapter. See
    grader.engine.properties for the relations records use.
    """

    name: str
    vary: Callable[[Case, np.random.Generator], Case | None]
    check: Callable[[Case, np.ndarray, Case, np.ndarray], str | None]
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class GateFailure:
    """Why a gate failed, and which kind of evidence that is.

    A structural failure (`needs_learning` False) holds whatever the weights: a later token
    changed an earlier output, the answers stayed the same to 1e-5 when the order of the inputs
    changed (the model cannot see order), weights that are no distribution. It is evidence of
    one mistake in the code, and is told first. A learned behaviour (`needs_learning` True) is
    what a trained model does (its attention lands on the mirrored token, its answer follows
    the fact): every model that has not learned fails it, whatever the reason, so where the
    accuracy fails too it names no mistake and is told after the accuracy.
    """

    message: str
    needs_learning: bool

    @classmethod
    def structural(cls, message: str) -> GateFailure:
        return cls(message, needs_learning=False)

    @classmethod
    def unlearned(cls, message: str) -> GateFailure:
        return cls(message, needs_learning=True)


@dataclass(frozen=True)
class Gate:
    """A condition a trained model must meet beyond accuracy, checked in the grader's process.

    `check(case, answers)` is given the case (its inputs: the data and the probes the grader
    made) and the arrays the submission's functions returned for it, by probe name; it returns
    None when the condition holds, else a `GateFailure`: what the model does wrong and why it
    matters, in plain words (for example: its output at position 3 changed when only position 5
    changed), and whether that is structural or a behaviour only a trained model shows.
    """

    name: str
    check: Callable[[Case, Mapping[str, np.ndarray]], GateFailure | None]
    # What only a trained model does (its attention on the mirrored token, an answer that
    # follows the fact): a model that already does it before its training, or without what
    # training gave it, did not learn it (grader.engine.training.from_training).
    learned: bool = False


# How far below its mark a learned gate holds while the copy the grader trained itself is judged
# (grader.engine.training.learned_by_gradient_descent): one recipe for every model leaves an
# honest one a little short where its own schedule reached the mark (an alignment of 79% against
# 80%); an attention never trained, a decoy's, stays near chance.
LEARNED_SLACK = contextvars.ContextVar("learned_slack", default=0.0)


def learned_mark(mark: float) -> float:
    """A learned gate's mark, less the slack of the judgement under way (`LEARNED_SLACK`)."""
    return mark - LEARNED_SLACK.get()


@dataclass(frozen=True)
class Training:
    """How a part whose cases train a model (kind "train") is scored: by what the model
    learned, never by comparison with the reference solution (which is not run for it).

    `answers(case)` gives, in the grader's process, the right tokens for the case's first probe
    (its held-out inputs), -1 where a position is not scored; the first probe's answer is
    token scores (..., vocabulary) or tokens, and the accuracy over the scored positions must
    be at least `pass_at`. Each of `gates` must hold too.

    When the accuracy fails, the run is diagnosed from what it shows (the loss per epoch,
    the accuracy per position, on training rows and on held-out ones, whether the answers read
    the source): `truth` and `source` say what that needs.
    """

    answers: Callable[[Case], np.ndarray]
    pass_at: float
    gates: tuple[Gate, ...] = ()
    # What the run's diagnosis reads (grader.engine.training_run), when the accuracy fails:
    # `truth(inputs)`, the right tokens of any inputs of the task (the training rows' too), and
    # the name of what the answer must be read from, whose swap between examples is the probe
    # "source_shuffled" (tasks.run_probes); where the task also asks a question of the source
    # (the person asked of a story), its name: its swap is the probe "query_shuffled".
    truth: Callable[[np.ndarray], np.ndarray] | None = None
    source: str = ""
    query: str = ""
    # The epochs the lab's own model (the reference solution) trains for: a loss still falling
    # after as many is a model that learns slower, not one trained too little.
    epochs: int = 0


@dataclass(frozen=True)
class Part:
    """A graded part. `make_cases(rng, hidden=False)` makes its cases; with `hidden=True` it
    draws fresh shapes as well as values (batch grading's hidden checks). `targets` are the
    class and function names it grades; by default, the one named like the part."""

    name: str
    points: float
    make_cases: Callable[..., list[Case]]
    targets: tuple[str, ...] = ()
    mistakes: tuple[Mistake, ...] = ()
    description: str = ""
    properties: tuple[Property, ...] = ()
    relations: tuple[Relation, ...] = ()
    # How to recompute the output under generic slips (grader.engine.diagnosis), if declared.
    recompute: Recompute | None = None
    # A part whose cases train a model: how it is scored (its cases are of kind "train").
    training: Training | None = None

    def __post_init__(self):
        if not self.targets:
            object.__setattr__(self, "targets", (self.name,))


@dataclass(frozen=True)
class WrittenPart:
    """An explanation the student writes in `exercises/answers/<exercise id>.md`.

    It is never graded automatically: the grader reports whether it was written, "for the
    instructor", with its points kept apart from the automatic score.
    """

    name: str
    points: float
    prompt: str


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    file: str
    section: str
    summary: str
    parts: tuple[Part, ...]
    # Per-part wall-clock limit in seconds when grading a submission.
    timeout: float = 60.0
    written: tuple[WrittenPart, ...] = ()
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def trains(self) -> bool:
        """Whether a part trains a model (graded by what it learns: `Training`)."""
        return any(part.training is not None for part in self.parts)

    @property
    def max_score(self) -> float:
        return float(sum(part.points for part in self.parts))

    def part(self, name: str) -> Part:
        for part in self.parts:
            if part.name == name:
                return part
        known = ", ".join(p.name for p in self.parts)
        raise KeyError(f"Exercise {self.id} has no part {name!r}. Parts: {known}.")
