"""Scores are 'computed from the items, never copied': while one TA keeps editing a rubric item's
points and another keeps changing 'Start from', other TAs save answers that have that item.
Afterwards every answer's score must equal clamp(start + sum of its items' points, 0, max).
A stale score (an answer saved with the item's old points) is a wrong grade."""
import threading, time, html
from _lib import *

tas = [login("cons-%d" % i) for i in range(6)]
wp = written_part(tas[0])
t = tas[0].get(BASE + "/part/%d" % wp).text
post(tas[0], "/part/%d/items" % wp, {"csrf": csrf(t), "points": "0.25", "text": "consistency item"})
t = tas[0].get(BASE + "/part/%d" % wp).text
iid = re.findall(r'action="/item/(\d+)"', t)[-1]
ids = answers(tas[0], wp)[8:14]
mx = float(re.search(r"<small>\((\d+(?:\.\d+)?) points\)</small>", t).group(1))
stop = time.time() + 8


def editor():
    ta, k = tas[0], 0
    while time.time() < stop:
        tt = ta.get(BASE + "/part/%d" % wp).text
        f = form_fields(tt, "/item/%s" % iid)
        k += 1
        post(ta, "/item/%s" % iid, {"csrf": f["csrf"], "version": f["version"], "points": ["0.25", "0.75", "1.5"][k % 3],
                                    "text": "consistency item"})


def baser():
    ta, k = tas[1], 0
    while time.time() < stop:
        tt = ta.get(BASE + "/part/%d" % wp).text
        k += 1
        post(ta, "/part/%d/base" % wp, {"csrf": csrf(tt), "base": ["0", "0.5"][k % 2]})


def saver(ta, aid):
    while time.time() < stop:
        st = answer_state(ta, aid)
        post(ta, "/answer/%d" % aid, {"csrf": st["csrf"], "version": st["version"], "item": [iid], "comment": "c"})


th = [threading.Thread(target=editor), threading.Thread(target=baser)]
th += [threading.Thread(target=saver, args=(tas[2 + i % 4], a)) for i, a in enumerate(ids)]
[x.start() for x in th]
[x.join() for x in th]
# now read the final state
t = tas[0].get(BASE + "/part/%d" % wp).text
base = float(re.search(r'name="base" value="([^"]*)"', t).group(1))
ipts = float(html.unescape(re.search(r'form="item-form-%s" name="points" value="([^"]*)"' % iid, t).group(1)))
bad = []
for a in ids:
    st = answer_state(tas[0], a)
    checked = re.findall(r'name="item" value="(\d+)"[^>]*\n?\s*checked', st["html"])
    pts = {m[0]: float(m[1]) for m in re.findall(r'name="item" value="(\d+)" data-key="\d+"\s*(?:checked)?\s*>\s*<kbd>\d+</kbd> <b>([+-]?[\d.]+)</b>', st["html"])}
    exp = max(0.0, min(mx, base + sum(pts.get(c, 0) for c in checked)))
    try:
        got = float(st["score"])
    except ValueError:
        bad.append("answer %d shows score %r" % (a, st["score"])); continue
    if abs(got - exp) > 1e-9:
        bad.append("answer %d: score %s, items %s start %s -> expected %s" % (a, got, checked, base, exp))
if bad:
    worked("; ".join(bad))
failed("after 8 s of concurrent item edits, start changes and saves, every score matches its items (item=%s, start=%s)" % (ipts, base))
