"""Lab bahdanau: one decoder step of Bahdanau attention, its padding mask, the alignment matrix."""

from __future__ import annotations

import numpy as np

from grader.engine import properties as relations
from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.reference import seq2seq as ref
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part, Property, Recompute

# Batch 1 and several, d_s != d_h, T = 1, and d_s == d_h (where swapped projection matrices run
# without error and must be told apart by their values); one more case in float32.
DRAWS = (("B", 1, 5), ("T", 1, 9), ("d_s", 1, 7), ("d_h", 1, 7), ("units", 1, 7))
STEP = draw.Dims(
    "B T d_s d_h units",
    [(2, 5, 3, 4, 6), (1, 1, 1, 1, 1), (3, 4, 5, 5, 3), (1, 7, 2, 6, 4)],
    DRAWS,
    float32=(2, 4, 3, 5, 4),
)
PADDED = draw.Dims(
    "B T d_s d_h units",
    [(3, 6, 3, 4, 5), (2, 5, 4, 4, 3), (4, 3, 2, 5, 4)],
    (DRAWS[0], ("T", 3, 9), *DRAWS[2:]),  # at least 3 positions, to be padded
    float32=(3, 5, 4, 3, 4),
)
ALIGNED = draw.Dims(
    "B T_out T_in d_s d_h units",
    [(2, 4, 6, 3, 5, 4), (1, 1, 1, 2, 2, 3), (3, 5, 3, 4, 4, 6)],
    [("B T_out T_in d_s d_h units", 1, 7)],  # one draw of six numbers
)
WEIGHTS = {"W_s": "d_s units", "W_h": "d_h units", "v": "units"}
KERNELS = ("W_s", "W_h")  # drawn N(0, 1/d_s) and N(0, 1/d_h)


def step_case(rng, dims, padding=False):
    b, t = dims["B"], dims["T"]
    lengths = draw.padded_lengths(rng, b, t) if padding else np.full(b, float(t))
    inputs = {"previous_state": "B d_s", "encoder_states": "B T d_h", "source_lengths": lengths}
    label = draw.dims_label(**dims) + (
        f" lengths={lengths.astype(int).tolist()}" if padding else ""
    )
    fields = {"params": {"units": dims["units"]}, "label": label}
    return draw.layer_case(
        "BahdanauAttentionStep", rng, dims, inputs, "B d_h", WEIGHTS, fan_in=KERNELS, **fields
    )


def alignment_case(rng, dims):
    lengths = draw.padded_lengths(rng, dims["B"], dims["T_in"]).astype(np.int64)
    sizes = {**dims, "T_out+1": dims["T_out"] + 1}  # decoder states s_0 .. s_T_out
    shapes = {"decoder_states": "B T_out+1 d_s", "encoder_states": "B T_in d_h"}
    inputs = draw.normal(rng, sizes, KERNELS, **shapes, source_lengths=lengths, **WEIGHTS)
    return Case(
        "alignment", FUNCTION, f"{draw.dims_label(**dims)} lengths={lengths.tolist()}", inputs
    )


def padding(case) -> np.ndarray:
    """(B, T): the source positions past each sentence's length (masked for every query)."""
    steps = case.inputs["encoder_states"].shape[1]
    return np.arange(steps)[None, :] >= np.asarray(case.inputs["source_lengths"])[:, None]


# What every step must do: each example alone as in the batch; gradients finite.
STEP_RELATIONS = (relations.batch_alone(("previous_state", "encoder_states", "source_lengths")),)
PADDING_ONLY = on.given(ref.padded)  # a padding mistake, shown only where some example is padded
TANH = Mistake.of(
    "tanh missing",
    "The scores are vᵀ(W_sᵀ s + W_hᵀ h_j) without the tanh: the additive score is "
    "vᵀ tanh(W_sᵀ s + W_hᵀ h_j). Without it, the part that depends on s is the same for every "
    "j and cancels in the softmax: the query would not matter at all.",
    ref.bahdanau_context,
    tanh=None,
)
WEIGHTS_ONE = Mistake.of(
    "softmax over a size-1 axis",
    "The context is the plain SUM of the encoder states: every weight came out as 1. A softmax "
    "over an axis of size 1 does this; with scores of shape (B, 1, T) or (B, T, 1), take the "
    "softmax over the T source positions.",
    ref.bahdanau_context,
    weights="ones",
)
SWAPPED = Mistake.of(
    "W_s and W_h swapped",
    "The projections are swapped: W_s projects the decoder state s_{t-1} (the query) and W_h "
    "the encoder states h_j (the keys).",
    ref.bahdanau_context,
    when=on.same_size("W_s", "W_h", axis=0),
    **on.swapped("W_s", "W_h"),
)

RECORD = Exercise(
    id="bahdanau",
    title="Lab: Bahdanau attention, one decoder step with s_{t-1} as the query",
    file="lab_bahdanau.py",
    section="slides: Bahdanau attention; blog: Bahdanau and Luong attention",
    timeout=15.0,
    summary=(
        "Write one decoder step of Bahdanau attention: additive scores between the previous "
        "decoder state s_{t-1} and the encoder states, a softmax that ignores padded source "
        "positions, and the context vector; then the alignment matrix of a whole output "
        "sentence, where output t attends with s_{t-1}, not s_t."
    ),
    parts=(
        Part(
            name="step without padding",
            points=3,
            targets=("BahdanauAttentionStep",),
            recompute=Recompute(ref.bahdanau_context, KERNELS, lengths=("source_lengths",)),
            make_cases=STEP.cases(step_case),
            relations=(
                relations.keys_permuted(("encoder_states",)),
                *STEP_RELATIONS,
            ),
            properties=(relations.gradients_sane(),),
            description=(
                "BahdanauAttentionStep with every source position valid: additive scores, "
                "softmax, context; outputs and gradients."
            ),
            mistakes=(
                TANH,
                WEIGHTS_ONE,
                Mistake.of(
                    "softmax missing",
                    "The context is Σ_j e_j h_j with the raw scores e_j as weights: the softmax "
                    "that turns them into weights α_j (positive, summing to 1) is missing.",
                    ref.bahdanau_context,
                    weights="scores",
                ),
                SWAPPED,
            ),
        ),
        Part(
            name="step with padded sources",
            points=3,
            targets=("BahdanauAttentionStep",),
            recompute=Recompute(ref.bahdanau_context, KERNELS, lengths=("source_lengths",)),
            make_cases=PADDED.cases(step_case, padding=True),
            relations=(
                relations.masked_keys_changed(("encoder_states",), padding),
                *STEP_RELATIONS,
            ),
            properties=(relations.gradients_sane(padding, {"encoder_states": 1}),),
            description=(
                "BahdanauAttentionStep with padded sources: padded positions get zero weight; "
                "a sentence of length 1 puts all the weight on position 0."
            ),
            mistakes=(
                Mistake.of(
                    "mask forgotten",
                    "The padded source positions got weight: the softmax ran over all T "
                    "positions. Positions j >= length are padding; set their scores to a very "
                    "negative number before the softmax.",
                    ref.bahdanau_context,
                    when=PADDING_ONLY,
                    source_lengths=None,
                ),
                Mistake.of(
                    "mask off by one",
                    "The mask keeps one position too many: position j is valid when j < length "
                    "(positions count from 0), not j <= length.",
                    ref.bahdanau_context,
                    when=PADDING_ONLY,
                    extra=1,
                ),
                Mistake.of(
                    "masked after the softmax",
                    "The padded positions were zeroed AFTER the softmax, so the remaining weights "
                    "no longer sum to 1. Mask the scores before the softmax (or renormalise).",
                    ref.bahdanau_context,
                    when=PADDING_ONLY,
                    masking="after",
                ),
                TANH,
                WEIGHTS_ONE,
                SWAPPED,
            ),
        ),
        Part(
            name="alignment",
            points=3,
            make_cases=ALIGNED.cases(alignment_case),
            relations=(
                relations.masked_keys_changed(("encoder_states",), padding, axis=1),
                relations.batch_alone(("decoder_states", "encoder_states", "source_lengths")),
            ),
            description=(
                "alignment: the weights of every output step, each computed with the previous "
                "decoder state s_{t-1}; rows are distributions over the valid positions."
            ),
            mistakes=(
                Mistake.of(
                    "s_t instead of s_{t-1}",
                    "Output t attended with s_t, the state it is about to produce: Bahdanau "
                    "attention uses the PREVIOUS state s_{t-1} (decoder_states[:, :-1]); using "
                    "the current state is Luong's choice.",
                    ref.bahdanau_alignment,
                    offset=1,
                ),
                Mistake.of(
                    "mask forgotten",
                    "Padded source positions got weight: mask the positions j >= length before "
                    "the softmax.",
                    ref.bahdanau_alignment,
                    source_lengths=None,
                ),
                Mistake.of(
                    "softmax over the output steps",
                    "The softmax normalised over the output steps (axis 1): each output step's "
                    "weights must be a distribution over the SOURCE positions (the last axis).",
                    ref.bahdanau_alignment,
                    axis=1,
                    masking="fill only",
                ),
                Mistake.of(
                    "scores instead of weights",
                    "These are the raw scores e_tj: the (masked) softmax is missing.",
                    ref.bahdanau_alignment,
                    normalised=False,
                ),
            ),
            properties=(
                Property(
                    "rows are distributions over the valid positions",
                    on.check_of(ref.rows_are_distributions),
                ),
            ),
        ),
    ),
)
