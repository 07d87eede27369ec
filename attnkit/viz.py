"""Heatmaps of attention weights (query x key), one panel per head or example.

matplotlib is an optional extra: `pip install "attnkit[viz]"`. It is imported when
`plot_attention` is called, not when `attnkit` is imported.
"""

from pathlib import Path

import numpy as np

__all__ = ["plot_attention", "save_figure"]

_INSTALL_HINT = 'pip install "attnkit[viz]"'


def _to_numpy(weights):
    if not isinstance(weights, (np.ndarray, list, tuple, float, int)):
        from keras import ops  # tensors of any backend

        weights = ops.convert_to_numpy(weights)
    return np.asarray(weights, dtype=np.float64)


def _check_labels(name, labels, size):
    if labels is None:
        return None
    labels = [str(label) for label in labels]
    if len(labels) != size:
        raise ValueError(
            f"`{name}` must have one label per {'key' if name == 'x_labels' else 'query'} "
            f"({size}). Received: {name} with {len(labels)} labels"
        )
    return labels


def plot_attention(
    weights,
    x_labels=None,
    y_labels=None,
    titles=None,
    ax=None,
    *,
    xlabel="Keys",
    ylabel="Queries",
    cmap="Reds",
    vmin=None,
    vmax=None,
    colorbar=True,
    panel_size=3.0,
):
    """Draws attention weights as query x key heatmaps and returns the figure.

    Entry `[i, j]` of a panel is the weight of key j for query i: rows are queries (top to
    bottom), columns are keys. The shape of `weights` decides the panels:

    - `(Tq, Tk)`: one panel;
    - `(H, Tq, Tk)`: one panel per head (or per example), in one row;
    - `(B, H, Tq, Tk)`: a grid, one row per example and one column per head.

    Args:
        weights: array-like (NumPy array, Keras/TensorFlow tensor, nested lists) of one of
            the shapes above, e.g. the attention weights returned with
            `return_attention_scores=True` (`(B, Tq, Tk)` is drawn as B panels).
        x_labels: optional sequence of Tk labels for the keys (columns), e.g. source tokens.
        y_labels: optional sequence of Tq labels for the queries (rows), e.g. output tokens.
        titles: optional sequence of titles, one per panel in row-major order.
        ax: optional matplotlib `Axes` (for a single panel) or a sequence / array of `Axes`
            (one per panel) to draw into; by default a new figure is created with pyplot.
        xlabel: the label of the key axis. Defaults to `"Keys"`.
        ylabel: the label of the query axis. Defaults to `"Queries"`.
        cmap: the colormap. Defaults to `"Reds"`.
        vmin: optional lower end of the color scale (defaults to the smallest weight).
        vmax: optional upper end of the color scale (defaults to the largest weight).
        colorbar: bool, whether to draw a colorbar next to each panel. Defaults to `True`.
        panel_size: float, the size in inches of each panel of a new figure.

    Returns:
        The `matplotlib.figure.Figure` that holds the panels.

    Raises:
        ImportError: when matplotlib is not installed (install the extra with
            `pip install "attnkit[viz]"`).
        ValueError: for weights of another rank, or labels, titles or axes whose number
            does not match.

    Source: the attention heatmaps of the chapter (d2l `show_heatmaps`; Bahdanau et al. 2015,
    figure 3).
    """
    data = _to_numpy(weights)
    if data.ndim not in (2, 3, 4):
        raise ValueError(
            "`weights` must have shape (Tq, Tk), (H, Tq, Tk) or (B, H, Tq, Tk). "
            f"Received: weights with shape {data.shape}"
        )
    while data.ndim < 4:
        data = data[None]
    rows, cols, tq, tk = data.shape
    panels = rows * cols
    x_labels = _check_labels("x_labels", x_labels, tk)
    y_labels = _check_labels("y_labels", y_labels, tq)
    if titles is not None:
        titles = [str(title) for title in titles]
        if len(titles) != panels:
            raise ValueError(
                f"`titles` must have one title per panel ({panels}). "
                f"Received: titles with {len(titles)} titles"
            )
    try:
        import matplotlib

        if ax is None:
            import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(
            "plot_attention needs matplotlib, an optional dependency of attnkit. "
            f"Install it with: {_INSTALL_HINT}"
        ) from error

    if ax is None:
        fig, axes = plt.subplots(
            rows,
            cols,
            figsize=(panel_size * cols * (1.25 if colorbar else 1.0), panel_size * rows),
            squeeze=False,
        )
        axes = list(np.asarray(axes).ravel())
    else:
        axes = list(np.asarray(ax, dtype=object).ravel())
        if len(axes) != panels:
            raise ValueError(
                f"`ax` must hold one Axes per panel ({panels}). Received: {len(axes)} Axes"
            )
        fig = axes[0].figure
    if vmin is None:
        vmin = float(np.nanmin(data))
    if vmax is None:
        vmax = float(np.nanmax(data))
    norm = matplotlib.colors.Normalize(vmin=vmin, vmax=vmax)

    for index, axis in enumerate(axes):
        image = axis.imshow(
            data.reshape(panels, tq, tk)[index],
            cmap=cmap,
            norm=norm,
            aspect="auto",
            interpolation="nearest",
        )
        axis.set_xlabel(xlabel)
        axis.set_ylabel(ylabel)
        if x_labels is not None:
            axis.set_xticks(range(tk))
            axis.set_xticklabels(x_labels, rotation=90 if tk > 8 else 0)
        if y_labels is not None:
            axis.set_yticks(range(tq))
            axis.set_yticklabels(y_labels)
        if titles is not None:
            axis.set_title(titles[index])
        if colorbar:
            fig.colorbar(image, ax=axis)
    if ax is None:
        fig.tight_layout()
    return fig


def save_figure(fig, out_dir, name, dpi=80, **savefig_kwargs):
    """Saves `fig` as `out_dir/<name>.png` (the folder made if needed) and closes it.

    Args:
        fig: a matplotlib figure, such as `plot_attention` returns.
        out_dir: str or path of the folder.
        name: the file's name without `.png`.
        dpi: dots per inch. Defaults to 80.
        **savefig_kwargs: passed on to `fig.savefig` (e.g. `bbox_inches="tight"`).

    Returns:
        The `pathlib.Path` of the PNG written.
    """
    import matplotlib.pyplot as plt

    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    fig.savefig(path, dpi=dpi, **savefig_kwargs)
    plt.close(fig)
    return path
