"""Two (or twelve) TAs save the same answer at once, from the same version: only one save may be
accepted, the others refused (no silent lost update). Then the same race on a rubric item's edit,
and on an autograded part's regrade. Sequential case first (A saves, then B from the old version)."""
import threading
from _lib import *

N = 12
tas = [login("race-%d" % i) for i in range(N)]
wp = written_part(tas[0])
ap = autograded_part(tas[0])
ids = answers(tas[0], wp)
aid, aid2 = ids[5], ids[6]
gid = answers(tas[0], ap)[5]
problems = []


def accepted(r):
    return r.status_code in (302, 303)


# sequential: A and B open; A saves; B saves from the stale version
a, b = tas[0], tas[1]
sa, sb = answer_state(a, aid), answer_state(b, aid)
ra = post(a, "/answer/%d" % aid, {"csrf": sa["csrf"], "version": sa["version"], "points": "1", "comment": "A"})
rb = post(b, "/answer/%d" % aid, {"csrf": sb["csrf"], "version": sb["version"], "points": "2", "comment": "B"})
if accepted(rb):
    problems.append("sequential stale save accepted (HTTP %s -> %s)" % (rb.status_code, rb.headers.get("location")))


def race(path, make, label):
    states = [answer_state(t, int(path.rsplit("/", 1)[1])) if "/answer/" in path else None for t in tas]
    datas = [make(i, states[i], t) for i, t in enumerate(tas)]
    barrier = threading.Barrier(N)
    res = [None] * N

    def go(i):
        barrier.wait()
        res[i] = post(tas[i], path, datas[i])
    th = [threading.Thread(target=go, args=(i,)) for i in range(N)]
    [x.start() for x in th]
    [x.join() for x in th]
    ok = [i for i, r in enumerate(res) if accepted(r)]
    codes = sorted(set(r.status_code for r in res))
    if len(ok) != 1:
        problems.append("%s: %d of %d simultaneous saves accepted (codes %s)" % (label, len(ok), N, codes))
    return ok


race("/answer/%d" % aid2, lambda i, st, t: {"csrf": st["csrf"], "version": st["version"], "points": str(i % 3),
                                            "comment": "racer %d" % i}, "written answer")
race("/answer/%d" % gid, lambda i, st, t: {"csrf": st["csrf"], "version": st["version"], "points": str(i % 2),
                                           "comment": "regrade %d" % i}, "regrade")
# rubric item edit race
t = tas[0].get(BASE + "/part/%d" % wp).text
post(tas[0], "/part/%d/items" % wp, {"csrf": csrf(t), "points": "0.5", "text": "race item"})
t = tas[0].get(BASE + "/part/%d" % wp).text
iid = re.findall(r'action="/item/(\d+)"', t)[-1]
f = form_fields(t, "/item/%s" % iid)


def mk(i, st, ta):
    tt = ta.get(BASE + "/part/%d" % wp).text
    return {"csrf": csrf(tt), "version": form_fields(tt, "/item/%s" % iid)["version"], "points": "0.%d" % (i + 1) if i < 9 else "1",
            "text": "race item by %d" % i}


def accepted_item(r):
    return r.status_code in (302, 303)


ok = race("/item/%s" % iid, mk, "rubric item")
if problems:
    worked("; ".join(problems))
failed("stale and simultaneous saves: exactly one accepted each time (answer, regrade, item)")
