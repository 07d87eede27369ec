"""Forged and stale session cookies: random values, the id without its signature, a flipped
signature, one TA's id with another's signature, the cookie under another name, a cookie kept
after Sign out (server-side revocation), and session fixation (a cookie planted before sign-in)."""
import secrets
from _lib import *

problems = []
a = login("cookie-a")
b = login("cookie-b")
(name, va), = a.cookies.get_dict().items()
vb = b.cookies.get_dict()[name]


def who(cookies):
    r = requests.get(BASE + "/", cookies=cookies, allow_redirects=False)
    m = re.search(r'<b id="user">([^<]*)</b>', r.text)
    return m.group(1) if r.status_code == 200 and m else None


ida, siga = va.split(".", 1) if "." in va else (va, "")
idb, sigb = vb.split(".", 1) if "." in vb else (vb, "")
cands = {
    "random": secrets.token_urlsafe(32) + "." + secrets.token_urlsafe(20),
    "id only": ida,
    "id.": ida + ".",
    "flipped sig": ida + "." + ("A" if siga[:1] != "A" else "B") + siga[1:],
    "a id + b sig": ida + "." + sigb,
    "empty": "",
    "sig only": "." + siga,
    "double": va + "." + siga,
}
for label, v in cands.items():
    w = who({name: v})
    if w:
        problems.append("%s cookie accepted as %s" % (label, w))
# other cookie names
base = name.split("-")[0]
for n in (base, base + "-0000000000", name.upper()):
    if who({n: va}):
        problems.append("cookie accepted under the name %s" % n)
# signout then replay
t = a.get(BASE + "/").text
a.post(BASE + "/signout", data={"csrf": csrf(t)}, headers={"Origin": BASE}, allow_redirects=False)
if who({name: va}):
    problems.append("cookie still works after Sign out (no server-side revocation)")
# session fixation: plant a cookie, then sign in through the link with it
planted = secrets.token_urlsafe(32)
s = requests.Session()
s.cookies.set(name, planted)
s, r = signin(new_token("cookie-fix"), session=s)
newv = r.cookies.get(name)
if not newv or newv == planted:
    problems.append("sign-in kept the planted cookie value")
if who({name: planted}):
    problems.append("planted cookie value authenticates after sign-in")
# fixation of a *valid* session: victim browser carrying attacker's session signs in; does it keep attacker's id?
att = login("cookie-attacker")
attv = att.cookies.get_dict()[name]
v = requests.Session(); v.cookies.set(name, attv)
v, r = signin(new_token("cookie-victim"), session=v)
if who({name: attv}) == "cookie-victim":
    problems.append("attacker's old cookie now signs in as the victim (fixation)")
info = ""
if who({name: b.cookies.get_dict()[name] + "="}):
    info = " (info: a valid cookie with a trailing '=' is still accepted: base64 padding malleability, not a forgery)"
if problems:
    worked("; ".join(problems) + info)
failed("all %d forged/stale/fixated cookies refused" % (len(cands) + 5) + info)
