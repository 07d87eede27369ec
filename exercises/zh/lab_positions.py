"""实验：位置——书中写法的正弦位置编码，以及旋转位置编码。

NNDL §8.3（自注意力需要位置：没有位置时它对置换是等变的）；Vaswani 等人 2017（正弦位置编码）；
Su 等人 2021，RoFormer（旋转位置编码）。书中的正弦位置编码对位置 p 和特征对 i（d 个特征中的第 2i
和 2i+1 个）给出：

    PE(p, 2i) = sin(p / 10000^(2i/d)),   PE(p, 2i+1) = cos(p / 10000^(2i/d))

旋转位置编码不做加法：它把查询或键的每一对特征按其位置 p 转过角度 θ_i = p / 10000^(2i/d)。
同样旋转的向量之间的点积保持不变，所以位置 m 上的查询与位置 n 上的键的打分
⟨rot(q, m), rot(k, n)⟩ = ⟨q, rot(k, n − m)⟩ 只取决于偏移 n − m。

用 `grader check positions` 为你的作业评分。位置可以是任意数（不只是 0..T−1：例如缓存之后解码的
词元），顺序任意。输出以 float64（以及一次 float32）与参考答案比较，apply_rotary 关于 x 的梯度
通过（已给出的）`RotaryEmbedding` 计算。apply_rotary 还按一条性质评分：所有位置都加上同一个常数
后，任意两个词元之间的打分必须不变。保持下面的名称和签名不变。

各部分：sinusoidal_encoding 4，apply_rotary 6——共 10 分。
"""

import keras
from keras import ops


def sinusoidal_encoding(positions, depth, max_wavelength=10000.0):
    """NNDL §8.3（Vaswani 等人 2017）的正弦位置编码，交错排列。

    Args:
        positions: 位置 p 的 (T,) 或 (B, T) 浮点张量（整数值，顺序任意）。
        depth: d，特征个数（可以是奇数：此时最后一个特征是正弦）。
        max_wavelength: 底数，书中为 10000。

    Returns:
        形状为 (*positions.shape, depth)、dtype 与 `positions` 相同的张量，其中
        PE[..., 2i] = sin(p / base^(2i/d))，PE[..., 2i+1] = cos(p / base^(2i/d))：
        同一角度的正弦和余弦相邻，第 i 对位于第 2i 和 2i+1 个特征。
    """
    raise NotImplementedError("练习 positions：角度 p / base^(2i/d)，其中 i = j // 2；偶数位特征取 sin，奇数位取 cos")


def apply_rotary(x, positions, max_wavelength=10000.0):
    """旋转位置编码（RoFormer），按两半配对（与 GPT-NeoX 和 keras-hub 相同）。

    一个词元的 d 个特征中，第 i 对是 (x[i], x[i + d/2])——前一半与后一半配对，而不是相邻的特征
    (2i, 2i+1)。位置 p 上的词元的每一对都旋转角度 θ_i = p / base^(2i/d)，i = 0 .. d/2 − 1
    （base = max_wavelength）：

        out[i]       = x[i] cos θ_i − x[i + d/2] sin θ_i
        out[i + d/2] = x[i + d/2] cos θ_i + x[i] sin θ_i

    Args:
        x: (B, T, d) 或 (B, T, H, d) 浮点张量（H 个头），d 为偶数。
        positions: T 个词元的 (T,) 或 (B, T) 位置（整数，整数或浮点 dtype 均可；任意数，
            不只是 0..T−1）。
        max_wavelength: 底数，与正弦位置编码一样为 10000。

    Returns:
        形状和 dtype 与 x 相同的张量：词元 t 的每个头都按 positions[..., t] 的角度旋转。
    """
    raise NotImplementedError("练习 positions：由位置得到 θ (B 或 1, T, d/2)；在各个头上广播；旋转两半")


class RotaryEmbedding(keras.layers.Layer):
    """已给出：不属于练习。把固定位置上的 `apply_rotary` 写成一个层，使评分程序能求关于 x 的梯度。

    Args:
        positions: 位置，数的（嵌套）列表，(T,) 或 (B, T)。
        max_wavelength: 底数。

    Call arguments:
        x: (B, T, d) 或 (B, T, H, d)。

    Returns:
        `apply_rotary(x, positions, max_wavelength)`。
    """

    def __init__(self, positions, max_wavelength=10000.0, **kwargs):
        super().__init__(**kwargs)
        self.positions = positions
        self.max_wavelength = max_wavelength

    def call(self, x):
        positions = ops.convert_to_tensor(self.positions, dtype=self.compute_dtype)
        return apply_rotary(x, positions, self.max_wavelength)
