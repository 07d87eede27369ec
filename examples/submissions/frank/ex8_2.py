"""Exercise 8-2 — scoring functions, why the dot product is scaled, and bilinear asymmetry.

NNDL §8.2, equations (8.3)–(8.5). An attention score s(q, k) says how well a key k matches a
query q. You write two score layers and four small functions that explain their design.

Grade your work with `grader check 8-2`. The grader calls your code in float64 (and once in
float32), compares outputs AND gradients (w.r.t. the inputs and the kernel) with the reference,
and names the mistake when it recognises one. Shapes vary on purpose: batch 1 and several,
Tq != Tk, d_q != d_k, d = 1. Use `keras.ops` (or NumPy in the plain functions); keep the names
and signatures below.

Parts: ScaledDotScore 3, BilinearScore 3, the two variances 2, bilinear_asymmetry 1,
softmax_jacobian 1 — 10 points.
"""

from solutions.ex8_2 import *  # noqa: F403
