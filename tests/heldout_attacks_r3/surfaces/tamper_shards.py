"""Make tampered copies of the two shard folders WORK/shard-0, WORK/shard-1 (from
`grader batch --shard K/2`), one folder WORK/tampered_<how>/ per attack. A secure
`grader gather` refuses each (names the folder and what is wrong) or at least never gives bob
(who handed in the stub, 0 points) any points.

python tamper_shards.py WORK
"""

import json
import shutil
import sys
from pathlib import Path


def find_student(shards, student):
    for s in shards:
        p = s / "results" / f"{student}.json"
        if p.exists():
            return s, p
    raise SystemExit(f"{student} not found in shards")


def full_marks(obj):
    """Rewrite every score to its maximum, every status to passed, recursively."""
    if isinstance(obj, dict):
        if "max_score" in obj and "score" in obj:
            obj["score"] = obj["max_score"]
        if "status" in obj:
            obj["status"] = "passed"
        if "passed" in obj and isinstance(obj["passed"], bool):
            obj["passed"] = True
        for k, val in list(obj.items()):
            if k in ("total", "final_total") and isinstance(val, (int, float)):
                obj[k] = obj.get("max_total", val)
            full_marks(val)
    elif isinstance(obj, list):
        for x in obj:
            full_marks(x)
    return obj


def main():
    work = Path(sys.argv[1])
    shards = [work / "shard-0", work / "shard-1"]

    def copy(how):
        dst = work / f"tampered_{how}"
        for s in shards:
            shutil.copytree(s, dst / s.name)
        return dst

    # 1. bob's result edited to full marks
    dst = copy("edited_result")
    s, p = find_student([dst / "shard-0", dst / "shard-1"], "bob")
    p.write_text(json.dumps(full_marks(json.loads(p.read_text()))))

    # 2. bob duplicated: his (full-marks) result planted in the other shard too
    dst = copy("duplicated_student")
    s, p = find_student([dst / "shard-0", dst / "shard-1"], "bob")
    other = dst / ("shard-1" if s.name == "shard-0" else "shard-0")
    fake = full_marks(json.loads(p.read_text()))
    (other / "results" / "bob.json").write_text(json.dumps(fake))

    # 3. a result for a student who handed nothing in ("ghost"), claiming full marks
    dst = copy("ghost_student")
    s, p = find_student([dst / "shard-0", dst / "shard-1"], "alice")
    ghost = full_marks(json.loads(p.read_text()))
    (s / "results" / "ghost.json").write_text(json.dumps(ghost).replace('"alice"', '"ghost"'))
    sj = s / "shard.json"
    meta = json.loads(sj.read_text())
    for k, v in meta.items():
        if isinstance(v, list) and "alice" in v:
            v.append("ghost")
    sj.write_text(json.dumps(meta))

    # 4. bob's result swapped with alice's (both files renamed)
    dst = copy("swapped_results")
    sa, pa = find_student([dst / "shard-0", dst / "shard-1"], "alice")
    sb, pb = find_student([dst / "shard-0", dst / "shard-1"], "bob")
    a, b = pa.read_text(), pb.read_text()
    pa.write_text(b.replace('"bob"', '"alice"'))
    pb.write_text(a.replace('"alice"', '"bob"'))

    # 5. shard.json edited: another seed claimed, and "finished" forced true
    dst = copy("shard_json_edited")
    sj = dst / "shard-1" / "shard.json"
    meta = json.loads(sj.read_text())
    for k in list(meta):
        if "seed" in k and isinstance(meta[k], int):
            meta[k] = meta[k] + 1
        if k in ("finished", "complete", "done"):
            meta[k] = True
    sj.write_text(json.dumps(meta))

    # 6. a path-traversal student file name and markup planted in a result
    dst = copy("hostile_result")
    s, p = find_student([dst / "shard-0", dst / "shard-1"], "carol")
    r = json.loads(p.read_text())
    text = json.dumps(r).replace('"carol"', '"<script>alert(1)</script>"')
    p.write_text(text)
    (s / "results" / "..%2F..%2Fescaped.json").write_text(text)
    (s / "feedback").mkdir(exist_ok=True)
    (s / "feedback" / "carol.md").write_text("<script>alert('feedback')</script>\n")
    print("tampered:", sorted(x.name for x in work.glob("tampered_*")))


if __name__ == "__main__":
    main()
