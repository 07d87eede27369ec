"""The child side: load one submitted file, run check cases through it, write plain arrays.

This module runs inside a process forked for one unit: the parts of one submitted exercise, run
one after another (see grader.sandbox.scheduler). It never decides whether anything is right: it
only records what the submitted code returned (outputs, vector–Jacobian products, dtypes) or how
it failed, one bundle per part as soon as that part is done, and the grader compares in its own
process. It imports Keras lazily so that the grader's own process can import this module without
TensorFlow.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import sys
import traceback
from pathlib import Path

import numpy as np

from grader import sandbox
from grader.i18n import N_
from grader.sandbox import limits, relearn, shared_state, supervisor, world
from grader.sandbox.units import ready_marker, segments
from grader.vocabulary import protocol
from grader.vocabulary.bundle import cases_from_bundle, load_bundle, save_bundle
from grader.vocabulary.labels import reported_text
from grader.vocabulary.spec import (
    ALONE,
    ALONE_ROWS,
    COUNTERFACTUAL,
    FRESH,
    LAYER,
    MODEL_OUTPUT,
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
    RUN_FIT,
    RUN_FROZEN,
    RUN_LOSS,
    RUN_MOVED,
    TRAIN,
    TRAINED,
    TRAINING_MODE,
    UNTRAINED,
)
from grader.vocabulary.status import CaseStatus

# What the child reports in these words is translated where the grader shows it
# (grader.vocabulary.labels.shown_report): the child does not know the student's language.
BLOCKED_IMPORT = reported_text(
    N_("importing {module} is not allowed in a graded submission: write the code yourself")
)
NOT_A_MODULE = reported_text(N_("cannot load {path} as a Python module"))
NOT_DEFINED = reported_text(N_("{file} defines no `{name}`: keep the names of the stub"))
RETURNED_NONE = reported_text(N_("{what} returned None: did you forget a `return`?"))
NOT_NUMBERS = reported_text(N_("{what} returned {kind} (dtype {dtype}); expected numbers"))
NOT_AN_ARRAY = reported_text(
    N_(
        "{what} returned a {kind} that is no array (its items are not all of one shape); "
        "expected one array of numbers"
    )
)
NOT_ONE_TENSOR = reported_text(
    N_("{what} returned a {kind}, not a tensor: return one tensor, computed with keras.ops")
)
NO_SUCH_WEIGHT = reported_text(
    N_(
        "{layer} has no weight named {name} (its weights: {found}); keep the build() of the "
        "stub, which names it"
    )
)
WEIGHT_SHAPE = reported_text(N_("{layer}'s weight {name} has shape {shape}, expected {expected}"))
NO_BACKEND = reported_text(N_("the grader does not support the {backend} Keras backend"))
CALLED_EXIT = reported_text(N_("the code called sys.exit({code})"))
NOT_A_MODEL = reported_text(
    N_("build_model returned a {kind}, not a keras.Model: return the model itself")
)
NOT_TWO_OUTPUTS = reported_text(
    N_(
        "the model has {count} output(s): build_model must return a keras.Model with two "
        "outputs, the probabilities first and the attention weights second, as its docstring "
        "says (the grader reads them from the model itself)"
    )
)
TRAINED_ON_SHUFFLED_FAILED = reported_text(
    N_(
        "{train} raised {error} when the grader trained a fresh model on a share of the data "
        "with its answers shuffled between examples (the check that the answers come from "
        "training): train on the inputs and targets it is given, whatever they hold"
    )
)

# Captured before any submitted code runs, so that patching NumPy in a submission cannot change
# how results are written.
_asarray = np.asarray
_copy = np.array
_default_rng = np.random.default_rng
_save_bundle = save_bundle
_open, _dup2 = os.open, os.dup2
_send_event = supervisor.send_event


class SubmissionError(Exception):
    """A problem with the submission that the grader explains in plain words."""


def run_job(job: dict, end=None) -> None:
    """Entry point of a child process. `job` holds paths only (written by the grader); `end` is
    this child's end of its channel to the supervisor (grader.sandbox.supervisor).

    Every part's cases are read before any submission is imported, so that nothing it patches
    can change them. Then the child enters the sandbox the job asks for and tells the supervisor
    it has started: whatever fails before that is the grader's failure, not the submission's.
    What each import and each part print goes to that part's own log (an import to the first
    part of its module), each log under its own output cap.

    The parts may come from several files of one student (grader.sandbox.units.segments),
    each imported before its first part, the process's shared state put back before each
    import after the first (grader.sandbox.shared_state), and the supervisor told where each
    begins, so that what the sandbox refused is counted for the exercise that tried it.
    """
    parts = job["parts"]
    _isolate(job, parts[0]["log"])
    cases = []
    for part in parts:
        meta, arrays = load_bundle(part["cases"])
        cases.append(cases_from_bundle(meta["cases"], arrays))
    modules = [part.get("module", job["module"]) for part in parts]
    # Read while the child may still read what the grader can (the submission's folder may be
    # private to the grader's user): from here on, under root, it is a user of its own.
    sources = {path: _read_source(path) for path in dict.fromkeys(modules)}
    world.become_own_user(job)
    if job.get("sandbox") is not None:
        policy = dict(job["sandbox"], workdir=job["workdir"])
        policy["read"] = [
            *policy.get("read", ()),
            *dict.fromkeys(os.path.dirname(path) for path in modules),
            *(part["cases"] for part in parts),
        ]
        sandbox.enter(policy, end)
    else:
        supervisor.tell_started(end, None)
    block_imports(job.get("blocked_imports") or (), end)
    if any(_relearns(case) for part_cases in cases for case in part_cases):
        relearn.remember_machinery()  # before any submission can patch what it calls
    started = shared_state.Snapshot()
    for first, last in segments(parts, job["module"]):
        if first:
            _log_to(parts[first]["log"])
            supervisor.send_mark(end, first)
            started.restore(job["workdir"])
        path = modules[first]
        name = parts[first].get("module_name", job.get("module_name", "submission"))
        try:
            module = load_submission(path, name, sources[path])
        except BaseException as error:  # noqa: BLE001 - a submission may raise anything
            failure = describe(error, path)
            _mark(ready_marker(job, first))
            for part in parts[first:last]:
                _save_bundle(part["out"], {"import_error": failure, "cases": []}, {})
            continue
        _mark(ready_marker(job, first))
        for number in range(first, last):
            if number != first:
                _log_to(parts[number]["log"])
            results: dict = {"import_error": None, "cases": []}
            arrays: dict[str, np.ndarray] = {}
            for index, case in enumerate(cases[number]):
                results["cases"].append(_run_case(module, case, index, arrays, path))
            _save_bundle(parts[number]["out"], results, arrays)
        module = None  # its layers and arrays go with it


def _relearns(case) -> bool:
    """Whether `case` asks a fresh model and its training by the grader's own recipe."""
    plan = getattr(case, "training", None) or {}
    return plan.get("stage") == FRESH and bool(plan.get("relearn"))


def _mark(path: str) -> None:
    """Tell the scheduler the submission is imported: the first part's clock starts now."""
    os.close(_open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))


def _log_to(path: str) -> None:
    """Send stdout and stderr to `path` from now on (a fresh file, with its own output cap)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the last part's output may be past its cap
            pass
    log = _open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    _dup2(log, 1)
    _dup2(log, 2)
    os.close(log)


def _isolate(job: dict, log_path: str) -> None:
    """Own process group (so the grader can kill everything it spawns), quiet stdio, one thread."""
    try:
        os.setsid()
    except (OSError, AttributeError):  # a session already, or Windows (the tree: taskkill /T)
        pass
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _log_to(log_path)
    if job.get("workdir"):
        os.chdir(job["workdir"])
    sandboxed = job.get("sandbox") is not None
    seconds = sum(float(part["timeout"]) for part in job["parts"])
    limits.apply(job.get("limits"), world.slot_uid(job), sandboxed, seconds)
    world.unshare_world(job)  # done already in a fresh interpreter, before TensorFlow's threads
    if os.environ.get("KERAS_BACKEND", "tensorflow") == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)


class _BlockedImport(importlib.abc.MetaPathFinder):
    def __init__(self, names, end=None):
        self.names = tuple(names)
        self.end = end

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            _send_event(self.end, "import", fullname)
            raise ImportError(BLOCKED_IMPORT.format(module=repr(fullname)))
        return None


def block_imports(names, end=None) -> None:
    """Make `names` (and their submodules) unimportable for the submitted code; each attempt
    is told to the supervisor through `end`."""
    if not names:
        return
    for module in list(sys.modules):
        if module.split(".")[0] in names:
            del sys.modules[module]
    sys.meta_path.insert(0, _BlockedImport(names, end))


def _read_source(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:  # said by load_submission, as the submission's failure
        return None


def load_submission(path: str, module_name: str = "submission", source: bytes | None = None):
    """Import the submitted file as `module_name`; from `source`, its bytes read earlier, where
    given (then tracebacks still show its lines: they are put in linecache)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise SubmissionError(NOT_A_MODULE.format(path=path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    if source is None:
        spec.loader.exec_module(module)
        return module
    import linecache

    text = importlib.util.decode_source(source)
    linecache.cache[path] = (len(text), None, text.splitlines(True), path)
    exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)  # noqa: S102
    return module


def _run_case(module, case, index: int, arrays: dict, module_path: str) -> dict:
    """Run one case; its report (grader.vocabulary.protocol), its arrays put into `arrays`."""
    try:
        target = getattr(module, case.target, None)
        if target is None:
            raise SubmissionError(NOT_DEFINED.format(file=Path(module_path).name, name=case.target))
        if case.kind != TRAIN:
            _same_names_each_case()
        if case.kind == LAYER:
            output, grads, after = _run_layer(target, case)
        elif case.kind == TRAIN:
            output, grads = _run_training(module, case, module_path)
            after = {}
        else:
            output, after = _run_function(target, case)
            grads = {}
    except NotImplementedError as error:
        return protocol.failed(CaseStatus.NOT_IMPLEMENTED, describe(error, module_path))
    except BaseException as error:  # noqa: BLE001
        return protocol.failed(CaseStatus.ERROR, describe(error, module_path))
    return protocol.answered(index, output, grads, arrays, after)


def _same_names_each_case() -> None:
    """Keras names each layer and weight made after its class (`bahdanau_attention_3/kernel`),
    counting every one made before in the process. Counted afresh for each case, the names no
    longer depend on the cases before it, and TensorFlow finds a weight's handle op, which
    carries the name, in its cache: a new name cost about 0.4 ms a weight, a fifth of the layer
    cases' time. Messages then name a case's layer as the first one made (`dense`)."""
    from keras.src.utils import naming

    naming.reset_uids()


def _to_numpy(value, what: str) -> np.ndarray:
    import keras

    if value is None:
        raise SubmissionError(RETURNED_NONE.format(what=what))
    try:
        array = _asarray(keras.ops.convert_to_numpy(value))
    except Exception:
        try:
            array = _asarray(value)
        except (ValueError, TypeError):
            raise SubmissionError(
                NOT_AN_ARRAY.format(what=what, kind=type(value).__name__)
            ) from None
    if array.dtype.kind not in "biuf":
        raise SubmissionError(
            NOT_NUMBERS.format(what=what, kind=type(value).__name__, dtype=array.dtype)
        )
    return array


def _run_function(function, case) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The function's output, and each input as the call left it (copied: the grader compares
    it with what it sent, to catch a function that writes into its arguments)."""
    args = [case.inputs[name] for name in case.inputs]
    output = _to_numpy(function(*args, **case.params), f"{case.target}()")
    return output, {name: _left(arg) for name, arg in zip(case.inputs, args, strict=True)}


def _run_training(module, case, module_path: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Build and train the submission's model on the case's data, then ask it the case's probes
    (see grader.vocabulary.spec.Case.training): the first probe's answer, and every answer by
    name. Keras is seeded with the case's seed before each model is built, and TensorFlow's ops
    made deterministic, so that (on one CPU thread, as every child runs) a submission and a seed
    give the same model every time.

    Three more models answer every probe, under `<stage>/<probe>` (and the first probe under
    `<stage>` alone), to tell whether what the model answers came from its training
    (grader.engine.training judges them): `COUNTERFACTUAL`, a fresh model after training on a
    share of the data whose answers were shuffled between examples (first, so that a layer a
    submission keeps between models starts from nothing the real training gave it);
    `UNTRAINED`, the model before its training; `RESET`, the trained model with its trainable
    weights put back to what they were before the training. The trained model's weights come
    back too (`<TRAINED>/<number>`): the grader asks a model built afresh with them in another
    process (`_ask_fresh_model`, a case whose stage is `FRESH`), so that what the submission
    kept in this one (a flag, a count) cannot answer for it."""
    import keras

    plan = case.training

    def seeded():
        keras.utils.set_random_seed(int(plan["seed"]))
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            tf.config.experimental.enable_op_determinism()

    def named(name):
        function = getattr(module, name, None)
        if function is None:
            raise SubmissionError(NOT_DEFINED.format(file=Path(module_path).name, name=name))
        return function

    def built():
        model = named(plan["build"])(**case.params)
        if model is None:
            raise SubmissionError(RETURNED_NONE.format(what=f"{plan['build']}()"))
        return model

    first = plan["probes"][0][0]
    read = {}  # the model's outputs by probe source, until the model changes

    def answer_of(model, function_name, probe_source):
        if function_name.startswith(MODEL_OUTPUT):
            if probe_source not in read:
                read[probe_source] = _model_outputs(model, case.inputs[probe_source])
            return read[probe_source][int(function_name[len(MODEL_OUTPUT) :])]
        given = named(function_name)(model, _copy(case.inputs[probe_source], copy=True))
        return _to_numpy(given, f"{function_name}()")

    def probe(model, stage):
        """Every probe's answer of `model`, under `stage`'s names; the first's under `stage`."""
        read.clear()
        for answer, function_name, probe_source in plan["probes"]:
            answers[f"{stage}/{answer}"] = answer_of(model, function_name, probe_source)
        answers[stage] = answers[f"{stage}/{first}"]

    def probe_if_it_answers(model, stage):
        """`probe`, where a model that cannot answer (untrained, say) is no evidence either
        way: its stage's answers are left out."""
        try:
            probe(model, stage)
        except Exception:  # noqa: BLE001
            for name in [name for name in answers if name.split("/")[0] == stage]:
                del answers[name]

    answers = {}
    if plan.get("stage") == FRESH:
        return _ask_fresh_model(case, seeded, built, probe_if_it_answers, answers)
    seeded()
    shuffled_inputs, shuffled_targets = _answers_shuffled(case, int(plan["seed"]))
    model = built()
    try:
        with _fitting(keras, []):
            named(plan["train"])(model, shuffled_inputs, shuffled_targets)
    except (SubmissionError, NotImplementedError):
        raise
    except Exception as error:
        raise SubmissionError(
            TRAINED_ON_SHUFFLED_FAILED.format(
                error=f"{type(error).__name__}: {error}"[:500], train=plan["train"]
            )
        ) from error
    probe(model, COUNTERFACTUAL)
    del model

    seeded()
    model = built()
    probe_if_it_answers(model, UNTRAINED)  # a model that answers only once trained
    initial = _trainable_values(model)
    # Copies: what one call does to its arguments cannot change what a later call is given.
    inputs, targets = (_copy(case.inputs[name], copy=True) for name in ("inputs", "targets"))
    losses: list[float] = []
    fits: list[list[float]] = []
    given = (model, case.inputs["inputs"], case.inputs["targets"])
    with _fitting(keras, losses, fits, given):
        named(plan["train"])(model, inputs, targets)
    if losses:  # for the run's diagnosis; a loop of the submission's own records none
        answers[RUN_LOSS] = _asarray(losses[:MOST_EPOCHS], dtype="float64")
    if fits:
        answers[RUN_FIT] = _asarray(fits[:MOST_FITS], dtype="float64")
    if initial:
        still = {id(variable) for variable in getattr(model, "trainable_variables", None) or []}
        frozen = sum(id(variable) not in still for variable, _value in initial)
        answers[RUN_FROZEN] = _asarray([frozen, len(initial)], dtype="float64")
    read.clear()
    # The run's diagnosis probes too, of the trained model alone (no other stage needs them).
    for answer, function_name, probe_source in plan["probes"] + plan.get("run_probes", []):
        answers[answer] = answer_of(model, function_name, probe_source)
    trained = _all_values(model)
    moved = _relative_change(initial)
    if moved is not None:  # for the run's diagnosis: how far training moved the weights
        answers[RUN_MOVED] = _asarray([moved], dtype="float64")
    _put_back(model, initial)
    probe(model, RESET)
    del model

    # What the trained weights hold is asked of a model built afresh in another process
    # (grader.engine.fresh_models), which nothing the training left in this one can reach.
    for number, value in enumerate(trained):
        answers[f"{TRAINED}/{number:04d}"] = value
    return answers[first], answers


# The most epochs' losses reported (a training that runs longer is still diagnosed by them).
MOST_EPOCHS = 10_000


# The most `fit` calls whose arguments are reported.
MOST_FITS = 100


@contextlib.contextmanager
def _fitting(keras, losses: list, fits: list | None = None, given: tuple | None = None):
    """While in it, every `fit` of a Keras model adds the loss of each of its epochs to
    `losses` and what it was asked to `fits` (`_fit_asked`), what the run's diagnosis reads
    (grader.engine.training_run: never needed for a grade), and first builds the model's
    optimizer where the model is built and the optimizer is not: Keras builds it inside the
    first tracing of its training step, and TensorFlow then traces that step a second time,
    without creating variables (half of a small model's training on this CPU). The optimizer
    is built with the variables its first step would build it with, its slots zeros: the same
    training, bit for bit."""
    original = keras.Model.fit
    # Keras defines fit on a base of Model: put back means take ours away, not set it on Model
    # (what the grader's own training checks is unchanged, grader.sandbox.relearn).
    owned = "fit" in vars(keras.Model)
    rows: dict = {}  # the given inputs' rows, by their bytes (made at the first fit)

    def fit(self, *args, **kwargs):
        _build_optimizer(self)
        if fits is not None:
            named = dict(zip(_FIT_ARGUMENTS, args, strict=False)) | kwargs
            fits.append(_fit_asked(named) + _fit_data(self, named, given, rows))
        history = original(self, *args, **kwargs)
        try:
            losses.extend(float(value) for value in history.history.get("loss", []))
        except Exception:  # noqa: BLE001 - a history of another shape: nothing to read
            pass
        return history

    keras.Model.fit = fit
    try:
        yield
    finally:
        if owned:
            keras.Model.fit = original
        else:
            del keras.Model.fit


# Keras's `fit`, its arguments in their positional order.
_FIT_ARGUMENTS = (
    "x",
    "y",
    "batch_size",
    "epochs",
    "verbose",
    "callbacks",
    "validation_split",
    "validation_data",
    "shuffle",
    "class_weight",
    "sample_weight",
    "initial_epoch",
)


def _first_array(value):
    while isinstance(value, list | tuple) and value:
        value = value[0]
    if isinstance(value, dict) and value:
        value = next(iter(value.values()))
    return value


def _fit_asked(named: dict) -> list[float]:
    """(examples it trains on, batch size, epochs) of a call of Keras's `fit`, from its
    arguments by name as Keras reads them (the training share of `validation_split` is the
    first rows); NaN for what they do not say (a dataset, a generator)."""
    unknown = float("nan")
    try:
        rows = unknown
        shape = getattr(_first_array(named.get("x")), "shape", None)
        if shape is not None and len(shape) and shape[0] is not None:
            rows = float(int(shape[0]))
            split = float(named.get("validation_split") or 0.0)
            if named.get("validation_data") is None and 0.0 < split < 1.0:
                rows = float(int(rows * (1.0 - split)))
        batch = named.get("batch_size")
        if batch is None and rows == rows:  # arrays: Keras's default batch
            batch = 32
        epochs = float(int(named.get("epochs", 1))) - float(int(named.get("initial_epoch", 0)))
        return [rows, float(batch) if batch is not None else unknown, epochs]
    except Exception:  # noqa: BLE001 - arguments of another kind: nothing to read
        return [unknown, unknown, unknown]


# How many of a fit's examples are looked up among the inputs train_model was given.
PAIRS_LOOKED_AT = 1000


def _fit_data(model, named: dict, given: tuple | None, rows: dict) -> list[float]:
    """(whether the fitted model holds a weight of the model train_model was given, whether the
    loss is weighed with sample_weight, the share of the examples looked at whose target is the
    one given for that input) of a call of `fit`, its arguments by name; NaN where not known."""
    unknown = float("nan")
    if given is None:
        return [unknown, unknown, unknown]
    graded, inputs, targets = given
    try:
        mine = {id(variable) for variable in graded.trainable_variables}
        theirs = {id(variable) for variable in model.trainable_variables}
        shares = float(bool(mine & theirs)) if mine else unknown
    except Exception:  # noqa: BLE001
        shares = unknown
    weighed = named.get("sample_weight") is not None
    return [shares, float(weighed), _pairs_kept(named, inputs, targets, rows)]


def _pairs_kept(named: dict, inputs, targets, rows: dict) -> float:
    """The share of a fit's first examples (the training share of a validation_split) that are
    inputs train_model was given and whose target is the one given with it; NaN where its
    inputs are not among them (changed, a dataset) or its targets not of their shape."""
    try:
        x, y = _asarray(_first_array(named.get("x"))), _asarray(_first_array(named.get("y")))
        if len(x) != len(y) or not len(x):
            return float("nan")
        wanted = _asarray(targets).reshape(len(targets), -1)
        y = y.reshape(len(y), -1)
        if y.shape[1] != wanted.shape[1]:
            return float("nan")
        given_inputs = _asarray(inputs)
        if not rows:
            rows.update((row.tobytes(), index) for index, row in enumerate(given_inputs))
        looked_at = min(len(x), PAIRS_LOOKED_AT)
        found = kept = 0
        for example, row in enumerate(x[:looked_at].astype(given_inputs.dtype)):
            index = rows.get(row.tobytes())
            if index is None:
                continue
            found += 1
            kept += bool(np.array_equal(y[example].astype(float), wanted[index].astype(float)))
        if found < looked_at // 2:
            return float("nan")
        return kept / found
    except Exception:  # noqa: BLE001 - inputs of another kind: nothing to read
        return float("nan")


def _build_optimizer(model) -> None:
    """Build `model`'s compiled optimizer with its trainable variables, as its first step
    would, where the model is built, the optimizer is not and the step is Keras's own (a
    `train_step` of the submission's may apply the optimizer to other variables); else leave
    both to Keras."""
    try:
        import keras

        optimizer = getattr(model, "optimizer", None)
        if optimizer is None or getattr(optimizer, "built", True) or not model.built:
            return
        if getattr(type(model), "train_step", None) is not keras.Model.train_step:
            return
        if not all(layer.built for layer in model._flatten_layers()):
            return
        variables = list(model.trainable_weights)  # what Keras's training step applies to
        if not variables:
            return
        with keras.name_scope(optimizer.name, caller=optimizer):
            optimizer.build(variables)
        optimizer.built = True
    except Exception:  # noqa: BLE001 - anything odd: Keras builds it as it always does
        return


def _ask_fresh_model(case, seeded, built, probe_if_it_answers, answers):
    """The stages of a model built afresh, in a process of its own, from the trained model's weights
    (the case's `weights`, in the order of the model's weights; see grader.engine.fresh_models):
    first `ALONE`, the trained weights asked the first probe's first inputs one example at a
    time; `REDRAWN`, the weights that are not trainable as trained, and each trainable weight
    moved from its initial value as far as the training moved it but in another direction (the
    training's change shuffled among its elements: neither the first weights nor the trained
    ones, at the trained distance); `MOVED`, every weight of the trained model; `NUDGED`, those
    weights with a little noise (what a model computes is a smooth function of its weights: a
    rule that acts only on the exact trained values is not what training learned). The same seed
    as the trained model's: what build_model draws outside the weights (a random table made a
    constant of the graph) is drawn alike, as an honest model needs."""
    plan = case.training
    trained = [case.weights[name] for name in sorted(case.weights)]
    seeded()
    fresh = built()
    probed = case.inputs[plan["probes"][0][2]]
    _build_weights(fresh, probed)
    first = _all_values(fresh)
    # First of all in this process, with nothing asked before that a model could keep: the
    # trained weights asked one example at a time (`ALONE`).
    if _load_all(fresh, trained):
        _ask_alone(fresh, probed, answers, ALONE)
        _load_all(fresh, first)
    _redraw(fresh, trained, int(plan["seed"]))
    probe_if_it_answers(fresh, REDRAWN)
    # Without MOVED's answers (weights that cannot be moved, or a model that cannot answer with
    # them) the engine says the trained weights do not hold what the model answers.
    if _load_all(fresh, trained):
        probe_if_it_answers(fresh, MOVED)
        _nudge(fresh, int(plan["seed"]))
        probe_if_it_answers(fresh, NUDGED)
        if _load_all(fresh, trained):  # last of these: a call in training may change statistics
            _ask_in_training(fresh, probed, answers)
    if plan.get("relearn"):
        _relearn_fresh(case, seeded, built, probe_if_it_answers, answers)
    stage = next((name for name in (MOVED, REDRAWN) if name in answers), None)
    return (answers[stage] if stage else _asarray([], dtype=np.float32)), answers


def _relearn_fresh(case, seeded, built, probe_if_it_answers, answers) -> None:
    """The grader's own training (grader.sandbox.relearn) of a model built afresh with the
    case's seed, from the first weights the student's training started from: its answers
    (`RELEARNED`; its first ones asked one example at a time, `RELEARNED_ALONE`), with its
    trainable weights put back (`RELEARNED_RESET`), and with the change
    its training made shuffled among each weight's elements (`RELEARNED_REDRAWN`). Where the
    training fails, why (`RELEARN_FAILED`, one line the engine reads as text)."""
    plan = case.training
    seed = int(plan["seed"])
    probed = case.inputs[plan["probes"][0][2]]
    seeded()
    model = built()
    _build_weights(model, probed)
    initial = _trainable_values(model)
    first = _all_values(model)
    student = [case.weights[name] for name in sorted(case.weights)]
    _switch_as_trained(model, first, student)
    inputs, targets = (_copy(case.inputs[name], copy=True) for name in ("inputs", "targets"))
    try:
        relearn.relearn(model, inputs, targets, plan["relearn"], seed)
    except Exception as error:  # noqa: BLE001 - a submission's model may raise anything
        text = f"{type(error).__name__}: {error}".replace("\n", " ")[:300]
        answers[RELEARN_FAILED] = np.frombuffer(text.encode("utf-8", "replace"), dtype=np.uint8)
        return
    relearned = _all_values(model)
    changes = _changes(model, first, student, relearned)
    if changes is not None:
        answers[RELEARN_CHANGES] = changes
    probe_if_it_answers(model, RELEARNED)
    # As `ALONE`: an answer counted from the other examples of a batch changes.
    _ask_alone(model, probed, answers, RELEARNED_ALONE)
    _put_back(model, initial)
    probe_if_it_answers(model, RELEARNED_RESET)
    _redraw(model, relearned, seed)
    probe_if_it_answers(model, RELEARNED_REDRAWN)


# The most switches the grader's training takes as the student's training left them: one bit
# each, too few to carry an answer code or a count, enough for a training's modes.
MOST_SWITCHES = 2


def _switch_as_trained(model, first: list, student: list) -> None:
    """Set each switch of `model` as the student's training left it: a weight that is not
    trainable, of one element, 0 or 1 as built and the other once trained (a linear start's
    mode, put back to the softmax after its first epochs). The grader trains the model in the
    form its training ends in, from the first weights otherwise. More than MOST_SWITCHES such
    weights are no switches: then none is set (every other non-trainable value is as built)."""
    matched = _matching(model, student)
    if not matched or len(first) != len(matched):
        return
    trainable = {id(variable) for variable in getattr(model, "trainable_variables", None) or []}
    switched = []
    for (variable, trained), start in zip(matched, first, strict=True):
        if id(variable) in trainable or np.size(start) != 1 or np.size(trained) != 1:
            continue
        before, after = float(np.ravel(start)[0]), float(np.ravel(trained)[0])
        if {before, after} == {0.0, 1.0}:
            switched.append((variable, trained))
    if len(switched) <= MOST_SWITCHES:
        for variable, trained in switched:
            variable.assign(trained)


def _ask_in_training(model, probed, answers: dict) -> None:
    """`model`'s answers (model output 0) to `probed` when called as in training
    (`TRAINING_MODE`); none where it cannot answer so (no evidence either way)."""
    try:
        answers[TRAINING_MODE] = _model_outputs(model, probed, training=True)[0]
    except Exception:  # noqa: BLE001 - no answer: no evidence either way
        pass


def _ask_alone(model, probed, answers: dict, stage: str) -> None:
    """`model`'s answers (model output 0) to the first ALONE_ROWS of `probed`, each asked in a
    batch of its own, under `stage`; none where it cannot answer (the engine says so)."""
    try:
        rows = range(min(ALONE_ROWS, len(probed)))
        alone = [_model_outputs(model, probed[row : row + 1])[0] for row in rows]
        answers[stage] = _asarray(np.concatenate(alone))
    except Exception:  # noqa: BLE001 - no answer: the engine says so
        pass


def _changes(model, first: list, student: list, grader: list) -> np.ndarray | None:
    """For each trainable weight of `model`, the norms of its first value (`first`), of the
    student's training's change (`student`: the trained model's weights) and of the grader's
    (`grader`: the weights its training left), and the inner product of the first value with
    the student's change, all lists in the order of the model's weights: rows (first,
    student's, grader's, inner product); None where the lists do not match the model's
    weights."""
    weights = _weights(model)
    if not len(weights) == len(first) == len(student) == len(grader):
        return None
    trainable = {id(variable) for variable in getattr(model, "trainable_variables", None) or []}

    def norm(array) -> float:
        return float(np.sqrt((np.asarray(array, dtype="float64") ** 2).sum()))

    rows = []
    for variable, start, theirs, ours in zip(weights, first, student, grader, strict=True):
        if id(variable) not in trainable or np.shape(theirs) != start.shape:
            continue
        start64 = start.astype("float64")
        change = np.asarray(theirs, dtype="float64") - start64
        kept = float((start64 * change).sum())
        rows.append([norm(start64), norm(change), norm(ours - start64), kept])
    return _asarray(rows, dtype="float64") if rows else None


def _nudge(model, seed: int) -> None:
    """Add to each trainable floating weight noise of NUDGE times its root mean square."""
    rng = _default_rng(seed + 2)
    for variable in getattr(model, "trainable_variables", None) or []:
        value = _copy(variable.numpy(), copy=True)
        if value.dtype.kind != "f" or not value.size:
            continue
        # ndarray's own methods: a submission can patch NumPy's functions, not its types.
        scale = NUDGE * float((value.astype("float64") ** 2).mean() ** 0.5)
        noise = rng.standard_normal(value.shape) * scale
        variable.assign((value + noise).astype(value.dtype))


# How many training examples the counterfactual model is trained on: what a training costs
# beyond its steps (tracing, each epoch's overhead) does not shrink with fewer, and no honest
# model learns from shuffled answers whatever their number.
COUNTERFACTUAL_ROWS = 256


def _model_outputs(model, inputs, training: bool = False) -> list[np.ndarray]:
    """The outputs of the model `build_model` returned, for `inputs`, as plain arrays: what the
    model itself answers, whatever the submission's own functions would say of it; called as in
    training (dropout on, batch statistics) with `training`."""
    if not callable(getattr(model, "predict", None)) or not callable(model):
        raise SubmissionError(NOT_A_MODEL.format(kind=type(model).__name__))
    # The model called on the whole probe at once, as `predict` would in one batch (the labs'
    # probes are 500 rows), but eagerly: `predict` traces a function for each model and each
    # shape of probe, which cost more than the predicting (1.8 of a transformer check's 12 s).
    outputs = model(_copy(inputs, copy=True), training=training)
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if not isinstance(outputs, list | tuple) or len(outputs) < 2:
        raise SubmissionError(
            NOT_TWO_OUTPUTS.format(
                count=1 if not isinstance(outputs, list | tuple) else len(outputs)
            )
        )
    return [_to_numpy(output, "the model") for output in outputs]


def _answers_shuffled(case, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A share of the case's training data with each example's targets those of another
    example: the same inputs and the same answers, no longer belonging together, so that no
    model can learn the task from them."""
    inputs, targets = case.inputs["inputs"], case.inputs["targets"]
    count = min(len(inputs), COUNTERFACTUAL_ROWS)
    rng = _default_rng(seed)
    chosen = rng.permutation(len(inputs))[:count]
    shift = 1 + int(rng.integers(count - 1)) if count > 1 else 0
    others = chosen[np.roll(np.arange(count), shift)]
    return _copy(inputs[chosen], copy=True), _copy(targets[others], copy=True)


def _trainable_values(model) -> list:
    """The model's trainable variables and a copy of each one's value, or [] for an object
    that has none."""
    variables = getattr(model, "trainable_variables", None)
    try:
        return [(variable, _copy(variable.numpy(), copy=True)) for variable in variables or []]
    except Exception:  # noqa: BLE001 - no Keras variables: nothing to put back
        return []


def _relative_change(initial: list) -> float | None:
    """How far the training moved the trainable weights: the norm of their change over the
    norm of their first values (over every variable trainable before it); None without any."""
    change = start = 0.0
    for variable, value in initial:
        now = _asarray(variable.numpy(), dtype="float64")
        first = value.astype("float64")
        if now.shape != first.shape:
            continue
        change += float(((now - first) ** 2).sum())
        start += float((first**2).sum())
    return (change**0.5) / (start**0.5) if start > 0 else None


def _put_back(model, initial: list) -> None:
    """Give each variable of `initial` (those trainable before the training, trainable still
    or not: a layer made non-trainable by its training is put back too) the value it had; a
    trainable variable made since (a model built in its training) gets zeros, which also undoes
    whatever the training taught it."""
    before = {id(variable): value for variable, value in initial}
    for variable, value in initial:
        variable.assign(value)
    for variable in getattr(model, "trainable_variables", None) or []:
        if id(variable) not in before:
            variable.assign(np.zeros(variable.shape, variable.dtype))


def _all_values(model) -> list[np.ndarray]:
    """A copy of the value of every weight of the model (trainable or not), in its order."""
    return [_copy(variable.numpy(), copy=True) for variable in _weights(model)]


def _build_weights(model, inputs) -> None:
    """Call the model once on one example, so that weights made at the first call exist."""
    try:
        first = {k: v[:1] for k, v in inputs.items()} if isinstance(inputs, dict) else inputs[:1]
        model(first)
    except Exception:  # noqa: BLE001 - the probe that follows says what fails
        pass


def _redraw(model, trained: list[np.ndarray], seed: int) -> None:
    """Make a freshly built model the trained one with what its training learned scrambled:
    every weight that is not trainable gets its trained value (a switch or a count kept there
    is carried over), and each trainable one its initial value plus the training's change
    shuffled among its elements, so that it moves as far as the training moved it, in another
    direction. No trainable weight keeps its initial value or its trained one; nothing learned
    survives the shuffle. Without the trained values (another model): the initial values
    shuffled."""
    rng = _default_rng(seed + 1)
    trainable = {id(variable) for variable in getattr(model, "trainable_variables", None) or []}
    matched = _matching(model, trained)
    pairs = matched or [(variable, None) for variable in _weights(model)]
    for variable, value in pairs:
        if id(variable) not in trainable:
            if value is not None:
                variable.assign(value)
            continue
        start = _copy(variable.numpy(), copy=True)
        change = start if value is None else value - start
        flat = change.reshape(-1)
        moved = flat[rng.permutation(flat.size)].reshape(start.shape)
        variable.assign(moved if value is None else start + moved)


def _weights(model) -> list:
    try:
        return list(model.weights)
    except Exception:  # noqa: BLE001 - no Keras weights
        return []


def _matching(model, values: list[np.ndarray]) -> list | None:
    """The model's weights paired with `values` (another model's, in order), or None where the
    two models' weights differ in number or shape."""
    weights = _weights(model)
    if not values or len(weights) != len(values):
        return None
    if any(tuple(w.shape) != v.shape for w, v in zip(weights, values, strict=True)):
        return None
    return list(zip(weights, values, strict=True))


def _load_all(model, values: list[np.ndarray]) -> bool:
    """Give the model's weights `values` (another model's, in order); False where the two
    models' weights differ in number or shape."""
    matched = _matching(model, values)
    for variable, value in matched or []:
        variable.assign(value)
    return matched is not None


def _left(value) -> np.ndarray:
    """An argument as the call left it, as a plain array (a copy, so that nothing the
    submission still holds can change it before it is written)."""
    import keras

    return _copy(_asarray(keras.ops.convert_to_numpy(value)), copy=True)


def _run_layer(layer_class, case) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    import keras

    layer = layer_class(dtype=case.dtype, **case.params)
    inputs = [keras.ops.convert_to_tensor(x.astype(case.dtype)) for x in case.inputs.values()]
    first = [keras.ops.convert_to_tensor(x.astype(case.dtype)) for x in case.first_call.values()]
    with _filled_with_zeros(keras, case.weights):
        layer(*(first or inputs))  # builds the layer, so its weights exist
    variables = _assign_weights(layer, case)
    output, grads = vector_jacobian(layer, inputs, variables, case.upstream.astype(case.dtype))
    after = {name: _left(x) for name, x in zip(case.inputs, inputs, strict=True)}
    if not grads:  # the output has the wrong shape: no VJP to take, the grader says why
        return _to_numpy(output, f"{case.target}.call"), {}, after
    named = {f"input:{name}": g for name, g in zip(case.inputs, grads[: len(inputs)], strict=True)}
    named.update(
        {f"weight:{n}": g for n, g in zip(case.weights, grads[len(inputs) :], strict=True)}
    )
    grads = {name: _asarray(keras.ops.convert_to_numpy(g)) for name, g in named.items()}
    return _to_numpy(output, f"{case.target}.call"), grads, after


@contextlib.contextmanager
def _filled_with_zeros(keras, assigned: dict):
    """While in it, a weight a layer adds under a name and shape the case assigns afterwards
    starts as zeros instead of its initializer's draw: the draw is overwritten anyway, and its
    random ops were a twentieth of a course's CPU (a profile of `grader batch`, issue 48). Zeros,
    not the case's values, so that a value a layer derives from its initial weights at build
    time stays as wrong as a random draw left it."""
    original = keras.layers.Layer.add_weight

    def add_weight(self, *args, **kwargs):
        value = assigned.get(kwargs.get("name"))
        shape = kwargs.get("shape", args[0] if args else None)
        if value is not None and not args[1:] and _same_shape(shape, value.shape):
            kwargs["initializer"] = "zeros"
        return original(self, *args, **kwargs)

    keras.layers.Layer.add_weight = add_weight
    try:
        yield
    finally:
        keras.layers.Layer.add_weight = original


def _same_shape(shape, expected: tuple) -> bool:
    try:
        return tuple(int(size) for size in shape) == tuple(expected)
    except (TypeError, ValueError):
        return False


def _assign_weights(layer, case) -> list:
    by_name = {weight.name: weight for weight in layer.weights}
    variables = []
    for name, value in case.weights.items():
        if name not in by_name:
            found = ", ".join(repr(n) for n in by_name) or "none"
            raise SubmissionError(
                NO_SUCH_WEIGHT.format(layer=case.target, name=repr(name), found=found)
            )
        variable = by_name[name]
        if tuple(variable.shape) != value.shape:
            raise SubmissionError(
                WEIGHT_SHAPE.format(
                    layer=case.target,
                    name=repr(name),
                    shape=tuple(variable.shape),
                    expected=value.shape,
                )
            )
        variable.assign(value.astype(variable.dtype))
        variables.append(variable)
    return variables


def vector_jacobian(layer, inputs, variables, upstream):
    """The layer's output and the VJPs of `upstream` w.r.t. inputs and variables.

    A missing gradient (no path from that input to the output) comes back as zeros, which the
    grader reports as a cut gradient.
    """
    import keras

    backend = keras.backend.backend()
    what = f"{type(layer).__name__}.call"
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            tape.watch(inputs)
            output = _one_tensor(layer(*inputs), what)
        if tuple(output.shape) != upstream.shape:
            return output, []
        sources = list(inputs) + [v.value for v in variables]
        grads = tape.gradient(output, sources, output_gradients=tf.constant(upstream))
    elif backend == "jax":
        import jax

        trainable = list(layer.trainable_variables)
        positions = [next(i for i, t in enumerate(trainable) if t is v) for v in variables]
        frozen = [v.value for v in layer.non_trainable_variables]

        def forward(input_values, trainable_values):
            return layer.stateless_call(trainable_values, frozen, *input_values)[0]

        output, pullback = jax.vjp(forward, list(inputs), [v.value for v in trainable])
        output = _one_tensor(output, what)
        if tuple(output.shape) != upstream.shape:
            return output, []
        input_grads, trainable_grads = pullback(jax.numpy.asarray(upstream))
        grads = list(input_grads) + [trainable_grads[i] for i in positions]
    elif backend == "torch":
        import torch

        inputs = [x.detach().requires_grad_(True) for x in inputs]
        output = _one_tensor(layer(*inputs), what)
        if tuple(output.shape) != upstream.shape:
            return output, []
        sources = inputs + [v.value for v in variables]
        grads = torch.autograd.grad(
            output, sources, grad_outputs=torch.as_tensor(upstream), allow_unused=True
        )
    else:
        raise SubmissionError(NO_BACKEND.format(backend=repr(backend)))
    sources = list(inputs) + list(variables)
    return output, [
        keras.ops.zeros(tuple(s.shape), dtype=upstream.dtype) if g is None else g
        for s, g in zip(sources, grads, strict=True)
    ]


def _one_tensor(output, what: str):
    """`output` if it is one array-like value with a shape, else the reason it is not."""
    if output is None:
        raise SubmissionError(RETURNED_NONE.format(what=what))
    if not hasattr(output, "shape") or not hasattr(output, "dtype"):
        raise SubmissionError(NOT_ONE_TENSOR.format(what=what, kind=type(output).__name__))
    return output


def unwrap_keras_message(message: str) -> str:
    """The submission's own message, without the call report Keras wraps around it."""
    if not message.startswith("Exception encountered when calling"):
        return message
    body = message.split("\n\n", 1)[-1]
    return body.split("\n\nArguments received by", 1)[0].strip()


def _arguments(code) -> list[str]:
    """The names of a function's parameters (self left out), from its code object."""
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
    # A comprehension's hidden ".0" is no name a line can use.
    names = [str(name) for name in code.co_varnames[:count]]
    return [name for name in names if name.isidentifier() and name != "self"][:50]


def describe(error: BaseException, module_path: str) -> dict:
    """What went wrong and where in the submitted file, for the student to read; and, as a
    field of its own, the limit it ran into (grader.sandbox.limits.limit_of), if any."""
    where = ""
    # Lines are looked up for the submission's frame alone: reading the grader's own sources
    # would be refused inside the sandbox (and flagged).
    walked = list(traceback.walk_tb(error.__traceback__))
    frames = traceback.StackSummary.extract(iter(walked), lookup_lines=False)
    mine_at = [
        index
        for index, f in enumerate(frames)
        if os.path.abspath(f.filename) == os.path.abspath(module_path)
    ]
    mine = [frames[index] for index in mine_at]
    if mine:
        frame = mine[-1]
        where = f"{Path(module_path).name}, line {frame.lineno}, in {frame.name}"
        if frame.line:
            where += f": {frame.line.strip()}"
    if isinstance(error, SyntaxError) and error.lineno:
        where = f"{Path(error.filename or module_path).name}, line {error.lineno}"
    if isinstance(error, SystemExit):
        message = CALLED_EXIT.format(code=repr(error.code))
    else:
        message = unwrap_keras_message(str(error))
    described = {"exception": type(error).__name__, "message": message[:2000], "where": where}
    if mine:
        # The student's frames as data, outermost first, so that the grader can choose the one
        # where a bad value was made rather than where it was noticed (grader.vocabulary.protocol).
        described["frames"] = [
            {
                "file": Path(module_path).name,
                "line": int(f.lineno or 0),
                "function": str(f.name),
                "code": (f.line or "").strip()[:300],
                "arguments": _arguments(walked[index][0].f_code),
            }
            for f, index in list(zip(mine, mine_at, strict=True))[-protocol.MAX_FRAMES :]
        ]
    limit = limits.limit_of(error)
    return {**described, "limit": limit} if limit else described
