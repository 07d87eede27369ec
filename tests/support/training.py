"""Answers for the labs graded by what a model learns, made here without training."""

import numpy as np

from grader.engine.training import COUNTERFACTUAL, RESET, UNTRAINED


def untrained_evidence(held_out_answer) -> dict:
    """What an honest model answers before its training, after training on shuffled answers
    and with its weights put back: the same token (0, which no answer of these labs is) for
    every input, as scores of the held-out answer's shape."""
    scores = np.zeros(np.shape(held_out_answer))
    scores[..., 0] = 1.0
    return {COUNTERFACTUAL: scores, UNTRAINED: scores, RESET: scores}


# The mistake a model gets when its answers do not come from its training, and what each of the
# three pieces of evidence says (grader.engine.training.from_training).
NOT_FROM_TRAINING = "property: the answers come from training on the grader's data"
WHEN = {
    # predict answers by rule, whatever happened: the untrained model already answers.
    "always": ("True", "pass", "the untrained model already answers"),
    # train_model leaves a mark and trains nothing: a model "trained" on anything answers.
    "once trained": (
        "getattr(model, '_taught', False)",
        "model._taught = True",
        "a fresh model trained on data whose answers were shuffled",
    ),
    # train_model looks whether the data follows the rule (a rule found, not learned): only
    # the weights put back tell, since the mark is no trainable weight.
    "rule found in the data": (
        "getattr(model, '_taught', False)",
        "model._taught = bool(_fits(inputs, targets))",
        "with its trainable weights put back",
    ),
}


def hand_built(solution: str, rule: str, when: str) -> str:
    """The solution with `predict` and `train_model` replaced by ones that answer by `rule`
    (source defining `_rule(inputs)`, scores like predict's, and `_fits(inputs, targets)`) in
    the way `when` names: a model whose answers a student computed instead of training it."""
    condition, training, _phrase = WHEN[when]
    return (
        solution
        + "\n\nimport numpy as np\n\n"
        + rule
        + f"""

_solution_predict = predict


def predict(model, inputs):
    if {condition}:
        return _rule(inputs)
    return _solution_predict(model, inputs)


def train_model(model, inputs, targets):
    {training}
"""
    )


def hand_built_table(solution: str, rule: str) -> list:
    """The planted table's rows (part, source, mistake, phrase) of every way `hand_built` has."""
    return [
        ("train", hand_built(solution, rule, when), NOT_FROM_TRAINING, phrase)
        for when, (_c, _t, phrase) in WHEN.items()
    ]
