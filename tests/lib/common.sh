# Shared shell helpers for the integration tests. Source it; set BIN to the build's bin folder.
# Every test gets its own temp folder and redis-server, and cleans both up on exit.
set -euo pipefail
# With pipefail, `producer | grep -q` can fail although the line is there: grep -q quits at its
# first match and the producer dies of SIGPIPE mid-write. Where the producer writes more than one
# pipe buffer's worth (a log, a listing), let grep read it all: `producer | grep pat > /dev/null`.

KB_PY=${KB_PY:-/usr/bin/python3}
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_DIR=$(cd "$TESTS_DIR/.." && pwd)

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $*" >&2; }

T=$(mktemp -d /tmp/kbt-XXXXXX)
REDIS_PID=""
BG_PIDS=()
cleanup() {
  local rc=$?
  # a failed test shows the last lines of every log it wrote: its folder goes with it
  if [ "$rc" -ne 0 ] && [ -z "${KBT_KEEP:-}" ] && [ -d "$T" ]; then
    find "$T" -maxdepth 2 -name '*.log' -type f -size +0 2> /dev/null | sort | while read -r f; do
      echo "--- last lines of ${f#"$T"/}:" >&2
      tail -n 25 "$f" >&2
    done
  fi
  for p in "${BG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [ -n "$REDIS_PID" ]; then
    kill -CONT "$REDIS_PID" 2>/dev/null || true # a test that stopped it (SIGSTOP) and failed
    redis-cli -s "$T/redis/redis.sock" shutdown nosave > /dev/null 2>&1 || kill -9 "$REDIS_PID" 2>/dev/null || true
  fi
  wait 2>/dev/null || true
  if [ -z "${KBT_KEEP:-}" ]; then rm -rf "$T"; else echo "kept $T" >&2; fi
}
trap cleanup EXIT

# redis_settings FILE: the redis-server settings kb-launch starts redis with (AOF, no eviction,
# ...; one list, kb_redis_server_settings in kb/redis.h), written to FILE as a redis.conf.
redis_settings() {
  "$BIN/kb-launch" --redis-config > "$1" || fail "kb-launch --redis-config failed"
}

# start_redis: redis-server on a unix socket in $T/redis with AOF, as kb-launch runs it.
start_redis() {
  mkdir -p "$T/redis"
  redis_settings "$T/redis/settings.conf"
  redis-server "$T/redis/settings.conf" --port 0 --unixsocket "$T/redis/redis.sock" \
    --unixsocketperm 700 --dir "$T/redis" --logfile "$T/redis/redis.log" \
    </dev/null >/dev/null 2>&1 &
  REDIS_PID=$!
  export KB_REDIS="unix:$T/redis/redis.sock"
  for _ in $(seq 200); do
    if redis-cli -s "$T/redis/redis.sock" ping 2>/dev/null | grep -q PONG; then return 0; fi
    sleep 0.05
  done
  fail "redis-server did not start (see $T/redis/redis.log)"
}

rcli() { redis-cli -s "$T/redis/redis.sock" "$@"; }

# make_campaign ID [extra JSON members]: writes $T/ID.json over the built-in host tasks, results
# in $T/results, leases of 5 s so lost runners are noticed quickly.
make_campaign() {
  local id=$1 extra=${2:-}
  cat > "$T/$id.json" <<JSON
{
  "schema": "kernelbrain.campaign/1",
  "id": "$id",
  "backend": "host",
  "tasks": ["$REPO_DIR/tasks/host/sum", "$REPO_DIR/tasks/host/matmul"],
  "budget": {"gpu_seconds": 600},
  "lease_seconds": 5,
  "results_dir": "$T/results"${extra:+,
  $extra}
}
JSON
}

# wait_pid PID SECONDS: waits for a background process; fails on timeout. Returns its exit code.
wait_pid() {
  local pid=$1 secs=$2
  for _ in $(seq $((secs * 10))); do
    if ! kill -0 "$pid" 2>/dev/null; then
      local rc=0
      wait "$pid" || rc=$?
      return $rc
    fi
    sleep 0.1
  done
  fail "process $pid still running after ${secs}s"
}

# ledger_exact CID: available + held + spent == total, held == 0 at rest.
ledger_exact() {
  local cid=$1 total avail held spent
  total=$(rcli HGET "kb:{$cid}:ledger" gpu_ms:total)
  avail=$(rcli HGET "kb:{$cid}:ledger" gpu_ms:available)
  held=$(rcli HGET "kb:{$cid}:ledger" gpu_ms:held)
  spent=$(rcli HGET "kb:{$cid}:ledger" gpu_ms:spent)
  [ $((avail + held + spent)) -eq "$total" ] ||
    fail "ledger of $cid: $avail + $held + $spent != $total"
  [ "$held" -eq 0 ] || fail "ledger of $cid still holds $held ms at rest"
  echo "ledger $cid: total=$total available=$avail spent=$spent" >&2
}

# campaign_whole CID RESULTS TASK...: the campaign CID ended whole after its faults: state done,
# the ledger exact (ledger_exact), each TASK's file under RESULTS holds every result the
# scheduler acknowledged once and nothing is left pending (check_writer.py), and the files hold
# exactly the items done or dead, at least two evaluations a task (check_results.py --done).
campaign_whole() {
  local cid=$1 results=$2 task counts done_n
  shift 2
  [ "$(rcli HGET "kb:{$cid}:meta" state)" = done ] || fail "campaign $cid not done"
  ledger_exact "$cid"
  for task in "$@"; do
    counts=$($KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" "$cid" "$results" \
      "$task") || fail "$task.h5 does not hold every acknowledged result once: $counts"
    $KB_PY -c 'import json, sys
c = json.loads(sys.argv[1]); f = c["files"][sys.argv[2]]
sys.exit(0 if c["pending"] == 0 and f["rows"] == f["acked"] > 0 else 1)' "$counts" "$task" ||
      fail "not every result once in $task.h5: $counts"
  done
  done_n=$(( $(rcli HGET "kb:{$cid}:meta" done) + $(rcli HGET "kb:{$cid}:meta" dead) ))
  $KB_PY "$TESTS_DIR/e2e/check_results.py" "$results" --campaign "$cid" --tasks "$@" \
    --min-evaluations 2 --done "$done_n"
}

# stream_json KEY FIELD OUT: writes the FIELD of every entry of stream KEY, one per line.
stream_json() {
  local key=$1 field=$2 out=$3
  rcli --raw XRANGE "$key" - + | awk -v f="$field" 'prev == f { print } { prev = $0 }' > "$out"
}

# items_jsonl KEY: every item of the items hash KEY as one JSON object per line on stdout
# (tests/lib/items.py: the item line of layout 2 decoded, with "id", "cand" and "tier").
items_jsonl() {
  rcli --raw HGETALL "$1" | "$KB_PY" "$TESTS_DIR/lib/items.py"
}

# ledger_jsonl KEY OUT: every move of the ledger audit stream KEY as one ledger-entry object per
# line, in order: "entry" fields as they are, "moves" fields (a runner's cycle) expanded into
# their moves, each with its balances (tests/lib/ledger_moves.py).
ledger_jsonl() {
  local key=$1 out=$2
  rcli --raw XRANGE "$key" - + | "$KB_PY" "$TESTS_DIR/lib/ledger_moves.py" > "$out"
}
