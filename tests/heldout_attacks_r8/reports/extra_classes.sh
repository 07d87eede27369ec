#!/bin/bash
# The generated classes of the table: fuzz (odd outputs, seeds 2 and 1), sig (exit codes, self-signals), pic (score maps).
# Usage: bash extra_classes.sh [WORKDIR] (default /tmp/r8rep_extra; about 10 min)
W="${1:-/tmp/r8rep_extra}"; . /work/venv/bin/activate; rm -rf "$W"; mkdir -p "$W"; cd "$W"
python - <<'PY'
import pathlib
bob = pathlib.Path("/work/main/examples/submissions/bob/ex8_2.py").read_text()
def put(cls, name, tail):
    d = pathlib.Path(cls) / name; d.mkdir(parents=True, exist_ok=True); (d / "ex8_2.py").write_text(bob + tail)
A = {"big": "np.full(W.shape, 1e308)", "negbig": "np.full(W.shape, -1e308)", "denorm": "np.full(W.shape, 5e-324)",
 "negzero": "np.full(W.shape, -0.0)", "mixnan": "np.where(np.eye(len(W), dtype=bool), np.nan, W - W.T)",
 "mixinf": "np.where(np.eye(len(W), dtype=bool), np.inf, W - W.T)", "half_right": "np.triu(W - W.T)",
 "int_max": "np.full(W.shape, np.iinfo(np.int64).max)", "boolarr": "np.ones(W.shape, bool)", "f16max": "np.full(W.shape, 65504, np.float16)",
 "uint8": "np.zeros(W.shape, np.uint8)", "extra_axis": "(W - W.T)[..., None]", "lead_axis": "(W - W.T)[None]", "flat": "(W - W.T).ravel()",
 "row": "(W - W.T)[0]", "transpose_right": "(W - W.T).T", "list": "(W - W.T).tolist()", "ragged": "[[1.0], [1.0, 2.0]]", "scalar": "0.0",
 "big_array": "np.zeros((500, 1000))", "complex": "(W - W.T).astype(complex)", "float128": "(W - W.T).astype(np.longdouble)",
 "datetime": "np.zeros(W.shape, 'datetime64[s]')", "str_arr": "np.full(W.shape, 'x')", "bytes": "b'x' * 9", "set": "{1, 2}",
 "generator": "(x for x in W)", "nan_all": "np.full(W.shape, np.nan)", "scaled_right": "3 * (W - W.T)", "plus_eye": "(W - W.T) + np.eye(len(W))",
 "W_only": "W * 1.0", "WT_only": "W.T * 1.0", "sym": "W + W.T", "random": "np.random.default_rng(0).normal(size=W.shape)"}
for k, v in A.items():
    put("fuzz", "asym_" + k, f"\nimport numpy as np\ndef bilinear_asymmetry(W):\n    W = np.array(W, dtype=float)\n    return {v}\n")
V = {"v_arr": "np.zeros(3)", "v_neg": "-1.0", "v_big": "1e308", "v_nan": "float('nan')", "v_bool": "True", "v_complex": "1j",
     "v_int": "int(d)", "v_str": "'1.0'", "v_none_list": "[None]", "v_huge": "10**400", "v_inf": "float('inf')"}
for k, v in V.items():
    put("fuzz", k, f"\ndef dot_product_variance(d, var_q=1.0, var_k=1.0):\n    return {v}\ndef scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):\n    return {v}\nimport numpy as np\n")
J = {"j_transposed_axes": "np.swapaxes(J, -1, -2) * 1.5", "j_missing_batch": "J.reshape(-1, J.shape[-2], J.shape[-1])[:1]",
     "j_zeros": "np.zeros_like(J)", "j_diag_only": "J * np.eye(J.shape[-1])", "j_nan": "np.full_like(J, np.nan)", "j_p_only": "J[..., 0]"}
for k, v in J.items():
    put("fuzz", k, f"\nimport numpy as np\n_sj = softmax_jacobian\ndef softmax_jacobian(scores):\n    J = np.asarray(_sj(scores))\n    return {v}\n")
for c in [0,2,3,64,65,66,69,70,71,74,75,76,77,78,99,100,101,111,120,124,125,126,127,128,130,134,137,139,143,255]:
    put("sig", f"exit{c:03d}", f"\nimport os\ndef bilinear_asymmetry(W):\n    os._exit({c})\n")
for s in ["SIGINT","SIGTERM","SIGXCPU","SIGXFSZ","SIGSEGV","SIGABRT","SIGUSR1","SIGUSR2","SIGHUP","SIGALRM","SIGPIPE","SIGBUS","SIGTRAP","SIGSYS","SIGVTALRM","SIGPROF","SIGQUIT","SIGFPE","SIGILL"]:
    put("sig", f"sig_{s}", f"\nimport os, signal\ndef bilinear_asymmetry(W):\n    signal.signal(signal.{s}, signal.SIG_DFL)\n    os.kill(os.getpid(), signal.{s})\n    import time; time.sleep(2)\n    raise RuntimeError('survived {s}')\n")
put("sig", "import_sigkill", "\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
put("sig", "import_segv", "\nimport ctypes\nctypes.string_at(0)\n")
put("sig", "import_exit75", "\nimport os\nos._exit(75)\n")
P = {"pm_max": "ops.where(s > 0, 1e308, -1e308) + s * 0", "one_nan": "ops.where(ops.arange(ops.shape(s)[-1]) == 0, float('nan'), s)",
     "one_inf": "ops.where(ops.arange(ops.shape(s)[-1]) == 0, float('inf'), s)", "neg_inf_all": "s * 0 - float('inf')", "denorm": "s * 1e-320",
     "const": "s * 0 + 1.0", "huge_ratio": "ops.where(s > 0, 1e300, 1e-300) + s * 0", "f32max": "s * 0 + 3.4e38"}
for k, v in P.items():
    put("pic", "pic_" + k, f"\nclass ScaledDotScore(keras.layers.Layer):\n    def call(self, query, key):\n        s = ops.matmul(query, ops.swapaxes(key, -1, -2))\n        return {v}\n")
for c in ("fuzz", "sig", "pic"): put(c, "zz_honest_bob", "")
PY
for run in "fuzz 2" "fuzz 1" "sig 2" "pic 2"; do set -- $run
  pics=--no-pictures; [ "$1" = pic ] && pics=--pictures
  grader --lang en batch "$1" --exercise 8-2 --seed $2 --jobs 2 --no-similarity $pics --out "out_$1_$2" >/dev/null 2>"out_$1_$2.err"
  echo "== $1 seed $2: $(grep -c . out_$1_$2/grades.csv) rows; grader-error: $(grep grader-error out_$1_$2/grades.csv | cut -d, -f1 | tr '\n' ' ')"
  echo "   honest bob: $(grep '^zz_honest_bob' out_$1_$2/grades.csv)"
  [ "$1" = pic ] && for f in out_pic_2/feedback/*.html; do printf '   %s pictures=%s\n' "$(basename $f)" "$(grep -c 'data:image/png' $f)"; done
done
