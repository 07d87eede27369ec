"""Judge the r9 one-child attacks from the outputs run.sh left in ROOT. Prints one line per attack:
WORKED / FAILED / CONTROL-OK / CONTROL-BROKEN / PROBE, with the reason, then "N of M worked"."""
import csv
import glob
import json
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/r9_one_child"


def grades(batch, mode):
    path = os.path.join(ROOT, f"out_{batch}_{mode}", "grades.csv")
    if not os.path.exists(path):
        return None
    rows = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            rows[row.get("student")] = row
    return rows


def col(row, ex):
    if row is None:
        return None
    for k, v in row.items():
        if k and (ex in k or ex.replace("-", "_") in k) and k not in ("student", "flags"):
            try:
                return float(v)
            except (TypeError, ValueError):
                return v
    return None


def flags(row):
    return (row or {}).get("flags", "") or ""


def result_flags(batch, mode, student):
    path = os.path.join(ROOT, f"out_{batch}_{mode}", "results", f"{student}.json")
    try:
        text = open(path).read()
    except OSError:
        return "(no results json)"
    return ";".join(sorted(set(re.findall(r"refused-[a-z]+(?::[\w-]+)?", text)))) or "-"


def feedback(batch, mode, student):
    path = os.path.join(ROOT, f"out_{batch}_{mode}", "feedback", f"{student}.md")
    try:
        return open(path).read()
    except OSError:
        return ""


worked = 0
total = 0
lines = []


def verdict(name, ok, why, kind="attack"):
    global worked, total
    if kind == "attack":
        total += 1
        worked += bool(ok)
        tag = "WORKED" if ok else "FAILED"
    elif kind == "control":
        tag = "CONTROL-OK" if ok else "CONTROL-BROKEN"
    else:
        tag = "PROBE"
    print(f"{tag:14s} {name}: {why}")


G = {(b, m): grades(b, m) for b in "ABCDP" for m in ("on", "off")}
for (b, m), g in G.items():
    rc = open(os.path.join(ROOT, f"rc_{b}_{m}")).read().strip() if os.path.exists(os.path.join(ROOT, f"rc_{b}_{m}")) else "?"
    secs = open(os.path.join(ROOT, f"secs_{b}_{m}")).read().strip() if os.path.exists(os.path.join(ROOT, f"secs_{b}_{m}")) else "?"
    print(f"# batch {b} one-child {m}: rc={rc} {secs}s, grades.csv {'present' if g else 'MISSING'}")
    if g:
        for s, row in sorted(g.items()):
            print(f"#   {s}: 8-1={col(row,'8-1')} 8-2={col(row,'8-2')} 8-6={col(row,'8-6')} flags={flags(row)!r}")

# (c) honest classmates: full marks and no flag in every batch and mode
bad = []
for (b, m), g in G.items():
    if g is None:
        continue
    for s in ("honest1", "honest2", "honest3"):
        if s not in g:
            continue
        row = g.get(s)
        if row is None or any(col(row, e) not in (10, None) for e in ("8-1", "8-2", "8-6")) or flags(row):
            bad.append(f"{b}/{m}/{s}")
verdict("classmates_unharmed (c, every batch)", bool(bad),
        "honest classmates lost points or got flags in " + ",".join(bad) if bad else
        "every honest classmate full marks (10 per graded exercise), no flag, in every batch and mode")

# (a) cross-exercise: the student's own 8-2 file is wrong alone; does it score with the one-child mode?
for s, b in (("xpatch_channels", "A"), ("xpatch_thread", "A"), ("xpatch_hooks", "A"), ("xpatch_stub", "A"), ("xpatch_reset", "D")):
    on, off = col((G[(b, "on")] or {}).get(s), "8-2"), col((G[(b, "off")] or {}).get(s), "8-2")
    ok = isinstance(on, float) and isinstance(off, float) and on > off
    verdict(f"{s} (a)", ok, f"8-2 scored {on} with one-child on, {off} with it off; flags on={flags((G[(b,'on')] or {}).get(s))!r}")

# (b) hiding a refused call: the control must be flagged; a hider must have no refused-* at all
ctl_on = (G[("B", "on")] or {}).get("ctl_flag")
ctl_off = (G[("B", "off")] or {}).get("ctl_flag")
verdict("ctl_flag (control for b)", "refused" in flags(ctl_on) and "refused" in flags(ctl_off),
        f"plain kill(1,0)+socket at import: flags on={flags(ctl_on)!r} off={flags(ctl_off)!r}; results on={result_flags('B','on','ctl_flag')}",
        kind="control")
for s in ("hide_exit", "hide_del", "hide_thread"):
    row_on, row_off = (G[("B", "on")] or {}).get(s), (G[("B", "off")] or {}).get(s)
    f_on = flags(row_on) + " " + result_flags("B", "on", s)
    evidence = col(row_on, "8-6") == 10      # recall right only if the attempt ran before 8-6
    hidden = row_on is not None and "refused" not in f_on
    if s == "hide_exit":
        ok = False
        why = ("no refused-* flag, but the attempt at exit cannot be proven to have run: not counted"
               if hidden else "flagged")
    else:
        ok = hidden and evidence
        why = ("no refused-* flag although the attempt ran (8-6 recall saw it)" if ok else
               ("flagged" if not hidden else "no flag, but no evidence the attempt ran before 8-6"))
    verdict(f"{s} (b)", ok, f"{why}; on: 8-6={col(row_on,'8-6')} flags={f_on.strip()!r}; off: 8-6={col(row_off,'8-6')} flags={(flags(row_off)+' '+result_flags('B','off',s)).strip()!r}")

# (b) hiding by dying right after a refused open, and refused reads that are not open()
for s, ev in (("hide_crash_open", lambda r: col(r, "8-1") == 0), ("hide_listdir", lambda r: col(r, "8-1") == 10)):
    row_on, row_off = (G[("C", "on")] or {}).get(s), (G[("C", "off")] or {}).get(s)
    f_on = (flags(row_on) + " " + result_flags("C", "on", s)).strip()
    f_off = (flags(row_off) + " " + result_flags("C", "off", s)).strip()
    hidden = row_on is not None and "refused" not in f_on
    ok = hidden and ev(row_on)
    verdict(f"{s} (b)", ok, f"{'no refused-* flag although the kernel refused (evidence in 8-1)' if ok else ('flagged' if not hidden else 'no flag, no evidence')}; "
            f"on: 8-1={col(row_on,'8-1')} flags={f_on!r}; off: 8-1={col(row_off,'8-1')} flags={f_off!r}")

# (d)/(a) breaking or hanging the shared child's reset: does the wrong 8-2 escape its zero?
for s in ("xbreak_reset", "xhang_reset"):
    row_on, row_off = (G[("D", "on")] or {}).get(s), (G[("D", "off")] or {}).get(s)
    on, off = col(row_on, "8-2"), col(row_off, "8-2")
    ok = row_on is not None and on != 0.0 and on != off
    verdict(f"{s} (d/a)", ok, f"wrong 8-2 scored {on!r} with one-child on (empty = ungraded), {off!r} off; "
            f"on: 8-1={col(row_on,'8-1')} 8-6={col(row_on,'8-6')} flags={flags(row_on)!r}; off flags={flags(row_off)!r}")

# (d) linger: processes or scratch folders left behind, a failed or slow grader, harmed classmates
for m in ("on", "off"):
    before = {l.split()[0] for l in open(os.path.join(ROOT, f"ps_before_C_{m}")) } if os.path.exists(os.path.join(ROOT, f"ps_before_C_{m}")) else set()
    left = []
    if os.path.exists(os.path.join(ROOT, f"ps_after_C_{m}")):
        for l in open(os.path.join(ROOT, f"ps_after_C_{m}")):
            pid = l.split()[0]
            if pid not in before and ("venv" in l or "grader" in l or "attnkit" in l) and "ps -eo" not in l:
                left.append(l.strip()[:160])
    tb = set(open(os.path.join(ROOT, f"ps_before_C_{m}.tmp")).read().split()) if os.path.exists(os.path.join(ROOT, f"ps_before_C_{m}.tmp")) else set()
    ta = set(open(os.path.join(ROOT, f"ps_after_C_{m}.tmp")).read().split()) if os.path.exists(os.path.join(ROOT, f"ps_after_C_{m}.tmp")) else set()
    rc = open(os.path.join(ROOT, f"rc_C_{m}")).read().strip() if os.path.exists(os.path.join(ROOT, f"rc_C_{m}")) else "?"
    row = (G[("C", m)] or {}).get("linger")
    ok = bool(left) or bool(ta - tb) or rc not in ("0", "1", "?")
    if m == "on":
        verdict("linger (d)", ok, f"one-child on: rc={rc}; new processes left 5 s after: {left or 'none'}; new scratch dirs: {sorted(ta - tb) or 'none'}; linger 8-1={col(row,'8-1')} 8-2={col(row,'8-2')} 8-6={col(row,'8-6')} flags={flags(row)!r}")
    else:
        print(f"{'':14s}   linger, one-child off: rc={rc}; left: {left or 'none'}; scratch: {sorted(ta - tb) or 'none'}; 8-1={col(row,'8-1')} 8-2={col(row,'8-2')} 8-6={col(row,'8-6')} flags={flags(row)!r}")

# (e)/exploration: what the probe saw
for m in ("on", "off"):
    fb = feedback("C", m, "probe")
    msgs = re.findall(r"R9PROBE-[A-Z]+[^\n]*", fb)
    row = (G[("C", m)] or {}).get("probe")
    read_other = any(re.search(r"(class_A|out_A_on|r9_one_child)[^ ;]*:(READ|DIR)\[", x) for x in msgs)
    verdict(f"probe one-child {m} (e, exploration)", read_other,
            f"flags={flags(row)!r}; read classmates/results: {read_other}; messages: " + " #### ".join(x[:900] for x in msgs) if msgs else f"no probe message in feedback; flags={flags(row)!r}",
            kind="attack" if m == "on" else "probe")

row_on, row_off = (G[("P", "on")] or {}).get("hide_scrub"), (G[("P", "off")] or {}).get("hide_scrub")
f_on = (flags(row_on) + " " + result_flags("P", "on", "hide_scrub")).strip()
f_off = (flags(row_off) + " " + result_flags("P", "off", "hide_scrub")).strip()
ok = row_on is not None and "refused" not in f_on and col(row_on, "8-1") == 10
verdict("hide_scrub (b, audit-hook kind; the docs say it can be silenced)", ok,
        f"on: 8-1={col(row_on,'8-1')} (10 = the open was refused) flags={f_on!r}; off: 8-1={col(row_off,'8-1')} flags={f_off!r}")

for m in ("on", "off"):
    fb = feedback("P", m, "probe2")
    msgs = re.findall(r"R9PROBE2[^\n]*", fb)
    verdict(f"probe2 one-child {m} (layout, exploration)", False, (msgs[0][:700] if msgs else "no message"), kind="probe")

for m in ("on", "off"):
    fb3 = re.findall(r"R9PROBE3[^\n]*", feedback("P", m, "probe3"))
    verdict(f"probe3 one-child {m} (inherited zygote memory, exploration)", False,
            (fb3[0][:400] if fb3 else "no message"), kind="probe")
    fb4 = re.findall(r"R9PROBE4[^\n]*", feedback("P", m, "probe4"))
    got = bool(fb4) and bool(re.search(r":(READ|NPZ|DIR)\[", fb4[0]))
    verdict(f"probe4 one-child {m} (e: read classmates' scratch / the batch's cases by the paths the child inherits)", got,
            (fb4[0][:700] if fb4 else "no message"), kind="attack" if m == "on" else "probe")

for m in ("on", "off"):
    fb5 = re.findall(r"R9PROBE5[^\n]*", feedback("P", m, "probe5"))
    verdict(f"probe5 one-child {m} (does 8-2's folder hold a file 8-1's code wrote? exploration)", False,
            (fb5[0][:400] if fb5 else "no message"), kind="probe")

for m in ("on", "off"):
    fb6 = re.findall(r"R9PROBE6[^\n]*", feedback("P", m, "probe6"))
    verdict(f"probe6 one-child {m} (where does the scratch-file channel of xpatch_channels come from? exploration)", False,
            (fb6[0][:400] if fb6 else "no message (no file found: the part failed otherwise)"), kind="probe")

print(f"\nSUMMARY: {worked} of {total} worked")
