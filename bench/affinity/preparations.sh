#!/usr/bin/env bash
# Task preparations per task with 1, 2 and 4 runners, task affinity on and off, on host
# campaigns here (issue 17, item 2). Each run is one campaign over the same host tasks and seed
# candidates (one redis-server, one kb-scheduler, N kb-runners sharing one build cache, as
# kb-launch starts them); "off" sets the campaign's meta affinity_ms to 0 (docs/architecture.md,
# "Task affinity"), "on" keeps the default. A runner's last "time split" line counts the
# preparations its sandbox did not have cached; their sum is the campaign's.
#
# Usage: bench/affinity/preparations.sh BIN [RUNNERS...]   (default runners: 1 2 4)
#   BIN: the build's bin folder. Env: KB_BENCH_TASKS (task folder names, default 8 host tasks),
#   KB_BENCH_PER_TASK (tune proposals per task, default 6), KB_BENCH_BACKEND (host, default, or
#   cuda: then the tasks are tasks/cuda/<name>, by default all of them, and runner i gets GPU
#   (i - 1) mod KB_BENCH_GPUS, default 1).
# Prints a table and, last, one JSON line. Exit 0, or 1 when a campaign did not finish.
set -euo pipefail
BIN=$(cd "${1:?usage: preparations.sh BIN [RUNNERS...]}" && pwd)
shift
RUNNERS=("$@")
[ ${#RUNNERS[@]} -gt 0 ] || RUNNERS=(1 2 4)
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BACKEND=${KB_BENCH_BACKEND:-host}
if [ "$BACKEND" = cuda ]; then
  TASKS=${KB_BENCH_TASKS:-$(ls "$REPO/tasks/cuda")} # the 14 tasks of the CUDA suite
else
  TASKS=${KB_BENCH_TASKS:-"gelu row_sum softmax layernorm transpose maxpool2d scan sum"}
fi
PER_TASK=${KB_BENCH_PER_TASK:-6}
GPUS=${KB_BENCH_GPUS:-1}
T=$(mktemp -d /tmp/kb-affinity-XXXXXX)
PIDS=()
REDIS_PID=""
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [ -n "$REDIS_PID" ]; then kill "$REDIS_PID" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT

"$BIN/kb-launch" --redis-config > "$T/redis.conf"
redis-server "$T/redis.conf" --port 0 --unixsocket "$T/redis.sock" --unixsocketperm 700 \
  --dir "$T" --logfile "$T/redis.log" </dev/null >/dev/null 2>&1 &
REDIS_PID=$!
export KB_REDIS="unix:$T/redis.sock"
rcli() { redis-cli -s "$T/redis.sock" "$@"; }
for _ in $(seq 200); do rcli ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done

n_tasks=0
task_list=""
for t in $TASKS; do
  task_list+="${task_list:+, }\"$REPO/tasks/$BACKEND/$t\""
  n_tasks=$((n_tasks + 1))
done

# run_one ID RUNNERS AFFINITY(on|off): one campaign; prints "evaluations preparations seconds"
run_one() {
  local id=$1 n=$2 aff=$3
  cat > "$T/$id.json" <<JSON
{
  "schema": "kernelbrain.campaign/1",
  "id": "$id",
  "backend": "$BACKEND",
  "tasks": [$task_list],
  "budget": {"gpu_seconds": 900},
  "lease_seconds": 60,
  "results_dir": "$T/results",
  "generators": {"seed": true, "max_per_task": $PER_TASK, "tune": {"weight": 1}}
}
JSON
  "$BIN/kb-submit" submit "$T/$id.json" > /dev/null
  if [ "$aff" = off ]; then rcli HSET "kb:{$id}:meta" affinity_ms 0 > /dev/null; fi
  local t0 pids=()
  t0=$(date +%s.%N)
  "$BIN/kb-scheduler" --campaign "$id" --cache "$T/sched-$id" 2> "$T/$id-sched.log" &
  local sched=$!
  PIDS+=("$sched")
  for i in $(seq "$n"); do
    CUDA_VISIBLE_DEVICES=$(((i - 1) % GPUS)) "$BIN/kb-runner" --campaign "$id" \
      --backend "$BACKEND" --cache "$T/cache-$id" --name "r$i" 2> "$T/$id-r$i.log" &
    pids+=($!)
    PIDS+=($!)
  done
  wait "$sched" || { echo "campaign $id: scheduler failed: $(tail -3 "$T/$id-sched.log")" >&2; return 1; }
  for p in "${pids[@]}"; do wait "$p" || true; done
  local secs prep=0 evals
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  for i in $(seq "$n"); do
    local p
    p=$(grep -o 'preparing tasks [0-9.]* s, [0-9]* preparations' "$T/$id-r$i.log" | tail -1 |
        awk '{print $5}')
    prep=$((prep + ${p:-0}))
  done
  evals=$(rcli HGET "kb:{$id}:meta" done)
  echo "$evals $prep $secs"
}

printf '%-8s %-9s %6s %12s %13s %13s %8s\n' runners affinity tasks evaluations preparations \
  "prep/task" seconds
json="{\"bench\":\"affinity\",\"tasks\":$n_tasks,\"runs\":["
sep=""
for n in "${RUNNERS[@]}"; do
  for aff in on off; do
    read -r evals prep secs < <(run_one "aff-$n-$aff" "$n" "$aff")
    per=$(echo "scale=2; $prep / $n_tasks" | bc)
    printf '%-8s %-9s %6s %12s %13s %13s %8.1f\n' "$n" "$aff" "$n_tasks" "$evals" "$prep" "$per" "$secs"
    json+="$sep{\"runners\":$n,\"affinity\":\"$aff\",\"evaluations\":$evals,\"preparations\":$prep,\"per_task\":$per,\"seconds\":$secs}"
    sep=","
  done
done
echo "$json]}"
