"""Lab masked-softmax: valid lengths and boolean masks, zero weight where masked, never NaN."""

from __future__ import annotations

from grader.engine import properties as relations
from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import attention as ref
from grader.vocabulary.labels import label_text, label_texts
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part, Property, Recompute

# The words of this module's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(N_("causal mask of shape {shape}"), N_("padding mask of shape {shape}"))
FULLY_MASKED = " " + label_text(N_("(a fully masked row)"))
# (shape of valid_lens, maxlen): (B,), (B, Tq), maxlen 1, a square one.
SEQUENCE_MASKS = [((4,), 6), ((2, 3), 5), ((3,), 1), ((5,), 5)]
# Lengths `per` example ("batch": (B,)), per query ("query": (B, Tq)) or None, the lengths
# placed `first` (0: a fully masked row), `large` scores.
# fmt: off
SOFTMAX = [dict(B=2, Tq=3, Tk=5, first=(2, 5)), dict(B=3, Tq=4, Tk=6, per="query", first=(0, 6, 1)),
           dict(B=2, Tq=2, Tk=4, first=(0, 3)), dict(B=1, Tq=1, Tk=1, first=(1,)),
           dict(B=2, Tq=3, Tk=4, per=None), dict(B=2, Tq=3, Tk=5, first=(2, 4), masked_high=True),
           dict(B=2, Tq=3, Tk=6, per="query", first=(3, 6, 0), large=True)]
FROM_MASK = [dict(B=2, Tq=4, Tk=4, kind="causal"), dict(B=3, Tq=2, Tk=5, kind="padding"),
             dict(B=2, Tq=3, Tk=6, kind="random"), dict(B=2, Tq=3, Tk=5, kind="random", large=True),
             dict(B=2, Tq=3, Tk=5, kind="padding", masked_high=True)]
POOLING = [dict(B=2, Tq=3, Tk=5, d_v=4, first=(2, 5)),
           dict(B=3, Tq=2, Tk=4, d_v=3, first=(0, 4, 1)), dict(B=1, Tq=1, Tk=1, d_v=1, first=(1,)),
           dict(B=2, Tq=4, Tk=6, d_v=2, per="query", first=(0, 6, 3)),
           dict(B=2, Tq=4, Tk=6, d_v=3, first=(0, 4), dtype="float32"),
           dict(B=2, Tq=3, Tk=5, d_v=2, first=(0, 3), large=True)]
# Hidden checks draw fresh shapes for these settings (large scores among them: rows ±1000).
PER, LARGE = [dict(per="batch"), dict(per="query")], [dict(per="query", large=True)]
KINDS = [dict(kind=k) for k in ("causal", "padding", "random")] + [dict(kind="random", large=True)]
# fmt: on


def sequence_mask_cases(rng, hidden=False):
    specs = SEQUENCE_MASKS
    if hidden:  # valid_lens (B,) or (B, Tq) with sizes in [1, 5), maxlen in [1, 8)
        ndims = (int(rng.integers(1, 3)) for _ in range(3))
        specs = [(draw.random_shapes(rng, 1, n, 1, 5)[0], int(rng.integers(1, 8))) for n in ndims]
    cases = []
    for shape, maxlen in specs:
        inputs = {"valid_lens": draw.valid_lengths(rng, shape, maxlen, (0, maxlen))}
        label = f"valid_lens of shape {shape}, maxlen={maxlen}"
        cases.append(Case("sequence_mask", FUNCTION, label, inputs, {"maxlen": maxlen}))
    return cases


def lengths(rng, B, Tq, Tk, per, first):
    """Valid lengths per example or per query (or none), and their label."""
    if per is None:
        return None, "valid_lens=None"
    valid_lens = draw.valid_lengths(rng, (B,) if per == "batch" else (B, Tq), Tk, first)
    return valid_lens, f"valid_lens of shape {valid_lens.shape}" + FULLY_MASKED * (0 in valid_lens)


def softmax_case(rng, B, Tq, Tk, per="batch", first=(0,), large=False, masked_high=False):
    scores = draw.scores(rng, (B, Tq, Tk), large)
    valid_lens, text = lengths(rng, B, Tq, Tk, per, first)
    label = draw.scores_label(dict(B=B, Tq=Tq, Tk=Tk), text, large=large)
    scores, label = draw.masked_high(scores, label, masked_high, lengths=valid_lens)
    inputs = {"scores": scores} | ({} if per is None else {"valid_lens": valid_lens})
    params = {"valid_lens": None} if per is None else {}
    return Case("masked_softmax", FUNCTION, label, inputs, params)


def mask_case(rng, B, Tq, Tk, kind, large=False, masked_high=False):
    Tk = Tq if kind == "causal" else Tk  # a causal mask is square
    mask = draw.boolean_mask(rng, kind, B, Tq, Tk)
    named = "mask" if kind == "random" else f"{kind} mask"
    text = f"{named} of shape {mask.shape}" + FULLY_MASKED * (kind == "random")
    label = draw.scores_label(dict(B=B, Tq=Tq, Tk=Tk), text, large=large)
    scores = draw.scores(rng, (B, Tq, Tk), large)
    scores, label = draw.masked_high(scores, label, masked_high, keep=mask)
    return Case("masked_softmax_from_mask", FUNCTION, label, {"scores": scores, "mask": mask})


def pooling_case(rng, B, Tq, Tk, d_v, per="batch", first=(0,), dtype="float64", large=False):
    valid_lens, text = lengths(rng, B, Tq, Tk, per, first)
    dims = dict(B=B, Tq=Tq, Tk=Tk, d_v=d_v)
    label = draw.scores_label(dims, text + f" {dtype}" * (dtype != "float64"), large=large)
    scores = draw.large_scores(rng, (B, Tq, Tk)) if large else "B Tq Tk"
    inputs = {"scores": scores, "values": "B Tk d_v", "valid_lens": valid_lens.astype(float)}
    # Lengths (B,) fit longer keys too: the layer is called on other lengths first.
    lengthless = ("valid_lens",) * (per == "batch")
    kept = dict(label=label, dtype=dtype, lengthless=lengthless)
    return draw.layer_case("MaskedAttentionPooling", rng, dims, inputs, "B Tq d_v", **kept)


masked_softmax_cases = draw.settings_cases(softmax_case, SOFTMAX, PER + PER[1:] + LARGE)
from_mask_cases = draw.settings_cases(mask_case, FROM_MASK, KINDS)
pooling_cases = draw.settings_cases(pooling_case, POOLING, PER + LARGE, size=4)


PADDED = on.computed(ref.padded_everywhere)
PROPERTIES = (
    Property("masked positions get zero weight", on.check_of(ref.masked_weight_problem)),
    Property("rows sum to one (zero when fully masked)", on.check_of(ref.kept_rows_sum_problem)),
)
UNIFORM = Mistake.of(
    "fully masked row uniform",
    "A row whose keys are all masked came out uniform (1/Tk each), as with a large negative "
    "fill value alone: set the masked weights to zero after the softmax, so such a row is all "
    "zeros.",
    ref.masked_attention,
    when=on.given(ref.fully_masked_row),
    masking="fill only",
)
NOT_RENORMALISED = Mistake.of(
    "mask applied after the softmax",
    "The softmax ran over all keys and the masked weights were zeroed afterwards, so the kept "
    "weights no longer sum to one: mask the scores before the softmax.",
    ref.masked_attention,
    when=on.given(ref.some_key_masked),
    masking="after",
)
OFF_BY_ONE = Mistake.of(
    "one key too many",
    "Each row keeps valid_lens[b] + 1 keys: position j is valid for j < valid_lens[b] "
    "(positions start at 0).",
    ref.masked_attention,
    when=on.has_input("valid_lens"),
    extra=1,
)
WRONG_AXIS = Mistake.of(
    "softmax over the queries",
    "The softmax normalises over the queries (axis -2); it must run over the keys, the last axis.",
    ref.masked_attention,
    when=on.several("scores", -2),
    axis=-2,
)

RECORD = Exercise(
    id="masked-softmax",
    title="Lab: Masked softmax: padding, valid lengths and causal masks",
    file="lab_masked_softmax.py",
    section="NNDL (8.1), (8.6); d2l masked softmax",
    timeout=15.0,
    summary=(
        "Attention over padded batches: build the mask of valid positions from lengths, a "
        "softmax that gives masked keys exactly zero weight (by lengths, d2l style, and by a "
        "boolean mask such as a causal one), rows that still sum to one, all-zero rows (not "
        "NaN) when every key is masked, and an attention pooling layer whose gradients stay "
        "finite."
    ),
    parts=(
        Part(
            name="sequence_mask",
            points=2,
            make_cases=sequence_mask_cases,
            description="sequence_mask: True at positions j < valid_lens[b].",
            mistakes=(
                Mistake.of(
                    "one position too many",
                    "Position j is valid for j < valid_lens[b]; you kept j <= valid_lens[b].",
                    ref.sequence_mask,
                    compare="<=",
                ),
                Mistake.of(
                    "inverted",
                    "The mask is inverted: True must mark the valid positions (the first "
                    "valid_lens[b]), False the padding.",
                    ref.sequence_mask,
                    compare=">=",
                ),
                Mistake.of(
                    "axes swapped",
                    "The mask is transposed: its last axis runs over the maxlen positions, its "
                    "first over the lengths.",
                    ref.sequence_mask,
                    when=lambda case: case.inputs["valid_lens"].shape == (case.params["maxlen"],),
                    transposed=True,
                ),
            ),
        ),
        Part(
            name="masked_softmax",
            recompute=Recompute(ref.masked_attention, lengths=("valid_lens",)),
            points=4,
            make_cases=masked_softmax_cases,
            description="masked_softmax(scores, valid_lens): lengths (B,) or (B, Tq), or None.",
            mistakes=(UNIFORM, NOT_RENORMALISED, OFF_BY_ONE, WRONG_AXIS),
            properties=PROPERTIES,
        ),
        Part(
            name="masked_softmax_from_mask",
            points=2,
            make_cases=from_mask_cases,
            description="masked_softmax_from_mask(scores, mask): causal, padding and general "
            "boolean masks.",
            mistakes=(
                Mistake.of(
                    "mask inverted",
                    "The mask is read the wrong way round: True means keep, False means mask.",
                    ref.masked_attention,
                    mask=on.negated("mask"),
                ),
                UNIFORM,
                NOT_RENORMALISED,
                WRONG_AXIS,
            ),
            properties=PROPERTIES,
        ),
        Part(
            name="MaskedAttentionPooling",
            recompute=Recompute(ref.masked_attention, lengths=("valid_lens",)),
            points=2,
            make_cases=pooling_cases,
            relations=(
                relations.masked_keys_changed(("scores",), PADDED, axis=2),
                relations.masked_keys_changed(("values",), PADDED),
                relations.batch_alone(),
            ),
            properties=(relations.gradients_sane(PADDED, {"scores": 2, "values": 1}),),
            description="MaskedAttentionPooling.call: masked weights times values; finite "
            "gradients, also for fully masked rows.",
            mistakes=(UNIFORM, NOT_RENORMALISED, OFF_BY_ONE, WRONG_AXIS),
        ),
    ),
)
