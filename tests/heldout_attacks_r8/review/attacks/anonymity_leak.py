"""Anonymous grading: 'Students are anonymous (student-3f2a…) until someone presses Reveal student
ids (for their own session only)'. A TA who never pressed Reveal looks for real student ids on
every page and download: the parts list, the part's queue, answer pages, autograded parts, the
audit log page, /audit.csv, /review.csv, the conflict page. Also: does one TA's Reveal reveal
for another TA?"""
from _lib import *

real = ["alice", "bob", "dave", "xss_html", "deepmath", "formula"]
other = login("anon-revealer")
t = other.get(BASE + "/").text
post(other, "/reveal", {"csrf": csrf(t), "reveal": "1", "back": "/"})
# some history, so that the audit log has entries: the revealer saves every written answer once
for a in answers(other, written_part(other)):
    st = answer_state(other, a)
    post(other, "/answer/%d" % a, {"csrf": st["csrf"], "version": st["version"], "points": "", "comment": "seen"})
s = login("anon-ta")
wp = written_part(s)
ap = autograded_part(s)
ids = answers(s, wp)
pages = {"/": None, "/part/%d" % wp: None, "/part/%d" % ap: None, "/audit": None, "/audit.csv": None, "/review.csv": None}
pages.update({"/answer/%d" % a: None for a in ids})
pages.update({"/answer/%d" % a: None for a in answers(s, ap)[:5]})
leaks = []
for p in pages:
    r = s.get(BASE + p)
    text = r.text
    # the answer text itself may name the student (the hostile names write 'student NAME'); look in markup only
    body = re.sub(r'<div id="answer-text".*?</div>', "", text, flags=re.S)
    body = re.sub(r'<td class="preview">.*?</td>', "", body, flags=re.S)
    for n in real:
        if re.search(r"(?<![A-Za-z_])%s(?![A-Za-z_])" % re.escape(n), body):
            leaks.append("%s shows %r" % (p, n))
            break
leaks = sorted(set(leaks))
if leaks:
    worked("real student ids visible without Reveal: " + "; ".join(leaks[:8]))
failed("no real student id on %d pages/downloads without Reveal; another TA's Reveal does not carry over" % len(pages))
