"""练习 8-6——Hopfield 网络：Hebb 存储、能量，以及从不让能量上升的动力学。

NNDL §8.6.1（Hopfield 网络；Hopfield 1982）。书中的习题 8-6 要求证明 Hopfield 网络在运行过程中能量
从不增加。在这里，证明变成了代码，评分程序会在许多随机轨迹上检验它。

Hopfield 网络有 M 个神经元，状态 s_i ∈ {−1, +1}，权重 W 对称且对角线为零，偏置为 b。它用 Hebb 规则
存储 N 个模式 x^(1), …, x^(N)：

    w_ij = (1/N) Σ_n x_i^(n) x_j^(n)  for i ≠ j,      w_ii = 0

（这是 NNDL 的约定，attnkit 也采用：除以 N，即模式的个数；许多教材改为除以神经元个数 M，这会缩放 W，
但不改变任何一次更新。）它的能量为

    E(s) = −½ sᵀ W s − bᵀ s = −½ Σ_i Σ_j w_ij s_i s_j − Σ_i b_i s_i

异步更新每次只改变一个神经元：

    s_i ← sgn(h_i),   h_i = Σ_j w_ij s_j + b_i   (the field of unit i),

（h_i 是神经元 i 的局部场；）当局部场 h_i 恰好为 0 时，s_i 保持不变（相等规则）。

书中要求证明在这些更新下 E 从不上升。提示：写出只有神经元 i 改变时的 ΔE（用 Δs_i 表示），并利用 W
对称且 w_ii = 0。评分程序会在你的代码产生的每条轨迹上检验这一结论。

用 `grader check 8-6` 为你的作业评分。取值会在许多随机网络上与参考答案比较（Hebb 网络、整数权重的
随机对称网络——其中会出现恰好为 0 的局部场——以及实数权重的网络），包括单个状态和批次。在你的动力学
产生的每条轨迹上，评分程序还会自己重新计算每个状态的能量，检查它从不上升。请使用 NumPy（或
keras.ops）；这里不检查梯度。不要修改传给你的参数（在副本上操作）。

各部分：hebbian_weights 2，energy 2，async_update 2，async_trajectory 3，recall 1——共 10 分。
"""

import numpy as np


def hebbian_weights(patterns):
    """Hebbian storage: W = (1/N) Σ_n x^(n) x^(n)ᵀ with the diagonal set to 0.

    Args:
        patterns: N patterns of M units each, shape (N, M), entries ±1.

    Returns:
        W, shape (M, M): symmetric, zero diagonal, divided by N (the number of patterns).
    """
    raise NotImplementedError("练习 8-6：以外积表示的赫布规则（NNDL 的归一化），没有自连接")


def energy(W, state, bias=None):
    """Energy of a state: E(s) = −½ sᵀ W s − bᵀ s (b = 0 when bias is None).

    Args:
        W: (M, M).
        state: one state, shape (M,), or a batch of states, shape (B, M).
        bias: b, shape (M,), or None.

    Returns:
        A number for one state, shape (B,) for a batch: one energy per state.
    """
    raise NotImplementedError("练习 8-6：每个状态 −½ s·(W s)（在最后一个轴上求和），再减去 b·s")


def async_update(W, state, order, bias=None):
    """Asynchronous updates, one unit at a time, in the given order.

    For each unit i in `order`, in turn: h = Σ_j w_ij s_j + b_i, computed from the CURRENT
    state (which already holds the units updated before it), then s_i ← +1 if h > 0, −1 if
    h < 0, unchanged if h = 0 exactly.

    `order` is usually a permutation of 0..M−1 (one sweep) but may be any sequence of unit
    indices: several sweeps one after the other, or units repeated or left out.

    Args:
        W: (M, M), symmetric with a zero diagonal.
        state: shape (M,) or a batch (B, M), entries ±1; each batch row is updated on its own.
        order: 1-D integer array of unit indices.
        bias: b, shape (M,), or None.

    Returns:
        The new state(s), the shape of `state`, entries ±1.
    """
    raise NotImplementedError("练习 8-6：在副本上，按 order 依次处理 i：取神经元 i 当前的局部场；s[..., i] = 它的符号（为 0 时保留）")


def async_trajectory(W, state, order, bias=None):
    """Every state the asynchronous dynamics pass through: after each single-unit update.

    trajectory[0] = state; trajectory[t] = the state after updating unit order[t − 1] (from
    trajectory[t − 1], by the rule of `async_update`).

    The grader computes E(trajectory[t]) itself for every t and checks that it never rises.

    Args:
        W, state, order, bias: as in `async_update`; K = len(order).

    Returns:
        Shape (K + 1, M) for one state, (K + 1, B, M) for a batch.
    """
    raise NotImplementedError("练习 8-6：先列出初始状态，然后 order 中每个神经元更新后列出一个新状态（副本）；堆叠起来")


def recall(W, state, sweeps):
    """Recall: `sweeps` asynchronous sweeps, each over the units in the order 0, 1, …, M−1.

    Starting from a probe (a stored pattern with some units flipped, say), the network settles
    in a local minimum of the energy: with few stored patterns, the pattern itself.

    Args:
        W: (M, M); no bias.
        state: the probe, shape (M,) or a batch (B, M).
        sweeps: int ≥ 1.

    Returns:
        The state after the sweeps, the shape of `state`.
    """
    raise NotImplementedError("练习 8-6：按顺序 0..M-1 做 `sweeps` 轮 async_update")
