"""Lab train-memn2n: an end-to-end memory network trained in the sandbox on generated
where-is-the-person stories (bAbI task 1's structure), graded by what it learned: held-out
accuracy, an answer that changes with the order of the facts (the temporal encoding), attention
on the supporting fact, and that the answer follows that fact."""

from __future__ import annotations

import numpy as np

from grader.engine.training import BATCH_AXIS, attention_refused
from grader.i18n import N_, _
from grader.reference import tasks
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import (
    MODEL_OUTPUT_0,
    MODEL_OUTPUT_1,
    QUERY_SHUFFLED,
    QUERY_SHUFFLED_ATTENTION,
    RUN_PROBES,
    TRAIN,
    Case,
    Exercise,
    Gate,
    GateFailure,
    Part,
    Training,
    learned_mark,
)

# The words of this record's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(
    N_("{facts} facts about {persons} persons in {places} places"),
    N_("{count} training stories"),
    N_("seed {seed}"),
)

PERSONS, PLACES, FACTS = 4, 6, 6
VOCAB_SIZE = 1 + PERSONS + PLACES
TRAIN_COUNT = 5000
HELD_OUT_COUNT = 500
# The grader's own training of the model (grader.sandbox.relearn): the reference's recipe; a
# gentler one where it leaves the training rows' answers below "retry_below".
RELEARN = {
    "epochs": 12,
    "batch_size": 64,
    "rate": 1e-2,
    "cosine": True,
    "answers_from": None,
    "retry_below": 0.95,
}
PASS_AT = 0.85
# The share of held-out stories whose largest attention weight must be on the supporting fact.
SUPPORT_AT = 0.8
# The share of stories whose answer must follow a change of the supporting fact's place.
FOLLOWS_AT = 0.8
# How far an answer may move when only the order of the facts changed and still count as the
# same (float32 rounding of sums taken in another order).
SAME_TO = 1e-5

PROBES = [
    ["held_out", MODEL_OUTPUT_0, "held_out"],
    ["moved", MODEL_OUTPUT_0, "moved"],
    ["reordered", MODEL_OUTPUT_0, "reordered"],
    ["attention", MODEL_OUTPUT_1, "held_out"],
]


def story_cases(rng, hidden=False):
    """One training case: the stories to train on, the held-out ones and their variants with the
    supporting fact's place changed and with the facts in another order, all drawn from `rng`,
    and the seed Keras is given."""
    seed = int(rng.integers(2**31))
    inputs, targets, _support = tasks.whereabouts_data(rng, TRAIN_COUNT, PERSONS, PLACES, FACTS)
    held_out = tasks.whereabouts_data(rng, HELD_OUT_COUNT, PERSONS, PLACES, FACTS)[0]
    arrays = {
        "inputs": inputs,
        "targets": targets,
        "held_out": held_out,
        "moved": tasks.moved_away(rng, held_out, PERSONS, PLACES).astype("int32"),
        "reordered": tasks.facts_reordered(rng, held_out).astype("int32"),
    }
    arrays |= tasks.run_probes(rng, inputs, held_out, slice(0, FACTS), slice(FACTS, FACTS + 1))
    # The places are the answers: the stories keep their names, the targets are in the code.
    code = tasks.answer_code(rng, VOCAB_SIZE, np.arange(PERSONS + 1, VOCAB_SIZE))
    arrays["targets"] = tasks.in_code(code, targets)
    # The facts in a secret order, the same in every story (the question stays last).
    order = tasks.position_code(rng, FACTS)
    arrays = tasks.positions_in_code(order, arrays)
    label = (
        f"{FACTS} facts about {PERSONS} persons in {PLACES} places, {TRAIN_COUNT} training "
        f"stories, seed {seed}"
    )
    plan = {
        "build": "build_model",
        "train": "train_model",
        "seed": seed,
        "probes": PROBES,
        "run_probes": RUN_PROBES
        + [
            [QUERY_SHUFFLED, MODEL_OUTPUT_0, QUERY_SHUFFLED],
            [QUERY_SHUFFLED_ATTENTION, MODEL_OUTPUT_1, QUERY_SHUFFLED],
        ],
        "relearn": RELEARN,
    }
    params = {"vocab_size": VOCAB_SIZE, "facts": FACTS}
    codes = {"answer_code": code, "position_code": order}  # the grader's, never the child's
    return [Case("build_model", TRAIN, label, arrays, params, training=plan, **codes)]


def story_answers(case):
    return _story_truth(case.inputs["held_out"])


def _story_truth(inputs):
    return tasks.whereabouts_answers(inputs)[0]


def on_the_supporting_fact(case, answers):
    count = len(case.inputs["held_out"])
    weights = answers.get("attention")
    if weights is None:
        return GateFailure.structural(_("no answer came back for {name}", name="attention"))
    weights = np.asarray(weights, dtype=float)
    if weights.ndim == 2:
        weights = weights[:, None]
    expected = _(
        "attention_weights returned shape {shape}: expected finite weights of shape "
        "{single} or {hops} (one per fact)",
        shape=np.shape(answers["attention"]),
        single=(count, FACTS),
        hops=(count, "hops", FACTS),
    )
    if weights.ndim != 3 or weights.shape[0] != count or weights.shape[-1] != FACTS:
        return GateFailure.structural(expected)
    # Weights that are not finite come from a training that diverged, which the accuracy tells.
    if not np.all(np.isfinite(weights)):
        return GateFailure.unlearned(expected)
    refused = attention_refused(weights, {0: BATCH_AXIS, 1: N_("the hops")})
    if refused is not None:
        return refused
    support = tasks.whereabouts_answers(case.inputs["held_out"])[1]
    hits = (weights.argmax(axis=-1) == support[:, None]).mean(axis=0)  # per hop
    best = int(np.argmax(hits))
    if hits[best] >= learned_mark(SUPPORT_AT):
        return None
    return GateFailure.unlearned(
        _(
            "the largest attention weight was on the supporting fact (the latest fact about the "
            "person asked) in only {hits:.0%} of the held-out stories (hop {hop}; at least "
            "{needed:.0%} needed): a memory network answers by reading that fact. Where it reads "
            "an older fact about the same person, its memories do not know the order of the facts: "
            "add a temporal encoding to them",
            hits=float(hits[best]),
            hop=best,
            needed=learned_mark(SUPPORT_AT),
        )
    )


def follows_the_fact(case, answers):
    moved = answers.get("moved")
    count = len(case.inputs["held_out"])
    if moved is None or np.shape(moved) != (count, VOCAB_SIZE):
        return GateFailure.structural(
            _(
                "predict returned shape {shape} on the changed stories: expected {expected}",
                shape=None if moved is None else np.shape(moved),
                expected=(count, VOCAB_SIZE),
            )
        )
    right = tasks.whereabouts_answers(case.inputs["moved"])[0]
    follows = float(np.mean(np.asarray(moved).argmax(axis=-1) == right))
    if follows >= learned_mark(FOLLOWS_AT):
        return None
    return GateFailure.unlearned(
        _(
            "with the place of the supporting fact changed, the answer changed with it in only "
            "{follows:.0%} of the held-out stories (at least {needed:.0%} needed): the model "
            "answers from what it remembers of the training stories, not from the story it reads",
            follows=follows,
            needed=learned_mark(FOLLOWS_AT),
        )
    )


def sees_the_order(case, answers):
    """Structural: a memory network without a temporal encoding is a function of the set of
    facts, so its answers stay the same, to rounding, whatever their order, trained or not."""
    count = len(case.inputs["held_out"])
    before, after = answers.get("held_out"), answers.get("reordered")
    moved = answers.get("moved")
    if any(found is None or np.shape(found) != (count, VOCAB_SIZE) for found in (before, after)):
        return GateFailure.structural(
            _(
                "predict returned shape {shape} on the reordered stories: expected {expected}",
                shape=None if after is None else np.shape(after),
                expected=(count, VOCAB_SIZE),
            )
        )
    rows = (
        tasks.whereabouts_answers(case.inputs["held_out"])[0]
        != (tasks.whereabouts_answers(case.inputs["reordered"])[0])
    )
    before, after = np.asarray(before, float), np.asarray(after, float)
    if not (np.all(np.isfinite(before)) and np.all(np.isfinite(after))):
        return None  # a training that diverged, which the accuracy tells
    scale = np.maximum(1.0, np.abs(before).max(axis=-1))

    def unchanged_by(other, where):
        gap = np.abs(other[where] - before[where]).max(axis=-1)
        return float(np.mean(gap <= SAME_TO * scale[where]))

    unchanged = unchanged_by(after, rows)
    if unchanged <= 0.5:
        return None
    # Answers that stay the same when the supporting fact's place changes do not read the story
    # at all, which the gate on following the fact tells.
    if np.shape(moved) == (count, VOCAB_SIZE) and (
        unchanged_by(np.asarray(moved, float), slice(None)) > 0.5
    ):
        return None
    return GateFailure.structural(
        _(
            "with the facts of a story put in another order, so that the latest fact about the "
            "person asked is another one with another place, the answer did not change (to "
            "1e-5) in {unchanged:.0%} of those held-out stories: the model reads the story as "
            "a set of facts and cannot tell which one is the latest. Add a temporal encoding "
            "to the memories: a learned vector for each fact's index, added to m_i and to c_i "
            "(Sukhbaatar 2015, §4.1)",
            unchanged=unchanged,
        )
    )


RECORD = Exercise(
    id="train-memn2n",
    title="Lab: train an end-to-end memory network on where-is stories",
    file="lab_train_memn2n.py",
    section="NNDL 8.5.1 (end-to-end memory networks); Sukhbaatar 2015 (bAbI task 1)",
    timeout=150.0,
    summary=(
        "Build an end-to-end memory network and train it to answer where a person is, from "
        "stories of people moving. The grader trains it in the sandbox on stories from its own "
        "seed and grades what it learned on held-out stories: accuracy, that its answer "
        "changes with the order of the facts, that its attention is on the supporting fact, "
        "and that the answer follows that fact."
    ),
    parts=(
        Part(
            name="train",
            points=10,
            make_cases=story_cases,
            targets=("build_model", "train_model", MODEL_OUTPUT_0, "attention_weights"),
            description="train: build_model and train_model; graded on held-out accuracy "
            f"(≥ {PASS_AT:.0%}) and three gates.",
            training=Training(
                answers=story_answers,
                pass_at=PASS_AT,
                truth=_story_truth,
                source=N_("story"),
                epochs=12,
                query=N_("question"),
                gates=(
                    Gate(
                        N_("temporal encoding: the answer changes with the order of the facts"),
                        sees_the_order,
                    ),
                    Gate(
                        N_("attention on the supporting fact"), on_the_supporting_fact, learned=True
                    ),
                    Gate(
                        N_("the answer follows the supporting fact"), follows_the_fact, learned=True
                    ),
                ),
            ),
        ),
    ),
)
