"""Lab: train-memn2n — an end-to-end memory network that learns where each person is.

NNDL §8.5.1 (end-to-end memory networks); Sukhbaatar et al. 2015 (bAbI task 1, one supporting
fact, with the temporal encoding of its §4.1). A story is F facts "person is in place", people
moving from place to place; the question names a person of the story, and the answer is the
place of the latest fact about them: the supporting fact. Persons are the tokens 1 … P, places
P + 1 … P + Q, of one vocabulary (0 is never a fact's token). The story and the question come
packed in one int array of shape (N, F + 1, 2):

    inputs[:, i] = (person, place) of fact i, for i = 0 … F − 1 (oldest first)
    inputs[:, F] = (the person asked about, 0)

A memory network embeds each fact as a memory m_i (and an output c_i), the question as u,
attends p_i = softmax_i(u · m_i) and answers from o + u with o = Σ_i p_i c_i. Which fact is the
latest about a person depends on the order of the facts: the memories need a temporal encoding.

The grader makes the data from a seed it keeps, calls `build_model` and then `train_model` in
the sandbox, and asks the trained model (through `predict` and `attention_weights`, given below)
about held-out stories it made. In its own process it then checks:

- accuracy: at least 90% of the held-out answers right;
- the temporal encoding: with the facts of a story put in another order (the latest fact about
  the person asked now another one), the answer changes;
- attention on the supporting fact: the largest attention weight is on the supporting fact in
  at least 80% of the held-out stories (in one hop at least);
- the answer follows the fact: with the supporting fact's place changed, the answer changes
  with it in at least 80% of the stories.

Training must finish within the part's time limit on one CPU core: keep the model small. Keras
is seeded before `build_model` is called, so the same file and seed give the same model. Keep
the names and signatures below.

Grade your work with `grader check train-memn2n`.

Parts: train 10 — 10 points.
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
    raise NotImplementedError("练习 train-memn2n：只拟合概率输出；Adam，30 个轮次")


def predict(model, inputs):
    """训练后模型的答案概率 (N, vocab_size)。"""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """训练后模型对事实的注意力权重 (N, F)。"""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
