"""Script / HTML injection through what a student controls: the written answer (HTML, Markdown
links and images with javascript:/data: URLs, LaTeX/MathML with \\href, \\class, \\style,
\\unicode, raw tags in \\text, SVG, meta refresh, base, style, forms) and the student id (folder
name), on every page a TA opens: the parts list, the part's queue, every answer page (ids hidden
and revealed), the autograded parts, the audit log. Setup: build_class.py's hostile class,
batched with --written, served. Checked in chromium: no script runs, no dialog, no navigation,
no request off the server, and no dangerous element/attribute in the DOM."""
from _lib import *

s = login("xss-reader")
wp = written_part(s)
ids = answers(s, wp)
paths = ["/", "/part/%d" % wp, "/audit"] + ["/answer/%d" % a for a in ids]
paths += ["/part/%d" % p for p, k in parts(s) if "autograded" in k][:2]
f = browser_scan(s, paths)
t = s.get(BASE + "/").text
post(s, "/reveal", {"csrf": csrf(t), "reveal": "1", "back": "/"})
f += browser_scan(s, ["/part/%d" % wp, "/audit"] + ["/answer/%d" % a for a in ids])
if f:
    worked("; ".join("%s: %s" % x for x in f[:15]) + (" ... (%d findings)" % len(f) if len(f) > 15 else ""))
failed("%d pages (ids hidden and revealed): nothing ran, nothing dangerous in the DOM" % (len(paths) + len(ids) + 2))
