"""The workbench's schema. A change here needs a new Alembic revision in migrations/versions
(tests/grader/test_review_db.py checks that the migrations build exactly this schema).

An answer's score is never stored: it is computed from the rubric items applied to it (and a
typed override), so editing an item re-scores every answer that has it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Meta(Base):
    """Settings kept with the data: the key that signs session cookies."""

    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class TA(Base):
    __tablename__ = "ta"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime)


class SigninToken(Base):
    """A one-time sign-in link (only its hash is kept)."""

    __tablename__ = "signin_token"
    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    ta_id: Mapped[int] = mapped_column(ForeignKey("ta.id", ondelete="CASCADE"), index=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    used_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class Session(Base):
    """A signed-in browser: the cookie holds the signed session id, this its hash."""

    __tablename__ = "session"
    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    ta_id: Mapped[int] = mapped_column(ForeignKey("ta.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    reveal: Mapped[bool] = mapped_column(Boolean, default=False)


class Student(Base):
    __tablename__ = "student"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sid: Mapped[str] = mapped_column(String(1000), unique=True)
    # Shown instead of the id until a TA reveals names: random, so no order leaks.
    alias: Mapped[str] = mapped_column(String(32), unique=True)


class Part(Base):
    """An exercise part: `written` (graded here with a rubric) or `auto` (autograded; a TA may
    regrade it)."""

    __tablename__ = "part"
    __table_args__ = (UniqueConstraint("exercise", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    exercise: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    max_points: Mapped[float] = mapped_column(Float)
    prompt: Mapped[str] = mapped_column(Text, default="")
    # Where a rubric's score starts: 0 (items add points) or the maximum (items deduct).
    base_points: Mapped[float] = mapped_column(Float, default=0.0)
    position: Mapped[int] = mapped_column(Integer, default=0)


class RubricItem(Base):
    __tablename__ = "rubric_item"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    part_id: Mapped[int] = mapped_column(ForeignKey("part.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    points: Mapped[float] = mapped_column(Float)
    text: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer, default=1)


class Answer(Base):
    """One student's answer to one part. `version` grows with every save: a save made from an
    older version is refused (optimistic concurrency)."""

    __tablename__ = "answer"
    __table_args__ = (UniqueConstraint("student_id", "part_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    student_id: Mapped[int] = mapped_column(ForeignKey("student.id", ondelete="CASCADE"))
    part_id: Mapped[int] = mapped_column(ForeignKey("part.id", ondelete="CASCADE"), index=True)
    text: Mapped[str] = mapped_column(Text, default="")
    version: Mapped[int] = mapped_column(Integer, default=1)
    graded: Mapped[bool] = mapped_column(Boolean, default=False)
    # Points typed instead of the rubric's sum (a written part), or the regraded points of an
    # autograded part; None: the rubric's sum, or the autograder's points.
    points: Mapped[float | None] = mapped_column(Float, nullable=True)
    comment: Mapped[str] = mapped_column(Text, default="")
    # Where `points` came from: "page" (typed by a TA) or "csv" (an imported review.csv).
    source: Mapped[str] = mapped_column(String(16), default="")
    auto_points: Mapped[float | None] = mapped_column(Float, nullable=True)
    auto_status: Mapped[str] = mapped_column(String(32), default="")
    graded_by: Mapped[int | None] = mapped_column(
        ForeignKey("ta.id", ondelete="SET NULL"), nullable=True
    )
    updated_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class Applied(Base):
    __tablename__ = "applied"
    answer_id: Mapped[int] = mapped_column(
        ForeignKey("answer.id", ondelete="CASCADE"), primary_key=True
    )
    item_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_item.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class Audit(Base):
    """Every change: who, what, when, before and after (JSON)."""

    __tablename__ = "audit"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime, index=True)
    who: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(Text)
    before: Mapped[str] = mapped_column(Text, default="")
    after: Mapped[str] = mapped_column(Text, default="")
