"""A student's answer puts clickable links in the TA's grading page: Markdown links and autolinks
to another site (any link text: 'Your session expired, sign in again'), protocol-relative
//host links. No script runs, but the TA's trusted page carries the student's link.
(Low severity: HTML injection of links, not script.)"""
from _lib import *

s = login("link-reader")
wp = written_part(s)
links = []
f = browser_scan(s, ["/answer/%d" % a for a in answers(s, wp)], links=links)
ext = sorted(set(l for _, l in links if "evil" in l))
if ext:
    worked("student-written external links rendered as clickable <a> in the grading page: %s" % ", ".join(ext))
failed("no student-controlled external link is clickable")
