"""The grading engine: one generic checker for every record.

- `spec`: the vocabulary of a record (Exercise, Part, Case, Mistake, Property).
- `sampling` and `selectors`: what records declare their cases and mistakes with.
- `cases`: a record's cases from a seed, saved for a child.
- `status`: the one status vocabulary (of a case, a child's run, a part).
- `protocol` and `bundle`: what a child reports, and the files it is carried in.
- `references`: the expected outputs (the solutions run live, or a fixture file).
- `judging` and `compare`: reports compared with expected outputs, mistakes recognised.
- `results`: what grading gives back; `text`: child text made safe to show.
- `grading.grade`: the one entry point.

Nothing here imports TensorFlow; the submission and the solutions run in children
(grader.sandbox).
"""
