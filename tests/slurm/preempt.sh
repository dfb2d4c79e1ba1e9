#!/usr/bin/env bash
# Preemption on the real Slurm, against a redis the test runs (--redis HOST:PORT, password from
# a 0600 file). Four runner tasks; while at least three hold leases, two of them get Slurm's
# time-limit warning (scancel --signal=USR1 --batch, which reaches only the batch shell; it
# passes the signal on) and a third is requeued (scontrol requeue: SIGTERM). Each of them
# releases its lease (a "void" entry by that runner in kb:{cid}:ledger:log of a charge it never
# posted), exits 0 and comes back: the warned ones requeue themselves, the requeued one
# is started again by Slurm and picks up work. The campaign completes; the ledger is exact;
# nothing is lost or recorded twice, and no release counted as an attempt.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/lib.sh"
slurm_ready
cid=preempt
# The built-in matmul task and three copies under other ids: eight candidates for four
# runners, so work is ready when the requeued runners come back; its timing tiers take seconds
# per evaluation, so the signals land in the middle of evaluations.
tasks="\"$REPO_DIR/tasks/host/matmul\""
for t in matmul2 matmul3 matmul4; do
  cp -r "$REPO_DIR/tasks/host/matmul" "$T/$t"
  sed -i "s/\"id\": \"matmul\"/\"id\": \"$t\"/" "$T/$t/task.json"
  tasks="$tasks, \"$T/$t\""
done
slurm_campaign $cid "[$tasks]" \
  '"ladder": [{"name": "compile"}, {"name": "smoke"},
    {"name": "screen", "min_samples": 60, "max_samples": 60, "max_seconds": 60, "timeout_seconds": 120},
    {"name": "full", "min_samples": 150, "max_samples": 150, "max_seconds": 90, "timeout_seconds": 180}]'

note "redis on TCP with a password file"
mkdir -p "$T/tcp"
PWFILE=$T/tcp/password
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$PWFILE"
chmod 600 "$PWFILE"
PORT=$((30000 + RANDOM % 20000))
while (: < "/dev/tcp/127.0.0.1/$PORT") 2> /dev/null; do PORT=$((PORT + 1)); done
(
  umask 077
  printf 'port %s\nbind 127.0.0.1\nrequirepass %s\ndir %s\nappendonly yes\nsave ""\nlogfile %s\n' \
    "$PORT" "$(cat "$PWFILE")" "$T/tcp" "$T/tcp/redis.log" > "$T/tcp/redis.conf"
)
redis-server "$T/tcp/redis.conf" < /dev/null > /dev/null 2>&1 &
REDIS_PID=$!
export KB_REDIS_PASSWORD_FILE=$PWFILE
rcli() { REDISCLI_AUTH=$(cat "$PWFILE") redis-cli --no-auth-warning -h 127.0.0.1 -p "$PORT" "$@"; }
wait_until 10 "redis on port $PORT" bash -c "REDISCLI_AUTH=\$(cat $PWFILE) redis-cli -p $PORT ping 2>/dev/null | grep -q PONG"
ADDR=$(hostname):$PORT

"$BIN/kb-launch" --slurm --json --runners 4 --redis "$ADDR" "$T/$cid.json" > "$T/launch.json" ||
  fail "kb-launch failed"
SC=$(json_get "$T/launch.json" scheduler.job)
A=$(json_get "$T/launch.json" runners.job)
SLURM_JOBS+=("$SC" "$A")
[ -z "$(json_get "$T/launch.json" redis.job)" ] || fail "a redis job although --redis was given"
S=$T/results/$cid/slurm

# fresh: the runners evaluating at tier screen or full (seconds per evaluation), the latest
# claim first, one per line as "runner tier task seconds-since-claim": the signals go to the
# first ones, far from the end of their evaluations.
fresh() {
  items_jsonl "kb:{$cid}:items" > "$T/items.txt"
  ledger_jsonl "kb:{$cid}:ledger:log" "$T/ledger.jsonl"
  rcli --raw TIME > "$T/time.txt"
  $KB_PY - "$T/items.txt" "$T/ledger.jsonl" "$T/time.txt" << 'PY'
import json, sys
items = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
items = [i for i in items if "bad" not in i]
claimed = {}
for line in open(sys.argv[2]):
    if line.strip():
        e = json.loads(line)
        if e["op"] == "reserve":
            claimed[e["who"]] = e["ts_ms"]
sec, usec = (int(x) for x in open(sys.argv[3]).read().split())
now = sec * 1000 + usec // 1000
rows = [(now - claimed.get(i["runner"], 0), i["runner"], i["tier"], i["task"]) for i in items
        if i.get("state") == "leased" and i["tier"] >= 2]
for age, runner, tier, task in sorted(rows):
    print(runner, tier, task, round(age / 1000, 1))
PY
}
three_busy() {
  fresh > "$T/leased.txt"
  [ "$(wc -l < "$T/leased.txt")" -ge 3 ]
}
wait_until 120 "three runners evaluating at tier screen or full" three_busy
cat "$T/leased.txt" >&2
mapfile -t holders < <(awk '{print $1}' "$T/leased.txt")
task_of() { echo "${1##*_}"; }
W1=${holders[0]} W2=${holders[1]} Q=${holders[2]}
show_jobs "$SC,$A" >&2
note "USR1 (time-limit warning) to $W1 and $W2; scontrol requeue $Q"
scancel --signal=USR1 --batch "${A}_$(task_of "$W1")" "${A}_$(task_of "$W2")"
scontrol requeue "${A}_$(task_of "$Q")"

# a release: a void by that runner of a charge it never posted (a completion posts and voids
# only the unused rest; the item's next claim reuses the charge id, as no attempt was counted)
released_by() {
  ledger_jsonl "kb:{$cid}:ledger:log" "$T/ledger.jsonl"
  $KB_PY - "$T/ledger.jsonl" "$1" << 'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
me = sys.argv[2]
posted = {r["charge_id"] for r in rows if r["op"] == "post" and r["who"] == me}
n = sum(1 for r in rows if r["op"] == "void" and r["who"] == me and r["charge_id"] not in posted)
sys.exit(0 if n else 1)
PY
}
for w in "$W1" "$W2" "$Q"; do
  wait_until 30 "a release by $w in the ledger's audit stream" released_by "$w"
  note "$w released its lease; the reservation went back to available"
done
for w in "$W1" "$W2" "$Q"; do
  log=$S/logs/runner-${A}_$(task_of "$w").out
  wait_until 30 "$w to leave" grep -q "kb-runner exited with 0 after SIG" "$log"
  grep -q "stopping: released" "$log" || fail "$w: no release in its log: $(tail -5 "$log")"
done
# The job script requeues unless redis says the campaign is over; the state it read is in the
# line ("running", or "unknown" when its status call failed: a loaded machine, an ASan build).
for w in "$W1" "$W2"; do
  log=$S/logs/runner-${A}_$(task_of "$w").out
  for _ in $(seq 900); do grep -q "time limit near; campaign $cid is .*: requeueing job" "$log" && break; sleep 0.1; done
  grep -q "time limit near; campaign $cid is .*: requeueing job" "$log" ||
    fail "$w did not requeue itself within 90 s; its log ends: $(tail -15 "$log")"
  grep -q "campaign $cid is running: requeueing job" "$log" ||
    note "$w requeued, but not on state running: $(grep "time limit near" "$log" | tail -1)"
done

note "the requeued runners come back and pick up work"
wait_until 90 "$Q to serve again" grep -q "runner $Q.r1 serving campaign $cid" \
  "$S/logs/runner-${A}_$(task_of "$Q").out"
for w in "$W1" "$W2"; do
  wait_until 90 "$w to serve again" grep -q "runner $w.r1 serving campaign $cid" \
    "$S/logs/runner-${A}_$(task_of "$w").out"
done
wait_jobs_gone "$SC,$A" 240
show_jobs "$SC,$A" >&2
for j in "$SC" "$A"; do job_record "$j"; done | tee "$T/records.txt" >&2
grep -q "ArrayTaskId=$(task_of "$Q") .*Restarts=1" "$T/records.txt" || fail "$Q was not restarted"

stream_json "kb:{$cid}:results" result "$T/results.jsonl"
picked=$($KB_PY -c 'import json,sys
print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l)["runner"] == sys.argv[2]))' \
  "$T/results.jsonl" "$Q.r1")
note "$Q.r1 (requeued by scontrol) recorded $picked evaluation(s)"
[ "$picked" -ge 1 ] || fail "the requeued runner $Q.r1 evaluated nothing"

note "campaign complete, ledger exact, nothing lost, no release counted as an attempt"
[ "$(rcli HGET "kb:{$cid}:meta" state)" = done ] || fail "state $(rcli HGET "kb:{$cid}:meta" state)"
[ "$(rcli ZCARD "kb:{$cid}:lease")" -eq 0 ] || fail "leases left"
[ "$(rcli HGET "kb:{$cid}:meta" dead)" -eq 0 ] || fail "items dead-lettered"
ledger_exact $cid
ledger_report $cid
done_n=$(rcli HGET "kb:{$cid}:meta" done)
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$T/results/$cid" --campaign $cid \
  --tasks matmul matmul2 matmul3 matmul4 --min-evaluations 6 --all-ok --done "$done_n"
$KB_PY - "$T/results/$cid" << 'PY' || fail "an evaluation was not a first attempt"
import glob, sys, h5py
for f in glob.glob(sys.argv[1] + "/*.h5"):
    with h5py.File(f, "r") as h:
        bad = [int(a) for a in h["evaluations"]["attempt"] if int(a) != 1]
        if bad:
            print(f"{f}: attempts {bad}", file=sys.stderr)
            sys.exit(1)
PY
echo "PASS"
