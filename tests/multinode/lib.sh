# Helpers for the tests on the multi-node cluster scripts/slurm-netns.sh builds in network
# namespaces (the ctest fixture "multinode" does; MN_STATE names its state folder). Source after
# tests/lib/common.sh. Every client runs in the controller's namespace (kbmn-ctl): kb-launch and
# sbatch reach slurmctld there, redis-cli reaches Redis on node kbmn-n1 over the bridge.
# Checks read what the jobs wrote (logs, Redis, HDF5), never only exit codes.

MN_SCRIPT=$REPO_DIR/scripts/slurm-netns.sh
MN_JOBS=()         # every job id a test submitted, cancelled at exit
export KB_JOB_POLL=2 # the jobs poll every 2 s (default 10)
export PATH=$PATH:/usr/sbin:/sbin # ip, for ip netns pids

mn_cleanup() {
  if [ ${#MN_JOBS[@]} -gt 0 ]; then mn scancel "${MN_JOBS[@]}" 2> /dev/null || true; fi
  cleanup
}
trap mn_cleanup EXIT

# mn CMD...: CMD in the controller's namespace, with the cluster's environment
mn() { nsenter --net=/run/netns/kbmn-ctl "$@"; }

# mn_ready: the cluster answers; else skip (77) with the fixture's one line saying what is missing
mn_ready() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: the multi-node cluster needs root (network namespaces, slurmd)" >&2
    exit 77
  fi
  if [ -f "$MN_STATE/unavailable" ]; then
    echo "SKIP: $(cat "$MN_STATE/unavailable")" >&2
    exit 77
  fi
  [ -f "$MN_STATE/cluster.env" ] || fail "no cluster in $MN_STATE (the fixture multinode_setup did not run)"
  # shellcheck disable=SC1091
  source "$MN_STATE/cluster.env"
  mn timeout 10 scontrol ping 2> /dev/null | grep -q UP || fail "slurmctld in kbmn-ctl does not answer"
  rcli ping | grep -q PONG || fail "redis at $KB_REDIS does not answer"
}

rcli() {
  REDISCLI_AUTH=$(cat "$KB_REDIS_PASSWORD_FILE") mn redis-cli --no-auth-warning \
    --user "$KB_REDIS_USER" -h "${KB_REDIS%:*}" -p "${KB_REDIS##*:}" "$@"
}

# mn_launch ID RUNNERS: kb-launch --slurm against the Redis on kbmn-n1 (the scheduler on
# partition svc, node kbmn-n2; the runners on partition run, kbmn-n3 and kbmn-n4); sets SC and A
mn_launch() {
  local id=$1 n=$2
  mn "$BIN/kb-launch" --slurm --json --runners "$n" --redis "$KB_REDIS" --partition run \
    --cpu-partition svc --gres none "$T/$id.json" > "$T/launch.json" 2> "$T/launch.err" ||
    fail "kb-launch --slurm failed: $(cat "$T/launch.err")"
  SC=$(json_get "$T/launch.json" scheduler.job)
  A=$(json_get "$T/launch.json" runners.job)
  MN_JOBS+=("$SC" "$A")
}

json_get() {
  $KB_PY -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v=v[k]
print("" if v is None else v)' "$1" "$2"
}

# mn_jobs_gone IDS: none of the jobs (comma-separated) is pending or running
mn_jobs_gone() {
  local out rc=0
  out=$(mn squeue -h -j "$1" -o %i 2>&1) || rc=$?
  if [ $rc -eq 0 ]; then [ -z "$out" ]; return; fi
  grep -q "Invalid job id" <<< "$out"
}

# wait_until SECONDS WHAT CMD...: retries CMD until it succeeds
wait_until() {
  local secs=$1 what=$2 end
  shift 2
  end=$(($(date +%s) + secs))
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || fail "waited $secs s for $what"
    sleep 0.2
  done
}

# runner_nodes: "task node" of each running task of array $A
runner_nodes() { mn squeue -h -j "$A" -t RUNNING -o '%K %N'; }

# mn_tasks BASE N: N copies of the built-in host task BASE under the ids BASE1..BASEN in $T
# (two seeds each), printed as a JSON list
mn_tasks() {
  local base=$1 n=$2 i list=""
  for i in $(seq "$n"); do
    rm -rf "${T:?}/$base$i"
    cp -r "$REPO_DIR/tasks/host/$base" "$T/$base$i"
    sed -i "s/\"id\": \"$base\"/\"id\": \"$base$i\"/" "$T/$base$i/task.json"
    list="$list${list:+, }\"$T/$base$i\""
  done
  echo "[$list]"
}

# mn_campaign ID LEASE_SECONDS TASKS_JSON SCREEN_SAMPLES: $T/ID.json, results in $T/results;
# a short ladder (compile, smoke, screen of SCREEN_SAMPLES samples) so a campaign takes seconds
mn_campaign() {
  cat > "$T/$1.json" << JSON
{
  "schema": "kernelbrain.campaign/1",
  "id": "$1",
  "backend": "host",
  "tasks": $3,
  "budget": {"gpu_seconds": 3600},
  "lease_seconds": $2,
  "results_dir": "$T/results",
  "ladder": [{"name": "compile"},
    {"name": "smoke", "min_samples": 1, "max_samples": 2, "warmup": 0, "max_seconds": 0.2, "timeout_seconds": 10},
    {"name": "screen", "min_samples": $4, "max_samples": $4, "warmup": 0, "max_seconds": 30, "timeout_seconds": 30}]
}
JSON
}

# meta CID FIELD
meta() { rcli HGET "kb:{$1}:meta" "$2"; }

# results_n CID: results the scheduler has recorded so far (the campaign's done count)
results_n() { local n; n=$(meta "$1" done 2> /dev/null); echo "${n:-0}"; }

# runner_node NAME: the node a runner served on, from its job log ("runner NAME of ... on HOST")
runner_node() {
  grep -hF "runner $1 of campaign" "$T"/results/*/slurm/logs/runner-*.out |
    sed -n 's/.* on \([^ ]*\) (job.*/\1/p' | tail -1
}

# mn_finish CID SECONDS: waits until the campaign's jobs left the queue, then checks it: done,
# no lease left, nothing dead, the figures of figures.py (no row twice, nothing lost, the ledger
# exact and equal to the rows' cost). Sets ITEMS (done), FIG (the JSON), ROWS, SPENT, RETRIED, NODES (runner
# nodes that recorded rows, sorted, comma-separated), RECONNECTS ("reconnecting" lines in the
# job logs).
mn_finish() {
  local cid=$1 logs=$T/results/$1/slurm/logs r nodes=""
  wait_until "$2" "the jobs of $cid to leave the queue" mn_jobs_gone "$SC,$A"
  [ "$(meta "$cid" state)" = done ] || fail "campaign $cid is $(meta "$cid" state): $(tail -n 5 "$logs"/scheduler-*.out)"
  [ "$(rcli ZCARD "kb:{$cid}:lease")" -eq 0 ] || fail "leases left"
  [ "$(meta "$cid" dead)" -eq 0 ] || fail "$(meta "$cid" dead) items dead-lettered: $(rcli HGETALL "kb:{$cid}:dead")"
  grep -q "campaign $cid done" "$logs"/scheduler-*.out || fail "scheduler: $(tail -n 5 "$logs"/scheduler-*.out)"
  [ -s "$T/results/$cid/summary.json" ] || fail "no summary.json"
  rcli --raw HGETALL "kb:{$cid}:ledger" | $KB_PY -c 'import json,sys
v=sys.stdin.read().split("\n"); print(json.dumps(dict(zip(v[0::2], v[1::2]))))' > "$T/ledger.json"
  ITEMS=$(meta "$cid" done)
  FIG=$($KB_PY "$REPO_DIR/tests/multinode/figures.py" "$T/results/$cid" "$T/ledger.json" \
    "$ITEMS" 0) || fail "figures of $cid"
  ROWS=$($KB_PY -c 'import json,sys; print(json.loads(sys.argv[1])["rows"])' "$FIG")
  SPENT=$($KB_PY -c 'import json,sys; print(json.loads(sys.argv[1])["spent_ms"])' "$FIG")
  RETRIED=$($KB_PY -c 'import json,sys; print(json.loads(sys.argv[1])["retried"])' "$FIG")
  for r in $($KB_PY -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["runners"]))' "$FIG"); do
    nodes="$nodes $(runner_node "$r")"
  done
  NODES=$(tr ' ' '\n' <<< "$nodes" | sed '/^$/d' | sort -u | paste -sd,)
  RECONNECTS=$(cat "$logs"/*.out | grep -c "reconnecting" || true)
  note "figures of $cid: $FIG; runner nodes $NODES"
}
