"""实验：train-memn2n —— 一个学会每个人在哪的端到端记忆网络。

NNDL §8.5.1（端到端记忆网络）；Sukhbaatar 等 2015（bAbI 任务 1，一条支持事实，以及其 §4.1
的时间编码）。一个故事是 F 条“某人在某地”的事实，人们在各地点之间走动；问题问故事中的
某个人，答案是关于此人的最新一条事实中的地点：即支持事实。人是词元 1 … P，地点是
P + 1 … P + Q，同属一个词表（0 不是任何事实的词元）。故事和问题装在一个形状为
(N, F + 1, 2) 的整数数组里：

    inputs[:, i] = 事实 i 的 (人, 地点)，i = 0 … F − 1（最早的在前）
    inputs[:, F] = (被问的人, 0)

记忆网络把每条事实嵌入为记忆 m_i（以及输出 c_i），把问题嵌入为 u，计算注意力
p_i = softmax_i(u · m_i)，再由 o + u 作答，其中 o = Σ_i p_i c_i。哪条事实是关于某人的
最新一条，取决于事实的先后：记忆需要时间编码。

答案是编码过的：每次评分都用从其种子抽取的一个置换 σ 给地点重新命名，没有哪个地点保持原名，
你的代码也看不到 σ；所以一个故事的目标是 σ(地点)，故事本身的词元不变。会学习的模型在学会任务的
同时找到 σ，就像它的输出层能学会任何映射一样；自己从故事中读出地点的规则给出的是未编码的词元，
因而是错的。请按给定的目标训练；想试验你的模型，就用未编码的词元自己造数据。

事实也被轮转了：每次评分都把故事的 F 条事实轮转 r 位（1 … F − 1，从其种子抽取，每个故事
相同），所以数据中的第 j 条事实是故事的第 (j + r) mod F 条，最新的事实不在最后一行；问题仍在
最后。模型的时间编码从数据中学会这个顺序，就像它学会其余的一样；取关于此人的最后一条事实的
规则是错的。评分器先把你的注意力读回故事本来的顺序，再检查它。

评分器用自己保管的种子生成数据，在沙箱中先调用 `build_model` 再调用 `train_model`，然后
向训练好的模型本身（它的两个输出，即下面的 `predict` 和 `attention_weights` 所读取的）询问它生成的留出故事。它还会询问训练前的模型、在答案被打乱到其他样本上的数据上训练的新模型，以及把权重恢复为训练前的值的训练后模型：答案不是来自训练的模型不得分。
随后在它自己的进程中检查：

- 准确率：留出答案至少答对 85%；
- 时间编码：把一个故事的事实换一种顺序（关于被问者的最新一条事实变成另一条），
  答案随之改变；
- 注意力在支持事实上：至少 80% 的留出故事中最大的注意力权重落在支持事实上（至少
  一跳如此）；
- 答案随事实而变：把支持事实的地点改掉，至少 80% 的故事的答案随之改变。

每项注意力检查都先要求权重由输入计算得出：对每个输入都相同的权重（一张表、只由位置得到的查询和键）
不予接受。

训练必须在该部分的时间限制内、在一个 CPU 核上完成：让模型保持小巧。调用 `build_model`
之前 Keras 已设好种子，所以同一文件和同一种子得到同一模型。请保留下面的名字和签名。

用 `grader check train-memn2n` 给你的作业评分。

各部分：train 10 —— 共 10 分。
"""

import keras
from keras import layers, ops


def build_model(vocab_size, facts):
    """一个端到端记忆网络，处理由 `facts` 条事实组成的故事。

    Args:
        vocab_size: int，人和地点是词元 1 … vocab_size − 1。
        facts: int，一个故事的事实数 F。

    Returns:
        一个 keras.Model，把整数输入 (B, F + 1, 2)（先是事实，再是问题）映射到两个
        输出：答案的概率 (B, vocab_size)，以及对事实的注意力权重 (B, F)
        （或 (B, hops, F)），每行之和为 1。
    """
    raise NotImplementedError("练习 train-memn2n：记忆：词元嵌入之和 + 时间编码；一跳；对 o + u 做全连接")


def train_model(model, inputs, targets):
    """训练 `model`（`build_model` 的返回值），由 `inputs` 回答 `targets`。

    Args:
        model: `build_model` 返回的 keras.Model。
        inputs: (N, F + 1, 2) int32，故事和问题。
        targets: (N,) int32，答案（地点词元）。

    Returns:
        无：模型就地训练。
    """
    raise NotImplementedError("练习 train-memn2n：只拟合概率输出；Adam，余弦衰减，12 个轮次")


def predict(model, inputs):
    """训练后模型的答案概率 (N, vocab_size)。"""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """训练后模型对事实的注意力权重 (N, F)。"""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
