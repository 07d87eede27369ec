#!/usr/bin/env bash
# r8 review red team: build a hostile class, batch it with --written, serve it (SQLite; and
# PostgreSQL too when initdb and a 'postgres' user exist), run every attack, print a summary.
# Usage: tests/heldout_attacks_r8/review/run.sh [WORKDIR]   (default /tmp/r8rev-run)
# R8_ONLY='nan_*.py' runs a subset.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
W="${1:-/tmp/r8rev-run}"
[ -f /work/venv/bin/activate ] && . /work/venv/bin/activate
rm -rf "$W"; mkdir -p "$W"
python "$HERE/build_class.py" "$W/subs" >/dev/null
echo "batch..."
grader batch "$W/subs" --exercise 8-2 --exercise 8-3 --written --out "$W/out" --jobs 4 >"$W/batch.log" 2>&1 \
  || { echo "batch failed, see $W/batch.log"; exit 2; }
free_port() { python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for i in $(seq 1 240); do curl -s -o /dev/null "$1" && return 0; sleep 0.5; done; return 1; }
PORT=$(free_port)
grader review "$W/out" --port "$PORT" >"$W/server.log" 2>&1 &
SPID=$!
PGPID=""; PGDATA=""
cleanup() {
  kill "$SPID" 2>/dev/null
  [ -n "$PGPID" ] && kill "$PGPID" 2>/dev/null
  [ -n "$PGDATA" ] && su postgres -c "pg_ctl -D $PGDATA stop -m fast" >/dev/null 2>&1
}
trap cleanup EXIT
wait_up "http://127.0.0.1:$PORT/" || { echo "server did not start, see $W/server.log"; exit 2; }
export R8_BASE="http://127.0.0.1:$PORT" R8_OUT="$W/out"
# optional PostgreSQL (for nan_start_from.py)
PGBIN=$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || echo /nonexistent)")")
if [ -x "$PGBIN/initdb" ] && id postgres >/dev/null 2>&1 && python -c "import psycopg" 2>/dev/null; then
  PGDATA="$W/pg/data"; mkdir -p "$W/pg"; chown postgres "$W/pg"; PGP=$(free_port)
  if su postgres -c "$PGBIN/initdb -D $PGDATA -A trust -U grader" >"$W/pg/initdb.log" 2>&1 &&
     su postgres -c "$PGBIN/pg_ctl -D $PGDATA -o '-p $PGP -k $W/pg -c listen_addresses=127.0.0.1' -l $W/pg/pg.log start" >/dev/null 2>&1 &&
     sleep 2 && su postgres -c "$PGBIN/createdb -h 127.0.0.1 -p $PGP -U grader course"; then
    cp -a "$W/out" "$W/outpg"; rm -rf "$W/outpg/review"
    PPORT=$(free_port)
    grader review "$W/outpg" --db "postgresql://grader@127.0.0.1:$PGP/course" --port "$PPORT" >"$W/serverpg.log" 2>&1 &
    PGPID=$!
    if wait_up "http://127.0.0.1:$PPORT/"; then
      export R8_PG_BASE="http://127.0.0.1:$PPORT" R8_PG_OUT="$W/outpg"; echo "PostgreSQL server at $R8_PG_BASE"
    else echo "(PostgreSQL review server did not answer; see $W/serverpg.log)"; fi
  else
    PGDATA=""; echo "(PostgreSQL not started; nan_start_from runs on SQLite only)"
  fi
fi
cd "$HERE/attacks"
worked=0; failed=0; broken=0
echo "SQLite server at $R8_BASE; PostgreSQL: ${R8_PG_BASE:-none}"
for a in $(ls ${R8_ONLY:-*.py} | grep -v '^_'); do
  out=$(timeout 600 python "$a" 2>"$W/$a.err" | grep -E '^ATTACK_(WORKED|FAILED)' | tail -1)
  case "$out" in
    ATTACK_WORKED*) worked=$((worked+1)); printf '%-34s %s\n' "$a" "$out";;
    ATTACK_FAILED*) failed=$((failed+1)); printf '%-34s %s\n' "$a" "$out";;
    *) broken=$((broken+1)); printf '%-34s %s\n' "$a" "NO RESULT (see $W/$a.err)";;
  esac
done
echo "summary: $worked worked, $failed failed, $broken without a result"
