"""A hostile TA (or a TA's name chosen by an instructor from a hostile list) injects HTML/JS into
other TAs' pages: the TA name (shown in the header, per-TA table, 'by' column, audit log,
conflict message), rubric item text (part page, answer pages, conflict message on item edit),
comments and regrade reasons (answer page, audit log). Checked in chromium on every page."""
from _lib import *

P = ('<script>window.__pwn=50</script><img src=x onerror="window.__pwn=51">"><svg onload=window.__pwn=52>'
     '[x](javascript:window.__pwn=53) $\\href{javascript:window.__pwn=54}{m}$ '
     '<meta http-equiv="refresh" content="0;url=http://evil.example/">{{7*7}}')
evil = login(P[:120])
wp = written_part(evil)
ap = autograded_part(evil)
t = evil.get(BASE + "/part/%d" % wp).text
post(evil, "/part/%d/items" % wp, {"csrf": csrf(t), "points": "0.5", "text": P})
t = evil.get(BASE + "/part/%d" % wp).text
items = re.findall(r'name="item" value="(\d+)"', evil.get(BASE + "/answer/%d" % answers(evil, wp)[0]).text)
aid = answers(evil, wp)[3]
st = answer_state(evil, aid)
post(evil, "/answer/%d" % aid, {"csrf": st["csrf"], "version": st["version"], "item": items[-1:], "comment": P})
gid = answers(evil, ap)[3]
st = answer_state(evil, gid)
post(evil, "/answer/%d" % gid, {"csrf": st["csrf"], "version": st["version"], "points": "1", "comment": P})
# the victim TA opens a conflicting save and an item edit conflict, which echo the other TA's name/text
victim = login("xss-victim")
vst = answer_state(victim, aid)
st = answer_state(evil, aid)
post(evil, "/answer/%d" % aid, {"csrf": st["csrf"], "version": st["version"], "points": "1", "comment": P})
r = post(victim, "/answer/%d" % aid, {"csrf": vst["csrf"], "version": vst["version"], "points": "2", "comment": "mine"})
conflict_html = r.text
paths = ["/", "/part/%d" % wp, "/part/%d" % ap, "/answer/%d" % aid, "/answer/%d" % gid, "/audit"]
f = browser_scan(victim, paths)
# the conflict page itself (rendered from the POST): load its HTML as the server sent it
if "<script>window.__pwn" in conflict_html or "onerror=\"window" in conflict_html:
    f.append(("POST conflict page", "raw payload in the HTML"))
if f:
    worked("; ".join("%s: %s" % x for x in f[:12]))
failed("TA name, rubric text, comment, reason: escaped on %d pages and the conflict page" % len(paths))
