"""A one-time sign-in link used twice (second browser), reused after a GET preview, used after
add-ta issued a fresher link for the same TA, and a token that differs by case / trailing chars."""
from _lib import *

problems = []
tok = new_token("reuse-victim")
# GET (a chat app's link preview) must not consume it nor sign in
r = requests.get(BASE + "/signin/" + tok, allow_redirects=False)
if r.cookies:
    problems.append("GET /signin/<token> already set a cookie")
s1, r1 = signin(tok)
if r1.status_code not in (302, 303) or not s1.cookies:
    failed("setup: first use of the link did not sign in (%s)" % r1.status_code)
s2, r2 = signin(tok)
if s2.cookies and s2.get(BASE + "/").status_code == 200:
    problems.append("second use of the same link signed in")
# variants of a fresh token
tok2 = new_token("reuse-victim2")
for v in (tok2.upper(), tok2 + "A", tok2[:-1], tok2 + "%00", tok2 + " ", " " + tok2, tok2[:20]):
    s, r = signin(v)
    if s.cookies and s.get(BASE + "/").status_code == 200:
        problems.append("variant %r signed in" % v)
# older link after a newer one was issued for the same name: still valid? (documented: 'Lost: run add-ta again')
old = new_token("reuse-victim3")
new = new_token("reuse-victim3")
s, r = signin(old)
old_ok = bool(s.cookies) and s.get(BASE + "/").status_code == 200
# token through the GET URL with a query-string trick
s = requests.Session()
r = s.get(BASE + "/signin/" + tok2 + "?token=" + tok2, allow_redirects=False)
if s.cookies:
    problems.append("GET with ?token= signed in")
note = " (note: an older link stays valid after add-ta issued a newer one for the same TA)" if old_ok else ""
if problems:
    worked("; ".join(problems) + note)
failed("links are one-time, exact, and GET does not consume or sign in" + note)
