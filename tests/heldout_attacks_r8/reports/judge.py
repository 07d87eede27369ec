"""Judge a run of run.sh: per-attack verdict from every output."""
import csv, io, json, os, re, sys, pathlib
import xml.etree.ElementTree as ET

W = pathlib.Path(sys.argv[1])
OUT, OUTJ, HON = W / "out", W / "out_junit", W / "out_honest"
BOB_SCORE = 6.0
CTRL = re.compile("[\x00-\x08\x0b-\x1f\x7f\x85\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2060\ufeff\u061c\ud800-\udfff\ufffe\uffff]")
findings = {}
def note(student, what):
    findings.setdefault(student, []).append(what)

def read(p):
    try: return p.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError: return None

students = sorted(p.name for p in (W / "class").iterdir())
attackers = [s for s in students if not s.startswith("zz_honest_")]
honest = [s for s in students if s.startswith("zz_honest_")]

# ---- grades.csv
rows = {}
g = read(OUT / "grades.csv")
if g is None:
    note("*", "grades.csv missing")
else:
    if CTRL.search(g): note("*", "grades.csv holds control characters")
    for r in csv.DictReader(io.StringIO(g)):
        rows[r["student"]] = r
        for k, v in r.items():
            if v and v[0] in "=+-@\t\r" and k != "student": note(r["student"], f"grades.csv {k} starts with formula char: {v!r}")
hrows = {}
gh = read(HON / "grades.csv")
for r in csv.DictReader(io.StringIO(gh or "")):
    hrows[r["student"]] = r
for s in students:
    if s not in rows: note(s, "missing from grades.csv")
for s in honest:
    if s in rows and hrows.get(s) != rows[s]: note(s, f"HONEST grades.csv row changed: {hrows.get(s)} -> {rows[s]}")

def strip_volatile(d):
    if isinstance(d, dict):
        return {k: strip_volatile(v) for k, v in d.items() if k not in ("time", "seconds", "elapsed", "graded_at", "duration", "wall", "cpu", "timing", "digest", "submission_digest", "started", "finished")}
    if isinstance(d, list): return [strip_volatile(x) for x in d]
    return d

for s in students:
    rj = OUT / "results" / f"{s}.json"
    fb = OUT / "feedback" / f"{s}.md"
    fh = OUT / "feedback" / f"{s}.html"
    for p in (rj, fb):
        if not p.exists(): note(s, f"{p.relative_to(W)} missing")
    md = read(fb)
    if md is not None:
        if CTRL.search(md): note(s, f"feedback .md holds control chars {sorted(set(CTRL.findall(md)))[:8]!r}")
        lines = md.splitlines()
        tot = [l for l in lines if l.startswith("Total:")]
        sc = [l for l in lines if l.startswith("Score:")]
        parts = [l for l in lines if l.startswith("- **")]
        heads = [l for l in lines if l.startswith("#")]
        if len(tot) != 1 or len(sc) != 1 or len(parts) != 5 or len(heads) != 2:
            note(s, f"feedback .md structure: {len(tot)} Total, {len(sc)} Score, {len(parts)} part lines, {len(heads)} headings; Total={tot[:3]}")
        # markup that would render
        for pat in ("<script", "<img", "](http", "](javascript", "\n```"):
            if pat in md: note(s, f"feedback .md contains raw {pat!r}")
        if len(md) > 200000: note(s, f"feedback .md is {len(md)} chars")
    h = read(fh)
    if h is not None:
        for pat in ("<script>alert", "<img src=x", 'href="javascript', "href='javascript"):
            if pat in h: note(s, f"feedback .html contains raw {pat!r}")
        if CTRL.search(h): note(s, f"feedback .html holds control chars {sorted(set(CTRL.findall(h)))[:8]!r}")
    if s in honest:
        a, b = read(fb), read(HON / "feedback" / f"{s}.md")
        if a != b: note(s, "HONEST feedback .md changed")
        try:
            ja = strip_volatile(json.loads(read(rj))); jb = strip_volatile(json.loads(read(HON / "results" / f"{s}.json")))
            ja.pop("seeds", None); jb.pop("seeds", None)
            if json.dumps(ja.get("exercises"), sort_keys=True) != json.dumps(jb.get("exercises"), sort_keys=True): note(s, "HONEST results json changed")
        except Exception as e: note(s, f"HONEST results json unreadable: {e!r}")
    else:
        r = rows.get(s)
        try:
            sc_ = float(r["8-2"]) if r and r["8-2"] else None
        except ValueError:
            sc_ = r["8-2"]
        if isinstance(sc_, float) and sc_ > BOB_SCORE: note(s, f"SCORE UP: {sc_} > bob's {BOB_SCORE}")
        if r and r.get("flags"): findings.setdefault(s + "#flags", []).append(r["flags"])
        if r and r["8-2"] == "": note(s, "left ungraded (empty cell) = grader-error, not the student's")

# ---- junit.xml (batch output file, and --format junit stdout)
for name, p in (("junit.xml", OUT / "junit.xml"), ("--format junit", W / "junit.stdout")):
    t = read(p)
    if t is None: note("*", f"{name} missing"); continue
    try:
        root = ET.fromstring(t.encode("utf-8", "surrogateescape"))
    except Exception as e:
        note("*", f"{name} does not parse: {e}"); continue
    cases = root.findall(".//testcase")
    by = {}
    for c in cases: by.setdefault(c.get("classname"), []).append(c)
    for s in students:
        if len(by.get(s, [])) != 5: note(s, f"{name}: {len(by.get(s, []))} testcases (expected 5)")
    extra = set(by) - set(students)
    if extra: note("*", f"{name}: testcases for unknown classnames {extra}")
    for s in honest:
        fails = [c.get("name") for c in by.get(s, []) if c.find("failure") is not None or c.find("error") is not None]
        exp = {"zz_honest_bob": 2}.get(s, 0)
        if len(fails) != exp: note(s, f"HONEST {name} failures {fails}")
    if CTRL.search(t.replace("\n", "").replace("\t", "")): note("*", f"{name} has control chars")

# ---- report.html
rep = read(OUT / "report.html")
if rep is None: note("*", "report.html missing")
else:
    for pat in ("<script>alert", "<img src=x", "onerror=alert", "javascript:alert", "\x1b"):
        if pat in rep: note("*", f"report.html contains raw {pat!r}")

# ---- terminal: batch, junit, check
for f in ("batch.stdout", "batch.stderr", "junit.stderr", "batch.rc"):
    t = read(W / f) or ""
    if "Traceback" in t: note("*", f"{f}: Traceback")
    for l in t.splitlines():
        if CTRL.search(l.replace("\r", "")) : note("*", f"{f}: control chars in {l[:120]!r}")
        if "ZZINJ" in l or l.strip().startswith("Total:"): note("*", f"{f}: injected line {l[:120]!r}")
for s in (students if any((W / "check").glob("*.txt")) else []):
    t = read(W / "check" / f"{s}.txt") or ""
    e = read(W / "check" / f"{s}.err") or ""
    if "Traceback" in t + e: note(s, "grader check: Traceback " + (t + e)[-300:].replace("\n", " | "))
    if CTRL.search(t): note(s, f"grader check terminal: control chars {sorted(set(CTRL.findall(t)))[:8]!r}")
    tl = [l for l in t.splitlines() if re.match(r"\s*(Total|Score)\b", l)]
    if len(tl) > 2: note(s, f"grader check terminal: {len(tl)} Total/Score lines: {tl[:4]}")
    if len(t) > 100000: note(s, f"grader check terminal output {len(t)} chars")
    j = read(W / "check" / f"{s}.json") or ""
    try:
        for line in j.splitlines():
            d = json.loads(line)
            if s not in honest and d.get("score", 0) > BOB_SCORE: note(s, f"grader check SCORE UP {d.get('score')}")
    except Exception as ex: note(s, f"grader check --format json unparsable: {ex!r} {j[:200]!r}")
    if not j.strip(): note(s, "grader check --format json printed nothing; " + e[-200:].replace("\n", " | "))

KNOWN = {"fd_close_all": "its tail returns the correct W - W.T: +1 deserved, not the trick",
         "fd_dup_over": "its tail returns the correct W - W.T: +1 deserved, not the trick",
         "monkeypatch_keras_tf": "the patch applies the correct 1/sqrt(d): +3 for a right answer, not a cheat"}
for s in ["*"] + students:
    v = findings.get(s, [])
    fl = findings.get(s + "#flags", [])
    sc = rows.get(s, {}).get("8-2", "?")
    print(f"{s:28s} score={sc:>4s} flags={','.join(fl)[:60]:30s} {'FINDINGS' if v else 'clean'}")
    for x in v: print("      -", x[:400])
    if s in KNOWN and v: print("      (judged by hand:", KNOWN[s] + ")")
