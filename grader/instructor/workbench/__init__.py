"""The grading workbench (`grader review OUT`): a page TAs grade written answers and regrade
autograded parts in, several at once, stored in a database (SQLite in OUT by default, PostgreSQL
with `--db`). docs/review.md is the TA's guide; docs/architecture.md says why Starlette, Jinja2,
SQLAlchemy and Alembic.

- models: the schema (SQLAlchemy 2); migrations/: Alembic, run at every start.
- db: opening a database (SQLite in write-ahead-log mode, or PostgreSQL through psycopg 3).
- ingest: a finished batch's folder into the database (students, parts, answers).
- scores: what an answer scores (computed from its rubric items, never stored), saving with
  optimistic concurrency, the audit log, and the scores the gradebook reads.
- app: the pages (Starlette, Jinja2 with autoescape), sign-in, CSRF and Origin checks.
- cli: `grader review`.
"""
