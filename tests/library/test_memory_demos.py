"""The external-memory demos in examples/, run and asserted.

CI runs each demo end to end in seconds (a step or two of training, fewer patterns), checking
what holds trained or not; what they learn, and the capacity curve measured in full, are the
`long` tests' (`pytest -m long tests/library/test_memory_demos.py`).
"""

import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_memn2n_task_has_one_supporting_fact_among_distractors():
    demo = _example("memn2n_qa")
    data = demo.make_dataset(50, seed=3)
    words = np.array(demo.WORDS)
    for n in range(50):
        asked = data["question"][n, 2]
        mentions = [i for i in range(6) if asked in data["story"][n, i]]
        assert mentions == [data["support"][n]]  # exactly one sentence is about the name
        assert data["story"][n, data["support"][n], 3] == data["answer"][n]
        assert words[data["answer"][n]] in demo.PLACES
    lengths = np.any(data["story"] != 0, axis=-1).sum(-1)
    assert lengths.min() >= 2 and lengths.max() <= 6 and len(set(lengths)) > 1  # padded slots


@pytest.mark.slow
def test_memn2n_runs_end_to_end_never_attends_to_padding_and_draws(tmp_path):
    """One epoch on 64 stories: no hop puts weight on a padded memory slot (trained or not),
    and the picture of each hop's attention is written."""
    demo = _example("memn2n_qa")
    result = demo.train_and_evaluate(hops=2, epochs=1, num_train=64, num_test=50, seed=0)
    assert result["attention"].shape[1] == 2  # one row per hop
    assert result["padded_weight"] == 0.0
    plot = demo.draw(result, tmp_path)
    assert plot == tmp_path / "memn2n_qa.png"
    assert plot.stat().st_size > 1000 and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.long
def test_memn2n_answers_and_attends_to_the_supporting_fact(tmp_path):
    demo = _example("memn2n_qa")
    result = demo.train_and_evaluate(hops=2, epochs=15, seed=0)
    assert result["accuracy"] >= 0.95
    # The first hop's largest attention weight is on the supporting fact.
    assert result["support_accuracy"][0] >= 0.95
    assert result["padded_weight"] == 0.0  # padded memory slots are never attended to
    plot = demo.draw(result, tmp_path)
    assert plot == tmp_path / "memn2n_qa.png"
    assert plot.stat().st_size > 1000 and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_copy_task_batches():
    demo = _example("ntm_copy")
    x, y, w = demo.make_batch(np.random.default_rng(0), 8, max_length=4, bits=3)
    assert x.shape == (8, 9, 4) and y.shape == (8, 9, 3) and w.shape == (8, 9)
    for b in range(8):
        length = int(w[b].sum())
        assert 1 <= length <= 4
        np.testing.assert_array_equal(y[b, length + 1 : 2 * length + 1], x[b, :length, :3])
        assert x[b, length, 3] == 1.0 and x[b, length + 1 :].sum() == 0.0


class _Answers:
    """A stand-in model whose predictions are given logits."""

    def __init__(self, logits):
        self.logits = logits

    def predict(self, inputs, **_):
        return self.logits


def test_bit_errors_counts_the_wrong_bits_of_the_output_steps_only():
    demo = _example("ntm_copy")
    x, y, w = demo.make_batch(np.random.default_rng(1), 16, max_length=5, bits=4)
    right = np.where(y > 0.5, 3.0, -3.0)
    outside = w[..., None] == 0
    # Right on the output steps, wrong everywhere else: no error.
    anywhere_else = np.where(outside, -right, right)
    assert np.all(demo.bit_errors(_Answers(anywhere_else), x, y, w) == 0)
    # Wrong on every output step: every bit of the L copied vectors.
    wrong = demo.bit_errors(_Answers(-right), x, y, w)
    np.testing.assert_array_equal(wrong, 4 * w.sum(axis=1))


@pytest.mark.slow
def test_ntm_trains_a_few_steps_from_chance():
    """Two steps, op by op (seconds): the untrained NTM gets about half of the copied bits
    wrong, as chance would, and the steps run."""
    result = _example("ntm_copy").train_and_evaluate(steps=2, num_test=32, seed=0, run_eagerly=True)
    assert 2.0 < result["initial_bit_error"] < 10.0  # of 4 bits x 3 steps on average
    assert np.isfinite(result["bit_error"])


@pytest.mark.long
def test_ntm_learns_the_copy_task():
    result = _example("ntm_copy").train_and_evaluate(steps=600, seed=0)
    assert result["initial_bit_error"] > 2.0  # untrained: about half of ~9 bits wrong
    assert result["bit_error"] < 0.05  # wrong bits per sequence after training
    assert result["bit_error_rate"] < 0.005


def test_breakdown_load_interpolates_the_crossing():
    demo = _example("hopfield_capacity")
    loads, errors = [0.10, 0.12, 0.14, 0.16], [0.0, 0.008, 0.024, 0.05]
    assert demo.breakdown_load(loads, errors, threshold=0.016) == pytest.approx(0.13)
    assert np.isnan(demo.breakdown_load(loads, [0.0] * 4))


@pytest.mark.slow
def test_hopfield_capacity_recalls_at_low_load_fails_at_high_load_and_plots(tmp_path):
    """60 patterns per load instead of 240 (seconds): every pattern recalled exactly at
    N = 0.04 m, recall failed at N = 0.24 m, and the plot written."""
    result = _example("hopfield_capacity").run(
        units=200, out=tmp_path, seed=0, patterns_per_load=60
    )
    assert result["perfect"][0] == 1.0 and result["bit_error"][0] == 0.0  # N = 0.04 m
    assert result["perfect"][-1] < 0.1 and result["bit_error"][-1] > 0.1  # N = 0.24 m
    plot = pathlib.Path(result["plot"])
    assert plot.exists() and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.long
def test_hopfield_capacity_breaks_down_near_0_14_m(tmp_path):
    result = _example("hopfield_capacity").run(units=200, out=tmp_path, seed=0)
    assert 0.11 <= result["breakdown"] <= 0.17
    assert result["perfect"][0] == 1.0 and result["bit_error"][0] == 0.0  # N = 0.04 m
    assert result["perfect"][-1] < 0.1 and result["bit_error"][-1] > 0.1  # N = 0.24 m
    plot = pathlib.Path(result["plot"])
    assert plot.exists() and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
