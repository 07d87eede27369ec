#!/usr/bin/env bash
# Grades every submission of this set, one at a time (2 shared cores: never in parallel).
# Usage (from anywhere): bash tests/heldout_attacks_r3/set2/run.sh
# Writes results/<lab>__<name>.txt and results/summary.tsv (path, kind, score).
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
cd "$ROOT"
[ -f /work/venv/bin/activate ] && . /work/venv/bin/activate
mkdir -p "$HERE/results"
printf 'path\tkind\tscore\n' > "$HERE/results/summary.tsv"
for dir in "$HERE"/training/*/*/; do
  dir="${dir%/}"; name="$(basename "$dir")"; lab="$(basename "$(dirname "$dir")")"
  case "$name" in honest*) kind=honest;; *) kind=attack;; esac
  rel="${dir#"$ROOT"/}"
  out="$HERE/results/${lab}__${name}.txt"
  grader --lang en check "$lab" --submission "$rel" > "$out" 2>&1
  score="$(grep -o 'Score: [0-9.]*/10' "$out" | tail -1 | sed 's/Score: //; s#/10##')"
  printf '%s\t%s\t%s\n' "$rel" "$kind" "${score:-?}" >> "$HERE/results/summary.tsv"
  echo "$lab $name $kind ${score:-?}"
done
