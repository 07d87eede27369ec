#!/usr/bin/env bash
# Grade every r10 file (attacks/ and honest/) one at a time: prints file and score.
# Usage: tests/heldout_attacks_r10/run.sh [seed]   (from anywhere; uses /work/venv if present)
set -u
SEED="${1:-0}"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
[ -f /work/venv/bin/activate ] && . /work/venv/bin/activate
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
cd "$ROOT"
for f in "$HERE"/attacks/*.py "$HERE"/honest/*.py; do
  name="$(basename "$f")"
  lab="${name%%__*}"               # lab_train_<lab>
  ex="${lab#lab_}"; ex="${ex//_/-}" # train-<lab>
  dir="$TMP/${name%.py}"; mkdir -p "$dir"; cp "$f" "$dir/$lab.py"
  out="$(grader --lang en check "$ex" --seed "$SEED" --submission "$dir" 2>&1)"
  score="$(printf '%s\n' "$out" | grep -E '^Score:' | tail -1)"
  printf '%-70s seed %s  %s\n' "$(basename "$(dirname "$f")")/$name" "$SEED" "${score:-Score: ?}"
done
