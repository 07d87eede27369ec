"""实验：kv-cache——带键/值缓存的因果自注意力的一步解码。

NNDL §8.3（自注意力）；Vaswani 等人 2017（解码器中带掩码的自注意力）。逐个生成词元的解码器，
每一步都会重新计算之前每个词元的键和值。在因果掩码下它们从不改变，所以只计算一次并保存在缓存中；
每一步把新词元的键和值写在它的位置 `cache_update_index`，并且只关注位置 ≤ 该下标的各位置：

    out = Σ_{j ≤ index} softmax_j(q · k_j / √d) v_j

缓存是一个张量，布局与 attnkit 和 keras-hub 相同：

    cache[:, 0] = keys, cache[:, 1] = values,  shape (B, 2, L, H, d)

（B 个序列，L 个位置，H 个维度为 d 的头）。该下标之后的位置存的是零或之前某个序列的过期条目：
它们的权重必须恰好为零。

用 `grader check kv-cache` 为你的作业评分。这些函数以 float64（以及一次 float32）的 NumPy 数组
调用；返回相同 dtype 的张量（或数组），并且不要修改参数。逐步解码整个序列必须得到完整的因果计算
的结果。保持下面的名称和签名不变。在这里 NumPy 与 keras.ops 的评分相同；
在 Keras 解码器中缓存是张量，不能原地写入：`ops.slice_update` 返回一个新的张量，保留梯度
且可以编译，attnkit 和 keras-hub 的缓存就是这样做的。

各部分：update_cache 3，attend_cached 4，incremental_attention 3——共 10 分。
"""

import math

from keras import ops


def update_cache(cache, key, value, cache_update_index):
    """把新词元的键和值写在它的位置上之后的缓存。

    Args:
        cache: (B, 2, L, H, d)，键在 cache[:, 0]，值在 cache[:, 1]。
        key: (B, 1, H, d)，新词元的键（每个头一个）。
        value: (B, 1, H, d)，它的值。
        cache_update_index: int，新词元的位置，0 <= index < L。

    Returns:
        一个新的 (B, 2, L, H, d) 张量：键在 [:, 0, index]，值在 [:, 1, index]，其余每个条目
        与 `cache` 相同（`cache` 本身不得改变）。
    """
    raise NotImplementedError("练习 kv-cache：在新的第 1 轴上堆叠键和值，把它们写在位置 index")


def attend_cached(query, cache, cache_update_index):
    """一步解码：新词元的查询关注缓存中位置 ≤ index 的各位置。

    Args:
        query: (B, 1, H, d)，位于位置 `cache_update_index` 的词元的查询。
        cache: (B, 2, L, H, d)，已写入位置 0..index 的键和值（包括该词元自己的）；
            之后的位置可以是任何内容。
        cache_update_index: int，该词元的位置。

    Returns:
        (B, 1, H, d)：对每个样本和每个头，Σ_{j ≤ index} softmax_j(q·k_j / √d) v_j。
    """
    raise NotImplementedError("练习 kv-cache：对全部 L 个位置计算打分 q·k_j/√d，掩蔽 j > index，softmax，对值加权")


def incremental_attention(query, key, value, max_length):
    """对整个序列的因果自注意力，逐个词元解码。

    从一个空缓存（全零，(B, 2, max_length, H, d)）开始；对 t = 0, 1, ..., T − 1，把词元 t 的键和值
    写在位置 t（`update_cache`），再用它的查询做注意力（`attend_cached`）。结果必须等于完整的因果
    计算，其中输出 t 关注位置 0..t。

    Args:
        query, key, value: (B, T, H, d)，整个序列投影后的查询、键、值。
        max_length: int >= T，缓存能容纳的位置数。

    Returns:
        (B, T, H, d)：按顺序排列的 T 步的输出。
    """
    raise NotImplementedError("练习 kv-cache：在各步之间保留同一个缓存；第 t 步写在位置 t，并用 q_t 做注意力")
