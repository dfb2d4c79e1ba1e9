#!/bin/sh
# Instructions redis-server executes per item of a batch cycle: a load-independent measure of
# the queue scripts' cost (a shared machine's rates scatter by tens of percent from run to run;
# this count varies by less than 1%).
#
# usage: bench/queue/instructions.sh [K [CYCLES]]   (default K = 8, CYCLES = 50; K = 1 is the
#                                                   fused complete+claim form)
# Starts a redis-server with the campaign settings under valgrind's callgrind (instrumentation
# off), registers a campaign and enqueues items with build/bin/kb-bench-queue-ir --setup, runs
# 2 warm-up cycles (the scripts get loaded), then switches instrumentation on for CYCLES batch
# calls of K (each completes the K items held, with ~700-byte results, and claims K) and off
# again. Prints the server's instructions per item (everything the server did in that window:
# request parsing, the script, the commands it runs, the AOF feed, the replies). Needs valgrind
# and callgrind_control; takes about 10 s. KB_BENCH_KEEP=1 keeps the callgrind output.
# KB_REDIS_SERVER=PATH runs that redis-server instead of the one on PATH: Debian's is stripped,
# so callgrind_annotate names Lua's functions only for a build with symbols (redis 7.0.15 from
# its tag, `make`: the same instructions per item within 0.1%, docs/benchmarks.md).
set -eu
K=${1:-8}
C=${2:-50}
root=$(cd "$(dirname "$0")/../.." && pwd)
ir="$root/build/bin/kb-bench-queue-ir"
[ -x "$ir" ] || { echo "instructions.sh: build $ir first (target kb-bench-queue-ir)" >&2; exit 1; }
dir=$(mktemp -d /tmp/kb-bench-ir-XXXXXX)
sock="$dir/redis.sock"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/callgrind.out.%p" \
  "${KB_REDIS_SERVER:-redis-server}" --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$dir" \
  --appendonly yes --appendfsync everysec --maxmemory-policy noeviction \
  --hash-max-listpack-entries 128 --hash-max-listpack-value 2048 --save "" \
  >"$dir/redis.log" 2>&1 &
vpid=$!
cleanup() {
  redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1 || kill "$vpid" 2>/dev/null || true
  wait "$vpid" 2>/dev/null || true
  [ "${KB_BENCH_KEEP:-0}" = 1 ] && echo "kept $dir" >&2 || rm -rf "$dir"
}
trap cleanup EXIT INT TERM
i=0
until redis-cli -s "$sock" ping >/dev/null 2>&1; do
  i=$((i + 1))
  [ $i -lt 300 ] || { echo "instructions.sh: redis-server did not start" >&2; exit 1; }
  sleep 0.1
done
"$ir" --redis "unix:$sock" --setup --cycles "$C" --batch "$K"
"$ir" --redis "unix:$sock" --cycles 2 --batch "$K"
callgrind_control -i on "$vpid" >/dev/null 2>&1
"$ir" --redis "unix:$sock" --cycles "$C" --batch "$K"
callgrind_control -i off "$vpid" >/dev/null 2>&1
callgrind_control -d "$vpid" >/dev/null 2>&1
out=$(ls -S "$dir"/callgrind.out.* | head -1)
total=$(callgrind_annotate "$out" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' |
        tr -d ',')
echo "redis-server instructions per item: $((total / (C * K))) (K = $K, $C calls, $total in all)"
