#!/bin/bash
# Rebuild the hostile class (every attacks/<idea>/ex8_2.py) plus honest classmates, grade it, judge.
# Usage: [SKIP_CHECK=1] bash run.sh [WORKDIR]   (default /tmp/r8rep_run; about 25 min in full, 8 min with SKIP_CHECK=1)
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
W="${1:-/tmp/r8rep_run}"
. /work/venv/bin/activate
rm -rf "$W"; mkdir -p "$W/class" "$W/honest"
python "$HERE/make_attacks.py" >/dev/null
for d in "$HERE"/attacks/*/; do n=$(basename "$d"); mkdir -p "$W/class/$n"; cp "$d"/ex8_2.py "$W/class/$n/"; done
for h in bob henry alice; do
  mkdir -p "$W/class/zz_honest_$h" "$W/honest/zz_honest_$h"
  cp /work/main/examples/submissions/$h/ex8_2.py "$W/class/zz_honest_$h/"
  cp /work/main/examples/submissions/$h/ex8_2.py "$W/honest/zz_honest_$h/"
done
# baseline: the honest classmates alone
grader --lang en batch "$W/honest" --exercise 8-2 --seed 1 --jobs 2 --no-similarity --no-pictures --out "$W/out_honest" >"$W/honest.stdout" 2>"$W/honest.stderr"
# the hostile class (pictures on: the per-student .html too)
grader --lang en batch "$W/class" --exercise 8-2 --seed 1 --jobs 2 --no-similarity --out "$W/out" >"$W/batch.stdout" 2>"$W/batch.stderr"
echo "batch rc=$?" >"$W/batch.rc"
grader --lang en batch "$W/class" --exercise 8-2 --seed 1 --jobs 2 --no-similarity --no-pictures --format junit --out "$W/out_junit" >"$W/junit.stdout" 2>"$W/junit.stderr"
echo "junit rc=$?" >>"$W/batch.rc"
# grader check for each attack (terminal text and json); SKIP_CHECK=1 skips it (it takes ~15 min)
mkdir -p "$W/check"
[ -n "${SKIP_CHECK:-}" ] || for d in "$W"/class/*/; do n=$(basename "$d")
  ( cd "$d" && timeout 300 grader --lang en check 8-2 --submission . >"$W/check/$n.txt" 2>"$W/check/$n.err"; echo "rc=$?" >>"$W/check/$n.err"
    timeout 300 grader --lang en check 8-2 --submission . --format json >"$W/check/$n.json" 2>/dev/null )
done
python "$HERE/judge.py" "$W"

# ---- the crash, on its own: an ordinary wrong bilinear_asymmetry, batch seeds 1..4 (crashes where the two hidden W share a shape)
mkdir -p "$W/crash/zeros_asymmetry" "$W/crash/honest_wrong_asym" "$W/crash/zz_honest_bob"
cp "$HERE/attacks/zeros_asymmetry/ex8_2.py" "$W/crash/zeros_asymmetry/"; cp "$HERE/attacks/honest_wrong_asym/ex8_2.py" "$W/crash/honest_wrong_asym/"
cp /work/main/examples/submissions/bob/ex8_2.py "$W/crash/zz_honest_bob/"
for s in 1 2 3 4; do
  grader --lang en batch "$W/crash" --exercise 8-2 --seed $s --jobs 2 --no-similarity --no-pictures --out "$W/crash_out_$s" >/dev/null 2>&1
  echo "CRASH batch seed $s: grades.csv rows: $(grep -v '^student' "$W/crash_out_$s/grades.csv" | tr '\n' ' ')"
  grep -q 'grader-error' "$W/crash_out_$s/grades.csv" && echo "  -> WORKED: part left ungraded (grader-error), total not final"
done

# ---- Gradescope layout, run locally (AUTOGRADER_ROOT), submission id 14 draws two hidden W of one shape
GS="$W/gs"; mkdir -p "$GS"
grader release gradescope "$GS/ag.zip" -e 8-2 >/dev/null 2>&1 && unzip -q -o "$GS/ag.zip" -d "$GS/ag"
gs_one() {  # FILE NAME SUBID
  R="$GS/root_$2"; rm -rf "$R"; mkdir -p "$R/submission" "$R/results"; cp -r "$GS/ag" "$R/source"; cp "$1" "$R/submission/ex8_2.py"
  printf '{"id": %s, "assignment": {"id": 777, "title": "8-2"}, "users": [{"name": "%s", "email": "x@x", "sid": "1"}], "created_at": "2026-11-29T10:00:00Z"}\n' "$3" "$2" > "$R/submission_metadata.json"
  AUTOGRADER_ROOT="$R" PYTHON=/work/venv/bin/python bash "$R/source/run_autograder" > "$R/stdout" 2>&1
  python -c "import json,sys;d=json.load(open('$R/results/results.json'));print('GRADESCOPE $2 (id $3): score', d.get('score'), '| tests', len(d.get('tests',[])), '|', d.get('output','')[:90])"
}
# the hidden seed is drawn from the submission id and a key drawn for each zip: look for an id whose two hidden W share a shape
CRASH_ID=""
for id in $(seq 1 40); do
  out=$(gs_one "$HERE/attacks/zeros_asymmetry/ex8_2.py" zeros_asymmetry_id$id $id)
  case "$out" in *"score 0.0 | tests 0"*) CRASH_ID=$id; echo "$out"; break;; esac
done
if [ -n "$CRASH_ID" ]; then
  echo "  -> WORKED: Gradescope submission id $CRASH_ID: the autograder fails, score 0.0 for every part"
  gs_one /work/main/examples/submissions/bob/ex8_2.py bob_id$CRASH_ID $CRASH_ID
  gs_one "$HERE/attacks/honest_wrong_asym/ex8_2.py" honest_wrong_asym_id$CRASH_ID $CRASH_ID
  tail -3 "$GS/root_zeros_asymmetry_id$CRASH_ID/stdout"
else
  echo "  no Gradescope id in 1..40 drew two hidden W of one shape"
fi
for a in msg_newline msg_unicode_lineseps msg_ansi print_mimic gs_write_results exit_at_import; do gs_one "$HERE/attacks/$a/ex8_2.py" $a 12345; done

# ---- the same crash in another exercise: lab masked-softmax, a wrong masked_softmax (ones), batch seed 6
mkdir -p "$W/crash_ms/ms"; cp "$HERE/attacks_other/crash_masked_softmax/lab_masked_softmax.py" "$W/crash_ms/ms/"
grader --lang en batch "$W/crash_ms" --exercise masked-softmax --seed 6 --jobs 2 --no-similarity --no-pictures --out "$W/crash_ms_out" >/dev/null 2>&1
echo "CRASH masked-softmax seed 6: $(grep -v '^student' "$W/crash_ms_out/grades.csv" | tr '\n' ' ')"
grep -q 'grader-error' "$W/crash_ms_out/grades.csv" && echo "  -> WORKED: masked_softmax left ungraded (grader-error)"
