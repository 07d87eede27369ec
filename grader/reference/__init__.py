"""The one NumPy implementation of the chapter's maths, in float64, written from the formulas
(loops where that keeps them obviously right) and never from attnkit's code.

The grader's records build their cases and recompute students' known mistakes with it, and the
tests check every attnkit layer against it:

- `attention`: softmax and masked softmax, masks, the scoring functions, attention pooling.
- `heads`: linear maps, multi-head and self-attention, hard attention, sinusoidal positions.
- `recurrent`: GRU and LSTM cells as Keras computes them.
- `kernel_regression`, `seq2seq` (additive, Bahdanau, Luong), `pointer`, `structured`
  (hierarchical, CRF).
- `memory`: memory networks, NTM addressing and read/write. `hopfield`: Hopfield networks.
- `transformer`: layer norm, RMSNorm, the feed-forward network, padding and causal masks, the
  post-LN and pre-LN encoder block. `flash`: the online softmax over blocks of keys, the
  log-sum-exp and the weights recomputed from it.
- `tasks`: the synthetic tasks the labs graded by what a model learns train on (reversal,
  where-is stories, dates), their right answers, probes and the measures of their gates.
"""
