"""Open redirects: the 'back' field of Reveal, the 'next' field of Save-and-next, sign-in with a
next/back/redirect parameter, trailing-slash redirects with a forged Host, and sign-out."""
from _lib import *

s = login("redir")
wp = written_part(s)
bad = ["//evil.example/", "https://evil.example/", "/\\evil.example/", "\\\\evil.example", "http:evil.example",
       "/%2F%2Fevil.example", "//evil.example%2F@127.0.0.1", " //evil.example", "javascript:alert(1)",
       "/\t/evil.example", "https:/\\evil.example", "../../evil"]


def external(loc):
    if not loc:
        return False
    l = loc.strip().lower().replace("\\", "/")
    return ("evil" in l and not l.startswith("/") or l.startswith("//") or l.startswith("javascript")
            or l.startswith("/\t") or l.startswith("http:evil"))


hits = []
for b in bad:
    t = s.get(BASE + "/").text
    r = post(s, "/reveal", {"csrf": csrf(t), "reveal": "1", "back": b})
    if external(r.headers.get("location")):
        hits.append("reveal back=%r -> %s" % (b, r.headers["location"]))
aid = answers(s, wp)[2]
for b in bad:
    st = answer_state(s, aid)
    r = post(s, "/answer/%d" % aid, {"csrf": st["csrf"], "version": st["version"], "points": "1",
                                      "comment": "", "then": "next", "next": b})
    if external(r.headers.get("location")):
        hits.append("answer next=%r -> %s" % (b, r.headers["location"]))
for b in bad:
    for q in ("next", "back", "redirect", "return_to", "url"):
        tok = new_token("redir-" + q)
        r = requests.post(BASE + "/signin?%s=%s" % (q, requests.utils.quote(b)), data={"token": tok, q: b},
                          headers={"Origin": BASE}, allow_redirects=False)
        if external(r.headers.get("location")):
            hits.append("signin %s=%r -> %s" % (q, b, r.headers["location"]))
    break  # one bad value per parameter is enough for sign-in (each costs a link)
t = s.get(BASE + "/").text
r = post(s, "/signout", {"csrf": csrf(t), "back": "//evil.example/", "next": "//evil.example/"})
if external(r.headers.get("location")):
    hits.append("signout -> %s" % r.headers["location"])
if hits:
    worked("; ".join(hits))
failed("no redirect left the site (%d values on reveal/next, sign-in params, sign-out)" % len(bad))
