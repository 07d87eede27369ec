#!/usr/bin/env bash
# r11 red team: grade every file of attacks/ and honest/ with the student's command.
# Usage: bash tests/heldout_attacks_r11/run.sh [SEED]   (from the repository root, venv active)
set -u
SEED="${1:-0}"
HERE="$(cd "$(dirname "$0")" && pwd)"
for folder in attacks honest; do
  for file in "$HERE/$folder"/*.py; do
    [ -e "$file" ] || continue
    name="$(basename "$file" .py)"
    stem="${name%%__*}"
    lab="${stem#lab_}"; lab="${lab//_/-}"
    dir="$(mktemp -d)"
    cp "$file" "$dir/$stem.py"
    score="$(grader --lang en check "$lab" --seed "$SEED" --submission "$dir" 2>/dev/null | grep -o 'Score: [0-9.]*/10' | tail -1)"
    echo "$folder/$(basename "$file") seed $SEED ${score:-Score: ?/10}"
    rm -rf "$dir"
  done
done
