"""练习 8-1——循环层有多少参数，以及参数个数如何随其规模增长。

NNDL 第 8 章从网络容量讲起：要存储更多信息，网络需要更多神经元，而参数个数的增长比这快得多。习题
8-1 问的是 LSTM（NNDL §6.6）的隐藏单元数与参数个数之间的关系。你要精确计算 Keras 的 `LSTM`、
`GRU` 和 `SimpleRNN` 层的参数个数，再写两个函数来展示增长：把参数个数写成关于 `units` 的多项式，
以及 `units` 加倍时参数个数如何变化。

用 `grader check 8-1` 为你的作业评分。每个函数都会用多种规模调用（input_dim 和 units 从 1 到大约一千，
units 远小于和远大于 input_dim 的情况都有），并以关键字参数传入：请保持下面的名称和签名不变。
函数的返回值会与参考答案比较。你的计数必须等于 Keras 自己的层用 `count_params()` 报告的值（使用
它们的默认参数，下面指明的参数除外）。返回 Python 的 int 或 float（NumPy 标量和小数组也可以）；
这里不需要 Keras。

各部分：lstm_param_count 3，gru_param_count 2，simple_rnn_param_count 1，
param_count_coefficients 2，doubling_ratio 2——共 10 分。
"""

import numpy as np

KINDS = ("lstm", "gru", "simple_rnn")


def simple_rnn_param_count(input_dim, units):
    """Parameters of `keras.layers.SimpleRNN(units)` on inputs with `input_dim` features.

    h_t = tanh(W x_t + U h_{t-1} + b): W maps the input to the state, U maps the previous
    state to the state, b is a bias. Count every entry of W, U and b.
    """
    raise NotImplementedError("练习 8-1：数一数 W、U 和 b 的元素：它们各是什么形状？")


def lstm_param_count(input_dim, units):
    """Parameters of `keras.layers.LSTM(units)` on inputs with `input_dim` features.

    An LSTM computes four blocks from the same input x_t and previous state h_{t-1}: the input
    gate i_t, the forget gate f_t, the output gate o_t and the candidate cell c̃_t, each as
    σ or tanh of (W_* x_t + U_* h_{t-1} + b_*). Keras keeps one bias vector per block (PyTorch
    keeps two; the grader follows Keras). The cell c_t and the state h_t have `units`
    entries. Count every weight.
    """
    raise NotImplementedError("练习 8-1：四个块，每个块的参数与一个简单循环层相同")


def gru_param_count(input_dim, units, reset_after=True):
    """Parameters of `keras.layers.GRU(units, reset_after=reset_after)`.

    A GRU computes three blocks: the update gate z_t, the reset gate r_t and the candidate
    state h̃_t, each from W_* x_t and U_* h_{t-1}. With `reset_after=True` (the Keras default,
    the cuDNN form) the reset gate is applied after the recurrent product, r_t ⊙ (U h_{t-1} +
    b_rec), so every block has two bias vectors, one for the input product and one for the
    recurrent product. With `reset_after=False` every block has one bias vector.
    """
    raise NotImplementedError("练习 8-1：三个块；使用 reset_after 时每个块还有第二个（循环项的）偏置")


def param_count_coefficients(kind, input_dim):
    """The count as a polynomial in units: (a, b, c) with count(units) = a·units² + b·units + c.

    `kind` is "lstm", "gru" (Keras default, reset_after=True) or "simple_rnn"; `input_dim` is
    fixed. Return the three numbers (a list, a tuple or an array of shape (3,)), highest power
    first. Raise ValueError for another kind.

    The quadratic coefficient a comes from the recurrent matrices U (units × units): this is
    why the parameters of a recurrent layer grow with the square of its size, while what it
    can hold in its state grows only linearly. Read a, b and c off your count; the grader
    checks many input_dim for each kind.
    """
    raise NotImplementedError("练习 8-1：把你的计数展开：哪些项含 units²，哪些含 units，哪些都不含？")


def doubling_ratio(kind, input_dim, units):
    """count(2·units) / count(units) for a layer of that kind ("lstm", "gru" or "simple_rnn").

    Doubling the size of a layer whose count is a·u² + b·u multiplies it by a number between
    2 and 4: close to 4 when units is much larger than input_dim (the u² term dominates, the
    quadratic regime), close to 2 when units is much smaller (the linear regime). The grader
    checks that your ratio is in [2, 4] and equals the reference for many sizes. GRU uses the
    Keras default (reset_after=True). Raise ValueError for another kind.
    """
    raise NotImplementedError("练习 8-1：把这个层数两次：units 个单元时和 2·units 个单元时")
