"""实验：train-seq2seq —— 一个学会改写日期、带 Bahdanau 注意力的编码器–解码器。

NNDL §8.2（序列到序列模型中的注意力）；Bahdanau 等 2015（双向编码器上的加性注意力）。
日期 "14 <jul> 2023" 改写为数字 "1 4 0 7 2 0 2 3"。数字是词元 0 … 9，月份是 10 … 21
（一月 … 十二月），解码器的起始词元是 22。源序列有 7 个词元（日的两位数字、月份、年的
四位数字），目标是 8 个数字。源序列和解码器的输入（起始词元，再接去掉最后一个数字的
目标：教师强制）装在一个形状为 (N, 15) 的整数数组里：

    inputs[:, :7] = 源序列，  inputs[:, 7:] = (22, target[:, :-1])

在第 t 步，解码器的状态 s_t（读完到 t 为止的输入之后）用 Bahdanau 的加性分数
e_tj = vᵀ tanh(W s_t + U h_j) 给每个编码器状态 h_j 打分，计算注意力 a_tj = softmax_j(e_tj)，
再由 s_t 和上下文 Σ_j a_tj h_j 预测数字。

解码器写出的数字是编码过的：每次评分都用从其种子抽取的一个置换 σ 给目标中的数字 0 … 9
（以及包含这些数字的解码器输入）重新命名，没有哪个数字保持原名，你的代码也看不到 σ；源序列的
词元不变。会学习的模型在学会任务的同时找到 σ，就像它的输出层能学会任何映射一样；自己改写日期
的规则给出的是未编码的数字，因而是错的。请按给定的目标训练；想试验你的模型，就用未编码的数字
自己造数据。

源序列也被轮转了：每次评分都把 7 个源词元轮转 r 位（1 … 6，从其种子抽取，每个日期相同），
所以数据中的第 j 个源词元是日期的第 (j + r) mod 7 个词元；目标保持日期本来的顺序。你的注意力
从数据中学会每个数字在哪里，就像学会其余的一样；手工画出的对齐看的是错的词元。评分器先把你的
注意力的源键读回日期本来的顺序，再检查对齐。

评分器用自己保管的种子生成数据，在沙箱中先调用 `build_model` 再调用 `train_model`，然后
向训练好的模型本身（它的两个输出，即下面的 `predict` 和 `attention_weights` 所读取的）询问它生成的留出日期。它还会询问训练前的模型、在答案被打乱到其他样本上的数据上训练的新模型，以及把权重恢复为训练前的值的训练后模型：答案不是来自训练的模型不得分。
随后在它自己的进程中检查：

- 准确率：留出目标数字至少答对 95%（教师强制）；
- 因果：改动某一步之后的解码器输入，不改变到该步为止的输出；
- 查询知道步数：读到同一个解码器输入、却翻译不同源词元的两步，注意力不相同
  （查询是 s_t，而不是输入的嵌入）；
- 对齐：这种翻译是单调的，目标第 t 步读源词元 a(t) = 0, 1, 2, 2, 3, 4, 5, 6（月份的两位
  数字都读月份）：至少 80% 的步中最大的注意力权重落在那里。

每项注意力检查都先要求权重由输入计算得出：对每个输入都相同的权重（一张表、只由位置得到的查询和键）
不予接受。

训练必须在该部分的时间限制内、在一个 CPU 核上完成：让模型保持小巧。调用 `build_model`
之前 Keras 已设好种子，所以同一文件和同一种子得到同一模型。请保留下面的名字和签名。

用 `grader check train-seq2seq` 给你的作业评分。

各部分：train 10 —— 共 10 分。
"""

import keras
from keras import layers, ops


def build_model(vocab_size, source_length, target_length):
    """一个带加性注意力的编码器–解码器。

    Args:
        vocab_size: int，词元为 0 … vocab_size − 1。
        source_length: int，源序列的词元数 S。
        target_length: int，目标序列的词元数 T。

    Returns:
        一个 keras.Model，把整数输入 (B, S + T)（先是源序列，再是解码器的输入）映射到
        两个输出：每个目标词元的概率 (B, T, vocab_size)，以及注意力权重 (B, T, S)，
        每行之和为 1。
    """
    raise NotImplementedError("练习 train-seq2seq：BiGRU 编码器，在输入上运行的 GRU 解码器，加性分数，上下文 + 状态")


def train_model(model, inputs, targets):
    """训练 `model`（`build_model` 的返回值），由 `inputs` 预测 `targets`。

    Args:
        model: `build_model` 返回的 keras.Model。
        inputs: (N, S + T) int32，源序列和解码器的输入。
        targets: (N, T) int32，目标数字。

    Returns:
        无：模型就地训练。
    """
    raise NotImplementedError("练习 train-seq2seq：只拟合概率输出；Adam，3 个轮次")


def predict(model, inputs):
    """训练后模型的目标概率 (N, T, vocab_size)。"""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """训练后模型的注意力权重 (N, T, S)。"""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
