"""attnkit's multi-head self-attention against keras.layers.MultiHeadAttention: time and memory.

    python benchmarks/attention_bench.py speed     # forward + backward time, eager and XLA
    python benchmarks/attention_bench.py memory    # peak memory, one process per configuration
    python benchmarks/attention_bench.py masks     # what masks add to the blockwise path's peak
    python benchmarks/attention_bench.py --quick   # all, on small sizes, in seconds (CI)

Every figure is a ratio against a baseline measured in the same run: time against Keras's own
layer of the same shapes, the achieved FLOP rate against a plain matmul of the same FLOP count,
peak memory against Keras's layer, and the blockwise path's peak with a causal and a padding
mask against its peak without masks (op by op, where nothing prunes an unused mask).
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


def make_layer(kind: str, implementation: str = "plain", causal: bool = False, heads=HEADS):
    import keras

    import attnkit

    if kind == "keras":
        return keras.layers.MultiHeadAttention(heads, MODEL // heads)
    return attnkit.MultiHeadSelfAttention(
        heads, MODEL // heads, implementation=implementation, use_causal_mask=causal
    )


def step_function(layer, kind: str, jit: bool, mask=None):
    """Forward + backward of `layer` on x; with `mask` (a (B, T) padding mask), attnkit's layer
    gets it as its padding mask."""
    import tensorflow as tf

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, x) if kind == "keras" else layer(x, mask=mask)
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


def peak_memory_child(settings: dict) -> None:
    """Runs in its own process: peak resident memory of one step of `settings["kind"]`'s layer,
    in MiB.

    Settings: `kind`, `implementation`, `length`, `batch`, and optionally `heads` (default
    `HEADS`), `backward` (forward + backward, the default, or forward only), `eager`
    (op by op instead of `tf.function`) and `masked` (attnkit's layer gets a causal mask and a
    padding mask: the second half of the last example padded). The kernel's high-water mark is
    reset after the set-up (writing 5 to clear_refs), so the figure is what the step itself adds
    at its peak.
    """
    import tensorflow as tf

    def status(field):
        with open("/proc/self/status") as handle:
            line = next(line for line in handle if line.startswith(field + ":"))
        return int(line.split()[1]) / 1024

    kind, length, batch = settings["kind"], settings["length"], settings["batch"]
    masked = settings.get("masked", False)
    layer = make_layer(
        kind, settings["implementation"], causal=masked, heads=settings.get("heads", HEADS)
    )
    x = tf.random.normal((batch, length, MODEL))
    mask = None
    if masked:
        mask = tf.sequence_mask([length] * (batch - 1) + [length // 2], length)
    layer(x[:, :8], x[:, :8]) if kind == "keras" else layer(x[:, :8])
    if settings.get("backward", True):
        step = step_function(layer, kind, jit=False, mask=mask)
    else:

        def step(x):
            return [layer(x, x) if kind == "keras" else layer(x, mask=mask)]

    if settings.get("eager", False):
        [g.numpy() for g in step(x) if g is not None]  # the first call builds what it builds
    else:
        step = tf.function(step)
        step.get_concrete_function(x)  # trace before measuring
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    before = status("VmRSS")
    [g.numpy() for g in step(x) if g is not None]
    print(json.dumps({"peak_mib": status("VmHWM") - before}))


# glibc's mallopt parameter of MALLOC_MMAP_THRESHOLD_ (malloc.h), for a forked child.
M_MMAP_THRESHOLD = -3
UNMAP_FREED_BYTES = 131072


def peak_mib(unmap_freed=False, **settings):
    """`peak_memory_child(settings)` in a process of its own; None when it failed.

    With `unmap_freed`, every allocation of 128 KiB or more gets pages of its own, returned when
    it is freed (glibc's `MALLOC_MMAP_THRESHOLD_`): the resident size then follows what is alive,
    so that the peak of a step that runs op by op is not hidden by pages its warm-up left behind.
    Under `--quick` (FORK_THIS_PROCESS) the process is a fork of this one, which has imported
    TensorFlow, Keras and attnkit and run no op yet (as the grader's zygote before it forks),
    rather than a fresh interpreter that imports them again.
    """
    if FORK_THIS_PROCESS:
        return forked_peak_mib(unmap_freed, settings)
    environment = os.environ | (
        {"MALLOC_MMAP_THRESHOLD_": str(UNMAP_FREED_BYTES)} if unmap_freed else {}
    )
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(settings)],
        capture_output=True,
        text=True,
        env=environment,
    )
    if done.returncode != 0:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])["peak_mib"]


# --quick: the memory children are forks of this process, made before it runs any op (thread
# pools made by running ops do not survive a fork), so that each step still runs in a process of
# its own, from the same state, without paying TensorFlow's start-up (4-8 s) once per
# configuration.
FORK_THIS_PROCESS = False


def import_without_running_ops() -> None:
    import keras  # noqa: F401
    import tensorflow  # noqa: F401

    import attnkit  # noqa: F401


def forked_peak_mib(unmap_freed: bool, settings: dict):
    """`peak_memory_child(settings)` in a fork of this process; None when it failed."""
    import ctypes

    read, write = os.pipe()
    sys.stdout.flush()
    child = os.fork()
    if child == 0:
        os.close(read)
        os.dup2(write, 1)
        sys.stdout = os.fdopen(1, "w")
        status = 1
        try:
            if unmap_freed:
                ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, UNMAP_FREED_BYTES)
            peak_memory_child(dict(settings))
            sys.stdout.flush()
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read) as output:
        printed = output.read().strip().splitlines()
    _, status = os.waitpid(child, 0)
    return json.loads(printed[-1])["peak_mib"] if status == 0 and printed else None


def memory(lengths: list[int], batch: int, configurations=CONFIGURATIONS) -> list[dict]:
    rows = []
    for length in lengths:
        row = {"T": length}
        for kind, implementation in configurations:
            key = f"{kind}_{implementation}" if kind == "attnkit" else "keras"
            row[key] = peak_mib(
                kind=kind, implementation=implementation, length=length, batch=batch
            )
        if row.get("keras") and row.get("attnkit_blockwise") is not None:
            row["blockwise_vs_keras"] = row["attnkit_blockwise"] / row["keras"]
        rows.append(row)
    return rows


def mask_memory(lengths: list[int], batch: int, steps=(False, True)) -> list[dict]:
    """The blockwise path op by op (one head, so that a block of scores is small next to a
    (B, T, T) mask), with a causal and a padding mask against none: the masks should add nothing
    like a (B, T, T) tensor, since the layer asks for them one block of keys at a time. In a
    compiled step nothing would show: an unused tensor is pruned from the graph. `steps` says
    which to measure: the forward pass alone (False), forward + backward (True)."""
    rows = []
    for length in lengths:
        for backward in steps:
            row = {
                "T": length,
                "step": "fwd+bwd" if backward else "forward",
                "BxTxT_bool_mib": batch * length * length / 2**20,
            }
            for masked in (False, True):
                row["masked_mib" if masked else "unmasked_mib"] = peak_mib(
                    kind="attnkit",
                    implementation="blockwise",
                    length=length,
                    batch=batch,
                    heads=1,
                    eager=True,
                    backward=backward,
                    masked=masked,
                    unmap_freed=True,
                )
            if row["unmasked_mib"] and row["masked_mib"] is not None:
                row["masked/unmasked"] = row["masked_mib"] / row["unmasked_mib"]
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
    parser.add_argument(
        "what", nargs="?", choices=["speed", "memory", "masks", "all"], default="all"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--fork-helper", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        peak_memory_child(json.loads(args.child))
        return
    quick = args.quick

    def speed_table():
        lengths = [64] if quick else [128, 256, 512, 1024, 2048]
        return (
            f"Forward + backward time, B={BATCH if not quick else 1}, heads={HEADS}, "
            f"d_model={MODEL}; plain, blockwise and auto (the default) are attnkit's "
            "MultiHeadSelfAttention implementations; auto_matmul_frac = the default's FLOP rate "
            "/ a square XLA matmul's; QK_matmul_frac = the same for the bare QKᵀ product of "
            "every head)",
            speed(lengths, 1 if quick else 5, 1 if quick else BATCH),
        )

    def memory_table():
        lengths = [256] if quick else [2048, 4096, 8192]
        return (
            f"Peak memory of forward + backward (MiB above the set-up), B=1, heads={HEADS}, "
            f"d_model={MODEL}, one process each",
            # --quick: Keras's and the blockwise path alone, the pair whose ratio matters.
            memory(lengths, 1, CONFIGURATIONS[::2] if quick else CONFIGURATIONS),
        )

    def masks_table():
        lengths = [256] if quick else [2048, 4096]
        batch = 1 if quick else 4
        return (
            f"Peak memory of the blockwise path op by op (MiB above the set-up), B={batch}, "
            f"heads=1, d_model={MODEL}, with a causal and a padding mask against none; "
            "BxTxT_bool_mib = the size of the whole mask the path never builds",
            # --quick: forward + backward alone, which runs both passes (one process pair).
            mask_memory(lengths, batch, (True,) if quick else (False, True)),
        )

    chosen = {
        "speed": [speed_table],
        "memory": [memory_table],
        "masks": [masks_table],
        "all": [speed_table, memory_table, masks_table],
    }[args.what]
    if not quick:
        for table in chosen:
            show(*table())
        return
    # --quick: the memory children are forked from this process before it runs an op, so the
    # memory tables are measured first, and every table is shown in the usual order.
    global FORK_THIS_PROCESS
    FORK_THIS_PROCESS = True
    import_without_running_ops()
    measured = {table: table() for table in chosen if table is not speed_table}
    FORK_THIS_PROCESS = False
    for table in chosen:
        show(*(measured[table] if table in measured else table()))


if __name__ == "__main__":
    main()
