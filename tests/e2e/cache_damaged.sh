#!/usr/bin/env bash
# A damaged build cache gives no verdict. The runner keeps each built library in its cache
# under the build's key; before, a cache hit trusted the file blindly, so a library cut short
# (a crash before the disk had it: the rename was not preceded by an fsync), emptied or changed
# gave its candidate a verdict that was the cache's: every seed of the second campaign below
# was recorded "rejected: cannot check the library's imports: ... is not a 64-bit ELF file".
# Now a library is fsync'd and its SHA-256 stored beside it (<key>.sum) before it goes into
# place, and a hit whose file does not match is built again, logged
# ("build cache: ... is not the library that was stored (...); building it again").
#   campaign one fills the cache; then every cached library (candidates' and oracles') is
#   damaged: cut to half, emptied, one byte changed in the middle, or its sum removed;
#   campaign two, over the same tasks and seeds (the same keys), ends whole with every seed
#   "ok" at every tier and each damaged library built again.
# usage: cache_damaged.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
LADDER='"ladder": [{"name": "compile"}, {"name": "smoke"},
                   {"name": "full", "min_samples": 3, "max_samples": 10, "max_seconds": 0.2}]'
run_campaign() { # ID
  make_campaign "$1" "$LADDER"
  "$BIN/kb-submit" -q submit "$T/$1.json" > /dev/null
  "$BIN/kb-scheduler" --campaign "$1" --cache "$T/sched" 2> "$T/$1.sched.log" &
  local sched=$!; BG_PIDS+=($sched)
  "$BIN/kb-runner" --campaign "$1" --cache "$T/cache" --name "r-$1" 2> "$T/$1.runner.log" &
  local runner=$!; BG_PIDS+=($runner)
  wait_pid "$sched" 300 || fail "$1: scheduler failed: $(tail -3 "$T/$1.sched.log")"
  wait_pid "$runner" 30 || fail "$1: runner failed: $(tail -3 "$T/$1.runner.log")"
}

note "campaign one fills the cache"
run_campaign one
mapfile -t libs < <(ls "$T/cache"/*.so)
[ "${#libs[@]}" -ge 5 ] || fail "only ${#libs[@]} libraries cached"

note "every cached library damaged (${#libs[@]})"
i=0
for f in "${libs[@]}"; do
  case $((i % 4)) in
    0) truncate -s $(($(stat -c %s "$f") / 2)) "$f" ;;
    1) : > "$f" ;;
    2) printf '\xff' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") / 2)) conv=notrunc 2> /dev/null ;;
    3) rm -f "${f%.so}.sum" ;;
  esac
  i=$((i + 1))
done

note "campaign two over the same keys"
run_campaign two
$KB_PY - "$T/results/two" <<'PY' || fail "a verdict from the damaged cache"
import sys, h5py
for task in ("sum", "matmul"):
    with h5py.File("%s/%s.h5" % (sys.argv[1], task), "r") as f:
        rows = f["evaluations"][:]
        bad = [(int(r["tier"]), r["status"].decode(), r["reason"].decode()[:100])
               for r in rows if r["status"] != b"ok"]
        assert not bad, "%s: %s" % (task, bad)
        assert {int(r["tier"]) for r in rows} == {0, 1, 2}, "%s: tiers %s" % (task, rows["tier"])
PY
campaign_whole two "$T/results/two" sum matmul
rebuilt=$(grep -c 'is not the library that was stored' "$T/two.runner.log" || true)
[ "$rebuilt" -eq "${#libs[@]}" ] ||
  fail "$rebuilt of ${#libs[@]} damaged libraries built again: $(grep 'build cache' "$T/two.runner.log" | head -3)"
for f in "${libs[@]}"; do [ -s "${f%.so}.sum" ] || fail "no checksum beside $f"; done
echo "PASS"
