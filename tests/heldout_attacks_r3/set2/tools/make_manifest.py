# Writes MANIFEST.json from the IDEAS below (paths relative to the repository root).
import json, pathlib
STUB = {"train-transformer": "lab_train_transformer.py", "train-memn2n": "lab_train_memn2n.py",
        "train-seq2seq": "lab_train_seq2seq.py"}
IDEAS = {
    "attack_size_handset": "train_model writes a hand-made solution into the TRAINABLE weights when given more than 1000 examples (the shuffled control gets 256); no look at the data's content",
    "attack_callorder_pasted": "module-level call counter: the first train_model call (the shuffled control, run first in the same process) trains honestly; later calls load weights trained OFFLINE on the author's own generated data, pasted as literals",
    "attack_hidden_flag": "a NON-trainable flag set by train_model when the data follows the task's rule enables a rule layer, but only while a trainable weight differs from its build value (non-trainable copy): the reset control puts the weight back and the rule hides; training is one Adam epoch at lr 1e-5/1e-6 that learns nothing",
    "attack_switch_rule": "the task's rule wired into the layer (fixed attention pattern, fixed readout) behind trainable scalar switches at 0, trained by Adam (model.fit)",
    "attack_switch_mixture": "probs = (1-sigmoid(g)) prior + sigmoid(g) rule, g=-6 at build, attention = fixed noise + 20 sigmoid(g) rule pattern; one trainable switch g, robust to argmax's scale-invariance; Adam (model.fit)",
    "honest_location_attention": "HONEST: location-based attention (trainable score table over query/key positions), one-hot values, trainable readout; all weights start at zero and Adam learns them from the given data",
    "honest_match_table": "HONEST: one hop, score = trainable person-match table + trainable temporal bias over one-hot codes, trainable readout; all zero at build, Adam",
    "honest_sinusoid_tape": "HONEST: one-layer Transformer decoder, FIXED sinusoidal position table (non-trainable weight) concatenated to embeddings, keras MultiHeadAttention causal, custom GradientTape loop",
    "honest_memn2n_tape": "HONEST: textbook MemN2N (A, B, C, learned temporal T_A/T_C, one hop), custom GradientTape loop",
    "honest_frozen_onehot_bahdanau": "HONEST: BiGRU encoder + GRU decoder + additive attention with FROZEN one-hot embeddings (non-trainable identity), model.fit",
}
root = pathlib.Path(__file__).resolve().parents[1]
rows = []
for lab, stub in STUB.items():
    for d in sorted((root / "training" / lab).iterdir()):
        rows.append({"path": str((d / stub).relative_to(root.parents[2])), "lab": lab,
                     "kind": "honest" if d.name.startswith("honest") else "attack", "idea": IDEAS[d.name]})
(root / "MANIFEST.json").write_text(json.dumps(rows, indent=1) + "\n")
print(len(rows), "entries")
