"""attnkit's multi-head self-attention against keras.layers.MultiHeadAttention: time and memory.

    python benchmarks/attention_bench.py speed     # forward + backward time, eager and XLA
    python benchmarks/attention_bench.py memory    # peak memory, one process per configuration
    python benchmarks/attention_bench.py --quick   # both, on small sizes, in seconds (CI)

Every figure is a ratio against a baseline measured in the same run: time against Keras's own
layer of the same shapes, the achieved FLOP rate against a plain matmul of the same FLOP count,
and peak memory against Keras's layer.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

BATCH, HEADS, MODEL = 4, 8, 256
CONFIGURATIONS = [("keras", "plain"), ("attnkit", "plain"), ("attnkit", "blockwise")]


def attention_flops(batch: int, length: int, model: int) -> float:
    """Forward + backward (about 3x forward) FLOPs of one multi-head self-attention layer."""
    projections = 4 * 2 * batch * length * model * model
    scores_and_pooling = 2 * 2 * batch * length * length * model
    return 3.0 * (projections + scores_and_pooling)


def make_layer(kind: str, implementation: str = "plain"):
    import keras

    import attnkit

    if kind == "keras":
        return keras.layers.MultiHeadAttention(HEADS, MODEL // HEADS)
    return attnkit.MultiHeadSelfAttention(HEADS, MODEL // HEADS, implementation=implementation)


def step_function(layer, kind: str, jit: bool):
    import tensorflow as tf

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, x) if kind == "keras" else layer(x)
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, [x, *layer.trainable_variables])

    return tf.function(step, jit_compile=jit) if jit else step


def best_seconds(functions: dict, repeats: int) -> dict:
    """Best wall time of each of `functions` (name -> no-argument callable).

    The functions take turns, one call each per round, so that a slow spell of the machine
    (other work, a noisy neighbour) falls on all of them alike rather than on one.
    """
    for function in functions.values():
        function()  # build, trace, compile
    best = dict.fromkeys(functions, float("inf"))
    for _ in range(repeats):
        for name, function in functions.items():
            start = time.perf_counter()
            result = function()
            _ = [r.numpy() for r in result if r is not None][:1]
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def square_matmul(flops: float):
    """A square float32 XLA matmul with about `flops` FLOPs, and its exact FLOP count."""
    import tensorflow as tf

    size = max(64, int(round((flops / 2) ** (1 / 3))))
    a = tf.random.normal((size, size))
    product = tf.function(lambda m: tf.matmul(m, m), jit_compile=True)
    return (lambda: [product(a)]), 2 * size**3


def score_product(batch: int, length: int):
    """The bare QKᵀ of every head under XLA, (B, H, T, d_k) x (B, H, d_k, T), and its FLOPs:
    the product shape attention itself is made of, as a ceiling for the FLOP rate."""
    import tensorflow as tf

    depth = MODEL // HEADS
    q = tf.random.normal((batch, HEADS, length, depth))
    k = tf.random.normal((batch, HEADS, depth, length))
    product = tf.function(lambda a, b: tf.matmul(a, b), jit_compile=True)
    return (lambda: [product(q, k)]), 2 * batch * HEADS * length * length * depth


def speed(lengths: list[int], repeats: int, batch: int) -> list[dict]:
    import tensorflow as tf

    rows = []
    for length in lengths:
        x = tf.random.normal((batch, length, MODEL))
        flops = attention_flops(batch, length, MODEL)
        matmul, matmul_flops = square_matmul(flops)
        scores, score_flops = score_product(batch, length)
        for jit in (False, True):
            functions = {"matmul": matmul, "scores": scores}
            for kind, implementation in [*CONFIGURATIONS, ("attnkit", "auto")]:
                step = step_function(make_layer(kind, implementation), kind, jit)
                name = implementation if kind == "attnkit" else kind
                functions[name] = lambda step=step, x=x: step(x)
            times = best_seconds(functions, repeats)
            rate = matmul_flops / times["matmul"]
            rows.append(
                {
                    "T": length,
                    "xla": jit,
                    "keras_s": times["keras"],
                    "plain_s": times["plain"],
                    "blockwise_s": times["blockwise"],
                    "auto_s": times["auto"],
                    "auto/keras": times["auto"] / times["keras"],
                    "auto_matmul_frac": flops / times["auto"] / rate,
                    "QK_matmul_frac": score_flops / times["scores"] / rate,
                }
            )
    return rows


def peak_memory_child(kind: str, implementation: str, length: int, batch: int) -> None:
    """Runs in its own process: peak resident memory of one forward + backward, in MiB.

    The kernel's high-water mark is reset after the set-up (writing 5 to clear_refs), so the
    figure is what the step itself adds at its peak.
    """
    import tensorflow as tf

    def status(field):
        with open("/proc/self/status") as handle:
            line = next(line for line in handle if line.startswith(field + ":"))
        return int(line.split()[1]) / 1024

    layer = make_layer(kind, implementation)
    x = tf.random.normal((batch, length, MODEL))
    layer(x[:, :8], x[:, :8]) if kind == "keras" else layer(x[:, :8])
    step = tf.function(step_function(layer, kind, jit=False))
    step.get_concrete_function(x)  # trace before measuring
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    before = status("VmRSS")
    [g.numpy() for g in step(x) if g is not None]
    print(json.dumps({"peak_mib": status("VmHWM") - before}))


def memory(lengths: list[int], batch: int) -> list[dict]:
    rows = []
    for length in lengths:
        row = {"T": length}
        for kind, implementation in CONFIGURATIONS:
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    kind,
                    implementation,
                    str(length),
                    str(batch),
                ],
                capture_output=True,
                text=True,
            )
            key = f"{kind}_{implementation}" if kind == "attnkit" else "keras"
            if done.returncode != 0:
                row[key] = None
                continue
            row[key] = json.loads(done.stdout.strip().splitlines()[-1])["peak_mib"]
        if row.get("keras") and row.get("attnkit_blockwise") is not None:
            row["blockwise_vs_keras"] = row["attnkit_blockwise"] / row["keras"]
        rows.append(row)
    return rows


def show(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    if not rows:
        return
    keys = list(rows[0])
    print("  ".join(f"{k:>18}" for k in keys))
    for row in rows:
        print(
            "  ".join(
                f"{row.get(k):>18.3f}" if isinstance(row.get(k), float) else f"{row.get(k)!s:>18}"
                for k in keys
            )
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", choices=["speed", "memory", "all"], default="all")
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, implementation, length, batch = args.child
        peak_memory_child(kind, implementation, int(length), int(batch))
        return
    if args.what in ("speed", "all"):
        lengths = [64] if args.quick else [128, 256, 512, 1024, 2048]
        show(
            f"Forward + backward time, B={BATCH if not args.quick else 1}, heads={HEADS}, "
            f"d_model={MODEL}; plain, blockwise and auto (the default) are attnkit's "
            "MultiHeadSelfAttention implementations; auto_matmul_frac = the default's FLOP rate "
            "/ a square XLA matmul's; QK_matmul_frac = the same for the bare QKᵀ product of "
            "every head)",
            speed(lengths, 1 if args.quick else 5, 1 if args.quick else BATCH),
        )
    if args.what in ("memory", "all"):
        lengths = [256] if args.quick else [2048, 4096, 8192]
        show(
            f"Peak memory of forward + backward (MiB above the set-up), B=1, heads={HEADS}, "
            f"d_model={MODEL}, one process each",
            memory(lengths, 1),
        )


if __name__ == "__main__":
    main()
