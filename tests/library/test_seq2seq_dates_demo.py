"""examples/seq2seq_dates.py, the demo of the train-seq2seq lab's task: in CI a run of one epoch
on a few dates (it trains, decodes, prints and draws end to end, and writes dates as a reader
does); marked long, that it learns the task and aligns as the lab's gates ask."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from grader.reference import tasks

DEMO = Path(__file__).resolve().parents[2] / "examples" / "seq2seq_dates.py"


def load():
    spec = importlib.util.spec_from_file_location("attnkit_demo_seq2seq_dates", DEMO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_date_is_written_as_a_reader_writes_it():
    demo = load()
    inputs, target = tasks.dates_data(np.random.default_rng(3), 50)
    for source, digits in zip(inputs[:, : tasks.DATE_SOURCE], target, strict=True):
        day, month, year = re.fullmatch(
            r"(\d\d) (\w{3}) (\d{4})", demo.source_text(source)
        ).groups()
        assert day + year == "".join(map(str, digits[:2])) + "".join(map(str, digits[4:]))
        assert demo.MONTHS.index(month) + 1 == int("".join(map(str, digits[2:4])))
    assert demo.source_labels(np.array([1, 4, 16, 2, 0, 2, 3])) == "1 4 Jul 2 0 2 3".split()


def test_one_short_epoch_runs_end_to_end_and_draws(tmp_path, capsys):
    results = load().main(epochs=1, train_count=128, test_count=16, out_dir=tmp_path, verbose=0)
    printed = capsys.readouterr().out
    assert len(re.findall(r"^\d\d \w{3} \d{4} -> \d{8} \((right|wrong)\)$", printed, re.M)) == 3
    assert "digits right" in printed
    for key in ("digit_accuracy", "date_accuracy", "aligned"):
        assert 0.0 <= results[key] <= 1.0
    assert results["date_accuracy"] <= results["digit_accuracy"]
    figure = Path(results["figure"])
    assert figure == tmp_path / "seq2seq_dates.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.long
def test_it_learns_the_dates_and_attends_to_the_token_it_translates(tmp_path):
    results = load().main(out_dir=tmp_path, verbose=0)
    assert results["digit_accuracy"] >= 0.95  # the lab's accuracy gate
    assert results["aligned"] >= 0.8  # the lab's alignment gate
