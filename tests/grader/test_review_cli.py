"""`grader review` from the command line (issue 46): sign-in links, review.csv both ways, the
audit log, the gradebook written again, the warning when listening beyond this machine."""

from __future__ import annotations

import csv
import io

from click.testing import CliRunner

from grader.cli import main
from grader.instructor.workbench import auth, db
from tests.support.review import synthetic_batch

STUDENTS = {"ann": "An answer.", "=bob": "Another $x$."}


def grader(*words):
    return CliRunner().invoke(main, [str(w) for w in words], catch_exceptions=False)


def test_add_ta_prints_a_one_time_link_and_options_go_before_or_after_out(tmp_path):
    out = synthetic_batch(tmp_path / "out", STUDENTS)
    done = grader("review", out, "--port", "9001", "add-ta", "Ann Lee")
    assert done.exit_code == 0, done.output
    link = done.output.splitlines()[0]
    assert link.startswith("http://127.0.0.1:9001/signin/")
    database = db.open_database(out)
    assert auth.token_ta(database, link.rsplit("/", 1)[1]).name == "Ann Lee"
    again = grader("review", "--port", "9002", out, "add-ta", "Ann Lee")
    assert again.output.startswith("http://127.0.0.1:9002/signin/")
    assert (out / "review" / "review.sqlite3").is_file()
    missing = grader("review", tmp_path / "nothing", "add-ta", "x")
    assert missing.exit_code != 0 and "holds no graded batch" in missing.output


def test_review_csv_both_ways_and_the_gradebook(tmp_path):
    out = synthetic_batch(tmp_path / "out", STUDENTS)
    sheet = tmp_path / "review.csv"
    assert grader("review", out, "export-csv", "--to", sheet).exit_code == 0
    rows = list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8"))))
    assert [r["student"] for r in rows] == ["'=bob", "ann"]  # a formula made text
    for row in rows:
        row["points"], row["comment"] = "1.5", "clear"
    with open(sheet, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    done = grader("review", out, "import-csv", sheet)
    assert done.exit_code == 0 and "2 scores imported" in done.output, done.output
    done = grader("review", out, "gradebook")
    assert done.exit_code == 0, done.output
    grades = {r["student"]: r for r in csv.DictReader(open(out / "grades.csv", encoding="utf-8"))}
    assert grades["ann"]["written"] == "1.5" and grades["'=bob"]["written"] == "1.5"
    log = grader("review", out, "audit").output
    assert log.splitlines()[0] == "at,who,action,target,before,after"
    assert len(log.splitlines()) == 3 and log.count(",import review.csv,") == 2
    bad = sheet.read_text(encoding="utf-8").replace(",1.5,", ",7,")
    sheet.write_text(bad, encoding="utf-8")
    refused = grader("review", out, "import-csv", sheet)
    assert refused.exit_code != 0 and "nothing imported" in refused.output


def test_serving_beyond_this_machine_warns_to_use_tls(tmp_path, monkeypatch):
    import uvicorn

    out = synthetic_batch(tmp_path / "out", STUDENTS)
    served = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.update(options))
    done = CliRunner().invoke(main, ["review", str(out), "--host", "0.0.0.0"])
    assert done.exit_code == 0, done.output
    assert "put the page behind TLS" in done.output
    assert served["host"] == "0.0.0.0"
    served.clear()
    done = CliRunner().invoke(main, ["review", str(out)])
    assert "TLS" not in done.output and served["host"] == "127.0.0.1"
