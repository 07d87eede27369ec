import numpy as np
def tx(N, n=6, V=12, seed=1):
    r = np.random.default_rng(seed); src = r.integers(1, V, (N, n))
    seq = np.concatenate([src, np.zeros((N, 1), int), src[:, ::-1]], 1)
    return seq[:, :-1].astype("int32"), seq[:, 1:].astype("int32")
def mem(N, F=6, P=4, Q=6, seed=1):
    r = np.random.default_rng(seed); x = np.zeros((N, F + 1, 2), "int32"); y = np.zeros(N, "int32")
    for i in range(N):
        per = r.integers(1, P + 1, F); pl = r.integers(P + 1, P + Q + 1, F)
        x[i, :F, 0] = per; x[i, :F, 1] = pl; q = r.choice(per); x[i, F] = (q, 0)
        y[i] = pl[np.where(per == q)[0][-1]]
    return x, y
def s2s(N, seed=1):
    r = np.random.default_rng(seed); d = r.integers(1, 29, N); m = r.integers(1, 13, N); yr = r.integers(1900, 2100, N)
    src = np.stack([d // 10, d % 10, m + 9, yr // 1000, yr // 100 % 10, yr // 10 % 10, yr % 10], 1)
    tgt = np.stack([d // 10, d % 10, m // 10, m % 10, yr // 1000, yr // 100 % 10, yr // 10 % 10, yr % 10], 1)
    dec = np.concatenate([np.full((N, 1), 22), tgt[:, :-1]], 1)
    return np.concatenate([src, dec], 1).astype("int32"), tgt.astype("int32")
