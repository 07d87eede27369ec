# Offline: train the honest location-attention seq2seq on MY OWN dates, print sparse literals.
import sys, importlib.util, numpy as np
sys.path.insert(0, "tools"); import data, keras
spec = importlib.util.spec_from_file_location("h", "training/train-seq2seq/honest_location_attention/lab_train_seq2seq.py")
h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)
keras.utils.set_random_seed(123); X, Y = data.s2s(3000, seed=77); m = h.build_model(23, 7, 8); h.train_model(m, X, Y)
l = m.get_layer("loc"); out = {}
for k in ("A", "Wo", "bo"):
    w = getattr(l, k).numpy(); idx = np.argwhere(np.abs(w) > 1.0)
    out[k] = [(tuple(int(i) for i in ix), round(float(w[tuple(ix)]), 2)) for ix in idx]
print("PASTED = " + repr(out))
