"""实验：train-transformer —— 一个学会反转序列的小型 Transformer 解码器。

NNDL §8.3（自注意力）；Vaswani 等 2017（解码器的掩码自注意力，可学习的或正弦的位置）。
每个序列是 n 个源词元（1 … V − 1，可以重复），接着分隔符 0，再接反转后的源序列：

    x_0 … x_{n−1}  0  x_{n−1} … x_0

模型读入去掉最后一个词元的序列（长度 L = 2n），在每个位置预测下一个词元（教师强制）。
只有答案位置 p = n … 2n − 1 可以预测：位置 p 的答案是位置 2n − 1 − p 上的源词元。你的模型
必须是解码器：位置 p 的输出只能依赖词元 0 … p（因果掩码）。

答案是编码过的：每次评分都用从其种子抽取的一个置换 σ 给答案词元 1 … V − 1 重新命名，没有哪个
词元保持原名，你的代码也看不到 σ；所以数据中的答案是 σ(x_{n−1}) … σ(x_0)（输入中已给出的答案
也是如此），源序列和分隔符的词元不变。会学习的模型在学会任务的同时找到 σ，就像它的输出层能学会
任何映射一样；自己反转词元的规则给出的是未编码的词元，因而是错的。请按给定的目标训练；想试验
你的模型，就用未编码的词元自己造数据。

源序列也被轮转了：每次评分还把 n 个源位置轮转 r 位（1 … n − 1，从其种子抽取，每个序列
相同），所以数据的位置 j 上是 x_{(j+r) mod n}；答案仍是上面那些。模型从数据中学会该看哪里，
就像学会其余的一样；手工画在反对角线上的注意力看的是错的词元。评分器先把你的注意力的源键读回
任务本来的顺序，再检查它。

评分器用自己保管的种子生成数据，在沙箱中先调用 `build_model` 再调用 `train_model`，然后
向训练好的模型本身（它的两个输出，即下面的 `predict` 和 `attention_weights` 所读取的）询问它生成的留出序列。它还会询问训练前的模型、在答案被打乱到其他样本上的数据上训练的新模型，以及把权重恢复为训练前的值的训练后模型：答案不是来自训练的模型不得分。
随后在它自己的进程中检查：

- 准确率：留出答案词元至少答对 95%；
- 因果：改动某个位置之后的词元，不改变到该位置为止的任何输出；
- 使用位置：源序列换一种顺序后，第一个答案（最后一个源词元）随之改变；单靠自注意力
  看到的是集合而不是顺序（NNDL §8.3）；
- 注意力在反对角线上：在答案位置 p，最大的注意力权重落在镜像位置的源词元上，即键
  2n − 1 − p（至少一个头如此）。

评分器还会自己训练你的模型的一个新副本：从相同的初始权重开始，在同样的数据上用它自己的梯度下降——Adam，学习率 0.01 并按余弦衰减，10 个 epoch，每批 64 条序列，损失为答案位置上概率的交叉熵（参考解的配方）。这个副本也必须学会：准确率超过从随机猜测到及格线的一半，并通过上面关于注意力和顺序的检查（允许比各自的标准低 10 个百分点）。本实验给分的是通过梯度下降学习的模型，任何 `train_model` 都无法替代它（按规则或由计数写入的权重、回调、你自己的优化器或梯度）。请让你的模型能被这样的配方训练，并一开始就构建成训练结束时的形态（你的 `train_model` 切换的模式，比如线性起步或一开始冻结的层，在那里不会被切换）。

每项注意力检查都先要求权重由输入计算得出：对每个输入都相同的权重（一张表、只由位置得到的查询和键）
不予接受。

训练必须在该部分的时间限制（150 秒）内、在一个 CPU 核上完成：让模型保持小巧。调用 `build_model` 之前 Keras 已设好种子，所以同一文件和
同一种子得到同一模型。请保留下面的名字和签名；`predict` 和 `attention_weights` 要求
模型的两个输出如 `build_model` 所述。

用 `grader check train-transformer` 给你的作业评分。

各部分：train 10 —— 共 10 分。
"""

import keras
import numpy as np
from keras import layers, ops


def build_model(vocab_size, length):
    """一个 Transformer 解码器，处理长度为 `length`、词表大小为 `vocab_size` 的序列。

    Args:
        vocab_size: int，词元为 0 … vocab_size − 1（0 是分隔符）。
        length: int，模型读入的位置数 L（2n）。

    Returns:
        一个 keras.Model，把整数词元 (B, L) 映射到两个输出：下一个词元的概率
        (B, L, vocab_size)，以及其自注意力的权重 (B, H, L, L)（或 (B, L, L)），
        因果（对角线以上为零），每行之和为 1。
    """
    raise NotImplementedError("练习 train-transformer：嵌入 + 可学习位置，因果注意力 + 残差，MLP，softmax")


def train_model(model, inputs, targets):
    """训练 `model`（`build_model` 的返回值），由 `inputs` 预测 `targets`。

    Args:
        model: `build_model` 返回的 keras.Model。
        inputs: (N, L) int32，去掉最后一个词元的训练序列。
        targets: (N, L) int32，每个位置的下一个词元（`inputs` 移一位）。源位置
            0 … n − 1 的目标是随机的：任何模型都学不会。

    Returns:
        无：模型就地训练。
    """
    raise NotImplementedError("练习 train-transformer：拟合概率，给答案位置加权；Adam，余弦衰减，10 个轮次")


def predict(model, inputs):
    """训练后模型的下一个词元概率 (N, L, vocab_size)。"""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """训练后模型的自注意力权重 (N, H, L, L)。"""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
