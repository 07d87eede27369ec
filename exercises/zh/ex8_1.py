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
    """`keras.layers.SimpleRNN(units)` 在输入有 `input_dim` 个特征时的参数个数。

    h_t = tanh(W x_t + U h_{t-1} + b)：W 把输入映射到状态，U 把上一个状态映射到状态，b 是偏
    置。数出 W、U 和 b 的每一个元素。
    """
    raise NotImplementedError("练习 8-1：数一数 W、U 和 b 的元素：它们各是什么形状？")


def lstm_param_count(input_dim, units):
    """`keras.layers.LSTM(units)` 在输入有 `input_dim` 个特征时的参数个数。

    LSTM 由同一个输入 x_t 和上一个状态 h_{t-1} 计算四个块：输入门 i_t、遗忘门 f_t、输出门 o_t
    和候选记忆单元 c̃_t，每个都是 (W_* x_t + U_* h_{t-1} + b_*) 的 σ 或 tanh。Keras 每个块只
    有一个偏置向量（PyTorch 有两个；评分程序以 Keras 为准）。记忆单元 c_t 和状态 h_t 都有
    `units` 个元素。数出每一个权重。
    """
    raise NotImplementedError("练习 8-1：四个块，每个块的参数与一个简单循环层相同")


def gru_param_count(input_dim, units, reset_after=True):
    """`keras.layers.GRU(units, reset_after=reset_after)` 的参数个数。

    GRU 计算三个块：更新门 z_t、重置门 r_t 和候选状态 h̃_t，每个都由 W_* x_t 和 U_* h_{t-1} 算
    出。当 `reset_after=True`（Keras 的默认值，即 cuDNN 的形式）时，重置门作用在循环乘积之
    后，r_t ⊙ (U h_{t-1} + b_rec)，所以每个块有两个偏置向量，一个给输入乘积，一个给循环乘
    积。当 `reset_after=False` 时，每个块只有一个偏置向量。
    """
    raise NotImplementedError("练习 8-1：三个块；使用 reset_after 时每个块还有第二个（循环项的）偏置")


def param_count_coefficients(kind, input_dim):
    """把参数个数写成 units 的多项式：(a, b, c)，使 count(units) = a·units² + b·units + c。

    `kind` 为 "lstm"、"gru"（Keras 默认，reset_after=True）或 "simple_rnn"；`input_dim` 固
    定。按最高次幂在前的顺序返回这三个数（列表、元组或形状为 (3,) 的数组）。其他 kind 抛出
    ValueError。

    二次项系数 a 来自循环矩阵 U（units × units）：这就是为什么循环层的参数随其大小的平方增
    长，而它的状态能容纳的信息只线性增长。从你的参数个数中读出 a、b 和 c；评分程序对每种 kind
    检查许多 input_dim。
    """
    raise NotImplementedError("练习 8-1：把你的计数展开：哪些项含 units²，哪些含 units，哪些都不含？")


def doubling_ratio(kind, input_dim, units):
    """该种类的层（"lstm"、"gru" 或 "simple_rnn"）的 count(2·units) / count(units)。

    参数个数为 a·u² + b·u 的层，大小加倍后参数个数乘以一个介于 2 和 4 之间的数：当 units 远
    大于 input_dim 时接近 4（u² 项占主导，即二次区间），当 units 远小于 input_dim 时接近 2
    （线性区间）。评分程序检查你的比值在 [2, 4] 内，并且在许多大小上都等于参考答案。GRU 使用
    Keras 的默认值（reset_after=True）。其他 kind 抛出 ValueError。
    """
    raise NotImplementedError("练习 8-1：把这个层数两次：units 个单元时和 2·units 个单元时")
