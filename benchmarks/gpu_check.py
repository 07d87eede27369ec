"""attnkit on the accelerator of the current Keras backend: layers, attention at length, grading.

    KERAS_BACKEND=jax python benchmarks/gpu_check.py --out gpu.md   # the full run
    python benchmarks/gpu_check.py --quick                          # small sizes, on any machine

1. Every public attnkit layer, forward and backward (the gradient of Σ out·cos(out) with
   respect to every float input and every trainable weight), on the backend's default device,
   in float32 and in mixed bfloat16 (`dtype="mixed_bfloat16"`: bfloat16 compute, float32
   weights). Each is compared with the same layer, same weights, in float64 on the CPU; that
   float64 output is itself compared with the float64 NumPy reference (grader/reference/) where
   the table's `numpy` column says so. Errors are max |got - expected| / max |expected|;
   tolerances: FLOAT32_TOLERANCE (float32 matmuls at full precision: no TF32) and
   BFLOAT16_TOLERANCE.
2. Multi-head self-attention forward + backward, compiled (jax.jit, tf.function(jit_compile),
   torch eager): attnkit's plain, blockwise and auto paths against keras.layers.MultiHeadAttention
   in float32, and in bfloat16 Keras with and without flash attention against attnkit's auto
   path, at T = 512, 1024, ..., 16384 (B=1, 8 heads, d_model=256). Time (best of a few) and peak
   device memory, each as a ratio against Keras's layer of the same dtype in the same run. Peak
   memory: torch `torch.cuda.max_memory_allocated` and TF `get_memory_info(...)["peak"]`, reset
   before each configuration; on JAX, whose `peak_bytes_in_use` (printed at the end) cannot be
   reset inside a process, the bytes XLA assigns to the compiled step (arguments, outputs and
   temporaries: `compiled.memory_analysis()`). A size stops with a line saying so when a
   configuration runs out of memory or the time budget (--budget) is spent.
3. Every exercise's solution graded by the grader's engine as `grader check ID --submission
   solutions` grades it, without the sandbox (which opens no device file to a child), the
   score of each. On JAX with an accelerator the children are told JAX_PLATFORMS=cuda, so that
   a child that cannot reach the GPU fails rather than grade on the CPU.

The first line says which device ran it, or that there is no accelerator. The exit status is 1
when a layer check or a solution's grade failed.

On the GPU machine (no network, no Keras: benchmarks/gpu_carry.sh fetched the wheels into
.gpu_carry/ beforehand), from the repository root, in about 5 minutes:

    python3 -m pip install -q --no-index --no-deps --find-links .gpu_carry --target /tmp/site keras namex optree nbformat fastjsonschema jsonschema jsonschema-specifications referencing rpds-py jupyter-core platformdirs traitlets && export PYTHONPATH=/tmp/site:$PWD && KERAS_BACKEND=jax PYTHONUNBUFFERED=1 timeout 330 python3 benchmarks/gpu_check.py --out $OUT/gpu.md
"""  # noqa: E501 - one command line, to copy as it is

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# JAX would otherwise take 75 % of the GPU at start, and the grader's children could get none.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import attnkit  # noqa: E402
from grader.reference import attention as ref  # noqa: E402
from grader.reference import heads as hr  # noqa: E402
from grader.reference import hopfield as hopfield_ref  # noqa: E402
from grader.reference import kernel_regression as kr  # noqa: E402

BACKEND = keras.backend.backend()
FLOAT32_TOLERANCE = 1e-4
# bfloat16 keeps 8 significant bits (a relative step of 2^-7 = 0.008); a gradient summed over a
# few dozen such terms, the parametric Nadaraya-Watson's scalar w's, drifts by a few percent.
BFLOAT16_TOLERANCE = 1e-1
# The layers' float64 output against grader/reference; the position table is float32 by design
# (its docstring says so).
NUMPY_TOLERANCE = 1e-10
NUMPY_TOLERANCE_OF = {"SinusoidalPositionEncoding": 1e-6}
# --quick (CI: does every section still run?): a layer without weights and one with weights
# and a NumPy reference. Each layer costs seconds of compiling, its first calls op by op
# included (MultiHeadAttention alone 11 s of a busy CPU).
QUICK_LAYERS = ("ScaledDotScore", "SelfAttention")
FULL_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)
QUICK_LENGTHS = (64,)
# --quick grades one part of one exercise.
QUICK_EXERCISES, QUICK_PARTS = ["8-2"], ["ScaledDotScore"]


# ---- the device ---------------------------------------------------------------------------------


def accelerator() -> str | None:
    """The name of the backend's default accelerator, or None when it computes on the CPU."""
    if BACKEND == "jax":
        import jax

        device = jax.devices()[0]
        return None if device.platform == "cpu" else f"{device.device_kind} (jax {device.platform})"
    if BACKEND == "torch":
        import torch

        if torch.cuda.is_available():
            return f"{torch.cuda.get_device_name(0)} (torch cuda)"
        return None
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    return f"{tf.config.experimental.get_device_details(gpus[0]).get('device_name', 'GPU')} (tf)"


def full_precision_matmuls() -> None:
    """float32 means float32: no TF32 (JAX and TensorFlow use it on Ampere and later)."""
    if BACKEND == "jax":
        import jax

        jax.config.update("jax_default_matmul_precision", "highest")
    elif BACKEND == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(False)
    else:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


# ---- forward and backward, on every backend -----------------------------------------------------


def first_tensor(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def called(layer, weights, frozen, args, kwargs):
    """`layer(*args, **kwargs)` with its variables' values taken from `weights` and `frozen`:
    JAX's functional call. Not `stateless_call`, which skips `__call__` and with it the cast of
    the inputs and the weights to a mixed policy's compute dtype."""
    mapping = list(zip(layer.trainable_variables, weights, strict=True))
    mapping += list(zip(layer.non_trainable_variables, frozen, strict=True))
    with keras.StatelessScope(state_mapping=mapping):
        return layer(*args, **kwargs)


def forward_and_gradients(layer, args, kwargs):
    """The layer's output and the gradients of Σ out·cos(out) (in float32) with respect to its
    float inputs and its trainable weights, as float64 NumPy arrays."""
    floats = [i for i, a in enumerate(args) if np.issubdtype(np.asarray(a).dtype, np.floating)]
    trainable = layer.trainable_variables
    if BACKEND == "jax":
        import jax
        import jax.numpy as jnp

        frozen = [v.value for v in layer.non_trainable_variables]
        values = [jnp.asarray(a) for a in args]

        def loss(weights, float_args):
            given = list(values)
            for i, value in zip(floats, float_args, strict=True):
                given[i] = value
            out = first_tensor(called(layer, weights, frozen, given, kwargs))
            out32 = out.astype("float32") if out.dtype == jnp.bfloat16 else out
            return jnp.sum(out32 * jnp.cos(out32)), out

        grad = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)
        weights, float_args = [v.value for v in trainable], [values[i] for i in floats]
        try:  # compiled: op by op, a layer of many small ops takes minutes on a busy CPU
            (_, out), (d_weights, d_args) = jax.jit(grad)(weights, float_args)
        except Exception:  # Python control flow on values, say: op by op after all
            (_, out), (d_weights, d_args) = grad(weights, float_args)
        grads = list(d_args) + list(d_weights)
    elif BACKEND == "torch":
        import torch

        device = "cuda" if torch.cuda.is_available() and keras.config.backend() else "cpu"
        given = [keras.ops.convert_to_tensor(a) for a in args]
        for i in floats:
            given[i] = given[i].detach().requires_grad_(True)
        for v in trainable:
            v.value.grad = None
        out = first_tensor(layer(*given, **kwargs))
        out32 = out.float() if out.dtype == torch.bfloat16 else out
        torch.sum(out32 * torch.cos(out32)).backward()
        grads = [given[i].grad for i in floats] + [v.value.grad for v in trainable]
        del device
    else:
        import tensorflow as tf

        given = [tf.convert_to_tensor(a) for a in args]
        with tf.GradientTape() as tape:
            tape.watch([given[i] for i in floats])
            out = first_tensor(layer(*given, **kwargs))
            out32 = tf.cast(out, "float32") if out.dtype == tf.bfloat16 else out
            loss = tf.reduce_sum(out32 * tf.cos(out32))
        grads = tape.gradient(loss, [given[i] for i in floats] + [v.value for v in trainable])
    as64 = [
        None if g is None else keras.ops.convert_to_numpy(keras.ops.cast(g, "float64"))
        for g in grads
    ]
    return keras.ops.convert_to_numpy(keras.ops.cast(out, "float64")), as64


def largest(array) -> float:
    return 0.0 if array is None else float(np.max(np.abs(array), initial=0.0))


def relative_error(got, expected, scale=0.0) -> float:
    """max |got - expected| / max |expected|, or / `scale` where that is larger: a gradient
    that is 0 in exact arithmetic (the key bias's, in attention) is rounding noise in any
    dtype, and is measured against the largest gradient of the layer instead of itself."""
    if got is None or expected is None:
        return 0.0 if got is None and expected is None else float("inf")
    expected = np.asarray(expected, "float64")
    scale = max(largest(expected), scale, 1e-30)
    return float(np.max(np.abs(np.asarray(got, "float64") - expected), initial=0.0)) / scale


# ---- the layers ---------------------------------------------------------------------------------


def layer_cases(rng):
    """(name, make(dtype) -> layer, args, kwargs, NumPy reference(layer64, args) or None)."""
    b, tq, tk, d = 2, 5, 7, 8
    q, k, v = rng.normal(size=(b, tq, d)), rng.normal(size=(b, tk, d)), rng.normal(size=(b, tk, d))
    x = rng.normal(size=(b, tk, d))
    lengths = np.array([tk, 4], "int32")
    keep_keys = ref.length_mask(lengths, tk)[:, None, :]

    def weight_name(w):
        # A MultiHeadAttention's weights live in EinsumDense sub-layers: query/kernel is
        # the reference's query_kernel, attention_output/bias its output_bias.
        parent = w.path.split("/")[-2] if "/" in w.path else ""
        if parent in ("query", "key", "value", "attention_output"):
            return f"{parent.replace('attention_output', 'output')}_{w.name}"
        return w.name

    def weights_of(layer):
        return {
            weight_name(w): np.asarray(keras.ops.convert_to_numpy(w.value), "float64")
            for w in layer.weights
        }

    def mha_reference(layer, args):
        return hr.multi_head_attention(args[0], args[1], args[1], weights_of(layer), keep_keys)[0]

    def self_attention_reference(layer, args):
        kernels = [np.asarray(keras.ops.convert_to_numpy(w.value)) for w in layer.weights]
        qq, kk, vv = (np.einsum("btd,dk->btk", args[0], w) for w in kernels)
        return ref.attend(ref.masked_softmax(ref.scaled_dot_scores(qq, kk)), vv)

    def bilinear_reference(layer, args):
        return ref.bilinear_scores(
            args[0], args[1], weights_of(layer)[weight_name(layer.weights[0])]
        )

    def additive_reference(layer, args):
        w = [np.asarray(keras.ops.convert_to_numpy(x.value)) for x in layer.weights]
        return ref.additive_scores(args[0], args[1], *w)

    mk = attnkit
    return [
        ("DotScore", lambda dt: mk.DotScore(dtype=dt), [q, k], {}, lambda L, a: ref.dot_scores(*a)),
        (
            "ScaledDotScore",
            lambda dt: mk.ScaledDotScore(dtype=dt),
            [q, k],
            {},
            lambda L, a: ref.scaled_dot_scores(*a),
        ),
        ("BilinearScore", lambda dt: mk.BilinearScore(dtype=dt), [q, k], {}, bilinear_reference),
        ("AdditiveScore", lambda dt: mk.AdditiveScore(6, dtype=dt), [q, k], {}, additive_reference),
        (
            "CosineScore",
            lambda dt: mk.CosineScore(dtype=dt),
            [q, k],
            {},
            lambda L, a: ref.cosine_scores(*a),
        ),
        ("LocationScore", lambda dt: mk.LocationScore(tk, dtype=dt), [q, k], {}, None),
        (
            "Attention",
            lambda dt: mk.Attention(score="scaled_dot", dtype=dt),
            [q, v],
            {"key": k, "key_lengths": lengths},
            lambda L, a: ref.attend(
                ref.masked_softmax(ref.scaled_dot_scores(a[0], k), keep_keys), a[1]
            ),
        ),
        ("HardAttention", lambda dt: mk.HardAttention(dtype=dt), [q, v], {"key": k}, None),
        (
            "MultiQueryAttention",
            lambda dt: mk.MultiQueryAttention(dtype=dt),
            [np.stack([q, -q], axis=2), v],
            {"key": k},
            None,
        ),
        (
            "MultiHeadAttention",
            lambda dt: mk.MultiHeadAttention(2, 4, dtype=dt),
            [q, x],
            {"key_lengths": lengths},
            mha_reference,
        ),
        (
            "SelfAttention",
            lambda dt: mk.SelfAttention(4, dtype=dt),
            [x],
            {},
            self_attention_reference,
        ),
        (
            "MultiHeadSelfAttention",
            lambda dt: mk.MultiHeadSelfAttention(2, 4, dtype=dt),
            [x],
            {},
            None,
        ),
        (
            "SinusoidalPositionEncoding",
            lambda dt: mk.SinusoidalPositionEncoding(dtype=dt),
            [x],
            {},
            lambda L, a: a[0] + hr.sinusoidal_table(tk, d)[None],
        ),
        (
            "LearnedPositionEmbedding",
            lambda dt: mk.LearnedPositionEmbedding(tk, dtype=dt),
            [x],
            {},
            None,
        ),
        (
            "NadarayaWatson",
            lambda dt: mk.NadarayaWatson(dtype=dt),
            [q[..., 0], k[..., 0], v],
            {},
            lambda L, a: kr.nadaraya_watson(*a, "gaussian", 1.0)[0],
        ),
        (
            "ParametricNadarayaWatson",
            lambda dt: mk.ParametricNadarayaWatson(dtype=dt),
            [q[..., 0], k[..., 0], v],
            {},
            None,
        ),
        (
            "ModernHopfield",
            lambda dt: mk.ModernHopfield(beta=0.5, dtype=dt),
            [q, k],
            {},
            lambda L, a: hopfield_ref.hopfield_attention(*a, beta=0.5),
        ),
        (
            "LuongAttention",
            lambda dt: mk.LuongAttention(8, score="general", dtype=dt),
            [q, v],
            {},
            None,
        ),
        ("StructuredAttention", lambda dt: mk.StructuredAttention(dtype=dt), [q, v], {}, None),
        (
            "HierarchicalAttention",
            lambda dt: mk.HierarchicalAttention(6, dtype=dt),
            [rng.normal(size=(b, 3, 4, d))],
            {},
            None,
        ),
        (
            "BahdanauDecoder",
            lambda dt: mk.BahdanauDecoder(11, 6, 8, dtype=dt),
            [rng.integers(0, 11, size=(b, 4)).astype("int32"), x],
            {},
            None,
        ),
        ("PointerNetwork", lambda dt: mk.PointerNetwork(8, dtype=dt), [x], {}, None),
        (
            "EndToEndMemoryNetwork",
            lambda dt: mk.EndToEndMemoryNetwork(13, 6, hops=2, dtype=dt),
            [
                rng.integers(1, 13, size=(b, 5, 4)).astype("int32"),
                rng.integers(1, 13, size=(b, 4)).astype("int32"),
            ],
            {},
            None,
        ),
        (
            "NeuralTuringMachine",
            lambda dt: mk.NeuralTuringMachine(
                6, memory_size=8, memory_width=5, controller_units=10, dtype=dt
            ),
            [x[:, :4]],
            {},
            None,
        ),
        (
            "HopfieldNetwork",
            lambda dt: mk.HopfieldNetwork(d, update="synchronous", dtype=dt),
            [np.sign(rng.normal(size=(b, d)))],
            {},
            None,
        ),
    ]


def randomise(layer, rng):
    for w in layer.weights:
        if "float" in str(w.dtype):
            w.assign(rng.normal(scale=0.5, size=tuple(w.shape)).astype(w.dtype))


def check_layers(rng, names=None):
    """Rows of (layer, numpy error, float32 errors, bfloat16 errors, passed)."""
    rows = []
    for name, make, args, kwargs, reference in layer_cases(rng):
        if names and name not in names:
            continue
        try:
            with keras.device("cpu:0"):
                layer64 = make("float64")
                layer64(*args, **kwargs)
                randomise(layer64, rng)
                out64, grads64 = forward_and_gradients(layer64, args, kwargs)
            numpy_error = None
            if reference is not None:
                numpy_error = relative_error(out64, reference(layer64, args))
            errors = {}
            for dtype in ("float32", "mixed_bfloat16"):
                layer = make(dtype)
                cast = [a.astype("float32") if a.dtype == np.float64 else a for a in args]
                cast_kwargs = {
                    key: val.astype("float32") if getattr(val, "dtype", None) == np.float64 else val
                    for key, val in kwargs.items()
                }
                layer(*cast, **cast_kwargs)
                layer.set_weights([np.asarray(w, "float32") for w in layer64.get_weights()])
                out, grads = forward_and_gradients(layer, cast, cast_kwargs)
                floor = 0.1 * max([largest(g) for g in grads64] or [0.0])
                pairs = zip(grads, grads64, strict=True)
                errors[dtype] = (
                    relative_error(out, out64),
                    max([relative_error(g, e, floor) for g, e in pairs] or [0.0]),
                )
            passed = (
                (numpy_error is None or numpy_error < NUMPY_TOLERANCE_OF.get(name, NUMPY_TOLERANCE))
                and max(errors["float32"]) < FLOAT32_TOLERANCE
                and max(errors["mixed_bfloat16"]) < BFLOAT16_TOLERANCE
            )
            rows.append(
                (name, numpy_error, errors["float32"], errors["mixed_bfloat16"], passed, "")
            )
            print(f"{name}: {'ok' if passed else 'FAILED'}", file=sys.stderr, flush=True)
        except Exception as error:  # a layer that cannot run here is a failed check, named
            rows.append((name, None, None, None, False, f"{type(error).__name__}: {error}"[:200]))
    return rows


# ---- multi-head self-attention at length ---------------------------------------------------------


def attention_step(kind, dtype, flash, implementation, heads, model):
    if kind == "keras":
        layer = keras.layers.MultiHeadAttention(
            heads, model // heads, dtype=dtype, flash_attention=flash
        )
        call = lambda lyr, x: lyr(x, x)  # noqa: E731
    else:
        layer = attnkit.MultiHeadSelfAttention(
            heads, model // heads, implementation=implementation, dtype=dtype
        )
        call = lambda lyr, x: lyr(x)  # noqa: E731
    return layer, call


def measure(kind, dtype, flash, implementation, batch, length, heads, model, repeats):
    """(best seconds, peak device bytes) of one compiled forward + backward."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch, length, model)).astype("float32")
    layer, call = attention_step(kind, dtype, flash, implementation, heads, model)
    call(layer, x[:, :8])
    if BACKEND == "jax":
        import jax
        import jax.numpy as jnp

        def loss(weights, x):
            out = called(layer, weights, [], [x, x] if kind == "keras" else [x], {})
            out = out.astype("float32")
            return jnp.sum(out * out)

        weights = [v.value for v in layer.trainable_variables]
        x = jnp.asarray(x)
        compiled = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(weights, x).compile()
        analysis = compiled.memory_analysis()
        peak = None
        if analysis is not None:
            peak = (
                analysis.argument_size_in_bytes
                + analysis.output_size_in_bytes
                + analysis.temp_size_in_bytes
                - analysis.alias_size_in_bytes
            )

        def run():
            return jax.block_until_ready(compiled(weights, x))

    elif BACKEND == "torch":
        import torch

        x = torch.tensor(x, device=keras.ops.convert_to_tensor(x[:1]).device)
        x.requires_grad_(True)

        def run():
            for v in layer.trainable_variables:
                v.value.grad = None
            out = call(layer, x).float()
            torch.sum(out * out).backward()
            if torch.cuda.is_available():
                torch.cuda.synchronize()

        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        peak = None
    else:
        import tensorflow as tf

        x = tf.constant(x)

        @tf.function(jit_compile=True)
        def step(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                out = tf.cast(call(layer, x), "float32")
                loss = tf.reduce_sum(out * out)
            return tape.gradient(loss, [x, *layer.trainable_variables])

        gpu = bool(tf.config.list_physical_devices("GPU"))
        if gpu:
            tf.config.experimental.reset_memory_stats("GPU:0")
        peak = None

        def run():
            return [t.numpy() for t in step(x)[:1]]

    run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    if BACKEND == "torch":
        import torch

        peak = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
    elif BACKEND == "tensorflow":
        import tensorflow as tf

        if tf.config.list_physical_devices("GPU"):
            peak = tf.config.experimental.get_memory_info("GPU:0")["peak"]
    return best, peak


CONFIGURATIONS = (
    # (column, kind, dtype, flash, implementation, the column it is a ratio against)
    ("keras f32", "keras", "float32", False, None, None),
    ("plain f32", "attnkit", "float32", None, "plain", "keras f32"),
    ("blockwise f32", "attnkit", "float32", None, "blockwise", "keras f32"),
    ("auto f32", "attnkit", "float32", None, "auto", "keras f32"),
    ("keras bf16", "keras", "bfloat16", False, None, None),
    ("keras flash bf16", "keras", "bfloat16", True, None, "keras bf16"),
    ("auto bf16", "attnkit", "bfloat16", None, "auto", "keras bf16"),
)
# --quick: Keras's layer and attnkit's against it, and flash (which fails at once on a CPU); each
# configuration costs one to three seconds of compiling even at T = 64.
QUICK_CONFIGURATIONS = ("keras f32", "plain f32", "keras flash bf16")


def out_of_memory(error: Exception) -> bool:
    text = f"{type(error).__name__} {error}".lower()
    return any(
        word in text for word in ("resource_exhausted", "out of memory", "oom", "resourceexhausted")
    )


def attention_at_length(lengths, batch, heads, model, repeats, budget, lines, columns=None):
    """Rows per T: each configuration's seconds and peak bytes (None: not run, with why);
    with `columns`, only those configurations run."""
    start = time.perf_counter()
    results = {}
    for length in lengths:
        row = {}
        for column, kind, dtype, flash, implementation, _ in CONFIGURATIONS:
            if columns is not None and column not in columns:
                continue
            if time.perf_counter() - start > budget:
                row[column] = (None, None, "time budget spent")
                continue
            try:
                seconds, peak = measure(
                    kind, dtype, flash, implementation, batch, length, heads, model, repeats
                )
                row[column] = (seconds, peak, "")
            except Exception as error:
                why = (
                    "out of memory" if out_of_memory(error) else f"{type(error).__name__}: {error}"
                )
                row[column] = (
                    None,
                    None,
                    " ".join(re.sub(r"\x1b\[[0-9;]*m", "", why).split())[:300],
                )
            keras.backend.clear_session()
        results[length] = row
        stopped = [f"{c}: {r[2]}" for c, r in row.items() if r[2]]
        if stopped:
            lines.append(f"T={length}: not measured: " + "; ".join(stopped))
        if all(r[0] is None for r in row.values()):
            lines.append(f"T={length}: nothing ran at this length; longer ones are not tried")
            break
    return results


# ---- the grader ---------------------------------------------------------------------------------


def grade_solutions(selection, on_accelerator, timeout, parts=None):
    """{id: (score, max, why)}: the kit's own solutions graded by the grader's engine, as
    `grader check ID --submission solutions` grades them, but without the sandbox (the
    solutions are this repository's; the sandbox lets a child open no device file, so a
    sandboxed child could not reach the GPU). On JAX with an accelerator the children are
    told JAX_PLATFORMS=cuda, so that a child that cannot reach the GPU fails rather than grade
    on the CPU."""
    from grader.grading import grade
    from grader.records import get_exercise

    if on_accelerator and BACKEND == "jax":
        os.environ["JAX_PLATFORMS"] = "cuda"
    scores = {}
    for name in selection:
        record = get_exercise(name)
        try:
            result = grade(
                record.id, ROOT / "solutions", timeout=timeout, sandbox=None, parts=parts
            )
        except Exception as error:  # noqa: BLE001 - reported in the table, the run goes on
            scores[record.id] = (None, None, f"{type(error).__name__}: {error}"[:160])
            continue
        scores[record.id] = (result.score, result.max_score, "")
    return scores


# ---- the report ---------------------------------------------------------------------------------


def show(lines, out, _shown=[0]):  # noqa: B006 - how many lines were printed, across calls
    """Prints the lines not printed yet and writes them all to `out`: a run stopped by its time
    limit keeps the sections it finished."""
    print("\n".join(lines[_shown[0] :]), flush=True)
    _shown[0] = len(lines)
    if out:
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def error_text(value):
    return "-" if value is None else f"{value:.1e}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one grader part (CI)")
    parser.add_argument("--out", type=Path, help="also write the report here, as Markdown")
    parser.add_argument(
        "--only",
        choices=("layers", "attention", "grading"),
        action="append",
        help="run only these sections (repeatable; default all)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds for the attention-at-length part (default 100; quick 60)",
    )
    arguments = parser.parse_args(argv)
    quick = arguments.quick
    device = accelerator()
    wanted = set(arguments.only or ("layers", "attention", "grading"))
    early_grades = None
    if quick and "grading" in wanted:
        # --quick grades its one part while the layers and attention run: the grading is
        # children of the grader's fork server (their own start-up), which this process only
        # waits for, so it costs this run's wall time next to nothing where a core is free.
        import concurrent.futures

        early_grades = concurrent.futures.ThreadPoolExecutor(1).submit(
            grade_solutions, QUICK_EXERCISES, bool(device), 120, QUICK_PARTS
        )
    lines = []
    if device:
        lines.append(f"accelerator: {device}; Keras backend {BACKEND}, Keras {keras.__version__}")
    else:
        lines.append(
            f"no accelerator: running on the CPU; Keras backend {BACKEND}, "
            f"Keras {keras.__version__}"
        )
    full_precision_matmuls()
    started = time.perf_counter()

    lines += [
        "",
        "## Layers: forward and backward against float64 on the CPU",
        "",
        f"Tolerances (max |error| / max |expected|): float32 {FLOAT32_TOLERANCE:g}, "
        f"mixed bfloat16 {BFLOAT16_TOLERANCE:g}; the CPU float64 output against "
        f"grader/reference (`numpy`; - where none is wired) {NUMPY_TOLERANCE:g}, "
        + ", ".join(f"{name} {value:g}" for name, value in NUMPY_TOLERANCE_OF.items())
        + ". A gradient is measured against the largest of its layer's gradients where that is"
        " over 10 times its own: the key bias's, 0 in exact arithmetic, is rounding noise.",
        "",
        "| layer | numpy | float32 out | float32 grad | bf16 out | bf16 grad | ok |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = (
        check_layers(np.random.default_rng(0), QUICK_LAYERS if quick else None)
        if "layers" in wanted
        else []
    )
    for name, numpy_error, f32, bf16, passed, why in rows:
        f32, bf16 = f32 or (None, None), bf16 or (None, None)
        verdict = "yes" if passed else f"NO {why}".strip()
        lines.append(
            f"| {name} | {error_text(numpy_error)} | {error_text(f32[0])} | {error_text(f32[1])} "
            f"| {error_text(bf16[0])} | {error_text(bf16[1])} | {verdict} |"
        )
    failed_layers = [row[0] for row in rows if not row[4]]
    lines.append("")
    lines.append(
        f"layer checks: {len(rows) - len(failed_layers)} passed, {len(failed_layers)} failed"
        + (f" ({', '.join(failed_layers)})" if failed_layers else "")
        + f"; {time.perf_counter() - started:.0f} s"
    )
    show(lines, arguments.out)
    section_started = time.perf_counter()

    lengths = (QUICK_LENGTHS if quick else FULL_LENGTHS) if "attention" in wanted else []
    batch, heads, model = (1, 2, 32) if quick else (1, 8, 256)
    budget = arguments.budget or (60.0 if quick else 100.0)
    memory_kind = {
        "jax": "XLA's buffers for the compiled step",
        "torch": "max_memory_allocated",
        "tensorflow": "get_memory_info peak",
    }[BACKEND]
    lines += [
        "",
        f"## Multi-head self-attention, forward + backward (B={batch}, {heads} heads, "
        f"d_model={model})",
        "",
        f"Seconds (best of {1 if quick else 3}) and peak device memory ({memory_kind}), each "
        "also as a ratio against Keras's MultiHeadAttention of the same dtype (flash off).",
        "",
    ]
    notes = []
    results = attention_at_length(
        lengths,
        batch,
        heads,
        model,
        1 if quick else 3,
        budget,
        notes,
        QUICK_CONFIGURATIONS if quick else None,
    )
    if quick:
        notes.append(
            "--quick: only "
            + ", ".join(QUICK_CONFIGURATIONS)
            + " measured; the other columns are the full run's"
        )
    notes.append(f"attention at length: {time.perf_counter() - section_started:.0f} s")
    header = "| T | " + " | ".join(f"{c} s | {c} MiB" for c, *_ in CONFIGURATIONS) + " |"
    lines += [header, "|" + "---|" * (1 + 2 * len(CONFIGURATIONS))]
    for length, row in results.items():
        cells = []
        for column, *_, against in CONFIGURATIONS:
            seconds, peak, _ = row.get(column, (None, None, ""))
            base = row.get(against) if against else None
            if seconds is None:
                cells += ["-", "-"]
                continue
            time_cell = f"{seconds:.4f}"
            memory_cell = "-" if peak is None else f"{peak / 2**20:.0f}"
            if base and base[0]:
                time_cell += f" ({seconds / base[0]:.2f}×)"
                if peak is not None and base[1]:
                    memory_cell += f" ({peak / base[1]:.2f}×)"
            cells += [time_cell, memory_cell]
        lines.append(f"| {length} | " + " | ".join(cells) + " |")
    lines += [""] + notes
    if BACKEND == "jax" and device:
        import jax

        stats = jax.devices()[0].memory_stats() or {}
        if "peak_bytes_in_use" in stats:
            lines.append(f"process peak_bytes_in_use: {stats['peak_bytes_in_use'] / 2**20:.0f} MiB")

    from grader.records import EXERCISES

    selection = QUICK_EXERCISES if quick else list(EXERCISES)
    lines += [
        "",
        "## The solutions graded (as grader check ID --submission solutions, unsandboxed)",
        "",
        "children on "
        + (
            "the accelerator (JAX_PLATFORMS=cuda)"
            if device and BACKEND == "jax"
            else "the backend's default device"
        ),
        "",
        "| exercise | score |",
        "|---|---|",
    ]
    show(lines, arguments.out)
    section_started = time.perf_counter()
    scores = {}
    for exercise in selection if "grading" in wanted else []:
        # One at a time, each row written as it comes: a run stopped by its limit keeps them.
        if early_grades is not None:
            found = early_grades.result()
        else:
            found = grade_solutions([exercise], bool(device), 120, None)
        for name, (score, maximum, why) in found.items():
            scores[name] = (score, maximum, why)
            lines.append(f"| {name} | {score}/{maximum} {why} |".replace("  |", " |"))
        show(lines, arguments.out)
    failed_grades = [e for e, (s, m, _) in scores.items() if s is None or s != m]
    lines.append("")
    lines.append(
        f"grader checks: {len(scores) - len(failed_grades)} full marks, "
        f"{len(failed_grades)} not" + (f" ({', '.join(failed_grades)})" if failed_grades else "")
    )
    lines[-1] += f"; {time.perf_counter() - section_started:.0f} s"
    if early_grades is not None:
        lines[-1] += " waited (graded while the sections above ran)"
    lines.append(f"total time: {time.perf_counter() - started:.0f} s")
    show(lines, arguments.out)
    return 1 if failed_layers or failed_grades else 0


if __name__ == "__main__":
    sys.exit(main())
