"""练习 8-4——结构化的外部记忆：按内容读取，通过擦除和添加写入，以及栈。

NNDL §8.5 和习题 8-4：记忆增强神经网络把信息保存在一个有 N 个记忆片段 m_1 … m_N 的外部记忆 M 中，
通过软性（注意力）权重来读写，使一切保持可微。你要写两个基本操作：按内容读取，以及通过擦除和添加
写入（Graves 等人 2014，§3），然后构建一个组织成栈的记忆，其入栈和出栈是连续的：Grefenstette 等人
2015 年的神经栈。

用 `grader check 8-4` 为你的作业评分。这些函数会被直接调用（输入 NumPy 数组），也会通过下面给出的
小层来调用，使评分程序能对你的代码求梯度：输出和梯度（关于每个输入）都与参考答案比较，使用 float64，
以及一次 float32。形状是有意变化的：批量为 1 和多个、N = 1、d = 1。请使用 `keras.ops`，让梯度
能够传播，并保持下面的名称和签名不变。

各部分：memory_read 3，memory_write 3，stack_operations 2，neural_stack 2——共 10 分。
"""

import keras
from keras import ops

# --- reading and writing by content ------------------------------------------------------------


def memory_address(memory, query):
    """Content addressing: α_i = softmax_i(m_i · q), one weight per slot.

    memory (B, N, d): N slots of size d; query (B, d) -> α (B, N). For every example the N
    weights are positive and sum to one (the grader checks this).
    """
    raise NotImplementedError("练习 8-4：每个记忆片段一次点积，再在各片段上做 softmax")


def memory_read(memory, query):
    """Content read: r = Σ_i α_i m_i with α = memory_address(memory, query).

    memory (B, N, d), query (B, d) -> r (B, d). The read is a convex combination of the slots,
    so each of its components lies between the smallest and the largest value of that
    component over the slots (the grader checks this). Gradients reach memory and query.
    """
    raise NotImplementedError("练习 8-4：对各片段寻址，再按寻址权重给每个片段加权并求和")


def memory_write(memory, weights, erase, add):
    """Erase-then-add write: m_i ← m_i ⊙ (1 − α_i e) + α_i a, for every slot i.

    memory (B, N, d); weights α (B, N), each in [0, 1] (e.g. from memory_address); erase e
    (B, d), entries in [0, 1]; add a (B, d) -> the new memory (B, N, d). A slot with α_i = 0
    is left exactly as it was (the grader checks this); a slot with α_i = 1 and e = 1 is
    replaced by a. Gradients reach all four inputs.
    """
    raise NotImplementedError("练习 8-4：把 α 在宽度上广播，把 e、a 在各片段上广播；先擦除，再添加")


class MemoryRead(keras.layers.Layer):
    """Given: lets the grader take gradients through your `memory_read`."""

    def call(self, memory, query):
        return memory_read(memory, query)


class MemoryWrite(keras.layers.Layer):
    """Given: lets the grader take gradients through your `memory_write`."""

    def call(self, memory, weights, erase, add):
        return memory_write(memory, weights, erase, add)


# --- a neural stack (Grefenstette et al. 2015) -------------------------------------------------
#
# The stack holds values v_1 … v_T (v_1 at the bottom, v_T on top) with strengths s_1 … s_T in
# [0, 1]: how much of each value is still on the stack. A push of strength d puts a new value on
# top with strength d; a pop of strength u removes u units of strength from the top down; a read
# takes one unit of strength from the top down. With strengths of 0 and 1 this is an ordinary
# stack; in between, everything is continuous, so a network can learn when to push and pop.
# In every array below, index 0 along the stack axis is the bottom and index -1 the top.


def stack_pop(strengths, pop):
    """Pop u units of strength from the top: s_i ← max(0, s_i − max(0, u − Σ_{j>i} s_j)).

    strengths (B, T), pop u (B,) -> the new strengths (B, T). Σ_{j>i} s_j is the strength
    above element i. The element on top loses up to u; what u has left after it goes to the
    element below, and so on. In total exactly min(u, Σ_i s_i) is removed, and no strength
    becomes negative (the grader checks this).
    """
    raise NotImplementedError("练习 8-4：每个元素上方的强度等于总和减去累积和")


def stack_read(values, strengths):
    """Read one unit of strength from the top: r = Σ_i min(s_i, max(0, 1 − Σ_{j>i} s_j)) v_i.

    values (B, T, m), strengths (B, T) -> r (B, m). The top element counts with its whole
    strength if that is below 1; the elements below fill what is left of the one unit; the
    rest of the stack does not count.
    """
    raise NotImplementedError("练习 8-4：每个元素按其强度计入，但不超过这一个单位剩下的部分")


def neural_stack(values, pushes, pops):
    """Run a neural stack over a sequence; return the read at every step.

    values (B, T, m), pushes d (B, T), pops u (B, T) -> reads (B, T, m). The stack starts
    empty. At step t: first pop u_t from the stack as it was after step t-1 (stack_pop), then
    push values[:, t] with strength d_t on top, then read (stack_read) and output the read.
    Use your stack_pop and stack_read; T is small, a Python loop over the steps is fine.
    """
    raise NotImplementedError("练习 8-4：把强度从一步传到下一步：出栈，追加 d_t，读取")


class NeuralStack(keras.layers.Layer):
    """Given: lets the grader take gradients through your `neural_stack`."""

    def call(self, values, pushes, pops):
        return neural_stack(values, pushes, pops)
