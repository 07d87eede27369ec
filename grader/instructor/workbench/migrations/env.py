"""Alembic's environment: run programmatically by grader.instructor.workbench.db.migrate,
which hands over an open connection (there is no alembic.ini)."""

from alembic import context

from grader.instructor.workbench.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
