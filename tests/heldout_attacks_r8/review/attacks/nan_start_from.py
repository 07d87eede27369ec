"""A TA types 'nan' as the part's 'Start from'. Finite/range checks that use comparisons let NaN
through (every comparison with NaN is false). On SQLite the database refuses it (NOT NULL) and the
request fails with HTTP 500; on PostgreSQL NaN is a valid float: it is stored, every answer of the
part scores NaN, and `grader review OUT gradebook` (hence export/batch) crashes.
Runs against R8_BASE/R8_OUT (SQLite in run.sh) and, when set, R8_PG_BASE/R8_PG_OUT (PostgreSQL)."""
import os, subprocess
from _lib import *
import _lib

found = []


def attack(base, out, label):
    _lib.BASE, _lib.OUT = base, out
    s = login("nan-ta")
    wp = written_part(s)
    aid = answers(s, wp)[0]
    st = answer_state(s, aid)
    post(s, "/answer/%d" % aid, {"csrf": st["csrf"], "version": st["version"], "points": "", "comment": "nan test"})
    t = s.get(base + "/part/%d" % wp).text
    try:
        r = post(s, "/part/%d/base" % wp, {"csrf": csrf(t), "base": "nan"})
        code = r.status_code
    except requests.ConnectionError:
        code = "dropped"
    s2 = login("nan-ta2")
    t = s2.get(base + "/part/%d" % wp).text
    b = re.search(r'name="base" value="([^"]*)"', t).group(1)
    sc = answer_state(s2, aid)["score"]
    print("%s: base=nan -> HTTP %s; start now %r; answer score %r" % (label, code, b, sc), file=sys.stderr)
    if code == 500 or code == "dropped":
        found.append("%s: start from=nan -> HTTP %s (unvalidated NaN reached the database)" % (label, code))
    if b.lower() == "nan" or (sc or "").lower() == "nan":
        g = subprocess.run(["grader", "review", out, "gradebook"], capture_output=True, text=True)
        found.append("%s: start from stored as %r, answer score %r; gradebook exit %d %s" % (
            label, b, sc, g.returncode, (g.stderr.strip().splitlines() or [""])[-1][:120]))
        # put it back
        t = s2.get(base + "/part/%d" % wp).text
        post(s2, "/part/%d/base" % wp, {"csrf": csrf(t), "base": "0"})


attack(_lib.BASE, _lib.OUT, "sqlite")
if os.environ.get("R8_PG_BASE"):
    attack(os.environ["R8_PG_BASE"], os.environ["R8_PG_OUT"], "postgresql")
if found:
    worked("; ".join(found))
failed("start from=nan refused cleanly")
