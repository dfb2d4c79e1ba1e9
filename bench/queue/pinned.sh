#!/bin/sh
# kb-bench-queue with the redis-server it starts on CPU 0 and the benchmark's runner threads on
# the other CPUs, so the simulated runners' scheduling does not compete with the server for a
# CPU (on a shared machine other programs still may). An experiment on how much of the measured
# claim latency is the client threads' (docs/benchmarks.md, "Items as lines").
#
# usage: bench/queue/pinned.sh [kb-bench-queue options...]
# Needs taskset (util-linux) and at least 2 CPUs. Watches for the redis-server child of the
# benchmark and moves all its threads to CPU 0 as soon as it appears.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
n=$(nproc)
[ "$n" -ge 2 ] || { echo "pinned.sh: needs 2 CPUs or more" >&2; exit 2; }
taskset -c "1-$((n - 1))" "$root/build/bin/kb-bench-queue" "$@" &
bench=$!
pinned=0
while kill -0 "$bench" 2>/dev/null; do
  if [ "$pinned" = 0 ]; then
    for c in $(ps -o pid= --ppid "$bench" 2>/dev/null); do
      if [ "$(ps -o comm= -p "$c")" = redis-server ]; then
        taskset -a -pc 0 "$c" >/dev/null && pinned=1 && echo "pinned.sh: redis-server $c on CPU 0" >&2
      fi
    done
  fi
  sleep 0.05
done
wait "$bench"
