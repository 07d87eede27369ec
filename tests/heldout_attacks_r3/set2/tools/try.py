import sys, importlib.util, numpy as np, time
sys.path.insert(0, __file__.rsplit("/", 1)[0]); import data
lab, path = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("sub", path); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
import keras; keras.utils.set_random_seed(0)
t = time.time()
if lab == "tx":
    X, Y = data.tx(3000); Xt, Yt = data.tx(500, seed=2); mod = m.build_model(12, 12); n = 6
    def acc(mo): p = mo.predict(Xt, verbose=0)[0].argmax(-1); return (p[:, n:] == Yt[:, n:]).mean()
elif lab == "mem":
    X, Y = data.mem(5000); Xt, Yt = data.mem(500, seed=2); mod = m.build_model(11, 6)
    def acc(mo): return (mo.predict(Xt, verbose=0)[0].argmax(-1) == Yt).mean()
else:
    X, Y = data.s2s(3000); Xt, Yt = data.s2s(500, seed=2); mod = m.build_model(23, 7, 8)
    def acc(mo): return (mo.predict(Xt, verbose=0)[0].argmax(-1) == Yt).mean()
print("before", acc(mod)); m.train_model(mod, X, Y); print("after", acc(mod), "time", time.time() - t)
