"""Looks for answers by what they do: run inside a student kit, as
`python -m grader.instructor.review.answer_probe KIT` with only KIT on the path (see
grader.instructor.course.release.answer_leaks).

It imports every Python module of the kit and calls every function and class defined there
whose signature takes a public case's arguments (a function case's inputs in order and its params
by name, or the case's arrays and params by parameter name; a Keras layer as the grader builds
it), and reports, as JSON lines on stdout, each that reproduces the expected outputs of the
public cases of some exercise target: an answer, under whatever name and in whatever file.
"""

from __future__ import annotations

import functools
import gc
import importlib
import inspect
import json
import os
import select
import signal
import sys
import time
import warnings
from pathlib import Path

import numpy as np

# One call may take this long (seconds) before it is given up: an answer takes milliseconds.
CALL_SECONDS = 5.0
# A function or class that fails on this many cases of a target before answering one is not
# probed further on it (most of the kit's functions take other arguments than arrays).
GIVE_UP_AFTER = 2
_IN_CHILD = False
# All the calls of one function or class, on every target it can take.
CANDIDATE_SECONDS = 60.0


class _TooLong(BaseException):
    pass


class _Stub(Exception):
    """A stub's body: it raises NotImplementedError whatever it is given, so it is no answer
    to any target (and trying it on the others would only build and fail more layers)."""


def _alarm(signum, frame):
    raise _TooLong


def kit_modules(kit: Path) -> list[str]:
    """The dotted names of the kit's Python modules (packages' __init__ included)."""
    names = []
    for path in sorted(kit.rglob("*.py")):
        parts = path.relative_to(kit).with_suffix("").parts
        if any(not part.isidentifier() for part in parts) or parts[-1] == "__main__":
            continue  # not importable by name, or a program that would run
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return [name for name in names if name]


def public_outputs(kit: Path) -> dict[str, list]:
    """By target: (exercise id, case, expected output) of every public case of the kit."""
    from grader.engine.references import FixtureReference
    from grader.records import EXERCISES
    from grader.vocabulary.bundle import load_bundle

    by_target: dict[str, list] = {}
    for record in EXERCISES.values():
        fixture = kit / "grader" / "fixtures" / f"{record.id}.npz"
        reference = FixtureReference(fixture)
        seed = load_bundle(fixture)[0]["seed"]
        cases, expected = reference.cases(record, seed), reference.expected(record, seed, {}, None)
        for part in record.parts:
            for case, want in zip(cases[part.name], expected[part.name], strict=True):
                if want.output is not None:
                    entry = (record.id, case, np.asarray(want.output, dtype=np.float64))
                    by_target.setdefault(case.target, []).append(entry)
    return by_target


def _arguments(function, case):
    """(args, kwargs) to call `function` with on `case`, or None where its signature cannot
    take them."""
    signature = _signature(function)
    if signature is None:
        return None
    inputs = list(case.inputs.values())
    try:
        signature.bind(*inputs, **case.params)
        return inputs, dict(case.params)
    except TypeError:
        pass
    by_name = {}
    for name, parameter in signature.parameters.items():
        for source in (case.inputs, case.weights, case.params):
            if name in source:
                by_name[name] = source[name]
                break
        else:
            if parameter.default is inspect.Parameter.empty and parameter.kind not in (
                parameter.VAR_POSITIONAL,
                parameter.VAR_KEYWORD,
            ):
                return None
    if not by_name:
        return None
    return [], by_name


@functools.cache
def _signature(function) -> inspect.Signature | None:
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


def _layout(case) -> tuple:
    """What decides whether a signature takes a case: its kind and its arguments' names."""
    return (case.kind, tuple(case.inputs), tuple(case.weights), tuple(case.params))


def takes_any(candidate, cases) -> bool:
    """Whether `candidate` can be called on one of `cases` (one case of each layout tried)."""
    layouts = {_layout(case): case for _, case, _ in cases}
    return any(callable_on(candidate, case) for case in layouts.values())


def _numbers(value) -> np.ndarray | None:
    try:
        array = np.asarray(value)
        tensor = type(value).__module__.split(".")[0] in ("tensorflow", "keras", "jax", "torch")
        if array.dtype.kind not in "biuf" and tensor:
            import keras

            array = np.asarray(keras.ops.convert_to_numpy(value))
    except Exception:  # noqa: BLE001 - not numbers: no answer
        return None
    return array.astype(np.float64) if array.dtype.kind in "biuf" and array.size else None


def output_of(candidate, case) -> np.ndarray | None:
    """What `candidate` gives on `case`, or None where it cannot be called so or fails."""
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
    try:
        if inspect.isclass(candidate) and _is_layer(candidate):
            if case.kind != "layer":
                return None
            from grader.sandbox.child import _run_layer

            return _numbers(_run_layer(candidate, case)[0])
        arguments = _arguments(candidate, case)
        if arguments is None:
            return None
        args, kwargs = arguments
        return _numbers(candidate(*args, **kwargs))
    except NotImplementedError:
        raise _Stub from None
    except BaseException:  # noqa: BLE001 - anything a called function does is its own
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _is_layer(candidate) -> bool:
    keras = sys.modules.get("keras")
    return keras is not None and issubclass(candidate, keras.layers.Layer)


def reproduces(candidate, cases) -> list[str]:
    """The exercises whose expected outputs `candidate` reproduces on every case it answers
    (at least two, or the only one), never returning one of its inputs unchanged; [] when it
    answers one wrongly, or fails on the first cases (an answer runs on its target's cases)."""
    from grader.engine.compare import matches

    hits, failures, exercises = 0, 0, set()
    for exercise, case, want in cases:
        got = output_of(candidate, case)
        if got is None:
            failures += 1
            if failures >= GIVE_UP_AFTER and not hits:
                return []  # it fails on this target's arguments: not this target's answer
            continue
        if got.shape != want.shape or not matches(want, got, case):
            return []
        if any(
            np.shape(value) == got.shape and np.array_equal(np.asarray(value, float), got)
            for value in [*case.inputs.values(), *case.weights.values()]
        ):
            continue  # an input handed back: no evidence of an answer
        hits += 1
        exercises.add(exercise)
    return sorted(exercises) if hits >= min(2, len(cases)) else []


def callable_on(candidate, case) -> bool:
    if inspect.isclass(candidate) and _is_layer(candidate):
        return case.kind == "layer"
    return _arguments(candidate, case) is not None


def probe_in_children(candidates: list, by_target: dict) -> dict[int, dict]:
    """For each (name, candidate): {target: exercises it reproduces}. The calls
    run in a forked child, which reports each candidate through a pipe as it is done: a called
    function may change the process it runs in (redirect its output, sandbox it, close its
    files, exit), never this one, and a child that stops is followed by another from the next
    candidate on."""
    found: dict[int, dict] = {}
    start = 0
    while start < len(candidates) and not _IN_CHILD:  # a probed function may be this one
        start = _probe_child(candidates, start, by_target, found) + 1
    return found


def _probe_child(candidates, start, by_target, found) -> int:
    """Probe candidates[start:] in one child; the index of the last candidate it began."""
    read_end, write_end = os.pipe()
    # TensorFlow's many objects would be copied page by page as the child's collector walks
    # them: freeze them first (a fork then costs milliseconds, not seconds).
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        global _IN_CHILD
        _IN_CHILD = True
        os.close(read_end)
        gc.disable()
        try:
            for index in range(start, len(candidates)):
                os.write(write_end, json.dumps({"begin": index}).encode() + b"\n")
                candidate = candidates[index][1]
                plan = {
                    target: cases
                    for target, cases in by_target.items()
                    if takes_any(candidate, cases)
                }
                try:
                    result = {
                        target: reproduces(candidate, cases) for target, cases in plan.items()
                    }
                except _Stub:
                    result = {}
                line = json.dumps({"index": index, "found": result}).encode() + b"\n"
                os.write(write_end, line)
        finally:
            os._exit(0)
    os.close(write_end)
    reached, buffer = start, b""
    deadline = time.monotonic() + CANDIDATE_SECONDS
    with os.fdopen(read_end, "rb") as pipe:
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([pipe], [], [], left)[0]:
                break
            chunk = os.read(pipe.fileno(), 1 << 16)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                report = json.loads(line)
                if "begin" in report:
                    reached = report["begin"]
                    deadline = time.monotonic() + CANDIDATE_SECONDS
                else:
                    found[report["index"]] = report["found"]
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    return reached


def _origin(name: str) -> Path:
    """Where module `name` was loaded from; the kit's folder for a namespace package (no
    file, no code)."""
    file = getattr(sys.modules.get(name), "__file__", None)
    return Path(file).resolve() if file else KIT_FOLDER[0]


KIT_FOLDER = [Path("/")]


def main(argv: list[str]) -> int:
    kit = Path(argv[0]).resolve()
    names = kit_modules(kit)
    packages = {name.split(".")[0] for name in names}
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, _alarm)
    KIT_FOLDER[0] = kit
    loaded = set(sys.modules)
    by_target = public_outputs(kit)
    # By folder of the kit: its functions and classes, as (file, name, candidate).
    folders: dict[Path, list] = {}
    for name in names:
        try:
            module = importlib.import_module(name)
        except BaseException as error:  # noqa: BLE001 - reported: a module not probed
            print(json.dumps({"module": name, "unimportable": f"{type(error).__name__}: {error}"}))
            loaded = set(sys.modules)
            continue
        origin = _origin(name)
        # Where the instructor's own kit is installed (editable), a module of the student kit
        # could import what the kit lacks from it, and fail on a student's machine.
        strays = [
            f"{other} from {_origin(other)}"
            for other in sorted(set(sys.modules) - loaded)
            if other.split(".")[0] in packages and not _origin(other).is_relative_to(kit)
        ]
        loaded = set(sys.modules)
        if strays or not origin.is_relative_to(kit):
            found = "it imports " + strays[0] if strays else f"imported from {origin}"
            print(json.dumps({"module": name, "unimportable": found + ", outside the kit"}))
            continue
        folders.setdefault(origin.parent, []).extend(
            (str(origin.relative_to(kit)), attribute, candidate)
            for attribute, candidate in sorted(vars(module).items())
            if (inspect.isfunction(candidate) or inspect.isclass(candidate))
            # imported from elsewhere: probed where it is defined
            and getattr(candidate, "__module__", None) == name
            and any(takes_any(candidate, cases) for cases in by_target.values())
        )
    # One child per folder: a function that harms the process it runs in (sandboxes it, limits
    # it) harms the probing of its own folder's functions at most.
    for candidates in folders.values():
        found = probe_in_children([(name, c) for _, name, c in candidates], by_target)
        for index, targets in sorted(found.items()):
            for target, exercises in targets.items():
                if exercises:
                    file, attribute, _ = candidates[index]
                    record = {"file": file, "name": attribute, "target": target}
                    print(json.dumps({**record, "exercises": exercises}), flush=True)
    print(json.dumps({"done": True}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
