"""End-to-end memory network on a synthetic one-supporting-fact question-answering task.

Each story is a few sentences "<name> is in <place>" about different people (the distractors),
with a random number of padded (empty) memory slots; the question "where is <name> ?" is
answered by the one sentence about that name (the supporting fact). The data are generated
here, nothing is downloaded. The script trains `attnkit.EndToEndMemoryNetwork`, reports the
test accuracy and how often the attention of each hop lands on the supporting fact, and draws
each hop's attention over the sentences of a test story as `DIR/memn2n_qa.png` (`--out DIR`).

Run: python examples/memn2n_qa.py [--hops 2] [--epochs 40] [--seed 0] [--out DIR]

Source: NNDL 8.5.1; Sukhbaatar et al. 2015 (bAbI task 1 has the same structure).
"""

import argparse
import os
import sys
from pathlib import Path

from grader import quiet

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
quiet.install()  # before TensorFlow: its start-up lines say nothing here

import keras  # noqa: E402
import numpy as np  # noqa: E402

import attnkit.memory  # noqa: E402

NAMES = ["mary", "john", "sandra", "daniel", "bill", "fred", "julie", "emma", "jeff", "anna"]
PLACES = ["kitchen", "garden", "office", "hallway", "bedroom", "bathroom", "park", "school"]
WORDS = ["<pad>", "where", "is", "in", "?", *NAMES, *PLACES]
WORD_ID = {w: i for i, w in enumerate(WORDS)}


def make_dataset(num_examples, max_sentences=6, min_sentences=2, seed=0):
    """Generates the task.

    Args:
        num_examples: number of stories.
        max_sentences: number of memory slots; shorter stories are padded with empty slots.
        min_sentences: the fewest sentences in a story.
        seed: seed of the generator.

    Returns:
        A dict with `story` int32 `(n, max_sentences, 4)`, `question` int32 `(n, 4)`,
        `answer` int32 `(n,)` (a word id) and `support` int32 `(n,)` (the index of the
        supporting sentence).
    """
    rng = np.random.default_rng(seed)
    story = np.zeros((num_examples, max_sentences, 4), "int32")
    question = np.zeros((num_examples, 4), "int32")
    answer = np.zeros(num_examples, "int32")
    support = np.zeros(num_examples, "int32")
    for n in range(num_examples):
        length = rng.integers(min_sentences, max_sentences + 1)
        names = rng.choice(NAMES, size=length, replace=False)
        places = rng.choice(PLACES, size=length, replace=True)
        for i, (name, place) in enumerate(zip(names, places, strict=True)):
            story[n, i] = [WORD_ID[name], WORD_ID["is"], WORD_ID["in"], WORD_ID[place]]
        target = rng.integers(length)
        question[n] = [WORD_ID["where"], WORD_ID["is"], WORD_ID[names[target]], WORD_ID["?"]]
        answer[n] = WORD_ID[places[target]]
        support[n] = target
    return {"story": story, "question": question, "answer": answer, "support": support}


def build_model(max_sentences=6, embedding_dim=20, hops=2, **layer_kwargs):
    """A functional model (story, question) -> (answer probabilities, hop attention)."""
    story = keras.Input((max_sentences, 4), dtype="int32", name="story")
    question = keras.Input((4,), dtype="int32", name="question")
    memn2n = attnkit.memory.EndToEndMemoryNetwork(
        len(WORDS), embedding_dim, hops=hops, name="memn2n", **layer_kwargs
    )
    probs, attention = memn2n(story, question, return_attention_scores=True)
    return keras.Model([story, question], [probs, attention])


def train_and_evaluate(
    hops=2, epochs=40, num_train=2000, num_test=500, embedding_dim=20, seed=0, verbose=0
):
    """Trains a memory network on the task and measures it on fresh stories.

    Returns:
        A dict: `accuracy` (test answer accuracy), `support_accuracy` (list, per hop: how often
        the hop's largest attention weight is on the supporting fact), `padded_weight` (the
        largest attention weight on a padded slot), `seconds`, the trained `model`, and the
        `test` stories with their `attention` (n, hops, slots).
    """
    import time

    keras.utils.set_random_seed(seed)
    train = make_dataset(num_train, seed=seed)
    test = make_dataset(num_test, seed=seed + 1)
    model = build_model(embedding_dim=embedding_dim, hops=hops)
    trainer = keras.Model(model.inputs, model.outputs[0])
    trainer.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    start = time.perf_counter()
    trainer.fit(
        [train["story"], train["question"]],
        train["answer"],
        batch_size=32,
        epochs=epochs,
        verbose=verbose,
    )
    seconds = time.perf_counter() - start
    probs, attention = model.predict([test["story"], test["question"]], verbose=0)
    accuracy = float(np.mean(np.argmax(probs, -1) == test["answer"]))
    picked = np.argmax(attention, axis=-1)  # (n, hops)
    support_accuracy = [float(np.mean(picked[:, k] == test["support"])) for k in range(hops)]
    padded = np.all(test["story"] == 0, axis=-1)  # (n, slots)
    padded_weight = float(np.max(np.where(padded[:, None, :], attention, 0.0)))
    return {
        "accuracy": accuracy,
        "support_accuracy": support_accuracy,
        "padded_weight": padded_weight,
        "seconds": seconds,
        "model": model,
        "test": test,
        "attention": attention,
    }


def sentence(words):
    return " ".join(WORDS[w] for w in words if w) or "(empty)"


def draw(result, out_dir):
    """Saves `memn2n_qa.png`: each hop's attention over the sentences of the first test story
    with the most sentences, and returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    from attnkit.viz import plot_attention, save_figure

    test, attention = result["test"], result["attention"]
    story = int(np.argmax(np.any(test["story"] != 0, axis=-1).sum(-1)))
    fig = plot_attention(
        attention[story],
        x_labels=[sentence(words) for words in test["story"][story]],
        y_labels=[f"hop {k}" for k in range(1, attention.shape[1] + 1)],
        titles=[f"{sentence(test['question'][story])} {WORDS[test['answer'][story]]}"],
        xlabel="memories (sentences of the story)",
        ylabel="",
        vmin=0.0,
        vmax=1.0,
        panel_size=5.0,
    )
    for label in fig.axes[0].get_xticklabels():  # sentences are longer than a column is wide
        label.set_rotation(30)
        label.set_horizontalalignment("right")
    return save_figure(fig, out_dir, "memn2n_qa", bbox_inches="tight")


def main(out_dir=None, hops=2, epochs=40, seed=0, verbose=None):
    """Trains and reports (see `train_and_evaluate`); with `out_dir`, also saves the picture
    (`figure` in the result). `verbose` is Keras's: by default a progress bar on a terminal,
    a line per epoch otherwise."""
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    result = train_and_evaluate(hops=hops, epochs=epochs, seed=seed, verbose=verbose)
    print(f"test accuracy: {result['accuracy']:.3f} (training took {result['seconds']:.1f} s)")
    for k, acc in enumerate(result["support_accuracy"], start=1):
        print(f"hop {k}: attention on the supporting fact in {acc:.1%} of the stories")
    print(f"largest attention weight on a padded slot: {result['padded_weight']:.1e}")
    if out_dir is not None:
        result["figure"] = str(draw(result, out_dir))
        print(f"saved {result['figure']}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hops", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("."), help="where the PNG goes")
    args = parser.parse_args()
    main(args.out, hops=args.hops, epochs=args.epochs, seed=args.seed)
