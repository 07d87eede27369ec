"""Check cases of a record, made in the grader's process from a seed, and saved for a child."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from grader.engine.properties import add_variants
from grader.i18n import N_
from grader.vocabulary.bundle import cases_to_bundle, save_bundle
from grader.vocabulary.labels import label_text
from grader.vocabulary.spec import Case, Exercise

HIDDEN = label_text(N_("hidden"))


def make_cases(record: Exercise, seed: int, hidden_seed: int | None = None):
    """Each part's public cases from `seed`, then hidden ones from `hidden_seed` if given (a
    part that trains a model: its hidden case instead of its public one).

    Hidden cases come from the same maker asked for fresh shapes; their labels say "hidden"
    and their feedback never shows expected values.
    """
    cases = {}
    for index, part in enumerate(record.parts):
        cases[part.name] = part.make_cases(np.random.default_rng([seed, index]))
        if hidden_seed is not None:
            extra = part.make_cases(np.random.default_rng([hidden_seed, index, 1]), hidden=True)
            for case in extra:
                case.hidden = True
                case.label = f"{HIDDEN}, {case.label}"
            # A part that trains a model is graded on its hidden case alone: the public case is
            # the one `grader check` trains on the student's own machine, the hidden one asks
            # the same of fresh data under fresh secret codes, and each is a whole training
            # (most of a batch's cost for such a lab).
            cases[part.name] = extra if part.training is not None else cases[part.name] + extra
        # Variants from a generator of their own, so that no other case changes with them.
        extra_seed = [] if hidden_seed is None else [hidden_seed]
        add_variants(part, cases[part.name], np.random.default_rng([seed, index, 2, *extra_seed]))
    return cases


def save_cases(path: Path, cases: list[Case]) -> None:
    described, arrays = cases_to_bundle(cases)
    save_bundle(path, {"cases": described}, arrays)
