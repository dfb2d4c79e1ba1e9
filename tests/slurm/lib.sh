# Helpers for the tests on the real single-node Slurm that scripts/slurm-start.sh starts (the
# ctest fixture "slurm" does, with SLURM_CONF pointing at it). Source after tests/lib/common.sh.
# Checks read what the jobs wrote (logs, redis, HDF5), never only exit codes: a cluster whose
# cgroup plugins fail reports jobs COMPLETED that never ran.

export KB_JOB_POLL=2 # the redis job looks every 2 s whether it may stop (default 10)
SLURM_JOBS=()        # every job id a test submitted, cancelled at exit

slurm_cleanup() {
  if [ ${#SLURM_JOBS[@]} -gt 0 ]; then scancel "${SLURM_JOBS[@]}" 2> /dev/null || true; fi
  cleanup
}
trap slurm_cleanup EXIT

# slurm_ready: the cluster answers; without one, skip (77) unless we could have started it.
slurm_ready() {
  if [ -n "${SLURM_CONF:-}" ] && timeout 10 scontrol ping 2> /dev/null | grep -q UP; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ] && ! command -v slurmctld > /dev/null; then
    echo "SKIP: no Slurm (SLURM_CONF=${SLURM_CONF:-unset}) and not root to start one" >&2
    exit 77
  fi
  fail "Slurm at SLURM_CONF=${SLURM_CONF:-unset} does not answer (see scripts/slurm-start.sh)"
}

# slurm_campaign ID TASKS_JSON [extra JSON members]: $T/ID.json, results in $T/results.
slurm_campaign() {
  local id=$1 tasks=$2 extra=${3:-}
  cat > "$T/$id.json" << JSON
{
  "schema": "kernelbrain.campaign/1",
  "id": "$id",
  "backend": "host",
  "tasks": $tasks,
  "budget": {"gpu_seconds": 3600},
  "lease_seconds": 20,
  "results_dir": "$T/results"${extra:+,
  $extra}
}
JSON
}

# json_get FILE KEY.KEY...: a value of a JSON file (kb-launch --json output).
json_get() {
  $KB_PY -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v=v[k]
print("" if v is None else v)' "$1" "$2"
}

# jobs_gone IDS: none of the jobs (comma-separated) is pending or running
jobs_gone() {
  local out rc=0
  out=$(squeue -h -j "$1" -o %i 2>&1) || rc=$?
  if [ $rc -eq 0 ]; then [ -z "$out" ]; return; fi
  grep -q "Invalid job id" <<< "$out"
}

# wait_jobs_gone IDS SECONDS
wait_jobs_gone() {
  local end=$(($(date +%s) + $2))
  until jobs_gone "$1"; do
    [ "$(date +%s)" -lt "$end" ] || fail "jobs $1 still queued after $2 s: $(squeue -h -j "$1" 2>&1)"
    sleep 0.5
  done
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

# show_jobs IDS: the job list, as the resolution of the issue shows it
show_jobs() {
  squeue -j "$1" -o '%.12i %.9P %.22j %.8T %.10M %.6D %R' 2>&1 || true
}

# job_record ID: JobId, name, state, exit code, restarts and run time of a job (scontrol keeps
# them MinJobAge seconds after the end; sacct would need slurmdbd)
job_record() {
  scontrol -o show job "$1" 2> /dev/null | awk '{
    out = ""
    for (i = 1; i <= NF; i++)
      if ($i ~ /^(JobId|ArrayJobId|ArrayTaskId|JobName|JobState|ExitCode|Restarts|RunTime)=/)
        out = out " " $i
    print substr(out, 2)
  }'
}

# aof_redis DIR: a redis-server on the append-only file in DIR (what a job left), on a unix
# socket in $T/redis, so rcli and ledger_exact read the campaign after its jobs ended.
aof_redis() {
  mkdir -p "$T/redis"
  redis_settings "$T/redis/settings.conf"
  redis-server "$T/redis/settings.conf" --port 0 --unixsocket "$T/redis/redis.sock" \
    --unixsocketperm 700 --dir "$1" --logfile "$T/redis/aof.log" < /dev/null > /dev/null 2>&1 &
  REDIS_PID=$!
  for _ in $(seq 200); do
    if rcli ping 2> /dev/null | grep -q PONG; then return 0; fi
    sleep 0.05
  done
  fail "redis-server on the AOF in $1 did not start (see $T/redis/aof.log)"
}

aof_redis_stop() {
  rcli shutdown > /dev/null 2>&1 || true
  wait "$REDIS_PID" 2> /dev/null || true
  REDIS_PID=""
}

# ledger_report CID: the ledger and its audit stream in short, for the log
ledger_report() {
  local cid=$1
  echo "ledger kb:{$cid}:ledger: $(rcli HGETALL "kb:{$cid}:ledger" | paste -sd' ')" >&2
  ledger_jsonl "kb:{$cid}:ledger:log" "$T/ledger-$cid.jsonl"
  $KB_PY - "$T/ledger-$cid.jsonl" << 'PY' >&2
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ops = collections.Counter((r["currency"], r["op"]) for r in rows)
print("audit stream: %d entries: %s" % (len(rows), ", ".join("%s %s=%d" % (c, o, n) for (c, o), n in sorted(ops.items()))))
PY
}
