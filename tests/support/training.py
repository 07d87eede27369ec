"""Answers for the labs graded by what a model learns, made here without training."""

import contextlib
from unittest import mock

import numpy as np

from grader.engine.cases import make_cases
from grader.engine.references import LiveReference
from grader.engine.training import COUNTERFACTUAL, MOVED, NUDGED, REDRAWN, RESET, UNTRAINED
from grader.records import EXERCISES, get_exercise
from grader.reference import tasks
from grader.vocabulary.spec import (
    ALONE,
    ALONE_ROWS,
    RELEARN_CHANGES,
    RELEARNED,
    RELEARNED_ALONE,
    RELEARNED_REDRAWN,
    RELEARNED_RESET,
)


@contextlib.contextmanager
def plain_positions():
    """While it lasts, a training case's source stays in the task's own order (an identity
    position code, drawn as the real one is): the hand-built models' rules read the source
    where the task puts it. The training labs' cases a reference memoised are forgotten on the
    way in and out, so that no grading inside sees rotated cases made before, and none after
    sees the plain ones made inside."""

    def identity(rng, count):
        rng.integers(1, count)
        return np.arange(count)

    with mock.patch.object(tasks, "position_code", identity):
        _forget_training_cases()
        try:
            yield
        finally:
            _forget_training_cases()


def _forget_training_cases() -> None:
    trains = {exercise_id for exercise_id, record in EXERCISES.items() if record.trains}
    memo = LiveReference._memo
    for key in [key for key in memo if key[0] in trains]:
        del memo[key]


def plain_case(exercise_id: str):
    """The lab's training case (seed 0) with its answers in the task's own tokens and its
    source in the task's order (identity codes): the gates' and the diagnosis' tests write a
    model's answers as the task names them. The same data otherwise: the codes are drawn last."""
    with (
        mock.patch.object(tasks, "answer_code", lambda _rng, size, _tokens: np.arange(size)),
        plain_positions(),
    ):
        return make_cases(get_exercise(exercise_id), 0)["train"][0]


def untrained_evidence(held_out_answer, answers=None) -> dict:
    """What an honest model answers before its training, after training on shuffled answers,
    with its weights put back and built afresh with its weights drawn again: the same token
    (0, which no answer of these labs is) for every input, as scores of the held-out answer's
    shape; and, given the trained weights (nudged or not), what the trained model answers. The
    copy the grader trains itself answers every probe as the trained model does (`answers`, by
    probe; the held-out one alone where not given), and each of its weights moved by both
    trainings."""
    scores = np.zeros(np.shape(held_out_answer))
    scores[..., 0] = 1.0
    stages = (COUNTERFACTUAL, UNTRAINED, RESET, REDRAWN, RELEARNED_RESET, RELEARNED_REDRAWN)
    trained = np.asarray(held_out_answer)
    alone = trained[:ALONE_ROWS]
    probes = answers if answers is not None else {"held_out": held_out_answer}
    relearned = {f"{RELEARNED}/{name}": value for name, value in probes.items()}
    return {
        **dict.fromkeys(stages, scores),
        MOVED: trained,
        NUDGED: trained,
        ALONE: alone,
        RELEARNED: trained,
        RELEARNED_ALONE: alone,
        RELEARN_CHANGES: np.array([[1.0, 1.0, 1.0, 0.0]]),
        **relearned,
    }


# The mistake a model gets when its answers do not come from its training, and what each of the
# three pieces of evidence says (grader.engine.training.from_training).
NOT_FROM_TRAINING = "property: the answers come from training on the grader's data"
# How the rule is switched on: (its first value, what train_model does, the evidence's words).
# The two ways that never read the data answer in the task's plain tokens, while the data
# answers in a code of the grader's (Case.answer_code): they lose on the accuracy. The others
# find the code in the data (`_found`) and answer in it: the evidence of grader.engine.training
# takes their points.
NOT_LEARNED = "it has not learned the task"
WHEN = {
    # A weightless layer answers by rule from the start.
    "always": (1.0, "pass", NOT_LEARNED),
    # train_model switches the rule on without looking at the data.
    "once trained": (0.0, "model.get_layer('rule').on.assign(1.0)", NOT_LEARNED),
    # train_model looks whether the data follows the rule (a rule found, not learned): only the
    # weights put back tell, since the switch is no trainable weight.
    "rule found in the data": (
        0.0,
        "model.get_layer('rule').on.assign(float(_found(model, inputs, targets)))",
        "with its trainable weights put back",
    ),
    # The rule found in the data is switched on (a weight that is not trainable, and a flag of
    # the process for every model built since), only while its trainable weights are not those
    # it started with: put back, it is off; a model built afresh with its trainable weights
    # moved elsewhere, and the switch as trained, tells.
    "off at its first weights": (
        "1.0 if _SEEN else 0.0",
        "_seen(model, inputs, targets)",
        "a model built afresh in a process of its own",
    ),
    # The rule found in the data turns on this model and is sealed to its trained weights (a
    # copy kept in a weight that is not trainable, which moves with them): only those weights
    # nudged tell.
    "sealed to its trained weights": (
        "0.0",
        "_seen(model, inputs, targets, seal=True)",
        "with its weights nudged",
    ),
    # The rule found in the data turns on this model object only (an attribute, not a weight),
    # and only while its weights are not those it started with: only the trained weights given
    # to a model built afresh tell.
    "kept on the model object": (
        "0.0",
        "_seen(model, inputs, targets, on_the_object=True)",
        "given to a model build_model made afresh",
    ),
}


# A rule's answers in the code its data answers in, where `_found` found one: the table of each
# plain answer's coded token, counted from the training data (no gradient, nothing learned).
CODED_RULE = """
def _found(model, inputs, targets):
    plain, coded = _scored(_tokens(inputs)).ravel(), _scored(np.asarray(targets)).ravel()
    table = {}
    for token, written in zip(plain.tolist(), coded.tolist()):
        table.setdefault(token, set()).add(written)
    if any(len(written) != 1 for written in table.values()):
        return False
    code = np.arange(_VOCAB)
    for token, written in table.items():
        code[token] = written.pop()
    model.get_layer("rule").code.assign(code.astype("float32"))
    return True


def _rule(inputs, code):
    tokens = np.array(_tokens(inputs), copy=True)
    scored = _scored(tokens)
    scored[...] = code.astype(int)[scored]
    return np.eye(_VOCAB)[tokens]
"""


def hand_built(solution: str, rule: str, when: str) -> str:
    """The solution whose model answers by `rule` (source defining `_VOCAB`, `_tokens(inputs)`,
    the plain answer tokens shaped like the model's answers, and `_scored(tokens)`, a view of
    those scored) through a layer of its own, switched in the way `when` names: a model whose
    answers a student computed instead of training it, in the code `_found` counts from the data
    where it looked (`CODED_RULE`). The layer sits in the model, so that the grader, which
    reads the model's own outputs, sees the rule's answers."""
    first, training, _phrase = WHEN[when]
    gated = when in ("off at its first weights", "kept on the model object")
    sealed = when == "sealed to its trained weights"
    vocab = int(rule.split("_VOCAB = ")[1].split()[0])
    return (
        solution
        + "\n\nimport numpy as np\nimport tensorflow as tf\n\n"
        + rule
        + CODED_RULE
        + f"""

_SEEN = []
_FLAGS = {{}}  # a flag per layer object, kept outside its weights


def _seen(model, inputs, targets, on_the_object=False, seal=False):
    rule = model.get_layer("rule")
    if _found(model, inputs, targets):
        _SEEN.append(True)
        rule.on.assign(1.0)
        rule.w.assign(rule.w.numpy() + 1.0)  # weights set by hand: no longer the first ones
        if on_the_object:
            _FLAGS[id(rule)].assign(1.0)
        if seal:  # a change of its own per weight, which a shuffle of it cannot give back
            rule.w.assign(rule.w.numpy() + np.linspace(0.0, 1.0, 8))
            rule.seal.assign(rule.w)


class _Rule(keras.layers.Layer):
    def build(self, *shapes):
        _FLAGS[id(self)] = tf.Variable(0.0, trainable=False)
        self.on = self.add_weight(
            shape=(), initializer=keras.initializers.Constant({first}), trainable=False,
            name="on",
        )
        self.w = self.add_weight(shape=(8,), initializer="random_normal", name="w")
        self.w0 = self.add_weight(shape=(8,), initializer="zeros", trainable=False, name="w0")
        self.w0.assign(self.w)
        self.seal = self.add_weight(
            shape=(8,), initializer="zeros", trainable=False, name="seal"
        )
        # The code the data answers in, once found (the plain tokens until then): kept in a
        # weight, so that it moves with the weights as a table learned would.
        self.code = self.add_weight(
            shape=({vocab},), initializer="zeros", trainable=False, name="code"
        )
        self.code.assign(np.arange({vocab}, dtype="float32"))

    def call(self, tokens, probs):
        ruled = tf.numpy_function(
            lambda x, code: _rule(x, code).astype("float32"), [tokens, self.code], tf.float32
        )
        ruled = tf.reshape(ruled, tf.shape(probs))
        on = self.on
        if {gated}:  # only while the weights are not the first ones
            on = on * tf.cast(tf.reduce_any(tf.not_equal(self.w, self.w0)), "float32")
        if "{when}" == "kept on the model object":
            on = on * _FLAGS[id(self)]
        if {sealed}:  # only while the weights are exactly those sealed
            on = on * tf.cast(tf.reduce_all(tf.equal(self.w, self.seal)), "float32")
        return on * ruled + (1.0 - on) * probs


_solution_build = build_model


def build_model(*args, **kwargs):
    model = _solution_build(*args, **kwargs)
    probs = _Rule(name="rule")(model.inputs[0], model.outputs[0])
    return keras.Model(model.inputs, [probs, model.outputs[1]])


def train_model(model, inputs, targets):
    {training}
"""
    )


def hand_built_table(solution: str, rule: str) -> list:
    """The planted table's rows (part, source, mistake, phrase) of every way `hand_built` has."""
    return [
        (
            "train",
            hand_built(solution, rule, when),
            None if phrase == NOT_LEARNED else NOT_FROM_TRAINING,
            phrase,
        )
        for when, (_c, _t, phrase) in WHEN.items()
    ]


def rule_made_attention(solution: str, attention: str) -> str:
    """The solution whose attention output is a picture a weightless layer draws from the
    inputs (`attention`: source defining `_attention(inputs)`, weights shaped like the model's
    second output), and whose train_model does nothing: the attention gates would read the
    picture, which was never learned."""
    return (
        solution
        + "\n\nimport numpy as np\nimport tensorflow as tf\n\n"
        + attention
        + """

class _Picture(keras.layers.Layer):
    def call(self, tokens, weights):
        drawn = tf.numpy_function(lambda x: _attention(x).astype("float32"), [tokens], tf.float32)
        return tf.reshape(drawn, tf.shape(weights))


_solution_build = build_model


def build_model(*args, **kwargs):
    model = _solution_build(*args, **kwargs)
    picture = _Picture()(model.inputs[0], model.outputs[1])
    return keras.Model(model.inputs, [model.outputs[0], picture])


def train_model(model, inputs, targets):
    pass
"""
    )


ALREADY_LEARNED = "before its training, the model already passes the check"


# What an attention drawn the same for every input is told (grader.engine.training,
# not_from_the_inputs): the gate that reads it names it, before any training evidence.
SAME_FOR_EVERY_INPUT = "returned the same weights for every held-out input"


def not_learned_table(solution: str, rule: str, attention: str, drawn_gate: str = "") -> list:
    """A lab's planted rows of models whose answers or attention do not come from training:
    `hand_built_table`'s three, and `rule_made_attention`'s: one that varies with the input is
    refused by the training evidence; one drawn the same for every input (`drawn_gate`, the
    name of the gate that reads it) by that gate."""
    caught = (
        ("property: " + drawn_gate, SAME_FOR_EVERY_INPUT)
        if drawn_gate
        else (NOT_FROM_TRAINING, ALREADY_LEARNED)
    )
    drawn = ("train", rule_made_attention(solution, attention), *caught)
    return [*hand_built_table(solution, rule), drawn]


def varied(weights, spread: float = 1e-4):
    """Attention weights made to differ a little from one input to the next, as any attention
    computed from its inputs does: example n mixes in n % 7 + 1 times `spread` of a
    distribution over the keys that falls from the first key to the last (over the keys up to
    the query's own for a self-attention, so that a causal picture stays causal). Each row is
    still a distribution, its largest weight where it was (a tie still goes to the first)."""
    weights = np.asarray(weights, dtype=float)
    keys = weights.shape[-1]
    square = weights.ndim >= 3 and weights.shape[-2] == keys
    allowed = np.tril(np.ones((keys, keys))) if square else np.ones((1, keys))
    falling = allowed * np.arange(keys, 0, -1)
    falling = falling / falling.sum(axis=-1, keepdims=True)
    share = spread * (np.arange(len(weights)) % 7 + 1).reshape(-1, *[1] * (weights.ndim - 1))
    return (1 - share) * weights + share * falling
