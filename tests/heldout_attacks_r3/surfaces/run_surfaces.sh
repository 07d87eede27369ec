#!/usr/bin/env bash
# Run the surface attacks (LMS downloads, notebooks, written answers, tampered shards) against
# `grader batch` / `grader gather` and record what happened, with automatic checks.
# Usage: surfaces/run_surfaces.sh [RESULTS_DIR]   (default: <this folder>/../results/surfaces)
# Needs `grader` on PATH. Cheap exercise 8-2 (8-3 for written answers), --jobs 2 --timeout 10.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
res="${1:-$here/../results/surfaces}"
mkdir -p "$res"
work="$(mktemp -d /tmp/heldout_r3_surfaces.XXXXXX)"
python3 "$here/make_surfaces.py" "$work" > /dev/null
rm -f /tmp/heldout_r3_magic_* 2>/dev/null
verdicts="$res/verdicts.tsv"
printf 'case\tcheck\tresult\tdetail\n' > "$verdicts"
v() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$verdicts"; }

inspect() {  # case_dir case_name out_dir
  local case="$1" name="$2" out="$3"
  local leaked
  leaked="$(find "$case/canary" -mindepth 1 2>/dev/null | head -5 | tr '\n' ' ')"
  [ -z "$leaked" ] && v "$name" canary_empty PASS "" || v "$name" canary_empty FAIL "$leaked"
  local outside
  outside="$(find "$case" -newer "$case/.stamp" -not -path "$out" -not -path "$out/*" -not -path "$case" 2>/dev/null | head -5 | tr '\n' ' ')"
  [ -z "$outside" ] && v "$name" nothing_written_outside_out PASS "" || v "$name" nothing_written_outside_out FAIL "$outside"
  local raw
  raw="$(grep -rlE "<script>alert|<svg onload|<img src=x onerror|<iframe src=|<style>body" --include='*.html' "$out" 2>/dev/null | head -5 | tr '\n' ' ')"
  [ -z "$raw" ] && v "$name" no_raw_markup_in_html PASS "" || v "$name" no_raw_markup_in_html FAIL "$raw"
  if [ -f "$out/grades.csv" ]; then
    local formula
    formula="$(grep -nE '(^|,)"?[=+@-][A-Za-z(]' "$out/grades.csv" | head -3 | tr '\n' ' ')"
    [ -z "$formula" ] && v "$name" no_csv_formula_cell PASS "" || v "$name" no_csv_formula_cell FAIL "$formula"
    local alice
    alice="$(grep -E '^"?alice|^"?Alice' "$out/grades.csv" | head -1)"
    v "$name" classmate_row INFO "$alice"
    cp "$out/grades.csv" "$res/$name.grades.csv"
  else
    v "$name" grades_csv INFO "no grades.csv"
  fi
  local stray
  stray="$(ls /tmp/heldout_r3_magic_* 2>/dev/null | tr '\n' ' ')"
  [ -z "$stray" ] && v "$name" no_magic_ran PASS "" || v "$name" no_magic_ran FAIL "$stray"
  find "$out" -type l 2>/dev/null | head -3 | while read -r l; do v "$name" symlink_in_out FAIL "$l"; done
}

for name in canvas_zip_traversal canvas_symlink_member hostile_names moodle_hostile zip_bomb notebooks; do
  case="$work/$name"; out="$case/out"; touch "$case/.stamp"; sleep 1
  ( cd "$case" && timeout 900 grader batch class -e 8-2 --out "$out" --jobs 2 --timeout 10 --seed 3 --lang en ) > "$res/$name.txt" 2>&1
  echo "rc=$?" >> "$res/$name.txt"
  inspect "$case" "$name" "$out"
  echo "$name: $(tail -1 "$res/$name.txt")"
done

# written answers with markup, a student id with markup
name=written; case="$work/$name"; out="$case/out"; touch "$case/.stamp"; sleep 1
( cd "$case" && timeout 900 grader batch class -e 8-3 --written --out "$out" --jobs 2 --timeout 10 --seed 3 --lang en ) > "$res/$name.txt" 2>&1
echo "rc=$?" >> "$res/$name.txt"
inspect "$case" "$name" "$out"
[ -f "$out/written/review.csv" ] && cp "$out/written/review.csv" "$res/written.review.csv"
echo "$name: $(tail -1 "$res/$name.txt")"

# tampered shards: grade a small class in 2 shards, then gather tampered copies
g="$work/gather"; mkdir -p "$g/class"
for s in alice bob carol dave erin; do mkdir -p "$g/class/$s"; cp "$here/classmate_ex8_2.py" "$g/class/$s/ex8_2.py"; done
cp "$here/../../../exercises/ex8_2.py" "$g/class/bob/ex8_2.py"   # bob did nothing: 0 points
for k in 0 1; do
  ( cd "$g" && grader batch class -e 8-2 --seed 7 --shard $k/2 --out "shard-$k" --jobs 2 --timeout 10 --lang en ) >> "$res/gather_shards.txt" 2>&1
done
( cd "$g" && grader gather shard-0 shard-1 --out clean class --lang en ) > "$res/gather_clean.txt" 2>&1; echo "rc=$?" >> "$res/gather_clean.txt"
python3 "$here/tamper_shards.py" "$g" >> "$res/gather_tamper_made.txt" 2>&1
for t in "$g"/tampered_*/; do
  t="${t%/}"; tn="$(basename "$t")"
  ( cd "$t" && grader gather shard-0 shard-1 --out out ../class --lang en ) > "$res/gather_$tn.txt" 2>&1
  rc=$?; echo "rc=$rc" >> "$res/gather_$tn.txt"
  bob="$(grep -E '^"?bob' "$t/out/grades.csv" 2>/dev/null | head -1)"
  if [ $rc -ne 0 ]; then v "gather_$tn" refused PASS "rc=$rc"; else v "gather_$tn" refused FAIL "rc=0; bob row: $bob"; fi
  echo "gather_$tn: rc=$rc bob=[$bob]"
done
echo "work folder kept: $work"
echo "verdicts: $verdicts"
