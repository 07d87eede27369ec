"""The workbench's pages in a real browser (issue 46): Debian's chromium driven by Playwright,
on SQLite and on a PostgreSQL server the test starts. Two TAs grade the same part at once and
lose nothing; every page and action needs a sign-in; a request from another origin is refused;
an answer holding <script> and a student id holding markup are shown inert; the keyboard
grades; editing a rubric item re-scores; a regrade is saved.

ATTNKIT_REVIEW_SCREENSHOTS=1 also saves the pages' screenshots in docs/review/ (the ones
docs/review.md shows); without it they go to the test's temporary folder only."""

from __future__ import annotations

import http.client
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest
from sqlalchemy import select

from grader.instructor.workbench import auth, db, scores
from grader.instructor.workbench.ingest import ingest
from grader.instructor.workbench.models import Answer, Applied, Part, Student
from tests.support.review import (
    POSTGRES_SKIP,
    browser,
    browser_skip,
    free_port,
    postgres,
    serve,
    skip_or_fail,
    synthetic_batch,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "review"
HOSTILE_ID = '<img src=x onerror="window.__pwned=1">$\\frac{1}{2}$'
STUDENTS = {
    "ann": (
        "For n = 50, d = 512 self-attention costs about $n^2 d + n d^2$ operations, less than "
        "the convolution's $k n d^2$.\n\n- path length **1** against $n/k$ and $n$\n"
        "- every position at once; a recurrent layer goes step by step\n\n"
        "Positional encodings put the order back."
    ),
    "bob": "Self-attention is faster because it looks at everything at once.",
    "cho": "Convolutions are local; attention is global, so $O(1)$ path length.",
    HOSTILE_ID: (
        "<script>window.__pwned = 1</script> and <b>bold</b> **markdown**, "
        "$\\text{<script>window.__pwned = 2</script>}$ and "
        "$\\href{javascript:window.__pwned=3}{x}$"
    ),
}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def site(request, tmp_path_factory):
    reason = browser_skip()
    if reason:
        skip_or_fail(reason)
    out = synthetic_batch(tmp_path_factory.mktemp(f"review-{request.param}") / "out", STUDENTS)
    with _database(request.param) as url:
        database = db.open_database(out, url)
        ingest(database, out)
        with serve(database, out) as served, browser() as chromium:
            yield Site(out, database, served.url, chromium, request.param)
        database.dispose()


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _database(kind):
    if kind == "sqlite":
        return _Nothing()
    if POSTGRES_SKIP:
        skip_or_fail(POSTGRES_SKIP)
    return postgres("review_browser")


class Site:
    def __init__(self, out, database, url, chromium, kind):
        self.out, self.database, self.url, self.chromium, self.kind = (
            out,
            database,
            url,
            chromium,
            kind,
        )

    def context(self):
        return self.chromium.new_context(viewport={"width": 1280, "height": 900})

    def signed_in(self, name: str):
        """A browser context signed in as the TA `name` through a one-time link."""
        context = self.context()
        page = context.new_page()
        token = auth.add_ta(self.database, name)
        page.goto(f"{self.url}/signin/{token}")
        page.click("#signin")
        assert page.inner_text("#user") == name
        return context, page

    def written_part(self) -> Part:
        with self.database.reading() as session:
            return session.scalar(select(Part).where(Part.kind == "written"))

    def answer_of(self, sid: str, kind: str = "written") -> Answer:
        with self.database.reading() as session:
            return session.scalar(
                select(Answer)
                .join(Student, Student.id == Answer.student_id)
                .join(Part, Part.id == Answer.part_id)
                .where(Student.sid == sid, Part.kind == kind)
                .order_by(Part.position)
            )

    def applied(self, answer_id: int) -> set[str]:
        with self.database.reading() as session:
            return set(
                session.scalars(
                    select(scores.RubricItem.text)
                    .join(Applied, Applied.item_id == scores.RubricItem.id)
                    .where(Applied.answer_id == answer_id)
                )
            )

    def shot(self, page, name: str, tmp_path: Path) -> None:
        if self.kind != "sqlite":
            return
        path = tmp_path / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        if os.environ.get("ATTNKIT_REVIEW_SCREENSHOTS"):
            DOCS.mkdir(exist_ok=True)
            shutil.copy(path, DOCS / f"{name}.png")


def _rubric(site: Site) -> list[int]:
    part = site.written_part()
    with site.database.reading() as session:
        items = scores.items_of(session, part.id)
    if items:
        return [i.id for i in items]
    from grader.instructor.workbench.models import TA

    with site.database.reading() as session:
        ta = session.scalar(select(TA))
    return [
        scores.add_item(site.database, ta, part.id, 1, "compares the costs with numbers"),
        scores.add_item(site.database, ta, part.id, 0.5, "path length and parallelism"),
        scores.add_item(site.database, ta, part.id, -0.5, "no positional encoding"),
    ]


def test_every_page_and_action_needs_a_sign_in(site):
    context = site.context()
    page = context.new_page()
    answer = site.answer_of("ann")
    for path in ("/", f"/part/{answer.part_id}", f"/answer/{answer.id}", "/audit",
                 "/audit.csv", "/review.csv"):  # fmt: skip
        response = page.goto(site.url + path)
        assert response.status == 401, path
        assert page.inner_text("#message-title") == "Sign in first"
    for path in (f"/answer/{answer.id}", f"/part/{answer.part_id}/items", "/reveal", "/signout"):
        response = context.request.post(
            site.url + path, form={"version": "1", "csrf": "x"}, headers={"Origin": site.url}
        )
        assert response.status == 403, path
    # No redirect of a path ending in "/": Starlette builds it from the Host header.
    slashed = context.request.get(f"{site.url}/part/{answer.part_id}/", max_redirects=0)
    assert slashed.status == 404 and "location" not in slashed.headers
    # A sign-in link works once.
    token = auth.add_ta(site.database, "Once")
    page.goto(f"{site.url}/signin/{token}")
    page.click("#signin")
    assert page.inner_text("#user") == "Once"
    other = site.context().new_page()
    assert other.goto(f"{site.url}/signin/{token}").status == 404
    # Cookies: HttpOnly, SameSite=Strict.
    (cookie,) = [c for c in context.cookies() if c["name"].startswith(auth.COOKIE)]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    # Signed out: the session is over.
    page.click("text=Sign out")
    assert page.goto(site.url + "/").status == 401
    context.close()
    other.context.close()


def test_two_tas_on_the_same_part_lose_no_update(site, tmp_path):
    first, ann = site.signed_in("Ann")
    second, bo = site.signed_in("Bo")
    _rubric(site)
    answer = site.answer_of("bob")
    for page in (ann, bo):
        page.goto(f"{site.url}/answer/{answer.id}")
    # Ann applies item 1 with the keyboard (applied and saved at once).
    ann.keyboard.press("1")
    ann.wait_for_url("**/answer/*?saved=1")
    assert site.applied(answer.id) == {"compares the costs with numbers"}
    # Bo, on the page he opened before, ticks item 2 and saves: refused, and shown Ann's.
    bo.check("input[data-key='2']")
    bo.fill("textarea[name=comment]", "Bo's comment")
    bo.click("#save")
    assert "Ann saved this answer after you opened it" in bo.inner_text("#conflict")
    site.shot(bo, "conflict", tmp_path)
    assert bo.is_checked("input[data-key='1']") and not bo.is_checked("input[data-key='2']")
    assert site.applied(answer.id) == {"compares the costs with numbers"}
    # Bo applies his item on top of Ann's: both are kept.
    bo.keyboard.press("2")
    bo.wait_for_url("**/answer/*?saved=1")
    assert site.applied(answer.id) == {
        "compares the costs with numbers",
        "path length and parallelism",
    }
    assert "1.5" in bo.inner_text("#score")
    # Many saves racing from both pages: each either lands or is told; nothing is lost.
    before = site.answer_of("bob").version
    ann.goto(f"{site.url}/answer/{answer.id}")
    bo.goto(f"{site.url}/answer/{answer.id}")
    ann.fill("textarea[name=comment]", "Ann again")
    bo.fill("textarea[name=comment]", "Bo again")
    ann.click("#save")
    bo.click("#save")
    assert site.answer_of("bob").version == before + 1
    assert bo.locator("#conflict").count() == 1
    with site.database.reading() as session:
        log = [r for r in scores.audit_rows(session) if r.action == "grade"]
    assert [r.who for r in log[:3]] == ["Ann", "Bo", "Ann"]
    first.close()
    second.close()


def test_keyboard_rubric_edit_and_regrade(site, tmp_path):
    context, page = site.signed_in("Cy")
    items = _rubric(site)
    part = site.written_part()
    page.goto(f"{site.url}/part/{part.id}")
    page.locator("#queue a.student").first.click()
    following = page.get_attribute("#next", "href")
    page.keyboard.press("j")  # the next answer
    page.wait_for_url(site.url + following)
    page.keyboard.press("k")  # and back
    page.wait_for_url(lambda url: url != site.url + following)
    for sid in ("ann", "cho"):  # graded with the keyboard: item 1, then item 3
        page.goto(f"{site.url}/answer/{site.answer_of(sid).id}")
        with page.expect_navigation():
            page.keyboard.press("1")
    with page.expect_navigation():
        page.keyboard.press("3")
    assert site.applied(site.answer_of("cho").id) == {
        "compares the costs with numbers",
        "no positional encoding",
    }
    page.fill("textarea[name=comment]", "Give the numbers for n = 4000 too.")
    page.keyboard.press("Tab")
    with page.expect_navigation():
        page.keyboard.press("s")
    assert site.answer_of("cho").comment == "Give the numbers for n = 4000 too."
    site.shot(page, "answer", tmp_path)
    # Editing item 1's points re-scores every answer that has it.
    with site.database.reading() as session:
        having = session.scalars(select(Applied.answer_id).where(Applied.item_id == items[0]))
        having = sorted(having)
    assert len(having) >= 2
    before, _ = scores.review_scores(site.database)
    page.goto(f"{site.url}/part/{part.id}")
    row = page.locator("#rubric tr", has=page.locator("input[value^='compares the costs']"))
    row.locator("input[name=points]").fill("2")
    row.locator("input[name=text]").fill("compares the costs, with numbers")
    with page.expect_navigation():
        row.locator("button").click()
    written, _ = scores.review_scores(site.database)
    with site.database.reading() as session:
        sids = dict(
            session.execute(
                select(Answer.id, Student.sid).join(Student, Student.id == Answer.student_id)
            ).all()
        )
    for sid, by_part in written.items():
        now, then = by_part["8-3 comparison"], before[sid]["8-3 comparison"]
        if any(sids[a] == sid for a in having):  # +1 point, within the maximum; new words
            assert now["points"] == min(then["points"] + 1, 2.0)
            assert "+2 compares the costs, with numbers" in now["comment"]
        else:
            assert now == then
    assert page.locator("#queue td.score").all_inner_texts().count("2") >= 1
    site.shot(page, "part", tmp_path)
    # Points out of range: refused, the page says why, and what was typed is still there.
    auto = site.answer_of("ann", "auto")
    page.goto(f"{site.url}/answer/{auto.id}")
    page.fill("input[name=points]", "99")
    page.fill("textarea[name=comment]", "typed before the mistake")
    with page.expect_navigation() as refused:
        page.click("#save")
    assert refused.value.status == 400
    assert page.inner_text("#problem").startswith("Not saved")
    assert page.input_value("textarea[name=comment]") == "typed before the mistake"
    assert page.input_value("input[name=points]") == "99"
    assert site.answer_of("ann", "auto").points is None  # nothing saved
    # A regrade of an autograded part: points and a reason.
    page.fill("input[name=points]", "3")
    page.fill("textarea[name=comment]", "The shape check misread a valid (batch, n, n) output.")
    page.click("#save")
    page.wait_for_url("**/answer/*?saved=1")
    _, regrades = scores.review_scores(site.database)
    (entry,) = regrades["ann"].values()
    assert entry["points"] == 3 and entry["by"] == "Cy"
    page.goto(site.url + "/")
    site.shot(page, "parts", tmp_path)
    page.goto(site.url + "/audit")
    assert page.locator("#audit tr").count() > 3
    site.shot(page, "audit", tmp_path)
    context.close()


def _get(site, path: str, host: str, cookie: str | None = None) -> int:
    """The status of a GET sent with the Host header `host` (a browser sends the name it
    looked up: a rebound name reaches this server with its own)."""
    connection = http.client.HTTPConnection("127.0.0.1", site.url.rsplit(":", 1)[1], timeout=30)
    headers = {"Host": host} | ({"Cookie": cookie} if cookie else {})
    try:
        connection.request("GET", path, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_a_page_asked_under_another_name_or_with_a_reshaped_cookie_is_refused(site):
    context, page = site.signed_in("Eve")
    port = site.url.rsplit(":", 1)[1]
    (cookie,) = [c for c in context.cookies() if c["name"].startswith(auth.COOKIE)]
    signed = f"{cookie['name']}={cookie['value']}"
    assert _get(site, "/", f"127.0.0.1:{port}", signed) == 200
    assert _get(site, "/", f"localhost:{port}", signed) == 200
    # DNS rebinding: another site's name, now pointing at this machine. Signed out or not
    # (its cookie is not sent across names, but a proxy or a script could send one).
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{int(port) + 1}"):
        assert _get(site, "/", host, signed) == 421, host
        assert _get(site, "/signed-out", host) == 421, host
    # The same cookie with base64 padding added is not the cookie the page gave.
    for reshaped in (cookie["value"] + "=", cookie["value"] + "==", cookie["value"][:-1]):
        assert _get(site, "/", f"127.0.0.1:{port}", f"{cookie['name']}={reshaped}") == 401
    context.close()


def test_a_request_from_another_origin_is_refused(site, tmp_path):
    context, page = site.signed_in("Dee")
    answer = site.answer_of("cho")
    page.goto(f"{site.url}/answer/{answer.id}")
    csrf = page.locator("input[name=csrf]").first.input_value()
    version = site.answer_of("cho").version
    # With the session and a valid token, but from another origin: refused.
    for origin in ("http://evil.example", "null"):
        response = context.request.post(
            f"{site.url}/answer/{answer.id}",
            form={"csrf": csrf, "version": str(version), "comment": "forged"},
            headers={"Origin": origin},
        )
        assert response.status == 403
    # From this origin without the token: refused too.
    response = context.request.post(
        f"{site.url}/answer/{answer.id}",
        form={"version": str(version), "comment": "forged"},
        headers={"Origin": site.url},
    )
    assert response.status == 403
    # A page of another site that submits a form to the workbench, in the TA's browser.
    attack = tmp_path / "site"
    attack.mkdir()
    (attack / "index.html").write_text(
        f"<form id=f method=post action='{site.url}/answer/{answer.id}'>"
        f"<input name=csrf value='{csrf}'><input name=version value='{version}'>"
        "<input name=comment value=forged></form><script>document.getElementById('f')"
        ".submit()</script>",
        encoding="utf-8",
    )
    port = free_port()
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(  # noqa: E731
        *a, directory=str(attack), **k
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with page.expect_navigation(url=f"{site.url}/answer/{answer.id}"):
            page.goto(f"http://localhost:{port}/index.html")
        assert page.locator("#message-title").inner_text() in ("Refused", "Sign in first")
    finally:
        server.shutdown()
    after = site.answer_of("cho")
    assert after.version == version and after.comment != "forged"
    context.close()


def test_untrusted_answers_and_ids_are_shown_inert(site, tmp_path):
    context, page = site.signed_in('<i>Eve</i> "TA"')
    assert page.inner_text("#user") == '<i>Eve</i> "TA"'
    answer = site.answer_of(HOSTILE_ID)
    page.goto(f"{site.url}/answer/{answer.id}")
    assert page.evaluate("window.__pwned") is None
    text = page.inner_text("#answer-text")
    assert "<script>window.__pwned = 1</script>" in text and "<b>bold</b>" in text
    assert page.locator("#answer-text script, #answer-text b").count() == 0
    assert page.locator("#answer-text strong").inner_text() == "markdown"
    # Maths that would carry markup or a link is shown as its LaTeX text.
    assert "\\text{<script>window.__pwned = 2</script>}" in text
    assert page.locator("#answer-text [href]").count() == 0
    # Anonymous until revealed; then the id is shown as text.
    assert page.inner_text("#student").startswith("student-")
    page.click("#reveal-names")
    assert page.inner_text("#student") == HOSTILE_ID
    assert page.locator("main img").count() == 0
    page.goto(f"{site.url}/part/{answer.part_id}")
    assert page.locator("#queue a.student", has_text=HOSTILE_ID).count() == 1
    assert page.locator("main img").count() == 0
    assert page.evaluate("window.__pwned") is None
    # The audit log and its CSV carry the id as text too.
    page.goto(site.url + "/audit")
    assert page.evaluate("window.__pwned") is None
    page.click("#hide-names")
    context.close()


def test_maths_is_drawn_by_the_browser_without_a_request(site, tmp_path):
    """`$…$` in an answer is MathML that the browser lays out itself (each formula a box of its
    own, a superscript raised above its base), and no request goes anywhere but the
    workbench."""
    context, page = site.signed_in("Max")
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{site.url}/answer/{site.answer_of('ann').id}")
    assert page.locator("#answer-text math").count() == 4  # n²d + nd², knd², n/k, n
    assert "$" not in page.inner_text("#answer-text")
    power = page.locator("#answer-text math msup").first
    base, exponent = power.locator("mi").first.bounding_box(), power.locator("mn").bounding_box()
    assert base["width"] > 0 and exponent["y"] < base["y"]  # drawn, and raised
    assert all(url.startswith(site.url) for url in requests), requests
    context.close()
