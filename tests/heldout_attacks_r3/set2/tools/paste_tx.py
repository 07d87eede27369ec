# Offline: train the honest location-attention model on MY OWN generated data, print literals.
import sys, importlib.util, numpy as np
sys.path.insert(0, "tools"); import data, keras
spec = importlib.util.spec_from_file_location("h", "training/train-transformer/honest_location_attention/lab_train_transformer.py")
h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)
keras.utils.set_random_seed(123); X, Y = data.tx(3000, seed=77); m = h.build_model(12, 12); h.train_model(m, X, Y)
l = m.layers[1]
f = lambda a: repr(np.round(a.numpy(), 2).tolist())
print("PASTED_A = " + f(l.A)); print("PASTED_WO = " + f(l.Wo)); print("PASTED_BO = " + f(l.bo))
