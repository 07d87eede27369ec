"""Build the hostile inputs of the surface attacks under WORK (a fresh folder).

python make_surfaces.py WORK

Every case is a folder WORK/<case>/ with a `class/` to grade (or shards to gather) and, where
the attack aims outside the output folder, a `canary/` folder whose listing must stay empty.
Names with newlines, absolute paths and symlinks cannot live in git, so they are made here.
"""

import json
import os
import stat
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLASSMATE = (HERE / "classmate_ex8_2.py").read_text()
XSS = "<script>alert('xss')</script>"
IMG = '<img src=x onerror="alert(1)">'
SVG = "<svg onload=alert(1)>"  # no slash: fits in a file name


def zip_with(path, members):
    """members: list of (name, bytes, mode or None). Writes names exactly as given."""
    with zipfile.ZipFile(path, "w") as z:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            if mode is not None:
                info.external_attr = mode << 16
                info.create_system = 3
            z.writestr(info, data)


def canvas_zip_traversal(work):
    """Canvas loose files; mallory's zip has ../ and absolute members and a symlink member."""
    case = work / "canvas_zip_traversal"
    cls, canary = case / "class", case / "canary"
    cls.mkdir(parents=True)
    canary.mkdir()
    (cls / "alice_1001_5001_ex8_2.py").write_text(CLASSMATE)
    zip_with(cls / "mallory_1002_5002_ex8_2.zip", [
        ("ex8_2.py", CLASSMATE.encode(), None),
        ("../../canary/escaped_dotdot.txt", b"escaped by ../", None),
        ("../../../../../../../../" + str(canary).lstrip("/") + "/escaped_deep.txt", b"deep ..", None),
        (str(canary / "escaped_absolute.txt"), b"escaped by absolute path", None),
        ("link_to_passwd", b"/etc/passwd", stat.S_IFLNK | 0o777),
        ("sub/ex8_3.py", b"import os\n", None),
    ])
    # and a loose symlink posing as a submission file, pointing at the classmate's file
    os.symlink(cls / "alice_1001_5001_ex8_2.py", cls / "trudy_1003_5003_ex8_2.py")


def canvas_symlink_member(work):
    """A zip whose ex8_2.py IS a symlink member to alice's file (read a classmate's work)."""
    case = work / "canvas_symlink_member"
    cls = case / "class"
    cls.mkdir(parents=True)
    (case / "canary").mkdir()
    (cls / "alice_1001_5001_ex8_2.py").write_text(CLASSMATE)
    zip_with(cls / "mallory_1002_5002_hw.zip", [
        ("ex8_2.py", str(cls / "alice_1001_5001_ex8_2.py").encode(), stat.S_IFLNK | 0o777),
    ])


def hostile_names(work):
    """Canvas logins and Moodle names holding markup, newlines, CSV formulas and 240 chars."""
    case = work / "hostile_names"
    cls = case / "class"
    cls.mkdir(parents=True)
    (case / "canary").mkdir()
    (cls / "alice_1001_5001_ex8_2.py").write_text(CLASSMATE)
    names = [
        f"{SVG}_2001_6001_ex8_2.py",
        f"evil\nline_2002_6002_ex8_2.py",
        f"=HYPERLINK(\"http---x\")_2003_6003_ex8_2.py",
        "a" * 200 + "_2004_6004_ex8_2.py",
        f"{IMG}_late_2005_6005_ex8_2.py",
    ]
    for name in names:
        (cls / name.replace("/", "_")).write_text(CLASSMATE)


def moodle_hostile(work):
    """Moodle folders with markup / quotes / .. in the full name."""
    case = work / "moodle_hostile"
    cls = case / "class"
    cls.mkdir(parents=True)
    (case / "canary").mkdir()
    for folder in ["Alice Honest_301_assignsubmission_file_",
                   f"Bob {SVG}_302_assignsubmission_file_",
                   "Robert'); DROP TABLE students;--_303_assignsubmission_file_",
                   ".._304_assignsubmission_file_",
                   f"Eve {IMG}_305_assignsubmission_file_"]:
        (cls / folder).mkdir()
        (cls / folder / "ex8_2.py").write_text(CLASSMATE)


def zip_bomb(work):
    """A Canvas zip holding 300 MB of zeros next to ex8_2.py, and 20000 tiny members."""
    case = work / "zip_bomb"
    cls = case / "class"
    cls.mkdir(parents=True)
    (case / "canary").mkdir()
    (cls / "alice_1001_5001_ex8_2.py").write_text(CLASSMATE)
    with zipfile.ZipFile(cls / "mallory_1002_5002_ex8_2.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("ex8_2.py", CLASSMATE)
        with z.open("zeros.bin", "w", force_zip64=True) as f:
            block = bytes(1 << 20)
            for _ in range(300):
                f.write(block)
    with zipfile.ZipFile(cls / "oscar_1003_5003_ex8_2.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("ex8_2.py", CLASSMATE)
        for i in range(20000):
            z.writestr(f"junk/{i}.txt", "x")


def notebook(cells, outputs_html=None):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}
    for i, src in enumerate(cells):
        cell = {"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None,
                "source": src, "outputs": []}
        if outputs_html:
            cell["outputs"] = [{"output_type": "display_data", "metadata": {},
                                "data": {"text/html": outputs_html, "text/plain": outputs_html}}]
        nb["cells"].append(cell)
    return json.dumps(nb)


def notebooks(work):
    """ex8_2.ipynb that snoops (classmates, solutions, /etc/passwd), carries script outputs,
    uses !shell / %%bash magics; one notebook that is not JSON; one with a bogus cell type."""
    case = work / "notebooks"
    cls = case / "class"
    cls.mkdir(parents=True)
    (case / "canary").mkdir()
    (cls / "alice").mkdir()
    (cls / "alice" / "ex8_2.py").write_text(CLASSMATE)
    snoop = (
        "import glob, os\n"
        "SEEN = []\n"
        "for pat in ['../*/ex8_2.py', '../../*/*/ex8_2.py', '/etc/passwd', '/work/main/solutions/*.py',\n"
        "            os.path.expanduser('~/.ssh/*')]:\n"
        "    for p in glob.glob(pat):\n"
        "        try:\n"
        "            SEEN.append((p, open(p).read()[:200]))\n"
        "        except Exception as e:\n"
        "            SEEN.append((p, repr(e)))\n"
        "print('SNOOPED', SEEN)\n"
        f"print(\"{XSS}\")\n"
        "open('../../canary/written_by_notebook.txt', 'w').write('x') if os.path.isdir('../../canary') else None\n"
    )
    (cls / "snoopy").mkdir()
    (cls / "snoopy" / "ex8_2.ipynb").write_text(notebook([snoop, CLASSMATE], outputs_html=XSS))
    (cls / "magic").mkdir()
    (cls / "magic" / "ex8_2.ipynb").write_text(notebook([
        "!touch /tmp/heldout_r3_magic_bang_ran\n" + CLASSMATE,
        "%%bash\ntouch /tmp/heldout_r3_magic_cell_ran\n",
        "get_ipython().system('touch /tmp/heldout_r3_get_ipython_ran')\n",
    ]))
    (cls / "broken").mkdir()
    (cls / "broken" / "ex8_2.ipynb").write_text('{"nbformat": 4, "cells": [ {"cell_type": "code", "source": "x = 1"')
    (cls / "weird").mkdir()
    nb = json.loads(notebook([CLASSMATE]))
    nb["cells"].append({"cell_type": f"{XSS}", "metadata": {}, "source": "import os; os._exit(0)"})
    nb["cells"][0]["source"] = [CLASSMATE, "\nimport os\nos.environ['X'] = '" + XSS + "'\n"]
    (cls / "weird" / "ex8_2.ipynb").write_text(json.dumps(nb))


def written(work):
    """8-3 written answers holding script, an <iframe>, a javascript: link and a CSV formula;
    a student id holding markup."""
    case = work / "written"
    cls = case / "class"
    cls.mkdir(parents=True)
    (case / "canary").mkdir()
    stub83 = (HERE.parents[2] / "exercises" / "ex8_3.py").read_text()
    answers = {
        "alice": "Self-attention costs O(n^2 d); a path of length 1.\n",
        "mallory": (f"{XSS}\n\n<iframe src=\"file:///etc/passwd\"></iframe>\n\n"
                    "[click me](javascript:alert(document.cookie))\n\n"
                    "=cmd|' /C calc'!A0\n\n<style>body{display:none}</style>\n"),
        f"stu{IMG}": "an answer from a student whose id is markup\n",
    }
    for sid, text in answers.items():
        d = cls / sid
        (d / "answers").mkdir(parents=True)
        (d / "ex8_3.py").write_text(stub83)
        (d / "answers" / "8-3.md").write_text(text)


def main():
    work = Path(sys.argv[1]).resolve()
    work.mkdir(parents=True, exist_ok=True)
    for make in (canvas_zip_traversal, canvas_symlink_member, hostile_names, moodle_hostile,
                 zip_bomb, notebooks, written):
        make(work)
        print("made", make.__name__)


if __name__ == "__main__":
    main()
