"""Synthetic tasks for the labs graded by what a model learns (lab train-transformer): data
drawn from a seed the grader keeps, the right answers, the probes that test how the answers were
found, and the measures the gates are judged on. NumPy only; the data never comes from the
submission.

Reversal, as a decoder reads it. A source of n tokens x (from 1 … V − 1), the separator
0, then the source reversed: s = (x_0 … x_{n−1}, 0, x_{n−1} … x_0). The model reads s[:−1]
(length L = 2n) and at each position predicts the next token, s[1:], under a causal mask
(teacher forcing). Only the answer positions p = n … 2n − 1 can be predicted (the source is
random); the token to predict there is x_{2n−1−p}, which sits at position 2n − 1 − p: the
query at p must look at key 2n − 1 − p, the anti-diagonal of the (L, L) attention.
"""

import numpy as np

from grader.vocabulary.spec import QUERY_SHUFFLED, SOURCE_SHUFFLED, TRAINING_ROWS

SEPARATOR = 0


# The answers in a secret code (Case.answer_code). Each training case renames the tokens a
# model answers with by a permutation drawn from the grader's seed, in which no answer token
# keeps its name: the data the child trains on answers in that code (its targets, and the
# earlier answers its teacher-forced inputs hold); the source keeps its tokens. A model learns
# the code with the task, from its data, as it learns any output layer; a rule that works the
# answer out from the inputs, or weights made for the task as the docs tell it, answer in the
# plain tokens and are wrong on every answer.


def answer_code(rng, vocabulary: int, answer_tokens) -> np.ndarray:
    """A permutation `code` of range(vocabulary) that sends every token of `answer_tokens` to
    another of them (none to itself) and keeps every other token: the answer written t in the
    task is written code[t] in the data."""
    answer_tokens = np.asarray(answer_tokens)
    count = len(answer_tokens)
    while True:
        order = rng.permutation(count)
        if np.all(order != np.arange(count)):
            break
    code = np.arange(vocabulary)
    code[answer_tokens] = answer_tokens[order]
    return code


def in_code(code, tokens) -> np.ndarray:
    """`tokens` written in the code."""
    return np.asarray(code)[np.asarray(tokens)].astype(np.asarray(tokens).dtype)


def answers_in_code(code, arrays: dict, targets_from: int, inputs_from: int) -> dict:
    """A case's arrays with their answers written in `code`: the targets from column
    `targets_from` on, every input array (teacher-forced, it holds the answers so far) from
    column `inputs_from` on; the columns before (the source, a separator or start token) keep
    their tokens."""
    coded = {}
    for name, array in arrays.items():
        start = targets_from if name == "targets" else inputs_from
        coded[name] = np.array(array, copy=True)
        coded[name][:, start:] = in_code(code, coded[name][:, start:])
    return coded


# The source's positions in a secret order (Case.position_code). Each training case also draws,
# from the grader's seed, a rotation of the source positions in which no position keeps its
# place (the transformer's source tokens, the memory network's facts, the date's seven tokens):
# every array the child reads holds its source rotated so, the same for every example, while the
# answers stay those of the task. A model learns where to look from its data, as it learns the
# code; an attention built by hand for the task's own positions looks at the wrong tokens. The
# grader reads the attention's source keys back into the task's order before judging. A rotation,
# not any order: with an order drawn at random, a transformer with a fixed sinusoidal position
# table (a held-out correct file) left an answer position short of the pass mark in its epochs;
# with rotations it passes (benchmarks/results/position_code_2026-11-29.md).


def position_code(rng, count: int) -> np.ndarray:
    """A rotation `order` of range(count) by 1 … count − 1 places (no position keeps its own):
    data position j holds the task's source position order[j]."""
    return (np.arange(count) + int(rng.integers(1, count))) % count


def positions_in_code(order, arrays: dict, kept=("targets",)) -> dict:
    """A case's arrays with their first len(order) entries of axis 1 (the source) put in
    `order`; the arrays named in `kept` (the answers) as they are."""
    order = np.asarray(order)
    coded = {}
    for name, array in arrays.items():
        coded[name] = np.array(array, copy=True)
        if name not in kept:
            coded[name][:, : len(order)] = np.asarray(array)[:, order]
    return coded


def reversal_data(rng, count, vocab_size, source_length):
    """`count` reversal sequences: (inputs, targets), both (count, 2n) int32, targets the inputs
    shifted by one (the next token). The source tokens are drawn independently, repeats allowed:
    with distinct tokens the last answers could be found by elimination (the source token not
    yet answered), and attention would not need to find the mirrored position."""
    source = rng.integers(1, vocab_size, (count, source_length))
    separator = np.full((count, 1), SEPARATOR)
    sequence = np.concatenate([source, separator, source[:, ::-1]], axis=1).astype("int32")
    return sequence[:, :-1].copy(), sequence[:, 1:].copy()


def reversal_answers(inputs):
    """The right next tokens of reversal inputs (N, 2n): the source reversed at the answer
    positions n … 2n − 1, −1 (not scored) at the source positions."""
    inputs = np.asarray(inputs)
    source_length = inputs.shape[1] // 2
    answers = np.full(inputs.shape, -1, dtype=np.int64)
    answers[:, source_length:] = inputs[:, :source_length][:, ::-1]
    return answers


def later_changed(rng, inputs):
    """Each sequence with every token after a drawn position c (n ≤ c < 2n − 1) replaced by
    another token: a causal model's outputs at positions ≤ c cannot change."""
    changed = np.array(inputs, copy=True)
    length = changed.shape[1]
    for row in changed:
        cut = int(rng.integers(length // 2, length - 1))
        later = row[cut + 1 :]
        row[cut + 1 :] = (later + rng.integers(1, row.max() + 1, later.shape)) % (row.max() + 1)
    return changed


def first_changed(inputs, changed):
    """Per sequence, the first position where `changed` differs from `inputs` (its length where
    none does)."""
    differs = np.asarray(inputs) != np.asarray(changed)
    return np.where(differs.any(axis=1), differs.argmax(axis=1), differs.shape[1])


def causal_leak(outputs, changed_outputs, inputs, changed):
    """The largest change of an output at a position before the first changed token, and the
    (sequence, position, first changed position) where it is."""
    first = first_changed(inputs, changed)
    positions = np.arange(np.shape(outputs)[1])
    before = positions[None, :] < first[:, None]  # (N, L)
    change = np.abs(np.asarray(outputs, float) - np.asarray(changed_outputs, float))
    change = change.reshape(change.shape[0], change.shape[1], -1).max(axis=-1) * before
    sequence, position = np.unravel_index(np.argmax(change), change.shape)
    return float(change[sequence, position]), (int(sequence), int(position), int(first[sequence]))


# How far an attention row may be from a distribution, or weigh later keys, and still count.
WEIGHTS_WITHIN = 1e-3


def normalised_over_queries(weights) -> bool:
    """Whether attention weights (…, queries, keys) sum to 1 over the queries (each column) and
    not over the keys (each row): a softmax over the wrong axis."""
    rows, columns = weights.sum(axis=-1), weights.sum(axis=-2)
    return bool(
        np.abs(rows - 1).max() > WEIGHTS_WITHIN and np.abs(columns - 1).max() <= WEIGHTS_WITHIN
    )


def self_attention_leak(weights) -> str | None:
    """Where the self-attention weights (N, L, L) or (N, H, L, L) of a model whose outputs read
    later tokens say the leak is: "later keys" (weight on keys after the query), "over queries"
    (columns that sum to 1, not rows: a softmax over the queries), "after softmax" (no weight on
    later keys, rows that sum to less than 1: a mask applied to the weights), "elsewhere" (causal
    rows that are distributions: something else mixes the positions); None where the weights are
    not such an array."""
    weights = np.asarray(weights, dtype=float)
    if weights.ndim == 3:
        weights = weights[:, None]
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2] or not weights.size:
        return None
    if not np.all(np.isfinite(weights)):
        return None
    length = weights.shape[-1]
    later = np.triu(np.ones((length, length), bool), k=1)
    # Read at the answer rows (n on) alone: their later keys are answers, in the same place in
    # the data as in the task, while the source keys were read back from the data's order
    # (Case.position_code) and a source row's later keys are no longer those after it.
    later[: length // 2] = False
    if normalised_over_queries(weights):
        return "over queries"
    if np.abs(weights[..., later]).max() > WEIGHTS_WITHIN:
        return "later keys"
    if np.abs(weights.sum(axis=-1) - 1).max() > WEIGHTS_WITHIN:
        return "after softmax"
    return "elsewhere"


def reordered_sources(rng, inputs):
    """Each sequence with its source tokens put in another order whose last token differs
    (the rest of the sequence kept): the first answer, the last source token, must follow. A
    source of one repeated token stays as it is (`reordered_rows` leaves it out)."""
    reordered = np.array(inputs, copy=True)
    source_length = reordered.shape[1] // 2
    for row in reordered:
        source = row[:source_length]
        if np.all(source == source[-1]):
            continue
        while True:
            order = rng.permutation(source_length)
            if source[order[-1]] != source[-1]:
                break
        row[:source_length] = source[order]
    return reordered


def reordered_rows(inputs, reordered):
    """Which sequences `reordered_sources` changed (their last source token differs)."""
    source_length = np.shape(inputs)[1] // 2
    last = source_length - 1
    return np.asarray(inputs)[:, last] != np.asarray(reordered)[:, last]


def anti_diagonal_hits(weights):
    """For attention weights (N, L, L) or (N, H, L, L), per head: the share of the answer rows
    p = n … 2n − 1 whose largest weight among the source keys 0 … n − 1 is on key 2n − 1 − p,
    and the mean weight on that key. Weight a row gives the separator or the answers so far is
    left aside: the answer is told apart from the other source tokens there, not from them."""
    weights = np.asarray(weights, dtype=float)
    if weights.ndim == 3:
        weights = weights[:, None]
    length = weights.shape[-1]
    source_length = length // 2
    rows = np.arange(source_length, length)
    mirrored = length - 1 - rows
    on_source = weights[:, :, rows, :source_length]  # (N, H, n, n)
    hits = on_source.argmax(axis=-1) == mirrored  # (N, H, n)
    mass = weights[:, :, rows, mirrored]
    return hits.mean(axis=(0, 2)), mass.mean(axis=(0, 2))


# Where is the person? (lab train-memn2n). A story of F facts "person is in place", the persons
# 1 … P and the places P + 1 … P + Q tokens of one vocabulary (0 pads), persons repeating:
# people move. The question names a person of the story; the answer is the place of the latest
# fact about them, the supporting fact. Inputs pack the story and the question in one int
# array (N, F + 1, 2): rows 0 … F − 1 the facts (person, place), row F (the person asked, 0).


def whereabouts_data(rng, count, persons, places, facts):
    """`count` stories: (inputs (count, F + 1, 2) int32, answers (count,) int32, the index of
    each one's supporting fact (count,))."""
    inputs = np.zeros((count, facts + 1, 2), dtype="int32")
    inputs[:, :facts, 0] = rng.integers(1, persons + 1, (count, facts))
    inputs[:, :facts, 1] = rng.integers(persons + 1, persons + places + 1, (count, facts))
    asked = inputs[np.arange(count), rng.integers(facts, size=count), 0]
    inputs[:, facts, 0] = asked
    answers, support = whereabouts_answers(inputs)
    return inputs, answers, support


def whereabouts_answers(inputs):
    """The place of the latest fact about the person asked, and that fact's index."""
    inputs = np.asarray(inputs)
    facts = inputs.shape[1] - 1
    about = inputs[:, :facts, 0] == inputs[:, facts : facts + 1, 0]  # (N, F)
    support = facts - 1 - np.argmax(about[:, ::-1], axis=1)
    return inputs[np.arange(len(inputs)), support, 1].astype("int32"), support


def moved_away(rng, inputs, persons, places):
    """Each story with the place of its supporting fact changed: the answer must follow."""
    moved = np.array(inputs, copy=True)
    _answers, support = whereabouts_answers(moved)
    rows = np.arange(len(moved))
    shift = rng.integers(1, places, size=len(moved))
    moved[rows, support, 1] = persons + 1 + (moved[rows, support, 1] - persons - 1 + shift) % places
    return moved


def facts_reordered(rng, inputs):
    """Each story with its facts put in another order after which the latest fact about the
    person asked has another place (the right answer changes), the question kept. A story whose
    facts about that person all share one place stays as it is (`whereabouts_answers` of both
    tell which changed). Only the order of the facts can tell the two apart: a model that reads
    the story as a set of facts gives both the same answer."""
    reordered = np.array(inputs, copy=True)
    facts = reordered.shape[1] - 1
    answers = whereabouts_answers(reordered)[0]
    for row, answer in zip(reordered, answers, strict=True):
        about = row[:facts, 0] == row[facts, 0]
        if len(set(row[:facts, 1][about])) < 2:
            continue
        while True:
            order = rng.permutation(facts)
            if whereabouts_answers(row[None, np.append(order, facts)])[0][0] != answer:
                break
        row[:facts] = row[order]
    return reordered


# Dates (lab train-seq2seq): "14 <jul> 2023" → "1 4 0 7 2 0 2 3". Digits are the tokens 0 … 9,
# the months 10 … 21, the decoder's start 22. The source is the day's two digits, the month's
# token and the year's four digits (7 tokens); the target the day's, the month's and the year's
# digits (8 tokens). Inputs pack the source and the decoder's inputs (the start token, then the
# target but its last token) in one int array (N, 7 + 8). The alignment is monotone: target
# step t translates source token DATE_ALIGNMENT[t].
FIRST_MONTH, DATE_START, DATE_VOCABULARY = 10, 22, 23
DATE_SOURCE, DATE_TARGET = 7, 8
DATE_ALIGNMENT = np.array([0, 1, 2, 2, 3, 4, 5, 6])


def _digits(values, count):
    return np.stack([(values // 10 ** (count - 1 - i)) % 10 for i in range(count)], axis=1)


def dates_data(rng, count):
    """`count` dates: (inputs (count, 15) int32, targets (count, 8) int32)."""
    day, month = rng.integers(1, 29, count), rng.integers(1, 13, count)
    year = rng.integers(1900, 2100, count)
    source = np.concatenate(
        [_digits(day, 2), (FIRST_MONTH + month - 1)[:, None], _digits(year, 4)], axis=1
    )
    target = np.concatenate([_digits(day, 2), _digits(month, 2), _digits(year, 4)], axis=1)
    start = np.full((count, 1), DATE_START)
    inputs = np.concatenate([source, start, target[:, :-1]], axis=1)
    return inputs.astype("int32"), target.astype("int32")


def dates_answers(inputs):
    """The right target digits of date inputs (N, 15), from their source."""
    source = np.asarray(inputs)[:, :DATE_SOURCE]
    month = source[:, 2] - FIRST_MONTH + 1
    return np.concatenate([source[:, :2], _digits(month, 2), source[:, 3:]], axis=1)


def decoder_inputs_changed(rng, inputs):
    """Each date with the decoder's inputs after a drawn step c (0 ≤ c < 7) changed to other
    digits, the source kept: a decoder's outputs at steps ≤ c cannot change."""
    changed = np.array(inputs, copy=True)
    for row in changed:
        cut = DATE_SOURCE + int(rng.integers(DATE_TARGET - 1))
        later = row[cut + 1 :]
        row[cut + 1 :] = (later + rng.integers(1, 10, later.shape)) % 10
    return changed


# How many of its training rows the trained model is asked about, for the run's diagnosis.
ROWS_ASKED = 500


def run_probes(rng, inputs, held_out, source: slice, query: slice | None = None) -> dict:
    """The inputs the grader asks a trained model to read what its training did
    (grader.engine.training_run): its first training rows (does it fit what it was trained
    on?), and the held-out inputs with their source (`source`, a slice of axis 1: what the
    answer must be read from) swapped between examples, the rest kept (does it read the
    source at all?); with `query` (the question asked of the source), the held-out inputs with
    their query swapped between examples too (does it read the question?)."""
    held_out = np.asarray(held_out)
    probes = {
        TRAINING_ROWS: np.array(inputs[:ROWS_ASKED], copy=True),
        SOURCE_SHUFFLED: _swapped(rng, held_out, source),
    }
    if query is not None:
        probes[QUERY_SHUFFLED] = _swapped(rng, held_out, query)
    return probes


def _swapped(rng, held_out, part: slice) -> np.ndarray:
    """`held_out` with `part` (a slice of axis 1) of every row another row's."""
    order = rng.permutation(len(held_out))
    others = order[np.roll(np.arange(len(order)), 1)]  # every row another row's part
    swapped = np.array(held_out, copy=True)
    swapped[order[:, None], part] = held_out[others[:, None], part]
    return swapped.astype(held_out.dtype)
