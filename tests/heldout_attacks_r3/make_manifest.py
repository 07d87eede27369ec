"""Writes MANIFEST.json (run from this folder): one entry per attack / honest file."""
import json

T, M, S = "train-transformer", "train-memn2n", "train-seq2seq"
ZERO = "0/10 on the train part: the answers do not come from learning on the grader's data"
FULL = "10/10: the model genuinely learns the task from the data it is given"

E = []


def add(lab, name, kind, idea, expected=None):
    E.append({"file": f"training/{lab}/{name}.py", "lab_or_surface": lab, "kind": kind,
              "idea": idea, "expected": expected or (ZERO if kind == "attack" else FULL)})


for lab in (T, M, S):
    add(lab, "attack_rule_layer", "attack",
        "A weightless custom layer computes answer and attention by rule from the input tokens; train_model does nothing.")
    add(lab, "attack_sniff_handset", "attack",
        "Random-init model; train_model checks the data looks like the task and then writes hand-made weights into the trainable variables (no gradient step), so untrained / reset / shuffled-trained models all stay at chance.")
    add(lab, "attack_learned_gate_rule", "attack",
        "The task is hard-coded as a rule; the only trainable weights are two scalars (start 0) that fit() turns up to switch the rule on.")
    add(lab, "attack_trainable_flag_predict", "attack",
        "predict()/attention_weights() answer by rule in NumPy when a trainable scalar is 1; train_model sets it to 1 only after sniffing the data.")
    add(lab, "attack_own_data", "attack",
        "A genuine model genuinely trained, but on data train_model generates itself, ignoring the grader's inputs and targets.")
add(T, "attack_handset_build", "attack",
    "Ordinary-looking Transformer decoder with every weight set by hand in build_model (one-hot token/position embeddings, mirror query/key maps).")
add(T, "attack_handset_in_train", "attack",
    "Same hand-made weights, but written by train_model with variable.assign without looking at the data.")
add(T, "attack_predict_override", "attack",
    "Tiny model fitted one step; train_model sets a Python attribute and predict()/attention_weights() then answer by rule from the inputs.")
add(T, "attack_decoy_trainable", "attack",
    "A trainable path really is fitted on the data (weights change) but a non-trainable gate set to 0.999 by train_model routes answers through a weightless rule path.")
add(T, "attack_count_table", "attack",
    "train_model counts which earlier position each target agrees with and writes the one-hot table into a NON-trainable matrix; the model is a gather through it.")
add(T, "attack_count_table_trainable", "attack",
    "Same counting (no gradient, no neural learning) but the table is a TRAINABLE variable, and stays uniform when the count finds nothing (shuffled answers).")
add(T, "attack_fake_attention", "attack",
    "Answers learned by a causal position-wise linear map with no attention at all; the attention output is a constant anti-diagonal picture from a weightless layer.",
    "0/10 (or at least not the attention gate's credit): the attention returned is not the model's attention")
add(M, "attack_handset_build", "attack",
    "Textbook one-hop MemN2N (A, B, C, T_A, T_C, W) with all weights set by hand in build_model so u.m_i = 40[same person] + 5 i.")
add(M, "attack_handset_in_train", "attack",
    "Same MemN2N built random; train_model writes the hand weights with set_weights without looking at the data.")
add(M, "attack_fake_attention_gru", "attack",
    "Answers learned by a GRU over the facts (no attention); the attention output is a rule-made one-hot on the supporting fact.",
    "0/10 (or at least not the attention gate's credit): the attention returned is not the model's attention")
add(S, "attack_count_table", "attack",
    "train_model counts, per target step, the best-predicting source position and the majority digit per source token, and writes alignment + lookup into trainable variables; no neural learning.")
add(S, "attack_fake_attention", "attack",
    "Digits learned by a plain GRU encoder-decoder with no attention; the attention output is a constant monotone picture.",
    "0/10 (or at least not the attention gate's credit): the attention returned is not the model's attention")
add(T, "honest_sinusoid_concat", "honest",
    "Frozen one-hot tokens concatenated with a fixed (non-trainable) sinusoidal table, a custom 2-head causal attention, residual MLP, fit on answer positions.")
add(T, "honest_custom_loop_mha", "honest",
    "keras MultiHeadAttention (4 heads) with learned positions, no MLP, trained by a hand-written GradientTape loop.")
add(M, "honest_onehot_frozen", "honest",
    "Frozen one-hot embeddings then trainable bias-free projections, learned temporal tables, one hop, fit.")
add(M, "honest_two_hops_custom_loop", "honest",
    "Two hops with adjacent weight tying, learned temporal encodings, GradientTape loop, attention (B, 2, F).")
add(S, "honest_bilstm_additive", "honest",
    "BiLSTM encoder and LSTM decoder (not GRU), additive attention as a custom layer, tanh layer, fit.")
add(S, "honest_onehot_gru_custom_loop", "honest",
    "Frozen one-hot embeddings, BiGRU encoder, GRU decoder, additive attention with bias, GradientTape loop.")

SAFE = ("the class is graded; the hostile student gets 0 points or a clear refusal naming the problem; "
        "alice (the honest classmate) gets the same result as alone; nothing is written outside --out "
        "(canary/ empty); no symlink followed; every name/answer shown in report.html, feedback/*.html "
        "and review.html is escaped text, never markup; no grades.csv cell starts a formula")
for name, idea in [
    ("canvas_zip_traversal", "Canvas loose files where mallory's zip holds ../ and absolute-path members, a symlink member to /etc/passwd, and trudy's 'file' is a symlink to alice's file."),
    ("canvas_symlink_member", "A Canvas zip whose ex8_2.py member is a symlink to a classmate's file (grading someone else's work as mine)."),
    ("hostile_names", "Canvas logins holding <svg onload>, <img onerror>, a newline, a =HYPERLINK formula, a 200-char name, plus the _late mark on a markup name."),
    ("moodle_hostile", "Moodle folders whose full names hold markup, SQL-ish quotes and '..'."),
    ("zip_bomb", "A Canvas zip holding 300 MB of zeros, and one with 20000 tiny members."),
    ("notebooks", "ex8_2.ipynb cells that glob classmates' files, /etc/passwd, solutions and ~/.ssh and print them, outputs with <script>, !shell and %%bash magics, a notebook that is not JSON, a cell whose type is markup."),
    ("written", "8-3 written answers holding <script>, an <iframe> of file:///etc/passwd, a javascript: link, a CSV formula and <style>; a student id that is an <img onerror> tag."),
]:
    E.append({"file": f"surfaces/make_surfaces.py:{name}", "lab_or_surface": "batch/" + name,
              "kind": "attack", "idea": idea,
              "expected": SAFE + ("; the broken notebook is reported like a syntax error naming the cell; magics never run; snooping finds nothing outside the student's own folder" if name == "notebooks" else "")})
for name, idea in [
    ("edited_result", "bob's results/bob.json in his shard rewritten to full marks."),
    ("duplicated_student", "bob's result (full marks) planted also in the shard he does not belong to."),
    ("ghost_student", "a results/ghost.json claiming full marks for a student with no submission, and added to shard.json's list."),
    ("swapped_results", "alice's and bob's result files swapped (names rewritten inside)."),
    ("shard_json_edited", "shard.json of one shard claims another seed and 'finished'."),
    ("hostile_result", "carol's result carries a <script> student id, an extra results file named ..%2F..%2Fescaped.json, and a feedback .md with <script>."),
]:
    E.append({"file": f"surfaces/tamper_shards.py:{name}", "lab_or_surface": "gather/" + name,
              "kind": "attack", "idea": idea,
              "expected": "grader gather refuses (nonzero exit, names the shard folder and what is inconsistent: a result that does not match its recorded digest/cases, a student in two shards or in the wrong shard by SHA-256 split, a student with no submission), writes no gradebook, and bob never gets points"})
json.dump(E, open("MANIFEST.json", "w"), indent=1, ensure_ascii=False)
print(len(E), "entries")
