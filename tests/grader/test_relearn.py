"""The grader's own training of a student's model (issue 45): gradient descent it runs itself,
whose state a submission cannot reach, and the judgement of what it learns.

The models here are tiny (a token's code learned by an embedding), so each training takes well
under a second; what they learn is checked against the code drawn here, not against the loop."""

import contextlib

import keras
import numpy as np
import pytest

from grader.engine.training import learned_by_gradient_descent
from grader.i18n import speaking
from grader.sandbox import relearn
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import (
    ALONE_ROWS,
    RELEARN_CHANGES,
    RELEARN_FAILED,
    RELEARNED,
    RELEARNED_ALONE,
    RELEARNED_REDRAWN,
    RELEARNED_RESET,
    TRAIN,
    Case,
    Gate,
    GateFailure,
    Part,
    Training,
)
from grader.vocabulary.status import CaseStatus

pytestmark = pytest.mark.labs

VOCABULARY = 10
RECIPE = {"epochs": 20, "batch_size": 32, "rate": 0.05, "cosine": True, "answers_from": None}


def _task(seed=0, count=400):
    """Tokens (count, 1) and their codes (count,) under a permutation drawn from `seed`."""
    rng = np.random.default_rng(seed)
    code = rng.permutation(VOCABULARY)
    inputs = rng.integers(VOCABULARY, size=(count, 1)).astype("int32")
    return inputs, code[inputs[:, 0]].astype("int32"), code


def _code_model(layer=None):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((1,), dtype="int32")
    hidden = (layer or keras.layers.Embedding(VOCABULARY, 8))(inputs)[:, 0]
    probabilities = keras.layers.Dense(VOCABULARY, activation="softmax")(hidden)
    return keras.Model(inputs, [probabilities, probabilities])


def _accuracy(model, inputs, answers):
    probabilities = np.asarray(model(inputs)[0])
    return float(np.mean(probabilities.argmax(-1) == answers))


@pytest.fixture(autouse=True)
def _machinery():
    relearn.remember_machinery()


def test_the_graders_training_learns_a_model_it_never_saw():
    inputs, answers, _code = _task()
    model = _code_model()
    before = _accuracy(model, inputs, answers)
    relearn.relearn(model, inputs, answers, RECIPE, seed=0)
    assert before < 0.5
    assert _accuracy(model, inputs, answers) == 1.0


def test_only_the_answer_positions_are_learned_from():
    """With `answers_from`, the positions before it weigh nothing: a model whose every target
    is weighed out does not move; one whose first position's targets are noise learns the
    second's."""
    inputs, answers, _code = _task()
    noise = np.random.default_rng(1).integers(VOCABULARY, size=answers.shape).astype("int32")
    targets = np.stack([noise, answers], axis=1)
    keras.utils.set_random_seed(0)
    tokens = keras.Input((2,), dtype="int32")
    scores = keras.layers.Dense(VOCABULARY, activation="softmax")(
        keras.layers.Embedding(VOCABULARY, 8)(tokens)
    )
    model = keras.Model(tokens, [scores, scores])
    pairs = np.concatenate([inputs, inputs], axis=1)
    start = [np.array(weight) for weight in model.get_weights()]
    relearn.relearn(model, pairs, targets, dict(RECIPE, answers_from=2), seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(start, model.get_weights(), strict=True))
    relearn.relearn(model, pairs, targets, dict(RECIPE, answers_from=1), seed=0)
    predicted = np.asarray(model(pairs)[0]).argmax(-1)
    assert np.mean(predicted[:, 1] == answers) == 1.0


class WritesItsAnswers(keras.layers.Layer):
    """A layer that, in its call while training, writes the answers into its own weights
    instead of learning them: the learner a `train_model` could hide in a model."""

    def __init__(self, code, **kwargs):
        super().__init__(**kwargs)
        self.code = code

    def build(self, shape):
        self.table = self.add_weight(shape=(VOCABULARY, VOCABULARY), initializer="zeros")

    def call(self, tokens, training=False):
        if training:
            self.table.assign(10.0 * np.eye(VOCABULARY, dtype="float32")[self.code])
        return keras.ops.take(self.table, tokens, axis=0)


def test_a_layer_that_writes_its_own_weights_in_its_call_gains_nothing():
    """The training's state is the grader's: what a call assigns to the model's weights is
    not kept. With a learning rate too small to learn, the model stays at chance."""
    inputs, answers, code = _task()

    def made():
        keras.utils.set_random_seed(0)
        tokens = keras.Input((1,), dtype="int32")
        probabilities = keras.layers.Softmax()(WritesItsAnswers(code)(tokens)[:, 0])
        return keras.Model(tokens, [probabilities, probabilities])

    # Keras's own fit keeps what the call wrote: the model answers everything.
    fitted = made()
    fitted.compile("sgd", ["sparse_categorical_crossentropy", None])
    fitted.fit(inputs, [answers, answers], epochs=1, verbose=0)
    assert _accuracy(fitted, inputs, answers) == 1.0
    model = made()
    relearn.relearn(model, inputs, answers, dict(RECIPE, epochs=1, rate=1e-6), seed=0)
    assert _accuracy(model, inputs, answers) < 0.3
    assert not np.any(np.asarray(model.weights[0]) > 1)


class PushedTheWrongWay(keras.layers.Layer):
    """The answers' scores times a scale whose custom gradient pushes it down whatever the
    loss says: trained by that gradient the model answers nothing right; by the loss's own,
    everything."""

    def __init__(self, code, **kwargs):
        super().__init__(**kwargs)
        self.code = code

    def build(self, shape):
        self.scale = self.add_weight(shape=(), initializer="zeros")

    def call(self, tokens):
        import tensorflow as tf

        @tf.custom_gradient
        def pushed(scale):
            return tf.identity(scale), lambda upstream: tf.ones_like(upstream)

        table = np.eye(VOCABULARY, dtype="float32")[self.code]
        return pushed(tf.convert_to_tensor(self.scale)) * keras.ops.take(
            table, tokens[:, 0], axis=0
        )


def test_a_custom_gradient_is_not_what_the_graders_training_follows(monkeypatch):
    inputs, answers, code = _task()

    def trained():
        keras.utils.set_random_seed(0)
        tokens = keras.Input((1,), dtype="int32")
        probabilities = keras.layers.Softmax()(PushedTheWrongWay(code)(tokens))
        model = keras.Model(tokens, [probabilities, probabilities])
        relearn.relearn(model, inputs, answers, dict(RECIPE, epochs=2), seed=0)
        return float(model.weights[0].numpy()), _accuracy(model, inputs, answers)

    scale, right = trained()
    assert scale > 0.3 and right == 1.0  # the loss raises the scale
    # The same training following the model's own gradient: the push lowers it.
    monkeypatch.setattr(relearn, "_true_gradients", contextlib.nullcontext)
    monkeypatch.setattr(relearn, "graph_refusals", lambda graph: [])
    scale, right = trained()
    assert scale < 0 and right == 0.0


class KeepsItsOwnState(keras.layers.Layer):
    """An embedding whose call also keeps something of its own between steps: a Python function
    (state in the process) or a variable outside the model's weights (a count)."""

    def __init__(self, how, **kwargs):
        super().__init__(**kwargs)
        self.how = how

    def build(self, shape):
        import tensorflow as tf

        self.table = self.add_weight(shape=(VOCABULARY, VOCABULARY), initializer="zeros")
        self.count = tf.Variable(0.0, trainable=False)

    def call(self, tokens):
        import tensorflow as tf

        scores = keras.ops.take(self.table, tokens[:, 0], axis=0)
        if self.how == "python":
            seen = tf.py_function(lambda x: x, [scores], tf.float32)
            return scores + 0.0 * tf.reshape(seen, tf.shape(scores))
        self.count.assign_add(1.0)
        return scores + 0.0 * self.count


@pytest.mark.parametrize(
    ("how", "said"), [("python", "a Python function"), ("variable", "keeps state of its own")]
)
def test_a_step_that_keeps_state_outside_the_graders_values_is_refused(how, said):
    inputs, answers, _code = _task()
    keras.utils.set_random_seed(0)
    tokens = keras.Input((1,), dtype="int32")
    probabilities = keras.layers.Softmax()(KeepsItsOwnState(how)(tokens))
    model = keras.Model(tokens, [probabilities, probabilities])
    with pytest.raises(relearn.RelearnError, match=said):
        relearn.relearn(model, inputs, answers, RECIPE, seed=0)
    # An honest model's step keeps nothing: every value that lasts is one the grader passes.
    relearn.relearn(_code_model(), inputs, answers, RECIPE, seed=0)


class CountsInItsCall(keras.layers.Layer):
    """Answers by a table its own calls fill while training (as BatchNormalization updates its
    statistics): a non-trainable weight that counts each token's answer, read as the scores."""

    def build(self, shape):
        self.counts = self.add_weight(
            shape=(VOCABULARY, VOCABULARY), initializer="zeros", trainable=False
        )
        self.bias = self.add_weight(shape=(VOCABULARY,), initializer="zeros")

    def call(self, pairs, training=False):
        tokens, answers = pairs[:, 0], pairs[:, 1]
        if training:
            seen = keras.ops.einsum(
                "bi,bj->ij",
                keras.ops.one_hot(tokens, VOCABULARY),
                keras.ops.one_hot(answers, VOCABULARY),
            )
            self.counts.assign(self.counts + seen)
        return 10.0 * keras.ops.take(keras.ops.sign(self.counts), tokens, axis=0) + self.bias


def test_what_a_call_writes_into_its_own_weights_while_training_is_dropped():
    """The inputs hold the answers (as teacher forcing does): a layer that counts them in its
    call would answer everything; the grader keeps only BatchNormalization's statistics and
    the seeds' states, so the counts stay empty."""
    inputs, answers, _code = _task()
    pairs = np.stack([inputs[:, 0], answers], axis=1).astype("int32")
    keras.utils.set_random_seed(0)
    given = keras.Input((2,), dtype="int32")
    probabilities = keras.layers.Softmax()(CountsInItsCall()(given))
    model = keras.Model(given, [probabilities, probabilities])
    relearn.relearn(model, pairs, answers, dict(RECIPE, epochs=1, rate=1e-6), seed=0)
    assert not np.any(model.non_trainable_weights[0].numpy())
    assert np.mean(np.asarray(model(pairs)[0]).argmax(-1) == answers) < 0.3
    # Keras's own BatchNormalization keeps its moving statistics.
    keras.utils.set_random_seed(0)
    tokens = keras.Input((1,), dtype="int32")
    hidden = keras.layers.BatchNormalization()(keras.layers.Embedding(VOCABULARY, 8)(tokens)[:, 0])
    scores = keras.layers.Dense(VOCABULARY, activation="softmax")(hidden)
    normalised = keras.Model(tokens, [scores, scores])
    relearn.relearn(normalised, inputs, answers, RECIPE, seed=0)
    moving_mean = normalised.layers[-2].moving_mean.numpy()
    assert np.any(moving_mean != 0)
    assert _accuracy(normalised, inputs, answers) == 1.0


@pytest.mark.parametrize(
    ("owner", "name"),
    [("Layer", "stateless_call"), ("Variable", "assign"), ("GradientTape", "gradient")],
)
def test_a_patched_piece_of_the_training_is_refused(monkeypatch, owner, name):
    import tensorflow as tf

    owners = {"Layer": keras.Layer, "Variable": keras.Variable, "GradientTape": tf.GradientTape}
    original = getattr(owners[owner], name)
    monkeypatch.setattr(owners[owner], name, lambda *a, **k: original(*a, **k))
    inputs, answers, _code = _task()
    with pytest.raises(relearn.RelearnError, match=name):
        relearn.relearn(_code_model(), inputs, answers, RECIPE, seed=0)


def test_a_patched_function_of_a_module_the_training_goes_through_is_refused(monkeypatch):
    """Out of the stateless scope, a weight would read its own value: what a call assigned."""
    from keras.src.backend.common import stateless_scope

    monkeypatch.setattr(stateless_scope, "in_stateless_scope", lambda: False)
    inputs, answers, _code = _task()
    with pytest.raises(relearn.RelearnError, match="in_stateless_scope"):
        relearn.relearn(_code_model(), inputs, answers, RECIPE, seed=0)


def test_a_model_without_trainable_weights_is_refused():
    inputs, answers, _code = _task()
    model = _code_model()
    for layer in model.layers:
        layer.trainable = False
    with pytest.raises(relearn.RelearnError, match="no trainable weights"):
        relearn.relearn(model, inputs, answers, RECIPE, seed=0)


class Switches(keras.layers.Layer):
    """`count` non-trainable 0-or-1 modes, built on: the hidden values pass only once every
    mode is off (a linear start's mode, its softmax put back, is one such switch)."""

    def __init__(self, count=1, **kwargs):
        super().__init__(**kwargs)
        self.count = count

    def build(self, shape):
        self.modes = [
            self.add_weight(shape=(), initializer="ones", trainable=False, name=f"mode{number}")
            for number in range(self.count)
        ]

    def call(self, hidden):
        off = 1.0
        for mode in self.modes:
            off = off * (1.0 - mode)
        return hidden * off


def _switched_model(count):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((1,), dtype="int32")
    hidden = Switches(count)(keras.layers.Embedding(VOCABULARY, 8)(inputs)[:, 0])
    probabilities = keras.layers.Dense(VOCABULARY, activation="softmax")(hidden)
    return keras.Model(inputs, [probabilities, probabilities])


@pytest.mark.parametrize("count, learns", [(1, True), (2, True), (3, False)])
def test_the_graders_training_takes_the_switches_as_the_students_training_left_them(count, learns):
    """A mode the student's training switched (0 or 1, one element, not trainable) is the
    grader's too, up to MOST_SWITCHES of them: one bit each, no room for a code or a count.
    Past that, none is taken, and a model that needs them switched learns nothing."""
    from grader.sandbox.child import MOST_SWITCHES, _all_values, _switch_as_trained

    assert MOST_SWITCHES == 2
    inputs, answers, _code = _task()
    model = _switched_model(count)
    first = _all_values(model)
    trained = [np.zeros_like(value) if value.ndim == 0 else value for value in first]
    _switch_as_trained(model, first, trained)
    relearn.relearn(model, inputs, answers, RECIPE, seed=0)
    assert (_accuracy(model, inputs, answers) == 1.0) is learns


def test_only_a_switch_from_0_to_1_or_back_is_taken_as_the_student_left_it():
    """A non-trainable value the student's training moved anywhere else (a count, a scale) is
    the grader's as built."""
    from grader.sandbox.child import _all_values, _switch_as_trained

    model = _switched_model(1)
    first = _all_values(model)
    for value in (0.5, 2.0, -1.0):
        trained = [np.full_like(v, value) if v.ndim == 0 else v for v in first]
        _switch_as_trained(model, first, trained)
        assert [float(mode.numpy()) for mode in model.layers[2].modes] == [1.0]


# The judgement, on answers made here: truth (20,), five answer tokens 5 … 9, chance 20%.
TRUTH = np.arange(20) % 5 + 5
RIGHT, WRONG = np.eye(11)[TRUTH], np.eye(11)[np.zeros_like(TRUTH)]


def _looks(case, answers):
    """A learned gate: the "attention" answer must be the right one (a stand-in for the labs'
    attention checks, which need the labs' shapes)."""
    if np.array_equal(np.asarray(answers["attention"]), RIGHT):
        return None
    return GateFailure.unlearned("the attention looks elsewhere")


PART = Part(
    "train",
    10,
    lambda rng, hidden=False: [],
    training=Training(
        answers=lambda case: TRUTH, pass_at=0.85, gates=(Gate("looks", _looks, learned=True),)
    ),
)
CASE = Case(
    "build_model",
    TRAIN,
    "label",
    {},
    {},
    training={
        "probes": [["held_out", "model output 0", "held_out"], ["attention", "m1", "held_out"]],
        "relearn": RECIPE,
    },
)


def _judged(alone=(), trained_attention=RIGHT, **stages):
    grads = {"held_out": RIGHT, "attention": trained_attention}  # the student's trained model
    for stage, (answer, attention) in stages.items():
        grads[f"{stage}/held_out"], grads[f"{stage}/attention"] = answer, attention
    if RELEARNED in stages:
        grads[RELEARNED] = stages[RELEARNED][0]
        grads[RELEARNED_ALONE] = np.asarray(stages[RELEARNED][0])[:ALONE_ROWS]
    # Every weight moved by both trainings, as an honest model's.
    grads[RELEARN_CHANGES] = np.array([[1.0, 2.0, 1.5, 0.0], [1.0, 0.5, 0.7, 0.0]])
    grads.update(dict(alone))
    got = CaseOutput(CaseStatus.OK, output=RIGHT, grads=grads)
    with speaking("en"):
        return learned_by_gradient_descent(PART, CASE, TRUTH, got, 1.0)


HONEST = {RELEARNED: (RIGHT, RIGHT), RELEARNED_RESET: (WRONG, WRONG)}


def test_a_model_the_graders_training_teaches_passes():
    assert _judged(**HONEST, **{RELEARNED_REDRAWN: (WRONG, WRONG)}) is None


def test_a_model_the_graders_training_does_not_teach_loses_the_part():
    # 11 of 20 right is above halfway from chance (20%) to the pass mark (85%), 10 is not.
    for right_count, refused in ((10, True), (11, False)):
        partly = np.eye(11)[np.where(np.arange(20) < right_count, TRUTH, 0)]
        said = _judged(**{**HONEST, RELEARNED: (partly, RIGHT)})
        assert (said is not None) == refused
    said = _judged(**{**HONEST, RELEARNED: (WRONG, RIGHT)})
    assert "trained by the grader's own gradient descent" in said
    assert "answers only 0% of the held-out tokens right" in said


def test_an_attention_the_graders_training_does_not_teach_loses_the_part():
    """A decoy: the answers learn, the attention (fitted apart by the student) does not."""
    said = _judged(**{**HONEST, RELEARNED: (RIGHT, WRONG)})
    assert "fails the check “looks”: the attention looks elsewhere" in said
    # A gate the student's trained model fails is told by its own line, not as this one's.
    assert _judged(trained_attention=WRONG, **{**HONEST, RELEARNED: (RIGHT, WRONG)}) is None


def test_a_path_only_the_graders_training_teaches_loses_the_part():
    """A rule beside a network: the student's training writes the rule and leaves the network
    where it was; the grader's training teaches the network. Most of the grader's change then
    lies in weights the student's training never moved."""
    # The rule's weight moved by the student (2.0), the network's two not at all (0.0).
    rule_beside = np.array([[1.0, 2.0, 0.1, 0.0], [1.0, 0.0, 3.0, 0.0], [1.0, 0.0, 2.0, 0.0]])
    said = _judged(alone={RELEARN_CHANGES: rule_beside}, **HONEST)
    assert "100% of what the grader's own training changed" in said
    # A weight the student moved less but still some (5% of the grader's change) was trained.
    some = np.array([[1.0, 2.0, 0.1, 0.0], [1.0, 0.15, 3.0, 0.0], [1.0, 0.1, 2.0, 0.0]])
    assert _judged(alone={RELEARN_CHANGES: some}, **HONEST) is None
    # Not rows of four whose three norms are not negative: not read, and refused.
    said = _judged(alone={RELEARN_CHANGES: np.array([[1.0, -1.0, 1.0, 0.0]])}, **HONEST)
    assert f"no answer came back for {RELEARN_CHANGES}" in said


def test_weights_written_over_their_first_values_lose_the_part():
    """Gradient descent moves a weight from its random first value; a weight written by a rule
    or from counts replaces it. Rows: first value's norm, the student's change's, the grader's,
    and the first value's inner product with the student's change."""
    # Written over: the trained value (first + change) is orthogonal to the first one.
    written = np.array([[1.0, 1.5, 1.0, -1.0], [2.0, 2.5, 1.0, -4.0]])
    said = _judged(alone={RELEARN_CHANGES: written}, **HONEST)
    assert "keep almost nothing of the random values they started from" in said
    assert "their cosine with them is 0.00" in said
    # Moved from there, the change unrelated to the first value: kept.
    moved = np.array([[1.0, 1.5, 1.0, 0.0], [2.0, 2.5, 1.0, 0.0]])
    assert _judged(alone={RELEARN_CHANGES: moved}, **HONEST) is None
    # A weight that started at zeros says nothing either way.
    zeros = np.array([[0.0, 3.0, 1.0, 0.0]])
    assert _judged(alone={RELEARN_CHANGES: zeros}, **HONEST) is None


def test_the_cosine_kept_is_read_from_the_rows_as_numpy_computes_it():
    from grader.engine.training import first_values_kept

    rng = np.random.default_rng(3)
    firsts = [rng.standard_normal(5), rng.standard_normal((2, 3)), np.zeros(4)]
    trained = [first * 0.5 + rng.standard_normal(first.shape) for first in firsts]
    rows = [
        [np.linalg.norm(f), np.linalg.norm(t - f), 1.0, float((f * (t - f)).sum())]
        for f, t in zip(firsts, trained, strict=True)
    ]
    drawn_first = np.concatenate([f.ravel() for f in firsts[:2]])
    drawn_trained = np.concatenate([t.ravel() for t in trained[:2]])
    cosine = (
        drawn_first @ drawn_trained / np.linalg.norm(drawn_first) / np.linalg.norm(drawn_trained)
    )
    assert first_values_kept(np.array(rows)) == pytest.approx(cosine)
    assert first_values_kept(np.array([[0.0, 1.0, 1.0, 0.0]])) is None


def test_the_child_reports_each_weights_first_value_inner_product_with_the_students_change():
    from grader.sandbox.child import _all_values, _changes

    inputs, _answers, _code = _task()
    model = _code_model()
    model(inputs[:1])
    first = _all_values(model)
    rng = np.random.default_rng(4)
    student = [value + rng.standard_normal(value.shape).astype(value.dtype) for value in first]
    grader = [value * 2 for value in first]
    rows = _changes(model, first, student, grader)
    expected = [
        [
            np.linalg.norm(f.astype("float64")),
            np.linalg.norm(s.astype("float64") - f),
            np.linalg.norm(g.astype("float64") - f),
            float((f.astype("float64") * (s.astype("float64") - f)).sum()),
        ]
        for f, s, g in zip(first, student, grader, strict=True)
    ]
    np.testing.assert_allclose(rows, expected, rtol=1e-6)


def test_a_copy_that_answers_from_the_other_examples_of_its_batch_loses_the_part():
    """Asked one example at a time, a copy that counts the code across the examples of a batch
    (their inputs hold earlier answers) answers otherwise."""
    alone = RIGHT[:ALONE_ROWS].copy()
    alone[:3] = WRONG[:3]
    said = _judged(alone={RELEARNED_ALONE: alone}, **HONEST)
    assert "gives the answer it gives in the batch for only 62%" in said
    assert "gave no answer when asked one example at a time" in _judged(
        alone={RELEARNED_ALONE: None}, **HONEST
    )


@pytest.mark.parametrize(
    ("stage", "how"),
    [(RELEARNED_RESET, "put back"), (RELEARNED_REDRAWN, "moved as far in other directions")],
)
def test_what_the_graders_training_did_not_put_in_the_weights_loses_the_part(stage, how):
    said = _judged(**{**HONEST, stage: (RIGHT, WRONG)})
    assert f"with the weights that training changed {how}" in said
    said = _judged(**{**HONEST, stage: (WRONG, RIGHT)})  # the gate alone holds
    assert said is not None


def test_why_the_graders_training_failed_is_shown_on_one_line():
    got = CaseOutput(
        CaseStatus.OK,
        output=RIGHT,
        grads={RELEARN_FAILED: np.frombuffer(b"Boom: one\nTotal: 10 / 10", dtype=np.uint8)},
    )
    with speaking("en"):
        said = learned_by_gradient_descent(PART, CASE, TRUTH, got, 1.0)
    assert "could not train a fresh copy of the model" in said
    assert "\n" not in said and "Boom: one\\nTotal: 10 / 10" in said
    # Not bytes: not read.
    got.grads[RELEARN_FAILED] = np.array([1.5, 2.5])
    with speaking("en"):
        assert ": ?." in learned_by_gradient_descent(PART, CASE, TRUTH, got, 1.0)
