"""实验：Nadaraya–Watson 核回归——用核函数做注意力汇聚。

课件“注意力池化”（Nadaraya 1964，Watson 1964）；d2l“注意力汇聚”。给定训练样本对 (x_j, y_j)，在查询
x 处的预测是 y_j 的加权平均：

    f(x) = Σ_j K((x - x_j) / h) y_j / Σ_k K((x - x_k) / h) = Σ_j α(x, x_j) y_j

这就是注意力汇聚：x 是查询，x_j 是键，y_j 是值，归一化后的核 α(x, x_j) 是注意力权重。用高斯核
K(u) ∝ exp(-u²/2) 时，权重是一个 softmax：α(x, x_j) = softmax_j(-(x - x_j)² / (2 h²))。核的常数因子
1/√(2π) 在比值中约掉了。没有要学习的参数：这个模型是非参数的。然后你用一个可学习的权重 w 把它变成
参数化的。

用 `grader check nw` 为你的作业评分。普通函数以 NumPy float64 数组调用（返回 NumPy 数组或张量）；这个
层以 float64（以及一次 float32）调用，它的输出和梯度（关于查询、键、值和权重 `w`）都与参考答案比较。
形状是变化的：一个查询、一个训练点、m != n。保持下面的名称和签名不变。

各部分：gaussian_weights 2，nadaraya_watson 3，ParametricNadarayaWatson 4——共 9 分。
"""

import keras
from keras import ops


def gaussian_weights(queries, keys, bandwidth=1.0):
    """高斯核回归的注意力分布，(m,) 和 (n,) -> (m, n)。

    alpha[i, j] = exp(-(x_i - x_j)² / (2 h²)) / Σ_k exp(-(x_i - x_k)² / (2 h²))，也就是 -(x_i
    - x_j)² / (2 h²) 在各个键（最后一个轴）上的 softmax。

    queries：查询点 x_i，形状 (m,)。keys：训练输入 x_j，形状 (n,)。bandwidth：h > 0，核的宽
    度。每行之和为一。评分程序也会在 h 很小时给出远离所有键的查询（打分为负几万），这时 exp()
    对每个键都下溢为 0：使用数值稳定的 softmax。
    """
    raise NotImplementedError("练习 nw：差值 (m, n)，高斯核的对数，在键上做 softmax")


def nadaraya_watson(queries, keys, values, kernel="gaussian", bandwidth=1.0):
    """Nadaraya–Watson 预测 f(x_i) = Σ_j K(u_ij) y_j / Σ_k K(u_ik)，(m,) -> (m,)。

    u_ij = (x_i - x_j) / h。核函数如下（常数因子在比值中约掉）：

    - "gaussian"：K(u) = exp(-u²/2)（即 `gaussian_weights` 的权重）；
    - "boxcar"：|u| <= 1 处 K(u) = 1，否则为 0（距离 h 以内的 y_j 的平均，恰好在距离 h 处的
      训练点也算在内）；
    - "epanechnikov"：|u| < 1 处 K(u) = 1 - u²，否则为 0（从不为负）。

    queries (m,), keys (n,), values (n,)：查询点、训练输入 x_j 和训练输出 y_j。对于紧支撑的
    核，若某个查询的支撑集内没有训练点（所有 K = 0），则预测为 0，而不是 NaN。返回形状 (m,)。
    核函数不是这三种时抛出 ValueError（名称区分大小写）。
    """
    raise NotImplementedError("练习 nw：核矩阵 (m, n)，按行归一化（空行保持为 0），再乘以值")


class ParametricNadarayaWatson(keras.layers.Layer):
    """带一个可学习权重 w 的 Nadaraya–Watson 回归（课件中的“带参数注意力池化”）。

    f(x_i) = Σ_j softmax_j(-½ ((x_i - x_j) w)²) y_j

    w 起到 1/h 的作用：w 越大，核越窄。用梯度下降训练它需要关于 w 的梯度，Keras 会根据你的
    `call` 计算。
    """

    def build(self, queries_shape, keys_shape, values_shape):
        # 已给出：不属于练习。保持权重的名称 `w`（一个标量）不变。
        self.w = self.add_weight(name="w", shape=(), initializer="ones")

    def call(self, queries, keys, values):
        """queries (B, m), keys (B, n), values (B, n) -> predictions (B, m)。

        样本 b 有它自己的训练集 keys[b]、values[b]。out[b, i] = Σ_j softmax_j(-½ ((queries[b, i]
        - keys[b, j]) * w)²) values[b, j]，softmax 在各个键 j 上进行。梯度必须传到 queries、
        keys、values 和 w；保持输入的 dtype（输入 float32，输出也是 float32）。
        """
        raise NotImplementedError("练习 nw：差值 (B, m, n) 乘以 w，取 -½ 平方，在键上做 softmax，再乘以值")
