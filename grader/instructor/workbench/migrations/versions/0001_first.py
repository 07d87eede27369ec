"""The first schema: TAs, sign-in links, sessions, students, parts, rubric items, answers,
applied items, the audit log.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )
    op.create_table(
        "ta",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "signin_token",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column(
            "ta_id", sa.Integer(), sa.ForeignKey("ta.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=True),
    )
    op.create_index("ix_signin_token_ta_id", "signin_token", ["ta_id"])
    op.create_table(
        "session",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column(
            "ta_id", sa.Integer(), sa.ForeignKey("ta.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("reveal", sa.Boolean(), nullable=False),
    )
    op.create_index("ix_session_ta_id", "session", ["ta_id"])
    op.create_table(
        "student",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("sid", sa.String(1000), nullable=False, unique=True),
        sa.Column("alias", sa.String(32), nullable=False, unique=True),
    )
    op.create_table(
        "part",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("exercise", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("max_points", sa.Float(), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("base_points", sa.Float(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.UniqueConstraint("exercise", "name"),
    )
    op.create_table(
        "rubric_item",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "part_id", sa.Integer(), sa.ForeignKey("part.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("points", sa.Float(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
    )
    op.create_index("ix_rubric_item_part_id", "rubric_item", ["part_id"])
    op.create_table(
        "answer",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "student_id",
            sa.Integer(),
            sa.ForeignKey("student.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "part_id", sa.Integer(), sa.ForeignKey("part.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("graded", sa.Boolean(), nullable=False),
        sa.Column("points", sa.Float(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("auto_points", sa.Float(), nullable=True),
        sa.Column("auto_status", sa.String(32), nullable=False),
        sa.Column(
            "graded_by", sa.Integer(), sa.ForeignKey("ta.id", ondelete="SET NULL"), nullable=True
        ),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("student_id", "part_id"),
    )
    op.create_index("ix_answer_part_id", "answer", ["part_id"])
    op.create_table(
        "applied",
        sa.Column(
            "answer_id",
            sa.Integer(),
            sa.ForeignKey("answer.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "item_id",
            sa.Integer(),
            sa.ForeignKey("rubric_item.id", ondelete="CASCADE"),
            primary_key=True,
        ),
    )
    op.create_index("ix_applied_item_id", "applied", ["item_id"])
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("who", sa.String(200), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("before", sa.Text(), nullable=False),
        sa.Column("after", sa.Text(), nullable=False),
    )
    op.create_index("ix_audit_at", "audit", ["at"])


def downgrade() -> None:
    for table in (
        "audit",
        "applied",
        "answer",
        "rubric_item",
        "part",
        "student",
        "session",
        "signin_token",
        "ta",
        "meta",
    ):
        op.drop_table(table)
