"""plot_attention: panels, labels, data orientation, errors, and the missing-matplotlib hint."""

import builtins
import importlib
import sys

import matplotlib
import numpy as np
import pytest
import tensorflow as tf

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import attnkit.viz  # noqa: E402
from attnkit.viz import plot_attention, save_figure  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _panels(fig):
    """The heatmap axes of a figure (colorbars hold no image)."""
    return [ax for ax in fig.axes if ax.images]


def _ticks(labels):
    return [t.get_text() for t in labels]


@pytest.mark.parametrize(
    ("shape", "grid"),
    [((3, 4), (1, 1)), ((2, 3, 4), (1, 2)), ((2, 3, 3, 4), (2, 3))],
    ids=["one", "heads", "batch_heads"],
)
def test_one_panel_per_head_and_example(shape, grid, rng):
    weights = rng.random(shape)
    fig = plot_attention(weights)
    panels = _panels(fig)
    assert len(panels) == grid[0] * grid[1]
    flat = weights.reshape(-1, 3, 4)
    for ax, expected in zip(panels, flat, strict=True):
        # Rows are queries and columns keys, in row-major panel order.
        np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), expected)
        assert ax.get_xlabel() == "Keys" and ax.get_ylabel() == "Queries"
    rows = sorted({round(ax.get_position().y0, 3) for ax in panels})
    cols = sorted({round(ax.get_position().x0, 3) for ax in panels})
    assert (len(rows), len(cols)) == grid
    assert len(fig.axes) == 2 * len(panels)  # one colorbar per panel


def test_labels_titles_and_axis_names(rng):
    fig = plot_attention(
        rng.random((2, 3, 4)),
        x_labels=["a", "b", "c", "d"],
        y_labels=["x", "y", "z"],
        titles=["head 1", "head 2"],
        xlabel="source",
        ylabel="target",
        colorbar=False,
    )
    panels = _panels(fig)
    assert [ax.get_title() for ax in panels] == ["head 1", "head 2"]
    for ax in panels:
        assert _ticks(ax.get_xticklabels()) == ["a", "b", "c", "d"]
        assert _ticks(ax.get_yticklabels()) == ["x", "y", "z"]
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("source", "target")
    assert len(fig.axes) == 2  # no colorbars


def test_shared_color_scale(rng):
    weights = np.stack([np.full((2, 2), 0.1), np.full((2, 2), 0.9)])
    fig = plot_attention(weights)
    for ax in _panels(fig):
        assert ax.images[0].norm.vmin == pytest.approx(0.1)
        assert ax.images[0].norm.vmax == pytest.approx(0.9)
    fig = plot_attention(weights, vmin=0.0, vmax=1.0)
    assert _panels(fig)[0].images[0].norm.vmax == 1.0


def test_accepts_tensors_and_draws_into_given_axes(rng):
    fig, axes = plt.subplots(1, 2)
    weights = tf.constant(rng.random((2, 3, 5)).astype("float16"))
    returned = plot_attention(weights, ax=axes)
    assert returned is fig
    np.testing.assert_allclose(
        np.asarray(axes[1].images[0].get_array()),
        weights.numpy()[1].astype("float64"),
    )
    fig, ax = plt.subplots()
    assert plot_attention(rng.random((3, 5)), ax=ax) is fig
    assert len(ax.images) == 1


@pytest.mark.parametrize(
    ("weights_shape", "kwargs", "fragment"),
    [
        ((4,), {}, "shape (4,)"),
        ((1, 2, 3, 4, 5), {}, "shape (1, 2, 3, 4, 5)"),
        ((3, 4), {"x_labels": ["a", "b"]}, "x_labels with 2 labels"),
        ((3, 4), {"y_labels": ["a"] * 4}, "y_labels with 4 labels"),
        ((2, 3, 4), {"titles": ["only one"]}, "titles with 1 titles"),
    ],
)
def test_errors(weights_shape, kwargs, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        plot_attention(np.zeros(weights_shape), **kwargs)
    assert fragment in str(info.value)


def test_wrong_number_of_axes():
    fig, axes = plt.subplots(1, 3)
    with pytest.raises(ValueError, match="Received: 3 Axes"):
        plot_attention(np.zeros((2, 3, 4)), ax=axes)


def _block_matplotlib(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)


def test_missing_matplotlib_names_the_extra(monkeypatch):
    _block_matplotlib(monkeypatch)
    module = importlib.reload(attnkit.viz)  # importing attnkit.viz needs no matplotlib
    with pytest.raises(ImportError, match=r'pip install "attnkit\[viz\]"') as info:
        module.plot_attention(np.zeros((2, 2)))
    assert isinstance(info.value.__cause__, ImportError)


def test_save_figure_makes_the_folder_writes_the_png_and_closes_the_figure(tmp_path, rng):
    fig = plot_attention(rng.random((3, 4)))
    path = save_figure(fig, tmp_path / "demo" / "output", "weights", bbox_inches="tight")
    assert path == tmp_path / "demo" / "output" / "weights.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plt.fignum_exists(fig.number)
