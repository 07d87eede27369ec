"""Pointer networks: attention scores over input positions, decoded greedily or scored."""

import numpy as np

from grader.reference.attention import as64, masked_softmax
from grader.reference.recurrent import lstm_step
from grader.reference.seq2seq import additive


def pointer_network(w, x, keep=None, targets=None, steps=None, mask_chosen=True):
    """Pointer network of one batch, step by step: returns (probabilities, chosen indices).

    w: dict with `encoder` and `decoder` LSTM weights (kernel, recurrent kernel, bias),
    `query_kernel` (applied to the decoder state d_m), `key_kernel` (to the encoder states
    e_n), `score_vector`, and `start` (d,). Teacher forcing with `targets` (B, M); greedy
    decoding for `steps` steps otherwise.
    """
    x = as64(x)
    b_size, n, _ = x.shape
    units = w["encoder"][1].shape[0]
    keep = np.ones((b_size, n), bool) if keep is None else np.asarray(keep, bool)
    steps = targets.shape[1] if targets is not None else steps
    probs = np.zeros((b_size, steps, n))
    chosen_indices = np.zeros((b_size, steps), int)
    for b in range(b_size):
        h, c = np.zeros(units), np.zeros(units)
        enc = np.zeros((n, units))
        for j in range(n):
            if keep[b, j]:
                h, c = lstm_step(x[b, j], h, c, *w["encoder"])
                enc[j] = h
        previous = as64(w["start"])
        chosen = np.zeros(n, bool)
        for m in range(steps):
            h, c = lstm_step(previous, h, c, *w["decoder"])
            s = np.array(
                [
                    additive(h, enc[j], w["query_kernel"], w["key_kernel"], w["score_vector"])
                    for j in range(n)
                ]
            )
            allowed = keep[b] & ~chosen if mask_chosen else keep[b]
            probs[b, m] = masked_softmax(s, allowed)
            index = int(targets[b, m]) if targets is not None else int(np.argmax(probs[b, m]))
            chosen_indices[b, m] = index
            chosen[index] = True
            previous = x[b, index]
    return probs, chosen_indices
