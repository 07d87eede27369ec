"""Every URL and every form, signed out (no cookie, or a junk cookie): nothing is shown and
nothing changes."""
from _lib import *

ta = login("signedout-probe")
wp = written_part(ta)
ap = autograded_part(ta)
aid = answers(ta, wp)[0]
gid = answers(ta, ap)[0]
before = answer_state(ta, aid)["score"], ta.get(BASE + "/part/%d" % wp).text.count('name="text"')

anon = requests.Session()
leaks = []
gets = ["/", "/part/%d" % wp, "/part/%d" % ap, "/answer/%d" % aid, "/answer/%d" % gid, "/audit", "/audit.csv",
        "/review.csv", "/item/1", "/reveal", "/signout", "/grades.csv", "/export", "/api", "/docs", "/openapi.json",
        "/part/%d/items" % wp, "/part/%d/base" % wp]
for g in gets:
    r = anon.get(BASE + g, allow_redirects=False)
    body = r.text
    if r.status_code == 200 and ("student-" in body or "Signed in as" in body or "," in body[:200] and g.endswith(".csv")):
        leaks.append("GET %s -> %s (%d bytes)" % (g, r.status_code, len(body)))
forms = [("/answer/%d" % aid, {"version": "1", "points": "2", "comment": "anon"}),
         ("/answer/%d" % gid, {"version": "1", "points": "0", "comment": "anon"}),
         ("/part/%d/items" % wp, {"points": "2", "text": "anon item"}),
         ("/part/%d/base" % wp, {"base": "2"}),
         ("/item/1", {"version": "1", "points": "2", "text": "anon edit"}),
         ("/reveal", {"reveal": "1", "back": "/"}),
         ("/signout", {})]
for path, data in forms:
    for cookies in ({}, {"review_session": "x"}, ):
        r = anon.post(BASE + path, data=dict(data, csrf="0" * 64), headers={"Origin": BASE},
                      cookies=cookies, allow_redirects=False)
        if r.status_code < 400 and r.status_code not in (302, 303):
            leaks.append("POST %s -> %s" % (path, r.status_code))
        elif r.status_code in (302, 303) and "signin" not in r.headers.get("location", "") and path != "/signout":
            leaks.append("POST %s -> %s to %s" % (path, r.status_code, r.headers.get("location")))
after = answer_state(ta, aid)["score"], ta.get(BASE + "/part/%d" % wp).text.count('name="text"')
if after != before:
    leaks.append("state changed: %r -> %r" % (before, after))
if leaks:
    worked("; ".join(leaks))
failed("every URL and form refused signed out (%d GETs, %d forms)" % (len(gets), len(forms)))
