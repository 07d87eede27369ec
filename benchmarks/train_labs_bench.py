"""The reference solution of each lab that trains a model, over many seeds: how often it passes,
and how much CPU it takes per seed.

    python benchmarks/train_labs_bench.py [--seeds 50] [--lab train-transformer] [--quick]

Each seed is graded as the grader grades it, in this process instead of a sandboxed child: the
record makes the case from the seed (the data, the held-out inputs and the probes), the child's
own code (grader.sandbox.child._run_training) seeds Keras, builds, trains and asks the probes,
on one TensorFlow thread as a child runs, and the engine judges the answers (accuracy and
gates). `cpu_s` is this process's CPU time for the seed (one core: issue 48 asks at most 10 s
of a reference check), the failing checks are printed for a seed that fails. `--repeat` trains
seed 0 twice and prints the largest difference between the two runs' answers (0.0: the same
verdict, bit for bit).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from grader import quiet  # noqa: E402

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
quiet.install()

import numpy as np  # noqa: E402


def load_solution(record, path=None):
    """The lab's reference solution, or the file at `path` (a student's, say)."""
    from grader.sandbox.child import load_submission

    return load_submission(str(path or KIT / "solutions" / record.file), "graded_solution")


def grade_seed(record, module, seed):
    """(passed, the failing checks' messages, cpu seconds, the answers) of one seed."""
    import keras

    from grader.engine.cases import make_cases
    from grader.engine.fresh_models import in_one_process
    from grader.engine.judging import judge_case
    from grader.engine.training import expected_output
    from grader.sandbox.child import _run_training
    from grader.vocabulary.protocol import CaseOutput
    from grader.vocabulary.status import CaseStatus

    keras.backend.clear_session()  # what earlier seeds built is gone, as in a fresh child
    failing, answers = [], {}
    start = time.process_time()
    for part in record.parts:
        if part.training is None:
            continue
        for case in make_cases(record, seed)[part.name]:
            output, answers = in_one_process(
                _run_training, module, case, str(KIT / "solutions" / record.file)
            )
            got = CaseOutput(CaseStatus.OK, output=output, grads=answers)
            checks = judge_case(part, case, expected_output(part, case), got)
            failing += [f"{check.name}: {check.message}" for check in checks if not check.passed]
    return not failing, failing, time.process_time() - start, answers


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--lab", action="append", help="a lab id (default: every training lab)")
    parser.add_argument("--quick", action="store_true", help="one seed (CI)")
    parser.add_argument("--file", help="grade this file instead of the reference (one --lab)")
    parser.add_argument("--repeat", action="store_true", help="train seed 0 twice, compare")
    parser.add_argument(
        "--keras-builds-optimizer",
        action="store_true",
        help="leave the optimizer to Keras, built inside the first tracing (before issue 48's "
        "change: the training step traced twice), to pair against",
    )
    options = parser.parse_args()
    if options.file and len(options.lab or []) != 1:
        parser.error("--file grades one lab's file: give exactly one --lab with it")
    if options.keras_builds_optimizer:
        from grader.sandbox import child

        child._build_optimizer = lambda model: None
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from grader.records import EXERCISES

    labs = options.lab or [record.id for record in EXERCISES.values() if record.trains]
    seeds = range(options.first, options.first + (1 if options.quick else options.seeds))
    print("lab seed passed cpu_s wall_s")
    for lab in labs:
        record = EXERCISES[lab]
        module = load_solution(record, options.file)
        passed, times = 0, []
        for seed in seeds:
            wall = time.perf_counter()
            ok, failing, cpu, _answers = grade_seed(record, module, seed)
            wall = time.perf_counter() - wall
            passed += ok
            times.append(cpu)
            print(f"{lab} {seed} {ok} {cpu:.1f} {wall:.1f}", flush=True)
            for message in failing:
                print("    " + message.replace("\n", " "), flush=True)
        print(
            f"{lab}: {passed}/{len(times)} seeds passed; cpu per seed: mean {np.mean(times):.1f} "
            f"s, max {np.max(times):.1f} s (one core)",
            flush=True,
        )
        if options.repeat:
            first = grade_seed(record, module, 0)[3]
            again = grade_seed(record, module, 0)[3]
            largest = max(float(np.max(np.abs(first[k] - again[k]))) for k in first)
            print(f"{lab}: seed 0 trained twice, largest difference of the answers: {largest}")


if __name__ == "__main__":
    main()
