"""The server's Origin check against a forged Host header (DNS rebinding, or a proxy that passes
Host through): with a valid cookie and csrf token, Host: evil.example and Origin:
http://evil.example. Accepted means the allowed origin is derived from the request, not from
--origin/--host/--port. Also: is any foreign Host served at all (rebinding protection), and do
redirects follow the Host header?"""
import http.client
from urllib.parse import urlparse
from _lib import *

u = urlparse(BASE)
s = login("host-ta")
wp = written_part(s)
t = s.get(BASE + "/part/%d" % wp).text
tok = csrf(t)
cookie = "; ".join("%s=%s" % kv for kv in s.cookies.get_dict().items())


def raw(method, path, host, headers=None, body=None):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.putrequest(method, path, skip_host=True)
    c.putheader("Host", host)
    for k, v in (headers or {}).items():
        c.putheader(k, v)
    if body is not None:
        c.putheader("Content-Length", str(len(body)))
    c.endheaders(body.encode() if body is not None else None)
    r = c.getresponse()
    return r.status, r.getheader("location"), r.read()


notes, hits = [], []
before = s.get(BASE + "/part/%d" % wp).text.count("HOST-MARK")
body = "csrf=%s&points=0&text=HOST-MARK" % tok
st, loc, _ = raw("POST", "/part/%d/items" % wp, "evil.example", {"Origin": "http://evil.example", "Cookie": cookie,
                                                                 "Content-Type": "application/x-www-form-urlencoded"}, body)
after = s.get(BASE + "/part/%d" % wp).text.count("HOST-MARK")
if after > before:
    hits.append("POST with Host+Origin evil.example accepted (HTTP %s)" % st)
st, loc, b = raw("GET", "/", "evil.example:%d" % u.port, {"Cookie": cookie})
if st == 200:
    notes.append("a foreign Host is served (HTTP 200): no DNS-rebinding Host check (cookies are not sent cross-host, so signed-out pages only)")
st, loc, _ = raw("GET", "/part/%d/" % wp, "evil.example")
if loc and "evil.example" in loc:
    notes.append("trailing-slash redirect follows the Host header: %s" % loc)
if hits:
    worked("; ".join(hits + notes))
failed("Origin is not derived from Host" + ("; info: " + "; ".join(notes) if notes else ""))
