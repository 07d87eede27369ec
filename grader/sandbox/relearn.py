"""The grader's own training of a student's model: gradient descent it runs itself (issue 45).

A training lab credits what a model learns. A `train_model` of the student's can put anything
in the weights (counts, a closed form, a callback's or an optimizer's or a custom gradient's
doing) and a model can pass without learning. So, in the fresh model's process
(grader.engine.fresh_models), the grader also trains a model `build_model` makes afresh, from
the same first weights, by a recipe it owns (`training["relearn"]` of the case: Adam, the lab's
learning rate and epochs, the cross-entropy of the first output on the answers); what it
learns there is judged as the student's training is (grader.engine.training).

What the model computes is the student's (its call, its layers); the training is the grader's:
the weights are tensors held here and given to the model inside a `StatelessScope` (a call that
assigns a weight changes nothing, and of what a call writes into a non-trainable weight only
Keras's own BatchNormalization statistics and seed states are kept); the optimiser is a few lines
of TensorFlow here, not a Keras object a submission can replace; a `tf.custom_gradient` gives way
to TensorFlow's own gradient of what it computes (`_true_gradients`); the traced step may hold no
Python function, gradient override or op with state of its own (`graph_refusals`); and what the
loop calls is checked, before and after it runs, to be what the child had before the submission
was imported (`remember_machinery`, `machinery_changed`).

Where the training cannot run (a model that is not a Keras model, outputs that are not
probabilities, anything refused above), `relearn` raises `RelearnError` and the grader's stage
has no answers but the reason: the engine says so.
"""

from __future__ import annotations

import contextlib

import numpy as np

# Adam's constants (Kingma and Ba 2015), as Keras's defaults.
BETA_1, BETA_2, EPSILON = 0.9, 0.999, 1e-7
# A cosine decay ends at this share of the first rate (as the references' schedules).
COSINE_ALPHA = 0.05
# Probabilities are clipped here before their log, as Keras's cross-entropy does.
CLIP = 1e-7

# Attributes Python makes on a class when first read: not a patch.
LAZY = {"__annotations__"}

_machinery: dict | None = None


def _classes():
    import keras
    import tensorflow as tf

    return {
        "GradientTape": tf.GradientTape,
        "Layer": keras.Layer,
        "Model": keras.Model,
        "Operation": keras.Operation,
        "Variable": keras.Variable,
        "function": tf.function,
        "StatelessScope": keras.StatelessScope,
    }


# The modules whose functions the loop's calls go through besides the classes' own: the
# stateless scope a weight reads its value from, Keras's global state, the TensorFlow backend.
MODULES = (
    "keras.src.backend.common.stateless_scope",
    "keras.src.backend.common.global_state",
    "keras.src.backend.common.variables",
    "keras.src.backend.tensorflow.core",
    "keras.src.layers.layer",
    "keras.src.ops.operation",
)
# The TensorFlow functions the loop calls itself.
TF_FUNCTIONS = (
    "cast clip_by_value constant convert_to_tensor cos gather minimum reduce_sum size sqrt "
    "square zeros zeros_like"
).split()


def _identity(value) -> tuple:
    """A function or a class by what it is and the code it runs: replacing either shows."""
    return (id(value), id(getattr(value, "__code__", None)))


def _fingerprint() -> dict:
    """What the loop relies on: each class's own attributes (and those of its bases), the
    functions and classes of the modules it goes through, and the TensorFlow functions it
    calls, each by identity and code."""
    import sys

    import tensorflow as tf

    seen = {}
    for name, thing in _classes().items():
        if isinstance(thing, type):
            for klass in thing.__mro__:
                if klass is object:
                    continue
                for attribute, value in vars(klass).items():
                    if attribute in LAZY:
                        continue
                    seen[(klass.__module__, klass.__qualname__, attribute)] = _identity(value)
        else:
            seen[(name,)] = _identity(thing)
    for module_name in MODULES:
        module = sys.modules.get(module_name)
        for attribute, value in vars(module or object).items():
            if callable(value) and not attribute.startswith("__"):
                seen[(module_name, attribute)] = _identity(value)
    for name in TF_FUNCTIONS:
        seen[("tf", name)] = _identity(getattr(tf, name))
    seen[("tf.math", "log")] = _identity(tf.math.log)
    # The gradient TensorFlow's tape takes for each op: a submission that registers another (a
    # straight-through gradient for Relu, say) steers the grader's descent.
    for op_type, entry in _gradients().items():
        seen[("gradient", op_type)] = _identity(
            entry.get("type") if isinstance(entry, dict) else entry
        )
    return seen


def _gradients() -> dict:
    from tensorflow.python.framework import ops as tf_ops

    return dict(getattr(tf_ops._gradient_registry, "_registry", {}))  # noqa: SLF001


def remember_machinery() -> None:
    """Take the fingerprint of the training's machinery; called in the child before any
    submission is imported."""
    global _machinery
    _machinery = _fingerprint()


def remembered() -> bool:
    """Whether the fingerprint of the training's machinery was taken in this process."""
    return _machinery is not None


def _refuse_if_changed(when: str) -> None:
    """Raise where what the loop calls is no longer what the child had at its start."""
    changed = machinery_changed()
    if changed:
        raise RelearnError(
            f"what the grader's training calls was changed {when}: " + ", ".join(changed[:5])
        )


def machinery_changed() -> list[str]:
    """The attributes of the loop's machinery that differ from when the child started (a
    submission patched them), or ["not remembered"] where nothing was taken."""
    if _machinery is None:
        return ["not remembered"]
    now = _fingerprint()
    # A gradient registered since is a new op's (TensorFlow registers some as they load); one
    # of a custom gradient shows in the training's graph (`graph_refusals`).
    keys = set(_machinery) | {key for key in now if key[0] != "gradient"}
    changed = [key for key in keys if _machinery.get(key) != now.get(key)]
    return sorted(".".join(key) for key in changed)


# Ops that TensorFlow calls stateful but that keep nothing a model could learn in: the
# containers whose bodies are read too, printing and assertions, random draws.
HARMLESS_STATEFUL = frozenset(
    "While If Case StatefulPartitionedCall Print PrintV2 Assert RandomUniform RandomUniformInt "
    "RandomStandardNormal TruncatedNormal RandomShuffle Multinomial RandomGamma RandomPoisson "
    "RandomPoissonV2".split()
)
PYTHON_FUNCTIONS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})


def graph_refusals(graph_def) -> list[str]:
    """What in the graph of the grader's training step (and every function it calls) lets the
    model learn otherwise than by the grader's gradient descent: a Python function (state kept
    in the process), a custom gradient, or an op that keeps state of its own (a variable read or
    written outside the weights the grader passes in, a table). In an honest model every value
    that lasts from one step to the next is one the grader passes in and gets back."""
    from tensorflow.python.framework import op_def_registry

    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes += list(function.node_def)
    found = set()
    for node in nodes:
        if node.op in PYTHON_FUNCTIONS:
            found.add(f"a Python function in the model ({node.op}: tf.py_function, numpy_function)")
        elif "_gradient_op_type" in node.attr:
            found.add("a custom gradient (tf.custom_gradient or a gradient override)")
        elif node.op not in HARMLESS_STATEFUL:
            definition = op_def_registry.get(node.op)
            if definition is not None and definition.is_stateful:
                found.add(f"an op that keeps state of its own ({node.op})")
    return sorted(found)


@contextlib.contextmanager
def _true_gradients():
    """While in it, a function made with `tf.custom_gradient` runs as it computes, and its
    gradient is TensorFlow's own of what it computes: the gradient function a model gives is
    never called. So the grader's descent follows the loss, not a pull the model chose (toward
    weights it counted, or a push of its own); an honest clipping of gradients only goes."""
    from tensorflow.python.ops import custom_gradient

    def computed(function, args, kwargs):
        result, _gradient = function(*args, **kwargs)
        return result

    saved = custom_gradient._graph_mode_decorator, custom_gradient._eager_mode_decorator  # noqa: SLF001
    custom_gradient._graph_mode_decorator = custom_gradient._eager_mode_decorator = computed  # noqa: SLF001
    try:
        yield
    finally:
        custom_gradient._graph_mode_decorator, custom_gradient._eager_mode_decorator = saved  # noqa: SLF001


class RelearnError(Exception):
    """The grader's training could not run on this model; the message says why."""


def attempts(recipe: dict) -> list[dict]:
    """The recipes the grader tries, in order: the lab's, then (where the first leaves the
    training rows' answers below the recipe's "retry_below") a gentler one: a third of the
    rate, reached by a warm-up over the first epoch, and half as many epochs again; the
    schedule a model without normalisation, or deeper than the reference, needs."""
    gentler = dict(
        recipe,
        rate=float(recipe["rate"]) * GENTLER_RATE,
        epochs=-(-int(recipe["epochs"]) * 3 // 2),
        cosine=True,
        warmup_epochs=1,
    )
    return [recipe, gentler]


# The gentler recipe's share of the lab's learning rate.
GENTLER_RATE = 0.3
# The most training rows the child scores an attempt on (to choose whether to try again).
SCORED_ROWS = 1000


def relearn(model, inputs: np.ndarray, targets: np.ndarray, recipe: dict, seed: int) -> None:
    """Train `model` (built, its weights made) on (`inputs`, `targets`) by the grader's own
    Adam, per `recipe` (`_train`); where that leaves the answers of the training rows below
    the recipe's "retry_below", train it again from the same first weights by the gentler
    recipe (`attempts`), and keep the attempt that answers more of them."""
    import keras

    _refuse_if_changed("by the submission")
    if not isinstance(model, keras.Model):
        raise RelearnError(f"build_model returned a {type(model).__name__}, not a keras.Model")
    trainable = list(model.trainable_variables)
    non_trainable = list(model.non_trainable_variables)
    if not trainable:
        raise RelearnError("the model has no trainable weights")
    weights = np.ones(targets.shape, dtype="float32")
    if recipe.get("answers_from") is not None and targets.ndim > 1:
        weights[:, : int(recipe["answers_from"])] = 0.0
    start = ([variable.value for variable in trainable], [v.value for v in non_trainable])
    seeds = _seed_states(model)
    kept = _kept_updates(model, non_trainable, seeds)
    best = None
    for attempt in attempts(recipe):
        with _true_gradients():
            state = _train(
                model,
                (trainable, non_trainable, kept),
                start,
                inputs,
                targets,
                weights,
                attempt,
                seed,
            )
        if state is None:
            continue
        scored = _training_accuracy(
            model, trainable, non_trainable, state, inputs, targets, weights
        )
        if best is None or scored > best[0]:
            best = (scored, state)
        if scored >= float(recipe.get("retry_below", 0.0)):
            break
    _refuse_if_changed("while it trained")  # a patch the model's own calls made
    if best is None:
        raise RelearnError("the loss became NaN or infinite")
    values, others = best[1]
    for variable, value in zip(trainable, values, strict=True):
        variable.assign(value)
    for variable, value, first in zip(non_trainable, others, start[1], strict=True):
        # A random seed goes back to where it was built: it only drew the training's noise.
        variable.assign(first if id(variable) in seeds else value)


def _seed_states(model) -> set[int]:
    """The ids of the states of the model's random seed generators, Keras's own class."""
    import keras

    found = set()
    for layer in model._flatten_layers(include_self=True, recursive=True):  # noqa: SLF001
        for generator in getattr(layer, "_seed_generators", []):
            if type(generator) is keras.random.SeedGenerator:
                found.add(id(generator.state))
    return found


def _kept_updates(model, non_trainable, seeds: set[int]) -> list[bool]:
    """For each non-trainable weight, whether what the model's calls write into it during the
    grader's training is kept: the moving statistics of Keras's own BatchNormalization (of that
    very class) and the states of its seed generators (`seeds`); nothing else."""
    import keras

    statistics = set()
    for layer in model._flatten_layers(include_self=True, recursive=True):  # noqa: SLF001
        if type(layer) is keras.layers.BatchNormalization:
            statistics |= {id(variable) for variable in layer.non_trainable_variables}
    allowed = statistics | seeds
    return [id(variable) in allowed for variable in non_trainable]


def _first_output(outputs):
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if isinstance(outputs, list | tuple):
        outputs = outputs[0]
    return outputs


def _called(model, trainable, non_trainable, values, others, x, training):
    """The model's first output for `x` with the given weights, and its non-trainable weights
    after the call: the call made through Keras's own `__call__` (which passes `training` only
    to a call that takes it), inside a scope in which every weight reads the value given here
    and a call that assigns one changes nothing outside it."""
    import keras

    mapping = list(zip(trainable, values, strict=True)) + list(
        zip(non_trainable, others, strict=True)
    )
    with keras.StatelessScope(state_mapping=mapping) as scope:
        outputs = model(x, training=training)
    others = [scope.get_current_value(variable) for variable in non_trainable]
    return _first_output(outputs), others


def _training_accuracy(model, trainable, non_trainable, state, inputs, targets, weights):
    """The share of the weighed targets of the first training rows the trained state answers."""
    rows = slice(0, SCORED_ROWS)
    probabilities, _others = _called(
        model, trainable, non_trainable, *state, inputs[rows], training=False
    )
    predicted = np.asarray(probabilities).argmax(-1)
    if predicted.shape != targets[rows].shape:
        raise RelearnError(
            f"the model's first output has shape {tuple(np.shape(probabilities))}, not the "
            f"targets' {targets[rows].shape} with the vocabulary last"
        )
    counted = weights[rows] > 0
    return float(np.mean(predicted[counted] == targets[rows][counted])) if counted.any() else 0.0


def _train(model, variables, start, inputs, targets, weights, recipe, seed):
    """(trainable values, non-trainable values) after the grader's Adam from `start`, per
    `recipe`: "epochs", "batch_size", "rate", "cosine" (a cosine decay over the whole run),
    "warmup_epochs" (a linear warm-up first); None where the loss diverged. `variables`: the
    model's trainable and non-trainable weights, and for each of the latter whether what a call
    writes into it is kept (`_kept_updates`). The batches are drawn from `seed`; the last one
    is filled up with rows of weight zero, so that every step has the same shape (one trace)."""
    import tensorflow as tf

    trainable, non_trainable, kept = variables

    count = len(inputs)
    batch = int(recipe["batch_size"])
    steps_per_epoch = -(-count // batch)
    total = int(recipe["epochs"]) * steps_per_epoch
    warmup = int(recipe.get("warmup_epochs", 0)) * steps_per_epoch
    rate, cosine = float(recipe["rate"]), bool(recipe.get("cosine"))

    def loss_of(values, others, x, y, w):
        probabilities, others = _called(model, trainable, non_trainable, values, others, x, True)
        picked = tf.gather(tf.cast(probabilities, "float32"), y, batch_dims=len(y.shape))
        losses = -tf.math.log(tf.clip_by_value(picked, CLIP, 1.0))
        return tf.reduce_sum(losses * w) / tf.cast(tf.size(w), "float32"), others

    def rate_at(number):
        step = tf.cast(number, "float32")
        now = tf.constant(rate)
        if cosine:
            progress = tf.clip_by_value((step - warmup) / max(total - warmup, 1), 0.0, 1.0)
            now = rate * (COSINE_ALPHA + (1 - COSINE_ALPHA) * 0.5 * (1 + tf.cos(np.pi * progress)))
        if warmup:
            now = now * tf.minimum((step + 1) / warmup, 1.0)
        return now

    def step(values, others, firsts, seconds, number, x, y, w):
        with tf.GradientTape() as tape:
            tape.watch(values)
            loss, updated = loss_of(values, others, x, y, w)
        # Only Keras's own statistics and seeds change as the model is called; what else a call
        # writes into a weight (a count, a table) is dropped, step after step.
        others = [
            new if keep else old for new, old, keep in zip(updated, others, kept, strict=True)
        ]
        grads = tape.gradient(loss, values)
        t = tf.cast(number + 1, "float32")
        corrected = rate_at(number) * tf.sqrt(1 - BETA_2**t) / (1 - BETA_1**t)
        new_values, new_firsts, new_seconds = [], [], []
        for value, grad, first, second in zip(values, grads, firsts, seconds, strict=True):
            if grad is None:
                grad = tf.zeros_like(value)
            grad = tf.cast(tf.convert_to_tensor(grad), first.dtype)  # an embedding's: rows
            first = BETA_1 * first + (1 - BETA_1) * grad
            second = BETA_2 * second + (1 - BETA_2) * tf.square(grad)
            update = corrected * first / (tf.sqrt(second) + EPSILON)
            new_values.append(value - tf.cast(update, value.dtype))
            new_firsts.append(first)
            new_seconds.append(second)
        return new_values, others, new_firsts, new_seconds, loss

    # No autograph: it reads this file's source, which the sandbox does not let the child read.
    traced = tf.function(step, reduce_retracing=True, autograph=False)
    values = [tf.convert_to_tensor(value) for value in start[0]]
    others = [tf.convert_to_tensor(value) for value in start[1]]
    firsts = [tf.zeros(value.shape, "float32") for value in values]
    seconds = [tf.zeros(value.shape, "float32") for value in values]
    rng = np.random.default_rng(seed)
    number, loss = 0, 0.0
    for _epoch in range(int(recipe["epochs"])):
        order = rng.permutation(count)
        padded = np.concatenate([order, order[: steps_per_epoch * batch - count]])
        for begin in range(0, len(padded), batch):
            rows = padded[begin : begin + batch]
            w = weights[rows].copy()
            if begin + batch > count:
                w[count - begin :] = 0.0
            arguments = (values, others, firsts, seconds, tf.constant(number))
            arguments += (inputs[rows], targets[rows], w)
            values, others, firsts, seconds, loss = traced(*arguments)
            if number == 0:  # traced now: what the step holds, before it trains any further
                graph = traced.get_concrete_function(*arguments).graph.as_graph_def()
                refused = graph_refusals(graph)
                if refused:
                    raise RelearnError(
                        "the model's training step holds what gradient descent does not: "
                        + "; ".join(refused)
                    )
            number += 1
    if not np.isfinite(float(loss)):
        return None  # diverged: the next attempt, if any
    return values, others
