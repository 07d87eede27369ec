"""The instructor's side: a class graded in one run, and what the week around it needs.

- `batch`: the batch run itself (`grader batch`, `grader merge`); `gradescope`: the same
  for one submission inside Gradescope's autograder.
- `course/`: the class and its calendar: submissions, the roster, late work, the stubs and
  the kits released to students and to Gradescope.
- `review/`: review by hand: written answers, similar submissions, answers found by what
  they do.
- `outputs/`: what is written out: results, feedback and the gradebook, the reports, the
  LMS export, the GitHub Actions workflow.
- `files`: the helpers all of them share (where a student's files are, atomic writes).

Each part imports only those listed after it (docs/architecture.md; tests/test_layering.py).
"""
