"""Shared helpers for the r8 review red-team attacks (black box: HTTP + the documented CLI only).

Environment:
  R8_BASE  the server's address (default http://127.0.0.1:18765)
  R8_OUT   the batch folder the server serves (default /tmp/r8rev/out)
Each attack prints exactly one line starting ATTACK_WORKED or ATTACK_FAILED.
"""
import os, re, subprocess, sys, uuid, html as _html
import requests

BASE = os.environ.get("R8_BASE", "http://127.0.0.1:18765").rstrip("/")
OUT = os.environ.get("R8_OUT", "/tmp/r8rev/out")
EVIL = "http://evil.example"


def new_token(name):
    out = subprocess.run(["grader", "review", OUT, "add-ta", name], capture_output=True, text=True)
    m = re.search(r"/signin/([A-Za-z0-9_\-]+)", out.stdout + out.stderr)
    if not m:
        raise RuntimeError("add-ta printed no link: %r %r" % (out.stdout, out.stderr))
    return m.group(1)


def signin(token, session=None, origin=True):
    s = session or requests.Session()
    h = {"Origin": BASE} if origin else {}  # BASE read at call time
    r = s.post(BASE + "/signin", data={"token": token}, headers=h, allow_redirects=False)
    return s, r


def login(name=None):
    name = name or ("ta-" + uuid.uuid4().hex[:8])
    s, r = signin(new_token(name))
    if r.status_code not in (302, 303) or not s.cookies:
        raise RuntimeError("sign-in failed: %s %s" % (r.status_code, r.text[:300]))
    return s


def csrf(html):
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    return m.group(1) if m else None


def form_fields(html, action):
    """The hidden fields of the form posting to ACTION."""
    i = html.find('action="%s"' % action)
    if i < 0:
        return None
    j = html.find("</form>", i)
    chunk = html[i:j]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', chunk))
    return {k: _html.unescape(v) for k, v in fields.items()}


def post(s, path, data, origin="", **kw):
    """origin "" (default): the server's own origin; None: no Origin header."""
    h = kw.pop("headers", {})
    if origin == "":
        origin = BASE
    if origin is not None:
        h.setdefault("Origin", origin)
    return s.post(BASE + path, data=data, headers=h, allow_redirects=False, **kw)


def parts(s):
    """[(part_id, kind_text)] from the first page."""
    t = s.get(BASE + "/").text
    return [(int(p), k) for p, k in re.findall(r'<a href="/part/(\d+)">[^<]*</a></td>\s*<td>([^<]*)</td>', t)]


def written_part(s):
    for p, k in parts(s):
        if "written" in k:
            return p
    raise RuntimeError("no written part")


def autograded_part(s):
    for p, k in parts(s):
        if "autograded" in k:
            return p
    raise RuntimeError("no autograded part")


def answers(s, part):
    t = s.get(BASE + "/part/%d" % part).text
    return [int(a) for a in re.findall(r'<a href="/answer/(\d+)" class="student"', t)]


def answer_state(s, aid):
    t = s.get(BASE + "/answer/%d" % aid).text
    f = form_fields(t, "/answer/%d" % aid) or {}
    m = re.search(r'<p id="score">Score: <b>([^<]*)</b>', t)
    return {"html": t, "version": f.get("version"), "csrf": f.get("csrf"),
            "next": f.get("next"), "score": m.group(1) if m else None}


def answer_by_text(s, part, needle):
    """The answer id whose preview in the queue contains NEEDLE (escaped as the page escapes)."""
    t = s.get(BASE + "/part/%d" % part).text
    for row in t.split('<tr class=')[1:]:
        m = re.search(r'<a href="/answer/(\d+)" class="student"', row)
        if m and needle in _html.unescape(row):
            return int(m.group(1))
    return None


def worked(reason):
    print("ATTACK_WORKED:", reason)
    sys.exit(0)


def failed(reason):
    print("ATTACK_FAILED:", reason)
    sys.exit(0)


SCAN_JS = r"""
() => {
  const bad = [], links = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      const n = a.name.toLowerCase(), v = (a.value || '').trim().toLowerCase();
      if (n.startsWith('on')) bad.push(el.tagName + '[' + n + ']');
      if (el.tagName === 'A' && n === 'href' && /^(https?:)?\/\//.test(v)) { links.push(v.slice(0, 80)); continue; }
      if ((n === 'href' || n === 'src' || n === 'action' || n === 'formaction' || n === 'data' || n === 'xlink:href')
          && (v.startsWith('javascript:') || v.startsWith('data:') || v.startsWith('vbscript:') ||
              /^(https?:)?\/\//.test(v)))
        bad.push(el.tagName + '[' + n + '=' + v.slice(0, 60) + ']');
    }
    const t = el.tagName.toLowerCase();
    if (t === 'script' && el.getAttribute('src') !== '/static/review.js') bad.push('script');
    if (['iframe', 'object', 'embed', 'base', 'style', 'frame', 'svg', 'img', 'video', 'audio', 'details', 'maction']
        .includes(t)) bad.push(t);
    if (t === 'meta' && el.getAttribute('http-equiv')) bad.push('meta http-equiv');
    if (t === 'link' && el.getAttribute('href') !== '/static/review.css') bad.push('link');
    if (t === 'form' && !/^\/(answer|part|item|reveal|signout|signin)\b/.test(el.getAttribute('action') || '')) bad.push('form action=' + el.getAttribute('action'));
    if (el.namespaceURI === 'http://www.w3.org/1998/Math/MathML' && el.hasAttribute('href')) bad.push('mathml href');
  }
  const forms = document.querySelectorAll('form').length;
  return {bad: bad, links: links, pwn: window.__pwn === undefined ? null : window.__pwn, title: document.title,
          url: location.href, forms: forms};
}
"""


def browser_scan(session, paths, settle_ms=300, links=None):
    """Open each path in chromium with SESSION's cookie; return [(path, finding)]."""
    from playwright.sync_api import sync_playwright
    from urllib.parse import urlparse
    host = urlparse(BASE).hostname
    findings = []
    with sync_playwright() as p:
        br = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        ctx = br.new_context()
        ctx.add_cookies([{"name": k, "value": v, "domain": host, "path": "/"} for k, v in session.cookies.get_dict().items()])
        page = ctx.new_page()
        events = []
        page.on("dialog", lambda d: (events.append("dialog:" + d.message), d.dismiss()))
        page.on("console", lambda m: events.append("console:" + m.text) if "Content Security Policy" in m.text else None)
        page.on("request", lambda r: events.append("request:" + r.url) if not r.url.startswith(BASE) else None)
        for path in paths:
            events.clear()
            try:
                page.goto(BASE + path, wait_until="load", timeout=30000)
                page.wait_for_timeout(settle_ms)
                # hover and click every link/element inside the rendered answer, like a curious TA
                for el in page.query_selector_all("#answer-text a, #answer-text math *, .preview a")[:50]:
                    try:
                        el.hover(timeout=500)
                    except Exception:
                        pass
                res = page.evaluate(SCAN_JS)
            except Exception as e:
                findings.append((path, "error: %s" % str(e)[:200]))
                continue
            if res["pwn"] is not None:
                findings.append((path, "script ran: window.__pwn=%r" % res["pwn"]))
            if "PWNED" in res["title"]:
                findings.append((path, "title changed"))
            if not res["url"].startswith(BASE):
                findings.append((path, "navigated to " + res["url"]))
            if links is not None:
                links.extend((path, l) for l in res["links"])
            for b in sorted(set(res["bad"])):
                findings.append((path, "DOM: " + b))
            for e in events:
                findings.append((path, e[:200]))
        br.close()
    return findings
