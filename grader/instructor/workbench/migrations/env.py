"""Alembic's environment: run programmatically by grader.instructor.workbench.db.migrate,
which hands over an open connection (there is no alembic.ini). Imported anywhere else (the
student kit's release imports every module to look for answers) it does nothing: Alembic's
context exists only while Alembic runs it."""

from alembic import context

from grader.instructor.workbench.models import Base


def run_migrations() -> None:
    connection = context.config.attributes["connection"]
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if getattr(context, "config", None) is not None:
    run_migrations()
