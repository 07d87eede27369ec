"""The workbench's database (issue 46): migrations from an empty database to the current
schema, scores computed from rubric items, optimistic concurrency, the audit log, review.csv
both ways and the scores reaching the gradebook. On SQLite and on a PostgreSQL server the
test starts (tests/support/review.py)."""

from __future__ import annotations

import csv
import io
import json
import threading

import pytest
from sqlalchemy import inspect, select

from grader.instructor.workbench import auth, db, scores
from grader.instructor.workbench.ingest import ingest
from grader.instructor.workbench.models import TA, Answer, Base, Part
from tests.support.review import POSTGRES_SKIP, postgres, skip_or_fail, synthetic_batch

STUDENTS = {
    "ann": "Self-attention costs $n^2 d$.",
    "bob": '=HYPERLINK("http://x")',
    "<b onmouseover=alert(1)>eve</b>": "<script>alert(1)</script>",
}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend(request, tmp_path_factory):
    if request.param == "sqlite":
        yield None
        return
    if POSTGRES_SKIP:
        skip_or_fail(POSTGRES_SKIP)
    with postgres("review_db") as url:
        yield url


@pytest.fixture
def opened(backend, tmp_path):
    """A batch folder and its database, empty of grading (a PostgreSQL one emptied first)."""
    out = synthetic_batch(tmp_path / "out", STUDENTS)
    if backend:
        database = db.Database(backend)
        Base.metadata.drop_all(database.engine)
        with database.engine.begin() as connection:
            connection.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
        database.dispose()
    database = db.open_database(out, backend)
    ingest(database, out)
    yield out, database
    database.dispose()


def _ta(database, name="Ann TA") -> TA:
    token = auth.add_ta(database, name)
    assert auth.token_ta(database, token).name == name
    with database.reading() as session:
        return session.scalar(select(TA).where(TA.name == name))


def _written(database, sid="ann"):
    from grader.instructor.workbench.models import Student

    with database.reading() as session:
        part = session.scalar(select(Part).where(Part.kind == "written"))
        answer = session.scalar(
            select(Answer)
            .join(Student, Student.id == Answer.student_id)
            .where(Answer.part_id == part.id, Student.sid == sid)
        )
        return part, answer


def test_migrations_build_the_schema_from_an_empty_database(opened):
    out, database = opened
    assert db.current_revision(database) == db.head_revision()
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    with database.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
        tables = set(inspect(connection).get_table_names())
    assert differences == []
    assert {"answer", "rubric_item", "applied", "audit", "ta", "session"} <= tables
    database.migrate()  # again: nothing to do
    if database.sqlite:
        with database.engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert (out / "review" / "review.sqlite3").is_file()


def test_ingest_keeps_the_answers_and_is_idempotent(opened):
    out, database = opened
    assert ingest(database, out) == {"students": 0, "parts": 0, "answers": 0, "changed": 0}
    part, answer = _written(database, "bob")
    assert answer.text == '=HYPERLINK("http://x")'  # the sheet's guard taken off again
    _, hostile = _written(database, "<b onmouseover=alert(1)>eve</b>")
    assert hostile.text == "<script>alert(1)</script>"


def test_rubric_items_score_and_editing_one_rescores_every_answer(opened):
    _, database = opened
    ta = _ta(database)
    part, answer = _written(database)
    _, other = _written(database, "bob")
    good = scores.add_item(database, ta, part.id, 1.5, "names the n²d term")
    bad = scores.add_item(database, ta, part.id, -0.5, "no positional encoding")
    assert scores.save_answer(database, ta, answer.id, answer.version, [good, bad]).ok
    assert scores.save_answer(database, ta, other.id, other.version, [good], "fine").ok
    written, _ = scores.review_scores(database)
    assert written["ann"]["8-3 comparison"]["points"] == 1.0
    assert written["bob"]["8-3 comparison"] == {
        "points": 1.5,
        "max_points": 2.0,
        "comment": "+1.5 names the n²d term; fine",
        "items": ["+1.5 names the n²d term"],
        "note": "fine",
    }
    with database.reading() as session:
        version = session.get(scores.RubricItem, good).version
    edit = scores.edit_item(database, ta, good, version, 2.5, "names n²d and n d²")
    assert edit.ok and edit.affected == 2
    written, _ = scores.review_scores(database)
    assert written["ann"]["8-3 comparison"]["points"] == 2.0  # 2.5 - 0.5, within 0..2
    assert written["bob"]["8-3 comparison"]["points"] == 2.0  # capped at the maximum
    assert written["bob"]["8-3 comparison"]["comment"].startswith("+2.5 names n²d and n d²")
    stale = scores.edit_item(database, _ta(database, "Bo"), good, version, 1, "stale")
    assert not stale.ok and stale.by == ta.name
    assert stale.now == {"points": 2.5, "text": "names n²d and n d²"}
    # Each answer's score before and after the edit is in the audit log.
    with database.reading() as session:
        rows = [r for r in scores.audit_rows(session) if r.action == "re-scored by an item's edit"]
    changes = {r.target: (json.loads(r.before), json.loads(r.after)) for r in rows}
    assert changes == {
        "ann 8-3 comparison": ({"score": 1.0}, {"score": 2.0}),
        "bob 8-3 comparison": ({"score": 1.5}, {"score": 2.0}),
    }


def test_a_stale_save_is_refused_and_shows_the_other_change(opened):
    _, database = opened
    ann, bo = _ta(database, "Ann"), _ta(database, "Bo")
    part, answer = _written(database)
    item = scores.add_item(database, ann, part.id, 1, "good")
    first = scores.save_answer(database, ann, answer.id, answer.version, [item], "Ann's")
    assert first.ok and first.version == answer.version + 1
    second = scores.save_answer(database, bo, answer.id, answer.version, [], "Bo's")
    assert not second.ok
    assert second.by == "Ann" and second.current["comment"] == "Ann's"
    assert [i["id"] for i in second.current["items"]] == [item]
    again = scores.save_answer(database, bo, answer.id, second.version, [], "Bo's")
    assert again.ok
    with database.reading() as session:
        log = scores.audit_csv(session)
    rows = list(csv.DictReader(io.StringIO(log)))
    grades = [r for r in rows if r["action"] == "grade"]
    assert [r["who"] for r in grades] == ["Ann", "Bo"]
    assert json.loads(grades[1]["before"])["comment"] == "Ann's"
    assert json.loads(grades[1]["after"])["comment"] == "Bo's"
    assert rows[0].keys() == set(scores.AUDIT_COLUMNS)


def test_concurrent_savers_lose_no_update(opened):
    """Ten TAs save the same answer at once, each from the version they read, retrying when
    refused: every save that succeeded is in the version count and the audit log."""
    _, database = opened
    tas = [_ta(database, f"TA {n}") for n in range(10)]
    part, answer = _written(database)
    done = []

    def work(ta):
        for number in range(5):
            while True:
                with database.reading() as session:
                    version = session.get(Answer, answer.id).version
                saved = scores.save_answer(
                    database, ta, answer.id, version, [], f"{ta.name} {number}"
                )
                if saved.ok:
                    done.append(saved.version)
                    break

    threads = [threading.Thread(target=work, args=(ta,)) for ta in tas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(done) == list(range(answer.version + 1, answer.version + 51))
    with database.reading() as session:
        assert session.get(Answer, answer.id).version == answer.version + 50
        assert sum(r.action == "grade" for r in scores.audit_rows(session)) == 50


def test_review_csv_both_ways_never_overwrites_a_page_score(opened):
    out, database = opened
    ta = _ta(database)
    part, answer = _written(database)
    assert scores.save_answer(database, ta, answer.id, answer.version, [], "", points=1.0).ok
    sheet = scores.export_sheet(database)
    rows = list(csv.DictReader(io.StringIO(sheet)))
    assert {r["student"] for r in rows} == {"ann", "bob", "<b onmouseover=alert(1)>eve</b>"}
    assert next(r for r in rows if r["student"] == "bob")["answer"].startswith("'=")

    def filled(points: str) -> str:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=scores.SHEET_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({**row, "points": points} for row in rows)
        return buffer.getvalue()

    result = scores.import_sheet(database, filled("2"), "import review.csv")
    assert result.problems == []
    assert sorted(result.imported) == [
        "<b onmouseover=alert(1)>eve</b> 8-3 comparison",
        "bob 8-3 comparison",
    ]
    assert result.kept == ["ann 8-3 comparison (1 in the page, 2 in the sheet)"]
    written, _ = scores.review_scores(database)
    assert written["ann"]["8-3 comparison"]["points"] == 1.0
    forced = scores.import_sheet(database, filled("2"), "import", overwrite=True)
    assert len(forced.imported) == 3
    bad = scores.import_sheet(database, filled("9"), "x")
    assert bad.problems and not bad.imported


def test_scores_and_regrades_reach_the_gradebook(opened):
    from grader.instructor.reviewed import refresh_gradebook

    out, database = opened
    ta = _ta(database)
    part, answer = _written(database)
    # The page with pictures a batch writes beside the Markdown feedback.
    page = out / "feedback" / "ann.html"
    page.write_text("<!DOCTYPE html><html><body><h2>Feedback for ann</h2></body></html>\n")
    assert scores.save_answer(database, ta, answer.id, answer.version, [], "clear", 1.5).ok
    with database.reading() as session:
        auto = session.scalar(
            select(Answer)
            .join(Part, Part.id == Answer.part_id)
            .where(Part.kind == "auto", Answer.student_id == answer.student_id)
            .where(Answer.auto_points == 0)
        )
        auto_part = session.get(Part, auto.part_id)
    saved = scores.save_answer(
        database, ta, auto.id, auto.version, (), "the shape check was wrong", auto_part.max_points
    )
    assert saved.ok
    refresh_gradebook(out)
    rows = {r["student"]: r for r in csv.DictReader(open(out / "grades.csv", encoding="utf-8"))}
    record_max = json.loads((out / "results" / "ann.json").read_text())["exercises"][0]["max_score"]
    assert float(rows["ann"]["total"]) == record_max + 1.5
    assert rows["ann"]["written"] == "1.5"
    assert rows["ann"]["regraded"] == f"{auto_part.max_points:g}"
    feedback = (out / "feedback" / "ann.md").read_text(encoding="utf-8")
    assert "regraded by hand" in feedback and "the shape check was wrong" in feedback
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "Regrades" in report and "the shape check was wrong" in report
    assert "grader merge`); included" in report  # says where written scores come from
    html = page.read_text(encoding="utf-8")
    assert html.count("Added by the instructor") == 1 and "the shape check was wrong" in html
    refresh_gradebook(out)  # twice: the same
    again = {r["student"]: r for r in csv.DictReader(open(out / "grades.csv", encoding="utf-8"))}
    assert again == rows
    assert page.read_text(encoding="utf-8") == html  # the section replaced, not added again


def test_feedback_lists_items_and_comment_apart_and_shows_markup_as_text(opened):
    from grader.instructor.reviewed import refresh_gradebook

    out, database = opened
    ta = _ta(database)
    part, answer = _written(database)
    page = out / "feedback" / "ann.html"
    page.write_text("<html><body><h2>Feedback for ann</h2></body></html>\n")
    good = scores.add_item(database, ta, part.id, 1, "names the n²d term")
    bad = scores.add_item(database, ta, part.id, -0.5, "<script>alert(1)</script> no PE")
    note = "see <img src=x onerror=alert(1)> page 3"
    assert scores.save_answer(database, ta, answer.id, answer.version, [good, bad], note).ok
    refresh_gradebook(out)
    feedback = (out / "feedback" / "ann.md").read_text(encoding="utf-8")
    lines = [line.strip() for line in feedback.splitlines()]
    assert "- \\+1 names the n²d term" in lines or "- +1 names the n²d term" in lines
    assert any(line.startswith("- Comment: see") for line in lines)
    html = page.read_text(encoding="utf-8")
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; no PE" in html


def test_a_cleared_regrade_no_longer_counts_for_its_ta(opened):
    _, database = opened
    ta = _ta(database, "Bo")
    _, answer = _written(database)
    with database.reading() as session:
        auto = session.scalar(
            select(Answer)
            .join(Part, Part.id == Answer.part_id)
            .where(Part.kind == "auto", Answer.student_id == answer.student_id)
        )
    saved = scores.save_answer(database, ta, auto.id, auto.version, (), "shape check", 0.5)
    with database.reading() as session:
        assert scores.progress(session)[1]["Bo"] == {auto.part_id: 1}
    assert scores.save_answer(database, ta, auto.id, saved.version, (), "", None).ok
    with database.reading() as session:
        per_part, per_ta = scores.progress(session)
    assert "Bo" not in per_ta and per_part[auto.part_id]["graded"] == 0


def test_an_export_made_again_is_not_called_out_of_date(opened):
    from grader.instructor.reviewed import refresh_gradebook

    out, database = opened
    ta = _ta(database)
    _, answer = _written(database)
    (out / "lms").mkdir()
    for system in ("canvas", "moodle"):
        (out / "lms" / f"{system}.source.json").write_text(
            json.dumps({"system": system, "gradebook_sha256": "old", "exported_at": "then"})
        )
    assert scores.save_answer(database, ta, answer.id, answer.version, [], "", 1.0).ok
    notes = refresh_gradebook(out, exporting="canvas")
    assert len(notes) == 1 and "moodle.csv" in notes[0] and "--roster ROSTER" in notes[0]
    assert len(refresh_gradebook(out)) == 2


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_points_that_are_no_finite_number_are_never_stored(opened, bad):
    """NaN passes min and max untouched: a starting score, an item or a typed score of NaN
    once reached the scores (and, on PostgreSQL, the gradebook) (r8 red team)."""
    _, database = opened
    ta = _ta(database)
    part, answer = _written(database)
    item = scores.add_item(database, ta, part.id, 1.0, "names the n²d term")
    with pytest.raises(ValueError):
        scores.set_base(database, ta, part.id, bad)
    with pytest.raises(ValueError):
        scores.add_item(database, ta, part.id, bad, "nothing")
    with database.reading() as session:
        version = session.get(scores.RubricItem, item).version
    with pytest.raises(ValueError):
        scores.edit_item(database, ta, item, version, bad, "names it")
    with pytest.raises(ValueError):
        scores.save_answer(database, ta, answer.id, answer.version, [item], points=bad)
    assert scores.save_answer(database, ta, answer.id, answer.version, [item]).ok
    written, _ = scores.review_scores(database)
    assert written["ann"]["8-3 comparison"]["points"] == 1.0  # base 0 and the one item
    with database.reading() as session:
        assert len(scores.items_of(session, part.id)) == 1
        assert session.get(scores.RubricItem, item).points == 1.0


def test_ids_stay_hidden_in_the_audit_log_and_sheet_until_revealed(opened):
    """A TA who has not revealed the ids reads aliases in the audit log, its CSV and review.csv
    (which named the students: r8 red team); a sheet of aliases imports back."""
    _, database = opened
    ta = _ta(database)
    part, answer = _written(database)
    assert scores.save_answer(database, ta, answer.id, answer.version, [], "", points=1.0).ok
    with database.reading() as session:
        alias = {s.sid: s.alias for s in session.scalars(select(scores.Student))}
        hidden = scores.audit_rows(session, reveal=False)
        shown = scores.audit_rows(session)
        hidden_csv = scores.audit_csv(session, reveal=False)
    assert [r.target for r in shown if r.action == "grade"] == ["ann 8-3 comparison"]
    assert [r.target for r in hidden if r.action == "grade"] == [f"{alias['ann']} 8-3 comparison"]
    sheet = scores.export_sheet(database, reveal=False)
    for sid in alias:
        assert sid not in hidden_csv and sid not in sheet
    rows = list(csv.DictReader(io.StringIO(sheet)))
    assert {r["student"] for r in rows} == set(alias.values())
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=scores.SHEET_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({**row, "points": "2"} for row in rows)
    result = scores.import_sheet(database, buffer.getvalue(), "import review.csv")
    assert result.problems == [] and len(result.imported) == 2  # ann's page score is kept
    written, _ = scores.review_scores(database)
    assert written["bob"]["8-3 comparison"]["points"] == 2.0


def test_a_new_sign_in_link_ends_the_earlier_unused_ones(opened):
    _, database = opened
    first = auth.add_ta(database, "Ann TA")
    second = auth.add_ta(database, "Ann TA")
    assert auth.token_ta(database, first) is None
    assert auth.token_ta(database, second).name == "Ann TA"
    other = auth.add_ta(database, "Bo")  # another TA's link leaves Ann's alone
    assert auth.token_ta(database, second).name == "Ann TA"
    assert auth.token_ta(database, other).name == "Bo"
