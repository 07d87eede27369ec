"""Notebooks: made from the stubs (generate), read for grading (extract), graded from inside
Jupyter with `check()` (live) and shown as HTML (html)."""
