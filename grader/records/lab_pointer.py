"""Lab pointer: pointer scores, greedy decoding that masks chosen positions, the likelihood."""

from __future__ import annotations

import numpy as np

from grader.engine import properties as relations
from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import pointer as ref
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part, Property

# The words of this module's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(N_("every score negative"), N_("scores near 1000 (numerical stability)"))

# Batch 1 and several, M != N, d_e != d_d, and M == N with d_e == d_d (where swapped axes or
# swapped matrices run without error).
SCORES = draw.Dims(
    "B N M d_e d_d units",
    [(2, 5, 3, 4, 3, 6), (1, 1, 1, 1, 1, 2), (2, 4, 4, 5, 5, 3), (3, 6, 2, 2, 7, 4)],
    [("B N M d_e d_d units", 1, 7)],
    float32=(2, 5, 4, 3, 4, 5),
)
# Offset -3 makes every score negative.
DECODE = [
    dict(B=2, M=5, N=5),
    dict(B=1, M=1, N=1),
    dict(B=3, M=3, N=6),
    dict(B=2, M=6, N=6, offset=-3.0),
    dict(B=1, M=8, N=8),
]
LIKELIHOOD = [dict(B=2, M=5, N=5), dict(B=1, M=1, N=1), dict(B=3, M=3, N=6), dict(B=1, M=7, N=7)]
NEGATIVE = " every score negative"
STABILITY = " scores near 1000 (numerical stability)"


def score_case(rng, dims):
    return draw.layer_case(
        "PointerScores",
        rng,
        dims,
        {"encoder_states": "B N d_e", "decoder_states": "B M d_d"},
        "B M N",
        weights={"W_1": "d_e units", "W_2": "d_d units", "v": "units"},
        fan_in=("W_1", "W_2"),
        label=draw.dims_label_merged(dims, "d_e", "d_d"),
        params={"units": dims["units"]},
    )


def _hidden(rng, low, high, count=3):
    """Fresh settings: N in [low, high), B in [1, 4), M in [1, N]."""
    for _ in range(count):
        n = int(rng.integers(low, high))
        yield dict(B=int(rng.integers(1, 4)), M=int(rng.integers(1, n + 1)), N=n)


def _scores(rng, B, M, N, offset=0.0):
    """Scores with a strong preference per position, so that an unmasked argmax repeats."""
    favourite = 2.0 * rng.standard_normal((B, 1, N))
    return rng.standard_normal((B, M, N)) + favourite + offset


def decode_case(rng, B, M, N, offset=0.0):
    label = draw.dims_label(B=B, M=M, N=N) + (NEGATIVE if offset < 0 else "")
    return Case("greedy_decode", FUNCTION, label, {"scores": _scores(rng, B, M, N, offset)})


def likelihood_case(rng, B, M, N, large=False):
    targets = np.stack([rng.permutation(N)[:M] for _ in range(B)]).astype(np.int64)
    scores = _scores(rng, B, M, N)
    # Rows ±1000 (draw.large_scores): a maximum over all rows, not per row, fails them.
    scores, note = (draw.large_scores(rng, scores.shape), STABILITY) if large else (scores, "")
    label = draw.dims_label(B=B, M=M, N=N) + note
    return Case("sequence_log_likelihood", FUNCTION, label, {"scores": scores, "targets": targets})


NEVER_POSITIVE = Property(
    "a log-probability is never positive", on.check_of(ref.positive_log_likelihood)
)


def decode_cases(rng, hidden=False):
    settings = [*_hidden(rng, 2, 10), dict(B=2, M=5, N=5, offset=-3.0)] if hidden else DECODE
    return [decode_case(rng, **setting) for setting in settings]


def likelihood_cases(rng, hidden=False):
    settings = [*(_hidden(rng, 1, 9) if hidden else LIKELIHOOD), dict(B=2, M=4, N=6, large=True)]
    return [likelihood_case(rng, **setting) for setting in settings]


RECORD = Exercise(
    id="pointer",
    title="Lab: Pointer networks, scores over input positions and greedy decoding",
    file="lab_pointer.py",
    section="NNDL 8.2.1.5, (8.12)-(8.15)",
    timeout=15.0,
    summary=(
        "Write the pointer scores u_j = vᵀ tanh(W_1 e_j + W_2 d) over the input positions as "
        "a Keras layer, greedy decoding that never points at a position twice (so that a "
        "sorting network outputs a permutation), and the log-likelihood of a target sequence "
        "of positions by the chain rule, with the earlier targets masked."
    ),
    parts=(
        Part(
            "PointerScores",
            4,
            SCORES.cases(score_case),
            relations=(relations.batch_alone(),),
            properties=(relations.gradients_sane(),),
            description="PointerScores.call: u = vᵀ tanh(W_1 e_j + W_2 d_m), (B, M, N).",
            mistakes=(
                Mistake.of(
                    "tanh missing",
                    "The scores are vᵀ(W_1 e_j + W_2 d_m) without the tanh: the part that "
                    "depends on d_m is then the same for every position j, and the pointer "
                    "could not depend on the decoder state.",
                    ref.pointer_scores,
                    tanh=False,
                ),
                Mistake.of(
                    "probabilities instead of scores",
                    "These are softmax probabilities: PointerScores returns the raw scores u "
                    "(logits); the softmax (and its masking) comes later.",
                    ref.pointer_scores,
                    probabilities=True,
                ),
                Mistake.of(
                    "W_1 and W_2 swapped",
                    "The projections are swapped: W_1 projects the encoder states e_j (the "
                    "inputs pointed at), W_2 the decoder states d_m.",
                    ref.pointer_scores,
                    swap_projections=True,
                    when=on.same_size("W_1", "W_2", axis=0),
                ),
                Mistake.of(
                    "steps and positions swapped",
                    "The result is u[b, j, m]: rows must be the output steps m and columns the "
                    "input positions j, so broadcast as (B, M, 1, units) + (B, 1, N, units).",
                    ref.pointer_scores,
                    steps_first=False,
                    when=on.same_size("encoder_states", "decoder_states", axis=1),
                ),
            ),
        ),
        Part(
            "greedy_decode",
            4,
            decode_cases,
            relations=(relations.batch_alone(),),
            description=(
                "greedy_decode: argmax over the positions not chosen yet; each row holds "
                "distinct positions (a permutation when M = N)."
            ),
            mistakes=(
                Mistake.of(
                    "chosen positions not masked",
                    "Each step took the plain argmax of its scores, so a position can be "
                    "chosen twice: set the scores of the positions chosen at earlier steps to "
                    "-∞ before the argmax.",
                    ref.greedy_decode,
                    masked="none",
                ),
                Mistake.of(
                    "only the previous choice masked",
                    "Only the position chosen at the step just before was masked: every "
                    "position chosen at ANY earlier step must be excluded.",
                    ref.greedy_decode,
                    masked="previous",
                ),
                Mistake.of(
                    "masked with 0 instead of -∞",
                    "The chosen positions' scores were set to 0, which still beats every "
                    "negative score: mask with -∞ (or remove the positions).",
                    ref.greedy_decode,
                    fill=0.0,
                ),
                Mistake.of(
                    "indices counted from 1",
                    "The indices count from 1: positions are 0, ..., N-1.",
                    ref.greedy_decode,
                    origin=1,
                ),
            ),
            properties=(
                Property(
                    "distinct positions (a permutation when M = N)",
                    on.check_of(ref.distinct_positions),
                ),
            ),
        ),
        Part(
            "sequence_log_likelihood",
            2,
            likelihood_cases,
            relations=(relations.batch_alone(),),
            properties=(NEVER_POSITIVE,),
            description=(
                "sequence_log_likelihood: Σ_m log p(c_m | c_<m, x), earlier targets masked, "
                "stable for large scores."
            ),
            mistakes=(
                Mistake.of(
                    "earlier targets not masked",
                    "Each step's softmax ran over all N positions: the positions already "
                    "chosen at earlier steps (c_1, ..., c_{m-1}) must be excluded, as in "
                    "decoding.",
                    ref.sequence_log_likelihood,
                    mask=False,
                ),
                Mistake.of(
                    "only the previous target masked",
                    "Each step's softmax excluded only the position chosen at the step just "
                    "before: every earlier target c_1, ..., c_{m-1} must be excluded (positions "
                    "chosen two or more steps back came back into the denominator).",
                    ref.sequence_log_likelihood,
                    when=on.given(ref.three_steps),
                    mask="previous",
                ),
                Mistake.of(
                    "probability instead of log",
                    "This is the probability p(c_1, ..., c_M | x) itself: return its "
                    "logarithm, the sum of the log-probabilities of the steps.",
                    ref.sequence_log_likelihood,
                    log=False,
                ),
                Mistake.of(
                    "mean instead of sum",
                    "The log-probabilities of the steps were averaged: the chain rule "
                    "multiplies the probabilities, so their logarithms add up.",
                    ref.sequence_log_likelihood,
                    reduce="mean",
                ),
                Mistake.scaled(
                    "sign flipped",
                    "This is the negative log-likelihood (the training loss): return "
                    "log p, which is <= 0.",
                    ref.sequence_log_likelihood,
                    -1,
                ),
            ),
        ),
    ),
)
