"""Malformed numbers in every numeric field: a written answer's points, a regrade's points, a rubric
item's points, 'Start from'. NaN, infinities, overflow, unicode digits, out of range, hex, '1_0',
whitespace. A score that ends up NaN/inf/out of [0, max] (on the page or, after
`grader review OUT gradebook`, in grades.csv) is a win."""
import csv, math, subprocess
from _lib import *

s = login("numbers")
_get = s.get


def _retrying_get(url, **kw):
    try:
        return _get(url, **kw)
    except requests.ConnectionError:
        return _get(url, **kw)


s.get = _retrying_get
wp = written_part(s)
ap = autograded_part(s)
aid = answers(s, wp)[-1]
gid = answers(s, ap)[-1]
vals = ["nan", "NaN", "inf", "-inf", "Infinity", "1e309", "-1e309", "1e-400", "\u0662", "\uff12", "\u0661\u0660",
        "2.0000000001", "-0.0000001", "0x1", "1_0", " 1 ", "1e2", "+-1", "1,5", "", "2", "0", "--1", "1/2", "½",
        "9" * 400]
probs = []


def safe_post(sess, path, data, label):
    try:
        r = post(sess, path, data)
    except requests.ConnectionError as e:
        probs.append("%s: server dropped the request (unvalidated value reached the database)" % label)
        return None
    if r.status_code >= 500:
        probs.append("%s: HTTP %d" % (label, r.status_code))
    return r


def num(x):
    try:
        return float(x)
    except Exception:
        return None


def check_answer(a, mx, label):
    st = answer_state(s, a)
    sc = st["score"]
    if sc in ("–", "-", None):
        return
    v = num(sc)
    if v is None or math.isnan(v) or v < 0 or v > mx:
        probs.append("%s: page shows score %r" % (label, sc))


for v in vals:
    st = answer_state(s, aid)
    safe_post(s, "/answer/%d" % aid, {"csrf": st["csrf"], "version": st["version"], "points": v, "comment": "n"}, "written points=%r" % v)
    check_answer(aid, 2, "written points=%r" % v)
    st = answer_state(s, gid)
    mxg = float(re.search(r"Score: <b>[^<]*</b>/([\d.]+)", st["html"]).group(1))
    safe_post(s, "/answer/%d" % gid, {"csrf": st["csrf"], "version": st["version"], "points": v, "comment": "n"}, "regrade points=%r" % v)
    check_answer(gid, mxg, "regrade points=%r" % v)
# rubric items and start
for v in ["nan", "inf", "-inf", "1e309", "1e308", "-1e308", "\u0662"]:
    t = s.get(BASE + "/part/%d" % wp).text
    safe_post(s, "/part/%d/items" % wp, {"csrf": csrf(t), "points": v, "text": "num item %s" % v}, "item points=%r" % v)
    t = s.get(BASE + "/part/%d" % wp).text
    for m in re.findall(r'name="points" value="([^"]*)" size="4" aria-label="points of item', t):
        x = num(m)
        if x is None or not math.isfinite(x):
            probs.append("item with points %r stored (input %r)" % (m, v))
    t = s.get(BASE + "/part/%d" % wp).text
    safe_post(s, "/part/%d/base" % wp, {"csrf": csrf(t), "base": v}, "start from=%r" % v)
    b = re.search(r'name="base" value="([^"]*)"', s.get(BASE + "/part/%d" % wp).text).group(1)
    x = num(b)
    if x is None or not math.isfinite(x) or x < 0 or x > 2:
        probs.append("start from %r stored (input %r)" % (b, v))
# apply a 1e308 item and another 1e308 item to an answer: sum overflows?
t = s.get(BASE + "/part/%d" % wp).text
big = [i for i, p in re.findall(r'form="item-form-(\d+)" name="points" value="([^"]*)"', t) if p in ("1e+308", "1e308", "-1e+308")]
if big:
    st = answer_state(s, aid)
    safe_post(s, "/answer/%d" % aid, {"csrf": st["csrf"], "version": st["version"], "item": big, "comment": "big"}, "items %s" % big)
    check_answer(aid, 2, "items %s" % big)
# the gradebook
r = subprocess.run(["grader", "review", OUT, "gradebook"], capture_output=True, text=True)
with open(OUT + "/grades.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        for k in ("written", "total", "regraded"):
            if k in row and row[k] not in ("", None):
                x = num(row[k])
                if x is None or not math.isfinite(x):
                    probs.append("grades.csv %s=%r for %s" % (k, row[k], row["student"][:20]))
# put the base back to 0 so other attacks see a sane rubric
t = s.get(BASE + "/part/%d" % wp).text
post(s, "/part/%d/base" % wp, {"csrf": csrf(t), "base": "0"})
if probs:
    worked("; ".join(sorted(set(probs))[:12]))
failed("%d malformed values refused or kept in range everywhere; gradebook finite" % len(vals))
