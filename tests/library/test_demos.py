"""The learning demos in examples/: each must actually learn, and draw its attention.

CI runs each demo end to end on a few steps of training (seconds), checking what holds trained or
not (the task's data, the masks, the estimators that train nothing, the picture, a clean
output); that each one learns is the `long` tests' (`pytest -m long tests/library/test_demos.py`).
"""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from grader.reference import tasks
from tests.grader.test_quiet import NOISE, fresh

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.slow
# A line in absl's log format (severity, date, time, thread, file:line]) from TensorFlow's C++.
ABSL_LINE = re.compile(r"^[IWEF]\d{4} \d+:\d+:\d+\.\d+\s+\d+ [\w.+-]+:\d+\]", re.MULTILINE)


def load(name):
    spec = importlib.util.spec_from_file_location(f"attnkit_demo_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_figure(results, tmp_path, name):
    path = Path(results["figure"])
    assert path == tmp_path / f"{name}.png"
    assert path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_nadaraya_watson_kernels_beat_the_constant_predictor_and_it_draws(tmp_path):
    """The three kernel regressions train nothing: they beat the constant predictor as they
    are. The parametric model takes two steps, and the picture is written."""
    results = load("nadaraya_watson").main(out_dir=tmp_path, epochs=2)
    constant = results["constant_mse"]
    for kernel in ("gaussian", "boxcar", "epanechnikov"):
        assert results[f"{kernel}_mse"] < 0.3 * constant
    _check_figure(results, tmp_path, "nadaraya_watson")


@pytest.mark.long
def test_nadaraya_watson_beats_the_constant_predictor(tmp_path):
    results = load("nadaraya_watson").main(out_dir=tmp_path)
    constant = results["constant_mse"]
    for kernel in ("gaussian", "boxcar", "epanechnikov"):
        assert results[f"{kernel}_mse"] < 0.3 * constant
    assert results["parametric_mse"] < 0.3 * constant
    # The parametric model learns w: it moves away from its init and held-out MSE improves.
    assert abs(results["w_learned"] - results["w_init"]) > 0.5
    assert results["parametric_mse"] < 0.8 * results["parametric_init_mse"]
    _check_figure(results, tmp_path, "nadaraya_watson")


def test_pointer_sort_lists_come_with_the_indices_that_sort_them():
    x, targets = load("pointer_sort").make_lists(np.random.default_rng(0), 200, 5)
    assert x.shape == (200, 5, 1)
    picked = np.take_along_axis(x[..., 0], targets, axis=1)
    assert np.all(np.diff(picked, axis=1) > 0)  # ascending, every index once
    assert np.all(np.sort(targets, axis=1) == np.arange(5))


def test_pointer_sort_runs_as_a_reader_runs_it_and_says_only_what_it_measured(tmp_path):
    """`python examples/pointer_sort.py --out DIR`, one epoch on 256 lists: the same ops as the
    full run, in a fresh process with none of the suite's quieting. None of TensorFlow's
    start-up or run-time log lines (this demo's int64 ops made oneDNN log an error-level line
    on CPUs without AVX-512); tests/grader/test_quiet.py shows that TensorFlow alone is noisy
    here. Its accuracy line and its picture."""
    code, output = fresh(
        ["examples/pointer_sort.py", "--out", str(tmp_path), "--epochs", "1"]
        + ["--train-size", "256"]
    )
    assert code == 0, output[-3000:]
    assert not NOISE.search(output) and not ABSL_LINE.search(output), output[-3000:]
    accuracy = re.search(r"whole lists sorted: ([\d.]+)%, positions: ([\d.]+)%", output)
    assert accuracy and 0.0 <= float(accuracy.group(1)) <= float(accuracy.group(2)), output
    assert f"saved {tmp_path / 'pointer_sort.png'}" in output
    _check_figure({"figure": tmp_path / "pointer_sort.png"}, tmp_path, "pointer_sort")


@pytest.mark.long
def test_pointer_network_learns_to_sort_and_says_only_that(tmp_path):
    """Run as a reader runs it (`python examples/pointer_sort.py --out DIR`, a fresh process with
    none of the suite's quieting): what it learned, and none of TensorFlow's start-up or
    run-time log lines (this demo's int64 ops made oneDNN log an error-level line on CPUs
    without AVX-512). tests/grader/test_quiet.py shows that TensorFlow alone is noisy here."""
    code, output = fresh(["examples/pointer_sort.py", "--out", str(tmp_path)])
    assert code == 0, output[-3000:]
    assert not NOISE.search(output) and not ABSL_LINE.search(output), output[-3000:]
    accuracy = re.search(r"whole lists sorted: ([\d.]+)%", output)
    assert accuracy and float(accuracy.group(1)) >= 90.0, output[-3000:]
    assert f"saved {tmp_path / 'pointer_sort.png'}" in output
    _check_figure({"figure": tmp_path / "pointer_sort.png"}, tmp_path, "pointer_sort")


def test_bahdanau_reverse_data_is_the_reversed_source_then_the_end_token():
    demo = load("bahdanau_reverse")
    source, decoder_in, target, lengths = demo.make_data(np.random.default_rng(0), 100, 13, 3, 8)
    assert set(lengths) == set(range(3, 9))
    for b, n in enumerate(lengths):
        tokens = source[b, :n]
        assert np.all(tokens >= demo.FIRST) and np.all(source[b, n:] == demo.PAD)
        assert list(target[b, : n + 1]) == [*tokens[::-1], demo.EOS]
        assert list(decoder_in[b, : n + 1]) == [demo.BOS, *tokens[::-1]]
        assert np.all(target[b, n + 1 :] == demo.PAD) and np.all(decoder_in[b, n + 1 :] == 0)


def test_bahdanau_reverse_runs_end_to_end_and_never_attends_to_padding(tmp_path):
    """One epoch on 64 sequences: the greedy decode's attention puts no weight on a padded
    source position (the mask, trained or not), and the picture is written."""
    results = load("bahdanau_reverse").main(out_dir=tmp_path, epochs=1, train_size=64, test_size=32)
    assert results["padded_weight"] == 0.0
    assert 0.0 < results["anti_diagonal_weight"] < 1.0
    _check_figure(results, tmp_path, "bahdanau_reverse")


@pytest.mark.long
def test_bahdanau_decoder_learns_to_reverse_along_the_anti_diagonal(tmp_path):
    results = load("bahdanau_reverse").main(out_dir=tmp_path)
    assert results["token_accuracy"] >= 0.95
    assert results["anti_diagonal_weight"] >= 0.7
    _check_figure(results, tmp_path, "bahdanau_reverse")


def test_luong_local_p_data_is_the_reversed_source_read_from_a_constant_token():
    demo = load("luong_local_p")
    source, decoder_in, target, lengths = demo.make_data(np.random.default_rng(0), 100, 12, 5, 10)
    assert set(lengths) == set(range(5, 11))
    for b, n in enumerate(lengths):
        assert np.all(source[b, :n] >= demo.FIRST) and np.all(source[b, n:] == demo.PAD)
        assert list(target[b, :n]) == list(source[b, :n][::-1])
        assert np.all(decoder_in[b, :n] == demo.BOS)
        assert np.all(target[b, n:] == demo.PAD) and np.all(decoder_in[b, n:] == demo.PAD)


def test_luong_local_p_runs_end_to_end_inside_the_source(tmp_path):
    """One epoch on 64 sequences: no weight past a source's end and every centre p_t inside
    the source (p_t = S·sigmoid(...)), trained or not, and the picture is written."""
    results = load("luong_local_p").main(out_dir=tmp_path, epochs=1, train_size=64, test_size=32)
    assert results["padded_weight"] == 0.0
    low, high = results["centre_range"]
    assert 0.0 < low <= high < 1.0
    _check_figure(results, tmp_path, "luong_local_p")


@pytest.mark.long
def test_luong_local_p_centre_tracks_the_alignment(tmp_path):
    results = load("luong_local_p").main(out_dir=tmp_path)
    assert results["mean_abs_error"] < 0.5
    assert results["correlation"] > 0.95
    assert results["token_accuracy"] > 0.85
    _check_figure(results, tmp_path, "luong_local_p")


def test_transformer_reversal_decodes_through_its_cache_as_one_full_pass_and_draws(tmp_path):
    """A few steps of training on little data (seconds): the greedy steps through the decoder's
    self-attention cache give the logits of one causal pass over the tokens they produced, the
    cross-attention rows are distributions over the source, and the picture is written."""
    demo = load("transformer_reversal")
    results = demo.main(
        epochs=1,
        train_count=64,
        test_count=16,
        length=5,
        model_dim=16,
        out_dir=tmp_path,
        verbose=0,
        run_eagerly=True,
    )
    assert results["cache_gap"] < 1e-4
    assert 0.0 < results["anti_diagonal_weight"] < 1.0
    _check_figure(results, tmp_path, "transformer_reversal")


@pytest.mark.long
def test_transformer_reversal_learns_and_a_head_reads_the_mirrored_token(tmp_path):
    results = load("transformer_reversal").main(out_dir=tmp_path, verbose=0)
    assert results["token_accuracy"] >= 0.95
    assert results["cache_gap"] < 1e-4
    # Output step t reads source token L − 1 − t: one cross-attention head looks there.
    assert results["anti_diagonal_weight"] >= 0.5
    _check_figure(results, tmp_path, "transformer_reversal")


def test_seq2seq_dates_writes_a_date_as_a_reader_writes_it():
    demo = load("seq2seq_dates")
    inputs, target = tasks.dates_data(np.random.default_rng(3), 50)
    for source, digits in zip(inputs[:, : tasks.DATE_SOURCE], target, strict=True):
        written = demo.source_text(source)
        day, month, year = re.fullmatch(r"(\d\d) (\w{3}) (\d{4})", written).groups()
        assert day + year == "".join(map(str, digits[:2])) + "".join(map(str, digits[4:]))
        assert demo.MONTHS.index(month) + 1 == int("".join(map(str, digits[2:4])))
    assert demo.source_labels(np.array([1, 4, 16, 2, 0, 2, 3])) == "1 4 Jul 2 0 2 3".split()


def test_seq2seq_dates_runs_one_short_epoch_end_to_end_and_draws(tmp_path, capsys):
    results = load("seq2seq_dates").main(
        epochs=1, train_count=128, test_count=16, out_dir=tmp_path, verbose=0
    )
    printed = capsys.readouterr().out
    assert len(re.findall(r"^\d\d \w{3} \d{4} -> \d{8} \((right|wrong)\)$", printed, re.M)) == 3
    assert "digits right" in printed
    for key in ("digit_accuracy", "date_accuracy", "aligned"):
        assert 0.0 <= results[key] <= 1.0
    assert results["date_accuracy"] <= results["digit_accuracy"]
    _check_figure(results, tmp_path, "seq2seq_dates")


@pytest.mark.long
def test_seq2seq_dates_learns_and_attends_to_the_token_it_translates(tmp_path):
    results = load("seq2seq_dates").main(out_dir=tmp_path, verbose=0)
    assert results["digit_accuracy"] >= 0.95  # the lab's accuracy gate
    assert results["aligned"] >= 0.8  # the lab's alignment gate
