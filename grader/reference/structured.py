"""Structured and hierarchical attention: pooling, a linear-chain CRF by brute force, and the
hierarchical (word, then sentence) encoder."""

import itertools

import numpy as np

from grader.reference.attention import as64, masked_softmax
from grader.reference.recurrent import gru_sequence


def crf_marginals_brute_force(unary, transition, keep):
    """p(z_i = 1) of a binary linear chain over the kept positions, by enumerating all z.

    unary (Tk,) = θ_i(1) (θ_i(0) = 0); transition (2, 2) indexed [z_i, z_next]; the chain
    links consecutive kept positions. Dropped positions get 0.
    """
    unary, transition = as64(unary), as64(transition)
    kept = [j for j in range(len(unary)) if keep[j]]
    marginals = np.zeros(len(unary))
    if not kept:
        return marginals
    configurations = list(itertools.product((0, 1), repeat=len(kept)))
    energies = []
    for z in configurations:
        energy = sum(unary[j] for j, zj in zip(kept, z, strict=True) if zj)
        energy += sum(transition[z[k], z[k + 1]] for k in range(len(z) - 1))
        energies.append(energy)
    probabilities = np.exp(np.array(energies) - max(energies))  # shifted: no overflow
    total = probabilities.sum()
    for z, p in zip(configurations, probabilities, strict=True):
        for j, zj in zip(kept, z, strict=True):
            if zj:
                marginals[j] += p
    return marginals / total


def hierarchical(w, x, keep):
    """Hierarchical attention of one batch of embeddings x (B, S, W, E), keep (B, S, W).

    w: dict with `word_fw`, `word_bw`, `sentence_fw`, `sentence_bw` (GRU weights),
    `word_kernel`, `word_bias`, `word_context`, `sentence_kernel`, `sentence_bias`,
    `sentence_context`. Returns (documents, word weights, sentence weights).
    """
    x, keep = as64(x), np.asarray(keep, bool)
    b_size, s_size, w_size, _ = x.shape
    units = w["word_fw"][1].shape[0]
    documents = np.zeros((b_size, 2 * units))
    word_weights = np.zeros((b_size, s_size, w_size))
    sentence_weights = np.zeros((b_size, s_size))
    for b in range(b_size):
        sentences = np.zeros((s_size, 2 * units))
        for s in range(s_size):
            forward, _ = gru_sequence(x[b, s], w["word_fw"], keep[b, s])
            backward, _ = gru_sequence(x[b, s], w["word_bw"], keep[b, s], reverse=True)
            h = np.concatenate([forward, backward], axis=-1)
            u = np.tanh(h @ w["word_kernel"] + w["word_bias"])
            alpha = masked_softmax(u @ w["word_context"], keep[b, s])
            word_weights[b, s] = alpha
            sentences[s] = alpha @ h
        sentence_keep = keep[b].any(axis=-1)
        forward, _ = gru_sequence(sentences, w["sentence_fw"], sentence_keep)
        backward, _ = gru_sequence(sentences, w["sentence_bw"], sentence_keep, reverse=True)
        h = np.concatenate([forward, backward], axis=-1)
        u = np.tanh(h @ w["sentence_kernel"] + w["sentence_bias"])
        alpha = masked_softmax(u @ w["sentence_context"], sentence_keep)
        sentence_weights[b] = alpha
        documents[b] = alpha @ h
    return documents, word_weights, sentence_weights
