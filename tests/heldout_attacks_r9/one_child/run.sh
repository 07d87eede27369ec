#!/usr/bin/env bash
# r9 one-child red team: build the classes from attacks/, grade each batch with the one-child mode on
# (default) and off (GRADER_ONE_CHILD=off), then judge every attack (WORKED / FAILED / PROBE lines).
# Usage: tests/heldout_attacks_r9/one_child/run.sh [ROOT]   (default ROOT=/tmp/r9_one_child)
# Needs `grader` on PATH (e.g. . /work/venv/bin/activate). Set R9_SKIP_RUN=1 to only re-judge.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
A="$HERE/attacks"
ROOT="${1:-/tmp/r9_one_child}"   # attacks/probe/ex8_6.py names this path: keep it to probe it
mkdir -p "$ROOT"

build() {   # build CLASS_DIR student...
    local dir="$1"; shift
    rm -rf "$dir"; mkdir -p "$dir"
    for s in "$@"; do
        if [[ "$s" == honest* ]]; then cp -r "$A/_honest" "$dir/$s"; else cp -r "$A/$s" "$dir/$s"; fi
    done
}

build "$ROOT/class_A" honest1 honest2 xpatch_channels xpatch_thread xpatch_hooks xpatch_stub
build "$ROOT/class_B" honest1 honest2 ctl_flag hide_exit hide_del hide_thread
build "$ROOT/class_D" honest1 honest2 xbreak_reset xhang_reset xpatch_reset
build "$ROOT/class_C" honest1 honest2 probe linger hide_crash_open hide_listdir
build "$ROOT/class_P" honest1 honest2 probe2 hide_scrub probe3 probe4 probe5 probe6

snap() { ps -eo pid=,ppid=,args= | awk '{print $1" "$0}' | sort > "$1"; ls -d "${TMPDIR:-/tmp}"/attnkit-batch-* 2>/dev/null > "$1.tmp" || true; }

if [[ "${R9_SKIP_RUN:-0}" != 1 ]]; then
  for b in ${R9_BATCHES:-A B C D P}; do
    for mode in on off; do
        out="$ROOT/out_${b}_${mode}"; rm -rf "$out"
        snap "$ROOT/ps_before_${b}_${mode}"
        start=$(date +%s)
        # (maintainer, after this set was run: one child per student became `--one-child`, and
        # the default a child per exercise; "on" passes the flag, "off" is the default)
        unset GRADER_ONE_CHILD
        flag=""; [[ $mode == on ]] && flag="--one-child"
        exs="-e 8-1 -e 8-2 -e 8-6"; [[ $b == P ]] && exs="-e 8-1 -e 8-2 -e 8-6"
        timeout 900 grader batch "$ROOT/class_$b" $exs $flag --seed 5 --jobs 2 --timeout 5 \
            --no-similarity --no-pictures --out "$out" > "$ROOT/log_${b}_${mode}.txt" 2>&1
        echo $? > "$ROOT/rc_${b}_${mode}"
        echo $(( $(date +%s) - start )) > "$ROOT/secs_${b}_${mode}"
        unset GRADER_ONE_CHILD
        sleep 5
        snap "$ROOT/ps_after_${b}_${mode}"
        echo "batch $b mode $mode: rc=$(cat "$ROOT/rc_${b}_${mode}") $(cat "$ROOT/secs_${b}_${mode}")s"
    done
  done
fi

PYTHONDONTWRITEBYTECODE=1 python3 "$HERE/judge.py" "$ROOT"
