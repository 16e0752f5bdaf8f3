#!/usr/bin/env bash
# Benchmarks of `trtmc-bench history` (issue 38), recorded in docs/performance.md:
#   1. `history add` of 10,000 result folders (copies of one real `run` result, each its own run id
#      and time) into a new database, then the same 10,000 again (all already stored);
#   2. change points of 1,000 series × 500 points: the `scale` example fills the database once through
#      the library's ingest and times `check::analyze`; then `history check` on it, end to end.
# With POSTGRES=postgres://… (a server you may create databases on) the same commands run there too.
# Needs a release build of the binary and the examples:
#   cargo build --release -p trtmc-bench -p trtmc-history --bins --examples
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$TARGET/release/trtmc-bench}
SCALE=$TARGET/release/examples/scale
for f in "$BIN" "$SCALE"; do
  [ -x "$f" ] || { echo "bench-history: $f is missing (see the header)" >&2; exit 7; }
done
FOLDERS=${FOLDERS:-10000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export TRTMC_TEST=1

"$BIN" run --model tiny-cnn --runtime tract --iterations 50 --warmup 5 -q -o "$WORK/real" \
  --bundle-cache "$WORK/cache"
python3 - "$WORK/real/result.json" "$WORK/copies" "$FOLDERS" <<'PY'
import json, os, sys
doc = json.load(open(sys.argv[1]))
for i in range(int(sys.argv[3])):
    d = os.path.join(sys.argv[2], f"{i:05}")
    os.makedirs(d)
    doc["run_id"] = f"copy-{i}"
    doc["created"] = f"2026-01-01T{i // 3600:02}:{i // 60 % 60:02}:{i % 60:02}Z"
    json.dump(doc, open(os.path.join(d, "result.json"), "w"))
PY

seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }

dbs=("$WORK/add.sqlite")
if [ -n "${POSTGRES:-}" ]; then
  name=trtmc_bench_$$
  psql "$POSTGRES" -qc "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name"
  dbs+=("${POSTGRES%/*}/$name")
fi
for db in "${dbs[@]}"; do
  echo "== 1. history add of $FOLDERS folders into $db"
  echo "new database:     $(seconds "$BIN" history add --db "$db" "$WORK"/copies/*) s"
  echo "already stored:   $(seconds "$BIN" history add --db "$db" "$WORK"/copies/*) s"
done

echo "== 2. change points of 1,000 series × 500 points (SQLite)"
"$SCALE" "$WORK/scale.sqlite" 3
echo "history check end to end: $(seconds "$BIN" history check --db "$WORK/scale.sqlite") s"
"$BIN" history check --db "$WORK/scale.sqlite" | head -n 1
if [ -n "${POSTGRES:-}" ]; then
  name=trtmc_scale_$$
  psql "$POSTGRES" -qc "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name"
  echo "== 2. the same on PostgreSQL"
  "$SCALE" "${POSTGRES%/*}/$name" 3
  echo "history check end to end: $(seconds "$BIN" history check --db "${POSTGRES%/*}/$name") s"
  psql "$POSTGRES" -qc "DROP DATABASE IF EXISTS $name" -c "DROP DATABASE IF EXISTS trtmc_bench_$$"
fi
