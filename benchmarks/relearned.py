"""What a training lab's file answers, trained by its own `train_model` and by the grader itself.

`python benchmarks/relearned.py LAB FILE [SEED ...]` grades FILE (a student's lab file, trusted:
it runs in this process, not in the sandbox) on the public case of each seed (0 by default) and
prints the held-out accuracy of the model its `train_model` trained, of the copy the grader
trained itself (grader.sandbox.relearn), of that copy with its change put back and shuffled, and
the judgement of the grader's copy (grader.engine.training.learned_by_gradient_descent).
"""

import argparse
import sys
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from grader import quiet  # noqa: E402

quiet.install()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lab")
    parser.add_argument("file")
    parser.add_argument("seeds", nargs="*", type=int, default=[0])
    options = parser.parse_args()
    import keras
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from grader.engine.cases import make_cases
    from grader.engine.fresh_models import in_one_process
    from grader.engine.training import (
        accuracy,
        expected_output,
        first_values_kept,
        learned_by_gradient_descent,
        plain_view,
        read_back,
    )
    from grader.i18n import speaking
    from grader.records import EXERCISES
    from grader.sandbox import relearn
    from grader.sandbox.child import _run_training, load_submission
    from grader.vocabulary.protocol import CaseOutput
    from grader.vocabulary.spec import (
        RELEARN_CHANGES,
        RELEARNED,
        RELEARNED_REDRAWN,
        RELEARNED_RESET,
        TRAINING_MODE,
    )
    from grader.vocabulary.status import CaseStatus

    relearn.remember_machinery()  # before the file is imported, as in a child
    record = EXERCISES[options.lab]
    module = load_submission(options.file, "relearned_submission")
    part = next(part for part in record.parts if part.training is not None)
    for seed in options.seeds:
        keras.backend.clear_session()
        case = make_cases(record, seed)[part.name][0]
        start = time.process_time()
        output, answers = in_one_process(_run_training, module, case, options.file)
        seconds = time.process_time() - start
        got = read_back(case, CaseOutput(CaseStatus.OK, output=output, grads=answers))
        truth = np.asarray(expected_output(part, case).output)

        def share(answer, truth=truth):
            found = accuracy(answer, truth) if answer is not None else None
            return "-" if found is None or isinstance(found, str) else f"{found:.3f}"

        stages = (RELEARNED, RELEARNED_RESET, RELEARNED_REDRAWN, TRAINING_MODE)
        line = " ".join(f"{stage} {share(got.grads.get(stage))}" for stage in stages)
        with speaking("en"):
            said = learned_by_gradient_descent(part, plain_view(case), truth, got, 1.0)
        changes = got.grads.get(RELEARN_CHANGES)
        kept = None if changes is None else first_values_kept(changes)
        kept = "-" if kept is None else f"{kept:.3f}"
        print(f"seed {seed}: trained {share(got.output)} {line} kept {kept} cpu_s {seconds:.1f}")
        print(f"    {said or 'the grader-trained copy learns: passes'}", flush=True)


if __name__ == "__main__":
    main()
