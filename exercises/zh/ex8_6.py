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

（h_i 是神经元 i 的局部场；）当局部场 h_i 恰好为 0 时，s_i 保持不变（局部场为 0 时保持原值的规则）。

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
    """按赫布规则存储：W = (1/N) Σ_n x^(n) x^(n)ᵀ，并把对角线置为 0。

    参数：
        patterns：N 个模式，每个有 M 个神经元，形状 (N, M)，元素为 ±1。

    返回：
        W，形状 (M, M)：对称，对角线为零，已除以 N（模式的个数）。
    """
    raise NotImplementedError("练习 8-6：以外积表示的赫布规则（NNDL 的归一化），没有自连接")


def energy(W, state, bias=None):
    """状态的能量：E(s) = −½ sᵀ W s − bᵀ s（bias 为 None 时 b = 0）。

    参数：
        W：(M, M)。
        state：一个状态，形状 (M,)，或一批状态，形状 (B, M)。
        bias：b，形状 (M,)，或 None。

    返回：
        一个状态时返回一个数，一批状态时形状为 (B,)：每个状态一个能量。
    """
    raise NotImplementedError("练习 8-6：每个状态 −½ s·(W s)（在最后一个轴上求和），再减去 b·s")


def async_update(W, state, order, bias=None):
    """异步更新，一次更新一个神经元，按给定的顺序。

    依次对 `order` 中的每个神经元 i：由当前状态（其中已经包含在它之前更新过的神经元）计算 h =
    Σ_j w_ij s_j + b_i，然后 h > 0 时 s_i ← +1，h < 0 时 s_i ← −1，h 恰好为 0 时保持不变。

    `order` 通常是 0..M−1 的一个排列（一轮），但也可以是任意的神经元下标序列：接连的多轮，或
    者有的神经元重复、有的被略过。

    参数：
        W：(M, M)，对称且对角线为零。
        state：形状 (M,) 或一批 (B, M)，元素为 ±1；每个批次行各自更新。
        order：一维整数数组，元素为神经元下标。
        bias：b，形状 (M,)，或 None。

    返回：
        新的状态，形状与 `state` 相同，元素为 ±1。
    """
    raise NotImplementedError("练习 8-6：在副本上，按 order 依次处理 i：取神经元 i 当前的局部场；s[..., i] = 它的符号（为 0 时保留）")


def async_trajectory(W, state, order, bias=None):
    """异步动力学经过的每一个状态：每次更新一个神经元之后的状态。

    trajectory[0] = state；trajectory[t] = 更新神经元 order[t − 1] 之后的状态（从
    trajectory[t − 1] 出发，按 `async_update` 的规则）。

    评分程序会自己对每个 t 计算 E(trajectory[t])，并检查它从不上升。

    参数：
        W, state, order, bias：与 `async_update` 中相同；K = len(order)。

    返回：
        一个状态时形状为 (K + 1, M)，一批状态时为 (K + 1, B, M)。
    """
    raise NotImplementedError("练习 8-6：先列出初始状态，然后 order 中每个神经元更新后列出一个新状态（副本）；堆叠起来")


def recall(W, state, sweeps):
    """回忆：`sweeps` 轮异步更新，每轮按 0, 1, …, M−1 的顺序遍历各神经元。

    从一个探针（比如一个翻转了部分神经元的存储模式）出发，网络会稳定在能量的一个局部极小值：
    存储的模式不多时，就是该模式本身。

    参数：
        W：(M, M)；没有偏置。
        state：探针，形状 (M,) 或一批 (B, M)。
        sweeps：int ≥ 1。

    返回：
        这几轮之后的状态，形状与 `state` 相同。
    """
    raise NotImplementedError("练习 8-6：按顺序 0..M-1 做 `sweeps` 轮 async_update")
