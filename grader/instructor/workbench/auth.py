"""TAs' accounts and sessions. `grader review OUT add-ta NAME` makes a one-time sign-in link
(valid for a week; only its hash is kept). Following it and pressing the button signs the browser
in: a session cookie holding a signed, random session id (HttpOnly, SameSite=Strict; Secure
behind https), whose hash is kept in the database so that signing out ends it. Every form
carries a CSRF token derived from the session, and every POST must come from the page's own
origin (the Origin header, else the Referer)."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import timedelta

from itsdangerous import BadSignature, Signer
from sqlalchemy import select, update

from grader.i18n import _
from grader.instructor.workbench.ingest import now
from grader.instructor.workbench.models import TA, Meta, SigninToken
from grader.instructor.workbench.models import Session as SessionRow

COOKIE = "review_session"
LINK_DAYS = 7
SESSION_DAYS = 14


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def cookie_name(secret: str) -> str:
    return f"{COOKIE}-{_hash('name:' + secret)[:10]}"


def secret_key(database) -> str:
    with database.writing() as session:
        row = session.get(Meta, "secret")
        if row is None:
            row = Meta(key="secret", value=secrets.token_hex(32))
            session.add(row)
        return row.value


def add_ta(database, name: str) -> str:
    """Create the TA `name` (or keep the one there) and return a new one-time sign-in token;
    the TA's earlier links that were never used stop working (a link sent to the wrong address
    is mended by sending a new one: r8 red team)."""
    name = " ".join(name.split())[:200]
    if not name:
        raise ValueError(_("a TA needs a name"))
    token = secrets.token_urlsafe(32)
    with database.writing() as session:
        ta = session.scalar(select(TA).where(TA.name == name))
        if ta is None:
            ta = TA(name=name, created_at=now())
            session.add(ta)
            session.flush()
        session.execute(
            update(SigninToken)
            .where(SigninToken.ta_id == ta.id, SigninToken.used_at.is_(None))
            .values(expires_at=now() - timedelta(seconds=1))
        )
        session.add(
            SigninToken(
                token_hash=_hash(token),
                ta_id=ta.id,
                expires_at=now() + timedelta(days=LINK_DAYS),
                used_at=None,
            )
        )
    return token


def token_ta(database, token: str) -> TA | None:
    """The TA a sign-in token is for, when it is valid and unused (it is not used up here)."""
    with database.reading() as session:
        row = session.get(SigninToken, _hash(token))
        if row is None or row.used_at is not None or row.expires_at < now():
            return None
        return session.get(TA, row.ta_id)


def redeem(database, token: str, secret: str) -> str | None:
    """Use up a sign-in token; returns the cookie's value (a signed session id), or None."""
    with database.writing() as session:
        row = session.get(SigninToken, _hash(token))
        if row is None or row.used_at is not None or row.expires_at < now():
            return None
        row.used_at = now()
        session_id = secrets.token_urlsafe(32)
        session.add(
            SessionRow(
                id_hash=_hash(session_id),
                ta_id=row.ta_id,
                created_at=now(),
                expires_at=now() + timedelta(days=SESSION_DAYS),
                reveal=False,
            )
        )
    return Signer(secret, salt="review-session").sign(session_id).decode()


# The one form redeem() gives a cookie: a session id and its signature, both URL-safe base64
# without padding. Anything else is refused before the signature is looked at (the signer's
# base64 would take a value with padding added as the same).
COOKIE_FORM = re.compile(r"[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{16,86}")


def session_id(cookie: str | None, secret: str) -> str | None:
    if not cookie or not COOKIE_FORM.fullmatch(cookie):
        return None
    try:
        return Signer(secret, salt="review-session").unsign(cookie).decode()
    except BadSignature:
        return None


def signed_in(database, cookie: str | None, secret: str):
    """(TA, session row, session id) for a valid cookie, else None."""
    sid = session_id(cookie, secret)
    if sid is None:
        return None
    with database.reading() as session:
        row = session.get(SessionRow, _hash(sid))
        if row is None or row.expires_at < now():
            return None
        ta = session.get(TA, row.ta_id)
        return (ta, row, sid) if ta else None


def set_reveal(database, sid: str, reveal: bool) -> None:
    with database.writing() as session:
        row = session.get(SessionRow, _hash(sid))
        if row is not None:
            row.reveal = reveal


def sign_out(database, sid: str) -> None:
    with database.writing() as session:
        row = session.get(SessionRow, _hash(sid))
        if row is not None:
            session.delete(row)


def csrf_token(secret: str, sid: str) -> str:
    return hmac.new(secret.encode(), f"csrf:{sid}".encode(), hashlib.sha256).hexdigest()


def csrf_ok(secret: str, sid: str, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(csrf_token(secret, sid), given)
