"""The grading engine: one generic checker for every record. It never names a record: it is
given one (grader.grading looks records up by id), and records are written with its tools.

- `sampling`, `selectors`, `properties`, `compiled`: what records declare their cases,
  mistakes and properties with (and a student kit's records, compiled to data).
- `cases`: a record's cases from a seed, saved for a child.
- `references`: the expected outputs (the solutions run live, or a fixture file).
- `judging` and `compare` (with `diagnosis`, `search`, `mutants`, `contracts`,
  `framework_errors`): reports compared with expected outputs, mistakes recognised.
- `results`: what grading gives back; `feedback`: what a student is told first.
- `safe_files` and `filenames`: a submission's files, read without following a link.

The words it shares with the sandbox and the records (Exercise, Case, statuses, a child's
report and its Outcome) are grader.vocabulary's. Nothing here imports TensorFlow; the
submission and the solutions run in children (grader.sandbox).
"""
