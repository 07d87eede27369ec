#!/usr/bin/env bash
# Grades every file of this set with `grader check <lab>`, one at a time; FILTER: only names
# containing it. Writes results/<name>.txt and results/summary.tsv (file, kind, score).
# Usage: bash tests/heldout_attacks_r6/run.sh [FILTER]
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
[ -f /work/venv/bin/activate ] && . /work/venv/bin/activate
filter="${1:-}"
mkdir -p "$HERE/results"
[ -n "$filter" ] || printf 'file\tkind\tscore\n' > "$HERE/results/summary.tsv"
for f in "$HERE"/attacks/*.py "$HERE"/honest/*.py; do
  name="$(basename "$f" .py)"
  case "$name" in *"$filter"*) ;; *) continue ;; esac
  stem="${name%%__*}"                                   # lab_train_memn2n
  lab="$(echo "${stem#lab_}" | tr '_' '-')"             # train-memn2n
  kind="$(basename "$(dirname "$f")")"
  sub="$(mktemp -d)"
  cp "$f" "$sub/$stem.py"
  grader --lang en check "$lab" --submission "$sub" > "$HERE/results/$name.txt" 2>&1
  score="$(grep -o 'Score: [0-9.]*/10' "$HERE/results/$name.txt" | tail -1 | sed 's/Score: //; s#/10##')"
  printf '%s\t%s\t%s\n' "$name" "$kind" "${score:-?}" >> "$HERE/results/summary.tsv"
  echo "$name $kind ${score:-?}"
  rm -rf "$sub"
done
