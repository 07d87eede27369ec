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
    """Attention weights of Gaussian kernel regression, (m,) and (n,) -> (m, n).

    alpha[i, j] = exp(-(x_i - x_j)² / (2 h²)) / Σ_k exp(-(x_i - x_k)² / (2 h²)), that is
    a softmax over the keys (the last axis) of -(x_i - x_j)² / (2 h²).

    queries: the query points x_i, shape (m,). keys: the training inputs x_j, shape (n,).
    bandwidth: h > 0, the kernel width. Every row sums to one. The grader also asks for
    queries far from every key with a small h (scores of minus tens of thousands), where
    exp() underflows to 0 for every key: use a numerically stable softmax.
    """
    raise NotImplementedError("练习 nw：差值 (m, n)，高斯核的对数，在键上做 softmax")


def nadaraya_watson(queries, keys, values, kernel="gaussian", bandwidth=1.0):
    """Nadaraya–Watson predictions f(x_i) = Σ_j K(u_ij) y_j / Σ_k K(u_ik), (m,) -> (m,).

    u_ij = (x_i - x_j) / h. The kernels (constant factors cancel in the ratio):

    - "gaussian": K(u) = exp(-u²/2) (the weights of `gaussian_weights`);
    - "boxcar": K(u) = 1 where |u| <= 1, else 0 (the mean of the y_j within distance h,
      a training point at distance exactly h included);
    - "epanechnikov": K(u) = 1 - u² where |u| < 1, else 0 (never negative).

    queries (m,), keys (n,), values (n,): the query points, the training inputs x_j and the
    training outputs y_j. A query with no training point inside a compact kernel's support
    (every K = 0) is predicted as 0, not NaN. Returns shape (m,). Raise ValueError for a
    kernel other than these three (names are case-sensitive).
    """
    raise NotImplementedError("练习 nw：核矩阵 (m, n)，按行归一化（空行保持为 0），再乘以值")


class ParametricNadarayaWatson(keras.layers.Layer):
    """Nadaraya–Watson regression with one learned weight w (slides "带参数注意力池化").

    f(x_i) = Σ_j softmax_j(-½ ((x_i - x_j) w)²) y_j

    w plays the part of 1/h: a large w makes a narrow kernel. Training it by gradient descent
    needs gradients with respect to w, which Keras computes from your `call`.
    """

    def build(self, queries_shape, keys_shape, values_shape):
        # Given: not part of the exercise. Keep the weight's name `w` (a scalar).
        self.w = self.add_weight(name="w", shape=(), initializer="ones")

    def call(self, queries, keys, values):
        """queries (B, m), keys (B, n), values (B, n) -> predictions (B, m).

        Example b has its own training set keys[b], values[b]. out[b, i] =
        Σ_j softmax_j(-½ ((queries[b, i] - keys[b, j]) * w)²) values[b, j], the softmax over
        the keys j. Gradients must reach the queries, keys, values and w; keep the dtype of
        the inputs (float32 in, float32 out).
        """
        raise NotImplementedError("练习 nw：差值 (B, m, n) 乘以 w，取 -½ 平方，在键上做 softmax，再乘以值")
