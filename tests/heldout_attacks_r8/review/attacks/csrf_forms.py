"""Cross-site request forgery on every state-changing form. The victim TA's cookie is sent (as a
browser would for a same-site page: another port on 127.0.0.1, e.g. a student's notebook server,
is the same *site*, so SameSite does not help), the attacker does not know the victim's csrf
token. Variants: foreign Origin, null Origin, same-site other-port Origin, no Origin/Referer,
foreign Referer only, text/plain and JSON bodies, GET with the fields in the query string,
the attacker's own (other TA's) csrf token, a token from a signed-out session, an empty token."""
import json
from _lib import *

victim = login("csrf-victim")
attacker = login("csrf-attacker")
wp = written_part(victim)
aid = answers(victim, wp)[1]
gid = answers(victim, autograded_part(victim))[1]
att_token = csrf(attacker.get(BASE + "/").text)
gone = login("csrf-gone"); gone_token = csrf(gone.get(BASE + "/").text)
gone.post(BASE + "/signout", data={"csrf": gone_token}, headers={"Origin": BASE})


def snapshot():
    t = victim.get(BASE + "/part/%d" % wp).text
    a = victim.get(BASE + "/answer/%d" % aid).text
    g = victim.get(BASE + "/answer/%d" % gid).text
    return (t.count("CSRF-MARK"), re.search(r'name="base" value="([^"]*)"', t).group(1),
            "CSRF-MARK" in a, "CSRF-MARK" in g, re.search(r'<p id="score">Score: <b>([^<]*)', a).group(1))


def forms():
    st = answer_state(victim, aid)
    gt = answer_state(victim, gid)
    return [("/answer/%d" % aid, {"version": st["version"], "points": "2", "comment": "CSRF-MARK"}),
            ("/answer/%d" % gid, {"version": gt["version"], "points": "0", "comment": "CSRF-MARK"}),
            ("/part/%d/items" % wp, {"points": "-2", "text": "CSRF-MARK"}),
            ("/part/%d/base" % wp, {"base": "1.5"})]


before = snapshot()
hits = []
variants = [
    ("foreign Origin, no token", {"Origin": EVIL}, None, "form"),
    ("null Origin, no token", {"Origin": "null"}, None, "form"),
    ("same-site other port, no token", {"Origin": "http://127.0.0.1:8888"}, None, "form"),
    ("localhost alias, no token", {"Origin": BASE.replace("127.0.0.1", "localhost")}, None, "form"),
    ("no Origin no Referer, no token", {}, None, "form"),
    ("foreign Referer only, no token", {"Referer": EVIL + "/x"}, None, "form"),
    ("own Origin, no token", {"Origin": BASE}, None, "form"),
    ("own Origin, empty token", {"Origin": BASE}, "", "form"),
    ("foreign Origin, attacker's token", {"Origin": EVIL}, att_token, "form"),
    ("own Origin, attacker TA's token", {"Origin": BASE}, att_token, "form"),
    ("own Origin, signed-out session's token", {"Origin": BASE}, gone_token, "form"),
    ("text/plain, no Origin", {"Content-Type": "text/plain"}, None, "text"),
    ("text/plain, foreign Origin", {"Origin": EVIL, "Content-Type": "text/plain"}, None, "text"),
    ("JSON, own Origin", {"Origin": BASE, "Content-Type": "application/json"}, None, "json"),
    ("multipart, foreign Origin", {"Origin": EVIL}, None, "multipart"),
]
for label, hdrs, tok, kind in variants:
    for path, data in forms():
        d = dict(data)
        if tok is not None:
            d["csrf"] = tok
        if kind == "form":
            r = victim.post(BASE + path, data=d, headers=hdrs, allow_redirects=False)
        elif kind == "text":
            body = "\r\n".join("%s=%s" % kv for kv in d.items())
            r = victim.post(BASE + path, data=body.encode(), headers=hdrs, allow_redirects=False)
        elif kind == "json":
            r = victim.post(BASE + path, data=json.dumps(d), headers=hdrs, allow_redirects=False)
        else:
            r = victim.post(BASE + path, files={k: (None, v) for k, v in d.items()}, headers=hdrs, allow_redirects=False)
        now = snapshot()
        if now != before:
            hits.append("%s on %s (HTTP %s): %r -> %r" % (label, path, r.status_code, before, now))
            before = now
# GET with the fields in the query string (an <img> or a link)
for path, data in forms():
    r = victim.get(BASE + path, params=data, headers={"Origin": EVIL}, allow_redirects=False)
    now = snapshot()
    if now != before:
        hits.append("GET %s changed state" % path); before = now
# reveal / signout by GET
victim.get(BASE + "/reveal?reveal=1&back=/")
victim.get(BASE + "/signout")
if victim.get(BASE + "/", allow_redirects=False).status_code != 200:
    hits.append("GET /signout signed the victim out")
# positive control: the same form with the victim's own token and Origin must work
path, data = forms()[2]
data["csrf"] = csrf(victim.get(BASE + "/part/%d" % wp).text)
victim.post(BASE + path, data=data, headers={"Origin": BASE})
control = snapshot() != before
# signout CSRF (a nuisance, not a grade change): foreign Origin without token
r = victim.post(BASE + "/signout", data={}, headers={"Origin": EVIL}, allow_redirects=False)
if victim.get(BASE + "/", allow_redirects=False).status_code != 200:
    hits.append("cross-site POST /signout signed the victim out")
if not control:
    print("ATTACK_FAILED: (inconclusive) positive control did not change state"); sys.exit(0)
if hits:
    worked("; ".join(hits))
failed("%d variants x 4 forms + GETs refused; nothing changed" % len(variants))
