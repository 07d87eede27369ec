# Offline: train the honest match-table memory network on MY OWN stories, print literals.
import sys, importlib.util, numpy as np
sys.path.insert(0, "tools"); import data, keras
spec = importlib.util.spec_from_file_location("h", "training/train-memn2n/honest_match_table/lab_train_memn2n.py")
h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)
keras.utils.set_random_seed(123); X, Y = data.mem(5000, seed=77); m = h.build_model(11, 6); h.train_model(m, X, Y)
l = m.get_layer("mem")
print("PASTED = {" + ", ".join(f"{k!r}: {np.round(getattr(l, k).numpy(), 2).tolist()!r}" for k in ("Bq", "T", "Wo", "bo")) + "}")
