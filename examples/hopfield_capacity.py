"""Capacity of the classical Hopfield network: recall breaks down near N ≈ 0.14 m patterns.

For a network of m units and loads α = N/m, the script stores N random ±1 patterns with the
Hebbian rule, starts asynchronous recall from each stored pattern and measures the fraction of
wrong bits in the state it settles in. Below the capacity the stored patterns are (nearly)
fixed points; above it they are lost. The mean-field theory of Amit, Gutfreund and Sompolinsky
(1985) puts the capacity at α_c ≈ 0.138, where the retrieval state still has 1.6 % wrong bits:
the breakdown load measured here is the load at which the mean fraction of wrong bits first
exceeds that 1.6 % (interpolated between the loads tried). A plot of both curves is saved.

Run: python examples/hopfield_capacity.py [--units 200] [--out DIR] [--seed 0]

Source: NNDL 8.6.1 (the capacity of a Hopfield network is about 0.14 m); Hopfield 1982.
"""

import argparse
import os
import pathlib

from grader import quiet

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
quiet.install()  # before TensorFlow: its start-up lines say nothing here

import keras  # noqa: E402
import numpy as np  # noqa: E402

import attnkit.memory  # noqa: E402

#: Fraction of wrong bits of the retrieval state at the theoretical capacity α_c ≈ 0.138.
ERROR_AT_CAPACITY = 0.016

DEFAULT_LOADS = tuple(np.round(np.arange(0.04, 0.245, 0.02), 2))


def capacity_curve(units=200, loads=DEFAULT_LOADS, patterns_per_load=240, seed=0):
    """Measures recall after storing N = round(α m) random patterns, for each load α.

    Args:
        units: m, the number of units.
        loads: the loads α = N/m to try.
        patterns_per_load: about how many stored patterns are recalled per load (over
            several independent networks).
        seed: seed of the patterns and of the update order.

    Returns:
        A dict of arrays over the loads: `loads` (N/m as stored), `bit_error` (mean fraction
        of wrong bits after recall), `perfect` (fraction of patterns recalled exactly).
    """
    rng = np.random.default_rng(seed)
    network = attnkit.memory.HopfieldNetwork(units, update="asynchronous", seed=seed)
    states = keras.Input((units,))
    recall = keras.Model(states, network(states))  # run as a compiled graph, not eagerly
    measured, bit_error, perfect = [], [], []
    for load in loads:
        count = max(1, round(load * units))
        errors = []
        for _ in range(max(1, -(-patterns_per_load // count))):
            patterns = rng.choice([-1.0, 1.0], size=(count, units)).astype("float32")
            network.store(patterns)
            final = np.asarray(recall.predict_on_batch(patterns))
            errors.append(np.mean(final != patterns, axis=1))
        errors = np.concatenate(errors)
        measured.append(count / units)
        bit_error.append(errors.mean())
        perfect.append(np.mean(errors == 0))
    return {
        "loads": np.array(measured),
        "bit_error": np.array(bit_error),
        "perfect": np.array(perfect),
    }


def breakdown_load(loads, bit_error, threshold=ERROR_AT_CAPACITY):
    """The load at which the mean fraction of wrong bits first exceeds `threshold`.

    Linear interpolation between the two loads around the crossing; `nan` if it never
    crosses, the first load if it starts above.
    """
    loads, bit_error = np.asarray(loads, float), np.asarray(bit_error, float)
    above = np.nonzero(bit_error > threshold)[0]
    if len(above) == 0:
        return float("nan")
    i = above[0]
    if i == 0:
        return float(loads[0])
    x0, x1, y0, y1 = loads[i - 1], loads[i], bit_error[i - 1], bit_error[i]
    return float(x0 + (threshold - y0) * (x1 - x0) / (y1 - y0))


def plot(curve, breakdown, units, path):
    """Saves the capacity plot (matplotlib, Agg backend) to `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(curve["loads"], curve["bit_error"], "o-", label="mean fraction of wrong bits")
    ax.plot(curve["loads"], 1.0 - curve["perfect"], "s--", label="patterns not recalled exactly")
    ax.axhline(ERROR_AT_CAPACITY, color="gray", lw=0.8, label="1.6 % (error at α_c)")
    ax.axvline(0.138, color="black", ls=":", label="theory α_c ≈ 0.138")
    ax.axvline(breakdown, color="red", label=f"measured breakdown {breakdown:.3f}")
    ax.set_xlabel("load N / m (stored patterns per unit)")
    ax.set_ylabel("fraction")
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_ylim(0.0, 1.0)
    ax.set_title(f"Hopfield network capacity, m = {units} units")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run(units=200, out=".", seed=0, patterns_per_load=240, save_plot=True):
    """Runs the experiment; returns the curve, the breakdown load and the plot path (or None)."""
    curve = capacity_curve(units, patterns_per_load=patterns_per_load, seed=seed)
    breakdown = breakdown_load(curve["loads"], curve["bit_error"])
    path = None
    if save_plot:
        out = pathlib.Path(out)
        out.mkdir(parents=True, exist_ok=True)
        path = plot(curve, breakdown, units, out / "hopfield_capacity.png")
    return {**curve, "breakdown": breakdown, "plot": path}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=200)
    parser.add_argument("--out", default=".")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    result = run(units=args.units, out=args.out, seed=args.seed)
    for load, error, perfect in zip(
        result["loads"], result["bit_error"], result["perfect"], strict=True
    ):
        print(f"N/m = {load:.3f}: wrong bits {error:.4f}, recalled exactly {perfect:.2f}")
    print(f"breakdown at N/m = {result['breakdown']:.3f} (theory 0.138); plot: {result['plot']}")


if __name__ == "__main__":
    main()
