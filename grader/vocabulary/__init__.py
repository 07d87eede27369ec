"""The words the grader's layers share: the engine, the sandbox, the records and everything
above them import these, and these import nothing of the grader but grader.i18n. So the
sandbox can report in the engine's terms without importing the engine (docs/architecture.md).

- `spec`: the vocabulary of a record (Exercise, Part, Case, Mistake, Property).
- `status`: the one status vocabulary (of a case, a child's run, a part).
- `labels`: the words of case labels and of a child's reasons, translated where shown.
- `protocol` and `bundle`: what a child reports (and the `Outcome` of its run), and the files
  it is carried in.
- `text` and `untrusted`: a child's or a student's text made safe to show and to write.
- `rounding`: how far rounding alone may take a float computation.

Only NumPy and the standard library are imported: the sandboxed child uses these modules.
"""
