"""The grading engine: records' vocabulary (spec), their cases (cases), the child's report
(protocol, bundle), expected outputs (references), judging and comparing (judging, compare), the
results (results) and the one entry point, `grading.grade`.

Nothing here imports TensorFlow; the submission and the solutions run in children
(grader.sandbox).
"""
