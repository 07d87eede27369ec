#!/usr/bin/env bash
# Grade every training/<lab>/{attack,honest}_*.py with `grader check <lab>`, one at a time.
# Usage: run_training.sh [RESULTS_DIR] [FILTER]
#   RESULTS_DIR default: results (next to this script); FILTER: only files whose path contains it.
# Each command's full output goes to RESULTS_DIR/<lab>/<name>.txt; a summary to RESULTS_DIR/summary.tsv.
# Needs `grader` on PATH (e.g. `. /work/venv/bin/activate`).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/results}"
filter="${2:-}"
mkdir -p "$out"
summary="$out/summary.tsv"
printf 'file\tlab\tkind\tpoints\tmax\texit_code\tseconds\n' > "$summary"
for labdir in "$here"/training/*/; do
  lab="$(basename "$labdir")"                      # e.g. train-memn2n
  stub="lab_$(echo "$lab" | tr '-' '_').py"        # e.g. lab_train_memn2n.py
  mkdir -p "$out/$lab"
  for f in "$labdir"attack_*.py "$labdir"honest_*.py; do
    [ -e "$f" ] || continue
    case "$f" in *"$filter"*) ;; *) continue ;; esac
    name="$(basename "$f" .py)"
    case "$name" in attack_*) kind=attack ;; *) kind=honest ;; esac
    sub="$(mktemp -d)"
    cp "$f" "$sub/$stub"
    t0=$(date +%s)
    ( cd "$sub" && grader check "$lab" --submission "$sub" --lang en -v ) > "$out/$lab/$name.txt" 2>&1
    rc=$?
    t1=$(date +%s)
    line="$(grep -E '^(Score|Total):' "$out/$lab/$name.txt" | tail -1)"
    pts="$(echo "$line" | sed -E 's#^[A-Za-z]+: *([0-9.]+) */ *([0-9.]+).*#\1#')"
    max="$(echo "$line" | sed -E 's#^[A-Za-z]+: *([0-9.]+) */ *([0-9.]+).*#\2#')"
    [ -n "$line" ] || { pts=NA; max=NA; }
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "training/$lab/$name.py" "$lab" "$kind" "$pts" "$max" "$rc" "$((t1 - t0))" >> "$summary"
    echo "$lab/$name: $pts/$max rc=$rc ($((t1 - t0)) s)"
    rm -rf "$sub"
  done
done
echo "summary: $summary"
