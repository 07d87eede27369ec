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

# --- 按内容读写 --------------------------------------------------------------------------------


def memory_address(memory, query):
    """按内容寻址：α_i = softmax_i(m_i · q)，每个记忆片段一个权重。

    memory (B, N, d)：N 个大小为 d 的记忆片段；query (B, d) -> α (B, N)。对每个样本，这 N 个
    权重都为正且和为一（评分程序会检查）。
    """
    raise NotImplementedError("练习 8-4：每个记忆片段一次点积，再在各片段上做 softmax")


def memory_read(memory, query):
    """按内容读取：r = Σ_i α_i m_i，其中 α = memory_address(memory, query)。

    memory (B, N, d), query (B, d) -> r (B, d)。读出的结果是各记忆片段的凸组合，所以它的每个
    分量都介于各记忆片段在该分量上的最小值和最大值之间（评分程序会检查）。梯度要传到 memory
    和 query。
    """
    raise NotImplementedError("练习 8-4：对各片段寻址，再按寻址权重给每个片段加权并求和")


def memory_write(memory, weights, erase, add):
    """先擦除再添加的写入：对每个记忆片段 i，m_i ← m_i ⊙ (1 − α_i e) + α_i a。

    memory (B, N, d)；权重 α (B, N)，每个在 [0, 1] 内（例如来自 memory_address）；擦除向量 e
    (B, d)，元素在 [0, 1] 内；添加向量 a (B, d) -> 新的记忆 (B, N, d)。α_i = 0 的记忆片段保
    持原样、分毫不变（评分程序会检查）；α_i = 1 且 e = 1 的记忆片段被替换为 a。梯度要传到全
    部四个输入。
    """
    raise NotImplementedError("练习 8-4：把 α 在宽度上广播，把 e、a 在各片段上广播；先擦除，再添加")


class MemoryRead(keras.layers.Layer):
    """已给出：让评分程序能对你的 `memory_read` 求梯度。"""

    def call(self, memory, query):
        return memory_read(memory, query)


class MemoryWrite(keras.layers.Layer):
    """已给出：让评分程序能对你的 `memory_write` 求梯度。"""

    def call(self, memory, weights, erase, add):
        return memory_write(memory, weights, erase, add)


# --- 神经栈（Grefenstette 等人，2015） ---------------------------------------------------------
#
# 栈中保存值 v_1 … v_T（v_1 在栈底，v_T 在栈顶），以及它们在 [0, 1] 内的强度 s_1 … s_T：每个值还有多
# 少留在栈中。强度为 d 的入栈把一个新值以强度 d 放到栈顶；强度为 u 的出栈从栈顶往下移除 u 个单位的强
# 度；读取从栈顶往下取一个单位的强度。强度只取 0 和 1 时，这就是普通的栈；介于两者之间时，一切都是连
# 续的，所以网络可以学会何时入栈、何时出栈。下面的每个数组中，沿栈轴的下标 0 是栈底，下标 -1 是栈
# 顶。


def stack_pop(strengths, pop):
    """从栈顶出栈 u 个单位的强度：s_i ← max(0, s_i − max(0, u − Σ_{j>i} s_j))。

    strengths (B, T)，出栈量 u (B,) -> 新的强度 (B, T)。Σ_{j>i} s_j 是元素 i 上方的强度。栈
    顶元素最多失去 u；u 剩下的部分再交给下面的元素，依此类推。总共恰好移除 min(u, Σ_i s_i)，
    并且没有强度会变成负数（评分程序会检查）。
    """
    raise NotImplementedError("练习 8-4：每个元素上方的强度等于总和减去累积和")


def stack_read(values, strengths):
    """从栈顶读取一个单位的强度：r = Σ_i min(s_i, max(0, 1 − Σ_{j>i} s_j)) v_i。

    values (B, T, m), strengths (B, T) -> r (B, m)。栈顶元素的强度若小于 1，就以全部强度计
    入；下面的元素补足这一个单位中剩下的部分；栈中其余的元素不计入。
    """
    raise NotImplementedError("练习 8-4：每个元素按其强度计入，但不超过这一个单位剩下的部分")


def neural_stack(values, pushes, pops):
    """在一个序列上运行神经栈；返回每一步的读取结果。

    values (B, T, m)，入栈量 d (B, T)，出栈量 u (B, T) -> 读取结果 (B, T, m)。栈开始时为空。
    在第 t 步：先从第 t-1 步之后的栈中出栈 u_t（stack_pop），再把 values[:, t] 以强度 d_t 放
    到栈顶，然后读取（stack_read）并输出读取结果。使用你的 stack_pop 和 stack_read；T 很小，
    对各步用 Python 循环即可。
    """
    raise NotImplementedError("练习 8-4：把强度从一步传到下一步：出栈，追加 d_t，读取")


class NeuralStack(keras.layers.Layer):
    """已给出：让评分程序能对你的 `neural_stack` 求梯度。"""

    def call(self, values, pushes, pops):
        return neural_stack(values, pushes, pops)
