"""The workbench's pages: Starlette, Jinja2 templates (autoescape on: answers, ids, names and
comments are untrusted and shown as text), a little JavaScript for the keyboard (static, no
build step). Every page and action needs a signed-in TA; every POST needs the session's CSRF
token and must come from the page's own origin."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from grader.instructor.workbench import auth, scores
from grader.instructor.workbench.models import Answer, Part, RubricItem, Student

HERE = Path(__file__).parent
STATIC = {
    "review.js": "text/javascript; charset=utf-8",
    "review.css": "text/css; charset=utf-8",
}
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def markdown_renderer():
    """Markdown (CommonMark) with raw HTML, images and links off: no request leaves the page,
    and nothing in a student's answer is a link a TA could follow (to a page dressed as the
    workbench's sign-in, say); a link is shown as the text the student wrote, its address
    included. `$…$` and `$$…$$` maths drawn as MathML by the browser
    (grader.instructor.workbench.maths rebuilds it from an allowlist; maths it cannot draw
    safely is shown as its LaTeX text)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    from grader.instructor.workbench.maths import render_maths

    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).disable(
        ["image", "link", "autolink", "reference"]
    )
    dollarmath_plugin(
        md,
        double_inline=True,  # `$$…$$` inside a sentence: displayed, as LaTeX would
        renderer=lambda latex, options: render_maths(latex, options["display_mode"]),
    )
    return md


LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def known_hosts(origins, port: int | None = None) -> set[str]:
    """The Host headers the page answers: each origin's, and this machine's loopback names at
    `port` (where it listens: a TLS proxy on this machine may pass its upstream's address) and
    at the port of an origin on this machine. A page asked under any other name (DNS
    rebinding: a site whose name now points at this machine) is refused. Empty (every host)
    when no origin is given."""
    hosts: set[str] = set()
    for origin in origins:
        parts = urlsplit(origin)
        if not parts.hostname:
            continue
        hosts.add(parts.netloc.lower())
        if parts.hostname in ("127.0.0.1", "localhost", "::1") and parts.port:
            hosts.update(f"{name}:{parts.port}" for name in LOOPBACK)
    if hosts and port:
        hosts.update(f"{name}:{port}" for name in LOOPBACK)
    return hosts


class Workbench:
    def __init__(
        self,
        database,
        out: Path | None = None,
        origins: tuple[str, ...] = (),
        port: int | None = None,
    ):
        self.database = database
        self.out = out
        self.origins = {o.rstrip("/") for o in origins}
        self.hosts = known_hosts(self.origins, port)
        self.secret = auth.secret_key(database)
        # Cookies do not tell ports apart: two workbenches on one host (two courses) keep a
        # cookie each, named after their database's key.
        self.cookie = auth.cookie_name(self.secret)
        self.md = markdown_renderer()
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
        )
        self.templates.filters["points"] = _points
        self.templates.filters["render"] = self.render_markdown

    def render_markdown(self, text: str) -> Markup:
        # markdown-it escapes every character of the text (html is off): safe to mark up.
        return Markup(self.md.render(text or ""))

    # -- plumbing --------------------------------------------------------------------------

    def page(self, template: str, status: int = 200, **context) -> HTMLResponse:
        html = self.templates.get_template(template).render(**context)
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    def origin_ok(self, request: Request) -> bool:
        given = request.headers.get("origin")
        if not given or given == "null":
            referer = request.headers.get("referer")
            if not referer:
                return False
            parts = urlsplit(referer)
            given = f"{parts.scheme}://{parts.netloc}"
        allowed = set(self.origins)
        if not allowed:
            host = request.headers.get("host", "")
            allowed = {f"{request.url.scheme}://{host}"}
        return given.rstrip("/") in allowed

    def endpoint(self, handler, public: bool = False):
        """A route: for a POST, the origin is checked, then (unless `public`) the sign-in and
        the CSRF token; the handler runs in a worker thread (the database is synchronous)."""

        async def route(request: Request):
            if self.hosts and request.headers.get("host", "").lower() not in self.hosts:
                return self.page(
                    "message.html",
                    421,
                    title="Refused",
                    message="This page is not served under that address: open the address "
                    "your instructor gave you.",
                    user=None,
                )
            form = None
            if request.method == "POST":
                if not self.origin_ok(request):
                    return self.page(
                        "message.html",
                        403,
                        title="Refused",
                        message="This request did not come from the grading page itself.",
                        user=None,
                    )
                form = await request.form()
            if public:
                return await run_in_threadpool(handler, request, form, None)
            signed = await run_in_threadpool(
                auth.signed_in, self.database, request.cookies.get(self.cookie), self.secret
            )
            if signed is None:
                return self.page(
                    "message.html",
                    401 if request.method == "GET" else 403,
                    title="Sign in first",
                    message="Sign in with the one-time link your instructor gave you "
                    "(grader review OUT add-ta NAME prints one).",
                    user=None,
                )
            if request.method == "POST" and not auth.csrf_ok(
                self.secret, signed[2], form.get("csrf")
            ):
                return self.page(
                    "message.html",
                    403,
                    title="Refused",
                    message="The form's security token is missing or out of date: reload the "
                    "page and try again.",
                    user=None,
                )
            return await run_in_threadpool(handler, request, form, signed)

        return route

    def context(self, signed) -> dict:
        ta, row, sid = signed
        return {"user": ta.name, "csrf": auth.csrf_token(self.secret, sid), "reveal": row.reveal}

    # -- sign-in ---------------------------------------------------------------------------

    def signin_page(self, request, form, signed):
        token = request.path_params["token"]
        ta = auth.token_ta(self.database, token)
        if ta is None:
            return self.page(
                "message.html",
                404,
                title="This link is used up or expired",
                message="Ask the instructor for a new one (grader review OUT add-ta NAME).",
                user=None,
            )
        return self.page("signin.html", name=ta.name, token=token, user=None)

    def signin(self, request, form, signed):
        cookie = auth.redeem(self.database, str(form.get("token", "")), self.secret)
        if cookie is None:
            return self.page(
                "message.html",
                403,
                title="This link is used up or expired",
                message="Ask the instructor for a new one.",
                user=None,
            )
        response = RedirectResponse("/", status_code=303, headers=HEADERS)
        response.set_cookie(
            self.cookie,
            cookie,
            max_age=auth.SESSION_DAYS * 86400,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return response

    def signout(self, request, form, signed):
        auth.sign_out(self.database, signed[2])
        response = RedirectResponse("/signed-out", status_code=303, headers=HEADERS)
        response.delete_cookie(self.cookie, path="/")
        return response

    def signed_out(self, request, form, signed):
        return self.page(
            "message.html",
            title="Signed out",
            message="Sign in again with a new link from the instructor.",
            user=None,
        )

    # -- pages -----------------------------------------------------------------------------

    def index(self, request, form, signed):
        with self.database.reading() as session:
            parts = scores.parts(session)
            per_part, per_ta = scores.progress(session)
        ta_parts = [
            p for p in parts if p.kind == "written" or any(p.id in c for c in per_ta.values())
        ]
        return self.page(
            "index.html",
            parts=parts,
            per_part=per_part,
            per_ta=per_ta,
            ta_parts=ta_parts,
            **self.context(signed),
        )

    def part(self, request, form, signed):
        with self.database.reading() as session:
            part = session.get(Part, int(request.path_params["id"]))
            if part is None:
                return self.missing(signed)
            rows = scores.queue(session, part)
            items = scores.items_of(session, part.id)
            counts = {
                item_id: count
                for item_id, count in session.execute(
                    select(RubricItem.id, _count_applied()).where(RubricItem.part_id == part.id)
                )
            }
        graded = sum(r.graded for r in rows)
        return self.page(
            "part.html",
            part=part,
            rows=rows,
            items=items,
            counts=counts,
            graded=graded,
            **self.context(signed),
        )

    def answer(self, request, form, signed, conflict=None, status=200, problem=None):
        answer_id = int(request.path_params["id"])
        with self.database.reading() as session:
            answer = session.get(Answer, answer_id)
            if answer is None:
                return self.missing(signed)
            part = session.get(Part, answer.part_id)
            student = session.get(Student, answer.student_id)
            items = scores.items_of(session, part.id)
            applied = scores.applied_ids(session, answer.id)
            now = scores.snapshot(session, answer, part)
            beside = scores.autograded_beside(session, answer, part)
            previous, following = scores.neighbours(session, answer)
            by = scores.ta_names(session).get(answer.graded_by, "")
        return self.page(
            "answer.html",
            status,
            part=part,
            answer=answer,
            student=student,
            items=items,
            applied=applied,
            now=now,
            beside=beside,
            previous=previous,
            following=following,
            by=by,
            conflict=conflict,
            problem=problem,
            **self.context(signed),
        )

    def refused(self, request, form, signed, message: str):
        """The answer's page again, with why the save was refused and what the TA typed kept
        in the form (nothing they typed is lost)."""
        typed = {
            "message": message,
            "items": {int(i) for i in form.getlist("item") if str(i).isdigit()},
            "points": str(form.get("points", "")),
            "comment": str(form.get("comment", "")),
        }
        return self.answer(request, form, signed, status=400, problem=typed)

    def save(self, request, form, signed):
        answer_id = int(request.path_params["id"])
        try:
            version = int(form.get("version", ""))
            points = _number(form.get("points"))
        except ValueError:
            return self.refused(request, form, signed, "The points are not a number.")
        items = [int(i) for i in form.getlist("item") if str(i).isdigit()]
        try:
            saved = scores.save_answer(
                self.database,
                signed[0],
                answer_id,
                version,
                items,
                str(form.get("comment", "")),
                points,
            )
        except KeyError:
            return self.missing(signed)
        except ValueError as error:
            return self.refused(request, form, signed, str(error))
        if not saved.ok:
            conflict = {
                "by": saved.by,
                "mine": {
                    "items": items,
                    "comment": str(form.get("comment", "")),
                    "points": form.get("points", ""),
                },
            }
            return self.answer(request, form, signed, conflict=conflict, status=409)
        target = f"/answer/{answer_id}?saved=1"
        if form.get("then") == "next" and form.get("next", "").isdigit():
            target = f"/answer/{int(form.get('next'))}"
        return RedirectResponse(target, status_code=303, headers=HEADERS)

    def add_item(self, request, form, signed):
        part_id = int(request.path_params["id"])
        try:
            points = _finite(form.get("points"))
        except ValueError:
            return self.bad(signed, "An item's points must be a number (negative to deduct).")
        text = str(form.get("text", "")).strip()
        if not text:
            return self.bad(signed, "An item needs a text.")
        try:
            scores.add_item(self.database, signed[0], part_id, points, text)
        except KeyError:
            return self.missing(signed)
        return RedirectResponse(f"/part/{part_id}", status_code=303, headers=HEADERS)

    def edit_item(self, request, form, signed):
        item_id = int(request.path_params["id"])
        try:
            points = _finite(form.get("points"))
            version = int(form.get("version", ""))
        except ValueError:
            return self.bad(signed, "An item's points must be a number.")
        text = str(form.get("text", "")).strip()
        if not text:
            return self.bad(signed, "An item needs a text.")
        with self.database.reading() as session:
            item = session.get(RubricItem, item_id)
            part_id = item.part_id if item else None
        if part_id is None:
            return self.missing(signed)
        edit = scores.edit_item(self.database, signed[0], item_id, version, points, text)
        if not edit.ok:
            return self.bad(
                signed,
                f"{edit.by or 'Another TA'} changed this item since you opened the page; it is "
                f"now {edit.now['points']:+g} “{edit.now['text']}”. Yours was {points:+g} "
                f"“{text}”: open the part again and edit it if yours should replace theirs.",
                status=409,
                back=f"/part/{part_id}",
            )
        return RedirectResponse(f"/part/{part_id}", status_code=303, headers=HEADERS)

    def base(self, request, form, signed):
        part_id = int(request.path_params["id"])
        try:
            base = _finite(form.get("base"))
        except ValueError:
            return self.bad(signed, "The starting points must be a number.")
        try:
            scores.set_base(self.database, signed[0], part_id, base)
        except KeyError:
            return self.missing(signed)
        return RedirectResponse(f"/part/{part_id}", status_code=303, headers=HEADERS)

    def reveal(self, request, form, signed):
        auth.set_reveal(self.database, signed[2], form.get("reveal") == "1")
        back = str(form.get("back", "/"))
        if not back.startswith("/") or back.startswith("//"):
            back = "/"
        return RedirectResponse(back, status_code=303, headers=HEADERS)

    def audit(self, request, form, signed):
        with self.database.reading() as session:
            rows = scores.audit_rows(session, limit=500, reveal=signed[1].reveal)
        return self.page("audit.html", rows=rows, **self.context(signed))

    def audit_csv(self, request, form, signed):
        with self.database.reading() as session:
            text = scores.audit_csv(session, reveal=signed[1].reveal)
        return Response(
            text,
            media_type="text/csv; charset=utf-8",
            headers={**HEADERS, "Content-Disposition": "attachment; filename=audit.csv"},
        )

    def sheet_csv(self, request, form, signed):
        return Response(
            scores.export_sheet(self.database, reveal=signed[1].reveal),
            media_type="text/csv; charset=utf-8",
            headers={**HEADERS, "Content-Disposition": "attachment; filename=review.csv"},
        )

    def static(self, request, form, signed):
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("", status_code=404)
        body = (HERE / "static" / name).read_bytes()
        return Response(body, media_type=STATIC[name], headers={"Cache-Control": "max-age=300"})

    def missing(self, signed):
        return self.page(
            "message.html",
            404,
            title="Not found",
            message="No such page.",
            **self.context(signed),
        )

    def bad(self, signed, message: str, status: int = 400, back: str = ""):
        return self.page(
            "message.html",
            status,
            title="Not saved",
            message=message,
            back=back,
            **self.context(signed),
        )

    def app(self) -> Starlette:
        e = self.endpoint
        routes = [
            Route("/static/{name}", e(self.static, public=True)),
            Route("/signin/{token}", e(self.signin_page, public=True)),
            Route("/signin", e(self.signin, public=True), methods=["POST"]),
            Route("/signed-out", e(self.signed_out, public=True)),
            Route("/signout", e(self.signout), methods=["POST"]),
            Route("/", e(self.index)),
            Route("/part/{id:int}", e(self.part)),
            Route("/part/{id:int}/items", e(self.add_item), methods=["POST"]),
            Route("/part/{id:int}/base", e(self.base), methods=["POST"]),
            Route("/item/{id:int}", e(self.edit_item), methods=["POST"]),
            Route("/answer/{id:int}", e(self.answer)),
            Route("/answer/{id:int}", e(self.save), methods=["POST"]),
            Route("/reveal", e(self.reveal), methods=["POST"]),
            Route("/audit", e(self.audit)),
            Route("/audit.csv", e(self.audit_csv)),
            Route("/review.csv", e(self.sheet_csv)),
        ]
        app = Starlette(routes=routes)
        # Its redirect of "/part/1/" to "/part/1" is built from the request's Host header,
        # which anyone may set: a path ending in "/" is simply not found (r8 red team).
        app.router.redirect_slashes = False
        return app


def _count_applied():
    from sqlalchemy import func

    from grader.instructor.workbench.models import Applied

    return (
        select(func.count())
        .select_from(Applied)
        .where(Applied.item_id == RubricItem.id)
        .scalar_subquery()
    )


def _number(value) -> float | None:
    """A form's number, None where the field is empty; ValueError for anything but a finite
    number ("nan", "inf" and "1e999" included: Python's float takes them all)."""
    text = str(value or "").strip()
    return _finite(text) if text else None


def _finite(value) -> float:
    return scores.finite(float(str(value if value is not None else "").strip()))


def _points(value) -> str:
    if value is None:
        return "–"
    return f"{value:g}"


def make_app(
    database, out: Path | None = None, origins: tuple[str, ...] = (), port: int | None = None
) -> Starlette:
    """The page; `origins`: the addresses TAs open (forms from any other are refused, and so is
    a request under any other Host); `port`: where it listens (its loopback names are known)."""
    return Workbench(database, out, origins, port).app()
